// SPDX-License-Identifier: MIT
/*
 * crc32.c - CRC-32 with the zlib/IEEE polynomial (reflected 0xEDB88320),
 * computed slicing-by-8: eight 256-entry tables let the loop consume eight
 * bytes per step with table lookups only.  The tables are built once, on
 * first use, under pthread_once.
 *
 * On x86-64 processors with PCLMULQDQ (checked once at run time), buffers
 * of 256 bytes or more are folded with carry-less multiplies instead, 16
 * bytes per multiply where the tables take eight lookups per 8 bytes (the
 * recorder's writer checksums every chunk it writes);
 * plain C with compiler intrinsics, so the recorder still depends on libc
 * alone.
 *
 * rp_crc32(0, buf, len) gives the same value as zlib's crc32(0, buf, len);
 * tests/test_trace.c checks that against zlib, tests/test_encode.c this
 * file's two ways against libdeflate's.  It cannot fail.
 *
 * The analyzer (RP_CRC_LIBDEFLATE) uses libdeflate's instead, which folds
 * with carry-less multiplies (PCLMUL) where the CPU has them.
 */
#include "bytes.h"

#define RP_ATTR_HIDDEN __attribute__((visibility("hidden")))

#ifdef RP_CRC_LIBDEFLATE
#include <libdeflate.h>

RP_ATTR_HIDDEN uint32_t rp_crc32(uint32_t crc, const void *buf, size_t len)
{
    return libdeflate_crc32(crc, buf, len);
}
#else

#include <pthread.h>

static uint32_t crc_table[8][256];
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

static void crc_build(void)
{
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
        crc_table[0][i] = c;
    }
    for (uint32_t i = 0; i < 256; i++)
        for (int t = 1; t < 8; t++)
            crc_table[t][i] = (crc_table[t - 1][i] >> 8) ^ crc_table[0][crc_table[t - 1][i] & 0xff];
}

/* The tables' loop on the register itself (no inversions).  Cannot fail. */
static uint32_t crc_tables(uint32_t crc, const uint8_t *p, size_t len)
{
    while (len >= 8) {
        uint32_t lo = crc ^ rp_get32(p);
        uint32_t hi = rp_get32(p + 4);
        crc = crc_table[7][lo & 0xff] ^ crc_table[6][(lo >> 8) & 0xff] ^
              crc_table[5][(lo >> 16) & 0xff] ^ crc_table[4][lo >> 24] ^ crc_table[3][hi & 0xff] ^
              crc_table[2][(hi >> 8) & 0xff] ^ crc_table[1][(hi >> 16) & 0xff] ^
              crc_table[0][hi >> 24];
        p += 8;
        len -= 8;
    }
    while (len--)
        crc = crc_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define CRC_CLMUL 1

/*
 * The register over p[0..len) (len >= 64, a multiple of 16) with carry-less
 * multiplies: four 16-byte lanes are folded forward by 64 bytes at a time,
 * then into one lane, and the last 16 bytes go through the tables (the
 * folded lane is a message of 16 bytes with the same remainder as
 * everything before, so no Barrett reduction is needed).  The constants are
 * x^(512+-32) and x^(128+-32) mod P, bit-reflected (Intel's "Fast CRC
 * Computation Using PCLMULQDQ", as in Linux's crc32-pclmul).  Cannot fail.
 */
__attribute__((target("pclmul,sse2"))) static uint32_t crc_clmul(uint32_t crc, const uint8_t *p,
                                                                 size_t len)
{
    const __m128i k4 = _mm_set_epi64x(0x1c6e41596, 0x154442bd4);
    const __m128i k1 = _mm_set_epi64x(0x0ccaa009e, 0x1751997d0);
    __m128i x0 = _mm_loadu_si128((const __m128i *)p), x1, x2, x3;
    x0 = _mm_xor_si128(x0, _mm_cvtsi32_si128((int)crc));
    x1 = _mm_loadu_si128((const __m128i *)(p + 16));
    x2 = _mm_loadu_si128((const __m128i *)(p + 32));
    x3 = _mm_loadu_si128((const __m128i *)(p + 48));
    p += 64;
    len -= 64;
#define CRC_FOLD(x, k, d)                                                                          \
    _mm_xor_si128(                                                                                 \
        _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00), _mm_clmulepi64_si128(x, k, 0x11)), d)
    for (; len >= 64; p += 64, len -= 64) {
        x0 = CRC_FOLD(x0, k4, _mm_loadu_si128((const __m128i *)p));
        x1 = CRC_FOLD(x1, k4, _mm_loadu_si128((const __m128i *)(p + 16)));
        x2 = CRC_FOLD(x2, k4, _mm_loadu_si128((const __m128i *)(p + 32)));
        x3 = CRC_FOLD(x3, k4, _mm_loadu_si128((const __m128i *)(p + 48)));
    }
    x0 = CRC_FOLD(x0, k1, x1);
    x0 = CRC_FOLD(x0, k1, x2);
    x0 = CRC_FOLD(x0, k1, x3);
    for (; len >= 16; p += 16, len -= 16)
        x0 = CRC_FOLD(x0, k1, _mm_loadu_si128((const __m128i *)p));
#undef CRC_FOLD
    uint8_t last[16];
    _mm_storeu_si128((__m128i *)last, x0);
    return crc_tables(0, last, 16);
}

static int crc_has_clmul;
#endif

/* Builds the tables and looks for PCLMULQDQ, once. */
static void crc_init(void)
{
    crc_build();
#ifdef CRC_CLMUL
    __builtin_cpu_init();
    crc_has_clmul = __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse2");
#endif
}

RP_ATTR_HIDDEN uint32_t rp_crc32(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    pthread_once(&crc_once, crc_init);
    crc = ~crc;
#ifdef CRC_CLMUL
    if (crc_has_clmul && len >= 256) {
        size_t m = len & ~(size_t)15;
        crc = crc_clmul(crc, p, m);
        p += m;
        len -= m;
    }
#endif
    return ~crc_tables(crc, p, len);
}
#endif /* RP_CRC_LIBDEFLATE */

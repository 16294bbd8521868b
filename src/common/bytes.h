// SPDX-License-Identifier: MIT
/*
 * bytes.h - little-endian loads/stores, LEB128 varints and decimal digits,
 * shared by the trace writer (in the recorder) and the reader and reports
 * (in the analyzer).
 *
 * Everything here is static inline and dependency-free.  The get functions
 * never read past `end`: they return NULL when the input is too short or a
 * varint is longer than RP_VARINT_MAX bytes, and callers turn that into an
 * error naming the offset.
 */
#ifndef RP_COMMON_BYTES_H
#define RP_COMMON_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

static inline void rp_put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static inline void rp_put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline void rp_put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t rp_get16(const uint8_t *p)
{
    return (uint16_t)(p[0] | (p[1] << 8));
}

static inline uint32_t rp_get32(const uint8_t *p)
{
    return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24);
}

static inline uint64_t rp_get64(const uint8_t *p)
{
    return (uint64_t)rp_get32(p) | ((uint64_t)rp_get32(p + 4) << 32);
}

/* Appends v as LEB128 at p; returns the byte after it (at most 10 bytes). */
static inline uint8_t *rp_put_varint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

/*
 * Reads one LEB128 varint from [p, end) into *v.  Returns the byte after it,
 * or NULL if the input ends inside the varint or the varint overflows 64 bits.
 */
static inline const uint8_t *rp_get_varint(const uint8_t *p, const uint8_t *end, uint64_t *v)
{
    if (p < end && *p < 0x80) { /* the common one-byte case */
        *v = *p;
        return p + 1;
    }
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (p >= end)
            return NULL;
        uint8_t b = *p++;
        if (shift == 63 && b > 1)
            return NULL;
        r |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = r;
            return p;
        }
    }
    return NULL;
}

static inline uint64_t rp_zigzag(int64_t v)
{
    return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
}

static inline int64_t rp_unzigzag(uint64_t v)
{
    return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/* CRC-32 (IEEE 802.3, the zlib polynomial), slicing-by-8; see crc32.c. */
uint32_t rp_crc32(uint32_t crc, const void *buf, size_t len);

/* Writes n in decimal at v, NUL-terminated (at most 21 bytes).
 * Async-signal-safe; cannot fail. */
static inline void rp_u64_dec(char *v, uint64_t n)
{
    char tmp[20];
    size_t k = 0;
    do
        tmp[k++] = (char)('0' + n % 10);
    while ((n /= 10) != 0);
    for (size_t i = 0; i < k; i++)
        v[i] = tmp[k - 1 - i];
    v[k] = 0;
}

#endif /* RP_COMMON_BYTES_H */

// SPDX-License-Identifier: MIT
/*
 * export_pb.h - a minimal protobuf encoder for the exports that write
 * protobuf by hand (perfetto, pprof): varints, strings, and nested messages
 * built in one pass in one growing buffer: 4 bytes are reserved for a
 * nested message's length when it opens, and when it closes the length is
 * written as the shortest varint and the body moved up against it (a few
 * bytes moved per message, which are small), so the output is the minimal
 * encoding.
 *
 * Errors are sticky: out of memory (or nesting deeper than PB_MAX_NEST, or
 * a message over 256 MiB, which the 4-byte length cannot hold) sets pb->bad,
 * every later call does nothing, and the caller checks pb->bad once.
 */
#ifndef RP_REPORT_EXPORT_PB_H
#define RP_REPORT_EXPORT_PB_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PB_MAX_NEST 8
enum { PB_VARINT = 0, PB_LEN = 2 };

struct pb {
    uint8_t *b;
    size_t n, cap;
    size_t open[PB_MAX_NEST]; /* offsets of the reserved lengths */
    unsigned depth;
    int bad;
};

static inline void pb_reset(struct pb *pb)
{
    pb->n = 0;
    pb->depth = 0;
}

static inline int pb_need(struct pb *pb, size_t more)
{
    if (pb->bad)
        return -1;
    if (pb->n + more <= pb->cap)
        return 0;
    size_t nc = pb->cap ? pb->cap : 256;
    while (nc < pb->n + more)
        nc *= 2;
    uint8_t *nb = realloc(pb->b, nc);
    if (!nb) {
        pb->bad = 1;
        return -1;
    }
    pb->b = nb;
    pb->cap = nc;
    return 0;
}

static inline void pb_varint(struct pb *pb, uint64_t v)
{
    if (pb_need(pb, 10) < 0)
        return;
    do {
        uint8_t c = v & 0x7f;
        v >>= 7;
        pb->b[pb->n++] = c | (v ? 0x80 : 0);
    } while (v);
}

/* A varint field; int64 values go through as their two's complement. */
static inline void pb_uint(struct pb *pb, unsigned field, uint64_t v)
{
    pb_varint(pb, (uint64_t)field << 3 | PB_VARINT);
    pb_varint(pb, v);
}

static inline void pb_bytes(struct pb *pb, unsigned field, const void *s, size_t len)
{
    pb_varint(pb, (uint64_t)field << 3 | PB_LEN);
    pb_varint(pb, len);
    if (pb_need(pb, len) < 0)
        return;
    memcpy(pb->b + pb->n, s, len);
    pb->n += len;
}

static inline void pb_str(struct pb *pb, unsigned field, const char *s)
{
    pb_bytes(pb, field, s, strlen(s));
}

/* Opens a nested message (or a packed repeated field); pb_close ends it. */
static inline void pb_open(struct pb *pb, unsigned field)
{
    if (pb->depth == PB_MAX_NEST)
        pb->bad = 1;
    pb_varint(pb, (uint64_t)field << 3 | PB_LEN);
    if (pb_need(pb, 4) < 0)
        return;
    pb->open[pb->depth++] = pb->n;
    pb->n += 4;
}

static inline void pb_close(struct pb *pb)
{
    if (pb->bad || !pb->depth)
        return;
    size_t at = pb->open[--pb->depth];
    size_t len = pb->n - at - 4;
    if (len >= (1u << 28)) {
        pb->bad = 1;
        return;
    }
    /* the shortest varint of len, and the body moved up against it */
    unsigned k = len < (1u << 7) ? 1 : len < (1u << 14) ? 2 : len < (1u << 21) ? 3 : 4;
    for (unsigned i = 0; i < k; i++, len >>= 7)
        pb->b[at + i] = (uint8_t)(len & 0x7f) | (i + 1 < k ? 0x80 : 0);
    if (k < 4) {
        size_t body = pb->n - at - 4;
        if (body <= 32) /* most messages: a call to memmove costs more than the copy */
            for (size_t i = 0; i < body; i++)
                pb->b[at + k + i] = pb->b[at + 4 + i];
        else
            memmove(pb->b + at + k, pb->b + at + 4, body);
        pb->n -= 4 - k;
    }
}

#endif /* RP_REPORT_EXPORT_PB_H */

// SPDX-License-Identifier: MIT
/*
 * export_zpkt.c - zlib streams of perfetto packets without a match search
 * (export_zpkt.h).
 *
 * The batch is cut into runs: a packet that begins with its sequence id and
 * timestamp (field 10, then field 8, as every event packet of the perfetto
 * export does) ends the run before its timestamp's varint, which is written
 * as literals, and the next run begins after it.  A run (cut into pieces
 * of at most 258 bytes, deflate's longest match) is looked up by the hash
 * of its bytes and length in a table of the latest piece with that hash;
 * when that piece is the same bytes and at most 32 KiB back it is written
 * as one match, else as literals, and the table then points at it.  The
 * codes are deflate's fixed ones, written through a 64-bit bit buffer.
 */
#include "report/export_zpkt.h"

#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>

#include "common/bytes.h"
#include "common/error.h"

#define HASH_BITS RP_ZPKT_HASH_BITS
#define MAX_DIST  32768u
#define MAX_MATCH RP_ZPKT_MAX_MATCH
#define DIST_TAB  RP_ZPKT_DIST_TAB

static const uint16_t len_base[29] = {3,  4,  5,  6,   7,   8,   9,   10,  11, 13,
                                      15, 17, 19, 23,  27,  31,  35,  43,  51, 59,
                                      67, 83, 99, 115, 131, 163, 195, 227, 258};
static const uint8_t len_extra[29] = {0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2,
                                      2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0};
static const uint16_t dist_base[30] = {
    1,   2,   3,   4,   5,   7,    9,    13,   17,   25,   33,   49,   65,    97,    129,
    193, 257, 385, 513, 769, 1025, 1537, 2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577};
static const uint8_t dist_extra[30] = {0, 0, 0, 0, 1, 1, 2, 2,  3,  3,  4,  4,  5,  5,  6,
                                       6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12, 13, 13};

/* The n low bits of v in reverse order.  Cannot fail. */
static uint32_t rev(uint32_t v, unsigned n)
{
    uint32_t r = 0;
    for (unsigned i = 0; i < n; i++, v >>= 1)
        r = r << 1 | (v & 1);
    return r;
}

/* Symbol s's fixed code (RFC 1951 3.2.6).  Cannot fail. */
static struct rp_zcode fixed(unsigned s)
{
    if (s < 144)
        return (struct rp_zcode){rev(0x30 + s, 8), 8};
    if (s < 256)
        return (struct rp_zcode){rev(0x190 + s - 144, 9), 9};
    if (s < 280)
        return (struct rp_zcode){rev(s - 256, 7), 7};
    return (struct rp_zcode){rev(0xc0 + s - 280, 8), 8};
}

struct rp_zpkt *rp_zpkt_alloc(void)
{
    struct rp_zpkt *z = calloc(1, sizeof(*z));
    if (!z)
        return NULL;
    for (unsigned s = 0; s < 256; s++)
        z->lit[s] = fixed(s);
    for (unsigned k = 0; k < 29; k++) {
        struct rp_zcode c = fixed(257 + k);
        unsigned end = k + 1 < 29 ? len_base[k + 1] : MAX_MATCH + 1;
        for (unsigned l = len_base[k]; l < end; l++)
            z->len[l] =
                (struct rp_zcode){c.bits | (uint32_t)(l - len_base[k]) << c.n, c.n + len_extra[k]};
    }
    for (unsigned k = 0; k < 30; k++) {
        z->dcode[k] = (uint8_t)rev(k, 5);
        unsigned end = k + 1 < 30 ? dist_base[k + 1] : MAX_DIST + 1;
        for (unsigned d = dist_base[k]; d < end; d++)
            if (d - 1 < 256)
                z->dsym_lo[d - 1] = (uint8_t)k;
            else
                z->dsym_hi[(d - 1) >> 7] = (uint8_t)k;
    }
    for (unsigned d = 1; d <= DIST_TAB; d++) {
        unsigned k = d - 1 < 256 ? z->dsym_lo[d - 1] : z->dsym_hi[(d - 1) >> 7];
        z->dist[d - 1] =
            (z->dcode[k] | (uint32_t)(d - dist_base[k]) << 5) | (uint32_t)(5 + dist_extra[k]) << 24;
    }
    return z;
}

void rp_zpkt_free(struct rp_zpkt *z)
{
    free(z);
}

/* Adds the n (<= 32) low bits of v.  Cannot fail: the caller made room. */
static inline void put(struct rp_zbits *w, uint64_t v, unsigned n)
{
    w->acc |= v << w->n;
    w->n += n;
    if (w->n >= 32) {
        w->p[0] = (uint8_t)w->acc; /* (a store of 4 bytes where the compiler sees it) */
        w->p[1] = (uint8_t)(w->acc >> 8);
        w->p[2] = (uint8_t)(w->acc >> 16);
        w->p[3] = (uint8_t)(w->acc >> 24);
        w->p += 4;
        w->acc >>= 32;
        w->n -= 32;
    }
}

/* Literals of in[s..e).  Cannot fail. */
static inline void literals(const struct rp_zpkt *z, struct rp_zbits *w, const uint8_t *in,
                            size_t s, size_t e)
{
    for (; s < e; s++)
        put(w, z->lit[in[s]].bits, z->lit[in[s]].n);
}

/* The hash of the n (>= 3) bytes at p.  Cannot fail. */
static inline uint32_t hash(const uint8_t *p, size_t n)
{
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        memcpy(&a, p, 8);
        memcpy(&b, p + n - 8, 8);
    } else {
        memcpy(&a, p, 2);
        memcpy(&b, p + n - 2, 2);
        a |= (uint64_t)p[n / 2] << 16;
    }
    uint64_t h =
        (a * 0x9e3779b97f4a7c15ull ^ b) * 0xff51afd7ed558ccdull ^ n * 0xc4ceb9fe1a85ec53ull;
    return (uint32_t)(h >> (64 - HASH_BITS));
}

/* Whether the n (>= 3) bytes at a and b are the same: words, not a call
 * (most runs are 10 to 20 bytes).  Cannot fail. */
static inline int same(const uint8_t *a, const uint8_t *b, size_t n)
{
    uint64_t x, y;
    if (n < 8)
        return !memcmp(a, b, n);
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return 0;
    }
    memcpy(&x, a + n - 8, 8);
    memcpy(&y, b + n - 8, 8);
    return x == y;
}

/* A copy of the n (3..258) bytes d back.  Cannot fail. */
static inline void match(const struct rp_zpkt *z, struct rp_zbits *w, size_t n, size_t d)
{
    if (d <= DIST_TAB) { /* one look-up, and the length's code and the distance's in one put */
        uint32_t dc = z->dist[d - 1];
        put(w, z->len[n].bits | (uint64_t)(dc & 0xffffff) << z->len[n].n, z->len[n].n + (dc >> 24));
        return;
    }
    unsigned sym = d - 1 < 256 ? z->dsym_lo[d - 1] : z->dsym_hi[(d - 1) >> 7];
    uint32_t dc = z->dcode[sym] | (uint32_t)(d - dist_base[sym]) << 5;
    put(w, z->len[n].bits, z->len[n].n);
    put(w, dc, 5 + dist_extra[sym]);
}

/* The run in[s..e): matches of the same bytes seen last, else literals.
 * Cannot fail. */
static void run(struct rp_zpkt *z, struct rp_zbits *w, const uint8_t *in, size_t s, size_t e)
{
    while (s < e) {
        size_t n = e - s < MAX_MATCH ? e - s : MAX_MATCH;
        if (e - s - n > 0 && e - s - n < 3) /* keep the last piece a match's length */
            n -= 3;
        if (n < 3) {
            literals(z, w, in, s, s + n);
            s += n;
            continue;
        }
        uint32_t *slot = &z->table[hash(in + s, n)];
        size_t c = *slot;
        *slot = (uint32_t)(s + 1);
        size_t d = s - (c - 1);
        if (c && d <= MAX_DIST && same(in + c - 1, in + s, n)) {
            match(z, w, n, d);
        } else {
            literals(z, w, in, s, s + n);
        }
        s += n;
    }
}

/* Starts a zlib stream of n bytes at the end of out (room made: the
 * worst, every byte a 9-bit literal, and the head, the block's ends and
 * the checksum) in w.  Returns 0 or RP_ENOMEM. */
static int stream_start(struct rp_zpkt *z, size_t n, struct rp_xbuf *out, struct rp_zbits *w)
{
    if (rp_xbuf_need(out, n + n / 8 + 32) < 0)
        return RP_ENOMEM;
    uint8_t *o = out->b + out->n;
    o[0] = 0x78; /* deflate, 32 KiB window */
    o[1] = 0x01; /* no dictionary, fastest; (0x78 * 256 + 0x01) % 31 == 0 */
    *w = (struct rp_zbits){.p = o + 2};
    put(w, 1 | 1 << 1, 3); /* BFINAL, BTYPE 01: fixed codes */
    memset(z->table, 0, sizeof(z->table));
    return 0;
}

/* Ends the stream of in[0..n) written through w into out.  Cannot fail. */
static void stream_end(struct rp_zbits *w, const uint8_t *in, size_t n, struct rp_xbuf *out)
{
    put(w, 0, 7); /* end of block: symbol 256, seven 0 bits */
    while (w->n > 0) {
        *w->p++ = (uint8_t)w->acc;
        w->acc >>= 8;
        w->n = w->n > 8 ? w->n - 8 : 0;
    }
    uint32_t a = libdeflate_adler32(1, in, n);
    w->p[0] = (uint8_t)(a >> 24);
    w->p[1] = (uint8_t)(a >> 16);
    w->p[2] = (uint8_t)(a >> 8);
    w->p[3] = (uint8_t)a;
    out->n = (size_t)(w->p + 4 - out->b);
}

int rp_zpkt_open(struct rp_zpkt *z, size_t n, struct rp_xbuf *out)
{
    if (stream_start(z, n, out, &z->w) < 0)
        return RP_ENOMEM;
    memset(z->keyed, 0, sizeof(z->keyed));
    z->s = 0;
    return 0;
}

void rp_zpkt_mark_slow(struct rp_zpkt *z, const uint8_t *in, size_t t0, size_t t1, uint64_t key)
{
    struct rp_zbits w = z->w; /* (in registers: its address not taken) */
    size_t s = z->s, len = t0 - s;
    if (key && len >= 3 && len <= MAX_MATCH) {
        uint32_t h = rp_zpkt_keyhash(key);
        size_t d = s - z->keyed[h].at;
        if (z->keyed[h].key == key && d <= MAX_DIST)
            match(z, &w, len, d);
        else
            literals(z, &w, in, s, t0);
        z->keyed[h].key = key;
        z->keyed[h].at = (uint32_t)s;
    } else {
        struct rp_zbits t = w;
        run(z, &t, in, s, t0);
        w = t;
    }
    literals(z, &w, in, t0, t1);
    rp_zpkt_flush8(&w); /* (fewer than 8 bits kept for the next) */
    z->w = w;
    z->s = t1;
}

void rp_zpkt_close(struct rp_zpkt *z, const uint8_t *in, size_t n, struct rp_xbuf *out)
{
    struct rp_zbits t = z->w;
    run(z, &t, in, z->s, n);
    stream_end(&t, in, n, out);
}

int rp_zpkt_zlib_marked(struct rp_zpkt *z, const uint8_t *in, size_t n, const struct rp_zmark *m,
                        size_t nm, struct rp_xbuf *out)
{
    if (rp_zpkt_open(z, n, out) < 0)
        return RP_ENOMEM;
    for (size_t k = 0; k < nm; k++)
        rp_zpkt_mark(z, in, m[k].at, m[k].at + m[k].len, m[k].key);
    rp_zpkt_close(z, in, n, out);
    return 0;
}

int rp_zpkt_zlib(struct rp_zpkt *z, const uint8_t *in, size_t n, struct rp_xbuf *out)
{
    struct rp_zbits w;
    if (stream_start(z, n, out, &w) < 0)
        return RP_ENOMEM;
    size_t i = 0, s = 0; /* the packet at i; the run since s */
    while (i < n) {
        if (in[i] != (1 << 3 | 2)) /* not a Trace's packet field: the rest one run */
            break;
        uint64_t len, v;
        const uint8_t *q = rp_get_varint(in + i + 1, in + n, &len), *t;
        if (!q || len > (uint64_t)(in + n - q))
            break;
        size_t j = (size_t)(q - in), next = j + (size_t)len;
        if (len >= 4 && in[j] == (10 << 3) && /* trusted_packet_sequence_id */
            (t = rp_get_varint(in + j + 1, in + next, &v)) && t < in + next &&
            *t == (8 << 3)) { /* timestamp */
            const uint8_t *e = rp_get_varint(t + 1, in + next, &v);
            if (e) {
                size_t t0 = (size_t)(t + 1 - in), t1 = (size_t)(e - in);
                run(z, &w, in, s, t0);
                literals(z, &w, in, t0, t1);
                s = t1;
            }
        }
        i = next;
    }
    run(z, &w, in, s, n);
    stream_end(&w, in, n, out);
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * export_zpkt.h - a zlib stream of protobuf TracePackets made without
 * searching for matches: the perfetto export's batches of packets
 * (export_perfetto.c) repeat a few shapes whose only new bytes are each
 * event's timestamp, so the batch is cut at the timestamps' varints and
 * every run of bytes between two of them is written as a copy of the same
 * run seen last (found by its hash and checked byte for byte) or, the first
 * time, as literals; the timestamps are literals.  Fixed Huffman codes (one
 * deflate block): no tables to build or send.  Any bytes are compressed
 * correctly; bytes that are not such packets just compress less.
 */
#ifndef RP_REPORT_EXPORT_ZPKT_H
#define RP_REPORT_EXPORT_ZPKT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "common/compiler.h"
#include "report/export_pool.h"

#define RP_ZPKT_HASH_BITS 13
#define RP_ZPKT_MAX_MATCH 258u
#define RP_ZPKT_KEY_BITS  11
/* distances with a code of their own in rp_zpkt.dist (most matches: the
 * same shape of packet a few packets back) */
#define RP_ZPKT_DIST_TAB 4096u

struct rp_zcode {
    uint32_t bits; /* the code, bit-reversed (deflate sends codes from their top bit), and
                      any extra bits after it */
    uint32_t n;    /* its length in bits */
};

/* The bit buffer: bits not yet stored, low first. */
struct rp_zbits {
    uint8_t *p;
    uint64_t acc;
    unsigned n;
};

/* A compressor: its tables, and the stream it is writing (rp_zpkt_open);
 * here for rp_zpkt_mark's inline common case. */
struct rp_zpkt {
    uint32_t table[1u << RP_ZPKT_HASH_BITS]; /* a piece's offset + 1 in the batch, by hash;
                                                0: none */
    struct {
        uint64_t key;
        uint32_t at;
    } keyed[1u << RP_ZPKT_KEY_BITS]; /* the latest run of a key (rp_zpkt_mark), by its hash */
    struct rp_zcode lit[256];
    struct rp_zcode len[RP_ZPKT_MAX_MATCH + 1]; /* a match's length, 3..258: its code and
                                                   extra bits */
    uint8_t dsym_lo[256];                       /* distance - 1 < 256: its symbol */
    uint8_t dsym_hi[256];                       /* else (distance - 1) >> 7: its symbol */
    uint8_t dcode[30];                          /* a distance symbol's code, bit-reversed */
    uint32_t dist[RP_ZPKT_DIST_TAB];            /* distance - 1 < DIST_TAB: its code and extra bits,
                                                   and their length in bits << 24 */
    struct rp_zbits w;                          /* the open stream's bits */
    size_t s;                                   /* and where its run since the last mark begins */
};

/* A compressor (its hash table and code tables).  NULL when out of memory. */
RP_HIDDEN struct rp_zpkt *rp_zpkt_alloc(void);

/* Frees z (NULL is a no-op).  Cannot fail. */
RP_HIDDEN void rp_zpkt_free(struct rp_zpkt *z);

/*
 * Appends in[0..n) as one zlib stream (RFC 1950/1951) to out, after its
 * out->n bytes.  Returns 0 or RP_ENOMEM (out's bytes unchanged, its room
 * perhaps grown).
 */
RP_HIDDEN int rp_zpkt_zlib(struct rp_zpkt *z, const uint8_t *in, size_t n, struct rp_xbuf *out);

/* A timestamp's varint in a batch of packets, as the encoder that wrote
 * them marks it: its offset and length, and a key for the run of bytes
 * before it (since the previous mark's varint, or the batch's start): runs
 * with the same key are the same bytes; 0 when unknown (the run is hashed
 * and compared as rp_zpkt_zlib does). */
struct rp_zmark {
    uint32_t at, len;
    uint64_t key;
};

/*
 * rp_zpkt_zlib for a batch whose timestamps the encoder marked (m[0..nm),
 * in order): the packets are not parsed, and a keyed run is copied from
 * the latest run with its key without comparing bytes.  Fails as
 * rp_zpkt_zlib.
 */
RP_HIDDEN int rp_zpkt_zlib_marked(struct rp_zpkt *z, const uint8_t *in, size_t n,
                                  const struct rp_zmark *m, size_t nm, struct rp_xbuf *out);

/*
 * rp_zpkt_zlib_marked a mark at a time, as the encoder writes the batch:
 * rp_zpkt_open starts a stream of at most n bytes at the end of out (room
 * made; RP_ENOMEM), rp_zpkt_mark takes a mark (its timestamp's varint at
 * in[t0..t1), its key; marks in order, in[0..t1) written by then), and
 * rp_zpkt_close ends the stream of in[0..n) (out->n then after it).  The
 * same bytes as rp_zpkt_zlib_marked with those marks, which is made of
 * them.  Only open can fail.
 */
RP_HIDDEN int rp_zpkt_open(struct rp_zpkt *z, size_t n, struct rp_xbuf *out);
RP_HIDDEN void rp_zpkt_mark_slow(struct rp_zpkt *z, const uint8_t *in, size_t t0, size_t t1,
                                 uint64_t key);
RP_HIDDEN void rp_zpkt_close(struct rp_zpkt *z, const uint8_t *in, size_t n, struct rp_xbuf *out);

/* The slot of a run's key in rp_zpkt.keyed.  Cannot fail. */
static inline uint32_t rp_zpkt_keyhash(uint64_t key)
{
    return (uint32_t)((key * 0x9e3779b97f4a7c15ull) >> (64 - RP_ZPKT_KEY_BITS));
}

/* Stores the whole bytes of w's bits (and up to 8 bytes after them, room
 * made), keeping fewer than 8: no branch.  Cannot fail. */
static inline void rp_zpkt_flush8(struct rp_zbits *w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(w->p, &w->acc, 8);
#else
    for (unsigned i = 0; i < 8; i++)
        w->p[i] = (uint8_t)(w->acc >> (8 * i));
#endif
    w->p += w->n >> 3;
    w->acc >>= w->n & ~7u; /* (n < 64) */
    w->n &= 7;
}

/* A mark's common case, on a copy of z's stream state (*w, and *s for
 * rp_zpkt.s) that the caller may keep in locals: a keyed run seen at most
 * DIST_TAB bytes back, and a one-byte timestamp: the match and the literal
 * in one put of at most 37 bits to the fewer than 8 kept.  Returns 1 when
 * it took the mark, 0 (nothing changed) when rp_zpkt_mark_slow must.
 * Cannot fail. */
static inline int rp_zpkt_mark_fast(struct rp_zpkt *z, struct rp_zbits *w, size_t *s,
                                    const uint8_t *in, size_t t0, size_t t1, uint64_t key)
{
    size_t len = t0 - *s;
    if (!key || len < 3 || len > RP_ZPKT_MAX_MATCH || t1 - t0 != 1)
        return 0;
    uint32_t h = rp_zpkt_keyhash(key);
    size_t d = *s - z->keyed[h].at;
    if (z->keyed[h].key != key || d - 1 >= RP_ZPKT_DIST_TAB)
        return 0;
    uint32_t dc = z->dist[d - 1];
    struct rp_zcode L = z->len[len], c = z->lit[in[t0]];
    unsigned nb = L.n + (dc >> 24);
    uint64_t v = L.bits | (uint64_t)(dc & 0xffffff) << L.n | (uint64_t)c.bits << nb;
    w->acc |= v << w->n;
    w->n += nb + c.n;
    rp_zpkt_flush8(w);
    z->keyed[h].at = (uint32_t)*s;
    *s = t1;
    return 1;
}

/* A mark (see rp_zpkt_open).  Cannot fail. */
static inline void rp_zpkt_mark(struct rp_zpkt *z, const uint8_t *in, size_t t0, size_t t1,
                                uint64_t key)
{
    struct rp_zbits w = z->w;
    size_t s = z->s;
    if (rp_zpkt_mark_fast(z, &w, &s, in, t0, t1, key)) {
        z->w = w;
        z->s = s;
        return;
    }
    rp_zpkt_mark_slow(z, in, t0, t1, key);
}

#endif /* RP_REPORT_EXPORT_ZPKT_H */

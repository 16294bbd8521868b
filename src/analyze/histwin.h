// SPDX-License-Identifier: MIT
/*
 * histwin.h - the analyzer's per-node histogram: the shared log-linear buckets
 * of src/common/hist.h, stored as a window of whole rows.
 *
 * A row is the RP_HIST_SUB buckets of one octave of durations.  A
 * procedure's durations usually span a few octaves, so the counts kept are
 * a window: on the first value (or merge) exactly the buckets it needs - one
 * count, 4 bytes, for a node whose spans all fell in one bucket, as most
 * spans of a procedure called once or a few times do - and, once a value
 * falls outside, the whole rows from the lowest to the highest one a value
 * fell in (rp_hist_cover): a few hundred bytes per node where all
 * RP_HIST_BUCKETS buckets take 7.5 KB, which for a program with 50,000
 * procedures would be 384 MB per replaying thread.
 *
 * A node's spans made one at a time may all fall in one bucket (a node
 * called once does): rp_hist_cover1 keeps that one count in the struct
 * itself, not in a malloc block of 4 bytes (32 with the allocator's
 * header), until a second bucket is needed.  Read the counts through
 * rp_hist_c (rp_hist_w to write them).
 *
 * Invariant: len == 0, lo == 0 and counts NULL (empty); or len == 1 and
 * counts NULL, the bucket lo's count in one; or counts holds len >= 1
 * counts, for the buckets lo .. lo + len - 1.  lo + len <= RP_HIST_BUCKETS.
 */
#ifndef RP_ANALYZE_HISTWIN_H
#define RP_ANALYZE_HISTWIN_H

#include <stdlib.h>
#include <string.h>

#include "common/hist.h"

struct rp_hist {
    uint32_t *counts; /* len counts from bucket lo on; NULL when empty or kept in one */
    uint64_t n;       /* values counted */
    uint16_t lo, len; /* the window, in buckets */
    uint32_t one;     /* the count of a one-bucket window without counts (rp_hist_cover1) */
};

/* The len counts of h's window (len >= 1).  Cannot fail. */
static inline const uint32_t *rp_hist_c(const struct rp_hist *h)
{
    return h->counts ? h->counts : &h->one;
}
static inline uint32_t *rp_hist_w(struct rp_hist *h)
{
    return h->counts ? h->counts : &h->one;
}

/* Grows h's window to hold the buckets b0 .. b1 (b0 <= b1 <
 * RP_HIST_BUCKETS), in one allocation; nothing if it does already.  A new
 * window is exactly b0 .. b1; a grown one, whole rows.  Returns 0, or -1
 * when the counts cannot be allocated (h is then unchanged). */
static inline int rp_hist_cover(struct rp_hist *h, unsigned b0, unsigned b1)
{
    unsigned lo = b0, hi = b1 + 1;

    if (h->len && b0 >= h->lo && b1 < (unsigned)h->lo + h->len)
        return 0;
    if (h->len) { /* values spread: whole rows, so it grows a few times at most */
        lo = h->lo < lo ? h->lo : lo;
        hi = (unsigned)h->lo + h->len > hi ? (unsigned)h->lo + h->len : hi;
        lo -= lo % RP_HIST_SUB;
        hi += (RP_HIST_SUB - hi % RP_HIST_SUB) % RP_HIST_SUB;
    }
    uint32_t *c = calloc(hi - lo, sizeof *c);
    if (!c)
        return -1;
    if (h->len)
        memcpy(c + (h->lo - lo), rp_hist_c(h), (size_t)h->len * sizeof *c);
    free(h->counts);
    h->counts = c;
    h->one = 0;
    h->lo = (uint16_t)lo;
    h->len = (uint16_t)(hi - lo);
    return 0;
}

/* rp_hist_cover for the one bucket b; an empty h keeps its count in the
 * struct (not for the replay's accumulators, whose counts it addresses
 * directly and which move).  Returns 0, or -1 as rp_hist_cover. */
static inline int rp_hist_cover1(struct rp_hist *h, unsigned b)
{
    if (h->len)
        return rp_hist_cover(h, b, b);
    h->lo = (uint16_t)b;
    h->len = 1;
    h->one = 0;
    return 0;
}

/* Adds k to the count of bucket b, which h's window must hold; counts
 * saturate instead of wrapping.  Cannot fail. */
static inline void rp_hist_bump(struct rp_hist *h, unsigned b, uint64_t k)
{
    uint32_t *c = &rp_hist_w(h)[b - h->lo];
    uint64_t v = (uint64_t)*c + k;
    *c = v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* Counts v.  Returns 0, or -1 when the counts cannot be allocated (the
 * value is then not counted and the histogram stays usable). */
static inline int rp_hist_add(struct rp_hist *h, uint64_t v)
{
    unsigned b = rp_hist_index(v);
    if (rp_hist_cover(h, b, b))
        return -1;
    rp_hist_bump(h, b, 1);
    h->n++;
    return 0;
}

/* Adds the counts of src to dst (not n: the caller knows what it counts).
 * Returns 0, or -1 when dst cannot grow (dst is then unchanged). */
static inline int rp_hist_merge(struct rp_hist *dst, const struct rp_hist *src)
{
    if (!src->len)
        return 0;
    if (rp_hist_cover(dst, src->lo, src->lo + src->len - 1u))
        return -1;
    const uint32_t *sc = rp_hist_c(src);
    for (unsigned i = 0; i < src->len; i++)
        if (sc[i])
            rp_hist_bump(dst, src->lo + i, sc[i]);
    return 0;
}

static inline uint64_t rp_hist_q(const struct rp_hist *h, double q)
{
    return h->len ? rp_hist_quantile_of(rp_hist_c(h), h->lo, h->len, h->n, q) : 0;
}

static inline void rp_hist_free(struct rp_hist *h)
{
    free(h->counts);
    h->counts = NULL;
    h->n = 0;
    h->lo = h->len = 0;
    h->one = 0;
}

#endif /* RP_ANALYZE_HISTWIN_H */

// SPDX-License-Identifier: MIT
/*
 * hist.h - the log-linear duration histogram shared by direct mode (in the
 * recorder) and the analyzer, so both report the same percentiles.
 *
 * Values below 32 get a bucket each.  A value v >= 32 with e = floor(log2 v)
 * falls in one of 32 equal sub-buckets of [2^e, 2^(e+1)):
 *
 *     bucket = (e - 4) * 32 + ((v >> (e - 5)) & 31)
 *
 * A bucket is reported by its midpoint, so the relative error of any
 * percentile is at most half a sub-bucket over its lower edge: 1/64 < 1.6 %.
 * All 64-bit values fit in RP_HIST_BUCKETS buckets.  Storage is the caller's
 * (a uint32_t array of RP_HIST_BUCKETS counts), so the recorder can place it
 * in preallocated memory; counts saturate instead of wrapping.
 */
#ifndef RP_COMMON_HIST_H
#define RP_COMMON_HIST_H

#include <stdint.h>

#define RP_HIST_SUB     32
#define RP_HIST_BUCKETS ((64 - 4) * RP_HIST_SUB) /* 1920 */

static inline unsigned rp_hist_index(uint64_t v)
{
    if (v < RP_HIST_SUB)
        return (unsigned)v;
    unsigned e = 63u - (unsigned)__builtin_clzll(v);
    return (e - 4) * RP_HIST_SUB + (unsigned)((v >> (e - 5)) & (RP_HIST_SUB - 1));
}

/* The value a bucket stands for: its midpoint (exact below 32). */
static inline uint64_t rp_hist_value(unsigned b)
{
    if (b < RP_HIST_SUB)
        return b;
    unsigned e = b / RP_HIST_SUB + 4, sub = b % RP_HIST_SUB;
    uint64_t lo = (uint64_t)(RP_HIST_SUB + sub) << (e - 5);
    return lo + ((1ull << (e - 5)) >> 1);
}

/* The smallest value of a bucket (exact below 32). */
static inline uint64_t rp_hist_lower(unsigned b)
{
    if (b < RP_HIST_SUB)
        return b;
    unsigned e = b / RP_HIST_SUB + 4, sub = b % RP_HIST_SUB;
    return (uint64_t)(RP_HIST_SUB + sub) << (e - 5);
}

static inline __attribute__((always_inline)) void rp_hist_count(uint32_t *counts, uint64_t v)
{
    uint32_t *c = &counts[rp_hist_index(v)];
    if (*c != UINT32_MAX)
        (*c)++;
}

/*
 * The q-quantile (0 < q <= 1) by the nearest-rank rule over the nb buckets
 * first, first + 1, ... whose counts are counts[0 .. nb): the smallest
 * bucket whose cumulative count reaches ceil(q * n), n being the number of
 * values counted (all of them in these buckets).  Returns 0 for an empty
 * histogram, the last bucket's value if the counts fall short of n.
 */
static inline uint64_t rp_hist_quantile_of(const uint32_t *counts, unsigned first, unsigned nb,
                                           uint64_t n, double q)
{
    if (n == 0 || nb == 0)
        return 0;
    double r = q * (double)n;
    uint64_t want = (uint64_t)r;
    if ((double)want < r)
        want++;
    if (want == 0)
        want = 1;
    uint64_t seen = 0;
    for (unsigned b = 0; b < nb; b++) {
        seen += counts[b];
        if (seen >= want)
            return rp_hist_value(first + b);
    }
    return rp_hist_value(first + nb - 1);
}

/* The q-quantile of a histogram of all RP_HIST_BUCKETS buckets (above). */
static inline uint64_t rp_hist_quantile(const uint32_t *counts, uint64_t n, double q)
{
    return rp_hist_quantile_of(counts, 0, RP_HIST_BUCKETS, n, q);
}

#endif /* RP_COMMON_HIST_H */

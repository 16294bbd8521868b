/*
 * hist.h - the analyzer's per-node histogram: the shared log-linear buckets
 * of src/common/hist.h with storage allocated on the first value.
 */
#ifndef RP_ANALYZE_HIST_H
#define RP_ANALYZE_HIST_H

#include <stdlib.h>

#include "../common/hist.h"

struct rp_hist {
    uint32_t *counts; /* RP_HIST_BUCKETS entries, NULL until the first add */
    uint64_t n;
};

/* Counts v.  Returns 0, or -1 when the bucket array cannot be allocated (the
 * value is then not counted and the histogram stays usable). */
static inline int rp_hist_add(struct rp_hist *h, uint64_t v)
{
    if (!h->counts) {
        h->counts = calloc(RP_HIST_BUCKETS, sizeof(uint32_t));
        if (!h->counts)
            return -1;
    }
    rp_hist_count(h->counts, v);
    h->n++;
    return 0;
}

static inline uint64_t rp_hist_q(const struct rp_hist *h, double q)
{
    return h->counts ? rp_hist_quantile(h->counts, h->n, q) : 0;
}

static inline void rp_hist_free(struct rp_hist *h)
{
    free(h->counts);
    h->counts = NULL;
    h->n = 0;
}

#endif /* RP_ANALYZE_HIST_H */

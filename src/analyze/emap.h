// SPDX-License-Identifier: MIT
/*
 * emap.h - the index of a profile's edges while they are counted: edges
 * keyed by (caller, callee), an open-addressing hash over an array of
 * struct rp_edge.  The replay keeps one per replayer and one for the
 * profile (replay_int.h); direct mode's STATS records add to the latter
 * (stats.c).  Everything is inline: the replay's span path uses it.
 */
#ifndef RP_ANALYZE_EMAP_H
#define RP_ANALYZE_EMAP_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/error.h"
#include "profile.h"

/* Edges keyed by (caller, callee): an open-addressing index over an array. */
struct rp_emap {
    uint64_t *keys; /* (caller << 32 | callee) + 1, 0 = empty */
    uint32_t *vals; /* index in edges */
    uint32_t cap;   /* a power of two, at least twice n */
    struct rp_edge *edges;
    uint32_t n, capn;
};

/* Doubles the index of m (1024 slots at first).  Returns 0, or RP_ENOMEM
 * with m unchanged.  (Static, as the lookup: the compiler then sees that
 * the replay's miss path touches only the map.) */
static inline int rp_emap_grow(struct rp_emap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *nk = calloc(ncap, sizeof(*nk));
    uint32_t *nv = malloc(ncap * sizeof(*nv));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return RP_ENOMEM;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        uint32_t j = (uint32_t)rp_mix64(m->keys[i]) & (ncap - 1);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

/* Frees the index and the edges of m and zeroes it.  Cannot fail. */
static inline void rp_emap_free(struct rp_emap *m)
{
    free(m->keys);
    free(m->vals);
    free(m->edges);
    memset(m, 0, sizeof(*m));
}

/* The edge caller -> callee in m, created if new; NULL when out of memory. */
static inline struct rp_edge *rp_emap_get(struct rp_emap *m, uint32_t caller, uint32_t callee)
{
    uint64_t k = ((uint64_t)caller << 32 | callee) + 1;
    if ((m->n + 1) * 2 > m->cap && rp_emap_grow(m) < 0)
        return NULL;
    uint32_t mask = m->cap - 1, i = (uint32_t)rp_mix64(k) & mask;
    while (m->keys[i]) {
        if (m->keys[i] == k)
            return &m->edges[m->vals[i]];
        i = (i + 1) & mask;
    }
    if (rp_grow(&m->edges, &m->capn, m->n + 1, sizeof(*m->edges), 256) < 0)
        return NULL;
    struct rp_edge *e = &m->edges[m->n];
    memset(e, 0, sizeof(*e));
    e->caller = caller;
    e->callee = callee;
    e->min = UINT64_MAX;
    m->keys[i] = k;
    m->vals[i] = m->n++;
    return e;
}

#endif /* RP_ANALYZE_EMAP_H */

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

/* Edges keyed by (caller, callee): an open-addressing index over an array.
 * A slot holds an edge's index + 1 (0 = empty) and the edge its key: 4
 * bytes a slot, not 12 with a copy of the key. */
struct rp_emap {
    uint32_t *vals; /* index in edges + 1, 0 = empty */
    uint32_t cap;   /* a power of two, at least twice n */
    struct rp_edge *edges;
    uint32_t n, capn;
};

/* The slot of (caller, callee) in an index of cap slots: its home. */
static inline uint32_t rp_emap_home(uint32_t caller, uint32_t callee, uint32_t cap)
{
    return (uint32_t)rp_mix64(((uint64_t)caller << 32 | callee) + 1) & (cap - 1);
}

/* Doubles the index of m (1024 slots at first).  Returns 0, or RP_ENOMEM
 * with m unchanged.  (Static, as the lookup: the compiler then sees that
 * the replay's miss path touches only the map.) */
static inline int rp_emap_grow(struct rp_emap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 1024;
    uint32_t *nv = calloc(ncap, sizeof(*nv));
    if (!nv)
        return RP_ENOMEM;
    for (uint32_t k = 0; k < m->n; k++) {
        uint32_t j = rp_emap_home(m->edges[k].caller, m->edges[k].callee, ncap);
        while (nv[j])
            j = (j + 1) & (ncap - 1);
        nv[j] = k + 1;
    }
    free(m->vals);
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

/* Frees m's index, keeping its edges (m can only be read as an array
 * then: m->edges[0..n)).  Cannot fail. */
static inline void rp_emap_drop_index(struct rp_emap *m)
{
    free(m->vals);
    m->vals = NULL;
    m->cap = 0;
}

static inline void rp_emap_free(struct rp_emap *m)
{
    free(m->vals);
    free(m->edges);
    memset(m, 0, sizeof(*m));
}

/* The edge caller -> callee in m, created if new; NULL when out of memory. */
static inline struct rp_edge *rp_emap_get(struct rp_emap *m, uint32_t caller, uint32_t callee)
{
    if ((m->n + 1) * 2 > m->cap && rp_emap_grow(m) < 0)
        return NULL;
    uint32_t mask = m->cap - 1, i = rp_emap_home(caller, callee, m->cap);
    while (m->vals[i]) {
        struct rp_edge *e = &m->edges[m->vals[i] - 1];
        if (e->caller == caller && e->callee == callee)
            return e;
        i = (i + 1) & mask;
    }
    if (rp_grow(&m->edges, &m->capn, m->n + 1, sizeof(*m->edges), 256) < 0)
        return NULL;
    struct rp_edge *e = &m->edges[m->n];
    memset(e, 0, sizeof(*e));
    e->caller = caller;
    e->callee = callee;
    e->min = UINT64_MAX;
    m->vals[i] = ++m->n;
    return e;
}

/* The caller of the edges that count spans outside the program's code in
 * an edge map (a replayer's, or the direct-mode statistics'): no node;
 * finish_accs (accum.c) moves them to rp_profile.outside. */
#define RP_OUTSIDE_CALLER UINT32_MAX

#endif /* RP_ANALYZE_EMAP_H */

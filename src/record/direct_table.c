// SPDX-License-Identifier: MIT
/*
 * direct_table.c - direct mode's tables (direct_int.h): the owner-only
 * indexes, the chunks that entries, edges and histogram rows live in, and
 * the merging of one table into another (a thread's into the table of ended
 * threads, every table into a snapshot).
 *
 * Invariants: an entry, edge or row is fully written before the count that
 * publishes it is stored with release; chunks never move; the index holds
 * each published key once and is at most half full.  The merger owns dst;
 * src may be a running thread's, read with relaxed and acquire loads.
 */
#include <stdlib.h>
#include <string.h>

#include "direct_int.h"
#include "sites.h"

/*
 * Adds key -> val to the index *s of *cap slots holding `count` keys,
 * doubling it at half load.  Returns 0, or -1 when the larger index cannot
 * be had (the index is unchanged).
 */
static int idx_put(struct slot **s, uint32_t *cap, uint32_t count, uint64_t key, uint32_t val)
{
    if ((count + 1) * 2 > *cap) {
        uint32_t ncap = *cap ? *cap * 2 : IDX_INIT;
        struct slot *ns = zalloc(ncap * sizeof(*ns));
        if (!ns)
            return -1;
        for (uint32_t i = 0; i < *cap; i++) {
            if (!(*s)[i].key)
                continue;
            uint32_t j = (uint32_t)rp_mix64((*s)[i].key) & (ncap - 1);
            while (ns[j].key)
                j = (j + 1) & (ncap - 1);
            ns[j] = (*s)[i];
        }
        zfree(*s, *cap * sizeof(**s));
        *s = ns;
        *cap = ncap;
    }
    uint32_t m = *cap - 1, i = (uint32_t)rp_mix64(key) & m;
    while ((*s)[i].key)
        i = (i + 1) & m;
    (*s)[i].key = key;
    (*s)[i].val = val;
    return 0;
}

RP_HIDDEN void rp_dtab_init(struct dtable *t)
{
    memset(t, 0, sizeof(*t));
    t->n = 1;
    t->nrows = 1;
}

RP_HIDDEN void rp_dtab_free(struct dtable *t)
{
    for (uint32_t i = 0; i < ID_MAX / ID_CHUNK; i++)
        zfree(t->ids[i], ID_CHUNK * sizeof(struct dstat));
    for (uint32_t i = 0; i < EDGE_MAX / EDGE_CHUNK; i++)
        zfree(t->edges[i], EDGE_CHUNK * sizeof(struct dedge));
    for (uint32_t i = 0; i < ROW_MAX / ROW_CHUNK; i++)
        zfree(t->rows[i], ROW_CHUNK * sizeof(*t->rows[0]));
    zfree(t->idx, t->icap * sizeof(struct slot));
    zfree(t->eidx, t->ecap * sizeof(struct slot));
    rp_dtab_init(t);
}

/* Adds entry `key`.  Returns its index, or 0 when a bound is hit. */
RP_HIDDEN RP_NOINLINE uint32_t rp_dtab_stat_new(struct dtable *t, uint64_t key, uint64_t budget,
                                                uint8_t lib)
{
    uint32_t i = t->n;
    if (i >= ID_MAX)
        return 0;
    if (!t->ids[i / ID_CHUNK] && !(t->ids[i / ID_CHUNK] = zalloc(ID_CHUNK * sizeof(struct dstat))))
        return 0;
    if (idx_put(&t->idx, &t->icap, i - 1, key, i) < 0)
        return 0;
    struct dstat *s = stat_at(t, i);
    s->key = key;
    s->budget = budget ? budget : UINT64_MAX;
    s->min = UINT64_MAX;
    s->self = i;
    s->last_caller = UINT32_MAX;
    s->lib = lib;
    STR(t->n, i + 1);
    return i;
}

/* Adds edge `key`.  Returns its index + 1, or 0 when a bound is hit. */
RP_HIDDEN RP_NOINLINE uint32_t rp_dtab_edge_new(struct dtable *t, uint64_t key)
{
    uint32_t i = t->nedges;
    if (i >= EDGE_MAX)
        return 0;
    if (!t->edges[i / EDGE_CHUNK] &&
        !(t->edges[i / EDGE_CHUNK] = zalloc(EDGE_CHUNK * sizeof(struct dedge))))
        return 0;
    if (idx_put(&t->eidx, &t->ecap, i, key, i + 1) < 0)
        return 0;
    struct dedge *e = edge_at(t, i);
    e->key = key;
    e->min = UINT64_MAX;
    STR(t->nedges, i + 1);
    return i + 1;
}

/* A zeroed histogram row.  Returns its index, or 0 when a bound is hit. */
RP_HIDDEN RP_NOINLINE uint32_t rp_dtab_row_new(struct dtable *t)
{
    uint32_t r = t->nrows;
    if (r >= ROW_MAX)
        return 0;
    if (!t->rows[r / ROW_CHUNK] &&
        !(t->rows[r / ROW_CHUNK] = zalloc(ROW_CHUNK * sizeof(*t->rows[0]))))
        return 0;
    t->nrows = r + 1;
    return r;
}

/* A new id of a thread: sites carry a budget and say their kind and file
 * (rp_sites_describe takes the registry lock, once per site and thread);
 * the interposers' condition waits, lock waits and holds are keyed by the
 * object's address, with their kind. */
RP_HIDDEN RP_NOINLINE uint32_t rp_dtab_id_new(struct dtable *t, uint64_t key)
{
    struct rp_def d = {.kind = TKIND(key)};
    if (TKIND(key) == RP_KIND_POINT && rp_sites_describe(TPAYLOAD(key), &d) < 0)
        d = (struct rp_def){.kind = RP_KIND_POINT};
    int blocked = d.kind == RP_KIND_WAIT || d.kind == RP_KIND_LOCK_WAIT;
    int lib = (blocked || d.kind == RP_KIND_LOCK_HOLD) && (!d.file || !*d.file);
    return rp_dtab_stat_new(t, key, d.budget,
                            (uint8_t)((lib ? DSTAT_LIB : 0) | (blocked ? DSTAT_BLOCKED : 0)));
}

/*
 * The moments of n durations from the shifted sums: mean = K + sx / n and
 * M2 = sxx - sx^2 / n.  Shifting by K (the first duration, close to the
 * mean) keeps the sums small, so the subtraction loses nothing that matters
 * (the "shifted data" algorithm), and the hot path needs no division.
 */
RP_HIDDEN void rp_dstat_moments(const struct dstat *s, uint64_t n, double *mean, double *m2)
{
    double sx = ldd((double *)&s->sx), sxx = ldd((double *)&s->sxx);
    if (!n) {
        *mean = *m2 = 0;
        return;
    }
    *mean = (double)LD(s->shift) + sx / (double)n;
    double v = sxx - sx * sx / (double)n;
    *m2 = v > 0 ? v : 0;
}

/*
 * Adds the moments of b (nb values) to a's (na values) by Chan's parallel
 * form of Welford's update:  d = mean_b - mean_a,  mean = mean_a + d nb / n,
 * M2 = M2_a + M2_b + d^2 na nb / n,  then stores them back as a's shifted
 * sums (a's shift kept).
 */
static void moments_merge(struct dstat *a, uint64_t na, struct dstat *b, uint64_t nb)
{
    double ma, m2a, mb, m2b, n = (double)(na + nb);
    rp_dstat_moments(a, na, &ma, &m2a);
    rp_dstat_moments(b, nb, &mb, &m2b);
    if (!na) {
        ST(a->shift, LD(b->shift));
        ma = mb;
    }
    double d = mb - ma, mean = ma + d * (double)nb / n;
    double m2 = m2a + m2b + d * d * (double)na * (double)nb / n;
    double sx = n * (mean - (double)a->shift);
    std_(&a->sx, sx);
    std_(&a->sxx, m2 + sx * sx / n);
}

/* Adds src's statistics of one id to dst's (dst is the merger's own). */
static int stat_merge(struct dtable *dt, struct dstat *a, const struct dtable *st, struct dstat *b)
{
    uint64_t na = a->calls, nb = LD(b->calls);
    int lost = 0;
    ST(a->ocalls, a->ocalls + LD(b->ocalls));
    ST(a->oticks, a->oticks + LD(b->oticks));
    if (!nb)
        return 0;
    uint64_t n = na + nb;
    moments_merge(a, na, b, nb);
    ST(a->calls, n);
    ST(a->incl, a->incl + LD(b->incl));
    ST(a->dur, a->dur + LD(b->dur));
    ST(a->excl, a->excl + LD(b->excl)); /* signed sums (rp_span_excl) */
    ST(a->cut, a->cut + LD(b->cut));
    ST(a->overruns, a->overruns + LD(b->overruns));
    uint64_t bmin = LD(b->min), bmax = LD(b->max), bf = LD(b->first), bl = LD(b->last);
    if (bmin < a->min)
        ST(a->min, bmin);
    if (bmax > a->max)
        ST(a->max, bmax);
    if (!na || bf < a->first)
        ST(a->first, bf);
    if (bl > a->last)
        ST(a->last, bl);
    for (unsigned r = 0; r < HROWS; r++) {
        uint32_t rb = LDA(b->row[r]);
        if (!rb)
            continue;
        uint32_t ra = a->row[r];
        if (!ra && (ra = rp_dtab_row_new(dt)))
            STR(a->row[r], (uint16_t)ra);
        if (!ra) {
            lost = 1;
            continue;
        }
        uint32_t *ca = row_at(dt, ra), *cb = row_at(st, rb);
        for (unsigned i = 0; i < RP_HIST_SUB; i++) {
            uint64_t v = (uint64_t)ca[i] + LD(cb[i]);
            ST(ca[i], v > UINT32_MAX ? UINT32_MAX : (uint32_t)v);
        }
    }
    return lost;
}

/* Merges src (possibly a running thread's) into dst (owned by the caller),
 * allocating only with mmap (it runs in the final flush).  Returns the
 * number of activations that could not be merged. */
RP_HIDDEN uint64_t rp_dtab_merge(struct dtable *dst, struct dtable *src)
{
    uint32_t n = LDA(src->n), ne = LDA(src->nedges);
    uint64_t lost = 0;
    uint32_t *map = zalloc(n * sizeof(*map));
    if (!map)
        return 1;
    for (uint32_t i = 1; i < n; i++) {
        struct dstat *b = stat_at(src, i);
        uint32_t j = dst->icap ? idx_find(dst->idx, dst->icap, b->key) : 0;
        if (!j && !(j = rp_dtab_stat_new(dst, b->key, b->budget, b->lib))) {
            lost += LD(b->calls);
            continue;
        }
        map[i] = j;
        lost += (uint64_t)stat_merge(dst, stat_at(dst, j), src, b);
    }
    for (uint32_t i = 0; i < ne; i++) {
        struct dedge *b = edge_at(src, i);
        uint32_t caller = (uint32_t)(b->key >> 32), callee = (uint32_t)b->key;
        uint64_t calls = LD(b->calls);
        if (callee >= n || caller >= n || !map[callee] || (caller && !map[caller])) {
            lost += calls;
            continue;
        }
        uint64_t k = (uint64_t)map[caller] << 32 | map[callee];
        uint32_t e1 = dst->ecap ? idx_find(dst->eidx, dst->ecap, k) : 0;
        if (!e1 && !(e1 = rp_dtab_edge_new(dst, k))) {
            lost += calls;
            continue;
        }
        struct dedge *a = edge_at(dst, e1 - 1);
        uint64_t bmin = LD(b->min), bmax = LD(b->max);
        ST(a->calls, a->calls + calls);
        ST(a->incl, a->incl + LD(b->incl));
        if (bmin < a->min)
            ST(a->min, bmin);
        if (bmax > a->max)
            ST(a->max, bmax);
    }
    zfree(map, n * sizeof(*map));
    ST(dst->dropped, dst->dropped + LD(src->dropped));
    return lost;
}

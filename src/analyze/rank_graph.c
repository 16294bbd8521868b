// SPDX-License-Identifier: MIT
/*
 * rank_graph.c - pass (1) of the ranking (rank.c): the out-adjacency by
 * node, read from the input in place, with the coefficients (1 - alpha)
 * w_ij / T_i: in one pass when the edges come grouped by caller (a
 * profile's do), in two halves side by side with two threads, else with a
 * counting sort.
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "common/error.h"
#include "rank_int.h"

uint32_t rp_rank_whole_span = WHOLE_SPAN;

/* An edge the adjacency keeps: not into ROOT, not a self loop. */
static inline int linking(uint32_t a, uint32_t b)
{
    return b != 0 && b != a;
}

/*
 * Ends row i of the adjacency by node, whose linking edges are [start, k)
 * with their weights in c1, tot being the row's total (stop weight and all
 * its edges) and diag its self-loop weight: sets off1[i + 1] (not off1[i],
 * which may be another half's), puts i's self-loop factor at *nsl in the
 * list (and moves *nsl on) unless it is 1, and turns the weights into
 * coefficients (1 - alpha) w / tot.  Returns 0 or RP_EINVAL (a total that
 * overflowed).
 */
static int end_row(struct solver *sv, double tot, double diag, double alpha, uint32_t i,
                   uint32_t start, uint32_t k, uint32_t *nsl)
{
    if (!isfinite(tot))
        return RP_EINVAL;
    double q = tot > 0.0 ? (1.0 - alpha) * diag / tot : 0.0;
    double scale = tot > 0.0 ? (1.0 - alpha) / tot : 0.0;
    /* ROOT's value is fixed, its self loop means nothing */
    double inv = i > 0 && q >= 1.0 ? 0.0 : 1.0 / (1.0 - (i > 0 ? q : 0.0));
    if (inv != 1.0) {
        sv->sl_node[*nsl] = i;
        sv->sl_inv[(*nsl)++] = inv;
    }
    for (uint32_t e = start; e < k; e++)
        sv->c1[e] *= scale;
    sv->off1[i + 1] = k;
    return 0;
}

/* Whether edge e of g is well formed: both ends < n, weight finite >= 0. */
static inline int edge_ok(const struct input *g, uint32_t a, uint32_t b, double w)
{
    return a < g->n && b < g->n && w >= 0.0 && isfinite(w);
}

/* Sets *t to the stop weight of row i, where its total starts (ROOT's is
 * checked, then taken as 0: ROOT has no stop weight).  Returns 0 or
 * RP_EINVAL (a negative or non-finite stop weight). */
static inline int start_row(const struct input *g, uint32_t i, double *t)
{
    double s = in_weight(g, g->stop, g->stop_step, i);

    if (!isfinite(s) || s < 0.0)
        return RP_EINVAL;
    *t = i > 0 ? s : 0.0;
    return 0;
}

/*
 * A part of the adjacency built in one pass (adjacency_sorted): the edges
 * [e0, e1) of the input, whose callers must be in rows [r0, r1), written
 * from k0 on.  Touches only its own rows of every array, and only off1[i]
 * for r0 < i <= r1 (and off1[0] when r0 == 0).
 */
struct adj_part {
    const struct input *g;
    struct solver *sv;
    double alpha;
    uint32_t e0, e1, r0, r1, k0;
    uint32_t k;          /* out: the end of what it wrote */
    uint32_t nsl;        /* out: the end of its self-loop factors (from r0) */
    uint32_t back, shrt; /* out: its edges to a lower id, and how many are short */
    int rc;              /* out: as adjacency_sorted */
};

/*
 * The adjacency of a part in one pass when its edges come grouped by caller
 * in increasing order (a profile's always do: replay sorts them): each row
 * is written where it belongs, its total and self-loop weight summed as it
 * goes, and ended (end_row) once the next caller shows.  Sets pt->k and
 * pt->rc: 0, 1 (the edges are not in order or not in the part's rows:
 * nothing is kept), or RP_EINVAL as rp_rank_adjacency.  Takes a void * to
 * run on a thread (rp_rank_run_pair).
 */
static void adjacency_sorted(void *arg)
{
    struct adj_part *pt = arg;
    const struct input *g = pt->g;
    struct solver *sv = pt->sv;
    uint32_t row = pt->r0, start = pt->k0, k = pt->k0, back = 0, shrt = 0, nsl = pt->r0;
    double tot, diag = 0.0; /* of the current row */
    int rc = start_row(g, row, &tot);

    assert(pt->r0 < pt->r1);
    if (rc)
        goto out;
    if (row == 0)
        sv->off1[0] = k;
    for (uint32_t e = pt->e0; e < pt->e1; e++) {
        uint32_t a = in_src(g, e), b = in_dst(g, e);
        double w = in_weight(g, g->w, g->w_step, e);
        if (!edge_ok(g, a, b, w)) {
            rc = RP_EINVAL;
            goto out;
        }
        if (a < row || a >= pt->r1) {
            rc = 1;
            goto out;
        }
        while (row < a) {
            if ((rc = end_row(sv, tot, diag, pt->alpha, row, start, k, &nsl)) ||
                (rc = start_row(g, ++row, &tot)))
                goto out;
            start = k;
            diag = 0.0;
        }
        tot += w;
        if (linking(a, b)) {
            back += b < a;
            shrt += b < a && a - b <= rp_rank_whole_span;
            sv->dst1[k] = b;
            sv->c1[k++] = w;
        } else if (a == b) {
            diag += w;
        }
    }
    for (;;) {
        if ((rc = end_row(sv, tot, diag, pt->alpha, row, start, k, &nsl)) || ++row == pt->r1 ||
            (rc = start_row(g, row, &tot)))
            goto out;
        start = k;
        diag = 0.0;
    }
out:
    pt->k = k;
    pt->nsl = nsl;
    pt->back = back;
    pt->shrt = shrt;
    pt->rc = rc;
}

/*
 * The adjacency in two passes over edges in any order: (1) check, row
 * totals, self-loop weight and out-degrees; (2) counting-sort fill.
 * Returns 0, RP_EINVAL as rp_rank_adjacency, or RP_ENOMEM.
 */
static int adjacency_any(const struct input *g, double alpha, struct solver *sv)
{
    uint32_t n = g->n, m = g->m, *off = sv->off1, *cur = rp_big_malloc((size_t)n * sizeof *cur);
    double *tot = rp_big_malloc((size_t)n * sizeof *tot); /* T_i */
    double *diag = rp_big_calloc(n, sizeof *diag);        /* self-loop weight */
    int rc = RP_ENOMEM;

    if (!cur || !tot || !diag)
        goto out;
    rc = RP_EINVAL;
    for (uint32_t i = 0; i < n; i++)
        if (start_row(g, i, &tot[i]))
            goto out;
    memset(off, 0, ((size_t)n + 1) * sizeof *off);
    sv->nback = sv->nshort = 0;
    for (uint32_t e = 0; e < m; e++) {
        uint32_t a = in_src(g, e), b = in_dst(g, e);
        double w = in_weight(g, g->w, g->w_step, e);
        if (!edge_ok(g, a, b, w))
            goto out;
        tot[a] += w;
        if (linking(a, b))
            off[a + 1]++;
        else if (a == b)
            diag[a] += w;
    }
    for (uint32_t i = 0; i < n; i++) {
        off[i + 1] += off[i];
        cur[i] = off[i];
    }
    for (uint32_t e = 0; e < m; e++) {
        uint32_t a = in_src(g, e), b = in_dst(g, e);
        if (!linking(a, b))
            continue;
        uint32_t k = cur[a]++;
        sv->nback += b < a;
        sv->nshort += b < a && a - b <= rp_rank_whole_span;
        sv->dst1[k] = b;
        sv->c1[k] = in_weight(g, g->w, g->w_step, e);
    }
    sv->nsl = 0;
    for (uint32_t i = 0; i < n; i++)
        if ((rc = end_row(sv, tot[i], diag[i], alpha, i, off[i], off[i + 1], &sv->nsl)))
            goto out;
    rc = 0;
out:
    free(cur);
    free(tot);
    free(diag);
    return rc;
}

/*
 * Where the edges of g are cut in two halves for adjacency_sorted: the
 * first edge, at or after the middle, with a caller other than the edge
 * before.  Returns it, or 0 for no cut (too few edges, one caller past the
 * middle, or a caller that cannot start a half).
 */
static uint32_t adjacency_cut(const struct input *g)
{
    uint32_t e = g->m / 2;

    if (e == 0)
        return 0;
    while (e < g->m && in_src(g, e) == in_src(g, e - 1))
        e++;
    return e < g->m && in_src(g, e) > 0 && in_src(g, e) < g->n ? e : 0;
}

/*
 * The adjacency by node in one pass when the edges come grouped by caller in
 * increasing order.  With two threads, in two halves side by side, cut at a
 * row (adjacency_cut): the first half writes from 0, the second from its
 * first edge's index, which leaves a gap the size of the first half's self
 * loops and edges into ROOT, closed afterwards by moving the second half's
 * edges down; each half writes its self-loop factors from its first row's
 * index on, and the second half's move down after the first's likewise.
 * Each row is computed as in one pass, so the result is the
 * same bit for bit.  Returns 0, 1 (not in order), or RP_EINVAL as
 * rp_rank_adjacency (before 1, and the first half's before the second's).
 */
static int adjacency_halves(const struct input *g, double alpha, struct solver *sv)
{
    uint32_t cut = sv->threads > 1 ? adjacency_cut(g) : 0, mid = cut ? in_src(g, cut) : g->n;
    struct adj_part lo = {g, sv, alpha, 0, cut ? cut : g->m, 0, mid, 0, 0, 0, 0, 0, 0};
    struct adj_part hi = {g, sv, alpha, cut, g->m, mid, g->n, cut, 0, 0, 0, 0, 0};

    if (!cut) {
        adjacency_sorted(&lo);
        sv->nback = lo.back;
        sv->nshort = lo.shrt;
        sv->nsl = lo.nsl;
        return lo.rc;
    }
    rp_rank_run_pair(sv->threads, adjacency_sorted, &lo, adjacency_sorted, &hi);
    if (lo.rc < 0 || hi.rc < 0) /* before 1: the second pass would find it too */
        return lo.rc < 0 ? lo.rc : hi.rc;
    if (lo.rc || hi.rc)
        return 1;
    sv->nback = lo.back + hi.back;
    sv->nshort = lo.shrt + hi.shrt;
    memmove(sv->sl_node + lo.nsl, sv->sl_node + mid, (size_t)(hi.nsl - mid) * sizeof *sv->sl_node);
    memmove(sv->sl_inv + lo.nsl, sv->sl_inv + mid, (size_t)(hi.nsl - mid) * sizeof *sv->sl_inv);
    sv->nsl = lo.nsl + (hi.nsl - mid);
    uint32_t gap = cut - lo.k;
    if (gap) {
        memmove(sv->dst1 + lo.k, sv->dst1 + cut, (size_t)(hi.k - cut) * sizeof *sv->dst1);
        memmove(sv->c1 + lo.k, sv->c1 + cut, (size_t)(hi.k - cut) * sizeof *sv->c1);
        for (uint32_t i = mid + 1; i <= g->n; i++)
            sv->off1[i] -= gap;
    }
    return 0;
}

/*
 * Builds the out-adjacency by node (callees and coefficients (1 - alpha)
 * w_ij / T_i, without self loops and edges into ROOT) and the self-loop
 * factors: in one
 * pass over the input when its edges are grouped by caller in order, else
 * in two.  Returns 0, RP_EINVAL (a negative or non-finite stop weight, an
 * index >= n, a negative or non-finite edge weight, a row total that
 * overflows), or RP_ENOMEM.
 */
int rp_rank_adjacency(const struct input *g, double alpha, struct solver *sv)
{
    uint32_t n = g->n;
    size_t ne = (size_t)g->m + 1;
    int rc = RP_ENOMEM;

    sv->off1 = rp_big_malloc(((size_t)n + 1) * sizeof *sv->off1);
    /* room for every edge: the pages of the ones not kept are never touched;
     * and DST1_SPARE entries after the last (the prefetches read ahead) */
    sv->dst1 = rp_big_malloc((ne + DST1_SPARE) * sizeof *sv->dst1);
    sv->c1 = rp_big_malloc(ne * sizeof *sv->c1);
    /* room for a self-loop factor per node, of which few are written (plain
     * pages: a huge one would be resident whole for one entry); shrunk to
     * what was written */
    sv->sl_node = malloc((size_t)n * sizeof *sv->sl_node);
    sv->sl_inv = malloc((size_t)n * sizeof *sv->sl_inv);
    if (!sv->off1 || !sv->dst1 || !sv->c1 || !sv->sl_node || !sv->sl_inv)
        return rc;
    if ((rc = adjacency_halves(g, alpha, sv)) == 1)
        rc = adjacency_any(g, alpha, sv);
    if (!rc) {
        memset(sv->dst1 + sv->off1[n], 0, DST1_SPARE * sizeof *sv->dst1);
        size_t k = sv->nsl ? sv->nsl : 1;
        uint32_t *a = realloc(sv->sl_node, k * sizeof *a);
        double *b = realloc(sv->sl_inv, k * sizeof *b);
        sv->sl_node = a ? a : sv->sl_node;
        sv->sl_inv = b ? b : sv->sl_inv;
    }
    return rc;
}

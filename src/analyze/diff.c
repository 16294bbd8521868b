// SPDX-License-Identifier: MIT
/*
 * diff.c - two runs side by side (`rankprof diff`, docs/diff.md).
 *
 * Nodes are matched by kind and name, the names the reports print (a
 * function's address differs from run to run; its name does not).  Each
 * pair is judged on its time per call: its own time per call where the
 * trace has it (a replayed trace), else its duration per call.  Times per
 * call are histograms (hist.h: 32 buckets per octave), so the test is one
 * that works on ranks, Mann-Whitney's U, computed from the buckets with
 * the values of a bucket tied: it asks whether a call of the new run tends
 * to take longer than one of the base run, whatever the shape of the two
 * distributions (bimodal ones included, which a t-test mistakes).  With
 * many calls the test finds tiny shifts significant, so a row is slower
 * only when its mean own time per call also moved past the threshold, and
 * only rows with a share of the run's own time are judged (a 40-ns
 * function's own time moves by half from run to run on its own); the
 * noise a shared machine puts on every procedure alike is the drift (the
 * median ratio over the rows, weighted by their own time), shown, and taken
 * out of every row under --relative.
 *
 * Memory: a row per node of either profile and the bucket values of two
 * histograms at a time.
 */
#include "diff.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "histwin.h"
#include "trace/format.h"

#define MIN_CALLS 5 /* per side, for a verdict on the time per call */

void rp_diff_opts_default(struct rp_diff_opts *o)
{
    o->threshold = 0.2;
    o->confidence = 0.99;
    o->min_share = 0.01;
    o->relative = 0;
}

/* ---- matching ------------------------------------------------------------- */

struct key {
    char *name; /* owned */
    uint8_t kind;
    uint32_t idx;
};

static int key_cmp(const void *x, const void *y)
{
    const struct key *a = x, *b = y;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static void keys_free(struct key *k, uint32_t n)
{
    for (uint32_t i = 0; k && i < n; i++)
        free(k[i].name);
    free(k);
}

/* The keys of p's nodes but ROOT and those never seen (no calls, no
 * time), sorted, *n of them.  Returns NULL when out of memory. */
static struct key *keys_of(const struct rp_profile *p, uint32_t *n)
{
    struct key *k = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*k));
    char buf[512];
    *n = 0;
    if (!k)
        return NULL;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const struct rp_node *x = &p->nodes[i];
        if (!x->calls && !rp_node_throttled(x) && !x->incl)
            continue;
        char *s = strdup(rp_node_name(p, x, buf, sizeof buf));
        if (!s) {
            keys_free(k, *n);
            *n = 0;
            return NULL;
        }
        k[(*n)++] = (struct key){s, x->kind, i};
    }
    qsort(k, *n, sizeof(*k), key_cmp);
    return k;
}

/* ---- the test ------------------------------------------------------------- */

int rp_mann_whitney(const double *va, const double *ca, uint32_t na, const double *vb,
                    const double *cb, uint32_t nb, double *z, double *p)
{
    double n1 = 0, n2 = 0;
    for (uint32_t i = 0; i < na; i++)
        n1 += ca[i];
    for (uint32_t i = 0; i < nb; i++)
        n2 += cb[i];
    *z = 0;
    *p = 1;
    if (!(n1 > 0) || !(n2 > 0))
        return -1;
    /* midranks, a tie group at a time, both samples merged in order */
    double seen = 0, r2 = 0, ties = 0, big = n1 + n2;
    uint32_t i = 0, j = 0;
    while (i < na || j < nb) {
        double v = i < na && (j >= nb || va[i] <= vb[j]) ? va[i] : vb[j];
        double tol = fabs(v) * 1e-9, t1 = 0, t2 = 0;
        while (i < na && fabs(va[i] - v) <= tol)
            t1 += ca[i++];
        while (j < nb && fabs(vb[j] - v) <= tol)
            t2 += cb[j++];
        double t = t1 + t2;
        r2 += t2 * (seen + (t + 1) / 2);
        ties += t * t * t - t;
        seen += t;
    }
    double u2 = r2 - n2 * (n2 + 1) / 2;
    double var = n1 * n2 / 12 * ((big + 1) - ties / (big * (big - 1)));
    if (!(var > 0))
        return -1; /* every value the same */
    *z = (u2 - n1 * n2 / 2) / sqrt(var);
    *p = erfc(fabs(*z) / M_SQRT2);
    return 0;
}

/* ---- one row ------------------------------------------------------------- */

const struct rp_hist *rp_diff_per_call(const struct rp_profile *p, const struct rp_node *n,
                                       struct rp_hist *buf)
{
    const struct rp_hist *own = p->own_known ? rp_node_own(n) : NULL;
    return own && own->n ? own : rp_node_hist(n, buf);
}

/* The nonzero buckets of h as values in ns (times scale) and counts, into
 * v and c (room for h->len).  Returns how many. */
static uint32_t hist_values(const struct rp_hist *h, double ns, double *v, double *c)
{
    uint32_t k = 0;
    const uint32_t *hc = rp_hist_c(h);
    for (uint32_t i = 0; i < h->len; i++) {
        if (!hc[i])
            continue;
        v[k] = (double)rp_hist_value(h->lo + i) * ns;
        c[k++] = hc[i];
    }
    return k;
}

/* Judges row r (both sides present): ratio, test, verdict.  scale divides
 * the new run's times (the drift under --relative, else 1).  Returns 0 or
 * RP_ENOMEM. */
static int judge(const struct rp_profile *a, const struct rp_profile *b, struct rp_diff_row *r,
                 const struct rp_diff_opts *o, double scale)
{
    struct rp_hist bufa, bufb;
    const struct rp_hist *ha = rp_diff_per_call(a, &a->nodes[r->a], &bufa),
                         *hb = rp_diff_per_call(b, &b->nodes[r->b], &bufb);
    r->verdict = RP_DIFF_FEW;
    if (ha->n < MIN_CALLS || hb->n < MIN_CALLS)
        return 0;
    /* the size of the change: of the mean own time per call, which adds up
     * to the row's own time (a median misses a slow path taken by a third
     * of the calls); the test says whether it is more than noise */
    const struct rp_node *xa = &a->nodes[r->a], *xb = &b->nodes[r->b];
    double ma = r->self_a / (double)(xa->calls ? xa->calls : 1);
    double mb = r->self_b / scale / (double)(xb->calls ? xb->calls : 1);
    r->ratio = ma > 0 ? mb / ma : (mb > 0 ? INFINITY : 1);
    /* A change per call below either run's resolution (comp.h), or below
     * what the recorder adds to a call (its measured overhead: the error
     * of compensation is a part of it, and differs from run to run), is
     * not one that can be told. */
    double res =
        fmax((double)a->resolution * a->ns_per_tick, (double)b->resolution * b->ns_per_tick);
    if (a->overhead_known)
        res = fmax(res, a->overhead_pair * a->ns_per_tick);
    if (b->overhead_known)
        res = fmax(res, b->overhead_pair * b->ns_per_tick);
    size_t room = (size_t)ha->len + hb->len;
    double *buf = malloc(room * 4 * sizeof(*buf));
    if (!buf)
        return RP_ENOMEM;
    double *va = buf, *ca = va + room, *vb = ca + room, *cb = vb + room;
    uint32_t na = hist_values(ha, a->ns_per_tick, va, ca);
    uint32_t nb = hist_values(hb, b->ns_per_tick / scale, vb, cb);
    rp_mann_whitney(va, ca, na, vb, cb, nb, &r->z, &r->p);
    free(buf);
    int sure = r->p < 1 - o->confidence && fabs(mb - ma) >= res;
    if (sure && r->z > 0 && r->ratio >= 1 + o->threshold)
        r->verdict = RP_DIFF_SLOWER;
    else if (sure && r->z < 0 && r->ratio * (1 + o->threshold) <= 1)
        r->verdict = RP_DIFF_FASTER;
    else
        r->verdict = RP_DIFF_SAME;
    return 0;
}

/* ---- the whole ------------------------------------------------------------ */

static double own_ns(const struct rp_profile *p, uint32_t idx)
{
    return idx == RP_DIFF_NONE ? 0 : (double)p->nodes[idx].excl * p->ns_per_tick;
}

/* Rows that changed come first, then those only in one run, then the
 * rest; each group by the size of the change of own time. */
static int row_group(const struct rp_diff_row *r)
{
    return r->verdict == RP_DIFF_SLOWER || r->verdict == RP_DIFF_FASTER ? 0
           : r->verdict == RP_DIFF_NEW || r->verdict == RP_DIFF_GONE    ? 1
                                                                        : 2;
}

static int row_cmp(const void *x, const void *y)
{
    const struct rp_diff_row *a = x, *b = y;
    if (row_group(a) != row_group(b))
        return row_group(a) < row_group(b) ? -1 : 1;
    double da = fabs(a->self_b - a->self_a), db = fabs(b->self_b - b->self_a);
    if (da != db)
        return da > db ? -1 : 1;
    if (a->a != b->a)
        return a->a < b->a ? -1 : 1;
    return a->b < b->b ? -1 : a->b > b->b;
}

struct wr {
    double ratio, w;
};

static int wr_cmp(const void *x, const void *y)
{
    const struct wr *a = x, *b = y;
    return a->ratio < b->ratio ? -1 : a->ratio > b->ratio;
}

/* The median of the rows' ratios weighted by own time (the new run's). */
static double drift_of(const struct rp_diff *d)
{
    struct wr *w = malloc((d->n ? d->n : 1) * sizeof(*w));
    double total = 0, r = 1;
    uint32_t k = 0;
    if (!w)
        return 1;
    for (uint32_t i = 0; i < d->n; i++) {
        const struct rp_diff_row *x = &d->rows[i];
        if ((x->verdict == RP_DIFF_SAME || x->verdict == RP_DIFF_SLOWER ||
             x->verdict == RP_DIFF_FASTER) &&
            (x->kind == RP_KIND_FUNC || x->kind == RP_KIND_POINT) && x->ratio > 0 &&
            isfinite(x->ratio) && x->self_b > 0) {
            w[k++] = (struct wr){x->ratio, x->self_b};
            total += x->self_b;
        }
    }
    qsort(w, k, sizeof(*w), wr_cmp);
    for (uint32_t i = 0; i < k; i++) { /* the first past half the weight */
        total -= 2 * w[i].w;
        if (total <= 0) {
            r = w[i].ratio;
            break;
        }
    }
    free(w);
    return r;
}

int rp_diff_compute(const struct rp_profile *a, const struct rp_profile *b,
                    const struct rp_diff_opts *o, struct rp_diff *d)
{
    uint32_t nka = 0, nkb = 0;
    struct key *ka = keys_of(a, &nka), *kb = keys_of(b, &nkb);
    int rc = RP_ENOMEM;

    memset(d, 0, sizeof(*d));
    d->drift = 1;
    if (!ka || !kb)
        goto out;
    d->rows = calloc((size_t)nka + nkb + 1, sizeof(*d->rows));
    if (!d->rows)
        goto out;
    /* merge join on (kind, name); equal names pair up in index order */
    for (uint32_t i = 0, j = 0; i < nka || j < nkb;) {
        int c = i == nka ? 1 : j == nkb ? -1 : key_cmp(&ka[i], &kb[j]);
        if (c && i < nka && j < nkb && ka[i].kind == kb[j].kind && !strcmp(ka[i].name, kb[j].name))
            c = 0; /* (key_cmp also orders by index) */
        struct rp_diff_row *r = &d->rows[d->n++];
        r->a = c <= 0 ? ka[i++].idx : RP_DIFF_NONE;
        r->b = c >= 0 ? kb[j++].idx : RP_DIFF_NONE;
        r->p = 1;
        r->self_a = own_ns(a, r->a);
        r->self_b = own_ns(b, r->b);
        r->verdict = r->a == RP_DIFF_NONE ? RP_DIFF_NEW : r->b == RP_DIFF_NONE ? RP_DIFF_GONE : 0;
        r->kind = (r->b != RP_DIFF_NONE ? b->nodes[r->b] : a->nodes[r->a]).kind;
    }
    /* (time off CPU is the scheduler's: not in the shares) */
    for (uint32_t i = 1; i < a->n_nodes; i++)
        d->total_a += a->nodes[i].kind == RP_KIND_OFFCPU ? 0 : own_ns(a, i);
    for (uint32_t i = 1; i < b->n_nodes; i++)
        d->total_b += b->nodes[i].kind == RP_KIND_OFFCPU ? 0 : own_ns(b, i);
    for (uint32_t i = 0; i < d->n; i++) {
        struct rp_diff_row *r = &d->rows[i];
        double sa = d->total_a > 0 ? r->self_a / d->total_a : 0;
        double sb = d->total_b > 0 ? r->self_b / d->total_b : 0;
        r->share = sa > sb ? sa : sb;
        if (!r->verdict && r->kind == RP_KIND_OFFCPU)
            r->verdict = RP_DIFF_SCHED;
        else if (!r->verdict && r->share < o->min_share)
            r->verdict = RP_DIFF_SMALL;
    }
    /* judged as measured first: the drift comes from those ratios */
    for (int pass = 0; pass < 1 + (o->relative != 0); pass++) {
        double scale = pass ? d->drift : 1;
        for (uint32_t i = 0; i < d->n; i++) {
            struct rp_diff_row *r = &d->rows[i];
            if (r->a != RP_DIFF_NONE && r->b != RP_DIFF_NONE && r->verdict != RP_DIFF_SMALL &&
                r->verdict != RP_DIFF_SCHED && (rc = judge(a, b, r, o, scale)) < 0)
                goto out;
        }
        if (!pass)
            d->drift = drift_of(d);
    }
    for (uint32_t i = 0; i < d->n; i++) {
        struct rp_diff_row *r = &d->rows[i];
        r->regression = r->verdict == RP_DIFF_SLOWER;
        d->regressions += r->regression;
        d->improvements += r->verdict == RP_DIFF_FASTER;
    }
    qsort(d->rows, d->n, sizeof(*d->rows), row_cmp);
    rc = 0;
out:
    keys_free(ka, nka);
    keys_free(kb, nkb);
    if (rc < 0)
        rp_diff_free(d);
    return rc;
}

void rp_diff_free(struct rp_diff *d)
{
    free(d->rows);
    d->rows = NULL;
    d->n = 0;
}

// SPDX-License-Identifier: MIT
/*
 * accum.c - the replayers' accumulators (struct acc, replay_int.h): the
 * memory of their per-node arrays, and summing them into the profile's
 * final fields once every chunk is replayed (rp_replay_finish).
 *
 * Sums are exact and taken in one order (edges sorted by caller and callee),
 * so the profile is the same bit for bit whatever the number of replayers.
 */
#define _GNU_SOURCE /* mremap */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/error.h"
#include "common/span.h"
#include "replay_int.h"

/*
 * Makes the zero-filled array *arr (*bytes allocated) hold need bytes,
 * doubling; new bytes are zero.  On Linux it is an anonymous mapping grown
 * by mremap: a page is memory only once written, so a replayer's per-node
 * arrays cost the pages of the ids it sees, not one entry per id of the
 * trace per replayer.  Returns 0, or RP_ENOMEM with the array unchanged.
 */
int rp_zarr_grow(void *arr, size_t *bytes, size_t need)
{
    void *old = *(void **)arr, *n;
    size_t cap = *bytes ? *bytes : 65536;
    if (need <= *bytes)
        return 0;
    while (cap < need)
        cap *= 2;
#if defined(__linux__) && defined(__SANITIZE_THREAD__)
    /* ThreadSanitizer does not intercept mremap, so the pages it moves to
     * would keep the history of whatever another thread mapped there
     * before (a false race): a new mapping, copied, under TSan */
    n = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED)
        return RP_ENOMEM;
    if (old) {
        memcpy(n, old, *bytes);
        munmap(old, *bytes);
    }
#elif defined(__linux__)
    n = old ? mremap(old, *bytes, cap, MREMAP_MAYMOVE)
            : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED)
        return RP_ENOMEM;
#else
    if (!(n = realloc(old, cap)))
        return RP_ENOMEM;
    memset((char *)n + *bytes, 0, cap - *bytes);
#endif
    *(void **)arr = n;
    *bytes = cap;
    return 0;
}

void rp_zarr_free(void *p, size_t bytes)
{
#ifdef __linux__
    if (p)
        munmap(p, bytes);
#else
    (void)bytes;
    free(p);
#endif
}

void rp_acc_free(struct acc *a)
{
    for (uint32_t i = 0; i < a->nhot; i++) /* (reads only: untouched pages stay so) */
        if (a->hot[i].full) {
            rp_hist_free(&a->full[i].hist);
            rp_flag_hists_free(&a->full[i].fh);
            free(a->full[i].rare);
        }
    rp_zarr_free(a->full, a->full_bytes);
    rp_zarr_free(a->hot, a->hot_bytes);
    rp_zarr_free(a->active, a->active_bytes);
    rp_emap_free(&a->em);
    free(a->stack);
    free(a->owned);
    memset(a, 0, sizeof(*a));
}

/* Pages of a zero-filled array given back at a time as it is read for the
 * last time (zarr_release). */
#define ZARR_RELEASE ((size_t)1 << 20)

/*
 * Gives back the memory of bytes [from, to) of the zero-filled array arr
 * (multiples of the page size), which is not read again: the peak of the
 * finish is then not the accumulators and the nodes at once.  Elsewhere
 * than Linux it does nothing.  Cannot fail (the advice may be declined).
 */
static void zarr_release(void *arr, size_t from, size_t to)
{
#ifdef __linux__
    if (to > from)
        (void)madvise((char *)arr + from, to - from, MADV_DONTNEED);
#else
    (void)arr, (void)from, (void)to;
#endif
}

/* An edge's sort key: (caller, callee), or with by_callee (callee,
 * caller). */
static inline uint64_t edge_key(const struct rp_edge *e, int by_callee)
{
    return by_callee ? (uint64_t)e->callee << 32 | e->caller
                     : (uint64_t)e->caller << 32 | e->callee;
}

/* Moves e[i] down the max-heap e[0..n) to its place.  Cannot fail. */
static void edge_sift(struct rp_edge *e, size_t i, size_t n, int by_callee)
{
    struct rp_edge t = e[i];
    uint64_t kt = edge_key(&t, by_callee);
    for (size_t c; (c = 2 * i + 1) < n; i = c) {
        if (c + 1 < n && edge_key(&e[c + 1], by_callee) > edge_key(&e[c], by_callee))
            c++;
        if (edge_key(&e[c], by_callee) <= kt)
            break;
        e[i] = e[c];
    }
    e[i] = t;
}

/* Sorts e[0..n) by edge_key, in place and in O(n log n) whatever the
 * input (heapsort: qsort would take a copy of them, at the peak of the
 * finish).  Cannot fail. */
static void edge_sort(struct rp_edge *e, size_t n, int by_callee)
{
    for (size_t i = n / 2; i-- > 0;)
        edge_sift(e, i, n, by_callee);
    while (n > 1) {
        struct rp_edge t = e[0];
        e[0] = e[--n];
        e[n] = t;
        edge_sift(e, 0, n, by_callee);
    }
}

/* Moves the edges from RP_OUTSIDE_CALLER, last of the m sorted and summed
 * edges e, to p->outside (by id), and leaves the others in e[0..*m).
 * Returns 0 or RP_ENOMEM. */
static int take_outside(struct rp_profile *p, const struct rp_edge *e, size_t *m)
{
    size_t k = *m;
    while (k && e[k - 1].caller == RP_OUTSIDE_CALLER)
        k--;
    free(p->outside);
    p->outside = NULL;
    p->n_outside = 0;
    if (k == *m)
        return 0;
    if (!(p->outside = malloc((*m - k) * sizeof(*p->outside))))
        return RP_ENOMEM;
    for (size_t i = k; i < *m; i++)
        p->outside[p->n_outside++] =
            (struct rp_outside){.id = e[i].callee, .calls = e[i].calls, .ticks = e[i].incl};
    *m = k;
    return 0;
}

/* A node's sums over the replayers that go to its rare fields
 * (rp_node_x), until finish_node: kept for a block of nodes at a time
 * (finish_accs). */
struct fin {
    unsigned __int128 sq; /* the exact sum of squared durations */
    uint64_t omax, rmax;  /* the largest on-CPU duration, and run (struct hot) */
    uint64_t dur, mn, mx; /* its edges' summed durations, minimum (UINT64_MAX: none) and
                             maximum (edges_merge) */
    struct rp_hist hist;  /* the durations' counts, and n its edges' calls: owned until
                             finish_node hands them to the node */
};

/* Adds the span that entry e of node i holds (a leaf, all on CPU: struct
 * hid) into the node and its sums f, as hot_merge adds an accumulator.
 * Returns 0 or RP_ENOMEM. */
static int one_merge(struct rp_profile *p, const struct hid *e, uint32_t i, struct fin *f)
{
    struct rp_node *n = &p->nodes[i];
    uint64_t dur = e->dur;
    unsigned b = rp_hist_index(dur);
    n->excl += rp_span_excl(dur, 0); /* (signed, modulo 2^64 until finish_node) */
    if (e->one & HID_OUTER)
        n->incl += dur;
    f->omax = dur > f->omax ? dur : f->omax;
    f->rmax = dur > f->rmax ? dur : f->rmax;
    f->sq += (unsigned __int128)dur * dur;
    struct rp_flag_hists *x = rp_node_fh(n);
    if (x && x->own.len && rp_hist_add(&x->own, dur)) /* own time: its duration */
        return RP_ENOMEM;
    if (rp_hist_cover1(&f->hist, b)) /* (a node seen once: its one count in the struct) */
        return RP_ENOMEM;
    rp_hist_bump(&f->hist, b, 1);
    return 0;
}

/*
 * Adds the accumulators of a and the spans its entries hold for the nodes
 * [i0, i1) into the nodes and fin (fin[0] is node i0's), giving back the
 * pages of a->hot and a->full below i1 as it goes (*gone, *fgone: the bytes
 * of each given back so far).  Returns 0 or RP_ENOMEM.
 */
static int hot_merge(struct rp_profile *p, struct acc *a, uint32_t i0, uint32_t i1, struct fin *fin,
                     size_t *gone, size_t *fgone)
{
    int rc;
    if (i1 > a->nhot)
        i1 = a->nhot;
    for (uint32_t i = i0; i < i1; i++) {
        const struct hid *e = &a->hot[i];
        struct hot *h = &a->full[i];
        if ((size_t)i * sizeof(*e) >= *gone + ZARR_RELEASE) { /* read: give its pages back */
            zarr_release(a->hot, *gone, (size_t)i * sizeof(*e) / ZARR_RELEASE * ZARR_RELEASE);
            *gone = (size_t)i * sizeof(*e) / ZARR_RELEASE * ZARR_RELEASE;
        }
        if ((size_t)i * sizeof(*h) >= *fgone + ZARR_RELEASE) { /* (and its accumulators') */
            zarr_release(a->full, *fgone, (size_t)i * sizeof(*h) / ZARR_RELEASE * ZARR_RELEASE);
            *fgone = (size_t)i * sizeof(*h) / ZARR_RELEASE * ZARR_RELEASE;
        }
        if (e->one) {
            if ((rc = one_merge(p, e, i, &fin[i - i0])) < 0)
                return rc;
            continue;
        }
        if (!e->full)
            continue;
        struct rp_node *n = &p->nodes[i];
        struct hot_rare *r = h->rare; /* (freed here, whatever the node had) */
        h->rare = NULL;
        if (!h->calls && !h->hist.len) { /* no instant, no span */
            free(r);
            continue;
        }
        n->calls += h->calls;
        n->excl += h->excl;
        n->incl += h->incl;
        struct fin *f = &fin[i - i0];
        f->omax = h->omax > f->omax ? h->omax : f->omax;
        f->rmax = h->rmax > f->rmax ? h->rmax : f->rmax;
        if (r) { /* (few nodes: their rp_node_x at once) */
            struct rp_node_x x = rp_node_x_raw(n);
            x.overruns += r->overruns;
            x.cut += r->cut;
            x.offcpu_below += r->offb;
            x.oncpu_min = ~r->nomin < x.oncpu_min ? ~r->nomin : x.oncpu_min;
            free(r);
            if (rp_node_x_setraw(n, &x) < 0)
                return RP_ENOMEM;
        }
        f->sq += h->sq;
        /* own time: the acc's own counts, or its histogram where every span
         * of it was a leaf (finish_accs made n's where any acc had one) */
        struct rp_flag_hists *hf = h->fh, *x = rp_node_fh(n);
        if (x && x->own.len) {
            const struct rp_hist *src = hf && hf->own.len ? &hf->own : &h->hist;
            if (rp_hist_merge(&x->own, src))
                return RP_ENOMEM;
            if (src == &h->hist)
                for (unsigned b = 0; b < h->hist.len; b++)
                    x->own.n += h->hist.counts[b];
            else
                x->own.n += src->n;
        }
        if (hf) {
            if (!x && !(x = rp_node_fhw(n, 1)))
                return RP_ENOMEM;
            x->aperiodic |= hf->aperiodic;
            if (hf->ivl.len && !x->aperiodic && rp_hist_merge(&x->ivl, &hf->ivl))
                return RP_ENOMEM;
            rp_flag_hists_free(&h->fh);
        }
        if (h->hist.counts && !f->hist.len) { /* the node's sums own it now */
            f->hist.counts = h->hist.counts;
            f->hist.lo = h->hist.lo;
            f->hist.len = h->hist.len;
            h->hist = (struct rp_hist){0};
        } else if (rp_hist_merge(&f->hist, &h->hist)) {
            return RP_ENOMEM;
        } else {
            rp_hist_free(&h->hist);
        }
    }
    return 0;
}

/* Adds the spans of a's edges (sorted by callee) into their callees
 * [i0, i1) and their sums fin (fin[0] is node i0's): the calls,
 * durations, extremes and histogram counts struct hot leaves to the
 * edges; *at is the first edge not yet added.  Cannot fail. */
static void edges_merge(struct rp_profile *p, const struct acc *a, uint32_t i0, uint32_t i1,
                        struct fin *fin, size_t *at)
{
    for (; *at < a->em.n && a->em.edges[*at].callee < i1; ++*at) {
        const struct rp_edge *s = &a->em.edges[*at];
        if (s->caller == RP_OUTSIDE_CALLER || s->callee < i0) /* (no spans of the node) */
            continue;
        struct fin *f = &fin[s->callee - i0]; /* its spans: see struct hot */
        p->nodes[s->callee].calls += s->calls;
        f->dur += s->incl;
        f->mn = s->min < f->mn ? s->min : f->mn;
        f->mx = s->max > f->mx ? s->max : f->mx;
        f->hist.n += s->calls;
    }
}

/* Adds the histogram *src (counts and n) to *dst and frees it, or moves it
 * there when dst is empty.  Returns 0, or RP_ENOMEM with both unchanged. */
static int hist_take(struct rp_hist *dst, struct rp_hist *src)
{
    if (!dst->len) {
        uint64_t n = dst->n + src->n;
        *dst = *src;
        dst->n = n;
    } else if (rp_hist_merge(dst, src)) {
        return RP_ENOMEM;
    } else {
        dst->n += src->n;
        rp_hist_free(src);
    }
    *src = (struct rp_hist){0};
    return 0;
}

/* Adds the incl of m's edges to the off-CPU node into their callers'
 * off-CPU time in their own frame (rp_node_x.offcpu, raw).  Returns 0 or
 * RP_ENOMEM. */
static int offcpu_merge(struct rp_profile *p, const struct rp_emap *m)
{
    for (uint32_t k = 0; k < m->n; k++) {
        const struct rp_edge *x = &m->edges[k];
        if (x->callee < p->n_nodes && p->nodes[x->callee].kind == RP_KIND_OFFCPU &&
            x->caller < p->n_nodes) {
            struct rp_node_x y = rp_node_x_raw(&p->nodes[x->caller]);
            y.offcpu += x->incl;
            if (rp_node_x_setraw(&p->nodes[x->caller], &y) < 0)
                return RP_ENOMEM;
        }
    }
    return 0;
}

/* The clock (ns per tick) and the profile's sums over its threads.  Cannot
 * fail. */
static void finish_threads(struct rp_profile *p, const struct priv *v)
{
    if (v->nclk >= 2 && v->clk_last_ns - v->clk_first_ns >= 10000000u &&
        v->clk_last_ticks > v->clk_first_ticks)
        p->ns_per_tick = (double)(v->clk_last_ns - v->clk_first_ns) /
                         (double)(v->clk_last_ticks - v->clk_first_ticks);
    else if (v->freq_hz > 0)
        p->ns_per_tick = 1e9 / v->freq_hz;
    else
        p->ns_per_tick = 1.0;
    p->total = 0;
    for (uint32_t i = 0; i < p->n_threads; i++) {
        struct rp_thread *th = &p->threads[i];
        if (th->events)
            p->total += th->last - th->first;
        p->lost += th->lost;
        p->unmatched_exits += th->unmatched_exits;
        p->unclosed += th->unclosed;
        p->unwound += th->unwound;
        p->cut += th->cut;
        if (!p->first_tick || (th->events && th->first < p->first_tick))
            p->first_tick = th->first;
        if (th->last > p->last_tick)
            p->last_tick = th->last;
    }
}

/* Node i's final fields: exclusive time with the join's corrections, the
 * flags' histograms, its durations' sum, extremes and histogram from f (f's
 * histogram handed to the node), the spans below the resolution res (0:
 * none set aside), minima, its rare fields from f (rp_node_x: kept apart
 * only when one differs from its default), mean and m2 from the exact sum
 * of squares.  Returns 0 or RP_ENOMEM (f's histogram then freed or
 * still f's). */
static int finish_node(struct rp_profile *p, const struct priv *v, uint32_t i, uint64_t res,
                       struct fin *f)
{
    struct rp_node *n = &p->nodes[i];
    struct rp_node_x x = rp_node_x_raw(n);
    if (n->x) /* (its histogram is x's until set) */
        n->x->hist = (struct rp_hist){0};
    if (hist_take(&x.hist, &f->hist) < 0) {
        rp_hist_free(&x.hist);
        return RP_ENOMEM;
    }
    x.dur_sum += f->dur;
    x.min = f->mn < x.min ? f->mn : x.min;
    x.max = f->mx > x.max ? f->mx : x.max;
    if (n->kind == 0xff)
        n->kind = RP_KIND_FUNC;
    n->excl = rp_span_excl_total(n->excl);
    x.oncpu_max = f->omax > x.oncpu_max ? f->omax : x.oncpu_max;
    x.run_max = f->rmax > x.run_max ? f->rmax : x.run_max;
    if (x.fh) { /* intervals too spread are no period */
        struct rp_flag_hists *fx = x.fh;
        if (fx->aperiodic || fx->ivl.len > RP_IVL_OCTAVES * RP_HIST_SUB) {
            fx->aperiodic = 1;
            rp_hist_free(&fx->ivl);
        }
        for (unsigned b = 0; b < fx->ivl.len; b++)
            fx->ivl.n += rp_hist_c(&fx->ivl)[b];
    }
    if (res && x.hist.len) { /* the buckets below the resolution (comp.h) */
        unsigned ib = rp_hist_index(res);
        uint32_t *hc = rp_hist_w(&x.hist);
        for (unsigned b = x.hist.lo; b < ib && b < x.hist.lo + x.hist.len; b++) {
            x.below_res += hc[b - x.hist.lo];
            hc[b - x.hist.lo] = 0;
        }
        x.hist.n -= x.below_res;
    }
    p->below_res += x.below_res;
    if (!n->calls || x.min == UINT64_MAX) /* (every span below resolution) */
        x.min = 0;
    /* on-CPU min: the wall minimum, or less where off-CPU time was below */
    x.oncpu_min = x.oncpu_min < x.min ? x.oncpu_min : x.min;
    if (!n->calls)
        x.oncpu_min = 0;
    if (n->calls && n->kind != RP_KIND_INSTANT && n->kind != RP_KIND_COUNTER && f->sq) {
        double cnt = (double)n->calls;
        x.mean = (double)x.dur_sum / cnt;
        /* m2 = sum (x - mean)^2 = sumsq - sum^2 / n */
        long double m2 =
            (long double)f->sq - (long double)x.dur_sum * (long double)x.dur_sum / (long double)cnt;
        x.m2 = m2 > 0 ? (double)m2 : 0.0;
    }
    return rp_node_x_set(n, &x); /* (its histogram n's, or freed) */
}

/* Nodes summed at a time (finish_accs): their struct fin, 2.5 MB, is all
 * the finish needs beside the accumulators it gives back. */
#define FIN_BLOCK 32768u

/*
 * Sums every replayer's accumulators into the nodes, freeing each once
 * summed, gives every node its final fields (finish_node: res as there), and
 * gives the profile the edges: the replayers' and v->em's (the joins' and a
 * STATS chunk's) side by side, sorted, each caller -> callee's summed into
 * one, in one order whatever the number of replayers (so the results are
 * identical), with no hash index over them.  The nodes are summed a block of
 * ids at a time over every replayer, in the replayers' order, so that their
 * sums for the finish (struct fin) are of one block at a time, not of every
 * node.  Returns 0 or RP_ENOMEM.
 */
static int finish_accs(struct rp_profile *p, struct priv *v, uint64_t res)
{
    enum { NACC = sizeof(v->acc) / sizeof(v->acc[0]) };
    int rc, nacc = ACC_WORKER + v->nworkers;
    for (int k = 0; k < nacc; k++) /* own time where any had it */
        for (uint32_t j = 0; j < v->acc[k].nowned; j++) {
            uint32_t i = v->acc[k].owned[j];
            if (i >= v->acc[k].nhot || i >= p->n_nodes)
                continue;
            const struct hot *h = &v->acc[k].full[i];
            struct rp_flag_hists *nf;
            if (v->acc[k].hot[i].full && h->fh && h->fh->own.len && !rp_node_own(&p->nodes[i]) &&
                (!(nf = rp_node_fhw(&p->nodes[i], 1)) || rp_hist_cover(&nf->own, 0, 0)))
                return RP_ENOMEM;
        }
    /* the edges' indexes and the activation counts are not read again:
     * their memory goes before the sums are written */
    for (int k = 0; k < nacc; k++) {
        struct acc *a = &v->acc[k];
        rp_emap_drop_index(&a->em);
        rp_zarr_free(a->active, a->active_bytes);
        a->active = NULL;
        a->active_bytes = a->nact = 0;
    }
    rp_emap_drop_index(&v->em);
    /* off-CPU time in a node's own frame (its edges to the off-CPU node)
     * before the nodes are finished; the edges sorted by callee, to add
     * their spans a block of callees at a time */
    for (int k = 0; k < nacc; k++) {
        if ((rc = offcpu_merge(p, &v->acc[k].em)) < 0)
            return rc;
        edge_sort(v->acc[k].em.edges, v->acc[k].em.n, 1);
    }
    if ((rc = offcpu_merge(p, &v->em)) < 0)
        return rc;
    /* the nodes, a block at a time, freeing hot */
    uint32_t nb = p->n_nodes < FIN_BLOCK ? (p->n_nodes ? p->n_nodes : 1) : FIN_BLOCK;
    struct fin *fin = malloc(nb * sizeof(*fin));
    size_t gone[NACC] = {0}, fgone[NACC] = {0}, at[NACC] = {0};
    if (!fin)
        return RP_ENOMEM;
    for (uint32_t i0 = 0; i0 < p->n_nodes; i0 += nb) {
        uint32_t i1 = p->n_nodes - i0 < nb ? p->n_nodes : i0 + nb;
        memset(fin, 0, (size_t)(i1 - i0) * sizeof(*fin));
        for (uint32_t i = i0; i < i1; i++)
            fin[i - i0].mn = UINT64_MAX;
        for (int k = 0; k < nacc; k++) {
            edges_merge(p, &v->acc[k], i0, i1, fin, &at[k]);
            if ((rc = hot_merge(p, &v->acc[k], i0, i1, fin, &gone[k], &fgone[k])) < 0)
                goto out;
        }
        for (uint32_t i = i0; i < i1; i++)
            if ((rc = finish_node(p, v, i, res, &fin[i - i0])) < 0)
                goto out;
    }
    /* summed (their histograms are the nodes' or freed): their memory goes
     * before the edges are gathered */
    for (int k = 0; k < nacc; k++) {
        struct acc *a = &v->acc[k];
        rp_zarr_free(a->hot, a->hot_bytes);
        rp_zarr_free(a->full, a->full_bytes);
        a->hot = NULL;
        a->full = NULL;
        a->hot_bytes = a->full_bytes = a->nhot = 0;
    }
    rc = 0;
out:
    if (rc < 0) /* (the histograms of the block's nodes not finished) */
        for (uint32_t i = 0; i < nb && i < p->n_nodes; i++)
            rp_hist_free(&fin[i].hist);
    free(fin);
    if (rc < 0)
        return rc;
    size_t total = v->em.n;
    for (int k = 0; k < ACC_WORKER + v->nworkers; k++)
        total += v->acc[k].em.n;
    if (total > UINT32_MAX)
        return RP_ENOMEM;
    /* the largest map's edges, grown in place, take the others' */
    int big = 0;
    for (int k = 1; k < ACC_WORKER + v->nworkers; k++)
        if (v->acc[k].em.n > v->acc[big].em.n)
            big = k;
    struct rp_edge *e = realloc(v->acc[big].em.edges, (total ? total : 1) * sizeof(*e));
    if (!e)
        return RP_ENOMEM;
    size_t ne = v->acc[big].em.n;
    v->acc[big].em.edges = NULL;
    for (int k = 0; k < ACC_WORKER + v->nworkers; k++) {
        struct acc *a = &v->acc[k];
        if (k != big && a->em.n)
            memcpy(e + ne, a->em.edges, a->em.n * sizeof(*e));
        ne += k != big ? a->em.n : 0;
        rp_acc_free(a); /* its memory goes before the next one's edges are read */
    }
    if (v->em.n)
        memcpy(e + ne, v->em.edges, v->em.n * sizeof(*e));
    ne += v->em.n;
    rp_emap_free(&v->em);
    if (ne)
        edge_sort(e, ne, 0);
    size_t m = 0;
    for (size_t k = 0; k < ne; k++) {
        if (m && e[m - 1].caller == e[k].caller && e[m - 1].callee == e[k].callee) {
            struct rp_edge *d = &e[m - 1];
            d->calls += e[k].calls;
            d->incl += e[k].incl;
            d->incl_calls += e[k].incl_calls;
            d->min = e[k].min < d->min ? e[k].min : d->min;
            d->max = e[k].max > d->max ? e[k].max : d->max;
        } else {
            e[m++] = e[k];
        }
    }
    if (take_outside(p, e, &m) < 0) {
        free(e);
        return RP_ENOMEM;
    }
    struct rp_edge *fit = m && m < ne ? realloc(e, m * sizeof(*e)) : NULL;
    free(p->edges);
    p->edges = fit ? fit : e; /* (a failed shrink keeps the larger block) */
    p->n_edges = (uint32_t)m;
    p->cap_edges = (uint32_t)(fit ? m : total ? total : 1);
    for (uint32_t k = 0; k < p->n_edges; k++) /* every span below resolution */
        if (p->edges[k].min == UINT64_MAX)
            p->edges[k].min = 0;
    return 0;
}

int rp_replay_finish(struct rp_profile *p)
{
    struct priv *v = p->priv;
    int rc;

    finish_threads(p, v);
    /* the resolution (comp.h): spans below it are set aside from the
     * histograms here; direct mode's statistics set nothing aside */
    int direct = p->mode && !strcmp(p->mode, "direct");
    uint64_t res = direct                              ? 0
                   : v->want_comp && p->overhead_known ? v->res_comp
                                                       : rp_comp_res(0, 0, p->clock_step);

    /* the replayers' sums; m2 from the exact sum of squares */
    if ((rc = finish_accs(p, v, res)) < 0)
        return rc;
    p->nodes[0].kind = RP_KIND_FUNC;
    /* spans were replayed (direct mode's statistics have no on-CPU maxima) */
    p->oncpu_known = !direct;
    p->own_known = p->incl_calls_known = p->oncpu_known;
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * rank_layout.c - passes (2) and (3) of the ranking (rank.c): Tarjan's
 * search for the strongly connected components, which lays the nodes out
 * in solving order and weighs the two orders of each cycle, and the
 * adjacency rewritten by position, split into the edges inside cycles and
 * the others.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "common/error.h"
#include "rank_int.h"

#define NONE UINT32_MAX
#define DONE (UINT32_MAX - 1)
#define LEAF (UINT32_MAX - 2) /* tarjan(): in idx[], not found yet and calls nothing */

/*
 * Tarjan's strongly connected components, iterative, from ROOT first and
 * then from every node not reached yet in index order, laying the nodes out
 * as it goes: a component completes after every component it calls into, so
 * components take the positions from the top down (sv->cbeg), which puts
 * callers before callees.  Inside a component the nodes go in reverse
 * postorder of the search: the finished nodes not yet in a component are
 * kept on a stack, and when a component completes, its nodes are exactly
 * the top of that stack, its root (finished last) on top.
 *
 * The same scan weighs, for each component of two or more nodes, the two
 * orders a sweep can take (see choose_order below): the weight of its edges
 * that point backwards in reverse postorder, and in id order.  Every edge
 * is classified when it is scanned, from v to w:
 *   - w not found yet: a tree edge.  It points forwards in reverse
 *     postorder; it lies inside v's component unless w roots a component
 *     of its own, which is known when the search returns from w to v.
 *   - w found, its component complete (DONE): between components.
 *   - w found, not in a component yet: inside v's component (w's root is
 *     still open, so it is v or an ancestor of v: it reaches v, and v
 *     reaches it through w).  Backwards in reverse postorder exactly when
 *     w is still open (an ancestor finishes after v); forwards when w has
 *     finished (FIN set in idx[w]).
 * A node's weights go to its parent's frame when it finishes without
 * rooting a component (the parent is then in the same one), so a root's
 * frame ends with its component's totals.  The same classification counts
 * the edges inside components (a tree edge is taken back when its end
 * roots a component) for the layout's split.  Fills sv->order, sv->pos,
 * sv->cbeg, sv->ncomp, sv->nin and, per component, sv->byid (1: id order
 * weighs less).  Returns 0 or RP_ENOMEM.
 */
struct tj_frame {
    uint32_t v, e, end, low; /* node, next edge, its edges' end, low link */
    double bpo, bid;         /* backward weight in its component so far: postorder, ids */
};

/* Makes x, which calls nothing, a component of its own: the next position
 * from the top down.  Cannot fail. */
static inline void place_leaf(struct solver *sv, uint32_t *idx, uint32_t x, uint32_t *top,
                              uint32_t *ncomp)
{
    idx[x] = DONE;
    sv->byid[*ncomp] = 0;
    sv->cbeg[(*ncomp)++] = --*top;
    sv->order[*top] = x;
    sv->pos[x] = *top;
}

/*
 * Starts the lookups of the first TJ_AHEAD callees of a node about to be
 * scanned, whose edges begin at b: the scan's own prefetch runs TJ_AHEAD
 * edges ahead of it, so without these the first edges of every row (most of
 * a row of ten) wait for their lookups one after another.  Reads the row,
 * which the scan needs first anyway (and the spare entries after the last
 * one).  Cannot fail.
 */
static inline void tarjan_row_prefetch(const uint32_t *idx, const uint32_t *off,
                                       const uint32_t *dst, uint32_t b)
{
    for (uint32_t k = b; k < b + TJ_AHEAD; k++) {
        __builtin_prefetch(&idx[dst[k]]);
        __builtin_prefetch(&off[dst[k]]);
    }
}

/*
 * Makes the nodes on fin[0 .. *nfin) found at or after discovery number iv
 * (those of the component that the node numbered iv roots) a component:
 * the next positions from the top down, in reverse postorder; byid: the
 * id order weighs less (when it has two nodes or more).  Cannot fail.
 */
static inline void place_component(struct solver *sv, uint32_t *idx, const uint32_t *fin,
                                   uint32_t *nfin, uint32_t iv, int byid, uint32_t *top,
                                   uint32_t *ncomp)
{
    uint32_t b = *nfin, e = *nfin;
    while (e && (idx[fin[e - 1]] & ~FIN) >= iv)
        e--;
    *top -= b - e;
    sv->byid[*ncomp] = b - e > 1 && byid;
    sv->cbeg[(*ncomp)++] = *top;
    for (uint32_t k = b, p = *top; k-- > e; p++) {
        uint32_t x = fin[k];
        idx[x] = DONE;
        sv->order[p] = x;
        sv->pos[x] = p;
    }
    *nfin = e;
}

static int tarjan(struct solver *sv)
{
    uint32_t n = sv->n, next = 0, ncomp = 0, top = n, nfin = 0, nin = 0;
    const uint32_t *off = sv->off1, *dst = sv->dst1;
    const double *c = sv->c1;
    uint32_t *idx = rp_big_malloc((size_t)n * sizeof *idx);
    uint32_t *fin = rp_big_malloc((size_t)n * sizeof *fin); /* finished, no component yet */
    struct tj_frame *fr = rp_big_malloc((size_t)n * sizeof *fr);
    int rc = RP_ENOMEM;

    sv->order = rp_big_malloc((size_t)n * sizeof *sv->order);
    sv->pos = rp_big_malloc((size_t)n * sizeof *sv->pos);
    sv->cbeg = rp_big_malloc((size_t)n * sizeof *sv->cbeg);
    sv->byid = rp_big_malloc((size_t)n);
    if (!idx || !fin || !fr || !sv->order || !sv->pos || !sv->cbeg || !sv->byid)
        goto out;
    /* idx[i]: NONE before i is found (LEAF if it calls nothing: it is a
     * component by itself, placed as soon as it is found, without a frame),
     * DONE once its component is complete, its discovery number in between
     * (with FIN once it has finished), so that one load answers every
     * question the scan asks */
    for (uint32_t i = 0; i < n; i++)
        idx[i] = off[i] == off[i + 1] ? LEAF : NONE;
    for (uint32_t s = 0; s < n; s++) {
        if (idx[s] == LEAF)
            place_leaf(sv, idx, s, &top, &ncomp);
        if (idx[s] != NONE)
            continue;
        uint32_t depth = 1;
        idx[s] = next++;
        tarjan_row_prefetch(idx, off, dst, off[s]);
        fr[0] = (struct tj_frame){s, off[s], off[s + 1], idx[s], 0.0, 0.0};
        while (depth) {
            /* scan the top frame's edges for a node not found yet */
            struct tj_frame *f = &fr[depth - 1];
            uint32_t v = f->v, e = f->e, end = f->end, lv = f->low, w = NONE;
            double bpo = f->bpo, bid = f->bid;
            for (; e < end; e++) {
                /* the lookup below misses the cache at random: start the
                 * one TJ_AHEAD edges on (maybe in the next row: harmless),
                 * and the callee's row bounds, read at once if it is new */
                __builtin_prefetch(&idx[dst[e + TJ_AHEAD]]);
                __builtin_prefetch(&off[dst[e + TJ_AHEAD]]);
                uint32_t x = dst[e], ix = idx[x];
                if (ix >= LEAF) {
                    if (ix == NONE) {
                        w = x;
                        e++;
                        break;
                    }
                    if (ix == LEAF) /* found and complete at once */
                        place_leaf(sv, idx, x, &top, &ncomp);
                    continue;
                }
                double ce = c[e];
                nin++;
                lv = (ix & ~FIN) < lv ? ix & ~FIN : lv;
                bpo += ix & FIN ? 0.0 : ce; /* x still open: an ancestor */
                bid += x < v ? ce : 0.0;
            }
            f->bpo = bpo;
            f->bid = bid;
            if (w != NONE) {
                nin++; /* inside v's component unless w roots one */
                f->e = e;
                f->low = lv;
                idx[w] = next++;
                tarjan_row_prefetch(idx, off, dst, off[w]);
                fr[depth++] = (struct tj_frame){w, off[w], off[w + 1], idx[w], 0.0, 0.0};
                continue;
            }
            uint32_t iv = idx[v];
            idx[v] = iv | FIN;
            fin[nfin++] = v;
            if (lv != iv) { /* not a root: v's component is its parent's */
                struct tj_frame *pf = &fr[depth - 2];
                pf->low = lv < pf->low ? lv : pf->low;
                pf->bpo += bpo;
                pf->bid += bid + (v < pf->v ? c[pf->e - 1] : 0.0);
                depth--;
                continue;
            }
            if (--depth)
                nin--; /* the edge from the parent leaves the component */
            place_component(sv, idx, fin, &nfin, iv, bid < bpo, &top, &ncomp);
        }
    }
    sv->ncomp = ncomp;
    sv->nin = nin;
    rc = 0;
out:
    free(idx);
    free(fin);
    free(fr);
    return rc;
}

/*
 * Puts the nodes of each component that Tarjan found lighter in id order
 * (sv->byid) in that order.  How many sweeps a component of two or more
 * nodes takes is set by the weight on its edges pointing backwards, which a
 * Gauss-Seidel sweep only sees in the next sweep; two orders are weighed:
 * the reverse postorder Tarjan leaves, or the order of the node ids, which
 * in a profile is the order in which the nodes were first seen, so that
 * each node's first caller comes before it.  Reverse postorder points every
 * edge forward but the search's back edges, and a search that wanders
 * through a large cycle makes many of those; id order points backwards
 * every call to a node first seen earlier.  Neither wins always (see
 * docs/ranking.md).  One pass over the nodes in id order.  Updates sv->order
 * and sv->pos.  Returns 0 or RP_ENOMEM.
 */
static int choose_order(struct solver *sv)
{
    uint32_t n = sv->n, nc = sv->ncomp, *pos = sv->pos, *order = sv->order, any = 0;
    uint32_t *cur = NULL, *cid = NULL; /* by component: next position; by position */

    for (uint32_t r = 0; r < nc; r++)
        any |= sv->byid[r];
    if (!any)
        return 0;
    cur = rp_big_malloc((size_t)nc * sizeof *cur);
    cid = rp_big_malloc((size_t)n * sizeof *cid);
    if (!cur || !cid) {
        free(cur);
        free(cid);
        return RP_ENOMEM;
    }
    for (uint32_t r = 0; r < nc; r++) {
        uint32_t a = sv->cbeg[r], b = r ? sv->cbeg[r - 1] : n;
        cur[r] = sv->byid[r] ? a : NONE;
        for (uint32_t k = a; k < b; k++)
            cid[k] = r;
    }
    for (uint32_t i = 0; i < n; i++) /* reads pos before the next loop changes it */
        if (cur[cid[pos[i]]] != NONE)
            order[cur[cid[pos[i]]]++] = i;
    for (uint32_t k = 0; k < n; k++)
        pos[order[k]] = k;
    free(cur);
    free(cid);
    return 0;
}

/*
 * Rewrites the adjacency by position, callees as positions, split into the
 * edges inside components of two or more nodes (idst/ic, read every sweep)
 * and the others (xdst/xc, read once): one pass over the rows in solving
 * order, writing both sequentially, into blocks allocated before Tarjan's
 * search for all the edges (lay_out_alloc), the inner ones first: Tarjan
 * counted them.  The rows are read in random order, so the pass prefetches
 * them PF_ROWS nodes ahead (their offsets twice as far ahead).  With two
 * threads the positions are cut in two halves of about as many edges: the
 * first half is written from the front, the second from the back (each row
 * counted before it is written, so that its edges keep their order), and
 * the two meet exactly.  Frees the adjacency by node.  Cannot fail.
 */
#define PF_ROWS 8u

/* A part of the layout: positions [p0, p1); it writes its inner and cross
 * edges from nin and nout on (lay_out_front), or up to them (lay_out_back),
 * and leaves there where it stopped. */
struct lay_part {
    struct solver *sv;
    uint32_t p0, p1, nin, nout;
};

/* The component holding position p: cbeg decreases with the component, so
 * the first one that begins at or before p.  Cannot fail. */
static uint32_t comp_at(const struct solver *sv, uint32_t p)
{
    uint32_t lo = 0, hi = sv->ncomp - 1;

    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (sv->cbeg[mid] <= p)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}

/* Prefetches the row of the node at position k and the offsets of the one
 * PF_ROWS further on in the same direction (step +1 or -1). */
static inline void prefetch_row(const struct solver *sv, uint32_t k, int step)
{
    const uint32_t *off = sv->off1, *order = sv->order;
    uint32_t far = k + (uint32_t)(step * (int)PF_ROWS);

    if (far < sv->n)
        __builtin_prefetch(&off[order[far]]);
    if (k < sv->n) {
        uint32_t f = off[order[k]];
        __builtin_prefetch(&sv->dst1[f]);
        __builtin_prefetch(&sv->c1[f]);
    }
}

/* Whether an edge to position p lies inside the component at positions
 * [a, a + size): only a component of two nodes or more has inside edges
 * (a self loop is folded into the node).  The front and the back halves of
 * the layout must classify alike, or they would not meet. */
static inline int is_inner(uint32_t p, uint32_t a, uint32_t size)
{
    return size > 1 && p - a < size;
}

/* Writes the edges of node i, whose component is at positions [a, a +
 * size), in row order: the ones inside the component (if it has two nodes
 * or more) to the inner edges from *ki on, the others to the cross edges
 * from *kx on, and moves *ki and *kx past them.  Cannot fail. */
static inline void write_row(struct solver *sv, uint32_t i, uint32_t a, uint32_t size, uint32_t *ki,
                             uint32_t *kx)
{
    const uint32_t *dst = sv->dst1, *pos = sv->pos;
    const double *c = sv->c1;
    uint32_t nin = *ki, nout = *kx;

    for (uint32_t e = sv->off1[i]; e < sv->off1[i + 1]; e++) {
        uint32_t p = pos[dst[e]];
        if (is_inner(p, a, size)) {
            sv->idst[nin] = p;
            sv->ic[nin++] = c[e];
        } else {
            sv->xdst[nout] = p;
            sv->xc[nout++] = c[e];
        }
    }
    *ki = nin;
    *kx = nout;
}

/* Lays out the positions of a part from the front.  Takes a void * to run
 * on a thread (rp_rank_run_pair).  Cannot fail. */
static void lay_out_front(void *arg)
{
    struct lay_part *pt = arg;
    struct solver *sv = pt->sv;
    uint32_t n = sv->n, nin = pt->nin, nout = pt->nout, r = comp_at(sv, pt->p0);

    for (uint32_t k = pt->p0; k < pt->p1; r--) {
        uint32_t a = sv->cbeg[r], size = (r ? sv->cbeg[r - 1] : n) - a;
        for (; k < a + size && k < pt->p1; k++) {
            prefetch_row(sv, k + PF_ROWS, 1);
            uint32_t i = sv->order[k];
            sv->ioff[k] = nin;
            sv->xoff[k] = nout;
            write_row(sv, i, a, size, &nin, &nout);
        }
    }
    pt->nin = nin;
    pt->nout = nout;
}

/* Lays out the positions of a part from the back.  Takes a void * to run on
 * a thread (rp_rank_run_pair).  Cannot fail. */
static void lay_out_back(void *arg)
{
    struct lay_part *pt = arg;
    struct solver *sv = pt->sv;
    uint32_t n = sv->n, nin = pt->nin, nout = pt->nout, r = comp_at(sv, pt->p1 - 1);
    const uint32_t *off = sv->off1, *dst = sv->dst1, *pos = sv->pos;

    for (uint32_t k = pt->p1; k > pt->p0; r++) {
        uint32_t a = sv->cbeg[r], size = (r ? sv->cbeg[r - 1] : n) - a;
        for (; k > a && k > pt->p0; k--) {
            uint32_t q = k - 1, i = sv->order[q], cnt = 0;
            prefetch_row(sv, q - PF_ROWS, -1);
            for (uint32_t e = off[i]; e < off[i + 1]; e++)
                cnt += is_inner(pos[dst[e]], a, size);
            nin -= cnt;
            nout -= off[i + 1] - off[i] - cnt;
            sv->ioff[q] = nin;
            sv->xoff[q] = nout;
            uint32_t ki = nin, kx = nout;
            write_row(sv, i, a, size, &ki, &kx);
        }
    }
    pt->nin = nin;
    pt->nout = nout;
}

/* The blocks of the layout, allocated before Tarjan's search so that the
 * helper can fault them in meanwhile: ne + 2 * AHEAD callees (the spare
 * entries after the inner and the cross edges) and ne + 1 coefficients.
 * Returns 0 or RP_ENOMEM (the caller frees sv). */
static int lay_out_alloc(struct solver *sv)
{
    size_t n = sv->n, ne = sv->off1[n];

    sv->invden = rp_big_malloc(n * sizeof *sv->invden);
    sv->ioff = rp_big_malloc((n + 1) * sizeof *sv->ioff);
    sv->xoff = rp_big_malloc((n + 1) * sizeof *sv->xoff);
    /* read and written in order: plain pages.  A huge page saves nothing on
     * sequential access, and a fresh one costs more to fault in (the kernel
     * may compact memory first), which the helper thread pays for while
     * Tarjan's search runs */
    sv->edst = malloc((ne + 2 * AHEAD) * sizeof *sv->edst);
    sv->ec = malloc((ne + 1) * sizeof *sv->ec);
    return sv->invden && sv->ioff && sv->xoff && sv->edst && sv->ec ? 0 : RP_ENOMEM;
}

static void lay_out(struct solver *sv)
{
    uint32_t n = sv->n, ne = sv->off1[n], nin = sv->nin, cut = n, before = 0;
    const uint32_t *off = sv->off1, *order = sv->order;

    sv->idst = sv->edst;
    sv->ic = sv->ec;
    sv->xdst = sv->edst + nin + AHEAD;
    sv->xc = sv->ec + nin;
    if (sv->threads > 1) /* the cut: half the edges before it */
        for (cut = 0; cut < n && before < ne / 2; cut++)
            before += off[order[cut] + 1] - off[order[cut]];
    struct lay_part front = {sv, 0, cut, 0, 0}, back = {sv, cut, n, nin, ne - nin};
    if (cut < n)
        rp_rank_run_pair(sv->threads, lay_out_front, &front, lay_out_back, &back);
    else
        lay_out_front(&front);
    assert(front.nin == (cut < n ? back.nin : nin));
    assert(front.nout == (cut < n ? back.nout : ne - nin));
    sv->ioff[n] = nin;
    sv->xoff[n] = ne - nin;
    memset(sv->idst + nin, 0, AHEAD * sizeof *sv->idst);
    memset(sv->xdst + (ne - nin), 0, AHEAD * sizeof *sv->xdst);
    free(sv->off1);
    free(sv->dst1);
    /* the self-loop factors by position: 1 but for the nodes listed */
    for (uint32_t k = 0; k < n; k++)
        sv->invden[k] = 1.0;
    for (uint32_t j = 0; j < sv->nsl; j++)
        sv->invden[sv->pos[sv->sl_node[j]]] = sv->sl_inv[j];
    free(sv->c1);
    free(sv->sl_node);
    free(sv->sl_inv);
    free(sv->pos);
    sv->off1 = sv->dst1 = sv->pos = sv->sl_node = NULL;
    sv->c1 = sv->sl_inv = NULL;
}

/*
 * Builds what the component solver needs once the adjacency by node is
 * built: components and solving order, the adjacency by position (sv->in
 * and sv->x may be there already, from whole_graph).  On failure the caller
 * still frees sv.  Returns 0 or RP_ENOMEM.
 */
int rp_rank_layout(struct solver *sv, struct touch *t)
{
    size_t n = sv->n;
    int rc;

    if ((rc = lay_out_alloc(sv)))
        return rc;
    if (!sv->in)
        sv->in = rp_big_malloc(n * sizeof *sv->in);
    if (!sv->x)
        sv->x = rp_big_malloc(n * sizeof *sv->x);
    if (!sv->in || !sv->x)
        return RP_ENOMEM;
    /* the blocks written after the search are faulted in on the helper
     * while this thread searches: the kernel clears fresh pages, and on a
     * virtual machine the host may first have to back them */
    size_t ne = sv->off1[n];
    rp_rank_touch_add(t, sv->edst, (ne + 2 * AHEAD) * sizeof *sv->edst);
    rp_rank_touch_add(t, sv->ec, (ne + 1) * sizeof *sv->ec);
    rp_rank_touch_add(t, sv->invden, n * sizeof *sv->invden);
    rp_rank_touch_add(t, sv->ioff, (n + 1) * sizeof *sv->ioff);
    rp_rank_touch_add(t, sv->xoff, (n + 1) * sizeof *sv->xoff);
    rp_rank_touch_add(t, sv->in, n * sizeof *sv->in);
    rp_rank_touch_add(t, sv->x, n * sizeof *sv->x);
    struct helper h;
    rp_rank_helper_start(&h, sv->threads, rp_rank_touch_pages, t);
    rc = tarjan(sv);
    if (!rc)
        rc = choose_order(sv);
    rp_rank_helper_join(&h);
    if (rc)
        return rc;
    lay_out(sv);
    memset(sv->x, 0, n * sizeof *sv->x);
    return 0;
}

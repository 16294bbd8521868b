/*
 * rank.c - standing probability of docs/design.md §6.
 *
 * The chain: from node i the walk calls callee j with probability
 * Q_ij = w_ij / T_i, or finishes and restarts at ROOT with probability
 * Q_i,ROOT = stop_i / T_i (plus any explicit edges into ROOT), where
 * T_i = stop_i + sum_k w_ik.  A row with T_i == 0, and ROOT's row when it has
 * no out-weight, restarts at ROOT.  With the teleport,
 *
 *     P = (1 - alpha) Q + (alpha / N) 1 1^T,     pi = pi P,  sum pi = 1.
 *
 * Regenerative form.  Plain power iteration converges like
 * ((1-alpha) |lambda_2(Q)|)^k, and a call graph is nearly periodic
 * (ROOT -> main -> ... -> leaf -> ROOT), so |lambda_2| is close to 1:
 * thousands of steps at alpha = 0.01, none at all as alpha -> 0.  The chain
 * is regenerative instead: all finished mass goes to ROOT.  With sum pi = 1
 * the stationary equations are pi_j = (1-alpha) sum_i pi_i Q_ij + alpha/N;
 * write y for pi without ROOT, M for (1-alpha) Q among non-ROOT nodes and q
 * for (1-alpha) Q_ROOT,j.  Then
 *
 *     y = pi_ROOT q + (alpha/N) 1 + y M,   so   y = pi_ROOT u + v  with
 *     u = q (I - M)^-1  (expected visits per visit of ROOT: involvement),
 *     v = (alpha/N) 1 (I - M)^-1  (the visits the teleport brings), and
 *     pi_ROOT = (1 - sum v) / (1 + sum u)  from sum pi = 1.
 *
 * (ROOT's own equation then holds by itself: the rows of P sum to 1.)
 *
 * Solving x = b + x M (x = u and v side by side) component by component.
 * The strongly connected components of the call graph (Tarjan's algorithm,
 * iterative; edges into ROOT end a descent and self loops are folded into
 * the node, so neither links anything) are taken in topological order,
 * callers before callees.  When a component's turn comes, every flow into
 * it from earlier components is final, so:
 *   - a single node (no cycle through others) is solved exactly at once:
 *     x_j = in_j / (1 - M_jj), in_j being the flow received so far, which
 *     makes an acyclic graph, and direct recursion, exact in one pass;
 *   - a component with a cycle through several nodes (mutual recursion,
 *     callbacks) is solved by Gauss-Seidel sweeps over its own nodes until
 *     the L1 change of the component's pi is below its share of tol;
 *     starting from 0 the iterates increase monotonically to the solution.
 *     The sweeps run in push form: in_j holds the flow from earlier
 *     components plus (M x)_j over j's callers in the component at their
 *     current values, so node j's update is x_j = in_j / (1 - M_jj) as in
 *     the pull form, and the change of x_j is then added to its callees'
 *     in (those later in the sweep see it at once, earlier ones next
 *     sweep).  Out-edges are all it needs: no transposed copy is built.
 *     The order of a component's nodes is the one of two that leaves less
 *     weight on edges pointing backwards (which sets how many sweeps it
 *     takes): the reverse postorder of Tarjan's search, or the node ids
 *     (a profile's first-seen order).
 * Then each node pushes its final x along its edges out of the component.
 * Only the edges inside cycles are read more than once, and only as often
 * as their own component needs.
 *
 * Cost: O(N + M) to build, in three passes over the edges: (1) over the
 * input, read in place (a profile's edge records need no copy): the
 * out-adjacency by node with the coefficients (1-alpha) w_ij / T_i, each
 * row written where it belongs when the edges come grouped by caller (a
 * profile's do), else with a counting sort that reads the input twice;
 * (2) Tarjan over it, which lays the nodes out in solving order as the
 * components complete and weighs the two orders of each cycle as it scans
 * (prefetching the state of the callee a few edges ahead, and of a row's
 * first callees as it descends into the row);
 * (3) one pass in solving order rewriting the adjacency by position, split
 * into the edges inside cycles and the others, written sequentially (the
 * rows read in random order are prefetched).  Solving: one pass over all
 * edges plus one per sweep over the edges inside cycles; the sweeps
 * prefetch the flow they will add to.  The dense matrix is never formed;
 * the large arrays read at random ask for huge pages (bigmem.h).  The
 * tests compare with a dense direct solve.
 *
 * A large graph is first tried whole, before any of this: after pass (1),
 * Gauss-Seidel sweeps over every node in id order, straight over the
 * adjacency by node, which a profile's first-seen ids make nearly
 * topological; the component solver runs only when that order is not good
 * enough (whole_graph, "The whole graph in id order", below).
 *
 * Threads: on a large graph with two processors, passes (1) and (3) and the
 * ranks' radix sort run in two halves side by side, and while Tarjan's
 * search runs (sequential, as are the sweeps), a helper faults in the
 * blocks written after it, which on a virtual machine can cost as much as
 * the pass that fills them.  The halves compute every row as one pass
 * would: the result is the same, bit for bit, with one thread or two.
 *
 * Residual: the L1 change of pi in the last sweep of each cycle, summed (0
 * for an acyclic graph, which is solved exactly); iterations: the most
 * sweeps any component took (1 when there are no cycles).
 */
#include "rank.h"

#include <assert.h>
#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../common/error.h"
#include "../trace/format.h"
#include "bigmem.h"
#include "profile.h"

#define DEFAULT_ALPHA    0.01
#define DEFAULT_TOL      1e-12
#define DEFAULT_MAX_ITER 10000u

#define NONE UINT32_MAX
#define DONE (UINT32_MAX - 1)
#define LEAF (UINT32_MAX - 2) /* tarjan(): in idx[], not found yet and calls nothing */
#define FIN  0x80000000u      /* tarjan(): in idx[], the node has finished; n <= FIN */

/* How many edges ahead the sweeps and pushes prefetch the flow they will add
 * to; the edge arrays have this many spare entries (position 0) at the end.
 * (On the 1M-node benchmark 32 and 64 took the sweeps 8-10 % less time than
 * 16, at a few nanoseconds per edge against a miss of about 100 ns.) */
#define AHEAD 32u

/* How many edges ahead Tarjan's scan prefetches the state (idx[]) and the
 * row bounds of the callee it will look at; the adjacency by node has this
 * many spare entries (node 0) after its last edge. */
#define TJ_AHEAD 8u

/* An edge to a lower id at most this many ids back is short (whole_graph,
 * "The whole graph in id order"); a variable for the tests, whose graphs
 * are small. */
#define WHOLE_SPAN 16384u
uint32_t rp_rank_whole_span = WHOLE_SPAN;

/* Spare entries after the adjacency by node's last edge (node 0), for the
 * look-ahead of Tarjan's scan and of the whole-graph sweeps. */
#define DST1_SPARE (AHEAD > TJ_AHEAD ? AHEAD : TJ_AHEAD)

struct uv {
    double u, v;
};

/*
 * The input, read in place: the arrays of a struct rp_graph (double weights)
 * or a profile's nodes and edges (uint64_t weights, every field a fixed
 * number of bytes from the same field of the previous element), so that the
 * report path copies nothing.  Element k of a field is at base + k * step.
 */
struct input {
    uint32_t n, m;
    const char *stop, *src, *dst, *w;
    size_t stop_step, src_step, dst_step, w_step;
    int u64; /* stop and w are uint64_t, not double */
};

static inline uint32_t in_src(const struct input *g, uint32_t e)
{
    uint32_t v;
    memcpy(&v, g->src + (size_t)e * g->src_step, sizeof v);
    return v;
}

static inline uint32_t in_dst(const struct input *g, uint32_t e)
{
    uint32_t v;
    memcpy(&v, g->dst + (size_t)e * g->dst_step, sizeof v);
    return v;
}

/* Element k of a weight field (stop or w) as a double. */
static inline double in_weight(const struct input *g, const char *base, size_t step, uint32_t k)
{
    if (g->u64) {
        uint64_t v;
        memcpy(&v, base + (size_t)k * step, sizeof v);
        return (double)v;
    }
    double d;
    memcpy(&d, base + (size_t)k * step, sizeof d);
    return d;
}

/*
 * The solver's working set.  Nodes have a position in solving order
 * (components in topological order, each a range of positions); everything
 * but the first adjacency is indexed by position.
 */
struct solver {
    uint32_t n, ncomp;
    int threads; /* 2: the passes that split in halves run them side by side */
    /* out-adjacency by node (CSR), without self loops and edges into ROOT;
     * freed once the one by position is built */
    uint32_t *off1, *dst1; /* n + 1; callee node of each edge */
    uint32_t nback;        /* edges to a callee with a lower id than the caller */
    uint32_t nshort;       /* those of them WHOLE_SPAN ids back or less */
    double *c1;            /* (1 - alpha) * w / T_src */
    double *invden1;       /* by node: 1 / (1 - (1-alpha) Q_ii), or 0 */
    uint32_t *order;       /* position -> node */
    uint32_t *pos;         /* node -> position */
    uint32_t *cbeg;        /* first position of each component, in the order
                              Tarjan completes them (reverse topological) */
    unsigned char *byid;   /* by component: its nodes in id order (choose_order) */
    double *invden;        /* by position */
    /* edges by caller position, callee as a position: ioff/idst/ic the ones
     * inside a component of two or more nodes (nin of them, counted by
     * Tarjan), xoff/xdst/xc the others; idst and xdst are parts of edst
     * (AHEAD spare entries after each), ic and xc of ec */
    uint32_t nin;
    uint32_t *ioff, *idst, *xoff, *xdst, *edst;
    double *ic, *xc, *ec;
    struct uv *in; /* by position: flow received */
    struct uv *x;  /* by position: u and v */
};

/*
 * Two threads.  The two passes over every edge that need no order between
 * rows (building the adjacency by node, rewriting it by position) are cut in
 * two halves at a row, each half writing only its own rows, and the second
 * half runs on a thread of its own; so do the ranks' radix passes
 * (everything else is sequential: Tarjan's search, the sweeps).  Each row
 * is computed the same way in either half, so the result does not depend on
 * the number of threads, bit for bit.  pthread_join orders everything the
 * helper wrote before the caller reads it, and the helper reads only what
 * was written before it started.
 */
struct pair_job {
    void (*fn)(void *);
    void *arg;
};

static void *pair_main(void *p)
{
    struct pair_job *j = p;
    j->fn(j->arg);
    return NULL;
}

/* A helper thread running one job. */
struct helper {
    pthread_t t;
    struct pair_job job;
    int on; /* started */
};

/* Starts fn(arg) on a helper thread when threads > 1.  Returns 1 if it
 * started, 0 if not (one thread, or none could be started): the caller
 * then does the job itself or goes without. */
static int helper_start(struct helper *h, int threads, void (*fn)(void *), void *arg)
{
    h->job = (struct pair_job){fn, arg};
    h->on = threads > 1 && pthread_create(&h->t, NULL, pair_main, &h->job) == 0;
    return h->on;
}

/* Waits for a helper that helper_start started; nothing if it did not.
 * Cannot fail. */
static void helper_join(struct helper *h)
{
    if (h->on)
        pthread_join(h->t, NULL);
    h->on = 0;
}

/* Runs fb(b) on a helper thread and fa(a) on this one, and returns when both
 * are done; runs both here, a first, when threads < 2 or no thread can be
 * started.  Cannot fail. */
static void run_pair(int threads, void (*fa)(void *), void *a, void (*fb)(void *), void *b)
{
    struct helper h;

    if (!helper_start(&h, threads, fb, b)) {
        fa(a);
        fb(b);
        return;
    }
    fa(a);
    helper_join(&h);
}

/* Blocks for a helper to fault in (touch_pages), and a job it runs after
 * them, if any: something the caller needs only once the solve is done. */
#define TOUCH_MAX 16

struct touch {
    unsigned k;
    void *p[TOUCH_MAX];
    size_t len[TOUCH_MAX];
    void (*then)(void *); /* or NULL */
    void *then_arg;
    int ran; /* set by the helper once then() has run */
};

/* Adds the len bytes at p to t, which must have room (TOUCH_MAX).  Cannot
 * fail. */
static void touch_add(struct touch *t, void *p, size_t len)
{
    assert(t->k < TOUCH_MAX);
    t->p[t->k] = p;
    t->len[t->k++] = len;
}

/* Writes a byte to every page of the blocks of a struct touch, so that the
 * kernel maps and clears them now, on the helper's processor, rather than
 * when the pass that fills them first writes there, then runs its job.
 * The blocks must be uninitialized: what is written there is garbage.
 * Cannot fail. */
static void touch_pages(void *arg)
{
    struct touch *t = arg;

    for (unsigned b = 0; b < t->k; b++)
        for (size_t o = 0; o < t->len[b]; o += 4096)
            ((volatile char *)t->p[b])[o] = 0;
    if (t->then) {
        t->then(t->then_arg);
        t->ran = 1;
    }
}

static void solver_free(struct solver *sv)
{
    free(sv->off1);
    free(sv->dst1);
    free(sv->c1);
    free(sv->invden1);
    free(sv->order);
    free(sv->pos);
    free(sv->cbeg);
    free(sv->byid);
    free(sv->invden);
    free(sv->ioff);
    free(sv->xoff);
    free(sv->edst);
    free(sv->ec);
    free(sv->in);
    free(sv->x);
}

/* Checks the options and the size (discovery numbers must stay below FIN).
 * Returns 0 or RP_EINVAL. */
static int validate(uint32_t n, double alpha, double tol, uint32_t max_iter)
{
    if (n == 0 || n > FIN)
        return RP_EINVAL;
    if (!(alpha >= 0.0 && alpha < 1.0) || !(tol >= 0.0) || !isfinite(tol) || max_iter == 0)
        return RP_EINVAL;
    return 0;
}

/* An edge the adjacency keeps: not into ROOT, not a self loop. */
static inline int linking(uint32_t a, uint32_t b)
{
    return b != 0 && b != a;
}

/*
 * Ends row i of the adjacency by node, whose linking edges are [start, k)
 * with their weights in c1, tot being the row's total (stop weight and all
 * its edges) and diag its self-loop weight: sets invden1[i] and off1[i + 1]
 * (not off1[i], which may be another half's) and turns the weights into
 * coefficients (1 - alpha) w / tot.  Returns 0 or RP_EINVAL (a total that
 * overflowed).
 */
static int end_row(struct solver *sv, double tot, double diag, double alpha, uint32_t i,
                   uint32_t start, uint32_t k)
{
    if (!isfinite(tot))
        return RP_EINVAL;
    double q = tot > 0.0 ? (1.0 - alpha) * diag / tot : 0.0;
    double scale = tot > 0.0 ? (1.0 - alpha) / tot : 0.0;
    /* ROOT's value is fixed, its self loop means nothing */
    sv->invden1[i] = i > 0 && q >= 1.0 ? 0.0 : 1.0 / (1.0 - (i > 0 ? q : 0.0));
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
    uint32_t back, shrt; /* out: its edges to a lower id, and how many are short */
    int rc;              /* out: as adjacency_sorted */
};

/*
 * The adjacency of a part in one pass when its edges come grouped by caller
 * in increasing order (a profile's always do: replay sorts them): each row
 * is written where it belongs, its total and self-loop weight summed as it
 * goes, and ended (end_row) once the next caller shows.  Sets pt->k and
 * pt->rc: 0, 1 (the edges are not in order or not in the part's rows:
 * nothing is kept), or RP_EINVAL as build_adjacency.  Takes a void * to
 * run on a thread (run_pair).
 */
static void adjacency_sorted(void *arg)
{
    struct adj_part *pt = arg;
    const struct input *g = pt->g;
    struct solver *sv = pt->sv;
    uint32_t row = pt->r0, start = pt->k0, k = pt->k0, back = 0, shrt = 0;
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
            if ((rc = end_row(sv, tot, diag, pt->alpha, row, start, k)) ||
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
        if ((rc = end_row(sv, tot, diag, pt->alpha, row, start, k)) || ++row == pt->r1 ||
            (rc = start_row(g, row, &tot)))
            goto out;
        start = k;
        diag = 0.0;
    }
out:
    pt->k = k;
    pt->back = back;
    pt->shrt = shrt;
    pt->rc = rc;
}

/*
 * The adjacency in two passes over edges in any order: (1) check, row
 * totals, self-loop weight and out-degrees; (2) counting-sort fill.
 * Returns 0, RP_EINVAL as build_adjacency, or RP_ENOMEM.
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
    for (uint32_t i = 0; i < n; i++)
        if ((rc = end_row(sv, tot[i], diag[i], alpha, i, off[i], off[i + 1])))
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
 * edges down.  Each row is computed as in one pass, so the result is the
 * same bit for bit.  Returns 0, 1 (not in order), or RP_EINVAL as
 * build_adjacency (before 1, and the first half's before the second's).
 */
static int adjacency_halves(const struct input *g, double alpha, struct solver *sv)
{
    uint32_t cut = sv->threads > 1 ? adjacency_cut(g) : 0, mid = cut ? in_src(g, cut) : g->n;
    struct adj_part lo = {g, sv, alpha, 0, cut ? cut : g->m, 0, mid, 0, 0, 0, 0, 0};
    struct adj_part hi = {g, sv, alpha, cut, g->m, mid, g->n, cut, 0, 0, 0, 0};

    if (!cut) {
        adjacency_sorted(&lo);
        sv->nback = lo.back;
        sv->nshort = lo.shrt;
        return lo.rc;
    }
    run_pair(sv->threads, adjacency_sorted, &lo, adjacency_sorted, &hi);
    if (lo.rc < 0 || hi.rc < 0) /* before 1: the second pass would find it too */
        return lo.rc < 0 ? lo.rc : hi.rc;
    if (lo.rc || hi.rc)
        return 1;
    sv->nback = lo.back + hi.back;
    sv->nshort = lo.shrt + hi.shrt;
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
 * w_ij / T_i, without self loops and edges into ROOT) and invden1: in one
 * pass over the input when its edges are grouped by caller in order, else
 * in two.  Returns 0, RP_EINVAL (a negative or non-finite stop weight, an
 * index >= n, a negative or non-finite edge weight, a row total that
 * overflows), or RP_ENOMEM.
 */
static int build_adjacency(const struct input *g, double alpha, struct solver *sv)
{
    uint32_t n = g->n;
    size_t ne = (size_t)g->m + 1;
    int rc = RP_ENOMEM;

    sv->off1 = rp_big_malloc(((size_t)n + 1) * sizeof *sv->off1);
    sv->invden1 = rp_big_malloc((size_t)n * sizeof *sv->invden1);
    /* room for every edge: the pages of the ones not kept are never touched;
     * and DST1_SPARE entries after the last (the prefetches read ahead) */
    sv->dst1 = rp_big_malloc((ne + DST1_SPARE) * sizeof *sv->dst1);
    sv->c1 = rp_big_malloc(ne * sizeof *sv->c1);
    if (!sv->off1 || !sv->invden1 || !sv->dst1 || !sv->c1)
        return rc;
    if ((rc = adjacency_halves(g, alpha, sv)) == 1)
        rc = adjacency_any(g, alpha, sv);
    if (!rc)
        memset(sv->dst1 + sv->off1[n], 0, DST1_SPARE * sizeof *sv->dst1);
    return rc;
}

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
struct frame {
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

static int tarjan(struct solver *sv)
{
    uint32_t n = sv->n, next = 0, ncomp = 0, top = n, nfin = 0, nin = 0;
    const uint32_t *off = sv->off1, *dst = sv->dst1;
    const double *c = sv->c1;
    uint32_t *idx = rp_big_malloc((size_t)n * sizeof *idx);
    uint32_t *fin = rp_big_malloc((size_t)n * sizeof *fin); /* finished, no component yet */
    struct frame *fr = rp_big_malloc((size_t)n * sizeof *fr);
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
        fr[0] = (struct frame){s, off[s], off[s + 1], idx[s], 0.0, 0.0};
        while (depth) {
            /* scan the top frame's edges for a node not found yet */
            struct frame *f = &fr[depth - 1];
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
                fr[depth++] = (struct frame){w, off[w], off[w + 1], idx[w], 0.0, 0.0};
                continue;
            }
            uint32_t iv = idx[v];
            idx[v] = iv | FIN;
            fin[nfin++] = v;
            if (lv != iv) { /* not a root: v's component is its parent's */
                struct frame *pf = &fr[depth - 2];
                pf->low = lv < pf->low ? lv : pf->low;
                pf->bpo += bpo;
                pf->bid += bid + (v < pf->v ? c[pf->e - 1] : 0.0);
                depth--;
                continue;
            }
            if (--depth)
                nin--; /* the edge from the parent leaves the component */
            /* v roots a component: the nodes on fin found after it */
            uint32_t b = nfin;
            while (nfin && (idx[fin[nfin - 1]] & ~FIN) >= iv)
                nfin--;
            top -= b - nfin;
            sv->byid[ncomp] = b - nfin > 1 && bid < bpo;
            sv->cbeg[ncomp++] = top;
            for (uint32_t k = b, p = top; k-- > nfin; p++) {
                uint32_t x = fin[k];
                idx[x] = DONE;
                sv->order[p] = x;
                sv->pos[x] = p;
            }
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
 * on a thread (run_pair).  Cannot fail. */
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
            sv->invden[k] = sv->invden1[i];
            sv->ioff[k] = nin;
            sv->xoff[k] = nout;
            write_row(sv, i, a, size, &nin, &nout);
        }
    }
    pt->nin = nin;
    pt->nout = nout;
}

/* Lays out the positions of a part from the back.  Takes a void * to run on
 * a thread (run_pair).  Cannot fail. */
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
            sv->invden[q] = sv->invden1[i];
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
     * may compact memory first): the helper's system time while Tarjan
     * searches fell from 0.20 to 0.07 s, the CPU time of a ranking from
     * 1.17 to 1.01 s (1M nodes / 10M edges, medians) */
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
        run_pair(sv->threads, lay_out_front, &front, lay_out_back, &back);
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
    free(sv->c1);
    free(sv->invden1);
    free(sv->pos);
    sv->off1 = sv->dst1 = sv->pos = NULL;
    sv->c1 = sv->invden1 = NULL;
}

/*
 * Builds what the component solver needs once the adjacency by node is
 * built: components and solving order, the adjacency by position (sv->in
 * and sv->x may be there already, from whole_graph).  On failure the caller
 * still frees sv.  Returns 0 or RP_ENOMEM.
 */
static int build(struct solver *sv, struct touch *t)
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
    touch_add(t, sv->edst, (ne + 2 * AHEAD) * sizeof *sv->edst);
    touch_add(t, sv->ec, (ne + 1) * sizeof *sv->ec);
    touch_add(t, sv->invden, n * sizeof *sv->invden);
    touch_add(t, sv->ioff, (n + 1) * sizeof *sv->ioff);
    touch_add(t, sv->xoff, (n + 1) * sizeof *sv->xoff);
    touch_add(t, sv->in, n * sizeof *sv->in);
    touch_add(t, sv->x, n * sizeof *sv->x);
    struct helper h;
    helper_start(&h, sv->threads, touch_pages, t);
    rc = tarjan(sv);
    if (!rc)
        rc = choose_order(sv);
    helper_join(&h);
    if (rc)
        return rc;
    lay_out(sv);
    memset(sv->x, 0, n * sizeof *sv->x);
    return 0;
}

/*
 * Adds d times each coefficient c[e], e in [e0, e1), to the flow into the
 * callee dst[e], prefetching the flow AHEAD edges on (dst has AHEAD spare
 * entries).  Cannot fail.
 */
static inline void push(struct uv *in, const uint32_t *dst, const double *c, uint32_t e0,
                        uint32_t e1, struct uv d)
{
    for (uint32_t e = e0; e < e1; e++) {
        __builtin_prefetch(&in[dst[e + AHEAD]], 1);
        struct uv *t = &in[dst[e]];
        t->u += c[e] * d.u;
        t->v += c[e] * d.v;
    }
}

/* What a sweep measured: the L1 change of u and of v, the sums of the new
 * u and v. */
struct sweep_sums {
    double cu, cv, su, sv;
};

/*
 * One Gauss-Seidel sweep in push form over the nodes [a, b) (positions, or
 * node ids for the whole graph; the callees in dst are of the same kind):
 * each node's x becomes in * invden (in + x when invden is 0: a node that
 * never leaves itself keeps all it receives), and its change is pushed
 * along its edges, unless it is exactly 0 (pushing it would add 0.0 to
 * values that are never -0.0: skipping it changes no bit).  Cannot fail.
 */
static inline struct sweep_sums sweep(struct uv *in, struct uv *x, const double *invden,
                                      const uint32_t *off, const uint32_t *dst, const double *c,
                                      uint32_t a, uint32_t b)
{
    double cu = 0.0, cv = 0.0, su = 0.0, svs = 0.0;

    for (uint32_t k = a; k < b; k++) {
        struct uv nx = in[k], d;
        if (invden[k] > 0.0) {
            nx.u *= invden[k];
            nx.v *= invden[k];
        } else {
            nx.u += x[k].u;
            nx.v += x[k].v;
        }
        d.u = nx.u - x[k].u;
        d.v = nx.v - x[k].v;
        cu += fabs(d.u);
        cv += fabs(d.v);
        su += nx.u;
        svs += nx.v;
        x[k] = nx;
        if (d.u != 0.0 || d.v != 0.0)
            push(in, dst, c, off[k], off[k + 1], d);
    }
    return (struct sweep_sums){cu, cv, su, svs};
}

/* The rule that ends the sweeps (solve_cycle's and the whole graph's):
 * the L1 change of pi, r * cu + cv with r a bound on pi_ROOT, is at most
 * tol, or the change is down to rounding (FLOOR_ULPS units in the last
 * place of the sums).  Cannot fail. */
#define FLOOR_ULPS 64.0

static inline int settled(double r, struct sweep_sums m, double tol)
{
    return r * m.cu + m.cv <= tol || m.cu + m.cv <= FLOOR_ULPS * DBL_EPSILON * (m.su + m.sv);
}

/*
 * Gauss-Seidel sweeps over the component at positions [a, b), in push form:
 * in[k] always holds the flow from earlier components plus the sum of
 * c * x over k's callers inside the component at their current values, so
 * when node k is updated, x_k = in[k] * invden (exactly the Gauss-Seidel
 * update of the pull form), and the change of x_k is pushed along k's edges
 * inside the component: callees after k see it in this sweep, those before
 * it in the next.  Starting from 0 every change is >= 0 (in[] only grows),
 * so the iterates increase monotonically to the solution.
 *
 * Runs until the L1 change of the component's pi is at most tol, or is down
 * to rounding (FLOOR_ULPS units in the last place of the component's sum),
 * or max_iter sweeps were made.  The change of pi is bounded with
 *     pi_ROOT <= (rv - sum v) / (ru + sum u),
 * the sums over the component, where ru = 1 + sum u and rv = 1 - sum v over
 * the components solved before (all of u and v only grow).  A node that
 * never leaves itself (invden 0: alpha == 0 and a pure self loop) keeps all
 * it receives: it grows every sweep and never converges, which the residual
 * then says.  Adds the last sweep's change of u and v to *du, *dv; returns
 * the number of sweeps.  Cannot fail.
 */
static uint32_t solve_cycle(struct solver *sv, uint32_t a, uint32_t b, double ru, double rv,
                            double tol, uint32_t max_iter, double *du, double *dv)
{
    const uint32_t *off = sv->ioff, *dst = sv->idst;
    const double *c = sv->ic, *invden = sv->invden;
    struct uv *x = sv->x, *in = sv->in;
    uint32_t it = 0;
    struct sweep_sums m = {0.0, 0.0, 0.0, 0.0};

    while (it < max_iter) {
        m = sweep(in, x, invden, off, dst, c, a, b);
        it++;
        /* the component's sums tighten the bound on pi_ROOT */
        if (settled((rv - m.sv) / (ru + m.su), m, tol))
            break;
    }
    *du += m.cu;
    *dv += m.cv;
    return it;
}

/*
 * Solves for u and v component by component (x by position), then pi.
 * Returns the largest number of sweeps a component needed in *iters (1 for
 * an acyclic graph) and the L1 change of pi in the last sweep of every
 * component, summed, in *resid.  Cannot fail.
 */
static void solve(struct solver *sv, double alpha, double tol, uint32_t max_iter, double *pi,
                  uint32_t *iters, double *resid)
{
    uint32_t n = sv->n, it = 1, ncyc = 0; /* nodes that need sweeps */
    double tele = alpha / (double)n, du = 0.0, dv = 0.0, su = 0.0, svs = 0.0;
    struct uv *x = sv->x;

    for (uint32_t k = 0; k < n; k++)
        sv->in[k] = (struct uv){0.0, sv->order[k] ? tele : 0.0};
    for (uint32_t r = 0; r < sv->ncomp; r++) {
        uint32_t a = sv->cbeg[r], b = r ? sv->cbeg[r - 1] : n;
        if (b - a > 1 || sv->invden[a] == 0.0)
            ncyc += b - a;
    }
    for (uint32_t r = sv->ncomp; r-- > 0;) {
        uint32_t a = sv->cbeg[r], b = r ? sv->cbeg[r - 1] : n, i = sv->order[a];
        if (b - a == 1 && (i == 0 || sv->invden[a] > 0.0)) {
            struct uv in = sv->in[a];
            x[a] = i == 0 ? (struct uv){1.0, 0.0}
                          : (struct uv){in.u * sv->invden[a], in.v * sv->invden[a]};
        } else {
            /* this component's share of the tolerance: all sum to tol */
            double t = tol * (double)(b - a) / (double)ncyc;
            uint32_t k = solve_cycle(sv, a, b, 1.0 + su, 1.0 - svs, t, max_iter, &du, &dv);
            it = k > it ? k : it;
        }
        for (uint32_t k = a; k < b; k++) {
            push(sv->in, sv->xdst, sv->xc, sv->xoff[k], sv->xoff[k + 1], x[k]);
            if (sv->order[k]) {
                su += x[k].u;
                svs += x[k].v;
            }
        }
    }
    double root = (1.0 - svs) / (1.0 + su);
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = sv->order[k];
        pi[i] = i ? root * x[k].u + x[k].v : root;
    }
    *iters = it;
    *resid = root * du + dv;
}

/*
 * The whole graph in id order, first.  Tarjan's search and the layout by
 * position cost more than half of a large ranking, and a profile's ids come
 * nearly in the order the solve wants: a node's id is given when it is
 * first seen, which is after its first caller's, so most edges point to a
 * higher id and the edges that do not are mostly the ones that close
 * cycles.  So a large graph (WHOLE_MIN edges or more) is first swept
 * whole, Gauss-Seidel in push form as in solve_cycle, over the adjacency by
 * node as it was built (rows in id order, read in sequence), x and in[] by
 * node: each sweep updates every node but ROOT (x_ROOT = (1, 0), pushed
 * once) and pushes its change along its row, skipping rows whose change is
 * exactly 0 (a node all of whose callers are settled).  It stops as
 * solve_cycle does, with the whole tolerance: when the L1 change of pi is
 * at most tol, or down to rounding.  With no edge to a lower id the graph
 * is acyclic and its ids a topological order: one sweep is then exact, as
 * the component solver would be (1 sweep, residual 0).
 *
 * It does not start when the order is not good enough for it: more than
 * WHOLE_BACK of the edges go to lower ids, or most of those are short (at
 * most WHOLE_SPAN ids back, a window whose rows stay in the cache).  The
 * component search is cheap when the cycles stay within such windows (it
 * walks memory nearby), and short cycles can hold the flow for many sweeps,
 * each of which costs the whole graph here; long edges back make the
 * search wander through memory at random, and the long cycles they close
 * lose more flow on their way round.  It gives up, and the component
 * solver runs from scratch, when the change fails to fall, the sweeps so
 * far say more than WHOLE_MAX will be needed (the change of the last sweep
 * over that of the one before, extrapolated to tol), or max_iter is
 * reached first: the search and the layout cost about as much as six
 * sweeps, and the components' own sweeps come on top.  On the 1M-node
 * benchmark graphs (bench_rank): 1 % of edges back anywhere up, 7 sweeps
 * (as many as the component solver's largest cycle); 5 % back, 13 sweeps,
 * faster than the components' 13 in their largest cycle; edges back at
 * most 100 or 1000 ids up, left to the components, which are faster there
 * (0.34 s against 0.81 s whole; 0.38-0.53 s against 0.47-0.72 s); uniformly
 * random edges (half to a lower id), left to the components.
 * Which solver ranks a graph depends on the graph alone, so one thread or
 * two still give the same bits.
 */
#define WHOLE_MIN  (1u << 19)
#define WHOLE_BACK 0.10
#define WHOLE_MAX  16u

/* Edges from which a graph is swept whole first (the tests lower it), and
 * the sweeps the whole-graph solve took in this thread's last ranking (0:
 * the component solver ranked it), for the tests to see which ran. */
uint32_t rp_rank_whole_min = WHOLE_MIN;
_Thread_local uint32_t rp_rank_whole_sweeps;

/* Half of whole_init's nodes: [i0, i1). */
struct whole_init_part {
    struct solver *sv;
    uint32_t i0, i1;
    double tele;
};

/* Sets in[] to the teleport's flow and x to 0 over a part of the nodes (the
 * first writes fault the pages in, which two threads do in half the time).
 * Takes a void * to run on a thread (run_pair).  Cannot fail. */
static void whole_init(void *arg)
{
    struct whole_init_part *pt = arg;

    for (uint32_t i = pt->i0; i < pt->i1; i++) {
        pt->sv->in[i] = (struct uv){0.0, i ? pt->tele : 0.0};
        pt->sv->x[i] = (struct uv){0.0, 0.0};
    }
}

/* The number of sweeps that a change of ch after a change of prev says the
 * whole-graph solve needs in all after it, it sweeps made, to bring the
 * change to tol; UINT32_MAX when the change does not fall.  Cannot fail. */
static uint32_t whole_forecast(uint32_t it, double prev, double ch, double tol)
{
    if (!(ch < prev))
        return UINT32_MAX;
    if (ch <= tol || ch == 0.0)
        return it;
    double more = ceil(log(tol / ch) / log(ch / prev));
    return more < (double)WHOLE_MAX ? it + (uint32_t)more : UINT32_MAX;
}

/*
 * Solves the graph whole in id order (see above) into pi, with the
 * caller's blocks (t) faulted in on a helper meanwhile, if one can be
 * started (t is then emptied: its blocks and job are done).  Returns 1 when
 * it did (*iters and *resid set), 0 when it gave up (sv->in and sv->x are
 * left allocated, their contents garbage), or RP_ENOMEM.
 */
static int whole_graph(struct solver *sv, double alpha, double tol, uint32_t max_iter, double *pi,
                       uint32_t *iters, double *resid, struct touch *t)
{
    uint32_t n = sv->n, it = 0, cap = max_iter < WHOLE_MAX ? max_iter : WHOLE_MAX;
    const uint32_t *off = sv->off1, *dst = sv->dst1;
    const double *c = sv->c1, *invden = sv->invden1;
    double prev = 0.0, ch = 0.0, root = 0.0;
    struct sweep_sums m = {0.0, 0.0, 0.0, 0.0};
    int done = 0;

    if ((double)sv->nback > WHOLE_BACK * (double)off[n] || sv->nshort > sv->nback / 2)
        return 0;
    sv->in = rp_big_malloc((size_t)n * sizeof *sv->in);
    sv->x = rp_big_malloc((size_t)n * sizeof *sv->x);
    if (!sv->in || !sv->x)
        return RP_ENOMEM;
    struct uv *in = sv->in, *x = sv->x;
    struct whole_init_part lo = {sv, 0, n / 2, alpha / (double)n}, hi = {sv, n / 2, n, lo.tele};
    run_pair(sv->threads, whole_init, &lo, whole_init, &hi);
    struct helper h;
    int helped = helper_start(&h, sv->threads, touch_pages, t);
    x[0] = (struct uv){1.0, 0.0};
    push(in, dst, c, off[0], off[1], x[0]);
    while (it < cap) {
        m = sweep(in, x, invden, off, dst, c, 1, n);
        it++;
        root = (1.0 - m.sv) / (1.0 + m.su);
        prev = ch;
        ch = root * m.cu + m.cv;
        if (sv->nback == 0) { /* acyclic, in topological order: exact */
            m.cu = m.cv = 0.0;
            done = 1;
            break;
        }
        if (settled(root, m, tol)) {
            done = 1;
            break;
        }
        if (it >= 2 && whole_forecast(it, prev, ch, tol) > cap)
            break;
    }
    helper_join(&h);
    if (helped) { /* the component solver need not fault t's blocks in again */
        t->k = 0;
        t->then = NULL;
    }
    if (!done)
        return 0;
    for (uint32_t i = 0; i < n; i++)
        pi[i] = i ? root * x[i].u + x[i].v : root;
    rp_rank_whole_sweeps = it;
    *iters = it;
    *resid = root * m.cu + m.cv;
    return 1;
}

/* How many threads to rank with: as asked (at most 2), or with 0, two when
 * a pass has PAR_MIN items (edges; nodes for the ranks) or more and two
 * processors are online (below that the dozen thread starts cost more than
 * the halves save: on 100K edges two threads took 0.0051-0.0062 s, one
 * 0.0048-0.0049 s; on 1M edges two took 0.056-0.067 s, one 0.072-0.079 s).
 * Cannot fail. */
#define PAR_MIN (1u << 19)

static int use_threads(uint32_t threads, uint32_t items)
{
    if (threads)
        return threads > 1 ? 2 : 1;
    return items >= PAR_MIN && sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 1;
}

/* rp_rank_solve on an input of either kind; see there.  t holds the
 * caller's own uninitialized blocks to be faulted in with the solver's
 * (the profile's ranks), if any.  Returns 0, RP_EINVAL or RP_ENOMEM. */
static int rank_solve(const struct input *g, double alpha, double tol, uint32_t max_iter,
                      uint32_t threads, double *pi, uint32_t *iterations, double *residual,
                      struct touch *t)
{
    struct solver sv = {.threads = use_threads(threads, g->m)};
    uint32_t it = 0;
    double res = 0.0;
    int rc = validate(g->n, alpha, tol, max_iter);

    if (rc)
        return rc;
    if (g->n == 1) {
        pi[0] = 1.0;
    } else {
        sv.n = g->n;
        rp_rank_whole_sweeps = 0;
        if ((rc = build_adjacency(g, alpha, &sv)))
            goto out;
        int whole = g->m >= rp_rank_whole_min
                        ? whole_graph(&sv, alpha, tol, max_iter, pi, &it, &res, t)
                        : 0;
        if (whole < 0) {
            rc = whole;
            goto out;
        }
        if (!whole) {
            if ((rc = build(&sv, t)))
                goto out;
            solve(&sv, alpha, tol, max_iter, pi, &it, &res);
        }
    }
    if (iterations)
        *iterations = it;
    if (residual)
        *residual = res;
out:
    solver_free(&sv);
    return rc;
}

int rp_rank_solve(const struct rp_graph *g, const struct rp_rank_opts *o, double *pi,
                  uint32_t *iterations, double *residual)
{
    if (!pi || !g || !g->stop || (g->m && (!g->src || !g->dst || !g->w)))
        return RP_EINVAL;
    struct input in = {g->n,
                       g->m,
                       (const char *)g->stop,
                       (const char *)g->src,
                       (const char *)g->dst,
                       (const char *)g->w,
                       sizeof *g->stop,
                       sizeof *g->src,
                       sizeof *g->dst,
                       sizeof *g->w,
                       0};
    return rank_solve(&in, o ? o->alpha : DEFAULT_ALPHA, o ? o->tol : DEFAULT_TOL,
                      o ? o->max_iter : DEFAULT_MAX_ITER, o ? o->threads : 0, pi, iterations,
                      residual, &(struct touch){0});
}

/* Whether node n is a span (instants and counters are not). */
static int is_span(const struct rp_node *n)
{
    return n->kind != RP_KIND_INSTANT && n->kind != RP_KIND_COUNTER;
}

/* The nodes of a profile, whose span flags (is_span) span_flags copies
 * into span[]: a pass over every node record (a cache line or more each),
 * which the helper makes while the search runs, off the path to the ranks. */
struct span_job {
    const struct rp_node *nodes;
    uint32_t n;
    unsigned char *span;
};

/* Takes a void * to run on the helper (struct touch's then).  Cannot fail. */
static void span_flags(void *arg)
{
    const struct span_job *j = arg;

    for (uint32_t i = 0; i < j->n; i++)
        j->span[i] = (unsigned char)is_span(&j->nodes[i]);
}

/*
 * Ranks: sorts the nodes 1..n-1 by key[i - 1], larger first, ties by lower
 * index, and stores each one's place (1, 2, ...) in rank[i - 1].  In two
 * steps.  First a stable LSD radix sort, RADIX_BITS at a time, of 8-byte
 * items: the index (plus one) in the low b bits, b = the bits n needs, under
 * the top 64 - b bits of the complemented key, half of what (key, index)
 * pairs would move per pass; it starts in index order, so equal prefixes
 * stay in index order.  Then every run of equal prefixes is put in full key
 * order (sort_run).  A key is a double's bits: its prefix keeps 52 - b bits
 * of the mantissa, so a run holds keys within 2^(b - 52) of each other (or
 * equal): with a million nodes, b = 20 and the runs are few and short,
 * where a fixed 32-bit prefix left keys within 2^-20 of each other to
 * sort_run, which reads them at random (0.02 s of the 0.04 s this took,
 * against one radix pass more now).  With threads > 1 the items are made,
 * each radix pass moves them, and the ranks are stored, in two halves side by
 * side: the first half's items of a digit go before the second's, so the
 * order is the one a single pass gives.  Returns 0 or RP_ENOMEM.
 */
#define RADIX_BITS 11
#define RADIX      (1u << RADIX_BITS)
#define SHORT_RUN  16

struct rank_key {
    uint64_t key; /* complemented: ascending order ranks */
    uint32_t idx;
};

static int rank_key_cmp(const void *pa, const void *pb)
{
    const struct rank_key *x = pa, *y = pb;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Puts the items a[0 .. len) (index in the bits of mask, in increasing
 * order) in order of their complemented full key, ties by index: nothing
 * to do when the keys are already in order (as equal keys are), insertion
 * for a short run, qsort in *buf (grown as needed) for a long one.
 * Returns 0 or RP_ENOMEM.
 */
static int sort_run(uint64_t *a, uint32_t len, uint64_t mask, const uint64_t *key,
                    struct rank_key **buf, uint32_t *cap)
{
    struct rank_key small[SHORT_RUN], *r = small;
    uint32_t k;

    for (k = 1; k < len && ~key[(a[k] & mask) - 1] >= ~key[(a[k - 1] & mask) - 1]; k++)
        ;
    if (k == len)
        return 0;
    if (len > SHORT_RUN) {
        if (len > *cap) {
            struct rank_key *t = realloc(*buf, (size_t)len * sizeof *t);
            if (!t)
                return RP_ENOMEM;
            *buf = t;
            *cap = len;
        }
        r = *buf;
    }
    for (k = 0; k < len; k++)
        r[k] = (struct rank_key){~key[(a[k] & mask) - 1], (uint32_t)(a[k] & mask)};
    if (len > SHORT_RUN) {
        qsort(r, len, sizeof *r, rank_key_cmp);
    } else {
        for (k = 1; k < len; k++) {
            struct rank_key t = r[k];
            uint32_t j = k;
            for (; j > 0 && rank_key_cmp(&r[j - 1], &t) > 0; j--)
                r[j] = r[j - 1];
            r[j] = t;
        }
    }
    for (k = 0; k < len; k++)
        a[k] = (a[k] & ~mask) | r[k].idx; /* the prefix is the run's */
    return 0;
}

/* One half of the places of assign_ranks, [k0, k1), and the counts of the
 * current digit of the items there, which become their write positions for
 * the pass over that digit. */
struct radix_half {
    const uint64_t *key;
    uint64_t *a, *b;
    uint32_t *rank;
    uint32_t k0, k1;
    unsigned ib;      /* the index's bits, under the key's prefix */
    unsigned step, d; /* RADIX_START, RADIX_COUNT or RADIX_PASS (of digit d), RADIX_STORE */
    uint32_t cnt[RADIX];
};

enum { RADIX_START, RADIX_COUNT, RADIX_PASS, RADIX_STORE };

/* Does one step of assign_ranks over a half: makes its items, counts digit
 * d of the items now at [k0, k1), moves them to their places for digit d
 * (a to b), or stores the ranks of the places [k0, k1).  Takes a void * to
 * run on a thread (run_pair).  Cannot fail. */
static void radix_step(void *arg)
{
    struct radix_half *h = arg;
    uint64_t mask = ((uint64_t)1 << h->ib) - 1;

    if (h->step == RADIX_START) {
        for (uint32_t k = h->k0; k < h->k1; k++)
            h->a[k] = (~h->key[k] & ~mask) | (k + 1);
    } else if (h->step == RADIX_COUNT) {
        uint32_t sh = h->ib + h->d * RADIX_BITS;
        memset(h->cnt, 0, sizeof h->cnt);
        for (uint32_t k = h->k0; k < h->k1; k++)
            h->cnt[(h->a[k] >> sh) & (RADIX - 1)]++;
    } else if (h->step == RADIX_PASS) {
        uint32_t sh = h->ib + h->d * RADIX_BITS;
        for (uint32_t k = h->k0; k < h->k1; k++)
            h->b[h->cnt[(h->a[k] >> sh) & (RADIX - 1)]++] = h->a[k];
    } else {
        for (uint32_t k = h->k0; k < h->k1; k++)
            h->rank[(h->a[k] & mask) - 1] = k + 1;
    }
}

/* Runs a step over both halves, side by side when threads > 1.  Cannot
 * fail. */
static void radix_both(struct radix_half *h, int threads, unsigned step, unsigned d)
{
    h[0].step = h[1].step = step;
    h[0].d = h[1].d = d;
    run_pair(threads, radix_step, &h[0], radix_step, &h[1]);
}

static int assign_ranks(uint32_t n, const uint64_t *key, uint32_t *rank, int threads)
{
    uint64_t *a = rp_big_malloc((size_t)n * sizeof *a), *b = rp_big_malloc((size_t)n * sizeof *b);
    unsigned ib = 64 - (unsigned)__builtin_clzll(n),
             digits = (64 - ib + RADIX_BITS - 1) / RADIX_BITS;
    struct radix_half h[2] = {
        {.key = key, .a = a, .b = b, .rank = rank, .k0 = 0, .k1 = n / 2, .ib = ib},
        {.key = key, .a = a, .b = b, .rank = rank, .k0 = n / 2, .k1 = n, .ib = ib}};
    struct rank_key *buf = NULL;
    uint32_t cap = 0;
    int rc = RP_ENOMEM;

    assert(n > 0);
    if (!a || !b)
        goto out;
    radix_both(h, threads, RADIX_START, 0);
    for (unsigned d = 0; d < digits; d++) {
        radix_both(h, threads, RADIX_COUNT, d);
        uint32_t *lo = h[0].cnt, *hi = h[1].cnt, sum = 0, sh = ib + d * RADIX_BITS;
        uint32_t r0 = (a[0] >> sh) & (RADIX - 1);
        if (lo[r0] + hi[r0] == n)
            continue; /* every key has this digit */
        /* the first half's items of each digit go before the second's:
         * stable, as one pass over all would be */
        for (uint32_t r = 0; r < RADIX; r++) {
            uint32_t tl = lo[r], th = hi[r];
            lo[r] = sum;
            hi[r] = sum + tl;
            sum += tl + th;
        }
        radix_both(h, threads, RADIX_PASS, d);
        uint64_t *t = a; /* the items are in b now */
        a = b;
        b = t;
        h[0].a = h[1].a = a;
        h[0].b = h[1].b = b;
    }
    for (uint32_t s = 0, t; s < n; s = t) {
        for (t = s + 1; t < n && a[t] >> ib == a[s] >> ib; t++)
            ;
        if (t - s > 1 && (rc = sort_run(a + s, t - s, ((uint64_t)1 << ib) - 1, key, &buf, &cap)))
            goto out;
    }
    radix_both(h, threads, RADIX_STORE, 0);
    rc = 0;
out:
    free(a);
    free(b);
    free(buf);
    return rc;
}

/* The nodes [i0, i1) of a profile to be given their standing, involvement
 * and rank (store_ranks). */
struct store_half {
    struct rp_profile *p;
    const double *pi;
    const uint32_t *rank;
    double rest; /* the sum of pi over the spans */
    uint32_t i0, i1;
};

/* Gives the nodes of a store_half their standing, involvement and rank.
 * Takes a void * to run on a thread (run_pair).  Cannot fail. */
static void store_ranks(void *arg)
{
    const struct store_half *h = arg;
    const double *pi = h->pi;

    for (uint32_t i = h->i0; i < h->i1; i++) {
        struct rp_node *x = &h->p->nodes[i];
        if (i == 0) {
            x->standing = 0.0;
            x->involvement = 1.0;
            x->rank = 0;
            continue;
        }
        int span = is_span(x);
        x->standing = span && h->rest > 0.0 ? pi[i] / h->rest : 0.0;
        x->involvement = span && pi[0] > 0.0 ? pi[i] / pi[0] : 0.0;
        x->rank = h->rank[i - 1];
    }
}

/*
 * Reads the graph straight from the profile's nodes and edges (no copy).
 * ROOT (nodes[0]) gets standing 0, involvement 1 and rank 0 (not ranked);
 * the other nodes get ranks 1..n-1, higher pi first, then lower index,
 * instants and counters after every span.  If pi_ROOT is 0 (possible only
 * with alpha == 0 and a part of the graph that never returns), involvement
 * is 0; if all of pi is on ROOT, standing is 0.  Returns 0, RP_EINVAL (NULL
 * profile, no nodes, an edge naming a node that does not exist, bad
 * options), or RP_ENOMEM; on failure the nodes are left unchanged.
 */
int rp_rank_profile(struct rp_profile *p, const struct rp_rank_opts *o)
{
    struct rp_rank_opts def = {DEFAULT_ALPHA, DEFAULT_TOL, DEFAULT_MAX_ITER, 0};
    double *pi = NULL;
    uint64_t *key = NULL;
    unsigned char *span = NULL;
    uint32_t *rank = NULL, n, it = 0;
    double res = 0.0;
    int rc;
    struct held {
        uint32_t k;
        uint64_t incl;
    } *held = NULL;
    uint32_t nheld = 0;

    if (!p || p->n_nodes == 0 || !p->nodes || (p->n_edges && !p->edges))
        return RP_EINVAL;
    if (!o)
        o = &def;
    n = p->n_nodes;
    int calls = p->rank.weight_calls;
    const struct rp_node *nd = p->nodes;
    const struct rp_edge *ed = p->edges;
    /* call weights: an edge weighs the activations under its calls when
     * the replay counted them (docs/ranking.md), else its direct calls */
    const char *ecalls = !ed                   ? NULL
                         : p->incl_calls_known ? (const char *)&ed->incl_calls
                                               : (const char *)&ed->calls;
    struct input g = {n,
                      p->n_edges,
                      calls ? (const char *)&nd->calls : (const char *)&nd->excl,
                      ed ? (const char *)&ed->caller : NULL,
                      ed ? (const char *)&ed->callee : NULL,
                      !ed     ? NULL
                      : calls ? ecalls
                              : (const char *)&ed->incl,
                      sizeof *nd,
                      sizeof *ed,
                      sizeof *ed,
                      sizeof *ed,
                      1};
    rc = RP_ENOMEM;
    /* Lock holds as intervals (docs/locks.md): the code run while a lock is
     * held is the work of the functions that run it, already in their time
     * (their callee edges and own time partition it), so with time weights
     * an edge into a hold weighs nothing: it would count that time twice.
     * The edges keep their time for the reports; it is set aside here and
     * put back below.  (Before format 1.3 holds were frames whose callees
     * were that code: their edges partition time and keep their weight.) */
    if (!calls && p->hold_intervals) {
        for (uint32_t k = 0; k < p->n_edges; k++)
            nheld += p->edges[k].callee < n && nd[p->edges[k].callee].kind == RP_KIND_LOCK_HOLD;
        if (nheld && !(held = malloc(nheld * sizeof *held)))
            goto out;
        nheld = 0;
        for (uint32_t k = 0; held && k < p->n_edges; k++)
            if (p->edges[k].callee < n && nd[p->edges[k].callee].kind == RP_KIND_LOCK_HOLD) {
                held[nheld++] = (struct held){k, p->edges[k].incl};
                p->edges[k].incl = 0;
            }
    }
    pi = rp_big_malloc((size_t)n * sizeof *pi);
    key = rp_big_malloc((size_t)n * sizeof *key);
    rank = rp_big_malloc((size_t)n * sizeof *rank); /* by index - 1, stored in node order */
    span = malloc(n);
    if (!pi || !key || !rank || !span)
        goto out;
    struct span_job sj = {p->nodes, n, span};
    struct touch t = {.then = span_flags, .then_arg = &sj};
    touch_add(&t, pi, (size_t)n * sizeof *pi);
    touch_add(&t, key, (size_t)n * sizeof *key);
    touch_add(&t, rank, (size_t)n * sizeof *rank);
    rc = rank_solve(&g, o->alpha, o->tol, o->max_iter, o->threads, pi, &it, &res, &t);
    if (rc)
        goto out;
    if (!t.ran) /* no helper ran (one thread, a small graph) */
        span_flags(&sj);

    /* Instants and counters are nodes without spans: the report does not
     * list them, so they get no standing (and rank after every span).  The
     * sort key of a span is pi's bits (order-preserving for pi >= 0) plus
     * one, so that every span ranks before the non-spans' 0. */
    double rest = 0.0;
    for (uint32_t i = 1; i < n; i++) {
        uint64_t bits;
        memcpy(&bits, &pi[i], sizeof bits);
        rest += span[i] ? pi[i] : 0.0;
        key[i - 1] = !span[i] ? 0 : pi[i] > 0.0 ? bits + 1 : 1;
    }
    int threads = use_threads(o->threads, n);
    if (n > 1 && (rc = assign_ranks(n - 1, key, rank, threads)))
        goto out;
    struct store_half lo = {p, pi, rank, rest, 0, n / 2}, hi = {p, pi, rank, rest, n / 2, n};
    run_pair(threads, store_ranks, &lo, store_ranks, &hi);
    p->rank.alpha = o->alpha;
    p->rank.iterations = it;
    p->rank.residual = res;
    rc = 0;
out:
    for (uint32_t k = 0; k < nheld; k++)
        p->edges[held[k].k].incl = held[k].incl;
    free(held);
    free(pi);
    free(key);
    free(rank);
    free(span);
    return rc;
}

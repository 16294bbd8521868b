// SPDX-License-Identifier: MIT
/*
 * rank_solve.c - the ranking's solve (rank.c explains the method): the
 * whole graph swept in id order when that order is good enough, else the
 * component solver (its graph from rank_graph.c and rank_layout.c),
 * Gauss-Seidel sweeps in push form over each cycle; and rp_rank_solve.
 */
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bigmem.h"
#include "common/error.h"
#include "rank_int.h"

static void rp_rank_solver_free(struct solver *sv)
{
    free(sv->off1);
    free(sv->dst1);
    free(sv->c1);
    free(sv->sl_node);
    free(sv->sl_inv);
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

/*
 * Adds d times each coefficient c[e], e in [e0, e1), to the flow into the
 * callee dst[e], prefetching the flow AHEAD edges on (dst has AHEAD spare
 * entries).  Cannot fail.
 */
static inline void push(double *in, const uint32_t *dst, const double *c, uint32_t e0, uint32_t e1,
                        double d)
{
    for (uint32_t e = e0; e < e1; e++) {
        __builtin_prefetch(&in[dst[e + AHEAD]], 1);
        in[dst[e]] += c[e] * d;
    }
}

/* What a sweep measured: the L1 change of u, the sum of the new u. */
struct sweep_sums {
    double cu, su;
};

/*
 * Node k's step of a Gauss-Seidel sweep in push form: its x becomes in * f
 * (in + x when f is 0: a node that never leaves itself keeps all it
 * receives), and its change is pushed along its edges, unless it is
 * exactly 0 (pushing it would add 0.0 to values that are never -0.0:
 * skipping it changes no bit); s gets the change and the new values.
 * Cannot fail.
 */
static inline void sweep_node(double *in, double *x, uint32_t k, double f, const uint32_t *off,
                              const uint32_t *dst, const double *c, struct sweep_sums *s)
{
    double nx = f > 0.0 ? in[k] * f : in[k] + x[k], d = nx - x[k];
    s->cu += fabs(d);
    s->su += nx;
    x[k] = nx;
    if (d != 0.0)
        push(in, dst, c, off[k], off[k + 1], d);
}

/* One sweep over the positions [a, b), each with its factor invden (the
 * callees in dst are positions too).  Cannot fail. */
static inline struct sweep_sums sweep(double *in, double *x, const double *invden,
                                      const uint32_t *off, const uint32_t *dst, const double *c,
                                      uint32_t a, uint32_t b)
{
    struct sweep_sums s = {0.0, 0.0};
    for (uint32_t k = a; k < b; k++)
        sweep_node(in, x, k, invden[k], off, dst, c, &s);
    return s;
}

/*
 * sweep over the whole graph in id order, nodes [1, n) of the adjacency by
 * node: a node's self-loop factor is 1 unless the list (sl_node, sl_inv)
 * names it, which a cursor walks alongside (ROOT's is 1: never listed);
 * multiplying by 1 changes no bit, so the sweep is the one sweep() makes
 * with every factor stored.  Cannot fail.
 */
static inline struct sweep_sums sweep_whole(double *in, double *x, const struct solver *sv)
{
    const uint32_t *sl = sv->sl_node;
    uint32_t n = sv->n, nsl = sv->nsl, j = 0;
    struct sweep_sums s = {0.0, 0.0};

    for (uint32_t k = 1; k < n; k++) {
        double f = j < nsl && sl[j] == k ? sv->sl_inv[j++] : 1.0;
        sweep_node(in, x, k, f, sv->off1, sv->dst1, sv->c1, &s);
    }
    return s;
}

/* The rule that ends the sweeps (solve_cycle's and the whole graph's):
 * the L1 change of pi, r * cu with r a bound on pi_ROOT, is at most tol, or
 * the change is down to rounding (FLOOR_ULPS units in the last place of the
 * sum).  Cannot fail. */
#define FLOOR_ULPS 64.0

static inline int settled(double r, struct sweep_sums m, double tol)
{
    return r * m.cu <= tol || m.cu <= FLOOR_ULPS * DBL_EPSILON * m.su;
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
 *     pi_ROOT <= 1 / (ru + sum u),
 * the sum over the component, where ru = 1 + sum u over the components
 * solved before (u only grows).  A node that never leaves itself (invden
 * 0: alpha == 0 and a pure self loop) keeps all it receives: it grows
 * every sweep and never converges, which the residual then says.  Adds the
 * last sweep's change of u to *du; returns the number of sweeps.  Cannot
 * fail.
 */
static uint32_t solve_cycle(struct solver *sv, uint32_t a, uint32_t b, double ru, double tol,
                            uint32_t max_iter, double *du)
{
    const uint32_t *off = sv->ioff, *dst = sv->idst;
    const double *c = sv->ic, *invden = sv->invden;
    double *x = sv->x, *in = sv->in;
    uint32_t it = 0;
    struct sweep_sums m = {0.0, 0.0};

    while (it < max_iter) {
        m = sweep(in, x, invden, off, dst, c, a, b);
        it++;
        /* the component's sum tightens the bound on pi_ROOT */
        if (settled(1.0 / (ru + m.su), m, tol))
            break;
    }
    *du += m.cu;
    return it;
}

/*
 * Solves for u component by component (x by position), then pi (in
 * sv->in's block when pi is NULL).
 * Returns the largest number of sweeps a component needed in *iters (1 for
 * an acyclic graph) and the L1 change of pi in the last sweep of every
 * component, summed, in *resid.  Cannot fail.
 */
static void solve(struct solver *sv, double tol, uint32_t max_iter, double *pi, uint32_t *iters,
                  double *resid)
{
    uint32_t n = sv->n, it = 1, ncyc = 0; /* nodes that need sweeps */
    double du = 0.0, su = 0.0;
    double *x = sv->x;

    for (uint32_t k = 0; k < n; k++)
        sv->in[k] = 0.0;
    for (uint32_t r = 0; r < sv->ncomp; r++) {
        uint32_t a = sv->cbeg[r], b = r ? sv->cbeg[r - 1] : n;
        if (b - a > 1 || sv->invden[a] == 0.0)
            ncyc += b - a;
    }
    for (uint32_t r = sv->ncomp; r-- > 0;) {
        uint32_t a = sv->cbeg[r], b = r ? sv->cbeg[r - 1] : n, i = sv->order[a];
        if (b - a == 1 && (i == 0 || sv->invden[a] > 0.0)) {
            x[a] = i == 0 ? 1.0 : sv->in[a] * sv->invden[a];
        } else {
            /* this component's share of the tolerance: all sum to tol */
            double t = tol * (double)(b - a) / (double)ncyc;
            uint32_t k = solve_cycle(sv, a, b, 1.0 + su, t, max_iter, &du);
            it = k > it ? k : it;
        }
        for (uint32_t k = a; k < b; k++) {
            push(sv->in, sv->xdst, sv->xc, sv->xoff[k], sv->xoff[k + 1], x[k]);
            if (sv->order[k])
                su += x[k];
        }
    }
    double root = 1.0 / (1.0 + su);
    if (!pi) /* into the flow's block, which is read no more */
        pi = (double *)sv->in;
    for (uint32_t k = 0; k < n; k++) {
        uint32_t i = sv->order[k];
        pi[i] = i ? root * x[k] : root;
    }
    *iters = it;
    *resid = root * du;
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
 * sweeps, and the components' own sweeps come on top.  bench_rank's graphs
 * cover the cases: a few edges back anywhere up are swept whole (in about
 * as many sweeps as the component solver's largest cycle needs, without
 * the search); edges back at most a window up, and uniformly random edges
 * (half to a lower id), are left to the components.
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
int rp_rank_whole_apart = 1;
_Thread_local uint32_t rp_rank_whole_sweeps;

/* Half of whole_init's nodes: [i0, i1). */
struct whole_init_part {
    struct solver *sv;
    uint32_t i0, i1;
};

/* Sets in[] and x to 0 over a part of the nodes (the first writes fault
 * the pages in, which two threads do in half the time).  Takes a void * to
 * run on a thread (rp_rank_run_pair).  Cannot fail. */
static void whole_init(void *arg)
{
    struct whole_init_part *pt = arg;

    for (uint32_t i = pt->i0; i < pt->i1; i++) {
        pt->sv->in[i] = 0.0;
        if (pt->sv->x) /* (none when x is kept in in[]: sweep_apart) */
            pt->sv->x[i] = 0.0;
    }
}

/* Orders node indices.  Cannot fail. */
static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Whether the whole-graph sweeps can keep x in in[] (sweep_apart): every
 * edge back (to a lower id) goes to a node without edges of its own (a
 * sink: time off CPU, a wait, a leaf called from below), and no node
 * keeps all it receives (every self-loop factor > 0).  The graph is then
 * acyclic.  Those sinks, in increasing order, go to *sk (*nsk of them;
 * NULL when none).  Returns 1 when it can, 0 when it cannot, or
 * RP_ENOMEM.
 */
static int sinks_apart(const struct solver *sv, uint32_t **sk, uint32_t *nsk)
{
    const uint32_t *off = sv->off1, *dst = sv->dst1;
    uint32_t n = sv->n, m = 0, *s = NULL;

    *sk = NULL;
    *nsk = 0;
    if (!rp_rank_whole_apart)
        return 0;
    for (uint32_t j = 0; j < sv->nsl; j++)
        if (!(sv->sl_inv[j] > 0.0))
            return 0;
    if (!sv->nback)
        return 1;
    s = malloc((size_t)sv->nback * sizeof *s);
    if (!s)
        return RP_ENOMEM;
    for (uint32_t k = 1; k < n; k++)
        for (uint32_t e = off[k]; e < off[k + 1]; e++)
            if (dst[e] < k)
                s[m++] = dst[e];
    qsort(s, m, sizeof *s, cmp_u32);
    uint32_t u = 0;
    for (uint32_t j = 0; j < m; j++) {
        if (off[s[j]] != off[s[j] + 1]) { /* a node with edges: maybe a cycle */
            free(s);
            return 0;
        }
        if (!u || s[u - 1] != s[j])
            s[u++] = s[j];
    }
    *sk = s;
    *nsk = u;
    return 1;
}

/*
 * sweep_whole with x kept in in[] but for the sinks sk (nsk of them, in
 * increasing order: sinks_apart), whose x is xs[j].  Invariant: a node
 * but a sink receives flow only from lower ids (an edge back goes to a
 * sink), so once the first sweep has updated it, in[k] receives nothing
 * more and can hold its x; in later sweeps only the sinks' x change (the
 * edges back bring them more), and a sink pushes nothing.  The arithmetic
 * is sweep_whole's operation for operation (from x == 0 in the first
 * sweep; a change of exactly 0 for the others after it), so the bits are
 * those the two arrays give, in half the memory.  first: the first sweep.
 * Cannot fail.
 */
static struct sweep_sums sweep_apart(double *in, double *xs, const uint32_t *sk, uint32_t nsk,
                                     int first, const struct solver *sv)
{
    const uint32_t *sl = sv->sl_node;
    uint32_t n = sv->n, nsl = sv->nsl, j = 0, js = 0;
    struct sweep_sums s = {0.0, 0.0};

    for (uint32_t k = 1; k < n; k++) {
        double f = j < nsl && sl[j] == k ? sv->sl_inv[j++] : 1.0;
        double *xk = js < nsk && sk[js] == k ? &xs[js++] : NULL;
        if (!xk && !first) { /* unchanged: a change of 0, pushed nowhere */
            s.cu += 0.0;
            s.su += in[k];
            continue;
        }
        double nx = in[k] * f, d = nx - (xk ? *xk : 0.0); /* (f > 0: sinks_apart) */
        s.cu += fabs(d);
        s.su += nx;
        if (xk)
            *xk = nx;
        else
            in[k] = nx;
        if (d != 0.0)
            push(in, sv->dst1, sv->c1, sv->off1[k], sv->off1[k + 1], d);
    }
    return s;
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
 * Solves the graph whole in id order (see above) into pi (in sv->in's
 * block when pi is NULL), with the caller's blocks (t) faulted in on a
 * helper meanwhile, if one can be started (t is then emptied: its blocks
 * and job are done).  Returns 1 when it did (*iters and *resid set), 0
 * when it gave up (sv->in and sv->x, if it was needed, are left
 * allocated, their contents garbage), or RP_ENOMEM.
 */
static int whole_graph(struct solver *sv, double tol, uint32_t max_iter, double *pi,
                       uint32_t *iters, double *resid, struct touch *t)
{
    uint32_t n = sv->n, it = 0, cap = max_iter < WHOLE_MAX ? max_iter : WHOLE_MAX, *sk = NULL,
             nsk = 0;
    const uint32_t *off = sv->off1, *dst = sv->dst1;
    const double *c = sv->c1;
    double prev = 0.0, ch = 0.0, root = 0.0;
    struct sweep_sums m = {0.0, 0.0};
    double *xs = NULL; /* the sinks' x, when x is kept in in[] */
    int done = 0, rc;

    if ((double)sv->nback > WHOLE_BACK * (double)off[n] || sv->nshort > sv->nback / 2)
        return 0;
    /* an acyclic graph whose edges back all go to sinks keeps x in in[]
     * (sweep_apart), and the sinks' x apart */
    int apart = sinks_apart(sv, &sk, &nsk);
    rc = RP_ENOMEM;
    if (apart < 0 || (nsk && !(xs = calloc(nsk, sizeof *xs))))
        goto out;
    sv->in = rp_big_malloc((size_t)n * sizeof *sv->in);
    sv->x = apart ? NULL : rp_big_malloc((size_t)n * sizeof *sv->x);
    if (!sv->in || (!apart && !sv->x))
        goto out;
    double *in = sv->in, *x = apart ? sv->in : sv->x;
    struct whole_init_part lo = {sv, 0, n / 2}, hi = {sv, n / 2, n};
    rp_rank_run_pair(sv->threads, whole_init, &lo, whole_init, &hi);
    struct helper h;
    int helped = rp_rank_helper_start(&h, sv->threads, rp_rank_touch_pages, t);
    x[0] = 1.0; /* (in[0], which no edge reaches, when apart) */
    push(in, dst, c, off[0], off[1], x[0]);
    while (it < cap) {
        m = apart ? sweep_apart(in, xs, sk, nsk, it == 0, sv) : sweep_whole(in, x, sv);
        it++;
        root = 1.0 / (1.0 + m.su);
        prev = ch;
        ch = root * m.cu;
        if (sv->nback == 0) { /* acyclic, in topological order: exact */
            m.cu = 0.0;
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
    rp_rank_helper_join(&h);
    if (helped) { /* the component solver need not fault t's blocks in again */
        t->k = 0;
        t->then = NULL;
    }
    rc = 0;
    if (!done) /* (the component solver allocates sv->x if it is not there) */
        goto out;
    if (!pi) /* into the flow's block, which is read no more (x in it when
              * apart: pi[i] lands on x[i], read before) */
        pi = (double *)in;
    for (uint32_t i = 0, js = 0; i < n; i++) {
        double xi = js < nsk && sk[js] == i ? xs[js++] : x[i];
        pi[i] = i ? root * xi : root;
    }
    rp_rank_whole_sweeps = it;
    *iters = it;
    *resid = root * m.cu;
    rc = 1;
out:
    free(sk);
    free(xs);
    return rc;
}

/* How many threads to rank with: as asked (at most 2), or with 0, two when
 * a pass has PAR_MIN items (edges; nodes for the ranks) or more and two
 * processors are online (below that the dozen thread starts cost more than
 * the halves save).  Cannot fail. */
#define PAR_MIN (1u << 19)

int rp_rank_threads(uint32_t threads, uint32_t items)
{
    if (threads)
        return threads > 1 ? 2 : 1;
    return items >= PAR_MIN && sysconf(_SC_NPROCESSORS_ONLN) > 1 ? 2 : 1;
}

/* rp_rank_solve on an input of either kind; see there.  t holds the
 * caller's own uninitialized blocks to be faulted in with the solver's, if
 * any, and a job to run meanwhile.  With pi NULL, pi goes to the block of
 * the flow, which is not needed once the solve is done, handed over in
 * *own, so that pi takes no memory of its own.  Returns 0, RP_EINVAL or
 * RP_ENOMEM. */
int rp_rank_solve_input(const struct input *g, double alpha, double tol, uint32_t max_iter,
                        uint32_t threads, double *pi, double **own, uint32_t *iterations,
                        double *residual, struct touch *t)
{
    struct solver sv = {.threads = rp_rank_threads(threads, g->m)};
    uint32_t it = 0;
    double res = 0.0;
    int rc = validate(g->n, alpha, tol, max_iter);

    if (rc)
        return rc;
    if (g->n == 1) { /* (without pi, in the flow's block as below) */
        double *one = pi ? pi : malloc(sizeof *one);
        if (!one)
            return RP_ENOMEM;
        one[0] = 1.0;
        sv.in = pi ? NULL : one;
    } else {
        sv.n = g->n;
        rp_rank_whole_sweeps = 0;
        if ((rc = rp_rank_adjacency(g, alpha, &sv)))
            goto out;
        int whole =
            g->m >= rp_rank_whole_min ? whole_graph(&sv, tol, max_iter, pi, &it, &res, t) : 0;
        if (whole < 0) {
            rc = whole;
            goto out;
        }
        if (!whole) {
            if ((rc = rp_rank_layout(&sv, t)))
                goto out;
            solve(&sv, tol, max_iter, pi, &it, &res);
        }
    }
    if (!pi) { /* pi is in the flow's block */
        *own = sv.in;
        sv.in = NULL;
    }
    if (iterations)
        *iterations = it;
    if (residual)
        *residual = res;
out:
    rp_rank_solver_free(&sv);
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
    return rp_rank_solve_input(&in, o ? o->alpha : DEFAULT_ALPHA, o ? o->tol : DEFAULT_TOL,
                               o ? o->max_iter : DEFAULT_MAX_ITER, o ? o->threads : 0, pi, NULL,
                               iterations, residual, &(struct touch){0});
}

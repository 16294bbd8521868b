// SPDX-License-Identifier: MIT
/*
 * test_rank.c - checks the ranking (rank.c) against numbers computed by hand
 * and against an independent dense solve, and the flags (flags.c) on
 * hand-built profiles, each with a near miss that must not be flagged.
 *
 *   (a) tree-shaped graphs: as alpha -> 0, involvement = inclusive / total;
 *   (b) >= 200 random sparse graphs vs Gaussian elimination on pi = pi P;
 *       a 300-node call graph with a chain of cycles, the same way; alpha 0
 *       with a node that never leaves itself (no convergence, said so);
 *   (c) direct recursion (fib-like) vs its closed form;
 *   (d) rp_rank_profile: ranks, standing, ROOT excluded, time vs calls;
 *       on random profiles, the same pi as rp_rank_solve bit for bit and
 *       the ranks of a reference sort (ties, instants and counters);
 *       call-graph-shaped and uniform graphs (both orders of a cycle's
 *       nodes) against the dense solve, and the same bits on a second run
 *       with two threads; random graphs of up to 3000 nodes ranked with
 *       one thread and two, bit for bit, and bad inputs in either half;
 *       the whole graph swept in id order first (profile-like graphs vs
 *       the dense solve, the graphs it must give up on, and profiles
 *       through it against rp_rank_solve);
 *   (e) the memory rp_rank_profile takes at its peak, within the bound
 *       docs/ranking.md states for each solver (Linux, not under a
 *       sanitizer, whose shadow and quarantine are resident too).
 */
#include <math.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/profile.h"
#include "analyze/rank.h"
#include "common/error.h"
#include "trace/format.h"
#include "check.h"
#include "memstat.h"

/* ---- an independent dense solve ---------------------------------------- */

/*
 * pi of P = (1-alpha) Q + alpha 1 e_ROOT^T (the walk restarts at ROOT) with Q built
 * straight from docs/design.md §6,
 * by Gaussian elimination with partial pivoting on (P^T - I) pi = 0 with the
 * last equation replaced by sum pi = 1.  Returns 0, or -1 if singular.
 */
static int dense_pi(uint32_t n, const double *stop, uint32_t m, const uint32_t *src,
                    const uint32_t *dst, const double *w, double alpha, double *pi)
{
    double *q = calloc((size_t)n * n, sizeof *q), *a = calloc((size_t)n * (n + 1), sizeof *a);
    double *tot = calloc(n, sizeof *tot);
    int rc = -1;
    if (!q || !a || !tot)
        goto out;
    for (uint32_t i = 1; i < n; i++)
        tot[i] = stop[i];
    for (uint32_t e = 0; e < m; e++)
        tot[src[e]] += w[e];
    for (uint32_t e = 0; e < m; e++)
        if (tot[src[e]] > 0)
            q[src[e] * n + dst[e]] += w[e] / tot[src[e]];
    for (uint32_t i = 0; i < n; i++) {
        if (tot[i] == 0)
            q[i * n + 0] = 1.0;
        else if (i != 0)
            q[i * n + 0] += stop[i] / tot[i];
    }
    /* row j of the system: sum_i pi_i P_ij - pi_j = 0 */
    for (uint32_t j = 0; j < n; j++) {
        for (uint32_t i = 0; i < n; i++)
            a[j * (n + 1) + i] = (1 - alpha) * q[i * n + j] + (j == 0 ? alpha : 0.0) - (i == j);
        a[j * (n + 1) + n] = 0;
    }
    for (uint32_t i = 0; i <= n; i++)
        a[(n - 1) * (n + 1) + i] = 1.0;
    for (uint32_t c = 0; c < n; c++) {
        uint32_t piv = c;
        for (uint32_t r = c + 1; r < n; r++)
            if (fabs(a[r * (n + 1) + c]) > fabs(a[piv * (n + 1) + c]))
                piv = r;
        if (fabs(a[piv * (n + 1) + c]) < 1e-300)
            goto out;
        for (uint32_t k = 0; k <= n; k++) {
            double t = a[c * (n + 1) + k];
            a[c * (n + 1) + k] = a[piv * (n + 1) + k];
            a[piv * (n + 1) + k] = t;
        }
        for (uint32_t r = c + 1; r < n; r++) {
            double f = a[r * (n + 1) + c] / a[c * (n + 1) + c];
            for (uint32_t k = c; k <= n; k++)
                a[r * (n + 1) + k] -= f * a[c * (n + 1) + k];
        }
    }
    for (uint32_t c = n; c-- > 0;) {
        double s = a[c * (n + 1) + n];
        for (uint32_t k = c + 1; k < n; k++)
            s -= a[c * (n + 1) + k] * pi[k];
        pi[c] = s / a[c * (n + 1) + c];
    }
    rc = 0;
out:
    free(q);
    free(a);
    free(tot);
    return rc;
}

static unsigned long long rng = 0x9e3779b97f4a7c15ull;

static uint64_t next_u64(void)
{
    return check_xorshift(&rng);
}

static double next_unit(void)
{
    return (double)(next_u64() >> 11) / 9007199254740992.0;
}

/* ---- (a) trees ---------------------------------------------------------- */

/*
 * The example of docs/ranking.md, one thread, times in ticks, total 1000:
 *
 *   <root> -> main      1000   main: self 20, calls init (80), dispatch (900)
 *   main -> init          80   init: self 80 (leaf)
 *   main -> dispatch     900   dispatch: self 9, calls a (450), b (300), c (141)
 *   dispatch -> a/b/c  450/300/141, all leaves
 *
 * Node indices: 0 ROOT, 1 main, 2 dispatch, 3 a, 4 b, 5 c, 6 init.
 * As alpha -> 0 a descent from ROOT visits main once (Q_root,main = 1), goes
 * on to dispatch with probability 900/1000 and from there to a with
 * 450/900, so involvement(a) = 0.9 * 0.5 = 0.45 = incl(a) / total; likewise
 * main 1000/1000 = 1, dispatch 0.9, b 0.3, c 0.141, init 0.08.
 */
static const double ex_stop[7] = {0, 20, 9, 450, 300, 141, 80};
static const uint32_t ex_src[6] = {0, 1, 1, 2, 2, 2};
static const uint32_t ex_dst[6] = {1, 6, 2, 3, 4, 5};
static const double ex_w[6] = {1000, 80, 900, 450, 300, 141};
static const double ex_inv[7] = {1, 1.0, 0.9, 0.45, 0.3, 0.141, 0.08};

static void test_trees(void)
{
    struct rp_rank_opts o = {1e-9, 1e-14, 10000, 0};
    double pi[7], dense[7];
    uint32_t it;
    double res;
    struct rp_graph g = {7, 6, ex_stop, ex_src, ex_dst, ex_w};

    CHECK(rp_rank_solve(&g, &o, pi, &it, &res) == 0);
    CHECK(res < 1e-14 && it < 10000);
    for (int i = 1; i < 7; i++)
        CHECK_NEAR(pi[i] / pi[0], ex_inv[i], 1e-7);

    /* the same example at the default alpha against the dense solve */
    CHECK(rp_rank_solve(&g, NULL, pi, &it, &res) == 0);
    CHECK(dense_pi(7, ex_stop, 6, ex_src, ex_dst, ex_w, 0.01, dense) == 0);
    for (int i = 0; i < 7; i++)
        CHECK_NEAR(pi[i], dense[i], 1e-12);

    /*
     * Two threads, total 1000 = 600 + 400:
     *   <root> -> t1 600: t1 self 100, calls x 500; x self 200, calls y 300;
     *                     y self 300
     *   <root> -> t2 400: t2 self 150, calls z 250; z self 250
     * involvement = incl / total: t1 0.6, x 0.5, y 0.3, t2 0.4, z 0.25
     * (e.g. y: 600/1000 * 500/600 * 300/500 = 0.3).
     * Indices: 0 ROOT, 1 y, 2 z, 3 x, 4 t2, 5 t1 (callees before callers, so
     * the solver's ordering, not the numbering, has to get it right).
     */
    static const double st[6] = {0, 300, 250, 200, 150, 100};
    static const uint32_t s2[5] = {0, 0, 5, 3, 4};
    static const uint32_t d2[5] = {5, 4, 3, 1, 2};
    static const double w2[5] = {600, 400, 500, 300, 250};
    static const double inv2[6] = {1, 0.3, 0.25, 0.5, 0.4, 0.6};
    struct rp_graph g2 = {6, 5, st, s2, d2, w2};
    CHECK(rp_rank_solve(&g2, &o, pi, &it, &res) == 0);
    for (int i = 1; i < 6; i++)
        CHECK_NEAR(pi[i] / pi[0], inv2[i], 1e-7);
    /* a tree is solved by one sweep in call order, whatever the numbering;
     * the second sweep confirms it */
    CHECK(it <= 3);
}

/* ---- (b) random graphs vs dense ------------------------------------------ */

static void test_random(void)
{
    enum { NG = 400 };
    double worst = 0;
    uint32_t most_it = 0;
    for (int gi = 0; gi < NG; gi++) {
        uint32_t n = 2 + (uint32_t)(next_u64() % 49); /* 2..50 */
        uint32_t m = (uint32_t)(next_u64() % (3 * n + 1));
        double *stop = calloc(n, sizeof *stop), *w = calloc(m + 1, sizeof *w);
        uint32_t *src = calloc(m + 1, sizeof *src), *dst = calloc(m + 1, sizeof *dst);
        double *pi = calloc(n, sizeof *pi), *dense = calloc(n, sizeof *dense);
        /* nodes >= reach can only be reached from each other: unless an
         * edge from below leads there, they are unreachable from ROOT */
        uint32_t reach = 1 + (uint32_t)(next_u64() % n);
        for (uint32_t i = 1; i < n; i++) {
            uint64_t r = next_u64() % 10;
            stop[i] = r < 3 ? 0.0 : r < 8 ? next_unit() * 100 : next_unit() * 1e6;
        }
        for (uint32_t e = 0; e < m; e++) {
            uint64_t kind = next_u64() % 20;
            src[e] = (uint32_t)(next_u64() % n);
            if (kind == 0)
                dst[e] = src[e]; /* self loop */
            else if (kind == 1)
                dst[e] = 0; /* into ROOT */
            else if (src[e] < reach)
                dst[e] = (uint32_t)(next_u64() % reach);
            else
                dst[e] = reach + (uint32_t)(next_u64() % (n - reach));
            uint64_t r = next_u64() % 10;
            w[e] = r == 0 ? 0.0 : r < 8 ? next_unit() * 100 : next_unit() * 1e5;
        }
        static const double alphas[] = {0.5, 0.15, 0.05, 0.01};
        double alpha = alphas[gi % 4];
        struct rp_rank_opts o = {alpha, 1e-13, 1000000, 0};
        struct rp_graph g = {n, m, stop, src, dst, w};
        uint32_t it;
        double res, sum = 0;
        CHECK(rp_rank_solve(&g, &o, pi, &it, &res) == 0);
        CHECK(dense_pi(n, stop, m, src, dst, w, alpha, dense) == 0);
        CHECK(res < 1e-13);
        if (it > most_it)
            most_it = it;
        for (uint32_t i = 0; i < n; i++) {
            sum += pi[i];
            double d = fabs(pi[i] - dense[i]);
            if (d > worst)
                worst = d;
            if (d > 1e-10)
                fprintf(stderr, "graph %d (n %u m %u alpha %g) node %u: %.15g vs dense %.15g\n", gi,
                        n, m, alpha, i, pi[i], dense[i]);
            CHECK(d <= 1e-10);
        }
        CHECK_NEAR(sum, 1.0, 1e-12);
        /* the same edges grouped by caller, as a profile has them: the
         * one-pass build instead of the counting sort, same answer */
        for (uint32_t e = 1; e < m; e++)
            for (uint32_t k = e; k > 0 && src[k - 1] > src[k]; k--) {
                uint32_t ts = src[k], td = dst[k];
                double tw = w[k];
                src[k] = src[k - 1], dst[k] = dst[k - 1], w[k] = w[k - 1];
                src[k - 1] = ts, dst[k - 1] = td, w[k - 1] = tw;
            }
        o.threads = 2; /* and cut in halves (rank.c) */
        CHECK(rp_rank_solve(&g, &o, pi, &it, &res) == 0);
        for (uint32_t i = 0; i < n; i++)
            CHECK(fabs(pi[i] - dense[i]) <= 1e-10);
        free(stop);
        free(w);
        free(src);
        free(dst);
        free(pi);
        free(dense);
    }
    printf("random graphs: %d, worst |pi - dense| = %.3g, most sweeps %u\n", NG, worst, most_it);
}

/*
 * A call graph of 300 nodes shaped like a program's, with several cycles of
 * many nodes in a chain (so that components of two or more nodes feed each
 * other, and acyclic parts sit before, between and after them), against
 * the dense solve.  Blocks of 50 nodes: inside a block calls go down, and
 * in blocks 1, 3 and 5 a few calls go back up to the block's top, which
 * makes each of them one cycle; every block calls into the next.
 */
static void test_components(void)
{
    enum { N = 300, B = 50 };
    static double stop[N], w[4 * N], pi[N], dense[N];
    static uint32_t src[4 * N], dst[4 * N];
    uint32_t m = 0;
    for (uint32_t i = 1; i < N; i++) {
        stop[i] = 1 + next_unit() * 100;
        uint32_t blk = (i - 1) / B, lo = 1 + blk * B, hi = lo + B; /* [lo, hi) */
        for (int k = 0; k < 3; k++) {
            uint32_t j = i + 1 + (uint32_t)(next_u64() % 7);
            if (k == 2 && blk % 2 == 1 && next_u64() % 4 == 0)
                j = lo + (uint32_t)(next_u64() % (i - lo + 1)); /* back up */
            else if (k == 2 && hi < N && next_u64() % 3 == 0)
                j = hi + (uint32_t)(next_u64() % B); /* into the next block */
            else if (j >= hi)
                continue;
            src[m] = i;
            dst[m] = j >= N ? N - 1 : j;
            w[m++] = next_unit() * 1000;
        }
    }
    for (uint32_t b = 0; b < N / B; b++) { /* ROOT calls each block's top */
        src[m] = 0;
        dst[m] = 1 + b * B;
        w[m++] = 1000;
    }
    struct rp_graph g = {N, m, stop, src, dst, w};
    static const double alphas[] = {0.01, 1e-6};
    for (int a = 0; a < 2; a++) {
        struct rp_rank_opts o = {alphas[a], 1e-13, 100000, 0};
        uint32_t it;
        double res, worst = 0;
        CHECK(rp_rank_solve(&g, &o, pi, &it, &res) == 0);
        CHECK(dense_pi(N, stop, m, src, dst, w, alphas[a], dense) == 0);
        CHECK(res < 1e-13 && it > 1); /* there are cycles to sweep */
        for (uint32_t i = 0; i < N; i++)
            worst = fmax(worst, fabs(pi[i] - dense[i]));
        CHECK(worst <= 1e-10);
        printf("components: alpha %g, %u sweeps, residual %.2g, worst |pi - dense| %.3g\n",
               alphas[a], it, res, worst);
    }
}

/*
 * alpha = 0 and a node whose only way on is itself (no stop weight, only a
 * self call): the walk that reaches it never leaves, so there is no
 * stationary distribution with ROOT in it.  The solver must still return,
 * after max_iter sweeps, and say by its residual that it did not converge.
 */
static void test_trap(void)
{
    double stop[3] = {0, 10, 0}, w[3] = {5, 1, 1}, pi[3];
    uint32_t src[3] = {0, 1, 2}, dst[3] = {1, 2, 2};
    struct rp_graph g = {3, 3, stop, src, dst, w};
    struct rp_rank_opts o = {0.0, 1e-12, 500, 0};
    uint32_t it;
    double res;
    CHECK(rp_rank_solve(&g, &o, pi, &it, &res) == 0);
    CHECK(it == 500);
    CHECK(res > 1e-12);
    CHECK(pi[2] > pi[0] && pi[2] > pi[1]); /* the mass piles up in the trap */
}

/* ---- (c) direct recursion ------------------------------------------------- */

/*
 * ROOT -> f (ROOT's only callee), f: stop weight s, self-call weight w.
 * Q: ROOT -> f with 1; f -> f with w/(s+w), f -> ROOT with p = s/(s+w).
 * With the restart at ROOT, P = (1-alpha) Q + alpha 1 e_ROOT^T, so
 *   P_root,f = (1-alpha) * 1
 *   P_f,root = (1-alpha) * p + alpha.
 * A two-state chain balances the flow across the cut:
 *   pi_root P_root,f = pi_f P_f,root, hence
 *   involvement(f) = pi_f / pi_root = (1 - alpha) / ((1-alpha) p + alpha),
 * which tends to 1/p = (s+w)/s as alpha -> 0: the expected number of frames
 * of f per descent (a geometric number of self calls with continuation
 * probability w/(s+w)).  With time weights s = excl and s + w = dur_sum, so
 * that is dur_sum/excl: fib's mean recursion depth.  With plain callee shares
 * f would call itself with probability 1 forever.
 */
static void test_recursion(void)
{
    static const struct {
        double s, w, alpha;
    } cases[] = {{1, 99, 0.01}, {1, 99, 1e-9}, {3, 7, 0.2}, {1, 1e6, 0.01}};
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        double s = cases[k].s, w = cases[k].w, alpha = cases[k].alpha;
        double stop[2] = {0, s}, wt[2] = {5, w};
        uint32_t src[2] = {0, 1}, dst[2] = {1, 1};
        struct rp_graph g = {2, 2, stop, src, dst, wt};
        struct rp_rank_opts o = {alpha, 1e-14, 10000, 0};
        double pi[2], p = s / (s + w);
        uint32_t it;
        double res;
        CHECK(rp_rank_solve(&g, &o, pi, &it, &res) == 0);
        CHECK(it < 100); /* the self loop must not slow it down */
        double want = (1 - alpha) / ((1 - alpha) * p + alpha);
        CHECK_NEAR(pi[1] / pi[0], want, 1e-12 * want);
    }

    /*
     * Through rp_rank_profile: fib with all work in fib, excl = 1000 ticks,
     * its outermost call from ROOT lasts 1000, recursive activations sum to
     * 4000 (so dur_sum = 5000, mean depth 5).  Time weights: stop = 1000,
     * self edge 4000, so involvement -> (1000 + 4000) / 1000 = 5 > 1.
     */
    struct rp_node nodes[2];
    struct rp_edge edges[2];
    memset(nodes, 0, sizeof nodes);
    memset(edges, 0, sizeof edges);
    nodes[1].excl = 1000;
    nodes[1].incl = 1000;
    nodes[1].calls = 40;
    struct rp_node_x *x1 = rp_node_xw(&nodes[1]); /* (dur_sum apart: it recursed) */
    CHECK(x1 != NULL);
    if (!x1)
        return;
    x1->dur_sum = 5000;
    edges[0] = (struct rp_edge){.caller = 0, .callee = 1, .calls = 1, .incl = 1000};
    edges[1] = (struct rp_edge){.caller = 1, .callee = 1, .calls = 39, .incl = 4000};
    struct rp_profile prof = {0};
    prof.nodes = nodes;
    prof.n_nodes = 2;
    prof.edges = edges;
    prof.n_edges = 2;
    struct rp_rank_opts o = {1e-9, 1e-14, 10000, 0};
    CHECK(rp_rank_profile(&prof, &o) == 0);
    CHECK_NEAR(rp_node_involvement(&prof, &nodes[1]), 5.0, 1e-7);
    CHECK_NEAR(rp_node_standing(&prof, &nodes[1]), 1.0, 1e-15);
    CHECK(nodes[1].rank == 1);
    free(nodes[1].x);
}

/* ---- (d) rp_rank_profile ---------------------------------------------------- */

/* Builds the docs/ranking.md example as a profile into nodes[7], edges[6]. */
static void example_profile(struct rp_profile *p, struct rp_node *nodes, struct rp_edge *edges)
{
    static const uint64_t calls[7] = {0, 1, 1, 10, 5, 2, 1};
    static const uint64_t ecalls[6] = {1, 1, 1, 10, 5, 2};
    memset(p, 0, sizeof *p);
    memset(nodes, 0, 7 * sizeof *nodes);
    memset(edges, 0, 6 * sizeof *edges);
    for (int i = 0; i < 7; i++) {
        nodes[i].id = (uint32_t)i;
        nodes[i].excl = (uint64_t)ex_stop[i];
        nodes[i].calls = calls[i];
        nodes[i].incl = (uint64_t)(ex_inv[i] * 1000 + 0.5); /* (dur_sum: incl) */
    }
    nodes[0].excl = nodes[0].incl = 0;
    for (int e = 0; e < 6; e++) {
        edges[e].caller = ex_src[e];
        edges[e].callee = ex_dst[e];
        edges[e].incl = (uint64_t)ex_w[e];
        edges[e].calls = ecalls[e];
    }
    p->nodes = nodes;
    p->n_nodes = 7;
    p->edges = edges;
    p->n_edges = 6;
    p->total = 1000;
    p->ns_per_tick = 1.0;
}

static void test_profile(void)
{
    struct rp_profile p;
    struct rp_node nodes[7];
    struct rp_edge edges[6];
    struct rp_rank_opts o = {1e-9, 1e-14, 10000, 0};
    double sum;

    /* time weights: involvement = incl/total; standing = involvement over
     * the sum of all non-ROOT involvements, 1 + .9 + .45 + .3 + .141 + .08
     * = 2.871 */
    example_profile(&p, nodes, edges);
    CHECK(rp_rank_profile(&p, &o) == 0);
    sum = 0;
    for (int i = 1; i < 7; i++) {
        CHECK_NEAR(rp_node_involvement(&p, &nodes[i]), ex_inv[i], 1e-7);
        CHECK_NEAR(rp_node_standing(&p, &nodes[i]), ex_inv[i] / 2.871, 1e-7);
        sum += rp_node_standing(&p, &nodes[i]);
    }
    CHECK_NEAR(sum, 1.0, 1e-12);
    CHECK(nodes[0].rank == 0 && rp_node_standing(&p, &nodes[0]) == 0.0);
    /* main 1, dispatch .9, a .45, b .3, c .141, init .08 */
    CHECK(nodes[1].rank == 1 && nodes[2].rank == 2 && nodes[3].rank == 3);
    CHECK(nodes[4].rank == 4 && nodes[5].rank == 5 && nodes[6].rank == 6);
    CHECK(p.rank.alpha == 1e-9 && p.rank.iterations >= 1 && p.rank.residual < 1e-14);

    /*
     * call weights: T_main = 1 (own calls) + 1 (init) + 1 (dispatch) = 3, so
     * main -> init 1/3, main -> dispatch 1/3; T_dispatch = 1 + 10 + 5 + 2 =
     * 18.  Involvement: main 1, init 1/3, dispatch 1/3, a 1/3 * 10/18 = 5/27,
     * b 1/3 * 5/18 = 5/54, c 1/3 * 2/18 = 1/27.  init and dispatch tie: the
     * lower index (dispatch, 2) ranks first.
     */
    static const double cinv[7] = {1, 1, 1.0 / 3, 5.0 / 27, 5.0 / 54, 1.0 / 27, 1.0 / 3};
    example_profile(&p, nodes, edges);
    p.rank.weight = RP_WEIGHT_CALLS;
    CHECK(rp_rank_profile(&p, &o) == 0);
    sum = 0;
    for (int i = 1; i < 7; i++) {
        CHECK_NEAR(rp_node_involvement(&p, &nodes[i]), cinv[i], 1e-7);
        sum += rp_node_standing(&p, &nodes[i]);
    }
    CHECK_NEAR(sum, 1.0, 1e-12);
    CHECK(nodes[1].rank == 1 && nodes[2].rank == 2 && nodes[6].rank == 3);
    CHECK(nodes[3].rank == 4 && nodes[4].rank == 5 && nodes[5].rank == 6);

    /*
     * call weights with inclusive calls (a replayed trace: incl_calls_known):
     * an edge weighs the activations under its calls, themselves included:
     * root -> main 20 (1 + init 1 + dispatch 1 + a 10 + b 5 + c 2), main ->
     * init 1, main -> dispatch 18, dispatch -> a 10, b 5, c 2; a node's stop
     * weight is its calls.  On this tree involvement is the share of all 20
     * activations made under (and by) a node: main 1, dispatch 18/20 = 0.9,
     * a 0.5, b 0.25, c 0.1, init 0.05 (docs/ranking.md's worked example);
     * and the same as a dense solve of the chain built from those weights.
     */
    double dense7[7];
    static const double iinv[7] = {1, 1, 0.9, 0.5, 0.25, 0.1, 0.05};
    example_profile(&p, nodes, edges);
    p.rank.weight = RP_WEIGHT_CALLS;
    p.incl_calls_known = 1;
    double cstop[7], cw[6];
    uint32_t csrc[6], cdst[6];
    for (uint32_t e = 0; e < p.n_edges; e++) {
        struct rp_edge *x = &p.edges[e];
        uint64_t below = x->callee == 1 ? 20 : x->callee == 2 ? 18 : x->calls;
        x->incl_calls = below;
        csrc[e] = x->caller;
        cdst[e] = x->callee;
        cw[e] = (double)below;
    }
    for (int i = 0; i < 7; i++)
        cstop[i] = (double)nodes[i].calls;
    CHECK(rp_rank_profile(&p, &o) == 0);
    for (int i = 1; i < 7; i++)
        CHECK_NEAR(rp_node_involvement(&p, &nodes[i]), iinv[i], 1e-7);
    CHECK(p.n_edges == 6 && rp_rank_profile(&p, NULL) == 0);
    CHECK(dense_pi(7, cstop, 6, csrc, cdst, cw, 0.01, dense7) == 0);
    for (int i = 1; i < 7; i++)
        CHECK_NEAR(rp_node_involvement(&p, &nodes[i]), dense7[i] / dense7[0], 1e-9);

    /* default options: alpha 0.01, against the dense solve */
    double dense[7];
    example_profile(&p, nodes, edges);
    CHECK(rp_rank_profile(&p, NULL) == 0);
    CHECK(p.rank.alpha == 0.01 && p.rank.residual < 1e-12);
    CHECK(dense_pi(7, ex_stop, 6, ex_src, ex_dst, ex_w, 0.01, dense) == 0);
    for (int i = 1; i < 7; i++) {
        CHECK_NEAR(rp_node_involvement(&p, &nodes[i]), dense[i] / dense[0], 1e-9);
        CHECK_NEAR(rp_node_standing(&p, &nodes[i]), dense[i] / (1 - dense[0]), 1e-9);
    }
    printf("example at alpha 0.01:");
    for (int i = 1; i < 7; i++)
        printf(" %.4f/%.4f", rp_node_involvement(&p, &nodes[i]), rp_node_standing(&p, &nodes[i]));
    printf(" (%u sweeps)\n", p.rank.iterations);

    /* malformed input */
    example_profile(&p, nodes, edges);
    edges[3].callee = 7;
    CHECK(rp_rank_profile(&p, NULL) == RP_EINVAL);
    CHECK(rp_rank_profile(NULL, NULL) == RP_EINVAL);
    double pi[7];
    struct rp_graph g = {7, 6, ex_stop, ex_src, ex_dst, ex_w};
    struct rp_rank_opts bad = {1.0, 1e-12, 100, 0};
    CHECK(rp_rank_solve(&g, &bad, pi, NULL, NULL) == RP_EINVAL);
    double negw[6] = {1000, 80, -1, 450, 300, 141};
    struct rp_graph gn = {7, 6, ex_stop, ex_src, ex_dst, negw};
    CHECK(rp_rank_solve(&gn, NULL, pi, NULL, NULL) == RP_EINVAL);
    negw[2] = NAN;
    CHECK(rp_rank_solve(&gn, NULL, pi, NULL, NULL) == RP_EINVAL);
    struct rp_graph g0 = {0, 0, ex_stop, ex_src, ex_dst, ex_w};
    CHECK(rp_rank_solve(&g0, NULL, pi, NULL, NULL) == RP_EINVAL);
    struct rp_graph g1 = {1, 0, ex_stop, NULL, NULL, NULL};
    CHECK(rp_rank_solve(&g1, NULL, pi, NULL, NULL) == 0 && pi[0] == 1.0);
    /* a row total that overflows: main's two calls of 1e308 each */
    double huge[6] = {1000, 1e308, 1e308, 450, 300, 141};
    struct rp_graph gh = {7, 6, ex_stop, ex_src, ex_dst, huge};
    CHECK(rp_rank_solve(&gh, NULL, pi, NULL, NULL) == RP_EINVAL);
    /* an edge from a node that does not exist, and the largest n */
    uint32_t badsrc[6] = {0, 1, 1, 2, 2, 7};
    struct rp_graph gs = {7, 6, ex_stop, badsrc, ex_dst, ex_w};
    CHECK(rp_rank_solve(&gs, NULL, pi, NULL, NULL) == RP_EINVAL);
    struct rp_graph gbig = {UINT32_MAX, 0, ex_stop, NULL, NULL, NULL};
    CHECK(rp_rank_solve(&gbig, NULL, pi, NULL, NULL) == RP_EINVAL);
    gbig.n = (1u << 31) + 1; /* over the limit rank.h states */
    CHECK(rp_rank_solve(&gbig, NULL, pi, NULL, NULL) == RP_EINVAL);
    /* the same two faults with the edges out of caller order (the two-pass
     * build): the overflow, and the bad node after the first step back */
    uint32_t rsrc[6] = {2, 2, 2, 1, 1, 0}, rdst[6] = {5, 4, 3, 2, 6, 1};
    double rhuge[6] = {141, 300, 450, 1e308, 1e308, 1000};
    struct rp_graph grh = {7, 6, ex_stop, rsrc, rdst, rhuge};
    CHECK(rp_rank_solve(&grh, NULL, pi, NULL, NULL) == RP_EINVAL);
    rsrc[5] = 7;
    double rw[6] = {141, 300, 450, 900, 80, 1000};
    struct rp_graph grs = {7, 6, ex_stop, rsrc, rdst, rw};
    CHECK(rp_rank_solve(&grs, NULL, pi, NULL, NULL) == RP_EINVAL);
    rsrc[5] = 0; /* and right again: the example's answer */
    double want[7];
    CHECK(rp_rank_solve(&g, NULL, want, NULL, NULL) == 0);
    CHECK(rp_rank_solve(&grs, NULL, pi, NULL, NULL) == 0);
    for (int i = 0; i < 7; i++)
        CHECK_NEAR(pi[i], want[i], 1e-15);
}

/*
 * rp_rank_profile reads the profile's nodes and edges in place (integer
 * weights, records of many fields) and sorts with its own radix sort: on
 * random profiles, with instants and counters among the nodes and isolated
 * nodes (equal pi: ties), both weight kinds, it must give the pi of
 * rp_rank_solve on the same weights bit for bit (involvement, standing) and
 * the ranks of qsort by (span first, pi descending, index ascending).
 */
static const double *ref_pi;
static const struct rp_node *ref_nodes;

static int cmp_ref(const void *a, const void *b)
{
    uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    int si = ref_nodes[i].kind != RP_KIND_INSTANT && ref_nodes[i].kind != RP_KIND_COUNTER;
    int sj = ref_nodes[j].kind != RP_KIND_INSTANT && ref_nodes[j].kind != RP_KIND_COUNTER;
    if (si != sj)
        return sj - si;
    if (si && ref_pi[i] != ref_pi[j])
        return ref_pi[i] > ref_pi[j] ? -1 : 1;
    return i < j ? -1 : i > j;
}

static void test_profile_vs_solve(int whole)
{
    int ties = 0, nonspans = 0, swept = 0;
    for (int gi = 0; gi < 200; gi++) {
        uint32_t n = 2 + (uint32_t)(next_u64() % 300), m = (uint32_t)(next_u64() % (4 * n));
        struct rp_node *nodes = calloc(n, sizeof *nodes);
        struct rp_edge *edges = calloc(m + 1, sizeof *edges);
        double *stop = calloc(n, sizeof *stop), *w = calloc(m + 1, sizeof *w);
        double *pi = calloc(n, sizeof *pi);
        uint32_t *src = calloc(m + 1, sizeof *src), *dst = calloc(m + 1, sizeof *dst);
        uint32_t *ord = calloc(n, sizeof *ord);
        int calls = gi % 2;
        for (uint32_t i = 1; i < n; i++) {
            uint64_t r = next_u64() % 20;
            nodes[i].kind = r == 0 ? RP_KIND_INSTANT : r == 1 ? RP_KIND_COUNTER : RP_KIND_FUNC;
            nodes[i].excl = next_u64() % 4 ? next_u64() % 100000 : 0;
            nodes[i].calls = next_u64() % 1000;
            stop[i] = (double)(calls ? nodes[i].calls : nodes[i].excl);
        }
        uint32_t live = 1 + n / 2; /* nodes >= live have no edges: equal pi */
        for (uint32_t e = 0; e < m; e++) {
            uint32_t a = (uint32_t)(next_u64() % live), b = (uint32_t)(next_u64() % live);
            uint32_t up = a + 1 + (uint32_t)(next_u64() % 8);
            if (next_u64() % (whole ? 20 : 3) && up < live) /* mostly to a higher id */
                b = up;
            edges[e] = (struct rp_edge){.caller = a,
                                        .callee = b,
                                        .calls = next_u64() % 50,
                                        .incl = next_u64() % 10 ? next_u64() % 1000000 : 0};
            src[e] = a;
            dst[e] = b;
            w[e] = (double)(calls ? edges[e].calls : edges[e].incl);
        }
        struct rp_profile p = {0};
        p.nodes = nodes;
        p.n_nodes = n;
        p.edges = edges;
        p.n_edges = m;
        p.rank.weight = calls ? RP_WEIGHT_CALLS : RP_WEIGHT_TIME;
        /* every other profile ranked with two threads, the solve with one:
         * the same bits */
        struct rp_rank_opts o = {gi % 3 ? 0.01 : 0.2, 1e-13, 100000, gi % 2 ? 2 : 1};
        struct rp_rank_opts o1 = {o.alpha, o.tol, o.max_iter, 1};
        struct rp_graph g = {n, m, stop, src, dst, w};
        uint32_t it;
        double res;
        CHECK(rp_rank_profile(&p, &o) == 0);
        swept += rp_rank_whole_sweeps > 0;
        CHECK(rp_rank_solve(&g, &o1, pi, &it, &res) == 0);
        CHECK(p.rank.iterations == it && p.rank.residual == res);
        double rest = 0;
        for (uint32_t i = 1; i < n; i++)
            if (nodes[i].kind != RP_KIND_INSTANT && nodes[i].kind != RP_KIND_COUNTER)
                rest += pi[i];
        for (uint32_t i = 1; i < n; i++) {
            int span = nodes[i].kind != RP_KIND_INSTANT && nodes[i].kind != RP_KIND_COUNTER;
            CHECK(rp_node_involvement(&p, &nodes[i]) == (span ? pi[i] / pi[0] : 0.0));
            /* (none reached from ROOT: every standing 0) */
            CHECK(rp_node_standing(&p, &nodes[i]) == (span && rest > 0.0 ? pi[i] / rest : 0.0));
            nonspans += !span;
        }
        for (uint32_t i = 0; i + 1 < n; i++)
            ord[i] = i + 1;
        ref_pi = pi;
        ref_nodes = nodes;
        qsort(ord, n - 1, sizeof *ord, cmp_ref);
        int bad = 0;
        for (uint32_t k = 0; k + 1 < n; k++) {
            bad += nodes[ord[k]].rank != k + 1;
            ties += k > 0 && pi[ord[k]] == pi[ord[k - 1]];
        }
        CHECK(bad == 0 && nodes[0].rank == 0);
        free(nodes);
        free(edges);
        free(stop);
        free(w);
        free(pi);
        free(src);
        free(dst);
        free(ord);
    }
    CHECK(ties > 100 && nonspans > 100); /* the cases above did occur */
    CHECK(whole ? swept >= 50 : swept == 0);
    printf("profiles vs rp_rank_solve%s: 200, %d ties, %d instants/counters, %d swept whole\n",
           whole ? " (whole graph first)" : "", ties, nonspans, swept);
}

/*
 * The ranks sort items by a prefix of pi's bits first (all but the b bits
 * the index takes: 12 for 3000 leaves) and then each run of equal prefixes
 * by the full pi: a star whose leaves' weights differ by parts in 2^45
 * (runs of about 32, in no particular order: qsort), by groups of four far
 * apart that differ by parts in 2^44 (short runs: insertion; far enough
 * from rounding that involvement, pi / pi_ROOT, keeps pi's order for the
 * reference sort), and equal weights
 * (runs already in order); the ranks must be those of qsort by (pi
 * descending, index).
 */
static void test_rank_runs(void)
{
    enum { LEAVES = 3000 };
    uint32_t n = LEAVES + 1, m = LEAVES;
    struct rp_node *nodes = calloc(n, sizeof *nodes);
    struct rp_edge *edges = calloc(m, sizeof *edges);
    uint32_t *ord = calloc(n, sizeof *ord);
    double *pi = calloc(n, sizeof *pi);
    for (uint32_t i = 1; i < n; i++) {
        uint64_t r = next_u64() % 1000, w;
        if (i <= 1000) /* long runs: 2^-45 apart, all within 2^-35 of 2^50 */
            w = ((uint64_t)1 << 50) + (r << 5);
        else if (i <= 2000) /* runs of about 4, 2^-44 apart, within 2^-42 */
            w = ((uint64_t)(i / 4) << 44) + ((r % 4) << 8);
        else /* equal */
            w = (uint64_t)1 << 20;
        nodes[i].kind = RP_KIND_FUNC;
        nodes[i].excl = 1000;
        edges[i - 1] = (struct rp_edge){.caller = 0, .callee = i, .calls = 1, .incl = w};
    }
    struct rp_profile p = {0};
    p.nodes = nodes;
    p.n_nodes = n;
    p.edges = edges;
    p.n_edges = m;
    CHECK(rp_rank_profile(&p, NULL) == 0);
    for (uint32_t i = 1; i < n; i++)
        pi[i] = rp_node_involvement(&p, &nodes[i]); /* pi_i / pi_ROOT: the same order */
    for (uint32_t i = 0; i + 1 < n; i++)
        ord[i] = i + 1;
    ref_pi = pi;
    ref_nodes = nodes;
    qsort(ord, n - 1, sizeof *ord, cmp_ref);
    int bad = 0, inrun = 0;
    for (uint32_t k = 0; k + 1 < n; k++) {
        bad += nodes[ord[k]].rank != k + 1;
        uint64_t x, y;
        memcpy(&x, &pi[ord[k]], sizeof x);
        memcpy(&y, &pi[ord[k > 0 ? k - 1 : k]], sizeof y);
        inrun += k > 0 && x >> 12 == y >> 12 && x != y; /* a run with distinct keys */
    }
    CHECK(bad == 0);
    CHECK(inrun > 1000); /* the runs above did form (counted on involvement's bits) */
    printf("ranks in runs of equal prefixes: %d neighbours share all but 12 bits\n", inrun);
    free(nodes);
    free(edges);
    free(ord);
    free(pi);
}

/*
 * Larger graphs with one big cycle, against the dense solve: shaped like a
 * call graph (calls mostly to a higher id, 2 %% back to any lower one: the
 * id order of the cycle leaves less weight backwards than the search's
 * reverse postorder) and with uniformly random callees (the other way
 * round), so that both orders are solved and the lighter one must be
 * chosen; and a second run, with two threads, must give the same bits.
 */
static void test_big_cycles(void)
{
    enum { N = 400, M = 4000 };
    static double stop[N], w[M], pi[N], pi2[N], dense[N];
    static uint32_t src[M], dst[M];
    for (int shape = 0; shape < 2; shape++) {
        for (uint32_t i = 1; i < N; i++)
            stop[i] = 1 + next_unit() * 100;
        for (uint32_t e = 0; e < M; e++) {
            uint32_t a = e < 4 ? 0 : 1 + (uint32_t)(next_u64() % (N - 1)), b;
            if (shape == 1 || e < 4)
                b = 1 + (uint32_t)(next_u64() % (N - 1));
            else if (next_u64() % 50 == 0 || a + 1 >= N)
                b = 1 + (uint32_t)(next_u64() % a);
            else /* deeper, mostly close by */
                b = a + 1 + (uint32_t)((N - 1 - a) * pow(next_unit(), 6.0));
            src[e] = a;
            dst[e] = b;
            w[e] = next_unit() * 1000;
        }
        struct rp_graph g = {N, M, stop, src, dst, w};
        struct rp_rank_opts o = {0.01, 1e-13, 100000, 0};
        uint32_t it, it2;
        double res, res2, worst = 0;
        struct rp_rank_opts o2 = {0.01, 1e-13, 100000, 2};
        CHECK(rp_rank_solve(&g, &o, pi, &it, &res) == 0);
        CHECK(rp_rank_solve(&g, &o2, pi2, &it2, &res2) == 0);
        CHECK(dense_pi(N, stop, M, src, dst, w, 0.01, dense) == 0);
        CHECK(res < 1e-13 && it > 1 && it == it2 && res == res2);
        CHECK(memcmp(pi, pi2, sizeof pi) == 0);
        /* the lighter order was taken: 80 sweeps in id order against 395 in
         * reverse postorder for the first shape, 567 against 636 in id order
         * for the second (measured with the choice forced each way) */
        CHECK(it <= (shape == 0 ? 100u : 600u));
        for (uint32_t i = 0; i < N; i++)
            worst = fmax(worst, fabs(pi[i] - dense[i]));
        CHECK(worst <= 1e-10);
        printf("big cycle, %s: %u sweeps, worst |pi - dense| %.3g\n",
               shape ? "uniform" : "call-graph shaped", it, worst);
    }
}

/*
 * Two threads: the adjacency and the layout are built in halves side by side
 * (rank.c), which must give exactly what one thread gives.  Random graphs of
 * 2 to 3000 nodes with cycles, self loops and edges into ROOT, their edges
 * grouped by caller (the one-pass build, cut in halves) or not (the
 * counting sort), ranked with threads 1 and 2: the same return code, bits
 * of pi, sweeps and residual.  Then inputs that must fail: an edge out of
 * range or a negative weight in either half, a caller out of order at the
 * cut or inside a half (then the counting sort takes over and succeeds).
 */
static void test_threads(void)
{
    enum { NG = 60, NMAX = 3000 };
    static double stop[NMAX], w[10 * NMAX], pi1[NMAX], pi2[NMAX];
    static uint32_t src[10 * NMAX], dst[10 * NMAX];
    uint32_t compared = 0;

    for (int gi = 0; gi < NG; gi++) {
        uint32_t n =
            gi < 20 ? 2 + (uint32_t)(next_u64() % 30) : 100 + (uint32_t)(next_u64() % (NMAX - 99));
        uint32_t m = (uint32_t)(next_u64() % (10 * n)), e = 0;
        for (uint32_t i = 1; i < n; i++)
            stop[i] = next_u64() % 4 ? next_unit() * 100 : 0.0;
        /* grouped by caller: each caller's edges together, callers rising */
        for (uint32_t a = 0; a < n && e < m; a++) {
            uint32_t d = a == n - 1 ? m - e : (uint32_t)(next_u64() % (2 * (m - e) / (n - a) + 1));
            for (uint32_t k = 0; k < d && e < m; k++, e++) {
                uint64_t r = next_u64() % 40;
                src[e] = a;
                if (r == 0)
                    dst[e] = a;
                else if (r == 1)
                    dst[e] = 0;
                else if (r < 4 && a > 1) /* back up: cycles */
                    dst[e] = 1 + (uint32_t)(next_u64() % a);
                else if (gi % 2 && a + 1 < n) /* down */
                    dst[e] = a + 1 + (uint32_t)(next_u64() % (n - a - 1));
                else
                    dst[e] = (uint32_t)(next_u64() % n);
                w[e] = next_u64() % 10 ? next_unit() * 1000 : 0.0;
            }
        }
        struct rp_graph g = {n, e, stop, src, dst, w};
        for (int shuffled = 0; shuffled < 2; shuffled++) {
            if (shuffled) /* the counting sort's path */
                for (uint32_t k = e; k > 1; k--) {
                    uint32_t j = (uint32_t)(next_u64() % k), ts = src[k - 1], td = dst[k - 1];
                    double tw = w[k - 1];
                    src[k - 1] = src[j], dst[k - 1] = dst[j], w[k - 1] = w[j];
                    src[j] = ts, dst[j] = td, w[j] = tw;
                }
            struct rp_rank_opts o1 = {0.01, 1e-13, 100000, 1}, o2 = {0.01, 1e-13, 100000, 2};
            uint32_t it1 = 0, it2 = 1;
            double res1 = 0, res2 = 1;
            int rc1 = rp_rank_solve(&g, &o1, pi1, &it1, &res1);
            int rc2 = rp_rank_solve(&g, &o2, pi2, &it2, &res2);
            CHECK(rc1 == 0 && rc2 == 0);
            CHECK(it1 == it2 && res1 == res2);
            CHECK(memcmp(pi1, pi2, n * sizeof *pi1) == 0);
            compared += n;
        }
    }
    printf("threads 1 and 2: %u values of pi compared over %d graphs\n", compared, 2 * NG);

    /* bad input in either half, and order broken at the cut; then bad stop
     * weights (each row's is read as the row starts): in either half, on
     * the last row, on ROOT, and with the edges out of order */
    enum { N = 1000, M = 8000 };
    for (int bad = 0; bad < 11; bad++) {
        for (uint32_t i = 0; i < N; i++)
            stop[i] = 1.0;
        for (uint32_t e = 0; e < M; e++) {
            src[e] = e * N / M; /* grouped, rising */
            dst[e] = (uint32_t)(next_u64() % N);
            w[e] = 1.0 + e % 7;
        }
        uint32_t at = bad % 2 ? M / 4 : 3 * M / 4;
        int expect = RP_EINVAL;
        if (bad < 2) {
            dst[at] = N; /* out of range */
        } else if (bad < 4) {
            w[at] = -1.0;
        } else if (bad >= 6) {
            static const uint32_t row[5] = {N / 4, 3 * N / 4, N - 1, 0, N / 2};
            stop[row[bad - 6]] = bad % 2 ? NAN : bad == 8 ? INFINITY : -1.0;
            if (bad == 10) { /* out of order too: the two-pass build */
                src[M / 3] = N - 1;
            }
        } else { /* out of order: fine, the counting sort takes it */
            uint32_t t = src[at];
            src[at] = src[at + M / 8 < M ? at + M / 8 : at];
            src[at + M / 8 < M ? at + M / 8 : at] = t;
            if (bad == 5) { /* and at the cut: the second half starts lower */
                src[M / 2] = src[M / 2 - 1] - 1;
            }
            expect = 0;
        }
        struct rp_graph g = {N, M, stop, src, dst, w};
        struct rp_rank_opts o1 = {0.01, 1e-13, 100000, 1}, o2 = {0.01, 1e-13, 100000, 2};
        int rc1 = rp_rank_solve(&g, &o1, pi1, NULL, NULL),
            rc2 = rp_rank_solve(&g, &o2, pi2, NULL, NULL);
        CHECK(rc1 == expect);
        CHECK(rc2 == expect);
        if (expect == 0)
            CHECK(memcmp(pi1, pi2, N * sizeof *pi1) == 0);
    }
}

/*
 * The whole graph swept in id order before any component search (rank.c,
 * "The whole graph in id order"), made to run on small graphs by lowering
 * rp_rank_whole_min.  Profile-like random graphs (most edges to a higher
 * id, a few back, self loops, edges into ROOT): against the dense solve,
 * the component solver, and themselves with two threads (bit for bit); it
 * must have ranked most of them, and every one without an edge to a lower
 * id exactly in one sweep.  Then the graphs it must give up on, after which
 * the component solver's answer must be exactly what it would have been
 * alone: every edge to a lower id (a chain read backwards), a cycle whose
 * change falls too slowly, too few sweeps allowed.
 */
static int whole_vs_components(const struct rp_graph *g, const struct rp_rank_opts *o, double *pi,
                               uint32_t *it, double *res)
{
    double *pc = calloc(g->n, sizeof *pc);
    uint32_t itc;
    double resc;
    rp_rank_whole_min = 1;
    int rc = rp_rank_solve(g, o, pi, it, res);
    uint32_t sweeps = rp_rank_whole_sweeps;
    rp_rank_whole_min = UINT32_MAX;
    CHECK(rp_rank_solve(g, o, pc, &itc, &resc) == rc);
    CHECK(rp_rank_whole_sweeps == 0);
    if (sweeps == 0) { /* gave up: the component solver's bits */
        CHECK(memcmp(pi, pc, g->n * sizeof *pi) == 0);
        CHECK(*it == itc && *res == resc);
    } else {
        for (uint32_t i = 0; i < g->n; i++)
            CHECK(fabs(pi[i] - pc[i]) <= 1e-10);
    }
    free(pc);
    return (int)sweeps;
}

static void test_whole(void)
{
    enum { NG = 300 };
    uint32_t used = 0, acyclic = 0, most = 0;
    uint32_t span0 = rp_rank_whole_span;
    rp_rank_whole_span = 0; /* every edge back is long: none is far back here */
    double worst = 0;
    for (int gi = 0; gi < NG; gi++) {
        uint32_t n = 3 + (uint32_t)(next_u64() % 58); /* 3..60 */
        uint32_t m = n + (uint32_t)(next_u64() % (3 * n)), nback = 0;
        double *stop = calloc(n, sizeof *stop), *w = calloc(m, sizeof *w);
        uint32_t *src = calloc(m, sizeof *src), *dst = calloc(m, sizeof *dst);
        double *pi = calloc(n, sizeof *pi), *p2 = calloc(n, sizeof *p2),
               *dense = calloc(n, sizeof *dense);
        int cyclic = gi % 3 != 0;
        for (uint32_t i = 1; i < n; i++)
            stop[i] = next_u64() % 5 == 0 ? 0.0 : next_unit() * 1000;
        for (uint32_t e = 0; e < m; e++) { /* grouped by caller, as a profile's */
            src[e] = (uint32_t)((uint64_t)e * (n - 1) / m);
            uint64_t kind = next_u64() % 100;
            if (kind < 3)
                dst[e] = src[e];
            else if (kind < 5)
                dst[e] = 0;
            else if (cyclic && kind < 9 && src[e] > 1)
                dst[e] = 1 + (uint32_t)(next_u64() % (src[e] - 1));
            else
                dst[e] = src[e] + 1 + (uint32_t)(next_u64() % (n - 1 - src[e]));
            nback += dst[e] != 0 && dst[e] < src[e];
            w[e] = next_u64() % 10 == 0 ? 0.0 : next_unit() * 1e4;
        }
        static const double alphas[] = {0.5, 0.15, 0.05, 0.01};
        struct rp_rank_opts o = {alphas[gi % 4], 1e-13, 1000000, 1};
        struct rp_graph g = {n, m, stop, src, dst, w};
        uint32_t it, it2;
        double res, res2, sum = 0;
        int sweeps = whole_vs_components(&g, &o, pi, &it, &res);
        CHECK(dense_pi(n, stop, m, src, dst, w, o.alpha, dense) == 0);
        for (uint32_t i = 0; i < n; i++) {
            double d = fabs(pi[i] - dense[i]);
            worst = d > worst ? d : worst;
            CHECK(d <= 1e-10);
            sum += pi[i];
        }
        CHECK_NEAR(sum, 1.0, 1e-12);
        used += sweeps > 0;
        most = (uint32_t)sweeps > most ? (uint32_t)sweeps : most;
        if (nback == 0) { /* ids in topological order: one exact sweep */
            acyclic++;
            CHECK(sweeps == 1 && it == 1 && res == 0.0);
        } else if (sweeps > 0) {
            CHECK(it == (uint32_t)sweeps && res < 1e-13);
        }
        o.threads = 2;
        rp_rank_whole_min = 1;
        CHECK(rp_rank_solve(&g, &o, p2, &it2, &res2) == 0);
        CHECK(memcmp(pi, p2, n * sizeof *pi) == 0 && it2 == it && res2 == res);
        CHECK(rp_rank_whole_sweeps == (uint32_t)sweeps);
        free(stop);
        free(w);
        free(src);
        free(dst);
        free(pi);
        free(p2);
        free(dense);
    }
    printf("whole graph in id order: ranked %u of %d graphs (%u acyclic in one sweep), most "
           "sweeps %u, worst |pi - dense| = %.3g\n",
           used, NG, acyclic, most, worst);
    CHECK(used >= NG / 2 && acyclic >= NG / 6);

    /* a chain read backwards: every edge to a lower id, never tried */
    {
        enum { N = 40 };
        double stop[N], w[N], pi[N], dense[N];
        uint32_t src[N], dst[N], it;
        double res;
        for (uint32_t i = 0; i < N; i++) {
            stop[i] = i ? 10.0 : 0.0;
            src[i] = i ? i : 0;
            dst[i] = i ? i - 1 : N - 1;
            w[i] = 90.0;
        }
        /* edge i: i -> i-1 (i >= 2), edge 0: ROOT -> N-1; edge 1 (1 -> 0) goes to ROOT */
        struct rp_graph g = {N, N, stop, src, dst, w};
        struct rp_rank_opts o = {0.01, 1e-13, 1000000, 0};
        CHECK(whole_vs_components(&g, &o, pi, &it, &res) == 0);
        CHECK(dense_pi(N, stop, N, src, dst, w, 0.01, dense) == 0);
        for (uint32_t i = 0; i < N; i++)
            CHECK(fabs(pi[i] - dense[i]) <= 1e-10);
    }
    /* a ring of 30 nodes closed by one edge back (1 of 30 edges, under the
     * 10 % that would stop it before it starts) that keeps almost all its
     * flow (the change only halves in the second sweep: 0.97, 0.49, so it
     * is given up then); and a ring it could solve, but allowed one sweep
     * only */
    for (int k = 0; k < 2; k++) {
        enum { N = 31 };
        double stop[N], w[N], pi[N], dense[N];
        uint32_t src[N], dst[N], it;
        double res;
        for (uint32_t i = 0; i < N; i++) {
            stop[i] = i ? (k ? 100.0 : 0.01) : 0.0;
            src[i] = i;
            dst[i] = i + 1 < N ? i + 1 : 1;
            w[i] = 100.0;
        }
        struct rp_graph g = {N, N, stop, src, dst, w};
        struct rp_rank_opts o = {0.001, 1e-13, k ? 1 : 1000000, 0};
        CHECK(whole_vs_components(&g, &o, pi, &it, &res) == 0);
        if (k == 0) {
            CHECK(dense_pi(N, stop, N, src, dst, w, 0.001, dense) == 0);
            for (uint32_t i = 0; i < N; i++)
                CHECK(fabs(pi[i] - dense[i]) <= 1e-10);
        } else {
            CHECK(it == 1 && res > 1e-13); /* the cap, said so */
        }
    }
    /* edges back at most two ids up are short: a graph whose edges back are
     * mostly short is left to the component solver from the start (the
     * ring above with a short edge back, and with a long one) */
    rp_rank_whole_span = 2;
    for (uint32_t span = 2; span <= 3; span++) {
        enum { N = 40 };
        double stop[N], w[N], pi[N];
        uint32_t src[N], dst[N], it;
        double res;
        for (uint32_t i = 0; i < N; i++) { /* a ring that loses most of its flow */
            stop[i] = i ? 1000.0 : 0.0;
            src[i] = i;
            dst[i] = i + 1 < N ? i + 1 : N - 1 - span;
            w[i] = 100.0;
        }
        struct rp_graph g = {N, N, stop, src, dst, w};
        struct rp_rank_opts o = {0.01, 1e-13, 1000000, 0};
        int sweeps = whole_vs_components(&g, &o, pi, &it, &res);
        CHECK(span == 2 ? sweeps == 0 : sweeps > 0);
    }
    /* rp_rank_profile through the whole graph: the span flags computed on
     * the helper while it sweeps (two threads), the same bits as
     * rp_rank_solve */
    rp_rank_whole_span = 0;
    rp_rank_whole_min = 1;
    test_profile_vs_solve(1);
    rp_rank_whole_span = span0;
    rp_rank_whole_min = UINT32_MAX; /* the other tests: small graphs never take it */
}

/*
 * An acyclic graph swept whole keeps its values in its flow's block, and
 * the values of the sinks its edges back reach apart (rank_solve.c,
 * sweep_apart): the same bits, sweeps and residual as the two arrays give.
 * Random graphs in id order with self loops, edges into ROOT and edges back
 * to nodes without edges of their own (and some to nodes with edges, which
 * keep the two arrays), one thread and two.
 */
static void test_whole_apart(void)
{
    enum { NG = 200 };
    uint32_t min0 = rp_rank_whole_min, span0 = rp_rank_whole_span, back = 0;
    rp_rank_whole_span = 0;
    for (int gi = 0; gi < NG; gi++) {
        uint32_t n = 4 + (uint32_t)(next_u64() % 60), m = 2 * n;
        double *stop = calloc(n, sizeof *stop), *w = calloc(m, sizeof *w);
        uint32_t *src = calloc(m, sizeof *src), *dst = calloc(m, sizeof *dst);
        double *p1 = calloc(n, sizeof *p1), *p2 = calloc(n, sizeof *p2);
        CHECK(stop && w && src && dst && p1 && p2);
        if (!stop || !w || !src || !dst || !p1 || !p2)
            goto next;
        /* the nodes i % 4 == 3 are sinks: no edges of their own but self loops */
        for (uint32_t i = 1; i < n; i++)
            stop[i] = next_u64() % 5 == 0 ? 0.0 : next_unit() * 1000;
        for (uint32_t e = 0; e < m; e++) { /* grouped by caller, as a profile's */
            src[e] = (uint32_t)((uint64_t)e * (n - 1) / m);
            uint64_t kind = next_u64() % 100;
            if (kind < 3 || src[e] % 4 == 3)
                dst[e] = src[e];
            else if (kind < 5)
                dst[e] = 0;
            else if (kind < 7 && src[e] > 1 && gi % 4 == 3)
                dst[e] = 1 + (uint32_t)(next_u64() % (src[e] - 1)); /* maybe a cycle */
            else if (kind < 12 && src[e] > 3) {                     /* back to a sink */
                dst[e] = (uint32_t)(next_u64() % ((src[e] + 1) / 4)) * 4 + 3;
                back += dst[e] < src[e];
            } else
                dst[e] = src[e] + 1 + (uint32_t)(next_u64() % (n - 1 - src[e]));
            w[e] = next_u64() % 10 == 0 ? 0.0 : next_unit() * 1e4;
        }
        static const double alphas[] = {0.5, 0.15, 0.01, 0.0};
        for (uint32_t th = 1; th <= 2; th++) {
            struct rp_rank_opts o = {alphas[gi % 4], 1e-13, 1000000, th};
            struct rp_graph g = {n, m, stop, src, dst, w};
            uint32_t it1, it2, sw1, sw2;
            double r1, r2;
            rp_rank_whole_min = 1;
            rp_rank_whole_apart = 0;
            int rc1 = rp_rank_solve(&g, &o, p1, &it1, &r1);
            sw1 = rp_rank_whole_sweeps;
            rp_rank_whole_apart = 1;
            int rc2 = rp_rank_solve(&g, &o, p2, &it2, &r2);
            sw2 = rp_rank_whole_sweeps;
            CHECK(rc1 == rc2);
            if (rc1 == 0)
                CHECK(memcmp(p1, p2, n * sizeof *p1) == 0 && it1 == it2 &&
                      memcmp(&r1, &r2, sizeof r1) == 0 && sw1 == sw2);
        }
    next:
        free(stop);
        free(w);
        free(src);
        free(dst);
        free(p1);
        free(p2);
    }
    rp_rank_whole_min = min0;
    rp_rank_whole_span = span0;
    rp_rank_whole_apart = 1;
    printf("whole graph, values kept in the flow's block: %d graphs, %u edges back to sinks\n", NG,
           back);
    CHECK(back > 0);
}

static void test_vs_solve(void)
{
    test_profile_vs_solve(0);
}

/* ---- (e) memory --------------------------------------------------------- */

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

#ifndef UNDER_SANITIZER /* (the measuring itself) */
/*
 * Ranks a profile of n nodes and about 2n edges, call-graph shaped (each
 * node first called by a lower one, a few more calls to higher ones; with
 * cycles when back, one edge in 50 then going to a lower id) with threads
 * threads, whole_min as rp_rank_whole_min, and checks that the resident
 * memory rose by at most bytes[0] a node and bytes[1] an edge, or
 * bytes[2] a node and bytes[3] an edge, whichever is more, plus 1 MB.
 * Returns 1 if it was measured, 0 if it cannot be here.
 */
static int memory_case(uint32_t n, int back, uint32_t whole_min, uint32_t threads,
                       const double bytes[4], const char *what)
{
    uint32_t m = 0, cap = 2 * n;
    struct rp_node *nodes = calloc(n, sizeof *nodes);
    struct rp_edge *edges = calloc(cap, sizeof *edges);
    int measured = 0;

    CHECK(nodes && edges);
    if (!nodes || !edges)
        goto out;
    for (uint32_t i = 0; i < n; i++)
        nodes[i] = (struct rp_node){
            .id = i, .kind = RP_KIND_FUNC, .calls = 1 + i % 7, .excl = 1 + next_u64() % 100000};
    /* edges by caller: node i calls i+1 (its first caller) and maybe one
     * more, higher up or (back) lower */
    for (uint32_t i = 0; i + 1 < n && m + 2 <= cap; i++) {
        edges[m++] = (struct rp_edge){
            .caller = i, .callee = i + 1, .calls = 1, .incl = 1 + next_u64() % 1000000};
        uint32_t j = i + 2 + (uint32_t)(next_u64() % 1000);
        if (back && i > 1000 && next_u64() % 50 == 0)
            j = i - 1 - (uint32_t)(next_u64() % 1000);
        if (j < n && j != i + 1 && next_u64() % 4)
            edges[m++] = (struct rp_edge){
                .caller = i, .callee = j, .calls = 2, .incl = 1 + next_u64() % 1000000};
    }
    for (uint32_t k = 1; k < m; k++) /* the callees of each caller in order */
        if (edges[k].caller == edges[k - 1].caller && edges[k].callee < edges[k - 1].callee) {
            struct rp_edge t = edges[k];
            edges[k] = edges[k - 1];
            edges[k - 1] = t;
        }
    struct rp_profile p = {0};
    p.nodes = nodes;
    p.n_nodes = n;
    p.edges = edges;
    p.n_edges = m;
    struct rp_rank_opts o = {0.01, 1e-12, 10000, threads};
    uint32_t min0 = rp_rank_whole_min;
    rp_rank_whole_min = whole_min;
    long before = rp_mem_start();
    int rc = rp_rank_profile(&p, &o);
    long peak = rp_mem_kb("VmHWM");
    rp_rank_whole_min = min0;
    CHECK(rc == 0);
    CHECK(whole_min == UINT32_MAX ? rp_rank_whole_sweeps == 0 : rp_rank_whole_sweeps > 0);
    if (before < 0 || peak < 0)
        goto out;
    double b1 = bytes[0] * n + bytes[1] * m, b2 = bytes[2] * n + bytes[3] * m;
    double bound = (b1 > b2 ? b1 : b2) + 1048576.0, used = 1024.0 * (double)(peak - before);
    CHECK(used <= bound);
    printf("memory, %s: %u nodes, %u edges: %.1f MB at the peak, bound %.1f MB\n", what, n, m,
           used / 1048576.0, bound / 1048576.0);
    measured = 1;
out:
    free(nodes);
    free(edges);
    return measured;
}

#endif

static void test_memory(void)
{
#ifdef UNDER_SANITIZER
    printf("memory: skipped under a sanitizer (its shadow memory and quarantine are resident)\n");
#else
#ifdef __GLIBC__
    /* what is measured is what the ranking holds: blocks of 64 KiB and
     * more mapped apart, so that a freed one leaves the resident size (by
     * default glibc raises that threshold as blocks are freed, and freed
     * memory below it stays resident for the next malloc; then the peak
     * depends on what ran before).  For the rest of this process. */
    mallopt(M_MMAP_THRESHOLD, 64 * 1024);
#endif
    /* the bounds of docs/ranking.md, "Memory" */
    /* one thread: with two, the resident size the kernel reports can lag
     * behind by what the helper faulted in */
    static const double whole[4] = {13, 12, 25, 0}, comp[4] = {42, 12, 34, 24};
    if (!memory_case(400000, 0, 1, 1, whole, "the whole graph in id order") ||
        !memory_case(200000, 1, UINT32_MAX, 1, comp, "the component solver"))
        printf("memory: skipped (no /proc/self/clear_refs to measure the peak with)\n");
#endif
}

static const struct check_case cases[] = {
    {"trees", test_trees},       {"random", test_random},       {"components", test_components},
    {"trap", test_trap},         {"recursion", test_recursion}, {"profile", test_profile},
    {"vs_solve", test_vs_solve}, {"rank_runs", test_rank_runs}, {"big_cycles", test_big_cycles},
    {"threads", test_threads},   {"whole", test_whole},         {"whole_apart", test_whole_apart},
    {"memory", test_memory},
};

int main(int argc, char **argv)
{
    return check_run("test_rank", argc, argv, cases, sizeof cases / sizeof cases[0]);
}

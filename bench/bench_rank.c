/*
 * bench_rank.c - times rp_rank_solve (rank.c) on synthetic call graphs.
 *
 *   bench_rank              1M nodes, 10M edges, call-graph shaped
 *   bench_rank --uniform    the same size with uniformly random callees
 *                           (no call order at all: the solver's worst case)
 *   bench_rank --scale      1K, 10K, 100K, 1M nodes with 10 edges per node
 *   bench_rank --max N      with --scale: stop at N nodes (quick runs)
 *   bench_rank --back F     F of the edges go back up (default 0.01)
 *   bench_rank --span K     back edges go at most K nodes up (default: to
 *                           any earlier node, which joins most nodes into
 *                           one cycle; a small K makes many small cycles,
 *                           like callbacks and mutual recursion in a module)
 *
 * The call-graph shape (fixed seed): ROOT calls 8 thread entries; 30 % of
 * the nodes are leaves, the others' fan-out is Pareto distributed (most call
 * a few procedures, a few call thousands); a callee is usually "deeper"
 * (a higher id, mostly near the caller, as ids are given in order of first
 * call), often one of a small set of popular utility procedures (which call
 * only further down), 1 % of the edges are self calls (recursion) and
 * another 1 % (--back) go back up to a random earlier node (mutual
 * recursion, callbacks), which makes large cycles.
 * Weights are log-normal (times spread over orders of magnitude).
 *
 * Prints nodes, edges, sweeps, residual and seconds of rp_rank_solve (graph
 * building included; generating the graph is not), wall-clock and CPU time
 * of the process (on a loaded machine the CPU time is the steadier one).
 * Exits 1 on failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "analyze/rank.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static double unit(void) /* (0, 1) */
{
    return ((double)(rnd() >> 11) + 0.5) / 9007199254740992.0;
}

static double lognormal(double sigma)
{
    double u = unit(), v = unit();
    return exp(sigma * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
}

struct graph {
    uint32_t n, m;
    double *stop, *w;
    uint32_t *src, *dst;
};

static void graph_free(struct graph *g)
{
    free(g->stop);
    free(g->w);
    free(g->src);
    free(g->dst);
}

/* Fills g with n nodes and exactly m edges.  Returns 0, or -1 if out of
 * memory. */
static uint32_t back_span; /* 0: back edges go anywhere up */

static int make_graph(struct graph *g, uint32_t n, uint32_t m, int uniform, double back)
{
    const uint32_t entries = n > 9 ? 8 : 1;
    double *deg = NULL;
    int rc = -1;

    memset(g, 0, sizeof *g);
    g->n = n;
    g->m = m;
    g->stop = malloc((size_t)n * sizeof *g->stop);
    g->w = malloc((size_t)m * sizeof *g->w);
    g->src = malloc((size_t)m * sizeof *g->src);
    g->dst = malloc((size_t)m * sizeof *g->dst);
    deg = malloc((size_t)n * sizeof *deg);
    if (!g->stop || !g->w || !g->src || !g->dst || !deg)
        goto out;

    /* out-degrees: 30 % leaves, Pareto(1.2) otherwise, scaled to m */
    double sum = 0;
    for (uint32_t i = 0; i < n; i++) {
        g->stop[i] = i ? lognormal(2.0) : 0.0;
        double d = 0;
        if (i > 0 && unit() >= 0.3) {
            d = 1.0 / pow(unit(), 1.0 / 1.2);
            if (d > 20000)
                d = 20000;
        }
        deg[i] = d;
        sum += d;
    }
    uint32_t e = 0;
    for (uint32_t k = 0; k < entries; k++) {
        g->src[e] = 0;
        g->dst[e] = 1 + k;
        g->w[e] = lognormal(1.0) * 1000;
        e++;
    }
    double scale = (double)(m - e) / sum, carry = 0;
    for (uint32_t i = 1; i < n && e < m; i++) {
        carry += deg[i] * scale;
        uint32_t d = (uint32_t)carry;
        carry -= d;
        for (uint32_t k = 0; k < d && e < m; k++, e++) {
            uint32_t j;
            double r = unit();
            if (uniform)
                j = 1 + (uint32_t)(rnd() % (n - 1));
            else if (r < 0.01)
                j = i; /* direct recursion */
            else if (r < 0.01 + back || i + 1 >= n)
                j = back_span && i > back_span ? i - (uint32_t)(rnd() % back_span)
                                               : 1 + (uint32_t)(rnd() % i); /* back up: a cycle */
            else if (r < 0.30) /* popular utilities: the last 1 %, skewed */
                j = n - 1 - (uint32_t)((double)(n / 100 + 1) * pow(unit(), 3.0));
            else /* deeper, mostly close by */
                j = i + 1 + (uint32_t)((double)(n - i - 1) * pow(unit(), 6.0));
            if (!uniform && r >= 0.01 + back && j <= i) /* utilities call down */
                j = i + 1 + (uint32_t)((double)(n - i - 1) * unit());
            if (j >= n)
                j = n - 1;
            if (j == 0)
                j = 1;
            g->src[e] = i;
            g->dst[e] = j;
            g->w[e] = lognormal(2.0);
        }
    }
    while (e < m) { /* rounding leftovers: forward edges */
        uint32_t a = 1 + (uint32_t)(rnd() % (n - 1)), b = 1 + (uint32_t)(rnd() % (n - 1));
        g->src[e] = a < b || uniform ? a : b;
        g->dst[e] = a < b || uniform ? b : a;
        g->w[e] = lognormal(2.0);
        e++;
    }
    rc = 0;
out:
    free(deg);
    return rc;
}

static double now(clockid_t clk)
{
    struct timespec ts;
    clock_gettime(clk, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Times one solve, repeated until 0.3 s have passed (at least once); prints
 * the fastest run.  Returns 0 or -1. */
static int run(uint32_t n, uint32_t m, int uniform, double back)
{
    struct graph g;
    double *pi = NULL, best = INFINITY, best_cpu = INFINITY, spent = 0;
    uint32_t it = 0;
    double res = 0;
    int rc = -1, runs = 0;

    if (make_graph(&g, n, m, uniform, back) != 0) {
        fprintf(stderr, "bench_rank: out of memory building the graph\n");
        goto out;
    }
    pi = malloc((size_t)n * sizeof *pi);
    if (!pi)
        goto out;
    struct rp_graph rg = {g.n, g.m, g.stop, g.src, g.dst, g.w};
    do {
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        int r = rp_rank_solve(&rg, NULL, pi, &it, &res);
        double t = now(CLOCK_MONOTONIC) - t0, c = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (r != 0) {
            fprintf(stderr, "bench_rank: rp_rank_solve failed: %d\n", r);
            goto out;
        }
        if (t < best)
            best = t;
        if (c < best_cpu)
            best_cpu = c;
        spent += t;
        runs++;
    } while (spent < 0.3 && runs < 1000);
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += pi[i];
    printf("%-10s %9u nodes %10u edges %5u sweeps residual %.2e  %8.4f s  cpu %8.4f s  (best of "
           "%d; sum pi - 1 = %.1e)\n",
           uniform ? "uniform" : "callgraph", n, m, it, res, best, best_cpu, runs, s - 1.0);
    rc = 0;
out:
    free(pi);
    graph_free(&g);
    return rc;
}

int main(int argc, char **argv)
{
    int scale = 0, uniform = 0;
    double back = 0.01;
    uint32_t max = 1000000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scale")) {
            scale = 1;
        } else if (!strcmp(argv[i], "--uniform")) {
            uniform = 1;
        } else if (!strcmp(argv[i], "--span") && i + 1 < argc) {
            back_span = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--back") && i + 1 < argc) {
            back = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
            max = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else {
            fprintf(stderr,
                    "usage: bench_rank [--scale [--max NODES]] [--uniform] [--span K] [--back "
                    "FRACTION]\n");
            return 2;
        }
    }
    printf("rp_rank_solve, alpha 0.01, tol 1e-12%s\n", uniform ? ", uniform callees" : "");
    if (!uniform)
        printf("call graph: 1%% self calls, %.1f%% back edges going %s\n", back * 100,
               back_span ? "at most --span nodes up" : "anywhere up");
    if (scale) {
        for (uint32_t n = 1000; n <= max && n <= 1000000; n *= 10)
            if (run(n, 10 * n, uniform, back))
                return 1;
        return 0;
    }
    return run(1000000, 10000000, uniform, back) ? 1 : 0;
}

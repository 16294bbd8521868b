// SPDX-License-Identifier: MIT
/*
 * bench_rank.c - times rp_rank_solve (rank.c) on synthetic call graphs.
 *
 *   bench_rank              1M nodes, 10M edges, call-graph shaped
 *   bench_rank --uniform    the same size with uniformly random callees
 *                           (no call order at all: the solver's worst case)
 *   bench_rank --scale      1K, 10K, 100K, 1M nodes with 10 edges per node
 *   bench_rank --max N      with --scale: stop at N nodes (quick runs)
 *   bench_rank --back F     F of the edges go back up (default 0.01)
 *   bench_rank --threads N  rank with N threads (rp_rank_opts.threads:
 *                           1 or 2; default 0, the library's choice)
 *   bench_rank --span K     back edges go at most K nodes up (default: to
 *                           any earlier node, which joins most nodes into
 *                           one cycle; a small K makes many small cycles,
 *                           like callbacks and mutual recursion in a module)
 *   bench_rank --busy N     a busy machine: N processes that only spin
 *                           (`while :; do :; done`) run beside it, started
 *                           before the graph is made, killed at the end
 *   bench_rank --digest     also prints a digest of the standings,
 *                           involvements and ranks, and of rp_rank_solve's
 *                           pi: equal digests, equal bits
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
 * The graph is then stored as a profile (struct rp_profile: a node and an
 * edge record per node and edge, weights in integer ticks, time = 1000 x
 * the weight above, edges sorted by caller and callee as replay leaves them) and ranked with
 * rp_rank_profile, as `rankprof report` does: the timed region is that one call, everything the
 * report path does for ranking (reading the profile's nodes and edges, building the adjacency, the
 * components, the sweeps, standing, involvement and ranks); generating the graph is not timed.  The
 * same graph is also solved with rp_rank_solve from plain arrays (the solver alone, for
 * comparison).
 *
 * Prints nodes, edges, sweeps, residual and the seconds of each, wall-clock
 * and CPU time of the process (on a loaded machine the CPU time is the
 * steadier one), the fastest of the runs made in 0.3 s (at least three),
 * and the wall-clock time of the first run, the one on memory the process
 * has not used before: what `rankprof report` pays, ranking once; on Linux
 * also the host's steal over the runs and over the first (the share of this
 * virtual machine's CPU time its host gave to others: when it is high, the
 * seconds measure the host more than the ranking); and the memory the
 * first run took at its peak beyond what the process held before ("mem",
 * its peak resident size less the resident size before, on Linux).  Exits
 * 1 on failure.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "../tests/memstat.h" /* (the peak a ranking takes, as test_rank measures) */

#include "analyze/profile.h"
#include "analyze/rank.h"
#include "trace/format.h"

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

/* A weight as the profile stores it: integer ticks, 1000 per unit. */
static double ticks(double x)
{
    return floor(x * 1000.0 + 0.5);
}

struct sedge {
    uint32_t src, dst;
    double w;
};

static int sedge_cmp(const void *a, const void *b)
{
    const struct sedge *x = a, *y = b;
    if (x->src != y->src)
        return x->src < y->src ? -1 : 1;
    return x->dst < y->dst ? -1 : x->dst > y->dst;
}

/* Puts the edges of g in caller, then callee order, the order of a
 * profile's edges (replay sorts them).  Returns 0, or -1 if out of memory. */
static int sort_edges(struct graph *g)
{
    struct sedge *t = malloc((size_t)g->m * sizeof *t);
    if (!t)
        return -1;
    for (uint32_t e = 0; e < g->m; e++)
        t[e] = (struct sedge){g->src[e], g->dst[e], g->w[e]};
    qsort(t, g->m, sizeof *t, sedge_cmp);
    for (uint32_t e = 0; e < g->m; e++) {
        g->src[e] = t[e].src;
        g->dst[e] = t[e].dst;
        g->w[e] = t[e].w;
    }
    free(t);
    return 0;
}

/* Fills g with n nodes and exactly m edges, in caller order.  Returns 0, or -1 if out of
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
        g->stop[i] = i ? ticks(lognormal(2.0)) : 0.0;
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
        g->w[e] = ticks(lognormal(1.0) * 1000);
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
            g->w[e] = ticks(lognormal(2.0));
        }
    }
    while (e < m) { /* rounding leftovers: forward edges */
        uint32_t a = 1 + (uint32_t)(rnd() % (n - 1)), b = 1 + (uint32_t)(rnd() % (n - 1));
        g->src[e] = a < b || uniform ? a : b;
        g->dst[e] = a < b || uniform ? b : a;
        g->w[e] = ticks(lognormal(2.0));
        e++;
    }
    rc = sort_edges(g);
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

/* The host's steal so far: in st[0] the jiffies the CPUs of this (virtual)
 * machine waited for the host while runnable, in st[1] all their jiffies
 * (/proc/stat's first line).  Returns 0, or -1 where there is no such
 * count (st then zero). */
static int steal_sample(unsigned long long st[2])
{
    unsigned long long v[8] = {0};
    FILE *f = fopen("/proc/stat", "r");
    int ok = f && fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2],
                         &v[3], &v[4], &v[5], &v[6], &v[7]) == 8;
    if (f)
        fclose(f);
    st[0] = st[1] = 0;
    if (!ok)
        return -1;
    st[0] = v[7];
    for (int i = 0; i < 8; i++)
        st[1] += v[i];
    return 0;
}

/* The percentage of CPU time the host took between two steal_samples, or
 * -1 if it cannot be told: counted in clock ticks (usually 100 a second on
 * each CPU), an interval of fewer than 10 says nothing. */
static double steal_pct(const unsigned long long a[2], const unsigned long long b[2])
{
    return b[1] >= a[1] + 10 ? 100.0 * (double)(b[0] - a[0]) / (double)(b[1] - a[1]) : -1.0;
}

/* The graph as a profile: function nodes with their stop weight as
 * exclusive time, edges with their weight as inclusive time (both also as
 * call counts).  Returns 0, or -1 if out of memory. */
static int make_profile(struct rp_profile *p, const struct graph *g)
{
    memset(p, 0, sizeof *p);
    p->nodes = calloc(g->n, sizeof *p->nodes);
    p->edges = calloc(g->m, sizeof *p->edges);
    if (!p->nodes || !p->edges)
        return -1;
    p->n_nodes = p->cap_nodes = g->n;
    p->n_edges = p->cap_edges = g->m;
    for (uint32_t i = 0; i < g->n; i++) {
        p->nodes[i].id = i;
        p->nodes[i].kind = RP_KIND_FUNC;
        p->nodes[i].excl = (uint64_t)g->stop[i];
        p->nodes[i].calls = 1 + (uint64_t)g->stop[i] / 1000;
    }
    for (uint32_t e = 0; e < g->m; e++)
        p->edges[e] = (struct rp_edge){.caller = g->src[e],
                                       .callee = g->dst[e],
                                       .incl = (uint64_t)g->w[e],
                                       .calls = 1 + (uint64_t)g->w[e] / 1000};
    return 0;
}

/* Times f until 0.3 s have passed, at least three times; the fastest
 * wall-clock and CPU seconds go to *best, *best_cpu, the first run's
 * wall-clock seconds to *first (on fresh memory, as `rankprof report`, which
 * ranks once, pays it), and the host's steal (the share of this virtual
 * machine's CPU time the host took: a busy host shows there) over all the
 * runs and over the first to steal[0], steal[1] (-1 if unknown).  Returns
 * the number of runs, or -1 if f failed (its code in *err). */
struct job {
    struct rp_graph *g;
    struct rp_profile *p;
    double *pi;
    uint32_t it;
    double res;
};

/* The ranking's options: the library's defaults, threads from --threads. */
static struct rp_rank_opts opts = {0.01, 1e-12, 10000, 0};

static int time_it(int (*f)(struct job *), struct job *j, double *best, double *best_cpu,
                   double *first, double steal[2], long *mem, int *err)
{
    unsigned long long s0[2], s1[2], s2[2];
    double spent = 0;
    int runs = 0, st = steal_sample(s0);
    long rss0 = rp_mem_start();
    *best = *best_cpu = INFINITY;
    do {
        double t0 = now(CLOCK_MONOTONIC), c0 = now(CLOCK_PROCESS_CPUTIME_ID);
        int r = f(j);
        double t = now(CLOCK_MONOTONIC) - t0, c = now(CLOCK_PROCESS_CPUTIME_ID) - c0;
        if (r != 0) {
            *err = r;
            return -1;
        }
        if (!runs) {
            long hwm = rss0 >= 0 ? rp_mem_kb("VmHWM") : -1;
            *mem = hwm >= rss0 ? hwm - rss0 : -1;
            *first = t;
            st |= steal_sample(s1);
        }
        *best = t < *best ? t : *best;
        *best_cpu = c < *best_cpu ? c : *best_cpu;
        spent += t;
        runs++;
    } while ((spent < 0.3 || runs < 3) && runs < 1000);
    st |= steal_sample(s2);
    steal[0] = st ? -1.0 : steal_pct(s0, s2);
    steal[1] = st ? -1.0 : steal_pct(s0, s1);
    return runs;
}

static int do_profile(struct job *j)
{
    int r = rp_rank_profile(j->p, &opts);
    j->it = j->p->rank.iterations;
    j->res = j->p->rank.residual;
    return r;
}

static int do_solve(struct job *j)
{
    return rp_rank_solve(j->g, &opts, j->pi, &j->it, &j->res);
}

static int digest; /* --digest */

/* FNV-1a over len bytes, continuing from h. */
static uint64_t fnv(uint64_t h, const void *p, size_t len)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < len; i++)
        h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

/* Prints the digest of what the ranking gave: each node's standing,
 * involvement and rank, then pi from rp_rank_solve. */
static void print_digest(const struct rp_profile *p, const double *pi, uint32_t n)
{
    uint64_t h = 0xcbf29ce484222325ull, hs = h;
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        double st = rp_node_standing(p, &p->nodes[i]), inv = rp_node_involvement(p, &p->nodes[i]);
        h = fnv(h, &st, sizeof st);
        h = fnv(h, &inv, sizeof inv);
        h = fnv(h, &p->nodes[i].rank, sizeof p->nodes[i].rank);
    }
    hs = fnv(hs, pi, (size_t)n * sizeof *pi);
    printf("  digest profile %016llx solve %016llx\n", (unsigned long long)h,
           (unsigned long long)hs);
}

/* Times ranking the graph as a profile (the report path), then the solver
 * alone; prints a line for each.  Returns 0 or -1. */
static int run(uint32_t n, uint32_t m, int uniform, double back)
{
    struct graph g;
    struct rp_profile p = {0};
    double *pi = NULL;
    int rc = -1;

    if (make_graph(&g, n, m, uniform, back) != 0 || make_profile(&p, &g) != 0) {
        fprintf(stderr, "bench_rank: out of memory building the graph\n");
        goto out;
    }
    pi = malloc((size_t)n * sizeof *pi);
    if (!pi)
        goto out;
    struct rp_graph rg = {g.n, g.m, g.stop, g.src, g.dst, g.w};
    struct job j = {&rg, &p, pi, 0, 0};
    static const struct {
        const char *what;
        int (*f)(struct job *);
    } jobs[] = {{"rp_rank_profile", do_profile}, {"rp_rank_solve alone", do_solve}};
    for (int k = 0; k < 2; k++) {
        double best, best_cpu, first, steal[2];
        long mem = -1;
        int err = 0, runs = time_it(jobs[k].f, &j, &best, &best_cpu, &first, steal, &mem, &err);
        if (runs < 0) {
            fprintf(stderr, "bench_rank: %s failed: %d\n", jobs[k].what, err);
            goto out;
        }
        /* scripts/bench.sh reads the lines that start with "callgraph":
         * the report path's; the solver's line is indented */
        printf("%-10s %8u nodes %9u edges %5u sweeps residual %.2e  %8.4f s  cpu %8.4f s  "
               "first %8.4f s  ",
               k         ? "  solve"
               : uniform ? "uniform"
                         : "callgraph",
               n, m, j.it, j.res, best, best_cpu, first);
        if (steal[0] >= 0.0)
            printf("steal %.1f%%  ", steal[0]);
        if (steal[0] >= 0.0 && steal[1] >= 0.0)
            printf("(first run %.1f%%)  ", steal[1]);
        if (mem >= 0)
            printf("mem +%.1f MB  ", (double)mem / 1024.0);
        printf("(%s, best of %d)\n", jobs[k].what, runs);
    }
    if (digest)
        print_digest(&p, pi, n);
    rc = 0;
out:
    free(pi);
    free(p.nodes);
    free(p.edges);
    graph_free(&g);
    return rc;
}

/* --busy: the spinning processes, killed at exit. */
static pid_t hogs[64];
static int nhogs;

static void hogs_stop(void)
{
    for (int i = 0; i < nhogs; i++) {
        kill(hogs[i], SIGKILL);
        waitpid(hogs[i], NULL, 0);
    }
    nhogs = 0;
}

/* Starts n processes that spin until killed.  Returns 0, or -1 if one
 * could not be started (those started are stopped). */
static int hogs_start(int n)
{
    for (int i = 0; i < n; i++) {
        pid_t pid = fork();
        if (pid < 0) {
            hogs_stop();
            return -1;
        }
        if (pid == 0) {
#ifdef __linux__
            /* dies with the benchmark, however it ends */
            prctl(PR_SET_PDEATHSIG, SIGKILL);
#endif
            if (getppid() == 1)
                _exit(0);
            for (volatile unsigned long x = 0;; x++)
                ;
        }
        hogs[nhogs++] = pid;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int scale = 0, uniform = 0, busy = 0;
    double back = 0.01;
    uint32_t max = 1000000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--scale")) {
            scale = 1;
        } else if (!strcmp(argv[i], "--uniform")) {
            uniform = 1;
        } else if (!strcmp(argv[i], "--threads") && i + 1 < argc) {
            opts.threads = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--span") && i + 1 < argc) {
            back_span = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--back") && i + 1 < argc) {
            back = atof(argv[++i]);
        } else if (!strcmp(argv[i], "--max") && i + 1 < argc) {
            max = (uint32_t)strtoul(argv[++i], NULL, 10);
        } else if (!strcmp(argv[i], "--busy") && i + 1 < argc) {
            busy = atoi(argv[++i]);
            if (busy < 0 || busy > 64) {
                fprintf(stderr, "bench_rank: --busy %s: from 0 to 64 processes\n", argv[i]);
                return 2;
            }
        } else if (!strcmp(argv[i], "--digest")) {
            digest = 1;
        } else {
            fprintf(
                stderr,
                "usage: bench_rank [--scale [--max NODES]] [--uniform] [--threads N] [--span K] "
                "[--back FRACTION] [--busy N] [--digest]\n");
            return 2;
        }
    }
    printf("rp_rank_profile (all the ranking of `rankprof report`), then rp_rank_solve alone;"
           " alpha 0.01, tol 1e-12%s, threads %s\n",
           uniform ? ", uniform callees" : "",
           opts.threads == 0   ? "as the library chooses"
           : opts.threads == 1 ? "1"
                               : "2");
    if (!uniform)
        printf("call graph: 1%% self calls, %.1f%% back edges going %s\n", back * 100,
               back_span ? "at most --span nodes up" : "anywhere up");
    if (busy) {
        printf("busy: %d spinning processes beside it\n", busy);
        fflush(stdout);
        if (hogs_start(busy)) {
            fprintf(stderr, "bench_rank: --busy: cannot start a process\n");
            return 1;
        }
    }
    int rc = 0;
    if (scale) {
        for (uint32_t n = 1000; n <= max && n <= 1000000 && !rc; n *= 10)
            rc = run(n, 10 * n, uniform, back);
    } else {
        rc = run(1000000, 10000000, uniform, back);
    }
    hogs_stop();
    return rc ? 1 : 0;
}

// SPDX-License-Identifier: MIT
/*
 * cmd_graph.c - `rankprof graph NAME`: who calls NAME and whom NAME calls,
 * with the statistics of each edge ("how A calls B and how long that takes").
 *
 * NAME is a whole name or a short one (report/names.h: `sum_dots` finds
 * `int geo::detail::sum_dots<int>(...)`); a short name that fits procedures
 * of more than one name is an error listing them.  Callers and callees are
 * sorted by time.  Shares are of NAME's inclusive time (outermost
 * activations only), so none is above 100 %: its edge to itself is marked
 * "recursive" instead, its time being inside the others.  A procedure that
 * recursed through others (A -> B -> A) has its nested activations in its
 * edges but not in its inclusive time: its shares are then of its time in
 * every activation but those it called itself (rp_node_share_base), which
 * the headings give, so that they add up to 100 % all the same.
 */
#define _GNU_SOURCE /* qsort_r */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report/names.h"
#include "trace/format.h"

/* One caller or callee line: the edge's statistics and its share of
 * denom_ticks ("recursive" when the edge is under recursion).  The minimum
 * is of the calls not below resolution (docs/report-json.md, edges'
 * min_ns): when some were (none resolved, or a mean below that minimum,
 * which only calls shorter than it make), the shortest call is below the
 * resolution, and the line says so ("<20ns") rather than give a minimum
 * above the mean.  Cannot fail. */
static void edge_line(const struct rp_profile *p, const struct rp_edge *e, uint32_t other,
                      uint64_t denom_ticks, const char *arrow)
{
    char b1[32], b2[32], b3[32], b4[32], nb[512], share[16];
    double k = p->ns_per_tick;
    if (e->caller == e->callee || e->incl > denom_ticks)
        snprintf(share, sizeof share, "recursive");
    else
        snprintf(share, sizeof share, "%5.1f%%",
                 denom_ticks ? 100.0 * (double)e->incl / (double)denom_ticks : 0.0);
    if (e->calls && (e->min == 0 || (double)e->min * (double)e->calls > (double)e->incl)) {
        rp_fmt_below_res(p, b3, sizeof(b3));
    } else {
        rp_fmt_ns((double)e->min * k, b3, sizeof(b3));
    }
    printf("  %s %-40s %10llu calls  total %9s  mean %9s  min %9s  max %9s  %s\n", arrow,
           rp_node_name(p, &p->nodes[other], nb, sizeof(nb)), (unsigned long long)e->calls,
           rp_fmt_ns((double)e->incl * k, b1, sizeof(b1)),
           rp_fmt_ns(e->calls ? (double)e->incl * k / (double)e->calls : 0, b2, sizeof(b2)), b3,
           rp_fmt_ns((double)e->max * k, b4, sizeof(b4)), share);
}

/* qsort_r: edge indices by time, descending, then by index (ctx: the edges). */
static int by_time(const void *a, const void *b, void *ctx)
{
    const struct rp_edge *sort_edges = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    uint64_t tx = sort_edges[x].incl, ty = sort_edges[y].incl;
    return tx != ty ? (tx < ty) - (tx > ty) : (x > y) - (x < y);
}

/* Prints node i's edges selected by want (0 callers, 1 callees, 2 lock
 * holds), by time.  Dies when out of memory. */
static void edges_of(const struct rp_profile *p, uint32_t i, int want, const char *arrow,
                     uint64_t base)
{
    uint32_t *idx = malloc(((size_t)p->n_edges + 1) * sizeof *idx), n = 0;
    if (!idx)
        rp_die("graph: out of memory");
    for (uint32_t e = 0; e < p->n_edges; e++) {
        const struct rp_edge *x = &p->edges[e];
        int hold = p->nodes[x->callee].kind == RP_KIND_LOCK_HOLD;
        if (want == 0 ? x->callee == i : x->caller == i && hold == (want == 2))
            idx[n++] = e;
    }
    qsort_r(idx, n, sizeof *idx, by_time, p->edges);
    for (uint32_t k = 0; k < n; k++) {
        const struct rp_edge *x = &p->edges[idx[k]];
        edge_line(p, x, want == 0 ? x->caller : x->callee, base, arrow);
    }
    free(idx);
}

/* Prints the graph of node i, called name, with its address when copies.
 * Dies when out of memory. */
static void show(const struct rp_profile *p, uint32_t i, const char *name, int copies)
{
    const struct rp_node *n = &p->nodes[i];
    char b1[32], b2[32], b3[32], loc[600] = "", of[96];
    int holds = 0;
    uint64_t self = 0;

    if (n->file && *n->file) {
        const char *base = strrchr(n->file, '/');
        snprintf(loc, sizeof loc, " (%s:%u)", base ? base + 1 : n->file, n->line);
    }
    if (copies) /* static copies of one function: the address tells them apart */
        snprintf(loc + strlen(loc), sizeof loc - strlen(loc), " @0x%llx",
                 (unsigned long long)n->key);
    printf("%s%s: %llu calls, inclusive %s, self %s, max %s, rank %u, involvement %.1f%%\n", name,
           loc, (unsigned long long)n->calls,
           rp_fmt_ns((double)n->incl * p->ns_per_tick, b1, sizeof(b1)),
           rp_fmt_ns((double)n->excl * p->ns_per_tick, b2, sizeof(b2)),
           rp_fmt_ns((double)rp_node_max(n) * p->ns_per_tick, b3, sizeof(b3)), n->rank,
           100.0 * rp_node_involvement(p, n));
    for (uint32_t e = 0; e < p->n_edges; e++) {
        holds += p->edges[e].caller == i && p->nodes[p->edges[e].callee].kind == RP_KIND_LOCK_HOLD;
        if (p->edges[e].caller == i && p->edges[e].callee == i)
            self += p->edges[e].incl;
    }
    uint64_t base = rp_node_share_base(n, self);
    of[0] = '\0';
    if (base > n->incl) /* recursed through others: its nested activations too */
        snprintf(of, sizeof of, " in all its activations, %s, as it recursed through others",
                 rp_fmt_ns((double)base * p->ns_per_tick, b1, sizeof(b1)));
    printf("callers (share of %s's time%s):\n", name, of);
    edges_of(p, i, 0, "<-", base);
    /* lock holds are intervals beside the calls, not part of the split of
     * the node's time: listed apart (docs/locks.md) */
    printf("callees (share of %s's time%s):\n", name, of);
    edges_of(p, i, 1, "->", base);
    /* own work: the self time of every activation, of the same time */
    printf("  -- %-40s %10s        self  %9s  %5.1f%%\n",
           n->kind == RP_KIND_WAIT ? "(blocked)" : "(own work)", "",
           rp_fmt_ns((double)n->excl * p->ns_per_tick, b1, sizeof(b1)),
           base ? 100.0 * (double)(n->excl < base ? n->excl : base) / (double)base : 0.0);
    if (holds) {
        printf("locks taken (held while the work above ran; not part of its split):\n");
        edges_of(p, i, 2, "=>", base);
    }
}

int cmd_graph(int argc, char **argv)
{
    struct rp_load_opts o;

    rp_load_opts_default(&o);
    int first = rp_parse_input_opts("graph", argc, argv, &o, 3);
    if (first >= argc)
        rp_usage_die("graph", "no NAME given");
    const char *name = argv[first];
    rp_opt_input_args("graph", first + 1, argc, argv, &o); /* NAME FILE... */

    struct rp_profile p = {0};
    rp_load(&o, &p);
    if (p.n_procs > 1) /* a run's files, merged */
        printf("%u processes of the run, merged (--process PID: one of them)\n", p.n_procs);
    char nb[512];
    uint32_t *hit = malloc(((size_t)p.n_nodes + 1) * sizeof *hit), n_hit = 0;
    if (!hit)
        rp_die("graph: out of memory");
    /* whole names first; else short ones (of procedures only) */
    for (int want = 2; want >= 1 && !n_hit; want--)
        for (uint32_t i = 1; i < p.n_nodes; i++)
            if (p.nodes[i].calls && (want == 2 || p.nodes[i].kind == RP_KIND_FUNC) &&
                rp_name_match(rp_node_name(&p, &p.nodes[i], nb, sizeof(nb)), name) == want)
                hit[n_hit++] = i;
    if (!n_hit) {
        rp_profile_free(&p);
        free(hit);
        rp_die("graph: no procedure, lock or device named '%s' in %s", name, o.input);
    }
    /* several nodes of one name (static copies) are all shown; of
     * different names, the user must choose */
    int ambiguous = 0;
    for (uint32_t k = 1; k < n_hit; k++) {
        char a[512];
        const char *first_name = rp_node_name(&p, &p.nodes[hit[0]], a, sizeof a);
        ambiguous |= strcmp(first_name, rp_node_name(&p, &p.nodes[hit[k]], nb, sizeof nb)) != 0;
    }
    if (ambiguous) {
        fflush(stdout);
        fprintf(stderr, "rankprof: graph: '%s' names %u procedures; give one of:\n", name, n_hit);
        for (uint32_t k = 0; k < n_hit; k++) {
            const struct rp_node *n = &p.nodes[hit[k]];
            fprintf(stderr, "  %s", rp_node_name(&p, n, nb, sizeof nb));
            if (n->file && *n->file)
                fprintf(stderr, "  (%s:%u)", n->file, n->line);
            fputc('\n', stderr);
        }
        rp_profile_free(&p);
        free(hit);
        exit(1);
    }
    for (uint32_t k = 0; k < n_hit; k++) {
        if (k)
            putchar('\n');
        show(&p, hit[k], rp_node_name(&p, &p.nodes[hit[k]], nb, sizeof nb), n_hit > 1);
    }
    rp_profile_free(&p);
    free(hit);
    return 0;
}

/*
 * cmd_graph.c - `rankprof graph NAME`: who calls NAME and whom NAME calls,
 * with the statistics of each edge ("how A calls B and how long that takes").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "trace/format.h"

static void edge_line(const struct rp_profile *p, const struct rp_edge *e, uint32_t other,
                      uint64_t denom_ticks, const char *arrow)
{
    char b1[32], b2[32], b3[32], b4[32], nb[128];
    double k = p->ns_per_tick;
    printf("  %s %-40s %10llu calls  total %9s  mean %9s  min %9s  max %9s  %5.1f%%\n", arrow,
           rp_node_name(p, &p->nodes[other], nb, sizeof(nb)), (unsigned long long)e->calls,
           rp_fmt_ns((double)e->incl * k, b1, sizeof(b1)),
           rp_fmt_ns(e->calls ? (double)e->incl * k / (double)e->calls : 0, b2, sizeof(b2)),
           rp_fmt_ns((double)e->min * k, b3, sizeof(b3)),
           rp_fmt_ns((double)e->max * k, b4, sizeof(b4)),
           denom_ticks ? 100.0 * (double)e->incl / (double)denom_ticks : 0.0);
}

int cmd_graph(int argc, char **argv)
{
    struct rp_load_opts o;

    rp_load_opts_default(&o);
    int first =
        rp_parse_input_opts("graph", "graph shows the callers and callees of NAME", argc, argv, &o);
    if (first != argc - 1)
        rp_usage_die("graph", first >= argc ? "no NAME given" : "one NAME expected");
    const char *name = argv[first];

    struct rp_profile p = {0};
    rp_load(&o, &p);
    if (p.n_procs > 1) /* a run's files, merged */
        printf("%u processes of the run, merged (--process PID: one of them)\n", p.n_procs);
    char nb[128], b1[32], b2[32], b3[32];
    int found = 0;
    for (uint32_t i = 1; i < p.n_nodes; i++) {
        const struct rp_node *n = &p.nodes[i];
        if (!n->calls || strcmp(rp_node_name(&p, n, nb, sizeof(nb)), name) != 0)
            continue;
        found = 1;
        printf("%s: %llu calls, inclusive %s, self %s, max %s, rank %u, involvement %.1f%%\n", name,
               (unsigned long long)n->calls,
               rp_fmt_ns((double)n->incl * p.ns_per_tick, b1, sizeof(b1)),
               rp_fmt_ns((double)n->excl * p.ns_per_tick, b2, sizeof(b2)),
               rp_fmt_ns((double)n->max * p.ns_per_tick, b3, sizeof(b3)), n->rank,
               100.0 * n->involvement);
        printf("callers (share of %s's time):\n", name);
        for (uint32_t e = 0; e < p.n_edges; e++)
            if (p.edges[e].callee == i)
                edge_line(&p, &p.edges[e], p.edges[e].caller, n->dur_sum, "<-");
        /* lock holds are intervals beside the calls, not part of the
         * split of the node's time: listed apart (docs/locks.md) */
        int holds = 0;
        printf("callees (share of %s's time):\n", name);
        for (uint32_t e = 0; e < p.n_edges; e++) {
            if (p.edges[e].caller != i)
                continue;
            if (p.nodes[p.edges[e].callee].kind == RP_KIND_LOCK_HOLD)
                holds++;
            else
                edge_line(&p, &p.edges[e], p.edges[e].callee, n->dur_sum, "->");
        }
        printf("  -- %-40s %10s        self  %9s  %5.1f%%\n",
               n->kind == RP_KIND_WAIT ? "(blocked)" : "(own work)", "",
               rp_fmt_ns((double)n->excl * p.ns_per_tick, b1, sizeof(b1)),
               n->dur_sum ? 100.0 * (double)n->excl / (double)n->dur_sum : 0.0);
        if (holds) {
            printf("locks taken (held while the work above ran; not part of its split):\n");
            for (uint32_t e = 0; e < p.n_edges; e++)
                if (p.edges[e].caller == i && p.nodes[p.edges[e].callee].kind == RP_KIND_LOCK_HOLD)
                    edge_line(&p, &p.edges[e], p.edges[e].callee, n->dur_sum, "=>");
        }
    }
    rp_profile_free(&p);
    if (!found)
        rp_die("graph: no procedure, lock or device named '%s' in %s", name, o.input);
    return 0;
}

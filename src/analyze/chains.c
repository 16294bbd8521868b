// SPDX-License-Identifier: MIT
/*
 * chains.c - pass-through chains (chains.h): the wrappers between main and
 * the work (main -> run -> eval -> call ...) that each hand nearly all their
 * time to one callee, found from the nodes and edges alone so that the table
 * can show each run of them as one row.
 *
 * A procedure i "passes through" to j when an edge i -> j carries at least
 * RP_CHAIN_SHARE of i's time on CPU (dur_sum: every activation, of which
 * the edges and the own time are a partition even under recursion; less
 * the time off CPU and waiting anywhere below, i's and, in the edge's share
 * of j's time, j's: a busy machine adds the one, a wait below j the other;
 * where that is not known, less the time off CPU in i's and j's own
 * frames), i has no
 * edge to itself (a recursive procedure is not a wrapper) and i carries no
 * flag (a flagged node is worth its own row).  i and j are linked when both
 * pass through and the edge also carries RP_CHAIN_SHARE of j's inclusive
 * time (outermost activations: j is entered almost only from i; an
 * interpreter's pcall -> call -> pcall re-entry makes dur_sum count the
 * nested calls again).  The first link into a node wins, so each node has
 * at most one link in and one out (one callee can take 95 %): the links
 * form simple paths and cycles, and a chain is a maximal path of two nodes
 * or more from a node without a link in (a cycle has none and is no
 * chain).  Linear in nodes and edges.
 */
#include "analyze/chains.h"

#include <stdlib.h>
#include <string.h>

#include "analyze/profile.h"
#include "common/error.h"
#include "trace/format.h"

/* Whether node i may pass through: an unflagged procedure with time. */
static int candidate(const struct rp_profile *p, uint32_t i)
{
    const struct rp_node *n = &p->nodes[i];
    return i && n->kind == RP_KIND_FUNC && n->calls && !n->flags && rp_node_dur_sum(n);
}

/* The time edge x's callee was descheduled in its own frame during the
 * calls through x: its own-frame off-CPU time, in the share of its time
 * that x carries.  Being preempted there adds the same time to the edge and
 * to the caller's time, and would make a callee with 80 % of the work look
 * like one that takes it all.  Cannot fail. */
static double callee_offcpu(const struct rp_profile *p, const struct rp_edge *x)
{
    const struct rp_node *cj = &p->nodes[x->callee];
    uint64_t off = rp_node_offcpu(cj);
    if (!off || !rp_node_dur_sum(cj))
        return 0.0;
    double d = (double)off * ((double)x->incl / (double)rp_node_dur_sum(cj));
    return d < (double)x->incl ? d : (double)x->incl;
}

void rp_chains_free(struct rp_chains *c)
{
    if (!c)
        return;
    free(c->start);
    free(c->member);
    free(c->of_node);
    memset(c, 0, sizeof *c);
}

int rp_chains_find(const struct rp_profile *p, struct rp_chains *c)
{
    uint32_t *pass = NULL, *next = NULL, *prev = NULL, n;
    int rc = 0;

    if (!p || !c)
        return RP_EINVAL;
    memset(c, 0, sizeof *c);
    n = p->n_nodes;
    if (n < 3 || !p->nodes)
        return 0;
    pass = calloc(n, sizeof *pass); /* 1 + the edge i passes through, 0 none */
    next = calloc(n, sizeof *next);
    prev = calloc(n, sizeof *prev);
    c->of_node = calloc(n, sizeof *c->of_node);
    c->start = malloc(sizeof *c->start);
    c->member = malloc(n * sizeof *c->member);
    if (!pass || !next || !prev || !c->of_node || !c->start || !c->member) {
        rc = RP_ENOMEM;
        goto out;
    }
    c->n_nodes = n;
    /* the edge each node passes through, if any */
    for (uint32_t e = 0; e < p->n_edges; e++) {
        const struct rp_edge *x = &p->edges[e];
        if (x->caller >= n || x->callee >= n || x->caller == x->callee)
            continue;
        if (!candidate(p, x->caller) || p->nodes[x->callee].kind != RP_KIND_FUNC)
            continue;
        const struct rp_node *ci = &p->nodes[x->caller];
        if (p->oncpu_known) {
            /* of their time on CPU: a caller whose callee waits most of the
             * time (pigz's reading loop over get_space, blocked for space
             * 96 % of its time) hands it no work for it */
            double time = (double)rp_node_dur_sum(ci) * rp_node_oncpu_share(p, ci);
            double to = (double)x->incl * rp_node_oncpu_share(p, &p->nodes[x->callee]);
            if (time > 0.0 && to >= RP_CHAIN_SHARE * time)
                pass[x->caller] = e + 1;
            continue;
        }
        /* (of its time on CPU: being descheduled in its own frame is no
         * time it keeps from the callee) */
        double time = (double)rp_node_dur_sum(ci) -
                      (double)(rp_node_offcpu(ci) < rp_node_dur_sum(ci) ? rp_node_offcpu(ci) : 0);
        double to = (double)x->incl - callee_offcpu(p, x);
        if (to >= RP_CHAIN_SHARE * (time - ((double)x->incl - to)))
            pass[x->caller] = e + 1;
    }
    for (uint32_t e = 0; e < p->n_edges; e++) {
        const struct rp_edge *x = &p->edges[e];
        if (x->caller < n && x->caller == x->callee)
            pass[x->caller] = 0;
    }
    for (uint32_t i = 1; i < n; i++) {
        if (!pass[i])
            continue;
        const struct rp_edge *x = &p->edges[pass[i] - 1];
        uint32_t j = x->callee;
        if (!pass[j] || prev[j])
            continue;
        if ((double)x->incl >= RP_CHAIN_SHARE * (double)p->nodes[j].incl) {
            next[i] = j;
            prev[j] = i;
        }
    }
    uint32_t used = 0;
    c->start[0] = 0;
    for (uint32_t h = 1; h < n; h++) {
        if (prev[h] || !next[h])
            continue;
        uint32_t *grown = realloc(c->start, (c->n + 2) * sizeof *c->start);
        if (!grown) {
            rc = RP_ENOMEM;
            goto out;
        }
        c->start = grown;
        /* a path from a head cannot cycle; the bound guards the arrays */
        for (uint32_t i = h; i && used < n && !c->of_node[i]; i = next[i]) {
            c->member[used++] = i;
            c->of_node[i] = c->n + 1;
        }
        c->start[++c->n] = used;
    }
out:
    free(pass);
    free(next);
    free(prev);
    if (rc < 0)
        rp_chains_free(c);
    return rc;
}

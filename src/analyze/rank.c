// SPDX-License-Identifier: MIT
/*
 * rank.c - standing probability of docs/design.md §6.
 *
 * The chain: from node i the walk calls callee j with probability
 * Q_ij = w_ij / T_i, or finishes and restarts at ROOT with probability
 * Q_i,ROOT = stop_i / T_i (plus any explicit edges into ROOT), where
 * T_i = stop_i + sum_k w_ik.  A row with T_i == 0, and ROOT's row when it has
 * no out-weight, restarts at ROOT.  With the restart, every step's chance
 * alpha of starting again at ROOT,
 *
 *     P = (1 - alpha) Q + alpha 1 e_ROOT^T,     pi = pi P,  sum pi = 1.
 *
 * (Not PageRank's jump to any node, alpha/N each: a node that keeps the
 * walker, deep recursion, would turn that into a standing of its own.)
 *
 * Regenerative form.  Plain power iteration converges like
 * ((1-alpha) |lambda_2(Q)|)^k, and a call graph is nearly periodic
 * (ROOT -> main -> ... -> leaf -> ROOT), so |lambda_2| is close to 1:
 * thousands of steps at alpha = 0.01, none at all as alpha -> 0.  The chain
 * is regenerative instead: all finished mass goes to ROOT.  With sum pi = 1
 * the stationary equations of the nodes but ROOT are
 * pi_j = (1-alpha) sum_i pi_i Q_ij; write y for pi without ROOT, M for
 * (1-alpha) Q among non-ROOT nodes and q for (1-alpha) Q_ROOT,j.  Then
 *
 *     y = pi_ROOT q + y M,   so   y = pi_ROOT u  with
 *     u = q (I - M)^-1  (expected visits per visit of ROOT: involvement),
 *     and pi_ROOT = 1 / (1 + sum u)  from sum pi = 1.
 *
 * (ROOT's own equation then holds by itself: the rows of P sum to 1.)
 *
 * Solving x = b + x M (x = u) component by component.
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
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "common/error.h"
#include "profile.h"
#include "rank_int.h"
#include "trace/format.h"

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

/* The nodes [i0, i1) of a profile to be given their pi (whence their
 * standing and involvement) and rank (store_ranks). */
struct store_half {
    struct rp_profile *p;
    const double *pi;
    const uint32_t *rank;
    uint32_t i0, i1;
};

/* Gives the nodes of a store_half their pi and rank.
 * Takes a void * to run on a thread (rp_rank_run_pair).  Cannot fail. */
static void store_ranks(void *arg)
{
    const struct store_half *h = arg;
    const double *pi = h->pi;

    for (uint32_t i = h->i0; i < h->i1; i++) {
        struct rp_node *x = &h->p->nodes[i];
        if (i == 0) {
            x->pi = 1.0; /* (its involvement) */
            x->rank = 0;
            continue;
        }
        x->pi = is_span(x) ? pi[i] : 0.0; /* (0 / rest and 0 / pi_ROOT are 0) */
        x->rank = h->rank[i - 1];
    }
}

/* An edge of a profile whose time is set aside from the ranking: its index
 * and its time, put back afterwards (holds_restore). */
struct held {
    uint32_t k;
    uint64_t incl;
};

/*
 * Lock holds as intervals (docs/locks.md): the code run while a lock is
 * held is the work of the functions that run it, already in their time
 * (their callee edges and own time partition it), so with time weights an
 * edge into a hold weighs nothing: it would count that time twice.  The
 * edges keep their time for the reports: it is set aside here (the time of
 * p's edges into a lock hold set to 0, kept in *held, *nheld entries) and
 * put back by holds_restore.  (Before format 1.3 holds were frames whose
 * callees were that code: their edges partition time and keep their
 * weight.)  Returns 0 or RP_ENOMEM (nothing changed).
 */
static int holds_set_aside(struct rp_profile *p, struct held **held, uint32_t *nheld)
{
    const struct rp_node *nd = p->nodes;
    uint32_t n = p->n_nodes, m = 0;

    *held = NULL;
    *nheld = 0;
    for (uint32_t k = 0; k < p->n_edges; k++)
        m += p->edges[k].callee < n && nd[p->edges[k].callee].kind == RP_KIND_LOCK_HOLD;
    if (!m)
        return 0;
    if (!(*held = malloc(m * sizeof **held)))
        return RP_ENOMEM;
    for (uint32_t k = 0; k < p->n_edges; k++)
        if (p->edges[k].callee < n && nd[p->edges[k].callee].kind == RP_KIND_LOCK_HOLD) {
            (*held)[(*nheld)++] = (struct held){k, p->edges[k].incl};
            p->edges[k].incl = 0;
        }
    return 0;
}

/* Puts back the time holds_set_aside set aside, and frees held.  Cannot
 * fail. */
static void holds_restore(struct rp_profile *p, struct held *held, uint32_t nheld)
{
    for (uint32_t k = 0; k < nheld; k++)
        p->edges[held[k].k].incl = held[k].incl;
    free(held);
}

/*
 * CPU weights (docs/ranking.md): an edge weighs its time on CPU, its time
 * less its callee's share of time off CPU and waiting below it
 * (rp_node_oncpu_share), and nothing into a node that is no work (time off
 * CPU, a wait, a lock wait, a lock hold); a node's own part is its
 * exclusive time, on CPU already.  Fills w, one per edge of p.  Cannot
 * fail.
 */
static void cpu_weights(const struct rp_profile *p, uint64_t *w)
{
    for (uint32_t k = 0; k < p->n_edges; k++) {
        const struct rp_edge *e = &p->edges[k];
        const struct rp_node *c = &p->nodes[e->callee];
        w[k] = rp_kind_idle(c->kind)
                   ? 0
                   : (uint64_t)llround((double)e->incl * rp_node_oncpu_share(p, c));
    }
}

/* The ranking's input read in place from p's nodes and edges: weights by
 * calls, or by time (weight, enum rp_weight); by time on CPU, the edges'
 * weights from cw (cpu_weights).  Cannot fail. */
static struct input profile_input(const struct rp_profile *p, int weight, const uint64_t *cw)
{
    int calls = weight == RP_WEIGHT_CALLS;
    const struct rp_node *nd = p->nodes;
    const struct rp_edge *ed = p->edges;
    /* call weights: an edge weighs the activations under its calls when
     * the replay counted them (docs/ranking.md), else its direct calls */
    const char *ecalls = !ed                   ? NULL
                         : p->incl_calls_known ? (const char *)&ed->incl_calls
                                               : (const char *)&ed->calls;
    struct input g = {p->n_nodes,
                      p->n_edges,
                      calls ? (const char *)&nd->calls : (const char *)&nd->excl,
                      ed ? (const char *)&ed->caller : NULL,
                      ed ? (const char *)&ed->callee : NULL,
                      !ed     ? NULL
                      : calls ? ecalls
                      : cw    ? (const char *)cw
                              : (const char *)&ed->incl,
                      sizeof *nd,
                      sizeof *ed,
                      sizeof *ed,
                      cw ? sizeof *cw : sizeof *ed,
                      1};
    return g;
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
    double *own = NULL;     /* pi, in the solver's flow block */
    uint64_t *spare = NULL; /* the sort's scratch, where the ranks end */
    unsigned char *span = NULL;
    uint32_t *rank = NULL, n, it = 0;
    double res = 0.0;
    int rc;
    struct held *held = NULL;
    uint32_t nheld = 0;
    uint64_t *cw = NULL;

    if (!p || p->n_nodes == 0 || !p->nodes || (p->n_edges && !p->edges))
        return RP_EINVAL;
    if (!o)
        o = &def;
    n = p->n_nodes;
    int weight = p->rank.weight;
    rc = RP_ENOMEM;
    /* (time on CPU: 8 bytes per edge while the ranking runs) */
    if (weight == RP_WEIGHT_CPU && p->n_edges) {
        if (!(cw = rp_big_malloc((size_t)p->n_edges * sizeof *cw)))
            goto out;
        cpu_weights(p, cw);
    }
    struct input g = profile_input(p, weight, cw);
    if (weight == RP_WEIGHT_TIME && p->hold_intervals && holds_set_aside(p, &held, &nheld) < 0)
        goto out;
    /* pi comes in the solver's flow block, and the sort's scratch is
     * allocated once the solver's arrays are freed: the ranking keeps
     * nothing of its own but a byte per node (span) */
    span = malloc(n);
    if (!span)
        goto out;
    struct span_job sj = {p->nodes, n, span};
    struct touch t = {.then = span_flags, .then_arg = &sj};
    rc = rp_rank_solve_input(&g, o->alpha, o->tol, o->max_iter, o->threads, NULL, &own, &it, &res,
                             &t);
    if (rc)
        goto out;
    if (!t.ran) /* no helper ran (one thread, a small graph) */
        span_flags(&sj);
    const double *pi = own;

    /* Instants and counters are nodes without spans: the report does not
     * list them, so they get no standing (and rank after every span: their
     * sort key is 0, node_key). */
    double rest = 0.0;
    for (uint32_t i = 1; i < n; i++)
        rest += span[i] ? pi[i] : 0.0;
    int threads = rp_rank_threads(o->threads, n);
    rc = RP_ENOMEM;
    if (n > 1 && !(spare = rp_big_malloc((size_t)2 * (n - 1) * sizeof(uint64_t))))
        goto out;
    if (n > 1 && (rc = rp_rank_assign(n - 1, pi, span, spare, &rank, threads)))
        goto out;
    struct store_half lo = {p, pi, rank, 0, n / 2}, hi = {p, pi, rank, n / 2, n};
    rp_rank_run_pair(threads, store_ranks, &lo, store_ranks, &hi);
    p->rank.alpha = o->alpha;
    p->rank.rest = rest;
    p->rank.pi_root = pi[0];
    p->rank.iterations = it;
    p->rank.residual = res;
    rc = 0;
out:
    holds_restore(p, held, nheld);
    free(cw);
    free(own);
    free(spare); /* rank points into it */
    free(span);
    rp_big_trim(); /* and their pages, not kept under the flags and the report */
    return rc;
}

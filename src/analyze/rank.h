// SPDX-License-Identifier: MIT
/*
 * rank.h - standing probability of docs/design.md §6: the call-or-finish Markov
 * chain over the caller->callee graph, with restart at ROOT (each finished
 * activation, and any step with chance alpha), solved in its regenerative
 * form one strongly connected
 * component at a time (the method is explained at the top of rank.c).
 */
#ifndef RP_ANALYZE_RANK_H
#define RP_ANALYZE_RANK_H

#include <stdint.h>

struct rp_profile;

/*
 * A graph in edge-list form.  Node 0 is ROOT.  stop[i] is x_i,stop (ROOT's is
 * ignored); edge e goes src[e] -> dst[e] with weight w[e] >= 0.  Edges into
 * ROOT are allowed but unusual; duplicate (src, dst) pairs add up.
 */
struct rp_graph {
    uint32_t n, m;
    const double *stop;
    const uint32_t *src, *dst;
    const double *w;
};

struct rp_rank_opts {
    double alpha;      /* restart at ROOT, default 0.01; 0 <= alpha < 1 */
    double tol;        /* L1 change to stop at, default 1e-12 */
    uint32_t max_iter; /* default 10000 */
    uint32_t threads;  /* 0: two on a large graph (512K edges or more) when two
                          processors are online, else one; 1: one; 2 or
                          more: two.  The result is the same bit for bit. */
};

/*
 * Computes pi (n entries, sums to 1, pi = pi P) into the caller's array.
 * Returns 0, RP_EINVAL for a malformed graph (n == 0 or n > 2^31, an
 * index >= n, a negative or non-finite weight, alpha outside [0, 1)), or
 * RP_ENOMEM.
 * *iterations and *residual (last L1 change) are always set on success; if
 * the cap was hit, the result is the last iterate and *residual says how far
 * it is from converged.
 */
int rp_rank_solve(const struct rp_graph *g, const struct rp_rank_opts *o, double *pi,
                  uint32_t *iterations, double *residual);

/*
 * Ranks a profile: builds the graph from its nodes and edges with the weight
 * kind p->rank.weight, solves it, and fills each node's standing,
 * involvement and rank (1 = highest standing) and p->rank.  Returns 0 or a
 * negative RP_E* code.
 */
int rp_rank_profile(struct rp_profile *p, const struct rp_rank_opts *o);

/* For the tests (rank_solve.c, "The whole graph in id order"): the edges from
 * which a graph is first swept whole (lowered so that small graphs take
 * that path), how far back an edge to a lower id is short (lowered so that
 * a small graph has long ones), whether an acyclic graph may keep its
 * values in its flow's block (0: never, to compare the bits), and the
 * sweeps the whole graph took in this thread's last ranking (0 when the
 * component solver ranked it). */
extern uint32_t rp_rank_whole_min;
extern int rp_rank_whole_apart;
extern uint32_t rp_rank_whole_span;
extern _Thread_local uint32_t rp_rank_whole_sweeps;

#endif /* RP_ANALYZE_RANK_H */

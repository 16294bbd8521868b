// SPDX-License-Identifier: MIT
/*
 * chains.h - pass-through chains (docs/table.md, "Pass-through chains"):
 * runs of procedures that each hand nearly all their time to one callee,
 * each called almost only by the one before.  The table shows a chain as one
 * row; the JSON marks its nodes.
 */
#ifndef RP_ANALYZE_CHAINS_H
#define RP_ANALYZE_CHAINS_H

#include <stdint.h>

struct rp_profile;

/* Share of a frame's time it hands to its one callee, and of that callee's
 * time that comes from it, for the two to be linked. */
#define RP_CHAIN_SHARE 0.95

struct rp_chains {
    uint32_t n;        /* chains, each of 2 nodes or more */
    uint32_t *start;   /* n + 1 offsets into member: chain c is member[start[c] .. start[c+1]) */
    uint32_t *member;  /* node indices, caller first */
    uint32_t *of_node; /* per node index: chain index + 1, 0 = in no chain */
    uint32_t n_nodes;  /* entries of of_node */
};

/*
 * Finds the chains of a named, ranked and flagged profile into c (zeroed
 * first).  A node passes through when it is a procedure that carries no
 * flag, has no edge to itself, and hands at least RP_CHAIN_SHARE of its
 * time (dur_sum: every activation; time off CPU in its own frame and in the
 * callee's during these calls left out) to one procedure callee; two such nodes
 * i -> j are linked when that edge also carries at least RP_CHAIN_SHARE of
 * j's inclusive time.  A chain is a maximal run of links.  Returns 0,
 * RP_EINVAL for a NULL argument, or RP_ENOMEM (c is then empty).
 */
int rp_chains_find(const struct rp_profile *p, struct rp_chains *c);

/* The chain of node i (index), or -1 when it is in none.  Cannot fail. */
static inline int64_t rp_chain_of(const struct rp_chains *c, uint32_t i)
{
    return c && c->of_node && i < c->n_nodes && c->of_node[i] ? (int64_t)c->of_node[i] - 1 : -1;
}

/* Frees what c holds and zeroes it.  Cannot fail. */
void rp_chains_free(struct rp_chains *c);

#endif /* RP_ANALYZE_CHAINS_H */

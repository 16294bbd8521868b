// SPDX-License-Identifier: MIT
/*
 * rank_int.h - the ranking's internals, shared by its files (rank.h is the
 * interface; the method is explained at the top of rank.c):
 *
 *   rank.c          ranking a profile: the graph read in place, the ranks
 *   rank_solve.c    the solve: the whole graph in id order, or the
 *                   component solver's sweeps
 *   rank_graph.c    pass (1): the adjacency by node from the input
 *   rank_layout.c   passes (2) and (3): components, solving order, the
 *                   adjacency by position
 *   rank_sort.c     the ranks' radix sort
 *   rank_threads.c  the helper thread that runs half a pass
 *
 * Calls go one way: rank.c -> rank_solve.c -> rank_layout.c ->
 * rank_graph.c -> rank_threads.c.  The loops over edges stay inside their
 * file (static inline); what crosses files is per pass.
 */
#ifndef RP_ANALYZE_RANK_INT_H
#define RP_ANALYZE_RANK_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "rank.h"

#include "common/compiler.h"

#define DEFAULT_ALPHA    0.01
#define DEFAULT_TOL      1e-12
#define DEFAULT_MAX_ITER 10000u

#define FIN 0x80000000u /* tarjan(): in idx[], the node has finished; n <= FIN */

/* How many edges ahead the sweeps and pushes prefetch the flow they will add
 * to; the edge arrays have this many spare entries (position 0) at the end.
 * An edge takes a few nanoseconds and a cache miss about a hundred, so the
 * prefetch must run a few dozen edges ahead to hide the miss; 16 is too
 * few, and beyond 32 nothing more is hidden. */
#define AHEAD 32u

/* How many edges ahead Tarjan's scan prefetches the state (idx[]) and the
 * row bounds of the callee it will look at; the adjacency by node has this
 * many spare entries (node 0) after its last edge. */
#define TJ_AHEAD 8u

/* An edge to a lower id at most this many ids back is short (whole_graph,
 * "The whole graph in id order", rank_solve.c); a variable for the tests,
 * whose graphs are small (rp_rank_whole_span, rank_graph.c). */
#define WHOLE_SPAN 16384u

/* Spare entries after the adjacency by node's last edge (node 0), for the
 * look-ahead of Tarjan's scan and of the whole-graph sweeps. */
#define DST1_SPARE (AHEAD > TJ_AHEAD ? AHEAD : TJ_AHEAD)

/*
 * The input, read in place: the arrays of a struct rp_graph (double weights)
 * or a profile's nodes and edges (uint64_t weights, every field a fixed
 * number of bytes from the same field of the previous element), so that the
 * report path copies nothing.  Element k of a field is at base + k * step.
 */
struct input {
    uint32_t n, m;
    const char *stop, *src, *dst, *w;
    size_t stop_step, src_step, dst_step, w_step;
    int u64; /* stop and w are uint64_t, not double */
};

static inline uint32_t in_src(const struct input *g, uint32_t e)
{
    uint32_t v;
    memcpy(&v, g->src + (size_t)e * g->src_step, sizeof v);
    return v;
}

static inline uint32_t in_dst(const struct input *g, uint32_t e)
{
    uint32_t v;
    memcpy(&v, g->dst + (size_t)e * g->dst_step, sizeof v);
    return v;
}

/* Element k of a weight field (stop or w) as a double. */
static inline double in_weight(const struct input *g, const char *base, size_t step, uint32_t k)
{
    if (g->u64) {
        uint64_t v;
        memcpy(&v, base + (size_t)k * step, sizeof v);
        return (double)v;
    }
    double d;
    memcpy(&d, base + (size_t)k * step, sizeof d);
    return d;
}

/*
 * The solver's working set.  Nodes have a position in solving order
 * (components in topological order, each a range of positions); everything
 * but the first adjacency is indexed by position.
 */
struct solver {
    uint32_t n, ncomp;
    int threads; /* 2: the passes that split in halves run them side by side */
    /* out-adjacency by node (CSR), without self loops and edges into ROOT;
     * freed once the one by position is built */
    uint32_t *off1, *dst1; /* n + 1; callee node of each edge */
    uint32_t nback;        /* edges to a callee with a lower id than the caller */
    uint32_t nshort;       /* those of them WHOLE_SPAN ids back or less */
    double *c1;            /* (1 - alpha) * w / T_src */
    /* the nodes whose 1 / (1 - (1-alpha) Q_ii) is not 1 (a self loop; 0
     * for one that never leaves itself), in increasing order, and that
     * factor: every other node's is 1, which leaves its value as it is */
    uint32_t nsl;
    uint32_t *sl_node;
    double *sl_inv;
    uint32_t *order;     /* position -> node */
    uint32_t *pos;       /* node -> position */
    uint32_t *cbeg;      /* first position of each component, in the order
                            Tarjan completes them (reverse topological) */
    unsigned char *byid; /* by component: its nodes in id order (choose_order) */
    double *invden;      /* by position */
    /* edges by caller position, callee as a position: ioff/idst/ic the ones
     * inside a component of two or more nodes (nin of them, counted by
     * Tarjan), xoff/xdst/xc the others; idst and xdst are parts of edst
     * (AHEAD spare entries after each), ic and xc of ec */
    uint32_t nin;
    uint32_t *ioff, *idst, *xoff, *xdst, *edst;
    double *ic, *xc, *ec;
    double *in; /* flow received, by position (by id when the whole graph is
                   swept); pi once solved without a caller's array */
    double *x;  /* by position: u, the visits per descent from ROOT */
};

struct pair_job {
    void (*fn)(void *);
    void *arg;
};

/* A helper thread running one job. */
struct helper {
    pthread_t t;
    struct pair_job job;
    int on; /* started */
};

/* Blocks for a helper to fault in (rp_rank_touch_pages), and a job it runs after
 * them, if any: something the caller needs only once the solve is done. */
#define TOUCH_MAX 16

struct touch {
    unsigned k;
    void *p[TOUCH_MAX];
    size_t len[TOUCH_MAX];
    void (*then)(void *); /* or NULL */
    void *then_arg;
    int ran; /* set by the helper once then() has run */
};

/* rank_threads.c */

/* Starts fn(arg) on a helper thread when threads > 1.  Returns 1 if it
 * started, 0 if not (one thread, or none could be started): the caller
 * then does the job itself or goes without. */
RP_HIDDEN int rp_rank_helper_start(struct helper *h, int threads, void (*fn)(void *), void *arg);

/* Waits for a helper that rp_rank_helper_start started; nothing if it did
 * not.  Cannot fail. */
RP_HIDDEN void rp_rank_helper_join(struct helper *h);

/* Runs fb(b) on a helper thread and fa(a) on this one, and returns when both
 * are done; runs both here, a first, when threads < 2 or no thread can be
 * started.  Cannot fail. */
RP_HIDDEN void rp_rank_run_pair(int threads, void (*fa)(void *), void *a, void (*fb)(void *),
                                void *b);

/* Adds the len bytes at p to t, which must have room (TOUCH_MAX).  Cannot
 * fail. */
RP_HIDDEN void rp_rank_touch_add(struct touch *t, void *p, size_t len);

/* Faults in the blocks of a struct touch (uninitialized: garbage is
 * written there), then runs its job.  Takes a void * to run on a helper.
 * Cannot fail. */
RP_HIDDEN void rp_rank_touch_pages(void *arg);

/* rank_graph.c */

/*
 * Builds the out-adjacency by node (callees and coefficients (1 - alpha)
 * w_ij / T_i, without self loops and edges into ROOT) and the self-loop
 * factors (sl_node, sl_inv).  Returns
 * 0, RP_EINVAL (a negative or non-finite stop weight, an index >= n, a
 * negative or non-finite edge weight, a row total that overflows), or
 * RP_ENOMEM.
 */
RP_HIDDEN int rp_rank_adjacency(const struct input *g, double alpha, struct solver *sv);

/* rank_layout.c */

/*
 * Builds what the component solver needs once the adjacency by node is
 * built: components and solving order, the adjacency by position, with
 * the blocks of t faulted in meanwhile.  On failure the caller still frees
 * sv.  Returns 0 or RP_ENOMEM.
 */
RP_HIDDEN int rp_rank_layout(struct solver *sv, struct touch *t);

/* rank_solve.c */

/* How many threads to rank with (1 or 2) for a pass over items.  Cannot
 * fail. */
RP_HIDDEN int rp_rank_threads(uint32_t threads, uint32_t items);

/* rp_rank_solve on an input of either kind, with t's blocks faulted in
 * meanwhile; with pi NULL, into the solver's flow block, handed over in
 * *own (it takes no memory that the solve did not take already; the caller
 * frees it).  Returns 0, RP_EINVAL or RP_ENOMEM. */
RP_HIDDEN int rp_rank_solve_input(const struct input *g, double alpha, double tol,
                                  uint32_t max_iter, uint32_t threads, double *pi, double **own,
                                  uint32_t *iterations, double *residual, struct touch *t);

/* rank_sort.c */

/* Sorts the nodes 1..n by their key (node_key: pi[i] and span[i]), larger
 * first, ties by lower index, in buf (2n items of scratch), and stores each
 * one's place (1, 2, ...) in (*rank)[i - 1], which points into buf.
 * Returns 0 or RP_ENOMEM. */
RP_HIDDEN int rp_rank_assign(uint32_t n, const double *pi, const unsigned char *span, uint64_t *buf,
                             uint32_t **rank, int threads);

/* The sort key of node i: pi's bits (order-preserving for pi >= 0) plus one
 * for a span, so that every span ranks before the nodes without spans
 * (instants and counters: span[i] 0), whose key is 0.  Cannot fail. */
static inline uint64_t node_key(const double *pi, const unsigned char *span, uint32_t i)
{
    uint64_t bits;
    memcpy(&bits, &pi[i], sizeof bits);
    return !span[i] ? 0 : pi[i] > 0.0 ? bits + 1 : 1;
}

#endif /* RP_ANALYZE_RANK_INT_H */

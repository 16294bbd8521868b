// SPDX-License-Identifier: MIT
/*
 * cct_int.h - what the two halves of the calling-context tree's build
 * share: the sequential build and the rules of a span (cct.c), the
 * parallel build over a file's chunks (cct_par.c).  Internal to
 * src/analyze/.
 */
#ifndef RP_ANALYZE_CCT_INT_H
#define RP_ANALYZE_CCT_INT_H

#include <stdint.h>

#include "cct.h"
#include "comp.h"
#include "trace/reader.h"

#include "common/compiler.h"

struct frame {
    uint32_t node;          /* its path, 0 when the filter leaves it out */
    uint32_t id;            /* its span id */
    uint32_t up;            /* 1 + the index of its nearest kept caller's frame, 0 = none */
    uint32_t kdepth;        /* kept spans on the stack down from it, itself included */
    uint8_t in_inc, in_exc; /* it or a caller is an included / excluded function */
    uint64_t start, callees;
    uint64_t ev; /* the number of its ENTER among the thread's events */
};

struct thread {
    uint32_t tid;
    uint32_t root; /* the parent of its outermost spans: 0, or its thread node */
    struct frame *stack;
    uint32_t depth, cap;
    uint64_t events; /* its events so far */
    uint64_t last;   /* ticks of its last event */
};

struct priv {
    uint32_t *slots; /* node index, 0 = empty (the root is never looked up) */
    uint32_t nslots; /* a power of two */
    struct thread *threads;
    uint32_t nthreads, capthreads, last; /* last: the thread of the previous event */
    uint32_t n_ids;
    int by_thread;
    struct rp_comp comp;
    uint64_t end_ticks;  /* the END chunk's, 0 without one */
    uint32_t offid;      /* the off-CPU node's trace id (0 = none): its spans and PAUSE
                            events are the writer's, not counted, not compensated */
    const uint32_t *map; /* the file's ids -> the tree's (a merged profile's), or NULL */
    /* a chunk replayed on its own (parallel build): its first u frames came
     * from before it (U); how each of them ended is noted in uo[] */
    uint32_t u, low; /* low: the frames below it are still U's (none ended yet) */
    struct uo *uo;
    uint32_t capuo;
};

/* How a frame of U ended in its chunk (parallel build, see below). */
enum { UO_OPEN, UO_COUNTED, UO_LEFT, UO_DROPPED };
struct uo {
    uint32_t node; /* UO_COUNTED: its path */
    uint32_t up;   /* its frame's up (its kept caller's frame + 1) */
    uint8_t how;
    uint8_t comp;     /* UO_COUNTED: compensated (comp.h rp_comp_span) */
    uint64_t raw, k;  /* its measured duration and correction */
    uint64_t dur;     /* the duration the chunk gave it */
    uint64_t callees; /* its callees' time in the chunk */
};

/* cct.c: a thread's state (created on first use; NULL when out of
 * memory), a new thread node under the root (0: out of memory), a tree
 * started (RP_ENOMEM), a chunk's events on a thread (as the sequential
 * build; 0, the decoder's code or event_on's with *cb set), a span pushed
 * (0 or RP_ENOMEM) and ended, a path's child (0: out of memory), a file
 * walked in order (as rp_cct_build). */
RP_HIDDEN struct thread *rp_cct_thread(struct rp_cct *t, struct priv *v, uint32_t tid);
RP_HIDDEN uint32_t rp_cct_thread_node(struct rp_cct *t, uint32_t tid);
RP_HIDDEN int rp_cct_start(struct rp_cct *t, int by_thread);
RP_HIDDEN int rp_cct_chunk_on(struct rp_cct *t, struct priv *v, struct thread *th,
                              struct rp_evdec *d, int *any, int *cb);
RP_HIDDEN int rp_cct_push(struct rp_cct *t, struct priv *v, struct thread *th, uint32_t id,
                          uint64_t ticks);
RP_HIDDEN void rp_cct_pop(struct rp_cct *t, struct thread *th, uint64_t now);
RP_HIDDEN uint32_t rp_cct_child(struct rp_cct *t, struct priv *v, uint32_t parent, uint32_t id);
RP_HIDDEN int rp_cct_add_file_seq(struct rp_cct *t, const char *path,
                                  const struct rp_replay_opts *o, int progress, char *err,
                                  size_t errsz);

/* cct_par.c: the replayers besides this thread (RANKPROF_REPLAY_JOBS, else
 * one per CPU less one; cannot fail), and a file walked by them (as
 * rp_cct_build). */
RP_HIDDEN uint32_t rp_cct_par_workers(void);
RP_HIDDEN int rp_cct_add_file_par(struct rp_cct *t, const char *path,
                                  const struct rp_replay_opts *o, uint32_t nworkers, int progress,
                                  char *err, size_t errsz);

#endif /* RP_ANALYZE_CCT_INT_H */

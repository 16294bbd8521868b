// SPDX-License-Identifier: MIT
/*
 * jobring.h - a ring of jobs run by worker threads and joined in order, for
 * the walks that take a file's chunks in parallel (cct_par.c: the call
 * paths; src/report/export_tlpar.c: the timelines).  The report's replay
 * has its own, lock-free ring (workers.c).
 *
 * The reading thread fills the ring's next slot with a chunk and submits
 * it; runners take the submitted jobs in order and run them: the workers,
 * and the reading thread itself while it waits for the oldest job
 * (rp_jobring_oldest), so that nobody waits while there is work.  A runner
 * has a number, 0 for the reading thread and 1..started for the workers,
 * so that each has resources of its own (a tree, an encoder).  Jobs are
 * joined in the order they were submitted:
 *
 *   submitted >= claimed >= joined;  slot (seq % nslots) is free iff
 *   seq >= submitted or seq < joined.
 *
 * Memory: the ring; the jobs are the caller's.
 */
#ifndef RP_ANALYZE_JOBRING_H
#define RP_ANALYZE_JOBRING_H

#include <pthread.h>
#include <stdint.h>

#define RP_JOBRING_SLOTS   16
#define RP_JOBRING_WORKERS 8

struct rp_jobring;

struct rp_jobring_worker {
    struct rp_jobring *R;
    uint32_t runner; /* 1.. */
    pthread_t th;
};

struct rp_jobring {
    /* guards the counters, done and stop; callers may wait on conditions
     * of their own under it (the timelines' writer) */
    pthread_mutex_t mu;
    pthread_cond_t work, done_cv;
    uint64_t submitted, claimed, joined;
    uint8_t done[RP_JOBRING_SLOTS];
    int stop;
    void (*run)(void *ctx, uint32_t runner, uint32_t slot);
    void *ctx;
    uint32_t started; /* workers running */
    struct rp_jobring_worker w[RP_JOBRING_WORKERS];
};

/* Makes R empty, its jobs run by run(ctx, runner, slot).  Cannot fail. */
void rp_jobring_init(struct rp_jobring *R, void (*run)(void *, uint32_t, uint32_t), void *ctx);

/* Starts up to n workers (at most RP_JOBRING_WORKERS): fewer when a
 * thread cannot be made, and the reading thread runs the rest.  Returns
 * how many run (R->started).  Cannot fail. */
uint32_t rp_jobring_start(struct rp_jobring *R, uint32_t n);

/* The slot to fill next; the ring must not be full (rp_jobring_full).
 * Cannot fail. */
static inline uint32_t rp_jobring_next(const struct rp_jobring *R)
{
    return (uint32_t)(R->submitted % RP_JOBRING_SLOTS);
}

/* Whether every slot holds a job not joined yet.  Cannot fail. */
static inline int rp_jobring_full(const struct rp_jobring *R)
{
    return R->submitted - R->joined == RP_JOBRING_SLOTS;
}

/* Whether jobs are submitted and not joined.  Cannot fail. */
static inline int rp_jobring_out(const struct rp_jobring *R)
{
    return R->joined < R->submitted;
}

/* Submits the job filled in slot rp_jobring_next.  Cannot fail. */
void rp_jobring_submit(struct rp_jobring *R);

/* Waits until the oldest job not joined has run, running jobs not yet
 * claimed here (runner 0) meanwhile; returns its slot.  There must be one
 * (rp_jobring_out).  Cannot fail. */
uint32_t rp_jobring_oldest(struct rp_jobring *R);

/* Counts the oldest job as joined (after rp_jobring_oldest): its slot is
 * free.  Cannot fail. */
void rp_jobring_joined(struct rp_jobring *R);

/* Stops the workers once the jobs submitted have run, and frees R's
 * locks.  Cannot fail. */
void rp_jobring_destroy(struct rp_jobring *R);

#endif

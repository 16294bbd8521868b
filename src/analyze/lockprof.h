// SPDX-License-Identifier: MIT
/*
 * lockprof.h - the lock profile (docs/design.md §5): wait and hold per lock and per
 * call site, and the outcome of every acquisition, for `rankprof locks`.
 *
 * Collected by a second, streamed pass over the trace (spanwalk.h) after
 * the replay has built, named and flagged the profile.  Memory grows with
 * distinct (call site, lock) pairs, not with the trace.
 */
#ifndef RP_ANALYZE_LOCKPROF_H
#define RP_ANALYZE_LOCKPROF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "replay.h" /* struct rp_profile, rp_node, rp_replay_opts */

/* Counts and sums of one lock, or of one lock at one call site. */
struct rp_lock_stat {
    uint64_t acquisitions;                           /* hold spans */
    uint64_t contended;                              /* waits that ended in a grant */
    uint64_t failed;                                 /* waits that ended without the lock */
    uint64_t waits;                                  /* wait spans = contended + failed */
    uint64_t wait_sum, wait_max, hold_sum, hold_max; /* ticks */
};

struct rp_lock_site {
    uint32_t caller; /* node index of the span below the lock's (0 = ROOT) */
    struct rp_lock_stat s;
};

struct rp_lock {
    char *name;     /* owned: "counter_lock", "api_lock", "lock@0x55d0..." */
    uint32_t flags; /* RP_FLAG_CONTENDED if any node of the lock has it */
    struct rp_lock_stat s;
    struct rp_lock_site *sites; /* sorted like the locks */
    uint32_t nsites;
    int cond; /* a condition variable: only waits (s.waits, wait_*), listed apart */
};

/* Accumulation keyed by (caller, lock node), then grouped by lock name. */
struct rp_locks {
    struct rp_lock_acc *acc; /* open addressing, see locks.c */
    uint32_t nacc, capacc;
    struct rp_lock *locks; /* after rp_locks_finish */
    uint32_t nlocks;
    /* set by the caller before rp_locks_build, or NULL: only the waits and
     * holds it keeps are counted (spanfilter.h; mark by p's node indices) */
    const struct rp_span_filter *filter;
};

enum rp_locks_sort {
    RP_LOCKS_SORT_WAIT,
    RP_LOCKS_SORT_HOLD,
    RP_LOCKS_SORT_ACQ,
    RP_LOCKS_SORT_CONTENDED,
    RP_LOCKS_SORT_NAME
};

/*
 * Builds the lock profile of the trace at path into *L (zeroed by the
 * caller), reading it with the same options o as the replay that built p
 * (named and flagged).  Locks are grouped by name (a lock's wait and hold
 * nodes, and the sites of a named lock macro), sorted by sort; sites by
 * wait, then hold.  Returns 0, RP_ENOMEM, or the walk's error with err set.
 */
int rp_locks_build(struct rp_locks *L, const char *path, const struct rp_replay_opts *o,
                   const struct rp_profile *p, enum rp_locks_sort sort, char *err, size_t errsz);

void rp_locks_free(struct rp_locks *L);

/* The name of the lock of a lock-wait or lock-hold node, without the
 * [wait]/[hold] suffix: its given or symbol name, else "lock@0x<address>"
 * written into buf; for the wait node of a condition variable (kind wait,
 * class lock) "cond <name>" or "cond@0x<address>".  Returns that name.
 * Cannot fail. */
const char *rp_lock_display_name(const struct rp_node *n, char *buf, size_t bufsz);

#endif /* RP_ANALYZE_LOCKPROF_H */

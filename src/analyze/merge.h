// SPDX-License-Identifier: MIT
/*
 * merge.h - one profile from the trace files of several processes (a run's
 * set, set.h): each file is replayed and named on its own, then merged into
 * the one profile, so that memory holds the merged profile and one file's
 * at a time, never every file's.
 *
 * Nodes are matched by kind, class, name, source file and line, and module
 * (never by address: each process has its own layout); calls, times, overruns, histograms and edges
 * are summed, minima and maxima combined, the mean and variance pooled.
 * Threads are listed per process (rp_thread.pid) and every process is one
 * rp_proc.  Ticks are summed as they are: the processes of a run on one
 * machine share the clock, and the merged profile takes the first file's
 * ns_per_tick (a process whose tick length differs by more than 1% is
 * named in a warning, as is one recorded on another host: its ticks are
 * another clock's, and nothing aligns them yet).  Rank and flags are computed on the merged profile
 * afterwards, as for a single file.
 */
#ifndef RP_ANALYZE_MERGE_H
#define RP_ANALYZE_MERGE_H

#include <stdint.h>

#include "emap.h"
#include "profile.h"

struct rp_merge {
    struct rp_profile *dst;
    int keep_maps;    /* keep each rp_proc's map (set after rp_merge_init): the second
                         passes over the files need them, the profile alone does not */
    uint32_t *nslots; /* open addressing on the node key: node index, 0 = empty */
    uint32_t n_nslots;
    struct rp_emap edges; /* on (caller, callee); its edges are dst's */
    int one;              /* folding one process's copies (rp_merge_fold) */
};

/* Starts merging into *dst, which must be zeroed.  Returns 0 or RP_ENOMEM. */
int rp_merge_init(struct rp_merge *m, struct rp_profile *dst);

/*
 * Adds src, a finished and named profile (rp_replay_file, then
 * rp_profile_symbolize), to the merged profile; who says which process it
 * is (file, run, host, ppid, start_ns: copied; pid, events, lost, threads
 * and ended are taken from src).  The new rp_proc keeps src's overhead and
 * end and, with m->keep_maps, for every node index of src the merged
 * node's (map; 0 for undefined ids): what a second pass over src's file
 * needs (4 bytes per id of each file).  Returns 0 or RP_ENOMEM (the merged
 * profile is then incomplete but consistent, and must still be freed).
 */
int rp_merge_add(struct rp_merge *m, const struct rp_profile *src, const struct rp_proc *who);

/* Whether p was merged (rp_merge_add): its ids are not any one file's, and
 * a second pass reads p->procs' files with their maps (kept only with
 * keep_maps).  Cannot fail. */
static inline int rp_profile_merged(const struct rp_profile *p)
{
    return p->n_procs && p->procs[0].n_map;
}

/*
 * Folds the copies of a function in p, a named profile of one file (its
 * one rp_proc set): a static inline function of a header that the
 * compiler put out of line in several translation units has one address
 * (one node) in each, with one name, file, line and module.  When p has
 * such copies it is merged, as one process, into a profile where each
 * function is one node, keeping what only one file has (its maps, window,
 * ring and fatal-stack fields, its warnings as they are) and its id map
 * (rp_profile_merged is then true: the second passes map the file's ids);
 * p->folded counts the copies.  Functions without a name or a source file
 * are not folded (two static functions of one name), nor locks or points.
 * Returns 0 (p unchanged when it has no copies) or RP_ENOMEM (p unchanged).
 */
int rp_merge_fold(struct rp_profile *p);

/* Frees the merge's own tables; the merged profile stays the caller's. */
void rp_merge_free(struct rp_merge *m);

#endif /* RP_ANALYZE_MERGE_H */

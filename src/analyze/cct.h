// SPDX-License-Identifier: MIT
/*
 * cct.h - the calling-context tree (call-path profile of docs/design.md §5): one
 * node per distinct path of spans from a thread's empty stack, e.g.
 * main;a;b;leaf, with the calls, inclusive and exclusive time of the
 * activations that ran on exactly that path.  It feeds the folded stacks,
 * the flame graph and pprof's samples.
 *
 * Built by streaming over the events (walk.h) with the matching rules of
 * replay.c and its overhead compensation (comp.h), so that for every span
 * id the sums over its paths equal the flat profile: Σ calls = node.calls
 * and Σ excl = node.excl (as long as no path's exclusive total is negative,
 * which shows as 0, over-compensated).
 *
 * Memory grows with the number of distinct paths (and the deepest stack),
 * never with the length of the trace.  Threads share one tree, or with
 * by_thread each thread has its own under a node of its own (id 0, depth
 * 1, tid set) so that paths read "thread;main;a".
 */
#ifndef RP_ANALYZE_CCT_H
#define RP_ANALYZE_CCT_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "replay.h"
#include "spanfilter.h"

struct rp_cct_node {
    uint32_t id;             /* span id (index in rp_profile.nodes); 0 = the root or a thread */
    uint32_t tid;            /* a thread node's thread (by_thread trees), else 0 */
    uint32_t parent;         /* the calling path; the root's own is 0 */
    uint32_t child, sibling; /* first callee path, next path of the same caller; 0 = none */
    uint32_t depth;          /* 0 for the root, 1 for a thread's outermost span */
    uint64_t calls;          /* completed activations on this path */
    uint64_t incl;           /* ticks: their summed durations */
    uint64_t excl;           /* ticks: incl minus the time of their callees */
};

/* Which spans a call-path or timeline export keeps (`rankprof export
 * --depth/--min-duration/--function/--exclude/--window`): spanfilter.h. */

struct rp_cct {
    struct rp_cct_node *nodes; /* nodes[0] is the root */
    uint32_t n, cap;
    uint64_t unclosed;  /* spans dropped without time (lost events) */
    uint64_t unwound;   /* spans ended where the stack unwound past them (replay.c) */
    uint64_t cut;       /* spans ended at their thread's end (replay.c) */
    uint64_t unmatched; /* exits with no open span */
    void *priv;         /* the path hash and the threads' stacks */
    const struct rp_span_filter *filter; /* set by the caller before building, or NULL:
                                            then only kept spans are counted, and a path
                                            of a dropped span may stay with 0 calls */
};

/*
 * The exports that write every path with its whole stack (folded, pprof)
 * write the sum of the paths' depths in frames: quadratic in a recursion's
 * depth (a million deep: 5 * 10^11 frames, terabytes).  Above this many
 * they refuse and point at --depth (rp_cct_frames_check).
 */
#define RP_CCT_FRAMES_MAX (1ull << 30)

/* RP_EINVAL, with why in err (format: the export's name), when t's paths,
 * each written with its whole stack, hold more than RP_CCT_FRAMES_MAX
 * frames (the sum of their depths); else 0. */
static inline int rp_cct_frames_check(const struct rp_cct *t, const char *format, char *err,
                                      size_t errsz)
{
    uint64_t n = 0;
    uint32_t deep = 0;
    for (uint32_t i = 1; i < t->n; i++) {
        n += t->nodes[i].depth;
        deep = t->nodes[i].depth > deep ? t->nodes[i].depth : deep;
    }
    if (n <= RP_CCT_FRAMES_MAX)
        return 0;
    snprintf(err, errsz,
             "%s writes each call path with its whole stack: these %u paths hold %llu frames "
             "(the deepest %u), more than %llu; limit the depth with --depth N (a span below "
             "it counts as its caller's own time)",
             format, t->n - 1, (unsigned long long)n, deep, (unsigned long long)RP_CCT_FRAMES_MAX);
    return RP_EINVAL;
}

/*
 * Builds *t (zeroed by the caller) from the trace at path, a subtree per
 * thread when by_thread is set; p is the profile the first pass replayed
 * from it with o (ids must be below its node count; its overhead is
 * subtracted unless o->no_compensate).  Returns 0,
 * RP_ENOMEM, RP_EFORMAT for an id the profile does not know, or a reader
 * error; err names the file and offset.  *t must be freed in all cases.
 */
int rp_cct_build(struct rp_cct *t, const char *path, const struct rp_replay_opts *o,
                 const struct rp_profile *p, int by_thread, int progress, char *err, size_t errsz);

/*
 * rp_cct_build over every file of a profile merged from a run's files
 * (merge.h: rp_profile_merged, each rp_proc with its id map): one tree whose
 * ids are p's, each file with its own overhead and end.  Fails as
 * rp_cct_build, or RP_EINVAL for a profile that is not merged.
 */
int rp_cct_build_set(struct rp_cct *t, const struct rp_replay_opts *o, const struct rp_profile *p,
                     int by_thread, int progress, char *err, size_t errsz);

/* Frees what *t owns and zeroes it. */
void rp_cct_free(struct rp_cct *t);

#endif /* RP_ANALYZE_CCT_H */

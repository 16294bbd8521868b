// SPDX-License-Identifier: MIT
/*
 * replay.h - turning a trace into a profile: every thread's events are
 * replayed on a stack of open spans, streaming, one chunk at a time.
 */
#ifndef RP_ANALYZE_REPLAY_H
#define RP_ANALYZE_REPLAY_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "spanfilter.h"

struct rp_replay_opts {
    int force;         /* analyse the valid part of a damaged file, saying what was skipped */
    uint32_t tid;      /* only this thread; 0 = all */
    int no_compensate; /* do not subtract the recorder's own cost (on by default) */
    /* only the spans it keeps are counted (spanfilter.h), or NULL: its mark is
     * by the file's ids, its times in the file's ticks */
    const struct rp_span_filter *filter;
    /* count spans outside the program's (replay_int.h: rp_span_outside) as
     * any other, as calls from ROOT (report --outside) */
    int keep_outside;
    /* replay no EVENTS chunk: the definitions, names, clocks, threads and
     * INFO only, for a pass that walks the events itself (the call-path
     * exports); the events are counted from the chunks' headers, no span
     * is, and p->defs_only is set */
    int defs_only;
};

/*
 * Per-chunk callback for tools that want to see the raw chunks too (dump,
 * info).  Return < 0 to stop the replay with that code.
 */
struct rp_chunk;
typedef int (*rp_chunk_fn)(void *ctx, const struct rp_profile *p, const struct rp_chunk *c);

/*
 * Reads the trace at path into *p (which must be zeroed).  Returns 0 or a
 * negative RP_E* code with a message naming the file and offset in err.
 * Warnings that do not stop the analysis (a missing END chunk, chunks
 * skipped under force) are left in p->warnings.  On error *p holds what was
 * read so far and must still be freed with rp_profile_free().
 */
int rp_replay_file(const char *path, const struct rp_replay_opts *o, struct rp_profile *p,
                   rp_chunk_fn fn, void *ctx, char *err, size_t errsz);

/*
 * Names function nodes (and lock addresses that are data symbols) from the
 * MAPS chunk and the binaries.  Nodes that cannot be named keep their
 * address.  Returns 0 or RP_ENOMEM.
 */
int rp_profile_symbolize(struct rp_profile *p);

/* How many worker threads replay chunks, or walk them (the timelines,
 * the call paths), besides the calling thread, which works too:
 * RANKPROF_REPLAY_JOBS if set (0 = none: everything in order on the
 * calling thread), else one per CPU less one.  Cannot fail. */
int rp_workers_count(void);

#endif /* RP_ANALYZE_REPLAY_H */

// SPDX-License-Identifier: MIT
/*
 * walk.h - streaming over a trace's events one at a time, in file order, for
 * the exports that need every span (src/report/spanwalk.c: timelines,
 * locks, sequence diagrams) or every call path (cct.c).  Memory: one chunk;
 * nothing grows with the length of the trace.
 *
 * The walk does not interpret events: spans are matched by the callers
 * (cct.c, spanwalk.c) with the rules of replay.c, so that an export and the
 * report agree on every count.
 */
#ifndef RP_ANALYZE_WALK_H
#define RP_ANALYZE_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "replay.h"
#include "trace/reader.h"

/* Callbacks; any may be NULL.  A negative return stops the walk with it. */
struct rp_walk_ops {
    /* a THREAD chunk: the thread's name (not NUL-terminated) */
    int (*thread)(void *ctx, uint32_t tid, const char *name, size_t len);
    /* one decoded event of thread tid */
    int (*event)(void *ctx, uint32_t tid, const struct rp_event *ev);
};

/*
 * Reads the trace at path and calls ops for every THREAD chunk and every
 * event (only thread o->tid's when it is set; under o->force, damaged
 * chunks are skipped and a truncated or damaged end ends the walk, as the
 * replay does).  With progress set and stderr a terminal, shows the share of
 * the file read on stderr.  Returns 0, a negative RP_E* code of the reader
 * (err names the file and offset), RP_EFORMAT for a malformed event (err
 * names its offset), or a callback's negative code (err left empty).
 */
int rp_walk_file(const char *path, const struct rp_replay_opts *o, const struct rp_walk_ops *ops,
                 void *ctx, int progress, char *err, size_t errsz);

/* Redraws "rankprof: reading FILE: NN%" on stderr when the percentage *shown
 * changed.  Cannot fail (a failed write to stderr is not an error). */
void rp_walk_progress(const struct rp_reader *r, int *shown);

/* The code of a walk that stopped with rc, given the reader r's own error
 * (an rc from rp_reader_next with nothing in err yet): under force a
 * truncated or damaged end is the end of the trace (0), as the replay
 * takes it; else r's message goes to err.  Cannot fail. */
int rp_walk_reader_rc(const struct rp_reader *r, int rc, int force, char *err, size_t errsz);

/* The message for decoder d stopping with an error in chunk c: a wrong
 * event count, or the malformed event's file offset.  Cannot fail. */
void rp_walk_evdec_err(const struct rp_chunk *c, const struct rp_evdec *d, char *err, size_t errsz);

#endif /* RP_ANALYZE_WALK_H */

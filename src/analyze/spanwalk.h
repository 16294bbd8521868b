// SPDX-License-Identifier: MIT
/*
 * spanwalk.h - the spans of a trace one by one, with their start, end,
 * parent and argument: each thread's events (streamed by rp_walk_file,
 * src/analyze/walk.h) matched on a stack of open spans.  For the outputs
 * that need single spans rather than sums: the lock profile's outcomes and
 * call sites (locks.c), sequence diagrams (seq.c) and the timelines
 * (export_timeline.c, for chrome and perfetto).  The one place where the
 * exports match spans, with the rules of replay.c, so that every export
 * agrees with the report on every count.
 *
 * Lock holds of format 1.3 are intervals, not frames (docs/locks.md): their
 * begin is reported at the acquisition (parent: the innermost span then,
 * the acquirer; not pushed, so depth is that of the spans open), their end
 * at the release, wherever the calls around them are, and they may end in
 * any order.
 *
 * Memory: the open spans and held locks of each thread; nothing grows with
 * the trace.
 */
#ifndef RP_ANALYZE_SPANWALK_H
#define RP_ANALYZE_SPANWALK_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/replay.h"

/* A span as the callbacks see it. */
struct rp_sw_span {
    uint32_t tid;
    uint32_t id;     /* node index */
    uint32_t parent; /* node of the span below it on the stack, 0 = none (ROOT) */
    uint32_t depth;  /* spans below it */
    uint64_t start;  /* ticks */
    uint64_t end;    /* ticks; 0 in a begin callback */
    uint64_t dur;    /* ticks, end - start less the recorder's pauses inside
                        it (PAUSE) and its overhead as the replay subtracts
                        them (comp.h; no overhead with no_compensate): the
                        span's time in the report; 0 until it ends */
    uint64_t arg;    /* the last ARG given to it, valid if has_arg */
    int has_arg;
    int cut;  /* in an end callback: 0, or how the span was left without its exit
                 (replay.c): RP_SW_UNWOUND (the stack unwound past it: a longjmp, an
                 exception), RP_SW_CUT (its thread or the process ended) */
    int hold; /* a lock hold of format 1.3 (HOLD_BEGIN/HOLD_END): an interval, not a frame */
};

enum { RP_SW_UNWOUND = 1, RP_SW_CUT = 2 };

/* Callbacks; any may be NULL.  A negative return stops the walk with it. */
struct rp_sw_ops {
    int (*begin)(void *ctx, const struct rp_sw_span *s);
    int (*end)(void *ctx, const struct rp_sw_span *s);
    /* an INSTANT (counter 0, value = its argument) or a COUNTER sample
     * (counter 1); parent is the thread's innermost open span, 0 if none */
    int (*instant)(void *ctx, uint32_t tid, uint32_t id, uint64_t ticks, int64_t value, int counter,
                   uint32_t parent);
    /* a span the replay drops without time (LOST drops every open span),
     * with end = the ticks where it was dropped.  Called innermost first.
     * NULL: dropped spans are not reported.  (Spans left without their exit
     * otherwise end with time: an end callback with cut set.) */
    int (*drop)(void *ctx, const struct rp_sw_span *s);
    /* a PAUSE record: the thread was in the recorder (encoding its buffer,
     * or waiting for the writer) from start to end, time the replay takes
     * out of every span open then (format.h).  parent and depth as for a
     * span begun there: the innermost open span, and the spans open.  start
     * is never before the thread's previous event, so the interval nests
     * in the parent. */
    int (*pause)(void *ctx, uint32_t tid, uint64_t start, uint64_t end, uint32_t parent,
                 uint32_t depth);
    /* a LOST record: count events lost at ticks (after its drops) */
    int (*lost)(void *ctx, uint32_t tid, uint64_t ticks, uint64_t count);
    /* a THREAD chunk: the thread's name (not NUL-terminated) */
    int (*thread)(void *ctx, uint32_t tid, const char *name, size_t len);
    /* a merged profile's file p->procs[k] begins (its events follow, until
     * the next); not called for one file */
    int (*file)(void *ctx, uint32_t k);
    /* an ARG given to the open span s (s->arg: the one before, if has_arg):
     * a span may have several (librankprof-mpi's, format.h rp_mpi_arg) */
    int (*arg)(void *ctx, const struct rp_sw_span *s, uint64_t value);
};

/*
 * Walks the trace at path (o: force, thread filter and compensation, as for
 * the replay that built p, whose nodes give the ids' range and whose
 * overhead is subtracted in dur; NULL for none).  Spans are matched with the
 * rules of replay.c: EXIT ends the innermost span, EXIT_ID the named one
 * (ending those above it, cut), UNWIND those above the named one (or all,
 * id 0), LOST drops every open span (no end callback, only drop), PAUSE
 * shortens every open span's dur by its ticks (and calls pause); spans
 * open at the end end, cut, at the END chunk's ticks (or the thread's last
 * event).  With progress set
 * and stderr a terminal, the share of the file read is shown.  Returns 0,
 * RP_ENOMEM, the reader's code or RP_EFORMAT with err naming the file and
 * offset, or a callback's negative code (err left empty).
 *
 * When p is a profile merged from a run's files (merge.h: rp_profile_merged),
 * path is not read: every file of p is walked in turn, in p->procs order,
 * its ids mapped to p's and its own overhead subtracted; thread ids are
 * the kernel's (rp_thread.pid says whose).
 */
int rp_sw_file(const char *path, const struct rp_replay_opts *o, const struct rp_profile *p,
               const struct rp_sw_ops *ops, void *ctx, int progress, char *err, size_t errsz);

#endif /* RP_ANALYZE_SPANWALK_H */

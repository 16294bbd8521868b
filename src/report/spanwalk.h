/*
 * spanwalk.h - the spans of a trace one by one, with their start, end,
 * parent and argument: each thread's events (streamed by rp_walk_file,
 * src/analyze/walk.h) matched on a stack of open spans.  For the outputs
 * that need single spans rather than sums: the lock profile's outcomes and
 * call sites (locks.c) and sequence diagrams (seq.c).
 *
 * Memory: the open spans of each thread; nothing grows with the trace.
 */
#ifndef RP_REPORT_SPANWALK_H
#define RP_REPORT_SPANWALK_H

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
    uint64_t arg;    /* the last ARG given to it, valid if has_arg */
    int has_arg;
};

/* Callbacks; any may be NULL.  A negative return stops the walk with it. */
struct rp_sw_ops {
    int (*begin)(void *ctx, const struct rp_sw_span *s);
    int (*end)(void *ctx, const struct rp_sw_span *s);
    /* an INSTANT (counter 0, value = its argument) or a COUNTER sample
     * (counter 1); parent is the thread's innermost open span, 0 if none */
    int (*instant)(void *ctx, uint32_t tid, uint32_t id, uint64_t ticks, int64_t value, int counter,
                   uint32_t parent);
};

/*
 * Walks the trace at path (o: force and thread filter, as for the replay
 * that built p, whose nodes give the ids' range; NULL for none).  Spans are matched with the
 * rules of replay.c: EXIT ends the innermost span, EXIT_ID the named one
 * (dropping those above it), LOST drops every open span; dropped spans and
 * spans open at the end get no end callback.  Returns 0, RP_ENOMEM, the
 * reader's code or RP_EFORMAT with err naming the file and offset, or a
 * callback's negative code.
 */
int rp_sw_file(const char *path, const struct rp_replay_opts *o, const struct rp_profile *p,
               const struct rp_sw_ops *ops, void *ctx, char *err, size_t errsz);

#endif /* RP_REPORT_SPANWALK_H */

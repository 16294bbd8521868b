// SPDX-License-Identifier: MIT
/*
 * export_timeline.c - matched spans for the timeline formats (chrome,
 * perfetto), streamed from the events (export.h, rp_export_timeline).
 *
 * The spans are spanwalk.h's, matched with replay.c's rules; a span the
 * replay drops without time (LOST) is ended where it was dropped with why =
 * "unclosed", so that a viewer still nests it; a span left without its exit
 * says why = "unwound" (a longjmp, an exception) or "cut" (its thread or
 * the process ended while it was open).  The recorder's pauses (PAUSE: a
 * thread encoding its buffer or waiting for the writer) go to ops->pause,
 * nested in the innermost open span; the spans keep their times on the
 * clock, so the threads stay aligned, and a span's time in the report is
 * its slice less the pauses inside it.  Lock holds of a trace where they
 * are intervals (format 1.3, rp_sw_span.hold) do not nest with the calls:
 * they go to ops->hold when they end, for a track of their own.
 *
 * With a filter (ctx->filter, cct.h) a span's begin is told only when it is
 * kept: at once without a minimum duration, else when it (or a span it
 * calls) ends long enough, so begins may come after later events of other
 * spans, each with its own ticks.  Instants, counters and lock holds are
 * told when their thread's innermost open span is inside the kept subtrees
 * (not under an excluded function, under an included one if any).  Memory:
 * the open spans of each thread.
 */
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/error.h"

#include "report/export.h"
#include "analyze/spanwalk.h"
#include "trace/format.h"

/* A filtered thread's open span (struct tl's). */
struct tl_frame {
    uint32_t id, kdepth;
    uint64_t start;
    uint8_t keep, begun, in_inc, in_exc;
};

struct tl_thread {
    uint32_t tid, cap;
    uint32_t open;          /* its open spans */
    struct tl_frame *stack; /* by the span's depth */
};

struct tl {
    const struct rp_timeline_ops *ops;
    void *cookie;
    const struct rp_profile *p;
    const struct rp_span_filter *filter; /* or NULL */
    struct tl_thread *threads;
    uint32_t nthreads, capthreads, last;
};

/* The state of thread tid, created on first use; NULL when out of memory. */
static struct tl_thread *thread_of(struct tl *t, uint32_t tid)
{
    struct tl_thread *th = NULL;
    if (t->last < t->nthreads && t->threads[t->last].tid == tid)
        th = &t->threads[t->last];
    for (uint32_t i = 0; !th && i < t->nthreads; i++)
        if (t->threads[i].tid == tid)
            th = &t->threads[t->last = i];
    if (!th) {
        if (rp_grow(&t->threads, &t->capthreads, t->nthreads + 1, sizeof(*t->threads), 8) < 0)
            return NULL;
        th = &t->threads[t->last = t->nthreads++];
        *th = (struct tl_thread){.tid = tid};
    }
    return th;
}

/* The frame at depth of thread tid, created with room; NULL when out of
 * memory.  Sets the thread's open spans to open. */
static struct tl_frame *frame_at(struct tl *t, uint32_t tid, uint32_t depth, uint32_t open)
{
    struct tl_thread *th = thread_of(t, tid);
    if (!th)
        return NULL;
    th->open = open;
    if (rp_grow(&th->stack, &th->cap, depth + 1, sizeof(*th->stack), 16) < 0)
        return NULL;
    return &th->stack[depth];
}

/* Whether an instant or hold of thread tid, with depth spans open (-1:
 * as many as the filter last saw), is inside the kept subtrees.  Out of
 * memory it is. */
static int inside(struct tl *t, uint32_t tid, int64_t depth)
{
    const struct rp_span_filter *flt = t->filter;
    struct tl_thread *th = flt ? thread_of(t, tid) : NULL;
    if (!th)
        return 1;
    if (depth < 0)
        depth = th->open;
    const struct tl_frame *f = depth && depth <= th->cap ? &th->stack[depth - 1] : NULL;
    int inc = f && f->in_inc, exc = f && f->in_exc;
    return !exc && (!flt->has_include || inc);
}

/* Tells the begins still untold of the kept spans of tid at depths 0..depth. */
static int flush_begins(struct tl *t, uint32_t tid, uint32_t depth)
{
    for (uint32_t d = 0; d <= depth; d++) {
        struct tl_frame *f = frame_at(t, tid, d, depth + 1);
        if (!f)
            return RP_ENOMEM;
        if (f->keep && !f->begun) {
            f->begun = 1;
            int rc = t->ops->begin ? t->ops->begin(t->cookie, tid, f->id, f->start) : 0;
            if (rc < 0)
                return rc;
        }
    }
    return 0;
}

/* Filters a span's begin: pushes its frame; returns 1 to tell it now, 0 not
 * (yet), RP_ENOMEM. */
static int filter_begin(struct tl *t, const struct rp_sw_span *s)
{
    const struct rp_span_filter *flt = t->filter;
    struct tl_frame *f = frame_at(t, s->tid, s->depth, s->depth + 1);
    if (!f)
        return RP_ENOMEM;
    const struct tl_frame *up = s->depth ? f - 1 : NULL;
    struct rp_sf_frame su, sf;
    if (up)
        su = (struct rp_sf_frame){.kdepth = up->kdepth, .inc = up->in_inc, .exc = up->in_exc};
    rp_sf_enter(flt, up ? &su : NULL, s->id, s->start, &sf);
    *f = (struct tl_frame){.id = s->id, .start = s->start};
    f->in_inc = sf.inc;
    f->in_exc = sf.exc;
    f->keep = sf.keep;
    f->kdepth = sf.kdepth;
    f->begun = f->keep && !flt->min_ticks;
    return f->begun;
}

/* Filters a span's end (dur: its time): 1 to tell it, 0 not, or a code. */
static int filter_end(struct tl *t, const struct rp_sw_span *s, uint64_t dur)
{
    struct tl_frame *f = frame_at(t, s->tid, s->depth, s->depth + 1);
    if (!f)
        return RP_ENOMEM;
    if (f->keep && !f->begun && dur >= t->filter->min_ticks) {
        int rc = flush_begins(t, s->tid, s->depth);
        if (rc < 0)
            return rc;
    }
    thread_of(t, s->tid)->open = s->depth;
    return f->begun; /* a begun span ends, even short: its callees were long */
}

/* A lock hold that is an interval, not a frame (format 1.3). */
static int interval(const struct tl *t, const struct rp_sw_span *s)
{
    (void)t;
    return s->hold; /* (p->hold_intervals is not known without a replay: defs_only) */
}

static int on_begin(void *ctx, const struct rp_sw_span *s)
{
    struct tl *t = ctx;
    if (interval(t, s)) /* told whole when it ends */
        return 0;
    int rc = t->filter ? filter_begin(t, s) : 1;
    if (rc <= 0)
        return rc;
    return t->ops->begin ? t->ops->begin(t->cookie, s->tid, s->id, s->start) : 0;
}

static int on_end(void *ctx, const struct rp_sw_span *s)
{
    struct tl *t = ctx;
    const char *why = s->cut == RP_SW_UNWOUND ? "unwound" : s->cut == RP_SW_CUT ? "cut" : NULL;
    if (interval(t, s)) {
        if (!inside(t, s->tid, s->depth))
            return 0;
        return t->ops->hold ? t->ops->hold(t->cookie, s->tid, s->id, s->start, s->end, why) : 0;
    }
    int rc = t->filter ? filter_end(t, s, s->dur) : 1;
    if (rc <= 0)
        return rc;
    if (t->ops->span)
        return t->ops->span(t->cookie, s->tid, s->id, s->start, s->end, s->arg, why);
    return t->ops->end ? t->ops->end(t->cookie, s->tid, s->id, s->end, s->arg, why) : 0;
}

static int on_drop(void *ctx, const struct rp_sw_span *s)
{
    struct tl *t = ctx;
    if (interval(t, s) && !inside(t, s->tid, s->depth))
        return 0;
    if (interval(t, s))
        return t->ops->hold ? t->ops->hold(t->cookie, s->tid, s->id, s->start, s->end, "unclosed")
                            : 0;
    int rc = t->filter ? filter_end(t, s, s->end > s->start ? s->end - s->start : 0) : 1;
    if (rc <= 0)
        return rc;
    if (t->ops->span)
        return t->ops->span(t->cookie, s->tid, s->id, s->start, s->end, s->arg, "unclosed");
    return t->ops->end ? t->ops->end(t->cookie, s->tid, s->id, s->end, s->arg, "unclosed") : 0;
}

static int on_instant(void *ctx, uint32_t tid, uint32_t id, uint64_t ticks, int64_t value,
                      int counter, uint32_t parent)
{
    struct tl *t = ctx;
    (void)parent;
    if (!inside(t, tid, -1))
        return 0;
    if (counter)
        return t->ops->counter ? t->ops->counter(t->cookie, tid, id, ticks, value) : 0;
    return t->ops->instant ? t->ops->instant(t->cookie, tid, id, ticks, (uint64_t)value) : 0;
}

/* A PAUSE, handed on (ops->pause).  With a filter, only inside a span
 * whose begin was told already (so a span whose begin waits for its
 * duration shows none), or with no span open and nothing included by
 * name.  Returns 0, RP_ENOMEM or the callback's code. */
static int on_pause(void *ctx, uint32_t tid, uint64_t start, uint64_t end, uint32_t parent,
                    uint32_t depth)
{
    struct tl *t = ctx;
    (void)parent;
    if (!t->ops->pause)
        return 0;
    if (t->filter) {
        const struct tl_thread *th = thread_of(t, tid);
        if (!th)
            return RP_ENOMEM;
        if (depth ? depth > th->cap || !th->stack[depth - 1].begun : t->filter->has_include)
            return 0;
    }
    return t->ops->pause(t->cookie, tid, start, end);
}

static int on_lost(void *ctx, uint32_t tid, uint64_t ticks, uint64_t count)
{
    const struct tl *t = ctx;
    return t->ops->lost ? t->ops->lost(t->cookie, tid, ticks, count) : 0;
}

/* The thread's name, handed on NUL-terminated (cut at 255 bytes). */
static int on_thread(void *ctx, uint32_t tid, const char *name, size_t len)
{
    const struct tl *t = ctx;
    char buf[256];
    if (!t->ops->thread)
        return 0;
    size_t n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
    memcpy(buf, name, n);
    buf[n] = 0;
    return t->ops->thread(t->cookie, tid, buf);
}

static int on_file(void *ctx, uint32_t k)
{
    const struct tl *t = ctx;
    return t->ops->file ? t->ops->file(t->cookie, k) : 0;
}

static int on_arg(void *ctx, const struct rp_sw_span *s, uint64_t value)
{
    const struct tl *t = ctx;
    return t->ops->arg ? t->ops->arg(t->cookie, s->tid, s->id, value) : 0;
}

int rp_export_timeline(const struct rp_export_ctx *ctx, const struct rp_timeline_ops *ops,
                       void *cookie)
{
    static const struct rp_sw_ops swops = {.begin = on_begin,
                                           .end = on_end,
                                           .drop = on_drop,
                                           .instant = on_instant,
                                           .pause = on_pause,
                                           .lost = on_lost,
                                           .thread = on_thread,
                                           .file = on_file,
                                           .arg = on_arg};
    struct tl t = {.ops = ops, .cookie = cookie, .p = ctx->p, .filter = ctx->filter};
    int rc = rp_sw_file(ctx->input, ctx->replay, ctx->p, &swops, &t, ctx->progress, ctx->err,
                        ctx->errsz);
    for (uint32_t i = 0; i < t.nthreads; i++)
        free(t.threads[i].stack);
    free(t.threads);
    return rc;
}

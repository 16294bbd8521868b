// SPDX-License-Identifier: MIT
/*
 * export_timeline.c - matched spans for the timeline formats (chrome,
 * perfetto), streamed from the events (export.h, rp_export_timeline).
 *
 * The spans are spanwalk.h's, matched with replay.c's rules; a span the
 * replay drops without time (LOST) is ended where it was dropped with why =
 * "unclosed", so that a viewer still nests it; a span left without its exit
 * says why = "unwound" (a longjmp, an exception) or "cut" (its thread or
 * the process ended while it was open).  Lock holds of a trace where they
 * are intervals (format 1.3, p->hold_intervals) do not nest with the calls:
 * they go to ops->hold when they end, for a track of their own.  Memory:
 * the open spans of each thread.
 */
#include <string.h>

#include "report/export.h"
#include "analyze/spanwalk.h"
#include "trace/format.h"

struct tl {
    const struct rp_timeline_ops *ops;
    void *cookie;
    const struct rp_profile *p;
};

/* A lock hold that is an interval, not a frame (format 1.3). */
static int interval(const struct tl *t, const struct rp_sw_span *s)
{
    return t->p->hold_intervals && t->p->nodes[s->id].kind == RP_KIND_LOCK_HOLD;
}

static int on_begin(void *ctx, const struct rp_sw_span *s)
{
    const struct tl *t = ctx;
    if (interval(t, s)) /* told whole when it ends */
        return 0;
    return t->ops->begin ? t->ops->begin(t->cookie, s->tid, s->id, s->start) : 0;
}

static int on_end(void *ctx, const struct rp_sw_span *s)
{
    const struct tl *t = ctx;
    const char *why = s->cut == RP_SW_UNWOUND ? "unwound" : s->cut == RP_SW_CUT ? "cut" : NULL;
    if (interval(t, s))
        return t->ops->hold ? t->ops->hold(t->cookie, s->tid, s->id, s->start, s->end, why) : 0;
    return t->ops->end ? t->ops->end(t->cookie, s->tid, s->id, s->end, s->arg, why) : 0;
}

static int on_drop(void *ctx, const struct rp_sw_span *s)
{
    const struct tl *t = ctx;
    if (interval(t, s))
        return t->ops->hold ? t->ops->hold(t->cookie, s->tid, s->id, s->start, s->end, "unclosed")
                            : 0;
    return t->ops->end ? t->ops->end(t->cookie, s->tid, s->id, s->end, s->arg, "unclosed") : 0;
}

static int on_instant(void *ctx, uint32_t tid, uint32_t id, uint64_t ticks, int64_t value,
                      int counter, uint32_t parent)
{
    const struct tl *t = ctx;
    (void)parent;
    if (counter)
        return t->ops->counter ? t->ops->counter(t->cookie, tid, id, ticks, value) : 0;
    return t->ops->instant ? t->ops->instant(t->cookie, tid, id, ticks, (uint64_t)value) : 0;
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

int rp_export_timeline(const struct rp_export_ctx *ctx, const struct rp_timeline_ops *ops,
                       void *cookie)
{
    static const struct rp_sw_ops swops = {.begin = on_begin,
                                           .end = on_end,
                                           .drop = on_drop,
                                           .instant = on_instant,
                                           .lost = on_lost,
                                           .thread = on_thread};
    struct tl t = {.ops = ops, .cookie = cookie, .p = ctx->p};
    return rp_sw_file(ctx->input, ctx->replay, ctx->p, &swops, &t, ctx->progress, ctx->err,
                      ctx->errsz);
}

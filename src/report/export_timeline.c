/*
 * export_timeline.c - matched spans for the timeline formats (chrome,
 * perfetto), streamed from the events (export.h, rp_export_timeline).
 *
 * Each thread keeps a stack of open spans {id, last ARG}.  The rules are
 * replay.c's: EXIT ends the innermost span (none open: an unmatched exit,
 * ignored); EXIT_ID ends the named span, after ending the spans above it as
 * "unclosed"; LOST ends every open span as "unclosed"; the end of the trace
 * ends what is still open, at the thread's last event, as "unclosed".
 * Memory: the open spans and one record per thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/walk.h"
#include "common/error.h"
#include "report/export.h"

struct open_span {
    uint32_t id;
    uint64_t arg;
};

struct tl_thread {
    uint32_t tid;
    struct open_span *stack;
    uint32_t depth, cap;
    uint64_t last; /* ticks of its last event */
};

struct tl {
    const struct rp_export_ctx *ctx;
    const struct rp_timeline_ops *ops;
    void *cookie;
    struct tl_thread *threads;
    uint32_t n, cap, hit;
};

/* The state of thread tid, created on first use; NULL when out of memory. */
static struct tl_thread *thread_of(struct tl *t, uint32_t tid)
{
    if (t->hit < t->n && t->threads[t->hit].tid == tid)
        return &t->threads[t->hit];
    for (uint32_t i = 0; i < t->n; i++)
        if (t->threads[i].tid == tid)
            return &t->threads[t->hit = i];
    if (t->n == t->cap) {
        uint32_t nc = t->cap ? 2 * t->cap : 8;
        struct tl_thread *nt = realloc(t->threads, nc * sizeof(*nt));
        if (!nt)
            return NULL;
        t->threads = nt;
        t->cap = nc;
    }
    t->threads[t->n] = (struct tl_thread){.tid = tid};
    return &t->threads[t->hit = t->n++];
}

/* Ends th's spans down to depth `to`, the innermost first. */
static int end_to(struct tl *t, struct tl_thread *th, uint32_t to, uint64_t ticks, const char *why)
{
    int rc = 0;
    while (th->depth > to && rc >= 0) {
        struct open_span *s = &th->stack[--th->depth];
        if (t->ops->end)
            rc = t->ops->end(t->cookie, th->tid, s->id, ticks, s->arg, why);
    }
    return rc < 0 ? rc : 0;
}

/* walk.h callback: a THREAD chunk, handed on NUL-terminated. */
static int on_thread(void *cookie, uint32_t tid, const char *name, size_t len)
{
    struct tl *t = cookie;
    char buf[256];
    if (!t->ops->thread)
        return 0;
    size_t n = len < sizeof(buf) - 1 ? len : sizeof(buf) - 1;
    memcpy(buf, name, n);
    buf[n] = 0;
    return t->ops->thread(t->cookie, tid, buf);
}

/*
 * walk.h callback: one event through the matching rules above.  Returns 0,
 * RP_ENOMEM, RP_EFORMAT for an id the profile does not know, or a
 * callback's code.
 */
static int on_event(void *cookie, uint32_t tid, const struct rp_event *ev)
{
    struct tl *t = cookie;
    const struct rp_timeline_ops *o = t->ops;
    struct tl_thread *th = thread_of(t, tid);
    uint32_t at;
    int rc;

    if (!th)
        return RP_ENOMEM;
    th->last = ev->ticks;
    if (ev->id >= t->ctx->p->n_nodes)
        return RP_EFORMAT;
    switch (ev->op) {
    case RP_OP_ENTER:
        if (th->depth == th->cap) {
            uint32_t nc = th->cap ? 2 * th->cap : 64;
            struct open_span *ns = realloc(th->stack, nc * sizeof(*ns));
            if (!ns)
                return RP_ENOMEM;
            th->stack = ns;
            th->cap = nc;
        }
        th->stack[th->depth++] = (struct open_span){ev->id, 0};
        return o->begin ? o->begin(t->cookie, tid, ev->id, ev->ticks) : 0;
    case RP_OP_EXIT:
        return th->depth ? end_to(t, th, th->depth - 1, ev->ticks, NULL) : 0;
    case RP_OP_EXIT_ID:
        for (at = th->depth; at > 0 && th->stack[at - 1].id != ev->id; at--)
            ;
        if (!at)
            return 0;
        if ((rc = end_to(t, th, at, ev->ticks, "unclosed")) < 0)
            return rc;
        return end_to(t, th, at - 1, ev->ticks, NULL);
    case RP_OP_INSTANT:
        return o->instant ? o->instant(t->cookie, tid, ev->id, ev->ticks, ev->arg) : 0;
    case RP_OP_COUNTER:
        return o->counter ? o->counter(t->cookie, tid, ev->id, ev->ticks,
                                       (int64_t)((ev->arg >> 1) ^ -(ev->arg & 1)))
                          : 0;
    case RP_OP_ARG:
        if (th->depth)
            th->stack[th->depth - 1].arg = ev->arg;
        return 0;
    case RP_OP_LOST:
        if ((rc = end_to(t, th, 0, ev->ticks, "unclosed")) < 0)
            return rc;
        return o->lost ? o->lost(t->cookie, tid, ev->ticks, ev->arg) : 0;
    default:
        return 0;
    }
}

int rp_export_timeline(const struct rp_export_ctx *ctx, const struct rp_timeline_ops *ops,
                       void *cookie)
{
    static const struct rp_walk_ops wops = {.thread = on_thread, .event = on_event};
    struct tl t = {.ctx = ctx, .ops = ops, .cookie = cookie};

    int rc = rp_walk_file(ctx->input, ctx->replay, &wops, &t, ctx->progress, ctx->err, ctx->errsz);
    if (rc == RP_EFORMAT && !ctx->err[0])
        snprintf(ctx->err, ctx->errsz, "%s: an event uses an id that no DEFS chunk defined",
                 ctx->input);
    for (uint32_t i = 0; i < t.n; i++) {
        if (rc == 0)
            rc = end_to(&t, &t.threads[i], 0, t.threads[i].last, "unclosed");
        free(t.threads[i].stack);
    }
    free(t.threads);
    return rc;
}

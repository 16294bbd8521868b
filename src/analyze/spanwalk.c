// SPDX-License-Identifier: MIT
/*
 * spanwalk.c - the spans of a trace one by one (spanwalk.h).
 *
 * Per thread, a stack of the spans whose begin was reported and whose end
 * was not (the invariant).  ENTER pushes, EXIT pops the innermost, EXIT_ID
 * pops the named span after ending those above it (as replay.c does: with
 * their time, cut = RP_SW_UNWOUND), UNWIND ends the spans above the named
 * one (RP_SW_UNWOUND) or, with id 0, every span (RP_SW_CUT), LOST drops
 * every open span, ARG sets the innermost span's argument (an io span's
 * device and bytes, a lock wait's outcome); at the end of the trace what is
 * still open ends (RP_SW_CUT) at the END chunk's ticks, or at the thread's
 * last event without one.  Events of the threads arrive chunk by chunk, so the last thread
 * looked up is cached.  An ended span's dur is what replay.c makes of it:
 * less the PAUSE ticks recorded while it was open (the recorder's time),
 * then compensated (comp.h) from the thread's events between its begin
 * and end.
 *
 * Lock holds (format 1.3, HOLD_BEGIN/HOLD_END) are intervals, not frames:
 * they go on a per-thread list of held locks, not on the stack, so they
 * need not nest with the calls around them.  HOLD_BEGIN reports the begin
 * (parent: the innermost span, the acquirer); HOLD_END ends the latest
 * hold of that lock with what the event carries (its duration, the events
 * inside, the acquirer), as the replay counts it; what LOST or the end of
 * the trace finds still held is dropped like an open span.
 */
#include "spanwalk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/comp.h"
#include "analyze/merge.h"
#include "analyze/walk.h"
#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"

/* An open span, the number of its ENTER among its thread's events, the
 * thread's PAUSE ticks before it, and its callees' time so far. */
struct sw_frame {
    struct rp_sw_span s;
    uint64_t ev;
    uint64_t pz;
    uint64_t child;
};

struct sw_thread {
    uint32_t tid;
    struct sw_frame *stack;
    uint32_t depth, cap;
    struct rp_sw_span *held; /* lock holds begun and not ended, oldest first */
    uint32_t nheld, capheld;
    uint64_t last;   /* ticks of its last event */
    uint64_t events; /* its events so far */
    uint64_t pz;     /* ticks of its PAUSE events so far */
};

struct sw {
    const struct rp_profile *p;
    struct rp_comp comp;
    const struct rp_sw_ops *ops;
    void *ctx;
    struct sw_thread *th;
    uint32_t nth, capth, last;
    uint32_t offid;      /* the off-CPU node (0 = none): its spans and PAUSE events are the
                            writer's, not counted for compensation and not compensated */
    const uint32_t *map; /* the file's ids -> p's (a merged profile), or NULL */
    uint32_t n_ids;      /* the file's ids */
    uint64_t end_ticks;  /* the file's END ticks, 0 without one */
};

/* The state of thread tid, created if new; NULL when out of memory. */
static struct sw_thread *thread_of(struct sw *w, uint32_t tid)
{
    if (w->last < w->nth && w->th[w->last].tid == tid)
        return &w->th[w->last];
    for (uint32_t i = 0; i < w->nth; i++)
        if (w->th[i].tid == tid)
            return &w->th[w->last = i];
    if (rp_grow(&w->th, &w->capth, w->nth + 1, sizeof(*w->th), 16) < 0)
        return NULL;
    struct sw_thread *t = &w->th[w->nth];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    w->last = w->nth++;
    return t;
}

/* Fills s, a span of id that begins at now on thread t under its innermost
 * open span (a frame, or a hold: not pushed).  Cannot fail. */
static void span_begun(const struct sw_thread *t, struct rp_sw_span *s, uint32_t id, uint64_t now)
{
    memset(s, 0, sizeof(*s));
    s->tid = t->tid;
    s->id = id;
    s->parent = t->depth ? t->stack[t->depth - 1].s.id : 0;
    s->depth = t->depth;
    s->start = now;
}

static int push(struct sw *w, struct sw_thread *t, uint32_t id, uint64_t now)
{
    if (rp_grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack), 64) < 0)
        return RP_ENOMEM;
    t->stack[t->depth].ev = t->events;
    t->stack[t->depth].pz = t->pz;
    t->stack[t->depth].child = 0;
    struct rp_sw_span *s = &t->stack[t->depth].s;
    span_begun(t, s, id, now);
    t->depth++;
    return w->ops->begin ? w->ops->begin(w->ctx, s) : 0;
}

/* Ends the innermost span of t at now; cut: 0 or how it was left (RP_SW_*).
 * Its time: less the pauses inside it (their ticks moved its start later in
 * the replay), then less the overhead of its events, not below its
 * callees' less the resolution (comp.h); the frame below gets it as callee
 * time. */
static int pop(struct sw *w, struct sw_thread *t, uint64_t now, int cut)
{
    struct sw_frame *f = &t->stack[--t->depth];
    struct rp_sw_span *s = &f->s;
    s->end = now >= s->start ? now : s->start;
    uint64_t start = s->start + (t->pz - f->pz);
    uint64_t raw = s->end > start ? s->end - start : 0;
    s->dur = w->offid && s->id == w->offid
                 ? raw
                 : rp_comp_dur(&w->comp, raw, t->events - f->ev - 1, f->child);
    if (t->depth)
        t->stack[t->depth - 1].child += s->dur;
    s->cut = cut;
    return w->ops->end ? w->ops->end(w->ctx, s) : 0;
}

/* Ends t's spans above depth `to` at now, the innermost first, as cut. */
static int pop_to(struct sw *w, struct sw_thread *t, uint32_t to, uint64_t now, int cut)
{
    int rc = 0;
    while (t->depth > to && rc >= 0)
        rc = pop(w, t, now, cut);
    return rc < 0 ? rc : 0;
}

/* Drops t's spans down to depth `to` at now, the innermost first. */
static int drop_to(struct sw *w, struct sw_thread *t, uint32_t to, uint64_t now)
{
    int rc = 0;
    while (t->depth > to && rc >= 0) {
        struct rp_sw_span *s = &t->stack[--t->depth].s;
        s->end = now >= s->start ? now : s->start;
        if (w->ops->drop)
            rc = w->ops->drop(w->ctx, s);
    }
    return rc < 0 ? rc : 0;
}

/* Drops t's held locks at now, the latest first. */
static int drop_held(struct sw *w, struct sw_thread *t, uint64_t now)
{
    int rc = 0;
    while (t->nheld && rc >= 0) {
        struct rp_sw_span *s = &t->held[--t->nheld];
        s->end = now >= s->start ? now : s->start;
        if (w->ops->drop)
            rc = w->ops->drop(w->ctx, s);
    }
    return rc < 0 ? rc : 0;
}

/* HOLD_BEGIN of id at now: a held lock of t, begun. */
static int hold_begin(struct sw *w, struct sw_thread *t, uint32_t id, uint64_t now)
{
    if (rp_grow(&t->held, &t->capheld, t->nheld + 1, sizeof(*t->held), 8) < 0)
        return RP_ENOMEM;
    struct rp_sw_span *s = &t->held[t->nheld++];
    span_begun(t, s, id, now);
    s->hold = 1;
    return w->ops->begin ? w->ops->begin(w->ctx, s) : 0;
}

/* HOLD_END ev: ends the latest hold of its lock (found or not: the event
 * says all), unless it names no acquisition (an unmatched exit). */
static int hold_end(struct sw *w, struct sw_thread *t, const struct rp_event *ev)
{
    if (!ev->arg3)
        return 0;
    struct rp_sw_span s = {.tid = t->tid, .id = ev->id, .depth = t->depth, .hold = 1};
    uint32_t i = t->nheld;
    while (i > 0 && t->held[i - 1].id != ev->id)
        i--;
    if (i) {
        s = t->held[i - 1];
        memmove(&t->held[i - 1], &t->held[i], (t->nheld - i) * sizeof(*t->held));
        t->nheld--;
    }
    s.parent = (uint32_t)(ev->arg3 >> 2);
    s.start = ev->ticks >= ev->arg ? ev->ticks - ev->arg : 0;
    s.end = ev->ticks;
    s.dur = rp_comp_dur(&w->comp, ev->arg, ev->arg2, 0);
    return w->ops->end ? w->ops->end(w->ctx, &s) : 0;
}

/* walk.h callback: a THREAD chunk, handed on. */
static int on_thread(void *ctx, uint32_t tid, const char *name, size_t len)
{
    struct sw *w = ctx;
    return w->ops->thread ? w->ops->thread(w->ctx, tid, name, len) : 0;
}

static int on_event(void *ctx, uint32_t tid, const struct rp_event *ev)
{
    struct sw *w = ctx;
    struct sw_thread *t = thread_of(w, tid);
    int rc;
    if (!t)
        return RP_ENOMEM;
    uint64_t before = t->last; /* (a PAUSE's start is not before it) */
    t->last = ev->ticks;
    if ((ev->op == RP_OP_ENTER || ev->op == RP_OP_EXIT_ID || ev->op == RP_OP_INSTANT ||
         ev->op == RP_OP_COUNTER || ev->op == RP_OP_UNWIND || ev->op == RP_OP_HOLD_BEGIN ||
         ev->op == RP_OP_HOLD_END) &&
        (ev->id >= w->n_ids || (ev->arg3 >> 2) >= w->n_ids))
        return RP_EFORMAT; /* the replay of the same file would have failed */
    struct rp_event mapped;
    if (w->map && (ev->id || ev->arg3 >> 2) && ev->op != RP_OP_ARG && ev->op != RP_OP_LOST &&
        ev->op != RP_OP_PAUSE) { /* into a merged profile's ids */
        mapped = *ev;
        mapped.id = w->map[ev->id < w->n_ids ? ev->id : 0];
        if (ev->op == RP_OP_HOLD_END)
            mapped.arg3 = (uint64_t)w->map[ev->arg3 >> 2] << 2 | (ev->arg3 & 3);
        if (ev->id && !mapped.id)
            return RP_EFORMAT;
        ev = &mapped;
    }
    if (!(ev->op == RP_OP_PAUSE || (w->offid && ev->op == RP_OP_ENTER && ev->id == w->offid) ||
          (w->offid && ev->op == RP_OP_EXIT && t->depth &&
           t->stack[t->depth - 1].s.id == w->offid)))
        t->events++;
    switch (ev->op) {
    case RP_OP_ENTER:
        return push(w, t, ev->id, ev->ticks);
    case RP_OP_EXIT:
        return t->depth ? pop(w, t, ev->ticks, 0) : 0;
    case RP_OP_EXIT_ID: {
        uint32_t at = t->depth;
        while (at > 0 && t->stack[at - 1].s.id != ev->id)
            at--;
        if (!at)
            return 0; /* unmatched: the replay counts it */
        if ((rc = pop_to(w, t, at, ev->ticks, RP_SW_UNWOUND)) < 0)
            return rc;
        return pop(w, t, ev->ticks, 0);
    }
    case RP_OP_UNWIND: {
        uint32_t at = t->depth;
        while (ev->id && at > 0 && t->stack[at - 1].s.id != ev->id)
            at--;
        if (ev->id && !at)
            return 0; /* not open: the replay ignores it too */
        return pop_to(w, t, ev->id ? at : 0, ev->ticks, ev->id ? RP_SW_UNWOUND : RP_SW_CUT);
    }
    case RP_OP_INSTANT:
    case RP_OP_COUNTER:
        if (!w->ops->instant)
            return 0;
        return w->ops->instant(w->ctx, tid, ev->id, ev->ticks,
                               ev->op == RP_OP_COUNTER ? rp_unzigzag(ev->arg) : (int64_t)ev->arg,
                               ev->op == RP_OP_COUNTER, t->depth ? t->stack[t->depth - 1].s.id : 0);
    case RP_OP_ARG:
        if (t->depth) {
            int arc = w->ops->arg ? w->ops->arg(w->ctx, &t->stack[t->depth - 1].s, ev->arg) : 0;
            t->stack[t->depth - 1].s.arg = ev->arg;
            t->stack[t->depth - 1].s.has_arg = 1;
            return arc;
        }
        return 0;
    case RP_OP_HOLD_BEGIN:
        return hold_begin(w, t, ev->id, ev->ticks);
    case RP_OP_HOLD_END:
        return hold_end(w, t, ev);
    case RP_OP_PAUSE: {
        /* the replay moves every open span's start later by arg (acc.pz) */
        t->pz += ev->arg;
        if (!w->ops->pause)
            return 0;
        uint64_t start = ev->ticks > ev->arg ? ev->ticks - ev->arg : 0;
        start = start > before ? start : before < ev->ticks ? before : ev->ticks;
        return w->ops->pause(w->ctx, tid, start, ev->ticks,
                             t->depth ? t->stack[t->depth - 1].s.id : 0, t->depth);
    }
    case RP_OP_LOST:
        if ((rc = drop_to(w, t, 0, ev->ticks)) < 0 || (rc = drop_held(w, t, ev->ticks)) < 0)
            return rc;
        return w->ops->lost ? w->ops->lost(w->ctx, tid, ev->ticks, ev->arg) : 0;
    default:
        return 0;
    }
}

/* Walks one file with w's ids, overhead and end set; ends what is open
 * then.  Fails as rp_sw_file. */
static int walk_one(struct sw *w, const char *path, const struct rp_replay_opts *o, int progress,
                    char *err, size_t errsz)
{
    struct rp_walk_ops wo = {.thread = on_thread, .event = on_event};
    int rc = rp_walk_file(path, o, &wo, w, progress, err, errsz);
    if (rc == RP_EFORMAT && !err[0])
        snprintf(err, errsz, "%s: an event uses an id no DEFS chunk defined", path);
    for (uint32_t i = 0; i < w->nth; i++) { /* still open: cut, as rp_replay_close_open */
        struct sw_thread *t = &w->th[i];
        uint64_t end = w->end_ticks > t->last ? w->end_ticks : t->last;
        t->events++; /* pop counts the events before the end's own: none here */
        if (rc == 0)
            rc = pop_to(w, t, 0, end, RP_SW_CUT);
        if (rc == 0) /* held locks never released: unclosed, as the replay counts them */
            rc = drop_held(w, t, end);
        free(t->stack);
        free(t->held);
    }
    free(w->th);
    w->th = NULL;
    w->nth = w->capth = w->last = 0;
    return rc;
}

int rp_sw_file(const char *path, const struct rp_replay_opts *o, const struct rp_profile *p,
               const struct rp_sw_ops *ops, void *ctx, int progress, char *err, size_t errsz)
{
    static const struct rp_replay_opts none;
    struct sw w = {.p = p, .ops = ops, .ctx = ctx};
    if (!o)
        o = &none;
    for (uint32_t i = 1; i < p->n_nodes && !w.offid; i++)
        if (p->nodes[i].kind == RP_KIND_OFFCPU)
            w.offid = i;
    if (!rp_profile_merged(p)) {
        rp_comp_init(&w.comp, p, o->no_compensate);
        w.n_ids = p->n_nodes;
        w.end_ticks = p->ended ? p->end_ticks : 0;
        return walk_one(&w, path, o, progress, err, errsz);
    }
    int rc = 0; /* a run's files, merged (merge.h): each in turn, its ids mapped */
    for (uint32_t k = 0; k < p->n_procs && rc == 0; k++) {
        const struct rp_proc *r = &p->procs[k];
        if ((rc = rp_comp_init_proc(&w.comp, r, o->no_compensate, err, errsz)) < 0)
            return rc;
        w.map = r->map;
        w.n_ids = r->n_map;
        w.end_ticks = r->end_read ? r->end_ticks : 0;
        if (ops->file && (rc = ops->file(ctx, k)) < 0)
            break;
        rc = walk_one(&w, r->file, o, progress, err, errsz);
    }
    return rc;
}

// SPDX-License-Identifier: MIT
/*
 * direct.c - direct mode's engine: the events of one thread applied to its
 * shadow stack and tables (direct_int.h), batch by batch.
 *
 * Where a span ends and what its end counts is the rule of src/common/span.h
 * (docs/design.md, "1.2 Where a span ends"), the replay's too: an exit ends
 * the innermost span with its key; an exit of a span open deeper, or an
 * UNWIND record's landing, ends the spans above it with their time
 * (unwound); the thread's end, and exit() on its thread, end the spans
 * still open (cut, rp_dengine_close); an exit that matches nothing is
 * unmatched.  Unwound and cut are kept per id and thread, and written as
 * the STATS CUT and ENDS records.
 *
 * Time.  Durations are measured on the thread's engine-free clock: ticks
 * as read less `stolen`, the ticks the thread has spent in rp_dengine_run,
 * so no span includes the engine's work.  First/last starts and the thread's
 * first/last event keep the ticks as read.  A batch holds at most BATCH - 1
 * events that a snapshot of a running thread does not see yet; a thread
 * applies its own before a snapshot (drain_self) and when it ends.
 *
 * Only the thread that owns a table writes it; the whole event loop
 * (rp_dengine_run) is one function with the span code inlined into it.
 */
#define _GNU_SOURCE
#include <string.h>

#include "common/span.h"
#include "ctl.h"
#include "direct_int.h"
#include "rt_int.h" /* (rp_rt_loss_nostate) */
#include "funcs.h"

/* ---- the engine --------------------------------------------------------- */

static inline __attribute__((always_inline)) void hist_add(struct dtable *t, struct dstat *s,
                                                           uint64_t v)
{
    /* rp_hist_index(v) == r * RP_HIST_SUB + col, without a branch: v < 32
     * is row 0, column v; v in [2^e, 2^(e+1)) with e >= 5 is row e - 4,
     * column (v >> (e - 5)) % 32 (src/common/hist.h) */
    _Static_assert(RP_HIST_SUB == 32, "the shifts below are for 32 columns");
    unsigned sh = 58u - (unsigned)__builtin_clzll(v | 32); /* e - 5, or 0 */
    unsigned r = sh + (v >= 32), col = (unsigned)(v >> sh) % RP_HIST_SUB;
    uint32_t row = s->row[r];
    if (__builtin_expect(!row, 0)) {
        if (!(row = rp_dtab_row_new(t))) {
            ST(t->dropped, t->dropped + 1);
            return;
        }
        STR(s->row[r], (uint16_t)row);
    }
    uint32_t *c = &row_at(t, row)[col];
    if (*c != UINT32_MAX)
        ST(*c, *c + 1);
}

/* One finished activation of s: dur, and excl its share of the exclusive
 * time (rp_span_excl). */
static inline __attribute__((always_inline)) void
stat_add(struct dtable *t, struct dstat *s, uint64_t dur, uint64_t excl, uint64_t start)
{
    uint64_t n = s->calls + 1;
    ST(s->calls, n);
    ST(s->dur, s->dur + dur);
    ST(s->excl, s->excl + excl);
    if (rp_span_min(dur, s->min, 0)) /* no resolution in direct mode */
        ST(s->min, dur);
    if (dur > s->max)
        ST(s->max, dur);
    if (__builtin_expect(n == 1, 0)) {
        ST(s->first, start);
        ST(s->shift, dur);
    }
    if (start > s->last)
        ST(s->last, start);
    double y = (double)(int64_t)(dur - s->shift);
    std_(&s->sx, s->sx + y);
    std_(&s->sxx, s->sxx + y * y);
    if (dur > s->budget) /* UINT64_MAX: no budget */
        ST(s->overruns, s->overruns + 1);
    hist_add(t, s, dur);
}

static inline __attribute__((always_inline)) void
edge_add(struct dtable *t, struct dstat *s, uint32_t caller, uint32_t callee, uint64_t dur)
{
    struct dedge *e = s->last_edge; /* set whenever last_caller is */
    if (__builtin_expect(s->last_caller != caller, 0)) {
        uint64_t k = (uint64_t)caller << 32 | callee;
        uint32_t e1 = t->ecap ? idx_find(t->eidx, t->ecap, k) : 0;
        if (!e1 && !(e1 = rp_dtab_edge_new(t, k))) {
            ST(t->dropped, t->dropped + 1);
            return;
        }
        e = edge_at(t, e1 - 1);
        s->last_caller = caller;
        s->last_edge = e;
    }
    ST(e->calls, e->calls + 1);
    ST(e->incl, e->incl + dur);
    if (rp_span_min(dur, e->min, 0))
        ST(e->min, dur);
    if (dur > e->max)
        ST(e->max, dur);
}

/* The cache slot of key: kinds of one address (a lock's wait and hold) apart. */
static inline struct icache *icache_of(struct rp_dthread *d, uint64_t key)
{
    return &d->icache[(uint32_t)((key >> 4) ^ (key >> 59)) % ICACHE];
}

/* Counts an event dropped for want of room in the thread's tables (a
 * stack deeper than its limit, a full id table, too many holds at once):
 * in its totals and by reason (INFO lost_nomem, as trace mode's). */
static inline void dropped(struct rp_dthread *d)
{
    ST(d->tab.dropped, d->tab.dropped + 1);
    atomic_fetch_add_explicit(&rp_rt_loss_nostate[RP_LOSS_NOMEM], 1, memory_order_relaxed);
}

/* key's entry, added if new, through the cache; NULL when it cannot be had. */
static RP_NOINLINE struct dstat *id_miss(struct rp_dthread *d, uint64_t key)
{
    uint32_t i = id_of(&d->tab, key);
    if (!i)
        return NULL;
    struct icache *c = icache_of(d, key);
    c->key = key;
    c->s = stat_at(&d->tab, i);
    return c->s;
}

static RP_NOINLINE void span_over(struct rp_dthread *d)
{
    d->over++;
    d->top = d->full + 1;
    dropped(d);
}

static inline __attribute__((always_inline)) void span_begin(struct rp_dthread *d, uint64_t key,
                                                             uint64_t now, uint64_t raw)
{
    struct dframe *f = d->top + 1;
    if (__builtin_expect(f > d->full, 0)) {
        span_over(d);
        return;
    }
    const struct icache *c = icache_of(d, key);
    struct dstat *s = __builtin_expect(c->key == key, 1) ? c->s : id_miss(d, key);
    d->top = f;
    f->key = key;
    f->start = now;
    f->t0 = raw;
    f->child = 0;
    f->s = s;
    if (__builtin_expect(s != NULL, 1)) {
        f->idx = s->self;
        s->active++;
    } else {
        f->idx = NOID;
        dropped(d);
    }
}

/*
 * A span of s (DSTAT_LIB) that ends with the frame below it, f: outside
 * the program's code when f is the root sentinel or a wait (as the replay
 * decides: analyze/replay_int.h, rp_span_outside).  Then it is counted in
 * s's outside calls and time only, and its callees' time is f's, as its
 * own time is.  Returns whether it was.
 */
static RP_NOINLINE int span_outside(struct dstat *s, struct dframe *f, uint64_t dur, uint64_t child)
{
    if (f->key && !(f->s && (f->s->lib & DSTAT_BLOCKED)))
        return 0;
    f->child += child;
    rp_span_outer(&s->active);
    ST(s->ocalls, s->ocalls + 1);
    ST(s->oticks, s->oticks + dur);
    return 1;
}

/* Ends the innermost open span (top, not a sentinel) at now.  `lib` (a
 * constant in each copy): it may be one that span_outside sets apart; a
 * function's exit, the common path, is not. */
static inline __attribute__((always_inline)) void frame_end_as(struct rp_dthread *d, uint64_t now,
                                                               const int lib)
{
    struct dframe *f = d->top;
    struct dstat *s = f->s;
    uint64_t dur = rp_span_dur(f->start, now);
    d->top = f - 1;
    if (lib && s && (s->lib & DSTAT_LIB) && span_outside(s, f - 1, dur, f->child))
        return;
    f[-1].child += dur; /* the root sentinel's is never read */
    uint32_t parent = f[-1].idx;
    if (__builtin_expect(!s, 0))
        return; /* counted as dropped when it began */
    stat_add(&d->tab, s, dur, rp_span_excl(dur, f->child), f->t0);
    if (rp_span_outer(&s->active))
        ST(s->incl, s->incl + dur);
    if (__builtin_expect(parent == NOID, 0))
        return; /* the caller's id was not recorded: no edge to name */
    edge_add(&d->tab, s, parent, f->idx, dur);
}

static inline __attribute__((always_inline)) void frame_end(struct rp_dthread *d, uint64_t now)
{
    frame_end_as(d, now, 1);
}

/* Ends the spans above frame `to` at now with their time, innermost first,
 * counted as cut per id and, per thread, as cut (thread_end) or unwound
 * (span.h). */
static RP_NOINLINE void frames_cut(struct rp_dthread *d, struct dframe *to, uint64_t now,
                                   int thread_end)
{
    uint64_t n = (uint64_t)(d->top - to);
    if (thread_end)
        ST(d->cut, d->cut + n);
    else
        ST(d->unwound, d->unwound + n);
    while (d->top > to) {
        struct dstat *s = d->top->s;
        if (s)
            ST(s->cut, s->cut + 1);
        frame_end(d, now);
    }
}

/* An exit that is not of the innermost span: one beyond the stack's bound,
 * or it ends the spans above the one it ends (left by a longjmp or an
 * exception: unwound, with their time, as trace mode's replay does), or it
 * is unmatched (span.h). */
static RP_NOINLINE void span_end_slow(struct rp_dthread *d, uint64_t key, uint64_t now)
{
    if (d->over) {
        if (--d->over == 0)
            d->top = d->full;
        return;
    }
    uint64_t at, depth = (uint64_t)(d->top - d->stack);
    RP_SPAN_MATCH(at, depth, d->stack[at].key, key);
    if (!at) {
        if (depth || !d->windowed) /* (windowed: begun before the window) */
            ST(d->unmatched, d->unmatched + 1);
        return;
    }
    frames_cut(d, d->stack + at, now, 0);
    frame_end(d, now);
}

uint64_t (*rp_direct_start_of)(uint64_t pc) = rp_funcs_start_of_loaded;

/*
 * An RP_RAW_UNWIND record (unwind.c): the stack landed in the function
 * holding pc after a longjmp or a caught exception, so the spans above its
 * innermost open activation end now, unwound, as the trace writer and the
 * replay end them; pc 0: the thread ends, every span is cut.  A pc in no
 * known function, or in none open, ends nothing (as in trace mode).
 */
static RP_NOINLINE void unwind_to(struct rp_dthread *d, uint64_t pc, uint64_t now)
{
    if (!pc) {
        rp_dengine_close(d, now);
        return;
    }
    uint64_t fn = d->over ? 0 : rp_direct_start_of(pc);
    if (!fn)
        return;
    uint64_t at, depth = (uint64_t)(d->top - d->stack), key = TKEY(RP_KIND_FUNC, fn);
    RP_SPAN_MATCH(at, depth, d->stack[at].key, key);
    if (at && at < depth)
        frames_cut(d, d->stack + at, now, 0);
}

static inline __attribute__((always_inline)) void span_end(struct rp_dthread *d, uint64_t key,
                                                           uint64_t now)
{
    if (__builtin_expect(d->top->key == key, 1)) /* never a sentinel: see rp_dthread */
        frame_end(d, now);
    else
        span_end_slow(d, key, now);
}

/* span_end of a function's exit: its frame is no interposed wait. */
static inline __attribute__((always_inline)) void func_end(struct rp_dthread *d, uint64_t key,
                                                           uint64_t now)
{
    if (__builtin_expect(d->top->key == key, 1))
        frame_end_as(d, now, 0);
    else
        span_end_slow(d, key, now);
}

/*
 * A lock acquisition: the hold begins, off the stack, with the innermost
 * frame as its acquirer.  Beyond HELD_MAX holds at once the hold is not
 * recorded (counted as dropped; its release is then an unmatched exit).
 */
static void hold_begin(struct rp_dthread *d, uint64_t key, uint64_t now, uint64_t raw)
{
    if (d->nheld == HELD_MAX) {
        dropped(d);
        return;
    }
    const struct icache *c = icache_of(d, key);
    struct dstat *s = c->key == key ? c->s : id_miss(d, key);
    if (!s) {
        dropped(d);
        return;
    }
    /* outside the program's code: with no frame below, or a wait */
    int out = (s->lib & DSTAT_LIB) && !d->over &&
              (!d->top->key || (d->top->s && (d->top->s->lib & DSTAT_BLOCKED)));
    d->held[d->nheld++] = (struct dhold){key, now, raw, s, d->over ? NOID : d->top->idx, out};
}

/*
 * A release: ends the latest hold of its lock as a span of the hold's id
 * called from its acquirer, with no time taken from any frame and none of
 * its own (exclusive 0: the code run under it is the functions' time).  A
 * release of a lock not held is an unmatched exit.
 */
static void hold_end(struct rp_dthread *d, uint64_t key, uint64_t now)
{
    uint32_t i = d->nheld;
    while (i > 0 && d->held[i - 1].key != key)
        i--;
    if (!i) {
        if (!d->windowed) /* (windowed: taken before the window) */
            ST(d->unmatched, d->unmatched + 1);
        return;
    }
    struct dhold h = d->held[i - 1];
    int outer = 1;
    for (uint32_t k = 0; k + 1 < i && outer; k++)
        outer = d->held[k].key != key;
    memmove(&d->held[i - 1], &d->held[i], (d->nheld - i) * sizeof(*d->held));
    d->nheld--;
    uint64_t dur = rp_span_dur(h.start, now);
    if (h.out) { /* (hold_begin) */
        ST(h.s->ocalls, h.s->ocalls + 1);
        ST(h.s->oticks, h.s->oticks + dur);
        return;
    }
    stat_add(&d->tab, h.s, dur, 0, h.t0);
    if (outer)
        ST(h.s->incl, h.s->incl + dur);
    if (h.acq != NOID)
        edge_add(&d->tab, h.s, h.acq, h.s->self, dur);
}

static void feed_other(struct rp_dthread *d, uint64_t now, uint64_t raw, unsigned op, uint64_t pl);

/*
 * Applies one event at `now` on the engine-free clock (raw less d->stolen,
 * what durations are measured on) and `raw`, the clock as read (first and
 * last starts).  The caller counts the event (count_events).
 */
static inline __attribute__((always_inline)) void feed(struct rp_dthread *d, uint64_t now,
                                                       uint64_t raw, uint64_t word)
{
    /* a function's key, TKEY(RP_KIND_FUNC, pl), is its exit word */
    _Static_assert(RP_KIND_FUNC == 0 && RP_RAW_FUNC_ENTER == 0 && RP_RAW_FUNC_EXIT == 1,
                   "TKEY(RP_KIND_FUNC, pl) == rp_raw_word(RP_RAW_FUNC_EXIT, pl)");
    uint64_t fkey = word | 1ull << RP_RAW_SHIFT;

    if (__builtin_expect(word < (uint64_t)(RP_RAW_FUNC_ENTER + 1) << RP_RAW_SHIFT, 1))
        span_begin(d, fkey, now, raw); /* the common cases first */
    else if (__builtin_expect(word < (uint64_t)(RP_RAW_FUNC_EXIT + 1) << RP_RAW_SHIFT, 1))
        func_end(d, fkey, now);
    else
        feed_other(d, now, raw, (unsigned)(word >> RP_RAW_SHIFT), word & RP_RAW_PAYLOAD);
}

/* Counts n events of d, the first at raw ticks first, the last at last. */
static inline void count_events(struct rp_dthread *d, uint64_t n, uint64_t first, uint64_t last)
{
    if (__builtin_expect(!d->events, 0))
        ST(d->first, first);
    ST(d->events, d->events + n);
    ST(d->last, last);
}

/* The events other than function entries and exits. */
static RP_NOINLINE void feed_other(struct rp_dthread *d, uint64_t now, uint64_t raw, unsigned op,
                                   uint64_t pl)
{
    switch (op) {
    case RP_RAW_SITE_BEGIN:
        span_begin(d, TKEY(RP_KIND_POINT, pl), now, raw);
        break;
    case RP_RAW_SITE_END:
        span_end(d, TKEY(RP_KIND_POINT, pl), now);
        break;
    case RP_RAW_LOCK_WAIT:
        if (pl & RP_RAW_COND_BIT) /* a condition wait (locks.c) */
            span_begin(d, TKEY(RP_KIND_WAIT, pl & ~RP_RAW_COND_BIT), now, raw);
        else
            span_begin(d, TKEY(RP_KIND_LOCK_WAIT, pl), now, raw);
        break;
    case RP_RAW_LOCK_ACQ:
        /* after a WAIT of this lock (innermost) the wait ends and the hold
         * begins at the same tick; an uncontended acquisition has no wait
         * (docs/locks.md), the hold begins alone */
        if (d->over || d->top->key == TKEY(RP_KIND_LOCK_WAIT, pl))
            span_end(d, TKEY(RP_KIND_LOCK_WAIT, pl), now);
        hold_begin(d, TKEY(RP_KIND_LOCK_HOLD, pl), now, raw); /* an interval */
        break;
    case RP_RAW_LOCK_REL:
        hold_end(d, TKEY(RP_KIND_LOCK_HOLD, pl), now);
        break;
    case RP_RAW_LOCK_FAIL:
        if (pl & RP_RAW_COND_BIT)
            span_end(d, TKEY(RP_KIND_WAIT, pl & ~RP_RAW_COND_BIT), now);
        else
            span_end(d, TKEY(RP_KIND_LOCK_WAIT, pl), now);
        break;
    case RP_RAW_INSTANT:
    case RP_RAW_COUNTER: {
        uint32_t i = id_of(&d->tab, TKEY(RP_KIND_POINT, pl));
        if (i) {
            struct dstat *s = stat_at(&d->tab, i);
            ST(s->calls, s->calls + 1);
            if (!s->first)
                ST(s->first, raw);
            ST(s->last, raw);
        } else {
            dropped(d);
        }
        break;
    }
    case RP_RAW_DATA: /* an instant's or counter's value: not kept, not an event */
        d->ndata++;
        break;
    case RP_RAW_UNWIND:
        unwind_to(d, pl, now);
        break;
    default: /* ARG: nothing to count in direct mode */
        break;
    }
}

RP_HIDDEN void rp_direct_feed(struct rp_dthread *d, uint64_t ticks, uint64_t word)
{
    count_events(d, 1, ticks, ticks);
    feed(d, ticks, ticks, word);
}

/* Ends every frame open on d at now, cut (rp_dengine_close). */
static void frames_close(struct rp_dthread *d, uint64_t now)
{
    if (d->over) {
        d->over = 0;
        d->top = d->full;
    }
    frames_cut(d, d->stack, now, 1);
}

/*
 * A recording window's edge (ctl.c) reaches d at raw ticks `at`: as trace
 * mode's writer does (rt_writer.c, win_apply), the locks held then are
 * released there and the frames open then end there with their time, cut;
 * after a switch off the thread's events are left out until the next
 * switch on.
 */
static RP_NOINLINE void win_apply(struct rp_dthread *d, const struct rp_win_edge *e, uint64_t off)
{
    uint64_t now = e->ticks > off ? e->ticks - off : 0;
    while (d->nheld)
        hold_end(d, d->held[d->nheld - 1].key, now);
    frames_close(d, now);
    d->windowed = 1;
    d->win_off = !e->on;
}

/* Applies to d the edges at or before raw ticks `until` it has not had. */
static void win_catch_up(struct rp_dthread *d, uint64_t until, uint64_t off)
{
    const struct rp_win_edge *e;
    uint32_t n = rp_ctl_edges(&e);
    for (; d->win_done < n && e[d->win_done].ticks <= until; d->win_done++)
        win_apply(d, &e[d->win_done], off);
}

/*
 * rp_dengine_run's loop when an edge is new or the thread is switched
 * off: each record after the edges before it, and only while switched on
 * (a DATA record goes with the record before it).  Counts what it feeds.
 */
static RP_NOINLINE void run_windowed(struct rp_dthread *d, uint64_t off)
{
    uint64_t n = 0, first = 0, last = 0;
    int keep = 0;
    for (struct rp_raw *p = d->batch, *e = d->tb.pos; p < e; p++) {
        if (p->word >> RP_RAW_SHIFT == RP_RAW_DATA && p > d->batch) {
            if (keep)
                feed(d, p->ticks - off, p->ticks, p->word);
            continue;
        }
        win_catch_up(d, p->ticks, off);
        if (!(keep = !d->win_off))
            continue;
        first = n++ ? first : p->ticks;
        last = p->ticks;
        feed(d, p->ticks - off, p->ticks, p->word);
    }
    if (n)
        count_events(d, n, first, last);
}

/*
 * Runs the records stored in d->batch (by rp_append's fast path or by
 * rp_direct_event) through the engine and empties the batch.  The caller is
 * d's thread and holds d->tb.guard, so no record is added meanwhile.  The
 * time this takes is added to d->stolen: later events are timed without it,
 * so no span includes the engine's work (spans that were open lose it).
 * Cannot fail: what does not fit in the tables is counted as dropped.
 */
RP_HIDDEN RP_NOINLINE void rp_dengine_run(struct rp_dthread *d)
{
    struct rp_raw *p = d->batch, *e = d->tb.pos;
    if (p == e)
        return;
    uint64_t t0 = rp_ticks(), off = d->stolen;
    if (__builtin_expect(d->park_n != 0 && !d->park_running, 0)) {
        /* the tables change: its frames no longer agree with them exactly */
        STR(d->park_seq, d->park_seq + 1);
        ST(d->park_running, 1);
        STR(d->park_seq, d->park_seq + 1);
        atomic_thread_fence(memory_order_release); /* before the tables change */
    }
    /* the last event: a DATA record's ticks field is its value */
    uint64_t last =
        e[-1].word >> RP_RAW_SHIFT == RP_RAW_DATA && e - 1 > p ? e[-2].ticks : e[-1].ticks;
    d->ndata = 0;
    const struct rp_win_edge *we;
    if (__builtin_expect(rp_ctl_edges(&we) == d->win_done && !d->win_off, 1)) {
        for (; p < e; p++)
            feed(d, p->ticks - off, p->ticks, p->word);
        count_events(d, (uint64_t)(e - d->batch) - d->ndata, d->batch[0].ticks, last);
    } else {
        run_windowed(d, off);
    }
    d->tb.end = d->batch + BATCH; /* sites.c may have shortened it */
    rp_pos_set(&d->tb, d->batch);
    uint64_t t1 = rp_ticks();
    d->stolen = off + (t1 > t0 ? t1 - t0 : 0);
    rp_dengine_park(d, 1); /* its open frames now, for a snapshot (direct_pub.c) */
}

/*
 * Ends every span still open on d at now, with its time, as trace mode ends
 * the frames left open when a thread or the process ends
 * (docs/robustness.md): pthread_exit from deep frames, exit() from deep
 * frames.  Spans beyond the stack's bound have no frame and stay counted
 * as dropped.  Counted as cut (span.h; the STATS CUT and ENDS records).
 */
RP_HIDDEN void rp_dengine_close(struct rp_dthread *d, uint64_t now)
{
    const struct rp_win_edge *e;
    if (rp_ctl_edges(&e) != d->win_done)
        win_catch_up(d, now + d->stolen, d->stolen); /* (edges before its end) */
    frames_close(d, now);
}

RP_HIDDEN void rp_dengine_park(struct rp_dthread *d, int running)
{
    uint32_t n = d->over ? 0 : (uint32_t)(d->top - d->stack);
    if (n > PARK_MAX)
        n = 0; /* (a deep stack: not shown rather than cut) */
    STR(d->park_seq, d->park_seq + 1);
    atomic_thread_fence(memory_order_release);
    for (uint32_t i = 0; i < n; i++) {
        const struct dframe *f = &d->stack[i + 1];
        ST(d->park[i].key, f->key);
        ST(d->park[i].start, f->start);
        ST(d->park[i].child, f->child);
    }
    ST(d->park_stolen, d->stolen);
    ST(d->park_n, n);
    ST(d->park_running, (uint32_t)running);
    STR(d->park_seq, d->park_seq + 1);
}

RP_HIDDEN void rp_dtab_add_open(struct dtable *t, const struct dpark *f, uint32_t n, uint64_t now)
{
    uint32_t idx[PARK_MAX];
    uint64_t inner = 0; /* the duration of the frame above */
    for (uint32_t i = 0; i < n; i++)
        idx[i] = id_of(t, f[i].key);
    for (uint32_t i = n; i-- > 0;) {
        uint64_t dur = rp_span_dur(f[i].start, now);
        uint64_t child = f[i].child + inner;
        inner = dur;
        if (!idx[i])
            continue;
        struct dstat *s = stat_at(t, idx[i]);
        stat_add(t, s, dur, rp_span_excl(dur, child), f[i].start);
        ST(s->cut, s->cut + 1);
        int outer = 1;
        for (uint32_t k = 0; k < i && outer; k++)
            outer = f[k].key != f[i].key;
        if (outer)
            ST(s->incl, s->incl + dur);
        if (i == 0 || idx[i - 1])
            edge_add(t, s, i ? idx[i - 1] : 0, idx[i], dur);
    }
}

RP_HIDDEN void rp_direct_close(struct rp_dthread *d, uint64_t ticks)
{
    rp_dengine_close(d, ticks);
}

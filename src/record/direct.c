// SPDX-License-Identifier: MIT
/*
 * direct.c - direct mode: span statistics computed in the process.
 *
 * Per thread (struct rp_dthread), only that thread writes:
 *
 *   batch   events recorded, not yet applied: the thread's rp_self is a tbuf
 *           whose pos/end walk batch[], so rp_append's fast path (rt.h)
 *           stores each event there as in trace mode; when it is full,
 *           rp_append_slow hands the event to rp_direct_event, which runs
 *           the batch through the engine (batch_run) and starts the next
 *   stack   open spans: table key, start ticks, ticks spent in callees, id
 *   tab     per id (struct dstat): calls, inclusive (outermost activation
 *           only), duration sum, exclusive, min, max, first/last start,
 *           the moments (below), budget overruns, and a log-linear histogram
 *           (src/common/hist.h) stored sparsely: 60 rows of 32 buckets, a
 *           row allocated on its first value; per caller->callee edge
 *           (struct dedge): calls, total, min, max.
 *
 * When a span ends (the same rule as the analyzer's replay, docs/design.md §2):
 *
 *     dur = end - start            self = dur - child
 *     id.calls++, dur, excl += self, min, max, moments, histogram(dur)
 *     id.incl += dur               only if no other activation of id is open
 *                                  below it on this stack (recursion)
 *     parent.child += dur          edge(parent or ROOT, id) += dur
 *
 * An exit that matches no open span is counted as unmatched; an exit of a
 * span open deeper ends the spans above it there, with their time (frames
 * left by a longjmp or an exception, as in trace mode; not counted apart:
 * STATS has no field for it).  Spans open when a thread ends, and on the
 * thread that calls exit(), end there with their time (close_open).
 *
 * Time.  Durations are measured on the thread's engine-free clock: ticks
 * as read less `stolen`, the ticks the thread has spent in batch_run, so no
 * span includes the engine's work.  First/last starts and the thread's
 * first/last event keep the ticks as read.  A batch holds at most BATCH - 1
 * events that a snapshot of a running thread does not see yet; a thread
 * applies its own before a snapshot (drain_self) and when it ends.
 *
 * Tables.  Entries live in chunks that never move, found through an
 * open-addressing index that only the owner reads.  A new entry is fully
 * written before the count that publishes it is stored with release, so a
 * reader (rp_report from another thread, the exit snapshot) that loads the
 * count with acquire sees only whole entries.  Counters are updated with
 * relaxed atomic stores (plain moves on x86-64 and aarch64) and read with
 * relaxed loads: a snapshot of a running thread may be off by the events in
 * flight, never torn or out of bounds.  Nothing on the hot path locks or
 * calls malloc; chunks come from mmap on first use, within fixed bounds
 * (docs/direct-mode.md states them); what does not fit is counted as dropped.
 * (The first sighting of a profile point on a thread takes the site
 * registry's lock once, for its budget.)
 *
 * Moments.  Per id the thread keeps K, its first duration, and the shifted
 * sums sx = sum(x - K), sxx = sum((x - K)^2): as stable as Welford's update
 * for durations, without a division per call.  Tables are merged with
 * Chan's parallel form of Welford's update (moments_merge).
 *
 * Threads.  rp_rt.direct_lock guards the list of live threads, the table of ended
 * threads and their summaries.  A thread's table is merged into dg.done
 * when it ends (key destructor) and freed; a snapshot merges dg.done and
 * every live table into a fresh table under the lock.
 */
#define _GNU_SOURCE
#include "direct.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/array.h"
#include "common/bytes.h"
#include "common/hist.h"
#include "rankprof.h"
#include "locks.h"
#include "rt.h"
#include "sites.h"
#include "trace/format.h"
#include "trace/writer.h"

/* Bounds per table (docs/direct-mode.md). */
#define ID_CHUNK   256u
#define ID_MAX     16384u /* ids per thread, index 0 unused */
#define EDGE_CHUNK 1024u
#define EDGE_MAX   65536u
#define ROW_CHUNK  512u
#define ROW_MAX    65536u /* histogram rows; index 0 = none */
#define HROWS      (RP_HIST_BUCKETS / RP_HIST_SUB)
#define STACK_MAX  8192u
#define TSUM_MAX   65536u /* summaries of ended threads */
#define IDX_INIT   512u
#define BATCH      256u /* records a thread keeps before the engine runs */

#define LD(x)     __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v)  __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)
#define LDA(x)    __atomic_load_n(&(x), __ATOMIC_ACQUIRE)
#define STR(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELEASE)

/* The table key of (kind, payload): never 0. */
#define TKEY(kind, pl) ((uint64_t)((kind) + 1) << RP_RAW_SHIFT | ((pl)&RP_RAW_PAYLOAD))
#define TKIND(k)       ((uint8_t)(((k) >> RP_RAW_SHIFT) - 1))
#define TPAYLOAD(k)    ((k)&RP_RAW_PAYLOAD)

struct dstat {
    uint64_t key;    /* immutable once published */
    uint64_t budget; /* ticks; UINT64_MAX = none */
    uint64_t calls, incl, dur, excl, min, max, first, last, overruns;
    uint64_t shift; /* K: the first duration; sx = sum(x - K), sxx = sum((x - K)^2) */
    double sx, sxx;
    uint16_t row[HROWS]; /* histogram row index, 0 = none yet */
    /* owner only */
    uint32_t active;         /* open activations on this thread's stack */
    uint32_t self;           /* this entry's index */
    uint32_t last_caller;    /* the caller of the cached edge; UINT32_MAX: none yet */
    struct dedge *last_edge; /* this id's edge from last_caller */
};

struct dedge {
    uint64_t key; /* caller index << 32 | callee index */
    uint64_t calls, incl, min, max;
};

struct slot {
    uint64_t key; /* 0 = empty */
    uint32_t val;
};

struct dtable {
    uint32_t n;       /* entries 1..n-1 published (release) */
    uint32_t nedges;  /* edges 0..nedges-1 published (release) */
    uint32_t nrows;   /* rows 1..nrows-1 in use */
    uint64_t dropped; /* events not recorded: a bound was hit */
    struct dstat *ids[ID_MAX / ID_CHUNK];
    struct dedge *edges[EDGE_MAX / EDGE_CHUNK];
    uint32_t (*rows[ROW_MAX / ROW_CHUNK])[RP_HIST_SUB];
    struct slot *idx, *eidx; /* owner-only indexes */
    uint32_t icap, ecap;
};

/* A frame's idx when its id could not be recorded (no edge names it). */
#define NOID UINT32_MAX

struct dframe {
    uint64_t key;   /* 0 in the two sentinels */
    uint64_t start; /* on the engine-free clock (below), for durations */
    uint64_t t0;    /* the raw start, for the id's first/last start */
    uint64_t child;
    struct dstat *s; /* NULL: the span's id could not be recorded */
    uint32_t idx;    /* s's index; NOID with s NULL; 0 (ROOT) in the bottom sentinel */
};

/* A lock hold open on a thread: an interval off the stack (docs/locks.md,
 * "Holds are intervals"), ended by the release of the latest hold of its
 * lock, wherever that happens. */
#define HELD_MAX 64u /* locks held at once per thread; more are not recorded */
struct dhold {
    uint64_t key;   /* TKEY(RP_KIND_LOCK_HOLD, lock address) */
    uint64_t start; /* engine-free clock */
    uint64_t t0;    /* raw start */
    struct dstat *s;
    uint32_t acq; /* the acquirer: the innermost frame's index (NOID: not recorded) */
};

/* The per-thread cache of id entries: slot icache_of(key) holds the last
 * key seen there (0 = none) and its entry, which never moves. */
#define ICACHE 256u
struct icache {
    uint64_t key;
    struct dstat *s;
};

struct rp_dthread {
    /* The thread's rp_self: a tbuf without buffers (pos == end == NULL), so
     * rp_append leaves its fast path for rp_append_slow and on to here, and
     * code that asks rp_self whether the thread records (sites.c) hears yes.
     * tb.guard is non-zero while the thread is inside the engine. */
    struct rp_tbuf tb;
    uint32_t tid;
    /*
     * The shadow stack (owner only): stack[0] is a sentinel for the root
     * (key 0, idx ROOT), open frames are stack[1..], top is the innermost
     * (stack when none).  A push beyond full = stack + STACK_MAX counts in
     * `over` and moves top to the overflow sentinel stack[STACK_MAX + 1]
     * (key 0), where it stays until over is back to 0.  Keys are never 0,
     * so an exit never matches a sentinel: the fast path compares top's key
     * and nothing else.
     */
    uint32_t over;
    struct dframe *stack, *top, *full;
    struct dhold held[HELD_MAX]; /* lock holds open, oldest first (owner only) */
    uint32_t nheld;
    uint64_t events, first, last, unmatched, unclosed, reentered;
    uint64_t ndata;  /* DATA records in the batch being run (not events) */
    uint64_t stolen; /* ticks the engine spent on batches (owner only) */
    struct dtable tab;
    struct rp_dthread *next; /* in dg.live, under rp_rt.direct_lock */
    /* tb.pos/tb.end walk batch[]; `before` is never a real record, so that
     * sites.c's look at pos[-1] stays inside this struct */
    struct rp_raw before;
    struct rp_raw batch[BATCH];
    struct icache icache[ICACHE];
};

/* What is kept of an ended thread. */
struct tsum {
    uint32_t tid;
    char name[16];
    uint64_t first, last, events, unmatched, unclosed, dropped;
};

static struct {
    pthread_key_t key;
    int key_ok;
    struct rp_dthread *live;
    struct dtable done;
    struct tsum *ended;
    uint32_t nended;
    uint64_t ended_dropped; /* summaries beyond TSUM_MAX: their events */
} dg;

static __thread struct rp_dthread *dself;
static __thread int dgone, dinit;

/* ---- memory ------------------------------------------------------------- */

/* Zeroed pages, off the hot path; NULL when the system says no. */
static void *zalloc(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void zfree(void *p, size_t n)
{
    if (p)
        munmap(p, n);
}

static inline double ldd(double *p)
{
    double v;
    __atomic_load(p, &v, __ATOMIC_RELAXED);
    return v;
}

static inline void std_(double *p, double v)
{
    __atomic_store(p, &v, __ATOMIC_RELAXED);
}

/* ---- tables ------------------------------------------------------------- */

static inline struct dstat *stat_at(const struct dtable *t, uint32_t i)
{
    return &t->ids[i / ID_CHUNK][i % ID_CHUNK];
}

static inline struct dedge *edge_at(const struct dtable *t, uint32_t i)
{
    return &t->edges[i / EDGE_CHUNK][i % EDGE_CHUNK];
}

static inline uint32_t *row_at(const struct dtable *t, uint32_t r)
{
    return t->rows[r / ROW_CHUNK][r % ROW_CHUNK];
}

/* The value of key in an index of cap slots, or 0. */
static inline uint32_t idx_find(const struct slot *s, uint32_t cap, uint64_t key)
{
    uint32_t m = cap - 1, i = (uint32_t)rp_mix64(key) & m;
    for (;;) {
        if (s[i].key == key)
            return s[i].val;
        if (!s[i].key)
            return 0;
        i = (i + 1) & m;
    }
}

/*
 * Adds key -> val to the index *s of *cap slots holding `count` keys,
 * doubling it at half load.  Returns 0, or -1 when the larger index cannot
 * be had (the index is unchanged).
 */
static int idx_put(struct slot **s, uint32_t *cap, uint32_t count, uint64_t key, uint32_t val)
{
    if ((count + 1) * 2 > *cap) {
        uint32_t ncap = *cap ? *cap * 2 : IDX_INIT;
        struct slot *ns = zalloc(ncap * sizeof(*ns));
        if (!ns)
            return -1;
        for (uint32_t i = 0; i < *cap; i++) {
            if (!(*s)[i].key)
                continue;
            uint32_t j = (uint32_t)rp_mix64((*s)[i].key) & (ncap - 1);
            while (ns[j].key)
                j = (j + 1) & (ncap - 1);
            ns[j] = (*s)[i];
        }
        zfree(*s, *cap * sizeof(**s));
        *s = ns;
        *cap = ncap;
    }
    uint32_t m = *cap - 1, i = (uint32_t)rp_mix64(key) & m;
    while ((*s)[i].key)
        i = (i + 1) & m;
    (*s)[i].key = key;
    (*s)[i].val = val;
    return 0;
}

static void table_init(struct dtable *t)
{
    memset(t, 0, sizeof(*t));
    t->n = 1;
    t->nrows = 1;
}

static void table_free(struct dtable *t)
{
    for (uint32_t i = 0; i < ID_MAX / ID_CHUNK; i++)
        zfree(t->ids[i], ID_CHUNK * sizeof(struct dstat));
    for (uint32_t i = 0; i < EDGE_MAX / EDGE_CHUNK; i++)
        zfree(t->edges[i], EDGE_CHUNK * sizeof(struct dedge));
    for (uint32_t i = 0; i < ROW_MAX / ROW_CHUNK; i++)
        zfree(t->rows[i], ROW_CHUNK * sizeof(*t->rows[0]));
    zfree(t->idx, t->icap * sizeof(struct slot));
    zfree(t->eidx, t->ecap * sizeof(struct slot));
    table_init(t);
}

/* Adds entry `key`.  Returns its index, or 0 when a bound is hit. */
static RP_NOINLINE uint32_t stat_new(struct dtable *t, uint64_t key, uint64_t budget)
{
    uint32_t i = t->n;
    if (i >= ID_MAX)
        return 0;
    if (!t->ids[i / ID_CHUNK] && !(t->ids[i / ID_CHUNK] = zalloc(ID_CHUNK * sizeof(struct dstat))))
        return 0;
    if (idx_put(&t->idx, &t->icap, i - 1, key, i) < 0)
        return 0;
    struct dstat *s = stat_at(t, i);
    s->key = key;
    s->budget = budget ? budget : UINT64_MAX;
    s->min = UINT64_MAX;
    s->self = i;
    s->last_caller = UINT32_MAX;
    STR(t->n, i + 1);
    return i;
}

/* Adds edge `key`.  Returns its index + 1, or 0 when a bound is hit. */
static RP_NOINLINE uint32_t edge_new(struct dtable *t, uint64_t key)
{
    uint32_t i = t->nedges;
    if (i >= EDGE_MAX)
        return 0;
    if (!t->edges[i / EDGE_CHUNK] &&
        !(t->edges[i / EDGE_CHUNK] = zalloc(EDGE_CHUNK * sizeof(struct dedge))))
        return 0;
    if (idx_put(&t->eidx, &t->ecap, i, key, i + 1) < 0)
        return 0;
    struct dedge *e = edge_at(t, i);
    e->key = key;
    e->min = UINT64_MAX;
    STR(t->nedges, i + 1);
    return i + 1;
}

/* A zeroed histogram row.  Returns its index, or 0 when a bound is hit. */
static RP_NOINLINE uint32_t row_new(struct dtable *t)
{
    uint32_t r = t->nrows;
    if (r >= ROW_MAX)
        return 0;
    if (!t->rows[r / ROW_CHUNK] &&
        !(t->rows[r / ROW_CHUNK] = zalloc(ROW_CHUNK * sizeof(*t->rows[0]))))
        return 0;
    t->nrows = r + 1;
    return r;
}

/* A new id of a thread: sites carry a budget (rp_sites_describe takes the
 * registry lock, once per site and thread). */
static RP_NOINLINE uint32_t id_new(struct dtable *t, uint64_t key)
{
    struct rp_def d = {0};
    if (TKIND(key) == RP_KIND_POINT && rp_sites_describe(TPAYLOAD(key), &d) < 0)
        d.budget = 0;
    return stat_new(t, key, d.budget);
}

/* The index of key, added if new; 0 when it cannot be recorded. */
static inline uint32_t id_of(struct dtable *t, uint64_t key)
{
    uint32_t i = t->icap ? idx_find(t->idx, t->icap, key) : 0;
    return i ? i : id_new(t, key);
}

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
        if (!(row = row_new(t))) {
            ST(t->dropped, t->dropped + 1);
            return;
        }
        STR(s->row[r], (uint16_t)row);
    }
    uint32_t *c = &row_at(t, row)[col];
    if (*c != UINT32_MAX)
        ST(*c, *c + 1);
}

/* One finished activation of s. */
static inline __attribute__((always_inline)) void
stat_add(struct dtable *t, struct dstat *s, uint64_t dur, uint64_t self, uint64_t start)
{
    uint64_t n = s->calls + 1;
    ST(s->calls, n);
    ST(s->dur, s->dur + dur);
    ST(s->excl, s->excl + self);
    if (dur < s->min)
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
        if (!e1 && !(e1 = edge_new(t, k))) {
            ST(t->dropped, t->dropped + 1);
            return;
        }
        e = edge_at(t, e1 - 1);
        s->last_caller = caller;
        s->last_edge = e;
    }
    ST(e->calls, e->calls + 1);
    ST(e->incl, e->incl + dur);
    if (dur < e->min)
        ST(e->min, dur);
    if (dur > e->max)
        ST(e->max, dur);
}

/* The cache slot of key: kinds of one address (a lock's wait and hold) apart. */
static inline struct icache *icache_of(struct rp_dthread *d, uint64_t key)
{
    return &d->icache[(uint32_t)((key >> 4) ^ (key >> 59)) % ICACHE];
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
    ST(d->tab.dropped, d->tab.dropped + 1);
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
        ST(d->tab.dropped, d->tab.dropped + 1);
    }
}

/* Ends the innermost open span (top, not a sentinel) at now. */
static inline __attribute__((always_inline)) void frame_end(struct rp_dthread *d, uint64_t now)
{
    struct dframe *f = d->top;
    struct dstat *s = f->s;
    uint64_t dur = now > f->start ? now - f->start : 0;
    uint64_t self = dur > f->child ? dur - f->child : 0;
    d->top = f - 1;
    f[-1].child += dur; /* the root sentinel's is never read */
    uint32_t parent = f[-1].idx;
    if (__builtin_expect(!s, 0))
        return; /* counted as dropped when it began */
    stat_add(&d->tab, s, dur, self, f->t0);
    if (--s->active == 0)
        ST(s->incl, s->incl + dur);
    if (__builtin_expect(parent == NOID, 0))
        return; /* the caller's id was not recorded: no edge to name */
    edge_add(&d->tab, s, parent, f->idx, dur);
}

/* An exit that is not of the innermost span: one beyond the stack's bound,
 * or it ends the spans above the one it ends (left by a longjmp or an
 * exception: with their time, as trace mode's replay does), or it is
 * unmatched. */
static RP_NOINLINE void span_end_slow(struct rp_dthread *d, uint64_t key, uint64_t now)
{
    if (d->over) {
        if (--d->over == 0)
            d->top = d->full;
        return;
    }
    struct dframe *f = d->top;
    while (f > d->stack && f->key != key)
        f--;
    if (f == d->stack) {
        ST(d->unmatched, d->unmatched + 1);
        return;
    }
    while (d->top > f)
        frame_end(d, now);
    frame_end(d, now);
}

static inline __attribute__((always_inline)) void span_end(struct rp_dthread *d, uint64_t key,
                                                           uint64_t now)
{
    if (__builtin_expect(d->top->key == key, 1)) /* never a sentinel: see rp_dthread */
        frame_end(d, now);
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
        ST(d->tab.dropped, d->tab.dropped + 1);
        return;
    }
    const struct icache *c = icache_of(d, key);
    struct dstat *s = c->key == key ? c->s : id_miss(d, key);
    if (!s) {
        ST(d->tab.dropped, d->tab.dropped + 1);
        return;
    }
    d->held[d->nheld++] = (struct dhold){key, now, raw, s, d->over ? NOID : d->top->idx};
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
        ST(d->unmatched, d->unmatched + 1);
        return;
    }
    struct dhold h = d->held[i - 1];
    int outer = 1;
    for (uint32_t k = 0; k + 1 < i && outer; k++)
        outer = d->held[k].key != key;
    memmove(&d->held[i - 1], &d->held[i], (d->nheld - i) * sizeof(*d->held));
    d->nheld--;
    uint64_t dur = now > h.start ? now - h.start : 0;
    stat_add(&d->tab, h.s, dur, 0, h.t0);
    if (outer)
        ST(h.s->incl, h.s->incl + dur);
    if (h.acq != NOID)
        edge_add(&d->tab, h.s, h.acq, h.s->self, dur);
}

/* Open frames on d's stack, those beyond its bound included. */
static inline uint64_t stack_depth(const struct rp_dthread *d)
{
    return d->over ? STACK_MAX + d->over : (uint64_t)(d->top - d->stack);
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
        span_end(d, fkey, now);
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
            ST(d->tab.dropped, d->tab.dropped + 1);
        }
        break;
    }
    case RP_RAW_DATA: /* an instant's or counter's value: not kept, not an event */
        d->ndata++;
        break;
    default: /* ARG: nothing to count in direct mode */
        break;
    }
}

/* ---- threads ------------------------------------------------------------ */

RP_HIDDEN struct rp_dthread *rp_direct_thread_new(uint32_t tid)
{
    struct rp_dthread *d = zalloc(sizeof(*d));
    if (!d)
        return NULL;
    if (!(d->stack = zalloc((STACK_MAX + 2) * sizeof(struct dframe)))) {
        zfree(d, sizeof(*d));
        return NULL;
    }
    d->tid = tid;
    d->top = d->stack; /* the sentinels are zeroed: key 0, idx 0 (ROOT) */
    d->full = d->stack + STACK_MAX;
    d->before.word = UINT64_MAX; /* no event has this word */
    d->tb.pos = d->batch;
    d->tb.end = d->batch + BATCH;
    table_init(&d->tab);
    rp_own_lock(&rp_rt.direct_lock);
    d->next = dg.live;
    dg.live = d;
    rp_own_unlock(&rp_rt.direct_lock);
    return d;
}

RP_HIDDEN void rp_direct_feed(struct rp_dthread *d, uint64_t ticks, uint64_t word)
{
    count_events(d, 1, ticks, ticks);
    feed(d, ticks, ticks, word);
}

/* The name of thread tid (its comm), or "" if it cannot be read. */
static void thread_name(uint32_t tid, char name[16])
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
    memset(name, 0, 16);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t r = read(fd, name, 15);
    close(fd);
    if (r > 0 && name[r - 1] == '\n')
        name[r - 1] = 0;
}

/* A summary of thread d; own: the caller is d's thread, or d is idle (its
 * stack depth is read only then: spans open in a running thread are not
 * unclosed, they are in progress). */
static void tsum_of(const struct rp_dthread *d, struct tsum *s, int own)
{
    s->tid = d->tid;
    thread_name(rp_tid_of(d->tid), s->name); /* d->tid: a stream id (format.h) */
    s->first = LD(d->first);
    s->last = LD(d->last);
    s->events = LD(d->events);
    s->unmatched = LD(d->unmatched);
    s->unclosed = LD(d->unclosed) + (own ? stack_depth(d) + d->nheld : 0);
    s->dropped = LD(d->tab.dropped) + LD(d->reentered);
}

static uint64_t table_merge(struct dtable *dst, struct dtable *src);

RP_HIDDEN void rp_direct_thread_end(struct rp_dthread *d)
{
    struct tsum s;
    tsum_of(d, &s, 1);
    rp_own_lock(&rp_rt.direct_lock);
    for (struct rp_dthread **pp = &dg.live; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    s.dropped += table_merge(&dg.done, &d->tab);
    if (dg.nended < TSUM_MAX && !dg.ended)
        dg.ended = zalloc(TSUM_MAX * sizeof(struct tsum));
    if (dg.ended && dg.nended < TSUM_MAX)
        dg.ended[dg.nended++] = s;
    else
        dg.ended_dropped += s.events;
    rp_own_unlock(&rp_rt.direct_lock);
    table_free(&d->tab);
    zfree(d->stack, (STACK_MAX + 2) * sizeof(struct dframe));
    zfree(d, sizeof(*d));
}

/*
 * Runs the records stored in d->batch (by rp_append's fast path or by
 * rp_direct_event) through the engine and empties the batch.  The caller is
 * d's thread and holds d->tb.guard, so no record is added meanwhile.  The
 * time this takes is added to d->stolen: later events are timed without it,
 * so no span includes the engine's work (spans that were open lose it).
 * Cannot fail: what does not fit in the tables is counted as dropped.
 */
static RP_NOINLINE void batch_run(struct rp_dthread *d)
{
    struct rp_raw *p = d->batch, *e = d->tb.pos;
    if (p == e)
        return;
    uint64_t t0 = rp_ticks(), off = d->stolen;
    /* the last event: a DATA record's ticks field is its value */
    uint64_t last =
        e[-1].word >> RP_RAW_SHIFT == RP_RAW_DATA && e - 1 > p ? e[-2].ticks : e[-1].ticks;
    d->ndata = 0;
    for (; p < e; p++)
        feed(d, p->ticks - off, p->ticks, p->word);
    count_events(d, (uint64_t)(e - d->batch) - d->ndata, d->batch[0].ticks, last);
    d->tb.end = d->batch + BATCH; /* sites.c may have shortened it */
    rp_pos_set(&d->tb, d->batch);
    uint64_t t1 = rp_ticks();
    d->stolen = off + (t1 > t0 ? t1 - t0 : 0);
}

static void close_open(struct rp_dthread *d);

/* Runs the calling thread's batch, and with `close` ends its open spans
 * (close_open), unless the thread is inside the recorder. */
static void run_self(int close)
{
    struct rp_dthread *d = dself;
    if (!d || d->tb.guard)
        return;
    d->tb.guard = 1;
    atomic_signal_fence(memory_order_seq_cst);
    batch_run(d);
    if (close)
        close_open(d);
    atomic_signal_fence(memory_order_seq_cst);
    d->tb.guard = 0;
}

/* Runs the calling thread's batch, unless it is inside the recorder. */
static void drain_self(void)
{
    run_self(0);
}

/*
 * Ends every span still open on d at this moment (the engine-free clock),
 * with its time, as trace mode ends the frames left open when a thread or
 * the process ends (docs/robustness.md): pthread_exit from deep frames,
 * exit() from deep frames.  Spans beyond the stack's bound have no frame
 * and stay counted as dropped.  d's own thread only, batch drained, guard
 * held.  Not counted as cut: the STATS records have no field for it.
 */
static void close_open(struct rp_dthread *d)
{
    uint64_t now = rp_ticks() - d->stolen;
    if (d->over) {
        d->over = 0;
        d->top = d->full;
    }
    while (d->top > d->stack)
        frame_end(d, now);
}

/* Applies the calling thread's batch and ends its open spans (above). */
static void close_self(void)
{
    run_self(1);
}

RP_HIDDEN void rp_direct_exit_self(void)
{
    close_self();
}

static void dthread_exit(void *arg)
{
    if (arg && arg == dself)
        close_self();
    dself = NULL;
    rp_self = NULL;
    dgone = 1;
    if (arg)
        rp_direct_thread_end(arg);
}

/* The calling thread's first event: its table.  NULL if it cannot have one. */
static RP_NOINLINE struct rp_dthread *dthread_first(void)
{
    if (dgone || dinit || !dg.key_ok)
        return NULL;
    dinit = 1;
    struct rt_section sec; /* rp_rt.direct_lock: no cancel, no handler inside */
    section_enter(&sec);
    struct rp_dthread *d = rp_direct_thread_new(rp_thread_stream((uint32_t)syscall(SYS_gettid)));
    if (d) {
        pthread_setspecific(dg.key, d);
        dself = d;
        rp_self = &d->tb;
    }
    section_leave(&sec);
    dinit = 0;
    return d;
}

RP_HIDDEN void rp_direct_event(uint64_t word)
{
    struct rp_dthread *d = dself;
    if (__builtin_expect(!d, 0) && !(d = dthread_first()))
        return;
    if (__builtin_expect(d->tb.guard != 0, 0)) { /* a signal handler interrupted us */
        ST(d->reentered, d->reentered + 1);
        return;
    }
    d->tb.guard = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (d->tb.pos >= d->tb.end)
        batch_run(d);
    struct rp_raw *p = d->tb.pos; /* re-read: room for one now */
    p->ticks = rp_ticks();
    p->word = word;
    rp_pos_set(&d->tb, p + 1);
    atomic_signal_fence(memory_order_seq_cst);
    d->tb.guard = 0;
}

RP_HIDDEN int rp_direct_init(void)
{
    if (dg.key_ok)
        return 0;
    if (pthread_key_create(&dg.key, dthread_exit) != 0)
        return RP_ENOMEM;
    table_init(&dg.done);
    dg.key_ok = 1;
    return 0;
}

RP_HIDDEN void rp_direct_atfork_child(void)
{
    pthread_mutex_init(&rp_rt.direct_lock, NULL);
    dg.live = NULL; /* the parent's threads: their memory stays, unused */
    table_free(&dg.done);
    dg.nended = 0;
    dg.ended_dropped = 0;
    if (dself) {
        dself = NULL;
        rp_self = NULL;
        pthread_setspecific(dg.key, NULL);
    }
}

/* ---- merging and snapshots ---------------------------------------------- */

/*
 * The moments of n durations from the shifted sums: mean = K + sx / n and
 * M2 = sxx - sx^2 / n.  Shifting by K (the first duration, close to the
 * mean) keeps the sums small, so the subtraction loses nothing that matters
 * (the "shifted data" algorithm), and the hot path needs no division.
 */
static void moments(const struct dstat *s, uint64_t n, double *mean, double *m2)
{
    double sx = ldd((double *)&s->sx), sxx = ldd((double *)&s->sxx);
    if (!n) {
        *mean = *m2 = 0;
        return;
    }
    *mean = (double)LD(s->shift) + sx / (double)n;
    double v = sxx - sx * sx / (double)n;
    *m2 = v > 0 ? v : 0;
}

/*
 * Adds the moments of b (nb values) to a's (na values) by Chan's parallel
 * form of Welford's update:  d = mean_b - mean_a,  mean = mean_a + d nb / n,
 * M2 = M2_a + M2_b + d^2 na nb / n,  then stores them back as a's shifted
 * sums (a's shift kept).
 */
static void moments_merge(struct dstat *a, uint64_t na, struct dstat *b, uint64_t nb)
{
    double ma, m2a, mb, m2b, n = (double)(na + nb);
    moments(a, na, &ma, &m2a);
    moments(b, nb, &mb, &m2b);
    if (!na) {
        ST(a->shift, LD(b->shift));
        ma = mb;
    }
    double d = mb - ma, mean = ma + d * (double)nb / n;
    double m2 = m2a + m2b + d * d * (double)na * (double)nb / n;
    double sx = n * (mean - (double)a->shift);
    std_(&a->sx, sx);
    std_(&a->sxx, m2 + sx * sx / n);
}

/* Adds src's statistics of one id to dst's (dst is the merger's own). */
static int stat_merge(struct dtable *dt, struct dstat *a, const struct dtable *st, struct dstat *b)
{
    uint64_t na = a->calls, nb = LD(b->calls);
    int lost = 0;
    if (!nb)
        return 0;
    uint64_t n = na + nb;
    moments_merge(a, na, b, nb);
    ST(a->calls, n);
    ST(a->incl, a->incl + LD(b->incl));
    ST(a->dur, a->dur + LD(b->dur));
    ST(a->excl, a->excl + LD(b->excl));
    ST(a->overruns, a->overruns + LD(b->overruns));
    uint64_t bmin = LD(b->min), bmax = LD(b->max), bf = LD(b->first), bl = LD(b->last);
    if (bmin < a->min)
        ST(a->min, bmin);
    if (bmax > a->max)
        ST(a->max, bmax);
    if (!na || bf < a->first)
        ST(a->first, bf);
    if (bl > a->last)
        ST(a->last, bl);
    for (unsigned r = 0; r < HROWS; r++) {
        uint32_t rb = LDA(b->row[r]);
        if (!rb)
            continue;
        uint32_t ra = a->row[r];
        if (!ra && (ra = row_new(dt)))
            STR(a->row[r], (uint16_t)ra);
        if (!ra) {
            lost = 1;
            continue;
        }
        uint32_t *ca = row_at(dt, ra), *cb = row_at(st, rb);
        for (unsigned i = 0; i < RP_HIST_SUB; i++) {
            uint64_t v = (uint64_t)ca[i] + LD(cb[i]);
            ST(ca[i], v > UINT32_MAX ? UINT32_MAX : (uint32_t)v);
        }
    }
    return lost;
}

/* Merges src (possibly a running thread's) into dst (owned by the caller).
 * Returns the number of activations that could not be merged. */
static uint64_t table_merge(struct dtable *dst, struct dtable *src)
{
    uint32_t n = LDA(src->n), ne = LDA(src->nedges);
    uint64_t lost = 0;
    uint32_t *map = calloc(n, sizeof(*map));
    if (!map)
        return 1;
    for (uint32_t i = 1; i < n; i++) {
        struct dstat *b = stat_at(src, i);
        uint32_t j = dst->icap ? idx_find(dst->idx, dst->icap, b->key) : 0;
        if (!j && !(j = stat_new(dst, b->key, b->budget))) {
            lost += LD(b->calls);
            continue;
        }
        map[i] = j;
        lost += (uint64_t)stat_merge(dst, stat_at(dst, j), src, b);
    }
    for (uint32_t i = 0; i < ne; i++) {
        struct dedge *b = edge_at(src, i);
        uint32_t caller = (uint32_t)(b->key >> 32), callee = (uint32_t)b->key;
        uint64_t calls = LD(b->calls);
        if (callee >= n || caller >= n || !map[callee] || (caller && !map[caller])) {
            lost += calls;
            continue;
        }
        uint64_t k = (uint64_t)map[caller] << 32 | map[callee];
        uint32_t e1 = dst->ecap ? idx_find(dst->eidx, dst->ecap, k) : 0;
        if (!e1 && !(e1 = edge_new(dst, k))) {
            lost += calls;
            continue;
        }
        struct dedge *a = edge_at(dst, e1 - 1);
        uint64_t bmin = LD(b->min), bmax = LD(b->max);
        ST(a->calls, a->calls + calls);
        ST(a->incl, a->incl + LD(b->incl));
        if (bmin < a->min)
            ST(a->min, bmin);
        if (bmax > a->max)
            ST(a->max, bmax);
    }
    free(map);
    ST(dst->dropped, dst->dropped + LD(src->dropped));
    return lost;
}

struct snap {
    struct dtable tab;
    struct tsum *th;
    uint32_t nth;
    uint64_t unlisted; /* events of ended threads beyond TSUM_MAX summaries */
};

/* A merged copy of every thread's statistics.  Returns 0 or RP_ENOMEM. */
static int snap_take(struct snap *s)
{
    drain_self(); /* the caller's own events are all counted */
    table_init(&s->tab);
    s->nth = 0;
    rp_own_lock(&rp_rt.direct_lock);
    uint32_t nlive = 0;
    for (struct rp_dthread *d = dg.live; d; d = d->next)
        nlive++;
    s->th = malloc((dg.nended + nlive + 1) * sizeof(*s->th));
    if (!s->th) {
        rp_own_unlock(&rp_rt.direct_lock);
        return RP_ENOMEM;
    }
    table_merge(&s->tab, &dg.done);
    if (dg.nended)
        memcpy(s->th, dg.ended, dg.nended * sizeof(*s->th));
    s->nth = dg.nended;
    s->unlisted = dg.ended_dropped;
    for (struct rp_dthread *d = dg.live; d; d = d->next) {
        struct tsum *t = &s->th[s->nth++];
        tsum_of(d, t, d == dself);
        t->dropped += table_merge(&s->tab, &d->tab);
    }
    rp_own_unlock(&rp_rt.direct_lock);
    return 0;
}

static void snap_free(struct snap *s)
{
    table_free(&s->tab);
    free(s->th);
    s->th = NULL;
}

/* Expands s's sparse histogram into counts[RP_HIST_BUCKETS]; returns the
 * number of values in it. */
static uint64_t hist_expand(const struct dtable *t, const struct dstat *s, uint32_t *counts)
{
    uint64_t n = 0;
    memset(counts, 0, RP_HIST_BUCKETS * sizeof(*counts));
    for (unsigned r = 0; r < HROWS; r++) {
        if (!s->row[r])
            continue;
        const uint32_t *c = row_at(t, s->row[r]);
        for (unsigned i = 0; i < RP_HIST_SUB; i++) {
            counts[r * RP_HIST_SUB + i] = c[i];
            n += c[i];
        }
    }
    return n;
}

static void view_of(const struct dtable *t, const struct dstat *s, uint32_t *counts,
                    struct rp_dview *v)
{
    v->calls = s->calls;
    v->incl = s->incl;
    v->dur = s->dur;
    v->excl = s->excl;
    v->min = s->min != UINT64_MAX ? s->min : 0;
    v->max = s->max;
    v->first = s->first;
    v->last = s->last;
    v->overruns = s->overruns;
    moments(s, s->calls, &v->mean, &v->m2);
    uint64_t n = hist_expand(t, s, counts);
    v->p50 = rp_hist_quantile(counts, n, 0.50);
    v->p95 = rp_hist_quantile(counts, n, 0.95);
    v->p99 = rp_hist_quantile(counts, n, 0.99);
}

RP_HIDDEN int rp_direct_lookup(uint8_t kind, uint64_t key, struct rp_dview *out)
{
    struct snap s;
    uint32_t *counts = malloc(RP_HIST_BUCKETS * sizeof(*counts));
    int rc = counts ? snap_take(&s) : RP_ENOMEM;
    if (rc < 0)
        goto out;
    uint32_t i = s.tab.icap ? idx_find(s.tab.idx, s.tab.icap, TKEY(kind, key)) : 0;
    if (i)
        view_of(&s.tab, stat_at(&s.tab, i), counts, out);
    rc = i ? 0 : RP_ENOENT;
    snap_free(&s);
out:
    free(counts);
    return rc;
}

RP_HIDDEN int rp_direct_lookup_edge(uint8_t ckind, uint64_t ckey, uint8_t kind, uint64_t key,
                                    struct rp_dedge_view *out)
{
    struct snap s;
    int rc = snap_take(&s);
    if (rc < 0)
        return rc;
    rc = RP_ENOENT;
    const struct dtable *t = &s.tab;
    uint32_t caller = ckind == 0xff ? 0
                      : t->icap     ? idx_find(t->idx, t->icap, TKEY(ckind, ckey))
                                    : 0;
    uint32_t callee = t->icap ? idx_find(t->idx, t->icap, TKEY(kind, key)) : 0;
    uint32_t e1 = 0;
    if (callee && (caller || ckind == 0xff) && t->ecap)
        e1 = idx_find(t->eidx, t->ecap, (uint64_t)caller << 32 | callee);
    if (e1) {
        struct dedge *e = edge_at(t, e1 - 1);
        *out = (struct rp_dedge_view){e->calls, e->incl, e->calls ? e->min : 0, e->max};
        rc = 0;
    }
    snap_free(&s);
    return rc;
}

RP_HIDDEN int rp_direct_totals(struct rp_dtotals *out)
{
    struct snap s;
    int rc = snap_take(&s);
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof(*out));
    out->threads = s.nth;
    for (uint32_t i = 0; i < s.nth; i++) {
        out->events += s.th[i].events;
        out->dropped += s.th[i].dropped;
        out->unmatched += s.th[i].unmatched;
        out->unclosed += s.th[i].unclosed;
    }
    snap_free(&s);
    return 0;
}

/* ---- output: DEFS, STATS and the printed table -------------------------- */

/*
 * The definition of table key k for DEFS: kind, class and, for sites, the
 * names the site carries.  Functions and locks are named by the analyzer
 * (from MAPS and the binaries).  Returns 0, or -1 to leave the id out.
 */
static int key_def(uint64_t k, struct rp_def *d)
{
    static const uint8_t cls[RP_KIND_MAX] = {
        [RP_KIND_FUNC] = RP_CLASS_FUNC,      [RP_KIND_POINT] = RP_CLASS_POINT,
        [RP_KIND_LOCK_WAIT] = RP_CLASS_LOCK, [RP_KIND_LOCK_HOLD] = RP_CLASS_LOCK,
        [RP_KIND_IO] = RP_CLASS_IO,          [RP_KIND_INSTANT] = RP_CLASS_USER,
        [RP_KIND_COUNTER] = RP_CLASS_USER,   [RP_KIND_WAIT] = RP_CLASS_LOCK, /* a condition */
    };
    uint8_t kind = TKIND(k);
    if (kind >= RP_KIND_MAX)
        return -1;
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    d->cls = cls[kind];
    d->key = TPAYLOAD(k);
    /* sites are keyed as points whatever their kind; the site says which */
    return kind == RP_KIND_POINT ? rp_sites_describe(d->key, d) : 0;
}

/* A STATS payload under construction; flushed as a chunk when full. */
struct sbuf {
    uint8_t *p;
    size_t len, cap;
    rp_direct_out_fn out;
};

/* Room for n more bytes, flushing the chunk so far if needed. */
static uint8_t *sb_room(struct sbuf *b, size_t n)
{
    if (b->len + n > b->cap && b->len) {
        b->out(RP_CH_STATS, b->p, b->len);
        b->len = 0;
    }
    if (n > b->cap)
        return NULL;
    uint8_t *q = b->p + b->len;
    b->len += n;
    return q;
}

static void put_thread(struct sbuf *b, const struct tsum *t)
{
    uint8_t *q = sb_room(b, 8 + RP_STATS_THREAD_LEN);
    rp_put32(q, RP_STATS_THREAD);
    rp_put32(q + 4, RP_STATS_THREAD_LEN);
    q += 8;
    rp_put32(q, t->tid);
    rp_put32(q + 4, 0);
    rp_put64(q + 8, t->first);
    rp_put64(q + 16, t->last);
    rp_put64(q + 24, t->events);
    rp_put64(q + 32, t->unmatched);
    rp_put64(q + 40, t->unclosed);
    rp_put64(q + 48, t->dropped);
}

static uint64_t dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

static void put_node(struct sbuf *b, uint32_t id, const struct dtable *t, const struct dstat *s,
                     const uint32_t *counts)
{
    uint32_t nb = 0;
    for (unsigned i = 0; i < RP_HIST_BUCKETS; i++)
        nb += counts[i] != 0;
    uint32_t len = RP_STATS_NODE_LEN + nb * 8;
    uint8_t *q = sb_room(b, 8 + len);
    rp_put32(q, RP_STATS_NODE);
    rp_put32(q + 4, len);
    q += 8;
    rp_put32(q, id);
    rp_put32(q + 4, nb);
    double mean, m2;
    moments(s, s->calls, &mean, &m2);
    const uint64_t f[] = {
        s->calls, s->incl,  s->dur,  s->excl,     s->min != UINT64_MAX ? s->min : 0,
        s->max,   s->first, s->last, s->overruns, dbits(mean),
        dbits(m2)};
    for (unsigned i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        rp_put64(q + 8 + 8 * i, f[i]);
    q += RP_STATS_NODE_LEN;
    for (unsigned i = 0; i < RP_HIST_BUCKETS; i++) {
        if (!counts[i])
            continue;
        rp_put16(q, (uint16_t)i);
        rp_put16(q + 2, 0);
        rp_put32(q + 4, counts[i]);
        q += 8;
    }
    (void)t;
}

static void put_edge(struct sbuf *b, uint32_t caller, uint32_t callee, const struct dedge *e)
{
    uint8_t *q = sb_room(b, 8 + RP_STATS_EDGE_LEN);
    rp_put32(q, RP_STATS_EDGE);
    rp_put32(q + 4, RP_STATS_EDGE_LEN);
    q += 8;
    rp_put32(q, caller);
    rp_put32(q + 4, callee);
    rp_put64(q + 8, e->calls);
    rp_put64(q + 16, e->incl);
    rp_put64(q + 24, e->calls ? e->min : 0);
    rp_put64(q + 32, e->max);
}

static void out_threads(const struct snap *s, rp_direct_out_fn out)
{
    for (uint32_t i = 0; i < s->nth; i++) {
        uint8_t p[8 + 16];
        size_t n = strnlen(s->th[i].name, 16);
        rp_put32(p, s->th[i].tid);
        rp_put32(p + 4, 0);
        memcpy(p + 8, s->th[i].name, n);
        out(RP_CH_THREAD, p, 8 + n);
    }
}

/* STATS records need at most this much room (a node with every bucket). */
#define SB_CAP (8 + RP_STATS_NODE_LEN + 8 * RP_HIST_BUCKETS + (1u << 20))

RP_HIDDEN int64_t rp_direct_write(rp_direct_out_fn out)
{
    struct snap s;
    struct rp_enc e;
    struct sbuf b = {.cap = SB_CAP, .out = out};
    uint32_t *ids = NULL, *counts = NULL;
    int64_t rc = snap_take(&s);
    if (rc < 0)
        return rc;
    rc = RP_ENOMEM;
    if (rp_enc_init(&e, NULL, NULL) < 0)
        goto out_snap;
    ids = calloc(s.tab.n, sizeof(*ids));
    counts = malloc(RP_HIST_BUCKETS * sizeof(*counts));
    b.p = malloc(b.cap);
    if (!ids || !counts || !b.p)
        goto out;
    for (uint32_t i = 1; i < s.tab.n; i++) {
        struct rp_def d;
        if (key_def(stat_at(&s.tab, i)->key, &d) == 0)
            ids[i] = rp_enc_id(&e, &d);
    }
    out_threads(&s, out);
    size_t dlen;
    const uint8_t *defs = rp_enc_take_defs(&e, &dlen);
    if (dlen)
        out(RP_CH_DEFS, defs, dlen);
    int64_t events = 0;
    for (uint32_t i = 0; i < s.nth; i++) {
        put_thread(&b, &s.th[i]);
        events += (int64_t)s.th[i].events;
    }
    for (uint32_t i = 1; i < s.tab.n; i++) {
        if (!ids[i])
            continue;
        struct dstat *st = stat_at(&s.tab, i);
        hist_expand(&s.tab, st, counts);
        put_node(&b, ids[i], &s.tab, st, counts);
    }
    for (uint32_t i = 0; i < s.tab.nedges; i++) {
        struct dedge *ed = edge_at(&s.tab, i);
        uint32_t caller = (uint32_t)(ed->key >> 32), callee = (uint32_t)ed->key;
        if (ids[callee] && (!caller || ids[caller]))
            put_edge(&b, caller ? ids[caller] : 0, ids[callee], ed);
    }
    if (b.len)
        out(RP_CH_STATS, b.p, b.len);
    rc = events;
out:
    free(b.p);
    free(ids);
    free(counts);
    rp_enc_free(&e);
out_snap:
    snap_free(&s);
    return rc;
}

/* The printed name of table key k, in buf. */
static const char *key_name(uint64_t k, char *buf, size_t bufsz)
{
    uint8_t kind = TKIND(k);
    uint64_t a = TPAYLOAD(k);
    Dl_info di;
    switch (kind) {
    case RP_KIND_FUNC:
        /* dladdr sees dynamic symbols only; otherwise module+offset, which
         * `rankprof report` turns into the full name */
        if (!dladdr((void *)(uintptr_t)a, &di) || !di.dli_fname) {
            snprintf(buf, bufsz, "0x%llx", (unsigned long long)a);
        } else if (di.dli_sname && (uintptr_t)di.dli_saddr == (uintptr_t)a) {
            snprintf(buf, bufsz, "%s", di.dli_sname);
        } else {
            const char *m = strrchr(di.dli_fname, '/');
            snprintf(buf, bufsz, "%s+0x%llx", m ? m + 1 : di.dli_fname,
                     (unsigned long long)(a - (uintptr_t)di.dli_fbase));
        }
        return buf;
    case RP_KIND_LOCK_WAIT:
    case RP_KIND_LOCK_HOLD:
        snprintf(buf, bufsz, "lock@0x%llx [%s]", (unsigned long long)a,
                 kind == RP_KIND_LOCK_WAIT ? "wait" : "hold");
        return buf;
    case RP_KIND_WAIT: /* sites are keyed as points: this is a condition */
        snprintf(buf, bufsz, "cond@0x%llx [wait]", (unsigned long long)a);
        return buf;
    default: {
        struct rp_def d = {0};
        if (rp_sites_describe(a, &d) == 0 && d.name)
            snprintf(buf, bufsz, "%s%s", d.name,
                     d.kind == RP_KIND_LOCK_WAIT || d.kind == RP_KIND_WAIT ? " [wait]"
                     : d.kind == RP_KIND_LOCK_HOLD                         ? " [hold]"
                                                                           : "");
        else
            snprintf(buf, bufsz, "site@0x%llx", (unsigned long long)a);
        return buf;
    }
    }
}

/* Prints a duration in ticks with a unit that keeps it short. */
static void fmt_time(char *buf, size_t n, double ns)
{
    if (ns < 1e3)
        snprintf(buf, n, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, n, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, n, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, n, "%.3f s", ns / 1e9);
}

static const struct dtable *sort_tab;

static int by_incl(const void *a, const void *b)
{
    const struct dstat *x = stat_at(sort_tab, *(const uint32_t *)a);
    const struct dstat *y = stat_at(sort_tab, *(const uint32_t *)b);
    if (x->incl != y->incl)
        return x->incl < y->incl ? 1 : -1;
    return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : 0;
}

RP_HIDDEN int rp_direct_print(FILE *f, double ns_per_tick)
{
    struct snap s;
    int rc = snap_take(&s);
    if (rc < 0)
        return rc;
    uint32_t *order = malloc(s.tab.n * sizeof(*order)), n = 0;
    if (!order) {
        snap_free(&s);
        return RP_ENOMEM;
    }
    for (uint32_t i = 1; i < s.tab.n; i++)
        if (stat_at(&s.tab, i)->calls)
            order[n++] = i;
    rp_own_lock(&rp_rt.print_lock); /* qsort's comparator reads sort_tab */
    sort_tab = &s.tab;
    qsort(order, n, sizeof(*order), by_incl);
    rp_own_unlock(&rp_rt.print_lock);

    uint64_t events = 0, dropped = 0;
    for (uint32_t i = 0; i < s.nth; i++) {
        events += s.th[i].events;
        dropped += s.th[i].dropped;
    }
    fprintf(f, "rankprof direct profile: %u threads, %llu events, %u ids", s.nth,
            (unsigned long long)events, n);
    if (dropped)
        fprintf(f, ", %llu events NOT RECORDED (a table bound was hit)",
                (unsigned long long)dropped);
    if (s.unlisted)
        fprintf(f, ", %llu events of ended threads not listed (counted in the rows)",
                (unsigned long long)s.unlisted);
    fprintf(f, "\n%-40s %12s %12s %12s %12s  %s\n", "name", "calls", "total", "avg", "max",
            "status");
    for (uint32_t i = 0; i < n; i++) {
        const struct dstat *st = stat_at(&s.tab, order[i]);
        char name[256], tot[32], avg[32], mx[32];
        uint8_t kind = TKIND(st->key);
        key_name(st->key, name, sizeof(name));
        int span = kind != RP_KIND_INSTANT && kind != RP_KIND_COUNTER && st->dur;
        fmt_time(tot, sizeof(tot), (double)st->incl * ns_per_tick);
        fmt_time(avg, sizeof(avg), (double)st->dur / (double)st->calls * ns_per_tick);
        fmt_time(mx, sizeof(mx), (double)st->max * ns_per_tick);
        fprintf(f, "%-40.40s %12llu %12s %12s %12s  %s\n", name, (unsigned long long)st->calls,
                span ? tot : "-", span ? avg : "-", span ? mx : "-",
                st->overruns ? "OVER BUDGET" : "ok");
    }
    fflush(f);
    free(order);
    snap_free(&s);
    return 0;
}

RP_API int rp_report(FILE *f)
{
    if (!f)
        return RP_EINVAL;
    if (!rp_rt.direct)
        return RP_EBUSY;
    return rp_direct_print(f, rp_rt.freq > 0 ? 1e9 / rp_rt.freq : 1.0);
}

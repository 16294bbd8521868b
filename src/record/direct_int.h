// SPDX-License-Identifier: MIT
/*
 * direct_int.h - what the files of direct mode share: the per-thread state,
 * the tables and their accessors (direct.c the engine, direct_table.c the
 * tables and their merging, direct_thread.c threads and snapshots,
 * direct_out.c lookups and output).  Not for the rest of the recorder,
 * which uses direct.h.
 *
 * Per thread (struct rp_dthread), only that thread writes:
 *
 *   batch   events recorded, not yet applied: the thread's rp_self is a tbuf
 *           whose pos/end walk batch[], so rp_append's fast path (rt.h)
 *           stores each event there as in trace mode; when it is full,
 *           rp_append_slow hands the event to rp_direct_event, which runs
 *           the batch through the engine (rp_dengine_run) and starts the next
 *   stack   open spans: table key, start ticks, ticks spent in callees, id
 *   tab     per id (struct dstat): calls, inclusive (outermost activation
 *           only), duration sum, exclusive, min, max, first/last start,
 *           the moments (below), budget overruns, and a log-linear histogram
 *           (src/common/hist.h) stored sparsely: 60 rows of 32 buckets, a
 *           row allocated on its first value; per caller->callee edge
 *           (struct dedge): calls, total, min, max.
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
 * Chan's parallel form of Welford's update (direct_table.c).
 *
 * Threads.  rp_rt.direct_lock guards the list of live threads, the table of ended
 * threads and their summaries.  A thread's table is merged into the table of
 * ended threads when it ends (key destructor) and freed; a snapshot merges
 * that and every live table into a fresh table under the lock.
 */
#ifndef RP_RECORD_DIRECT_INT_H
#define RP_RECORD_DIRECT_INT_H

#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "common/array.h"
#include "common/bytes.h"
#include "common/hist.h"
#include "direct.h"
#include "locks.h"
#include "rt.h"
#include "trace/format.h"

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
#define PARK_MAX   64u  /* open frames a blocked thread publishes (struct dpark) */

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
    uint64_t cut;            /* activations unwound or cut (span.h), not written to STATS */
    uint64_t ocalls, oticks; /* spans outside the program's code (direct.c, frame_end) */
    uint64_t shift;          /* K: the first duration; sx = sum(x - K), sxx = sum((x - K)^2) */
    double sx, sxx;
    uint16_t row[HROWS]; /* histogram row index, 0 = none yet */
    /* owner only */
    uint32_t active;         /* open activations on this thread's stack */
    uint32_t self;           /* this entry's index */
    uint32_t last_caller;    /* the caller of the cached edge; UINT32_MAX: none yet */
    uint8_t lib;             /* DSTAT_LIB | DSTAT_BLOCKED, immutable once published */
    struct dedge *last_edge; /* this id's edge from last_caller */
};

/* dstat.lib: an interposed wait, lock wait or hold, of any caller (no
 * source file), which may be outside the program's code; a wait or lock
 * wait (any: the spans under it are outside, if DSTAT_LIB). */
#define DSTAT_LIB     1u
#define DSTAT_BLOCKED 2u

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
    int out;      /* outside the program's code (direct.c, hold_begin) */
};

/* The per-thread cache of id entries: slot icache_of(key) holds the last
 * key seen there (0 = none) and its entry, which never moves. */
#define ICACHE 256u
struct icache {
    uint64_t key;
    struct dstat *s;
};

/* An open frame of a thread that blocked (rp_direct_idle): its key, start
 * (engine-free clock) and the time of its callees that ended. */
struct dpark {
    uint64_t key, start, child;
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
    uint64_t unwound, cut; /* spans ended by an unwinding, by the thread's end (span.h) */
    uint64_t ndata;        /* DATA records in the batch being run (not events) */
    uint64_t stolen;       /* ticks the engine spent on batches (owner only) */
    /* Recording windows (ctl.c; owner only): the edges applied so far, off
     * (between a switch off and the next on: its events are left out) and
     * windowed (an edge was applied: an exit or release of nothing open is
     * of a span begun before a window, left out rather than unmatched). */
    uint32_t win_done;
    uint8_t win_off, windowed;
    struct dtable tab;
    /*
     * The thread's open frames, outermost first, for the statistics of a
     * running process (direct_pub.c): written by the owner under park_seq
     * (odd while written) when it blocks with its batch applied
     * (rp_direct_idle: park_running 0) and at the end of each run of its
     * engine (park_running 1: a thread that never blocks, an event loop,
     * has its open frames counted too).  Read by snapshots with relaxed
     * loads, kept if park_seq is the same before and after they read them;
     * a blocked thread's only if it is the same after they read the table
     * too (they then agree exactly), a running thread's anyway (they are
     * at most one batch of events older than the table: a frame that ended
     * since may be counted twice, once open).  The engine's next run turns
     * a blocked thread's frames into a running one's.
     */
    uint32_t park_seq, park_n, park_running;
    uint64_t park_stolen; /* d->stolen then: now on the engine-free clock */
    struct dpark park[PARK_MAX];
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
    uint64_t unwound, cut;
};

/* ---- memory ------------------------------------------------------------- */

/* Zeroed pages, off the hot path; NULL when the system says no. */
static inline void *zalloc(size_t n)
{
    void *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static inline void zfree(void *p, size_t n)
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

/* ---- tables (direct_table.c) -------------------------------------------- */

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

/* Empties t: no entries, edges or rows (nothing to free).  Cannot fail. */
RP_HIDDEN void rp_dtab_init(struct dtable *t);

/* Frees t's memory and empties it.  Cannot fail. */
RP_HIDDEN void rp_dtab_free(struct dtable *t);

/* Adds entry `key` with budget ticks (0: none).  Returns its index, or 0
 * when a bound is hit or memory cannot be had. */
RP_HIDDEN RP_NOINLINE uint32_t rp_dtab_stat_new(struct dtable *t, uint64_t key, uint64_t budget,
                                                uint8_t lib);

/* Adds edge `key`.  Returns its index + 1, or 0 when a bound is hit. */
RP_HIDDEN RP_NOINLINE uint32_t rp_dtab_edge_new(struct dtable *t, uint64_t key);

/* A zeroed histogram row.  Returns its index, or 0 when a bound is hit. */
RP_HIDDEN RP_NOINLINE uint32_t rp_dtab_row_new(struct dtable *t);

/* A new id of a thread, with a site's budget.  Returns its index, or 0 as
 * rp_dtab_stat_new. */
RP_HIDDEN RP_NOINLINE uint32_t rp_dtab_id_new(struct dtable *t, uint64_t key);

/* The index of key, added if new; 0 when it cannot be recorded. */
static inline uint32_t id_of(struct dtable *t, uint64_t key)
{
    uint32_t i = t->icap ? idx_find(t->idx, t->icap, key) : 0;
    return i ? i : rp_dtab_id_new(t, key);
}

/* The mean and M2 of n durations from s's shifted sums.  Cannot fail. */
RP_HIDDEN void rp_dstat_moments(const struct dstat *s, uint64_t n, double *mean, double *m2);

/* Merges src (possibly a running thread's) into dst (owned by the caller).
 * Returns the number of activations that could not be merged. */
RP_HIDDEN uint64_t rp_dtab_merge(struct dtable *dst, struct dtable *src);

/* ---- the engine (direct.c) ---------------------------------------------- */

/* Open frames on d's stack, those beyond its bound included. */
static inline uint64_t stack_depth(const struct rp_dthread *d)
{
    return d->over ? STACK_MAX + d->over : (uint64_t)(d->top - d->stack);
}

/* Applies d's batch to its tables and empties it (the caller is d's thread
 * and holds d->tb.guard).  Cannot fail: what does not fit is dropped. */
RP_HIDDEN RP_NOINLINE void rp_dengine_run(struct rp_dthread *d);

/* Ends every span still open on d at `now` on its engine-free clock, with
 * its time, counted as cut (span.h); d's own thread with its batch drained
 * and guard held, or a table fed by rp_direct_feed.  Cannot fail. */
RP_HIDDEN void rp_dengine_close(struct rp_dthread *d, uint64_t now);

/* Publishes d's open frames (d's own thread, batch applied, guard held),
 * or none beyond PARK_MAX or the stack's bound.  Cannot fail. */
RP_HIDDEN void rp_dengine_park(struct rp_dthread *d, int running);

/* Adds to t (the caller's) the n open frames f of a thread as activations
 * ending at now (engine-free clock), counted as cut, with their edges, as
 * a thread's end would.  Cannot fail: what does not fit is left out. */
RP_HIDDEN void rp_dtab_add_open(struct dtable *t, const struct dpark *f, uint32_t n, uint64_t now);

/* ---- snapshots (direct_thread.c) ---------------------------------------- */

struct snap {
    struct dtable tab;
    struct tsum *th; /* zalloc'd, th_bytes */
    size_t th_bytes;
    uint32_t nth;
    uint64_t unlisted; /* events of ended threads beyond TSUM_MAX summaries */
};

/* A merged copy of every thread's statistics.  Returns 0 or RP_ENOMEM. */
RP_HIDDEN int rp_dsnap_take(struct snap *s);

/* Set on a thread (direct_pub.c): its snapshots also count the open frames
 * every other thread published (rp_dengine_park: blocked, or as of its
 * engine's last run) as ending now. */
RP_HIDDEN extern __thread int rp_dsnap_open;

/* Frees a snapshot.  Cannot fail. */
RP_HIDDEN void rp_dsnap_free(struct snap *s);

/* The frames open on the thread a fatal signal hit (rp_direct_exit_self),
 * for the STATS FATAL record: their keys, the innermost n of depth,
 * outermost first, and the thread's stream id.  Written once, by that
 * thread, before the statistics; n 0: none. */
struct dfatal {
    uint64_t keys[RP_STATS_FATAL_MAX];
    uint32_t n, depth, tid;
};
RP_HIDDEN extern struct dfatal rp_dfatal;

#endif /* RP_RECORD_DIRECT_INT_H */

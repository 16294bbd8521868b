// SPDX-License-Identifier: MIT
/*
 * replay_int.h - the replay's internals, shared by its files (replay.h is
 * the interface):
 *
 *   replay.c    the replay of one EVENTS chunk: the event loop, span
 *               counting (the span-end rule), the end of open spans
 *   join.c      the threads' state between chunks: joining a replayed
 *               chunk to its thread in file order, deep (resident) stacks
 *   workers.c   the worker threads and the ring of jobs they replay
 *   accum.c     the replayers' accumulators: their memory, and summing
 *               them into the profile's final fields (finish)
 *   load.c      reading the trace's chunks in order into the profile
 *               (rp_replay_file): definitions, INFO, clocks, threads
 *
 * Calls go one way: load.c -> workers.c -> join.c -> replay.c -> accum.c.
 * The per-event path stays inside replay.c (static inline); what crosses
 * files is per chunk or per run.
 */
#ifndef RP_ANALYZE_REPLAY_INT_H
#define RP_ANALYZE_REPLAY_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "comp.h"
#include "emap.h"
#include "profile.h"
#include "replay.h"
#include "spanfilter.h"
#include "trace/format.h"

#include "common/compiler.h"

struct frame {
    uint32_t id;
    uint64_t start;
    uint64_t child;        /* ticks spent in spans called from this one (in this chunk) */
    int64_t ev;            /* the chunk-local number of its ENTER event (the chunk's first
                              event is 1; <= 0: before the chunk); in a thread's stack
                              between chunks, relative to the end of the last one */
    uint64_t off;          /* ticks off CPU in spans below it (in this chunk; in a thread's
                              stack between chunks, summed over them): taken out of its
                              on-CPU statistics (format 1.3, see "Off-CPU" above) */
    uint64_t acts;         /* activations ended below it (in this chunk; in a thread's stack
                              between chunks, summed over them): its edge's incl_calls */
    uint64_t pre;          /* ticks its thread was preempted below it (in this chunk; in a
                              thread's stack between chunks, summed over them): off CPU, but
                              not inside a wait (a sleep's off-CPU time is the wait) */
    struct rp_sf_frame sf; /* a filtered replay's state (spanfilter.h); else zero */
};

/* The accumulators of struct hot that most nodes never need, apart. */
struct hot_rare {
    uint64_t nbudget, overruns; /* ~ the budget in ticks (0 = none); spans longer */
    uint64_t cut;               /* spans not ended by their own exit (span_cut) */
    uint64_t offb;              /* off-CPU ticks below its spans, summed */
    uint64_t nomin; /* ~ the smallest on-CPU duration of the spans that had any off-CPU time */
};

/*
 * What replay touches for every span of a node, packed in one place (the
 * full struct rp_node is filled from it at the end): the statistics, the
 * exact sum of squares, and a cache of the edges from the node's last two
 * callers, which hits for every callee that has one or two usual callers.
 * excl is a signed sum kept modulo 2^64 (no overflow on any input): a span
 * that began in an earlier chunk ends with only this chunk's callee time
 * subtracted, and the join subtracts the rest.
 *
 * A span's count, duration, minimum and maximum are kept on its edge only
 * (caller -> node, which every span has, ROOT as the caller at the bottom):
 * the node's are the sums, minimum and maximum over its edges (edges_merge, accum.c),
 * so each span updates them once, not twice.  `calls` counts only what has
 * no edge: instants and counter samples.
 */
struct hot {
    unsigned __int128 sq; /* sum of squared durations, exact */
    uint64_t calls, incl;
    uint64_t excl;       /* signed, modulo 2^64 */
    struct rp_hist hist; /* window of counts (not n: the edges count) */
    uintptr_t hbase;     /* hist.counts - hist.lo, as an address: a bucket's count is
                            at hbase + 4 * bucket, without a subtraction in the way */
    uint32_t last_caller[2], last_edge[2]; /* edge_of(); ~ the caller (0 = none) */
    struct hot_rare *rare; /* allocated when first needed (rare_get): NULL for a node with
                              no budget, no span cut and no off-CPU time below */
    uint64_t omax;         /* the largest on-CPU duration (less the off-CPU time below) */
    uint8_t ivl_off;       /* intervals too spread for a period: no more counted */
    uint64_t rmax;         /* the largest duration less the preempted time below (frame.pre) */
    uint64_t ivl_chunk, ivl_prev; /* the chunk (acc.chunk) and start of its last outermost
                                     span, for the interval to the next one */
    struct rp_flag_hists *fh;     /* own time per span and intervals between starts (profile.h),
                                     allocated when first needed (fh_get) */
};

/*
 * A replayer's entry per node (acc.hot).  Its accumulator (struct hot, in
 * acc.full at the same index) is used from its second span, or on a first one that is not a
 * plain leaf (callee, off-CPU or preempted time below, begun in an earlier
 * chunk), a cut, an instant or a budget: a node seen once, as most nodes of
 * a program with very many are, keeps its span here (one) and is summed
 * from it when the replay ends.
 */
struct hid {
    uint8_t full;    /* its accumulator is in use */
    uint8_t blocked; /* a node of kind offcpu, wait or lock-wait: its spans are time
                        off CPU for the frames above them (frame.off) */
    uint8_t lib;     /* the recorder's own blocked span or hold, of any caller (an
                        interposed wait or lock: no source file), which may be
                        outside the program's code (rp_span_outside) */
    uint8_t one;     /* without an accumulator: HID_SPAN if dur, start, chunk hold a
                        span, | HID_OUTER if it was outermost */
    uint32_t chunk;  /* that span's chunk (acc.serial) when outermost, for intervals
                        (0: none), */
    uint64_t dur;    /* its duration, */
    uint64_t start;  /* and its start: 24 bytes in all */
};
enum { HID_SPAN = 1, HID_OUTER = 2 };
_Static_assert(sizeof(struct hid) == 24, "struct hid: 24 bytes a node (docs/robustness.md)");

/*
 * One replayer's accumulators: a worker thread's or the main thread's.  The
 * statistics of every span a replayer ends go here; they are summed into
 * the profile at the end, so replayers never share a counter.
 */
struct acc {
    _Alignas(64) struct hid *hot; /* per node; aligned: replayers share no cache line */
    struct hot *full;             /* per node, as hot: the accumulators (struct hid.full); the pages
                                     of those never used are never written */
    size_t full_bytes;            /* allocated (rp_zarr_grow) */
    uint32_t *active;             /* per node: open activations on the current stack, and
                                     RP_ACTIVE_UNDEF for ROOT and nodes no DEFS defined */
    uint32_t nhot, nact;          /* entries of hot and of active */
    size_t hot_bytes, active_bytes; /* allocated (rp_zarr_grow): pages of ids a replayer
                                       never sees are never written, so cost nothing */
    struct rp_emap em;
    struct frame *stack;
    uint32_t depth, cap;
    uint64_t chunk;  /* the chunk being replayed (its offset + 1; 0 = none): intervals
                        between starts are taken within one chunk, one thread's */
    uint32_t serial; /* the chunks this replayer began, 1 up, 0 skipped: struct hid's
                        short name of the chunk (when it wraps, no entry keeps one) */
    uint64_t pz;     /* PAUSE ticks so far (in the chunk, or the resident chunks): a
                        frame's start on `stack` is its start less pz at its push, so
                        a PAUSE moves every open span's start by adding to pz */
    uint32_t *owned; /* the nodes whose accumulator has own counts (hot.fh->own), in the
                        order first counted: the finish visits these, not every entry
                        (reading a page of hot the replayer never wrote can cost memory) */
    uint32_t nowned, capowned;
};

/* What a resident thread keeps while it is not replaying (Deep stacks,
 * below): the part of struct acc swapped into ACC_MAIN for its chunks. */
struct rstate {
    struct frame *stack;
    uint32_t depth, cap;
    uint32_t *active; /* its own activation counts: the recursion test */
    size_t active_bytes;
    uint32_t nact;
    uint64_t pz;
    uint64_t base; /* its events in its resident chunks so far (job.evbase) */
};

#define RP_ACTIVE_UNDEF 0x80000000u /* (depth < RP_REPLAY_DEPTH_MAX < this) */

/*
 * A span of U that its chunk ended with time (closed 1), as the chunk saw
 * it: counted at the join (rp_replay_count_u), where the time its callees
 * took in the earlier chunks is known, so that its duration is compensated
 * against all of its callees' (comp.h rp_comp_span) and its exclusive
 * time is exact.  child, off, acts and pre: in the chunk, as its frame had
 * them; k: the correction (0 when not compensated); dur: the duration the
 * chunk gave it, and the frame below.
 */
struct uspan {
    uint32_t id, parent;
    uint64_t start, raw, k, dur;
    uint64_t child, off, acts, pre;
    uint8_t outer; /* no other activation of id open below it */
    uint8_t cut;   /* ended without its exit (span_cut) */
};

/*
 * One EVENTS chunk to replay.  Its stack at the start (U: from the chunk's
 * snapshot, or handed over from the thread's previous chunk) is put under
 * the chunk's own spans; what the chunk does to U and the stack it leaves
 * are reported back and joined to the thread in file order (rp_replay_join()).
 */
#define HOLD_MARKS 16 /* holds open at once whose holder's blocked time is kept */

struct job {
    _Alignas(64) uint8_t *data; /* aligned: jobs replayed at once share no cache line */
    uint32_t len, cap;
    uint64_t offset;  /* of the chunk in the file */
    uint32_t ti;      /* the thread, index in p->threads */
    _Atomic int done; /* replayed (release: the results below are written) */
    int from_snap;    /* U is the chunk's snapshot, not j->in */
    int resident;     /* U is ACC_MAIN's resident stack (see "Deep stacks" below) */
    uint64_t evbase;  /* resident: the events of the thread's resident chunks before */
    int res_same;     /* resident: the snapshot (if any) matched the stack */
    int comp;         /* subtract the overhead: per event pairfp / 2, per span selffp */
    uint64_t pairfp, selffp;
    uint64_t res;                     /* the resolution in ticks (comp.h) */
    uint64_t clamped;                 /* out: spans shorter than their overhead */
    uint32_t offid;                   /* the off-CPU node's id (0 = none) */
    const struct rp_span_filter *flt; /* the spans counted (rp_replay_opts.filter), or NULL */
    int outside;                      /* set outside spans apart (rp_span_outside) */
    uint64_t paused;                  /* out: ticks of PAUSE events (the recorder's waits) */
    uint64_t syn;                     /* out: the writer's own events (off-CPU spans, PAUSE): not
                                         counted in the event numbers compensation uses */
    /* in: U when the chunk has no snapshot */
    struct frame *in;
    uint32_t nin, capin;
    /* out */
    int rc;
    char err[200];
    uint64_t events, first, last, unmatched, unclosed, lost;
    /* spans ended by span_cut: above a deeper exit or an UNWIND's frame
     * (unwound); at an UNWIND 0, the thread's end (cut) */
    uint64_t unwound, cut;
    int64_t holds; /* lock holds begun less holds ended (HOLD_BEGIN/END, format 1.3) */
    int hold_ops;  /* the chunk has holds as intervals */
    /* The time its thread was blocked (off CPU, waiting: the blocked spans
     * ended in this chunk, summed), and where it stood when each hold open
     * here began (HOLD_MARKS of them, innermost last): a hold's holder was
     * blocked for the change over the hold, counted from the chunk's start
     * for a hold begun in an earlier chunk (hold_op). */
    uint64_t blk;
    struct hold_mark {
        uint32_t id;
        uint64_t blk;
    } hm[HOLD_MARKS];
    uint32_t nhm;
    int hm_over;     /* a hold began here without a mark: an unmarked end is not
                        known to have begun earlier, and gets none */
    uint32_t u;      /* depth of U */
    uint32_t low;    /* the lowest depth the stack reached */
    uint8_t *closed; /* per U frame that was popped: 1 if it ended with time (and, filtered,
                        was counted), 2 if it ended left out by the filter */
    uint32_t capclosed;
    struct uspan *us; /* per U frame closed 1 (not resident): its span, counted at the join */
    uint32_t capus;
    struct frame *out; /* the stack at the end of the chunk */
    uint32_t nout, capout;
    struct frame *snap; /* U as the snapshot gave it (to check the join) */
    uint32_t nsnap, capsnap;
};

/* A thread's state between its chunks: the spans open after the last one. */
struct tstate {
    uint32_t tid;
    uint32_t ti;         /* index in p->threads */
    int64_t holds;       /* lock holds begun and not ended (unclosed at the end) */
    struct frame *stack; /* child = callee time summed over all chunks so far */
    uint32_t depth, cap;
    struct rstate *rs; /* resident (Deep stacks): the stack is there, depth is 0 */
};

#define RP_JOBS_MAX    16
#define RP_WORKERS_MAX 8
enum { ACC_MAIN, ACC_HELP, ACC_WORKER };

/* Open spans per thread at most (40 bytes each), so that a hostile file
 * cannot make the stack grow with its length.  The recorder writes deeper
 * stacks than its shadow stack (1 M frames) holds, with exit ids. */
#define RP_REPLAY_DEPTH_MAX (8u << 20)

/*
 * Deep stacks.  A chunk replayed in order gets its thread's whole stack as
 * U: copied in, counted in `active`, copied out and joined back, each O(its
 * depth), which made a deep recursion (whose chunks carry no snapshot, and
 * are many) quadratic in its depth.  From RP_RESIDENT_MIN frames on, the
 * thread's stack instead stays in ACC_MAIN between its chunks (resident):
 * a chunk costs its events, whatever the depth.  The frames keep their
 * callee time, and their time off CPU and preempted below them, summed
 * over all chunks (so nothing is counted at the join), and their event
 * numbers counted from the first resident chunk (evbase).  Each resident
 * thread has its
 * own struct rstate: stack, activation counts (a zero-filled array: pages
 * of the ids on its stack), PAUSE offset; its chunks swap them into
 * ACC_MAIN (O(1)), so deep threads whose chunks alternate stay linear too.
 * The stack goes back to its thread (rp_resident_evict) before a job of the
 * same thread, and before the threads end (rp_threads_end): the same
 * numbers as the copy.
 */
#define RP_RESIDENT_MIN 4096

struct priv {
    struct tstate *ts;
    uint32_t nts, capts;
    uint32_t *tidx; /* open addressing: tid -> index in ts + 1, 0 = empty */
    uint32_t tidx_cap;
    struct rp_emap em; /* the profile's edges, when the accumulators are summed */
    uint64_t clk_first_ticks, clk_first_ns, clk_last_ticks, clk_last_ns;
    int nclk;
    double freq_hz;
    int snap_warned;
    int want_comp;           /* compensation not switched off */
    uint64_t first_ev;       /* with p->defs_only: the earliest first event of a chunk (0: none) */
    uint64_t pairfp, selffp; /* the INFO overhead in ticks / RP_COMP_ONE */
    /* INFO overhead_late (the recorder's measurements while the program
     * ran, calib.h): 1 "pending" in the first INFO (looked for ahead,
     * load.c), 2 looked for; late_have: the fastest one's values, when one
     * was made; late_seen: how many the look ahead found */
    int late_pending, late_have, late_seen;
    double late_pair, late_self, late_spread;
#define RP_LATE_MAX 3                 /* measurements a recorder makes while the program runs */
    uint64_t res_comp;                /* the resolution of compensated spans, ticks (comp.h) */
    uint32_t offid;                   /* the first node of kind offcpu (0 = none) */
    const struct rp_span_filter *flt; /* the spans counted (rp_replay_opts.filter), or NULL */
    int outside;                      /* set outside spans apart (rp_span_outside) */
    uint32_t *res;                    /* the resident threads (indexes in ts) */
    uint32_t nres, capres;

    /* the workers */
    struct rp_profile *p;
    pthread_t tids[RP_WORKERS_MAX];
    /* the replayers: ACC_MAIN (in order, on the main thread), ACC_HELP (the
     * main thread's for the jobs it takes), ACC_WORKER + k (worker k) */
    struct acc acc[ACC_WORKER + RP_WORKERS_MAX];
    struct wctx {
        struct priv *v;
        struct acc *a;
    } wctx[RP_WORKERS_MAX];
    int nworkers, started;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct job jobs[RP_JOBS_MAX];
    /* job sequence numbers ("the workers" below) */
    _Atomic uint64_t submitted, taken; /* submitted: written by the main thread */
    uint64_t joined;                   /* the main thread's */
    _Atomic int sleepers;              /* workers asleep on `work` */
    _Atomic int waiting;               /* the main thread asleep on `done` */
    _Atomic int quit;
};

/* Spans of these kinds are time the frames above them were not working on
 * CPU: off CPU, or blocked in a wait (taken out of their on-CPU durations). */
static inline uint8_t blocked_kind(uint8_t kind)
{
    return kind == RP_KIND_OFFCPU || kind == RP_KIND_WAIT || kind == RP_KIND_LOCK_WAIT;
}

/*
 * Whether a span of node id is outside the program's code, when the replay
 * sets those apart (outside, the default): one that the recorder makes for
 * any caller (hot.lib: time off CPU, a wait, lock wait or hold of an
 * interposed call; not the program's own profile points, which have a
 * source file, nor the MPI layer's calls) whose span below on its thread's
 * stack, node below (0: none; for a hold, its acquirer), is blocked too or
 * none.  No instrumented
 * code of the program waits there: a library's own thread that runs none
 * (an MPI library's progress thread, a pool's idle workers), start-up and
 * exit around main, or the library's own waits inside a blocking call
 * (the poll inside MPI_Recv, the locks inside MPI_Init), which are that
 * call's time.  Such a span is counted in its node's outside calls and
 * time (rp_profile.outside; while replaying, the edge from
 * RP_OUTSIDE_CALLER in its replayer's map), not as a call; for the spans
 * below it, it is as if left out by a filter (its time is the blocking
 * call's own).  Cannot fail.
 */
static inline int rp_span_outside(const struct hid *hot, int outside, uint32_t id, uint32_t below)
{
    return unlikely(hot[id].lib) && outside && (!below || hot[below].blocked);
}

/* hot.lib of a node of kind and source file (NULL or "": none). */
static inline uint8_t lib_node(uint8_t kind, const char *file)
{
    return (blocked_kind(kind) || kind == RP_KIND_LOCK_HOLD) && (!file || !*file);
}

/*
 * Zero bytes after every chunk rp_replay_chunk reads.  The per-event decoding
 * (pget) reads a varint's first two bytes without testing the end: a chunk
 * whose last event runs over its end stops in the padding (a zero byte ends
 * any varint), and the loop's end test, q == end, finds it malformed.
 */
#define RP_REPLAY_PAD 16

/* replay.c */

/*
 * Replays the EVENTS chunk of j with the accumulators a, ids checked against
 * the profile's definitions (which do not change while jobs run).  j->data
 * is followed by RP_REPLAY_PAD zero bytes.  Sets j->rc to 0, RP_ENOMEM, or
 * RP_EFORMAT with j->err naming the offset.
 */
RP_HIDDEN void rp_replay_chunk(const struct rp_profile *p, struct acc *a, struct job *j);

/*
 * Ends the spans still open on thread t after its last chunk, counted as
 * cut, with the main replayer's accumulators (replay.c says where they
 * end).  Returns 0 or RP_ENOMEM.
 */
RP_HIDDEN int rp_replay_close_open(struct rp_profile *p, struct tstate *t, struct rp_comp *cp);

/*
 * Counts the span of U that job j ended at depth i (struct uspan), with
 * `before`, its frame as the earlier chunks left it (child, off and pre
 * summed over them); *raised gets what compensating against all of its
 * callees' time added to the duration the chunk gave the frame below.
 * Returns 0 or RP_ENOMEM.
 */
RP_HIDDEN int rp_replay_count_u(struct rp_profile *p, const struct job *j, uint32_t i,
                                const struct frame *before, uint64_t *raised);

/* accum.c */

/*
 * Makes the zero-filled array *arr (*bytes allocated) hold need bytes,
 * doubling; new bytes are zero (accum.c says how).  Returns 0, or
 * RP_ENOMEM with the array unchanged.
 */
RP_HIDDEN int rp_zarr_grow(void *arr, size_t *bytes, size_t need);

/* Frees what rp_zarr_grow allocated.  Cannot fail. */
RP_HIDDEN void rp_zarr_free(void *p, size_t bytes);

/* Frees a replayer's accumulators and zeroes them.  Cannot fail. */
RP_HIDDEN void rp_acc_free(struct acc *a);

/* Converts the accumulators to the profile's final fields, once the
 * threads have ended (rp_threads_end).  Returns 0 or RP_ENOMEM. */
RP_HIDDEN int rp_replay_finish(struct rp_profile *p);

/* join.c */

/* The replay state of thread tid, created if new, in O(1).  Returns NULL
 * when out of memory. */
RP_HIDDEN struct tstate *rp_tstate_get(struct rp_profile *p, uint32_t tid);

/* Joins job j (replayed) to its thread, in file order.  Returns 0, or
 * j->rc with the error in err (or RP_ENOMEM). */
RP_HIDDEN int rp_replay_join(struct rp_profile *p, struct job *j, char *err, size_t errsz);

/* Swaps the resident part of ACC_MAIN (struct rstate) with rs.  O(1). */
RP_HIDDEN void rp_rs_swap(struct acc *a, struct rstate *rs);

/* Gives thread t's resident stack back to it.  O(depth).  Returns 0 or
 * RP_ENOMEM (the stack then stays resident). */
RP_HIDDEN int rp_resident_evict(struct priv *v, struct tstate *t);

/* Makes thread t's stack resident.  O(depth + nodes).  Returns 0 or
 * RP_ENOMEM (nothing changed). */
RP_HIDDEN int rp_resident_enter(struct rp_profile *p, struct tstate *t);

/* Ends every thread after the last chunk: resident stacks back to their
 * threads, open spans ended as cut, holds never released counted as
 * unclosed.  Returns 0 or RP_ENOMEM. */
RP_HIDDEN int rp_threads_end(struct rp_profile *p);

/* load.c: the steps of rp_replay_file, apart for a live reading (live.c) */

/* Gives p (zeroed) the replay's state for o (NULL: the defaults) and node
 * 0 (ROOT).  Returns 0 or RP_ENOMEM (free p with rp_replay_priv_free and
 * rp_profile_free). */
RP_HIDDEN int rp_replay_start(struct rp_profile *p, const struct rp_replay_opts *o);

/*
 * Reads r's chunks into p (EVENTS to the workers when started) until the
 * reader stops, then joins every job: *rd is the reader's last result (0
 * at the end, or its error, which r->err names).  Returns 0, or < 0 with
 * the message in sub when a chunk could not be read into p (the jobs still
 * in flight must then be released with rp_jobs_drain).
 */
struct rp_reader;
RP_HIDDEN int rp_replay_chunks(struct rp_profile *p, struct rp_reader *r, uint32_t only_tid,
                               rp_chunk_fn fn, void *ctx, int *rd, char *sub, size_t subsz);

/*
 * Finishes p after the last chunk read from r (rd: rp_replay_chunks'):
 * the reader's error as a warning under force, how the program ended, open
 * spans ended, the accumulators summed into the nodes (destructive: p is
 * final).  Stops the workers.  Returns 0, or < 0 with the message, naming
 * path, in err (sub: scratch for it).
 */
RP_HIDDEN int rp_replay_complete(struct rp_profile *p, const struct rp_reader *r, int rd,
                                 const char *path, int force, char *err, size_t errsz, char *sub,
                                 size_t subsz);

/* Frees the replay's state (p->priv) and sets it NULL.  Cannot fail. */
RP_HIDDEN void rp_replay_priv_free(struct rp_profile *p);

/* workers.c */

/* Starts up to want (at most RP_WORKERS_MAX) workers; fewer when threads
 * cannot be created (none: everything is replayed in order).  Cannot fail. */
RP_HIDDEN void rp_workers_start(struct priv *v, int want);

/* Stops the workers, if started.  Cannot fail. */
RP_HIDDEN void rp_workers_stop(struct priv *v);

/* Waits for the oldest job in flight, replaying untaken ones meanwhile,
 * and joins it.  Returns 0 or < 0 with the message in err. */
RP_HIDDEN int rp_jobs_join_oldest(struct rp_profile *p, char *err, size_t errsz);

/* Joins every job in flight.  Returns 0 or the first error (in file order). */
RP_HIDDEN int rp_jobs_drain(struct rp_profile *p, char *err, size_t errsz);

/* Hands the job with sequence number seq (filled in) to the workers, and
 * wakes one if they sleep.  Cannot fail. */
RP_HIDDEN void rp_jobs_submit(struct priv *v, uint64_t seq);

#endif /* RP_ANALYZE_REPLAY_INT_H */

// SPDX-License-Identifier: MIT
/*
 * direct.h - direct mode: the statistics of docs/design.md §1-2 kept in the process
 * instead of a trace (docs/direct-mode.md).
 *
 * In direct mode a thread's rp_self has no trace buffers but a batch of
 * records that rp_append's fast path fills as usual; when it is full,
 * rp_append_slow() hands the raw word to rp_direct_event(), which applies
 * the batch to the thread's tables.  The engine keeps, per thread, a
 * shadow stack of open spans and a table of statistics per span id and per
 * caller->callee edge; the tables are merged into the process table when a thread ends,
 * and a merged snapshot is printed (rp_report) or saved as THREAD, DEFS and
 * STATS chunks at exit.
 *
 * The engine can be driven with given timestamps (rp_direct_feed), which is
 * how the unit tests check its numbers against known durations.
 */
#ifndef RP_RECORD_DIRECT_H
#define RP_RECORD_DIRECT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clock.h"

struct rp_dthread;

/* Sets up direct mode (the thread-exit key) and loads the modules' symbol
 * tables for UNWIND records.  Returns 0 or RP_ENOMEM. */
RP_HIDDEN int rp_direct_init(void);

/* One raw event of the calling thread, timed now: the rare path of direct
 * mode (a full batch, the thread's first event, a clock that is not the
 * cycle counter).  Never fails visibly: what cannot be recorded is counted
 * as dropped, an event of a signal handler inside the engine as re-entered. */
RP_HIDDEN void rp_direct_event(uint64_t word);

/*
 * The engine with explicit time.  rp_direct_thread_new() makes a thread
 * table for tid and links it into the process (NULL when out of memory);
 * rp_direct_feed() applies one raw word at `ticks` (the caller guarantees
 * that only one thread feeds a given table); rp_direct_thread_end() merges
 * the table into the process table and frees it.
 */
RP_HIDDEN struct rp_dthread *rp_direct_thread_new(uint32_t tid);
RP_HIDDEN void rp_direct_feed(struct rp_dthread *d, uint64_t ticks, uint64_t word);
RP_HIDDEN void rp_direct_thread_end(struct rp_dthread *d);

/* Ends the spans open on d at `ticks`, as its thread's end does (counted as
 * cut); for a table fed by rp_direct_feed.  Cannot fail. */
RP_HIDDEN void rp_direct_close(struct rp_dthread *d, uint64_t ticks);

/*
 * The start of the function holding code address pc, or 0 when unknown:
 * how the engine maps an RP_RAW_UNWIND record's landing address to the
 * function that goes on.  By default the symbol tables of the modules
 * loaded when direct mode started (rp_direct_init loads them: the engine
 * may run in a signal handler, so it never does); the unit tests set their
 * own.
 */
RP_HIDDEN extern uint64_t (*rp_direct_start_of)(uint64_t pc);

/*
 * At exit, on the exiting thread: applies its pending events and ends the
 * spans still open on it (main, after exit() from deep frames) with their
 * time, as a thread that ends does (with `fatal`, on the thread a fatal
 * signal hit, noting them first for the STATS FATAL record: where it was
 * hit); the snapshots it then takes end the
 * open frames the other threads published (a blocked thread's, a running
 * thread's as of its engine's last run) there too, counted as cut, as
 * trace mode ends every thread's frames at the end.  The other threads'
 * tables are not touched.  Cannot fail.
 */
RP_HIDDEN void rp_direct_exit_self(int fatal);

/* What a merged snapshot says about one id (tests, and the printed table). */
struct rp_dview {
    uint64_t calls, incl, dur, excl, min, max, first, last, overruns;
    uint64_t cut; /* activations unwound or cut (src/common/span.h) */
    double mean, m2;
    uint64_t p50, p95, p99; /* from the histogram, in ticks */
};

struct rp_dedge_view {
    uint64_t calls, incl, min, max;
};

/*
 * Looks up (kind, key) in a merged snapshot of every thread; for an edge,
 * the caller is (ckind, ckey), or ROOT when ckind is 0xff.  Returns 0, or
 * RP_ENOENT (never seen) or RP_ENOMEM.  Keys of sites are their pointers,
 * with kind RP_KIND_POINT whatever the site's own kind.
 */
RP_HIDDEN int rp_direct_lookup(uint8_t kind, uint64_t key, struct rp_dview *out);
RP_HIDDEN int rp_direct_lookup_edge(uint8_t ckind, uint64_t ckey, uint8_t kind, uint64_t key,
                                    struct rp_dedge_view *out);

/* Totals of a snapshot: events fed, and what could not be recorded. */
struct rp_dtotals {
    uint64_t events, dropped, unmatched, unclosed;
    uint64_t unwound, cut; /* spans ended by an unwinding, by a thread's end */
    uint32_t threads;
};
RP_HIDDEN int rp_direct_totals(struct rp_dtotals *out);

/*
 * Writes the merged result as chunks through out(): a THREAD chunk per
 * thread, DEFS, then STATS chunks (docs/trace-format.md).  Returns the number
 * of events counted, or a negative RP_E* code (nothing, or part, written).
 */
typedef void (*rp_direct_out_fn)(uint32_t type, const void *payload, size_t len);
RP_HIDDEN int64_t rp_direct_write(rp_direct_out_fn out);

/* Prints the profile-point table of a merged snapshot to f; ns_per_tick
 * converts ticks.  Returns 0 or a negative RP_E* code. */
RP_HIDDEN int rp_direct_print(FILE *f, double ns_per_tick);

/*
 * Statistics while the program runs (direct_pub.c): rp_direct_pub_start
 * makes the publisher thread (at start-up; without it requests are
 * ignored); rp_direct_pub_request, async-signal-safe, asks it for the
 * statistics file (snapshot 0: RP_CTL_DIR/rankprof.PID.stats for `top`; 1:
 * the trace's name + RP_CTL_SNAP_SUFFIX); the thread also writes a
 * checkpoint (the trace's name + RP_CTL_CKPT_SUFFIX) every
 * RANKPROF_CHECKPOINT_MS; rp_direct_pub_saved says the trace holds the
 * final statistics; rp_direct_pub_shutdown removes the published file at
 * the end, and the checkpoint once the statistics are saved;
 * rp_direct_pub_atfork_child: a child has no publisher;
 * rp_direct_pub_retire ends the thread when main calls pthread_exit (it
 * would keep the process alive).  None fails visibly: a request that
 * cannot be met leaves the control page's count unchanged, which the
 * asker reports; a checkpoint that cannot be written is said once.
 */
RP_HIDDEN void rp_direct_pub_start(void);
RP_HIDDEN void rp_direct_pub_request(int snapshot);
RP_HIDDEN void rp_direct_pub_retire(void);
RP_HIDDEN void rp_direct_pub_saved(void);
RP_HIDDEN void rp_direct_pub_shutdown(void);
RP_HIDDEN void rp_direct_pub_atfork_child(void);

/* The calling thread is the recorder's own: its events are never counted.
 * Cannot fail. */
RP_HIDDEN void rp_direct_unrecorded(void);

/* The calling thread is about to block (a wait begins): its pending batch
 * is applied now, so statistics published meanwhile count every event it
 * made before.  Nothing inside the recorder.  Cannot fail. */
RP_HIDDEN void rp_direct_idle(void);

/* In a forked child: forget the parent's tables (the child starts afresh). */
RP_HIDDEN void rp_direct_atfork_child(void);

#endif /* RP_RECORD_DIRECT_H */

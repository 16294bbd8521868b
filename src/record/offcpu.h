// SPDX-License-Identifier: MIT
/*
 * offcpu.h - when the recorded threads were off CPU (offcpu.c).  The kernel
 * writes the threads' context switches into perf rings; the writer thread
 * reads them and queues each thread's off-CPU intervals on its tbuf
 * (rt.h, struct rp_offq of writer.h), to be merged into its records when
 * they are encoded.  Where perf_event_open is refused, the run-queue delay
 * of /proc/self/task/TID/schedstat is summed instead (not separated).
 */
#ifndef RP_RECORD_OFFCPU_H
#define RP_RECORD_OFFCPU_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"

struct rp_tbuf;

/* How off-CPU time is known. */
enum rp_offcpu_src {
    RP_OFFCPU_NONE = 0,      /* not at all (switched off, or nothing works) */
    RP_OFFCPU_PERF = 1,      /* context-switch records: intervals, separated */
    RP_OFFCPU_SCHEDSTAT = 2, /* run-queue delay totals only: not separated */
};

/*
 * Opens the context-switch events (one per CPU, inherited by the threads the
 * calling thread creates later), or chooses the fallback.  Called once at
 * start-up on the thread that starts the recorder.  RANKPROF_OFFCPU=0
 * switches it off; RANKPROF_TEST_OFFCPU_REFUSE=1 makes perf_event_open
 * count as refused (EACCES), to test the fallback.  Cannot fail: the source
 * says what is used, rp_offcpu_error why perf is not.
 */
RP_HIDDEN void rp_offcpu_start(void);
RP_HIDDEN enum rp_offcpu_src rp_offcpu_source(void);
RP_HIDDEN const char *rp_offcpu_source_name(void); /* "perf", "schedstat", "none" */
RP_HIDDEN const char *rp_offcpu_error(void);       /* "" or e.g. "perf_event_open: EACCES" */

/*
 * Reads what the kernel has written to the rings since the last call and
 * queues each switch on the tbuf of its thread (threads not seen yet are
 * looked up from rp_rt's list).  Under rp_rt.off_lock, which also guards
 * every tbuf's offq: it waits only for another thread's poll or merge.
 * Cheap when nothing is new (a load per ring).
 */
RP_HIDDEN void rp_offcpu_poll(void);

/* Called by the writer thread when it starts: its own switches (it inherits
 * the events like any thread) are dropped, not kept for a poll. */
RP_HIDDEN void rp_offcpu_writer_started(void);

/* Writer only: the periodic part (schedstat reads of the live threads). */
RP_HIDDEN void rp_offcpu_tick(void);

/* On the exiting thread itself, before it stores `exited`: the schedstat
 * fallback reads its run-queue delay while /proc still has it (one open and
 * read per thread exit; nothing with perf). */
RP_HIDDEN void rp_offcpu_thread_exit(struct rp_tbuf *t);

/* Writer only, before t is freed (rp_rt.lock held): forget it (and take its
 * last schedstat). */
RP_HIDDEN void rp_offcpu_forget(struct rp_tbuf *t);

/*
 * The INFO pairs of the run's end (format 1.3): "offcpu_lost" (switch
 * records the kernel dropped: ring full), "offcpu_late" (intervals that came
 * too late to place), "offcpu_runq_ns" (schedstat: the threads' summed
 * run-queue delay).  put(key, value) is called per pair.
 */
RP_HIDDEN void rp_offcpu_end_info(void (*put)(void *ctx, const char *key, const char *val),
                                  void *ctx);

/* In a forked child: the parent's rings are the parent's; open new ones. */
RP_HIDDEN void rp_offcpu_atfork_child(void);

#endif /* RP_RECORD_OFFCPU_H */

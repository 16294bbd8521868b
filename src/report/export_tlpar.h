// SPDX-License-Identifier: MIT
/*
 * export_tlpar.h - the timelines walked in parallel over a trace's EVENTS
 * chunks, as the report's replay is (docs/exports.md "Parallel timelines"):
 * each chunk is a job that starts from the stack snapshot the chunk carries,
 * matches its spans with the rules of spanwalk.h and hands them to an
 * encoder of its own, which writes the job's output bytes; the jobs'
 * outputs are written in file order, so the output is the same bytes for
 * any number of threads.  For a format whose events of one job may stand
 * apart from the other jobs' (perfetto: a packet sequence per job).
 *
 * Used without a span filter and for one file (rp_tlpar_usable); a chunk
 * without a snapshot, or whose snapshot disagrees with what the chunks
 * before leave open, is walked again from the joined state, so the spans
 * are always those of rp_export_timeline.
 */
#ifndef RP_REPORT_EXPORT_TLPAR_H
#define RP_REPORT_EXPORT_TLPAR_H

#include <stdint.h>
#include <stdio.h>

#include "common/compiler.h"
#include "report/export.h"
#include "report/export_pool.h"

/* A slice's begin (end 0) or its end at ticks (end 1: the innermost
 * open slice, id its span and arg its argument, ended as its EXIT says). */
struct rp_tlpar_slice {
    uint64_t ticks, arg;
    uint32_t id, end;
};

/* The encoder side.  Each runner (a worker, or the calling thread) has an
 * encoder from open; a job's events go to tl's callbacks (begin, end or
 * span, hold, instant, counter, lost, pause, arg; thread and file are not
 * called) with the encoder as cookie, between start and finish. */
struct rp_tlpar_ops {
    const struct rp_timeline_ops *tl;
    /* an encoder; NULL when out of memory */
    void *(*open)(void *arg);
    /* job number job (0, 1, .. in file order) of thread tid begins; its
     * bytes go to out (empty).  Returns 0 or a negative RP_E* code. */
    int (*start)(void *enc, uint64_t job, uint32_t tid, struct rp_xbuf *out);
    /* the job's events are all told: the rest of its bytes to out.
     * Returns 0 or a negative RP_E* code. */
    int (*finish)(void *enc);
    void (*close)(void *enc);
    /* optional, without tl->span: the begins and plain ends (an EXIT's,
     * no why) of a run of the job's events at once, in order, instead of a
     * call of tl->begin or tl->end each; the other events come through tl
     * between such runs.  Returns 0 or a negative RP_E* code. */
    int (*slices)(void *enc, uint32_t tid, const struct rp_tlpar_slice *s, uint32_t n);
};

/* Whether the parallel walk gives ctx's timeline: no span filter, one file,
 * and RANKPROF_TIMELINE_SEQ unset (which keeps the sequential walk, for
 * comparing the two).  Cannot fail. */
RP_HIDDEN int rp_tlpar_usable(const struct rp_export_ctx *ctx);

/*
 * Walks ctx's trace in parallel (RANKPROF_REPLAY_JOBS threads besides
 * this one, else one per CPU less one, at most 8) and writes every job's bytes to out in file
 * order, then the spans still open at the end (cut) and the locks still held (unclosed), as jobs of
 * their own.  Returns 0, RP_ENOMEM, RP_EIO, the reader's code or RP_EFORMAT with ctx->err naming
 * the file and offset, or an encoder's code.
 */
RP_HIDDEN int rp_tlpar_run(FILE *out, const struct rp_export_ctx *ctx,
                           const struct rp_tlpar_ops *ops, void *arg);

#endif /* RP_REPORT_EXPORT_TLPAR_H */

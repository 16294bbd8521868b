// SPDX-License-Identifier: MIT
/*
 * export_pool.h - an ordered pipeline for the timeline exports (chrome,
 * perfetto): the thread that walks the trace fills batches of bytes (the
 * events, encoded compactly or as packets), a small pool of threads turns
 * each batch into output (formats it as text, deflates it) and the batches'
 * outputs are written in the order the batches were filled, whatever order
 * they finish in.  The output is the same bytes as with no thread at all
 * (rp_xpool_open with 0 workers: each batch is turned and written where it
 * is submitted).
 *
 * Memory: 2 x workers + 2 batches and their outputs.
 */
#ifndef RP_REPORT_EXPORT_POOL_H
#define RP_REPORT_EXPORT_POOL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/compiler.h"

/* A batch's output, grown by the turning function as it needs. */
struct rp_xbuf {
    uint8_t *b;
    size_t n, cap;
};

/*
 * Makes room for more bytes after buf->n.  Returns 0 or RP_ENOMEM (buf
 * unchanged).
 */
RP_HIDDEN int rp_xbuf_need(struct rp_xbuf *buf, size_t more);

/*
 * Writes buf's bytes to out in one write(2) where it can (out flushed
 * first: stdio splits a block larger than its buffer into two or three
 * writes), else through stdio.  Returns 0, or -1 with errno set.
 */
RP_HIDDEN int rp_xbuf_write(const struct rp_xbuf *buf, FILE *out);

/*
 * Turns the batch in[0..n) into out (out->n is 0 on entry; its buffer is
 * the slot's, kept between batches).  worker: 0..workers-1 in the pool's
 * threads, `workers` on the submitting thread (with 0 workers, or when a
 * thread could not be started), for per-thread state such as a compressor.
 * Returns 0 or a negative RP_E* code, which stops the pool (later batches
 * are neither turned nor written) and is returned by rp_xpool_submit or
 * rp_xpool_close.
 */
typedef int (*rp_xpool_fn)(void *arg, unsigned worker, const uint8_t *in, size_t n,
                           struct rp_xbuf *out);

struct rp_xpool;

/*
 * The workers for the timelines: RANKPROF_REPLAY_JOBS when set (0: none,
 * every batch on the walking thread), else one per CPU (at most 8): the
 * walking thread is busy walking.  Cannot fail.
 */
RP_HIDDEN unsigned rp_xpool_workers(void);

/*
 * A pool of `workers` threads writing to out, with batches of batch bytes.
 * Returns the pool, or NULL when out of memory (threads that cannot be
 * started leave fewer workers, down to none: not an error).
 */
RP_HIDDEN struct rp_xpool *rp_xpool_open(FILE *out, unsigned workers, size_t batch, rp_xpool_fn fn,
                                         void *arg);

/* The batch being filled (*cap bytes of room).  Cannot fail. */
RP_HIDDEN uint8_t *rp_xpool_batch(struct rp_xpool *x, size_t *cap);

/*
 * Makes the batch being filled hold at least n bytes (for a record larger
 * than a batch), keeping its bytes; rp_xpool_batch gives it again.
 * Returns 0 or RP_ENOMEM (the batch unchanged).
 */
RP_HIDDEN int rp_xpool_reserve(struct rp_xpool *x, size_t n);

/*
 * Hands over the batch being filled, holding n bytes (nothing when n is
 * 0), and makes the next one current (waiting for a slot's output to be
 * written).  Returns 0, or the first error of the pool: the turning
 * function's code, or RP_EIO when out failed.
 */
RP_HIDDEN int rp_xpool_submit(struct rp_xpool *x, size_t n);

/*
 * Waits for every batch handed over to be written, stops the threads and
 * frees the pool (NULL is a no-op).  Returns 0 or the pool's first error.
 */
RP_HIDDEN int rp_xpool_close(struct rp_xpool *x);

#endif /* RP_REPORT_EXPORT_POOL_H */

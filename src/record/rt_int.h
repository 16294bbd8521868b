// SPDX-License-Identifier: MIT
/*
 * rt_int.h - what the parts of the recorder runtime share, hidden from the
 * program:
 *
 *   rt.c         the state, the threads' buffers and their hand-off, the
 *                rare path of an append, the public switches
 *   rt_writer.c  the writer thread: drain, encode, cut at windows, retire
 *   rt_out.c     the trace descriptor and every chunk the file gets
 *   rt_start.c   start-up, fork, fatal signals, the cost measurement, the
 *                final flush: the only part that calls all the others
 *
 * The rules of the buffers (one writer per ring, the barriers) are in rt.h.
 */
#ifndef RP_RECORD_RT_INT_H
#define RP_RECORD_RT_INT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#include "calib.h"
#include "rt.h"
#include "trace/writer.h"

#define RP_VERSION_STR "rankprof 0.1.0"

/* ---- rt.c ---------------------------------------------------------------- */

RP_HIDDEN extern __thread int rp_rt_initing; /* inside thread_init or start-up */
RP_HIDDEN extern __thread int rp_rt_gone;    /* this thread's tbuf was handed back */
RP_HIDDEN extern pthread_once_t rp_rt_once;
RP_HIDDEN extern struct rp_overhead rp_rt_overhead; /* measured at start-up; rounds 0 = not */
/* The writer's measurements while the program runs (rt_start.c): the
 * first once recording has gone on this long, each next one ten times as
 * long into it (10 ms, 100 ms, 1 s), RP_LATE_N in all. */
#define RP_LATE_AFTER_MS 10
#define RP_LATE_N        3
RP_HIDDEN int rp_rt_measure_late(void);
RP_HIDDEN extern int rp_rt_start_err; /* start-up failed: RP_E* */
/* per kernel tid, the threads seen with it (rp_thread_stream) */
RP_HIDDEN extern uint16_t *_Atomic rp_rt_stream_gen;

/*
 * The length to map and unmap for n bytes of a thread's recorder state (its
 * tbuf, its buffers, its encoder output): n rounded up to whole pages, what
 * the kernel maps and unmaps anyway.  Mapped and unmapped with the same
 * length, so that ThreadSanitizer's munmap, which forgets the accesses of
 * whole pages only, forgets every access to a retired thread's memory
 * before a new thread's mapping may take the same address (rt_writer.c,
 * rp_rt_drain_once, says why that matters).  Cannot fail.
 */
static inline size_t rp_rt_map_len(size_t n)
{
    size_t pg = (size_t)getpagesize();
    return (n + pg - 1) / pg * pg;
}

/*
 * Grows *buf (*cap bytes mapped; NULL and 0: none yet) to hold need bytes,
 * in pages of its own, doubling from 64 KiB up to max: no malloc, so that
 * the final flush may use it in a program's signal handler that
 * interrupted malloc (mmap and mremap only).  Returns 0, or -1 with *buf
 * and *cap unchanged (need over max, or the system says no).  rp_map_free
 * gives the pages back.
 */
static inline int rp_map_grow(void **buf, size_t *cap, size_t need, size_t max)
{
    size_t nc = *cap ? *cap : 65536;
    while (nc < need)
        nc *= 2;
    if (nc == *cap)
        return 0;
    if (nc > max)
        return -1;
    void *nb = *buf ? mremap(*buf, *cap, nc, MREMAP_MAYMOVE)
                    : mmap(NULL, nc, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (nb == MAP_FAILED)
        return -1;
    *buf = nb;
    *cap = nc;
    return 0;
}

static inline void rp_map_free(void *buf, size_t cap)
{
    if (buf)
        munmap(buf, cap);
}

/* "rankprof: " fmt (one %s: arg), ": strerror(err)" when err; unless quiet. */
RP_HIDDEN void rp_rt_warn(const char *fmt, const char *arg, int err);
/* A thread's end (the key's destructor): its partial buffer is published. */
RP_HIDDEN void rp_rt_thread_exit(void *arg);
/* Publishes the current buffer of t (with its record count); 1 when the
 * thread encoded and wrote it itself, 0 when it is left to the writer. */
RP_HIDDEN int rp_rt_buf_publish(struct rp_tbuf *t);

/* ---- rt_out.c ------------------------------------------------------------ */

struct info_buf {
    uint8_t b[1024];
    size_t len;
};

RP_HIDDEN extern dev_t rp_out_dev; /* the trace file, as opened */
RP_HIDDEN extern ino_t rp_out_ino;
RP_HIDDEN extern char rp_rt_run[24];       /* the run's id, "" before the file is opened */
RP_HIDDEN extern uint64_t rp_rt_unwritten; /* events not written because writing failed */
/* drops counted where no thread state holds them (relaxed counters) */
RP_HIDDEN extern _Atomic uint64_t rp_rt_loss_nostate[RP_LOSS_N];
RP_HIDDEN extern uint64_t rp_rt_loss_retired[RP_LOSS_N]; /* of retired threads (rp_rt.lock) */
RP_HIDDEN extern uint64_t rp_rt_orphans_retired; /* left out at windows' edges, retired threads */
RP_HIDDEN extern uint64_t rp_rt_unencoded;       /* records the encoder could not keep */

/* Whole chunks kept in memory, headers included (rotate.c, ring.c). */
struct rp_kept {
    uint8_t *p;
    size_t len, cap;
};
/* Appends chunk (hdr, payload) to k; noalloc: only within its capacity (in
 * a signal handler).  Returns 0, or -1 when it does not fit or memory is
 * out (k as it was). */
RP_HIDDEN int rp_kept_add(struct rp_kept *k, const uint8_t *hdr, const void *payload, size_t len,
                          int noalloc);

/* fd at a high number, close-on-exec; fd itself when that fails */
RP_HIDDEN int rp_rt_fd_high(int fd);
/* Whether fd lies below the trace descriptor's range (rp_rt_fd_high found
 * no room there: the program lowered its descriptor limit), so that
 * keeping it would take a number of the program's.  Cannot fail. */
RP_HIDDEN int rp_rt_fd_low(int fd);
/* Whether the range has a free number for one more descriptor (tried by
 * duplicating fd there, then closed).  Cannot fail. */
RP_HIDDEN int rp_rt_fd_room(int fd);
/* Parks the descriptor of the older trace the new file replaced (dev, ino:
 * the old file) until rp_rt_out_old_close, which the writer thread calls
 * when it starts (start-up starts it then), start-up itself when recording
 * starts off, and a forked child at once: closing it frees the old file's
 * pages and blocks, which takes a while for a big one.  rp_rt_out_old_parked:
 * whether one is parked.  None fails. */
RP_HIDDEN void rp_rt_out_old_park(int fd, dev_t dev, ino_t ino);
RP_HIDDEN void rp_rt_out_old_close(void);
RP_HIDDEN int rp_rt_out_old_parked(void);
/* Whether sa is one of the recorder's own handlers (the ending signals' and
 * the control signal's), which record nothing.  Cannot fail. */
RP_HIDDEN int rp_rt_handler_ours(const struct sigaction *sa);
/* Starts one of the recorder's threads, fn(NULL), with every signal blocked
 * from its first instruction (it inherits the mask the creator has during
 * pthread_create): a signal for the process never runs a program's handler
 * on it (one that siglongjmps would jump into another thread's stack).
 * Returns pthread_create's result. */
RP_HIDDEN int rp_rt_thread_start(pthread_t *th, const pthread_attr_t *a, void *(*fn)(void *));
/* Writes the n bytes of a message at msg to the program's stderr as it
 * was when the recorder started (its device and inode), and nowhere when
 * descriptor 2 was closed then or holds another file now: a program that
 * closes 2 and opens a data file there must not find our text in it.
 * Async-signal-safe; cannot fail (a message that cannot be written is
 * dropped). */
RP_HIDDEN void rp_rt_say(const char *msg, size_t n);
/* All of iov to the trace; the first failure stops writing (rp_rt.failed). */
RP_HIDDEN void rp_out_writev(struct iovec *iov, int n);
/*
 * The recorder's own files and the program's RLIMIT_FSIZE: a write or an
 * ftruncate past it fails with EFBIG and raises SIGXFSZ for the thread,
 * whose default action ends the process.  rp_xfsz_hold blocks the signal
 * around such a call; rp_xfsz_release(x, efbig) takes back the one the call
 * raised (efbig: it failed with EFBIG), unless the program had one pending
 * already, and restores the mask; so the limit stops the recording and
 * never the program.  rp_own_writev is writev(2) so guarded (errno as
 * writev set it).  None can fail.
 */
struct rp_xfsz {
    sigset_t old;
    int had; /* a SIGXFSZ of the program's own was pending, blocked */
};
RP_HIDDEN void rp_xfsz_hold(struct rp_xfsz *x);
RP_HIDDEN void rp_xfsz_release(struct rp_xfsz *x, int efbig);
RP_HIDDEN ssize_t rp_own_writev(int fd, const struct iovec *iov, int n);
/* All len bytes of buf to fd through rp_own_writev, again after EINTR.
 * Returns 0, or -1 (errno set; part may have been written). */
RP_HIDDEN int rp_own_write_all(int fd, const void *buf, size_t len);
RP_HIDDEN void rp_out_chunk(uint32_t type, const void *payload, size_t len);
/* While set on a thread, its rp_out_writev appends to this buffer instead
 * of the trace (direct_pub.c builds statistics files so); failed: a
 * realloc failed, the buffer is incomplete. */
struct rp_out_sink {
    uint8_t *p;
    size_t len, cap;
    int failed;
};
RP_HIDDEN extern __thread struct rp_out_sink *rp_out_sink;
/* Bounded disk (rotate.c): while rp_rot_on, every chunk goes through
 * rp_rot_chunk, which starts a new piece of the trace when the current one
 * is full, and writes it.  Set once from 1 to 0 under the rotation's lock
 * and read without it (relaxed: a stale 1 only takes the locked path). */
RP_HIDDEN extern atomic_int rp_rot_on;
RP_HIDDEN void rp_rot_chunk(uint32_t type, const void *payload, size_t len);
/* In a forked child: lets go of the rotation's lock, which a thread of the
 * parent that is not encoding (rp_rt_maps_now) may have held at the fork
 * (the child's first chunk starts its rotation afresh).  Cannot fail. */
RP_HIDDEN void rp_rot_atfork_child(void);
RP_HIDDEN void rp_out_clock(void);
RP_HIDDEN void rp_out_maps(void);
RP_HIDDEN void rp_out_info(void);

/*
 * v (0 to 1e12) with dec decimals (at most 6) and a '.' for the decimal
 * point, whatever locale the program set (printf's "%.2f" writes "12,34"
 * under de_DE, which the analyzer would read as 12), into buf.  Returns
 * buf.  Cannot fail (truncates to n).
 */
RP_HIDDEN char *rp_fmt_fixed(char *buf, size_t n, double v, unsigned dec);
RP_HIDDEN void rp_out_thread(struct rp_tbuf *t);
/* the drops by reason into ib; in_handler: take no lock */
RP_HIDDEN void rp_rt_loss_info(struct info_buf *ib, int in_handler);
/* the INFO of the end of a run (full: not in a fatal signal's handler) */
RP_HIDDEN void rp_out_end_info(int full);
RP_HIDDEN void rp_out_end(uint32_t flags, int32_t status, uint64_t ticks);

/* ---- rt_writer.c ----------------------------------------------------------- */

RP_HIDDEN extern size_t rp_rt_out_recs;      /* rp_rt.out's size in records */
RP_HIDDEN extern atomic_int rp_rt_main_gone; /* main called pthread_exit */
RP_HIDDEN extern pthread_key_t rp_rt_main_key;

/* the encoder's describe callback: a profile point's definition */
RP_HIDDEN int rp_rt_describe_site(void *ctx, uint64_t site, struct rp_def *out);
/* the windows' edges up to ticks `until` that t has not had yet */
RP_HIDDEN void rp_rt_win_catch_up(struct rp_tbuf *t, uint64_t until);
RP_HIDDEN void rp_rt_write_pending_loss(struct rp_tbuf *x);
RP_HIDDEN void rp_rt_write_thread_end(struct rp_tbuf *x);
/* every published buffer written; retires ended threads; returns the count */
RP_HIDDEN unsigned rp_rt_drain_once(void);
RP_HIDDEN int rp_rt_flush_partial(struct rp_tbuf *t);
RP_HIDDEN unsigned rp_rt_flush_partials(void);
RP_HIDDEN void rp_rt_fatal_flush(int sig);
/* A fatal signal's flush, with recording stopped and the drain lock held:
 * everything recorded so far, published or not (direct mode: the
 * statistics, rp_rt_direct_finish, on the thread the signal hit, the
 * handler's), the throttled counts, then CLOCK and END with RP_END_SIGNAL,
 * and fatal_done set.  No MAPS: reading /proc allocates, and the program
 * may have died inside malloc; the one written at start-up names the code.
 * Allocates nothing from the heap: the handler runs it where no writer
 * thread does (rt_start.c).  Cannot fail (what cannot be written is
 * counted). */
RP_HIDDEN void rp_rt_fatal_write(int sig);
/* Direct mode's result: THREAD, DEFS and STATS chunks, and the printed
 * table when RANKPROF_PRINT is set.  With `fatal` (a fatal signal's
 * handler, on the thread the signal hit): also where that thread was, and
 * no table (stdio is no handler's).  Safe in a handler as an _exit's flush
 * from the program's own is: memory by mmap only, and no recorder lock a
 * handler's thread can hold (direct_lock and the file's lock are taken with
 * every signal blocked: section_enter).  Cannot fail: what cannot be
 * written is said on stderr. */
RP_HIDDEN void rp_rt_direct_finish(int fatal);
RP_HIDDEN void rp_rt_main_exit(void *arg);
/* starts the writer if it is not running (rp_rt.lock held) */
RP_HIDDEN void rp_rt_writer_ensure_locked(void);
/* The calling thread t encodes and writes its published buffers itself.
 * Returns 1 when it did (all of them), 0 when they are left to the writer
 * (someone else is encoding t, recording is stopping, a fork is under way,
 * --drop with a trace that is not a regular file, a signal blocked (a
 * signal handler), the thread holds one of the program's locks
 * (rp_lock_holds), the writer_delay test knob, no memory). */
RP_HIDDEN int rp_rt_self_encode(struct rp_tbuf *t);
/* Takes t's busy flag (rt_writer.c, "Who encodes"), waiting for its holder
 * up to about a second: returns 1, or 0 when it was not let go.  Release it
 * with rp_rt_release. */
RP_HIDDEN int rp_rt_claim_wait(struct rp_tbuf *t);
RP_HIDDEN void rp_rt_release(struct rp_tbuf *t);
/* The INFO keys buffers_self and buffers_writer: the published buffers
 * encoded by their own thread and by the writer (or a thread without one). */
RP_HIDDEN void rp_rt_enc_info(struct info_buf *ib);
/* Sets rp_rt.enc's hooks (lock names, function starts, the shared lock). */
RP_HIDDEN void rp_rt_enc_hooks(void);
/* Blocks (1) or allows (0) the threads' own encoding; blocking waits until
 * no thread is encoding its own (fork's prepare handler, rp_rt.lock and
 * drain_lock held), up to about a second per thread: returns the number of
 * threads it gave up on (a thread that died while encoding), 0 if none. */
RP_HIDDEN int rp_rt_self_block_locked(int on);

/* ---- ring.c: the flight recorder (--ring) --------------------------------- */

/* While rp_ring_on (RANKPROF_RING, read by rp_ring_init before the first
 * chunk), every chunk goes through rp_ring_chunk, which keeps the newest
 * EVENTS in memory and writes them with the rest at END or in a snapshot.
 * rp_ring_watch: triggers are set, rp_ring_scan checks each batch. */
RP_HIDDEN extern int rp_ring_on;
RP_HIDDEN extern int rp_ring_watch;
/* Reads RANKPROF_RING, RANKPROF_RING_TRIGGER, RANKPROF_RING_EVERY_MS and
 * RANKPROF_RING_KEEP
 * (rp_rt.path set, before the first chunk).  A bad value is warned about:
 * the whole run is then recorded. */
RP_HIDDEN void rp_ring_init(void);
/* The ring's size in bytes, 0 when it is off. */
RP_HIDDEN uint64_t rp_ring_size(void);
RP_HIDDEN void rp_ring_chunk(uint32_t type, const void *payload, size_t len);
/* A snapshot is asked for (the control signal's handler: async-signal-safe):
 * NAME.snapN, or with publish the file `rankprof top` reads. */
RP_HIDDEN void rp_ring_request(int publish);
/* Whether a snapshot is asked for (ctl or a trigger). */
RP_HIDDEN int rp_ring_wanted(void);
/* Writes the snapshot asked for to NAME.snapN (the writer, after writing
 * every thread's records); a failure is warned about. */
RP_HIDDEN void rp_ring_snapshot(void);
/* Checks n raw records of a thread (its state at *state, made on first
 * use) against the triggers; one that fires asks for a snapshot.  Whoever
 * encodes the thread.  Out of memory: the thread is not watched. */
RP_HIDDEN void rp_ring_scan(void **state, const struct rp_raw *recs, size_t n);
RP_HIDDEN void rp_ring_thread_free(void **state);
/* In a forked child: an empty ring of its own (its own trace). */
RP_HIDDEN void rp_ring_atfork_child(void);

/* ---- rt_start.c ------------------------------------------------------------ */

RP_HIDDEN void rp_rt_start_once(void);

#endif /* RP_RECORD_RT_INT_H */

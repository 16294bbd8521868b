// SPDX-License-Identifier: MIT
/*
 * rt.c - the recorder runtime's state and the threads' buffers: a thread's
 * first event, the hand-off of a full buffer to the writer, the wait for a
 * free one (or the drop), a thread's end, and the public switches.  The
 * writer is rt_writer.c, the output rt_out.c, start-up and shutdown
 * rt_start.c (rt_int.h lists what they share).
 *
 * Life of the recorder:
 *
 *   start (constructor, or the first event)      read RANKPROF_*, open the file,
 *                                                 start the writer, set the mask
 *   thread's first event  -> thread_init()       mmap a tbuf, link it, first buffer
 *   buffer full           -> rp_rt_buf_publish()        encode and write it here
 *                                                 (rp_rt_self_encode), or hand
 *                                                 it to the writer
 *                            buf_next()           take a free one, or wait / drop
 *   thread exit           -> rp_rt_thread_exit()        publish the partial buffer
 *   fork (child)          -> atfork_child()       new file, forget other threads;
 *                                                 no writer thread: a child of a
 *                                                 threaded process may not start
 *                                                 one, so its threads write their
 *                                                 own full buffers (sync_write)
 *   exit()                -> rp_rt_shutdown()     mask = 0, publish, drain with a
 *                                                 deadline, END chunk, close
 *   every RANKPROF_FLUSH_MS -> rp_rt_flush_partials()   the writer writes the filled
 *                                                 part of buffers still being
 *                                                 filled (rt.h says why it may)
 *   fatal signal          -> fatal_handler()      mask = 0, the writer writes
 *                                                 everything and END (signal),
 *                                                 bounded; the signal goes on
 *                                                 to the previous handler
 *
 * Locking: rp_rt.lock guards the thread list, the two condition variables
 * and writer_running.  It is taken once per buffer hand-off, never per event.
 * The writer holds it only to look for work and to unlink retired threads;
 * it encodes and writes without it.  New tbufs are pushed at the list head
 * under the lock; only the writer unlinks, so the writer may walk the list
 * from a head it read under the lock.
 */
#define _GNU_SOURCE
#include "rt_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "calib.h"
#include "ctl.h"
#include "common/bytes.h"
#include "direct.h"
#include "funcs.h"
#include "locks.h"
#include "offcpu.h"
#include "rankprof.h"
#include "sites.h"

RP_HIDDEN struct rp_rt rp_rt = {
    .lock = PTHREAD_MUTEX_INITIALIZER,
    .wake = PTHREAD_COND_INITIALIZER,
    .space = PTHREAD_COND_INITIALIZER,
    .drain_lock = PTHREAD_MUTEX_INITIALIZER,
    .direct_lock = PTHREAD_MUTEX_INITIALIZER,
    .print_lock = PTHREAD_MUTEX_INITIALIZER,
    .fd_lock = PTHREAD_MUTEX_INITIALIZER,
    .enc_lock = PTHREAD_MUTEX_INITIALIZER,
    .off_lock = PTHREAD_MUTEX_INITIALIZER,
    .fd = -1,
};
RP_HIDDEN __thread struct rp_tbuf *rp_self;
RP_HIDDEN __thread int rp_rt_initing; /* inside thread_init or start-up */
RP_HIDDEN __thread int rp_rt_gone;    /* this thread's tbuf was handed back */
/* set in the writer thread only */
RP_HIDDEN __thread int rp_is_writer;
/* the program's locks this thread holds (rt.h; kept by locks.c) */
RP_HIDDEN __thread uint32_t rp_lock_holds;

RP_HIDDEN pthread_once_t rp_rt_once = PTHREAD_ONCE_INIT;
/*
 * A section of the recorder that takes its locks on a program thread (a
 * buffer hand-off, the wait for a free buffer, rp_flush, a thread's
 * start).  Inside it the thread can neither be cancelled (pthread_cond_wait
 * and write are cancellation points: a thread cancelled there would leave
 * rp_rt.lock or drain_lock held and every other thread stuck) nor run a
 * signal handler (one that siglongjmps out would leave the same locks held;
 * a handler that only records is deferred to the section's end instead of
 * being dropped as re-entered).  Three system calls in all (two to enter,
 * one to leave), once per buffer (never per event); direct mode uses it
 * only for a thread's first event, not per batch.  Cannot fail: a failed
 * call leaves the state as it was.
 *
 * Disabling cancellation is not enough for a thread in asynchronous
 * cancellation: pthread_cancel sends it the cancellation signal when it
 * finds it enabled, and glibc's handler acts on a signal already sent even
 * if the thread has since disabled cancellation: such a thread died inside
 * a section holding rp_rt.lock and then waited for it in its own key
 * destructor (prog_hangs asynccancel, e2e_hangs).
 * pthread_sigmask cannot block that signal (glibc leaves it out), so the
 * section blocks it with the system call itself: a cancellation sent
 * meanwhile waits for the section's end, where the thread holds nothing.
 */
RP_HIDDEN __thread int rp_rt_sig_clean;

/*
 * Whether a thread whose signal mask was m (before the section blocked
 * everything) is outside every signal handler, as far as can be told.  A
 * handler runs with its own signal blocked (unless SA_NODEFER), and that
 * signal has a handler; a signal blocked for good, as worker threads block
 * SIGINT and SIGTERM for a thread that waits for them with sigwait, has
 * its default disposition, is ignored, or has one of the recorder's
 * handlers (rp_rt_handler_ours: the ending signals' flush, the control
 * signal), inside which nothing is recorded.  So: clean when every signal
 * in m is at one of those.  The verdict is kept for the mask last seen
 * and asked again (a sigaction query per blocked signal) only when the
 * mask changed since the previous section: a handler installed since is
 * then seen.  Cannot fail: a query that fails counts as a handler.
 */
static int sig_clean(const sigset_t *m)
{
    static __thread sigset_t last;
    static __thread int last_known, last_clean;
    if (sigisemptyset(m) == 1) {
        last_known = 0;
        return 1;
    }
    if (last_known && !memcmp(&last, m, sizeof(*m)))
        return last_clean;
    int clean = 1;
    for (int sig = 1; sig < NSIG && clean; sig++) {
        struct sigaction sa;
        if (sigismember(m, sig) == 1 &&
            (sigaction(sig, NULL, &sa) != 0 ||
             ((sa.sa_flags & SA_SIGINFO) ? !rp_rt_handler_ours(&sa)
                                         : sa.sa_handler != SIG_DFL && sa.sa_handler != SIG_IGN)))
            clean = 0;
    }
    last = *m;
    last_known = 1;
    last_clean = clean;
    return clean;
}

/* glibc's cancellation signal (its first real-time signal, __SIGRTMIN) as
 * a bit of the kernel's signal mask; 0 where the C library is not glibc. */
#if defined(__GLIBC__) && defined(__linux__) && defined(__SIGRTMIN)
#define CANCEL_BIT (1ull << (__SIGRTMIN - 1))
#else
#define CANCEL_BIT 0ull
#endif

/* Blocks the cancellation signal with the system call, which
 * pthread_sigmask would refuse.  Nothing unblocks it but section_leave's
 * pthread_sigmask(SIG_SETMASK), which in glibc always leaves it out of the
 * new mask, so unblocks it.  Cannot fail: a failed call leaves the mask as
 * it was. */
static void cancel_sig_block(void)
{
    const uint64_t bit = CANCEL_BIT;
    if (bit)
        syscall(SYS_rt_sigprocmask, SIG_BLOCK, &bit, NULL, sizeof(bit));
}

/*
 * Enabling cancellation again must not be what acts on a cancellation sent
 * meanwhile to a thread in asynchronous cancellation: glibc (2.36) then
 * unwinds the thread without setting its result, and the program's
 * pthread_join gets NULL instead of PTHREAD_CANCELED (prog_hangs
 * asyncjoin, e2e_hangs).  So the type is deferred while the state goes
 * back, a pending cancellation acts at pthread_testcancel (a cancellation
 * point, which sets the result), and the asynchronous type comes back
 * last.  The type stays as the program set it while cancellation is off:
 * a section's writes and waits are cancellation points, and glibc's, in
 * deferred cancellation, wait for a cancellation signal that pthread_cancel
 * sent to the thread in asynchronous cancellation, which the section
 * blocks.  For a thread in deferred cancellation (the usual case) this is
 * one more call of glibc's (an atomic operation, no system call), once per
 * section: per buffer or per thread, never per event.
 */
RP_HIDDEN void rp_rt_cancel_on(int state)
{
    int type, ignored;
    pthread_setcanceltype(PTHREAD_CANCEL_DEFERRED, &type);
    pthread_setcancelstate(state, &ignored); /* deferred: acts on nothing */
    if (type != PTHREAD_CANCEL_ASYNCHRONOUS)
        return;
    if (state == PTHREAD_CANCEL_ENABLE)
        pthread_testcancel();
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &ignored);
}

RP_HIDDEN void section_enter(struct rt_section *s)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &s->sigs);
    cancel_sig_block();
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &s->cancel);
    s->clean = rp_rt_sig_clean;
    rp_rt_sig_clean = sig_clean(&s->sigs);
}

RP_HIDDEN void section_leave(struct rt_section *s)
{
    rp_rt_sig_clean = s->clean;
    rp_rt_cancel_on(s->cancel);
    /* (the cancellation signal unblocked too: a cancellation sent
     * meanwhile acts here, where the thread holds nothing) */
    pthread_sigmask(SIG_SETMASK, &s->sigs, NULL);
}

RP_HIDDEN int rp_rt_thread_start(pthread_t *th, const pthread_attr_t *a, void *(*fn)(void *))
{
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    int rc = pthread_create(th, a, fn, NULL);
    /* what was blocked here unblocked, not the old mask set back: that
     * would unblock the cancellation signal of a section (section_enter) */
    for (int sig = 1; sig < NSIG; sig++)
        if (sigismember(&old, sig) == 1)
            sigdelset(&all, sig);
    pthread_sigmask(SIG_UNBLOCK, &all, NULL);
    return rc;
}

RP_HIDDEN struct rp_overhead rp_rt_overhead; /* measured at start-up; rounds 0 = not */
RP_HIDDEN int rp_rt_start_err;

/* The stderr found at start (rp_rt_say): noted by a constructor that runs
 * before the recorder's others, or by the first message if another
 * library's constructor made one sooner; both before the program's main. */
static struct {
    int known, open;
    dev_t dev;
    ino_t ino;
} err_fd;

static void err_note(void)
{
    struct stat st;
    err_fd.open = fstat(2, &st) == 0;
    if (err_fd.open) {
        err_fd.dev = st.st_dev;
        err_fd.ino = st.st_ino;
    }
    err_fd.known = 1;
}

__attribute__((constructor(101))) static void err_ctor(void)
{
    if (!err_fd.known)
        err_note();
}

RP_HIDDEN void rp_rt_say(const char *msg, size_t n)
{
    struct stat st;
    if (!err_fd.known)
        err_note();
    if (!err_fd.open || fstat(2, &st) != 0 || st.st_dev != err_fd.dev || st.st_ino != err_fd.ino)
        return;
    ssize_t w = write(2, msg, n);
    (void)w;
}

RP_HIDDEN void rp_rt_warn(const char *fmt, const char *arg, int err)
{
    if (rp_rt.quiet)
        return;
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "rankprof: ");
    n += snprintf(msg + n, sizeof(msg) - (size_t)n, fmt, arg);
    if (err)
        n += snprintf(msg + n, sizeof(msg) - (size_t)n, ": %s", strerror(err));
    if (n > (int)sizeof(msg) - 2)
        n = (int)sizeof(msg) - 2;
    msg[n++] = '\n';
    rp_rt_say(msg, (size_t)n);
}

/* ---- threads ------------------------------------------------------------ */

/*
 * A buffer, its pages faulted in now: a fault at the first write to a page
 * would land inside whatever span is open, as if that function's own work
 * (one every 256 events; its JITTER, and a short run's HOT).  MAP_POPULATE
 * faults them in for the kernel, but a virtual machine whose host backs the
 * guest's memory only when it is first written (Firecracker, ballooned
 * guests) still stops ~6 us at each page's first store: so one store per
 * page, here, where the time is the recorder's (a PAUSE, or before the
 * thread's first event).  Returns NULL when out of memory.
 */
static struct rp_raw *buf_alloc(void)
{
    size_t len = rp_rt_map_len(rp_rt.bufrecs * sizeof(struct rp_raw));
    void *p =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t o = 0; o < len; o += page)
        ((volatile char *)p)[o] = 0;
    return p;
}

/*
 * A stack overflow raises SIGSEGV with no stack left to run a handler on:
 * without an alternate signal stack the kernel kills the process, and the
 * events still in the buffers are lost.  So a thread without one gets the
 * recorder's (the crash handler asks for it, SA_ONSTACK): ALTSTACK bytes
 * below a guard page, mapped without reserve (only the pages a handler
 * touches take memory).  A thread that has its own (a sanitizer's, the
 * program's) keeps it; a program that sets one later replaces ours.
 */
#define ALTSTACK (64 * 1024)

/* Gives the calling thread t the recorder's signal stack when it has none.
 * Fails silently: the thread then has none, as before. */
static void altstack_give(struct rp_tbuf *t)
{
    stack_t cur;
    if (sigaltstack(NULL, &cur) != 0 || !(cur.ss_flags & SS_DISABLE))
        return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), len = ALTSTACK;
#ifdef _SC_MINSIGSTKSZ
    long min = sysconf(_SC_MINSIGSTKSZ); /* (large with AVX-512 state) */
    if (min > 0 && (size_t)min * 4 > len)
        len = rp_rt_map_len((size_t)min * 4);
#endif
    char *m = mmap(NULL, page + len, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED)
        return;
    stack_t ss = {.ss_sp = m + page, .ss_size = len, .ss_flags = 0};
    if (mprotect(m, page, PROT_NONE) != 0 || sigaltstack(&ss, NULL) != 0) {
        munmap(m, page + len);
        return;
    }
    t->altstack = m;
    t->altstack_len = len;
}

/* Takes back the calling thread's signal stack given by altstack_give:
 * uninstalled if it is still the thread's, unmapped unless a handler runs
 * on it (then kept).  Cannot fail. */
static void altstack_take(struct rp_tbuf *t)
{
    if (!t->altstack)
        return;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    stack_t cur, off = {.ss_flags = SS_DISABLE};
    if (sigaltstack(NULL, &cur) != 0)
        return;
    if (cur.ss_sp == (char *)t->altstack + page &&
        ((cur.ss_flags & SS_ONSTACK) || sigaltstack(&off, NULL) != 0))
        return;
    munmap(t->altstack, page + t->altstack_len);
    t->altstack = NULL;
}

RP_HIDDEN void rp_rt_thread_exit(void *arg)
{
    struct rp_tbuf *t = arg;
    if (!t)
        return;
    /* The program's own key destructors run after this one (glibc runs
     * them in the order the keys were made, the recorder's first) and may
     * call instrumented functions, which would be lost: the first round
     * sets the key again and returns, so that glibc runs a second round
     * after them, in which the thread ends.  One round only: a runtime
     * that ends its own thread state in glibc's last round (ThreadSanitizer
     * does, with a key made before ours) must not find the thread still
     * recording.  A destructor that sets its key again runs in the second
     * round after this one: its calls are counted lost, "gone". */
    if (!t->tsd_round) {
        t->tsd_round = 1;
        if (pthread_setspecific(rp_rt.key, t) == 0)
            return;
    }
    t->guard = 1;
    /* when the thread ended: the writer ends the frames still open on it
     * there (rp_rt_write_thread_end); published by the release store of exited */
    t->end_ticks = rp_ticks();
    if (t->base && t->pos > t->base) {
        t->lens[atomic_load(&t->produced) % rp_rt.nbuf] = (uint32_t)(t->pos - t->base);
        /* (stated before the release: the writer may see it and read the
         * buffer before this thread reaches the publish below) */
        RP_TSAN_PUBLISH(t);
        atomic_fetch_add_explicit(&t->produced, 1, memory_order_release);
    }
    rp_offcpu_thread_exit(t); /* the schedstat fallback's last read */
    altstack_take(t);
    RP_TSAN_PUBLISH(t); /* (a cancelled thread's release stores are unseen: rt.h) */
    atomic_store_explicit(&t->exited, 1, memory_order_release);
    rp_self = NULL;
    rp_rt_gone = 1;
    if (rp_rt.sync_write) {
        rp_own_lock(&rp_rt.drain_lock);
        rp_rt_drain_once();
        rp_own_unlock(&rp_rt.drain_lock);
        return;
    }
    rp_own_lock(&rp_rt.lock);
    pthread_cond_signal(&rp_rt.wake);
    rp_own_unlock(&rp_rt.lock);
}

/* Per kernel tid, the threads seen with it so far (rp_thread_stream): one
 * u16 per possible tid, mapped on first use with MAP_NORESERVE, so only the
 * pages of tids in use take memory (a page per 2048 tids).  Lock-free: a
 * thread's first event may come from a signal handler that interrupted the
 * thread inside a recorder lock. */
RP_HIDDEN uint16_t *_Atomic rp_rt_stream_gen;
static __thread uint32_t stream_tid, stream_id; /* the calling thread's, once made */

RP_HIDDEN void rp_thread_stream_renew(void)
{
    stream_id = 0;
}

RP_HIDDEN uint32_t rp_thread_stream(uint32_t tid)
{
    tid &= RP_TID_MASK;
    if (stream_id && stream_tid == tid) /* (a forked child has another tid) */
        return stream_id;
    const size_t len = (size_t)(RP_TID_MASK + 1) * sizeof(uint16_t);
    uint16_t *g = atomic_load_explicit(&rp_rt_stream_gen, memory_order_acquire);
    if (!g) { /* the first thread maps it; a racing one unmaps its own */
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        uint16_t *exp = NULL;
        if (m != MAP_FAILED &&
            !atomic_compare_exchange_strong_explicit(&rp_rt_stream_gen, &exp, (uint16_t *)m,
                                                     memory_order_acq_rel, memory_order_acquire))
            munmap(m, len);
        g = atomic_load_explicit(&rp_rt_stream_gen, memory_order_acquire);
    }
    uint32_t gen = 0;
    if (g) { /* the generation: this tid's count before us, saturating (relaxed: a
                counter, ordered by nothing but its own read-modify-write) */
        uint16_t old = __atomic_load_n(&g[tid], __ATOMIC_RELAXED);
        while (old < RP_GEN_MAX &&
               !__atomic_compare_exchange_n(&g[tid], &old, (uint16_t)(old + 1), 1, __ATOMIC_RELAXED,
                                            __ATOMIC_RELAXED))
            ;
        gen = old; /* the 1024th reuse on merges with the last */
    }
    stream_tid = tid;
    stream_id = tid | gen << RP_TID_BITS;
    return stream_id;
}

/* Creates the calling thread's tbuf.  Returns it, or NULL (the thread's
 * events are then not recorded; a warning says so once). */
static struct rp_tbuf *thread_init(void)
{
    void *m = mmap(NULL, rp_rt_map_len(sizeof(struct rp_tbuf)), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct rp_tbuf *t = m;
    t->tid = rp_thread_stream((uint32_t)syscall(SYS_gettid)); /* a stream id (format 1.3) */
    t->guard = 1;
    altstack_give(t);
    rp_own_lock(&rp_rt.lock);
    t->next = rp_rt.threads;
    rp_rt.threads = t;
    rp_rt_writer_ensure_locked();
    rp_own_unlock(&rp_rt.lock);
    pthread_setspecific(rp_rt.key, t);
    rp_self = t;
    return t;
}

/* Publishes the current buffer of t (with its record count).  Returns 1
 * when the thread encoded and wrote it itself (rp_rt_self_encode), 0 when
 * it is left to the writer.  Cannot fail. */
RP_HIDDEN int rp_rt_buf_publish(struct rp_tbuf *t)
{
    uint64_t p = atomic_load_explicit(&t->produced, memory_order_relaxed);
    t->lens[p % rp_rt.nbuf] = (uint32_t)(t->pos - t->base);
    atomic_store_explicit(&t->produced, p + 1, memory_order_release);
    rp_pos_set(t, NULL);
    t->base = t->end = NULL;
    if (rp_rt.sync_write) { /* no writer thread: write it now */
        rp_own_lock(&rp_rt.drain_lock);
        rp_rt_drain_once();
        rp_own_unlock(&rp_rt.drain_lock);
        return 0;
    }
    if (rp_rt_self_encode(t)) /* encoded and written here: the writer has nothing to do */
        return 1;
    rp_own_lock(&rp_rt.lock);
    rp_rt_writer_ensure_locked();
    pthread_cond_signal(&rp_rt.wake);
    rp_own_unlock(&rp_rt.lock);
    return 0;
}

/*
 * Makes a free buffer current.  Returns 0, or -1 when there is none, with
 * *why the reason (drop policy, a failed writer, shutdown, no memory): the
 * caller then counts a loss.  *waited_from is set to the ticks when the
 * thread began to wait for the writer (or to write other buffers itself),
 * left alone when it did not or when it is set already.
 */
static int buf_next(struct rp_tbuf *t, uint64_t *waited_from, enum rp_loss *why)
{
    uint64_t p = atomic_load_explicit(&t->produced, memory_order_relaxed);
    while (p - atomic_load_explicit(&t->consumed, memory_order_acquire) >= rp_rt.nbuf) {
        if (!*waited_from)
            *waited_from = rp_ticks();
        *why = atomic_load(&rp_rt.stopped)  ? RP_LOSS_STOPPED
               : atomic_load(&rp_rt.failed) ? RP_LOSS_FAILED
                                            : RP_LOSS_FULL;
        if (rp_rt.drop || *why != RP_LOSS_FULL)
            return -1;
        if (rp_rt.sync_write) { /* another thread's buffers may be pending too */
            rp_own_lock(&rp_rt.drain_lock);
            unsigned n = rp_rt_drain_once();
            rp_own_unlock(&rp_rt.drain_lock);
            if (!n) /* nothing could be written: the write failed */
                return *why = RP_LOSS_FAILED, -1;
            continue;
        }
        rp_own_lock(&rp_rt.lock);
        rp_rt_writer_ensure_locked();
        if (!rp_rt.writer_running) { /* it could not be started */
            rp_own_unlock(&rp_rt.lock);
            return *why = RP_LOSS_NOMEM, -1;
        }
        rp_rt.waiters++;
        while (p - atomic_load(&t->consumed) >= rp_rt.nbuf && !atomic_load(&rp_rt.stopped))
            rp_own_cond_wait(&rp_rt.space, &rp_rt.lock);
        rp_rt.waiters--;
        rp_own_unlock(&rp_rt.lock);
    }
    /* the writer's reads of the buffer come before (consumed, acquire above;
     * stated to TSan too, which drops that arc for an event recorded inside
     * one of its interceptors: rt.h) */
    RP_TSAN_ACQUIRE(&t->consumed);
    uint32_t idx = (uint32_t)(p % rp_rt.nbuf);
    if (!t->bufs[idx] && !(t->bufs[idx] = buf_alloc()))
        return *why = RP_LOSS_NOMEM, -1;
    t->base = t->bufs[idx];
    t->end = t->base + rp_rt.bufrecs;
    rp_pos_set(t, t->base);
    return 0;
}

/* Counts a drop for reason why on t, the calling thread's (relaxed store:
 * the writer reads the counters at the end; t is the only writer). */
static inline void loss_count(struct rp_tbuf *t, enum rp_loss why)
{
    __atomic_store_n(&t->why[why], t->why[why] + 1, __ATOMIC_RELAXED);
}

/* Counts a drop for reason why where no thread state holds it. */
static void loss_count_nostate(enum rp_loss why)
{
    atomic_fetch_add_explicit(&rp_rt_loss_nostate[why], 1, memory_order_relaxed);
}

/* Records word into t's next buffer (t->guard is set by the caller). */
static void append_locked(struct rp_tbuf *t, uint64_t word)
{
    uint64_t now = rp_ticks(), waited = 0;
    enum rp_loss why = RP_LOSS_FULL;
    /* The switch from a full buffer to the next takes its time from now
     * on: the recorder's, a PAUSE, whether the thread encoded and wrote the
     * full one itself or handed it to the writer (a lock and a wake-up),
     * with the first use of a ring buffer (mapped and populated) and any
     * wait for a free one.  (A thread's first buffer, or the next after a
     * drop, comes before its next span: only a wait is a PAUSE there.) */
    if (t->base) {
        rp_rt_buf_publish(t);
        waited = now;
    }
    if (buf_next(t, &waited, &why) < 0) {
        if (!t->lost++)
            t->lost_first = now;
        loss_count(t, why);
        return;
    }
    struct rp_raw *p = t->pos;
    if (unlikely(rp_rt_seed_pending()) && !t->lost && !waited) /* a forked child's first */
        p = rp_rt_seed_put(t->tid, p); /* (at most a quarter of the buffer) */
    if (t->lost) { /* a buffer has room for the LOST, PAUSE records and the event */
        p->ticks = t->lost_first;
        p->word = rp_raw_word(RP_RAW_LOST, t->lost);
        p++;
        t->lost = 0;
    }
    if (waited) { /* the time switching, encoding or waiting for the writer is the recorder's */
        uint64_t t1 = rp_ticks();
        p->ticks = t1;
        p->word = rp_raw_word(RP_RAW_PAUSE, t1 > waited ? t1 - waited : 0);
        p++;
    }
    p->ticks = rp_ticks();
    p->word = word;
    rp_pos_set(t, p + 1);
}

RP_HIDDEN RP_NOINLINE void rp_append_slow(uint64_t word)
{
    if (rp_rt.direct) { /* a full batch of direct mode (direct.c), or no batch yet */
        rp_direct_event(word);
        return;
    }
    struct rp_tbuf *t = rp_self;
    if (t) {
        if (t->guard) { /* a signal handler interrupted an append */
            t->reentered++;
            loss_count(t, RP_LOSS_REENTERED);
            return;
        }
        t->guard = 1;
        atomic_signal_fence(memory_order_seq_cst);
        if (t->pos < t->end) { /* the clock is not the cycle counter */
            t->pos->ticks = rp_ticks();
            t->pos->word = word;
            rp_pos_set(t, t->pos + 1);
        } else {
            struct rt_section sec;
            section_enter(&sec);
            append_locked(t, word);
            section_leave(&sec);
        }
        atomic_signal_fence(memory_order_seq_cst);
        t->guard = 0;
        return;
    }
    /* the thread's first event */
    /* a handler's while it began; or after its end, unless that end was
     * the last thread's, running the process's exit (rp_rt_exiting) */
    if (rp_rt_initing ||
        (rp_rt_gone && !atomic_load_explicit(&rp_rt_exiting, memory_order_relaxed))) {
        loss_count_nostate(rp_rt_initing ? RP_LOSS_REENTERED : RP_LOSS_GONE);
        return;
    }
    rp_rt_initing = 1;
    if (rp_rt_gone)
        rp_thread_stream_renew(); /* a second life: a stream of its own */
    struct rt_section sec;
    section_enter(&sec);
    if (pthread_once(&rp_rt_once, rp_rt_start_once) == 0 && !rp_rt_start_err &&
        atomic_load(&rp_rt.mask)) {
        if ((t = thread_init())) {
            append_locked(t, word); /* thread_init returns with t->guard set */
            atomic_signal_fence(memory_order_seq_cst);
            t->guard = 0;
        } else {
            loss_count_nostate(RP_LOSS_NOMEM);
        }
    }
    section_leave(&sec);
    rp_rt_initing = 0;
}

/*
 * The periodic flush of a forked child, which has no writer thread: when
 * one of its threads begins a blocking call (waits.h) and RANKPROF_FLUSH_MS
 * has passed since the last, the thread writes what is published and the
 * filled part of its own buffer itself, so a child killed while it waits
 * (SIGKILL) keeps what it recorded before.  Off the function hot path: a
 * blocking call is a system call anyway.  The thread's guard is set
 * meanwhile (a signal handler's events are counted as reentered, lost);
 * nothing is done when another thread is writing (drain_lock).
 */
RP_HIDDEN void rp_rt_child_flush(void)
{
    static _Atomic uint64_t last; /* when the last such flush began */
    struct rp_tbuf *t = rp_self;
    uint64_t now = rp_mono_ns(), prev = atomic_load_explicit(&last, memory_order_relaxed);
    if (!rp_rt.flush_ms || !t || t->guard || now - prev < (uint64_t)rp_rt.flush_ms * 1000000u ||
        atomic_load(&rp_rt.stopped))
        return;
    t->guard = 1;
    if (rp_own_trylock(&rp_rt.drain_lock) == 0) {
        atomic_store_explicit(&last, now, memory_order_relaxed); /* a hint: relaxed */
        while (rp_rt_drain_once())
            ;
        rp_rt_flush_partial(t);
        rp_own_unlock(&rp_rt.drain_lock);
    }
    t->guard = 0;
}

/* ---- public API ---------------------------------------------------------- */

RP_API uint32_t rp_classes_set(uint32_t on, uint32_t off)
{
    uint32_t old = atomic_load(&rp_rt.mask), nw;
    do {
        if (atomic_load(&rp_rt.stopped) || rp_rt_start_err)
            return old;
        nw = (old | on) & ~off & RP_CLASS_BIT_ALL;
    } while (!atomic_compare_exchange_weak(&rp_rt.mask, &old, nw));
    rp_sites_sync_classes();
    return old;
}

RP_API int rp_flush(void)
{
    struct rp_tbuf *t = rp_self;
    if (rp_rt_start_err || atomic_load(&rp_rt.stopped))
        return RP_EBUSY;
    if (t && !t->guard && t->base) {
        t->guard = 1;
        struct rt_section sec;
        section_enter(&sec);
        if (t->pos > t->base) {
            uint64_t want = atomic_load(&t->produced) + 1;
            rp_rt_buf_publish(t);
            rp_own_lock(&rp_rt.lock);
            rp_rt.waiters++;
            while (atomic_load(&t->consumed) < want && !atomic_load(&rp_rt.stopped) &&
                   rp_rt.writer_running && !atomic_load(&rp_rt.failed))
                rp_own_cond_wait(&rp_rt.space, &rp_rt.lock);
            rp_rt.waiters--;
            rp_own_unlock(&rp_rt.lock);
            uint64_t waited = 0; /* an explicit flush waits on purpose: no pause */
            enum rp_loss why;    /* (nothing dropped: the next event tries again) */
            if (buf_next(t, &waited, &why) < 0) {
                rp_pos_set(t, NULL);
                t->base = t->end = NULL;
            }
        }
        section_leave(&sec);
        t->guard = 0;
    }
    return atomic_load(&rp_rt.failed) ? RP_EIO : 0;
}

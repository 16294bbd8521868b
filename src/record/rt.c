// SPDX-License-Identifier: MIT
/*
 * rt.c - the recorder runtime: start-up from the environment, per-thread
 * buffers, the writer thread that encodes full buffers into trace chunks,
 * fork handling and the bounded final flush.
 *
 * Life of the recorder:
 *
 *   start (constructor, or the first event)      read RANKPROF_*, open the file,
 *                                                 start the writer, set the mask
 *   thread's first event  -> thread_init()       mmap a tbuf, link it, first buffer
 *   buffer full           -> buf_publish()        hand it to the writer
 *                            buf_next()           take a free one, or wait / drop
 *   thread exit           -> thread_exit()        publish the partial buffer
 *   fork (child)          -> atfork_child()       new file, forget other threads;
 *                                                 no writer thread: a child of a
 *                                                 threaded process may not start
 *                                                 one, so its threads write their
 *                                                 own full buffers (sync_write)
 *   exit()                -> rp_rt_shutdown()     mask = 0, publish, drain with a
 *                                                 deadline, END chunk, close
 *   every RANKPROF_FLUSH_MS -> flush_partials()   the writer writes the filled
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
#include "rt.h"

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
    .fd = -1,
};
RP_HIDDEN __thread struct rp_tbuf *rp_self;
static __thread int rp_initing; /* inside thread_init or start-up */
static __thread int rp_gone;    /* this thread's tbuf was handed back */
/* set in the writer thread only */
RP_HIDDEN __thread int rp_is_writer;

static pthread_once_t rt_once = PTHREAD_ONCE_INIT;
/*
 * A section of the recorder that takes its locks on a program thread (a
 * buffer hand-off, the wait for a free buffer, rp_flush, a thread's
 * start).  Inside it the thread can neither be cancelled (pthread_cond_wait
 * and write are cancellation points: a thread cancelled there would leave
 * rp_rt.lock or drain_lock held and every other thread stuck) nor run a
 * signal handler (one that siglongjmps out would leave the same locks held;
 * a handler that only records is deferred to the section's end instead of
 * being dropped as re-entered).  Two system calls each way (about 1.4 us
 * for the four calls here), once per buffer (never per event); direct mode
 * uses it only for a thread's first event, not per batch.  Cannot fail: a
 * failed call leaves the state as it was.
 */
RP_HIDDEN void section_enter(struct rt_section *s)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &s->sigs);
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &s->cancel);
}

RP_HIDDEN void section_leave(struct rt_section *s)
{
    int ignored;
    pthread_setcancelstate(s->cancel, &ignored);
    pthread_sigmask(SIG_SETMASK, &s->sigs, NULL);
}

static struct rp_overhead rt_overhead; /* measured at start-up; rounds 0 = not */
static void rt_start_once(void);
static int rt_start_err;

#define RP_VERSION_STR "rankprof 0.1.0"

static void rt_warn(const char *fmt, const char *arg, int err)
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
    ssize_t w = write(2, msg, (size_t)n);
    (void)w;
}

/* ---- output ------------------------------------------------------------- */

/*
 * The trace descriptor belongs to the recorder, but the program may close
 * it or dup2 something over its number (daemons close every descriptor,
 * some programs dup2 stderr over 3..63).  So it is opened out of the way
 * (fd_high: a high number, close-on-exec), the close/dup2/dup3 interposers
 * move it before the program takes its number (rp_rt_fd_taken), and before
 * every write fstat says whether it is still the file opened (out_dev,
 * out_ino): a descriptor taken past the interposers (the raw system call,
 * close_range) is then noticed and the file reopened by its path in append
 * mode, or recording stops with a message and the count of the events not
 * written.  rp_rt.fd_lock (in struct rp_rt, so locks.c leaves it
 * unrecorded) makes a write and a move one after the other.  The fstat
 * costs about 0.2 us per chunk, a chunk being thousands of events.
 */
static dev_t out_dev;
static ino_t out_ino;
static uint64_t unwritten; /* events not written because writing failed */
/* Drops counted where no thread state holds them (enum rp_loss; relaxed:
 * counters, read once at the end) and the records the encoder could not
 * keep (writer only). */
static _Atomic uint64_t loss_nostate[RP_LOSS_N];
static uint64_t orphans_retired;         /* exits left out at windows' edges, of retired threads */
static uint64_t loss_retired[RP_LOSS_N]; /* of threads retired (under rp_rt.lock) */
static uint64_t unencoded;

/* Moves fd to a high number, close-on-exec (the old one is closed).
 * Returns the new number, or fd itself when that fails. */
static int fd_high(int fd)
{
    struct rlimit rl;
    long lo = 1000;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)lo + 24 > rl.rlim_cur)
        lo = rl.rlim_cur > 48 ? (long)rl.rlim_cur - 24 : 3;
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, lo);
    if (nfd < 0)
        nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* at least close-on-exec */
    if (nfd < 0)
        return fd;
    syscall(SYS_close, fd); /* not close(): the interposer would move it */
    return nfd;
}

/* Called by the close, dup2 and dup3 interposers (rt.h: rp_rt_fd_check)
 * before the program takes descriptor fd when it is the trace's: the
 * trace moves to another number.  Waits at most about 100 ms for a write
 * in progress (a signal handler may have interrupted this thread inside
 * one); if it cannot move, the check before the next write reopens. */
RP_HIDDEN void rp_rt_fd_taken(int fd)
{
    struct timespec us = {0, 100000};
    int locked = 0;
    for (int i = 0; i < 1000 && !(locked = rp_own_trylock(&rp_rt.fd_lock) == 0); i++)
        nanosleep(&us, NULL);
    if (!locked)
        return;
    if (fd == rp_rt.fd) {
        struct rlimit rl;
        int lo = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur > 64 ? 64 : 3;
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, lo);
        if (nfd >= 0)
            __atomic_store_n(&rp_rt.fd, nfd, __ATOMIC_RELAXED);
    }
    rp_own_unlock(&rp_rt.fd_lock);
}

/* Checks, with fd_lock held, that rp_rt.fd is still the trace file, and
 * reopens the file by its path (append, no symlink, close-on-exec) if it is
 * not.  The number the program took is left to it.  Returns 0, or -1 when
 * the file cannot be reopened (recording stops). */
static int out_check(void)
{
    struct stat st;
    if (fstat(rp_rt.fd, &st) == 0 && st.st_dev == out_dev && st.st_ino == out_ino)
        return 0;
    int fd = open(rp_rt.path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 && fstat(fd, &st) == 0 && st.st_dev == out_dev && st.st_ino == out_ino) {
        __atomic_store_n(&rp_rt.fd, fd_high(fd), __ATOMIC_RELAXED);
        rt_warn("the program closed or replaced the descriptor of %s; reopened it", rp_rt.path, 0);
        return 0;
    }
    if (fd >= 0)
        syscall(SYS_close, fd);
    rt_warn("the program closed or replaced the descriptor of %s and the file cannot be "
            "reopened; recording stops",
            rp_rt.path, 0);
    return -1;
}

/* Writes all of iov to the trace file.  On the first failure the recorder
 * stops writing (rp_rt.failed) and says so once; data is then lost, never
 * the program. */
static void out_writev(struct iovec *iov, int n)
{
    /* atomic: the interposers move rp_rt.fd (under fd_lock, taken below) */
    if (atomic_load(&rp_rt.failed) || __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) < 0)
        return;
    rp_own_lock(&rp_rt.fd_lock);
    if (out_check() < 0) {
        atomic_store(&rp_rt.failed, EBADF);
        n = 0;
    }
    while (n > 0) {
        ssize_t w = writev(rp_rt.fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            atomic_store(&rp_rt.failed, errno);
            rt_warn("writing %s failed, recording stops", rp_rt.path, errno);
            break;
        }
        while (n > 0 && (size_t)w >= iov->iov_len) {
            w -= (ssize_t)iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + w;
            iov->iov_len -= (size_t)w;
        }
    }
    rp_own_unlock(&rp_rt.fd_lock);
}

static void out_chunk(uint32_t type, const void *payload, size_t len)
{
    uint8_t hdr[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(hdr, type, payload, (uint32_t)len);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, len}};
    out_writev(iov, 2);
}

static void out_clock(void)
{
    uint8_t p[24];
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    rp_put64(p, rp_ticks());
    rp_put64(p + 8, rp_mono_ns());
    rp_put64(p + 16, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    out_chunk(RP_CH_CLOCK, p, sizeof(p));
}

/* Reads a whole small file (procfs) into a malloc'd buffer; NULL on error. */
static char *read_file(const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 8192, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        if (n == cap) {
            char *nb = cap < RP_CHUNK_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                buf = NULL;
                break;
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t r = read(fd, buf + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return buf;
}

/* MAPS: the executable, file-backed mappings, which is all the analyzer
 * needs to name code addresses. */
static void out_maps(void)
{
    size_t len, o = 0;
    /* thread-self: after main's pthread_exit, /proc/self (the main thread, a
     * zombie) has no maps left */
    char *m = read_file("/proc/thread-self/maps", &len);
    if (!m || !len) {
        free(m);
        m = read_file("/proc/self/maps", &len);
    }
    if (!m)
        return;
    for (size_t i = 0; i < len;) {
        size_t j = i;
        while (j < len && m[j] != '\n')
            j++;
        /* "start-end perms offset dev inode path": keep x with a '/' path */
        char *perm = memchr(m + i, ' ', j - i);
        char *path = memchr(m + i, '/', j - i);
        if (perm && perm + 4 < m + j && perm[3] == 'x' && path) {
            memmove(m + o, m + i, j - i);
            o += j - i;
            m[o++] = '\n';
        }
        i = j + 1;
    }
    out_chunk(RP_CH_MAPS, m, o);
    free(m);
}

RP_HIDDEN void rp_rt_maps_now(void)
{
    if (rt_start_err || atomic_load(&rp_rt.stopped) ||
        __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) < 0 || (rp_self && rp_self->guard))
        return;
    struct rt_section sec; /* (writev is a cancellation point, under fd_lock) */
    section_enter(&sec);
    out_maps();
    section_leave(&sec);
}

static char rt_run[24]; /* the run's id (run_id_take), "" before the file is opened */

static void out_info(void)
{
    size_t cap = 65536, len = 0, n;
    uint8_t *buf = malloc(cap);
    char tmp[64];
    if (!buf)
        return;
    char exe[4096];
    ssize_t el = readlink("/proc/self/exe", exe, sizeof(exe));
    if (el > 0)
        rp_info_put(buf, cap, &len, "program", exe, (size_t)el);
    char *argv = read_file("/proc/self/cmdline", &n);
    if (argv) {
        rp_info_put(buf, cap, &len, "argv", argv, n < 32768 ? n : 32768);
        free(argv);
    }
    snprintf(tmp, sizeof(tmp), "%d", (int)getpid());
    rp_info_put(buf, cap, &len, "pid", tmp, strlen(tmp));
    snprintf(tmp, sizeof(tmp), "%d", (int)getppid());
    rp_info_put(buf, cap, &len, "ppid", tmp, strlen(tmp));
    if (rt_run[0])
        rp_info_put(buf, cap, &len, "run", rt_run, strlen(rt_run));
    if (gethostname(tmp, sizeof(tmp)) == 0) {
        tmp[sizeof(tmp) - 1] = 0;
        rp_info_put(buf, cap, &len, "host", tmp, strlen(tmp));
    }
    rp_info_put(buf, cap, &len, "clock", rp_rt.clock_name, strlen(rp_rt.clock_name));
    snprintf(tmp, sizeof(tmp), "%.0f", rp_rt.freq);
    rp_info_put(buf, cap, &len, "freq_hz", tmp, strlen(tmp));
    rp_info_put(buf, cap, &len, "mode", rp_rt.direct ? "direct" : "trace", rp_rt.direct ? 6 : 5);
    rp_info_put(buf, cap, &len, "policy", rp_rt.drop ? "drop" : "wait", rp_rt.drop ? 4 : 4);
    if (rt_overhead.rounds) {
        snprintf(tmp, sizeof(tmp), "%.2f", rt_overhead.pair);
        rp_info_put(buf, cap, &len, "overhead_ticks", tmp, strlen(tmp));
        snprintf(tmp, sizeof(tmp), "%.2f", rt_overhead.self);
        rp_info_put(buf, cap, &len, "overhead_self_ticks", tmp, strlen(tmp));
        snprintf(tmp, sizeof(tmp), "%.2f", rt_overhead.spread);
        rp_info_put(buf, cap, &len, "overhead_spread_ticks", tmp, strlen(tmp));
    }
    /* how off-CPU time is known (offcpu.c), and why perf is not used */
    const char *src = rp_offcpu_source_name(), *oerr = rp_offcpu_error();
    if (!rp_rt.direct) {
        rp_info_put(buf, cap, &len, "offcpu", src, strlen(src));
        if (*oerr)
            rp_info_put(buf, cap, &len, "offcpu_error", oerr, strlen(oerr));
    }
    rp_info_put(buf, cap, &len, "recorder", RP_VERSION_STR, strlen(RP_VERSION_STR));
    out_chunk(RP_CH_INFO, buf, len);
    free(buf);
}

static void out_thread(struct rp_tbuf *t)
{
    char path[64], name[64];
    uint8_t p[8 + sizeof(name)];
    size_t n = 0;
    snprintf(path, sizeof(path), "/proc/self/task/%u/comm", rp_tid_of(t->tid));
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t r = read(fd, name, sizeof(name));
        n = r > 0 ? (size_t)r : 0;
        if (n && name[n - 1] == '\n')
            n--;
        close(fd);
    }
    rp_put32(p, t->tid);
    rp_put32(p + 4, 0);
    memcpy(p + 8, name, n);
    out_chunk(RP_CH_THREAD, p, 8 + n);
}

/* ---- the writer --------------------------------------------------------- */

/* Describes a site pointer for DEFS (sites.c): -1 for an address that is
 * no registered site, so the encoder skips the record. */
static int describe_site(void *ctx, uint64_t site, struct rp_def *out)
{
    (void)ctx;
    return rp_sites_describe(site, out);
}

/* rp_rt.out's size in records (rp_enc_bound) */
static size_t out_recs;

/*
 * Encodes and writes one buffer of thread t (writer thread only), with the
 * thread's off-CPU intervals that fall before its last record merged in
 * (offcpu.c reads the rings first: the switch-in before a record that is
 * already visible here is in a ring by now).
 */
static void encode_buffer(struct rp_tbuf *t, const struct rp_raw *recs, size_t n)
{
    if (t->win_off) { /* after a switch off: the ends of what began before it */
        t->enc.orphans += n;
        return;
    }
    if (!t->announced) {
        out_thread(t);
        t->announced = 1;
    }
    uint64_t lost0 = t->enc.lost, skipped0 = t->enc.skipped, pause0 = t->enc.npause;
    size_t nm = n;
    const struct rp_raw *m = recs;
    if (rp_offcpu_source() == RP_OFFCPU_PERF) {
        rp_offcpu_poll();
        m = rp_offq_merge(&t->offq, recs, &nm);
        /* an off-CPU record takes up to two events' bytes */
        if (nm > n && 2 * nm > out_recs) {
            uint8_t *no = realloc(rp_rt.out, rp_enc_bound(2 * nm));
            if (no) {
                rp_rt.out = no;
                out_recs = 2 * nm;
            } else {
                m = recs; /* the intervals are dropped (counted late) */
                t->offq.late += nm - n;
                nm = n;
            }
        }
    }
    size_t len = rp_enc_events(&rp_rt.enc, &t->enc, t->tid, m, nm, rp_rt.out);
    size_t dlen;
    const uint8_t *defs = rp_enc_take_defs(&rp_rt.enc, &dlen);
    if (dlen)
        out_chunk(RP_CH_DEFS, defs, dlen);
    if (len)
        out_chunk(RP_CH_EVENTS, rp_rt.out, len);
    rp_rt.events_written += n - (t->enc.npause - pause0); /* PAUSE: the recorder's */
    if (atomic_load(&rp_rt.failed))
        unwritten += n;
    rp_rt.lost_total += t->enc.lost - lost0;
    unencoded += t->enc.skipped - skipped0;
    if (t->enc.skipped != skipped0 && n) { /* records the encoder could not keep */
        struct rp_raw rec = {recs[n - 1].ticks,
                             rp_raw_word(RP_RAW_LOST, t->enc.skipped - skipped0)};
        encode_buffer(t, &rec, 1);
    }
}

/*
 * A recording window's edge reaches thread t (ctl.c): the frames open then
 * end there, with their time up to it (an UNWIND record, as at a thread's
 * end), so do the holds of its locks (LOCK_REL records).  What the thread
 * records between a switch off and the next switch on (the ends of spans
 * begun before, which are recorded whatever the mask) is left out, and so
 * are, in a window, the exits and releases of what began before it (the
 * encoder's windowed state).  Writer only.
 */
static void win_apply(struct rp_tbuf *t, const struct rp_win_edge *e)
{
    /* the locks it holds are released there, latest first, and its frames
     * end there (their releases and exits, later, are left out) */
    while (t->enc.nholds) {
        struct rp_raw rel = {e->ticks,
                             rp_raw_word(RP_RAW_LOCK_REL, t->enc.holds[t->enc.nholds - 1].key)};
        uint32_t before = t->enc.nholds;
        encode_buffer(t, &rel, 1);
        if (t->enc.nholds >= before) /* (not encoded: out of memory) */
            t->enc.nholds = before - 1;
    }
    if (t->enc.depth) {
        struct rp_raw rec = {e->ticks, rp_raw_word(RP_RAW_UNWIND, 0)};
        encode_buffer(t, &rec, 1);
    }
    t->enc.windowed = 1;
    t->win_off = !e->on;
}

/* Applies to t the edges up to ticks `until` it has not had yet. */
static void win_catch_up(struct rp_tbuf *t, uint64_t until)
{
    const struct rp_win_edge *e;
    uint32_t n = rp_ctl_edges(&e);
    for (; t->win_done < n && e[t->win_done].ticks <= until; t->win_done++)
        win_apply(t, &e[t->win_done]);
}

/*
 * Encodes and writes records of thread t (writer thread only), cut at the
 * edges of the recording windows that fall among them: the records before
 * an edge, the edge, the rest.  An edge after the last record waits for
 * the thread's next records, its end, or win_catch_up.  (A DATA record's
 * ticks field is a value: it goes with the record before it.)
 */
static void write_buffer(struct rp_tbuf *t, const struct rp_raw *recs, size_t n)
{
    const struct rp_win_edge *e;
    uint32_t ne = rp_ctl_edges(&e);
    while (t->win_done < ne && n) {
        size_t k = 0;
        while (k < n && (recs[k].ticks < e[t->win_done].ticks ||
                         (k && recs[k].word >> RP_RAW_SHIFT == RP_RAW_DATA)))
            k++;
        if (k == n)
            break;
        if (k)
            encode_buffer(t, recs, k);
        win_apply(t, &e[t->win_done++]);
        recs += k;
        n -= k;
    }
    if (n)
        encode_buffer(t, recs, n);
}

/*
 * Writes the losses a thread has counted but not yet put in a buffer: events
 * dropped while it had no free buffer, and events of signal handlers that
 * interrupted an append.  Called for a thread that has ended (its counters
 * are final: `exited` was stored with release after them) or for the
 * calling thread at shutdown.
 */
static void write_pending_loss(struct rp_tbuf *x)
{
    uint64_t n = x->lost + x->reentered;
    if (!n)
        return;
    struct rp_raw rec = {x->lost ? x->lost_first : rp_ticks(), rp_raw_word(RP_RAW_LOST, n)};
    x->lost = x->reentered = 0;
    write_buffer(x, &rec, 1);
}

/*
 * A thread that has ended (pthread_exit from deep frames, a longjmp out of
 * its start function) may leave frames open: the writer's shadow stack
 * says so.  They end where the thread ended, as one RP_RAW_UNWIND 0 record
 * (writer.h) at its end ticks, so the analyzer keeps their time up to
 * there instead of guessing.  Writer only, for a retired thread whose
 * buffers are all written.
 */
static void write_thread_end(struct rp_tbuf *x)
{
    if (!x->enc.depth || !x->end_ticks)
        return;
    struct rp_raw rec = {x->end_ticks, rp_raw_word(RP_RAW_UNWIND, 0)};
    write_buffer(x, &rec, 1);
}

/* Writes every published buffer of every thread; retires exited threads
 * whose buffers are all written.  Returns the number of buffers written. */
static unsigned drain_once(void)
{
    unsigned done = 0;
    rp_own_lock(&rp_rt.lock);
    struct rp_tbuf *t = rp_rt.threads;
    rp_own_unlock(&rp_rt.lock);

    for (; t; t = t->next) {
        uint64_t c = atomic_load_explicit(&t->consumed, memory_order_relaxed);
        uint64_t p = atomic_load_explicit(&t->produced, memory_order_acquire);
        for (; c < p; c++) {
            uint32_t idx = (uint32_t)(c % rp_rt.nbuf);
            if (t->lens[idx] > t->part)
                write_buffer(t, t->bufs[idx] + t->part, t->lens[idx] - t->part);
            t->part = 0;
            atomic_store_explicit(&t->consumed, c + 1, memory_order_release);
            done++;
            if (rp_rt.writer_delay_us)
                usleep(rp_rt.writer_delay_us);
            rp_own_lock(&rp_rt.lock);
            if (rp_rt.waiters)
                pthread_cond_broadcast(&rp_rt.space);
            rp_own_unlock(&rp_rt.lock);
        }
    }
    /* retire threads that have ended and been written out */
    rp_own_lock(&rp_rt.lock);
    for (struct rp_tbuf **pp = &rp_rt.threads; *pp;) {
        struct rp_tbuf *x = *pp;
        if (atomic_load(&x->exited) && atomic_load(&x->consumed) == atomic_load(&x->produced)) {
            win_catch_up(x, x->end_ticks ? x->end_ticks : UINT64_MAX);
            orphans_retired += x->enc.orphans;
            write_pending_loss(x);
            write_thread_end(x);
            rp_offcpu_forget(x);
            for (unsigned r = 0; r < RP_LOSS_N; r++) /* (its counters are final) */
                loss_retired[r] += x->why[r];
            *pp = x->next;
            for (uint32_t i = 0; i < RP_NBUF_MAX; i++)
                if (x->bufs[i])
                    munmap(x->bufs[i], rp_rt.bufrecs * sizeof(struct rp_raw));
            rp_enc_thread_free(&x->enc);
            munmap(x, sizeof(*x));
        } else {
            pp = &x->next;
        }
    }
    rp_own_unlock(&rp_rt.lock);
    return done;
}

/*
 * Writes the filled, not yet written part of the buffer t is still filling,
 * if that buffer is the next one to consume (the invariant is in rt.h).
 * Writer only.  Returns 1 if it wrote something.
 */
static int flush_partial(struct rp_tbuf *t)
{
    uint64_t c = atomic_load_explicit(&t->consumed, memory_order_relaxed);
    if (atomic_load_explicit(&t->produced, memory_order_acquire) != c)
        return 0; /* published buffers first: drain_once */
    struct rp_raw *pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
    struct rp_raw *b = pos ? t->bufs[c % rp_rt.nbuf] : NULL;
    if (!b || pos <= b + t->part || pos > b + rp_rt.bufrecs)
        return 0; /* nothing new, or the thread has moved on to another buffer */
    uint32_t n = (uint32_t)(pos - b);
    unsigned op = (unsigned)(pos[-1].word >> RP_RAW_SHIFT);
    if ((op == RP_RAW_INSTANT || op == RP_RAW_COUNTER) && --n <= t->part)
        return 0; /* its DATA record may still come */
    write_buffer(t, b + t->part, n - t->part);
    t->part = n;
    return 1;
}

/* Writes every thread's partial buffer (writer only); returns how many.
 * A thread whose records are all written then gets the windows' edges
 * older than 20 ms (any record of its from before them is in its buffer by
 * then), so that a thread that records nothing after an edge still has its
 * frames ended there. */
static unsigned flush_partials(void)
{
    unsigned n = 0;
    rp_own_lock(&rp_rt.lock);
    struct rp_tbuf *t = rp_rt.threads;
    rp_own_unlock(&rp_rt.lock);
    uint64_t old = rp_ticks() - (uint64_t)(rp_rt.freq / 50);
    for (; t; t = t->next) {
        n += (unsigned)flush_partial(t);
        uint64_t c = atomic_load_explicit(&t->consumed, memory_order_relaxed);
        struct rp_raw *pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
        struct rp_raw *b = t->bufs[c % rp_rt.nbuf];
        if (atomic_load_explicit(&t->produced, memory_order_acquire) == c &&
            (!pos || (b && pos == b + t->part)))
            win_catch_up(t, old);
    }
    return n;
}

struct info_buf {
    uint8_t b[1024];
    size_t len;
};

static void info_put(void *ctx, const char *key, const char *val)
{
    struct info_buf *ib = ctx;
    rp_info_put(ib->b, sizeof(ib->b), &ib->len, key, val, strlen(val));
}

/* n in decimal into v (at least 21 bytes); async-signal-safe. */
static void u64_dec(char *v, uint64_t n)
{
    char tmp[21];
    size_t k = 0;
    do
        tmp[k++] = (char)('0' + n % 10);
    while ((n /= 10) != 0);
    for (size_t i = 0; i < k; i++)
        v[i] = tmp[k - 1 - i];
    v[k] = 0;
}

/* The drops so far by reason, as lost_REASON keys (the non-zero ones):
 * every thread's counters and those held by none.  in_handler: called in a
 * signal handler, which takes no lock (async-signal-safe then). */
static void loss_info(struct info_buf *ib, int in_handler)
{
    static const char *const key[RP_LOSS_N] = {
        [RP_LOSS_FULL] = "lost_full",           [RP_LOSS_STOPPED] = "lost_stopped",
        [RP_LOSS_FAILED] = "lost_failed",       [RP_LOSS_NOMEM] = "lost_nomem",
        [RP_LOSS_REENTERED] = "lost_reentered", [RP_LOSS_GONE] = "lost_gone"};
    uint64_t n[RP_LOSS_N];
    for (unsigned r = 0; r < RP_LOSS_N; r++)
        n[r] = atomic_load_explicit(&loss_nostate[r], memory_order_relaxed);
    /* (the writer retires threads under the lock; a child's handler holds
     * drain_lock, under which its threads retire, and takes no other lock) */
    if (!in_handler)
        rp_own_lock(&rp_rt.lock);
    for (unsigned r = 0; r < RP_LOSS_N; r++)
        n[r] += loss_retired[r];
    for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next)
        for (unsigned r = 0; r < RP_LOSS_N; r++)
            n[r] += __atomic_load_n(&t->why[r], __ATOMIC_RELAXED);
    if (!in_handler)
        rp_own_unlock(&rp_rt.lock);
    char v[24];
    for (unsigned r = 0; r < RP_LOSS_N; r++)
        if (n[r]) {
            u64_dec(v, n[r]);
            info_put(ib, key[r], v);
        }
    if (unencoded) {
        u64_dec(v, unencoded);
        info_put(ib, "lost_unencoded", v);
    }
    if (!in_handler) { /* exits of frames entered before a window (ctl.c) */
        uint64_t o = orphans_retired;
        rp_own_lock(&rp_rt.lock);
        for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next)
            o += t->enc.orphans;
        rp_own_unlock(&rp_rt.lock);
        if (o) {
            u64_dec(v, o);
            info_put(ib, "window_exits", v);
        }
    }
}

/* A second INFO chunk at the end of a run (format 1.3): what is only known
 * then (offcpu.c: lost switch records, the schedstat run-queue delay; the
 * drops by reason).  full: not after a fatal signal, when only what is
 * async-signal-safe may run (in the handler itself, with no writer thread). */
static void out_end_info(int full)
{
    struct info_buf ib = {.len = 0};
    if (full) {
        rp_offcpu_end_info(info_put, &ib);
        rp_ctl_info(info_put, &ib, rp_ticks());
    }
    loss_info(&ib, !full && rp_rt.sync_write);
    if (ib.len)
        out_chunk(RP_CH_INFO, ib.b, ib.len);
}

/* The END chunk: flags RP_END_*, status the exit status or signal number,
 * ticks when the process ended (exit() began the final flush, the fatal
 * signal arrived): where the analyzer ends the frames still open. */
static void out_end(uint32_t flags, int32_t status, uint64_t ticks)
{
    uint8_t end[32];
    rp_put64(end, ticks);
    rp_put64(end + 8, rp_rt.events_written);
    rp_put64(end + 16, rp_rt.lost_total);
    rp_put32(end + 24, (uint32_t)status);
    rp_put32(end + 28, flags);
    out_chunk(RP_CH_END, end, sizeof(end));
}

/*
 * The writer's part of a fatal signal (fatal_handler waits for it): write
 * everything recorded so far, published or not, then CLOCK and END with
 * RP_END_SIGNAL.  No MAPS: reading /proc allocates, and the program may
 * have died inside malloc; the one written at start-up names the code.
 * Recording stops for good: threads waiting for a buffer are released.
 */
static void fatal_flush(int sig)
{
    rp_own_lock(&rp_rt.lock);
    atomic_store(&rp_rt.stopped, 1);
    pthread_cond_broadcast(&rp_rt.space);
    rp_own_unlock(&rp_rt.lock);
    while (drain_once())
        ;
    flush_partials();
    out_end_info(0);
    out_clock();
    uint64_t at = atomic_load(&rp_rt.fatal_ticks);
    out_end(RP_END_SIGNAL, sig, at ? at : rp_ticks());
    rp_ctl_shutdown(); /* the control page goes with the process */
    atomic_store(&rp_rt.fatal_done, 1);
}

static int work_pending_locked(void)
{
    for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next)
        if (atomic_load(&t->produced) != atomic_load(&t->consumed) || atomic_load(&t->exited))
            return 1;
    return 0;
}

/*
 * Set when the main thread has called pthread_exit (the destructor of
 * main_key, which only main holds: exit() runs no key destructors).  From
 * then on the process ends when its last thread does, and glibc counts the
 * writer among its threads, so the writer must not stay: it retires whenever
 * it has nothing to write (writer_main), and a thread that publishes a
 * buffer or needs a free one starts it again (writer_ensure_locked).  The
 * last thread's end then runs exit(0), whose final flush writes the rest.
 * The periodic flush of partial buffers pauses while the writer is retired.
 */
static atomic_int main_gone;
static pthread_key_t main_key;

static void main_exit(void *arg)
{
    (void)arg;
    atomic_store(&main_gone, 1);
    rp_own_lock(&rp_rt.lock);
    pthread_cond_signal(&rp_rt.wake);
    rp_own_unlock(&rp_rt.lock);
}

/* Whether the writer retires now (main_gone): called with the lock held
 * after a pass that wrote nothing; if so it is marked not running and
 * detached (nobody joins it), and must return without touching the lock. */
static int writer_retire_locked(void)
{
    if (!atomic_load(&main_gone) || atomic_load(&rp_rt.stopped) || atomic_load(&rp_rt.fatal) ||
        work_pending_locked())
        return 0;
    rp_rt.writer_running = 0;
    pthread_detach(pthread_self());
    return 1;
}

static void *writer_main(void *arg)
{
    (void)arg;
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, NULL);
    rp_is_writer = 1;
    rp_offcpu_writer_started();

    /* A fatal signal cannot wake the writer (a condition variable is not
     * async-signal-safe): it sees rp_rt.fatal after at most one wait. */
    unsigned wait_ms = rp_rt.flush_ms && rp_rt.flush_ms < 200 ? rp_rt.flush_ms : 200;
    uint64_t last_clock = rp_mono_ns(), last_flush = last_clock;
    for (;;) {
        rp_own_lock(&rp_rt.lock);
        if (!work_pending_locked() && !atomic_load(&rp_rt.stopped) && !atomic_load(&rp_rt.fatal)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += (long)wait_ms * 1000000;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            rp_own_cond_timedwait(&rp_rt.wake, &rp_rt.lock, &ts);
        }
        int stopping = atomic_load(&rp_rt.stopped);
        rp_own_unlock(&rp_rt.lock);

        int sig = atomic_load(&rp_rt.fatal);
        if (sig) {
            fatal_flush(sig);
            return NULL;
        }
        unsigned n = drain_once();
        rp_offcpu_poll(); /* at least every wait: the rings do not fill up while
                             the threads record nothing (all blocked) */
        uint64_t now = rp_mono_ns();
        if (rp_rt.flush_ms && now - last_flush >= (uint64_t)rp_rt.flush_ms * 1000000u) {
            rp_offcpu_tick(); /* schedstat fallback: the threads' run-queue delay */
            n += flush_partials();
            last_flush = now;
        }
        if (n && now - last_clock > 500000000u) {
            out_clock(); /* calibration points for runs that never end cleanly */
            last_clock = now;
        }
        if (stopping && !n) {
            flush_partials(); /* what the threads still running have recorded */
            return NULL;
        }
        if (!n && atomic_load(&main_gone)) {
            flush_partials();
            rp_own_lock(&rp_rt.lock);
            int retire = writer_retire_locked();
            rp_own_unlock(&rp_rt.lock);
            if (retire)
                return NULL;
        }
    }
}

/* Starts the writer thread if it is not running.  Called with the lock. */
static void writer_ensure_locked(void)
{
    if (rp_rt.writer_running || rp_rt.sync_write || atomic_load(&rp_rt.stopped))
        return;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    if (pthread_create(&rp_rt.writer, &a, writer_main, NULL) == 0)
        rp_rt.writer_running = 1;
    pthread_attr_destroy(&a);
}

/* ---- threads ------------------------------------------------------------ */

/* A buffer, its pages faulted in now (MAP_POPULATE): a page fault at the
 * first write to each page would land inside whatever span is open, ~1 us
 * each, as if that function's own work (its JITTER). */
static struct rp_raw *buf_alloc(void)
{
    void *p = mmap(NULL, rp_rt.bufrecs * sizeof(struct rp_raw), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

static void thread_exit(void *arg)
{
    struct rp_tbuf *t = arg;
    if (!t)
        return;
    t->guard = 1;
    /* when the thread ended: the writer ends the frames still open on it
     * there (write_thread_end); published by the release store of exited */
    t->end_ticks = rp_ticks();
    if (t->base && t->pos > t->base) {
        t->lens[atomic_load(&t->produced) % rp_rt.nbuf] = (uint32_t)(t->pos - t->base);
        atomic_fetch_add_explicit(&t->produced, 1, memory_order_release);
    }
    rp_offcpu_thread_exit(t); /* the schedstat fallback's last read */
    atomic_store_explicit(&t->exited, 1, memory_order_release);
    rp_self = NULL;
    rp_gone = 1;
    if (rp_rt.sync_write) {
        rp_own_lock(&rp_rt.drain_lock);
        drain_once();
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
static uint16_t *_Atomic stream_gen;
static __thread uint32_t stream_tid, stream_id; /* the calling thread's, once made */

RP_HIDDEN uint32_t rp_thread_stream(uint32_t tid)
{
    tid &= RP_TID_MASK;
    if (stream_id && stream_tid == tid) /* (a forked child has another tid) */
        return stream_id;
    const size_t len = (size_t)(RP_TID_MASK + 1) * sizeof(uint16_t);
    uint16_t *g = atomic_load_explicit(&stream_gen, memory_order_acquire);
    if (!g) { /* the first thread maps it; a racing one unmaps its own */
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        uint16_t *exp = NULL;
        if (m != MAP_FAILED &&
            !atomic_compare_exchange_strong_explicit(&stream_gen, &exp, (uint16_t *)m,
                                                     memory_order_acq_rel, memory_order_acquire))
            munmap(m, len);
        g = atomic_load_explicit(&stream_gen, memory_order_acquire);
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
    void *m = mmap(NULL, sizeof(struct rp_tbuf), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct rp_tbuf *t = m;
    t->tid = rp_thread_stream((uint32_t)syscall(SYS_gettid)); /* a stream id (format 1.3) */
    t->guard = 1;
    rp_own_lock(&rp_rt.lock);
    t->next = rp_rt.threads;
    rp_rt.threads = t;
    writer_ensure_locked();
    rp_own_unlock(&rp_rt.lock);
    pthread_setspecific(rp_rt.key, t);
    rp_self = t;
    return t;
}

/* Publishes the current buffer of t (with its record count). */
static void buf_publish(struct rp_tbuf *t)
{
    uint64_t p = atomic_load_explicit(&t->produced, memory_order_relaxed);
    t->lens[p % rp_rt.nbuf] = (uint32_t)(t->pos - t->base);
    atomic_store_explicit(&t->produced, p + 1, memory_order_release);
    rp_pos_set(t, NULL);
    t->base = t->end = NULL;
    if (rp_rt.sync_write) { /* no writer thread: write it now */
        rp_own_lock(&rp_rt.drain_lock);
        drain_once();
        rp_own_unlock(&rp_rt.drain_lock);
        return;
    }
    rp_own_lock(&rp_rt.lock);
    writer_ensure_locked();
    pthread_cond_signal(&rp_rt.wake);
    rp_own_unlock(&rp_rt.lock);
}

/*
 * Makes a free buffer current.  Returns 0, or -1 when there is none, with
 * *why the reason (drop policy, a failed writer, shutdown, no memory): the
 * caller then counts a loss.  *waited_from is set to the ticks when the
 * thread began to wait for the writer (or to write other buffers itself),
 * left alone when it did not.
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
            unsigned n = drain_once();
            rp_own_unlock(&rp_rt.drain_lock);
            if (!n) /* nothing could be written: the write failed */
                return *why = RP_LOSS_FAILED, -1;
            continue;
        }
        rp_own_lock(&rp_rt.lock);
        writer_ensure_locked();
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
    atomic_fetch_add_explicit(&loss_nostate[why], 1, memory_order_relaxed);
}

/* Records word into t's next buffer (t->guard is set by the caller). */
static void append_locked(struct rp_tbuf *t, uint64_t word)
{
    uint64_t now = rp_ticks(), waited = 0;
    enum rp_loss why = RP_LOSS_FULL;
    if (t->base)
        buf_publish(t);
    if (buf_next(t, &waited, &why) < 0) {
        if (!t->lost++)
            t->lost_first = now;
        loss_count(t, why);
        return;
    }
    struct rp_raw *p = t->pos;
    if (t->lost) { /* a buffer has room for the LOST, PAUSE records and the event */
        p->ticks = t->lost_first;
        p->word = rp_raw_word(RP_RAW_LOST, t->lost);
        p++;
        t->lost = 0;
    }
    if (waited) { /* the time waited for the writer is the recorder's, not the program's */
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
    if (rp_initing || rp_gone) { /* a handler's while it began; or after its end */
        loss_count_nostate(rp_gone ? RP_LOSS_GONE : RP_LOSS_REENTERED);
        return;
    }
    rp_initing = 1;
    struct rt_section sec;
    section_enter(&sec);
    if (pthread_once(&rt_once, rt_start_once) == 0 && !rt_start_err && atomic_load(&rp_rt.mask)) {
        if ((t = thread_init())) {
            append_locked(t, word); /* thread_init returns with t->guard set */
            atomic_signal_fence(memory_order_seq_cst);
            t->guard = 0;
        } else {
            loss_count_nostate(RP_LOSS_NOMEM);
        }
    }
    section_leave(&sec);
    rp_initing = 0;
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
        while (drain_once())
            ;
        flush_partial(t);
        rp_own_unlock(&rp_rt.drain_lock);
    }
    t->guard = 0;
}

/* ---- fatal signals ------------------------------------------------------- */

/*
 * A signal whose default action ends the process (a crash, abort(), kill,
 * Ctrl-C, timeout, a broken pipe, a CPU limit) would lose every event not
 * yet written.  The handler does only async-signal-safe things: it stops
 * recording, asks the writer thread (through rp_rt.fatal) to write all that
 * the threads have recorded, the partial buffers included, and an END chunk
 * with RP_END_SIGNAL, and waits for it with nanosleep, at most
 * RANKPROF_EXIT_TIMEOUT_MS.  In a forked child, which has no writer thread
 * (sync_write), the handler writes itself, unless it interrupted the
 * recorder.  Then it puts back the disposition it replaced and lets the
 * signal go on: a fault is raised again by the faulting instruction when
 * the handler returns, every other signal is raised again (it stays pending
 * until the handler returns).  The program's own handlers, and the default
 * action (core dump, exit status 128 + N), still happen; the signal is
 * never swallowed.  The writer notices the request within one wait (at
 * most 200 ms).
 *
 * The crash signals (the first NCRASH) are taken over unless ignored, and
 * chain to the handler the program had installed before the recorder
 * started; the others only while their disposition is the default one: a
 * program's own handler for SIGTERM or SIGINT decides what happens, and
 * the exit() or _exit() it ends with flushes.  The real-time signals
 * (SIGRTMIN to SIGRTMAX, those glibc leaves to programs) end the process
 * by default too and are treated like the second group.
 */
static const int fatal_sigs[] = {SIGSEGV, SIGBUS, SIGABRT, SIGFPE,   SIGILL,  SIGTERM,
                                 SIGINT,  SIGHUP, SIGQUIT, SIGPIPE,  SIGXCPU, SIGXFSZ,
                                 SIGTRAP, SIGSYS, SIGUSR1, SIGUSR2,  SIGALRM, SIGVTALRM,
                                 SIGPROF, SIGIO,  SIGPWR,  SIGSTKFLT};
#define NCRASH 5
#define NFATAL (sizeof(fatal_sigs) / sizeof(fatal_sigs[0]))
static struct sigaction fatal_old[NSIG]; /* by signal number */

/* The forked child's part of a fatal signal: no writer thread, so the
 * handler writes what is recorded and END itself.  Not when it interrupted
 * the recorder on this thread or another thread is writing (drain_lock). */
static void fatal_flush_sync(int sig)
{
    if ((rp_self && rp_self->guard) || rp_own_trylock(&rp_rt.drain_lock) != 0)
        return;
    atomic_store(&rp_rt.stopped, 1);
    while (drain_once())
        ;
    if (rp_self)
        flush_partial(rp_self);
    out_end_info(0);
    out_clock();
    uint64_t at = atomic_load(&rp_rt.fatal_ticks);
    out_end(RP_END_SIGNAL, sig, at ? at : rp_ticks());
    rp_ctl_shutdown(); /* (munmap and unlink: async-signal-safe) */
    atomic_store(&rp_rt.fatal_done, 1);
    rp_own_unlock(&rp_rt.drain_lock);
}

static void fatal_handler(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    (void)uc;
    atomic_store(&rp_rt.mask, 0);
    /* the first fatal signal's time, for the END chunk (seq_cst: before
     * rp_rt.fatal below, which the writer reads before it) */
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&rp_rt.fatal_ticks, &zero, rp_ticks());
    int none = 0;
    if (!rp_is_writer && !atomic_load(&rp_rt.stopped) &&
        __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) >= 0 &&
        (atomic_compare_exchange_strong(&rp_rt.fatal, &none, sig) || none)) {
        if (rp_rt.sync_write) {
            fatal_flush_sync(sig);
        } else if (__atomic_load_n(&rp_rt.writer_running, __ATOMIC_RELAXED)) {
            /* A crash inside the recorder may hold the lock the writer
             * needs: then wait less, the writer may never come. */
            unsigned limit = rp_rt.exit_timeout_ms;
            if (rp_self && rp_self->guard && limit > 1000)
                limit = 1000;
            struct timespec ms = {0, 1000000};
            for (unsigned w = 0; w < limit && !atomic_load(&rp_rt.fatal_done); w++)
                nanosleep(&ms, NULL);
        }
    }
    sigaction(sig, &fatal_old[sig], NULL);
    /* a fault comes back by itself when the instruction runs again */
    int fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
    if (!fault || si == NULL || si->si_code <= 0)
        raise(sig);
    errno = saved_errno;
}

/* Installs fatal_handler for signal sig when the program leaves it at its
 * default (a crash signal: unless it ignores it).  A signal the kernel
 * refuses is left alone. */
static void fatal_take(int sig, int crash, const struct sigaction *sa)
{
    struct sigaction *old = &fatal_old[sig];
    if (sig > 0 && sig < NSIG && sigaction(sig, NULL, old) == 0 &&
        (crash ? old->sa_handler != SIG_IGN
               : !(old->sa_flags & SA_SIGINFO) && old->sa_handler == SIG_DFL))
        sigaction(sig, sa, NULL);
}

/* Installs fatal_handler for the crash signals a program does not ignore
 * and the other ending signals, real-time ones included, it leaves at
 * their default. */
static void fatal_install(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = fatal_handler;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigemptyset(&sa.sa_mask);
    for (unsigned i = 0; i < NFATAL; i++)
        fatal_take(fatal_sigs[i], i < NCRASH, &sa);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        fatal_take(sig, 0, &sa);
}

/* ---- start, fork, shutdown ---------------------------------------------- */

static int rt_start(void);

static void rt_start_once(void)
{
    (void)rt_start();
}

/* Starts the recorder if it has not started; returns 0 or the start error. */
RP_HIDDEN int rp_rt_start(void)
{
    pthread_once(&rt_once, rt_start_once);
    return rt_start_err;
}

static uint64_t env_u64(const char *name, uint64_t def, uint64_t lo, uint64_t hi)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return def;
    char *e;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 0);
    if (errno || *e || v < lo || v > hi) {
        rt_warn("ignoring %s: not a number in range", name, 0);
        return def;
    }
    return v;
}

/* Parses a class list like "func,lock" ("all" for every class); "-wait"
 * takes a class away, from all when the list names none to add. */
static uint32_t parse_classes(const char *s)
{
    static const char *const names[] = {"func", "point", "lock", "io", "timer", "user", "wait"};
    uint32_t mask = 0, off = 0;
    if (s && *s == '-')
        mask = RP_CLASS_BIT_ALL;
    while (s && *s) {
        int neg = *s == '-';
        s += neg;
        size_t n = strcspn(s, ",");
        int ok = 0;
        uint32_t bits = 0;
        if (n == 3 && !strncmp(s, "all", 3)) {
            bits |= RP_CLASS_BIT_ALL;
            ok = 1;
        }
        for (unsigned i = 0; i < sizeof(names) / sizeof(names[0]); i++)
            if (strlen(names[i]) == n && !strncmp(s, names[i], n)) {
                bits |= 1u << i;
                ok = 1;
            }
        if (neg)
            off |= bits;
        else
            mask |= bits;
        if (!ok)
            rt_warn("RANKPROF_CLASSES: unknown class in '%s'", s, 0);
        s += n;
        if (*s == ',')
            s++;
    }
    return mask & ~off;
}

/*
 * The run this process belongs to (INFO "run", docs/trace-format.md): the
 * mark's value when it inherited one (a child, an exec), else a new id made
 * from the pid, the wall clock and an address (ASLR), 16 hex digits.  A
 * forked child keeps its parent's in memory.  Cannot fail.
 */
static void run_id_take(const char *mark)
{
    size_t n = mark ? strspn(mark, "0123456789abcdef") : 0;
    if (n == 16 && !mark[16]) {
        memcpy(rt_run, mark, 17);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t h = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) * 0xc2b2ae3d27d4eb4full;
    h ^= (uint64_t)(uintptr_t)&ts * 0x165667b19e3779f9ull;
    h ^= h >> 29;
    snprintf(rt_run, sizeof(rt_run), "%016llx", (unsigned long long)h);
}

/*
 * Opens the trace file.  The first recorded process of a run takes the name
 * as given and marks the environment; its children (fork or exec) write
 * NAME.PID, and NAME.PID.N if that exists, so no process overwrites
 * another's trace.  Processes that are not parent and child can both think
 * they are first (MPI ranks, a worker pool started by a shell, which does
 * not pass the mark on): the one writing the name holds an exclusive flock
 * on it for its life (its forked children too, which share the open file),
 * and a process that finds it held takes NAME.PID instead.  Only a name no
 * live process holds is truncated and reused.  The suffixed names are
 * created with O_EXCL, so they are never shared either.
 */
static int open_output(int child)
{
    const char *base = getenv("RANKPROF_OUTPUT");
    if (!base || !*base)
        base = "rankprof.data";
    const char *mark = getenv("RANKPROF_CLAIMED");
    int first = !child && !mark;
    if (!child)
        run_id_take(mark);
    if (first) {
        snprintf(rp_rt.path, sizeof(rp_rt.path), "%s", base);
        rp_rt.fd = open(rp_rt.path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
        setenv("RANKPROF_CLAIMED", rt_run, 1);
        if (rp_rt.fd >= 0 && flock(rp_rt.fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
            syscall(SYS_close, rp_rt.fd); /* a live process writes it */
            rp_rt.fd = -1;
            first = 0;
        } else if (rp_rt.fd >= 0 && ftruncate(rp_rt.fd, 0) < 0) {
            syscall(SYS_close, rp_rt.fd); /* not a regular file we may reuse */
            rp_rt.fd = open(rp_rt.path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        }
    }
    if (!first) {
        for (int i = 0; i < 1000; i++) {
            if (i == 0)
                snprintf(rp_rt.path, sizeof(rp_rt.path), "%s.%d", base, (int)getpid());
            else
                snprintf(rp_rt.path, sizeof(rp_rt.path), "%s.%d.%d", base, (int)getpid(), i);
            rp_rt.fd = open(rp_rt.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (rp_rt.fd >= 0 || errno != EEXIST)
                break;
        }
    }
    if (rp_rt.fd < 0) {
        rt_warn("cannot open %s, nothing will be recorded", rp_rt.path, errno);
        return RP_EIO;
    }
    rp_rt.fd = fd_high(rp_rt.fd);
    struct stat st;
    if (fstat(rp_rt.fd, &st) == 0) {
        out_dev = st.st_dev;
        out_ino = st.st_ino;
    }
    uint8_t hdr[RP_FILE_HDR_SIZE];
    rp_file_header(hdr);
    struct iovec iov = {hdr, sizeof(hdr)};
    out_writev(&iov, 1);
    return 0;
}

/* Writes the chunks every trace starts with. */
static void out_prologue(void)
{
    out_info();
    out_maps();
    out_clock();
}

static void atfork_prepare(void)
{
    rp_own_lock(&rp_rt.lock);
}

static void atfork_parent(void)
{
    rp_own_unlock(&rp_rt.lock);
}

/*
 * In the child only the forking thread exists.  The parent's buffers are the
 * parent's to write, so the child forgets them (their memory stays mapped:
 * a bounded, one-time leak per fork) and starts its own trace.
 */
static void atfork_child(void)
{
    pthread_mutex_init(&rp_rt.lock, NULL);
    pthread_cond_init(&rp_rt.wake, NULL);
    pthread_cond_init(&rp_rt.space, NULL);
    pthread_mutex_init(&rp_rt.drain_lock, NULL);
    pthread_mutex_init(&rp_rt.fd_lock, NULL); /* the writer may have held it */
    rp_rt.writer_running = 0;
    rp_rt.sync_write = 1;
    rp_rt.waiters = 0;
    rp_rt.threads = NULL;
    rp_rt.fd = -1;
    uint16_t *g = atomic_exchange(&stream_gen, NULL); /* the child's trace: one thread */
    if (g)
        munmap(g, (size_t)(RP_TID_MASK + 1) * sizeof(*g));
    atomic_store(&rp_rt.failed, 0);
    rp_rt.events_written = rp_rt.lost_total = 0;
    rp_enc_free(&rp_rt.enc);
    if (rp_rt.direct)
        rp_direct_atfork_child();
    if (rp_enc_init(&rp_rt.enc, describe_site, NULL) < 0 || open_output(1) < 0) {
        atomic_store(&rp_rt.mask, 0);
        return;
    }
    rp_rt.enc.lock_name = rp_lock_name_of;
    rp_rt.enc.func_start = rp_funcs_start_of;
    if (!rp_rt.direct)
        rp_offcpu_atfork_child();
    rp_ctl_atfork_child();
    out_prologue();
    if (rp_self) {
        /* A fresh tbuf: the old one's ring is shared state with a writer
         * that does not exist here. */
        rp_self = NULL;
        pthread_setspecific(rp_rt.key, NULL);
    }
}
/* ---- the cost of an event (calib.h) -------------------------------------- */

#define CALIB_CALLS  1000 /* calls per round */
#define CALIB_ROUNDS 15

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/*
 * Measures the recorder's cost per event (the model is in calib.h): rounds
 * of CALIB_CALLS calls of the instrumented empty function, recorded by the
 * real hooks into a scratch buffer that is never written out, alternate
 * with rounds of the uninstrumented one.  With the time per call of each
 * (the minimum over the rounds: a round that a preemption or an interrupt
 * hit only counts if no round was clean)
 *
 *     pair = per call (instrumented) - per call (uninstrumented)
 *     self = median over every recorded call of (exit stamp - enter stamp)
 *     spread = 95th percentile of the same - self
 *
 * about 1 ms in all.  Runs in rt_start, before recording begins (the mask
 * is off, so no other thread records; it is set to "func" for the
 * measurement and put back), with the calling thread's rp_self pointing to
 * the scratch buffer.  Fails silently: when memory is short or no round
 * recorded exactly its calls (a signal handler ran instrumented code), *o
 * stays zero and the trace says nothing about overhead (no compensation).
 * Invariant on success: 0 <= self <= pair.
 */
static void measure_overhead(struct rp_overhead *o)
{
    static struct rp_tbuf scratch; /* big (the encoder's state): not on the stack */
    size_t cap = 2 * CALIB_CALLS + 1024;
    struct rp_raw *buf = malloc(cap * sizeof(*buf));
    uint64_t *self = malloc((size_t)CALIB_ROUNDS * CALIB_CALLS * sizeof(*self));
    size_t nself = 0;
    double best_a = 1e300, best_b = 1e300;
    unsigned used = 0;

    memset(o, 0, sizeof(*o));
    if (!buf || !self)
        goto out;
    struct rp_tbuf *saved = rp_self;
    uint32_t saved_mask = atomic_load(&rp_rt.mask);
    memset(&scratch, 0, sizeof(scratch));
    scratch.base = buf;
    scratch.end = buf + cap;
    rp_self = &scratch;
    atomic_store(&rp_rt.mask, RP_CLASS_BIT_FUNC);
    for (unsigned r = 0; r < CALIB_ROUNDS; r++) {
        rp_pos_set(&scratch, buf);
        for (unsigned i = 0; i < CALIB_CALLS; i++)
            rp_calib_leaf();
        size_t n = (size_t)(scratch.pos - buf);
        uint64_t b0 = rp_ticks();
        for (unsigned i = 0; i < CALIB_CALLS; i++)
            rp_calib_bare();
        uint64_t b1 = rp_ticks();
        int ok = n == 2 * CALIB_CALLS;
        for (size_t i = 0; ok && i < n; i += 2)
            ok = buf[i].word >> RP_RAW_SHIFT == RP_RAW_FUNC_ENTER &&
                 buf[i + 1].word == rp_raw_word(RP_RAW_FUNC_EXIT, buf[i].word) &&
                 buf[i + 1].ticks >= buf[i].ticks;
        if (!ok || buf[n - 2].ticks <= buf[0].ticks)
            continue; /* disturbed: signal handler events, a clock step */
        double a = (double)(buf[n - 2].ticks - buf[0].ticks) / (CALIB_CALLS - 1);
        double b = (double)(b1 - b0) / CALIB_CALLS;
        best_a = a < best_a ? a : best_a;
        best_b = b < best_b ? b : best_b;
        for (size_t i = 0; i < n; i += 2)
            self[nself++] = buf[i + 1].ticks - buf[i].ticks;
        used++;
    }
    atomic_store(&rp_rt.mask, saved_mask);
    rp_self = saved;
    if (!used)
        goto out;
    qsort(self, nself, sizeof(*self), cmp_u64);
    o->pair = best_a > best_b ? best_a - best_b : 0;
    o->self = (double)self[nself / 2];
    /* An empty call's compensated span lies in [0, spread] 95 times in 100:
     * the analysis counts a span no longer than that as below resolution. */
    o->spread = (double)(self[nself * 95 / 100] - self[nself / 2]);
    if (o->self > o->pair)
        o->self = o->pair;
    o->rounds = used;
out:
    free(buf);
    free(self);
}

/* The once-only start.  Sets rt_start_err on failure (nothing recorded). */
static int rt_start(void)
{
    rp_rt.quiet = getenv("RANKPROF_QUIET") != NULL;
    const char *mode = getenv("RANKPROF_MODE");
    rp_rt.direct = mode && !strcmp(mode, "direct");
    if (mode && !rp_rt.direct && strcmp(mode, "trace") != 0)
        rt_warn("RANKPROF_MODE=%s is not 'trace' or 'direct'; using trace", mode, 0);
    if (rp_rt.direct && rp_direct_init() < 0) {
        rt_start_err = RP_ENOMEM;
        return RP_ENOMEM;
    }
    rp_rt.clock_name = rp_clock_init();
    rp_rt.freq = rp_clock_calibrate(2);
    rp_rt.start_ticks = rp_ticks();
    rp_rt.start_mono = rp_mono_ns();
    uint64_t bufsize = env_u64("RANKPROF_BUFSIZE", 256 * 1024, 4096, 1u << 30);
    rp_rt.bufrecs = (uint32_t)(bufsize / sizeof(struct rp_raw));
    rp_rt.nbuf = (uint32_t)env_u64("RANKPROF_NBUF", 4, 2, RP_NBUF_MAX);
    rp_rt.exit_timeout_ms = (unsigned)env_u64("RANKPROF_EXIT_TIMEOUT_MS", 10000, 0, 3600000);
    rp_rt.flush_ms = (unsigned)env_u64("RANKPROF_FLUSH_MS", 200, 0, 3600000);
    rp_rt.writer_delay_us = (unsigned)env_u64("RANKPROF_TEST_WRITER_DELAY_US", 0, 0, 1000000);
    const char *pol = getenv("RANKPROF_POLICY");
    rp_rt.drop = pol && !strcmp(pol, "drop");
    const char *cls = getenv("RANKPROF_CLASSES");
    uint32_t mask = cls ? parse_classes(cls) : RP_CLASS_BIT_ALL;
    /* before the file's INFO, which carries the result; not in direct mode,
     * whose statistics are not compensated (docs/performance.md) */
    if (!rp_rt.direct && env_u64("RANKPROF_CALIBRATE", 1, 0, 1))
        measure_overhead(&rt_overhead);

    rp_rt.out = malloc(rp_enc_bound(rp_rt.bufrecs));
    out_recs = rp_rt.bufrecs;
    /* before the INFO, which names the source, and before any thread is
     * created (they inherit the context-switch events) */
    if (!rp_rt.direct)
        rp_offcpu_start();
    if (!rp_rt.out || rp_enc_init(&rp_rt.enc, describe_site, NULL) < 0 ||
        pthread_key_create(&rp_rt.key, thread_exit) != 0) {
        rt_start_err = RP_ENOMEM;
        return RP_ENOMEM;
    }
    rp_rt.enc.lock_name = rp_lock_name_of;
    rp_rt.enc.func_start = rp_funcs_start_of;
    if ((rt_start_err = open_output(0)) < 0)
        return rt_start_err;
    out_prologue();
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    /* the control signal first: fatal_install takes the real-time signals
     * still at their default */
    mask = rp_ctl_start(mask); /* 0 when started off (record --off) */
    if (env_u64("RANKPROF_SIGNALS", 1, 0, 1))
        fatal_install();
    rp_funcs_start(rp_rt.quiet); /* function filter, throttle: before the first event */
    atomic_store(&rp_rt.mask, mask);
    rp_sites_sync_classes(); /* switched-off classes: the sites' off bytes */
    return 0;
}

/* Direct mode's result: THREAD, DEFS and STATS chunks, and the printed
 * table when RANKPROF_PRINT is set. */
static void direct_finish(void)
{
    rp_direct_exit_self(); /* main's frames, after exit() from deep down */
    int64_t n = rp_direct_write(out_chunk);
    if (n < 0)
        rt_warn("direct mode: %s; the statistics are not saved", rp_strerror((int)n), 0);
    else
        rp_rt.events_written = (uint64_t)n;
    const char *pr = getenv("RANKPROF_PRINT");
    if (pr && *pr && strcmp(pr, "0") != 0)
        rp_direct_print(stderr, 1e9 / rp_rt.freq);
}

/*
 * The final flush.  Recording stops (mask = 0), the calling thread publishes
 * its partial buffer, and the writer gets until the deadline to write what
 * is published.  Other threads still running keep their partial buffers:
 * taking them would race with their appends.  If the writer finishes in time
 * the trace gets its closing MAPS, CLOCK and END chunks; if not, the file
 * ends without END and the analyzer says the run ended abnormally.
 */
RP_HIDDEN void rp_rt_shutdown(void)
{
    static atomic_int once;
    uint64_t end_ticks = rp_ticks(); /* the process ends now, not after the flush */
    if (atomic_exchange(&once, 1) || rt_start_err ||
        __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) < 0 || atomic_load(&rp_rt.fatal))
        return; /* after a fatal signal the trace has its END already */
    atomic_store(&rp_rt.mask, 0);
    /* the calling thread's buffer and its counted losses are written here
     * (direct mode: direct_finish does it); the buffer not when the exit
     * interrupted its own append (a handler calling exit), the losses
     * always: that append never resumes, and the writer is gone by then */
    struct rp_tbuf *t = rp_rt.direct ? NULL : rp_self;
    struct rp_tbuf *self = t;
    if (t && t->guard)
        t = NULL;
    if (t && t->base && t->pos > t->base) {
        t->guard = 1;
        buf_publish(t);
    }
    rp_own_lock(&rp_rt.lock);
    atomic_store(&rp_rt.stopped, 1);
    int running = rp_rt.writer_running;
    pthread_cond_broadcast(&rp_rt.wake);
    pthread_cond_broadcast(&rp_rt.space);
    rp_own_unlock(&rp_rt.lock);

    int done = 1;
    if (running) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += rp_rt.exit_timeout_ms / 1000;
        ts.tv_nsec += (long)(rp_rt.exit_timeout_ms % 1000) * 1000000;
        if (ts.tv_nsec >= 1000000000) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000;
        }
        done = pthread_timedjoin_np(rp_rt.writer, NULL, &ts) == 0;
    } else {
        rp_own_lock(&rp_rt.drain_lock);
        while (drain_once())
            ;
        rp_own_unlock(&rp_rt.drain_lock);
    }
    if (!done) {
        rt_warn("final flush of %s timed out; the trace ends early", rp_rt.path, 0);
        rp_ctl_shutdown();
        return;
    }
    if (self)
        write_pending_loss(self); /* the writer is gone: this thread writes */
    if (!rp_rt.direct) { /* (the writer is gone: the edges left are this thread's to write) */
        rp_own_lock(&rp_rt.lock);
        for (struct rp_tbuf *x = rp_rt.threads; x; x = x->next)
            win_catch_up(x, UINT64_MAX);
        rp_own_unlock(&rp_rt.lock);
    }
    if (rp_rt.direct)
        direct_finish();
    rp_funcs_write(out_chunk); /* throttled functions' call counts */
    if (!rp_rt.direct)
        out_end_info(1);
    out_maps();
    out_clock();
    out_end(RP_END_EXIT, 0, end_ticks);
    if (atomic_load(&rp_rt.failed) && unwritten) {
        char num[32];
        snprintf(num, sizeof(num), "%llu", (unsigned long long)unwritten);
        rt_warn("%s events could not be written to the trace", num, 0);
    }
    int fd = rp_rt.fd;
    /* first: the close interposer would move it (atomic: other threads'
     * close() compare with it) */
    __atomic_store_n(&rp_rt.fd, -1, __ATOMIC_RELAXED);
    close(fd);
    /* The writer is gone: its state can go too (the threads' buffers stay
     * mapped, since threads still running may touch them). */
    rp_own_lock(&rp_rt.lock);
    for (struct rp_tbuf *x = rp_rt.threads; x; x = x->next) {
        rp_enc_thread_free(&x->enc);
        rp_offq_free(&x->offq);
    }
    rp_own_unlock(&rp_rt.lock);
    rp_enc_free(&rp_rt.enc);
    free(rp_rt.out);
    rp_rt.out = NULL;
    rp_ctl_shutdown();
}

__attribute__((constructor)) static void rt_ctor(void)
{
    rp_initing = 1;
    pthread_once(&rt_once, rt_start_once);
    /* constructors run on the main thread: its pthread_exit is seen */
    if (!rt_start_err && !rp_rt.direct && pthread_key_create(&main_key, main_exit) == 0)
        pthread_setspecific(main_key, &main_key);
    rp_initing = 0;
}

__attribute__((destructor)) static void rt_dtor(void)
{
    /* the join of the writer is a cancellation point: a thread with a
     * cancel pending that calls exit() must not be cancelled in the flush */
    int cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    rp_rt_shutdown();
    pthread_setcancelstate(cs, &cs);
}

/* ---- public API ---------------------------------------------------------- */

RP_API uint32_t rp_classes_set(uint32_t on, uint32_t off)
{
    uint32_t old = atomic_load(&rp_rt.mask), nw;
    do {
        if (atomic_load(&rp_rt.stopped) || rt_start_err)
            return old;
        nw = (old | on) & ~off & RP_CLASS_BIT_ALL;
    } while (!atomic_compare_exchange_weak(&rp_rt.mask, &old, nw));
    rp_sites_sync_classes();
    return old;
}

RP_API int rp_flush(void)
{
    struct rp_tbuf *t = rp_self;
    if (rt_start_err || atomic_load(&rp_rt.stopped))
        return RP_EBUSY;
    if (t && !t->guard && t->base) {
        t->guard = 1;
        struct rt_section sec;
        section_enter(&sec);
        if (t->pos > t->base) {
            uint64_t want = atomic_load(&t->produced) + 1;
            buf_publish(t);
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

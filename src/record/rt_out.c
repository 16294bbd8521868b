// SPDX-License-Identifier: MIT
/*
 * rt_out.c - the recorder's output: the trace descriptor (kept out of the
 * program's way), chunks written whole, and what the file says about the
 * run: INFO, CLOCK, MAPS, THREAD, the losses, END.  Called by the writer
 * and by start-up and shutdown (rt_start.c); calls nothing of theirs.
 */
#define _GNU_SOURCE
#include "rt_int.h"

#include <assert.h>
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

/* ---- output ------------------------------------------------------------- */

/*
 * The trace descriptor belongs to the recorder, but the program may close
 * it or dup2 something over its number (daemons close every descriptor,
 * some programs dup2 stderr over 3..63).  So it is opened out of the way
 * (rp_rt_fd_high: a high number, close-on-exec), the close/dup2/dup3 interposers
 * move it, never below that number, before the program takes its number
 * (rp_rt_fd_taken), and before
 * every write fstat says whether it is still the file opened (rp_out_dev,
 * rp_out_ino): a descriptor taken past the interposers (the raw system call,
 * close_range) is then noticed and the file reopened by its path in append
 * mode, or recording stops with a message and the count of the events not
 * written.  rp_rt.fd_lock (in struct rp_rt, so locks.c leaves it
 * unrecorded) makes a write and a move one after the other.  The fstat
 * costs about 0.2 us per chunk, a chunk being thousands of events.
 */
RP_HIDDEN dev_t rp_out_dev;
RP_HIDDEN ino_t rp_out_ino;
RP_HIDDEN uint64_t rp_rt_unwritten; /* events not written because writing failed */
/* Drops counted where no thread state holds them (enum rp_loss; relaxed:
 * counters, read once at the end) and the records the encoder could not
 * keep (writer only). */
RP_HIDDEN _Atomic uint64_t rp_rt_loss_nostate[RP_LOSS_N];
RP_HIDDEN uint64_t rp_rt_orphans_retired; /* exits left out at windows' edges, of retired threads */
RP_HIDDEN uint64_t rp_rt_loss_retired[RP_LOSS_N]; /* of threads retired (under rp_rt.lock) */
RP_HIDDEN uint64_t rp_rt_unencoded;

/* The bottom of the trace descriptor's range, set where rp_rt_fd_high
 * first placed it (1000, or 24 below the soft descriptor limit then); 0
 * before.  The trace is never moved or reopened below it: a program that
 * lowers its limit afterwards keeps its own numbers (fd_move_high). */
static int fd_lo;

/* Moves fd to a high number, close-on-exec (the old one is closed).
 * Returns the new number, or fd itself when that fails. */
RP_HIDDEN int rp_rt_fd_high(int fd)
{
    struct rlimit rl;
    long lo = 1000;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
        (rlim_t)lo + 24 > rl.rlim_cur)
        lo = rl.rlim_cur > 48 ? (long)rl.rlim_cur - 24 : 3;
    if (fd_lo)
        lo = fd_lo;
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, lo);
    if (nfd >= 0 && !fd_lo)
        fd_lo = (int)lo;
    if (nfd < 0)
        nfd = fcntl(fd, F_DUPFD_CLOEXEC, 3); /* at least close-on-exec */
    if (nfd < 0)
        return fd;
    syscall(SYS_close, fd); /* not close(): the interposer would move it */
    return nfd;
}

RP_HIDDEN int rp_rt_fd_low(int fd)
{
    return fd_lo && fd < fd_lo;
}

RP_HIDDEN int rp_rt_fd_room(int fd)
{
    int d = fcntl(fd, F_DUPFD_CLOEXEC, fd_lo ? fd_lo : 3);
    if (d < 0)
        return 0;
    syscall(SYS_close, d); /* not close(): the interposer would move it */
    return 1;
}

/* Moves fd into the trace's range (fd_lo and up), close-on-exec, the old
 * one closed.  Returns the new number, or -1 when the range has no room
 * (the program lowered its descriptor limit below it, or took every
 * number in it), fd then left open. */
static int fd_move_high(int fd)
{
    int nfd = fcntl(fd, F_DUPFD_CLOEXEC, fd_lo ? fd_lo : 3);
    if (nfd < 0)
        return -1;
    syscall(SYS_close, fd); /* not close(): the interposer would move it */
    return nfd;
}

/* The older trace out_fresh (rt_start.c) replaced: its descriptor, parked
 * high until the writer closes it, and which file it is (the program may
 * have closed that number and opened another file as it: fstat tells).
 * Under fd_lock. */
static int old_fd = -1;
static dev_t old_dev;
static ino_t old_ino;

RP_HIDDEN void rp_rt_out_old_park(int fd, dev_t dev, ino_t ino)
{
    rp_own_lock(&rp_rt.fd_lock);
    old_dev = dev;
    old_ino = ino;
    __atomic_store_n(&old_fd, rp_rt_fd_high(fd), __ATOMIC_RELAXED);
    rp_own_unlock(&rp_rt.fd_lock);
}

RP_HIDDEN int rp_rt_out_old_parked(void)
{
    return __atomic_load_n(&old_fd, __ATOMIC_RELAXED) >= 0;
}

RP_HIDDEN void rp_rt_out_old_close(void)
{
    struct stat st;
    if (__atomic_load_n(&old_fd, __ATOMIC_RELAXED) < 0)
        return;
    rp_own_lock(&rp_rt.fd_lock);
    if (old_fd >= 0 && fstat(old_fd, &st) == 0 && st.st_dev == old_dev && st.st_ino == old_ino)
        syscall(SYS_close, old_fd); /* the last reference: its pages are freed here */
    __atomic_store_n(&old_fd, -1, __ATOMIC_RELAXED);
    rp_own_unlock(&rp_rt.fd_lock);
}

/* Called by the close, dup2 and dup3 interposers (rt.h: rp_rt_fd_check)
 * before the program takes descriptor fd when it is the trace's: the
 * trace moves to another number of its range (fd_lo and up).  Waits at
 * most about 100 ms for a write in progress (a signal handler may have
 * interrupted this thread inside one); if it cannot move, the check
 * before the next write reopens (or stops). */
RP_HIDDEN void rp_rt_fd_taken(int fd)
{
    struct timespec us = {0, 100000};
    struct rt_section sec; /* (no handler's write waits for this thread) */
    int locked = 0;
    section_enter(&sec);
    for (int i = 0; i < 1000 && !(locked = rp_own_trylock(&rp_rt.fd_lock) == 0); i++)
        nanosleep(&us, NULL);
    if (locked && fd == rp_rt.fd) {
        int nfd = fcntl(fd, F_DUPFD_CLOEXEC, fd_lo ? fd_lo : 3);
        if (nfd >= 0)
            __atomic_store_n(&rp_rt.fd, nfd, __ATOMIC_RELAXED);
    }
    if (locked)
        rp_own_unlock(&rp_rt.fd_lock);
    section_leave(&sec);
}

/* Checks, with fd_lock held, that rp_rt.fd is still the trace file, and
 * reopens the file by its path (append, no symlink, close-on-exec, in the
 * trace's range: fd_move_high) if it is not.  The number the program took
 * is left to it.  A program taking numbers by the raw system call in
 * another thread may take the one just opened before it is checked: that
 * number is then the program's (left open) and the open is tried again, at
 * most eight times.  Returns 0, or -1 when the path no longer names the
 * trace file, it cannot be opened, or the range has no room for it (the
 * program lowered its descriptor limit): recording stops, never on a
 * number of the program's. */
static int out_check(void)
{
    struct stat st;
    if (fstat(rp_rt.fd, &st) == 0 && st.st_dev == rp_out_dev && st.st_ino == rp_out_ino)
        return 0;
    for (int i = 0; i < 8; i++) {
        if (stat(rp_rt.path, &st) != 0 || st.st_dev != rp_out_dev || st.st_ino != rp_out_ino)
            break; /* removed or replaced: the trace cannot be found again */
        int fd = open(rp_rt.path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0)
            break;
        int hfd = fd_move_high(fd);
        if (hfd < 0) {
            syscall(SYS_close, fd);
            char fmt[256]; /* (the path through %s: never a format) */
            snprintf(fmt, sizeof(fmt),
                     "the program closed or replaced the descriptor of %%s and the file cannot "
                     "be reopened at %d or above, out of the program's way (its descriptor "
                     "limit is lower, or every number is taken); recording stops",
                     fd_lo ? fd_lo : 3);
            rp_rt_warn(fmt, rp_rt.path, 0);
            return -1;
        }
        fd = hfd;
        if (fstat(fd, &st) == 0 && st.st_dev == rp_out_dev && st.st_ino == rp_out_ino) {
            __atomic_store_n(&rp_rt.fd, fd, __ATOMIC_RELAXED);
            rp_rt_warn("the program closed or replaced the descriptor of %s; reopened it",
                       rp_rt.path, 0);
            return 0;
        }
    }
    rp_rt_warn("the program closed or replaced the descriptor of %s and the file cannot be "
               "reopened; recording stops",
               rp_rt.path, 0);
    return -1;
}

RP_HIDDEN void rp_xfsz_hold(struct rp_xfsz *x)
{
    sigset_t xfsz, pending;
    sigemptyset(&xfsz);
    sigaddset(&xfsz, SIGXFSZ);
    pthread_sigmask(SIG_BLOCK, &xfsz, &x->old);
    x->had = sigismember(&x->old, SIGXFSZ) == 1 && sigpending(&pending) == 0 &&
             sigismember(&pending, SIGXFSZ) == 1;
}

RP_HIDDEN void rp_xfsz_release(struct rp_xfsz *x, int efbig)
{
    static const struct timespec now = {0, 0};
    int err = errno;
    if (efbig && !x->had) { /* ours, sent to this thread: taken back */
        sigset_t xfsz;
        sigemptyset(&xfsz);
        sigaddset(&xfsz, SIGXFSZ);
        sigtimedwait(&xfsz, NULL, &now);
    }
    /* unblocked alone, not the old mask set back: that would also unblock
     * the cancellation signal a section blocks (rt.c, section_enter) */
    if (sigismember(&x->old, SIGXFSZ) != 1) {
        sigset_t xfsz;
        sigemptyset(&xfsz);
        sigaddset(&xfsz, SIGXFSZ);
        pthread_sigmask(SIG_UNBLOCK, &xfsz, NULL);
    }
    errno = err;
}

RP_HIDDEN ssize_t rp_own_writev(int fd, const struct iovec *iov, int n)
{
    struct rp_xfsz x;
    rp_xfsz_hold(&x);
    ssize_t w = writev(fd, iov, n);
    rp_xfsz_release(&x, w < 0 && errno == EFBIG);
    return w;
}

RP_HIDDEN int rp_own_write_all(int fd, const void *buf, size_t len)
{
    const uint8_t *p = buf;
    while (len) {
        struct iovec v = {(void *)p, len};
        ssize_t w = rp_own_writev(fd, &v, 1);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* Writes all of iov to the trace file.  On the first failure the recorder
 * stops writing (rp_rt.failed) and says so once; data is then lost, never
 * the program. */
RP_HIDDEN __thread struct rp_out_sink *rp_out_sink;

/* Appends iov to the calling thread's sink (rp_out_sink). */
static RP_NOINLINE void sink_writev(struct rp_out_sink *k, const struct iovec *iov, int n)
{
    for (int i = 0; i < n && !k->failed; i++) {
        if (k->len + iov[i].iov_len > k->cap) {
            size_t ncap = (k->len + iov[i].iov_len) * 2;
            uint8_t *np = realloc(k->p, ncap);
            if (!np) {
                k->failed = 1;
                return;
            }
            k->p = np;
            k->cap = ncap;
        }
        memcpy(k->p + k->len, iov[i].iov_base, iov[i].iov_len);
        k->len += iov[i].iov_len;
    }
}

RP_HIDDEN void rp_out_writev(struct iovec *iov, int n)
{
    if (unlikely(rp_out_sink != NULL)) {
        sink_writev(rp_out_sink, iov, n);
        return;
    }
    /* atomic: the interposers move rp_rt.fd (under fd_lock, taken below) */
    if (atomic_load(&rp_rt.failed) || __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) < 0)
        return;
    rp_own_lock(&rp_rt.fd_lock);
    if (out_check() < 0) {
        atomic_store(&rp_rt.failed, EBADF);
        n = 0;
    }
    while (n > 0) {
        ssize_t w = rp_own_writev(rp_rt.fd, iov, n);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            atomic_store(&rp_rt.failed, errno);
            rp_rt_warn("writing %s failed, recording stops", rp_rt.path, errno);
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

RP_HIDDEN void rp_out_chunk(uint32_t type, const void *payload, size_t len)
{
    if (unlikely(rp_ring_on) && !rp_out_sink) { /* --ring: kept in memory */
        rp_ring_chunk(type, payload, len);
        return;
    }
    if (unlikely(atomic_load_explicit(&rp_rot_on, memory_order_relaxed)) &&
        !rp_out_sink) { /* --max-size, or not known yet */
        rp_rot_chunk(type, payload, len);
        return;
    }
    uint8_t hdr[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(hdr, type, payload, (uint32_t)len);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, len}};
    rp_out_writev(iov, 2);
}

RP_HIDDEN void rp_out_clock(void)
{
    uint8_t p[24];
    struct timespec rt;
    clock_gettime(CLOCK_REALTIME, &rt);
    rp_put64(p, rp_ticks());
    rp_put64(p + 8, rp_mono_ns());
    rp_put64(p + 16, (uint64_t)rt.tv_sec * 1000000000u + (uint64_t)rt.tv_nsec);
    rp_out_chunk(RP_CH_CLOCK, p, sizeof(p));
}

/*
 * Reads a whole small file (procfs) into pages of its own (rp_map_grow,
 * *cap of them: rp_map_free gives them back); NULL on error or when it is
 * over RP_CHUNK_MAX.  No malloc: the final flush that reads the maps may
 * run in a program's signal handler that calls _exit, which may have
 * interrupted malloc.
 */
static char *read_file(const char *path, size_t *len, size_t *cap)
{
    void *buf = NULL;
    size_t n = 0;
    *len = *cap = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    int failed = 0;
    while (!(failed = rp_map_grow(&buf, cap, n + 1, RP_CHUNK_MAX) < 0)) {
        ssize_t r = read(fd, (char *)buf + n, *cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (failed) { /* out of pages, or the file is over RP_CHUNK_MAX */
        rp_map_free(buf, *cap);
        *cap = 0;
        return NULL;
    }
    *len = n;
    return buf;
}

/* MAPS: the executable, file-backed mappings, which is all the analyzer
 * needs to name code addresses. */
RP_HIDDEN void rp_out_maps(void)
{
    size_t len, cap, o = 0;
    /* thread-self: after main's pthread_exit, /proc/self (the main thread, a
     * zombie) has no maps left */
    char *m = read_file("/proc/thread-self/maps", &len, &cap);
    if (!m || !len) {
        rp_map_free(m, cap);
        m = read_file("/proc/self/maps", &len, &cap);
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
    rp_out_chunk(RP_CH_MAPS, m, o);
    rp_map_free(m, cap);
}

RP_HIDDEN void rp_rt_maps_now(void)
{
    if (rp_rt_start_err || atomic_load(&rp_rt.stopped) ||
        __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) < 0 || (rp_self && rp_self->guard))
        return;
    struct rt_section sec; /* (writev is a cancellation point, under fd_lock) */
    section_enter(&sec);
    rp_out_maps();
    section_leave(&sec);
}

RP_HIDDEN int rp_rt_info_now(const char *key, const char *val)
{
    uint8_t b[512];
    size_t len = 0;
    if (rp_rt_start_err || rp_rt.direct || atomic_load(&rp_rt.stopped) ||
        __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) < 0 || (rp_self && rp_self->guard))
        return RP_EINVAL;
    if (rp_info_put(b, sizeof(b), &len, key, val, strlen(val)) < 0)
        return RP_EINVAL;
    struct rt_section sec;
    section_enter(&sec);
    rp_out_chunk(RP_CH_INFO, b, len);
    section_leave(&sec);
    return 0;
}

RP_HIDDEN char rp_rt_run[24]; /* the run's id (run_id_take), "" before the file is opened */

RP_HIDDEN char *rp_fmt_fixed(char *buf, size_t n, double v, unsigned dec)
{
    static const uint64_t pow10[] = {1, 10, 100, 1000, 10000, 100000, 1000000};
    assert(dec < sizeof(pow10) / sizeof(pow10[0]));
    v = v > 0 ? (v < 1e12 ? v : 1e12) : 0; /* (NaN too: 0) */
    uint64_t x = (uint64_t)(v * (double)pow10[dec] + 0.5);
    if (dec)
        snprintf(buf, n, "%llu.%0*llu", (unsigned long long)(x / pow10[dec]), (int)dec,
                 (unsigned long long)(x % pow10[dec]));
    else
        snprintf(buf, n, "%llu", (unsigned long long)x);
    return buf;
}

RP_HIDDEN void rp_out_info(void)
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
    size_t acap;
    char *argv = read_file("/proc/self/cmdline", &n, &acap);
    if (argv) {
        rp_info_put(buf, cap, &len, "argv", argv, n < 32768 ? n : 32768);
        rp_map_free(argv, acap);
    }
    snprintf(tmp, sizeof(tmp), "%d", (int)getpid());
    rp_info_put(buf, cap, &len, "pid", tmp, strlen(tmp));
    snprintf(tmp, sizeof(tmp), "%d", (int)getppid());
    rp_info_put(buf, cap, &len, "ppid", tmp, strlen(tmp));
    if (rp_rt_run[0])
        rp_info_put(buf, cap, &len, "run", rp_rt_run, strlen(rp_rt_run));
    if (gethostname(tmp, sizeof(tmp)) == 0) {
        tmp[sizeof(tmp) - 1] = 0;
        rp_info_put(buf, cap, &len, "host", tmp, strlen(tmp));
    }
    if (rp_mpi_rank(tmp, sizeof(tmp)))
        rp_info_put(buf, cap, &len, "rank", tmp, strlen(tmp));
    rp_info_put(buf, cap, &len, "clock", rp_rt.clock_name, strlen(rp_rt.clock_name));
    snprintf(tmp, sizeof(tmp), "%.0f", rp_rt.freq);
    rp_info_put(buf, cap, &len, "freq_hz", tmp, strlen(tmp));
    /* (whole: as recorders before fractional steps wrote it) */
    rp_fmt_fixed(tmp, sizeof(tmp), rp_rt.clock_step,
                 rp_rt.clock_step == (double)(uint64_t)rp_rt.clock_step ? 0 : 3);
    rp_info_put(buf, cap, &len, "clock_step_ticks", tmp, strlen(tmp));
    rp_info_put(buf, cap, &len, "mode", rp_rt.direct ? "direct" : "trace", rp_rt.direct ? 6 : 5);
    rp_info_put(buf, cap, &len, "policy", rp_rt.drop ? "drop" : "wait", rp_rt.drop ? 4 : 4);
    if (rp_rt_overhead.rounds) {
        rp_fmt_fixed(tmp, sizeof(tmp), rp_rt_overhead.pair, 2);
        rp_info_put(buf, cap, &len, "overhead_ticks", tmp, strlen(tmp));
        rp_fmt_fixed(tmp, sizeof(tmp), rp_rt_overhead.self, 2);
        rp_info_put(buf, cap, &len, "overhead_self_ticks", tmp, strlen(tmp));
        rp_fmt_fixed(tmp, sizeof(tmp), rp_rt_overhead.spread, 2);
        rp_info_put(buf, cap, &len, "overhead_spread_ticks", tmp, strlen(tmp));
        /* the writer measures again (rp_rt_measure_late): a reader looks
         * ahead for it before the first events */
        if (rp_rt.calib_late)
            rp_info_put(buf, cap, &len, "overhead_late", "pending", 7);
    }
    /* how off-CPU time is known (offcpu.c), and why perf is not used */
    const char *src = rp_offcpu_source_name(), *oerr = rp_offcpu_error();
    if (!rp_rt.direct) {
        rp_info_put(buf, cap, &len, "offcpu", src, strlen(src));
        if (*oerr)
            rp_info_put(buf, cap, &len, "offcpu_error", oerr, strlen(oerr));
    }
    rp_info_put(buf, cap, &len, "recorder", RP_VERSION_STR, strlen(RP_VERSION_STR));
    rp_out_chunk(RP_CH_INFO, buf, len);
    free(buf);
}

RP_HIDDEN void rp_out_thread(struct rp_tbuf *t)
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
    rp_out_chunk(RP_CH_THREAD, p, 8 + n);
}

static void info_put(void *ctx, const char *key, const char *val)
{
    struct info_buf *ib = ctx;
    rp_info_put(ib->b, sizeof(ib->b), &ib->len, key, val, strlen(val));
}

RP_HIDDEN int rp_kept_add(struct rp_kept *k, const uint8_t *hdr, const void *payload, size_t len,
                          int noalloc)
{
    size_t need = k->len + RP_CHUNK_HDR_SIZE + len;
    if (need > k->cap && noalloc)
        return -1;
    if (need > k->cap) {
        size_t ncap = need * 2;
        uint8_t *np = realloc(k->p, ncap);
        if (!np)
            return -1;
        k->p = np;
        k->cap = ncap;
    }
    memcpy(k->p + k->len, hdr, RP_CHUNK_HDR_SIZE);
    memcpy(k->p + k->len + RP_CHUNK_HDR_SIZE, payload, len);
    k->len = need;
    return 0;
}

/* The drops so far by reason, as lost_REASON keys (the non-zero ones):
 * every thread's counters and those held by none.  in_handler: called in a
 * signal handler, which takes no lock (async-signal-safe then). */
RP_HIDDEN void rp_rt_loss_info(struct info_buf *ib, int in_handler)
{
    static const char *const key[RP_LOSS_N] = {
        [RP_LOSS_FULL] = "lost_full",           [RP_LOSS_STOPPED] = "lost_stopped",
        [RP_LOSS_FAILED] = "lost_failed",       [RP_LOSS_NOMEM] = "lost_nomem",
        [RP_LOSS_REENTERED] = "lost_reentered", [RP_LOSS_GONE] = "lost_gone"};
    uint64_t n[RP_LOSS_N];
    for (unsigned r = 0; r < RP_LOSS_N; r++)
        n[r] = atomic_load_explicit(&rp_rt_loss_nostate[r], memory_order_relaxed);
    /* (the writer retires threads under the lock; a child's handler holds
     * drain_lock, under which its threads retire, and takes no other lock) */
    if (!in_handler)
        rp_own_lock(&rp_rt.lock);
    for (unsigned r = 0; r < RP_LOSS_N; r++)
        n[r] += rp_rt_loss_retired[r];
    for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next)
        for (unsigned r = 0; r < RP_LOSS_N; r++)
            n[r] += __atomic_load_n(&t->why[r], __ATOMIC_RELAXED);
    if (!in_handler)
        rp_own_unlock(&rp_rt.lock);
    char v[24];
    for (unsigned r = 0; r < RP_LOSS_N; r++)
        if (n[r]) {
            rp_u64_dec(v, n[r]);
            info_put(ib, key[r], v);
        }
    if (rp_rt_unencoded) {
        rp_u64_dec(v, rp_rt_unencoded);
        info_put(ib, "lost_unencoded", v);
    }
    if (!in_handler) { /* exits of frames entered before a window (ctl.c) */
        uint64_t o = rp_rt_orphans_retired;
        rp_own_lock(&rp_rt.lock);
        for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next)
            o += t->enc.orphans;
        rp_own_unlock(&rp_rt.lock);
        if (o) {
            rp_u64_dec(v, o);
            info_put(ib, "window_exits", v);
        }
    }
}

/* A second INFO chunk at the end of a run (format 1.3): what is only known
 * then (offcpu.c: lost switch records, the schedstat run-queue delay; the
 * drops by reason).  full: not after a fatal signal, when only what is
 * async-signal-safe may run (in the handler itself, with no writer thread). */
RP_HIDDEN void rp_out_end_info(int full)
{
    struct info_buf ib = {.len = 0};
    if (full) {
        rp_offcpu_end_info(info_put, &ib);
        rp_ctl_info(info_put, &ib, rp_ticks());
    }
    rp_rt_loss_info(&ib, !full && rp_rt.sync_write);
    rp_rt_enc_info(&ib);
    uint32_t ft = atomic_load(&rp_rt.fatal_tid);
    if (ft) { /* the thread a fatal signal hit: its open frames are its stack there */
        char v[24];
        rp_u64_dec(v, ft);
        info_put(&ib, "fatal_tid", v);
    }
    if (ib.len)
        rp_out_chunk(RP_CH_INFO, ib.b, ib.len);
}

/* The END chunk: flags RP_END_*, status the exit status or signal number,
 * ticks when the process ended (exit() began the final flush, the fatal
 * signal arrived): where the analyzer ends the frames still open. */
RP_HIDDEN void rp_out_end(uint32_t flags, int32_t status, uint64_t ticks)
{
    uint8_t end[32];
    rp_put64(end, ticks);
    rp_put64(end + 8, rp_rt.events_written);
    rp_put64(end + 16, rp_rt.lost_total);
    rp_put32(end + 24, (uint32_t)status);
    rp_put32(end + 28, flags);
    rp_out_chunk(RP_CH_END, end, sizeof(end));
}

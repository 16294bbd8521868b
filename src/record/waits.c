// SPDX-License-Identifier: MIT
/*
 * waits.c - blocking calls as wait spans: nanosleep, poll, pthread_join,
 * read on a pipe ... interposed, so that the time a thread spends blocked is
 * a span of its own (kind RP_KIND_WAIT, named after the call) and not the
 * calling function's own work.
 *
 * Interposition works as in locks.c: when librankprof.so is preloaded (or
 * librankprof.a is linked before libc) the program's calls land here, and
 * each one calls the real function found with dlsym(RTLD_NEXT), resolved
 * once by a constructor.  A recorded call is
 *
 *     SITE_BEGIN site    the real call    SITE_END site
 *
 * with the static site of that call (rp_wait_sites[], registered with
 * sites.c as a module of its own, so the encoder describes it like a
 * profile point and direct mode counts it like one).  The span is a callee
 * of the function that called, so that function's exclusive time no longer
 * holds the wait.
 *
 * What is recorded: every call of the functions below while the wait class
 * (RP_CLASS_BIT_WAIT) is on, except those that cannot block, whose time is
 * the caller's own work on the CPU (the kernel's, for it):
 *   - read()/__read_chk()/readv(), accept()/accept4() and the recv family
 *     on a descriptor that cannot block for long: a regular file, a
 *     directory or a block device, or one in non-blocking mode (O_NONBLOCK:
 *     an event loop's sockets); recv with MSG_DONTWAIT.  What a descriptor
 *     is comes from one fstat() and one fcntl(F_GETFL) per descriptor,
 *     cached in fd_kind[] (descriptors below FD_CACHE) and forgotten when
 *     close(), dup2() or dup3() reuse the number or fcntl(F_SETFL) changes
 *     its mode; a descriptor closed behind our back (fclose() closes inside
 *     libc, close_range()) or switched by ioctl(FIONBIO) may keep a stale
 *     entry until its number is closed here again, which only decides
 *     whether one call is a span.  Larger descriptors take the two system
 *     calls per call;
 *   - poll, ppoll, select, pselect and the epoll waits with a zero timeout
 *     (they only look);
 *   - the recorder's own calls: the writer thread's, and those of a thread
 *     inside the recorder (t->guard), pass straight through;
 *   - pthread_cond_wait/timedwait while the lock class is on: locks.c then
 *     records the wait on the condition itself (a wait keyed by the
 *     condition's address, between the release and the re-acquisition of
 *     the mutex).
 * A switched-off wait class costs one load of the class mask and a branch.
 * errno is kept as the real call left it.
 *
 * Cancellation: all of these calls are cancellation points.  A thread
 * cancelled inside one runs a cleanup handler pushed around the real call
 * (RP_WAIT_SPAN, waits.h), which ends the wait span then; the thread then
 * ends as it would.
 *
 * Limits: calls that libc makes internally (sleep() calling nanosleep,
 * system() calling waitpid, fread() calling read) do not pass through the
 * symbol table and are not seen (sleep() itself is); a statically linked
 * executable cannot interpose libc's functions; a sanitizer interceptor
 * that reaches libc by its own means (TSan's sleep and pthread_cond_wait)
 * hides the call.
 */
#define _GNU_SOURCE
#undef _FORTIFY_SOURCE
#include "waits.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sites.h"

#define RP_INTERPOSE __attribute__((visibility("default")))

/* ---- the sites and the real functions ------------------------------------- */

#define SITE(nm)                                                                                   \
    {                                                                                              \
        (nm), NULL, 0, RP_KIND_WAIT, RP_CLASS_WAIT, 0, 0, 0, 0, NULL, NULL, NULL                   \
    }

/* The site of each call, named after it.  The _chk variants (what a
 * program built with _FORTIFY_SOURCE calls) record the plain call's site;
 * theirs are never used. */
RP_HIDDEN struct rp_site rp_wait_sites[RP_W_N] = {
    [RP_W_NANOSLEEP] = SITE("nanosleep"),
    [RP_W_CLOCK_NANOSLEEP] = SITE("clock_nanosleep"),
    [RP_W_USLEEP] = SITE("usleep"),
    [RP_W_SLEEP] = SITE("sleep"),
    [RP_W_PAUSE] = SITE("pause"),
    [RP_W_POLL] = SITE("poll"),
    [RP_W_POLL_CHK] = SITE("poll"),
    [RP_W_PPOLL] = SITE("ppoll"),
    [RP_W_PPOLL_CHK] = SITE("ppoll"),
    [RP_W_SELECT] = SITE("select"),
    [RP_W_PSELECT] = SITE("pselect"),
    [RP_W_EPOLL_WAIT] = SITE("epoll_wait"),
    [RP_W_EPOLL_PWAIT] = SITE("epoll_pwait"),
    [RP_W_EPOLL_PWAIT2] = SITE("epoll_pwait2"),
    [RP_W_PTHREAD_JOIN] = SITE("pthread_join"),
    [RP_W_COND_WAIT] = SITE("pthread_cond_wait"),
    [RP_W_COND_TIMEDWAIT] = SITE("pthread_cond_timedwait"),
    [RP_W_COND_CLOCKWAIT] = SITE("pthread_cond_clockwait"),
    [RP_W_SEM_WAIT] = SITE("sem_wait"),
    [RP_W_SEM_TIMEDWAIT] = SITE("sem_timedwait"),
    [RP_W_SEM_CLOCKWAIT] = SITE("sem_clockwait"),
    [RP_W_WAITPID] = SITE("waitpid"),
    [RP_W_WAIT] = SITE("wait"),
    [RP_W_WAITID] = SITE("waitid"),
    [RP_W_SIGWAIT] = SITE("sigwait"),
    [RP_W_SIGTIMEDWAIT] = SITE("sigtimedwait"),
    [RP_W_SIGWAITINFO] = SITE("sigwaitinfo"),
    [RP_W_ACCEPT] = SITE("accept"),
    [RP_W_ACCEPT4] = SITE("accept4"),
    [RP_W_RECV] = SITE("recv"),
    [RP_W_RECV_CHK] = SITE("recv"),
    [RP_W_RECVFROM] = SITE("recvfrom"),
    [RP_W_RECVFROM_CHK] = SITE("recvfrom"),
    [RP_W_RECVMSG] = SITE("recvmsg"),
    [RP_W_READ] = SITE("read"),
    [RP_W_READ_CHK] = SITE("read"),
    [RP_W_READV] = SITE("readv"),
};

/* The real functions: rp_wait_sites' order, then the two that are not waits. */
enum { R_CLOSE = RP_W_N, R_DUP2, R_DUP3, R_FCNTL, R_FCNTL64, R_NREAL };

static const char *const real_names[R_NREAL] = {
    [RP_W_NANOSLEEP] = "nanosleep",
    [RP_W_CLOCK_NANOSLEEP] = "clock_nanosleep",
    [RP_W_USLEEP] = "usleep",
    [RP_W_SLEEP] = "sleep",
    [RP_W_PAUSE] = "pause",
    [RP_W_POLL] = "poll",
    [RP_W_POLL_CHK] = "__poll_chk",
    [RP_W_PPOLL] = "ppoll",
    [RP_W_PPOLL_CHK] = "__ppoll_chk",
    [RP_W_SELECT] = "select",
    [RP_W_PSELECT] = "pselect",
    [RP_W_EPOLL_WAIT] = "epoll_wait",
    [RP_W_EPOLL_PWAIT] = "epoll_pwait",
    [RP_W_EPOLL_PWAIT2] = "epoll_pwait2",
    [RP_W_PTHREAD_JOIN] = "pthread_join",
    [RP_W_COND_WAIT] = NULL, /* locks.c calls the real one */
    [RP_W_COND_TIMEDWAIT] = NULL,
    [RP_W_COND_CLOCKWAIT] = NULL,
    [RP_W_SEM_WAIT] = "sem_wait",
    [RP_W_SEM_TIMEDWAIT] = "sem_timedwait",
    [RP_W_SEM_CLOCKWAIT] = "sem_clockwait",
    [RP_W_WAITPID] = "waitpid",
    [RP_W_WAIT] = "wait",
    [RP_W_WAITID] = "waitid",
    [RP_W_SIGWAIT] = "sigwait",
    [RP_W_SIGTIMEDWAIT] = "sigtimedwait",
    [RP_W_SIGWAITINFO] = "sigwaitinfo",
    [RP_W_ACCEPT] = "accept",
    [RP_W_ACCEPT4] = "accept4",
    [RP_W_RECV] = "recv",
    [RP_W_RECV_CHK] = "__recv_chk",
    [RP_W_RECVFROM] = "recvfrom",
    [RP_W_RECVFROM_CHK] = "__recvfrom_chk",
    [RP_W_RECVMSG] = "recvmsg",
    [RP_W_READ] = "read",
    [RP_W_READ_CHK] = "__read_chk",
    [RP_W_READV] = "readv",
    [R_CLOSE] = "close",
    [R_DUP2] = "dup2",
    [R_DUP3] = "dup3",
    [R_FCNTL] = "fcntl",
    [R_FCNTL64] = "fcntl64",
};

static void *_Atomic reals[R_NREAL];
static __thread int resolving;

/* Resolves real function i.  Returns it, or NULL when it cannot be had (a
 * nested call during resolution, or no next definition). */
static RP_NOINLINE void *real_resolve(unsigned i)
{
    if (resolving || !real_names[i])
        return NULL;
    resolving = 1;
    void *f = dlsym(RTLD_NEXT, real_names[i]);
    resolving = 0;
    if (f) /* release: pairs with real()'s acquire, like locks.c */
        atomic_store_explicit(&reals[i], f, memory_order_release);
    return f;
}

/* Real function i, resolved now if it was not: NULL when it cannot be. */
static inline void *real(unsigned i)
{
    void *f = atomic_load_explicit(&reals[i], memory_order_acquire);
    return likely(f != NULL) ? f : real_resolve(i);
}

/* Resolves every real function before the program's threads exist, and
 * registers the wait sites so that the encoder can describe them.  A
 * function that cannot be resolved is tried again at its first call. */
__attribute__((constructor)) static void waits_ctor(void)
{
    for (unsigned i = 0; i < R_NREAL; i++)
        (void)real(i);
    rp_sites_register(rp_wait_sites, rp_wait_sites + RP_W_N);
}

/*
 * The body of an interposer: call real function W (of type proto) with the
 * arguments, as a wait span of site S when the wait class is on and
 * `may_block` holds (S is W but for the _chk variants, whose spans are
 * those of the plain call), else the plain call: a call that cannot block
 * (a zero timeout, a descriptor in non-blocking mode) is the caller's own
 * work on the CPU, not a wait; may_block is evaluated only when the wait
 * class is on.  FAIL is the result of a call that cannot be forwarded (the
 * function could not be resolved: only a call nested in dlsym itself),
 * with errno ENOSYS; read, close and dup3 make the system call then.
 */
#define WAIT_CALL_IF(may_block, W, S, proto, FAIL, ...)                                            \
    do {                                                                                           \
        proto f_ = (proto)real(W);                                                                 \
        if (unlikely(!f_)) {                                                                       \
            errno = ENOSYS;                                                                        \
            return FAIL;                                                                           \
        }                                                                                          \
        if (likely(!rp_wait_on()) || !(may_block))                                                 \
            return f_(__VA_ARGS__);                                                                \
        __typeof__(f_(__VA_ARGS__)) r_;                                                            \
        RP_WAIT_SPAN(S, r_ = f_(__VA_ARGS__));                                                     \
        return r_;                                                                                 \
    } while (0)
#define WAIT_CALL_AS(W, S, ...) WAIT_CALL_IF(1, W, S, __VA_ARGS__)
#define WAIT_CALL(W, ...)       WAIT_CALL_AS(W, W, __VA_ARGS__)

/* Whether a timeout as a timespec or timeval is zero: the call only looks. */
#define TS_ZERO(ts) ((ts) != NULL && (ts)->tv_sec == 0 && (ts)->tv_nsec == 0)
#define TV_ZERO(tv) ((tv) != NULL && (tv)->tv_sec == 0 && (tv)->tv_usec == 0)

/* ---- descriptors: which reads may block ------------------------------------ */

#define FD_CACHE 65536
enum { FD_UNKNOWN = 0, FD_QUIET = 1, FD_BLOCKS = 2 };

/* fd_kind[fd]: FD_UNKNOWN until a read asks, then what fstat said.  Relaxed
 * byte loads and stores: a stale or racing value only decides whether one
 * read is recorded, and every writer stores a value true at some moment. */
static _Atomic unsigned char fd_kind[FD_CACHE];

/* Whether a read of fd may block: not a regular file, directory or block
 * device, and not in non-blocking mode (O_NONBLOCK: such a read returns at
 * once, data or EAGAIN, and its time is the kernel's work for the caller,
 * on the CPU).  An fstat or fcntl that fails says no (the read will fail
 * too). */
static RP_NOINLINE int fd_blocks_slow(int fd)
{
    struct stat st;
    int e = errno, fl;
    int blocks = fstat(fd, &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode) &&
                 !S_ISBLK(st.st_mode) && (fl = (int)syscall(SYS_fcntl, fd, F_GETFL)) >= 0 &&
                 !(fl & O_NONBLOCK);
    errno = e;
    if ((unsigned)fd < FD_CACHE)
        atomic_store_explicit(&fd_kind[fd], blocks ? FD_BLOCKS : FD_QUIET, memory_order_relaxed);
    return blocks;
}

/* fd_blocks_slow, from the cache when the type of fd is known.  Cannot fail. */
static inline int fd_blocks(int fd)
{
    int blocks;
    RP_WAIT_TSAN_BEGIN();
    unsigned k = (unsigned)fd < FD_CACHE ? atomic_load_explicit(&fd_kind[fd], memory_order_relaxed)
                                         : FD_UNKNOWN;
    blocks = likely(k != FD_UNKNOWN) ? k == FD_BLOCKS : fd_blocks_slow(fd);
    RP_WAIT_TSAN_END();
    return blocks;
}

/* Whether a recv-family call on fd with flags may block: not with
 * MSG_DONTWAIT, nor on a descriptor that cannot block (fd_blocks).
 * Cannot fail. */
static inline int recv_blocks(int fd, int flags)
{
    return !(flags & MSG_DONTWAIT) && fd_blocks(fd);
}

/* Forgets what is known of descriptor fd (its number is free or reused). */
static inline void fd_forget(int fd)
{
    RP_WAIT_TSAN_BEGIN();
    if ((unsigned)fd < FD_CACHE &&
        atomic_load_explicit(&fd_kind[fd], memory_order_relaxed) != FD_UNKNOWN)
        atomic_store_explicit(&fd_kind[fd], FD_UNKNOWN, memory_order_relaxed);
    RP_WAIT_TSAN_END();
}

typedef int (*close_fn)(int);
typedef int (*dup2_fn)(int, int);
typedef int (*dup3_fn)(int, int, int);

/* The descriptor is forgotten after the real call: forgotten before, a
 * read racing with the close could store the old type again. */
RP_INTERPOSE int close(int fd)
{
    close_fn f = (close_fn)real(R_CLOSE);
    rp_rt_fd_check(fd);
    int r = likely(f != NULL) ? f(fd) : (int)syscall(SYS_close, fd); /* see read */
    fd_forget(fd);
    return r;
}

RP_INTERPOSE int dup2(int old, int fd)
{
    dup2_fn f = (dup2_fn)real(R_DUP2);
    if (unlikely(!f)) {
        errno = ENOSYS;
        return -1;
    }
    if (old != fd)
        rp_rt_fd_check(fd);
    int r = f(old, fd);
    fd_forget(fd);
    return r;
}

RP_INTERPOSE int dup3(int old, int fd, int flags)
{
    dup3_fn f = (dup3_fn)real(R_DUP3);
    rp_rt_fd_check(fd);
    int r = likely(f != NULL) ? f(old, fd, flags) : (int)syscall(SYS_dup3, old, fd, flags);
    fd_forget(fd);
    return r;
}

typedef int (*fcntl_fn)(int, int, ...);

/* fcntl: forwarded as it is; F_SETFL (O_NONBLOCK on or off) forgets what is
 * known of the descriptor.  Its third argument is passed on as the one
 * word every command takes (an int, a long or a pointer), as libc's own
 * fcntl reads it. */
static int fcntl_as(unsigned w, int fd, int cmd, void *arg)
{
    fcntl_fn f = (fcntl_fn)real(w);
    if (unlikely(!f))
        return (int)syscall(SYS_fcntl, fd, cmd, arg);
    int r = f(fd, cmd, arg);
    if (cmd == F_SETFL)
        fd_forget(fd);
    return r;
}

/* fcntl and fcntl64, the same interposer under two names */
#define FCNTL_INTERPOSER(NAME, W)                                                                  \
    RP_INTERPOSE int NAME(int fd, int cmd, ...)                                                    \
    {                                                                                              \
        va_list ap;                                                                                \
        va_start(ap, cmd);                                                                         \
        void *arg = va_arg(ap, void *);                                                            \
        va_end(ap);                                                                                \
        return fcntl_as(W, fd, cmd, arg);                                                          \
    }
FCNTL_INTERPOSER(fcntl, R_FCNTL)
FCNTL_INTERPOSER(fcntl64, R_FCNTL64)
#undef FCNTL_INTERPOSER

/* ---- sleeping -------------------------------------------------------------- */

typedef int (*nanosleep_fn)(const struct timespec *, struct timespec *);
typedef int (*clock_nanosleep_fn)(clockid_t, int, const struct timespec *, struct timespec *);
typedef int (*usleep_fn)(useconds_t);
typedef unsigned (*sleep_fn)(unsigned);
typedef int (*pause_fn)(void);

RP_INTERPOSE int nanosleep(const struct timespec *req, struct timespec *rem)
{
    WAIT_CALL(RP_W_NANOSLEEP, nanosleep_fn, -1, req, rem);
}

RP_INTERPOSE int clock_nanosleep(clockid_t clk, int flags, const struct timespec *req,
                                 struct timespec *rem)
{
    WAIT_CALL(RP_W_CLOCK_NANOSLEEP, clock_nanosleep_fn, ENOSYS, clk, flags, req, rem);
}

RP_INTERPOSE int usleep(useconds_t us)
{
    WAIT_CALL(RP_W_USLEEP, usleep_fn, -1, us);
}

RP_INTERPOSE unsigned sleep(unsigned s)
{
    WAIT_CALL(RP_W_SLEEP, sleep_fn, s, s);
}

RP_INTERPOSE int pause(void)
{
    pause_fn f_ = (pause_fn)real(RP_W_PAUSE);
    if (unlikely(!f_)) {
        errno = ENOSYS;
        return -1;
    }
    if (likely(!rp_wait_on()))
        return f_();
    int r;
    RP_WAIT_SPAN(RP_W_PAUSE, r = f_());
    return r;
}

/* ---- multiplexing ---------------------------------------------------------- */

typedef int (*poll_fn)(struct pollfd *, nfds_t, int);
typedef int (*poll_chk_fn)(struct pollfd *, nfds_t, int, size_t);
typedef int (*ppoll_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *);
typedef int (*ppoll_chk_fn)(struct pollfd *, nfds_t, const struct timespec *, const sigset_t *,
                            size_t);
typedef int (*select_fn)(int, fd_set *, fd_set *, fd_set *, struct timeval *);
typedef int (*pselect_fn)(int, fd_set *, fd_set *, fd_set *, const struct timespec *,
                          const sigset_t *);
typedef int (*epoll_wait_fn)(int, struct epoll_event *, int, int);
typedef int (*epoll_pwait_fn)(int, struct epoll_event *, int, int, const sigset_t *);
typedef int (*epoll_pwait2_fn)(int, struct epoll_event *, int, const struct timespec *,
                               const sigset_t *);

RP_INTERPOSE int poll(struct pollfd *fds, nfds_t n, int timeout)
{
    WAIT_CALL_IF(timeout != 0, RP_W_POLL, RP_W_POLL, poll_fn, -1, fds, n, timeout);
}

RP_INTERPOSE int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len)
{
    WAIT_CALL_IF(timeout != 0, RP_W_POLL_CHK, RP_W_POLL, poll_chk_fn, -1, fds, n, timeout, len);
}

RP_INTERPOSE int ppoll(struct pollfd *fds, nfds_t n, const struct timespec *ts,
                       const sigset_t *mask)
{
    WAIT_CALL_IF(!TS_ZERO(ts), RP_W_PPOLL, RP_W_PPOLL, ppoll_fn, -1, fds, n, ts, mask);
}

RP_INTERPOSE int __ppoll_chk(struct pollfd *fds, nfds_t n, const struct timespec *ts,
                             const sigset_t *mask, size_t len)
{
    WAIT_CALL_IF(!TS_ZERO(ts), RP_W_PPOLL_CHK, RP_W_PPOLL, ppoll_chk_fn, -1, fds, n, ts, mask, len);
}

RP_INTERPOSE int select(int n, fd_set *r, fd_set *w, fd_set *x, struct timeval *tv)
{
    WAIT_CALL_IF(!TV_ZERO(tv), RP_W_SELECT, RP_W_SELECT, select_fn, -1, n, r, w, x, tv);
}

RP_INTERPOSE int pselect(int n, fd_set *r, fd_set *w, fd_set *x, const struct timespec *ts,
                         const sigset_t *mask)
{
    WAIT_CALL_IF(!TS_ZERO(ts), RP_W_PSELECT, RP_W_PSELECT, pselect_fn, -1, n, r, w, x, ts, mask);
}

RP_INTERPOSE int epoll_wait(int ep, struct epoll_event *ev, int max, int timeout)
{
    WAIT_CALL_IF(timeout != 0, RP_W_EPOLL_WAIT, RP_W_EPOLL_WAIT, epoll_wait_fn, -1, ep, ev, max,
                 timeout);
}

RP_INTERPOSE int epoll_pwait(int ep, struct epoll_event *ev, int max, int timeout,
                             const sigset_t *mask)
{
    WAIT_CALL_IF(timeout != 0, RP_W_EPOLL_PWAIT, RP_W_EPOLL_PWAIT, epoll_pwait_fn, -1, ep, ev, max,
                 timeout, mask);
}

RP_INTERPOSE int epoll_pwait2(int ep, struct epoll_event *ev, int max, const struct timespec *ts,
                              const sigset_t *mask)
{
    WAIT_CALL_IF(!TS_ZERO(ts), RP_W_EPOLL_PWAIT2, RP_W_EPOLL_PWAIT2, epoll_pwait2_fn, -1, ep, ev,
                 max, ts, mask);
}

/* ---- threads, semaphores, children, signals -------------------------------- */

typedef int (*join_fn)(pthread_t, void **);
typedef int (*sem_wait_fn)(sem_t *);
typedef int (*sem_timedwait_fn)(sem_t *, const struct timespec *);
typedef int (*sem_clockwait_fn)(sem_t *, clockid_t, const struct timespec *);
typedef pid_t (*waitpid_fn)(pid_t, int *, int);
typedef pid_t (*wait_fn)(int *);
typedef int (*waitid_fn)(idtype_t, id_t, siginfo_t *, int);
typedef int (*sigwait_fn)(const sigset_t *, int *);
typedef int (*sigtimedwait_fn)(const sigset_t *, siginfo_t *, const struct timespec *);
typedef int (*sigwaitinfo_fn)(const sigset_t *, siginfo_t *);

RP_INTERPOSE int pthread_join(pthread_t th, void **ret)
{
    WAIT_CALL(RP_W_PTHREAD_JOIN, join_fn, ENOSYS, th, ret);
}

RP_INTERPOSE int sem_wait(sem_t *s)
{
    WAIT_CALL(RP_W_SEM_WAIT, sem_wait_fn, -1, s);
}

RP_INTERPOSE int sem_timedwait(sem_t *restrict s, const struct timespec *restrict ts)
{
    WAIT_CALL(RP_W_SEM_TIMEDWAIT, sem_timedwait_fn, -1, s, ts);
}

RP_INTERPOSE int sem_clockwait(sem_t *restrict s, clockid_t clk, const struct timespec *restrict ts)
{
    WAIT_CALL(RP_W_SEM_CLOCKWAIT, sem_clockwait_fn, -1, s, clk, ts);
}

RP_INTERPOSE pid_t waitpid(pid_t pid, int *status, int options)
{
    WAIT_CALL(RP_W_WAITPID, waitpid_fn, -1, pid, status, options);
}

RP_INTERPOSE pid_t wait(int *status)
{
    WAIT_CALL(RP_W_WAIT, wait_fn, -1, status);
}

RP_INTERPOSE int waitid(idtype_t type, id_t id, siginfo_t *info, int options)
{
    WAIT_CALL(RP_W_WAITID, waitid_fn, -1, type, id, info, options);
}

RP_INTERPOSE int sigwait(const sigset_t *restrict set, int *restrict sig)
{
    WAIT_CALL(RP_W_SIGWAIT, sigwait_fn, ENOSYS, set, sig);
}

RP_INTERPOSE int sigtimedwait(const sigset_t *restrict set, siginfo_t *restrict info,
                              const struct timespec *restrict ts)
{
    WAIT_CALL(RP_W_SIGTIMEDWAIT, sigtimedwait_fn, -1, set, info, ts);
}

RP_INTERPOSE int sigwaitinfo(const sigset_t *restrict set, siginfo_t *restrict info)
{
    WAIT_CALL(RP_W_SIGWAITINFO, sigwaitinfo_fn, -1, set, info);
}

/* ---- sockets and descriptors ----------------------------------------------- */

typedef int (*accept_fn)(int, struct sockaddr *, socklen_t *);
typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);
typedef ssize_t (*recv_fn)(int, void *, size_t, int);
typedef ssize_t (*recv_chk_fn)(int, void *, size_t, size_t, int);
typedef ssize_t (*recvfrom_fn)(int, void *, size_t, int, struct sockaddr *, socklen_t *);
typedef ssize_t (*recvfrom_chk_fn)(int, void *, size_t, size_t, int, struct sockaddr *,
                                   socklen_t *);
typedef ssize_t (*recvmsg_fn)(int, struct msghdr *, int);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef ssize_t (*read_chk_fn)(int, void *, size_t, size_t);
typedef ssize_t (*readv_fn)(int, const struct iovec *, int);

RP_INTERPOSE int accept(int fd, struct sockaddr *restrict addr, socklen_t *restrict len)
{
    WAIT_CALL_IF(fd_blocks(fd), RP_W_ACCEPT, RP_W_ACCEPT, accept_fn, -1, fd, addr, len);
}

RP_INTERPOSE int accept4(int fd, struct sockaddr *restrict addr, socklen_t *restrict len, int flags)
{
    WAIT_CALL_IF(fd_blocks(fd), RP_W_ACCEPT4, RP_W_ACCEPT4, accept4_fn, -1, fd, addr, len, flags);
}

RP_INTERPOSE ssize_t recv(int fd, void *buf, size_t n, int flags)
{
    WAIT_CALL_IF(recv_blocks(fd, flags), RP_W_RECV, RP_W_RECV, recv_fn, -1, fd, buf, n, flags);
}

RP_INTERPOSE ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags)
{
    WAIT_CALL_IF(recv_blocks(fd, flags), RP_W_RECV_CHK, RP_W_RECV, recv_chk_fn, -1, fd, buf, n,
                 buflen, flags);
}

RP_INTERPOSE ssize_t recvfrom(int fd, void *restrict buf, size_t n, int flags,
                              struct sockaddr *restrict addr, socklen_t *restrict len)
{
    WAIT_CALL_IF(recv_blocks(fd, flags), RP_W_RECVFROM, RP_W_RECVFROM, recvfrom_fn, -1, fd, buf, n,
                 flags, addr, len);
}

RP_INTERPOSE ssize_t __recvfrom_chk(int fd, void *restrict buf, size_t n, size_t buflen, int flags,
                                    struct sockaddr *restrict addr, socklen_t *restrict len)
{
    WAIT_CALL_IF(recv_blocks(fd, flags), RP_W_RECVFROM_CHK, RP_W_RECVFROM, recvfrom_chk_fn, -1, fd,
                 buf, n, buflen, flags, addr, len);
}

RP_INTERPOSE ssize_t recvmsg(int fd, struct msghdr *msg, int flags)
{
    WAIT_CALL_IF(recv_blocks(fd, flags), RP_W_RECVMSG, RP_W_RECVMSG, recvmsg_fn, -1, fd, msg,
                 flags);
}

/* read: a wait only on a descriptor that may block (fd_blocks).  A read
 * made while this thread resolves a real function (dlsym's malloc may be an
 * allocator that reads its configuration) goes to the system call. */
RP_INTERPOSE ssize_t read(int fd, void *buf, size_t n)
{
    read_fn f = (read_fn)real(RP_W_READ);
    if (unlikely(!f))
        return syscall(SYS_read, fd, buf, n);
    if (likely(!rp_wait_on()) || !fd_blocks(fd))
        return f(fd, buf, n);
    ssize_t r;
    RP_WAIT_SPAN(RP_W_READ, r = f(fd, buf, n));
    return r;
}

RP_INTERPOSE ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen)
{
    read_chk_fn f = (read_chk_fn)real(RP_W_READ_CHK);
    if (unlikely(!f))
        return n <= buflen ? syscall(SYS_read, fd, buf, n) : (errno = EINVAL, -1);
    if (likely(!rp_wait_on()) || !fd_blocks(fd))
        return f(fd, buf, n, buflen);
    ssize_t r;
    RP_WAIT_SPAN(RP_W_READ, r = f(fd, buf, n, buflen));
    return r;
}

/* readv: a wait only on a descriptor that may block, like read. */
RP_INTERPOSE ssize_t readv(int fd, const struct iovec *iov, int n)
{
    readv_fn f = (readv_fn)real(RP_W_READV);
    if (unlikely(!f))
        return syscall(SYS_readv, fd, iov, n);
    if (likely(!rp_wait_on()) || !fd_blocks(fd))
        return f(fd, iov, n);
    ssize_t r;
    RP_WAIT_SPAN(RP_W_READV, r = f(fd, iov, n));
    return r;
}

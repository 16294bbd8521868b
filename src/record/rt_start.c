// SPDX-License-Identifier: MIT
/*
 * rt_start.c - the top of the recorder: start-up from the environment, fork,
 * the fatal signals, the measurement of the recorder's own cost, and the
 * final flush.  The only code that calls every other part of the recorder
 * (the writer, the output, the event sources' start-up).
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

/* Sleeps 1 ms (the system call: not the interposer, waits.c, which would
 * record a wait).  Cannot fail. */
static void nap_ms(void)
{
    struct timespec ms = {0, 1000000};
    syscall(SYS_nanosleep, &ms, NULL);
}

/* The final flush of an exit, _exit or exec (rp_rt_shutdown) has ended;
 * the calling thread is the one running it. */
static atomic_int shutdown_done;
static __thread int shutdown_mine;
static atomic_int shutdown_flushed; /* shutdown_run wrote the END: shutdown_free may run */

/* Waits, in 1 ms naps, until *flag is set or ms milliseconds have passed.
 * Returns whether it is set.  Cannot fail. */
static int wait_flag(atomic_int *flag, uint64_t ms)
{
    uint64_t end = rp_mono_ns() + ms * 1000000;
    int set;
    while (!(set = atomic_load(flag)) && rp_mono_ns() < end)
        nap_ms();
    return set;
}

/* wait_flag for the final flush: its deadline and 100 ms more. */
static void shutdown_wait(atomic_int *flag)
{
    (void)wait_flag(flag, (uint64_t)rp_rt.exit_timeout_ms + 100);
}

/* This thread handles the fatal signal (or runs the program's own handler
 * for it, chained after ours): it never waits for that signal's end. */
static __thread int fatal_mine;

/*
 * A fatal signal is handled on another thread (rp_rt.fatal), whose handler
 * ends the process by that signal once its flush is written; without the
 * recorder the signal would have ended the process already.  A thread
 * that would end it otherwise meanwhile (exit, _exit, exec, or main's
 * return: the final flush) waits for that instead, so that the process
 * ends by the signal, as END says, not with this thread's status (a
 * program whose main went on and returned exited 0); so does a thread
 * that calls an instrumented function meanwhile (rp_rt_fatal_park), so
 * that the program goes on as little as it can.  Bounded: the flush's
 * deadline, then a second for the handler to end the process.  Not when
 * the signal's disposition is the program's own handler (a crash signal
 * chained to it), which may go on.  Cannot fail.
 */
static void fatal_wait_end(void)
{
    int sig = atomic_load(&rp_rt.fatal);
    if (!sig || fatal_mine || rp_is_writer)
        return;
    const struct sigaction *sa = &fatal_old[sig];
    if ((sa->sa_flags & SA_SIGINFO) || sa->sa_handler != SIG_DFL)
        return;
    shutdown_wait(&rp_rt.fatal_done);
    for (int i = 0; i < 1000; i++)
        nap_ms();
}

/* The status the process's first exit, _exit, _Exit or quick_exit was
 * given, plus one, for END (rp_rt_exit_status); 0: none seen (a return
 * from main calls exit inside libc, past the interposer). */
static atomic_int exit_status1;

RP_HIDDEN void rp_rt_exit_status(int status)
{
    int none = 0;
    atomic_compare_exchange_strong(&exit_status1, &none, (status & 0xff) + 1);
}

/*
 * The final flush of an _exit, _Exit, quick_exit or exec runs on another
 * thread (rp_rt_ending): this thread, calling an instrumented function
 * meanwhile, waits for the process to end, as it would have ended already
 * without the recorder (exit() runs the program's handlers and destructors
 * first, with the other threads running, and is left as it is).  A
 * program's _exit from its own signal handler (pigz's, after it closed its
 * output and freed its name) would otherwise let its other threads run on
 * the state the handler tore down for as long as the flush takes (pigz
 * then wrote to descriptor -1 and printed an error it never prints).
 * Bounded: the flush's deadline, then a second; over at once if the exec
 * fails (rp_rt_exec_failed clears rp_rt.ending).  Cannot fail.
 */
static void ending_wait(void)
{
    if (shutdown_mine || rp_is_writer || fatal_mine)
        return;
    shutdown_wait(&shutdown_done);
    for (int i = 0; i < 1000 && atomic_load(&rp_rt.ending); i++)
        nap_ms();
}

RP_HIDDEN void rp_rt_exec_failed(void)
{
    atomic_store(&rp_rt.ending, 0); /* (recording stays stopped: exec.c) */
}

RP_HIDDEN void rp_rt_ending(void)
{
    atomic_store(&rp_rt.mask, 0);
    atomic_store(&rp_rt.ending, 1);
}

RP_HIDDEN RP_NOINLINE void rp_rt_fatal_park(void)
{
    /* not inside the recorder (a handler that interrupted an append), nor
     * holding one of the program's locks, which the writer might need (an
     * instrumented allocator's) */
    if ((rp_self && rp_self->guard) || rp_lock_holds)
        return;
    if (atomic_load(&rp_rt.fatal))
        fatal_wait_end();
    else
        ending_wait();
}

/* A fatal signal's flush where no writer thread runs (a forked child; a
 * writer retired after main's pthread_exit or not yet started): the
 * handler writes what is recorded and END itself, once (fatal_done).  Not
 * when it interrupted the recorder on this thread.  Returns 1 when another
 * thread holds the drain lock (writing, or a writer just started: try
 * again), else 0. */
static int fatal_flush_sync(int sig)
{
    if (rp_self && rp_self->guard)
        return 0;
    if (rp_own_trylock(&rp_rt.drain_lock) != 0)
        return 1;
    if (!atomic_load(&rp_rt.fatal_done)) {
        atomic_store(&rp_rt.stopped, 1);
        rp_rt_fatal_write(sig);
    }
    rp_own_unlock(&rp_rt.drain_lock);
    return 0;
}

static void fatal_handler(int sig, siginfo_t *si, void *uc)
{
    int saved_errno = errno;
    (void)uc;
    atomic_store(&rp_rt.mask, 0);
    /* the first fatal signal's time, for the END chunk (seq_cst: before
     * rp_rt.fatal below, which the writer reads before it) */
    uint64_t zero = 0;
    if (atomic_compare_exchange_strong(&rp_rt.fatal_ticks, &zero, rp_ticks()) && rp_self)
        atomic_store(&rp_rt.fatal_tid, rp_self->tid);
    /* The first fatal signal starts the final flush; one that comes while
     * it runs (a second SIGTERM: `timeout` signals both `rankprof record`,
     * which passes it on, and the program's process group) waits for it
     * too, on whatever thread it lands: the flush has set stopped by then,
     * and raising it at once would end the process before END is written. */
    int none = 0, first = 0;
    int again = fatal_mine; /* (a second signal while this thread's handler runs) */
    fatal_mine = 1;
    int flush =
        !rp_is_writer &&
        (atomic_load(&rp_rt.fatal) ||
         (!atomic_load(&rp_rt.stopped) && __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) >= 0 &&
          ((first = atomic_compare_exchange_strong(&rp_rt.fatal, &none, sig)) || none)));
    if (atomic_load(&rp_rt.fatal)) /* the other threads' hooks: rp_rt_fatal_park */
        atomic_store(&rp_rt.ending, 1);
    if (flush && rp_rt.direct) {
        /* the first signal's thread writes; one that comes meanwhile on
         * another thread waits for it */
        if (first) { /* (direct mode has no writer: the handler writes) */
            atomic_store(&rp_rt.stopped, 1);
            rp_rt_fatal_write(sig);
        } else if (!again)
            shutdown_wait(&rp_rt.fatal_done);
    } else if (flush) {
        /* A crash inside the recorder may hold the lock the writer needs:
         * then wait less, the writer may never come. */
        unsigned limit = rp_rt.exit_timeout_ms;
        if (rp_self && rp_self->guard && limit > 1000)
            limit = 1000;
        /* without a writer, the drain lock another thread holds is let go
         * within a buffer's write; this thread's own (a handler that
         * interrupted a thread's last drain) never is */
        if (rp_rt.sync_write && limit > 200)
            limit = 200;
        /* Without a writer thread (a forked child's recorder; a writer
         * retired after main's pthread_exit, or never started while
         * recording was off) the handler writes it. */
        struct timespec ms = {0, 1000000};
        for (unsigned w = 0; w < limit && !atomic_load(&rp_rt.fatal_done); w++) {
            if (rp_rt.sync_write || !__atomic_load_n(&rp_rt.writer_running, __ATOMIC_RELAXED)) {
                if (!fatal_flush_sync(atomic_load(&rp_rt.fatal)))
                    break; /* written here, or it cannot be */
            }
            nanosleep(&ms, NULL);
        }
    } else if (!rp_is_writer && !shutdown_mine && atomic_load(&rp_rt.stopped) &&
               !atomic_load(&rp_rt.fatal)) {
        /* The final flush of an exit runs on another thread: the signal
         * waits for it before it ends the process (END then says how the
         * run ended: by that exit). */
        shutdown_wait(&shutdown_done);
    }
    sigaction(sig, &fatal_old[sig], NULL);
    /* a fault comes back by itself when the instruction runs again */
    int fault = sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL;
    if (!fault || si == NULL || si->si_code <= 0)
        raise(sig);
    errno = saved_errno;
}

RP_HIDDEN int rp_rt_handler_ours(const struct sigaction *sa)
{
    return (sa->sa_flags & SA_SIGINFO) &&
           (sa->sa_sigaction == fatal_handler || rp_ctl_owns(sa->sa_sigaction));
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
    /* Not SA_RESETHAND: a second signal (`timeout` signals both `rankprof
     * record`, which passes it on, and the program's process group) would
     * then find the default action and end the process in the middle of
     * the flush.  It waits for the flush in the handler instead (on another
     * thread: the first's is blocked while its handler runs); a fault
     * inside the handler, where its signal is blocked, still ends the
     * process at once (the kernel resets a blocked fault to its default). */
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (unsigned i = 0; i < NFATAL; i++)
        fatal_take(fatal_sigs[i], i < NCRASH, &sa);
    for (int sig = SIGRTMIN; sig <= SIGRTMAX; sig++)
        fatal_take(sig, 0, &sa);
}

/* ---- start, fork, shutdown ---------------------------------------------- */

static int rt_start(void);

RP_HIDDEN void rp_rt_start_once(void)
{
    (void)rt_start();
}

/* Starts the recorder if it has not started; returns 0 or the start error. */
RP_HIDDEN int rp_rt_start(void)
{
    pthread_once(&rp_rt_once, rp_rt_start_once);
    return rp_rt_start_err;
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
        rp_rt_warn("ignoring %s: not a number in range", name, 0);
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
            rp_rt_warn("RANKPROF_CLASSES: unknown class in '%s'", s, 0);
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
        memcpy(rp_rt_run, mark, 17);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t h = (uint64_t)getpid() * 0x9e3779b97f4a7c15ull;
    h ^= ((uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec) * 0xc2b2ae3d27d4eb4full;
    h ^= (uint64_t)(uintptr_t)&ts * 0x165667b19e3779f9ull;
    h ^= h >> 29;
    snprintf(rp_rt_run, sizeof(rp_rt_run), "%016llx", (unsigned long long)h);
}

static int out_other; /* this process's file is not the run's first (NAME.PID) */

/*
 * Replaces the older trace that fd holds (opened by path, its flock ours)
 * by a new empty file of the same name, when it is a plain file that path
 * names directly with one link.  Truncating it instead makes ext4 and XFS
 * write the new trace back when it is closed (their guard for files
 * rewritten in place): about 0.1 s spent in the program's exit after a
 * trace of 150 MB; a new file is written back in the background as any
 * other.  Dropping the old file's pages costs as much again: the old
 * descriptor is parked out of the way (rp_rt_fd_high) and closed by the
 * writer thread, beside the program (rp_rt_out_old_close).  Returns the new
 * descriptor; -1 when fd is to be truncated as before (a symlink's target,
 * a hard link, an empty file, a directory that does not let it unlink), or
 * -2 when another process created the name between the unlink and the
 * create, or locked the new file first (fd is then closed: this process
 * takes NAME.PID).
 */
static int out_fresh(int fd, const char *path)
{
    struct stat st, ln;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size == 0 || st.st_nlink != 1 ||
        lstat(path, &ln) != 0 || ln.st_dev != st.st_dev || ln.st_ino != st.st_ino ||
        unlink(path) != 0)
        return -1;
    int nfd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    /* another process may open the new name before the lock is taken, and
     * take it first: that one writes the name (it is empty), this one not */
    if (nfd >= 0 && flock(nfd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
        syscall(SYS_close, nfd);
        nfd = -1;
    }
    if (nfd < 0) {
        syscall(SYS_close, fd);
        return -2;
    }
    rp_rt_out_old_park(fd, st.st_dev, st.st_ino);
    return nfd;
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
 * live process holds is replaced by a new file (out_fresh) or truncated.
 * The suffixed names are created with O_EXCL, so they are never shared
 * either.
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
        setenv("RANKPROF_CLAIMED", rp_rt_run, 1);
        int nfd = -1;
        if (rp_rt.fd >= 0 && flock(rp_rt.fd, LOCK_EX | LOCK_NB) < 0 && errno == EWOULDBLOCK) {
            syscall(SYS_close, rp_rt.fd); /* a live process writes it */
            rp_rt.fd = -1;
            first = 0;
        } else if (rp_rt.fd >= 0 && (nfd = out_fresh(rp_rt.fd, rp_rt.path)) != -1) {
            rp_rt.fd = nfd;
            first = nfd >= 0;
        } else if (rp_rt.fd >= 0 && ftruncate(rp_rt.fd, 0) < 0) {
            syscall(SYS_close, rp_rt.fd); /* not a regular file we may reuse */
            rp_rt.fd = open(rp_rt.path, O_WRONLY | O_TRUNC | O_CLOEXEC);
        }
    }
    out_other = !first;
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
        rp_rt_warn("cannot open %s, nothing will be recorded", rp_rt.path, errno);
        return RP_EIO;
    }
    rp_rt.fd = rp_rt_fd_high(rp_rt.fd);
    struct stat st;
    if (fstat(rp_rt.fd, &st) == 0) {
        rp_out_dev = st.st_dev;
        rp_out_ino = st.st_ino;
        rp_rt.out_file = S_ISREG(st.st_mode);
    }
    uint8_t hdr[RP_FILE_HDR_SIZE];
    rp_file_header(hdr);
    struct iovec iov = {hdr, sizeof(hdr)};
    rp_out_writev(&iov, 1);
    return 0;
}

/* Writes the chunks every trace starts with. */
static void out_prologue(void)
{
    rp_out_info();
    rp_out_maps();
    rp_out_clock();
}

/*
 * The child is forked with the writer waiting, never inside the allocator
 * (not every allocator is fork-safe: a sanitizer's is not) or halfway
 * through a chunk.  A writer just created is first let reach its loop (at
 * most 50 ms); in the loop it works only under drain_lock (rt_writer.c),
 * which comes before rp_rt.lock.
 */
/* threads the prepare handler gave up waiting for (rp_rt_self_block_locked) */
static int fork_unwaited;

static void atfork_prepare(void)
{
    for (int i = 0; i < 1000 && __atomic_load_n(&rp_rt.writer_running, __ATOMIC_RELAXED) &&
                    !atomic_load(&rp_rt.writer_ready);
         i++) {
        struct timespec ts = {0, 50000};
        syscall(SYS_nanosleep, &ts, NULL); /* (not the interposer, waits.c) */
    }
    rp_own_lock(&rp_rt.drain_lock);
    rp_own_lock(&rp_rt.lock);
    fork_unwaited = rp_rt_self_block_locked(1); /* nor a thread encoding its own buffer */
}

static void atfork_parent(void)
{
    rp_rt_self_block_locked(0);
    rp_own_unlock(&rp_rt.lock);
    rp_own_unlock(&rp_rt.drain_lock);
}

/*
 * A forked child's trace starts with the calls open on the forking thread
 * at the fork (its function that called fork and every one above it), as
 * raw records that enter them again at the fork's ticks, outermost first:
 * so the child's calls rank under the ones they were made from, and its
 * returns into them match instead of counting as unmatched exits.  The
 * child's fork handler makes them from the parent's shadow stack of that
 * thread (rp_enc_thread.stack), brought up to the fork by encoding, into
 * pages thrown away, the thread's records no one had encoded yet (the
 * prepare handler left no thread encoding); rp_rt_seed_put writes them
 * first into the child's first buffer of that thread.  In direct mode
 * the engine takes the thread's batch first, and its shadow stack is the
 * one (rp_direct_atfork_child), written first into the child's first
 * batch.  None when the stack lost a frame, recording was switched on or
 * off (ctl), or it is deeper than a quarter of a buffer or batch (at most
 * RP_SEED_MAX).
 */
#define RP_SEED_MAX 256
static struct rp_raw seed[RP_SEED_MAX];
static uint32_t seed_n, seed_tid; /* (the child's forking thread's kernel tid) */

/* Encodes t's records not yet encoded (the child, before it forgets them),
 * so that its shadow stack is the one at the fork: those of its published
 * buffers from number consumed on, and of the one it fills, less the
 * first t->part of buffer number consumed, written already (rt_writer.c).
 * Returns 0, or -1 when out of memory. */
static int seed_catch_up(struct rp_tbuf *t)
{
    size_t cap = rp_enc_bound(rp_rt.bufrecs);
    uint8_t *out = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (out == MAP_FAILED)
        return -1;
    uint64_t c = atomic_load(&t->consumed), p = atomic_load(&t->produced);
    for (uint64_t k = c; k < p && p - c <= rp_rt.nbuf; k++) {
        uint32_t i = (uint32_t)(k % rp_rt.nbuf), from = k == c ? t->part : 0;
        if (t->bufs[i] && t->lens[i] > from && t->lens[i] <= rp_rt.bufrecs)
            (void)rp_enc_events(&rp_rt.enc, &t->enc, t->tid, t->bufs[i] + from, t->lens[i] - from,
                                out);
    }
    /* the buffer being filled; when it is number c, the periodic flush may
     * have written its first t->part records already */
    uint32_t from = p == c && t->base == t->bufs[c % rp_rt.nbuf] ? t->part : 0;
    if (t->base && t->pos > t->base + from && t->pos <= t->base + rp_rt.bufrecs)
        (void)rp_enc_events(&rp_rt.enc, &t->enc, t->tid, t->base + from,
                            (size_t)(t->pos - t->base) - from, out);
    munmap(out, cap);
    return 0;
}

RP_HIDDEN void rp_rt_seed_keys(const uint64_t *keys, uint32_t n, uint32_t max)
{
    seed_n = 0;
    if (n > max || n > RP_SEED_MAX)
        return;
    uint64_t now = rp_ticks();
    for (uint32_t d = 0; d < n; d++) {
        uint64_t pl = keys[d] & RP_RAW_PAYLOAD, op;
        switch ((unsigned)(keys[d] >> RP_RAW_SHIFT) - 1) { /* (kind + 1: enc_key, TKEY) */
        case RP_KIND_FUNC:
            op = RP_RAW_FUNC_ENTER;
            break;
        case RP_KIND_POINT: /* (every site's span) */
            op = RP_RAW_SITE_BEGIN;
            break;
        case RP_KIND_WAIT: /* a condition wait */
            op = RP_RAW_LOCK_WAIT, pl |= RP_RAW_COND_BIT;
            break;
        case RP_KIND_LOCK_WAIT:
            op = RP_RAW_LOCK_WAIT;
            break;
        default: /* (none other is a frame) the stack up to here */
            return;
        }
        seed[seed_n++] = (struct rp_raw){.ticks = now, .word = rp_raw_word(op, pl)};
    }
    seed_tid = (uint32_t)syscall(SYS_gettid) & RP_TID_MASK;
}

/* The seed of the child's trace from t, the forking thread's tbuf (see
 * above), in trace mode.  Cannot fail: out of memory, no seed. */
static void seed_make(struct rp_tbuf *t)
{
    uint64_t keys[RP_SEED_MAX];
    seed_n = 0;
    if (!t || rp_rt.direct || t->guard || t->enc.windowed || seed_catch_up(t) < 0 ||
        t->enc.nosnap || t->enc.depth > RP_SEED_MAX)
        return;
    for (uint32_t d = 0; d < t->enc.depth; d++)
        keys[d] = t->enc.stack[d].key;
    rp_rt_seed_keys(keys, t->enc.depth, rp_rt.bufrecs / 4);
}

RP_HIDDEN struct rp_raw *rp_rt_seed_put(uint32_t tid, struct rp_raw *p)
{
    if ((tid & RP_TID_MASK) != seed_tid)
        return p;
    memcpy(p, seed, seed_n * sizeof(*p));
    p += seed_n;
    __atomic_store_n(&seed_n, 0, __ATOMIC_RELAXED); /* (the child's later threads read it) */
    return p;
}

RP_HIDDEN uint32_t rp_rt_seed_pending(void)
{
    return __atomic_load_n(&seed_n, __ATOMIC_RELAXED);
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
    pthread_mutex_init(&rp_rt.enc_lock, NULL);
    pthread_mutex_init(&rp_rt.off_lock, NULL);
    /* the replaced trace's copy: a long-lived child (a daemon) would keep
     * the deleted file's blocks */
    rp_rt_out_old_close();
    atomic_store(&rp_rt.self_block, 0);
    /* The prepare handler waited for every thread's busy flag: one still
     * taken here means a thread was encoding (maybe allocating) at the
     * fork, which the child must never inherit.  Said, never expected
     * (e2e_fork checks it). */
    int busy = 0;
    seed_make(rp_self); /* (before the parent's encoder state goes) */
    for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next) {
        busy += t->self != 0; /* (busy alone may be a claim about to let go) */
        /* (the encoders' heap state of the parent's threads goes; their
         * mapped buffers stay, a bounded leak) */
        rp_enc_thread_free(&t->enc);
        rp_offq_free(&t->offq);
    }
    if (busy || fork_unwaited) {
        char what[64];
        snprintf(what, sizeof(what), "%d encoding, %d not waited for", busy, fork_unwaited);
        rp_rt_warn("internal error: the process forked among threads encoding their own "
                   "buffers (%s)",
                   what, 0);
    }
    rp_rot_atfork_child();
    rp_ring_atfork_child();
    rp_rt.writer_running = 0;
    atomic_store(&rp_rt.writer_ready, 0);
    rp_rt.sync_write = 1;
    rp_rt.waiters = 0;
    rp_rt.threads = NULL;
    rp_rt.fd = -1;
    uint16_t *g = atomic_exchange(&rp_rt_stream_gen, NULL); /* the child's trace: one thread */
    if (g)
        munmap(g, (size_t)(RP_TID_MASK + 1) * sizeof(*g));
    atomic_store(&rp_rt.failed, 0);
    rp_rt.events_written = rp_rt.lost_total = 0;
    /* the child's file counts the child's losses: not the parent's, by
     * reason either (its INFO's breakdown had the parent's before) */
    for (unsigned r = 0; r < RP_LOSS_N; r++) {
        atomic_store_explicit(&rp_rt_loss_nostate[r], 0, memory_order_relaxed);
        rp_rt_loss_retired[r] = 0;
    }
    rp_rt_unencoded = rp_rt_orphans_retired = 0;
    rp_enc_free(&rp_rt.enc);
    if (rp_rt.direct)
        rp_direct_atfork_child();
    if (rp_enc_init(&rp_rt.enc, rp_rt_describe_site, NULL) < 0 || open_output(1) < 0) {
        atomic_store(&rp_rt.mask, 0);
        return;
    }
    rp_rt_enc_hooks();
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

/*
 * The k-th smallest of v[0..n) (k < n), found in place by a three-way
 * quickselect (the spans are quantized: values repeat).  Allocates nothing
 * (see measure_overhead).  Reorders v: on return no value before v[k] is
 * larger and none after it smaller.
 */
static uint64_t select_u64(uint64_t *v, size_t n, size_t k)
{
    size_t lo = 0, hi = n; /* v[k] lies in [lo, hi): below lo none larger, from hi none smaller */
    assert(k < n);
    while (hi - lo > 1) {
        uint64_t pivot = v[lo + (hi - lo) / 2], t;
        size_t lt = lo, i = lo, gt = hi; /* [lo,lt) < pivot, [lt,i) == pivot, [gt,hi) > pivot */
        while (i < gt) {
            if (v[i] < pivot) {
                t = v[lt], v[lt++] = v[i], v[i++] = t;
            } else if (v[i] > pivot) {
                t = v[--gt], v[gt] = v[i], v[i] = t;
            } else {
                i++;
            }
        }
        if (k < lt)
            hi = lt;
        else if (k >= gt)
            lo = gt;
        else
            return pivot;
    }
    return v[k];
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
 *     self = mean over the recorded calls of (exit stamp - enter stamp),
 *            the top 5 % left out
 *     spread = 95th percentile of the same - self
 *
 * about 1 ms in all.  At start-up (rt_start, before recording begins: the
 * mask is off, so no other thread records; it is set to "func" for the
 * measurement and put back) and up to RP_LATE_N times more on the writer
 * thread while the program runs (rp_rt_measure_late: the mask as it is,
 * which must record functions), with the calling thread's rp_self pointing
 * to the scratch buffer.  Allocates nothing: its 168 KiB of scratch are
 * static (no two measurements overlap), since the writer's may be under way when
 * the program forks, and a child must not inherit an allocator lock or a
 * block that only the vanished writer knew.  Fails silently: when no
 * round recorded exactly its calls (a signal handler ran instrumented
 * code, a function filter left them out), *o stays zero.  Invariant on
 * success: 0 <= self <= pair.
 */
static void measure_overhead(struct rp_overhead *o, int at_start)
{
    static struct rp_tbuf scratch; /* big (the encoder's state): not on the stack */
    static struct rp_raw buf[2 * CALIB_CALLS + 1024];
    static uint64_t self[CALIB_ROUNDS * CALIB_CALLS];
    size_t cap = sizeof(buf) / sizeof(buf[0]), nself = 0;
    double best_a = 1e300, best_b = 1e300;
    unsigned used = 0;

    memset(o, 0, sizeof(*o));
    struct rp_tbuf *saved = rp_self;
    uint32_t saved_mask = atomic_load(&rp_rt.mask);
    memset(&scratch, 0, sizeof(scratch));
    scratch.base = buf;
    scratch.end = buf + cap;
    rp_self = &scratch;
    if (at_start)
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
    if (at_start)
        atomic_store(&rp_rt.mask, saved_mask);
    rp_self = saved;
    if (!used)
        return;
    o->pair = best_a > best_b ? best_a - best_b : 0;
    /* self: the mean of the lowest 95 % (those up to the 95th percentile,
     * which the selection leaves first), not their median: a clock that
     * moves by steps (24.5 ticks on an AMD Zen at 2445 MHz) shows a span
     * of 12 ticks as 0 or one step, about half the time each, so the
     * median is 0 or a whole step, while the mean over uniform phases is
     * the span; the top 5 % (interrupts, preemptions) are left out.  An
     * empty call's compensated span then lies in [0, spread] 95 times in
     * 100: the analysis counts a span no longer than that as below
     * resolution. */
    size_t k95 = nself * 95 / 100;
    uint64_t p95 = select_u64(self, nself, k95);
    double sum = 0;
    for (size_t i = 0; i <= k95; i++)
        sum += (double)self[i];
    o->self = sum / (double)(k95 + 1);
    o->spread = (double)p95 - o->self;
    if (o->self > o->pair)
        o->self = o->pair;
    o->rounds = used;
}

/*
 * A measurement while the program runs (calib.h), on the writer thread
 * once recording has gone on for RP_LATE_AFTER_MS, and again 10 and 100
 * times as long into it (RP_LATE_N): windows apart from the start-up one,
 * which a slower phase of the machine (a CPU still at a low clock, another
 * program's burst, a sanitizer's runtime) may have spanned.  Each written
 * at once as INFO overhead_late "PAIR SELF SPREAD" in ticks, or "none"
 * when no round of it was clean; the analysis uses the fastest of all.  Returns 1 when done
 * (written, or nothing to do any more: recording stopped), 0 to try again
 * at a later wake (functions not recorded now, a function filter on).
 */
RP_HIDDEN int rp_rt_measure_late(void)
{
    struct rp_overhead o = {0};
    char v[96], a[24], b[24], c[24];
    if (atomic_load(&rp_rt.stopped))
        return 1;
    if (!(atomic_load(&rp_rt.mask) & RP_CLASS_BIT_FUNC) || rp_funcs_gated())
        return 0;
    measure_overhead(&o, 0);
    if (o.rounds)
        snprintf(v, sizeof(v), "%s %s %s", rp_fmt_fixed(a, sizeof(a), o.pair, 2),
                 rp_fmt_fixed(b, sizeof(b), o.self, 2), rp_fmt_fixed(c, sizeof(c), o.spread, 2));
    else
        snprintf(v, sizeof(v), "none");
    rp_rt_info_now("overhead_late", v);
    return 1;
}

/* The once-only start.  Sets rp_rt_start_err on failure (nothing recorded). */
static int rt_start(void)
{
    rp_rt.quiet = getenv("RANKPROF_QUIET") != NULL;
    const char *mode = getenv("RANKPROF_MODE");
    rp_rt.direct = mode && !strcmp(mode, "direct");
    if (mode && !rp_rt.direct && strcmp(mode, "trace") != 0)
        rp_rt_warn("RANKPROF_MODE=%s is not 'trace' or 'direct'; using trace", mode, 0);
    if (rp_rt.direct && rp_direct_init() < 0) {
        rp_rt_start_err = RP_ENOMEM;
        return RP_ENOMEM;
    }
    rp_rt.clock_name = rp_clock_init();
    rp_rt.freq = rp_clock_calibrate(2);
    rp_rt.clock_step = rp_clock_step();
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
    const char *se = getenv("RANKPROF_SELF_ENCODE"); /* on unless "0" */
    rp_rt.self_encode = !se || strcmp(se, "0");
    const char *cls = getenv("RANKPROF_CLASSES");
    uint32_t mask = cls ? parse_classes(cls) : RP_CLASS_BIT_ALL;
    /* before the file's INFO, which carries the result; not in direct mode,
     * whose statistics are not compensated (docs/performance.md) */
    if (!rp_rt.direct && env_u64("RANKPROF_CALIBRATE", 1, 0, 1)) {
        measure_overhead(&rp_rt_overhead, 1);
        /* tests: a start-up measurement made in a slow window, which the
         * late one must overrule (tests/e2e_comp.sh) */
        uint64_t slow = env_u64("RANKPROF_TEST_CALIB_SLOW", 1, 1, 100);
        rp_rt_overhead.pair *= (double)slow;
        rp_rt_overhead.self *= (double)slow;
        rp_rt.calib_late = rp_rt_overhead.rounds && env_u64("RANKPROF_CALIBRATE_LATE", 1, 0, 1);
    }

    rp_rt.out = malloc(rp_enc_bound(rp_rt.bufrecs));
    rp_rt_out_recs = rp_rt.bufrecs;
    /* before the INFO, which names the source, and before any thread is
     * created (they inherit the context-switch events) */
    if (!rp_rt.direct)
        rp_offcpu_start();
    if (!rp_rt.out || rp_enc_init(&rp_rt.enc, rp_rt_describe_site, NULL) < 0 ||
        pthread_key_create(&rp_rt.key, rp_rt_thread_exit) != 0) {
        rp_rt_start_err = RP_ENOMEM;
        return RP_ENOMEM;
    }
    rp_rt_enc_hooks();
    if ((rp_rt_start_err = open_output(0)) < 0)
        return rp_rt_start_err;
    rp_ring_init(); /* --ring: before the first chunk */
    out_prologue();
    pthread_atfork(atfork_prepare, atfork_parent, atfork_child);
    /* the control signal first: fatal_install takes the real-time signals
     * still at their default */
    mask = rp_ctl_start(mask); /* 0 when started off (record --off) */
    if (rp_mpi_launcher())
        mask = 0; /* its ranks are the job (docs/multi-process.md) */
    if (env_u64("RANKPROF_SIGNALS", 1, 0, 1))
        fatal_install();
    rp_funcs_start(rp_rt.quiet); /* function filter, throttle: before the first event */
    if (!mask || rp_rt.direct)   /* no writer: not until recording starts, or never */
        rp_rt_out_old_close();
    else if (rp_rt_out_old_parked()) { /* the writer closes it: start it now, not at
                                          the first event, which may be long coming */
        rp_own_lock(&rp_rt.lock);
        rp_rt_writer_ensure_locked();
        rp_own_unlock(&rp_rt.lock);
    }
    __atomic_store_n(&rp_rt.rec_mono, rp_mono_ns(),
                     __ATOMIC_RELAXED); /* (the late measurement's clock) */
    atomic_store(&rp_rt.mask, mask);
    rp_sites_sync_classes(); /* switched-off classes: the sites' off bytes */
    return 0;
}

RP_HIDDEN void rp_rt_direct_finish(int fatal)
{
    rp_direct_exit_self(fatal); /* main's frames, after exit() from deep down */
    int64_t n = rp_direct_write(rp_out_chunk);
    if (n < 0)
        rp_rt_warn("direct mode: %s; the statistics are not saved", rp_strerror((int)n), 0);
    else
        rp_rt.events_written = (uint64_t)n;
    if (n >= 0)
        rp_direct_pub_saved(); /* (its checkpoint goes at the end, unless writing failed) */
    const char *pr = !fatal ? getenv("RANKPROF_PRINT") : NULL;
    if (pr && *pr && strcmp(pr, "0") != 0)
        rp_direct_print(stderr, 1e9 / rp_rt.freq);
}

/*
 * A process of the run other than the first that recorded nothing leaves
 * no file: a launcher's or a shell's fork + exec, an uninstrumented program
 * a script runs (its NAME.PID would be an empty process beside the ones
 * that did the work; the exec'd image of a forked child then writes
 * NAME.PID itself).  The first process's file always stays.  Best effort:
 * an unlink that fails leaves the empty file.
 */
static void empty_drop(void)
{
    if (out_other && !rp_rt.events_written && !rp_rt.lost_total)
        unlink(rp_rt.path);
}

/*
 * glibc before 2.41 lets a second thread's exit() end the process at once
 * (it runs the handlers it finds left, then _exit) while the first is
 * still in its handlers or in the final flush (rp_rt_shutdown), which then
 * loses its end.  So a
 * thread whose exit() comes while another thread's is under way (begun
 * through the wrapper, or its final flush running) waits for the flush:
 * at most twice the flush's deadline and 100 ms more, which leaves the
 * first thread's atexit handlers some time too (a glibc that serialises
 * exit() blocks the second caller for good).  The process that began it
 * is remembered by pid: a forked child's exit is its own first.
 */
RP_HIDDEN void rp_rt_exit_begin(void)
{
    static atomic_int exiting; /* the pid whose exit() has begun, 0 = none */
    static __thread int mine;
    fatal_wait_end(); /* before the program's atexit handlers run */
    int me = (int)getpid(), prev = atomic_exchange(&exiting, me);
    if (mine || shutdown_mine)
        return;
    if (prev != me && !(atomic_load(&rp_rt.stopped) && !atomic_load(&rp_rt.fatal))) {
        mine = 1; /* the first */
        return;
    }
    (void)wait_flag(&shutdown_done, 2 * (uint64_t)rp_rt.exit_timeout_ms + 100);
}

/*
 * The final flush.  Recording stops (mask = 0), the calling thread publishes
 * its partial buffer, and the writer gets until the deadline to write what
 * is published and the filled part of the buffers of the threads still
 * running (rp_rt_flush_partials: a thread encoding its own is claimed
 * first); a forked child, without a writer, does both itself.  If the
 * writer finishes in time the trace gets its closing MAPS, CLOCK and END
 * chunks; if not, the file ends without END and the analyzer says the run
 * ended abnormally.
 *
 * It runs once.  Another thread that ends the process meanwhile (a second
 * signal runs the program's handler, which calls _exit, on another thread;
 * two threads call exit) waits for that flush, or for a fatal signal's,
 * to end before its real _exit or exec ends the process in the middle of
 * it: at most the flush's own deadline and 100 ms more.  The thread that
 * runs it returns at once if it comes back here (a handler that
 * interrupted its flush): waiting there would wait for itself.
 */
static void shutdown_run(uint64_t end_ticks);

RP_HIDDEN void rp_rt_shutdown(void)
{
    static atomic_int once;
    uint64_t end_ticks = rp_ticks(); /* the process ends now, not after the flush */
    if (atomic_exchange(&once, 1)) {
        if (!shutdown_mine)
            shutdown_wait(&shutdown_done);
        return;
    }
    shutdown_mine = 1;
    if (atomic_load(&rp_rt.fatal)) { /* its handler has the writer write the END */
        shutdown_wait(&rp_rt.fatal_done);
        fatal_wait_end(); /* and ends the process */
    } else if (!rp_rt_start_err && __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) >= 0)
        shutdown_run(end_ticks);
    atomic_store(&shutdown_done, 1);
}

static void shutdown_run(uint64_t end_ticks)
{
    atomic_store(&rp_rt.mask, 0);
    /* the calling thread's buffer and its counted losses are written here
     * (direct mode: rp_rt_direct_finish does it); the buffer not when the exit
     * interrupted its own append (a handler calling exit), the losses
     * always: that append never resumes, and the writer is gone by then */
    struct rp_tbuf *t = rp_rt.direct ? NULL : rp_self;
    struct rp_tbuf *self = t;
    if (t && t->guard)
        t = NULL;
    if (t && t->base && t->pos > t->base) {
        t->guard = 1;
        rp_rt_buf_publish(t);
    }
    rp_own_lock(&rp_rt.lock);
    atomic_store(&rp_rt.stopped, 1);
    int running = rp_rt.writer_running;
    pthread_cond_broadcast(&rp_rt.wake);
    pthread_cond_broadcast(&rp_rt.space);
    rp_own_unlock(&rp_rt.lock);

    int done = 1;
    if (running) { /* (its part done, not the thread's end: rp_rt.writer_finished) */
        done = wait_flag(&rp_rt.writer_finished, rp_rt.exit_timeout_ms);
        if (done) /* it ends by itself: nobody waits for it (nor leaks it) */
            pthread_detach(rp_rt.writer);
    } else { /* a forked child's (sync_write): as the writer's last pass */
        rp_own_lock(&rp_rt.drain_lock);
        while (rp_rt_drain_once())
            ;
        rp_rt_flush_partials(); /* what the threads still running have recorded */
        rp_own_unlock(&rp_rt.drain_lock);
    }
    if (!done) {
        rp_rt_warn("final flush of %s timed out; the trace ends early", rp_rt.path, 0);
        rp_ctl_shutdown();
        return;
    }
    if (self)
        rp_rt_write_pending_loss(self); /* the writer is gone: this thread writes */
    if (!rp_rt.direct) { /* (the writer is gone: the edges left are this thread's to write) */
        rp_own_lock(&rp_rt.lock);
        for (struct rp_tbuf *x = rp_rt.threads; x; x = x->next)
            if (rp_rt_claim_wait(x)) { /* (a thread encoding its own finishes first) */
                rp_rt_win_catch_up(x, UINT64_MAX);
                rp_rt_release(x);
            }
        rp_own_unlock(&rp_rt.lock);
    }
    if (rp_rt.direct)
        rp_rt_direct_finish(0);
    rp_funcs_write(rp_out_chunk, 0); /* throttled functions' call counts */
    rp_out_end_info(1);
    rp_out_maps();
    rp_out_clock();
    int status1 = atomic_load(&exit_status1);
    rp_out_end(RP_END_EXIT | (status1 ? RP_END_STATUS : 0), status1 ? status1 - 1 : 0, end_ticks);
    if (atomic_load(&rp_rt.failed) && rp_rt_unwritten) {
        char num[32];
        snprintf(num, sizeof(num), "%llu", (unsigned long long)rp_rt_unwritten);
        rp_rt_warn("%s events could not be written to the trace", num, 0);
    }
    int fd = rp_rt.fd;
    /* first: the close interposer would move it (atomic: other threads'
     * close() compare with it) */
    __atomic_store_n(&rp_rt.fd, -1, __ATOMIC_RELAXED);
    close(fd);
    empty_drop();
    atomic_store(&shutdown_flushed, 1);
    rp_ctl_shutdown();
}

/*
 * After the final flush of exit() (rt_dtor), the writer's state goes (the
 * threads' buffers stay mapped, since threads still running may touch
 * them), so that a leak checker run at exit finds none.  Not after _exit,
 * quick_exit or exec: their flush may run in a signal handler that
 * interrupted malloc (free is not async-signal-safe), and the process or
 * its image ends anyway.
 */
static void shutdown_free(void)
{
    if (!shutdown_mine || !atomic_load(&shutdown_flushed))
        return;
    rp_own_lock(&rp_rt.lock);
    for (struct rp_tbuf *x = rp_rt.threads; x; x = x->next) {
        rp_enc_thread_free(&x->enc);
        rp_offq_free(&x->offq);
        rp_ring_thread_free(&x->ring);
    }
    rp_own_unlock(&rp_rt.lock);
    rp_enc_free(&rp_rt.enc);
    free(rp_rt.out);
    rp_rt.out = NULL;
}

/*
 * The recorder's mark in the binary it is linked into: an ELF note, owner
 * "rankprof", type 1, its descriptor the note's version.  `rankprof record`
 * looks for it in the program (cmd_record.c) and then does not preload a
 * second recorder, which would take the program's signals and lock
 * functions.  A note section is kept by strip; the constructor's reference
 * keeps it from the linker's --gc-sections.
 */
static const struct {
    uint32_t namesz, descsz, type;
    char name[12];
    uint32_t version;
} rt_note __attribute__((section(".note.rankprof"), aligned(4), used)) = {9, 4, 1, "rankprof", 1};

__attribute__((constructor)) static void rt_ctor(void)
{
    __asm__ volatile("" : : "r"(&rt_note)); /* (keeps the note: above) */
    rp_rt_initing = 1;
    pthread_once(&rp_rt_once, rp_rt_start_once);
    /* constructors run on the main thread: its pthread_exit is seen */
    if (!rp_rt_start_err && pthread_key_create(&rp_rt_main_key, rp_rt_main_exit) == 0)
        pthread_setspecific(rp_rt_main_key, &rp_rt_main_key);
    rp_rt_initing = 0;
}

/* Priority 101, the first a program may use: in a program linked with
 * librankprof.a, whose destructors are sorted with ours, it runs after the
 * program's own (of default priority), so that their calls are recorded;
 * linked as a shared library, ours runs after the program's anyway. */
__attribute__((destructor(101))) static void rt_dtor(void)
{
    /* the join of the writer is a cancellation point: a thread with a
     * cancel pending that calls exit() must not be cancelled in the flush */
    int cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs);
    rp_rt_shutdown();
    shutdown_free();
    rp_rt_cancel_on(cs);
}

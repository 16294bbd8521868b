// SPDX-License-Identifier: MIT
/*
 * bench_locks.c - what a recorded lock event costs next to a recorded
 * function event, measured in one run: ns per uncontended
 * pthread_mutex_lock/unlock pair and per call of an empty instrumented
 * function (an enter/exit pair), each next to its own unrecorded baseline,
 * one thread, best of ROUNDS rounds of N each (the four loops interleaved in
 * every round, so that a noisy moment hits all of them).
 *
 *   bench_locks [N]     prints one line:
 *       lock_pair_ns X func_pair_ns Y lock_plain_ns A func_plain_ns B
 *       lock_event_ns (X-A)/2 func_event_ns (Y-B)/2 ratio lock_event/func_event
 *
 * The baselines need no second run: lock_plain calls libc's own
 * pthread_mutex_lock/unlock (looked up in libc.so.6, past any preloaded
 * interposer), func_plain calls an uninstrumented copy of the function and
 * libc's empty __cyg_profile_func_* stubs, which is what an instrumented
 * call costs when nothing is preloaded.  Run it under `rankprof record`
 * (the recorder preloaded: each pair records two events) with buffers that
 * do not fill, RANKPROF_BUFSIZE=67108864; run plain, the event costs are
 * about 0 and the ratio is printed as "-".  docs/locks.md has the numbers.
 *
 * A process with one thread locks a glibc mutex without an atomic
 * instruction (4-6 ns a pair here); a recorded process has the writer
 * thread, so the bench starts and joins a thread first, and every figure is
 * for the atomic path that any multithreaded program takes.
 *
 * Fails (exit 2) on a bad argument, when libc's functions cannot be found or
 * no thread can be started.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOHOOK __attribute__((no_instrument_function))
#define ROUNDS 15

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned sink;

static int (*libc_lock)(pthread_mutex_t *);
static int (*libc_unlock)(pthread_mutex_t *);
static void (*libc_enter)(void *, void *);
static void (*libc_exit)(void *, void *);

/* The only instrumented function. */
__attribute__((noinline)) void work(void)
{
    __asm__ __volatile__("" ::: "memory");
}

/* The same, without hooks: the baseline calls the hooks itself. */
NOHOOK __attribute__((noinline)) static void work_plain(void)
{
    __asm__ __volatile__("" ::: "memory");
}

NOHOOK static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

NOHOOK static double lock_pairs(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        pthread_mutex_lock(&m);
        sink++;
        pthread_mutex_unlock(&m);
    }
    return (now_ns() - t0) / (double)n;
}

NOHOOK static double lock_plain(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        libc_lock(&m);
        sink++;
        libc_unlock(&m);
    }
    return (now_ns() - t0) / (double)n;
}

NOHOOK static double func_pairs(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        work();
        sink++;
    }
    return (now_ns() - t0) / (double)n;
}

NOHOOK static double func_plain(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        libc_enter((void *)work_plain, NULL);
        work_plain();
        libc_exit((void *)work_plain, NULL);
        sink++;
    }
    return (now_ns() - t0) / (double)n;
}

NOHOOK static void *idle(void *arg)
{
    return arg;
}

NOHOOK static double min2(double a, double b)
{
    return a < b ? a : b;
}

NOHOOK int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 20000;
    if (n < 1) {
        fprintf(stderr, "usage: %s [N >= 1]\n", argv[0]);
        return 2;
    }
    void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    if (libc) {
        *(void **)&libc_lock = dlsym(libc, "pthread_mutex_lock");
        *(void **)&libc_unlock = dlsym(libc, "pthread_mutex_unlock");
        *(void **)&libc_enter = dlsym(libc, "__cyg_profile_func_enter");
        *(void **)&libc_exit = dlsym(libc, "__cyg_profile_func_exit");
    }
    if (!libc_lock || !libc_unlock || !libc_enter || !libc_exit) {
        fprintf(stderr, "bench_locks: libc's functions not found: %s\n", dlerror());
        return 2;
    }
    /* glibc locks a mutex without an atomic instruction while the process
     * has one thread; the recorder's writer thread ends that, so a thread
     * made here puts the plain run on the same (multithreaded) path. */
    pthread_t th;
    if (pthread_create(&th, NULL, idle, NULL) != 0 || pthread_join(th, NULL) != 0) {
        fprintf(stderr, "bench_locks: cannot start a thread\n");
        return 2;
    }
    double lk = 1e30, fn = 1e30, lk0 = 1e30, fn0 = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        lk = min2(lk, lock_pairs(n));
        fn = min2(fn, func_pairs(n));
        lk0 = min2(lk0, lock_plain(n));
        fn0 = min2(fn0, func_plain(n));
    }
    double le = (lk - lk0) / 2, fe = (fn - fn0) / 2;
    printf("lock_pair_ns %.2f func_pair_ns %.2f lock_plain_ns %.2f func_plain_ns %.2f "
           "lock_event_ns %.2f func_event_ns %.2f ratio ",
           lk, fn, lk0, fn0, le, fe);
    if (fe >= 1.0)
        printf("%.2f\n", le / fe);
    else
        printf("-\n");
    return 0;
}

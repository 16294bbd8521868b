/*
 * bench_locks.c - what a recorded lock costs next to a recorded function:
 * ns per uncontended pthread_mutex_lock/unlock pair and per call of an
 * empty instrumented function (an enter/exit pair), one thread, best of
 * ROUNDS rounds of N each.
 *
 *   bench_locks [N]     prints "lock_pair_ns X func_pair_ns Y"
 *
 * Run it plain (the baseline: a bare lock pair, and a call whose hooks are
 * glibc's empty __cyg_profile_func_* stubs) and under `rankprof record`
 * (the recorder preloaded: each pair records two events).  The recorded cost per event is (recorded
 * - plain) / 2 for each; docs/locks.md has the numbers.  Only work() is instrumented.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOHOOK __attribute__((no_instrument_function))
#define ROUNDS 5

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned sink;

__attribute__((noinline)) void work(void)
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

NOHOOK static double func_pairs(long n)
{
    double t0 = now_ns();
    for (long i = 0; i < n; i++) {
        work();
        sink++;
    }
    return (now_ns() - t0) / (double)n;
}

NOHOOK int main(int argc, char **argv)
{
    long n = argc > 1 ? strtol(argv[1], NULL, 10) : 1000000;
    if (n < 1) {
        fprintf(stderr, "usage: %s [N >= 1]\n", argv[0]);
        return 2;
    }
    double best_lock = 1e30, best_func = 1e30;
    for (int r = 0; r < ROUNDS; r++) {
        double l = lock_pairs(n), f = func_pairs(n);
        best_lock = l < best_lock ? l : best_lock;
        best_func = f < best_func ? f : best_func;
    }
    printf("lock_pair_ns %.2f func_pair_ns %.2f\n", best_lock, best_func);
    return 0;
}

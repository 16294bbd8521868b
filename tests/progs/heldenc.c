// SPDX-License-Identifier: MIT
/*
 * heldenc.c - a thread that fills many recorder buffers while it holds the
 * program's locks, for tests/e2e_heldenc.sh (docs/design.md, §3: a thread
 * holding one of the program's locks leaves its full buffers to the
 * writer thread, so no other thread waits for its encoding).
 *
 * Usage: prog_heldenc held|after CALLS
 *
 * The holder thread goes through the program's kinds of lock one after the
 * other, each taken and let go once, in this order, with no instrumented
 * call between a release and the next acquisition:
 *
 *   big       pthread_mutex_lock; inside, NCOND condition waits whose
 *             deadline has passed (the mutex is let go and taken again in
 *             each); a second thread (waiter) takes big once the holder
 *             has it, so it blocks on the holder's hold
 *   rw        pthread_rwlock_wrlock, then pthread_rwlock_rdlock
 *   spin      pthread_spin_lock
 *   try       pthread_mutex_trylock (it is free: it succeeds)
 *   timed     pthread_mutex_timedlock (free: it succeeds)
 *   api       rp_lock_acquired / rp_lock_released, when the recorder is
 *             preloaded (the address-based API)
 *
 * It also lets go of locks it never took: pthread_mutex_unlock of an
 * error-checking mutex, which fails with EPERM (unchecked()), and
 * rp_lock_released on `stray`.  Neither may make the count of locks held
 * negative; the failed unlock is no release at all.
 *
 *   held   unchecked() first thing inside big's hold, then work(CALLS / 8)
 *          before each of big's first two condition waits and inside each
 *          other hold: every call of leaf() is made holding a lock, and so
 *          is every record of the holder but its own enter and exit
 *   after  the holds empty, then unchecked(), the release of `stray` and
 *          work(CALLS), holding nothing
 *
 * leaf() is called CALLS times in both modes (CALLS a multiple of 8);
 * work() 8 times (held) or 9 (after: 8 empty).  The program prints
 * "leaf CALLS" and exits 0.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Test programs are not linked with rankprof: the API resolves when the
 * recorder is preloaded (rankprof record), and is skipped otherwise. */
#define RANKPROF_WEAK
#include "rankprof.h"

#define NCOND 4

static long calls;
static int held; /* mode held: the calls are made inside the holds */
static pthread_mutex_t big = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_spinlock_t spin;
static pthread_mutex_t try = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t timed = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t checked; /* error-checking: its stray unlock fails */
static int api, stray;
static atomic_int big_taken;
static volatile unsigned long sink;
static long leaves;

void leaf(void)
{
    sink++;
    leaves++;
}

void work(long n)
{
    for (long i = 0; i < n; i++)
        leaf();
}

/* Lets go of the error-checking mutex, which the thread does not hold;
 * exits 1 if that does not fail. */
void unchecked(void)
{
    if (pthread_mutex_unlock(&checked) != EPERM) {
        fprintf(stderr, "unlocking an error-checking mutex not held did not fail\n");
        exit(1);
    }
}

void *waiter(void *arg)
{
    (void)arg;
    while (!atomic_load(&big_taken)) /* (1 ms: a few records, never a buffer's worth) */
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    pthread_mutex_lock(&big);
    pthread_mutex_unlock(&big);
    return NULL;
}

void *holder(void *arg)
{
    (void)arg;
    long unit = held ? calls / 8 : 0;
    struct timespec past;
    clock_gettime(CLOCK_REALTIME, &past);
    past.tv_sec -= 1;

    pthread_mutex_lock(&big);
    atomic_store(&big_taken, 1);
    if (held)
        unchecked();
    for (int i = 0; i < NCOND; i++) {
        if (i < 2)
            work(unit);
        int r = pthread_cond_timedwait(&cv, &big, &past);
        if (r != ETIMEDOUT && r != 0) {
            fprintf(stderr, "pthread_cond_timedwait: %s\n", strerror(r));
            exit(1);
        }
    }
    pthread_mutex_unlock(&big);
    pthread_rwlock_wrlock(&rw);
    work(unit);
    pthread_rwlock_unlock(&rw);
    pthread_rwlock_rdlock(&rw);
    work(unit);
    pthread_rwlock_unlock(&rw);
    pthread_spin_lock(&spin);
    work(unit);
    pthread_spin_unlock(&spin);
    if (pthread_mutex_trylock(&try) != 0) {
        fprintf(stderr, "pthread_mutex_trylock failed on a free mutex\n");
        exit(1);
    }
    work(unit);
    pthread_mutex_unlock(&try);
    struct timespec later;
    clock_gettime(CLOCK_REALTIME, &later);
    later.tv_sec += 10;
    if (pthread_mutex_timedlock(&timed, &later) != 0) {
        fprintf(stderr, "pthread_mutex_timedlock failed on a free mutex\n");
        exit(1);
    }
    work(unit);
    pthread_mutex_unlock(&timed);
    if (rp_lock_acquired) {
        rp_lock_acquired(&api);
        work(unit);
        rp_lock_released(&api);
    } else {
        work(unit); /* (not preloaded: the same calls, unheld) */
    }
    if (!held) {
        unchecked();
        if (rp_lock_released)
            rp_lock_released(&stray);
        work(calls);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3 || (strcmp(argv[1], "held") && strcmp(argv[1], "after")) ||
        (calls = atol(argv[2])) <= 0 || calls % 8) {
        fprintf(stderr, "usage: prog_heldenc held|after CALLS (a multiple of 8)\n");
        return 2;
    }
    held = !strcmp(argv[1], "held");
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK);
    pthread_mutex_init(&checked, &a);
    pthread_mutexattr_destroy(&a);

    pthread_t h, w;
    if (pthread_create(&h, NULL, holder, NULL) || pthread_create(&w, NULL, waiter, NULL)) {
        fprintf(stderr, "pthread_create failed\n");
        return 1;
    }
    pthread_join(h, NULL);
    pthread_join(w, NULL);
    printf("leaf %ld\n", leaves);
    return 0;
}

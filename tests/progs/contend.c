// SPDX-License-Identifier: MIT
/*
 * contend.c - a multi-threaded program with known lock traffic, for the
 * lock profiling tests (tests/e2e_locks.sh).
 *
 * Usage: prog_contend [ITERS]   (ITERS defaults to 10000)
 *
 * Phases, one after the other (each joins its threads before the next):
 *
 *   1. mutex:  main takes the static mutex `counter_lock`, starts 4
 *              threads (mutex_worker), meets them at a barrier and keeps
 *              the lock 20 ms more, so that their first attempts find it
 *              taken (contention is certain, not left to the scheduler).
 *              Each worker then locks and unlocks it ITERS times, holding
 *              it for a short spin (crit_work).
 *   2. rwlock: 4 threads (rw_worker): each does ITERS/10 rounds of one
 *              write lock (table_lock, wrlock) and 4 read locks (rdlock).
 *   3. spin:   2 threads (spin_worker) each lock and unlock the static
 *              spinlock `spin` ITERS/10 times.
 *   4. try:    main takes `try_lock` and, while holding it, calls
 *              pthread_mutex_trylock on it from a helper thread
 *              (try_worker) exactly TRIES = 5 times: 5 failed attempts,
 *              then once pthread_mutex_timedlock with a 2 ms timeout, which
 *              times out: a sixth failed wait, of at least 2 ms.
 *              Then main takes `api_lock` through the rankprof API
 *              (rp_lock_wait / rp_lock_acquired / rp_lock_released) 3 times,
 *              the lock being named "api_lock" with rp_lock_name.
 *   5. cond:   a thread (cv_worker) takes `cv_lock` and waits on a
 *              condition variable until main, 30 ms after the worker is
 *              known to wait, sets the flag.  The wait releases the mutex,
 *              so no hold of cv_lock lasts anywhere near 30 ms: the worker
 *              has two holds (before and after the wait, more only on a
 *              spurious wake-up), main one.
 *
 * Exact lock counts (acquisitions = hold spans), for I = ITERS:
 *
 *   lock           acquisitions             failed attempts
 *   counter_lock   4 * I + 1 (main's)       0
 *   table_lock     4 * (I/10) * 5           0
 *   spin           2 * (I/10)               0
 *   try_lock       1                        6 (5 tries, 1 timeout)
 *   api_lock       3 (all through the API, each with a wait span)
 *
 * counter_lock has at least one contended acquisition (a worker that reached
 * it within the 20 ms); the others depend on the scheduler.
 *
 * Calls of the instrumented functions: mutex_worker 4, rw_worker 4,
 * spin_worker 2, try_worker 1, crit_work 4 * I.  The program prints
 * "counter=<4*I> table=<4*(I/10)> spin=<2*(I/10)> tries=5 timeouts=1" and
 * exits 0.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Test programs are not linked with rankprof: the API resolves when the
 * recorder is preloaded (rankprof record), and is skipped otherwise. */
#define RANKPROF_WEAK
#include "rankprof.h"

#define NMUTEX 4
#define NRW    4
#define NSPIN  2
#define TRIES  5

static long iters = 10000;
static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t try_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_spinlock_t spin;
static volatile long counter, table, spun, sink;
static int api_lock; /* stands for an RTOS mutex: only its address matters */
static pthread_barrier_t start;
static int timeouts;
static pthread_mutex_t cv_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static atomic_int cv_started;
static int cv_ready;

/* Work done under counter_lock: long enough for the others to queue. */
static void crit_work(void)
{
    for (int i = 0; i < 200; i++)
        sink += i;
    counter++;
}

static void *mutex_worker(void *arg)
{
    (void)arg;
    pthread_barrier_wait(&start);
    for (long i = 0; i < iters; i++) {
        pthread_mutex_lock(&counter_lock);
        crit_work();
        pthread_mutex_unlock(&counter_lock);
    }
    return NULL;
}

static void *rw_worker(void *arg)
{
    (void)arg;
    volatile long seen = 0;
    for (long i = 0; i < iters / 10; i++) {
        pthread_rwlock_wrlock(&table_lock);
        table++;
        pthread_rwlock_unlock(&table_lock);
        for (int r = 0; r < 4; r++) {
            pthread_rwlock_rdlock(&table_lock);
            seen += table;
            pthread_rwlock_unlock(&table_lock);
        }
    }
    return NULL;
}

static void *spin_worker(void *arg)
{
    (void)arg;
    for (long i = 0; i < iters / 10; i++) {
        pthread_spin_lock(&spin);
        spun++;
        pthread_spin_unlock(&spin);
    }
    return NULL;
}

static void *try_worker(void *arg)
{
    int *failed = arg;
    for (int i = 0; i < TRIES; i++)
        if (pthread_mutex_trylock(&try_lock) == EBUSY)
            (*failed)++;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += 2 * 1000 * 1000;
    if (ts.tv_nsec >= 1000000000) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000;
    }
    if (pthread_mutex_timedlock(&try_lock, &ts) == ETIMEDOUT)
        timeouts++;
    return NULL;
}

static void *cv_worker(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&cv_lock);
    atomic_store(&cv_started, 1);
    while (!cv_ready)
        pthread_cond_wait(&cv, &cv_lock);
    pthread_mutex_unlock(&cv_lock);
    return NULL;
}

/* Runs n threads of fn; with held, meets them at the start barrier while
 * holding *held, and releases it 20 ms later. */
static void run(void *(*fn)(void *), int n, void *arg, pthread_mutex_t *held)
{
    pthread_t t[8];
    if (held) {
        pthread_mutex_lock(held);
        pthread_barrier_init(&start, NULL, (unsigned)n + 1);
    }
    for (int i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, fn, arg) != 0) {
            perror("pthread_create");
            exit(1);
        }
    if (held) {
        pthread_barrier_wait(&start);
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
        pthread_mutex_unlock(held);
    }
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
}

int main(int argc, char **argv)
{
    if (argc > 1)
        iters = strtol(argv[1], NULL, 10);
    if (iters < 10) {
        fprintf(stderr, "usage: %s [ITERS >= 10]\n", argv[0]);
        return 2;
    }
    pthread_spin_init(&spin, PTHREAD_PROCESS_PRIVATE);

    run(mutex_worker, NMUTEX, NULL, &counter_lock);
    run(rw_worker, NRW, NULL, NULL);
    run(spin_worker, NSPIN, NULL, NULL);

    int failed = 0;
    pthread_mutex_lock(&try_lock);
    run(try_worker, 1, &failed, NULL);
    pthread_mutex_unlock(&try_lock);

    if (rp_lock_name)
        rp_lock_name(&api_lock, "api_lock");
    for (int i = 0; i < 3 && rp_lock_wait; i++) {
        rp_lock_wait(&api_lock);
        rp_lock_acquired(&api_lock);
        rp_lock_released(&api_lock);
    }

    pthread_t w;
    pthread_create(&w, NULL, cv_worker, NULL);
    while (!atomic_load(&cv_started))
        nanosleep(&(struct timespec){0, 1000 * 1000}, NULL);
    nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
    pthread_mutex_lock(&cv_lock); /* only once the worker waits: it held it */
    cv_ready = 1;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&cv_lock);
    pthread_join(w, NULL);

    printf("counter=%ld table=%ld spin=%ld tries=%d timeouts=%d\n", counter, table, spun, failed,
           timeouts);
    return counter == NMUTEX * iters && failed == TRIES && timeouts == 1 ? 0 : 1;
}

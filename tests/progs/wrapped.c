// SPDX-License-Identifier: MIT
/*
 * wrapped.c - locks that do not nest like calls, recorded by
 * tests/e2e_holds.sh (docs/locks.md, "Holds are intervals"):
 *
 *   - a wrapped mutex, as zstd's AIO_IOPool_lockJobsMutex: lock_jobs()
 *     takes jobs_mutex and returns holding it, the caller works, and
 *     unlock_jobs() releases it.  NTHREADS threads take it JOBS times each
 *     (NTHREADS * JOBS = 147 acquisitions, contended or not);
 *   - hand-over-hand locking: walk() takes hoh_a, then hoh_b and releases
 *     hoh_a, takes hoh_c and releases hoh_b, takes hoh_d and releases
 *     hoh_c, then releases hoh_d (holds that overlap without nesting), WALKS
 *     times on the main thread;
 *   - a hold released in its caller: take_then_return() works a little,
 *     takes hoh_a and returns, walk_tail() (its caller) releases it, WALKS
 *     times.
 *
 * Expected: jobs_mutex 147 acquisitions, all from lock_jobs (the innermost
 * function at the acquisition), none from unlock_jobs; hoh_a 2 * WALKS
 * (WALKS from walk, WALKS from take_then_return), hoh_b, hoh_c, hoh_d WALKS
 * each from walk; calls: lock_jobs 147, unlock_jobs 147, crunch 147, walk
 * WALKS, take_then_return WALKS, walk_tail WALKS; no unmatched exit, no
 * unclosed span.  Output: "jobs 147 walks WALKS sum S".
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define NTHREADS 3
#define JOBS     49
#define WALKS    25

pthread_mutex_t jobs_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t hoh_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t hoh_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t hoh_c = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t hoh_d = PTHREAD_MUTEX_INITIALIZER;
static uint64_t jobs_done, total;

void lock_jobs(void)
{
    pthread_mutex_lock(&jobs_mutex);
}

void unlock_jobs(void)
{
    pthread_mutex_unlock(&jobs_mutex);
}

uint64_t crunch(uint64_t x)
{
    for (int i = 0; i < 2000; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

void *worker(void *arg)
{
    uint64_t x = (uint64_t)(uintptr_t)arg;
    for (int i = 0; i < JOBS; i++) {
        lock_jobs();
        x = crunch(x);
        jobs_done++;
        unlock_jobs();
    }
    return (void *)(uintptr_t)(x & 1);
}

void walk(void)
{
    pthread_mutex_lock(&hoh_a);
    pthread_mutex_lock(&hoh_b);
    pthread_mutex_unlock(&hoh_a);
    total = crunch(total);
    pthread_mutex_lock(&hoh_c);
    pthread_mutex_unlock(&hoh_b);
    pthread_mutex_lock(&hoh_d);
    pthread_mutex_unlock(&hoh_c);
    total = crunch(total);
    pthread_mutex_unlock(&hoh_d);
}

void take_then_return(void)
{
    /* some work of its own before the lock, so that its calls weigh time in
     * the ranking (returning at once, 25 calls could measure 0 ns) */
    for (volatile int i = 0; i < 200; i++)
        ;
    pthread_mutex_lock(&hoh_a);
}

void walk_tail(void)
{
    take_then_return();
    total = crunch(total);
    pthread_mutex_unlock(&hoh_a);
}

int main(void)
{
    pthread_t t[NTHREADS];
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
    for (int i = 0; i < WALKS; i++) {
        walk();
        walk_tail();
    }
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(t[i], NULL);
    printf("jobs %llu walks %d sum %llu\n", (unsigned long long)jobs_done, WALKS,
           (unsigned long long)(total & 0xff));
    return 0;
}

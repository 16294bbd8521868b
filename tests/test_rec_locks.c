// SPDX-License-Identifier: MIT
/*
 * test_rec_locks.c - unit test of the lock interposers (src/record/locks.c)
 * linked statically: the test's own calls of pthread_mutex_* land in the
 * recorder's definitions, which the constructor has started recording with
 * the inherited environment (all classes).  Each step reads the raw records
 * the calling thread appended to its buffer (rp_self, src/record/rt.h) and
 * checks, exactly:
 *
 *   - an uncontended lock is one ACQ, stamped between a counter read before
 *     the call and one after it; unlock one REL, not before the ACQ;
 *   - the recorder's own mutexes (rp_rt.lock, rp_rt.drain_lock: the static
 *     link's exclusion range is struct rp_rt) record nothing;
 *   - the program's try-lock of a busy mutex is WAIT then FAIL;
 *   - a contended lock is WAIT (stamped before the call: the request) then
 *     ACQ stamped after the holder's release was stamped (REL in the other
 *     thread's buffer), so the two holds cannot overlap;
 *   - with the lock class off nothing is recorded;
 *   - a thread's ticks never go backwards.
 *
 * Fails (exit 1) on any failed check; the run's trace file is removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "record/rt.h"
#include "rec_raw.h"

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t busy = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t bar;
static _Atomic uint64_t helper_rel; /* ticks of the helper's REL of busy */

/* Holds busy from the first barrier to the second, then (after 20 ms, so
 * that the main thread is blocked by then) releases it. */
static void *helper(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&busy);
    pthread_barrier_wait(&bar); /* 1: busy is held */
    pthread_barrier_wait(&bar); /* 2: the try-lock was made */
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
    struct rp_raw *before = rp_self->pos;
    pthread_mutex_unlock(&busy);
    CHECK_EQ(rp_self->pos - before, 1);
    CHECK_EQ(op_of(before), RP_RAW_LOCK_REL);
    atomic_store(&helper_rel, before->ticks);
    return NULL;
}

int main(void)
{
    alarm(60);
    if (!(atomic_load(&rp_rt.mask) & RP_CLASS_BIT_LOCK) || !rp_clock_tsc) {
        printf("test_rec_locks: skipped (lock class off or no cycle counter)\n");
        return 0;
    }
    rp_classes_set(0, RP_CLASS_BIT_WAIT); /* lock events only: the joins are not waits here */
    rp_lock_released(&m);                 /* the thread's first event sets up its buffer */
    if (!rp_self) {
        fprintf(stderr, "test_rec_locks: the recorder gave this thread no buffer\n");
        return 1;
    }
    struct rp_raw *at = rp_self->pos, *r;
    struct rp_raw *start = at;

    /* uncontended: one ACQ, stamped inside the call; one REL */
    uint64_t c0 = rp_counter();
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    uint64_t c1 = rp_counter();
    CHECK_EQ(since(&at, &r), 1);
    CHECK_EQ(op_of(r), RP_RAW_LOCK_ACQ);
    CHECK_EQ(pl_of(r), (uintptr_t)&m);
    CHECK(r->ticks >= c0 && r->ticks <= c1);
    uint64_t acq = r->ticks;
    CHECK_EQ(pthread_mutex_unlock(&m), 0);
    CHECK_EQ(since(&at, &r), 1);
    CHECK_EQ(op_of(r), RP_RAW_LOCK_REL);
    CHECK_EQ(pl_of(r), (uintptr_t)&m);
    CHECK(r->ticks >= acq);

    /* the recorder's own mutexes pass through */
    CHECK_EQ(pthread_mutex_lock(&rp_rt.drain_lock), 0);
    CHECK_EQ(pthread_mutex_unlock(&rp_rt.drain_lock), 0);
    CHECK_EQ(pthread_mutex_lock(&rp_rt.lock), 0);
    CHECK_EQ(pthread_mutex_unlock(&rp_rt.lock), 0);
    CHECK_EQ(since(&at, &r), 0);

    /* a busy try-lock, then a contended lock */
    pthread_t th;
    CHECK_EQ(pthread_barrier_init(&bar, NULL, 2), 0);
    CHECK_EQ(pthread_create(&th, NULL, helper, NULL), 0);
    pthread_barrier_wait(&bar);
    (void)since(&at, &r); /* the barrier's own mutex is not a pthread_mutex call */
    CHECK_EQ(pthread_mutex_trylock(&busy), EBUSY);
    CHECK_EQ(since(&at, &r), 2);
    CHECK_EQ(op_of(&r[0]), RP_RAW_LOCK_WAIT);
    CHECK_EQ(op_of(&r[1]), RP_RAW_LOCK_FAIL);
    CHECK_EQ(pl_of(&r[0]), (uintptr_t)&busy);
    CHECK_EQ(pl_of(&r[1]), (uintptr_t)&busy);
    CHECK(r[1].ticks >= r[0].ticks);
    pthread_barrier_wait(&bar);
    (void)since(&at, &r);
    c0 = rp_counter();
    CHECK_EQ(pthread_mutex_lock(&busy), 0);
    c1 = rp_counter();
    CHECK_EQ(since(&at, &r), 2);
    CHECK_EQ(op_of(&r[0]), RP_RAW_LOCK_WAIT);
    CHECK_EQ(op_of(&r[1]), RP_RAW_LOCK_ACQ);
    CHECK(r[0].ticks >= c0 && r[1].ticks <= c1);
    CHECK_EQ(pthread_join(th, NULL), 0);
    uint64_t rel = atomic_load(&helper_rel);
    CHECK(rel != 0);
    CHECK(r[0].ticks < rel);  /* the wait began while the helper held it */
    CHECK(r[1].ticks >= rel); /* and the hold after the helper's ended */
    CHECK_EQ(pthread_mutex_unlock(&busy), 0);
    CHECK_EQ(since(&at, &r), 1);
    pthread_barrier_destroy(&bar);

    /* the lock class off: nothing */
    rp_classes_set(0, RP_CLASS_BIT_LOCK);
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    CHECK_EQ(pthread_mutex_trylock(&busy), 0);
    CHECK_EQ(pthread_mutex_unlock(&busy), 0);
    CHECK_EQ(pthread_mutex_unlock(&m), 0);
    CHECK_EQ(since(&at, &r), 0);
    rp_classes_set(RP_CLASS_BIT_LOCK, 0);

    /* the thread's records, all in this buffer, are in time order */
    for (struct rp_raw *p = start + 1; p < at; p++)
        CHECK(p->ticks >= p[-1].ticks);

    char path[sizeof(rp_rt.path)];
    snprintf(path, sizeof(path), "%s", rp_rt.path);
    int had_file = rp_rt.fd >= 0;
    rp_rt_shutdown();
    if (had_file)
        unlink(path);
    if (failures) {
        fprintf(stderr, "test_rec_locks: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_rec_locks: all checks passed\n");
    return 0;
}

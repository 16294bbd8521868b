// SPDX-License-Identifier: MIT
/*
 * workers.c - the worker threads that replay chunks, and the ring of jobs
 * they take.
 *
 * The main thread reads chunks in order.  An EVENTS chunk with a stack
 * snapshot becomes a job in a ring of RP_JOBS_MAX; workers take jobs in
 * order and replay them, each with its own accumulators; the main thread
 * joins finished jobs in file order.  Jobs only read the node table, so
 * before a chunk that changes it (DEFS) every job in flight is joined
 * (rp_jobs_drain).  A chunk without a snapshot needs the end state of its thread's
 * previous chunk: the jobs are drained and it is replayed by the main
 * thread, in order, like everything when there is one CPU or a per-chunk
 * callback.
 *
 *   submitted >= taken >= joined;  jobs[seq % RP_JOBS_MAX] is free iff
 *   seq >= submitted or seq < joined, so the ring holds at most RP_JOBS_MAX.
 *
 * There are as many workers as CPUs less one, and the main thread replays
 * too: when it must wait for the oldest job it takes the next untaken one
 * itself (with its own accumulators, ACC_HELP).  Nobody sleeps while there
 * is work.  That matters more than it seems: a wake-up across CPUs (an
 * inter-processor interrupt, slow in a virtual machine) costs a sizeable
 * part of a job, so a mutex and two condition variables per job would cost
 * a large share of the time on two CPUs.  So the
 * ring's counters are atomics, a job is taken with a compare-and-swap, and
 * the locks are only for sleeping:
 *
 *   - the main thread publishes a job with a release store of `submitted`;
 *     a worker that reads it with acquire sees the job's fields;
 *   - a worker publishes its results with a release store of j->done; the
 *     main thread reads it with acquire;
 *   - sleeping is Dekker-style in sequentially consistent order: the
 *     sleeper announces itself (sleepers, waiting) and then tests for work
 *     under the lock; the waker makes the work visible and then tests for a
 *     sleeper, and signals under the lock.  One of them sees the other, so
 *     no wake-up is lost.  An idle worker spins briefly before it sleeps.
 */
#include <stdlib.h>
#include <unistd.h>

#include "replay_int.h"

#define RP_SPIN 2000 /* pause loops (~0.1 ms) before a worker sleeps */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Takes the oldest job not yet taken; NULL when there is none. */
static struct job *job_take(struct priv *v)
{
    uint64_t t = atomic_load_explicit(&v->taken, memory_order_relaxed);
    while (t < atomic_load_explicit(&v->submitted, memory_order_acquire))
        if (atomic_compare_exchange_weak_explicit(&v->taken, &t, t + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return &v->jobs[t % RP_JOBS_MAX];
    return NULL;
}

/* Replays job j with a, publishes it, and wakes the main thread if it sleeps. */
static void job_run(struct priv *v, struct acc *a, struct job *j)
{
    rp_replay_chunk(v->p, a, j);
    atomic_store(&j->done, 1);
    if (atomic_load(&v->waiting)) {
        pthread_mutex_lock(&v->mu);
        pthread_cond_broadcast(&v->done);
        pthread_mutex_unlock(&v->mu);
    }
}

static int work_pending(struct priv *v)
{
    return atomic_load(&v->taken) < atomic_load(&v->submitted) || atomic_load(&v->quit);
}

static void *worker(void *arg)
{
    struct wctx *w = arg;
    struct priv *v = w->v;

    for (;;) {
        struct job *j = job_take(v);
        if (j) {
            job_run(v, w->a, j);
            continue;
        }
        if (atomic_load(&v->quit))
            break;
        for (int i = 0; i < RP_SPIN && !work_pending(v); i++)
            cpu_relax();
        if (work_pending(v))
            continue;
        pthread_mutex_lock(&v->mu);
        atomic_fetch_add(&v->sleepers, 1);
        while (!work_pending(v))
            pthread_cond_wait(&v->work, &v->mu);
        atomic_fetch_sub(&v->sleepers, 1);
        pthread_mutex_unlock(&v->mu);
    }
    return NULL;
}

int rp_jobs_join_oldest(struct rp_profile *p, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    struct job *j = &v->jobs[v->joined % RP_JOBS_MAX];
    while (!atomic_load_explicit(&j->done, memory_order_acquire)) {
        struct job *h = job_take(v);
        if (h) {
            job_run(v, &v->acc[ACC_HELP], h);
            continue;
        }
        pthread_mutex_lock(&v->mu);
        atomic_store(&v->waiting, 1);
        while (!atomic_load(&j->done))
            pthread_cond_wait(&v->done, &v->mu);
        atomic_store(&v->waiting, 0);
        pthread_mutex_unlock(&v->mu);
    }
    v->joined++;
    return rp_replay_join(p, j, err, errsz);
}

int rp_jobs_drain(struct rp_profile *p, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    char other[256];
    int rc = 0;
    while (v->joined < atomic_load_explicit(&v->submitted, memory_order_relaxed)) {
        /* after an error, the rest is joined only to be released */
        int r = rc < 0 ? rp_jobs_join_oldest(p, other, sizeof(other))
                       : rp_jobs_join_oldest(p, err, errsz);
        if (rc == 0)
            rc = r;
    }
    return rc;
}

void rp_workers_start(struct priv *v, int want)
{
    if (want > RP_WORKERS_MAX)
        want = RP_WORKERS_MAX;
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->work, NULL);
    pthread_cond_init(&v->done, NULL);
    v->started = 1;
    atomic_store(&v->quit, 0); /* (started again: a live reading, live.c) */
    for (v->nworkers = 0; v->nworkers < want; v->nworkers++) {
        struct wctx *w = &v->wctx[v->nworkers];
        w->v = v;
        w->a = &v->acc[ACC_WORKER + v->nworkers];
        if (pthread_create(&v->tids[v->nworkers], NULL, worker, w) != 0)
            break;
    }
}

void rp_workers_stop(struct priv *v)
{
    if (!v->started)
        return;
    pthread_mutex_lock(&v->mu);
    atomic_store(&v->quit, 1);
    pthread_cond_broadcast(&v->work);
    pthread_mutex_unlock(&v->mu);
    for (int i = 0; i < v->nworkers; i++)
        pthread_join(v->tids[i], NULL);
    v->started = 0; /* nworkers stays: their accumulators are summed by rp_replay_finish() */
    pthread_cond_destroy(&v->work);
    pthread_cond_destroy(&v->done);
    pthread_mutex_destroy(&v->mu);
}

int rp_workers_count(void)
{
    const char *e = getenv("RANKPROF_REPLAY_JOBS");
    if (e && *e)
        return atoi(e) < 0 ? 0 : atoi(e);
    long n = sysconf(_SC_NPROCESSORS_ONLN); /* the main thread replays too */
    return n > 1 ? (int)n - 1 : 0;
}

void rp_jobs_submit(struct priv *v, uint64_t seq)
{
    atomic_store(&v->submitted, seq + 1);
    if (atomic_load(&v->sleepers)) {
        pthread_mutex_lock(&v->mu);
        pthread_cond_signal(&v->work);
        pthread_mutex_unlock(&v->mu);
    }
}

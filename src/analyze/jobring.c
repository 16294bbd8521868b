// SPDX-License-Identifier: MIT
/*
 * jobring.c - the ring of jobs of the parallel walks (jobring.h).  One
 * mutex and two condition variables: a job is a whole chunk, so a lock per
 * job costs nothing beside it.
 */
#include "jobring.h"

#include <string.h>

void rp_jobring_init(struct rp_jobring *R, void (*run)(void *, uint32_t, uint32_t), void *ctx)
{
    memset(R, 0, sizeof(*R));
    pthread_mutex_init(&R->mu, NULL);
    pthread_cond_init(&R->work, NULL);
    pthread_cond_init(&R->done_cv, NULL);
    R->run = run;
    R->ctx = ctx;
}

/* A worker: runs the jobs it claims until told to stop.  Cannot fail. */
static void *worker(void *arg)
{
    struct rp_jobring_worker *w = arg;
    struct rp_jobring *R = w->R;

    pthread_mutex_lock(&R->mu);
    for (;;) {
        while (!R->stop && R->claimed == R->submitted)
            pthread_cond_wait(&R->work, &R->mu);
        if (R->claimed == R->submitted)
            break;
        uint32_t slot = (uint32_t)(R->claimed++ % RP_JOBRING_SLOTS);
        pthread_mutex_unlock(&R->mu);
        R->run(R->ctx, w->runner, slot);
        pthread_mutex_lock(&R->mu);
        R->done[slot] = 1;
        pthread_cond_broadcast(&R->done_cv);
    }
    pthread_mutex_unlock(&R->mu);
    return NULL;
}

uint32_t rp_jobring_start(struct rp_jobring *R, uint32_t n)
{
    for (; R->started < n && R->started < RP_JOBRING_WORKERS; R->started++) {
        struct rp_jobring_worker *w = &R->w[R->started];
        *w = (struct rp_jobring_worker){.R = R, .runner = R->started + 1};
        if (pthread_create(&w->th, NULL, worker, w))
            break;
    }
    return R->started;
}

void rp_jobring_submit(struct rp_jobring *R)
{
    pthread_mutex_lock(&R->mu);
    R->done[R->submitted % RP_JOBRING_SLOTS] = 0;
    R->submitted++;
    pthread_cond_signal(&R->work);
    pthread_mutex_unlock(&R->mu);
}

uint32_t rp_jobring_oldest(struct rp_jobring *R)
{
    uint32_t slot = (uint32_t)(R->joined % RP_JOBRING_SLOTS);
    pthread_mutex_lock(&R->mu);
    while (!R->done[slot]) {
        if (R->claimed < R->submitted) {
            uint32_t o = (uint32_t)(R->claimed++ % RP_JOBRING_SLOTS);
            pthread_mutex_unlock(&R->mu);
            R->run(R->ctx, 0, o);
            pthread_mutex_lock(&R->mu);
            R->done[o] = 1;
            continue;
        }
        pthread_cond_wait(&R->done_cv, &R->mu);
    }
    pthread_mutex_unlock(&R->mu);
    return slot;
}

void rp_jobring_joined(struct rp_jobring *R)
{
    pthread_mutex_lock(&R->mu);
    R->joined++;
    pthread_mutex_unlock(&R->mu);
}

void rp_jobring_destroy(struct rp_jobring *R)
{
    pthread_mutex_lock(&R->mu);
    R->stop = 1;
    pthread_cond_broadcast(&R->work);
    pthread_mutex_unlock(&R->mu);
    for (uint32_t i = 0; i < R->started; i++)
        pthread_join(R->w[i].th, NULL);
    R->started = 0;
    pthread_cond_destroy(&R->work);
    pthread_cond_destroy(&R->done_cv);
    pthread_mutex_destroy(&R->mu);
}

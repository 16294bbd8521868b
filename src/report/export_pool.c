// SPDX-License-Identifier: MIT
/*
 * export_pool.c - the ordered pipeline of the timeline exports
 * (export_pool.h).
 *
 * A ring of 2 x workers + 2 slots, each a batch and its output, numbered
 * by the batches' sequence: the walking thread fills slot `filled`, the
 * workers take the queued slots oldest first, and whichever thread
 * finishes the oldest unwritten batch writes it and every finished one
 * after it (one writer at a time, outside the lock), so the output is in
 * batch order.  The walking thread waits only when the ring is full.
 */
#include "export_pool.h"

#include <errno.h>

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"

#define MAX_WORKERS 8

struct slot {
    uint8_t *in;
    size_t nin, cap;
    struct rp_xbuf out;
    int done; /* turned (or skipped after an error), not yet written */
};

struct rp_xpool {
    FILE *out;
    rp_xpool_fn fn;
    void *arg;
    size_t batch;
    unsigned nslots, workers;
    struct slot *slots;
    pthread_t th[MAX_WORKERS];
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* sequence numbers, under mu: handed over, taken by a worker, written */
    uint64_t submitted, taken, written;
    int writing, quit, err;
};

int rp_xbuf_need(struct rp_xbuf *buf, size_t more)
{
    if (buf->n + more <= buf->cap)
        return 0;
    size_t cap = buf->cap ? buf->cap : 1u << 16;
    while (cap < buf->n + more)
        cap *= 2;
    uint8_t *b = realloc(buf->b, cap);
    if (!b)
        return RP_ENOMEM;
    buf->b = b;
    buf->cap = cap;
    return 0;
}

int rp_xbuf_write(const struct rp_xbuf *buf, FILE *out)
{
    const uint8_t *b = buf->b;
    size_t n = buf->n;
    int fd = fileno(out);
    if (!n)
        return 0;
    if (fd < 0 || fflush(out) != 0) /* (not a file's stream: stdio) */
        return fwrite(b, 1, n, out) == n ? 0 : -1;
    while (n) {
        ssize_t k = write(fd, b, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        b += k;
        n -= (size_t)k;
    }
    return 0;
}

unsigned rp_xpool_workers(void)
{
    const char *e = getenv("RANKPROF_REPLAY_JOBS");
    long n = e && *e ? atol(e) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 0 ? 0 : n > MAX_WORKERS ? MAX_WORKERS : (unsigned)n;
}

/* Writes the finished batches in order, from the oldest unwritten, unless
 * another thread is writing.  Called and returns with mu held.  A failed
 * write sets the pool's error (RP_EIO); after an error nothing is
 * written. */
static void write_ready(struct rp_xpool *x)
{
    while (!x->writing && x->written < x->submitted && x->slots[x->written % x->nslots].done) {
        struct slot *s = &x->slots[x->written % x->nslots];
        x->writing = 1;
        int skip = x->err != 0;
        pthread_mutex_unlock(&x->mu);
        int bad = !skip && rp_xbuf_write(&s->out, x->out) < 0;
        pthread_mutex_lock(&x->mu);
        if (bad && !x->err)
            x->err = RP_EIO;
        s->done = 0;
        x->written++;
        x->writing = 0;
        pthread_cond_broadcast(&x->cv);
    }
}

/* Turns slot s on worker w.  Returns the turning function's code.
 * Called without mu. */
static int turn(struct rp_xpool *x, unsigned w, struct slot *s)
{
    s->out.n = 0;
    return x->fn(x->arg, w, s->in, s->nin, &s->out);
}

/* A worker: turns the queued batches oldest first, then writes what is
 * ready, until quit.  An error is the pool's (the first one is kept);
 * later batches are then skipped.  Returns NULL. */
static void *worker(void *arg)
{
    struct rp_xpool *x = arg;
    pthread_mutex_lock(&x->mu);
    unsigned w = 0;
    while (w < x->workers && !pthread_equal(x->th[w], pthread_self()))
        w++;
    for (;;) {
        while (x->taken == x->submitted && !x->quit)
            pthread_cond_wait(&x->cv, &x->mu);
        if (x->taken == x->submitted)
            break;
        struct slot *s = &x->slots[x->taken++ % x->nslots];
        int skip = x->err != 0;
        pthread_mutex_unlock(&x->mu);
        int rc = skip ? 0 : turn(x, w, s);
        pthread_mutex_lock(&x->mu);
        if (rc < 0 && !x->err)
            x->err = rc;
        s->done = 1;
        write_ready(x);
    }
    pthread_mutex_unlock(&x->mu);
    return NULL;
}

struct rp_xpool *rp_xpool_open(FILE *out, unsigned workers, size_t batch, rp_xpool_fn fn, void *arg)
{
    struct rp_xpool *x = calloc(1, sizeof(*x));
    if (!x)
        return NULL;
    if (workers > MAX_WORKERS)
        workers = MAX_WORKERS;
    x->out = out;
    x->fn = fn;
    x->arg = arg;
    x->batch = batch;
    x->nslots = workers ? 2 * workers + 2 : 1;
    if (!(x->slots = calloc(x->nslots, sizeof(*x->slots))))
        goto fail;
    for (unsigned i = 0; i < x->nslots; i++)
        if (!(x->slots[i].in = malloc(batch)))
            goto fail;
        else
            x->slots[i].cap = batch;
    pthread_mutex_init(&x->mu, NULL);
    pthread_cond_init(&x->cv, NULL);
    pthread_mutex_lock(&x->mu); /* the workers find their index once started */
    for (unsigned i = 0; i < workers; i++) {
        if (pthread_create(&x->th[x->workers], NULL, worker, x) != 0)
            break; /* fewer workers */
        x->workers++;
    }
    pthread_mutex_unlock(&x->mu);
    return x;
fail:
    if (x->slots)
        for (unsigned i = 0; i < x->nslots; i++)
            free(x->slots[i].in);
    free(x->slots);
    free(x);
    return NULL;
}

uint8_t *rp_xpool_batch(struct rp_xpool *x, size_t *cap)
{
    struct slot *s = &x->slots[x->submitted % x->nslots];
    *cap = s->cap;
    return s->in;
}

int rp_xpool_reserve(struct rp_xpool *x, size_t n)
{
    struct slot *s = &x->slots[x->submitted % x->nslots];
    if (n <= s->cap)
        return 0;
    uint8_t *b = realloc(s->in, n);
    if (!b)
        return RP_ENOMEM;
    s->in = b;
    s->cap = n;
    return 0;
}

int rp_xpool_submit(struct rp_xpool *x, size_t n)
{
    struct slot *s = &x->slots[x->submitted % x->nslots];
    int rc;
    if (!n)
        return x->err;
    s->nin = n;
    if (!x->workers) { /* turned and written here */
        if (x->err)
            return x->err;
        if ((rc = turn(x, x->workers, s)) < 0)
            return x->err = rc;
        if (rp_xbuf_write(&s->out, x->out) < 0)
            return x->err = RP_EIO;
        return 0;
    }
    pthread_mutex_lock(&x->mu);
    x->submitted++;
    pthread_cond_broadcast(&x->cv);
    while (x->submitted - x->written >= x->nslots) /* the next slot is still in use */
        pthread_cond_wait(&x->cv, &x->mu);
    rc = x->err;
    pthread_mutex_unlock(&x->mu);
    return rc;
}

int rp_xpool_close(struct rp_xpool *x)
{
    if (!x)
        return 0;
    int rc = x->err;
    if (x->workers) {
        pthread_mutex_lock(&x->mu);
        while (x->written < x->submitted)
            pthread_cond_wait(&x->cv, &x->mu);
        x->quit = 1;
        pthread_cond_broadcast(&x->cv);
        pthread_mutex_unlock(&x->mu);
        for (unsigned i = 0; i < x->workers; i++)
            pthread_join(x->th[i], NULL);
        rc = x->err;
    }
    pthread_cond_destroy(&x->cv);
    pthread_mutex_destroy(&x->mu);
    for (unsigned i = 0; i < x->nslots; i++) {
        free(x->slots[i].in);
        free(x->slots[i].out.b);
    }
    free(x->slots);
    free(x);
    return rc;
}

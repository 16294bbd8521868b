// SPDX-License-Identifier: MIT
/*
 * rank_threads.c - the ranking's two threads: a helper thread that runs one
 * job (a half of a pass, or faulting pages in) beside the caller.
 *
 * Two threads.  The two passes over every edge that need no order between
 * rows (building the adjacency by node, rewriting it by position) are cut in
 * two halves at a row, each half writing only its own rows, and the second
 * half runs on a thread of its own; so do the ranks' radix passes
 * (everything else is sequential: Tarjan's search, the sweeps).  Each row
 * is computed the same way in either half, so the result does not depend on
 * the number of threads, bit for bit.  pthread_join orders everything the
 * helper wrote before the caller reads it, and the helper reads only what
 * was written before it started.
 */
#include <assert.h>
#include <pthread.h>

#include "rank_int.h"

static void *pair_main(void *p)
{
    struct pair_job *j = p;
    j->fn(j->arg);
    return NULL;
}

/* Starts fn(arg) on a helper thread when threads > 1.  Returns 1 if it
 * started, 0 if not (one thread, or none could be started): the caller
 * then does the job itself or goes without. */
int rp_rank_helper_start(struct helper *h, int threads, void (*fn)(void *), void *arg)
{
    h->job = (struct pair_job){fn, arg};
    h->on = threads > 1 && pthread_create(&h->t, NULL, pair_main, &h->job) == 0;
    return h->on;
}

/* Waits for a helper that rp_rank_helper_start started; nothing if it did not.
 * Cannot fail. */
void rp_rank_helper_join(struct helper *h)
{
    if (h->on)
        pthread_join(h->t, NULL);
    h->on = 0;
}

/* Runs fb(b) on a helper thread and fa(a) on this one, and returns when both
 * are done; runs both here, a first, when threads < 2 or no thread can be
 * started.  Cannot fail. */
void rp_rank_run_pair(int threads, void (*fa)(void *), void *a, void (*fb)(void *), void *b)
{
    struct helper h;

    if (!rp_rank_helper_start(&h, threads, fb, b)) {
        fa(a);
        fb(b);
        return;
    }
    fa(a);
    rp_rank_helper_join(&h);
}

/* Adds the len bytes at p to t, which must have room (TOUCH_MAX).  Cannot
 * fail. */
void rp_rank_touch_add(struct touch *t, void *p, size_t len)
{
    assert(t->k < TOUCH_MAX);
    t->p[t->k] = p;
    t->len[t->k++] = len;
}

/* Writes a byte to every page of the blocks of a struct touch, so that the
 * kernel maps and clears them now, on the helper's processor, rather than
 * when the pass that fills them first writes there, then runs its job.
 * The blocks must be uninitialized: what is written there is garbage.
 * Cannot fail. */
void rp_rank_touch_pages(void *arg)
{
    struct touch *t = arg;

    for (unsigned b = 0; b < t->k; b++)
        for (size_t o = 0; o < t->len[b]; o += 4096)
            ((volatile char *)t->p[b])[o] = 0;
    if (t->then) {
        t->then(t->then_arg);
        t->ran = 1;
    }
}

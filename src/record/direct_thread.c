// SPDX-License-Identifier: MIT
/*
 * direct_thread.c - direct mode's threads: a thread's state made on its
 * first event, its batch run when full, before a snapshot and when it ends,
 * its table merged into the table of ended threads at its end; the
 * process-wide list of live threads, and merged snapshots of all of them.
 *
 * Invariants: rp_rt.direct_lock guards dg (the live list, the ended
 * threads' table and summaries) and is held only inside a section
 * (section_enter: every signal blocked), so a signal handler's snapshot (a
 * fatal signal's, an _exit's in the program's handler) never waits for the
 * thread it interrupted; only a thread itself runs its batch, with
 * its tb.guard held, so a signal handler's event meanwhile is counted as
 * re-entered rather than applied; a snapshot drains the caller's own batch
 * first, and reads the other live threads' tables as they stand.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "direct_int.h"
#include "funcs.h"
#include "rt_int.h" /* (rp_rt_loss_nostate) */

static struct {
    pthread_key_t key;
    int key_ok;
    struct rp_dthread *live;
    struct dtable done;
    struct tsum *ended;
    uint32_t nended;
    uint64_t ended_dropped; /* summaries beyond TSUM_MAX: their events */
} dg;

static __thread struct rp_dthread *dself;
static __thread int dgone, dinit;

RP_HIDDEN struct rp_dthread *rp_direct_thread_new(uint32_t tid)
{
    struct rp_dthread *d = zalloc(sizeof(*d));
    if (!d)
        return NULL;
    if (!(d->stack = zalloc((STACK_MAX + 2) * sizeof(struct dframe)))) {
        zfree(d, sizeof(*d));
        return NULL;
    }
    d->tid = tid;
    d->top = d->stack; /* the sentinels are zeroed: key 0, idx 0 (ROOT) */
    d->full = d->stack + STACK_MAX;
    d->before.word = UINT64_MAX; /* no event has this word */
    d->tb.pos = d->batch;
    d->tb.end = d->batch + BATCH;
    rp_dtab_init(&d->tab);
    rp_own_lock(&rp_rt.direct_lock);
    d->next = dg.live;
    dg.live = d;
    rp_own_unlock(&rp_rt.direct_lock);
    return d;
}

/* The name of thread tid (its comm), or "" if it cannot be read. */
static void thread_name(uint32_t tid, char name[16])
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/self/task/%u/comm", tid);
    memset(name, 0, 16);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    ssize_t r = read(fd, name, 15);
    close(fd);
    if (r > 0 && name[r - 1] == '\n')
        name[r - 1] = 0;
}

/* A summary of thread d; own: the caller is d's thread, or d is idle (its
 * stack depth is read only then: spans open in a running thread are not
 * unclosed, they are in progress). */
static void tsum_of(const struct rp_dthread *d, struct tsum *s, int own)
{
    s->tid = d->tid;
    thread_name(rp_tid_of(d->tid), s->name); /* d->tid: a stream id (format.h) */
    s->first = LD(d->first);
    s->last = LD(d->last);
    s->events = LD(d->events);
    s->unmatched = LD(d->unmatched);
    s->unclosed = LD(d->unclosed) + (own ? stack_depth(d) + d->nheld : 0);
    s->dropped = LD(d->tab.dropped) + LD(d->reentered);
    s->unwound = LD(d->unwound);
    s->cut = LD(d->cut);
}

RP_HIDDEN void rp_direct_thread_end(struct rp_dthread *d)
{
    struct tsum s;
    struct rt_section sec;
    tsum_of(d, &s, 1);
    section_enter(&sec);
    rp_own_lock(&rp_rt.direct_lock);
    for (struct rp_dthread **pp = &dg.live; *pp; pp = &(*pp)->next)
        if (*pp == d) {
            *pp = d->next;
            break;
        }
    s.dropped += rp_dtab_merge(&dg.done, &d->tab);
    if (dg.nended < TSUM_MAX && !dg.ended)
        dg.ended = zalloc(TSUM_MAX * sizeof(struct tsum));
    if (dg.ended && dg.nended < TSUM_MAX)
        dg.ended[dg.nended++] = s;
    else
        dg.ended_dropped += s.events;
    rp_own_unlock(&rp_rt.direct_lock);
    section_leave(&sec);
    rp_dtab_free(&d->tab);
    zfree(d->stack, (STACK_MAX + 2) * sizeof(struct dframe));
    zfree(d, sizeof(*d));
}

/* Runs the calling thread's batch, and with `close` ends its open spans
 * (rp_dengine_close), or with `park` publishes them (rp_dengine_park),
 * unless the thread is inside the recorder. */
static void run_self(int close, int park)
{
    struct rp_dthread *d = dself;
    if (!d || d->tb.guard)
        return;
    d->tb.guard = 1;
    atomic_signal_fence(memory_order_seq_cst);
    rp_dengine_run(d);
    if (close)
        rp_dengine_close(d, rp_ticks() - d->stolen);
    else if (park)
        rp_dengine_park(d, 0);
    atomic_signal_fence(memory_order_seq_cst);
    d->tb.guard = 0;
}

/* Runs the calling thread's batch, unless it is inside the recorder. */
static void drain_self(void)
{
    run_self(0, 0);
}
/* Applies the calling thread's batch and ends its open spans (above). */
static void close_self(void)
{
    run_self(1, 0);
}

RP_HIDDEN void rp_direct_idle(void)
{
    run_self(0, 1);
}

RP_HIDDEN void rp_direct_unrecorded(void)
{
    dgone = 1;
}

RP_HIDDEN struct dfatal rp_dfatal;

/* Notes the calling thread's open frames in rp_dfatal (its batch applied
 * first).  Not from inside the recorder's engine: its stack is changing. */
static void fatal_note(void)
{
    struct rp_dthread *d = dself;
    drain_self();
    if (!d || d->tb.guard || d->over)
        return;
    uint32_t depth = (uint32_t)(d->top - d->stack);
    uint32_t n = depth < RP_STATS_FATAL_MAX ? depth : RP_STATS_FATAL_MAX;
    for (uint32_t i = 0; i < n; i++)
        rp_dfatal.keys[i] = d->stack[depth - n + i + 1].key;
    rp_dfatal.depth = depth;
    rp_dfatal.tid = d->tid;
    rp_dfatal.n = n;
}

RP_HIDDEN void rp_direct_exit_self(int fatal)
{
    if (fatal)
        fatal_note();
    close_self();
    rp_dsnap_open = 1; /* and the other threads' open frames end now */
}

static void dthread_exit(void *arg)
{
    /* as rp_rt_thread_exit: one more round, after the program's own key
     * destructors, whose calls are then counted */
    struct rp_dthread *d = arg;
    if (d && !d->tb.tsd_round) {
        d->tb.tsd_round = 1;
        if (pthread_setspecific(dg.key, d) == 0)
            return;
    }
    if (arg && arg == dself)
        close_self();
    dself = NULL;
    rp_self = NULL;
    dgone = 1;
    if (arg)
        rp_direct_thread_end(arg);
}

/* The calling thread's first event: its table.  NULL if it cannot have one
 * (after its end, unless that end was the last thread's, which runs the
 * process's exit after main's pthread_exit: rp_rt_exiting). */
static RP_NOINLINE struct rp_dthread *dthread_first(void)
{
    if ((dgone && !atomic_load(&rp_rt_exiting)) || dinit || !dg.key_ok)
        return NULL;
    if (dgone)
        rp_thread_stream_renew(); /* a second life: a stream of its own */
    dinit = 1;
    struct rt_section sec; /* rp_rt.direct_lock: no cancel, no handler inside */
    section_enter(&sec);
    struct rp_dthread *d = rp_direct_thread_new(rp_thread_stream((uint32_t)syscall(SYS_gettid)));
    if (d) {
        pthread_setspecific(dg.key, d);
        dself = d;
        rp_self = &d->tb;
    }
    section_leave(&sec);
    dinit = 0;
    return d;
}

RP_HIDDEN void rp_direct_event(uint64_t word)
{
    struct rp_dthread *d = dself;
    if (__builtin_expect(!d, 0)) {
        if (!(d = dthread_first())) {
            if (dgone) /* after its end (a key destructor's): counted, as in trace mode */
                atomic_fetch_add_explicit(&rp_rt_loss_nostate[RP_LOSS_GONE], 1,
                                          memory_order_relaxed);
            return;
        }
        if (rp_rt_seed_pending()) /* a forked child's: the calls open at the fork */
            rp_pos_set(&d->tb, rp_rt_seed_put(d->tid, d->tb.pos));
    }
    if (__builtin_expect(d->tb.guard != 0, 0)) { /* a signal handler interrupted us */
        ST(d->reentered, d->reentered + 1);
        atomic_fetch_add_explicit(&rp_rt_loss_nostate[RP_LOSS_REENTERED], 1,
                                  memory_order_relaxed); /* (the reason, as in trace mode) */
        return;
    }
    d->tb.guard = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (d->tb.pos >= d->tb.end)
        rp_dengine_run(d);
    struct rp_raw *p = d->tb.pos; /* re-read: room for one now */
    p->ticks = rp_ticks();
    p->word = word;
    rp_pos_set(&d->tb, p + 1);
    atomic_signal_fence(memory_order_seq_cst);
    d->tb.guard = 0;
}

RP_HIDDEN int rp_direct_init(void)
{
    if (dg.key_ok)
        return 0;
    if (pthread_key_create(&dg.key, dthread_exit) != 0)
        return RP_ENOMEM;
    rp_dtab_init(&dg.done);
    /* the symbol tables an UNWIND record's landing is looked up in
     * (rp_direct_start_of): loaded here, where it is safe, since the engine
     * may run in a signal handler, where it is not */
    rp_funcs_preload();
    dg.key_ok = 1;
    return 0;
}

RP_HIDDEN void rp_direct_atfork_child(void)
{
    pthread_mutex_init(&rp_rt.direct_lock, NULL);
    /* the calls open on the forking thread, its batch applied: the child's
     * seed (rt_start.c) */
    struct rp_dthread *d = dself;
    uint64_t keys[BATCH / 4];
    uint32_t n = 0;
    if (d && !d->tb.guard && !d->windowed && !d->over) {
        d->tb.guard = 1;
        rp_dengine_run(d);
        d->tb.guard = 0;
        n = (uint32_t)(d->top - d->stack);
        for (uint32_t k = 0; k < n && k < BATCH / 4; k++)
            keys[k] = d->stack[1 + k].key;
    }
    rp_rt_seed_keys(keys, n, BATCH / 4); /* (none when n is over) */
    dg.live = NULL;                      /* the parent's threads: their memory stays, unused */
    rp_dtab_free(&dg.done);
    dg.nended = 0;
    dg.ended_dropped = 0;
    if (dself) {
        dself = NULL;
        rp_self = NULL;
        pthread_setspecific(dg.key, NULL);
    }
}

RP_HIDDEN __thread int rp_dsnap_open;

/* A merged copy of every thread's statistics, in pages of its own (no
 * malloc: the final flush may run in a signal handler).  Returns 0 or
 * RP_ENOMEM. */
RP_HIDDEN int rp_dsnap_take(struct snap *s)
{
    static struct dpark park[PARK_MAX]; /* (under direct_lock) */
    struct rt_section sec;
    drain_self(); /* the caller's own events are all counted */
    rp_dtab_init(&s->tab);
    s->nth = 0;
    section_enter(&sec);
    rp_own_lock(&rp_rt.direct_lock);
    uint32_t nlive = 0;
    for (struct rp_dthread *d = dg.live; d; d = d->next)
        nlive++;
    s->th_bytes = (dg.nended + nlive + 1) * sizeof(*s->th);
    s->th = zalloc(s->th_bytes);
    if (!s->th) {
        rp_own_unlock(&rp_rt.direct_lock);
        section_leave(&sec);
        return RP_ENOMEM;
    }
    rp_dtab_merge(&s->tab, &dg.done);
    if (dg.nended)
        memcpy(s->th, dg.ended, dg.nended * sizeof(*s->th));
    s->nth = dg.nended;
    s->unlisted = dg.ended_dropped;
    for (struct rp_dthread *d = dg.live; d; d = d->next) {
        struct tsum *t = &s->th[s->nth++];
        tsum_of(d, t, d == dself);
        uint32_t seq = 1, n = 0, running = 0;
        uint64_t stolen = 0;
        /* its open frames (struct rp_dthread, park_seq), read again while
         * the thread writes them: a thread that runs its engine every few
         * microseconds was caught mid-write now and then, and its open
         * frames left out (e2e_top running under ASan) */
        for (int tries = 0; rp_dsnap_open && d != dself && tries < 1000; tries++) {
            seq = LDA(d->park_seq);
            if (seq & 1)
                continue;
            n = LD(d->park_n);
            running = LD(d->park_running);
            for (uint32_t i = 0; i < n && i < PARK_MAX; i++)
                park[i] =
                    (struct dpark){LD(d->park[i].key), LD(d->park[i].start), LD(d->park[i].child)};
            stolen = LD(d->park_stolen);
            atomic_thread_fence(memory_order_acquire);
            if (LD(d->park_seq) == seq)
                break;
            n = 0; /* (read while written) */
        }
        t->dropped += rp_dtab_merge(&s->tab, &d->tab);
        atomic_thread_fence(memory_order_acquire);
        if (n && n <= PARK_MAX && (running || LD(d->park_seq) == seq)) {
            rp_dtab_add_open(&s->tab, park, n, rp_ticks() - stolen);
            t->cut += n; /* (its frames end here: rp_dtab_add_open) */
        }
    }
    rp_own_unlock(&rp_rt.direct_lock);
    section_leave(&sec);
    return 0;
}

RP_HIDDEN void rp_dsnap_free(struct snap *s)
{
    rp_dtab_free(&s->tab);
    zfree(s->th, s->th_bytes);
    s->th = NULL;
}

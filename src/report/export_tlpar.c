// SPDX-License-Identifier: MIT
/*
 * export_tlpar.c - the timelines walked in parallel (export_tlpar.h).
 *
 * The reading thread copies each EVENTS chunk into a job; runners (the
 * workers, or the reading thread when it would wait) walk the jobs.  A
 * chunk with a stack snapshot is walked at once from the snapshot, on
 * assumptions about the chunks before it that the snapshot does not carry:
 * that its spans (U) are the ones those chunks leave open (ids and starts),
 * that no ARG was given to a U span it ends without seeing one, that no
 * lock is held from before when it meets a LOST, and, for a PAUSE before
 * its first other event, where the thread's previous event was.  The jobs
 * are joined in file order: the join keeps each thread's open spans (with
 * their arguments), held locks and last event as spanwalk.c would, checks
 * the job's assumptions against them, and walks the chunk again from that
 * state when one fails (rare: a snapshot of a stack the reader dropped at a
 * LOST, an argument given in an earlier chunk), before its bytes are
 * written.  A chunk without a snapshot waits for the jobs before it and is
 * walked from the joined state.  The spans and their order on each thread
 * are those of spanwalk.c with no filter; only where each job's bytes
 * begin differs.
 *
 * The joined jobs' bytes are written in order by a writer thread, so that
 * reading and joining go on while the output (a pipe) drains; a job's slot
 * is filled again once its bytes are written.
 *
 * The jobs are in the ring of analyze/jobring.h.
 *
 * Memory: RP_JOBRING_SLOTS chunks and their outputs, the open spans and held locks
 * of each thread.
 */
#include "export_tlpar.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/jobring.h"
#include "analyze/merge.h"
#include "analyze/walk.h"
#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"
#include "trace/format.h"
#include "trace/reader.h"

#define PAR_JOBS    RP_JOBRING_SLOTS
#define PAR_WORKERS RP_JOBRING_WORKERS
/* Jobs in flight at most, the ring's other slots left for the writer to
 * write behind the join: with every slot in flight, the slot freed by a
 * join is the one the writer has yet to write, and the reading thread
 * waits for it job after job (a wakeup and two context switches each). */
#define PAR_FLIGHT (PAR_JOBS - 4)
/* Jobs joined before the writer, asleep, is woken (tp_drain wakes it
 * sooner when it must): a wakeup per few jobs, not per job. */
#define PAR_WAKE 3

/* An open span.  known: its argument is known (0 for a snapshot's span,
 * whose ARG may be in an earlier chunk). */
struct tfr {
    uint32_t id;
    uint8_t has_arg, known;
    uint64_t start, arg;
};

/* A held lock (format 1.3). */
struct thold {
    uint32_t id;
    uint64_t start;
};

struct tjob {
    uint8_t *data;
    uint32_t len, cap;
    uint64_t offset, no;
    uint32_t tid;
    int spec;        /* walked from the snapshot; else from the joined state: */
    uint32_t nin;    /* its open spans (in st, from_joined), */
    uint32_t ninh;   /* its held locks (in held), */
    uint64_t before; /* its last event */
    /* out */
    int rc;
    char err[200];
    struct rp_xbuf out;
    struct tfr *snap; /* the snapshot's spans (spec) */
    uint32_t nsnap, capsnap;
    uint8_t *need; /* per U span: ended or dropped without its argument known */
    uint32_t capneed;
    uint32_t low;   /* the U spans at [low, nsnap) were ended or dropped */
    struct tfr *st; /* the stack, then the one it leaves */
    uint32_t nst, capst;
    struct thold *held; /* held locks begun in it (all, when not spec) */
    uint32_t nheld, capheld;
    uint32_t *rm; /* locks held from before that it released (spec) */
    uint32_t nrm, caprm;
    int lost;                    /* it met a LOST */
    int p0;                      /* a PAUSE came before any other event (spec): */
    uint64_t p0_start, p0_ticks; /* its start as walked, its ticks */
    int any;                     /* it had events */
    uint64_t last;               /* the last one's ticks */
};

/* A thread as the join keeps it. */
struct tthr {
    uint32_t tid;
    struct tfr *st;
    uint32_t n, cap;
    struct thold *held;
    uint32_t nh, caph;
    uint64_t last;
};

struct tp {
    const struct rp_export_ctx *ctx;
    const struct rp_tlpar_ops *ops;
    void *arg;
    FILE *out;
    uint32_t n_ids;
    void *enc[1 + PAR_WORKERS]; /* runner k's encoder (0: this thread's), nenc opened */
    uint32_t nenc;
    struct rp_jobring R; /* its mutex guards the writer's fields too */
    struct tjob jobs[PAR_JOBS], seq;
    uint64_t njobs;
    /* the writer: writes the joined jobs' bytes in order (written: how
     * many), so that this thread reads and joins on while a pipe drains */
    pthread_t writer;
    int has_writer, wstop, werr;
    int weno; /* errno of the first failed write (the writer's own errno is its thread's) */
    pthread_cond_t wwork, wrote;
    uint64_t written;
    struct tthr *threads;
    uint32_t nthreads, capthreads;
};

int rp_tlpar_usable(const struct rp_export_ctx *ctx)
{
    const char *e = getenv("RANKPROF_TIMELINE_SEQ");
    return !ctx->filter && ctx->p && !rp_profile_merged(ctx->p) && !(e && *e && strcmp(e, "0"));
}

/* Takes the innermost span of j off its stack (j->nst > 0), noting what
 * the join must check when it was the snapshot's.  Returns it (valid until
 * the next push).  Cannot fail. */
static inline const struct tfr *tp_take(struct tjob *j)
{
    struct tfr *f = &j->st[--j->nst];
    if (unlikely(j->nst < j->low)) {
        j->low = j->nst;
        if (!f->known && !f->has_arg)
            j->need[j->nst] = 1;
    }
    return f;
}

/* Ends (why NULL, "unwound", "cut") or drops ("unclosed") the innermost
 * span of j at now.  Returns 0 or the encoder's code. */
static inline int tp_pop(const struct rp_timeline_ops *tl, void *enc, struct tjob *j, uint64_t now,
                         const char *why)
{
    const struct tfr *f = tp_take(j);
    uint64_t end = now >= f->start ? now : f->start;
    if (tl->span)
        return tl->span(enc, j->tid, f->id, f->start, end, f->arg, why);
    return tl->end ? tl->end(enc, j->tid, f->id, end, f->arg, why) : 0;
}

/* tp_pop down to `to` spans.  Fails as tp_pop. */
static int tp_pop_to(const struct rp_timeline_ops *tl, void *enc, struct tjob *j, uint32_t to,
                     uint64_t now, const char *why)
{
    int rc = 0;
    while (j->nst > to && rc >= 0)
        rc = tp_pop(tl, enc, j, now, why);
    return rc < 0 ? rc : 0;
}

/* Drops j's held locks at now, the latest first.  Fails as tp_pop. */
static int tp_drop_held(const struct rp_timeline_ops *tl, void *enc, struct tjob *j, uint64_t now)
{
    int rc = 0;
    while (j->nheld && rc >= 0) {
        const struct thold *h = &j->held[--j->nheld];
        if (tl->hold)
            rc = tl->hold(enc, j->tid, h->id, h->start, now >= h->start ? now : h->start,
                          "unclosed");
    }
    return rc < 0 ? rc : 0;
}

/* One event of j's chunk, as spanwalk.c's on_event and export_timeline.c
 * (no filter) tell it.  *before: the thread's previous event's ticks, *seen
 * whether it is known.  Returns 0, RP_ENOMEM, RP_EFORMAT for an id no DEFS
 * chunk defined, or the encoder's code. */
static int tp_event(struct tp *P, void *enc, struct tjob *j, const struct rp_event *ev,
                    uint64_t *before, int *seen)
{
    const struct rp_timeline_ops *tl = P->ops->tl;
    uint64_t prev = *before;
    int known = *seen, rc;

    *before = ev->ticks;
    *seen = 1;
    switch (ev->op) {
    case RP_OP_ENTER:
        if (ev->id >= P->n_ids || (ev->arg3 >> 2) >= P->n_ids)
            return RP_EFORMAT;
        if (unlikely(j->nst == j->capst) &&
            rp_grow(&j->st, &j->capst, j->nst + 1, sizeof(*j->st), 64) < 0)
            return RP_ENOMEM;
        j->st[j->nst++] = (struct tfr){.id = ev->id, .known = 1, .start = ev->ticks};
        return tl->begin ? tl->begin(enc, j->tid, ev->id, ev->ticks) : 0;
    case RP_OP_EXIT:
        return j->nst ? tp_pop(tl, enc, j, ev->ticks, NULL) : 0;
    case RP_OP_EXIT_ID: {
        if (ev->id >= P->n_ids || (ev->arg3 >> 2) >= P->n_ids)
            return RP_EFORMAT;
        uint32_t at = j->nst;
        while (at > 0 && j->st[at - 1].id != ev->id)
            at--;
        if (!at)
            return 0; /* unmatched: the replay counts it */
        if ((rc = tp_pop_to(tl, enc, j, at, ev->ticks, "unwound")) < 0)
            return rc;
        return tp_pop(tl, enc, j, ev->ticks, NULL);
    }
    case RP_OP_UNWIND: {
        if (ev->id >= P->n_ids || (ev->arg3 >> 2) >= P->n_ids)
            return RP_EFORMAT;
        uint32_t at = j->nst;
        while (ev->id && at > 0 && j->st[at - 1].id != ev->id)
            at--;
        if (ev->id && !at)
            return 0; /* not open: the replay ignores it too */
        return tp_pop_to(tl, enc, j, ev->id ? at : 0, ev->ticks, ev->id ? "unwound" : "cut");
    }
    case RP_OP_INSTANT:
    case RP_OP_COUNTER:
        if (ev->id >= P->n_ids || (ev->arg3 >> 2) >= P->n_ids)
            return RP_EFORMAT;
        if (ev->op == RP_OP_COUNTER)
            return tl->counter ? tl->counter(enc, j->tid, ev->id, ev->ticks, rp_unzigzag(ev->arg))
                               : 0;
        return tl->instant ? tl->instant(enc, j->tid, ev->id, ev->ticks, ev->arg) : 0;
    case RP_OP_ARG:
        if (j->nst) {
            struct tfr *f = &j->st[j->nst - 1];
            rc = tl->arg ? tl->arg(enc, j->tid, f->id, ev->arg) : 0;
            f->arg = ev->arg;
            f->has_arg = 1;
            return rc;
        }
        return 0;
    case RP_OP_HOLD_BEGIN:
        if (ev->id >= P->n_ids || (ev->arg3 >> 2) >= P->n_ids)
            return RP_EFORMAT;
        if (rp_grow(&j->held, &j->capheld, j->nheld + 1, sizeof(*j->held), 8) < 0)
            return RP_ENOMEM;
        j->held[j->nheld++] = (struct thold){.id = ev->id, .start = ev->ticks};
        return 0;
    case RP_OP_HOLD_END: {
        if (ev->id >= P->n_ids || (ev->arg3 >> 2) >= P->n_ids)
            return RP_EFORMAT;
        if (!ev->arg3)
            return 0;
        uint32_t i = j->nheld;
        while (i > 0 && j->held[i - 1].id != ev->id)
            i--;
        if (i) {
            memmove(&j->held[i - 1], &j->held[i], (j->nheld - i) * sizeof(*j->held));
            j->nheld--;
        } else if (j->spec) { /* perhaps one held from before: the join removes it */
            if (rp_grow(&j->rm, &j->caprm, j->nrm + 1, sizeof(*j->rm), 8) < 0)
                return RP_ENOMEM;
            j->rm[j->nrm++] = ev->id;
        }
        uint64_t start = ev->ticks >= ev->arg ? ev->ticks - ev->arg : 0;
        return tl->hold ? tl->hold(enc, j->tid, ev->id, start, ev->ticks, NULL) : 0;
    }
    case RP_OP_PAUSE: {
        uint64_t start = ev->ticks > ev->arg ? ev->ticks - ev->arg : 0;
        if (known)
            start = start > prev ? start : prev < ev->ticks ? prev : ev->ticks;
        else { /* the previous event is in an earlier chunk: the join checks */
            j->p0 = 1;
            j->p0_start = start;
            j->p0_ticks = ev->ticks;
        }
        return tl->pause ? tl->pause(enc, j->tid, start, ev->ticks) : 0;
    }
    case RP_OP_LOST:
        if ((rc = tp_pop_to(tl, enc, j, 0, ev->ticks, "unclosed")) < 0 ||
            (rc = tp_drop_held(tl, enc, j, ev->ticks)) < 0)
            return rc;
        j->lost = 1;
        return tl->lost ? tl->lost(enc, j->tid, ev->ticks, ev->arg) : 0;
    default:
        return 0;
    }
}

/* Begins and plain ends gathered for rp_tlpar_ops.slices, at most this
 * many at once */
#define SLICE_RUN 128

/*
 * The common events of a compact stream at d (run_job's walk_slices): the
 * one-byte EXITs and predicted ENTERs, as rp_evdec_next_quick decodes them and
 * walk_slices keeps them, added to run (n of them there, at most
 * SLICE_RUN), with the decoder's and the stack's state in locals (the
 * stores to run and the stack would otherwise make the compiler load it
 * again for each).  Stops at any other event, at the end, or with run
 * full; *before and *seen as tp_event sets them.  Returns the new n.
 * Cannot fail.
 */
static inline uint32_t gather(const struct tp *P, struct tjob *j, struct rp_evdec *d,
                              struct rp_tlpar_slice *run, uint32_t n, uint64_t *before, int *seen)
{
    const uint8_t *p = d->p, *const end = d->end;
    uint64_t now = d->now;
    uint32_t x = d->pr_x, y = d->pr_y, nst = j->nst, low = j->low;
    const uint32_t pred = (uint32_t)d->pred, cap = j->capst, n_ids = P->n_ids;
    const uint32_t *const tab = d->pr_tab;
    struct tfr *const st = j->st;
    const uint8_t *const p0 = p;
    while (p < end && *p < 0x80 && n < SLICE_RUN) {
        unsigned h = *p;
        if (h & 1) { /* EXIT */
            now += h >> 1;
            x += pred;
            p++;
            if (!nst)
                continue;
            struct tfr *f = &st[--nst]; /* (tp_take) */
            if (unlikely(nst < low)) {
                low = nst;
                if (!f->known && !f->has_arg)
                    j->need[nst] = 1;
            }
            run[n++] = (struct rp_tlpar_slice){
                .ticks = now >= f->start ? now : f->start, .arg = f->arg, .id = f->id, .end = 1};
            continue;
        }
        uint32_t id = tab[rp_pred_slot(x, y)];
        if (!pred || (h & 2) || !id || nst >= cap || id >= n_ids)
            break; /* (left to rp_evdec_next_quick and tp_event) */
        now += h >> 2;
        y = x >> 3;
        x = id << 3;
        p++;
        st[nst++] = (struct tfr){.id = id, .known = 1, .start = now};
        run[n++] = (struct rp_tlpar_slice){.ticks = now, .id = id};
    }
    if (p != p0) {
        d->n += (uint32_t)(p - p0); /* (one byte each) */
        d->p = p;
        d->now = now;
        d->pr_x = x;
        d->pr_y = y;
        j->nst = nst;
        j->low = low;
        *before = now;
        *seen = 1;
    }
    return n;
}

/*
 * run_job's walk for an encoder with rp_tlpar_ops.slices: the EXITs and
 * predicted ENTERs gathered into runs told at once, every other event
 * through tp_event after the run before it.  Returns 0 at the chunk's end
 * or the decoder's RP_EFORMAT (what was gathered told first); an
 * encoder's or tp_event's code stops it with *cb set to the code.
 */
static int walk_slices(struct tp *P, void *enc, struct tjob *j, struct rp_evdec *d,
                       uint64_t *before, int *seen, int *cb)
{
    struct rp_tlpar_slice run[SLICE_RUN];
    struct rp_event ev;
    uint32_t n = 0;
    int rc;

    for (;;) {
        if (d->compact)
            n = gather(P, j, d, run, n, before, seen);
        if (n == SLICE_RUN) {
            if ((*cb = P->ops->slices(enc, j->tid, run, n)) < 0)
                return 0;
            n = 0;
            continue;
        }
        if ((rc = rp_evdec_next_quick(d, &ev)) <= 0)
            break;
        if (rc == RP_EVDEC_EXIT) { /* (an EXIT and an ENTER as tp_event tells them) */
            *before = ev.ticks;
            *seen = 1;
            if (!j->nst)
                continue;
            const struct tfr *f = tp_take(j);
            run[n++] = (struct rp_tlpar_slice){.ticks = ev.ticks >= f->start ? ev.ticks : f->start,
                                               .arg = f->arg,
                                               .id = f->id,
                                               .end = 1};
        } else if (rc == RP_EVDEC_ENTER && likely(j->nst < j->capst) && ev.id < P->n_ids) {
            *before = ev.ticks;
            *seen = 1;
            j->st[j->nst++] = (struct tfr){.id = ev.id, .known = 1, .start = ev.ticks};
            run[n++] = (struct rp_tlpar_slice){.ticks = ev.ticks, .id = ev.id};
        } else {
            if (n && (*cb = P->ops->slices(enc, j->tid, run, n)) < 0)
                return 0;
            n = 0;
            if (rc == RP_EVDEC_ENTER) {
                ev.op = RP_OP_ENTER;
                ev.arg = ev.arg2 = ev.arg3 = 0;
            }
            if ((*cb = tp_event(P, enc, j, &ev, before, seen)) < 0)
                return 0;
        }
    }
    if (n && (*cb = P->ops->slices(enc, j->tid, run, n)) < 0)
        return 0;
    return rc;
}

/* Walks job j with encoder enc (see the top).  Sets j->rc to 0, RP_ENOMEM,
 * RP_EFORMAT with j->err naming the file or offset, or the encoder's
 * code. */
static void run_job(struct tp *P, void *enc, struct tjob *j)
{
    struct rp_evdec d;
    struct rp_event ev;
    int rc, seen = !j->spec;
    uint64_t before = j->spec ? 0 : j->before;

    j->err[0] = 0;
    j->out.n = 0;
    j->nrm = j->nsnap = 0;
    j->lost = j->p0 = j->any = 0;
    j->last = 0;
    if (rp_evdec_init(&d, j->data, j->len) < 0) {
        snprintf(j->err, sizeof(j->err), "EVENTS chunk at offset %llu is shorter than its header",
                 (unsigned long long)j->offset);
        rc = RP_EFORMAT;
        goto out;
    }
    uint32_t u = j->spec ? (d.snap ? d.snap_depth : 0) : j->nin;
    if (rp_grow(&j->st, &j->capst, u + 1, sizeof(*j->st), 64) < 0 ||
        (j->spec && (rp_grow(&j->snap, &j->capsnap, u + 1, sizeof(*j->snap), 64) < 0 ||
                     rp_grow(&j->need, &j->capneed, u + 1, 1, 64) < 0))) {
        rc = RP_ENOMEM;
        goto out;
    }
    if (j->spec) {
        j->nheld = 0;
        const uint8_t *q = d.snap ? rp_evdec_frames(&d) : NULL;
        for (uint32_t i = 0; i < u; i++) {
            uint32_t id;
            uint64_t start, evs, paused;
            q = rp_evdec_frame(&d, q, &id, &start, &evs, &paused);
            if (id >= P->n_ids) {
                rc = RP_EFORMAT;
                goto out;
            }
            /* its ENTER: the snapshot's start less the PAUSEs since */
            j->st[i] = (struct tfr){.id = id, .start = paused < start ? start - paused : 0};
            j->need[i] = 0;
        }
        if (u)
            memcpy(j->snap, j->st, u * sizeof(*j->st));
        j->nsnap = u;
    } else { /* (st and held are the thread's: from_joined) */
        j->nheld = j->ninh;
    }
    j->nst = j->low = u;
    if ((rc = P->ops->start(enc, j->no, j->tid, &j->out)) < 0)
        goto out;
    const struct rp_timeline_ops *tl = P->ops->tl;
    if (P->ops->slices && !tl->span) { /* the common events gathered for the encoder */
        int cb = 0;
        rc = walk_slices(P, enc, j, &d, &before, &seen, &cb);
        if (cb < 0) {
            rc = cb;
            goto out;
        }
    } else {
        while ((rc = rp_evdec_next_quick(&d, &ev)) > 0) {
            if (rc == RP_EVDEC_EXIT) { /* (an EXIT and an ENTER as tp_event tells them) */
                before = ev.ticks;
                seen = 1;
                if (j->nst && (rc = tp_pop(tl, enc, j, ev.ticks, NULL)) < 0)
                    goto out;
                continue;
            }
            if (rc == RP_EVDEC_ENTER && likely(j->nst < j->capst) && ev.id < P->n_ids) {
                before = ev.ticks;
                seen = 1;
                j->st[j->nst++] = (struct tfr){.id = ev.id, .known = 1, .start = ev.ticks};
                if (tl->begin && (rc = tl->begin(enc, j->tid, ev.id, ev.ticks)) < 0)
                    goto out;
                continue;
            }
            if (rc == RP_EVDEC_ENTER) {
                ev.op = RP_OP_ENTER;
                ev.arg = ev.arg2 = ev.arg3 = 0;
            }
            if ((rc = tp_event(P, enc, j, &ev, &before, &seen)) < 0)
                goto out;
        }
    }
    if (rc < 0) {
        struct rp_chunk at = {.offset = j->offset};
        rp_walk_evdec_err(&at, &d, j->err, sizeof(j->err));
        goto out;
    }
    j->any = d.n > 0;
    j->last = before;
    rc = P->ops->finish(enc);
out:
    if (rc == RP_EFORMAT && !j->err[0])
        snprintf(j->err, sizeof(j->err), "%s: an event uses an id no DEFS chunk defined",
                 P->ctx->input);
    j->rc = rc;
}

/* The ring's runner: walks the job in slot with runner's encoder.  Cannot
 * fail (the job keeps its code). */
static void tp_run(void *ctx, uint32_t runner, uint32_t slot)
{
    struct tp *P = ctx;
    run_job(P, P->enc[runner], &P->jobs[slot]);
}

/* The join's state of thread tid, created on first use; NULL when out of
 * memory. */
static struct tthr *tthr_of(struct tp *P, uint32_t tid)
{
    for (uint32_t i = P->nthreads; i-- > 0;)
        if (P->threads[i].tid == tid)
            return &P->threads[i];
    if (rp_grow(&P->threads, &P->capthreads, P->nthreads + 1, sizeof(*P->threads), 8) < 0)
        return NULL;
    P->threads[P->nthreads] = (struct tthr){.tid = tid};
    return &P->threads[P->nthreads++];
}

/* Swaps j's stack and held locks with T's.  Cannot fail. */
static void swap_state(struct tjob *j, struct tthr *T)
{
    struct tfr *st = j->st;
    struct thold *h = j->held;
    uint32_t cap = j->capst, caph = j->capheld;
    j->st = T->st;
    j->capst = T->cap;
    T->st = st;
    T->cap = cap;
    j->held = T->held;
    j->capheld = T->caph;
    T->held = h;
    T->caph = caph;
}

/* Makes j start from T's joined state (not from a snapshot), which it
 * takes (no copy: a stack deeper than a snapshot holds costs a chunk
 * nothing); tp_join gives it back.  Cannot fail. */
static void from_joined(struct tjob *j, struct tthr *T)
{
    swap_state(j, T);
    j->nin = T->n;
    j->ninh = T->nh;
    T->n = T->nh = 0;
    j->before = T->last;
    j->spec = 0;
}

/* Whether spec job j's assumptions hold for T (the top of this file).
 * Cannot fail. */
static int spec_holds(const struct tjob *j, const struct tthr *T)
{
    if (j->nsnap != T->n || (j->lost && T->nh))
        return 0;
    for (uint32_t i = 0; i < j->nsnap; i++)
        if (j->snap[i].id != T->st[i].id || j->snap[i].start != T->st[i].start ||
            (i >= j->low && j->need[i] && T->st[i].has_arg))
            return 0;
    if (j->p0) {
        uint64_t b = T->last, s = j->p0_start;
        if ((s > b ? s : b < j->p0_ticks ? b : j->p0_ticks) != s)
            return 0;
    }
    return 1;
}

/* The writer thread: writes the jobs joined, in order, until told to
 * stop.  A failed write is kept in P->werr (nothing is written after it).
 * Cannot fail. */
static void *tp_writer(void *arg)
{
    struct tp *P = arg;

    pthread_mutex_lock(&P->R.mu);
    for (;;) {
        while (!P->wstop && P->written == P->R.joined)
            pthread_cond_wait(&P->wwork, &P->R.mu);
        if (P->written == P->R.joined)
            break;
        struct tjob *j = &P->jobs[P->written % PAR_JOBS];
        int bad = P->werr, eno = 0;
        pthread_mutex_unlock(&P->R.mu);
        if (!bad && rp_xbuf_write(&j->out, P->out) < 0) {
            bad = RP_EIO;
            eno = errno;
        }
        pthread_mutex_lock(&P->R.mu);
        if (bad && !P->werr)
            P->weno = eno;
        P->werr = bad;
        P->written++;
        pthread_cond_broadcast(&P->wrote);
    }
    pthread_mutex_unlock(&P->R.mu);
    return NULL;
}

/* Waits until at most `left` of the jobs joined are left for the writer
 * to write (0: every one written).  Returns 0 or the writer's RP_EIO. */
static int tp_drain(struct tp *P, uint64_t left)
{
    pthread_mutex_lock(&P->R.mu);
    if (P->has_writer && P->R.joined - P->written > left && !P->werr)
        pthread_cond_signal(&P->wwork); /* (it may sleep on fewer than PAR_WAKE) */
    while (P->has_writer && P->R.joined - P->written > left && !P->werr)
        pthread_cond_wait(&P->wrote, &P->R.mu);
    int rc = P->werr;
    pthread_mutex_unlock(&P->R.mu);
    return rc;
}

/* Writes j's bytes here, after every job joined before it.  Returns 0 or
 * RP_EIO. */
static int tp_write_here(struct tp *P, const struct tjob *j)
{
    int rc = tp_drain(P, 0);
    if (rc == 0 && rp_xbuf_write(&j->out, P->out) < 0) {
        rc = RP_EIO;
        P->weno = errno; /* (the writer has stopped at an error or has nothing left) */
    }
    return rc;
}

/* Joins walked job j: checks it (walking it again here when it must),
 * writes its bytes (or leaves them to the writer, for a job of the ring),
 * keeps what it leaves.  Returns 0, its code with the context's err set,
 * RP_ENOMEM or RP_EIO. */
static int tp_join(struct tp *P, struct tjob *j)
{
    const struct rp_export_ctx *ctx = P->ctx;
    struct tthr *T = tthr_of(P, j->tid);
    if (!T)
        return RP_ENOMEM;
    if (j->spec && (j->rc < 0 || !spec_holds(j, T))) { /* (an error: as walked in order) */
        from_joined(j, T);
        run_job(P, P->enc[0], j);
    }
    if (j->rc < 0) {
        if (j->err[0])
            snprintf(ctx->err, ctx->errsz, "%s", j->err);
        return j->rc;
    }
    int rc = j == &P->seq || !P->has_writer ? tp_write_here(P, j) : 0;
    if (rc < 0)
        return rc;
    if (!j->spec) { /* T's state, taken by from_joined, as the job leaves it */
        swap_state(j, T);
        T->n = j->nst;
        T->nh = j->nheld;
        j->nst = j->nheld = 0;
        if (j->any)
            T->last = j->last;
        return 0;
    }
    if (rp_grow(&T->st, &T->cap, j->nst + 1, sizeof(*T->st), 16) < 0)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < j->nst; i++) {
        struct tfr f = j->st[i];
        if (!f.known && !f.has_arg && i < T->n) { /* a U span untouched: its argument */
            f.arg = T->st[i].arg;
            f.has_arg = T->st[i].has_arg;
        }
        f.known = 1;
        T->st[i] = f;
    }
    T->n = j->nst;
    for (uint32_t k = 0; k < j->nrm; k++) { /* the held locks: T's less those released */
        uint32_t i = T->nh;
        while (i > 0 && T->held[i - 1].id != j->rm[k])
            i--;
        if (i) {
            memmove(&T->held[i - 1], &T->held[i], (T->nh - i) * sizeof(*T->held));
            T->nh--;
        }
    }
    if (rp_grow(&T->held, &T->caph, T->nh + j->nheld + 1, sizeof(*T->held), 8) < 0)
        return RP_ENOMEM;
    if (j->nheld)
        memcpy(T->held + T->nh, j->held, j->nheld * sizeof(*T->held));
    T->nh += j->nheld;
    if (j->any)
        T->last = j->last;
    return 0;
}

/* Joins the oldest job submitted, walking unclaimed ones here while it is
 * not done.  Fails as tp_join. */
static int tp_join_oldest(struct tp *P)
{
    int rc = tp_join(P, &P->jobs[rp_jobring_oldest(&P->R)]);
    rp_jobring_joined(&P->R); /* (the writer's to write, when it is well) */
    pthread_mutex_lock(&P->R.mu);
    if (P->R.joined - P->written >= PAR_WAKE)
        pthread_cond_signal(&P->wwork);
    if (P->werr && rc == 0)
        rc = P->werr;
    pthread_mutex_unlock(&P->R.mu);
    return rc;
}

/* Copies chunk c into job j, numbered next.  RP_ENOMEM. */
static int tp_fill(struct tp *P, struct tjob *j, const struct rp_chunk *c, uint32_t tid)
{
    if (rp_grow(&j->data, &j->cap, c->len, 1, 65536) < 0)
        return RP_ENOMEM;
    memcpy(j->data, c->data, c->len);
    j->len = c->len;
    j->offset = c->offset;
    j->tid = tid;
    j->spec = 1;
    j->no = P->njobs++;
    return 0;
}

/* The spans still open at the end of the trace end there, cut, and the
 * locks still held are dropped (as spanwalk.c's walk_one), a job per
 * thread that has any.  Fails as tp_join. */
static int tp_close(struct tp *P)
{
    const struct rp_profile *p = P->ctx->p;
    struct tjob *j = &P->seq;
    int rc = 0;
    for (uint32_t i = 0; i < P->nthreads && rc == 0; i++) {
        struct tthr *T = &P->threads[i];
        if (!T->n && !T->nh)
            continue;
        uint64_t end = p->ended && p->end_ticks > T->last ? p->end_ticks : T->last;
        j->tid = T->tid;
        j->no = P->njobs++;
        j->out.n = 0;
        if (rp_grow(&j->st, &j->capst, T->n + 1, sizeof(*j->st), 64) < 0 ||
            rp_grow(&j->held, &j->capheld, T->nh + 1, sizeof(*j->held), 8) < 0)
            return RP_ENOMEM;
        if (T->n)
            memcpy(j->st, T->st, T->n * sizeof(*j->st));
        if (T->nh)
            memcpy(j->held, T->held, T->nh * sizeof(*j->held));
        j->nst = j->low = T->n;
        j->nheld = T->nh;
        const struct rp_timeline_ops *tl = P->ops->tl;
        void *enc = P->enc[0];
        if ((rc = P->ops->start(enc, j->no, j->tid, &j->out)) < 0 ||
            (rc = tp_pop_to(tl, enc, j, 0, end, "cut")) < 0 ||
            (rc = tp_drop_held(tl, enc, j, end)) < 0 || (rc = P->ops->finish(enc)) < 0)
            break;
        rc = tp_write_here(P, j);
    }
    return rc;
}

/* Reads the trace into P's jobs and joins them.  Fails as rp_tlpar_run. */
static int tp_read(struct tp *P)
{
    const struct rp_export_ctx *ctx = P->ctx;
    const struct rp_replay_opts *o = ctx->replay;
    struct rp_reader r;
    struct rp_chunk c;
    int rc, shown = -1, progress = ctx->progress && isatty(2);

    if ((rc = rp_reader_open(&r, ctx->input)) < 0) {
        snprintf(ctx->err, ctx->errsz, "%s", r.err);
        return rc;
    }
    r.force = o && o->force;
    while ((rc = rp_reader_next(&r, &c)) > 0) {
        if (progress)
            rp_walk_progress(&r, &shown);
        if (c.type != RP_CH_EVENTS)
            continue;
        if (c.len < 16) {
            snprintf(ctx->err, ctx->errsz, "EVENTS chunk at offset %llu is shorter than its header",
                     (unsigned long long)c.offset);
            rc = RP_EFORMAT;
            break;
        }
        uint32_t tid = rp_get32(c.data), word = rp_get32(c.data + 4);
        if (o && o->tid && !rp_tid_match(o->tid, tid))
            continue;
        struct tthr *T = tthr_of(P, tid); /* (threads in the order of their first chunk) */
        if (!T) {
            rc = RP_ENOMEM;
            break;
        }
        if ((word & RP_EV_SNAPSHOT) && P->R.started) { /* (else in order: never twice) */
            if (P->R.submitted - P->R.joined >= PAR_FLIGHT && (rc = tp_join_oldest(P)) < 0)
                break;
            /* its slot written (the writer at most PAR_JOBS - 1 behind) */
            if ((rc = tp_drain(P, PAR_JOBS - 1 - (P->R.submitted - P->R.joined))) < 0)
                break;
            struct tjob *j = &P->jobs[rp_jobring_next(&P->R)];
            if ((rc = tp_fill(P, j, &c, tid)) < 0)
                break;
            rp_jobring_submit(&P->R);
            continue;
        }
        while (rp_jobring_out(&P->R)) /* from the state the chunks before leave */
            if ((rc = tp_join_oldest(P)) < 0)
                goto out;
        struct tjob *j = &P->seq;
        if ((rc = tp_fill(P, j, &c, tid)) < 0)
            break;
        from_joined(j, T);
        run_job(P, P->enc[0], j);
        if ((rc = tp_join(P, j)) < 0)
            break;
    }
    /* the reader's own error (rc from rp_reader_next, the loop's condition)
     * comes after the jobs still out: an error in one of them is earlier in
     * the file */
    int rerr = rc < 0 && !ctx->err[0] && r.err[0] ? rc : 0;
    if (rerr)
        rc = 0;
    if (rc >= 0)
        while (rp_jobring_out(&P->R))
            if ((rc = tp_join_oldest(P)) < 0)
                break;
    if (rc >= 0 && rerr)
        rc = rp_walk_reader_rc(&r, rerr, o && o->force, ctx->err, ctx->errsz);
out:
    if (progress && shown >= 0)
        fputs("\r\033[K", stderr);
    rp_reader_close(&r);
    return rc < 0 ? rc : 0;
}

/* Frees a job's buffers.  Cannot fail. */
static void job_free(struct tjob *j)
{
    free(j->data);
    free(j->out.b);
    free(j->snap);
    free(j->need);
    free(j->st);
    free(j->held);
    free(j->rm);
}

int rp_tlpar_run(FILE *out, const struct rp_export_ctx *ctx, const struct rp_tlpar_ops *ops,
                 void *arg)
{
    struct tp *P = calloc(1, sizeof(*P));
    int rc = RP_ENOMEM;

    if (!P)
        return RP_ENOMEM;
    ctx->err[0] = 0;
    P->ctx = ctx;
    P->ops = ops;
    P->arg = arg;
    P->out = out;
    P->n_ids = ctx->p->n_nodes;
    rp_jobring_init(&P->R, tp_run, P);
    pthread_cond_init(&P->wwork, NULL);
    pthread_cond_init(&P->wrote, NULL);
    /* (without a writer thread, each job is written where it is joined) */
    struct stat st;
    int drains = fstat(fileno(out), &st) != 0 || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode);
    P->has_writer = drains && !pthread_create(&P->writer, NULL, tp_writer, P);
    /* as many workers as the replay: this thread walks jobs too while it
     * waits (one more thread than CPUs made the benchmark's perfetto 15 %
     * slower on 2 CPUs); fewer when an encoder or a thread cannot be made */
    int nw = rp_workers_count();
    for (uint32_t want = 1 + (nw > PAR_WORKERS ? PAR_WORKERS : (uint32_t)nw);
         P->nenc < want && (P->enc[P->nenc] = ops->open(arg)); P->nenc++)
        ;
    if (!P->nenc)
        goto out;
    rp_jobring_start(&P->R, P->nenc - 1);
    if ((rc = tp_read(P)) == 0)
        rc = tp_close(P);
    if (rc == 0)
        rc = tp_drain(P, 0);
    if (rc == RP_EIO && P->weno && !ctx->err[0]) /* (why, rather than the code's meaning) */
        snprintf(ctx->err, ctx->errsz, "writing %s: %s", ctx->output ? ctx->output : "stdout",
                 strerror(P->weno));
out:
    if (P->has_writer) { /* (after an error: it writes what was joined) */
        pthread_mutex_lock(&P->R.mu);
        P->wstop = 1;
        pthread_cond_broadcast(&P->wwork);
        pthread_mutex_unlock(&P->R.mu);
        pthread_join(P->writer, NULL);
    }
    pthread_cond_destroy(&P->wwork);
    pthread_cond_destroy(&P->wrote);
    rp_jobring_destroy(&P->R); /* (its workers done) */
    for (uint32_t k = 0; k < P->nenc; k++)
        ops->close(P->enc[k]);
    for (uint32_t i = 0; i <= PAR_JOBS; i++)
        job_free(i < PAR_JOBS ? &P->jobs[i] : &P->seq);
    for (uint32_t i = 0; i < P->nthreads; i++) {
        free(P->threads[i].st);
        free(P->threads[i].held);
    }
    free(P->threads);
    free(P);
    return rc;
}

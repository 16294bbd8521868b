// SPDX-License-Identifier: MIT
/*
 * cct_par.c - the calling-context tree built in parallel over a file's
 * chunks (cct.h; the sequential build and the rules of a span are cct.c).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cct.h"
#include "cct_int.h"
#include "common/array.h"
#include "common/error.h"
#include "jobring.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "walk.h"

/*
 * The parallel build: the chunks of a file replayed at once, as the report's
 * replay does (docs/design.md §5).  An EVENTS chunk with a stack snapshot
 * (and its event counts, for the compensation) is a job: a replayer (the
 * workers, or this thread when it would wait) puts the snapshot's spans
 * (U) under the chunk's in a tree of its own (paths from the snapshot's
 * ids) and replays the chunk with the rules of cct.c.  A span ending in the
 * chunk counts on its path there, less its callees' time in this chunk;
 * what is missing is the callees' time of a U span in the chunks before
 * (its "pending" time), which only the thread's history knows.  So each job
 * reports how each U span ended (counted, left out, dropped at a LOST) and
 * the stack it leaves, and the jobs are joined per thread in file order:
 * a counted U span's pending time is subtracted from its path's exclusive
 * time (after the replayers are done), a left-out one's goes to its kept
 * caller, a dropped one's is forgotten.  A chunk without a usable snapshot
 * waits for the jobs before it and starts from the joined stack.  At the
 * end the trees are summed path by path and put in one order
 * (canonical()), so the result is the same for any number of replayers.
 */
#define PAR_WORKERS RP_JOBRING_WORKERS

/* An open span between chunks, as the join keeps it. */
struct pframe {
    uint32_t id;
    uint64_t start;
    uint64_t ev;      /* its ENTER's number, counted from the end of the last chunk (<= 0) */
    uint64_t pending; /* its callees' time in the chunks joined so far */
};

struct pjob {
    uint8_t *data;
    uint32_t len, cap;
    uint64_t offset;
    uint32_t tid;
    int from_snap;     /* U is the snapshot, else in[] */
    struct pframe *in; /* U when not from the snapshot */
    uint32_t nin, capin;
    /* out */
    int rc;
    char err[200];
    uint32_t slot; /* the replayer's tree */
    uint64_t events, last;
    int any;
    uint32_t u, low;
    struct uo *uo;
    uint32_t capuo;
    struct frame *out; /* the stack it leaves */
    uint32_t nout, capout;
};

struct pthr {
    uint32_t tid;
    struct pframe *stack;
    uint32_t depth, cap;
    uint64_t last;
    int resident; /* its stack is slot 0's thread's, not stack[] (deep: see par_resident) */
};

/* A thread's stack this deep (it has no snapshot then: RP_SNAP_MAX) stays
 * in slot 0 between its chunks, which replay there in order, so that a
 * chunk costs its events and not the depth (as in the replay, replay_int.h
 * "Deep stacks"). */
#define PAR_RESIDENT 1024

struct padj {
    uint32_t slot, node;
    uint64_t ticks; /* to subtract from the path's excl (mod 2^64) */
    uint64_t incl;  /* to add to its incl (the span's duration raised, comp.h) */
};

struct par {
    const char *path;
    struct rp_cct slots[1 + PAR_WORKERS]; /* slot 0: this thread's */
    uint32_t nworkers;
    struct rp_jobring R; /* runner k replays into slots[k] */
    struct pjob jobs[RP_JOBRING_SLOTS], seq;
    struct pthr *threads;
    uint32_t nthreads, capthreads;
    struct padj *adj;
    uint32_t nadj, capadj;
};

/* The replayers besides this thread: as many as the replay's
 * (rp_workers_count).  Cannot fail. */
uint32_t rp_cct_par_workers(void)
{
    int n = rp_workers_count();
    return n > PAR_WORKERS ? PAR_WORKERS : (uint32_t)n;
}

/* Replays job j in the tree of slot k (see above).  Sets j->rc to 0,
 * RP_ENOMEM, or RP_EFORMAT with j->err naming the offset (empty for an id
 * no DEFS defined: the join names the file). */
static void run_job(struct par *P, uint32_t k, struct pjob *j)
{
    struct rp_cct *t = &P->slots[k];
    struct priv *v = t->priv;
    struct thread *th = NULL;
    struct rp_evdec d;
    int rc = 0;

    j->slot = k;
    j->err[0] = 0;
    j->events = j->last = 0;
    j->any = 0;
    j->u = j->low = j->nout = 0;
    if (rp_evdec_init(&d, j->data, j->len) < 0) {
        snprintf(j->err, sizeof(j->err), "EVENTS chunk at offset %llu is shorter than its header",
                 (unsigned long long)j->offset);
        rc = RP_EFORMAT;
        goto out;
    }
    if (!(th = rp_cct_thread(t, v, j->tid))) {
        rc = RP_ENOMEM;
        goto out;
    }
    th->depth = 0;
    th->events = th->last = 0;
    uint32_t u = j->from_snap ? (d.snap ? d.snap_depth : 0) : j->nin;
    if (rp_grow(&v->uo, &v->capuo, u + 1, sizeof(*v->uo), 64) < 0) {
        rc = RP_ENOMEM;
        goto out;
    }
    const uint8_t *q = j->from_snap && d.snap ? rp_evdec_frames(&d) : NULL;
    for (uint32_t i = 0; i < u; i++) {
        uint32_t id;
        uint64_t start, evs, paused = 0;
        if (j->from_snap) {
            q = rp_evdec_frame(&d, q, &id, &start, &evs, &paused);
            evs = -(evs & (UINT64_MAX >> 2)); /* its ENTER, before the chunk */
            if (id >= v->n_ids || (v->map && !(id = v->map[id]))) {
                rc = RP_EFORMAT;
                goto out;
            }
        } else {
            id = j->in[i].id;
            start = j->in[i].start;
            evs = j->in[i].ev;
        }
        /* the filter judges it at its ENTER: its start less the PAUSEs since */
        if ((rc = rp_cct_push(t, v, th, id, paused < start ? start - paused : 0)) < 0)
            goto out;
        th->stack[i].start = start;
        th->stack[i].ev = evs;
        v->uo[i] = (struct uo){0};
    }
    v->u = v->low = u;
    int cb;
    if ((rc = rp_cct_chunk_on(t, v, th, &d, &j->any, &cb)) < 0 && cb)
        goto out; /* an id no DEFS defined: the join names the file */
    if (rc < 0) {
        struct rp_chunk at = {.offset = j->offset};
        rp_walk_evdec_err(&at, &d, j->err, sizeof(j->err));
        goto out;
    }
    j->u = u;
    j->low = v->low;
    if (rp_grow(&j->uo, &j->capuo, u + 1, sizeof(*j->uo), 64) < 0 ||
        rp_grow(&j->out, &j->capout, th->depth + 1, sizeof(*j->out), 64) < 0) {
        rc = RP_ENOMEM;
        goto out;
    }
    memcpy(j->uo, v->uo, u * sizeof(*j->uo));
    if (th->depth)
        memcpy(j->out, th->stack, th->depth * sizeof(*j->out));
    j->nout = th->depth;
    j->events = th->events;
    j->last = th->last;
out:
    v->u = v->low = 0;
    if (th)
        th->depth = 0;
    j->rc = rc;
}
/* The ring's runner: replays the job in slot into runner's tree.  Cannot
 * fail (the job keeps its code). */
static void par_run(void *ctx, uint32_t runner, uint32_t slot)
{
    struct par *P = ctx;
    run_job(P, runner, &P->jobs[slot]);
}

/* The join's state of thread tid, created on first use; NULL when out of
 * memory. */
static struct pthr *pthr_of(struct par *P, uint32_t tid)
{
    for (uint32_t i = 0; i < P->nthreads; i++)
        if (P->threads[i].tid == tid)
            return &P->threads[i];
    if (rp_grow(&P->threads, &P->capthreads, P->nthreads + 1, sizeof(*P->threads), 8) < 0)
        return NULL;
    P->threads[P->nthreads] = (struct pthr){.tid = tid};
    return &P->threads[P->nthreads++];
}

/* What a counted U span's duration gains, compensated against its callees'
 * time pend in the chunks before too (comp.h rp_comp_span).  Cannot
 * fail. */
static uint64_t u_raised(struct par *P, const struct uo *o, uint64_t pend)
{
    struct rp_comp c = ((const struct priv *)P->slots[0].priv)->comp;
    return o->comp ? rp_comp_span(&c, o->raw, o->k, o->callees + pend) - o->dur : 0;
}

/* Joins replayed job j to its thread (see above).  Returns 0, the job's
 * code with err set, or RP_ENOMEM. */
static int par_join(struct par *P, struct pjob *j, char *err, size_t errsz)
{
    if (j->rc < 0) {
        if (j->err[0])
            snprintf(err, errsz, "%s", j->err);
        else if (j->rc == RP_EFORMAT)
            snprintf(err, errsz, "%s: an event uses an id that no DEFS chunk defined", P->path);
        return j->rc;
    }
    struct pthr *T = pthr_of(P, j->tid);
    if (!T)
        return RP_ENOMEM;
    for (uint32_t i = j->u; i-- > j->low;) { /* the U spans it ended, innermost first */
        uint64_t pend = i < T->depth ? T->stack[i].pending : 0;
        const struct uo *o = &j->uo[i];
        uint64_t raised = o->how == UO_COUNTED && pend ? u_raised(P, o, pend) : 0;
        if (o->how == UO_COUNTED && pend) {
            if (rp_grow(&P->adj, &P->capadj, P->nadj + 1, sizeof(*P->adj), 64) < 0)
                return RP_ENOMEM;
            P->adj[P->nadj++] = (struct padj){
                .slot = j->slot, .node = o->node, .ticks = pend - raised, .incl = raised};
            if (raised && o->up && o->up - 1 < T->depth) /* (its kept caller's callees) */
                T->stack[o->up - 1].pending += raised;
        } else if (o->how == UO_LEFT && o->up && o->up - 1 < T->depth) {
            T->stack[o->up - 1].pending += pend;
        }
    }
    if (rp_grow(&T->stack, &T->cap, j->nout + 1, sizeof(*T->stack), 16) < 0)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < j->nout; i++) {
        const struct frame *f = &j->out[i];
        uint64_t pend = f->callees + (i < j->low && i < T->depth ? T->stack[i].pending : 0);
        T->stack[i] = (struct pframe){
            .id = f->id, .start = f->start, .ev = f->ev - j->events, .pending = pend};
    }
    T->depth = j->nout;
    if (j->any)
        T->last = j->last;
    return 0;
}

/* Joins the oldest job submitted, replaying unclaimed ones here while it is
 * not done.  Fails as par_join. */
static int par_join_oldest(struct par *P, char *err, size_t errsz)
{
    struct pjob *j = &P->jobs[rp_jobring_oldest(&P->R)];
    rp_jobring_joined(&P->R); /* (its slot is filled again only by this thread) */
    return par_join(P, j, err, errsz);
}

/* Moves T's stack into slot 0's thread (T is resident after).  RP_ENOMEM. */
static int par_resident(struct par *P, struct pthr *T)
{
    struct rp_cct *t = &P->slots[0];
    struct priv *v = t->priv;
    struct thread *th = rp_cct_thread(t, v, T->tid);
    if (!th)
        return RP_ENOMEM;
    th->depth = 0;
    th->events = 0; /* T's ENTERs are counted from the end of its last chunk */
    for (uint32_t d = 0; d < T->depth; d++) {
        if (rp_cct_push(t, v, th, T->stack[d].id, T->stack[d].start) < 0)
            return RP_ENOMEM;
        th->stack[d].ev = T->stack[d].ev;
        th->stack[d].callees = T->stack[d].pending;
    }
    th->last = T->last;
    T->depth = 0;
    T->resident = 1;
    return 0;
}

/* Moves a resident T's stack back from slot 0's thread.  RP_ENOMEM. */
static int par_unresident(struct par *P, struct pthr *T)
{
    struct rp_cct *t = &P->slots[0];
    struct thread *th = rp_cct_thread(t, t->priv, T->tid);
    if (!th || rp_grow(&T->stack, &T->cap, th->depth + 1, sizeof(*T->stack), 16) < 0)
        return RP_ENOMEM;
    for (uint32_t d = 0; d < th->depth; d++) {
        const struct frame *f = &th->stack[d];
        T->stack[d] = (struct pframe){
            .id = f->id, .start = f->start, .ev = f->ev - th->events, .pending = f->callees};
    }
    T->depth = th->depth;
    T->last = th->last;
    th->depth = 0;
    T->resident = 0;
    return 0;
}

/* Replays chunk c of resident thread T in slot 0, in order, as
 * rp_cct_add_file_seq does.  Fails as rp_cct_build. */
static int par_run_resident(struct par *P, struct pthr *T, const struct rp_chunk *c, char *err,
                            size_t errsz)
{
    struct rp_cct *t = &P->slots[0];
    struct priv *v = t->priv;
    struct thread *th = rp_cct_thread(t, v, T->tid);
    struct rp_evdec d;
    int rc;

    if (!th)
        return RP_ENOMEM;
    if (rp_evdec_init(&d, c->data, c->len) < 0) {
        snprintf(err, errsz, "EVENTS chunk at offset %llu is shorter than its header",
                 (unsigned long long)c->offset);
        return RP_EFORMAT;
    }
    int any = 0, cb;
    if ((rc = rp_cct_chunk_on(t, v, th, &d, &any, &cb)) < 0 && cb) {
        if (rc == RP_EFORMAT)
            snprintf(err, errsz, "%s: an event uses an id that no DEFS chunk defined", P->path);
        return rc;
    }
    if (rc < 0)
        rp_walk_evdec_err(c, &d, err, errsz);
    return rc;
}

/* Copies chunk c into job j.  RP_ENOMEM. */
static int par_fill(struct pjob *j, const struct rp_chunk *c, uint32_t tid)
{
    if (rp_grow(&j->data, &j->cap, c->len, 1, 65536) < 0)
        return RP_ENOMEM;
    memcpy(j->data, c->data, c->len);
    j->len = c->len;
    j->offset = c->offset;
    j->tid = tid;
    return 0;
}

/* Ends the spans still open at the end of the file, in slot 0's tree, as
 * rp_cct_add_file_seq does.  RP_ENOMEM. */
static int par_close(struct par *P)
{
    struct rp_cct *t = &P->slots[0];
    struct priv *v = t->priv;
    for (uint32_t i = 0; i < P->nthreads; i++) {
        const struct pthr *T = &P->threads[i];
        struct thread *th = rp_cct_thread(t, v, T->tid);
        if (!th)
            return RP_ENOMEM;
        if (T->resident) { /* as rp_cct_add_file_seq */
            uint64_t end = v->end_ticks > th->last ? v->end_ticks : th->last;
            t->cut += th->depth;
            th->events++;
            while (th->depth)
                rp_cct_pop(t, th, end);
            continue;
        }
        th->depth = 0;
        for (uint32_t d = 0; d < T->depth; d++) {
            if (rp_cct_push(t, v, th, T->stack[d].id, T->stack[d].start) < 0)
                return RP_ENOMEM;
            th->stack[d].ev = T->stack[d].ev;
            th->stack[d].callees = T->stack[d].pending;
        }
        uint64_t end = v->end_ticks > T->last ? v->end_ticks : T->last;
        t->cut += th->depth;
        th->events = 1; /* span_end counts the events before the end's own: none here */
        while (th->depth)
            rp_cct_pop(t, th, end);
    }
    return 0;
}

/* The thread node of tid under t's root, created when new; 0 if out of
 * memory. */
static uint32_t thread_node_of(struct rp_cct *t, uint32_t tid)
{
    for (uint32_t c = t->nodes[0].child; c; c = t->nodes[c].sibling)
        if (!t->nodes[c].id && t->nodes[c].tid == tid)
            return c;
    return rp_cct_thread_node(t, tid);
}

/* Adds the paths of s to t's.  RP_ENOMEM. */
static int merge_into(struct rp_cct *t, const struct rp_cct *s)
{
    uint32_t *map = malloc((s->n ? s->n : 1) * sizeof(*map));
    if (!map)
        return RP_ENOMEM;
    map[0] = 0;
    for (uint32_t i = 1; i < s->n; i++) { /* a parent comes before its paths */
        const struct rp_cct_node *n = &s->nodes[i];
        uint32_t m = !n->id && n->tid ? thread_node_of(t, n->tid)
                                      : rp_cct_child(t, t->priv, map[n->parent], n->id);
        if (!m) {
            free(map);
            return RP_ENOMEM;
        }
        t->nodes[m].calls += n->calls;
        t->nodes[m].incl += n->incl;
        t->nodes[m].excl += n->excl;
        map[i] = m;
    }
    t->unclosed += s->unclosed;
    t->unwound += s->unwound;
    t->cut += s->cut;
    t->unmatched += s->unmatched;
    free(map);
    return 0;
}

/* Reads the file into P's jobs and joins them; the file's reader errors as
 * rp_walk_file's.  Fails as rp_cct_build. */
static int par_read(struct par *P, const struct rp_replay_opts *o, int progress, char *err,
                    size_t errsz)
{
    struct rp_reader r;
    struct rp_chunk c;
    int rc, shown = -1;

    if ((rc = rp_reader_open(&r, P->path)) < 0) {
        snprintf(err, errsz, "%s", r.err);
        return rc;
    }
    r.force = o->force;
    progress = progress && isatty(2);
    while ((rc = rp_reader_next(&r, &c)) > 0) {
        if (progress)
            rp_walk_progress(&r, &shown);
        if (c.type != RP_CH_EVENTS)
            continue;
        if (c.len < 16) {
            snprintf(err, errsz, "EVENTS chunk at offset %llu is shorter than its header",
                     (unsigned long long)c.offset);
            rc = RP_EFORMAT;
            break;
        }
        uint32_t tid = rp_get32(c.data), word = rp_get32(c.data + 4);
        if (o->tid && !rp_tid_match(o->tid, tid))
            continue;
        int par = P->nworkers && (word & RP_EV_SNAPSHOT) &&
                  ((word & RP_EV_SNAPCOUNT) || o->no_compensate);
        if (par) {
            struct pthr *T = pthr_of(P, tid);
            if (!T) {
                rc = RP_ENOMEM;
                break;
            }
            if (T->resident && (rc = par_unresident(P, T)) < 0) /* no job of it is out */
                break;
            if (rp_jobring_full(&P->R) && (rc = par_join_oldest(P, err, errsz)) < 0)
                break;
            struct pjob *j = &P->jobs[rp_jobring_next(&P->R)];
            if ((rc = par_fill(j, &c, tid)) < 0)
                break;
            j->from_snap = 1;
            rp_jobring_submit(&P->R);
            continue;
        }
        /* U is the thread's stack as the chunks before leave it */
        while (rp_jobring_out(&P->R))
            if ((rc = par_join_oldest(P, err, errsz)) < 0)
                goto out;
        struct pjob *j = &P->seq;
        struct pthr *T = pthr_of(P, tid);
        if (T && !T->resident && T->depth >= PAR_RESIDENT && (rc = par_resident(P, T)) < 0)
            break;
        if (T && T->resident) {
            if ((rc = par_run_resident(P, T, &c, err, errsz)) < 0)
                break;
            continue;
        }
        if (!T || par_fill(j, &c, tid) < 0 ||
            rp_grow(&j->in, &j->capin, T->depth + 1, sizeof(*j->in), 16) < 0) {
            rc = RP_ENOMEM;
            break;
        }
        if (T->depth)
            memcpy(j->in, T->stack, T->depth * sizeof(*j->in));
        j->nin = T->depth;
        j->from_snap = 0;
        run_job(P, 0, j);
        if ((rc = par_join(P, j, err, errsz)) < 0)
            break;
    }
    rc = rp_walk_reader_rc(&r, rc, o->force, err, errsz);
    if (rc >= 0) /* the jobs still out */
        while (rp_jobring_out(&P->R))
            if ((rc = par_join_oldest(P, err, errsz)) < 0)
                break;
out:
    if (progress && shown >= 0)
        fputs("\r\033[K", stderr);
    rp_reader_close(&r);
    return rc < 0 ? rc : 0;
}

/* Stops P's workers (after the jobs they have) and frees P.  Cannot fail. */
static void par_free(struct par *P)
{
    rp_jobring_destroy(&P->R);
    for (uint32_t k = 0; k <= PAR_WORKERS; k++)
        rp_cct_free(&P->slots[k]);
    for (uint32_t i = 0; i <= RP_JOBRING_SLOTS; i++) {
        struct pjob *j = i < RP_JOBRING_SLOTS ? &P->jobs[i] : &P->seq;
        free(j->data);
        free(j->in);
        free(j->uo);
        free(j->out);
    }
    for (uint32_t i = 0; i < P->nthreads; i++)
        free(P->threads[i].stack);
    free(P->threads);
    free(P->adj);
    free(P);
}

/* rp_cct_add_file_seq with nworkers threads besides this one (the top of
 * this file).  Fails as rp_cct_build. */
int rp_cct_add_file_par(struct rp_cct *t, const char *path, const struct rp_replay_opts *o,
                        uint32_t nworkers, int progress, char *err, size_t errsz)
{
    const struct priv *tv = t->priv;
    struct par *P = calloc(1, sizeof(*P));
    int rc = 0;

    if (!P)
        return RP_ENOMEM;
    P->path = path;
    P->nworkers = nworkers;
    rp_jobring_init(&P->R, par_run, P);
    for (uint32_t k = 0; k <= nworkers; k++) {
        struct rp_cct *s = &P->slots[k];
        if ((rc = rp_cct_start(s, tv->by_thread)) < 0)
            goto out;
        struct priv *v = s->priv;
        s->filter = t->filter;
        v->comp = tv->comp;
        v->end_ticks = tv->end_ticks;
        v->offid = tv->offid;
        v->map = tv->map;
        v->n_ids = tv->n_ids;
    }
    rp_jobring_start(&P->R, nworkers); /* (fewer: this thread replays the rest) */
    if ((rc = par_read(P, o, progress, err, errsz)) < 0)
        goto out;
    if ((rc = par_close(P)) < 0)
        goto out;
    /* every job is joined: the workers wait, the trees are still */
    for (uint32_t i = 0; i < P->nadj; i++) {
        struct rp_cct_node *n = &P->slots[P->adj[i].slot].nodes[P->adj[i].node];
        n->excl -= P->adj[i].ticks;
        n->incl += P->adj[i].incl;
    }
    for (uint32_t k = 0; k <= nworkers && rc == 0; k++)
        rc = merge_into(t, &P->slots[k]);
out:
    par_free(P);
    return rc;
}

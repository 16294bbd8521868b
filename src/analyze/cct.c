// SPDX-License-Identifier: MIT
/*
 * cct.c - building the calling-context tree (cct.h) from the event stream.
 *
 * Each thread keeps a stack of open frames {path node, start, time in
 * callees}.  ENTER looks up the child of the top frame's path with that id
 * (created on first use) and pushes it; when a span ends:
 *
 *     dur         = end - start, less the recorder's overhead (comp.h)
 *     path.calls += 1,  path.incl += dur,  path.excl += dur - callees
 *     the frame below (if any) adds dur to its callees
 *
 * exactly as replay.c does per node (the overhead of a span from the
 * thread's events between its ENTER and its end, counted here as there;
 * excl summed with its sign and a negative total shown as 0, as for a
 * node), and what replay.c drops we drop: an exit with no open span
 * (unmatched) and every open span at a LOST event.  Frames left without
 * their exit end as in replay.c, with time: the spans above an EXIT_ID or
 * an UNWIND that names a deeper one, every span at an UNWIND 0 (the thread
 * ends), and what is open at the end of the trace (at the END chunk's
 * ticks, or the thread's last event without one).
 *
 * Paths are found by an open-addressing hash on (parent path, id) whose
 * slots hold node indices; it stays at most half full.
 */
#include "cct.h"
#include "cct_int.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/error.h"
#include "common/span.h"
#include "comp.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "walk.h"

/* The home slot of path (parent, id): a Fibonacci hash of both. */
static uint32_t slot_of(uint32_t parent, uint32_t id, uint32_t mask)
{
    uint64_t k = ((uint64_t)parent << 32 | id) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(k >> 32) & mask;
}

/* Doubles the hash and re-inserts every node but the root.  RP_ENOMEM. */
static int rehash(struct rp_cct *t, struct priv *v)
{
    uint32_t n = v->nslots ? v->nslots * 2 : 1024;
    uint32_t *s = calloc(n, sizeof(*s));
    if (!s)
        return RP_ENOMEM;
    for (uint32_t i = 1; i < t->n; i++) {
        uint32_t h = slot_of(t->nodes[i].parent, t->nodes[i].id, n - 1);
        while (s[h])
            h = (h + 1) & (n - 1);
        s[h] = i;
    }
    free(v->slots);
    v->slots = s;
    v->nslots = n;
    return 0;
}

/* child_of's rare path: adds the path parent;id at empty slot h.  Returns
 * its index, 0 if out of memory. */
static __attribute__((noinline)) uint32_t child_new(struct rp_cct *t, struct priv *v,
                                                    uint32_t parent, uint32_t id, uint32_t h)
{
    if (rp_grow(&t->nodes, &t->cap, t->n + 1, sizeof(*t->nodes), 16) < 0)
        return 0;
    uint32_t i = t->n++;
    struct rp_cct_node *pn = &t->nodes[parent];
    t->nodes[i] = (struct rp_cct_node){
        .id = id, .parent = parent, .sibling = pn->child, .depth = pn->depth + 1};
    pn->child = i;
    v->slots[h] = i;
    if (2 * t->n > v->nslots && rehash(t, v) < 0)
        return 0;
    return i;
}

/* The path parent;id, created when new.  Returns its index, 0 if out of memory. */
static inline uint32_t child_of(struct rp_cct *t, struct priv *v, uint32_t parent, uint32_t id)
{
    uint32_t h = slot_of(parent, id, v->nslots - 1);
    for (uint32_t i; (i = v->slots[h]); h = (h + 1) & (v->nslots - 1))
        if (likely(t->nodes[i].parent == parent && t->nodes[i].id == id))
            return i;
    return child_new(t, v, parent, id, h);
}

/* A new thread node under the root.  Returns its index, 0 if out of memory. */
RP_HIDDEN uint32_t rp_cct_thread_node(struct rp_cct *t, uint32_t tid)
{
    if (rp_grow(&t->nodes, &t->cap, t->n + 1, sizeof(*t->nodes), 16) < 0)
        return 0;
    uint32_t i = t->n++;
    t->nodes[i] = (struct rp_cct_node){.tid = tid, .sibling = t->nodes[0].child, .depth = 1};
    t->nodes[0].child = i;
    return i;
}

/* The state of thread tid, created on first use; NULL when out of memory. */
static struct thread *thread_of(struct rp_cct *t, struct priv *v, uint32_t tid)
{
    if (v->last < v->nthreads && v->threads[v->last].tid == tid)
        return &v->threads[v->last];
    for (uint32_t i = 0; i < v->nthreads; i++)
        if (v->threads[i].tid == tid)
            return &v->threads[v->last = i];
    if (rp_grow(&v->threads, &v->capthreads, v->nthreads + 1, sizeof(*v->threads), 16) < 0)
        return NULL;
    uint32_t root = 0;
    if (v->by_thread && !(root = rp_cct_thread_node(t, tid)))
        return NULL;
    v->last = v->nthreads++;
    v->threads[v->last] = (struct thread){.tid = tid, .root = root};
    return &v->threads[v->last];
}

/* Ends the top frame of th at now (the thread's latest event). */
static inline __attribute__((always_inline)) void span_end(struct rp_cct *t, struct thread *th,
                                                           uint64_t now)
{
    assert(th->depth > 0);
    struct priv *v = t->priv;
    struct frame *f = &th->stack[--th->depth];
    uint64_t raw = rp_span_dur(f->start, now), dur = raw, k = 0;
    int comp = v->comp.on && !(v->offid && f->id == v->offid);
    if (comp) {
        k = rp_comp_of(&v->comp, th->events - f->ev - 1);
        dur = rp_comp_span(&v->comp, raw, k, f->callees);
    }
    int left = !f->node || (t->filter && dur < t->filter->min_ticks);
    if (unlikely(th->depth < v->low)) { /* a frame of U: the join needs how it ended */
        v->uo[th->depth] = (struct uo){.node = f->node,
                                       .up = f->up,
                                       .how = left ? UO_LEFT : UO_COUNTED,
                                       .comp = (uint8_t)comp,
                                       .raw = raw,
                                       .k = k,
                                       .dur = dur,
                                       .callees = f->callees};
        v->low = th->depth;
    }
    if (left) {
        /* left out: its own time is its kept caller's, its kept callees stay theirs */
        if (f->up)
            th->stack[f->up - 1].callees += f->callees;
        return;
    }
    struct rp_cct_node *n = &t->nodes[f->node];
    n->calls++;
    n->incl += dur;
    n->excl += rp_span_excl(dur, f->callees); /* a signed sum until the end */
    if (f->up)
        th->stack[f->up - 1].callees += dur;
}

/*
 * Pushes a frame for span id entered at ticks on th: kept or not by
 * t->filter, its path under its nearest kept caller's.  Returns 0 or
 * RP_ENOMEM.
 */
static inline __attribute__((always_inline)) int
span_begin(struct rp_cct *t, struct priv *v, struct thread *th, uint32_t id, uint64_t ticks)
{
    const struct rp_span_filter *flt = t->filter;
    const struct frame *top = th->depth ? &th->stack[th->depth - 1] : NULL;
    struct frame f = {.id = id, .start = ticks, .ev = th->events};

    f.up = !top ? 0 : top->node ? th->depth : top->up;
    f.in_inc = top && top->in_inc;
    f.in_exc = top && top->in_exc;
    uint32_t kd = f.up ? th->stack[f.up - 1].kdepth : 0;
    int keep = 1;
    if (flt) {
        struct rp_sf_frame su = {.kid = f.up, .kdepth = kd, .inc = f.in_inc, .exc = f.in_exc}, sf;
        rp_sf_enter(flt, &su, id, ticks, &sf);
        f.in_inc = sf.inc;
        f.in_exc = sf.exc;
        /* (an off-CPU span's length is tested at its end, as every span's) */
        keep = v->offid && id == v->offid
                   ? rp_sf_offcpu_kept(flt, top ? &su : NULL, id, ticks, UINT64_MAX)
                   : sf.keep;
    }
    f.kdepth = kd + !!keep;
    if (keep && !(f.node = child_of(t, v, f.up ? th->stack[f.up - 1].node : th->root, id)))
        return RP_ENOMEM;
    if (rp_grow(&th->stack, &th->cap, th->depth + 1, sizeof(*th->stack), 16) < 0)
        return RP_ENOMEM;
    th->stack[th->depth++] = f;
    return 0;
}

/*
 * walk.h callback: one event through the rules at the top.  Returns 0,
 * RP_ENOMEM, or RP_EFORMAT for an id the profile does not know.
 */
static inline __attribute__((always_inline)) int
event_on(struct rp_cct *t, struct priv *v, struct thread *th, const struct rp_event *ev)
{
    uint32_t at;

    if ((ev->op == RP_OP_ENTER || ev->op == RP_OP_EXIT_ID || ev->op == RP_OP_UNWIND) &&
        ev->id >= v->n_ids)
        return RP_EFORMAT;
    struct rp_event mapped;
    if (v->map && ev->id && ev->id < v->n_ids) { /* a merged profile's id */
        mapped = *ev;
        if (!(mapped.id = v->map[ev->id]) &&
            (ev->op == RP_OP_ENTER || ev->op == RP_OP_EXIT_ID || ev->op == RP_OP_UNWIND))
            return RP_EFORMAT;
        ev = &mapped;
    }
    /* the writer's events (replay.c): not among the thread's for compensation */
    if (!(ev->op == RP_OP_PAUSE || (v->offid && ev->op == RP_OP_ENTER && ev->id == v->offid) ||
          (v->offid && ev->op == RP_OP_EXIT && th->depth &&
           th->stack[th->depth - 1].id == v->offid)))
        th->events++;
    th->last = ev->ticks;
    switch (ev->op) {
    case RP_OP_ENTER:
        if (span_begin(t, v, th, ev->id, ev->ticks) < 0)
            return RP_ENOMEM;
        break;
    case RP_OP_EXIT:
        if (!th->depth)
            t->unmatched++;
        else
            span_end(t, th, ev->ticks);
        break;
    case RP_OP_EXIT_ID:
        RP_SPAN_MATCH(at, th->depth, th->stack[at - 1].id, ev->id);
        if (!at) {
            t->unmatched++;
            break;
        }
        t->unwound += th->depth - at; /* left without exits: they end here */
        while (th->depth > at)
            span_end(t, th, ev->ticks);
        span_end(t, th, ev->ticks);
        break;
    case RP_OP_UNWIND: /* id 0: the thread ends; else the spans above id end */
        for (at = th->depth; ev->id && at > 0 && th->stack[at - 1].id != ev->id; at--)
            ;
        if (ev->id && !at)
            break;
        if (ev->id) {
            t->unwound += th->depth - at;
        } else {
            t->cut += th->depth;
            at = 0;
        }
        while (th->depth > at)
            span_end(t, th, ev->ticks);
        break;
    case RP_OP_LOST:
        t->unclosed += th->depth;
        for (uint32_t d = 0; d < th->depth && d < v->low; d++)
            v->uo[d].how = UO_DROPPED; /* frames of U */
        if (th->depth)
            v->low = 0;
        th->depth = 0;
        break;
    case RP_OP_PAUSE: /* the recorder's wait: not in any open span (replay.c) */
        for (uint32_t d = 0; d < th->depth; d++)
            th->stack[d].start += ev->arg;
        break;
    default:
        break;
    }
    return 0;
}

/*
 * An ENTER at ev immediately followed by its EXIT at ex, unfiltered: the
 * span counted as span_begin and span_end would, without the frame.
 * Returns 1 when done, 0 when the pair is not such a leaf (the caller
 * takes both events the long way).  Cannot fail otherwise.
 */
static inline __attribute__((always_inline)) int leaf_on(struct rp_cct *t, struct priv *v,
                                                         struct thread *th,
                                                         const struct rp_event *ev,
                                                         const struct rp_event *ex)
{
    uint32_t id = ev->id;
    if (t->filter || ex->op != RP_OP_EXIT || id >= v->n_ids || (v->offid && id == v->offid))
        return 0;
    if (v->map && !(id = v->map[id]))
        return 0;
    if (v->offid && id == v->offid)
        return 0;
    struct frame *top = th->depth ? &th->stack[th->depth - 1] : NULL;
    uint32_t node = child_of(t, v, top ? top->node : th->root, id);
    if (!node)
        return 0; /* out of memory: the long way says so */
    th->events += 2;
    th->last = ex->ticks;
    uint64_t dur = rp_comp_dur(&v->comp, rp_span_dur(ev->ticks, ex->ticks), 0, 0);
    struct rp_cct_node *n = &t->nodes[node];
    n->calls++;
    n->incl += dur;
    n->excl += rp_span_excl(dur, 0);
    if (top)
        top->callees += dur;
    return 1;
}

/* The next event of d with its op set (rp_evdec_next_quick): the common
 * one-byte EXIT and predicted ENTER without the general decoder.  Returns
 * 1, 0 at the end, or the decoder's code. */
static inline __attribute__((always_inline)) int quick_next(struct rp_evdec *d, struct rp_event *ev)
{
    int rc = rp_evdec_next_quick(d, ev);
    if (rc == RP_EVDEC_EXIT)
        ev->op = RP_OP_EXIT, ev->id = 0;
    else if (rc == RP_EVDEC_ENTER)
        ev->op = RP_OP_ENTER;
    return rc > 0 ? 1 : rc;
}

/* Replays the events of d on th (one chunk of one thread), a leaf's two
 * events at once (leaf_on).  Returns 0, the decoder's code, or event_on's
 * (then *cb is set). */
RP_HIDDEN int rp_cct_chunk_on(struct rp_cct *t, struct priv *v, struct thread *th,
                              struct rp_evdec *d, int *any, int *cb)
{
    struct rp_event ev, ex;
    int rc, drc;
    *cb = 0;
    while ((rc = quick_next(d, &ev)) > 0) {
        *any = 1;
        drc = 0;
        if (ev.op == RP_OP_ENTER && !t->filter) {
            drc = quick_next(d, &ex);
            if (drc > 0 && leaf_on(t, v, th, &ev, &ex))
                continue;
        }
        if ((rc = event_on(t, v, th, &ev)) < 0 || (drc > 0 && (rc = event_on(t, v, th, &ex)) < 0)) {
            *cb = 1;
            return rc;
        }
        if (drc < 0) /* the event after the ENTER is malformed */
            return drc;
    }
    return rc;
}

/* span_begin, span_end, child_of and thread_of for the parallel build's
 * joins (cct_par.c), out of its event loop. */
RP_HIDDEN int rp_cct_push(struct rp_cct *t, struct priv *v, struct thread *th, uint32_t id,
                          uint64_t ticks)
{
    return span_begin(t, v, th, id, ticks);
}

RP_HIDDEN void rp_cct_pop(struct rp_cct *t, struct thread *th, uint64_t now)
{
    span_end(t, th, now);
}

RP_HIDDEN uint32_t rp_cct_child(struct rp_cct *t, struct priv *v, uint32_t parent, uint32_t id)
{
    return child_of(t, v, parent, id);
}

RP_HIDDEN struct thread *rp_cct_thread(struct rp_cct *t, struct priv *v, uint32_t tid)
{
    return thread_of(t, v, tid);
}

static int on_event(void *ctx, uint32_t tid, const struct rp_event *ev)
{
    struct rp_cct *t = ctx;
    struct priv *v = t->priv;
    struct thread *th = thread_of(t, v, tid);

    if (!th)
        return RP_ENOMEM;
    return event_on(t, v, th, ev);
}

/* Starts *t (zeroed): the root and the hash.  RP_ENOMEM. */
RP_HIDDEN int rp_cct_start(struct rp_cct *t, int by_thread)
{
    struct priv *v = calloc(1, sizeof(*v));
    if (!v || !(t->nodes = calloc(16, sizeof(*t->nodes)))) {
        free(v);
        return RP_ENOMEM;
    }
    t->priv = v;
    t->cap = 16;
    t->n = 1; /* the root */
    v->by_thread = by_thread;
    return rehash(t, v);
}

/* The first node of kind offcpu in p (0 = none). */
static uint32_t offcpu_of(const struct rp_profile *p)
{
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (p->nodes[i].kind == RP_KIND_OFFCPU)
            return i;
    return 0;
}

/* Walks one file into t with v's ids, overhead and end set, in order on
 * this thread; ends what is still open then and forgets its threads.
 * Fails as rp_cct_build. */
RP_HIDDEN int rp_cct_add_file_seq(struct rp_cct *t, const char *path,
                                  const struct rp_replay_opts *o, int progress, char *err,
                                  size_t errsz)
{
    static const struct rp_walk_ops ops = {.event = on_event};
    struct priv *v = t->priv;
    int rc = rp_walk_file(path, o, &ops, t, progress, err, errsz);
    if (rc == RP_EFORMAT && !err[0])
        snprintf(err, errsz, "%s: an event uses an id that no DEFS chunk defined", path);
    for (uint32_t i = 0; i < v->nthreads; i++) { /* still open: cut, as rp_replay_close_open */
        struct thread *th = &v->threads[i];
        uint64_t end = v->end_ticks > th->last ? v->end_ticks : th->last;
        t->cut += th->depth;
        th->events++; /* span_end counts the events before the end's own: none here */
        while (th->depth)
            span_end(t, th, end);
        free(th->stack);
    }
    v->nthreads = v->last = 0;
    return rc;
}

/* One file into t: in parallel over its chunks when there are CPUs for it.
 * Fails as rp_cct_build. */
static int add_file(struct rp_cct *t, const char *path, const struct rp_replay_opts *o,
                    int progress, char *err, size_t errsz)
{
    uint32_t n = rp_cct_par_workers();
    return n ? rp_cct_add_file_par(t, path, o, n, progress, err, errsz)
             : rp_cct_add_file_seq(t, path, o, progress, err, errsz);
}

/* Sorts children by span id, then thread (qsort).  Cannot fail. */
static int cmp_kid(const void *a, const void *b)
{
    const struct rp_cct_node *x = *(struct rp_cct_node *const *)a;
    const struct rp_cct_node *y = *(struct rp_cct_node *const *)b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->tid < y->tid ? -1 : x->tid > y->tid;
}

/*
 * Renumbers t's paths in one order whatever the order they were found in:
 * depth first, a path's callees by span id (threads by tid), so that the
 * exports are the same bytes for any number of replayers.  The hash is
 * not rebuilt (no path is looked up after).  RP_ENOMEM (t unchanged).
 */
static int canonical(struct rp_cct *t)
{
    size_t m = t->n ? t->n : 1;
    struct rp_cct_node *nn = malloc(m * sizeof(*nn));
    struct rp_cct_node **kids = malloc(m * sizeof(*kids));
    uint32_t *todo = malloc(m * sizeof(*todo)); /* old indices, a stack */
    uint32_t *newi = malloc(m * sizeof(*newi));
    uint32_t ntodo = 0, n = 0;
    int rc = RP_ENOMEM;

    if (!nn || !kids || !todo || !newi)
        goto out;
    todo[ntodo++] = 0;
    while (ntodo) {
        uint32_t i = todo[--ntodo], k = 0;
        newi[i] = n;
        nn[n] = t->nodes[i];
        nn[n].parent = i ? newi[t->nodes[i].parent] : 0;
        nn[n].child = nn[n].sibling = 0;
        n++;
        for (uint32_t c = t->nodes[i].child; c; c = t->nodes[c].sibling)
            kids[k++] = &t->nodes[c];
        qsort(kids, k, sizeof(*kids), cmp_kid);
        while (k--) /* the smallest on top */
            todo[ntodo++] = (uint32_t)(kids[k] - t->nodes);
    }
    for (uint32_t i = n; i-- > 1;) { /* each path's callees in index order: the sorted one */
        struct rp_cct_node *pn = &nn[nn[i].parent];
        nn[i].sibling = pn->child;
        pn->child = i;
    }
    free(t->nodes);
    t->nodes = nn;
    t->n = t->cap = n;
    nn = NULL;
    rc = 0;
out:
    free(nn);
    free(kids);
    free(todo);
    free(newi);
    return rc;
}

/* A negative exclusive total shows 0; the paths in canonical() order.
 * RP_ENOMEM. */
static int finish(struct rp_cct *t)
{
    for (uint32_t i = 1; i < t->n; i++)
        if ((int64_t)t->nodes[i].excl < 0)
            t->nodes[i].excl = 0;
    return canonical(t);
}

int rp_cct_build(struct rp_cct *t, const char *path, const struct rp_replay_opts *o,
                 const struct rp_profile *p, int by_thread, int progress, char *err, size_t errsz)
{
    int rc;

    err[0] = 0;
    if ((rc = rp_cct_start(t, by_thread)) < 0)
        return rc;
    struct priv *v = t->priv;
    v->n_ids = p->n_nodes;
    rp_comp_init(&v->comp, p, o->no_compensate);
    v->offid = offcpu_of(p);
    v->end_ticks = p->ended ? p->end_ticks : 0;
    rc = add_file(t, path, o, progress, err, errsz);
    return rc < 0 ? rc : finish(t);
}

int rp_cct_build_set(struct rp_cct *t, const struct rp_replay_opts *o, const struct rp_profile *p,
                     int by_thread, int progress, char *err, size_t errsz)
{
    int rc;

    err[0] = 0;
    if ((rc = rp_cct_start(t, by_thread)) < 0)
        return rc;
    struct priv *v = t->priv;
    v->offid = offcpu_of(p);
    for (uint32_t k = 0; k < p->n_procs && rc == 0; k++) {
        const struct rp_proc *r = &p->procs[k];
        if ((rc = rp_comp_init_proc(&v->comp, r, o->no_compensate, err, errsz)) < 0)
            return rc;
        v->map = r->map;
        v->n_ids = r->n_map;
        v->end_ticks = r->end_read ? r->end_ticks : 0;
        rc = add_file(t, r->file, o, progress, err, errsz);
    }
    return rc < 0 ? rc : finish(t);
}

void rp_cct_free(struct rp_cct *t)
{
    struct priv *v = t->priv;
    if (v) {
        for (uint32_t i = 0; i < v->nthreads; i++)
            free(v->threads[i].stack);
        free(v->threads);
        free(v->slots);
        free(v->uo);
        free(v);
    }
    free(t->nodes);
    memset(t, 0, sizeof(*t));
}

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

#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/array.h"
#include "common/error.h"
#include "common/span.h"
#include "comp.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "walk.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

struct frame {
    uint32_t node;          /* its path, 0 when the filter leaves it out */
    uint32_t id;            /* its span id */
    uint32_t up;            /* 1 + the index of its nearest kept caller's frame, 0 = none */
    uint32_t kdepth;        /* kept spans on the stack down from it, itself included */
    uint8_t in_inc, in_exc; /* it or a caller is an included / excluded function */
    uint64_t start, callees;
    uint64_t ev; /* the number of its ENTER among the thread's events */
};

struct thread {
    uint32_t tid;
    uint32_t root; /* the parent of its outermost spans: 0, or its thread node */
    struct frame *stack;
    uint32_t depth, cap;
    uint64_t events; /* its events so far */
    uint64_t last;   /* ticks of its last event */
};

struct priv {
    uint32_t *slots; /* node index, 0 = empty (the root is never looked up) */
    uint32_t nslots; /* a power of two */
    struct thread *threads;
    uint32_t nthreads, capthreads, last; /* last: the thread of the previous event */
    uint32_t n_ids;
    int by_thread;
    struct rp_comp comp;
    uint64_t end_ticks;  /* the END chunk's, 0 without one */
    uint32_t offid;      /* the off-CPU node's trace id (0 = none): its spans and PAUSE
                            events are the writer's, not counted, not compensated */
    const uint32_t *map; /* the file's ids -> the tree's (a merged profile's), or NULL */
    /* a chunk replayed on its own (parallel build): its first u frames came
     * from before it (U); how each of them ended is noted in uo[] */
    uint32_t u, low; /* low: the frames below it are still U's (none ended yet) */
    struct uo *uo;
    uint32_t capuo;
};

/* How a frame of U ended in its chunk (parallel build, see below). */
enum { UO_OPEN, UO_COUNTED, UO_LEFT, UO_DROPPED };
struct uo {
    uint32_t node; /* UO_COUNTED: its path */
    uint32_t up;   /* UO_LEFT: its frame's up */
    uint8_t how;
};

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
static uint32_t thread_node(struct rp_cct *t, uint32_t tid)
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
    if (v->by_thread && !(root = thread_node(t, tid)))
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
    uint64_t raw = rp_span_dur(f->start, now);
    uint64_t dur =
        v->offid && f->id == v->offid ? raw : rp_comp_dur(&v->comp, raw, th->events - f->ev - 1);
    int left = !f->node || (t->filter && dur < t->filter->min_ticks);
    if (unlikely(th->depth < v->low)) { /* a frame of U: the join needs how it ended */
        v->uo[th->depth] =
            (struct uo){.node = f->node, .up = f->up, .how = left ? UO_LEFT : UO_COUNTED};
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
    uint64_t dur = rp_comp_dur(&v->comp, rp_span_dur(ev->ticks, ex->ticks), 0);
    struct rp_cct_node *n = &t->nodes[node];
    n->calls++;
    n->incl += dur;
    n->excl += rp_span_excl(dur, 0);
    if (top)
        top->callees += dur;
    return 1;
}

/* Replays the events of d on th (one chunk of one thread), a leaf's two
 * events at once (leaf_on).  Returns 0, the decoder's code, or event_on's
 * (then *cb is set). */
static int chunk_on(struct rp_cct *t, struct priv *v, struct thread *th, struct rp_evdec *d,
                    int *any, int *cb)
{
    struct rp_event ev, ex;
    int rc, drc;
    *cb = 0;
    while ((rc = rp_evdec_next(d, &ev)) > 0) {
        *any = 1;
        drc = 0;
        if (ev.op == RP_OP_ENTER && !t->filter) {
            drc = rp_evdec_next(d, &ex);
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
static int start(struct rp_cct *t, int by_thread)
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
static int add_file_seq(struct rp_cct *t, const char *path, const struct rp_replay_opts *o,
                        int progress, char *err, size_t errsz)
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

/*
 * The parallel build: the chunks of a file replayed at once, as the report's
 * replay does (docs/design.md §5).  An EVENTS chunk with a stack snapshot
 * (and its event counts, for the compensation) is a job: a replayer (the
 * workers, or this thread when it would wait) puts the snapshot's spans
 * (U) under the chunk's in a tree of its own (paths from the snapshot's
 * ids) and replays the chunk with the rules above.  A span ending in the
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
#define PAR_JOBS    16
#define PAR_WORKERS 8

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
    int done; /* under par.mu */
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
    uint64_t ticks; /* to subtract from the path's excl */
};

struct par;
struct pworker {
    struct par *P;
    uint32_t slot;
    pthread_t tid;
};

struct par {
    const char *path;
    struct rp_cct slots[1 + PAR_WORKERS]; /* slot 0: this thread's */
    uint32_t nworkers, started;
    struct pworker w[PAR_WORKERS];
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    int stop;
    struct pjob jobs[PAR_JOBS], seq;
    uint64_t submitted, claimed, joined;
    struct pthr *threads;
    uint32_t nthreads, capthreads;
    struct padj *adj;
    uint32_t nadj, capadj;
};

/* The replayers besides this thread: RANKPROF_REPLAY_JOBS as for the
 * replay, else one per CPU less one.  Cannot fail. */
static uint32_t par_workers(void)
{
    const char *e = getenv("RANKPROF_REPLAY_JOBS");
    long n = e && *e ? atol(e) : sysconf(_SC_NPROCESSORS_ONLN) - 1;
    return n < 0 ? 0 : n > PAR_WORKERS ? PAR_WORKERS : (uint32_t)n;
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
    if (!(th = thread_of(t, v, j->tid))) {
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
        uint64_t start, evs;
        if (j->from_snap) {
            q = rp_evdec_frame(&d, q, &id, &start, &evs);
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
        if ((rc = span_begin(t, v, th, id, start)) < 0)
            goto out;
        th->stack[i].ev = evs;
        v->uo[i] = (struct uo){0};
    }
    v->u = v->low = u;
    int cb;
    if ((rc = chunk_on(t, v, th, &d, &j->any, &cb)) < 0 && cb)
        goto out; /* an id no DEFS defined: the join names the file */
    if (rc < 0 && rp_evdec_miscount(&d))
        snprintf(j->err, sizeof(j->err),
                 "EVENTS chunk at offset %llu states %u events, its stream holds %u",
                 (unsigned long long)j->offset, d.count, d.n);
    else if (rc < 0)
        snprintf(j->err, sizeof(j->err),
                 "malformed event at offset %llu (in the chunk at offset %llu)",
                 (unsigned long long)(j->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(d.p - d.start)),
                 (unsigned long long)j->offset);
    if (rc < 0)
        goto out;
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
/* A worker: replays the jobs it claims until told to stop.  Cannot fail. */
static void *par_worker(void *arg)
{
    struct pworker *w = arg;
    struct par *P = w->P;

    pthread_mutex_lock(&P->mu);
    for (;;) {
        while (!P->stop && P->claimed == P->submitted)
            pthread_cond_wait(&P->work, &P->mu);
        if (P->claimed == P->submitted)
            break;
        struct pjob *j = &P->jobs[P->claimed++ % PAR_JOBS];
        pthread_mutex_unlock(&P->mu);
        run_job(P, w->slot, j);
        pthread_mutex_lock(&P->mu);
        j->done = 1;
        pthread_cond_broadcast(&P->done);
    }
    pthread_mutex_unlock(&P->mu);
    return NULL;
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
        if (o->how == UO_COUNTED && pend) {
            if (rp_grow(&P->adj, &P->capadj, P->nadj + 1, sizeof(*P->adj), 64) < 0)
                return RP_ENOMEM;
            P->adj[P->nadj++] = (struct padj){.slot = j->slot, .node = o->node, .ticks = pend};
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
    struct pjob *j = &P->jobs[P->joined % PAR_JOBS];
    pthread_mutex_lock(&P->mu);
    while (!j->done) {
        if (P->claimed < P->submitted) {
            struct pjob *o = &P->jobs[P->claimed++ % PAR_JOBS];
            pthread_mutex_unlock(&P->mu);
            run_job(P, 0, o);
            pthread_mutex_lock(&P->mu);
            o->done = 1;
            continue;
        }
        pthread_cond_wait(&P->done, &P->mu);
    }
    pthread_mutex_unlock(&P->mu);
    P->joined++;
    return par_join(P, j, err, errsz);
}

/* Moves T's stack into slot 0's thread (T is resident after).  RP_ENOMEM. */
static int par_resident(struct par *P, struct pthr *T)
{
    struct rp_cct *t = &P->slots[0];
    struct priv *v = t->priv;
    struct thread *th = thread_of(t, v, T->tid);
    if (!th)
        return RP_ENOMEM;
    th->depth = 0;
    th->events = 0; /* T's ENTERs are counted from the end of its last chunk */
    for (uint32_t d = 0; d < T->depth; d++) {
        if (span_begin(t, v, th, T->stack[d].id, T->stack[d].start) < 0)
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
    struct thread *th = thread_of(t, t->priv, T->tid);
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
 * add_file_seq does.  Fails as rp_cct_build. */
static int par_run_resident(struct par *P, struct pthr *T, const struct rp_chunk *c, char *err,
                            size_t errsz)
{
    struct rp_cct *t = &P->slots[0];
    struct priv *v = t->priv;
    struct thread *th = thread_of(t, v, T->tid);
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
    if ((rc = chunk_on(t, v, th, &d, &any, &cb)) < 0 && cb) {
        if (rc == RP_EFORMAT)
            snprintf(err, errsz, "%s: an event uses an id that no DEFS chunk defined", P->path);
        return rc;
    }
    if (rc < 0 && rp_evdec_miscount(&d))
        snprintf(err, errsz, "EVENTS chunk at offset %llu states %u events, its stream holds %u",
                 (unsigned long long)c->offset, d.count, d.n);
    else if (rc < 0)
        snprintf(err, errsz, "malformed event at offset %llu (in the chunk at offset %llu)",
                 (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(d.p - d.start)),
                 (unsigned long long)c->offset);
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
    j->done = 0;
    return 0;
}

/* Ends the spans still open at the end of the file, in slot 0's tree, as
 * add_file_seq does.  RP_ENOMEM. */
static int par_close(struct par *P)
{
    struct rp_cct *t = &P->slots[0];
    struct priv *v = t->priv;
    for (uint32_t i = 0; i < P->nthreads; i++) {
        const struct pthr *T = &P->threads[i];
        struct thread *th = thread_of(t, v, T->tid);
        if (!th)
            return RP_ENOMEM;
        if (T->resident) { /* as add_file_seq */
            uint64_t end = v->end_ticks > th->last ? v->end_ticks : th->last;
            t->cut += th->depth;
            th->events++;
            while (th->depth)
                span_end(t, th, end);
            continue;
        }
        th->depth = 0;
        for (uint32_t d = 0; d < T->depth; d++) {
            if (span_begin(t, v, th, T->stack[d].id, T->stack[d].start) < 0)
                return RP_ENOMEM;
            th->stack[d].ev = T->stack[d].ev;
            th->stack[d].callees = T->stack[d].pending;
        }
        uint64_t end = v->end_ticks > T->last ? v->end_ticks : T->last;
        t->cut += th->depth;
        th->events = 1; /* span_end counts the events before the end's own: none here */
        while (th->depth)
            span_end(t, th, end);
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
    return thread_node(t, tid);
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
                                      : child_of(t, t->priv, map[n->parent], n->id);
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

/* Shows "rankprof: reading FILE: NN%" when the percentage changed.  Cannot
 * fail (a failed write to stderr is not an error). */
static void par_progress(const struct rp_reader *r, int *shown)
{
    if (!r->size)
        return;
    int pct = (int)(r->off * 100 / r->size);
    if (pct == *shown)
        return;
    *shown = pct;
    fprintf(stderr, "\rrankprof: reading %s: %3d%%", r->path, pct);
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
            par_progress(&r, &shown);
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
            if (P->submitted - P->joined == PAR_JOBS && (rc = par_join_oldest(P, err, errsz)) < 0)
                break;
            struct pjob *j = &P->jobs[P->submitted % PAR_JOBS];
            if ((rc = par_fill(j, &c, tid)) < 0)
                break;
            j->from_snap = 1;
            pthread_mutex_lock(&P->mu);
            P->submitted++;
            pthread_cond_signal(&P->work);
            pthread_mutex_unlock(&P->mu);
            continue;
        }
        /* U is the thread's stack as the chunks before leave it */
        while (P->joined < P->submitted)
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
    /* the reader's own error (rc from rp_reader_next, the loop's condition) */
    if (rc < 0 && !err[0] && r.err[0]) {
        if (o->force && (rc == RP_ETRUNC || rc == RP_ECRC))
            rc = 0; /* as the replay does under force: the sound part is the trace */
        else
            snprintf(err, errsz, "%s", r.err);
    }
    if (rc >= 0) /* the jobs still out */
        while (P->joined < P->submitted)
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
    if (P->started) {
        pthread_mutex_lock(&P->mu);
        P->stop = 1;
        pthread_cond_broadcast(&P->work);
        pthread_mutex_unlock(&P->mu);
        for (uint32_t i = 0; i < P->started; i++)
            pthread_join(P->w[i].tid, NULL);
    }
    pthread_cond_destroy(&P->work);
    pthread_cond_destroy(&P->done);
    pthread_mutex_destroy(&P->mu);
    for (uint32_t k = 0; k <= PAR_WORKERS; k++)
        rp_cct_free(&P->slots[k]);
    for (uint32_t i = 0; i <= PAR_JOBS; i++) {
        struct pjob *j = i < PAR_JOBS ? &P->jobs[i] : &P->seq;
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

/*
 * add_file_seq with nworkers threads besides this one (see "The parallel
 * build" above).  Fails as rp_cct_build.
 */
static int add_file_par(struct rp_cct *t, const char *path, const struct rp_replay_opts *o,
                        uint32_t nworkers, int progress, char *err, size_t errsz)
{
    const struct priv *tv = t->priv;
    struct par *P = calloc(1, sizeof(*P));
    int rc = 0;

    if (!P)
        return RP_ENOMEM;
    P->path = path;
    P->nworkers = nworkers;
    pthread_mutex_init(&P->mu, NULL);
    pthread_cond_init(&P->work, NULL);
    pthread_cond_init(&P->done, NULL);
    for (uint32_t k = 0; k <= nworkers; k++) {
        struct rp_cct *s = &P->slots[k];
        if ((rc = start(s, tv->by_thread)) < 0)
            goto out;
        struct priv *v = s->priv;
        s->filter = t->filter;
        v->comp = tv->comp;
        v->end_ticks = tv->end_ticks;
        v->offid = tv->offid;
        v->map = tv->map;
        v->n_ids = tv->n_ids;
    }
    for (; P->started < nworkers; P->started++) {
        P->w[P->started] = (struct pworker){.P = P, .slot = P->started + 1};
        if (pthread_create(&P->w[P->started].tid, NULL, par_worker, &P->w[P->started]))
            break; /* fewer workers: this thread replays the rest */
    }
    if ((rc = par_read(P, o, progress, err, errsz)) < 0)
        goto out;
    if ((rc = par_close(P)) < 0)
        goto out;
    /* every job is joined: the workers wait, the trees are still */
    for (uint32_t i = 0; i < P->nadj; i++)
        P->slots[P->adj[i].slot].nodes[P->adj[i].node].excl -= P->adj[i].ticks;
    for (uint32_t k = 0; k <= nworkers && rc == 0; k++)
        rc = merge_into(t, &P->slots[k]);
out:
    par_free(P);
    return rc;
}

/* One file into t: in parallel over its chunks when there are CPUs for it.
 * Fails as rp_cct_build. */
static int add_file(struct rp_cct *t, const char *path, const struct rp_replay_opts *o,
                    int progress, char *err, size_t errsz)
{
    uint32_t n = par_workers();
    return n ? add_file_par(t, path, o, n, progress, err, errsz)
             : add_file_seq(t, path, o, progress, err, errsz);
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
    if ((rc = start(t, by_thread)) < 0)
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
    if ((rc = start(t, by_thread)) < 0)
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

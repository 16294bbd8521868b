// SPDX-License-Identifier: MIT
/*
 * join.c - the threads' state between their chunks (struct tstate,
 * replay_int.h): a thread's open spans after its last chunk, joined with
 * each replayed chunk in file order (rp_replay_join), kept resident in the
 * main replayer when they get deep (Deep stacks), and ended after the last
 * chunk (rp_threads_end).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/error.h"
#include "replay_int.h"

/* The slot of tid in v->tidx (its entry, or the empty slot where it goes). */
static uint32_t tidx_slot(const struct priv *v, uint32_t tid)
{
    uint32_t mask = v->tidx_cap - 1, i = (uint32_t)rp_mix64(tid) & mask;
    while (v->tidx[i] && v->ts[v->tidx[i] - 1].tid != tid)
        i = (i + 1) & mask;
    return i;
}

/*
 * The replay state of thread tid, created if new.  A hash index keeps this
 * O(1): a trace may hold many thousands of threads (or a hostile file
 * millions).  Returns NULL when out of memory.
 */
struct tstate *rp_tstate_get(struct rp_profile *p, uint32_t tid)
{
    struct priv *v = p->priv;
    if (v->tidx_cap && v->tidx[tidx_slot(v, tid)])
        return &v->ts[v->tidx[tidx_slot(v, tid)] - 1];
    if ((v->nts + 1) * 2 > v->tidx_cap) { /* rehash at half full */
        uint32_t ncap = v->tidx_cap ? v->tidx_cap * 2 : 64;
        uint32_t *nt = calloc(ncap, sizeof(*nt));
        if (!nt)
            return NULL;
        free(v->tidx);
        v->tidx = nt;
        v->tidx_cap = ncap;
        for (uint32_t i = 0; i < v->nts; i++)
            v->tidx[tidx_slot(v, v->ts[i].tid)] = i + 1;
    }
    if (rp_grow(&v->ts, &v->capts, v->nts + 1, sizeof(*v->ts), 16) < 0 ||
        rp_grow(&p->threads, &p->cap_threads, p->n_threads + 1, sizeof(*p->threads), 16) < 0)
        return NULL;
    v->tidx[tidx_slot(v, tid)] = v->nts + 1;
    struct rp_thread *th = &p->threads[p->n_threads];
    memset(th, 0, sizeof(*th));
    th->tid = tid;
    struct tstate *t = &v->ts[v->nts++];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    t->ti = p->n_threads++;
    return t;
}

/*
 * Joins job j (replayed) to its thread, in file order: the thread's counts,
 * and its open spans.  U frames that ended in the chunk are counted here
 * (struct uspan), with their callee time from the earlier chunks, carried
 * on the thread's stack.  Returns 0, j->rc with the error in err, or
 * RP_ENOMEM.
 */
/* Hands the time off CPU and preempted below frame f in the earlier chunks
 * (f ended in this one) on to pf, the frame under it, as span_finish does
 * in a chunk: the time a blocked span took is the chunk's to count (its
 * duration), and a wait's own off-CPU time is no preemption of the frames
 * under it.  Cannot fail. */
static void join_off(const struct rp_profile *p, struct frame *pf, const struct frame *f)
{
    pf->off += f->off;
    if (!blocked_kind(p->nodes[f->id].kind))
        pf->pre += f->pre;
}

int rp_replay_join(struct rp_profile *p, struct job *j, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    struct rp_thread *th = &p->threads[j->ti];
    struct tstate *t = &v->ts[j->ti];

    if (j->rc < 0) {
        snprintf(err, errsz, "%s", j->err);
        return j->rc;
    }
    int first = !th->events && !t->depth; /* the thread's first chunk */
    if (j->events) {
        if (!th->events)
            th->first = j->first;
        th->last = j->last;
        th->events += j->events;
        p->events += j->events;
    }
    th->unmatched_exits += j->unmatched;
    th->unclosed += j->unclosed;
    th->unwound += j->unwound;
    th->cut += j->cut;
    th->lost += j->lost;
    th->paused += j->paused;
    p->paused += j->paused;
    t->holds += j->holds; /* in file order: what is open after this chunk */
    p->hold_intervals |= j->hold_ops;
    p->comp_clamped += j->clamped;

    /* Does the snapshot continue the thread's stack?  (Always, from our
     * recorder; a file that says otherwise gets what it says, and a warning.) */
    int same = j->resident ? j->res_same : !j->nsnap || j->nsnap == t->depth;
    for (uint32_t i = 0; !j->resident && same && i < j->nsnap; i++)
        same = j->snap[i].id == t->stack[i].id && j->snap[i].start == t->stack[i].start;
    /* (a thread's first chunk may begin inside spans: the older pieces of a
     * rotated trace were deleted, record --max-size) */
    if (!same && !first && !v->snap_warned++)
        rp_profile_warn(p,
                        "the stack snapshot of the chunk at offset %llu does not continue its "
                        "thread's previous chunk%s",
                        (unsigned long long)j->offset,
                        j->from_snap ? "; spans across that boundary were dropped" : "");
    if (j->resident) { /* the stack is the thread's rstate (Deep stacks) */
        t->rs->base += j->events;
        return 0;
    }
    if (!same && j->from_snap) {
        th->unclosed += t->depth;
        t->depth = 0;
        if (rp_grow(&t->stack, &t->cap, j->u, sizeof(*t->stack), 64) < 0)
            return RP_ENOMEM;
        for (uint32_t i = 0; i < j->u; i++)
            t->stack[i] = (struct frame){.id = j->snap[i].id,
                                         .start = j->snap[i].start,
                                         .ev = j->snap[i].ev,
                                         .sf = j->snap[i].sf};
        t->depth = j->u;
    }
    /* (top down: a span of U the chunk ended is counted now, against its
     * callees' time from the earlier chunks too, and what that adds to its
     * duration goes to the frame below; a span the filter left out hands its
     * callees' time from earlier chunks on to the frame below, as span_end
     * does in the chunk) */
    for (uint32_t i = j->u; i-- > j->low;) {
        if (j->closed[i] == 1) {
            uint64_t raised;
            int rc = rp_replay_count_u(p, j, i, &t->stack[i], &raised);
            if (rc < 0)
                return rc;
            if (i)
                t->stack[i - 1].child += raised;
        } else if (j->closed[i] == 2 && i) {
            t->stack[i - 1].child += t->stack[i].child;
        }
        if (i && j->closed[i]) /* its time off CPU below, from the earlier chunks, is below
                                  the frame under it too (span_finish) */
            join_off(p, &t->stack[i - 1], &t->stack[i]);
    }
    /* the activations that ended under the U frames the chunk ended, in
     * earlier chunks: in their edges' incl_calls, and in the frame left
     * below them (each frame's acts counts those ended right under it) */
    uint64_t carry = 0;
    for (uint32_t i = j->u; i-- > j->low;) {
        carry += t->stack[i].acts;
        if (j->closed[i] != 1 || !carry)
            continue;
        uint32_t caller = !i ? 0 : v->flt ? t->stack[i - 1].sf.kid : t->stack[i - 1].id;
        struct rp_edge *e = rp_emap_get(&v->em, caller, t->stack[i].id);
        if (!e)
            return RP_ENOMEM;
        e->incl_calls += carry;
    }
    uint32_t keep = j->low < j->u ? j->low : j->u;
    if (keep && j->low < j->u)
        t->stack[keep - 1].acts += carry;
    if (rp_grow(&t->stack, &t->cap, j->nout + 1, sizeof(*t->stack), 64) < 0)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < keep; i++) {
        t->stack[i].acts += j->out[i].acts;
        t->stack[i].child += j->out[i].child;
        t->stack[i].off += j->out[i].off;
        t->stack[i].pre += j->out[i].pre;
        t->stack[i].start = j->out[i].start; /* moved later by the chunk's PAUSEs */
    }
    memcpy(t->stack + keep, j->out + keep, (j->nout - keep) * sizeof(*t->stack));
    t->depth = j->nout;
    for (uint32_t i = 0; i < j->nout; i++) /* ENTERs counted from the end of this chunk */
        t->stack[i].ev = j->out[i].ev - (int64_t)j->events;
    return 0;
}

void rp_rs_swap(struct acc *a, struct rstate *rs)
{
#define RP_SWAP(x)                                                                                 \
    do {                                                                                           \
        __typeof__(a->x) tmp_ = a->x;                                                              \
        a->x = rs->x;                                                                              \
        rs->x = tmp_;                                                                              \
    } while (0)
    RP_SWAP(stack);
    RP_SWAP(depth);
    RP_SWAP(cap);
    RP_SWAP(active);
    RP_SWAP(active_bytes);
    RP_SWAP(nact);
    RP_SWAP(pz);
#undef RP_SWAP
}

/*
 * Gives thread t's resident stack (Deep stacks, replay_int.h) back to it:
 * frames, event numbers from the end of its last chunk.  O(depth).  Returns 0 or RP_ENOMEM (the
 * stack then stays resident).
 */
int rp_resident_evict(struct priv *v, struct tstate *t)
{
    struct rstate *rs = t->rs;
    if (!rs)
        return 0;
    if (rp_grow(&t->stack, &t->cap, rs->depth + 1, sizeof(*t->stack), 64) < 0)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < rs->depth; i++) {
        struct frame f = rs->stack[i];
        f.start += rs->pz;
        f.ev -= (int64_t)rs->base;
        t->stack[i] = f;
    }
    t->depth = rs->depth;
    free(rs->stack);
    rp_zarr_free(rs->active, rs->active_bytes);
    free(rs);
    t->rs = NULL;
    for (uint32_t k = 0; k < v->nres; k++)
        if (v->res[k] == (uint32_t)(t - v->ts)) {
            v->res[k] = v->res[--v->nres];
            break;
        }
    return 0;
}

/*
 * Makes thread t's stack resident: the reverse of rp_resident_evict, with
 * activation counts of its own (RP_ACTIVE_UNDEF where ACC_MAIN has it).
 * O(depth + nodes), once per thread that gets deep.  Returns 0 or
 * RP_ENOMEM (nothing changed).
 */
int rp_resident_enter(struct rp_profile *p, struct tstate *t)
{
    struct priv *v = p->priv;
    struct rstate *rs = calloc(1, sizeof(*rs));
    uint32_t n = p->n_nodes;
    if (!rs || rp_grow(&v->res, &v->capres, v->nres + 1, sizeof(*v->res), 16) < 0 ||
        rp_zarr_grow(&rs->active, &rs->active_bytes, (size_t)n * sizeof(*rs->active)) < 0 ||
        rp_grow(&rs->stack, &rs->cap, t->depth + 1, sizeof(*rs->stack), 64) < 0) {
        if (rs) {
            free(rs->stack);
            rp_zarr_free(rs->active, rs->active_bytes);
        }
        free(rs);
        return RP_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        if (i == 0 || p->nodes[i].kind == 0xff)
            rs->active[i] = RP_ACTIVE_UNDEF;
    rs->nact = n;
    for (uint32_t i = 0; i < t->depth; i++) {
        rs->stack[i] = t->stack[i];
        rs->active[t->stack[i].id] += !v->flt || t->stack[i].sf.keep; /* (replay.c) */
    }
    rs->depth = t->depth;
    t->depth = 0; /* until rp_resident_evict */
    t->rs = rs;
    v->res[v->nres++] = (uint32_t)(t - v->ts);
    return 0;
}

int rp_threads_end(struct rp_profile *p)
{
    struct priv *v = p->priv;
    struct rp_comp cp;
    int rc;

    int on = v->want_comp && p->overhead_known;
    rp_comp_set(&cp, on, v->pairfp, v->selffp, on ? v->res_comp : rp_comp_res(0, 0, p->clock_step));
    while (v->nres)
        if ((rc = rp_resident_evict(v, &v->ts[v->res[v->nres - 1]])) < 0)
            return rc;
    for (uint32_t i = 0; i < v->nts; i++) {
        const struct tstate *ts = &v->ts[i];
        if (p->fatal_tid && ts->tid == p->fatal_tid && ts->depth) { /* its stack at the signal */
            uint32_t n = ts->depth < RP_FATAL_FRAMES ? ts->depth : RP_FATAL_FRAMES;
            p->fatal_depth = ts->depth;
            p->fatal_n = n;
            for (uint32_t k = 0; k < n; k++)
                p->fatal_stack[k] = ts->stack[ts->depth - n + k].id;
        }
        if (v->ts[i].depth && (rc = rp_replay_close_open(p, &v->ts[i], &cp)) < 0)
            return rc;
    }
    p->comp_clamped += cp.clamped;
    for (uint32_t i = 0; i < v->nts; i++) { /* locks never released (or before a LOST) */
        if (v->ts[i].holds > 0)
            p->threads[v->ts[i].ti].unclosed += (uint64_t)v->ts[i].holds;
        v->ts[i].holds = 0;
    }
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * replay.c - the replay of one EVENTS chunk: the event loop, and what a
 * span's end adds to the statistics.  The other files of the replay are
 * listed in replay_int.h; load.c reads the trace (rp_replay_file).
 *
 * Each thread's events are replayed on its own stack of open spans.  When a
 * span ends (EXIT, or EXIT_ID of the innermost span):
 *
 *     dur            = end - start
 *     node.dur_sum  += dur            node.excl += dur - (time in its callees)
 *     node.incl     += dur            only if no other activation of the same
 *                                     node is open below it (recursion)
 *     parent.child  += dur            parent = the span below, or ROOT
 *     edge(parent, node): calls, incl += dur, min, max
 *
 * Overhead compensation (docs/performance.md).  When the trace carries the
 * recorder's measured cost (INFO "overhead_ticks" = pair, 2 o per recorded
 * call, and "overhead_self_ticks" = o_self) and it is not switched off,
 * every span's duration is taken as
 *
 *     dur = max((end - start) - (E * pair / 2 + o_self), child - res, 0),   limited
 *
 * with E the thread's events between its ENTER and its end (each frame
 * keeps the chunk-local number of its ENTER event; for a frame that began
 * in an earlier chunk that number is <= 0, from the snapshot's event counts
 * or the thread's stack handed over from the previous chunk), and child the
 * compensated time of its callees (comp.h: no span shorter than the calls
 * it made by more than the resolution res; a span of U, begun in an
 * earlier chunk, is counted at the join, where its callees' time in every
 * chunk is known: struct uspan).  Everything that uses a duration uses
 * this one: inclusive, the parent's callee time (so exclusive follows from
 * the children's compensated time), min, max, variance, histogram, edges.
 * Budget overruns keep the measured duration, the same test the
 * recorder's direct mode makes.  The arithmetic is in integers (1/65536
 * tick), so the result is the same for any number of workers.
 *
 * What cannot be matched is counted, never guessed: an exit with no open
 * span is an unmatched exit; spans open when the recorder lost events (a
 * LOST op) are counted as unclosed and add no time (when they ended is
 * unknown).
 *
 * No frame vanishes (docs/robustness.md).  Frames left without their exit
 * end where the stack is seen to leave them, with their time up to there,
 * and are counted per node in `cut` (every activation not ended by its own
 * exit) and per thread as unwound or cut:
 *
 *   - unwound: an EXIT_ID naming a span open deeper, or an UNWIND naming the
 *     frame that goes on (a longjmp, a caught exception), ends every span
 *     above that one at that moment (span_cut);
 *   - cut: an UNWIND with id 0 (the thread ended: pthread_exit, return from
 *     its start function) ends every open span; spans still open after the
 *     last chunk ended with the process (exit() while the thread ran, a
 *     fatal signal: the END chunk's ticks) or, without END (SIGKILL), at the
 *     thread's last event (rp_threads_end(), rp_replay_close_open()).
 *
 * Chunks are replayed in parallel.  Each EVENTS chunk carries the stack of
 * spans open when it begins (its snapshot), so a chunk needs nothing from
 * the ones before it: workers replay chunks with their own accumulators, and
 * the main thread joins them to their threads in file order (workers.c,
 * and rp_replay_join() in join.c).  The result is the same as a replay in
 * order: what a span needs from earlier chunks (its start, its callee time
 * so far) is on its thread's stack, and the join adds it.
 *
 * Memory: per replayer one frame per open span, per node its statistics and
 * a histogram, per edge one record; nothing grows with the length of the
 * trace.
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"
#include "common/span.h"
#include "replay_int.h"
#include "trace/reader.h"

static inline struct hot *hot_of(struct acc *a, struct hid *e);
static struct hot_rare *rare_get(struct hot *h);

/*
 * Makes a's per-node arrays cover the profile's n nodes.  A new entry is all
 * zero (struct hot stores ~omin, ~budget, ~caller for that), except
 * where the node says otherwise: a budget (an accumulator at once), a
 * blocking kind, not defined yet; so entries of ids this replayer never
 * sees are never written.  Returns 0 or RP_ENOMEM.
 */
static int acc_reserve(struct acc *a, const struct rp_profile *p)
{
    uint32_t n = p->n_nodes;
    if (n <= a->nhot && n <= a->nact)
        return 0;
    if (rp_zarr_grow(&a->hot, &a->hot_bytes, (size_t)n * sizeof(*a->hot)) < 0 ||
        rp_zarr_grow(&a->full, &a->full_bytes, (size_t)n * sizeof(*a->full)) < 0 ||
        rp_zarr_grow(&a->active, &a->active_bytes, (size_t)n * sizeof(*a->active)) < 0)
        return RP_ENOMEM;
    for (uint32_t i = a->nhot; i < n; i++) {
        const struct rp_node *nd = &p->nodes[i];
        if (blocked_kind(nd->kind))
            a->hot[i].blocked = 1;
        if (lib_node(nd->kind, nd->file))
            a->hot[i].lib = 1;
        if (rp_node_budget(nd)) {
            struct hot *h = hot_of(a, &a->hot[i]);
            if (!h || !rare_get(h))
                return RP_ENOMEM;
            h->rare->nbudget = ~rp_node_budget(nd);
        }
    }
    for (uint32_t i = a->nact; i < n; i++)
        if (i == 0 || p->nodes[i].kind == 0xff)
            a->active[i] = RP_ACTIVE_UNDEF;
    a->nhot = a->nact = n;
    return 0;
}

/* edge_of()'s second entry, or the map: the found edge becomes entry 0. */
static __attribute__((noinline)) struct rp_edge *edge_miss(struct acc *a, struct hot *h,
                                                           uint32_t caller, uint32_t callee)
{
    uint32_t i;
    if (h->last_caller[1] == ~caller) {
        i = h->last_edge[1];
    } else {
        struct rp_edge *e = rp_emap_get(&a->em, caller, callee);
        if (!e)
            return NULL;
        i = (uint32_t)(e - a->em.edges);
    }
    h->last_caller[1] = h->last_caller[0];
    h->last_edge[1] = h->last_edge[0];
    h->last_caller[0] = ~caller;
    h->last_edge[0] = i;
    return &a->em.edges[i];
}

/*
 * The edge caller -> callee through the callee's two-entry cache, most
 * recent first: a recursive function alternates between its outer caller
 * and itself.
 */
static inline struct rp_edge *edge_of(struct acc *a, struct hot *h, uint32_t caller,
                                      uint32_t callee)
{
    if (likely(h->last_caller[0] == ~caller))
        return &a->em.edges[h->last_edge[0]];
    return edge_miss(a, h, caller, callee);
}

/* The rare path of span_count's histogram count: grows the window to hold
 * bucket b.  Returns 0 or -1 (out of memory: unchanged). */
static __attribute__((noinline)) int hist_grow(struct hot *h, unsigned b)
{
    if (rp_hist_cover(&h->hist, b, b))
        return -1;
    h->hbase = (uintptr_t)h->hist.counts - (uintptr_t)h->hist.lo * sizeof *h->hist.counts;
    return 0;
}

/* The chunk serial of a wrapped: entries naming a chunk name none, and it
 * restarts at 1.  Cannot fail. */
static __attribute__((noinline)) void serial_wrap(struct acc *a)
{
    for (uint32_t i = 0; i < a->nhot; i++)
        if (a->hot[i].chunk)
            a->hot[i].chunk = 0;
    a->serial = 1;
}

/*
 * Puts the accumulator of entry e (of a->hot) in use, with the span e holds
 * counted in it as span_count would have (the edge has it already).
 * Returns it, or NULL when out of memory (e unchanged).
 */
static __attribute__((noinline)) struct hot *promote(struct acc *a, struct hid *e)
{
    struct hot *h = &a->full[e - a->hot];
    if (e->one) { /* a leaf, all on CPU, begun in its chunk: as span_count counts it */
        uint64_t dur = e->dur;
        unsigned b = rp_hist_index(dur);
        if (hist_grow(h, b))
            return NULL;
        h->hist.counts[b - h->hist.lo] = 1;
        h->rmax = h->omax = dur;
        if (e->chunk && e->chunk == a->serial && a->chunk) { /* (in this chunk) */
            h->ivl_chunk = a->chunk;
            h->ivl_prev = e->start;
        }
        h->excl = rp_span_excl(dur, 0);
        h->sq = (unsigned __int128)dur * dur;
        if (e->one & HID_OUTER)
            h->incl = dur;
        e->one = 0;
    }
    e->full = 1;
    return h;
}

/* The accumulator of entry e, made if none.  Returns NULL when out of
 * memory. */
static inline struct hot *hot_of(struct acc *a, struct hid *e)
{
    return likely(e->full) ? &a->full[e - a->hot] : promote(a, e);
}

/* h's rare accumulators, allocated (zero) if none.  Returns NULL when out
 * of memory. */
static __attribute__((noinline)) struct hot_rare *rare_get(struct hot *h)
{
    if (!h->rare)
        h->rare = calloc(1, sizeof(*h->rare));
    return h->rare;
}

/* Adds n spans cut to entry e.  Returns 0 or RP_ENOMEM. */
static inline int hot_cut(struct acc *a, struct hid *e, uint64_t n)
{
    struct hot *h = hot_of(a, e);
    if (!h)
        return RP_ENOMEM;
    struct hot_rare *r = rare_get(h);
    if (!r)
        return RP_ENOMEM;
    r->cut += n;
    return 0;
}

/*
 * The rare paths of span_count for the flags' statistics: own counts a
 * span's own time (dur less child) in h->own, which it allocates on the
 * first span with callee time as a copy of the histogram so far (every span
 * before was a leaf: its own time was its duration); partial: the span
 * began in an earlier chunk, whose callee time is not known here (not
 * counted, but the histogram is taken apart from then on).  ivl counts the
 * interval between two starts, and drops the counts once they spread over
 * more than RP_IVL_OCTAVES octaves.  Return 0 or -1 (out of memory: not
 * counted).
 */
static __attribute__((noinline)) struct rp_flag_hists *fh_get(struct hot *h)
{
    if (!h->fh)
        h->fh = calloc(1, sizeof(*h->fh));
    return h->fh;
}

static __attribute__((noinline)) int own_count(struct acc *a, struct hot *h, uint64_t dur,
                                               uint64_t child, int partial)
{
    struct rp_flag_hists *fh = fh_get(h);
    if (!fh)
        return -1;
    if (!fh->own.len) {
        if (rp_grow(&a->owned, &a->capowned, a->nowned + 1, sizeof(*a->owned), 64) < 0)
            return -1;
        a->owned[a->nowned++] = (uint32_t)(h - a->full);
        if (rp_hist_merge(&fh->own, &h->hist))
            return -1;
        for (unsigned i = 0; i < h->hist.len; i++)
            fh->own.n += h->hist.counts[i];
        if (!fh->own.len && rp_hist_cover(&fh->own, 0, 0)) /* (no span before) */
            return -1;
    }
    if (partial)
        return 0;
    return rp_hist_add(&fh->own, rp_span_own(dur, child));
}

static __attribute__((noinline)) int ivl_count(struct hot *h, uint64_t d)
{
    struct rp_flag_hists *fh = fh_get(h);
    if (!fh || rp_hist_add(&fh->ivl, d))
        return -1;
    if (fh->ivl.len > RP_IVL_OCTAVES * RP_HIST_SUB) {
        rp_hist_free(&fh->ivl);
        fh->aperiodic = h->ivl_off = 1;
    }
    return 0;
}

/* Counts a span of duration dur with acts activations under it in edge e.
 * Cannot fail. */
static inline __attribute__((always_inline)) void
edge_count(struct rp_edge *e, uint64_t dur, uint64_t acts, const struct rp_comp *cp)
{
    e->calls++;
    e->incl += dur;
    e->incl_calls += acts;
    if (unlikely(dur < e->min) && rp_span_min(dur, e->min, cp->res)) /* (below res.: none) */
        e->min = dur;
    if (unlikely(dur > e->max))
        e->max = dur;
}

/*
 * Counts one span of node id (entry hi) that lasted dur (raw before
 * compensation), began at start, spent child in its callees, and was called
 * from parent (0 = ROOT); `outer`: no other activation of it is open below;
 * acts: the activations under the call, itself included (its edge's
 * incl_calls); partial: it began in an earlier chunk (child is then this
 * chunk's part only).
 * A span shorter than the resolution (cp->res, comp.h) is not an edge's
 * minimum: tested only when it would be a new minimum, so no span pays for
 * it; it goes into the histogram like any span, whose buckets below the
 * resolution (a bucket boundary) rp_replay_finish() then counts as below
 * resolution.
 * Returns 0 or RP_ENOMEM.
 */
static inline __attribute__((always_inline)) int
span_count(struct acc *a, struct hid *hi, uint32_t id, uint32_t parent, uint64_t start,
           uint64_t raw, uint64_t dur, uint64_t child, uint64_t off, int outer,
           const struct rp_comp *cp, uint64_t acts, int partial, uint64_t pre)
{
    struct hot *h;
    if (likely(hi->full)) {
        h = &a->full[id];
    } else if (!hi->one && !(child | off | pre | (uint64_t)partial)) {
        /* its first span, a plain leaf: kept in hi until a second one */
        hi->one = (uint8_t)(HID_SPAN | (outer ? HID_OUTER : 0));
        hi->dur = dur;
        hi->start = start;
        hi->chunk = outer && a->chunk ? a->serial : 0;
        struct rp_edge *e = rp_emap_get(&a->em, parent, id);
        if (unlikely(!e))
            return RP_ENOMEM;
        edge_count(e, dur, acts, cp);
        return 0;
    } else if (!(h = promote(a, hi))) {
        return RP_ENOMEM;
    }
    uint64_t run = pre < dur ? dur - pre : 0;
    if (unlikely(run > h->rmax))
        h->rmax = run;
    struct rp_hist *oh = h->fh ? &h->fh->own : NULL;
    if (unlikely(child | (uint64_t)partial) || unlikely(oh && oh->counts)) {
        unsigned ob = rp_hist_index(rp_span_own(dur, child));
        if (likely(oh && oh->counts) && likely(!partial) && likely(ob - oh->lo < oh->len)) {
            uint32_t *c = &oh->counts[ob - oh->lo]; /* the common case, inline */
            *c += *c != UINT32_MAX;
            oh->n++;
        } else if (own_count(a, h, dur, child, partial)) {
            return RP_ENOMEM;
        }
    }
    if (outer && !h->ivl_off && a->chunk) {
        if (h->ivl_chunk == a->chunk && start > h->ivl_prev && ivl_count(h, start - h->ivl_prev))
            return RP_ENOMEM;
        h->ivl_chunk = a->chunk;
        h->ivl_prev = start;
    }
    h->excl += rp_span_excl(dur, child);
    uint64_t on = dur; /* on-CPU: less the time off CPU below it (format 1.3) */
    if (unlikely(off)) {
        on = off < dur ? dur - off : 0;
        struct hot_rare *r = rare_get(h);
        if (!r)
            return RP_ENOMEM;
        r->offb += dur - on;
        if (~on > r->nomin)
            r->nomin = ~on;
    }
    if (unlikely(on > h->omax))
        h->omax = on;
    h->sq += (unsigned __int128)dur * dur;
    unsigned b = rp_hist_index(dur); /* a new histogram has len 0 */
    if (unlikely(b - h->hist.lo >= h->hist.len) && hist_grow(h, b))
        return RP_ENOMEM;
    uint32_t *c = (uint32_t *)(h->hbase + (uintptr_t)b * sizeof *c);
    if (*c != UINT32_MAX)
        (*c)++;
    if (unlikely(h->rare) && raw > ~h->rare->nbudget)
        h->rare->overruns++;
    if (outer)
        h->incl += dur;
    struct rp_edge *e = edge_of(a, h, parent, id);
    if (unlikely(!e))
        return RP_ENOMEM;
    edge_count(e, dur, acts, cp);
    return 0;
}

/* Counts a span of id outside the program's code (rp_span_outside) that
 * lasted dur, in a's edge from RP_OUTSIDE_CALLER.  Returns 0 or
 * RP_ENOMEM. */
static __attribute__((noinline)) int outside_count(struct acc *a, uint32_t id, uint64_t dur)
{
    struct rp_edge *e = rp_emap_get(&a->em, RP_OUTSIDE_CALLER, id);
    if (!e)
        return RP_ENOMEM;
    e->calls++;
    e->incl += dur;
    return 0;
}

/*
 * The rest of span_end for the frame f that ended at depth with the
 * durations raw and dur, kept or not by the filter: the frame below gets
 * its time, the statistics its span.  `out` (a constant in each copy): the
 * span is outside the program's code (rp_span_outside): counted apart,
 * and for the frames below like a span the filter left out.  Returns 0 or
 * RP_ENOMEM.
 */
static inline __attribute__((always_inline)) int
span_finish(struct acc *a, struct job *j, struct frame *f, uint32_t depth, uint64_t start,
            uint64_t raw, uint64_t k, uint64_t dur, int kept, struct rp_comp *cp, int cut,
            const int filtered, const int out)
{
    uint32_t id = f->id, parent = 0;
    uint64_t acts = id == j->offid ? 0 : kept && !out ? 1 + f->acts : f->acts; /* (off-CPU: none) */
    int u = 0; /* a span of U, counted at the join (struct uspan) */
    if (unlikely(depth < j->low)) {
        j->low = depth;
        if (depth < j->u) {
            j->closed[depth] = kept && !out ? 1 : 2;
            u = !j->resident && kept && !out;
        }
    }
    if (depth) {
        struct frame *pf = f - 1;
        pf->child += kept && !out ? dur : f->child;
        pf->off += f->off + (a->hot[id].blocked ? dur : 0);
        pf->acts += acts;
        pf->pre += id == j->offid ? dur : a->hot[id].blocked ? 0 : f->pre;
        parent = filtered ? pf->sf.kid : pf->id;
    }
    /* (filtered: active[] counts the open activations the filter keeps, so
     * that a kept one under a left-out one of the same node is outermost) */
    int outer = !filtered || f->sf.keep ? rp_span_outer(&a->active[id]) : 0;
    if (filtered && !kept)
        return 0;
    if (out)
        return outside_count(a, id, dur);
    if (unlikely(u)) {
        j->us[depth] = (struct uspan){.id = id,
                                      .parent = parent,
                                      .start = start,
                                      .raw = raw,
                                      .k = k,
                                      .dur = dur,
                                      .child = f->child,
                                      .off = f->off,
                                      .acts = acts,
                                      .pre = f->pre,
                                      .outer = (uint8_t)outer,
                                      .cut = cut != 0};
        return 0;
    }
    if (unlikely(cut) && hot_cut(a, &a->hot[id], cut) < 0)
        return RP_ENOMEM;
    return span_count(a, &a->hot[id], id, parent, start, raw, dur, f->child, f->off, outer, cp,
                      acts, f->ev <= 0, f->pre);
}

/*
 * Counts the span of U that job j ended at depth i (closed 1: j->us[i]),
 * now that `before`, its frame as the earlier chunks left it (the time its
 * callees took there, off CPU and preempted below it), is known:
 * compensated against all of its callees' time (comp.h), with the
 * main replayer's accumulators, as span_finish would have counted it in the
 * chunk, and the span's correction counted as limited (p->comp_clamped) if
 * that is only so now.  *raised gets what that added to the duration the
 * chunk gave the frame below.  Returns 0 or RP_ENOMEM.
 */
int rp_replay_count_u(struct rp_profile *p, const struct job *j, uint32_t i,
                      const struct frame *before, uint64_t *raised)
{
    struct priv *v = p->priv;
    struct acc *a = &v->acc[ACC_MAIN];
    const struct uspan *s = &j->us[i];
    uint64_t child = s->child + before->child, dur = s->dur;
    uint64_t off = s->off + before->off, pre = s->pre + before->pre;
    struct rp_comp c;
    int rc;

    assert(i < j->u && j->closed[i] == 1 && !j->resident);
    rp_comp_set(&c, j->comp, j->pairfp, j->selffp, j->res);
    if (j->comp && s->id != j->offid) /* (limited in the chunk: counted there) */
        dur = rp_comp_span(&c, s->raw, s->k, child);
    *raised = dur - s->dur;
    p->comp_clamped += c.clamped && !rp_comp_limited(s->raw, s->k, s->dur);
    if ((rc = acc_reserve(a, p)) < 0)
        return rc;
    uint64_t chunk = a->chunk; /* (no interval to a start in the chunk) */
    a->chunk = 0;
    if (s->cut && (rc = hot_cut(a, &a->hot[s->id], 1)) < 0)
        goto out;
    rc = span_count(a, &a->hot[s->id], s->id, s->parent, s->start, s->raw, dur, child, off,
                    s->outer, &c, s->acts, 1, pre);
out:
    a->chunk = chunk;
    return rc < 0 ? rc : 0;
}

/* span_finish of a span outside the program's code, off the event loop. */
static __attribute__((noinline, cold)) int
span_finish_outside(struct acc *a, struct job *j, struct frame *f, uint32_t depth, uint64_t start,
                    uint64_t raw, uint64_t dur, int kept, struct rp_comp *cp, int filtered)
{
    return filtered ? span_finish(a, j, f, depth, start, raw, 0, dur, kept, cp, 0, 1, 1)
                    : span_finish(a, j, f, depth, start, raw, 0, dur, kept, cp, 0, 0, 1);
}

/*
 * Ends the innermost span of the stack (stack[0..*depth)) at `now`, the
 * chunk's event number ev, with the PAUSE offset pz (acc.pz); j records it
 * when it is a span of U.  `cut`: it ends without its exit (span_cut).
 * `filtered` (a constant in each copy of the loop): j->flt decides whether
 * it is counted; a span left out passes on its callees' time, not its own,
 * so that its own time is its nearest kept caller's (spanfilter.h), and
 * the kept caller is the parent of the edge.  Returns 0 or RP_ENOMEM.
 */
static inline __attribute__((always_inline)) int
span_end(struct acc *a, struct job *j, struct frame *stack, uint32_t *depth, uint64_t now,
         uint64_t pz, int64_t ev, struct rp_comp *cp, int cut, const int filtered)
{
    struct frame *f = &stack[--*depth];
    uint32_t id = f->id;
    uint64_t start = f->start + pz; /* (acc.pz) */
    uint64_t raw = rp_span_dur(start, now), dur = raw, k = 0;

    if (cp->on && id != j->offid) { /* E events inside: E * pair / 2 + self, rounded */
        k = rp_comp_of(cp, ev > f->ev ? (uint64_t)(ev - f->ev - 1) : 0);
        dur = rp_comp_span(cp, raw, k, f->child);
    }
    int kept = !filtered || (id == j->offid ? rp_sf_offcpu_kept(j->flt, *depth ? &f[-1].sf : NULL,
                                                                id, start, dur)
                                            : rp_sf_kept(j->flt, &f->sf, dur));
    /* (blocked first: the byte the rest reads anyway, so the common span
     * pays nothing; every span that can be outside here is blocked, a
     * hold being an interval of hold_op's) */
    if (unlikely(a->hot[id].blocked)) {
        j->blk += dur;
        if (rp_span_outside(a->hot, j->outside, id, *depth ? f[-1].id : 0))
            return span_finish_outside(a, j, f, *depth, start, raw, dur, kept, cp, filtered);
    }
    return span_finish(a, j, f, *depth, start, raw, k, dur, kept, cp, cut, filtered, 0);
}

/*
 * Ends the spans of the stack above depth `to` at `now` with their time,
 * innermost first, each as span_end does (so each one's time goes to the
 * frame below it, and the edge is from that frame): frames left without
 * their exit (header comment).  They are counted per node in hot.cut, and
 * in j->cut when the thread ended (thread_end), else in j->unwound.
 * Returns 0 or RP_ENOMEM.
 */
static __attribute__((noinline)) int span_cut(struct acc *a, struct job *j, struct frame *stack,
                                              uint32_t *depth, uint32_t to, uint64_t now,
                                              int64_t ev, struct rp_comp *cp, int thread_end)
{
    if (thread_end)
        j->cut += *depth - to;
    else
        j->unwound += *depth - to;
    while (*depth > to)
        if (span_end(a, j, stack, depth, now, a->pz, ev, cp, 1, j->flt != NULL) < 0)
            return RP_ENOMEM;
    return 0;
}

/* Drops the spans of a's stack above depth `to` without time. */
static void stack_drop(struct acc *a, struct job *j, uint32_t to)
{
    j->unclosed += a->depth - to;
    while (a->depth > to) {
        const struct frame *f = &a->stack[--a->depth];
        a->active[f->id] -= !j->flt || f->sf.keep;
    }
    if (a->depth < j->low)
        j->low = a->depth;
}

/* A varint at q < end of a padded chunk; NULL when longer than 10 bytes. */
static inline const uint8_t *pget(const uint8_t *q, const uint8_t *end, uint64_t *v)
{
    uint64_t b0 = q[0], b1;
    if (likely(b0 < 0x80)) {
        *v = b0;
        return q + 1;
    }
    if (likely((b1 = q[1]) < 0x80)) {
        *v = (b0 & 0x7f) | b1 << 7;
        return q + 2;
    }
    return rp_get_varint(q, end + RP_REPLAY_PAD, v);
}

/* Makes room for a push on a's stack at depth; the stack, or NULL when it
 * would be deeper than RP_REPLAY_DEPTH_MAX or memory is out. */
static __attribute__((noinline)) struct frame *frame_grow(struct acc *a, uint32_t depth)
{
    if (a->cap >= RP_REPLAY_DEPTH_MAX ||
        rp_grow(&a->stack, &a->cap, depth + 1, sizeof(*a->stack), 64) < 0)
        return NULL;
    return a->stack;
}

static inline struct frame *frame_push(struct acc *a, uint32_t depth)
{
    return likely(depth < a->cap) ? a->stack : frame_grow(a, depth);
}

/*
 * Puts U under a's stack: the thread's stack as the chunks before left it
 * (j->from_snap == 0, replay in order), or the chunk's snapshot.  A snapshot
 * is kept in j->snap either way, for rp_replay_join() to check.  A filtered
 * replay keeps each span of U as the filter judged it at its ENTER: in
 * order, the state its thread kept; from the snapshot, judged at the time
 * of the ENTER, its start less the PAUSEs since (format 1.4; an older
 * snapshot has only the moved start).  Returns 0 or RP_ENOMEM.
 */
static int stack_start(struct acc *a, struct job *j, const struct rp_evdec *d)
{
    uint32_t ns = d->snap ? d->snap_depth : 0, u = j->resident    ? a->depth
                                                   : j->from_snap ? ns
                                                                  : j->nin;
    if (rp_grow(&a->stack, &a->cap, u + 1, sizeof(*a->stack), 64) < 0 ||
        rp_grow(&j->closed, &j->capclosed, u + 1, 1, 64) < 0 ||
        rp_grow(&j->us, &j->capus, u + 1, sizeof(*j->us), 64) < 0 ||
        rp_grow(&j->snap, &j->capsnap, ns + 1, sizeof(*j->snap), 64) < 0)
        return RP_ENOMEM;
    a->chunk = j->offset + 1;
    if (unlikely(!++a->serial)) /* (after 2^32 - 1 chunks: no entry names an older one) */
        serial_wrap(a);
    const uint8_t *q = d->snap ? rp_evdec_frames(d) : NULL;
    for (uint32_t i = 0; i < ns; i++) {
        struct frame f = {0};
        uint64_t events, paused;
        q = rp_evdec_frame(d, q, &f.id, &f.start, &events, &paused);
        f.ev = -(int64_t)(events & (UINT64_MAX >> 2)); /* its ENTER, before the chunk */
        if (j->flt)
            rp_sf_enter(j->flt, i ? &j->snap[i - 1].sf : NULL, f.id,
                        paused < f.start ? f.start - paused : 0, &f.sf);
        j->snap[i] = f;
    }
    j->nsnap = ns;
    if (j->resident) { /* U stays where it is (Deep stacks); closed[] is not read */
        j->res_same = !ns || ns == u;
        for (uint32_t i = 0; j->res_same && i < ns; i++)
            j->res_same =
                j->snap[i].id == a->stack[i].id && j->snap[i].start == a->stack[i].start + a->pz;
        j->u = j->low = u;
        return 0;
    }
    for (uint32_t i = 0; i < u; i++) {
        const struct frame *s = j->from_snap ? &j->snap[i] : &j->in[i];
        a->stack[i] = (struct frame){.id = s->id, .start = s->start, .ev = s->ev, .sf = s->sf};
    }
    a->depth = j->u = j->low = u;
    memset(j->closed, 0, u);
    return 0;
}

/* How replay_loop ends (rp_replay_chunk writes the message). */
enum { LOOP_OK, LOOP_BAD, LOOP_UNDEFINED, LOOP_NOMEM, LOOP_DEEP, LOOP_HOLD };

/*
 * A lock-hold op (format.h: HOLD_BEGIN or HOLD_END, op) at now, its
 * operands from *qp, whose position it advances; *idp gets the id read
 * (for the message).  HOLD_BEGIN counts a hold begun.  HOLD_END counts the
 * hold as a span of its id called from its acquirer that lasted `raw`
 * ticks less the compensation of the events inside, with no time taken
 * from the acquirer (it is no callee: the code run while holding the lock
 * is the work of the functions that run it) and none as its own (exclusive
 * 0: the time is theirs); outer holds add to inclusive.  A hold with no
 * known acquisition is an unmatched exit.  Off the loop's switch (one call
 * per acquisition and release), so that the span path's code is not
 * changed by it.  Returns LOOP_OK, LOOP_BAD (malformed), LOOP_UNDEFINED
 * (an id, or acquirer, that is no defined node of the right kind) or
 * LOOP_NOMEM.
 */
static __attribute__((noinline)) int hold_op(const struct rp_profile *p, struct acc *a,
                                             struct job *j, struct rp_comp *cp, const uint8_t **qp,
                                             const uint8_t *end, unsigned op, uint64_t now,
                                             uint32_t *idp)
{
    uint64_t id, raw, evs, how;
    const uint8_t *q = *qp;
    if (!(q = rp_get_varint(q, end, &id)))
        return LOOP_BAD;
    *idp = (uint32_t)id;
    if (id == 0 || id >= a->nhot || p->nodes[id].kind != RP_KIND_LOCK_HOLD)
        return LOOP_UNDEFINED;
    j->hold_ops = 1;
    if (op == RP_OP_HOLD_BEGIN) {
        j->holds++;
        if (j->nhm < HOLD_MARKS)
            j->hm[j->nhm++] = (struct hold_mark){(uint32_t)id, j->blk};
        else
            j->hm_over = 1;
        *qp = q;
        return LOOP_OK;
    }
    if (!(q = rp_get_varint(q, end, &raw)) || !(q = rp_get_varint(q, end, &evs)) ||
        !(q = rp_get_varint(q, end, &how)))
        return LOOP_BAD;
    *qp = q;
    if (!how) {
        j->unmatched++;
        return LOOP_OK;
    }
    uint64_t acq = how >> 2;
    if (acq && (acq >= a->nhot || (a->active[acq] & RP_ACTIVE_UNDEF)))
        return LOOP_UNDEFINED;
    uint64_t dur = cp->on ? rp_comp_span(cp, raw, rp_comp_of(cp, evs), 0) : raw;
    j->holds--;
    /* the time its holder was blocked during it: since its mark, the
     * innermost of its lock's (a lock released out of order is found
     * below others); since the chunk's start when it began earlier */
    uint64_t since = j->hm_over ? j->blk : 0;
    for (uint32_t k = j->nhm; k-- > 0;)
        if (j->hm[k].id == (uint32_t)id) {
            since = j->hm[k].blk;
            memmove(&j->hm[k], &j->hm[k + 1], (j->nhm - k - 1) * sizeof j->hm[0]);
            j->nhm--;
            break;
        }
    uint64_t held_off = j->blk - since < dur ? j->blk - since : dur;
    if (rp_span_outside(a->hot, j->outside, (uint32_t)id, (uint32_t)acq))
        return outside_count(a, (uint32_t)id, dur) < 0 ? LOOP_NOMEM : LOOP_OK;
    if (j->flt) { /* as a span under the innermost open one, and from its kept caller */
        const struct rp_sf_frame *up = a->depth ? &a->stack[a->depth - 1].sf : NULL;
        struct rp_sf_frame sf;
        rp_sf_enter(j->flt, up, (uint32_t)id, now >= raw ? now - raw : 0, &sf);
        if (!rp_sf_kept(j->flt, &sf, dur))
            return LOOP_OK;
        if (acq && up)
            acq = up->kid;
    }
    if (span_count(a, &a->hot[id], (uint32_t)id, (uint32_t)acq, now >= raw ? now - raw : 0, raw,
                   dur, dur, held_off, (how >> 1) & 1, cp, 0, 0, 0) < 0)
        return LOOP_NOMEM;
    return LOOP_OK;
}

/* leaf_count of a span outside the program's code (rp_span_outside), kept
 * or not by the filter: in the frame below only as time off CPU or
 * waiting (none of its own, no call), counted apart.  Returns LOOP_OK or
 * LOOP_NOMEM. */
static __attribute__((noinline, cold)) int leaf_outside(struct acc *a, struct hid *hot,
                                                        struct frame *stack, uint32_t depth,
                                                        uint64_t x, uint64_t dur, int kept)
{
    if (depth && hot[x].blocked)
        stack[depth - 1].off += dur;
    if (!kept)
        return LOOP_OK;
    return outside_count(a, (uint32_t)x, dur) < 0 ? LOOP_NOMEM : LOOP_OK;
}

/*
 * Counts a leaf of node x, an ENTER whose next event (head h) is its EXIT,
 * at now, without a push and a pop: as span_end would, called from the
 * frame on top of stack[0..depth); act: x's open activations.  The
 * writer's off-CPU spans are not compensated and add 2 to *syn.  `filtered`
 * as for span_end.  Returns LOOP_OK or LOOP_NOMEM.
 */
static inline __attribute__((always_inline)) int
leaf_count(struct acc *a, struct hid *hot, struct job *j, struct rp_comp *cp, struct frame *stack,
           uint32_t depth, uint64_t x, uint32_t act, uint64_t now, uint64_t h, uint64_t *syn,
           const int filtered)
{
    uint64_t raw = h >> 1, dur = cp->on ? rp_comp_span(cp, raw, cp->leaf, 0) : raw;
    if (unlikely(x == j->offid)) { /* the writer's: not compensated */
        dur = raw;
        *syn += 2;
        if (depth) /* (preempted, in the frame below) */
            stack[depth - 1].pre += dur;
    }
    uint32_t parent = 0;
    uint64_t acts = x != j->offid; /* (off-CPU time is no call) */
    int kept = 1;
    if (filtered) {
        const struct rp_sf_frame *up = depth ? &stack[depth - 1].sf : NULL;
        struct rp_sf_frame sf;
        if (x == j->offid) {
            kept = rp_sf_offcpu_kept(j->flt, up, (uint32_t)x, now, dur);
        } else {
            rp_sf_enter(j->flt, up, (uint32_t)x, now, &sf);
            kept = rp_sf_kept(j->flt, &sf, dur);
        }
        acts &= (uint64_t)kept;
    }
    if (unlikely(hot[x].blocked)) {
        j->blk += dur;
        if (rp_span_outside(hot, j->outside, (uint32_t)x, depth ? stack[depth - 1].id : 0))
            return leaf_outside(a, hot, stack, depth, x, dur, kept);
    }
    if (depth) {
        stack[depth - 1].child += kept ? dur : 0;
        stack[depth - 1].acts += acts;
        if (unlikely(hot[x].blocked)) /* off CPU, or waiting */
            stack[depth - 1].off += dur;
        parent = filtered ? stack[depth - 1].sf.kid : stack[depth - 1].id;
    }
    if (filtered && !kept)
        return LOOP_OK;
    if (unlikely(span_count(a, &hot[x], (uint32_t)x, parent, now, raw, dur, 0, 0, act == 0, cp,
                            acts, 0, 0) < 0))
        return LOOP_NOMEM;
    return LOOP_OK;
}

/*
 * Pushes the frame of an ENTER of x at now, the chunk's event ev, on
 * stack[depth] (frame_push made room), with its filter state when
 * `filtered` (as for span_end); act: x's open activations, to which it
 * adds one (filtered: one the filter keeps).  Cannot fail.
 */
static inline __attribute__((always_inline)) void
span_push(const struct job *j, struct frame *stack, uint32_t depth, uint64_t x, uint64_t now,
          uint64_t pz, int64_t ev, uint32_t *active, uint32_t act, const int filtered)
{
    struct frame *f = &stack[depth];
    *f = (struct frame){.id = (uint32_t)x, .start = now - pz, .ev = ev};
    if (filtered)
        rp_sf_enter(j->flt, depth ? &f[-1].sf : NULL, (uint32_t)x, now, &f->sf);
    active[x] = act + (!filtered || f->sf.keep);
}

/*
 * An EXIT_ID of node x, or (unwind) an UNWIND to x, at now, the chunk's
 * event ev, on stack[0..*depth).  The spans opened above x's innermost
 * frame were left without their exits (a longjmp, an exception): they end
 * here, with time (span_cut); an EXIT_ID then ends x's frame, an UNWIND
 * leaves it open (x 0: the thread ends, every span ends).  An EXIT_ID of
 * an id not open is an unmatched exit; an UNWIND to one ends nothing (our
 * writer never says so).  Returns LOOP_OK, LOOP_UNDEFINED (x is no defined
 * node) or LOOP_NOMEM.
 */
static inline __attribute__((always_inline)) int
exit_to(const struct rp_profile *p, struct acc *a, struct job *j, struct rp_comp *cp,
        struct frame *stack, uint32_t *depth, uint64_t x, int unwind, uint64_t now, uint64_t pz,
        int64_t ev, const int filtered)
{
    uint32_t at = 0;
    if (unwind && !x)
        return span_cut(a, j, stack, depth, 0, now, ev, cp, 1) < 0 ? LOOP_NOMEM : LOOP_OK;
    if (x == 0 || x >= a->nhot || p->nodes[x].kind == 0xff)
        return LOOP_UNDEFINED;
    RP_SPAN_MATCH(at, *depth, stack[at - 1].id, x);
    if (!at) {
        j->unmatched += !unwind;
        return LOOP_OK;
    }
    if ((unwind || at < *depth) && span_cut(a, j, stack, depth, at, now, ev, cp, 0) < 0)
        return LOOP_NOMEM;
    if (!unwind && span_end(a, j, stack, depth, now, pz, ev, cp, 0, filtered) < 0)
        return LOOP_NOMEM;
    return LOOP_OK;
}

/*
 * A chunk's events from ev->q to end (followed by RP_REPLAY_PAD zero bytes)
 * on a's stack, whose depth is in a->depth; `compact` is the stream's form
 * (0 general, 1 compact, 2 compact with predicted ENTERs: format.h), a
 * constant in each of rp_replay_chunk's copies.  On return ev holds the
 * position, the event being read (ev0), the time, the events so far and
 * the last id read, for the message.  Returns LOOP_OK or what failed, or
 * LOOP_HOLD at a lock-hold op (format 1.3; its op in ev->op, ev->q at its
 * operands): rp_replay_chunk counts it (hold_op) and calls the loop again,
 * which goes on from ev (the events so far included).  Holds are handled
 * outside the loop so that the code of its span path stays as it was.
 *
 * The stack's top stays in locals (written back to a->depth where anything
 * else looks at it) and a leaf, an ENTER whose next event is its EXIT, is
 * counted without a push and a pop.  An id is checked with one load: a
 * node no DEFS defined (and ROOT) has RP_ACTIVE_UNDEF in active[].
 */
struct loopst {
    const uint8_t *q, *ev0;
    uint64_t now, n;
    uint64_t syn; /* of n, the writer's events (struct job) */
    uint32_t id;
    unsigned op;                  /* LOOP_HOLD: HOLD_BEGIN or HOLD_END */
    uint32_t *pr_tab, pr_x, pr_y; /* compact 2: the ENTER prediction (format.h) */
};

static inline __attribute__((always_inline)) int
replay_loop(const struct rp_profile *p, struct acc *a, struct job *j, struct rp_comp *cp,
            struct loopst *ev, const uint8_t *end, const int compact, const int filtered)
{
    const uint8_t *q = ev->q, *ev0 = q;
    uint64_t now = ev->now, n = ev->n, syn = ev->syn, h, x, arg; /* n - syn: struct job */
    const struct rp_node *nodes = p->nodes;
    const uint64_t nn = a->nhot; /* = p->n_nodes (acc_reserve) */
    struct hid *const hot = a->hot;
    uint32_t *const active = a->active;
    struct frame *stack = a->stack;
    uint32_t depth = a->depth, act;
    uint64_t pz = a->pz; /* (a copy: pushes read it; PAUSE writes both) */
    uint32_t *const pr_tab = ev->pr_tab;
    uint32_t pr_x = ev->pr_x, pr_y = ev->pr_y;
    int rc = LOOP_OK;

    while (q < end) {
        unsigned op;
        ev0 = q;
        if (unlikely(!(q = pget(q, end, &h))))
            goto bad;
    have_head:
        n++;
        if (compact == 2) { /* format.h: EXIT, ENTER predicted, ENTER id, or 0 and an op */
            now += h & 1 ? h >> 1 : h >> 2;
            op = h & 1 ? RP_OP_EXIT : RP_OP_ENTER;
        } else if (compact) { /* format.h: EXIT, ENTER id, or 0 and an op */
            now += h >> 1;
            op = h & 1 ? RP_OP_EXIT : RP_OP_ENTER;
        } else {
            now += h >> RP_OP_BITS;
            op = h & RP_OP_MASK;
        }
        if (compact == 2 && op == RP_OP_ENTER) {
            uint32_t *slot = &pr_tab[rp_pred_slot(pr_x, pr_y)];
            if (likely(!(h & 2))) { /* the predicted id */
                if (unlikely(!(x = *slot)))
                    goto bad;
            } else if (unlikely(!(q = pget(q, end, &x)))) {
                goto bad;
            } else if (unlikely(!x)) { /* (an id 0 in padding has no op) */
                if (!(q = rp_get_varint(q, end, &x)) || x < RP_OP_EXIT_ID || x > RP_OP_LAST)
                    goto bad;
                op = (unsigned)x;
            } else if (unlikely(x > UINT32_MAX)) {
                goto bad;
            } else {
                *slot = (uint32_t)x; /* (a predicted one is there already) */
            }
            if (op == RP_OP_ENTER) {
                rp_pred_enter(&pr_x, &pr_y, (uint32_t)x);
            }
        } else if (op == RP_OP_ENTER) {
            if (!compact && unlikely(q >= end))
                goto bad;
            if (unlikely(!(q = pget(q, end, &x))))
                goto bad;
            if (compact && unlikely(!x)) { /* (an id 0 in padding has no op) */
                if (!(q = rp_get_varint(q, end, &x)) || x < RP_OP_EXIT_ID || x > RP_OP_LAST)
                    goto bad;
                op = (unsigned)x;
            }
        }
        switch (op) {
        case RP_OP_ENTER:
            ev->id = (uint32_t)x;
            if (unlikely(x >= nn) || unlikely((act = active[x]) & RP_ACTIVE_UNDEF))
                goto undefined;
            if (compact && likely(q < end)) {
                const uint8_t *q2 = pget(q, end, &h);
                if (unlikely(!q2)) {
                    ev0 = q;
                    goto bad;
                }
                if (h & 1) { /* a leaf: its EXIT follows, with no event inside */
                    n++;
                    if (compact == 2)
                        pr_x++;
                    if (unlikely(leaf_count(a, hot, j, cp, stack, depth, x, act, now, h, &syn,
                                            filtered)))
                        goto nomem;
                    now += h >> 1;
                    ev0 = q;
                    q = q2;
                    break;
                }
                /* not a leaf: push it, and go on with the head just read */
                if (unlikely(!(stack = frame_push(a, depth))))
                    goto push_failed;
                span_push(j, stack, depth++, x, now, pz, (int64_t)(n - syn), active, act, filtered);
                ev0 = q;
                q = q2;
                goto have_head;
            }
            if (unlikely(!(stack = frame_push(a, depth))))
                goto push_failed;
            span_push(j, stack, depth++, x, now, pz, (int64_t)(n - syn), active, act, filtered);
            break;
        case RP_OP_EXIT:
            if (compact == 2)
                pr_x++;
            if (unlikely(!depth)) {
                j->unmatched++;
                break;
            }
            if (unlikely(span_end(a, j, stack, &depth, now, pz, (int64_t)(n - syn), cp, 0,
                                  filtered) < 0))
                goto nomem;
            break;
        case RP_OP_EXIT_ID:
        case RP_OP_UNWIND: /* format.h; UNWIND in the compact stream only */
            if ((op == RP_OP_UNWIND && !compact) || !(q = rp_get_varint(q, end, &x)))
                goto bad;
            ev->id = (uint32_t)x;
            if ((rc = exit_to(p, a, j, cp, stack, &depth, x, op == RP_OP_UNWIND, now, pz,
                              (int64_t)(n - syn), filtered)) != LOOP_OK)
                goto out;
            break;
        case RP_OP_INSTANT:
        case RP_OP_COUNTER:
            if (!(q = rp_get_varint(q, end, &x)))
                goto bad;
            ev->id = (uint32_t)x;
            if (x == 0 || x >= nn || nodes[x].kind == 0xff)
                goto undefined;
            if (!(q = rp_get_varint(q, end, &arg)))
                goto bad;
            struct hot *hx = hot_of(a, &hot[x]);
            if (!hx)
                goto nomem;
            hx->calls++;
            break;
        case RP_OP_ARG:
            if (!(q = rp_get_varint(q, end, &arg)))
                goto bad;
            break;
        case RP_OP_LOST:
            if (!(q = rp_get_varint(q, end, &arg)))
                goto bad;
            j->lost += arg;
            a->depth = depth;
            stack_drop(a, j, 0);
            depth = 0;
            break;
        case RP_OP_PAUSE:
            /* The thread waited arg ticks for the recorder's writer: not
             * the program's time.  Every open span starts that much later,
             * as the writer's snapshots say (format.h). */
            if (!(q = rp_get_varint(q, end, &arg)))
                goto bad;
            j->paused += arg;
            syn++;
            a->pz = pz += arg; /* (acc.pz: not a loop over the stack) */
            break;
        default:         /* HOLD_BEGIN, HOLD_END (format 1.3): counted by rp_replay_chunk */
            ev->op = op; /* (the escape admits no other) */
            rc = LOOP_HOLD;
            goto out;
        }
    }
    if (q != end) /* the last event runs over the end, into the padding */
        rc = LOOP_BAD;
out:
    a->depth = depth;
    ev->pr_x = pr_x;
    ev->pr_y = pr_y;
    j->syn = ev->syn = syn;
    ev->q = q;
    ev->ev0 = ev0;
    ev->now = now;
    ev->n = n;
    return rc;
bad:
    rc = LOOP_BAD;
    goto out;
undefined:
    rc = LOOP_UNDEFINED;
    goto out;
nomem:
    rc = LOOP_NOMEM;
    goto out;
push_failed:
    rc = a->cap >= RP_REPLAY_DEPTH_MAX ? LOOP_DEEP : LOOP_NOMEM;
    goto out;
}

/*
 * The end of a chunk's replay with result rc (0 or < 0): a resident stack
 * stays in a; any other is handed over in j->out (starts with the PAUSEs
 * in) and a is left clean for the next chunk.  Sets j->nout and j->rc
 * (RP_ENOMEM when the hand-over cannot be stored).
 */
static void chunk_end(struct acc *a, struct job *j, int rc)
{
    if (j->resident) { /* the stack stays */
        j->nout = a->depth;
        j->rc = rc;
        return;
    }
    /* hand the stack over (starts with the PAUSEs in) and leave a clean
     * replayer for the next chunk */
    for (uint32_t i = 0; a->pz && i < a->depth; i++)
        a->stack[i].start += a->pz;
    a->pz = 0;
    if (rc == 0 && rp_grow(&j->out, &j->capout, a->depth + 1, sizeof(*j->out), 64) < 0)
        rc = RP_ENOMEM;
    if (rc == 0) {
        if (a->depth) /* a->stack is NULL until the first push */
            memcpy(j->out, a->stack, a->depth * sizeof(*j->out));
        j->nout = a->depth;
    }
    while (a->depth) {
        const struct frame *f = &a->stack[--a->depth];
        a->active[f->id] -= !j->flt || f->sf.keep;
    }
    j->rc = rc;
}

/*
 * GCC's basic-block vectorizer pairs the span path's neighbouring counter
 * updates (an edge's calls and incl, a frame's fields) into vector
 * operations that take more instructions than the scalar ones; it does so
 * in a function other files call, not in a static one.  So the chunk's
 * replay, which holds the event loop, is compiled without it.
 */
#if defined(__GNUC__) && !defined(__clang__)
#define RP_NO_SLP __attribute__((optimize("no-tree-slp-vectorize")))
#else
#define RP_NO_SLP
#endif

/*
 * Replays the EVENTS chunk of j with the accumulators a, ids checked against
 * the profile's definitions (which do not change while jobs run).  j->data
 * is followed by RP_REPLAY_PAD zero bytes.  Sets j->rc to 0, RP_ENOMEM, or
 * RP_EFORMAT with j->err naming the offset.
 */
RP_NO_SLP void rp_replay_chunk(const struct rp_profile *p, struct acc *a, struct job *j)
{
    struct rp_evdec d;
    struct loopst ev = {0};
    uint64_t h;
    int rc;
    struct rp_comp cp; /* the overhead to subtract (comp.h), in registers: a
                          local copy, as stores through the accumulators could
                          alias the job's fields and make them reload per span */

    rp_comp_set(&cp, j->comp, j->pairfp, j->selffp, j->res);
    if (!j->resident)
        a->pz = 0; /* U's starts are as its thread keeps them */
    j->events = j->unmatched = j->unclosed = j->lost = j->clamped = j->paused = j->syn = 0;
    j->unwound = j->cut = 0;
    j->holds = 0;
    j->hold_ops = 0;
    j->blk = 0;
    j->nhm = 0;
    j->hm_over = 0;
    j->nout = 0;
    if (rp_evdec_init(&d, j->data, j->len) < 0) {
        ev.ev0 = d.p ? d.p : j->data;
        goto bad_at;
    }
    if ((rc = acc_reserve(a, p)) < 0 || (rc = stack_start(a, j, &d)) < 0)
        goto fail;
    for (uint32_t i = 0; !j->resident && i < a->depth; i++) {
        ev.id = a->stack[i].id;
        if (ev.id >= p->n_nodes || p->nodes[ev.id].kind == 0xff) {
            a->depth = i;
            ev.ev0 = d.snap;
            goto undefined;
        }
        a->active[ev.id] += !j->flt || a->stack[i].sf.keep;
    }
    ev.q = d.p;
    ev.n = j->evbase; /* (0 unless resident) */
    ev.now = j->first = d.now;
    ev.pr_tab = d.pr_tab;
    if (d.p < d.end && pget(d.p, d.end, &h)) /* the first event's time */
        j->first = d.now + (d.pred && !(h & 1) ? h >> 2 : d.compact ? h >> 1 : h >> RP_OP_BITS);
    /* three copies of the loop: each event tests the form in none */
    do { /* (a lock-hold op pauses the loop: hold_op counts it, the loop goes on) */
        if (unlikely(j->flt)) /* filtered: three more copies, apart */
            rc = d.pred      ? replay_loop(p, a, j, &cp, &ev, d.end, 2, 1)
                 : d.compact ? replay_loop(p, a, j, &cp, &ev, d.end, 1, 1)
                             : replay_loop(p, a, j, &cp, &ev, d.end, 0, 1);
        else
            rc = d.pred      ? replay_loop(p, a, j, &cp, &ev, d.end, 2, 0)
                 : d.compact ? replay_loop(p, a, j, &cp, &ev, d.end, 1, 0)
                             : replay_loop(p, a, j, &cp, &ev, d.end, 0, 0);
    } while (rc == LOOP_HOLD &&
             (rc = hold_op(p, a, j, &cp, &ev.q, d.end, ev.op, ev.now, &ev.id)) == LOOP_OK);
    switch (rc) {
    case LOOP_BAD:
        goto bad_at;
    case LOOP_UNDEFINED:
        goto undefined;
    case LOOP_NOMEM:
        rc = RP_ENOMEM;
        goto fail;
    case LOOP_DEEP:
        goto too_deep;
    }
    if (ev.n - j->evbase != d.count) /* format 4.6: the writer's own events are in the count */
        goto miscount;
    j->last = ev.now;
    j->events = ev.n - j->evbase - j->syn; /* the thread's own: the writer's are not counted */
out:
    j->clamped = cp.clamped;
    chunk_end(a, j, rc);
    return;
fail:
    snprintf(j->err, sizeof(j->err), "out of memory");
    goto out;
bad_at:
    rc = RP_EFORMAT;
    snprintf(j->err, sizeof(j->err), "malformed event at offset %llu (in the chunk at offset %llu)",
             (unsigned long long)(j->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(ev.ev0 - j->data)),
             (unsigned long long)j->offset);
    goto out;
too_deep:
    rc = RP_EFORMAT;
    snprintf(j->err, sizeof(j->err),
             "spans nested deeper than %u at offset %llu (the analyzer's limit)",
             RP_REPLAY_DEPTH_MAX,
             (unsigned long long)(j->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(ev.ev0 - j->data)));
    goto out;
miscount:
    rc = RP_EFORMAT;
    snprintf(j->err, sizeof(j->err),
             "EVENTS chunk at offset %llu states %u events, its stream holds %llu",
             (unsigned long long)j->offset, d.count, (unsigned long long)(ev.n - j->evbase));
    goto out;
undefined:
    rc = RP_EFORMAT;
    snprintf(j->err, sizeof(j->err), "event at offset %llu uses id %u, which no DEFS chunk defined",
             (unsigned long long)(j->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(ev.ev0 - j->data)),
             ev.id);
    goto out;
}

/*
 * Ends the spans still open on thread t after its last chunk, with their
 * time, counted as cut (header comment): at the END chunk's ticks when the
 * trace has one (the thread was running when the process ended: exit(), a
 * fatal signal; a thread that ended before had its spans ended by its
 * UNWIND 0), else (SIGKILL, _exit) at its last event.  The thread's last
 * tick moves to that end.  The frames carry their start, their callee time
 * summed over all chunks (so the exclusive time needs no join correction)
 * and their ENTER's event number relative to the thread's last event (the
 * events inside, for compensation).  Counted with the main replayer's
 * accumulators, whose stack is empty here.  Returns 0 or RP_ENOMEM.
 */
int rp_replay_close_open(struct rp_profile *p, struct tstate *t, struct rp_comp *cp)
{
    struct priv *v = p->priv;
    struct acc *a = &v->acc[ACC_MAIN];
    struct rp_thread *th = &p->threads[t->ti];
    uint64_t end = th->last;
    int rc;

    if (p->ended && p->end_ticks > end)
        end = p->end_ticks;
    if (th->events)
        th->last = end;
    if ((rc = acc_reserve(a, p)) < 0)
        return rc;
    a->chunk = 0;                           /* (no interval to a start in a chunk) */
    for (uint32_t i = 0; i < t->depth; i++) /* activations, for span_count's `outer` */
        a->active[t->stack[i].id] += !v->flt || t->stack[i].sf.keep;
    th->cut += t->depth;
    while (t->depth) {
        struct frame *f = &t->stack[--t->depth];
        uint64_t raw = end >= f->start ? end - f->start : 0, dur = raw;
        uint32_t parent = 0;
        if (cp->on && f->id != v->offid)
            dur = rp_comp_span(cp, raw, rp_comp_of(cp, f->ev < 0 ? (uint64_t)-f->ev : 0), f->child);
        int kept =
            !v->flt || (f->id == v->offid ? rp_sf_offcpu_kept(v->flt, t->depth ? &f[-1].sf : NULL,
                                                              f->id, f->start, dur)
                                          : rp_sf_kept(v->flt, &f->sf, dur));
        int out = rp_span_outside(a->hot, v->outside, f->id, t->depth ? f[-1].id : 0);
        uint64_t acts = f->id == v->offid ? 0 : kept && !out ? 1 + f->acts : f->acts;
        if (t->depth) {
            f[-1].child += kept && !out ? dur : f->child;
            f[-1].off += f->off + (a->hot[f->id].blocked ? dur : 0);
            f[-1].acts += acts;
            f[-1].pre += f->id == v->offid ? dur : a->hot[f->id].blocked ? 0 : f->pre;
            parent = v->flt ? f[-1].sf.kid : f[-1].id;
        }
        int outer = !v->flt || f->sf.keep ? --a->active[f->id] == 0 : 0;
        if (!kept)
            continue;
        if (out) {
            if ((rc = outside_count(a, f->id, dur)) < 0)
                return rc;
            continue;
        }
        if ((rc = hot_cut(a, &a->hot[f->id], 1)) < 0)
            return rc;
        if ((rc = span_count(a, &a->hot[f->id], f->id, parent, f->start, raw, dur, f->child, f->off,
                             outer, cp, acts, 0, f->pre)) < 0)
            return rc;
    }
    return 0;
}

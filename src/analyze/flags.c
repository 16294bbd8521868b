// SPDX-License-Identifier: MIT
/*
 * flags.c - the flags of docs/design.md §7: which nodes dispatch, are hot, jitter,
 * run too slowly for their period, are contended locks, or overrun a
 * budget; and one human line per flagged node saying why.  docs/ranking.md
 * ("Flags") gives every rule with its reasons.
 *
 * Rules (defaults in brackets; all are rp_flag_opts fields):
 *   DISPATCH  involvement >= [0.10] x [1.5] (dispatch_margin), excl/on_incl
 *             <= [0.10] / [1.5], and the work it hands on spreads over >=
 *             [2] callees by calls and [2] x 1.25 (half the margin) by
 *             time: fanout = exp(H), H the entropy in nats of the shares
 *             of i's callees in its outgoing
 *             edge calls (fanout, kept in the node) and in its outgoing edge
 *             time on CPU (fanout_time: each edge's time less its callee's
 *             share off CPU and waiting below it), its self edge left out
 *             (recursion hands no work to anyone else), and only work
 *             handed on (not edges to off-CPU time, waits, lock waits and
 *             lock holds; on_incl = incl less the time of those, or of
 *             everything off CPU and waiting below it where the replay
 *             knows it: idle_time).  The call fan-out is exact, the
 *             same in every run of one workload; involvement and self share
 *             are time shares that move from run to run (preemption, where
 *             a garbage collector's step lands), so they must pass their
 *             thresholds with the margin: a node near one is not flagged,
 *             in no run, rather than in some;
 *   HOT       own time (excl: its own frame, on CPU, less its callees and
 *             the off-CPU time and waits in its frame) >= [0.05] of all
 *             on-CPU time (the excl of every node that is work), and
 *             >= [0.005] of the run's length (run_length: the program's,
 *             without the recorder's waits and cost; a program that mostly
 *             waits has no hot spot: its CPU time is not where its time
 *             goes);
 *   JITTER    its own on-CPU time per activation (rp_flag_hists.own, or the
 *             duration histogram of a node that never had callee time) over
 *             >= [100] activations: the [0.99] quantile >= [10] x the median
 *             (the median taken as at least one tick) and at least [2000] ns
 *             above it, with >= [5] activations that slow (one or two cold
 *             first calls, a page fault each, are no pattern) and at most
 *             [0.25] of them (a tail, not a second kind of call).  Callee
 *             work and preemption are not its own time, a percentile
 *             ignores a rare preempted or interrupted call, and the floor
 *             keeps ticks of noise on a 2-ns function from being a "ratio".
 *             A node with callees whose own time is unknown (direct mode)
 *             is not judged;
 *   RATE      periodic: >= [10] intervals between the starts of its
 *             outermost activations on one thread (rp_flag_hists.ivl),
 *             their quartiles q3 - q1 <= [0.5] x their median, the period
 *             (the middle half of the intervals within half a period: late
 *             wake-ups on a busy machine move the others; random arrivals
 *             have q3 - q1 = 1.6 x the median), and its median
 *             duration <= [0.25] x the period (a task that idles between
 *             runs; back-to-back work has regular intervals too, and no
 *             period), and its callers blocked (in waits: a sleep, a poll,
 *             a timed wait) for >= [0.5] of their time, with >= [0.5] calls
 *             of waits per call of it: a periodic task is started by a loop
 *             that waits for its next period, a loop body called back to
 *             back is not, nor one whose caller once waited long; then its
 *             largest duration less the time its thread was preempted
 *             (run_max: a wait past the period misses it, a busy machine's
 *             delay is not the code's; max in direct mode) >= [0.5] x the
 *             period.  No period, no RATE;
 *             JITTER and RATE are not judged on a node that recursed (one
 *             of its activations ran inside another on the same stack:
 *             dur_sum > incl, or it has a self edge): its statistics mix
 *             the outermost activations with the nested ones;
 *   CONTENDED per lock (nodes of kind lock-wait / lock-hold with the same
 *             key): summed wait dur_sum > 0 and >= [0.10] * summed hold
 *             dur_sum, over >= [3] waits (contended acquisitions: one
 *             unlucky wake-up is no pattern), and >= [0.005] of the run's
 *             length as HOT's; flags every wait and hold node of that lock;
 *   BUDGET    budget > 0 and overruns > 0.
 * ROOT (index 0) and the off-CPU node (kind offcpu) are never flagged; a
 * wait, lock-wait or lock-hold node is never HOT, JITTER or RATE: its time
 * is not work, its length the program's (or another thread's) choice.
 */
#include "flags.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "trace/format.h"
#include "profile.h"

void rp_flag_opts_default(struct rp_flag_opts *o)
{
    o->dispatch_involvement = 0.10;
    o->dispatch_self = 0.10;
    o->dispatch_fanout = 2.0;
    o->dispatch_margin = 1.5;
    o->hot_self = 0.05;
    o->hot_run = 0.005;
    o->jitter_calls = 100;
    o->jitter_quantile = 0.99;
    o->jitter_ratio = 10.0;
    o->jitter_floor_ns = 2000.0;
    o->jitter_slow = 5;
    o->jitter_rare = 0.25;
    o->jitter_run = 0.001;
    o->rate_calls = 10;
    o->rate_spread = 0.5;
    o->rate_duty = 0.25;
    o->rate_idle = 0.5;
    o->rate_waits = 0.5;
    o->rate_period = 0.5;
    o->contended_ratio = 0.10;
    o->contended_waits = 3;
    o->contended_run = 0.005;
}

static int is_lock(const struct rp_node *n)
{
    return n->kind == RP_KIND_LOCK_WAIT || n->kind == RP_KIND_LOCK_HOLD;
}

/* Time that is not work: never HOT, JITTER or RATE. */
static int not_work(const struct rp_node *n)
{
    return rp_kind_idle(n->kind);
}

/* Lock nodes are sorted by key, so that one lock's wait and hold nodes are
 * adjacent. */
struct lock_ref {
    uint64_t key;
    uint32_t idx;
};

static int cmp_key(const void *a, const void *b)
{
    const struct lock_ref *x = a, *y = b;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Summed wait and hold dur_sum of the lock with this key, and the part of
 * the holds its holders were blocked or off CPU (offcpu_below of a hold
 * node, replay.c's hold_op).  Cannot fail. */
static void lock_sums(const struct rp_profile *p, uint64_t key, double *wait, double *hold,
                      double *held_off)
{
    *wait = *hold = *held_off = 0.0;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const struct rp_node *n = &p->nodes[i];
        if (!is_lock(n) || n->key != key)
            continue;
        if (n->kind == RP_KIND_LOCK_WAIT) {
            *wait += (double)rp_node_dur_sum(n);
        } else {
            *hold += (double)rp_node_dur_sum(n);
            *held_off += (double)rp_node_offcpu_below(n);
        }
    }
}

/* Whether time in callee n is work handed on (for DISPATCH): not time off
 * CPU, a blocking call, a lock wait or a lock hold (holds are intervals
 * beside the calls, not in the caller's time partition). */
static int handed_on(const struct rp_node *n)
{
    return !rp_kind_idle(n->kind);
}

void rp_node_own_time(const struct rp_profile *p, const struct rp_node *n, int has_callee,
                      struct rp_own_time *ot)
{
    ot->h = NULL;
    ot->low = 0;
    if (rp_node_own(n)) { /* every span, its own time (replay.c, own_count) */
        ot->h = rp_node_own(n);
        return;
    }
    /* every span a leaf (replay made no own counts), or a leaf in direct
     * mode: the duration histogram, its spans below the resolution apart */
    if (p->own_known || !has_callee) {
        const struct rp_hist *h = rp_node_hist(n, &ot->buf);
        ot->h = h->len ? h : NULL;
        ot->low = p->resolution ? rp_node_below_res(n) : 0;
    }
}

uint64_t rp_own_time_n(const struct rp_own_time *ot)
{
    return (ot->h ? ot->h->n : 0) + ot->low;
}

uint64_t rp_own_time_q(const struct rp_profile *p, const struct rp_own_time *ot, double q)
{
    uint64_t n = rp_own_time_n(ot);
    if (!n)
        return 0;
    double k = q * (double)n; /* the quantile's rank among all */
    if (k <= (double)ot->low)
        return p->resolution;
    return rp_hist_q(ot->h, (k - (double)ot->low) / (double)ot->h->n);
}

/* JITTER's quantities: the high quantile and the median of own time, how
 * many activations took at least the rule's threshold (jitter_ratio x the
 * median and jitter_floor_ns above it: bucket midpoints at or over it),
 * and, when excess is not NULL, their own time beyond the median (what
 * the tail costs).  Cannot fail. */
static void jitter_q(const struct rp_profile *p, const struct rp_own_time *ot,
                     const struct rp_flag_opts *o, double floor_ticks, double *hi, double *med,
                     uint64_t *slow, double *excess)
{
    uint64_t m = rp_own_time_q(p, ot, 0.5);
    *med = m ? (double)m : 1.0;
    *hi = (double)rp_own_time_q(p, ot, o->jitter_quantile);
    double thr = o->jitter_ratio * *med;
    if (thr < *med + floor_ticks)
        thr = *med + floor_ticks;
    *slow = 0;
    if (excess)
        *excess = 0.0;
    if (!ot->h)
        return;
    const uint32_t *c = rp_hist_c(ot->h);
    for (unsigned b = 0; b < ot->h->len; b++) {
        double v = (double)rp_hist_value(ot->h->lo + b);
        if (c[b] && v >= thr) {
            *slow += c[b];
            if (excess)
                *excess += (double)c[b] * (v - *med);
        }
    }
}

/* RATE's period: whether n's starts are periodic (idle: the share of its
 * callers' time they spent blocked), its period (the median interval) and
 * the quartiles q1 / q3 of the intervals.  Returns 1 when periodic.
 * Cannot fail. */
static int period_of(const struct rp_node *n, const struct rp_flag_opts *o, double idle,
                     double *per, double *q1, double *q3)
{
    *per = *q1 = *q3 = 0.0;
    const struct rp_hist *ivl = rp_node_ivl(n);
    if (idle < o->rate_idle || !ivl || ivl->n < o->rate_calls || rp_node_aperiodic(n) || !ivl->n)
        return 0;
    *per = (double)rp_hist_q(ivl, 0.5);
    *q1 = (double)rp_hist_q(ivl, 0.25);
    *q3 = (double)rp_hist_q(ivl, 0.75);
    struct rp_hist buf;
    double med_dur = (double)rp_hist_q(rp_node_hist(n, &buf), 0.5);
    return *per > 0.0 && *q3 - *q1 <= o->rate_spread * *per && med_dur <= o->rate_duty * *per;
}

/* The largest duration RATE judges: less the time the thread was preempted
 * (a deadline missed because the machine is busy is not the code's), with
 * its waits (a task that waits for a device past its period misses it). */
static uint64_t rate_max(const struct rp_profile *p, const struct rp_node *n)
{
    return p->oncpu_known ? rp_node_run_max(n) : rp_node_max(n);
}

/*
 * The run's length HOT's second rule (hot-run) is a share of: the longest
 * thread's life less what the recorder took of it, its waits for the
 * recorder (PAUSE) and, when compensated, the measured cost of each of its
 * events, so that own times and the run are both the program's time.  The
 * wall time instead holds the recorder's waits, which come and go with the
 * machine's load (5 to 10 s of QuickJS's 16 to 34 s runs, where a helper at
 * 0.4 to 0.9 % of the wall time was HOT in 4 runs of 5).  The profile's
 * span when no thread has one (direct mode).  Cannot fail.
 */
static double run_length(const struct rp_profile *p)
{
    double run = 0.0;
    int timed = 0;
    for (uint32_t t = 0; t < p->n_threads; t++) {
        const struct rp_thread *th = &p->threads[t];
        if (th->last <= th->first)
            continue;
        timed = 1;
        double life = (double)(th->last - th->first) - (double)th->paused;
        if (p->compensated)
            life -= (double)th->events * p->overhead_pair / 2.0;
        if (life > run)
            run = life;
    }
    if (!timed && p->last_tick > p->first_tick)
        run = (double)(p->last_tick - p->first_tick);
    return run;
}

/*
 * What the flags are judged on, summed over the edges, kept per node only
 * where a node needs it: the sums over a caller's outgoing edges are made
 * when its flags are (the edges grouped by caller: in place when they are
 * sorted so, as the replay leaves them, else through an order of their
 * indices), RATE's idle share only for the nodes with a period to judge
 * (cand), and the lock nodes for CONTENDED.  So a profile of very many
 * nodes needs no array of sums per node.
 */
struct flag_work {
    uint64_t *order;        /* caller << 32 | edge index, by caller (stable); NULL: the
                               edges are in that order */
    uint32_t *cand;         /* RATE's candidates (a period to judge), ascending */
    double *idle, *cin;     /* per candidate: its callers' blocked time, and their time */
    double *waitc, *callc;  /* per candidate: its callers' calls of waits, and of it */
    uint32_t nc;            /* candidates */
    struct lock_ref *locks; /* the lock nodes (CONTENDED) */
    uint32_t nl;
};

/* The sums over one caller's outgoing edges. */
struct caller_sums {
    double outc;    /* calls handed on to others */
    double out_on;  /* edge time handed on to others, on CPU (rp_node_oncpu_share of each callee) */
    double h, hc;   /* the entropies of the shares of out_on and outc */
    double blocked; /* time of its edges that is not work handed on */
    double holds;   /* the part of blocked in lock holds */
    unsigned self;  /* bit 0: a self edge with calls (recursion); bit 1: callees */
};

/* Frees what w holds.  Cannot fail. */
static void work_free(struct flag_work *w)
{
    free(w->order);
    free(w->cand);
    free(w->idle);
    free(w->cin);
    free(w->waitc);
    free(w->callc);
    free(w->locks);
}

/* The k-th edge by caller.  Cannot fail. */
static const struct rp_edge *edge_at(const struct rp_profile *p, const struct flag_work *w,
                                     uint32_t k)
{
    return &p->edges[w->order ? (uint32_t)w->order[k] : k];
}

/* qsort order of (caller << 32 | edge index): by caller, then by index
 * (stable).  Cannot fail. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Whether node n may have a period for RATE to judge: period_of's
 * conditions but its callers' idle share.  Cannot fail. */
static int rate_candidate(const struct rp_node *n, const struct rp_flag_opts *o)
{
    const struct rp_hist *ivl = rp_node_ivl(n);
    return ivl && ivl->n >= o->rate_calls && ivl->n && !rp_node_aperiodic(n);
}

/* The end of the edges of the caller whose first edge (by caller) is a.
 * Cannot fail. */
static uint32_t group_end(const struct rp_profile *p, const struct flag_work *w, uint32_t a)
{
    uint32_t c = edge_at(p, w, a)->caller, b = a + 1;
    while (b < p->n_edges && edge_at(p, w, b)->caller == c)
        b++;
    return b;
}

/* The sums of the edges [a, b) (by caller) of one caller, in edge order
 * (so the same as over all edges in order).  Cannot fail. */
static void caller_sums(const struct rp_profile *p, const struct flag_work *w, uint32_t a,
                        uint32_t b, struct caller_sums *s)
{
    memset(s, 0, sizeof *s);
    for (uint32_t k = a; k < b; k++) {
        const struct rp_edge *ed = edge_at(p, w, k);
        if (ed->calls)
            s->self |= 2;
        if (ed->caller == ed->callee)
            s->self |= ed->calls > 0;
        else if (handed_on(&p->nodes[ed->callee])) {
            s->out_on += (double)ed->incl * rp_node_oncpu_share(p, &p->nodes[ed->callee]);
            s->outc += (double)ed->calls;
        } else {
            s->blocked += (double)ed->incl;
            if (p->nodes[ed->callee].kind == RP_KIND_LOCK_HOLD)
                s->holds += (double)ed->incl;
        }
    }
    for (uint32_t k = a; k < b; k++) {
        const struct rp_edge *ed = edge_at(p, w, k);
        if (ed->caller == ed->callee || !handed_on(&p->nodes[ed->callee]))
            continue;
        double on = (double)ed->incl * rp_node_oncpu_share(p, &p->nodes[ed->callee]);
        if (on > 0.0) {
            double q = on / s->out_on;
            s->h -= q * log(q);
        }
        if (ed->calls) {
            double q = (double)ed->calls / s->outc;
            s->hc -= q * log(q);
        }
    }
}

/* The candidate slot of node i, or UINT32_MAX when i is none.  Cannot
 * fail. */
static uint32_t cand_slot(const struct flag_work *w, uint32_t i)
{
    uint32_t lo = 0, hi = w->nc;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (w->cand[mid] < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < w->nc && w->cand[lo] == i ? lo : UINT32_MAX;
}

/*
 * Makes w: the edges' order by caller (when they are not sorted so), the
 * RATE candidates with their idle sums (each caller's time in waits added
 * into each callee it calls; sums of whole ticks, exact in a double, so
 * the same in any order), room for the lock nodes.  Returns 0 or
 * RP_ENOMEM (w then freed).
 */
static int work_make(const struct rp_profile *p, const struct rp_flag_opts *o, struct flag_work *w)
{
    uint32_t n = p->n_nodes, ne = p->n_edges, nlock = 0;
    memset(w, 0, sizeof *w);
    int sorted = 1;
    for (uint32_t e = 1; e < ne && sorted; e++)
        sorted = p->edges[e - 1].caller <= p->edges[e].caller;
    if (!sorted) {
        if (!(w->order = malloc((size_t)ne * sizeof *w->order)))
            goto nomem;
        for (uint32_t e = 0; e < ne; e++)
            w->order[e] = (uint64_t)p->edges[e].caller << 32 | e;
        qsort(w->order, ne, sizeof *w->order, cmp_u64);
    }
    for (uint32_t i = 1; i < n; i++) {
        w->nc += rate_candidate(&p->nodes[i], o);
        nlock += is_lock(&p->nodes[i]);
    }
    if (!(w->locks = malloc((nlock ? nlock : 1) * sizeof *w->locks)))
        goto nomem;
    if (!w->nc)
        return 0;
    w->cand = malloc(w->nc * sizeof *w->cand);
    w->idle = calloc(w->nc, sizeof *w->idle);
    w->cin = calloc(w->nc, sizeof *w->cin);
    w->waitc = calloc(w->nc, sizeof *w->waitc);
    w->callc = calloc(w->nc, sizeof *w->callc);
    if (!w->cand || !w->idle || !w->cin || !w->waitc || !w->callc)
        goto nomem;
    for (uint32_t i = 1, k = 0; i < n; i++)
        if (rate_candidate(&p->nodes[i], o))
            w->cand[k++] = i;
    /* RATE's idle share: how much of its callers' time they spend blocked */
    for (uint32_t a = 0, b; a < ne; a = b) {
        b = group_end(p, w, a);
        uint32_t c = edge_at(p, w, a)->caller;
        if (!c)
            continue;
        double waits = 0.0, waitc = 0.0;
        for (uint32_t k = a; k < b; k++)
            if (p->nodes[edge_at(p, w, k)->callee].kind == RP_KIND_WAIT) {
                waits += (double)edge_at(p, w, k)->incl;
                waitc += (double)edge_at(p, w, k)->calls;
            }
        for (uint32_t k = a; k < b; k++) {
            const struct rp_edge *ed = edge_at(p, w, k);
            uint32_t s;
            if (ed->callee == c || !ed->calls || (s = cand_slot(w, ed->callee)) == UINT32_MAX)
                continue;
            w->idle[s] += waits;
            w->cin[s] += (double)p->nodes[c].incl;
            w->waitc[s] += waitc;
            w->callc[s] += (double)ed->calls;
        }
    }
    return 0;
nomem:
    work_free(w);
    return RP_ENOMEM;
}

/*
 * The part of n's inclusive time that was neither its work nor work it
 * handed on: the time of its edges to time off CPU, waits, lock waits and
 * holds (s), or, where the replay knows it, the time off CPU and waiting
 * anywhere below it (offcpu_below, of every activation: scaled to its
 * outermost ones) and its holds, whichever is more.  So a dispatcher's
 * self share is of its time on CPU however long its callees' callees
 * waited or were preempted.  Cannot fail.
 */
static double idle_time(const struct rp_profile *p, const struct rp_node *n,
                        const struct caller_sums *s)
{
    double nw = s->blocked;
    if (p->oncpu_known && rp_node_dur_sum(n)) {
        double below =
            (double)rp_node_offcpu_below(n) * ((double)n->incl / (double)rp_node_dur_sum(n));
        if (below + s->holds > nw)
            nw = below + s->holds;
    }
    return nw;
}

/* The flags of node i but CONTENDED, from the sums of its outgoing edges s
 * and its callers' idle share (0 when it has no period to judge); a lock
 * node is noted in w->locks for contended().  Returns 0 or RP_ENOMEM (its
 * fanouts could not be kept). */
static int node_flags(struct rp_profile *p, uint32_t i, const struct rp_flag_opts *o,
                      struct flag_work *w, const struct caller_sums *s, double idle, double cpu,
                      double hot_min, double jitter_min, double floor_ticks)
{
    struct rp_node *nd = &p->nodes[i];
    struct rp_node_x x = rp_node_x_get(nd);
    x.fanout = s->outc > 0.0 ? exp(s->hc) : 0.0;
    x.fanout_time = s->out_on > 0.0 ? exp(s->h) : 0.0;
    x.blocked = idle_time(p, nd, s);
    if (rp_node_x_set(nd, &x) < 0)
        return RP_ENOMEM;
    nd->flags = 0;
    /* the off-CPU node is time the threads were not running: never HOT,
     * JITTER or RATE (its durations are the scheduler's, not code's) */
    if (i == 0 || nd->kind == RP_KIND_OFFCPU)
        return 0;
    /* the self share of its time less what was neither its work nor
     * work it handed on (off CPU, waiting, holding a lock) */
    double on_incl = (double)nd->incl - rp_node_blocked(nd);
    double m = o->dispatch_margin > 0.0 ? o->dispatch_margin : 1.0;
    /* the fan-out by time is a time share too: past its threshold by half
     * the margin (2.5 callees by default), as a time split between two
     * callees is at most 2.0 and moves below it from run to run (jq's main
     * 1.86 to 2.00), while three have room */
    double mf = 1.0 + (m - 1.0) / 2.0;
    if (on_incl > 0 && rp_node_fanout(nd) >= o->dispatch_fanout &&
        rp_node_fanout_time(nd) >= o->dispatch_fanout * mf &&
        rp_node_involvement(p, nd) >= o->dispatch_involvement * m &&
        (double)nd->excl <= o->dispatch_self / m * on_incl)
        nd->flags |= RP_FLAG_DISPATCH;
    if (rp_node_budget(nd) > 0 && rp_node_overruns(nd) > 0)
        nd->flags |= RP_FLAG_BUDGET;
    if (is_lock(nd)) {
        w->locks[w->nl].key = nd->key;
        w->locks[w->nl++].idx = i;
    }
    if (not_work(nd))
        return 0;
    if (cpu > 0 && (double)nd->excl >= o->hot_self * cpu && (double)nd->excl >= hot_min)
        nd->flags |= RP_FLAG_HOT;
    if ((s->self & 1) || rp_node_dur_sum(nd) > nd->incl) /* recursed */
        return 0;
    struct rp_own_time own;
    rp_node_own_time(p, nd, s->self & 2, &own);
    uint64_t own_n = rp_own_time_n(&own);
    if (own_n >= o->jitter_calls && own_n > 0) {
        double hi, med, excess;
        uint64_t slow;
        jitter_q(p, &own, o, floor_ticks, &hi, &med, &slow, &excess);
        /* the slow calls a tail, not one of two kinds of call (pigz's
         * crc32z, one call on an empty buffer and one on a block: half of
         * them "slow"), and one that costs the run something (Redis's
         * accept path: 9 slow calls of 457, 45 us in 14 s) */
        if (hi >= o->jitter_ratio * med && hi - med >= floor_ticks && slow >= o->jitter_slow &&
            (double)slow <= o->jitter_rare * (double)own_n && excess >= jitter_min)
            nd->flags |= RP_FLAG_JITTER;
    }
    double per, q1, q3;
    if (period_of(nd, o, idle, &per, &q1, &q3) && rate_max(p, nd) > 0 &&
        (double)rate_max(p, nd) >= o->rate_period * per)
        nd->flags |= RP_FLAG_RATE;
    return 0;
}

/* CONTENDED: the lock nodes of w grouped by lock, flagged together when
 * the lock's waits reach contended_ratio of its holds, and contended_run
 * of the run (run: its length, run_length), so that a few milliseconds of
 * waits in a run of seconds are no bottleneck.  Cannot fail. */
static void contended(struct rp_profile *p, const struct rp_flag_opts *o, struct flag_work *w,
                      double run)
{
    qsort(w->locks, w->nl, sizeof *w->locks, cmp_key);
    for (uint32_t a = 0; a < w->nl;) {
        uint32_t b = a;
        double wait = 0.0, hold = 0.0;
        uint64_t waits = 0;
        for (; b < w->nl && w->locks[b].key == w->locks[a].key; b++) {
            const struct rp_node *nd = &p->nodes[w->locks[b].idx];
            if (nd->kind == RP_KIND_LOCK_WAIT) {
                wait += (double)rp_node_dur_sum(nd);
                waits += nd->calls;
            } else {
                hold += (double)rp_node_dur_sum(nd);
            }
        }
        if (wait > 0.0 && wait >= o->contended_ratio * hold && waits >= o->contended_waits &&
            wait >= o->contended_run * run)
            for (uint32_t k = a; k < b; k++)
                p->nodes[w->locks[k].idx].flags |= RP_FLAG_CONTENDED;
        a = b;
    }
}

/*
 * Computes every node's fanout and sets flags; the caller's options, or the
 * defaults when o is NULL.  Returns 0, RP_EINVAL for a NULL profile or an
 * edge naming a node that does not exist, or RP_ENOMEM (flags then unset).
 */
int rp_flags_apply(struct rp_profile *p, const struct rp_flag_opts *o)
{
    struct rp_flag_opts def;
    struct flag_work w;

    if (!p || (p->n_nodes && !p->nodes) || (p->n_edges && !p->edges))
        return RP_EINVAL;
    if (!o) {
        rp_flag_opts_default(&def);
        o = &def;
    }
    uint32_t n = p->n_nodes;
    for (uint32_t e = 0; e < p->n_edges; e++)
        if (p->edges[e].caller >= n || p->edges[e].callee >= n)
            return RP_EINVAL;
    if (work_make(p, o, &w) < 0)
        return RP_ENOMEM;
    double cpu = rp_oncpu_total(p);
    double floor_ticks = o->jitter_floor_ns / (p->ns_per_tick > 0.0 ? p->ns_per_tick : 1.0);
    double run = run_length(p), hot_min = o->hot_run * run;
    uint32_t e = 0, c = 0; /* the next edge by caller, the next candidate */
    for (uint32_t i = 0; i < n; i++) {
        struct caller_sums s = {0};
        if (e < p->n_edges && edge_at(p, &w, e)->caller == i) {
            uint32_t b = group_end(p, &w, e);
            caller_sums(p, &w, e, b, &s);
            e = b;
        }
        double idle = 0.0;
        if (c < w.nc && w.cand[c] == i) {
            idle = w.cin[c] > 0 ? w.idle[c] / w.cin[c] : 0.0;
            if (w.waitc[c] < o->rate_waits * w.callc[c])
                idle = 0.0; /* one long wait among many calls is no period's */
            c++;
        }
        if (node_flags(p, i, o, &w, &s, idle, cpu, hot_min, o->jitter_run * run, floor_ticks) < 0) {
            work_free(&w);
            return RP_ENOMEM;
        }
    }
    contended(p, o, &w, run);
    work_free(&w);
    return 0;
}

/* Appends printf output at *len, keeping buf NUL-terminated and *len the
 * length actually in buf.  Cannot fail (output is truncated). */
static void put(char *buf, size_t bufsz, size_t *len, const char *fmt, ...)
{
    if (*len + 1 >= bufsz)
        return;
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(buf + *len, bufsz - *len, fmt, ap);
    va_end(ap);
    if (k < 0)
        return;
    *len += (size_t)k < bufsz - *len ? (size_t)k : bufsz - *len - 1;
}

/* A share as a percentage people read: "42.1%", "0.4%", "0.031%". */
static void put_pct(char *buf, size_t bufsz, size_t *len, double share)
{
    double v = share * 100.0;
    if (v == 0.0 || fabs(v) >= 0.1)
        put(buf, bufsz, len, "%.1f%%", v);
    else
        put(buf, bufsz, len, "%.2g%%", v);
}

/* A duration in ticks as "850 ns", "12.3 us", "1.20 ms", "2.50 s". */
static void put_dur(char *buf, size_t bufsz, size_t *len, double ticks, double ns_per_tick)
{
    double ns = ticks * (ns_per_tick > 0.0 ? ns_per_tick : 1.0);
    static const char *const unit[] = {"ns", "us", "ms", "s"};
    int u = 0;
    while (u < 3 && fabs(ns) >= 1000.0) {
        ns /= 1000.0;
        u++;
    }
    const char *f = fabs(ns) >= 100.0 || u == 0 ? "%.0f %s"
                    : fabs(ns) >= 10.0          ? "%.1f %s"
                                                : "%.2f %s";
    put(buf, bufsz, len, f, ns, unit[u]);
}

/*
 * Writes why n carries its flags, with the quantities the rules judged under
 * the options o (the defaults when o is NULL: pass the options the flags
 * were set with).  Returns the length in buf, 0 when n
 * has no flags, buf is NULL/empty, or p or n is NULL (buf is then "" if it
 * can hold it).
 */
size_t rp_flags_explain(const struct rp_profile *p, const struct rp_node *n,
                        const struct rp_flag_opts *o, char *buf, size_t bufsz)
{
    struct rp_flag_opts def;
    size_t len = 0;
    if (!buf || bufsz == 0)
        return 0;
    buf[0] = '\0';
    if (!p || !n || !n->flags)
        return 0;
    if (!o) {
        rp_flag_opts_default(&def);
        o = &def;
    }
    const char *sep = "";
    double tick = p->ns_per_tick;

    if (n->flags & RP_FLAG_DISPATCH) {
        double inv = rp_node_involvement(p, n) * 100.0;
        put(buf, bufsz, &len,
            inv >= 10.0 ? "DISPATCH %.0f%% involved, " : "DISPATCH %.1f%% involved, ", inv);
        double on_incl = (double)n->incl - rp_node_blocked(n); /* as the rule */
        put_pct(buf, bufsz, &len, on_incl > 0 ? (double)n->excl / on_incl : 0.0);
        put(buf, bufsz, &len, " self, hands work to %.1f callees by calls, %.1f by time",
            rp_node_fanout(n), rp_node_fanout_time(n));
        sep = "; ";
    }
    if (n->flags & RP_FLAG_HOT) {
        put(buf, bufsz, &len, "%sHOT ", sep);
        double cpu = rp_oncpu_total(p);
        put_pct(buf, bufsz, &len, cpu > 0 ? (double)n->excl / cpu : 0.0);
        put(buf, bufsz, &len, " of all on-CPU time is its own");
        sep = "; ";
    }
    if (n->flags & RP_FLAG_JITTER) {
        struct rp_own_time own;
        rp_node_own_time(p, n, 0, &own);
        double hi, med;
        uint64_t slow;
        jitter_q(p, &own, o, o->jitter_floor_ns / (tick > 0.0 ? tick : 1.0), &hi, &med, &slow,
                 NULL);
        put(buf, bufsz, &len, "%sJITTER own time p%g ", sep, o->jitter_quantile * 100.0);
        put_dur(buf, bufsz, &len, hi, tick);
        /* a median below the resolution is no time the report resolves
         * (pigz: "a median of 7 ns" beside a resolution of 19 ns) */
        if (p->resolution && med < (double)p->resolution) {
            put(buf, bufsz, &len, " against a median below the resolution (");
            put_dur(buf, bufsz, &len, (double)p->resolution, tick);
            put(buf, bufsz, &len, ")");
        } else {
            put(buf, bufsz, &len, " against a median of ");
            put_dur(buf, bufsz, &len, med, tick);
        }
        put(buf, bufsz, &len, " (%llu of %llu calls slow)", (unsigned long long)slow,
            (unsigned long long)rp_own_time_n(&own));
        sep = "; ";
    }
    if (n->flags & RP_FLAG_RATE) {
        double per, q1, q3;
        period_of(n, o, 1.0, &per, &q1, &q3);
        double mx = (double)rate_max(p, n);
        put(buf, bufsz, &len, "%sRATE runs every ", sep);
        put_dur(buf, bufsz, &len, per, tick);
        put(buf, bufsz, &len, " (%llu intervals, half within ",
            (unsigned long long)(rp_node_ivl(n) ? rp_node_ivl(n)->n : 0));
        put_dur(buf, bufsz, &len, q1, tick);
        put(buf, bufsz, &len, "-");
        put_dur(buf, bufsz, &len, q3, tick);
        put(buf, bufsz, &len, "), its longest run ");
        put_dur(buf, bufsz, &len, mx, tick);
        put(buf, bufsz, &len, " is ");
        put_pct(buf, bufsz, &len, per > 0.0 ? mx / per : 1.0);
        put(buf, bufsz, &len, " of the period");
        sep = "; ";
    }
    if (n->flags & RP_FLAG_CONTENDED) {
        double wait, hold;
        double held_off;
        lock_sums(p, n->key, &wait, &hold, &held_off);
        put(buf, bufsz, &len, "%sCONTENDED waited ", sep);
        put_dur(buf, bufsz, &len, wait, tick);
        if (hold > 0.0) {
            put(buf, bufsz, &len, " = ");
            put_pct(buf, bufsz, &len, wait / hold);
            put(buf, bufsz, &len, " of ");
            put_dur(buf, bufsz, &len, hold, tick);
            put(buf, bufsz, &len, " held");
            /* a holder that waits or is preempted holding it makes the
             * others wait as much as a long critical section (pigz's
             * write_first: held 2.89 s, 99 % of it by holders off CPU) */
            if (held_off >= 0.1 * hold) {
                put(buf, bufsz, &len, ", ");
                put_pct(buf, bufsz, &len, held_off / hold);
                put(buf, bufsz, &len, " of it by holders blocked or off CPU");
            }
        } else {
            put(buf, bufsz, &len, ", never seen held");
        }
        sep = "; ";
    }
    if (n->flags & RP_FLAG_BUDGET) {
        put(buf, bufsz, &len, "%sBUDGET %llu of %llu runs over ", sep,
            (unsigned long long)rp_node_overruns(n), (unsigned long long)n->calls);
        put_dur(buf, bufsz, &len, (double)rp_node_budget(n), tick);
    }
    return len;
}

/* Comma-separated flag names into buf (always NUL-terminated when bufsz >
 * 0); "" for none.  Returns buf.  Cannot fail (output is truncated). */
const char *rp_flag_name(unsigned b)
{
    static const char *const names[] = {"DISPATCH", "HOT", "JITTER", "RATE", "CONTENDED", "BUDGET"};
    return b < sizeof names / sizeof names[0] ? names[b] : NULL;
}

const char *rp_flags_str(uint32_t flags, char *buf, size_t bufsz)
{
    size_t len = 0;
    if (!buf || bufsz == 0)
        return buf;
    buf[0] = '\0';
    for (unsigned b = 0; rp_flag_name(b); b++)
        if (flags & (1u << b))
            put(buf, bufsz, &len, "%s%s", len ? "," : "", rp_flag_name(b));
    return buf;
}

/*
 * flags.c - the flags of docs/design.md §7: which nodes dispatch, are hot, jitter,
 * run too slowly for their rate, are contended locks, or overrun a budget;
 * and one human line per flagged node saying why.
 *
 * Rules (defaults in brackets; all are rp_flag_opts fields):
 *   DISPATCH  involvement >= [0.10], excl/incl <= [0.10] and fanout >=
 *             [2], fanout = exp(H), H = entropy in nats of the shares of
 *             i's callees in i's outgoing edge time (edge incl), its self
 *             edge left out: recursion hands no work to anyone else, and
 *             its edge time counts nested frames again (for the same
 *             reason the self share is excl/incl, incl counting outermost
 *             activations only, not excl/dur_sum);
 *   HOT       excl >= [0.05] * p->total;
 *   JITTER    calls >= [10] and max >= [10] * median, the median from the
 *             histogram and taken as at least one tick (below the clock's
 *             resolution there is no "typical" to be far from);
 *   RATE      calls >= [10], max > 0 and max >= [0.5] * mean period,
 *             period = (last_start - first_start) / (calls - 1);
 *             JITTER and RATE are not judged on a node that recursed (one
 *             of its activations ran inside another on the same stack:
 *             dur_sum > incl, or it has a self edge): its statistics mix
 *             the outermost activations with the nested ones, so the median
 *             is that of the innermost frames and the "period" that of
 *             nested starts, and both rules would fire on every recursion
 *             (fib(20): max = 21891 x median); see docs/ranking.md;
 *   CONTENDED per lock (nodes of kind lock-wait / lock-hold with the same
 *             key): summed wait dur_sum > 0 and >= [0.10] * summed hold
 *             dur_sum; flags every wait and hold node of that lock;
 *   BUDGET    budget > 0 and overruns > 0.
 * ROOT (index 0) and the off-CPU node (kind offcpu) are never flagged; a
 * wait node (a blocking call) is never HOT, JITTER or RATE: its time is not
 * work, its length the program's choice.
 * DISPATCH counts only work handed on: edges to off-CPU time, waits,
 * lock waits and lock holds are no callees in the fan-out, and the self
 * share is excl / (incl - the time of those edges): a driver that waits
 * for its bus half of the time does not become a dispatcher.
 * JITTER judges the on-CPU maximum (oncpu_max: a span's duration less the
 * time off CPU or in waits below it; waits are nodes with flags of their
 * own) of a replayed trace, so preemption does not make a function JITTER;
 * the median is the wall one (off-CPU spans are rare enough not to move
 * it).  RATE judges the wall maximum: a periodic task
 * misses its period also while it is preempted.
 */
#include "flags.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../common/error.h"
#include "../trace/format.h"
#include "profile.h"

void rp_flag_opts_default(struct rp_flag_opts *o)
{
    o->dispatch_involvement = 0.10;
    o->dispatch_self = 0.10;
    o->dispatch_fanout = 2.0;
    o->hot_self = 0.05;
    o->jitter_calls = 10;
    o->jitter_ratio = 10.0;
    o->rate_calls = 10;
    o->rate_period = 0.5;
    o->contended_ratio = 0.10;
}

static int is_lock(const struct rp_node *n)
{
    return n->kind == RP_KIND_LOCK_WAIT || n->kind == RP_KIND_LOCK_HOLD;
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

/* Summed wait and hold dur_sum of the lock with this key.  Cannot fail. */
static void lock_sums(const struct rp_profile *p, uint64_t key, double *wait, double *hold)
{
    *wait = *hold = 0.0;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const struct rp_node *n = &p->nodes[i];
        if (!is_lock(n) || n->key != key)
            continue;
        if (n->kind == RP_KIND_LOCK_WAIT)
            *wait += (double)n->dur_sum;
        else
            *hold += (double)n->dur_sum;
    }
}

/* Whether time in callee n is work handed on (for DISPATCH): not time off
 * CPU, a blocking call, a lock wait or a lock hold (holds are intervals
 * beside the calls, not in the caller's time partition). */
static int handed_on(const struct rp_node *n)
{
    return n->kind != RP_KIND_OFFCPU && n->kind != RP_KIND_WAIT && n->kind != RP_KIND_LOCK_WAIT &&
           n->kind != RP_KIND_LOCK_HOLD;
}

static double median_ticks(const struct rp_node *n)
{
    uint64_t med = rp_hist_q(&n->hist, 0.5);
    return med ? (double)med : 1.0;
}

/* The largest duration that judges a node's JITTER: on CPU, less the time
 * off CPU or in waits below it, when the profile knows it (a replayed trace).  RATE
 * judges the wall maximum: a deadline is missed also while preempted. */
static uint64_t judged_max(const struct rp_profile *p, const struct rp_node *n)
{
    return p->oncpu_known ? n->oncpu_max : n->max;
}

static double mean_period(const struct rp_node *n)
{
    if (n->calls < 2 || n->last_start < n->first_start)
        return -1.0;
    return (double)(n->last_start - n->first_start) / (double)(n->calls - 1);
}

/*
 * Computes every node's fanout and sets flags; the caller's options, or the
 * defaults when o is NULL.  Returns 0, RP_EINVAL for a NULL profile or an
 * edge naming a node that does not exist, or RP_ENOMEM (flags then unset).
 */
int rp_flags_apply(struct rp_profile *p, const struct rp_flag_opts *o)
{
    struct rp_flag_opts def;
    double *out = NULL, *h = NULL, *blocked = NULL;
    unsigned char *self = NULL; /* a self edge with calls: recursion */
    struct lock_ref *locks = NULL;
    uint32_t nl = 0;
    int rc = RP_EINVAL;

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
    rc = RP_ENOMEM;
    out = calloc(n ? n : 1, sizeof *out);
    h = calloc(n ? n : 1, sizeof *h);
    blocked = calloc(n ? n : 1, sizeof *blocked);
    locks = malloc((size_t)(n ? n : 1) * sizeof *locks);
    self = calloc(n ? n : 1, 1);
    if (!out || !h || !blocked || !locks || !self)
        goto out;

    /* fanout: out[i] = sum of i's outgoing edge time to others that is
     * work handed on, blocked[i] the time of its other edges; h[i] =
     * entropy */
    for (uint32_t e = 0; e < p->n_edges; e++) {
        const struct rp_edge *ed = &p->edges[e];
        if (ed->caller == ed->callee)
            self[ed->caller] |= ed->calls > 0;
        else if (handed_on(&p->nodes[ed->callee]))
            out[ed->caller] += (double)ed->incl;
        else
            blocked[ed->caller] += (double)ed->incl;
    }
    for (uint32_t e = 0; e < p->n_edges; e++) {
        const struct rp_edge *ed = &p->edges[e];
        if (ed->incl == 0 || ed->caller == ed->callee || !handed_on(&p->nodes[ed->callee]))
            continue;
        double q = (double)ed->incl / out[ed->caller];
        h[ed->caller] -= q * log(q);
    }

    for (uint32_t i = 0; i < n; i++) {
        struct rp_node *nd = &p->nodes[i];
        nd->fanout = out[i] > 0.0 ? exp(h[i]) : 0.0;
        nd->blocked = blocked[i];
        nd->flags = 0;
        /* the off-CPU node is time the threads were not running: never HOT,
         * JITTER or RATE (its durations are the scheduler's, not code's) */
        if (i == 0 || nd->kind == RP_KIND_OFFCPU)
            continue;
        /* the self share of its time less what was neither its work nor
         * work it handed on (off CPU, waiting, holding a lock) */
        double on_incl = (double)nd->incl - blocked[i];
        if (nd->involvement >= o->dispatch_involvement && on_incl > 0 &&
            (double)nd->excl <= o->dispatch_self * on_incl && nd->fanout >= o->dispatch_fanout)
            nd->flags |= RP_FLAG_DISPATCH;
        /* A wait is not work, and its length is the program's choice (a
         * sleep, a timeout): never HOT, JITTER or RATE. */
        int wait = nd->kind == RP_KIND_WAIT;
        if (!wait && p->total > 0 && (double)nd->excl >= o->hot_self * (double)p->total)
            nd->flags |= RP_FLAG_HOT;
        int recursed = wait || self[i] || nd->dur_sum > nd->incl;
        if (!recursed && nd->calls >= o->jitter_calls && nd->calls > 0 &&
            (double)judged_max(p, nd) >= o->jitter_ratio * median_ticks(nd))
            nd->flags |= RP_FLAG_JITTER;
        double per = mean_period(nd);
        if (!recursed && nd->calls >= o->rate_calls && per >= 0.0 && nd->max > 0 &&
            (double)nd->max >= o->rate_period * per)
            nd->flags |= RP_FLAG_RATE;
        if (nd->budget > 0 && nd->overruns > 0)
            nd->flags |= RP_FLAG_BUDGET;
        if (is_lock(nd)) {
            locks[nl].key = nd->key;
            locks[nl++].idx = i;
        }
    }

    /* CONTENDED: group lock nodes by key */
    qsort(locks, nl, sizeof *locks, cmp_key);
    for (uint32_t a = 0; a < nl;) {
        uint32_t b = a;
        double wait = 0.0, hold = 0.0;
        for (; b < nl && locks[b].key == locks[a].key; b++) {
            const struct rp_node *nd = &p->nodes[locks[b].idx];
            if (nd->kind == RP_KIND_LOCK_WAIT)
                wait += (double)nd->dur_sum;
            else
                hold += (double)nd->dur_sum;
        }
        if (wait > 0.0 && wait >= o->contended_ratio * hold)
            for (uint32_t k = a; k < b; k++)
                p->nodes[locks[k].idx].flags |= RP_FLAG_CONTENDED;
        a = b;
    }
    rc = 0;
out:
    free(out);
    free(h);
    free(blocked);
    free(self);
    free(locks);
    return rc;
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
 * Writes why n carries its flags.  With o NULL the defaults are assumed (the
 * options only name the thresholds).  Returns the length in buf, 0 when n
 * has no flags, buf is NULL/empty, or p or n is NULL (buf is then "" if it
 * can hold it).
 */
size_t rp_flags_explain(const struct rp_profile *p, const struct rp_node *n,
                        const struct rp_flag_opts *o, char *buf, size_t bufsz)
{
    size_t len = 0;
    (void)o;
    if (!buf || bufsz == 0)
        return 0;
    buf[0] = '\0';
    if (!p || !n || !n->flags)
        return 0;
    const char *sep = "";
    double tick = p->ns_per_tick;

    if (n->flags & RP_FLAG_DISPATCH) {
        double inv = n->involvement * 100.0;
        put(buf, bufsz, &len,
            inv >= 10.0 ? "DISPATCH %.0f%% involved, " : "DISPATCH %.1f%% involved, ", inv);
        double on_incl = (double)n->incl - n->blocked; /* as the rule */
        put_pct(buf, bufsz, &len, on_incl > 0 ? (double)n->excl / on_incl : 0.0);
        put(buf, bufsz, &len, " self, spreads over %.1f callees", n->fanout);
        sep = "; ";
    }
    if (n->flags & RP_FLAG_HOT) {
        put(buf, bufsz, &len, "%sHOT ", sep);
        put_pct(buf, bufsz, &len, p->total ? (double)n->excl / (double)p->total : 0.0);
        put(buf, bufsz, &len, " of all time self");
        sep = "; ";
    }
    if (n->flags & RP_FLAG_JITTER) {
        double med = median_ticks(n);
        double mx = (double)judged_max(p, n);
        put(buf, bufsz, &len, "%sJITTER %smax ", sep, p->oncpu_known ? "on-CPU " : "");
        put_dur(buf, bufsz, &len, mx, tick);
        put(buf, bufsz, &len, " is %.0fx the median ", mx / med);
        put_dur(buf, bufsz, &len, med, tick);
        sep = "; ";
    }
    if (n->flags & RP_FLAG_RATE) {
        double per = mean_period(n);
        double mx = (double)n->max;
        put(buf, bufsz, &len, "%sRATE max ", sep);
        put_dur(buf, bufsz, &len, mx, tick);
        put(buf, bufsz, &len, " is ");
        put_pct(buf, bufsz, &len, per > 0.0 ? mx / per : 1.0);
        put(buf, bufsz, &len, " of the mean period ");
        put_dur(buf, bufsz, &len, per > 0.0 ? per : 0.0, tick);
        sep = "; ";
    }
    if (n->flags & RP_FLAG_CONTENDED) {
        double wait, hold;
        lock_sums(p, n->key, &wait, &hold);
        put(buf, bufsz, &len, "%sCONTENDED waited ", sep);
        put_dur(buf, bufsz, &len, wait, tick);
        if (hold > 0.0) {
            put(buf, bufsz, &len, " = ");
            put_pct(buf, bufsz, &len, wait / hold);
            put(buf, bufsz, &len, " of ");
            put_dur(buf, bufsz, &len, hold, tick);
            put(buf, bufsz, &len, " held");
        } else {
            put(buf, bufsz, &len, ", never seen held");
        }
        sep = "; ";
    }
    if (n->flags & RP_FLAG_BUDGET) {
        put(buf, bufsz, &len, "%sBUDGET %llu of %llu runs over ", sep,
            (unsigned long long)n->overruns, (unsigned long long)n->calls);
        put_dur(buf, bufsz, &len, (double)n->budget, tick);
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

// SPDX-License-Identifier: MIT
/*
 * comp.h - overhead compensation (docs/performance.md), the one formula
 * every consumer of span durations applies: the replay (replay.c), the
 * calling-context tree of the flame graphs, callgrind and pprof (cct.c), and
 * the span walk of the lock profile and the sequence diagrams (spanwalk.c),
 * so that every output shows the same times.
 *
 * A span with E events of its thread between its ENTER and its end lasted
 *
 *     dur = max(raw - (E * pair / 2 + self), child - res, 0),   limited: counted
 *
 * where child is the compensated time of its callees (0 for a leaf) and
 * res the resolution (below): a correction measured above what the
 * program's events cost (a CPU that sped up after the measurement, a
 * sanitizer's allocator changing pace) leaves the span its callees' time,
 * less at most what cannot be told from an empty call, never a time that
 * would make its callees' the longer by more.  Within the resolution the
 * span keeps its own time below 0, so that the noise of a short own time
 * (a wrapper's, a few ns against a clock that moves by 10) averages out in
 * the node's exclusive sum instead of adding up.
 *
 * with pair (INFO "overhead_ticks") and self ("overhead_self_ticks") in
 * fixed point, 1/RP_COMP_ONE tick, and the correction rounded to the
 * nearest tick: integers only, so the result does not depend on the order
 * in which spans are counted.  A switched-off rp_comp (on == 0) has every
 * correction 0.
 *
 * Resolution (format 1.3).  A span whose duration (compensated or not) is
 * shorter than
 *
 *     res = floor(step) + ceil(spread)   when compensated (spread: INFO
 *     res = floor(step)                  "overhead_spread_ticks", 0 if absent)
 *
 * (rounded up to a boundary of the histogram's buckets: exact below 32
 * ticks, within 1/32 above, so that the spans below it are whole buckets
 * and the replay counts them from the histogram, at no cost per span)
 * cannot be told from an empty call: the clock moves by whole steps (INFO
 * "clock_step_ticks": one tick on most counters, 21 on an AMD Zen's TSC at
 * 2.1 GHz, 24.5 at 2445 MHz, where one step reads as 24 or 25; 1 if
 * absent), and an empty call's compensated span lies between
 * 0 and spread (the 95th percentile of the recorder's own measurement less
 * its o_self, their mean below that percentile).  Such a span is "below resolution": counted per
 * node, with its duration in the sums (so times still add up), but not in the minimum, the
 * histogram or the percentiles, where it would read as a time it does not show.
 */
#ifndef RP_ANALYZE_COMP_H
#define RP_ANALYZE_COMP_H

#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "profile.h"

#define RP_COMP_ONE 65536u /* fixed point of the overhead: 1 tick */

struct rp_comp {
    int on;
    uint64_t pairfp;  /* per two events, in 1/RP_COMP_ONE tick */
    uint64_t round;   /* 2 selffp + RP_COMP_ONE: self part, and rounding */
    uint64_t leaf;    /* the whole correction of a span with no event inside */
    uint64_t clamped; /* spans shorter than their correction */
    uint64_t res;     /* ticks: a shorter span is below resolution (>= 1) */
};

/* The resolution in ticks (see above): compensated or not, the spread and
 * the clock's step (below 2: one tick; at most 1e6, as the profile's).  A
 * fractional step counts as its floor, the fewer ticks one step can read
 * as (24 of 24 or 25 for 24.5). */
static inline uint64_t rp_comp_res(int on, double spread, double step)
{
    uint64_t r = step >= 2 ? (uint64_t)step : 1;
    if (on && spread > 0)
        r += spread < 1e6 ? (uint64_t)__builtin_ceil(spread) : 1000000u;
    if (r == 1)
        return 1;
    unsigned b = rp_hist_index(r);
    return rp_hist_lower(b) == r ? r : rp_hist_lower(b + 1);
}

/* The fixed-point form of ticks (>= 0, at most 1e6: overhead_check). */
static inline uint64_t rp_comp_fixed(double ticks)
{
    return (uint64_t)(ticks * RP_COMP_ONE + 0.5);
}

/* The correction of a span with e events inside it, in ticks. */
static inline uint64_t rp_comp_of(const struct rp_comp *c, uint64_t e)
{
    if (__builtin_expect(e < (1u << 24), 1)) /* no overflow: pairfp < 2^37 */
        return (e * c->pairfp + c->round) / (2 * RP_COMP_ONE);
    return (uint64_t)(((unsigned __int128)e * c->pairfp + c->round) / (2 * RP_COMP_ONE));
}

/* Sets c from the fixed-point overheads; on == 0 switches it off. */
static inline void rp_comp_set(struct rp_comp *c, int on, uint64_t pairfp, uint64_t selffp,
                               uint64_t res)
{
    *c = (struct rp_comp){on, pairfp, 2 * selffp + RP_COMP_ONE, 0, 0, res ? res : 1};
    c->leaf = rp_comp_of(c, 0);
}

/*
 * Sets c for spans of profile p (replayed: its overhead fields checked),
 * on unless `off` or the trace has no measurement.
 */
static inline void rp_comp_init(struct rp_comp *c, const struct rp_profile *p, int off)
{
    int on = !off && p->overhead_known;
    rp_comp_set(c, on, rp_comp_fixed(p->overhead_pair), rp_comp_fixed(p->overhead_self),
                rp_comp_res(on, p->overhead_spread, p->clock_step));
}

/*
 * Sets c for the spans of process r of a merged run (merge.h), its ids
 * mapped: as rp_comp_init for its own file.  Returns 0, or RP_EINVAL with
 * the message in err when the merge kept no id maps.
 */
static inline int rp_comp_init_proc(struct rp_comp *c, const struct rp_proc *r, int off, char *err,
                                    size_t errsz)
{
    if (!r->map) { /* merged without keep_maps */
        snprintf(err, errsz, "%s: the merged profile kept no id maps", r->file);
        return RP_EINVAL;
    }
    int on = !off && r->overhead_known;
    rp_comp_set(c, on, rp_comp_fixed(r->overhead_pair), rp_comp_fixed(r->overhead_self),
                rp_comp_res(on, r->overhead_spread, r->clock_step));
    return 0;
}

/* The least compensated duration of a span whose callees' compensated
 * time is child: child less the resolution (see above), 0 below it. */
static inline uint64_t rp_comp_floor(const struct rp_comp *c, uint64_t child)
{
    return child > c->res ? child - c->res : 0;
}

/*
 * raw less the correction k, but not less than rp_comp_floor(c, child)
 * (a correction measured too high would leave a parent shorter than its
 * children): limited either way, and then counted once.  The result is at
 * most raw, the callees' being at most theirs.
 */
static inline uint64_t rp_comp_span(struct rp_comp *c, uint64_t raw, uint64_t k, uint64_t child)
{
    uint64_t d = raw - k, lo = rp_comp_floor(c, child);
    if (__builtin_expect(k > raw || d < lo, 0)) {
        c->clamped++;
        return lo;
    }
    return d;
}

/* Whether rp_comp_span limited the span (raw, k) it gave dur: else dur is
 * raw less k. */
static inline int rp_comp_limited(uint64_t raw, uint64_t k, uint64_t dur)
{
    return k > raw || dur != raw - k;
}

/* The duration of a span that lasted raw ticks with e events inside and
 * child ticks in its callees (compensated). */
static inline uint64_t rp_comp_dur(struct rp_comp *c, uint64_t raw, uint64_t e, uint64_t child)
{
    return c->on ? rp_comp_span(c, raw, rp_comp_of(c, e), child) : raw;
}

#endif /* RP_ANALYZE_COMP_H */

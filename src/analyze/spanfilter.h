// SPDX-License-Identifier: MIT
/*
 * spanfilter.h - which spans a filtered command counts (-F, -N, -D, -t,
 * --window; docs/filters.md), one rule for the replay that makes the
 * profile (replay.c), the call-path tree of the exports (cct.c) and the
 * timelines (export_timeline.c).
 *
 * A span is left out when it is, or runs under, an excluded function; when
 * there are included functions and it is none of them and runs under none;
 * when max_depth kept spans are already open below it; when it began
 * outside the time window; or when it lasted less than min_ticks (its time
 * as the report counts it).  A left-out span's time is its nearest kept
 * caller's own (exclusive) time, and the kept spans under it hang from that
 * caller.  All but the duration are known when the span begins, from its
 * caller's state (struct rp_sf_frame): O(1) per span.
 */
#ifndef RP_ANALYZE_SPANFILTER_H
#define RP_ANALYZE_SPANFILTER_H

#include <stddef.h>
#include <stdint.h>

struct rp_span_filter {
    uint32_t max_depth;  /* 0 = any depth; 1 = the outermost kept spans only */
    uint64_t min_ticks;  /* 0 = any duration */
    const uint8_t *mark; /* per node id: RP_SF_INCLUDE, RP_SF_EXCLUDE or 0; NULL = none */
    uint32_t n_mark;     /* ids in mark (any other id is unmarked) */
    int has_include;     /* some id is marked RP_SF_INCLUDE */
    int window;          /* only spans that begin in [from, to) (ticks) */
    uint64_t from, to;
};

enum { RP_SF_INCLUDE = 1, RP_SF_EXCLUDE = 2 };

/* The filter's state of an open span. */
struct rp_sf_frame {
    uint32_t kid;    /* the id of the nearest kept span at or below it, 0 = none */
    uint32_t kdepth; /* kept spans open at or below it */
    uint8_t inc;     /* it or a caller is an included function */
    uint8_t exc;     /* it or a caller is an excluded function */
    uint8_t keep;    /* kept, as far as is known when it begins (not min_ticks) */
};

/* Whether a span that began at start is in f's window. */
static inline int rp_sf_in_window(const struct rp_span_filter *f, uint64_t start)
{
    return !f->window || (start >= f->from && start < f->to);
}

/*
 * The state *s of a span of id beginning at start under the span whose
 * state is *up (NULL: none, the bottom of its thread's stack).  Cannot
 * fail.
 */
static inline void rp_sf_enter(const struct rp_span_filter *f, const struct rp_sf_frame *up,
                               uint32_t id, uint64_t start, struct rp_sf_frame *s)
{
    uint8_t m = f->mark && id < f->n_mark ? f->mark[id] : 0;
    uint32_t kd = up ? up->kdepth : 0;
    s->inc = (up && up->inc) || m == RP_SF_INCLUDE;
    s->exc = (up && up->exc) || m == RP_SF_EXCLUDE;
    s->keep = !s->exc && (!f->has_include || s->inc) && (!f->max_depth || kd < f->max_depth) &&
              rp_sf_in_window(f, start);
    s->kdepth = kd + s->keep;
    s->kid = s->keep ? id : up ? up->kid : 0;
}

/* Whether a span in state *s that lasted dur ticks is counted. */
static inline int rp_sf_kept(const struct rp_span_filter *f, const struct rp_sf_frame *s,
                             uint64_t dur)
{
    return s->keep && dur >= f->min_ticks;
}

/* Whether time off CPU (a span of id, the recorder's off-CPU node) that
 * began at start under the span in state *up (NULL: none) is counted:
 * whenever a kept span is open below it, whatever its depth and its length,
 * so that off-CPU time never becomes a kept span's own time; never when it
 * is excluded itself or runs under an excluded span; always when it is
 * included itself. */
static inline int rp_sf_offcpu_kept(const struct rp_span_filter *f, const struct rp_sf_frame *up,
                                    uint32_t id, uint64_t start)
{
    uint8_t m = f->mark && id < f->n_mark ? f->mark[id] : 0;
    if (m == RP_SF_EXCLUDE || (up && up->exc))
        return 0;
    if (m == RP_SF_INCLUDE)
        return 1;
    return up ? up->kid != 0 : !f->has_include && rp_sf_in_window(f, start);
}

#endif /* RP_ANALYZE_SPANFILTER_H */

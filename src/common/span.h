// SPDX-License-Identifier: MIT
/*
 * span.h - the rule for the end of a span, one code for direct mode
 * (src/record/direct.c) and the analyzer's replay (src/analyze/replay.c),
 * so that the two modes give the same statistics for the same events
 * (docs/design.md, "1.2 Where a span ends").
 *
 * A span ends in one of three ways:
 *
 *   exit     its own exit, matched to the innermost open span with its key
 *   unwound  an exit of a span open deeper, or a landing after a longjmp
 *            or a caught exception: the spans above that one end there
 *   cut      the thread ends (or the run does) with the span still open
 *
 * Every way ends the span at that moment, with its time; unwound and cut
 * spans are counted apart (rp_node.cut, rp_thread.unwound and .cut).  An
 * exit that matches no open span ends nothing and is counted as unmatched.
 * Then, for a span of node id that began at `start`, ends at `end` and
 * spent `child` in its callees:
 *
 *     dur   = rp_span_dur(start, end)        (compensated in the replay,
 *                                              comp.h; direct mode has none)
 *     calls += 1, min, max, sum of squares, histogram of dur
 *     excl  += rp_span_excl(dur, child)       a signed sum; the node's
 *                                              exclusive is rp_span_excl_total
 *     incl  += dur  only if rp_span_outer(): no other activation of id is
 *                   open below it on the thread's stack (recursion)
 *     the frame below: child += dur; the edge (caller or ROOT -> id) counts
 *     dur; a dur below the resolution is no edge's minimum (rp_span_min).
 *
 * Everything here is static inline and cannot fail.
 */
#ifndef RP_COMMON_SPAN_H
#define RP_COMMON_SPAN_H

#include <stdint.h>

/* The duration of a span from start to end in ticks: 0 if the clock reads
 * earlier at the end (never negative). */
static inline uint64_t rp_span_dur(uint64_t start, uint64_t end)
{
    return end >= start ? end - start : 0;
}

/* A span's own time, for the histograms of own time: its duration less its
 * callees', 0 when they took more (compensation can make them). */
static inline uint64_t rp_span_own(uint64_t dur, uint64_t child)
{
    return child < dur ? dur - child : 0;
}

/* A span's share of its node's exclusive time: dur - child, modulo 2^64 (a
 * signed value), so that the node's sum is exact whatever the order of the
 * pieces (a span split between chunks; callees whose compensated times
 * exceed the span's). */
static inline uint64_t rp_span_excl(uint64_t dur, uint64_t child)
{
    return dur - child;
}

/* A node's exclusive time from the sum of its spans' rp_span_excl: the sum
 * read as signed, 0 when it is not positive. */
static inline uint64_t rp_span_excl_total(uint64_t sum)
{
    int64_t x = (int64_t)sum;
    return x > 0 ? (uint64_t)x : 0;
}

/* Ends one open activation of a node whose open activations on this
 * thread's stack are counted in *active; true when it was the outermost
 * (the only one open), whose duration is the node's inclusive time. */
static inline int rp_span_outer(uint32_t *active)
{
    return --*active == 0;
}

/* Whether a span of dur is a new minimum below min: not when it is below
 * the resolution res (comp.h; 0 where there is none). */
static inline int rp_span_min(uint64_t dur, uint64_t min, uint64_t res)
{
    return dur < min && dur >= res;
}

/*
 * Where an exit of `key` lands on a stack of `depth` open spans: sets `at`
 * to the depth of the innermost open span whose key (the expression
 * KEY_AT, which reads `at`: the key of the at-th span from the bottom,
 * 1-based) is `key`, or to 0 when none is (an unmatched exit).  The spans
 * above depth `at` are the ones it unwinds.
 */
#define RP_SPAN_MATCH(at, depth, KEY_AT, key)                                                      \
    for ((at) = (depth); (at) > 0 && (KEY_AT) != (key); (at)--)

#endif /* RP_COMMON_SPAN_H */

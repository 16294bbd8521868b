// SPDX-License-Identifier: MIT
/*
 * calib.h - the recorder's measurement of its own cost per event, made at
 * start-up and up to three times more on the writer thread while the
 * program runs (trace mode) so that the analyzer can subtract it, the
 * fastest of them
 * (docs/performance.md, "Overhead compensation").
 *
 * Model.  The hooks read the clock in the middle of their work: for a span
 * F, the part of F's own enter hook after its time stamp and the part of its
 * exit hook before its time stamp fall inside F's measured span (o_self);
 * every recorded call inside F adds its whole enter + exit cost (2 o, the
 * "pair" cost) to F's measured span.  So for a function with k descendant
 * calls (2k descendant events)
 *
 *     inclusive_true ~= measured - 2k * o - o_self
 *
 * Both are measured on a private empty function (calib.c, the one
 * instrumented function of the recorder) recorded through the real hooks
 * into a scratch buffer, against the same function uninstrumented.
 */
#ifndef RP_RECORD_CALIB_H
#define RP_RECORD_CALIB_H

#include <stdint.h>

#define RP_HIDDEN_CALIB __attribute__((visibility("hidden")))

/* An empty function compiled with -finstrument-functions: its every call
 * is an enter and an exit event through the real hooks. */
RP_HIDDEN_CALIB void rp_calib_leaf(void);
/* The same empty function without instrumentation: the reference. */
RP_HIDDEN_CALIB void rp_calib_bare(void);

/* The result, in ticks of the recorder's clock. */
struct rp_overhead {
    double pair;     /* what one recorded call (enter + exit) adds around it: 2 o */
    double self;     /* the part of a span's own enter + exit inside its span: o_self */
    double spread;   /* p95 - median of the recorded calls' (exit - enter) stamps: how far
                        an empty call's span lies above o_self (the resolution, format 1.3) */
    unsigned rounds; /* rounds that were used (0: not measured) */
};

#endif /* RP_RECORD_CALIB_H */

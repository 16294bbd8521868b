// SPDX-License-Identifier: MIT
/*
 * diff.h - what changed between two runs (`rankprof diff`): every
 * procedure, lock and point of either profile, matched by kind and name,
 * with its change in own time, and a verdict on its time per call that a
 * statistical test backs (docs/diff.md).
 */
#ifndef RP_ANALYZE_DIFF_H
#define RP_ANALYZE_DIFF_H

#include <stdint.h>

#include "profile.h"

/* A row's verdict, in the order the table explains them. */
enum rp_verdict {
    RP_DIFF_SAME,   /* per call within the threshold, or the test is not confident */
    RP_DIFF_SLOWER, /* per call slower past the threshold, with confidence */
    RP_DIFF_FASTER, /* per call faster past the threshold, with confidence */
    RP_DIFF_FEW,    /* too few calls on one side to judge */
    RP_DIFF_SMALL,  /* less than min_share of either run's own time: not judged */
    RP_DIFF_SCHED,  /* time off CPU: the scheduler's, not the program's; not judged */
    RP_DIFF_NEW,    /* only in the new run */
    RP_DIFF_GONE    /* only in the base run */
};

struct rp_diff_opts {
    double threshold;  /* a change per call counts past 1 + threshold (or below 1/(1 + it)) */
    double confidence; /* ... and when the test's two-sided p-value is below 1 - confidence */
    double min_share;  /* a row is judged when its own time is at least this share of
                          either run's own time (else RP_DIFF_SMALL) */
    int relative;      /* judge each row against the run-wide drift (rp_diff.drift) */
};

/* Defaults: threshold 0.2, confidence 0.99, min_share 0.01, not relative. */
void rp_diff_opts_default(struct rp_diff_opts *o);

#define RP_DIFF_NONE UINT32_MAX /* a row's node index on the side it is missing from */

struct rp_diff_row {
    uint32_t a, b; /* node indices in the base and the new profile, or RP_DIFF_NONE */
    uint8_t verdict;
    uint8_t kind;          /* enum rp_kind of its node */
    uint8_t regression;    /* slower, and its share is at least min_share */
    double ratio;          /* new / base mean own time per call (under --relative, the new
                              one divided by the drift); 0 when not judged */
    double z, p;           /* Mann-Whitney U of the new run's times per call against the
                              base's: z (> 0: the new one slower) and the two-sided p-value;
                              0 and 1 when not computed */
    double self_a, self_b; /* own time in ns (0 on a missing side) */
    double share;          /* the larger of self_a / base total and self_b / new total */
};

struct rp_diff {
    struct rp_diff_row *rows; /* slower and faster rows, then new and gone ones, then
                                 the rest; each by |self_b - self_a|, largest first */
    uint32_t n;
    double drift;            /* the run-wide ratio per call: the median of the rows' ratios,
                                weighted by their own time (1 when there is none) */
    double total_a, total_b; /* ns: own time summed over the nodes of each run, those of
                                time off CPU left out */
    uint32_t regressions, improvements;
};

/*
 * Matches the nodes of a and b by kind and name (the k-th of a name in a
 * with the k-th in b), judges each pair and sorts the rows.  Returns 0 or
 * RP_ENOMEM (d is then empty).
 */
int rp_diff_compute(const struct rp_profile *a, const struct rp_profile *b,
                    const struct rp_diff_opts *o, struct rp_diff *d);

void rp_diff_free(struct rp_diff *d);

/* The times per call a row is judged on: n's own time per call where the
 * trace has it (a replayed trace), else its durations (rp_node_hist, with
 * buf).  Cannot fail. */
const struct rp_hist *rp_diff_per_call(const struct rp_profile *p, const struct rp_node *n,
                                       struct rp_hist *buf);

/*
 * The Mann-Whitney U test of two samples given as histograms: values
 * va[0..na) (ascending) with counts ca, and vb/cb likewise.  Values closer
 * than one part in 10^9 are ties (midranks, with the tie correction of the
 * variance).  *z is the normal approximation of U for the second sample
 * (> 0: its values tend to be larger), *p its two-sided p-value.  Returns
 * 0, or -1 when either sample is empty or every value is tied.
 */
int rp_mann_whitney(const double *va, const double *ca, uint32_t na, const double *vb,
                    const double *cb, uint32_t nb, double *z, double *p);

#endif /* RP_ANALYZE_DIFF_H */

// SPDX-License-Identifier: MIT
/*
 * flags.h - the flags of docs/design.md §7 (DISPATCH, HOT, JITTER, RATE, CONTENDED,
 * BUDGET), each threshold an option.
 */
#ifndef RP_ANALYZE_FLAGS_H
#define RP_ANALYZE_FLAGS_H

#include <stddef.h>
#include <stdint.h>

#include "histwin.h"

struct rp_profile;
struct rp_node;

struct rp_flag_opts {
    double dispatch_involvement; /* >= 0.10 */
    double dispatch_self;        /* exclusive/inclusive <= 0.10 */
    double dispatch_fanout;      /* exp(H) >= 2, of callee calls and of callee time */
    double dispatch_margin;      /* 1.5: involvement >= 0.10 x it, self <= 0.10 / it */
    double hot_self;             /* own time >= 0.05 of all on-CPU time */
    double hot_run;              /* and >= 0.005 of the run's length (of one core; the
                                    program's, less the recorder's: flags.c) */
    uint64_t jitter_calls;       /* >= 100 activations with a known own time */
    double jitter_quantile;      /* 0.99: the high percentile judged */
    double jitter_ratio;         /* pNN >= 10 x median (own on-CPU time per call) */
    double jitter_floor_ns;      /* and pNN - median >= 2000 ns */
    uint64_t jitter_slow;        /* and >= 5 activations that slow */
    uint64_t rate_calls;         /* >= 10 intervals between starts */
    double rate_spread;          /* periodic: q3 - q1 of the intervals <= 0.5 x median */
    double rate_duty;            /* periodic: median duration <= 0.5 x period */
    double rate_idle;            /* periodic: its callers blocked >= 0.5 of their time */
    double rate_waits;           /* and their wait calls >= 0.5 per call of it */
    double rate_period;          /* on-CPU max >= 0.5 x period */
    double contended_ratio;      /* wait >= 0.10 x hold */
    double jitter_rare;          /* and those slow <= 0.25 of its calls (a tail, not a mode) */
    double jitter_run;           /* and their own time beyond the median >= 0.001 of the run's
                                    length (hot_run's) */
    uint64_t contended_waits;    /* and >= 3 contended acquisitions (waits) */
    double contended_run;        /* and the waits >= 0.005 of the run's length (hot_run's) */
};

/* Fills o with the defaults of docs/design.md §7. */
void rp_flag_opts_default(struct rp_flag_opts *o);

/* Sets every node's flags and fanout.  Needs ranked nodes (involvement).
 * Returns 0, or RP_ENOMEM. */
int rp_flags_apply(struct rp_profile *p, const struct rp_flag_opts *o);

/*
 * Writes one line saying why node n carries its flags, e.g.
 * "DISPATCH 97% involved, 0.4% self, spreads over 3.0 callees", into buf
 * (always NUL-terminated).  Returns the length written, 0 if n has no flags.
 */
size_t rp_flags_explain(const struct rp_profile *p, const struct rp_node *n,
                        const struct rp_flag_opts *o, char *buf, size_t bufsz);

/*
 * A node's own on-CPU time per activation, as JITTER judges it and the
 * JSON's own_* fields give it: h, its distribution (NULL when not known),
 * and low, the activations that h leaves out because they were below the
 * profile's resolution (a node whose every span was a leaf: h is then its
 * duration histogram, which keeps those apart); they count as shorter than
 * every value in h, so a percentile is of every activation, as the
 * table's p95.  buf holds n's histogram where it has none apart
 * (rp_node_hist): h may point into the struct.
 */
struct rp_own_time {
    const struct rp_hist *h;
    uint64_t low;
    struct rp_hist buf;
};

/* n's own time per activation into *ot; has_callee: n has an edge to any
 * callee (without a replay's own counts, such a node's own time is not
 * known: h NULL, low 0).  Cannot fail. */
void rp_node_own_time(const struct rp_profile *p, const struct rp_node *n, int has_callee,
                      struct rp_own_time *ot);

/* The activations ot covers (h's and the low ones).  Cannot fail. */
uint64_t rp_own_time_n(const struct rp_own_time *ot);

/* The q-quantile of ot in ticks: the resolution when it falls among the
 * low ones, 0 when ot is empty.  Cannot fail. */
uint64_t rp_own_time_q(const struct rp_profile *p, const struct rp_own_time *ot, double q);

/* The name of flag bit b (0 = DISPATCH, ...), or NULL for an unknown bit. */
const char *rp_flag_name(unsigned b);

/* "DISPATCH,HOT" etc. into buf; returns buf. */
const char *rp_flags_str(uint32_t flags, char *buf, size_t bufsz);

#endif /* RP_ANALYZE_FLAGS_H */

/*
 * flags.h - the flags of docs/design.md §7 (DISPATCH, HOT, JITTER, RATE, CONTENDED,
 * BUDGET), each threshold an option.
 */
#ifndef RP_ANALYZE_FLAGS_H
#define RP_ANALYZE_FLAGS_H

#include <stddef.h>
#include <stdint.h>

struct rp_profile;
struct rp_node;

struct rp_flag_opts {
    double dispatch_involvement; /* >= 0.10 */
    double dispatch_self;        /* exclusive/inclusive <= 0.10 */
    double dispatch_fanout;      /* exp(H) >= 2 */
    double hot_self;             /* exclusive >= 0.05 of all time */
    uint64_t jitter_calls;       /* >= 10 */
    double jitter_ratio;         /* max >= 10 x median */
    uint64_t rate_calls;         /* >= 10 */
    double rate_period;          /* max >= 0.5 x mean period */
    double contended_ratio;      /* wait >= 0.10 x hold */
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

/* The name of flag bit b (0 = DISPATCH, ...), or NULL for an unknown bit. */
const char *rp_flag_name(unsigned b);

/* "DISPATCH,HOT" etc. into buf; returns buf. */
const char *rp_flags_str(uint32_t flags, char *buf, size_t bufsz);

#endif /* RP_ANALYZE_FLAGS_H */

// SPDX-License-Identifier: MIT
/*
 * calltree.h - `rankprof replay`: every call of the trace as an indented
 * tree with its duration, thread by thread as the file holds them, as
 * uftrace's replay prints it (docs/replay.md).
 */
#ifndef RP_REPORT_CALLTREE_H
#define RP_REPORT_CALLTREE_H

#include <stdint.h>
#include <stdio.h>

#include "analyze/profile.h"
#include "analyze/replay.h"

#define RP_CT_MAX_NAMES 32

struct rp_calltree_opts {
    uint32_t max_depth;                /* -D: frames this deep or deeper are not shown
                                          (their time stays in their callers'); 0 = all */
    double min_ns;                     /* -t: calls shorter than this are not shown, with
                                          what they called */
    const char *only[RP_CT_MAX_NAMES]; /* -F: only these and what they call */
    unsigned n_only;
    const char *exclude[RP_CT_MAX_NAMES]; /* -N: not these, nor what they call */
    unsigned n_exclude;
    int color;
};

/*
 * Walks the trace at path (replay options o, the profile p that names its
 * nodes: rp_load's) and writes the tree to out.  Returns 0, a negative
 * RP_E* code with err naming the file and offset, or RP_EIO when a write
 * failed.
 */
int rp_calltree(FILE *out, const char *path, const struct rp_replay_opts *o,
                const struct rp_profile *p, const struct rp_calltree_opts *c, char *err,
                size_t errsz);

#endif /* RP_REPORT_CALLTREE_H */

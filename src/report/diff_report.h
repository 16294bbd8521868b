// SPDX-License-Identifier: MIT
/*
 * diff_report.h - `rankprof diff` as a table or as JSON (docs/diff.md,
 * docs/report-json.md "diff").
 */
#ifndef RP_REPORT_DIFF_REPORT_H
#define RP_REPORT_DIFF_REPORT_H

#include <stdio.h>

#include "analyze/diff.h"

struct rp_diff_view {
    const struct rp_profile *a, *b; /* base and new */
    const char *name_a, *name_b;    /* the files as the user named them */
    const struct rp_diff *d;
    const struct rp_diff_opts *o;
    uint32_t limit; /* table rows at most, 0 = all; JSON has every row */
    int all;        /* table: unchanged rows too (else only verdicts other than same) */
    int color;
};

/* The verdict as the table and JSON name it ("slower", "same", ...). */
const char *rp_verdict_str(unsigned verdict);

/* Writes the diff.  Returns 0 or RP_EIO (a write failed). */
int rp_diff_table(FILE *out, const struct rp_diff_view *v);
int rp_diff_json(FILE *out, const struct rp_diff_view *v);

#endif /* RP_REPORT_DIFF_REPORT_H */

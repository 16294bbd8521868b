// SPDX-License-Identifier: MIT
/*
 * report.h - printing an analysed profile: the terminal table, JSON (the
 * stable interface of docs/design.md §9) and CSV.  Exports (chrome, folded, ...) live
 * beside these in src/report/ with one ops table per format.
 */
#ifndef RP_REPORT_REPORT_H
#define RP_REPORT_REPORT_H

#include <stdio.h>

#include "analyze/flags.h"
#include "analyze/profile.h"

enum rp_sort { RP_SORT_RANK, RP_SORT_SELF, RP_SORT_TOTAL, RP_SORT_CALLS, RP_SORT_MAX };

struct rp_report_opts {
    enum rp_sort sort;
    uint32_t limit;                  /* rows to print, 0 = all */
    int ranked;                      /* rank/standing/involvement are filled */
    int flagged;                     /* flags are filled */
    const struct rp_flag_opts *flag; /* thresholds, for the "why" lines */
    int color;                       /* the table may use ANSI colours */
    int chains;                      /* pass-through chains: one table row each, marked in
                                        the JSON (analyze/chains.h); needs flagged */
    uint32_t width;                  /* the table's line width: 0 = the terminal's, else
                                        $COLUMNS, else 120; RP_WIDTH_WIDE = no limit */
};

#define RP_WIDTH_WIDE UINT32_MAX

/*
 * Each returns 0, or RP_EIO when writing to out fails (checked with ferror at
 * the end), or RP_ENOMEM.
 */
int rp_report_table(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o);
int rp_report_json(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o);
int rp_report_csv(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o);

/*
 * Fills order[] (p->n_nodes - 1 entries: node indices >= 1) sorted by o->sort,
 * descending, ties by name.  Nodes with no calls are left out; returns the count.
 */
uint32_t rp_report_order(const struct rp_profile *p, enum rp_sort sort, uint32_t *order);

/*
 * The rows every format prints: a malloc'd array of node indices in o->sort
 * order, *n_rows of them after o->limit (and *n_all before it, if not NULL).
 * Returns NULL when out of memory.
 */
uint32_t *rp_report_rows(const struct rp_profile *p, const struct rp_report_opts *o,
                         uint32_t *n_rows, uint32_t *n_all);

#endif /* RP_REPORT_REPORT_H */

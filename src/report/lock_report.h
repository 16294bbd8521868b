// SPDX-License-Identifier: MIT
/*
 * lock_report.h - the lock profile (analyze/lockprof.h) as `rankprof
 * locks` prints it: a table, or JSON.
 */
#ifndef RP_REPORT_LOCK_REPORT_H
#define RP_REPORT_LOCK_REPORT_H

#include <stdio.h>

#include "analyze/lockprof.h"

/* Prints the table / JSON of the lock profile.  Return 0 or RP_EIO. */
int rp_locks_table(FILE *f, const struct rp_locks *L, const struct rp_profile *p);
int rp_locks_json(FILE *f, const struct rp_locks *L, const struct rp_profile *p);

#endif /* RP_REPORT_LOCK_REPORT_H */

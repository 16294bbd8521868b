// SPDX-License-Identifier: MIT
/*
 * sites.h - the recorder's side of profile points (sites.c): describing a
 * site for the trace's DEFS, and what direct mode needs to know about the
 * two-record events (instants and counters).
 */
#ifndef RP_RECORD_SITES_H
#define RP_RECORD_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "trace/writer.h"

/*
 * Fills out (kind, class, name, file, line, budget in ticks) for the site
 * whose address is `site`.  Returns 0, or -1 when the address is not a site
 * of any registered module (a corrupt record, or a module unloaded since),
 * so the encoder skips the record.  Takes the registry lock: writer thread,
 * once per site.
 */
RP_HIDDEN int rp_sites_describe(uint64_t site, struct rp_def *out);

/*
 * The value of the INSTANT or COUNTER raw word being passed to
 * rp_append_slow() by sites.c (in trace mode the value travels in the DATA
 * record that follows; direct mode, which never buffers, reads it here).
 */
RP_HIDDEN extern __thread uint64_t rp_site_data;

/*
 * Copies the class mask (rp_rt.mask) into every registered site's `off`
 * byte (bit RP_OFF_CLASS), so that the macros' one inline test covers a
 * switched-off class too.  Called after every change of the mask by
 * rp_classes_set() and at start-up; takes the registry lock.
 */
RP_HIDDEN void rp_sites_sync_classes(void);

/*
 * The next rule of a RANKPROF_FILTER string (comma-separated globs, "-glob"
 * excludes), shared by sites.c and funcs.c: copies the glob to pat (cap
 * bytes), sets *on (0 for an exclude) and advances *s past it.  Returns 1,
 * 0 at the end (empty rules are skipped), or -1 for a glob of cap bytes or
 * more (skipped; the caller warns).
 */
RP_HIDDEN int rp_filter_next(const char **s, char *pat, size_t cap, int *on);

#endif /* RP_RECORD_SITES_H */

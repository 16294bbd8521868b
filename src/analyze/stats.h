// SPDX-License-Identifier: MIT
/*
 * stats.h - loading direct-mode STATS chunks (src/trace/format.h) into a
 * profile, so that every analysis works on a direct-mode run as on a trace.
 */
#ifndef RP_ANALYZE_STATS_H
#define RP_ANALYZE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

struct rp_chunk;
struct rp_emap;

/*
 * Adds the records of one STATS chunk to p: node statistics to the nodes
 * the DEFS chunks defined, edges, and thread totals to the threads the
 * THREAD chunks announced; edges through em, the index of p's edges while
 * they are counted (emap.h).  With only_tid non-zero, thread records of
 * other threads are skipped (node statistics are per process: they stay).
 * Returns 0, RP_ENOMEM, or RP_EFORMAT with a message naming the offset of
 * the bad record in err.
 */
int rp_stats_read(struct rp_profile *p, struct rp_emap *em, const struct rp_chunk *c,
                  uint32_t only_tid, char *err, size_t errsz);

/*
 * Adds one FCOUNT chunk (the calls of throttled functions that the recorder
 * counted and did not record, format.h) to the nodes' `throttled` counts:
 * each pair names a function by its code address; an address no function
 * node has is ignored (its calls cannot be shown anywhere).  With only_tid
 * non-zero, a chunk of another thread is skipped.  Returns 0, or
 * RP_EFORMAT (with the chunk's offset in err) when the payload is not a
 * header and whole pairs.  Sorts a copy of the function keys per chunk:
 * O(nodes log nodes) per thread that had throttled calls.
 */
int rp_fcount_read(struct rp_profile *p, const struct rp_chunk *c, uint32_t only_tid, char *err,
                   size_t errsz);

#endif /* RP_ANALYZE_STATS_H */

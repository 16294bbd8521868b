// SPDX-License-Identifier: MIT
/*
 * live.h - reading a trace while it is written (`rankprof top` on a
 * process that records a trace): each update reads only the whole chunks
 * written since the last one, and a snapshot gives the profile of the file
 * so far, exactly as rp_replay_file of the same bytes would, without
 * ending the reading (live.c says how).
 */
#ifndef RP_ANALYZE_LIVE_H
#define RP_ANALYZE_LIVE_H

#include <stddef.h>

#include "profile.h"
#include "replay.h"

struct rp_live;

/*
 * Opens a live reading of the trace at path with the replay options o
 * (copied; a filter in o must outlive the reading), and reads what is
 * written of it so far.  Returns 0 and sets *out, or a negative RP_E* code
 * with err naming the file (cannot open it, not a trace, a damaged chunk,
 * out of memory); *out is then NULL.
 */
int rp_live_open(struct rp_live **out, const char *path, const struct rp_replay_opts *o, char *err,
                 size_t errsz);

/*
 * Reads the whole chunks written since the last update (a chunk still
 * being written is read by a later one).  Returns 0, or a negative RP_E*
 * code with err naming the file and offset (a damaged chunk, out of
 * memory, the file cannot be read): the reading cannot go on, close it.
 */
int rp_live_update(struct rp_live *l, char *err, size_t errsz);

/*
 * Calls fn(ctx, p) with the profile of what the updates read, finished as
 * rp_replay_file finishes a file (open spans ended at their thread's last
 * event, the warnings of a file being written), and not yet named, ranked
 * nor flagged: fn does what it needs (its own changes to p are lost).  The
 * reading goes on.  fn runs in a child process (fork: a copy on write of
 * the reading's state, which finishing destroys) and its output must go to
 * files or streams (stdio is flushed before and after).  Returns fn's
 * result (0, or < 0: an RP_E* code), or RP_ENOMEM (no process could be
 * made) or RP_EIO (the child died: err says how, and also holds the
 * finish's own error).
 */
int rp_live_snapshot(struct rp_live *l, int (*fn)(void *ctx, struct rp_profile *p), void *ctx,
                     char *err, size_t errsz);

/* Whether the reading has fallen back to reading the whole file at each
 * snapshot (a rotated set, a file replaced).  Cannot fail. */
int rp_live_rereads(const struct rp_live *l);

/* Ends a live reading and frees it (NULL: nothing).  Cannot fail. */
void rp_live_close(struct rp_live *l);

#endif /* RP_ANALYZE_LIVE_H */

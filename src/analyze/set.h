// SPDX-License-Identifier: MIT
/*
 * set.h - the trace files one run produced (docs/robustness.md, "One file
 * per process"): the file a run was recorded to (NAME) and the NAME.PID and
 * NAME.PID.N files of its other processes, found beside it.
 *
 * A file NAME.PID[.N] in NAME's directory belongs to NAME's run when
 *   - both carry the same INFO "run" id (the recorder's: made by the run's
 *     first process and inherited by its children, fork or exec), or
 *   - their recording intervals overlap, each from the wall-clock time of
 *     its first CLOCK chunk to that of its last (written at the process's
 *     exit), or to the file's last modification when it has only one: the
 *     processes of a launcher (mpirun, a shell's worker pool) that did not
 *     inherit the mark but ran at the same time.
 * Any other such file is left out and named, with the reason, in the set's
 * list of skipped files: an older run's (it ended before NAME's began, or
 * began after NAME's ended), or a file that is not a readable trace.
 *
 * A direct-mode trace without END beside its recorder's checkpoint of the
 * same process (FILE + RP_CTL_CKPT_SUFFIX: the process was killed or still
 * runs) is read as that checkpoint, and the set's notes say so.
 */
#ifndef RP_ANALYZE_SET_H
#define RP_ANALYZE_SET_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"

struct rp_set_file {
    struct rp_proc who; /* file, run, host, pid, ppid, start_ns (owned) */
    uint64_t end_ns;    /* ns since the epoch: its last CLOCK chunk's wall-clock time, or
                           without one after the first, the file's last modification */
};

struct rp_set {
    struct rp_set_file *files; /* files[0] is NAME; the rest by start time, then name */
    uint32_t n, cap;
    char **skipped; /* "FILE: why" for every NAME.PID file left out */
    uint32_t n_skipped, cap_skipped;
    char **notes; /* a file read in another's place (a direct-mode checkpoint), and why */
    uint32_t n_notes, cap_notes;
};

/*
 * Reads what says which process and run a trace file is: INFO pid, ppid,
 * run and host and the first CLOCK chunk's wall-clock time (only the chunks
 * before the first THREAD or EVENTS), and when it ended: the last CLOCK
 * chunk's wall-clock time (only chunk headers are read to find it), else
 * the file's modification time.
 * Fills f (f->who.file is a copy of path).  Best effort: a damaged chunk
 * ends the probe with what was read.  Returns 0, RP_ENOMEM, or the
 * reader's negative RP_E* code when the file cannot be opened as a trace
 * (err names the file and says why).
 */
int rp_set_probe(const char *path, struct rp_set_file *f, char *err, size_t errsz);

/*
 * Finds the set of name (see the top): name itself, then its siblings.  A
 * name that cannot be opened as a trace is the set alone (reading it says
 * why).  Returns 0, or RP_ENOMEM with err naming the file; *s must be
 * freed with rp_set_free in all cases.
 */
int rp_set_find(const char *name, struct rp_set *s, char *err, size_t errsz);

/*
 * Adds path to s as given (no rule applied), probed.  Returns 0; 1 when it
 * cannot be opened as a trace (it is added all the same, without its
 * identity: reading it says why); or RP_ENOMEM.
 */
int rp_set_add(struct rp_set *s, const char *path, char *err, size_t errsz);

/* Frees what s owns and zeroes it. */
void rp_set_free(struct rp_set *s);

#endif /* RP_ANALYZE_SET_H */

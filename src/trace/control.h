// SPDX-License-Identifier: MIT
/*
 * control.h - the control page of a recorded process (docs/services.md):
 * a small file the recorder keeps mapped, shared, at RP_CTL_DIR/rankprof.PID
 * while the process runs, through which `rankprof ctl` finds the process's
 * recorder and sees its state.  Commands go the other way as a queued
 * signal (sigqueue) whose value is an RP_CTL_* command; a plain signal
 * (kill) switches recording over.
 *
 * The recorder writes the page (its signal handler, the recorder's
 * start-up); readers only read it.  seq changes after each command is done,
 * so a reader that saw seq before sending knows when its command took.
 *
 * In direct mode two more commands ask for the statistics so far, written
 * by a thread of the recorder as a complete direct-mode trace file (the
 * trace format is their versioned layout): RP_CTL_PUBLISH to
 * RP_CTL_DIR/rankprof.PID.stats (what `rankprof top` reads), RP_CTL_SNAPSHOT
 * to the trace's name with RP_CTL_SNAP_SUFFIX.  Each file is written whole
 * and renamed into place; `snaps` counts the files written, so a reader
 * that saw it before asking knows when its file is there.  In trace mode
 * with a flight recorder (`ring` not 0), RP_CTL_SNAPSHOT writes the events
 * kept as a trace, to the trace's name with RP_CTL_SNAP_SUFFIX and the
 * number N of the snapshot (`snaps` after it: triggers write snapshots
 * too).  Unasked, the same thread writes the statistics every
 * RANKPROF_CHECKPOINT_MS to the trace's name with RP_CTL_CKPT_SUFFIX, and the
 * recorder removes that file once the trace itself holds the statistics: a
 * checkpoint beside a direct-mode trace is what a process killed (SIGKILL)
 * or still running left, which readers take instead of the trace.
 */
#ifndef RP_TRACE_CONTROL_H
#define RP_TRACE_CONTROL_H

#include <stdint.h>

#define RP_CTL_DIR     "/dev/shm"
#define RP_CTL_MAGIC   0x54435052u /* "RPCT" */
#define RP_CTL_VERSION 1
#define RP_CTL_PATH    4096

#define RP_CTL_SNAP_SUFFIX ".snap"
#define RP_CTL_CKPT_SUFFIX ".ckpt"

enum {
    RP_CTL_TOGGLE = 0,
    RP_CTL_START = 1,
    RP_CTL_STOP = 2,
    RP_CTL_PUBLISH = 3,
    RP_CTL_SNAPSHOT = 4
};

struct rp_ctl_page {
    uint32_t magic, version;
    uint32_t pid;
    int32_t signo;          /* the control signal; 0: none (the program has it) */
    uint32_t recording;     /* 1 while recording */
    uint32_t windows;       /* times recording was switched on, the start included */
    uint64_t seq;           /* commands done */
    uint64_t start_ns;      /* CLOCK_REALTIME when the recorder started */
    uint32_t direct;        /* direct mode */
    uint32_t snaps;         /* statistics files written (direct mode: PUBLISH, SNAPSHOT) */
    char path[RP_CTL_PATH]; /* the trace */
    uint64_t ring;          /* trace mode: the flight recorder's size in bytes (record
                               --ring), 0: none; RP_CTL_SNAPSHOT writes path.snapN, N
                               counted in snaps */
};

#endif /* RP_TRACE_CONTROL_H */

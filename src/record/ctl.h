// SPDX-License-Identifier: MIT
/*
 * ctl.h - recording switched on and off while the program runs (ctl.c,
 * docs/services.md): the control page and signal, and the edges of the
 * recording windows, which the writer applies to each thread's stream.
 */
#ifndef RP_RECORD_CTL_H
#define RP_RECORD_CTL_H

#include <stdint.h>

#include "rt.h"

/* An edge of a recording window: when recording was switched on or off. */
struct rp_win_edge {
    uint64_t ticks;
    uint8_t on;
};

/*
 * At start-up, after the trace is open: reads RANKPROF_START (on, the
 * default, or off) and RANKPROF_CTL_SIGNAL, makes the control page and
 * takes the signal.  mask is the classes to record; returns the mask to
 * start with (0 when started off).  Cannot fail: without a page or a
 * signal, recording is not switchable (a warning says why).
 */
RP_HIDDEN uint32_t rp_ctl_start(uint32_t mask);
/* Whether h is the control signal's handler.  Cannot fail. */
RP_HIDDEN int rp_ctl_owns(void (*h)(int, siginfo_t *, void *));

/* The edges published so far (acquire): *e points at them.  Any thread. */
RP_HIDDEN uint32_t rp_ctl_edges(const struct rp_win_edge **e);

/* The windows' INFO keys for the end of the run: "windows" (switched on,
 * counting the start) and "recorded_ns" (time switched on).  Not in a
 * signal handler. */
RP_HIDDEN void rp_ctl_info(void (*put)(void *ctx, const char *key, const char *val), void *ctx,
                           uint64_t end_ticks);

/* A statistics file asked for (RP_CTL_PUBLISH, RP_CTL_SNAPSHOT) is
 * written: counted in the page, for the reader waiting on it.  Cannot fail. */
RP_HIDDEN void rp_ctl_snap_done(void);

/* A forked child: its own page, no edges of the parent's. */
RP_HIDDEN void rp_ctl_atfork_child(void);

/* The end of the run: the page goes. */
RP_HIDDEN void rp_ctl_shutdown(void);

#endif /* RP_RECORD_CTL_H */

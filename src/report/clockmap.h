// SPDX-License-Identifier: MIT
/*
 * clockmap.h - one time axis for the files of a run (docs/multi-process.md
 * "Clocks: one time axis"), shared by every timeline: OTF2, chrome,
 * perfetto, the HTML report's timeline and `rankprof dump`.
 *
 * A file's ticks map to nanoseconds of CLOCK_MONOTONIC by linear
 * interpolation through that file's own CLOCK chunks (extrapolated along
 * the nearest segment outside them; at the profile's ns_per_tick with
 * fewer than two, or along a segment shorter than 10 ms, as the analyzer
 * measures durations), so that the processes of one host share the kernel's
 * one monotonic clock.  A file recorded with librankprof-mpi carries the
 * offsets of its monotonic clock to rank 0's (INFO clock_offset_init and
 * clock_offset_fini, "LOCAL_NS OFFSET_NS RTT_NS"): on another host than
 * rank 0's they are added, interpolated linearly in time between the two
 * measurements, which puts the file on rank 0's axis ("auto"; "on" adds
 * them on every host, "off" never).
 *
 * The axis's origin is the run's first event: the earliest of the files'
 * first events, each mapped (rp_clockmap_origin), so that times since it
 * are never negative.
 */
#ifndef RP_REPORT_CLOCKMAP_H
#define RP_REPORT_CLOCKMAP_H

#include <stddef.h>
#include <stdint.h>

#include "analyze/profile.h"

/* One file's clock. */
struct rp_clockmap_file {
    uint64_t *tk, *ns; /* its CLOCK chunks' (ticks, monotonic ns), by ticks */
    double *slope;     /* per segment [i, i+1]: ns per tick */
    uint32_t n, cap;
    int64_t off_at[2], off[2]; /* librankprof-mpi's offsets to rank 0 (n_off) */
    int n_off, apply;          /* apply: add them */
    uint64_t first;            /* its first event's ticks (0: unknown) */
    char host[64];             /* INFO "host", "" when absent */
    int has_rank;
    uint32_t rank; /* INFO "rank" */
};

struct rp_clockmap {
    struct rp_clockmap_file *f;
    uint32_t n, cur;         /* cur: the file whose ticks rp_clockmap_ns maps */
    double ns_per_tick;      /* for the files without two CLOCK chunks */
    double origin;           /* the axis's 0, in mapped ns */
    int64_t real_minus_mono; /* CLOCK_REALTIME - CLOCK_MONOTONIC of the first
                                file's first CLOCK chunk (have_real) */
    int have_real;
};

/*
 * Reads the clocks of the n files at paths (CLOCK chunks, INFO host, rank
 * and clock offsets, and the EVENTS chunks' base ticks for each file's
 * first event; one seek per chunk), and applies offsets: NULL or "auto",
 * "on", "off".  A file that cannot be read, or a damaged chunk, leaves the
 * file with what was read (the walk over it says why).  Returns 0,
 * RP_ENOMEM, or RP_EINVAL for another offsets value (err says so).
 */
int rp_clockmap_open(struct rp_clockmap *m, const char *const *paths, uint32_t n,
                     double ns_per_tick, const char *offsets, char *err, size_t errsz);

/*
 * rp_clockmap_open for the files of profile p (p->procs, else input alone),
 * each file's first event that of its process's threads in p (of p for
 * one file).  Fails as rp_clockmap_open.
 */
int rp_clockmap_profile(struct rp_clockmap *m, const struct rp_profile *p, const char *input,
                        const char *offsets, char *err, size_t errsz);

/* Sets file k's first event at ticks (when a replay knows it better than
 * the EVENTS chunks' bases) and recomputes the origin.  Cannot fail. */
void rp_clockmap_origin(struct rp_clockmap *m, uint32_t k, uint64_t ticks);

void rp_clockmap_free(struct rp_clockmap *m);

/* Ticks of file m->cur on the axis: ns of rank 0's (or the host's)
 * monotonic clock.  Cannot fail. */
double rp_clockmap_map(const struct rp_clockmap *m, uint64_t ticks);

/* rp_clockmap_map, inline for the usual file (two CLOCK chunks, no
 * offset): it runs per event. */
static inline double rp_clockmap_abs(const struct rp_clockmap *m, uint64_t ticks)
{
    const struct rp_clockmap_file *f = m->n ? &m->f[m->cur] : NULL;
    if (f && f->n == 2 && !f->apply)
        return (double)f->ns[0] + ((double)ticks - (double)f->tk[0]) * f->slope[0];
    return rp_clockmap_map(m, ticks);
}

/* The file whose ticks follow (k < m->n; others are ignored). */
static inline void rp_clockmap_select(struct rp_clockmap *m, uint32_t k)
{
    if (k < m->n)
        m->cur = k;
}

/* Ticks of file m->cur in ns since the run's first event (0 before it).
 * Cannot fail. */
static inline double rp_clockmap_ns(const struct rp_clockmap *m, uint64_t ticks)
{
    double v = rp_clockmap_abs(m, ticks) - m->origin;
    return v > 0 ? v : 0;
}

/*
 * rp_clockmap_ns of file m->cur, its constants converted once: a loop over
 * every event keeps one (rp_clockmap_fast_init after rp_clockmap_select)
 * and rp_clockmap_fast_ns gives the same double as rp_clockmap_ns, without
 * converting 64-bit unsigned integers per event, and for a file of many
 * CLOCK chunks without searching them per event: the segment between two
 * chunks that the last event fell in is kept, [lo, hi) in ticks.
 */
struct rp_clockmap_fast {
    int linear; /* a file of CLOCK chunks and no offset, else m is asked */
    const struct rp_clockmap_file *f;
    uint64_t lo, hi; /* the segment kept: ticks in [lo, hi) map by the constants below */
    double ns0, tk0, slope, origin;
};

/* The segment [i, i + 1] of f's CLOCK chunks (f->n >= 2) that holds
 * ticks, or the nearest one.  Cannot fail. */
static inline uint32_t rp_clockmap_seg(const struct rp_clockmap_file *f, uint64_t ticks)
{
    uint32_t lo = 0, hi = f->n - 1;
    while (hi - lo > 1) {
        uint32_t mid = (lo + hi) / 2;
        if (f->tk[mid] <= ticks)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Keeps the segment of q->f that ticks falls in (rp_clockmap_seg, as
 * clockmap.c maps).  Cannot fail. */
static inline void rp_clockmap_fast_seg(struct rp_clockmap_fast *q, uint64_t ticks)
{
    const struct rp_clockmap_file *f = q->f;
    uint32_t lo = rp_clockmap_seg(f, ticks);
    q->lo = lo == 0 ? 0 : f->tk[lo];
    q->hi = lo + 2 == f->n ? UINT64_MAX : f->tk[lo + 1];
    q->ns0 = (double)f->ns[lo];
    q->tk0 = (double)f->tk[lo];
    q->slope = f->slope[lo];
}

static inline void rp_clockmap_fast_init(const struct rp_clockmap *m, struct rp_clockmap_fast *q)
{
    const struct rp_clockmap_file *f = m->n ? &m->f[m->cur] : NULL;
    q->linear = f && f->n >= 2 && !f->apply;
    q->f = f;
    q->origin = m->origin;
    if (q->linear)
        rp_clockmap_fast_seg(q, 0);
}

static inline double rp_clockmap_fast_ns(const struct rp_clockmap *m, struct rp_clockmap_fast *q,
                                         uint64_t ticks)
{
    if (__builtin_expect(!q->linear || ticks >> 63, 0))
        return rp_clockmap_ns(m, ticks);
    if (__builtin_expect(ticks < q->lo || ticks >= q->hi, 0))
        rp_clockmap_fast_seg(q, ticks);
    /* (ticks below 2^63: the signed conversion is one instruction, same value) */
    double v = q->ns0 + ((double)(int64_t)ticks - q->tk0) * q->slope - q->origin;
    return v > 0 ? v : 0;
}

#endif /* RP_REPORT_CLOCKMAP_H */

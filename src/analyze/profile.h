// SPDX-License-Identifier: MIT
/*
 * profile.h - the analyzer's model of one recorded run: nodes (every span id
 * seen: functions, points, locks, devices), caller->callee edges, threads and
 * the run's metadata.  Built by the replay (load.c, replay.c) from a trace,
 * or loaded from a direct-mode file, then named (symbols.c), ranked
 * (rank.c), flagged (flags.c) and printed (src/report/).
 *
 * Invariants, once rp_profile_finish() has run:
 *   - nodes[0] is ROOT; nodes[i] for i >= 1 is trace id i (ids are dense);
 *   - for every node: incl counts only the outermost activation on a stack,
 *     dur_sum counts every activation, excl = dur_sum - time spent in callees;
 *     so excl <= dur_sum and, without recursion, incl == dur_sum;
 *   - edges[] is unique per (caller, callee); caller 0 is "<root>";
 *   - all times are ticks; multiply by ns_per_tick for nanoseconds.
 */
#ifndef RP_ANALYZE_PROFILE_H
#define RP_ANALYZE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

#include "histwin.h"
#include "trace/format.h"

/* Flags of docs/design.md §7, a bit each in rp_node.flags. */
enum {
    RP_FLAG_DISPATCH = 1u << 0,
    RP_FLAG_HOT = 1u << 1,
    RP_FLAG_JITTER = 1u << 2,
    RP_FLAG_RATE = 1u << 3,
    RP_FLAG_CONTENDED = 1u << 4,
    RP_FLAG_BUDGET = 1u << 5,
};

/* The distributions the flags judge (flags.c), of a node that has any. */
struct rp_flag_hists {
    struct rp_hist own; /* own on-CPU time per activation (duration less the time in its
                           callees, off-CPU time and waits among them) of a node whose spans
                           had callee time; counts NULL where hist is it (every span a leaf).
                           own.n: the activations counted; one that began in an earlier
                           chunk is not (only part of its callee time is known there).
                           JITTER judges it */
    struct rp_hist ivl; /* intervals between the starts of consecutive outermost activations
                           on one thread (within one chunk), for RATE's period; counts NULL
                           when none was seen or aperiodic is set */
    uint8_t aperiodic;  /* its intervals spread over more than RP_IVL_OCTAVES octaves: no
                           period (ivl is then dropped) */
};

/*
 * The statistics of a node that most nodes have at their defaults (a node
 * called once, or only on CPU, with no budget, no callees...): kept apart,
 * in rp_node.x, allocated only for a node where one differs from its
 * default.  Read them through rp_node_x_get or the accessors below (which
 * give the default without x), write them through rp_node_x_set.
 *
 * The defaults (rp_node_x_default) are those of a node of one span (called
 * once, not an instant or a counter: rp_node_one), from its calls, incl and
 * below1: its one span's duration is incl (one activation is its
 * outermost), so dur_sum, max and, unless below1 says it was below the
 * resolution, min are incl and the histogram counts it in its bucket; any
 * other node has them at 0 and empty (dur_sum: incl) and, having spans,
 * keeps them apart.
 */
struct rp_node_x {
    uint64_t dur_sum;      /* every activation; default incl */
    uint64_t min, max;     /* of the durations: min of the spans in the histogram (0 when none
                              is), max of every span; defaults incl for one span (min: 0 when
                              below1), else 0 */
    struct rp_hist hist;   /* the durations not below the resolution (owned counts); default
                              incl's bucket with one count for one span (no count when below1:
                              its window alone), else empty */
    uint64_t budget;       /* ticks; 0 = none (direct-mode points) */
    uint64_t overruns;     /* activations longer than budget */
    uint64_t throttled;    /* calls counted, not recorded (the recorder's throttle);
                              not in calls: every statistic is of recorded calls */
    uint64_t cut;          /* activations (in calls) not ended by their own exit: ended where the
                              stack was seen to leave them (a longjmp, an exception, the thread's
                              or the process's end), with their time up to there */
    uint64_t below_res;    /* spans shorter than the profile's resolution: in calls, dur_sum
                              and the mean, not in min, the histogram or the percentiles.
                              Default: calls less hist.n (0 for instants and counters) */
    uint64_t offcpu;       /* ticks off CPU in its own frame: the incl of its edges to the
                              off-CPU node (format 1.3); part of incl, not of excl */
    uint64_t offcpu_below; /* ticks off CPU or in waits (spans of kind offcpu, wait,
                              lock-wait) anywhere below its activations, summed */
    uint64_t oncpu_min, oncpu_max; /* the smallest and largest on-CPU duration: an
                              activation's duration less the off-CPU and wait time below it (in
                              every chunk it ran in); min, max, mean, m2 and hist stay of
                              wall durations.  Defaults min and max */
    uint64_t run_max;              /* the largest duration less the time its thread was preempted
                                      below it (off CPU outside any wait, in every chunk it ran in):
                                      waits count, the scheduler's delays do not.  RATE judges it
                                      (a replayed trace; direct mode: max).  Default max */
    double mean, m2;               /* Welford over activation durations; defaults dur_sum / calls
                                      (0 without calls, and for instants and counters) and 0 */
    /* Filled by flags.c. */
    double fanout;            /* exp(entropy of the callee shares in its calls to others) */
    double fanout_time;       /* exp(entropy of the callee shares in its time handed on) */
    double blocked;           /* ticks in edges to off-CPU time, waits, lock waits and
                                 holds: not work handed on (flags.c, DISPATCH) */
    struct rp_flag_hists *fh; /* owned, NULL when it has neither: the flags'
                                 distributions (a replayed trace); kept by
                                 rp_node_x_set and rp_node_x_setraw, which set
                                 the statistics only (rp_node_fhw makes it) */
};

struct rp_node {
    uint32_t id;    /* trace id; 0 is ROOT */
    uint8_t kind;   /* enum rp_kind */
    uint8_t cls;    /* enum rp_class */
    uint8_t flags;  /* RP_FLAG_* (flags.c) */
    uint8_t below1; /* 1: called once, its one span below the resolution (not in the
                       histogram): the defaults of min and hist (rp_node_x_default); set
                       by rp_node_x_set */
    uint32_t line;  /* 0 if unknown */
    uint32_t rank;  /* 1 = most standing (rank.c) */
    uint64_t key;   /* code address for functions, lock address for locks */
    char *name;     /* owned; set by the DEFS chunk or by symbolization */
    char *file;     /* owned, may be NULL */
    char *module;   /* owned, may be NULL: the binary the address is in */

    uint64_t calls;      /* completed activations */
    uint64_t incl;       /* outermost activations only (no double count) */
    uint64_t excl;       /* dur_sum minus time in callees */
    struct rp_node_x *x; /* owned, NULL when all are at their defaults and the node has no
                            flags' distributions (rp_node_fh): read dur_sum, min, max and
                            the histogram through rp_node_dur_sum ... rp_node_hist */

    /* Filled by rank.c (and rank, flags above: beside kind and line, so
     * that no field is padding). */
    double pi; /* its stationary probability pi_i (0 for instants and counters, 1 for ROOT)
                  once ranked, else 0: read its standing and involvement through
                  rp_node_standing and rp_node_involvement */
};
/* Every node of a profile is one: 1 M ids take 88 MB (docs/robustness.md,
 * "Memory"). */
_Static_assert(sizeof(void *) != 8 || sizeof(struct rp_node) == 88,
               "struct rp_node: 88 bytes on a 64-bit target (docs/robustness.md)");

/* Whether n's defaults are those of one span (rp_node_x_default): called
 * once, and not an instant or a counter (which have no duration).  Cannot
 * fail. */
static inline int rp_node_one(const struct rp_node *n)
{
    return n->calls == 1 && n->kind != RP_KIND_INSTANT && n->kind != RP_KIND_COUNTER;
}

/* n's duration histogram when it has none apart: the one bucket of incl
 * for a node of one span (its count 0 when below1), else empty.  Cannot
 * fail. */
static inline struct rp_hist rp_node_hist_default(const struct rp_node *n)
{
    struct rp_hist h = {0};
    if (rp_node_one(n)) {
        h.lo = (uint16_t)rp_hist_index(n->incl);
        h.len = 1;
        h.one = h.n = !n->below1;
    }
    return h;
}

/* n's rare statistics (struct rp_node_x) when it has none apart: their
 * defaults, from its other fields (calls, incl, kind, below1).  Cannot
 * fail. */
static inline struct rp_node_x rp_node_x_default(const struct rp_node *n)
{
    struct rp_node_x v = {0};
    v.dur_sum = n->incl;
    if (rp_node_one(n)) {
        v.max = n->incl;
        v.min = n->below1 ? 0 : n->incl;
    }
    v.hist = rp_node_hist_default(n);
    v.oncpu_min = v.min;
    v.oncpu_max = v.run_max = v.max;
    if (n->calls && n->kind != RP_KIND_INSTANT && n->kind != RP_KIND_COUNTER) {
        v.mean = (double)v.dur_sum / (double)n->calls;
        v.below_res = n->calls > v.hist.n ? n->calls - v.hist.n : 0; /* (calls less hist.n) */
    }
    return v;
}

/* n's flags' distributions, NULL when it has none.  Cannot fail. */
static inline struct rp_flag_hists *rp_node_fh(const struct rp_node *n)
{
    return n->x ? n->x->fh : NULL;
}

/* n's flags' distributions, allocated (empty) if it has none, and with them
 * its rare statistics apart if not yet: raw (while a replay is read: see
 * rp_node_x_raw) their sums so far, else their defaults.  Returns NULL when
 * out of memory (n unchanged). */
struct rp_flag_hists *rp_node_fhw(struct rp_node *n, int raw);

/* n's rare statistics, apart or their defaults.  Cannot fail. */
static inline struct rp_node_x rp_node_x_get(const struct rp_node *n)
{
    return n->x ? *n->x : rp_node_x_default(n);
}

/*
 * Sets n's rare statistics to v (not v->fh: n's flags' distributions stay),
 * and n->below1 (a node called once whose histogram counts nothing): kept
 * apart (n->x allocated) only when one differs from its default given n's
 * other fields, or n has flags' distributions, so set them after those.
 * v->hist's counts are n's from then on (n's former counts are not freed:
 * v's come from them, through rp_node_x_get); one bucket's count is kept in
 * the struct.  Returns 0, or RP_ENOMEM with n unchanged and v->hist's
 * counts freed (it fails only for a node that had none apart, whose
 * counts v's are not).
 */
int rp_node_x_set(struct rp_node *n, const struct rp_node_x *v);

/* n's rare statistics apart, to write one at a time: allocated with their
 * defaults (given n's other fields now) when n has none.  Returns NULL when
 * out of memory. */
struct rp_node_x *rp_node_xw(struct rp_node *n);

/*
 * While a replay or a direct-mode file is read (before rp_replay_finish), x
 * holds the sums so far instead: NULL means every field 0 but oncpu_min and
 * min (UINT64_MAX: none yet).  rp_node_x_raw reads them, rp_node_x_setraw
 * writes them (allocating x unless they are all so); rp_replay_finish turns
 * them into the final fields.  rp_node_x_setraw returns 0, or RP_ENOMEM
 * with n unchanged.
 */
static inline struct rp_node_x rp_node_x_rawdef(void)
{
    return (struct rp_node_x){.oncpu_min = UINT64_MAX, .min = UINT64_MAX};
}
static inline struct rp_node_x rp_node_x_raw(const struct rp_node *n)
{
    return n->x ? *n->x : rp_node_x_rawdef();
}
int rp_node_x_setraw(struct rp_node *n, const struct rp_node_x *v);

/* The fields of struct rp_node_x, one at a time.  Cannot fail. */
#define RP_NODE_X_ZERO(field, type)                                                                \
    static inline type rp_node_##field(const struct rp_node *n)                                    \
    {                                                                                              \
        return n->x ? n->x->field : 0;                                                             \
    }
RP_NODE_X_ZERO(budget, uint64_t)
RP_NODE_X_ZERO(overruns, uint64_t)
RP_NODE_X_ZERO(throttled, uint64_t)
RP_NODE_X_ZERO(cut, uint64_t)
RP_NODE_X_ZERO(offcpu, uint64_t)
RP_NODE_X_ZERO(offcpu_below, uint64_t)
RP_NODE_X_ZERO(m2, double)
RP_NODE_X_ZERO(fanout, double)
RP_NODE_X_ZERO(fanout_time, double)
RP_NODE_X_ZERO(blocked, double)
#undef RP_NODE_X_ZERO
static inline uint64_t rp_node_dur_sum(const struct rp_node *n)
{
    return n->x ? n->x->dur_sum : n->incl;
}
static inline uint64_t rp_node_min(const struct rp_node *n)
{
    return n->x ? n->x->min : rp_node_one(n) && !n->below1 ? n->incl : 0;
}
static inline uint64_t rp_node_max(const struct rp_node *n)
{
    return n->x ? n->x->max : rp_node_one(n) ? n->incl : 0;
}
static inline uint64_t rp_node_oncpu_min(const struct rp_node *n)
{
    return n->x ? n->x->oncpu_min : rp_node_min(n);
}
static inline uint64_t rp_node_oncpu_max(const struct rp_node *n)
{
    return n->x ? n->x->oncpu_max : rp_node_max(n);
}
static inline uint64_t rp_node_run_max(const struct rp_node *n)
{
    return n->x ? n->x->run_max : rp_node_max(n);
}
/* n's duration histogram: n's own, or its default (rp_node_hist_default)
 * written into *buf, which must outlive the use of what this returns.
 * Cannot fail. */
static inline const struct rp_hist *rp_node_hist(const struct rp_node *n, struct rp_hist *buf)
{
    if (n->x)
        return &n->x->hist;
    *buf = rp_node_hist_default(n);
    return buf;
}
static inline uint64_t rp_node_below_res(const struct rp_node *n)
{
    return n->x ? n->x->below_res : rp_node_x_default(n).below_res;
}
static inline double rp_node_mean(const struct rp_node *n)
{
    return n->x ? n->x->mean : rp_node_x_default(n).mean;
}

/* A node's spans outside the program's code (replay_int.h,
 * rp_span_outside: waits, lock waits, holds and time off CPU that no code
 * of the program makes): in no statistic of the node or its edges. */
struct rp_outside {
    uint32_t id; /* the node */
    uint64_t calls;
    uint64_t ticks;
};

struct rp_edge {
    uint32_t caller, callee; /* node indices; caller 0 = ROOT */
    uint64_t calls;
    uint64_t incl; /* summed durations of these calls (every activation) */
    uint64_t min, max;
    uint64_t incl_calls; /* activations in the subtrees under these calls, these calls
                            included (a replayed trace; see rp_profile.incl_calls_known) */
};

/* n's own-time histogram, its intervals between starts (NULL: none), and
 * whether they were too spread for a period.  Cannot fail. */
static inline const struct rp_hist *rp_node_own(const struct rp_node *n)
{
    const struct rp_flag_hists *fh = rp_node_fh(n);
    return fh && fh->own.len ? &fh->own : NULL;
}
static inline const struct rp_hist *rp_node_ivl(const struct rp_node *n)
{
    const struct rp_flag_hists *fh = rp_node_fh(n);
    return fh && fh->ivl.len ? &fh->ivl : NULL;
}
static inline int rp_node_aperiodic(const struct rp_node *n)
{
    const struct rp_flag_hists *fh = rp_node_fh(n);
    return fh && fh->aperiodic;
}

/* RATE's intervals (rp_flag_hists.ivl): wider than this many octaves is no period. */
#define RP_IVL_OCTAVES 8

struct rp_thread {
    uint32_t tid;
    char *name;           /* owned, may be NULL */
    uint64_t first, last; /* ticks of the first and last event */
    uint64_t events;
    uint64_t lost;            /* events the recorder dropped (LOST chunks) */
    uint64_t unmatched_exits; /* exits with no open span to match */
    uint64_t unclosed;        /* spans dropped without time (lost events) */
    uint64_t unwound;         /* spans ended where the stack unwound past them */
    uint64_t cut;             /* spans ended at the thread's end (still open then) */
    uint64_t paused;          /* ticks it waited for the recorder's writer (PAUSE events),
                                 taken out of every span open then (format 1.3) */
    uint32_t pid; /* its process, in a profile merged from a run's files (merge.h); else 0 */
};

/* One process of a profile merged from the files of a run (merge.h, set.h):
 * one trace file each. */
struct rp_proc {
    char *file; /* owned: the trace file */
    char *run;  /* owned, may be NULL: INFO "run" (the run's id) */
    char *host; /* owned, may be NULL: INFO "host" */
    uint32_t pid, ppid;
    uint64_t start_ns; /* CLOCK_REALTIME of its first CLOCK chunk; 0 if unknown */
    uint64_t events, lost;
    uint32_t threads;
    int ended; /* an END chunk was read, not after a fatal signal */
    /* what a second pass over its file needs (cct.h: rp_cct_build_set) */
    uint32_t *map; /* owned: its file's node index -> the merged node's (0: undefined) */
    uint32_t n_map;
    int overhead_known, end_read; /* its file's overhead_known and ended */
    double overhead_pair, overhead_self, overhead_spread;
    double clock_step; /* its file's (rp_profile.clock_step) */
    uint64_t end_ticks;
    uint32_t rank; /* INFO "rank": its MPI rank, when has_rank */
    int has_rank;
};

/* What the ranking weighs an edge and a node's own part by (docs/ranking.md). */
enum rp_weight {
    RP_WEIGHT_TIME,  /* time: its inclusive time, the node's exclusive time */
    RP_WEIGHT_CALLS, /* calls: the activations under its calls, the node's calls */
    RP_WEIGHT_CPU,   /* time on CPU: time, less the time off CPU and waiting below */
};

struct rp_rank_info {
    int weight; /* enum rp_weight */
    double alpha;
    uint32_t iterations;
    double residual;
    double rest;    /* the sum of pi over the spans but ROOT (0: none, or not ranked) */
    double pi_root; /* pi_ROOT (0: not ranked) */
};

/* Why the recorder dropped events: the INFO key is "lost_" and the name
 * rp_why_name gives (docs/trace-format.md). */
enum {
    RP_WHY_FULL,      /* no free buffer under the drop policy */
    RP_WHY_STOPPED,   /* after recording had stopped (exit, a fatal signal) */
    RP_WHY_FAILED,    /* writing the trace had failed */
    RP_WHY_NOMEM,     /* no memory for a buffer or a thread's state */
    RP_WHY_REENTERED, /* a signal handler's, while it interrupted the recorder */
    RP_WHY_GONE,      /* a thread's, after its state was released at its exit */
    RP_WHY_UNENCODED, /* records the writer could not encode */
    RP_WHY_N
};

/* The name of reason why ("full", "stopped", ...), NULL past the last. */
const char *rp_why_name(unsigned why);

struct rp_profile {
    /* run metadata, from INFO and CLOCK chunks */
    char *program;
    char *filter; /* owned, NULL = none: the span filters it was made through, as given
                     (docs/filters.md; set by the command line) */
    char *argv;   /* NUL-separated, argv_len bytes */
    size_t argv_len;
    uint32_t pid;
    char *clock_name;
    char *mode;
    double ns_per_tick;
    uint64_t first_tick, last_tick;
    int ended;          /* an END chunk was read */
    uint64_t end_ticks; /* its ticks: when exit() began the final flush or the fatal
                           signal arrived; where frames still open end.  0 for files
                           before format 1.3 (the ticks were the file's closing) */
    uint32_t end_flags; /* RP_END_* */
    int32_t end_status;

    struct rp_node *nodes; /* nodes[0] = ROOT */
    uint32_t n_nodes, cap_nodes;
    struct rp_edge *edges;
    uint32_t n_edges, cap_edges;
    struct rp_outside *outside; /* by id, the nodes that have any (outside_apart) */
    uint32_t n_outside;
    struct rp_thread *threads;
    uint32_t n_threads, cap_threads;

    uint64_t events; /* events replayed */
    uint64_t lost;   /* sum of threads' lost */
    uint64_t total;  /* ticks: sum over threads of (last - first) */
    char *maps;      /* text of the last MAPS chunk, owned */
    size_t maps_len;

    struct rp_rank_info rank;

    /* Overhead compensation (docs/performance.md): the recorder's measured
     * cost, from INFO, and whether replay subtracted it from every span. */
    int overhead_known;     /* the trace carries the measurement (format 1.2, trace mode) */
    double overhead_pair;   /* ticks one recorded call (enter + exit) adds around it */
    double overhead_self;   /* ticks of a span's own enter + exit inside it */
    int compensated;        /* applied: known and not switched off */
    uint64_t comp_clamped;  /* spans shorter than their overhead, counted as 0 */
    double overhead_spread; /* ticks: INFO overhead_spread_ticks (format 1.3), else 0 */
    /* The fastest of the recorder's measurements made while the program
     * ran (INFO overhead_late, up to three): 0 none, 1 made and slower than
     * the start-up one, 2 made and faster, so the one in
     * overhead_pair/self/spread; its pair. */
    int overhead_late;
    double overhead_late_pair;
    double clock_step;   /* ticks the recorder's counter moves by at once, not
                            always whole (INFO clock_step_ticks; 0 or 1: one tick) */
    uint64_t resolution; /* ticks: a span shorter than this is below resolution:
                            the clock's step, plus the spread when compensated
                            (comp.h) */
    uint64_t below_res;  /* spans below resolution, summed over the nodes */
    int hold_intervals;  /* lock holds are intervals off the stack (format 1.3,
                            docs/locks.md): the ranking gives them no time weight */
    int defs_only;       /* read with rp_replay_opts.defs_only: no span was replayed
                            (the nodes have no statistics), first_tick/last_tick are the
                            clocks' and the end's, every defined function is named */

    /* Off-CPU time (format 1.3, docs/recording.md): how the recorder knew it
     * ("perf", "schedstat", "none"; "" = not said: an older trace), why perf
     * was not used, switch records lost, intervals too late to place, and the
     * schedstat fallback's summed run-queue delay in ns. */
    char offcpu_src[16];
    char offcpu_err[64];
    uint64_t offcpu_lost, offcpu_late, offcpu_runq_ns;
    int offcpu_runq_known;
    /* Why the recorder dropped events (INFO lost_REASON keys, format 1.3),
     * by RP_WHY_*: every drop counted until the end was written, so the sum
     * may exceed `lost` by the drops after a thread's last LOST record. */
    uint64_t lost_why[RP_WHY_N];
    int lost_why_known; /* the trace said (0: an older trace) */
    /* Recording switched on and off while the program ran (rankprof ctl;
     * INFO windows, recorded_ns, window_exits): windows 0 when it was on
     * from start to end. */
    uint32_t windows;
    uint64_t recorded_ns;  /* time switched on */
    uint64_t window_exits; /* exits and releases of what began before a window, left out */
    /* A flight recorder's trace (record --ring; INFO ring_size, ring_dropped,
     * ring_run_ns, ring_triggers, ring_triggers_skipped, snapshot): ring_size
     * 0 when the whole run was recorded.  snapshot: why the file was written
     * ("exit", "signal N", "ctl", "trigger NAME ..."), NULL if not said. */
    uint64_t ring_size, ring_dropped, ring_run_ns, ring_triggers, ring_triggers_skipped;
    char *snapshot;
    /* The recorder's throttle timed 1 call in this many of the functions it
     * throttled (FCOUNT, format 1.3; 0: none, count only): their times are
     * of their first calls and that sample. */
    uint32_t throttle_sample;
    /* Statistics of a process still running (INFO running: `rankprof top`,
     * `rankprof ctl PID snapshot`): the calls open in a thread end at the
     * snapshot (a running thread's as of its engine's last run), cut. */
    int running;
    /* ... and written unasked, as the recorder's checkpoint (INFO
     * checkpoint: OUT.ckpt, read in place of a trace its process left
     * without statistics, killed or still running). */
    int checkpoint;
    /* The thread a fatal signal was delivered to (INFO fatal_tid; 0: none) and
     * its frames open then, outermost first: the innermost RP_FATAL_FRAMES of
     * fatal_depth (node indices). */
#define RP_FATAL_FRAMES 64
    uint32_t fatal_tid, fatal_depth, fatal_n;
    uint32_t fatal_stack[RP_FATAL_FRAMES];
    uint64_t paused;      /* ticks the threads waited for the recorder's writer, summed */
    int oncpu_known;      /* the nodes' oncpu_min / oncpu_max are set (a replayed trace) */
    int own_known;        /* the nodes' own and ivl histograms are set (a replayed trace) */
    int outside_apart;    /* spans outside the program's code are set apart (outside) */
    int incl_calls_known; /* the edges' incl_calls are set (a replayed trace); else
                             --weight calls weighs an edge by its direct calls */

    char warn[1024];                    /* problems that did not stop the analysis, one per line */
    uint64_t skipped_chunks;            /* damaged chunks skipped under --force */
    uint64_t pieces_deleted;            /* pieces of a rotated trace (record --max-size)
                                           deleted before the oldest read: NAME.part1 up to it */
    uint64_t unmatched_exits, unclosed; /* sums over threads */
    uint64_t unwound, cut;              /* sums over threads (rp_thread) */
    uint32_t folded; /* function nodes folded into one of the same name, file, line and
                        module: copies of an inline function (rp_merge_fold) */

    void *priv; /* the replay's state while rp_replay_file runs (replay_int.h); NULL after */

    /* The processes a merged profile holds (merge.h), in the order merged;
     * NULL and 0 for a profile of one file. */
    struct rp_proc *procs;
    uint32_t n_procs, cap_procs;

    struct rp_strpool *strs; /* owned, NULL when empty: the arena some node names,
                                files and modules are in (rp_profile_strndup) */
};

/* Whether p's run ended normally by a call that gave its exit status
 * (exit, _exit, _Exit, quick_exit: END flag RP_END_STATUS); not after a
 * return from main, whose status the recorder does not see.  Cannot fail. */
static inline int rp_profile_status_known(const struct rp_profile *p)
{
    return p->ended && (p->end_flags & RP_END_EXIT) && (p->end_flags & RP_END_STATUS);
}

/* Whether spans of this kind are time that is no work of the program's:
 * off CPU, a blocking call, a lock wait, a lock hold (an interval beside
 * the calls, not in its acquirer's time partition).  Cannot fail. */
static inline int rp_kind_idle(uint8_t kind)
{
    return kind == RP_KIND_OFFCPU || kind == RP_KIND_WAIT || kind == RP_KIND_LOCK_WAIT ||
           kind == RP_KIND_LOCK_HOLD;
}

/* All on-CPU time: the own time of every node that is work (HOT's and
 * the hints' denominator).  Cannot fail. */
static inline double rp_oncpu_total(const struct rp_profile *p)
{
    double t = 0.0;
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (!rp_kind_idle(p->nodes[i].kind))
            t += (double)p->nodes[i].excl;
    return t;
}

/* The share of node n's time (every activation) that was on CPU: less the
 * time off CPU and waiting anywhere below its activations; 1 when that is
 * not known (direct mode) or n took no time.  Cannot fail. */
static inline double rp_node_oncpu_share(const struct rp_profile *p, const struct rp_node *n)
{
    uint64_t all = rp_node_dur_sum(n), below = rp_node_offcpu_below(n);
    if (!p->oncpu_known || !all)
        return 1.0;
    return below >= all ? 0.0 : 1.0 - (double)below / (double)all;
}

/*
 * A NUL-terminated malloc'd copy of the n bytes at s for display: every
 * text from a trace or a binary's symbols goes through it, so that no
 * output (table, graph, locks, info, dump, CSV, folded stacks, callgrind,
 * pprof, JSON, ...) can carry a control byte to a terminal or a parser.
 * Bytes 0x00-0x1f and 0x7f, C1 controls (U+0080-U+009F) and bytes of
 * invalid UTF-8 become "\xNN" (one per byte); with keep_nul, NUL bytes
 * stay (argv's separators).  *outlen (when not NULL) is the copy's length.
 * Returns NULL when out of memory.
 */
char *rp_text_dup(const void *s, size_t n, int keep_nul, size_t *outlen);

/* Node id's spans outside the program's code, or NULL when it has none.
 * Cannot fail. */
const struct rp_outside *rp_node_outside(const struct rp_profile *p, uint32_t id);

/* Returns a node's name, never NULL ("<root>", the name, or "0x<addr>"). */
const char *rp_node_name(const struct rp_profile *p, const struct rp_node *n, char *buf,
                         size_t bufsz);

/*
 * A NUL-terminated copy of the n bytes at s in p's string arena, for a
 * node's name, file or module: a few bytes more than the string, not a
 * malloc block each; with intern, one copy per distinct string (files and
 * modules repeat).  Such a string is freed with the profile, never with
 * free(): replace one through rp_profile_strfree.  Returns NULL when out of
 * memory.
 */
char *rp_profile_strndup(struct rp_profile *p, const char *s, size_t n, int intern);

/* Frees s (NULL, malloc'd, or in p's arena, which keeps it).  Cannot fail. */
void rp_profile_strfree(struct rp_profile *p, char *s);

/* Node n of p's standing: its pi with ROOT removed, renormalised over the
 * spans (0 for ROOT, instants and counters, and before the ranking).
 * Cannot fail. */
static inline double rp_node_standing(const struct rp_profile *p, const struct rp_node *n)
{
    return n != p->nodes && p->rank.rest > 0.0 ? n->pi / p->rank.rest : 0.0;
}

/* Node n of p's involvement: pi_i / pi_ROOT (1 for ROOT once ranked; 0
 * before the ranking, and for every other node when pi_ROOT is 0).  Cannot
 * fail. */
static inline double rp_node_involvement(const struct rp_profile *p, const struct rp_node *n)
{
    if (n == p->nodes)
        return n->pi;
    return p->rank.pi_root > 0.0 ? n->pi / p->rank.pi_root : 0.0;
}

/* Frees everything a profile owns; the struct itself is the caller's. */
void rp_profile_free(struct rp_profile *p);

/* Adds a line to p->warn (problems that did not stop the analysis), printf
 * style; a line that does not fit is left out.  Cannot fail. */
void rp_profile_warn(struct rp_profile *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Frees *fh and its histograms, and sets it NULL.  Cannot fail. */
void rp_flag_hists_free(struct rp_flag_hists **fh);

#endif /* RP_ANALYZE_PROFILE_H */

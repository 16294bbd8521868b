/*
 * replay.c - from trace chunks to a profile.
 *
 * Each thread's events are replayed on its own stack of open spans.  When a
 * span ends (EXIT, or EXIT_ID of the innermost span):
 *
 *     dur            = end - start
 *     node.dur_sum  += dur            node.excl += dur - (time in its callees)
 *     node.incl     += dur            only if no other activation of the same
 *                                     node is open below it (recursion)
 *     parent.child  += dur            parent = the span below, or ROOT
 *     edge(parent, node): calls, incl += dur, min, max
 *
 * Overhead compensation (docs/performance.md).  When the trace carries the
 * recorder's measured cost (INFO "overhead_ticks" = pair, 2 o per recorded
 * call, and "overhead_self_ticks" = o_self) and it is not switched off,
 * every span's duration is taken as
 *
 *     dur = (end - start) - (E * pair / 2 + o_self),   clamped at 0 (counted)
 *
 * with E the thread's events between its ENTER and its end (each frame
 * keeps the chunk-local number of its ENTER event; for a frame that began
 * in an earlier chunk that number is <= 0, from the snapshot's event counts
 * or the thread's stack handed over from the previous chunk).  Everything
 * that uses a duration uses this one: inclusive, the parent's callee time
 * (so exclusive follows from the children's compensated time), min, max,
 * variance, histogram, edges.  Budget overruns keep the measured duration,
 * the same test the recorder's direct mode makes.  The arithmetic is in
 * integers (1/65536 tick), so the result is the same for any number of
 * workers.
 *
 * What cannot be matched is counted, never guessed: an exit with no open
 * span is an unmatched exit; spans open when the recorder lost events (a
 * LOST op) are counted as unclosed and add no time (when they ended is
 * unknown).
 *
 * No frame vanishes (docs/robustness.md).  Frames left without their exit
 * end where the stack is seen to leave them, with their time up to there,
 * and are counted per node in `cut` (every activation not ended by its own
 * exit) and per thread as unwound or cut:
 *
 *   - unwound: an EXIT_ID naming a span open deeper, or an UNWIND naming the
 *     frame that goes on (a longjmp, a caught exception), ends every span
 *     above that one at that moment (span_cut);
 *   - cut: an UNWIND with id 0 (the thread ended: pthread_exit, return from
 *     its start function) ends every open span; spans still open after the
 *     last chunk ended with the process (exit() while the thread ran, a
 *     fatal signal: the END chunk's ticks) or, without END (SIGKILL), at the
 *     thread's last event (finish(), close_open()).
 *
 * Chunks are replayed in parallel.  Each EVENTS chunk carries the stack of
 * spans open when it begins (its snapshot), so a chunk needs nothing from
 * the ones before it: workers replay chunks with their own accumulators, and
 * the main thread joins them to their threads in file order (see join() and
 * "the workers" below).  The result is the same as a replay in order: what a
 * span needs from earlier chunks (its start, its callee time so far) is on
 * its thread's stack, and the join adds it.
 *
 * Memory: per replayer one frame per open span, per node its statistics and
 * a histogram, per edge one record; nothing grows with the length of the
 * trace.
 */
#define _GNU_SOURCE /* mremap */
#include "replay.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"
#include "comp.h"
#include "stats.h"
#include "symbols.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#include "report/util.h"
#include "trace/reader.h"

struct frame {
    uint32_t id;
    uint64_t start;
    uint64_t child; /* ticks spent in spans called from this one (in this chunk) */
    int64_t ev;     /* the chunk-local number of its ENTER event (the chunk's first
                       event is 1; <= 0: before the chunk); in a thread's stack
                       between chunks, relative to the end of the last one */
    uint64_t off;   /* ticks off CPU in spans below it (in this chunk): taken out of
                       its on-CPU statistics (format 1.3, see "Off-CPU" above) */
    uint64_t acts;  /* activations ended below it (in this chunk; in a thread's stack
                       between chunks, summed over them): its edge's incl_calls */
    uint64_t pre;   /* ticks its thread was preempted below it (in this chunk): off
                       CPU, but not inside a wait (a sleep's off-CPU time is the wait) */
};

/*
 * What replay touches for every span of a node, packed in one place (the
 * full struct rp_node is filled from it at the end): the statistics, the
 * exact sum of squares, and a cache of the edges from the node's last two
 * callers, which hits for every callee that has one or two usual callers.
 * excl is a signed sum kept modulo 2^64 (no overflow on any input): a span
 * that began in an earlier chunk ends with only this chunk's callee time
 * subtracted, and the join subtracts the rest.
 *
 * A span's count, duration, minimum and maximum are kept on its edge only
 * (caller -> node, which every span has, ROOT as the caller at the bottom):
 * the node's are the sums, minimum and maximum over its edges (acc_merge),
 * so each span updates them once, not twice.  `calls` counts only what has
 * no edge: instants and counter samples.
 */
struct hot {
    unsigned __int128 sq; /* sum of squared durations, exact */
    uint64_t calls, incl;
    uint64_t nfirst, last; /* ~ the first start (so that 0 is "none"), the last start */
    uint64_t excl;         /* signed, modulo 2^64 */
    struct rp_hist hist;   /* window of counts (not n: the edges count) */
    uintptr_t hbase;       /* hist.counts - hist.lo, as an address: a bucket's count is
                              at hbase + 4 * bucket, without a subtraction in the way */
    uint32_t last_caller[2], last_edge[2]; /* edge_of(); ~ the caller (0 = none) */
    uint64_t nbudget, overruns;            /* ~ the budget in ticks (0 = none); spans longer */
    uint64_t cut;                          /* spans not ended by their own exit (span_cut) */
    uint64_t offb;                         /* off-CPU ticks below its spans, summed */
    uint64_t omax, nomin; /* on-CPU duration (less the off-CPU time below): the largest,
                             and ~ the smallest of the spans that had any off-CPU time */
    uint8_t blocked;      /* a node of kind offcpu, wait or lock-wait: its spans are time
                             off CPU for the frames above them (frame.off) */
    uint8_t ivl_off;      /* intervals too spread for a period: no more counted */
    uint64_t rmax;        /* the largest duration less the preempted time below (frame.pre) */
    uint64_t ivl_chunk, ivl_prev; /* the chunk (acc.chunk) and start of its last outermost
                                     span, for the interval to the next one */
    struct rp_flag_hists *fh;     /* own time per span and intervals between starts (profile.h),
                                     allocated when first needed (fh_get) */
};

/* Edges keyed by (caller, callee): an open-addressing index over an array. */
struct emap {
    uint64_t *keys; /* (caller << 32 | callee) + 1, 0 = empty */
    uint32_t *vals; /* index in edges */
    uint32_t cap;   /* a power of two, at least twice n */
    struct rp_edge *edges;
    uint32_t n, capn;
};

/*
 * One replayer's accumulators: a worker thread's or the main thread's.  The
 * statistics of every span a replayer ends go here; they are summed into
 * the profile at the end, so replayers never share a counter.
 */
struct acc {
    _Alignas(64) struct hot *hot;   /* per node; aligned: replayers share no cache line */
    uint32_t *active;               /* per node: open activations on the current stack, and
                                       RP_ACTIVE_UNDEF for ROOT and nodes no DEFS defined */
    uint32_t nhot, nact;            /* entries of hot and of active */
    size_t hot_bytes, active_bytes; /* allocated (zarr_grow): pages of ids a replayer
                                       never sees are never written, so cost nothing */
    struct emap em;
    struct frame *stack;
    uint32_t depth, cap;
    uint64_t chunk;  /* the chunk being replayed (its offset + 1; 0 = none): intervals
                        between starts are taken within one chunk, one thread's */
    uint64_t pz;     /* PAUSE ticks so far (in the chunk, or the resident chunks): a
                        frame's start on `stack` is its start less pz at its push, so
                        a PAUSE moves every open span's start by adding to pz */
    uint64_t *froff; /* a resident stack: per frame, its off as its thread's stack
                        keeps it (the off of the chunk it was pushed in) */
    uint32_t capfroff;
};

/* What a resident thread keeps while it is not replaying (Deep stacks,
 * below): the part of struct acc swapped into ACC_MAIN for its chunks. */
struct rstate {
    struct frame *stack;
    uint32_t depth, cap;
    uint32_t *active; /* its own activation counts: the recursion test */
    size_t active_bytes;
    uint32_t nact;
    uint64_t pz;
    uint64_t *froff;
    uint32_t capfroff;
    uint64_t base; /* its events in its resident chunks so far (job.evbase) */
};

#define RP_ACTIVE_UNDEF 0x80000000u /* (depth < RP_REPLAY_DEPTH_MAX < this) */

/*
 * One EVENTS chunk to replay.  Its stack at the start (U: from the chunk's
 * snapshot, or handed over from the thread's previous chunk) is put under
 * the chunk's own spans; what the chunk does to U and the stack it leaves
 * are reported back and joined to the thread in file order (join()).
 */
struct job {
    _Alignas(64) uint8_t *data; /* aligned: jobs replayed at once share no cache line */
    uint32_t len, cap;
    uint64_t offset;  /* of the chunk in the file */
    uint32_t ti;      /* the thread, index in p->threads */
    _Atomic int done; /* replayed (release: the results below are written) */
    int from_snap;    /* U is the chunk's snapshot, not j->in */
    int resident;     /* U is ACC_MAIN's resident stack (see "Deep stacks" below) */
    uint64_t evbase;  /* resident: the events of the thread's resident chunks before */
    int res_same;     /* resident: the snapshot (if any) matched the stack */
    int comp;         /* subtract the overhead: per event pairfp / 2, per span selffp */
    uint64_t pairfp, selffp;
    uint64_t res;     /* the resolution in ticks (comp.h) */
    uint64_t clamped; /* out: spans shorter than their overhead */
    uint32_t offid;   /* the off-CPU node's id (0 = none) */
    uint64_t paused;  /* out: ticks of PAUSE events (the recorder's waits) */
    uint64_t syn;     /* out: the writer's own events (off-CPU spans, PAUSE): not
                         counted in the event numbers compensation uses */
    /* in: U when the chunk has no snapshot */
    struct frame *in;
    uint32_t nin, capin;
    /* out */
    int rc;
    char err[200];
    uint64_t events, first, last, unmatched, unclosed, lost;
    /* spans ended by span_cut: above a deeper exit or an UNWIND's frame
     * (unwound); at an UNWIND 0, the thread's end (cut) */
    uint64_t unwound, cut;
    int64_t holds;   /* lock holds begun less holds ended (HOLD_BEGIN/END, format 1.3) */
    int hold_ops;    /* the chunk has holds as intervals */
    uint32_t u;      /* depth of U */
    uint32_t low;    /* the lowest depth the stack reached */
    uint8_t *closed; /* per U frame that was popped: 1 if it ended with time */
    uint32_t capclosed;
    struct frame *out; /* the stack at the end of the chunk */
    uint32_t nout, capout;
    struct frame *snap; /* U as the snapshot gave it (to check the join) */
    uint32_t nsnap, capsnap;
};

/* A thread's state between its chunks: the spans open after the last one. */
struct tstate {
    uint32_t tid;
    uint32_t ti;         /* index in p->threads */
    int64_t holds;       /* lock holds begun and not ended (unclosed at the end) */
    struct frame *stack; /* child = callee time summed over all chunks so far */
    uint32_t depth, cap;
    struct rstate *rs; /* resident (Deep stacks): the stack is there, depth is 0 */
};

#define RP_JOBS_MAX    16
#define RP_WORKERS_MAX 8
enum { ACC_MAIN, ACC_HELP, ACC_WORKER };

/* Open spans per thread at most (40 bytes each), so that a hostile file
 * cannot make the stack grow with its length.  The recorder writes deeper
 * stacks than its shadow stack (1 M frames) holds, with exit ids. */
#define RP_REPLAY_DEPTH_MAX (8u << 20)

/*
 * Deep stacks.  A chunk replayed in order gets its thread's whole stack as
 * U: copied in, counted in `active`, copied out and joined back, each O(its
 * depth), which made a deep recursion (whose chunks carry no snapshot, and
 * are many) quadratic in its depth.  From RP_RESIDENT_MIN frames on, the
 * thread's stack instead stays in ACC_MAIN between its chunks (resident):
 * a chunk costs its events, whatever the depth.  The frames keep their
 * callee time summed over all chunks (so no excl_adj), their event numbers
 * counted from the first resident chunk (evbase), and their `off` is reset
 * where the chunk first reaches a frame (span_end's new low, and the top at
 * the start), which is where the copy would have held 0; acc.froff keeps
 * the value the thread's stack would hold.  Each resident thread has its
 * own struct rstate: stack, activation counts (a zero-filled array: pages
 * of the ids on its stack), PAUSE offset; its chunks swap them into
 * ACC_MAIN (O(1)), so deep threads whose chunks alternate stay linear too.
 * The stack goes back to its thread (resident_evict) before a job of the
 * same thread, and before finish(): the same numbers as the copy.
 */
#define RP_RESIDENT_MIN 4096

struct priv {
    struct tstate *ts;
    uint32_t nts, capts;
    uint32_t *tidx; /* open addressing: tid -> index in ts + 1, 0 = empty */
    uint32_t tidx_cap;
    struct emap em;     /* the profile's edges, when the accumulators are summed */
    uint64_t *excl_adj; /* per node: the join's corrections to excl, signed mod 2^64 */
    uint32_t nadj;
    uint64_t clk_first_ticks, clk_first_ns, clk_last_ticks, clk_last_ns;
    int nclk;
    double freq_hz;
    int snap_warned;
    int want_comp;           /* compensation not switched off */
    uint64_t pairfp, selffp; /* the INFO overhead in ticks / RP_COMP_ONE */
    uint64_t res_comp;       /* the resolution of compensated spans, ticks (comp.h) */
    uint32_t offid;          /* the first node of kind offcpu (0 = none) */
    uint32_t *res;           /* the resident threads (indexes in ts) */
    uint32_t nres, capres;

    /* the workers */
    struct rp_profile *p;
    pthread_t tids[RP_WORKERS_MAX];
    /* the replayers: ACC_MAIN (in order, on the main thread), ACC_HELP (the
     * main thread's for the jobs it takes), ACC_WORKER + k (worker k) */
    struct acc acc[ACC_WORKER + RP_WORKERS_MAX];
    struct wctx {
        struct priv *v;
        struct acc *a;
    } wctx[RP_WORKERS_MAX];
    int nworkers, started;
    pthread_mutex_t mu;
    pthread_cond_t work, done;
    struct job jobs[RP_JOBS_MAX];
    /* job sequence numbers ("the workers" below) */
    _Atomic uint64_t submitted, taken; /* submitted: written by the main thread */
    uint64_t joined;                   /* the main thread's */
    _Atomic int sleepers;              /* workers asleep on `work` */
    _Atomic int waiting;               /* the main thread asleep on `done` */
    _Atomic int quit;
};

static void warnf(struct rp_profile *p, const char *fmt, ...)
{
    size_t n = strlen(p->warn);
    if (n + 2 >= sizeof(p->warn))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->warn + n, sizeof(p->warn) - n - 1, fmt, ap);
    va_end(ap);
    n = strlen(p->warn);
    p->warn[n] = '\n';
    p->warn[n + 1] = 0;
}

/* Makes nodes[0..id] exist.  Returns 0 or RP_ENOMEM. */
static int nodes_reserve(struct rp_profile *p, uint32_t id)
{
    if (id < p->n_nodes)
        return 0;
    if (rp_grow(&p->nodes, &p->cap_nodes, id + 1, sizeof(*p->nodes), 256) < 0)
        return RP_ENOMEM;
    for (uint32_t i = p->n_nodes; i <= id; i++) {
        memset(&p->nodes[i], 0, sizeof(p->nodes[i]));
        p->nodes[i].id = i;
        p->nodes[i].min = UINT64_MAX;
        p->nodes[i].oncpu_min = UINT64_MAX;
        p->nodes[i].kind = 0xff; /* undefined until DEFS says */
    }
    p->n_nodes = id + 1;
    return 0;
}

/* Spans of these kinds are time the frames above them were not working on
 * CPU: off CPU, or blocked in a wait (taken out of their on-CPU durations). */
static inline uint8_t blocked_kind(uint8_t kind)
{
    return kind == RP_KIND_OFFCPU || kind == RP_KIND_WAIT || kind == RP_KIND_LOCK_WAIT;
}

/*
 * Makes the zero-filled array *arr (*bytes allocated) hold need bytes,
 * doubling; new bytes are zero.  On Linux it is an anonymous mapping grown
 * by mremap: a page is memory only once written, so a replayer's per-node
 * arrays cost the pages of the ids it sees, not one entry per id of the
 * trace per replayer.  Returns 0, or RP_ENOMEM with the array unchanged.
 */
static int zarr_grow(void *arr, size_t *bytes, size_t need)
{
    void *old = *(void **)arr, *n;
    size_t cap = *bytes ? *bytes : 65536;
    if (need <= *bytes)
        return 0;
    while (cap < need)
        cap *= 2;
#ifdef __linux__
    n = old ? mremap(old, *bytes, cap, MREMAP_MAYMOVE)
            : mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (n == MAP_FAILED)
        return RP_ENOMEM;
#else
    if (!(n = realloc(old, cap)))
        return RP_ENOMEM;
    memset((char *)n + *bytes, 0, cap - *bytes);
#endif
    *(void **)arr = n;
    *bytes = cap;
    return 0;
}

/* Frees what zarr_grow allocated.  Cannot fail. */
static void zarr_free(void *p, size_t bytes)
{
#ifdef __linux__
    if (p)
        munmap(p, bytes);
#else
    (void)bytes;
    free(p);
#endif
}

/*
 * Makes a's per-node arrays cover the profile's n nodes.  A new entry is all
 * zero (struct hot stores ~first, ~omin, ~budget, ~caller for that), except
 * where the node says otherwise: a budget, a blocking kind, not defined
 * yet; so entries of ids this replayer never sees are never written.
 * Returns 0 or RP_ENOMEM.
 */
static int acc_reserve(struct acc *a, const struct rp_profile *p)
{
    uint32_t n = p->n_nodes;
    if (n <= a->nhot && n <= a->nact)
        return 0;
    if (zarr_grow(&a->hot, &a->hot_bytes, (size_t)n * sizeof(*a->hot)) < 0 ||
        zarr_grow(&a->active, &a->active_bytes, (size_t)n * sizeof(*a->active)) < 0)
        return RP_ENOMEM;
    for (uint32_t i = a->nhot; i < n; i++) {
        const struct rp_node *nd = &p->nodes[i];
        if (blocked_kind(nd->kind))
            a->hot[i].blocked = 1;
        if (nd->budget)
            a->hot[i].nbudget = ~nd->budget;
    }
    for (uint32_t i = a->nact; i < n; i++)
        if (i == 0 || p->nodes[i].kind == 0xff)
            a->active[i] = RP_ACTIVE_UNDEF;
    a->nhot = a->nact = n;
    return 0;
}

/* Frees *fh and its histograms, and sets it NULL. */
static void fh_free(struct rp_flag_hists **fh)
{
    if (!*fh)
        return;
    rp_hist_free(&(*fh)->own);
    rp_hist_free(&(*fh)->ivl);
    free(*fh);
    *fh = NULL;
}

static void acc_free(struct acc *a)
{
    for (uint32_t i = 0; i < a->nhot; i++) {
        if (a->hot[i].hist.counts) /* (reads only: untouched pages stay so) */
            rp_hist_free(&a->hot[i].hist);
        if (a->hot[i].fh)
            fh_free(&a->hot[i].fh);
    }
    zarr_free(a->hot, a->hot_bytes);
    zarr_free(a->active, a->active_bytes);
    free(a->em.keys);
    free(a->em.vals);
    free(a->em.edges);
    free(a->stack);
    free(a->froff);
    memset(a, 0, sizeof(*a));
}

static int emap_grow(struct emap *m)
{
    uint32_t ncap = m->cap ? m->cap * 2 : 1024;
    uint64_t *nk = calloc(ncap, sizeof(*nk));
    uint32_t *nv = malloc(ncap * sizeof(*nv));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return RP_ENOMEM;
    }
    for (uint32_t i = 0; i < m->cap; i++) {
        if (!m->keys[i])
            continue;
        uint32_t j = (uint32_t)rp_mix64(m->keys[i]) & (ncap - 1);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

/* The edge caller -> callee in m, created if new; NULL when out of memory. */
static struct rp_edge *edge_get(struct emap *m, uint32_t caller, uint32_t callee)
{
    uint64_t k = ((uint64_t)caller << 32 | callee) + 1;
    if ((m->n + 1) * 2 > m->cap && emap_grow(m) < 0)
        return NULL;
    uint32_t mask = m->cap - 1, i = (uint32_t)rp_mix64(k) & mask;
    while (m->keys[i]) {
        if (m->keys[i] == k)
            return &m->edges[m->vals[i]];
        i = (i + 1) & mask;
    }
    if (rp_grow(&m->edges, &m->capn, m->n + 1, sizeof(*m->edges), 256) < 0)
        return NULL;
    struct rp_edge *e = &m->edges[m->n];
    memset(e, 0, sizeof(*e));
    e->caller = caller;
    e->callee = callee;
    e->min = UINT64_MAX;
    m->keys[i] = k;
    m->vals[i] = m->n++;
    return e;
}

struct rp_edge *rp_profile_edge(struct rp_profile *p, uint32_t caller, uint32_t callee)
{
    return edge_get(&((struct priv *)p->priv)->em, caller, callee);
}

/* The slot of tid in v->tidx (its entry, or the empty slot where it goes). */
static uint32_t tidx_slot(const struct priv *v, uint32_t tid)
{
    uint32_t mask = v->tidx_cap - 1, i = (uint32_t)rp_mix64(tid) & mask;
    while (v->tidx[i] && v->ts[v->tidx[i] - 1].tid != tid)
        i = (i + 1) & mask;
    return i;
}

/*
 * The replay state of thread tid, created if new.  A hash index keeps this
 * O(1): a trace may hold many thousands of threads (or a hostile file
 * millions).  Returns NULL when out of memory.
 */
static struct tstate *tstate_get(struct rp_profile *p, uint32_t tid)
{
    struct priv *v = p->priv;
    if (v->tidx_cap && v->tidx[tidx_slot(v, tid)])
        return &v->ts[v->tidx[tidx_slot(v, tid)] - 1];
    if ((v->nts + 1) * 2 > v->tidx_cap) { /* rehash at half full */
        uint32_t ncap = v->tidx_cap ? v->tidx_cap * 2 : 64;
        uint32_t *nt = calloc(ncap, sizeof(*nt));
        if (!nt)
            return NULL;
        free(v->tidx);
        v->tidx = nt;
        v->tidx_cap = ncap;
        for (uint32_t i = 0; i < v->nts; i++)
            v->tidx[tidx_slot(v, v->ts[i].tid)] = i + 1;
    }
    if (rp_grow(&v->ts, &v->capts, v->nts + 1, sizeof(*v->ts), 16) < 0 ||
        rp_grow(&p->threads, &p->cap_threads, p->n_threads + 1, sizeof(*p->threads), 16) < 0)
        return NULL;
    v->tidx[tidx_slot(v, tid)] = v->nts + 1;
    struct rp_thread *th = &p->threads[p->n_threads];
    memset(th, 0, sizeof(*th));
    th->tid = tid;
    struct tstate *t = &v->ts[v->nts++];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    t->ti = p->n_threads++;
    return t;
}

/* edge_of()'s second entry, or the map: the found edge becomes entry 0. */
static __attribute__((noinline)) struct rp_edge *edge_miss(struct acc *a, struct hot *h,
                                                           uint32_t caller, uint32_t callee)
{
    uint32_t i;
    if (h->last_caller[1] == ~caller) {
        i = h->last_edge[1];
    } else {
        struct rp_edge *e = edge_get(&a->em, caller, callee);
        if (!e)
            return NULL;
        i = (uint32_t)(e - a->em.edges);
    }
    h->last_caller[1] = h->last_caller[0];
    h->last_edge[1] = h->last_edge[0];
    h->last_caller[0] = ~caller;
    h->last_edge[0] = i;
    return &a->em.edges[i];
}

/*
 * The edge caller -> callee through the callee's two-entry cache, most
 * recent first: a recursive function alternates between its outer caller
 * and itself.
 */
static inline struct rp_edge *edge_of(struct acc *a, struct hot *h, uint32_t caller,
                                      uint32_t callee)
{
    if (likely(h->last_caller[0] == ~caller))
        return &a->em.edges[h->last_edge[0]];
    return edge_miss(a, h, caller, callee);
}

/* The rare path of span_count's histogram count: grows the window to hold
 * bucket b.  Returns 0 or -1 (out of memory: unchanged). */
static __attribute__((noinline)) int hist_grow(struct hot *h, unsigned b)
{
    if (rp_hist_cover(&h->hist, b, b))
        return -1;
    h->hbase = (uintptr_t)h->hist.counts - (uintptr_t)h->hist.lo * sizeof *h->hist.counts;
    return 0;
}

/*
 * The rare paths of span_count for the flags' statistics: own counts a
 * span's own time (dur less child) in h->own, which it allocates on the
 * first span with callee time as a copy of the histogram so far (every span
 * before was a leaf: its own time was its duration); partial: the span
 * began in an earlier chunk, whose callee time is not known here (not
 * counted, but the histogram is taken apart from then on).  ivl counts the
 * interval between two starts, and drops the counts once they spread over
 * more than RP_IVL_OCTAVES octaves.  Return 0 or -1 (out of memory: not
 * counted).
 */
static __attribute__((noinline)) struct rp_flag_hists *fh_get(struct hot *h)
{
    if (!h->fh)
        h->fh = calloc(1, sizeof(*h->fh));
    return h->fh;
}

static __attribute__((noinline)) int own_count(struct hot *h, uint64_t dur, uint64_t child,
                                               int partial)
{
    struct rp_flag_hists *fh = fh_get(h);
    if (!fh)
        return -1;
    if (!fh->own.counts) {
        if (rp_hist_merge(&fh->own, &h->hist))
            return -1;
        for (unsigned i = 0; i < h->hist.len; i++)
            fh->own.n += h->hist.counts[i];
        if (!fh->own.counts && rp_hist_cover(&fh->own, 0, 0)) /* (no span before) */
            return -1;
    }
    if (partial)
        return 0;
    return rp_hist_add(&fh->own, child < dur ? dur - child : 0);
}

static __attribute__((noinline)) int ivl_count(struct hot *h, uint64_t d)
{
    struct rp_flag_hists *fh = fh_get(h);
    if (!fh || rp_hist_add(&fh->ivl, d))
        return -1;
    if (fh->ivl.len > RP_IVL_OCTAVES * RP_HIST_SUB) {
        rp_hist_free(&fh->ivl);
        fh->aperiodic = h->ivl_off = 1;
    }
    return 0;
}

/*
 * Counts one span of node id (statistics h) that lasted dur (raw before
 * compensation), began at start, spent child in its callees, and was called
 * from parent (0 = ROOT); `outer`: no other activation of it is open below;
 * acts: the activations under the call, itself included (its edge's
 * incl_calls); partial: it began in an earlier chunk (child is then this
 * chunk's part only).
 * A span shorter than the resolution (cp->res, comp.h) is not an edge's
 * minimum: tested only when it would be a new minimum, so no span pays for
 * it; it goes into the histogram like any span, whose buckets below the
 * resolution (a bucket boundary) finish() then counts as below resolution.
 * Returns 0 or RP_ENOMEM.
 */
static inline __attribute__((always_inline)) int
span_count(struct acc *a, struct hot *h, uint32_t id, uint32_t parent, uint64_t start, uint64_t raw,
           uint64_t dur, uint64_t child, uint64_t off, int outer, const struct rp_comp *cp,
           uint64_t acts, int partial, uint64_t pre)
{
    uint64_t run = pre < dur ? dur - pre : 0;
    if (unlikely(run > h->rmax))
        h->rmax = run;
    struct rp_hist *oh = h->fh ? &h->fh->own : NULL;
    if (unlikely(child | (uint64_t)partial) || unlikely(oh && oh->counts)) {
        unsigned ob = rp_hist_index(child < dur ? dur - child : 0);
        if (likely(oh && oh->counts) && likely(!partial) && likely(ob - oh->lo < oh->len)) {
            uint32_t *c = &oh->counts[ob - oh->lo]; /* the common case, inline */
            *c += *c != UINT32_MAX;
            oh->n++;
        } else if (own_count(h, dur, child, partial)) {
            return RP_ENOMEM;
        }
    }
    if (outer && !h->ivl_off && a->chunk) {
        if (h->ivl_chunk == a->chunk && start > h->ivl_prev && ivl_count(h, start - h->ivl_prev))
            return RP_ENOMEM;
        h->ivl_chunk = a->chunk;
        h->ivl_prev = start;
    }
    h->excl += dur - child;
    uint64_t on = dur; /* on-CPU: less the time off CPU below it (format 1.3) */
    if (unlikely(off)) {
        on = off < dur ? dur - off : 0;
        h->offb += dur - on;
        if (~on > h->nomin)
            h->nomin = ~on;
    }
    if (unlikely(on > h->omax))
        h->omax = on;
    h->sq += (unsigned __int128)dur * dur;
    unsigned b = rp_hist_index(dur); /* a new histogram has len 0 */
    if (unlikely(b - h->hist.lo >= h->hist.len) && hist_grow(h, b))
        return RP_ENOMEM;
    uint32_t *c = (uint32_t *)(h->hbase + (uintptr_t)b * sizeof *c);
    if (*c != UINT32_MAX)
        (*c)++;
    if (unlikely(~start > h->nfirst)) /* branches, not selects: rarely taken, so */
        h->nfirst = ~start;           /* no store and no chain through memory */
    if (start > h->last)
        h->last = start;
    if (unlikely(raw > ~h->nbudget))
        h->overruns++;
    if (outer)
        h->incl += dur;
    struct rp_edge *e = edge_of(a, h, parent, id);
    if (unlikely(!e))
        return RP_ENOMEM;
    e->calls++;
    e->incl += dur;
    e->incl_calls += acts;
    if (unlikely(dur < e->min) && dur >= cp->res) /* (below resolution: no minimum) */
        e->min = dur;
    if (unlikely(dur > e->max))
        e->max = dur;
    return 0;
}

/*
 * Ends the innermost span of the stack (stack[0..*depth)) at `now`, the
 * chunk's event number ev, with the PAUSE offset pz (acc.pz); j records it
 * when it is a span of U.  Returns 0 or RP_ENOMEM.
 */
static inline __attribute__((always_inline)) int span_end(struct acc *a, struct job *j,
                                                          struct frame *stack, uint32_t *depth,
                                                          uint64_t now, uint64_t pz, int64_t ev,
                                                          struct rp_comp *cp)
{
    struct frame *f = &stack[--*depth];
    uint32_t id = f->id, parent = 0;
    uint64_t start = f->start + pz; /* (acc.pz) */
    uint64_t raw = now >= start ? now - start : 0, dur = raw;

    if (cp->on && id != j->offid) /* E events inside: E * pair / 2 + self, rounded */
        dur = rp_comp_sub(cp, raw, rp_comp_of(cp, ev > f->ev ? (uint64_t)(ev - f->ev - 1) : 0));
    uint64_t acts = id != j->offid ? 1 + f->acts : 0; /* (off-CPU time is no call) */
    if (unlikely(*depth < j->low)) {
        j->low = *depth;
        if (*depth < j->u)
            j->closed[*depth] = 1;
        if (j->resident && *depth) /* first reached in this chunk (Deep stacks) */
            f[-1].off = 0;
    }
    if (*depth) {
        struct frame *pf = f - 1;
        pf->child += dur;
        pf->off += f->off + (a->hot[id].blocked ? dur : 0);
        pf->acts += acts;
        pf->pre += id == j->offid ? dur : a->hot[id].blocked ? 0 : f->pre;
        parent = pf->id;
    }
    return span_count(a, &a->hot[id], id, parent, start, raw, dur, f->child, f->off,
                      --a->active[id] == 0, cp, acts, f->ev <= 0, f->pre);
}

/*
 * Ends the spans of the stack above depth `to` at `now` with their time,
 * innermost first, each as span_end does (so each one's time goes to the
 * frame below it, and the edge is from that frame): frames left without
 * their exit (header comment).  They are counted per node in hot.cut, and
 * in j->cut when the thread ended (thread_end), else in j->unwound.
 * Returns 0 or RP_ENOMEM.
 */
static __attribute__((noinline)) int span_cut(struct acc *a, struct job *j, struct frame *stack,
                                              uint32_t *depth, uint32_t to, uint64_t now,
                                              int64_t ev, struct rp_comp *cp, int thread_end)
{
    if (thread_end)
        j->cut += *depth - to;
    else
        j->unwound += *depth - to;
    while (*depth > to) {
        a->hot[stack[*depth - 1].id].cut++;
        if (span_end(a, j, stack, depth, now, a->pz, ev, cp) < 0)
            return RP_ENOMEM;
    }
    return 0;
}

/* Drops the spans of a's stack above depth `to` without time. */
static void stack_drop(struct acc *a, struct job *j, uint32_t to)
{
    j->unclosed += a->depth - to;
    while (a->depth > to)
        a->active[a->stack[--a->depth].id]--;
    if (a->depth < j->low)
        j->low = a->depth;
}

/*
 * Zero bytes after every chunk replay_chunk reads.  The per-event decoding
 * (pget) reads a varint's first two bytes without testing the end: a chunk
 * whose last event runs over its end stops in the padding (a zero byte ends
 * any varint), and the loop's end test, q == end, finds it malformed.
 */
#define RP_REPLAY_PAD 16

/* A varint at q < end of a padded chunk; NULL when longer than 10 bytes. */
static inline const uint8_t *pget(const uint8_t *q, const uint8_t *end, uint64_t *v)
{
    uint64_t b0 = q[0], b1;
    if (likely(b0 < 0x80)) {
        *v = b0;
        return q + 1;
    }
    if (likely((b1 = q[1]) < 0x80)) {
        *v = (b0 & 0x7f) | b1 << 7;
        return q + 2;
    }
    return rp_get_varint(q, end + RP_REPLAY_PAD, v);
}

/* Makes room for a push on a's stack at depth; the stack, or NULL when it
 * would be deeper than RP_REPLAY_DEPTH_MAX or memory is out. */
static __attribute__((noinline)) struct frame *frame_grow(struct acc *a, uint32_t depth)
{
    if (a->cap >= RP_REPLAY_DEPTH_MAX ||
        rp_grow(&a->stack, &a->cap, depth + 1, sizeof(*a->stack), 64) < 0)
        return NULL;
    return a->stack;
}

static inline struct frame *frame_push(struct acc *a, uint32_t depth)
{
    return likely(depth < a->cap) ? a->stack : frame_grow(a, depth);
}

/* Makes excl_adj[0..n) exist, new entries zero.  Returns 0 or RP_ENOMEM. */
static int adj_reserve(struct priv *v, uint32_t n)
{
    uint32_t old = v->nadj;
    if (n <= old)
        return 0;
    if (rp_grow(&v->excl_adj, &v->nadj, n, sizeof(*v->excl_adj), 256) < 0)
        return RP_ENOMEM;
    memset(v->excl_adj + old, 0, (v->nadj - old) * sizeof(*v->excl_adj));
    return 0;
}

/*
 * Puts U under a's stack: the thread's stack as the chunks before left it
 * (j->from_snap == 0, replay in order), or the chunk's snapshot.  A snapshot
 * is kept in j->snap either way, for join() to check.  Returns 0 or RP_ENOMEM.
 */
static int stack_start(struct acc *a, struct job *j, const struct rp_evdec *d)
{
    uint32_t ns = d->snap ? d->snap_depth : 0, u = j->resident    ? a->depth
                                                   : j->from_snap ? ns
                                                                  : j->nin;
    if (rp_grow(&a->stack, &a->cap, u + 1, sizeof(*a->stack), 64) < 0 ||
        rp_grow(&j->closed, &j->capclosed, u + 1, 1, 64) < 0 ||
        rp_grow(&j->snap, &j->capsnap, ns + 1, sizeof(*j->snap), 64) < 0)
        return RP_ENOMEM;
    a->chunk = j->offset + 1;
    const uint8_t *q = d->snap ? rp_evdec_frames(d) : NULL;
    for (uint32_t i = 0; i < ns; i++) {
        struct frame f = {0};
        uint64_t events;
        q = rp_evdec_frame(d, q, &f.id, &f.start, &events);
        f.ev = -(int64_t)(events & (UINT64_MAX >> 2)); /* its ENTER, before the chunk */
        j->snap[i] = f;
    }
    j->nsnap = ns;
    if (j->resident) { /* U stays where it is (Deep stacks); closed[] is not read */
        j->res_same = !ns || ns == u;
        for (uint32_t i = 0; j->res_same && i < ns; i++)
            j->res_same =
                j->snap[i].id == a->stack[i].id && j->snap[i].start == a->stack[i].start + a->pz;
        if (u)
            a->stack[u - 1].off = 0;
        j->u = j->low = u;
        return 0;
    }
    for (uint32_t i = 0; i < u; i++) {
        const struct frame *s = j->from_snap ? &j->snap[i] : &j->in[i];
        a->stack[i] = (struct frame){s->id, s->start, 0, s->ev, 0, 0, 0};
    }
    a->depth = j->u = j->low = u;
    memset(j->closed, 0, u);
    return 0;
}

/* How replay_loop ends (replay_chunk writes the message). */
enum { LOOP_OK, LOOP_BAD, LOOP_UNDEFINED, LOOP_NOMEM, LOOP_DEEP, LOOP_HOLD };

/*
 * A lock-hold op (format.h: HOLD_BEGIN or HOLD_END, op) at now, its
 * operands from *qp, whose position it advances; *idp gets the id read
 * (for the message).  HOLD_BEGIN counts a hold begun.  HOLD_END counts the
 * hold as a span of its id called from its acquirer that lasted `raw`
 * ticks less the compensation of the events inside, with no time taken
 * from the acquirer (it is no callee: the code run while holding the lock
 * is the work of the functions that run it) and none as its own (exclusive
 * 0: the time is theirs); outer holds add to inclusive.  A hold with no
 * known acquisition is an unmatched exit.  Off the loop's switch (one call
 * per acquisition and release), so that the span path's code is not
 * changed by it.  Returns LOOP_OK, LOOP_BAD (malformed), LOOP_UNDEFINED
 * (an id, or acquirer, that is no defined node of the right kind) or
 * LOOP_NOMEM.
 */
static __attribute__((noinline)) int hold_op(const struct rp_profile *p, struct acc *a,
                                             struct job *j, struct rp_comp *cp, const uint8_t **qp,
                                             const uint8_t *end, unsigned op, uint64_t now,
                                             uint32_t *idp)
{
    uint64_t id, raw, evs, how;
    const uint8_t *q = *qp;
    if (!(q = rp_get_varint(q, end, &id)))
        return LOOP_BAD;
    *idp = (uint32_t)id;
    if (id == 0 || id >= a->nhot || p->nodes[id].kind != RP_KIND_LOCK_HOLD)
        return LOOP_UNDEFINED;
    j->hold_ops = 1;
    if (op == RP_OP_HOLD_BEGIN) {
        j->holds++;
        *qp = q;
        return LOOP_OK;
    }
    if (!(q = rp_get_varint(q, end, &raw)) || !(q = rp_get_varint(q, end, &evs)) ||
        !(q = rp_get_varint(q, end, &how)))
        return LOOP_BAD;
    *qp = q;
    if (!how) {
        j->unmatched++;
        return LOOP_OK;
    }
    uint64_t acq = how >> 2;
    if (acq && (acq >= a->nhot || (a->active[acq] & RP_ACTIVE_UNDEF)))
        return LOOP_UNDEFINED;
    uint64_t dur = cp->on ? rp_comp_sub(cp, raw, rp_comp_of(cp, evs)) : raw;
    j->holds--;
    if (span_count(a, &a->hot[id], (uint32_t)id, (uint32_t)acq, now >= raw ? now - raw : 0, raw,
                   dur, dur, 0, (how >> 1) & 1, cp, 0, 0, 0) < 0)
        return LOOP_NOMEM;
    return LOOP_OK;
}

/*
 * A chunk's events from ev->q to end (followed by RP_REPLAY_PAD zero bytes)
 * on a's stack, whose depth is in a->depth; `compact` is the stream's form,
 * a constant in each of replay_chunk's two copies.  On return ev holds the
 * position, the event being read (ev0), the time, the events so far and
 * the last id read, for the message.  Returns LOOP_OK or what failed, or
 * LOOP_HOLD at a lock-hold op (format 1.3; its op in ev->op, ev->q at its
 * operands): replay_chunk counts it (hold_op) and calls the loop again,
 * which goes on from ev (the events so far included).  Holds are handled
 * outside the loop so that the code of its span path stays as it was.
 *
 * The stack's top stays in locals (written back to a->depth where anything
 * else looks at it) and a leaf, an ENTER whose next event is its EXIT, is
 * counted without a push and a pop.  An id is checked with one load: a
 * node no DEFS defined (and ROOT) has RP_ACTIVE_UNDEF in active[].
 */
struct loopst {
    const uint8_t *q, *ev0;
    uint64_t now, n;
    uint64_t syn; /* of n, the writer's events (struct job) */
    uint32_t id;
    unsigned op; /* LOOP_HOLD: HOLD_BEGIN or HOLD_END */
};

static inline __attribute__((always_inline)) int replay_loop(const struct rp_profile *p,
                                                             struct acc *a, struct job *j,
                                                             struct rp_comp *cp, struct loopst *ev,
                                                             const uint8_t *end, const int compact)
{
    const uint8_t *q = ev->q, *ev0 = q;
    uint64_t now = ev->now, n = ev->n, syn = ev->syn, h, x, arg; /* n - syn: struct job */
    const struct rp_node *nodes = p->nodes;
    const uint64_t nn = a->nhot; /* = p->n_nodes (acc_reserve) */
    struct hot *const hot = a->hot;
    uint32_t *const active = a->active;
    struct frame *stack = a->stack;
    uint32_t depth = a->depth, act;
    uint64_t pz = a->pz; /* (a copy: pushes read it; PAUSE writes both) */
    int rc = LOOP_OK;

    while (q < end) {
        unsigned op;
        ev0 = q;
        if (unlikely(!(q = pget(q, end, &h))))
            goto bad;
    have_head:
        n++;
        if (compact) { /* format.h: EXIT, ENTER id, or 0 and an op */
            now += h >> 1;
            op = h & 1 ? RP_OP_EXIT : RP_OP_ENTER;
        } else {
            now += h >> RP_OP_BITS;
            op = h & RP_OP_MASK;
        }
        if (op == RP_OP_ENTER) {
            if (!compact && unlikely(q >= end))
                goto bad;
            if (unlikely(!(q = pget(q, end, &x))))
                goto bad;
            if (compact && unlikely(!x)) { /* (an id 0 in padding has no op) */
                if (!(q = rp_get_varint(q, end, &x)) || x < RP_OP_EXIT_ID || x > RP_OP_LAST)
                    goto bad;
                op = (unsigned)x;
            }
        }
        switch (op) {
        case RP_OP_ENTER:
            ev->id = (uint32_t)x;
            if (unlikely(x >= nn) || unlikely((act = active[x]) & RP_ACTIVE_UNDEF))
                goto undefined;
            if (compact && likely(q < end)) {
                const uint8_t *q2 = pget(q, end, &h);
                if (unlikely(!q2)) {
                    ev0 = q;
                    goto bad;
                }
                if (h & 1) { /* a leaf: its EXIT follows, with no event inside */
                    uint64_t raw = h >> 1, dur = cp->on ? rp_comp_sub(cp, raw, cp->leaf) : raw;
                    if (unlikely(x == j->offid)) { /* the writer's: not compensated */
                        dur = raw;
                        syn += 2;
                        if (depth) /* (preempted, in the frame below) */
                            stack[depth - 1].pre += dur;
                    }
                    uint32_t parent = 0;
                    uint64_t acts = x != j->offid; /* (off-CPU time is no call) */
                    if (depth) {
                        stack[depth - 1].child += dur;
                        stack[depth - 1].acts += acts;
                        if (unlikely(hot[x].blocked)) /* off CPU, or waiting */
                            stack[depth - 1].off += dur;
                        parent = stack[depth - 1].id;
                    }
                    n++;
                    if (unlikely(span_count(a, &hot[x], (uint32_t)x, parent, now, raw, dur, 0, 0,
                                            act == 0, cp, acts, 0, 0) < 0))
                        goto nomem;
                    now += raw;
                    ev0 = q;
                    q = q2;
                    break;
                }
                /* not a leaf: push it, and go on with the head just read */
                if (unlikely(!(stack = frame_push(a, depth))))
                    goto push_failed;
                stack[depth++] =
                    (struct frame){(uint32_t)x, now - pz, 0, (int64_t)(n - syn), 0, 0, 0};
                active[x] = act + 1;
                ev0 = q;
                q = q2;
                goto have_head;
            }
            if (unlikely(!(stack = frame_push(a, depth))))
                goto push_failed;
            stack[depth++] = (struct frame){(uint32_t)x, now - pz, 0, (int64_t)(n - syn), 0, 0, 0};
            active[x] = act + 1;
            break;
        case RP_OP_EXIT:
            if (unlikely(!depth)) {
                j->unmatched++;
                break;
            }
            if (unlikely(span_end(a, j, stack, &depth, now, pz, (int64_t)(n - syn), cp) < 0))
                goto nomem;
            break;
        case RP_OP_EXIT_ID: {
            if (!(q = rp_get_varint(q, end, &x)))
                goto bad;
            ev->id = (uint32_t)x;
            if (x == 0 || x >= nn || nodes[x].kind == 0xff)
                goto undefined;
            uint32_t at = depth;
            while (at > 0 && stack[at - 1].id != x)
                at--;
            if (!at) {
                j->unmatched++;
                break;
            }
            /* spans opened above it were left without their exits (a
             * longjmp, an exception): they end here, with time (span_cut) */
            if (at < depth && span_cut(a, j, stack, &depth, at, now, (int64_t)(n - syn), cp, 0) < 0)
                goto nomem;
            if (span_end(a, j, stack, &depth, now, pz, (int64_t)(n - syn), cp) < 0)
                goto nomem;
            break;
        }
        case RP_OP_UNWIND: { /* format.h; the compact stream only */
            if (!compact || !(q = rp_get_varint(q, end, &x)))
                goto bad;
            ev->id = (uint32_t)x;
            uint32_t at = 0; /* id 0: the thread ends, every span ends */
            if (x) {
                if (x >= nn || nodes[x].kind == 0xff)
                    goto undefined;
                for (at = depth; at > 0 && stack[at - 1].id != x; at--)
                    ;
                if (!at) /* not open: nothing to end (our writer never says so) */
                    break;
            }
            if (span_cut(a, j, stack, &depth, at, now, (int64_t)(n - syn), cp, x == 0) < 0)
                goto nomem;
            break;
        }
        case RP_OP_INSTANT:
        case RP_OP_COUNTER:
            if (!(q = rp_get_varint(q, end, &x)))
                goto bad;
            ev->id = (uint32_t)x;
            if (x == 0 || x >= nn || nodes[x].kind == 0xff)
                goto undefined;
            if (!(q = rp_get_varint(q, end, &arg)))
                goto bad;
            hot[x].calls++;
            break;
        case RP_OP_ARG:
            if (!(q = rp_get_varint(q, end, &arg)))
                goto bad;
            break;
        case RP_OP_LOST:
            if (!(q = rp_get_varint(q, end, &arg)))
                goto bad;
            j->lost += arg;
            a->depth = depth;
            stack_drop(a, j, 0);
            depth = 0;
            break;
        case RP_OP_PAUSE:
            /* The thread waited arg ticks for the recorder's writer: not
             * the program's time.  Every open span starts that much later,
             * as the writer's snapshots say (format.h). */
            if (!(q = rp_get_varint(q, end, &arg)))
                goto bad;
            j->paused += arg;
            syn++;
            a->pz = pz += arg; /* (acc.pz: not a loop over the stack) */
            break;
        default:         /* HOLD_BEGIN, HOLD_END (format 1.3): counted by replay_chunk */
            ev->op = op; /* (the escape admits no other) */
            rc = LOOP_HOLD;
            goto out;
        }
    }
    if (q != end) /* the last event runs over the end, into the padding */
        rc = LOOP_BAD;
out:
    a->depth = depth;
    j->syn = ev->syn = syn;
    ev->q = q;
    ev->ev0 = ev0;
    ev->now = now;
    ev->n = n;
    return rc;
bad:
    rc = LOOP_BAD;
    goto out;
undefined:
    rc = LOOP_UNDEFINED;
    goto out;
nomem:
    rc = LOOP_NOMEM;
    goto out;
push_failed:
    rc = a->cap >= RP_REPLAY_DEPTH_MAX ? LOOP_DEEP : LOOP_NOMEM;
    goto out;
}

/*
 * Replays the EVENTS chunk of j with the accumulators a, ids checked against
 * the profile's definitions (which do not change while jobs run).  j->data
 * is followed by RP_REPLAY_PAD zero bytes.  Sets j->rc to 0, RP_ENOMEM, or
 * RP_EFORMAT with j->err naming the offset.
 */
static void replay_chunk(const struct rp_profile *p, struct acc *a, struct job *j)
{
    struct rp_evdec d;
    struct loopst ev = {0};
    uint64_t h;
    int rc;
    struct rp_comp cp; /* the overhead to subtract (comp.h), in registers: a
                          local copy, as stores through the accumulators could
                          alias the job's fields and make them reload per span */

    rp_comp_set(&cp, j->comp, j->pairfp, j->selffp, j->res);
    if (!j->resident)
        a->pz = 0; /* U's starts are as its thread keeps them */
    j->events = j->unmatched = j->unclosed = j->lost = j->clamped = j->paused = j->syn = 0;
    j->unwound = j->cut = 0;
    j->holds = 0;
    j->hold_ops = 0;
    j->nout = 0;
    if (rp_evdec_init(&d, j->data, j->len) < 0) {
        ev.ev0 = d.p ? d.p : j->data;
        goto bad_at;
    }
    if ((rc = acc_reserve(a, p)) < 0 || (rc = stack_start(a, j, &d)) < 0)
        goto fail;
    for (uint32_t i = 0; !j->resident && i < a->depth; i++) {
        ev.id = a->stack[i].id;
        if (ev.id >= p->n_nodes || p->nodes[ev.id].kind == 0xff) {
            a->depth = i;
            ev.ev0 = d.snap;
            goto undefined;
        }
        a->active[ev.id]++;
    }
    ev.q = d.p;
    ev.n = j->evbase; /* (0 unless resident) */
    ev.now = j->first = d.now;
    if (d.p < d.end && pget(d.p, d.end, &h)) /* the first event's time */
        j->first = d.now + (d.compact ? h >> 1 : h >> RP_OP_BITS);
    /* two copies of the loop: each event tests the form in neither */
    do { /* (a lock-hold op pauses the loop: hold_op counts it, the loop goes on) */
        rc = d.compact ? replay_loop(p, a, j, &cp, &ev, d.end, 1)
                       : replay_loop(p, a, j, &cp, &ev, d.end, 0);
    } while (rc == LOOP_HOLD &&
             (rc = hold_op(p, a, j, &cp, &ev.q, d.end, ev.op, ev.now, &ev.id)) == LOOP_OK);
    switch (rc) {
    case LOOP_BAD:
        goto bad_at;
    case LOOP_UNDEFINED:
        goto undefined;
    case LOOP_NOMEM:
        rc = RP_ENOMEM;
        goto fail;
    case LOOP_DEEP:
        goto too_deep;
    }
    if (ev.n - j->evbase != d.count) /* format 4.6: the writer's own events are in the count */
        goto miscount;
    j->last = ev.now;
    j->events = ev.n - j->evbase - j->syn; /* the thread's own: the writer's are not counted */
out:
    j->clamped = cp.clamped;
    if (j->resident) { /* the stack stays; its pushed frames' off as a copy keeps it */
        uint32_t keep = j->low < j->u ? j->low : j->u;
        if (rc == 0 && rp_grow(&a->froff, &a->capfroff, a->depth + 1, sizeof(*a->froff), 64) < 0)
            rc = RP_ENOMEM;
        for (uint32_t i = keep; rc == 0 && i < a->depth; i++)
            a->froff[i] = a->stack[i].off;
        j->nout = a->depth;
        j->rc = rc;
        return;
    }
    /* hand the stack over (starts with the PAUSEs in) and leave a clean
     * replayer for the next chunk */
    for (uint32_t i = 0; a->pz && i < a->depth; i++)
        a->stack[i].start += a->pz;
    a->pz = 0;
    if (rc == 0 && rp_grow(&j->out, &j->capout, a->depth + 1, sizeof(*j->out), 64) < 0)
        rc = RP_ENOMEM;
    if (rc == 0) {
        if (a->depth) /* a->stack is NULL until the first push */
            memcpy(j->out, a->stack, a->depth * sizeof(*j->out));
        j->nout = a->depth;
    }
    while (a->depth)
        a->active[a->stack[--a->depth].id]--;
    j->rc = rc;
    return;
fail:
    snprintf(j->err, sizeof(j->err), "out of memory");
    goto out;
bad_at:
    rc = RP_EFORMAT;
    snprintf(j->err, sizeof(j->err), "malformed event at offset %llu (in the chunk at offset %llu)",
             (unsigned long long)(j->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(ev.ev0 - j->data)),
             (unsigned long long)j->offset);
    goto out;
too_deep:
    rc = RP_EFORMAT;
    snprintf(j->err, sizeof(j->err),
             "spans nested deeper than %u at offset %llu (the analyzer's limit)",
             RP_REPLAY_DEPTH_MAX,
             (unsigned long long)(j->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(ev.ev0 - j->data)));
    goto out;
miscount:
    rc = RP_EFORMAT;
    snprintf(j->err, sizeof(j->err),
             "EVENTS chunk at offset %llu states %u events, its stream holds %llu",
             (unsigned long long)j->offset, d.count, (unsigned long long)(ev.n - j->evbase));
    goto out;
undefined:
    rc = RP_EFORMAT;
    snprintf(j->err, sizeof(j->err), "event at offset %llu uses id %u, which no DEFS chunk defined",
             (unsigned long long)(j->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(ev.ev0 - j->data)),
             ev.id);
    goto out;
}

/*
 * Joins job j (replayed) to its thread, in file order: the thread's counts,
 * and its open spans.  U frames that ended in the chunk had only the chunk's
 * callee time subtracted; the rest of it, carried on the thread's stack, is
 * subtracted here.  Returns 0, or j->rc with the error in err.
 */
static int join(struct rp_profile *p, struct job *j, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    struct rp_thread *th = &p->threads[j->ti];
    struct tstate *t = &v->ts[j->ti];

    if (j->rc < 0) {
        snprintf(err, errsz, "%s", j->err);
        return j->rc;
    }
    if (j->events) {
        if (!th->events)
            th->first = j->first;
        th->last = j->last;
        th->events += j->events;
        p->events += j->events;
    }
    th->unmatched_exits += j->unmatched;
    th->unclosed += j->unclosed;
    th->unwound += j->unwound;
    th->cut += j->cut;
    th->lost += j->lost;
    th->paused += j->paused;
    p->paused += j->paused;
    t->holds += j->holds; /* in file order: what is open after this chunk */
    p->hold_intervals |= j->hold_ops;
    p->comp_clamped += j->clamped;

    /* Does the snapshot continue the thread's stack?  (Always, from our
     * recorder; a file that says otherwise gets what it says, and a warning.) */
    int same = j->resident ? j->res_same : !j->nsnap || j->nsnap == t->depth;
    for (uint32_t i = 0; !j->resident && same && i < j->nsnap; i++)
        same = j->snap[i].id == t->stack[i].id && j->snap[i].start == t->stack[i].start;
    if (!same && !v->snap_warned++)
        warnf(p,
              "the stack snapshot of the chunk at offset %llu does not continue its "
              "thread's previous chunk%s",
              (unsigned long long)j->offset,
              j->from_snap ? "; spans across that boundary were dropped" : "");
    if (j->resident) { /* the stack is the thread's rstate (Deep stacks) */
        t->rs->base += j->events;
        return 0;
    }
    if (!same && j->from_snap) {
        th->unclosed += t->depth;
        t->depth = 0;
        if (rp_grow(&t->stack, &t->cap, j->u, sizeof(*t->stack), 64) < 0)
            return RP_ENOMEM;
        for (uint32_t i = 0; i < j->u; i++)
            t->stack[i] =
                (struct frame){j->snap[i].id, j->snap[i].start, 0, j->snap[i].ev, 0, 0, 0};
        t->depth = j->u;
    }
    for (uint32_t i = j->low; i < j->u; i++)
        if (j->closed[i])
            v->excl_adj[t->stack[i].id] -= t->stack[i].child;
    /* the activations that ended under the U frames the chunk ended, in
     * earlier chunks: in their edges' incl_calls, and in the frame left
     * below them (each frame's acts counts those ended right under it) */
    uint64_t carry = 0;
    for (uint32_t i = j->u; i-- > j->low;) {
        carry += t->stack[i].acts;
        if (!j->closed[i] || !carry)
            continue;
        struct rp_edge *e = edge_get(&v->em, i ? t->stack[i - 1].id : 0, t->stack[i].id);
        if (!e)
            return RP_ENOMEM;
        e->incl_calls += carry;
    }
    uint32_t keep = j->low < j->u ? j->low : j->u;
    if (keep && j->low < j->u)
        t->stack[keep - 1].acts += carry;
    if (rp_grow(&t->stack, &t->cap, j->nout + 1, sizeof(*t->stack), 64) < 0)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < keep; i++) {
        t->stack[i].acts += j->out[i].acts;
        t->stack[i].child += j->out[i].child;
        t->stack[i].start = j->out[i].start; /* moved later by the chunk's PAUSEs */
    }
    memcpy(t->stack + keep, j->out + keep, (j->nout - keep) * sizeof(*t->stack));
    t->depth = j->nout;
    for (uint32_t i = 0; i < j->nout; i++) /* ENTERs counted from the end of this chunk */
        t->stack[i].ev = j->out[i].ev - (int64_t)j->events;
    return 0;
}

/* --- the workers ------------------------------------------------------------
 *
 * The main thread reads chunks in order.  An EVENTS chunk with a stack
 * snapshot becomes a job in a ring of RP_JOBS_MAX; workers take jobs in
 * order and replay them, each with its own accumulators; the main thread
 * joins finished jobs in file order.  Jobs only read the node table, so
 * before a chunk that changes it (DEFS) every job in flight is joined
 * (drain).  A chunk without a snapshot needs the end state of its thread's
 * previous chunk: the jobs are drained and it is replayed by the main
 * thread, in order, like everything when there is one CPU or a per-chunk
 * callback.
 *
 *   submitted >= taken >= joined;  jobs[seq % RP_JOBS_MAX] is free iff
 *   seq >= submitted or seq < joined, so the ring holds at most RP_JOBS_MAX.
 *
 * There are as many workers as CPUs less one, and the main thread replays
 * too: when it must wait for the oldest job it takes the next untaken one
 * itself (with its own accumulators, ACC_HELP).  Nobody sleeps while there
 * is work.  That matters more than it seems: a wake-up across CPUs costs
 * some 30 us in a VM (an IPI), a job about 170 us, and a mutex and two
 * condition variables per job took a third of the time on two CPUs.  So the
 * ring's counters are atomics, a job is taken with a compare-and-swap, and
 * the locks are only for sleeping:
 *
 *   - the main thread publishes a job with a release store of `submitted`;
 *     a worker that reads it with acquire sees the job's fields;
 *   - a worker publishes its results with a release store of j->done; the
 *     main thread reads it with acquire;
 *   - sleeping is Dekker-style in sequentially consistent order: the
 *     sleeper announces itself (sleepers, waiting) and then tests for work
 *     under the lock; the waker makes the work visible and then tests for a
 *     sleeper, and signals under the lock.  One of them sees the other, so
 *     no wake-up is lost.  An idle worker spins briefly before it sleeps.
 */
#define RP_SPIN 2000 /* pause loops (~0.1 ms) before a worker sleeps */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Takes the oldest job not yet taken; NULL when there is none. */
static struct job *job_take(struct priv *v)
{
    uint64_t t = atomic_load_explicit(&v->taken, memory_order_relaxed);
    while (t < atomic_load_explicit(&v->submitted, memory_order_acquire))
        if (atomic_compare_exchange_weak_explicit(&v->taken, &t, t + 1, memory_order_relaxed,
                                                  memory_order_relaxed))
            return &v->jobs[t % RP_JOBS_MAX];
    return NULL;
}

/* Replays job j with a, publishes it, and wakes the main thread if it sleeps. */
static void job_run(struct priv *v, struct acc *a, struct job *j)
{
    replay_chunk(v->p, a, j);
    atomic_store(&j->done, 1);
    if (atomic_load(&v->waiting)) {
        pthread_mutex_lock(&v->mu);
        pthread_cond_broadcast(&v->done);
        pthread_mutex_unlock(&v->mu);
    }
}

static int work_pending(struct priv *v)
{
    return atomic_load(&v->taken) < atomic_load(&v->submitted) || atomic_load(&v->quit);
}

static void *worker(void *arg)
{
    struct wctx *w = arg;
    struct priv *v = w->v;

    for (;;) {
        struct job *j = job_take(v);
        if (j) {
            job_run(v, w->a, j);
            continue;
        }
        if (atomic_load(&v->quit))
            break;
        for (int i = 0; i < RP_SPIN && !work_pending(v); i++)
            cpu_relax();
        if (work_pending(v))
            continue;
        pthread_mutex_lock(&v->mu);
        atomic_fetch_add(&v->sleepers, 1);
        while (!work_pending(v))
            pthread_cond_wait(&v->work, &v->mu);
        atomic_fetch_sub(&v->sleepers, 1);
        pthread_mutex_unlock(&v->mu);
    }
    return NULL;
}

/*
 * Waits for the oldest job in flight, replaying untaken ones meanwhile, and
 * joins it.  Returns 0 or < 0.
 */
static int join_oldest(struct rp_profile *p, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    struct job *j = &v->jobs[v->joined % RP_JOBS_MAX];
    while (!atomic_load_explicit(&j->done, memory_order_acquire)) {
        struct job *h = job_take(v);
        if (h) {
            job_run(v, &v->acc[ACC_HELP], h);
            continue;
        }
        pthread_mutex_lock(&v->mu);
        atomic_store(&v->waiting, 1);
        while (!atomic_load(&j->done))
            pthread_cond_wait(&v->done, &v->mu);
        atomic_store(&v->waiting, 0);
        pthread_mutex_unlock(&v->mu);
    }
    v->joined++;
    return join(p, j, err, errsz);
}

/* Joins every job in flight.  Returns 0 or the first error (in file order). */
static int drain(struct rp_profile *p, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    char other[256];
    int rc = 0;
    while (v->joined < atomic_load_explicit(&v->submitted, memory_order_relaxed)) {
        /* after an error, the rest is joined only to be released */
        int r = rc < 0 ? join_oldest(p, other, sizeof(other)) : join_oldest(p, err, errsz);
        if (rc == 0)
            rc = r;
    }
    return rc;
}

static void workers_start(struct priv *v, int want)
{
    if (want > RP_WORKERS_MAX)
        want = RP_WORKERS_MAX;
    pthread_mutex_init(&v->mu, NULL);
    pthread_cond_init(&v->work, NULL);
    pthread_cond_init(&v->done, NULL);
    v->started = 1;
    for (v->nworkers = 0; v->nworkers < want; v->nworkers++) {
        struct wctx *w = &v->wctx[v->nworkers];
        w->v = v;
        w->a = &v->acc[ACC_WORKER + v->nworkers];
        if (pthread_create(&v->tids[v->nworkers], NULL, worker, w) != 0)
            break;
    }
}

static void workers_stop(struct priv *v)
{
    if (!v->started)
        return;
    pthread_mutex_lock(&v->mu);
    atomic_store(&v->quit, 1);
    pthread_cond_broadcast(&v->work);
    pthread_mutex_unlock(&v->mu);
    for (int i = 0; i < v->nworkers; i++)
        pthread_join(v->tids[i], NULL);
    v->started = 0; /* nworkers stays: their accumulators are summed by finish() */
    pthread_cond_destroy(&v->work);
    pthread_cond_destroy(&v->done);
    pthread_mutex_destroy(&v->mu);
}

/* Swaps the resident part of ACC_MAIN (struct rstate) with rs.  O(1). */
static void rs_swap(struct acc *a, struct rstate *rs)
{
#define RP_SWAP(x)                                                                                 \
    do {                                                                                           \
        __typeof__(a->x) tmp_ = a->x;                                                              \
        a->x = rs->x;                                                                              \
        rs->x = tmp_;                                                                              \
    } while (0)
    RP_SWAP(stack);
    RP_SWAP(depth);
    RP_SWAP(cap);
    RP_SWAP(active);
    RP_SWAP(active_bytes);
    RP_SWAP(nact);
    RP_SWAP(pz);
    RP_SWAP(froff);
    RP_SWAP(capfroff);
#undef RP_SWAP
}

/*
 * Gives thread t's resident stack (Deep stacks, above) back to it: frames,
 * off as the thread keeps it, event numbers from the end of its last
 * chunk.  O(depth).  Returns 0 or RP_ENOMEM (the stack then stays
 * resident).
 */
static int resident_evict(struct priv *v, struct tstate *t)
{
    struct rstate *rs = t->rs;
    if (!rs)
        return 0;
    if (rp_grow(&t->stack, &t->cap, rs->depth + 1, sizeof(*t->stack), 64) < 0)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < rs->depth; i++) {
        struct frame f = rs->stack[i];
        f.start += rs->pz;
        f.ev -= (int64_t)rs->base;
        f.off = rs->froff[i];
        t->stack[i] = f;
    }
    t->depth = rs->depth;
    free(rs->stack);
    free(rs->froff);
    zarr_free(rs->active, rs->active_bytes);
    free(rs);
    t->rs = NULL;
    for (uint32_t k = 0; k < v->nres; k++)
        if (v->res[k] == (uint32_t)(t - v->ts)) {
            v->res[k] = v->res[--v->nres];
            break;
        }
    return 0;
}

/*
 * Makes thread t's stack resident: the reverse of resident_evict, with
 * activation counts of its own (RP_ACTIVE_UNDEF where ACC_MAIN has it).
 * O(depth + nodes), once per thread that gets deep.  Returns 0 or
 * RP_ENOMEM (nothing changed).
 */
static int resident_enter(struct rp_profile *p, struct tstate *t)
{
    struct priv *v = p->priv;
    struct rstate *rs = calloc(1, sizeof(*rs));
    uint32_t n = p->n_nodes;
    if (!rs || rp_grow(&v->res, &v->capres, v->nres + 1, sizeof(*v->res), 16) < 0 ||
        zarr_grow(&rs->active, &rs->active_bytes, (size_t)n * sizeof(*rs->active)) < 0 ||
        rp_grow(&rs->stack, &rs->cap, t->depth + 1, sizeof(*rs->stack), 64) < 0 ||
        rp_grow(&rs->froff, &rs->capfroff, t->depth + 1, sizeof(*rs->froff), 64) < 0) {
        if (rs) {
            free(rs->stack);
            zarr_free(rs->active, rs->active_bytes);
        }
        free(rs);
        return RP_ENOMEM;
    }
    for (uint32_t i = 0; i < n; i++)
        if (i == 0 || p->nodes[i].kind == 0xff)
            rs->active[i] = RP_ACTIVE_UNDEF;
    rs->nact = n;
    for (uint32_t i = 0; i < t->depth; i++) {
        rs->stack[i] = t->stack[i];
        rs->froff[i] = t->stack[i].off;
        rs->active[t->stack[i].id]++;
    }
    rs->depth = t->depth;
    t->depth = 0; /* until resident_evict */
    t->rs = rs;
    v->res[v->nres++] = (uint32_t)(t - v->ts);
    return 0;
}

/*
 * Replays an EVENTS chunk: as a job for the workers when it carries a
 * snapshot and there are workers, else here after the jobs before it.
 * Returns 0, or < 0 with the message in err.
 */
static int replay_events(struct rp_profile *p, const struct rp_chunk *c, uint32_t only_tid,
                         char *err, size_t errsz)
{
    struct priv *v = p->priv;
    int rc;

    if (c->len < 16) {
        snprintf(err, errsz, "malformed event at offset %llu (in the chunk at offset %llu)",
                 (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE),
                 (unsigned long long)c->offset);
        return RP_EFORMAT;
    }
    uint32_t tid = rp_get32(c->data);
    if (only_tid && !rp_tid_match(only_tid, tid))
        return 0;
    struct tstate *t = tstate_get(p, tid);
    if (!t)
        return RP_ENOMEM;
    if (adj_reserve(v, p->n_nodes) < 0)
        return RP_ENOMEM;
    /* Compensation needs every frame's event count: a snapshot without them
     * (not from this recorder) is not enough, the chunk replays in order. */
    uint32_t word = rp_get32(c->data + 4);
    int comp = v->want_comp && p->overhead_known;
    int parallel =
        v->started && v->nworkers && (word & RP_EV_SNAPSHOT) && (!comp || (word & RP_EV_SNAPCOUNT));
    if (!parallel && (rc = drain(p, err, errsz)) < 0)
        return rc;
    /* Deep stacks: a job of a resident thread needs its stack on the thread */
    if (parallel && t->rs && (rc = resident_evict(v, t)) < 0)
        return rc;
    if (!parallel && !t->rs && t->depth >= RP_RESIDENT_MIN && (rc = resident_enter(p, t)) < 0)
        return rc;
    uint64_t seq = atomic_load_explicit(&v->submitted, memory_order_relaxed); /* ours to write */
    if (parallel && seq - v->joined == RP_JOBS_MAX && (rc = join_oldest(p, err, errsz)) < 0)
        return rc;
    struct job *j = &v->jobs[seq % RP_JOBS_MAX];
    if (rp_grow(&j->data, &j->cap, c->len + RP_REPLAY_PAD, 1, 65536) < 0)
        return RP_ENOMEM;
    memcpy(j->data, c->data, c->len);
    memset(j->data + c->len, 0, RP_REPLAY_PAD);
    j->len = c->len;
    j->offset = c->offset;
    j->ti = t->ti;
    atomic_store_explicit(&j->done, 0, memory_order_relaxed);
    j->from_snap = parallel;
    j->comp = comp;
    j->offid = v->offid;
    j->pairfp = v->pairfp;
    j->selffp = v->selffp;
    j->res = comp ? v->res_comp : 1;
    j->resident = !parallel && t->rs;
    j->evbase = j->resident ? t->rs->base : 0;
    if (j->resident) {
        struct acc *a = &v->acc[ACC_MAIN];
        rs_swap(a, t->rs);
        replay_chunk(p, a, j);
        rs_swap(a, t->rs);
        return join(p, j, err, errsz);
    }
    if (!parallel) {
        /* U is the thread's stack as the chunks before left it */
        if (rp_grow(&j->in, &j->capin, t->depth + 1, sizeof(*j->in), 64) < 0)
            return RP_ENOMEM;
        if (t->depth) /* t->stack is NULL until the first push */
            memcpy(j->in, t->stack, t->depth * sizeof(*j->in));
        j->nin = t->depth;
        replay_chunk(p, &v->acc[ACC_MAIN], j);
        return join(p, j, err, errsz);
    }
    atomic_store(&v->submitted, seq + 1);
    if (atomic_load(&v->sleepers)) {
        pthread_mutex_lock(&v->mu);
        pthread_cond_signal(&v->work);
        pthread_mutex_unlock(&v->mu);
    }
    return 0;
}

static char *dupn(const void *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
}

char *rp_text_dup(const void *s, size_t n, int keep_nul, size_t *outlen)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *b = s;
    char *d = malloc(4 * n + 1), *o = d; /* at most 4 bytes out per byte in */
    if (!d)
        return NULL;
    for (size_t i = 0; i < n;) {
        int k = rp_utf8_seq(b + i, n - i);
        /* a control byte, a C1 control (0xc2 0x80-0x9f) or invalid UTF-8 */
        int bad = k < 0 || (k == 1 && (b[i] < 0x20 || b[i] == 0x7f) && !(keep_nul && !b[i])) ||
                  (k == 2 && b[i] == 0xc2 && b[i + 1] < 0xa0);
        size_t m = k < 0 ? (size_t)-k : (size_t)k;
        for (size_t j = 0; j < m; j++) {
            if (bad) {
                *o++ = '\\';
                *o++ = 'x';
                *o++ = hex[b[i + j] >> 4];
                *o++ = hex[b[i + j] & 15];
            } else {
                *o++ = (char)b[i + j];
            }
        }
        i += m;
    }
    *o = 0;
    if (outlen)
        *outlen = (size_t)(o - d);
    char *r = realloc(d, (size_t)(o - d) + 1);
    return r ? r : d;
}

/* Tells the replayers' id checks that node id is defined (no job runs). */
static void defined(struct priv *v, uint32_t id)
{
    for (size_t k = 0; k < sizeof(v->acc) / sizeof(v->acc[0]); k++)
        if (id < v->acc[k].nact && (v->acc[k].active[id] & RP_ACTIVE_UNDEF))
            v->acc[k].active[id] &= ~RP_ACTIVE_UNDEF; /* (untouched pages stay so) */
    for (uint32_t k = 0; k < v->nres; k++) {          /* resident threads' own counts */
        struct rstate *rs = v->ts[v->res[k]].rs;
        if (id < rs->nact)
            rs->active[id] &= ~RP_ACTIVE_UNDEF;
    }
}

/* Records the kind of a node that the accumulators already hold (struct hot's
 * `blocked`). */
static void defined_kind(struct priv *v, uint32_t id, uint8_t kind)
{
    for (size_t k = 0; k < sizeof(v->acc) / sizeof(v->acc[0]); k++)
        if (id < v->acc[k].nhot && v->acc[k].hot[id].blocked != blocked_kind(kind))
            v->acc[k].hot[id].blocked = blocked_kind(kind);
}

static int read_defs(struct rp_profile *p, const struct rp_chunk *c, char *err, size_t errsz)
{
    const uint8_t *q = c->data, *end = c->data + c->len;
    while (q < end) {
        if ((size_t)(end - q) < RP_DEF_FIXED)
            goto bad;
        uint32_t id = rp_get32(q);
        uint8_t kind = q[4], cls = q[5];
        uint16_t nlen = rp_get16(q + 6), flen = rp_get16(q + 20), xlen = rp_get16(q + 22);
        if ((size_t)(end - q) < RP_DEF_FIXED + (size_t)nlen + flen + xlen || id == 0 ||
            kind >= RP_KIND_MAX ||
            (uint64_t)id * RP_DEF_FIXED > c->offset + RP_CHUNK_HDR_SIZE + c->len)
            goto bad; /* ids are dense, each defined by a record of 24+ bytes */
        if (nodes_reserve(p, id) < 0)
            return RP_ENOMEM;
        struct rp_node *n = &p->nodes[id];
        if (n->kind != 0xff)
            goto bad; /* an id is defined once */
        n->kind = kind;
        defined(p->priv, id);
        defined_kind(p->priv, id, kind);
        if (kind == RP_KIND_OFFCPU && !((struct priv *)p->priv)->offid)
            ((struct priv *)p->priv)->offid = id;
        n->cls = cls;
        n->key = rp_get64(q + 8);
        n->line = rp_get32(q + 16);
        if (nlen && !(n->name = rp_text_dup(q + RP_DEF_FIXED, nlen, 0, NULL)))
            return RP_ENOMEM;
        if (flen && !(n->file = rp_text_dup(q + RP_DEF_FIXED + nlen, flen, 0, NULL)))
            return RP_ENOMEM;
        if (xlen >= RP_DEF_EXT_BUDGET) /* format 1.1 extension (format.h) */
            n->budget = rp_get64(q + RP_DEF_FIXED + nlen + flen);
        q += RP_DEF_FIXED + nlen + flen + xlen;
    }
    return 0;
bad:
    snprintf(err, errsz, "malformed definition at offset %llu",
             (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(q - c->data)));
    return RP_EFORMAT;
}

/*
 * Reads the key/value records of an INFO chunk into p.  Returns 0, or
 * RP_EFORMAT (err names the record's file offset) for a record that runs
 * past the payload (format 4.1); the records before it are kept.
 */
static int read_info(struct rp_profile *p, const struct rp_chunk *c, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    const uint8_t *q = c->data, *end = c->data + c->len;
    while (q < end) {
        if ((size_t)(end - q) < 6)
            goto bad;
        uint16_t klen = rp_get16(q);
        if ((size_t)(end - q) < 6u + klen)
            goto bad;
        uint32_t vlen = rp_get32(q + 2 + klen);
        size_t rec = (size_t)6 + klen + vlen; /* in size_t: 6u + klen + vlen wraps */
        if ((size_t)(end - q) < rec)
            goto bad;
        const char *k = (const char *)q + 2;
        const char *val = (const char *)q + 6 + klen;
        char **dst = NULL;
#define KEY(s) (klen == sizeof(s) - 1 && !memcmp(k, s, klen))
        if (KEY("program"))
            dst = &p->program;
        else if (KEY("clock"))
            dst = &p->clock_name;
        else if (KEY("mode"))
            dst = &p->mode;
        else if (KEY("argv")) {
            free(p->argv);
            p->argv = rp_text_dup(val, vlen, 1, &p->argv_len);
        } else if (KEY("offcpu")) { /* format 1.3: how off-CPU time is known */
            size_t l = vlen < sizeof(p->offcpu_src) - 1 ? vlen : sizeof(p->offcpu_src) - 1;
            memcpy(p->offcpu_src, val, l);
            p->offcpu_src[l] = 0;
        } else if (KEY("offcpu_error")) {
            size_t l = vlen < sizeof(p->offcpu_err) - 1 ? vlen : sizeof(p->offcpu_err) - 1;
            memcpy(p->offcpu_err, val, l);
            p->offcpu_err[l] = 0;
            for (size_t i = 0; i < l; i++) /* printed in report headers: no controls */
                if ((unsigned char)p->offcpu_err[i] < 0x20 || p->offcpu_err[i] == 0x7f)
                    p->offcpu_err[i] = '?';
        } else if (klen > 5 && !memcmp(k, "lost_", 5)) { /* drops by reason */
            char tmp[32];
            size_t l = vlen < sizeof(tmp) - 1 ? vlen : sizeof(tmp) - 1;
            memcpy(tmp, val, l);
            tmp[l] = 0;
            for (unsigned w = 0; w < RP_WHY_N; w++)
                if ((size_t)klen - 5 == strlen(rp_why_name(w)) &&
                    !memcmp(k + 5, rp_why_name(w), klen - 5)) {
                    p->lost_why[w] = strtoull(tmp, NULL, 10);
                    p->lost_why_known = 1;
                }
        } else if (KEY("offcpu_lost") || KEY("offcpu_late") || KEY("offcpu_runq_ns")) {
            char tmp[32];
            size_t l = vlen < sizeof(tmp) - 1 ? vlen : sizeof(tmp) - 1;
            memcpy(tmp, val, l);
            tmp[l] = 0;
            uint64_t x = strtoull(tmp, NULL, 10);
            if (KEY("offcpu_lost"))
                p->offcpu_lost = x;
            else if (KEY("offcpu_late"))
                p->offcpu_late = x;
            else {
                p->offcpu_runq_ns = x;
                p->offcpu_runq_known = 1;
            }
        } else if (KEY("pid") || KEY("freq_hz") || KEY("overhead_ticks") ||
                   KEY("overhead_self_ticks") || KEY("overhead_spread_ticks")) {
            char tmp[32];
            size_t l = vlen < sizeof(tmp) - 1 ? vlen : sizeof(tmp) - 1;
            memcpy(tmp, val, l);
            tmp[l] = 0;
            if (KEY("pid"))
                p->pid = (uint32_t)strtoul(tmp, NULL, 10);
            else if (KEY("freq_hz"))
                v->freq_hz = strtod(tmp, NULL);
            else if (KEY("overhead_ticks"))
                p->overhead_pair = strtod(tmp, NULL);
            else if (KEY("overhead_spread_ticks"))
                p->overhead_spread = strtod(tmp, NULL);
            else
                p->overhead_self = strtod(tmp, NULL);
            if (KEY("overhead_ticks"))
                p->overhead_known = 1;
        }
#undef KEY
        if (dst) {
            free(*dst);
            *dst = rp_text_dup(val, vlen, 0, NULL);
        }
        q += rec;
    }
    return 0;
bad:
    snprintf(err, errsz,
             "malformed INFO record at offset %llu: it runs past the end of its chunk at offset "
             "%llu (%u bytes)",
             (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(q - c->data)),
             (unsigned long long)c->offset, c->len);
    return RP_EFORMAT;
}

/* Whether the fixed-size payload of chunk c has at least need bytes (format
 * section 4: longer is a later minor version, shorter is malformed).
 * Returns 0, or RP_EFORMAT with err naming the chunk's offset. */
static int fixed_len(const struct rp_chunk *c, const char *name, uint32_t need, char *err,
                     size_t errsz)
{
    if (c->len >= need)
        return 0;
    snprintf(err, errsz, "malformed %s chunk at offset %llu: %u bytes, the format says %u", name,
             (unsigned long long)c->offset, c->len, need);
    return RP_EFORMAT;
}

/*
 * Checks the overhead INFO read so far and fixes what compensation uses:
 * a value that is not a number in [0, 1e6] ticks makes the trace count as
 * one without a measurement (with a warning); self is at most pair.
 */
static void overhead_check(struct rp_profile *p)
{
    struct priv *v = p->priv;
    if (!p->overhead_known)
        return;
    if (!(p->overhead_pair >= 0 && p->overhead_pair <= 1e6) ||
        !(p->overhead_self >= 0 && p->overhead_self <= 1e6)) {
        warnf(p, "the trace's overhead measurement is not a number in range; not compensated");
        p->overhead_known = 0;
        p->overhead_pair = p->overhead_self = 0;
        return;
    }
    if (p->overhead_self > p->overhead_pair)
        p->overhead_self = p->overhead_pair;
    if (!(p->overhead_spread >= 0 && p->overhead_spread <= 1e6)) /* format 1.3; else 0 */
        p->overhead_spread = 0;
    v->res_comp = rp_comp_res(1, p->overhead_spread);
    v->pairfp = rp_comp_fixed(p->overhead_pair);
    v->selffp = rp_comp_fixed(p->overhead_self);
}

static void read_clock(struct rp_profile *p, const struct rp_chunk *c)
{
    struct priv *v = p->priv;
    if (c->len < 16)
        return;
    uint64_t t = rp_get64(c->data), ns = rp_get64(c->data + 8);
    if (!v->nclk++) {
        v->clk_first_ticks = t;
        v->clk_first_ns = ns;
    }
    v->clk_last_ticks = t;
    v->clk_last_ns = ns;
}

static void read_thread(struct rp_profile *p, const struct rp_chunk *c, uint32_t only_tid)
{
    if (c->len < 8 || (only_tid && !rp_tid_match(only_tid, rp_get32(c->data))))
        return;
    struct tstate *t = tstate_get(p, rp_get32(c->data));
    if (!t)
        return;
    struct rp_thread *th = &p->threads[t->ti];
    free(th->name);
    th->name = rp_text_dup(c->data + 8, c->len - 8, 0, NULL);
}

static int edge_cmp(const void *a, const void *b)
{
    const struct rp_edge *x = a, *y = b;
    uint64_t kx = (uint64_t)x->caller << 32 | x->callee, ky = (uint64_t)y->caller << 32 | y->callee;
    return kx < ky ? -1 : kx > ky;
}

/* Adds the accumulators of a into the nodes, and its edges into v->em. */
static int acc_merge(struct rp_profile *p, struct acc *a, unsigned __int128 *sq)
{
    struct priv *v = p->priv;
    for (uint32_t i = 0; i < a->nhot && i < p->n_nodes; i++) {
        struct hot *h = &a->hot[i];
        struct rp_node *n = &p->nodes[i];
        if (!h->calls && !h->hist.counts) /* no instant, no span */
            continue;
        n->calls += h->calls;
        v->excl_adj[i] += h->excl;
        n->incl += h->incl;
        n->first_start =
            !n->first_start || ~h->nfirst < n->first_start ? ~h->nfirst : n->first_start;
        n->last_start = h->last > n->last_start ? h->last : n->last_start;
        n->overruns += h->overruns;
        n->cut += h->cut;
        n->offcpu_below += h->offb;
        n->oncpu_max = h->omax > n->oncpu_max ? h->omax : n->oncpu_max;
        n->run_max = h->rmax > n->run_max ? h->rmax : n->run_max;
        n->oncpu_min = ~h->nomin < n->oncpu_min ? ~h->nomin : n->oncpu_min;
        sq[i] += h->sq;
        /* own time: the acc's own counts, or its histogram where every span
         * of it was a leaf (finish() made n's where any acc had one) */
        struct rp_flag_hists *hf = h->fh, *x = n->fh;
        if (x && x->own.counts) {
            const struct rp_hist *src = hf && hf->own.counts ? &hf->own : &h->hist;
            if (rp_hist_merge(&x->own, src))
                return RP_ENOMEM;
            if (src == &h->hist)
                for (unsigned b = 0; b < h->hist.len; b++)
                    x->own.n += h->hist.counts[b];
            else
                x->own.n += src->n;
        }
        if (hf) {
            if (!x && !(x = n->fh = calloc(1, sizeof(*n->fh))))
                return RP_ENOMEM;
            x->aperiodic |= hf->aperiodic;
            if (hf->ivl.counts && !x->aperiodic && rp_hist_merge(&x->ivl, &hf->ivl))
                return RP_ENOMEM;
            fh_free(&h->fh);
        }
        if (h->hist.counts && !n->hist.counts) { /* the node owns it now */
            n->hist.counts = h->hist.counts;
            n->hist.lo = h->hist.lo;
            n->hist.len = h->hist.len;
            h->hist = (struct rp_hist){0};
        } else if (rp_hist_merge(&n->hist, &h->hist)) {
            return RP_ENOMEM;
        } else {
            rp_hist_free(&h->hist);
        }
    }
    /* summed (its histograms are the nodes' or freed): its memory goes before
     * the edges are, which the profile takes over when it has none yet */
    zarr_free(a->hot, a->hot_bytes);
    a->hot = NULL;
    a->hot_bytes = a->nhot = 0;
    int took = !v->em.n && !v->em.cap && a->em.n;
    if (took) {
        v->em = a->em;
        memset(&a->em, 0, sizeof(a->em));
    }
    const struct emap *m = took ? &v->em : &a->em;
    for (uint32_t k = 0; k < m->n; k++) {
        const struct rp_edge *s = &m->edges[k];
        if (!took) {
            struct rp_edge *e = edge_get(&v->em, s->caller, s->callee);
            if (!e)
                return RP_ENOMEM;
            e->calls += s->calls;
            e->incl += s->incl;
            e->incl_calls += s->incl_calls;
            e->min = s->min < e->min ? s->min : e->min;
            e->max = s->max > e->max ? s->max : e->max;
        }
        struct rp_node *n = &p->nodes[s->callee]; /* its spans: see struct hot */
        n->calls += s->calls;
        n->dur_sum += s->incl;
        n->min = s->min < n->min ? s->min : n->min;
        n->max = s->max > n->max ? s->max : n->max;
        n->hist.n += s->calls;
    }
    return 0;
}

/*
 * Ends the spans still open on thread t after its last chunk, with their
 * time, counted as cut (header comment): at the END chunk's ticks when the
 * trace has one (the thread was running when the process ended: exit(), a
 * fatal signal; a thread that ended before had its spans ended by its
 * UNWIND 0), else (SIGKILL, _exit) at its last event.  The thread's last
 * tick moves to that end.  The frames carry their start, their callee time
 * summed over all chunks (so the exclusive time needs no join correction)
 * and their ENTER's event number relative to the thread's last event (the
 * events inside, for compensation).  Counted with the main replayer's
 * accumulators, whose stack is empty here.  Returns 0 or RP_ENOMEM.
 */
static int close_open(struct rp_profile *p, struct tstate *t, struct rp_comp *cp)
{
    struct priv *v = p->priv;
    struct acc *a = &v->acc[ACC_MAIN];
    struct rp_thread *th = &p->threads[t->ti];
    uint64_t end = th->last;
    int rc;

    if (p->ended && p->end_ticks > end)
        end = p->end_ticks;
    if (th->events)
        th->last = end;
    if ((rc = acc_reserve(a, p)) < 0)
        return rc;
    a->chunk = 0;                           /* (no interval to a start in a chunk) */
    for (uint32_t i = 0; i < t->depth; i++) /* activations, for span_count's `outer` */
        a->active[t->stack[i].id]++;
    th->cut += t->depth;
    while (t->depth) {
        struct frame *f = &t->stack[--t->depth];
        uint64_t raw = end >= f->start ? end - f->start : 0, dur = raw;
        uint32_t parent = 0;
        if (cp->on)
            dur = rp_comp_sub(cp, raw, rp_comp_of(cp, f->ev < 0 ? (uint64_t)-f->ev : 0));
        uint64_t acts = f->id != v->offid ? 1 + f->acts : 0;
        if (t->depth) {
            f[-1].child += dur;
            /* (the off-CPU time below it in its last chunk) */
            f[-1].off += f->off + (a->hot[f->id].blocked ? dur : 0);
            f[-1].acts += acts;
            f[-1].pre += f->id == v->offid ? dur : a->hot[f->id].blocked ? 0 : f->pre;
            parent = f[-1].id;
        }
        a->hot[f->id].cut++;
        if ((rc = span_count(a, &a->hot[f->id], f->id, parent, f->start, raw, dur, f->child, f->off,
                             --a->active[f->id] == 0, cp, acts, 0, f->pre)) < 0)
            return rc;
    }
    return 0;
}

/* Converts accumulators to the profile's final fields.  Returns 0 or RP_ENOMEM. */
static int finish(struct rp_profile *p)
{
    struct priv *v = p->priv;
    struct rp_comp cp;
    int rc;

    int on = v->want_comp && p->overhead_known;
    rp_comp_set(&cp, on, v->pairfp, v->selffp, on ? v->res_comp : 1);
    while (v->nres)
        if ((rc = resident_evict(v, &v->ts[v->res[v->nres - 1]])) < 0)
            return rc;
    for (uint32_t i = 0; i < v->nts; i++)
        if (v->ts[i].depth && (rc = close_open(p, &v->ts[i], &cp)) < 0)
            return rc;
    p->comp_clamped += cp.clamped;
    for (uint32_t i = 0; i < v->nts; i++) { /* locks never released (or before a LOST) */
        if (v->ts[i].holds > 0)
            p->threads[v->ts[i].ti].unclosed += (uint64_t)v->ts[i].holds;
        v->ts[i].holds = 0;
    }
    if (v->nclk >= 2 && v->clk_last_ns - v->clk_first_ns >= 10000000u &&
        v->clk_last_ticks > v->clk_first_ticks)
        p->ns_per_tick = (double)(v->clk_last_ns - v->clk_first_ns) /
                         (double)(v->clk_last_ticks - v->clk_first_ticks);
    else if (v->freq_hz > 0)
        p->ns_per_tick = 1e9 / v->freq_hz;
    else
        p->ns_per_tick = 1.0;
    p->total = 0;
    for (uint32_t i = 0; i < p->n_threads; i++) {
        struct rp_thread *th = &p->threads[i];
        if (th->events)
            p->total += th->last - th->first;
        p->lost += th->lost;
        p->unmatched_exits += th->unmatched_exits;
        p->unclosed += th->unclosed;
        p->unwound += th->unwound;
        p->cut += th->cut;
        if (!p->first_tick || (th->events && th->first < p->first_tick))
            p->first_tick = th->first;
        if (th->last > p->last_tick)
            p->last_tick = th->last;
    }

    /* the resolution (comp.h): spans below it are set aside from the
     * histograms here; direct mode's statistics set nothing aside */
    int direct = p->mode && !strcmp(p->mode, "direct");
    uint64_t res = direct ? 0 : v->want_comp && p->overhead_known ? v->res_comp : 1;

    /* the replayers' sums; m2 from the exact sum of squares */
    rc = RP_ENOMEM;
    unsigned __int128 *sq = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*sq));
    if (!sq || adj_reserve(v, p->n_nodes) < 0)
        goto out;
    for (int k = 0; k < ACC_WORKER + v->nworkers; k++) /* own time where any had it */
        for (uint32_t i = 0; i < v->acc[k].nhot && i < p->n_nodes; i++)
            if (v->acc[k].hot[i].fh && v->acc[k].hot[i].fh->own.counts &&
                !rp_node_own(&p->nodes[i]) &&
                ((!p->nodes[i].fh && !(p->nodes[i].fh = calloc(1, sizeof(*p->nodes[i].fh)))) ||
                 rp_hist_cover(&p->nodes[i].fh->own, 0, 0)))
                goto out;
    for (int k = 0; k < ACC_WORKER + v->nworkers; k++) {
        if ((rc = acc_merge(p, &v->acc[k], sq)) < 0)
            goto out;
        acc_free(&v->acc[k]); /* summed: its memory goes before the next one's is read */
    }
    free(p->edges);
    p->edges = v->em.edges;
    p->n_edges = v->em.n;
    p->cap_edges = v->em.capn;
    v->em.edges = NULL;
    v->em.n = v->em.capn = 0;
    v->em.cap = 0; /* the index is stale now */
    free(v->em.keys);
    free(v->em.vals);
    v->em.keys = NULL;
    v->em.vals = NULL;
    /* one order whatever the number of replayers: the results are identical */
    if (p->n_edges)
        qsort(p->edges, p->n_edges, sizeof(*p->edges), edge_cmp);
    for (uint32_t k = 0; k < p->n_edges; k++) /* every span below resolution */
        if (p->edges[k].min == UINT64_MAX)
            p->edges[k].min = 0;
    /* off-CPU time in a node's own frame: its edges to the off-CPU node */
    for (uint32_t k = 0; k < p->n_edges; k++) {
        const struct rp_edge *e = &p->edges[k];
        if (e->callee < p->n_nodes && p->nodes[e->callee].kind == RP_KIND_OFFCPU &&
            e->caller < p->n_nodes)
            p->nodes[e->caller].offcpu += e->incl;
    }
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        struct rp_node *n = &p->nodes[i];
        if (n->kind == 0xff)
            n->kind = RP_KIND_FUNC;
        int64_t x = (int64_t)(n->excl + v->excl_adj[i]);
        n->excl = x > 0 ? (uint64_t)x : 0;
        if (n->fh) { /* intervals too spread are no period */
            struct rp_flag_hists *fx = n->fh;
            if (fx->aperiodic || fx->ivl.len > RP_IVL_OCTAVES * RP_HIST_SUB) {
                fx->aperiodic = 1;
                rp_hist_free(&fx->ivl);
            }
            for (unsigned b = 0; b < fx->ivl.len; b++)
                fx->ivl.n += fx->ivl.counts[b];
        }
        if (res && n->hist.counts) { /* the buckets below the resolution (comp.h) */
            unsigned ib = rp_hist_index(res);
            for (unsigned b = n->hist.lo; b < ib && b < n->hist.lo + n->hist.len; b++) {
                n->below_res += n->hist.counts[b - n->hist.lo];
                n->hist.counts[b - n->hist.lo] = 0;
            }
            n->hist.n -= n->below_res;
        }
        p->below_res += n->below_res;
        if (!n->calls || n->min == UINT64_MAX) /* (every span below resolution) */
            n->min = 0;
        /* on-CPU min: the wall minimum, or less where off-CPU time was below */
        n->oncpu_min = n->oncpu_min < n->min ? n->oncpu_min : n->min;
        if (!n->calls)
            n->oncpu_min = 0;
        if (!n->calls || n->kind == RP_KIND_INSTANT || n->kind == RP_KIND_COUNTER || !sq[i])
            continue;
        double cnt = (double)n->calls;
        n->mean = (double)n->dur_sum / cnt;
        /* m2 = sum (x - mean)^2 = sumsq - sum^2 / n */
        long double m2 = (long double)sq[i] -
                         (long double)n->dur_sum * (long double)n->dur_sum / (long double)cnt;
        n->m2 = m2 > 0 ? (double)m2 : 0.0;
    }
    p->nodes[0].kind = RP_KIND_FUNC;
    /* spans were replayed (direct mode's statistics have no on-CPU maxima) */
    p->oncpu_known = !(p->mode && !strcmp(p->mode, "direct"));
    p->own_known = p->incl_calls_known = p->oncpu_known;
    rc = 0;
out:
    free(sq);
    return rc;
}

/*
 * How many worker threads replay chunks: RANKPROF_REPLAY_JOBS if set (0 =
 * none: everything in order on the calling thread), else one per CPU.
 */
static int replay_workers(void)
{
    const char *e = getenv("RANKPROF_REPLAY_JOBS");
    if (e && *e)
        return atoi(e) < 0 ? 0 : atoi(e);
    long n = sysconf(_SC_NPROCESSORS_ONLN); /* the main thread replays too */
    return n > 1 ? (int)n - 1 : 0;
}

int rp_replay_file(const char *path, const struct rp_replay_opts *o, struct rp_profile *p,
                   rp_chunk_fn fn, void *ctx, char *err, size_t errsz)
{
    struct rp_reader r;
    struct rp_chunk c;
    struct rp_replay_opts none = {0};
    char sub[256];
    int rc;

    if (!o)
        o = &none;
    err[0] = 0;
    if (!p->priv && !(p->priv = calloc(1, sizeof(struct priv))))
        return RP_ENOMEM;
    struct priv *v = p->priv;
    v->p = p;
    v->want_comp = !o->no_compensate;
    if ((rc = nodes_reserve(p, 0)) < 0)
        return rc;
    p->nodes[0].kind = RP_KIND_FUNC;
    if ((rc = rp_reader_open(&r, path)) < 0) {
        snprintf(err, errsz, "%s", r.err);
        return rc;
    }
    r.force = o->force;
    /* A per-chunk callback sees the profile as of its chunk: replay in order. */
    if (!fn)
        workers_start(v, replay_workers());
    while ((rc = rp_reader_next(&r, &c)) > 0) {
        sub[0] = 0;
        /* jobs read the node table: join them before it changes */
        if (c.type != RP_CH_EVENTS && c.type != RP_CH_CLOCK && c.type != RP_CH_THREAD &&
            (rc = drain(p, sub, sizeof(sub))) < 0)
            goto fail;
        switch (c.type) {
        case RP_CH_INFO:
            rc = read_info(p, &c, sub, sizeof(sub));
            overhead_check(p);
            break;
        case RP_CH_CLOCK:
            if ((rc = fixed_len(&c, "CLOCK", 24, sub, sizeof(sub))) == 0)
                read_clock(p, &c);
            break;
        case RP_CH_MAPS:
            free(p->maps);
            p->maps = dupn(c.data, c.len);
            p->maps_len = p->maps ? c.len : 0;
            break;
        case RP_CH_THREAD:
            if ((rc = fixed_len(&c, "THREAD", 8, sub, sizeof(sub))) == 0)
                read_thread(p, &c, o->tid);
            break;
        case RP_CH_DEFS:
            rc = read_defs(p, &c, sub, sizeof(sub));
            break;
        case RP_CH_EVENTS:
            rc = replay_events(p, &c, o->tid, sub, sizeof(sub));
            break;
        case RP_CH_STATS: /* direct mode: stats.c */
            rc = rp_stats_read(p, &c, o->tid, sub, sizeof(sub));
            /* direct mode counts lock holds as intervals from format 1.3 on */
            p->hold_intervals |= r.major == 1 && r.minor >= 3;
            break;
        case RP_CH_FCOUNT: /* throttled calls: stats.c */
            rc = rp_fcount_read(p, &c, o->tid, sub, sizeof(sub));
            break;
        case RP_CH_LOST: /* (format 4.7; the recorder uses the LOST op instead) */
            if ((rc = fixed_len(&c, "LOST", 32, sub, sizeof(sub))) == 0 &&
                (!o->tid || rp_tid_match(o->tid, rp_get32(c.data)))) {
                struct tstate *t = tstate_get(p, rp_get32(c.data));
                if (!t) {
                    rc = RP_ENOMEM;
                    break;
                }
                p->threads[t->ti].lost += rp_get64(c.data + 8);
            }
            break;
        case RP_CH_END:
            if ((rc = fixed_len(&c, "END", 32, sub, sizeof(sub))) < 0)
                break;
            p->ended = 1;
            {
                p->end_status = (int32_t)rp_get32(c.data + 24);
                p->end_flags = rp_get32(c.data + 28);
                /* where frames still open end (close_open): from 1.3 on, when
                 * the process ended; before, when the file was closed, which
                 * may be long after: those end at their thread's last event */
                if (r.minor >= 3)
                    p->end_ticks = rp_get64(c.data);
            }
            break;
        default:
            break; /* unknown chunk types are skipped: newer minor versions */
        }
        if (rc >= 0 && fn)
            rc = fn(ctx, p, &c);
        if (rc < 0)
            goto fail;
    }
    int rd = rc;
    if ((rc = drain(p, sub, sizeof(sub))) < 0)
        goto fail;
    rc = rd;
    if (rc < 0) {
        if (o->force && (rc == RP_ETRUNC || rc == RP_ECRC)) {
            warnf(p, "%s; analysed the %llu bytes before it", r.err, (unsigned long long)r.off);
            rc = 0;
        } else if (rc == RP_ETRUNC || rc == RP_ECRC) {
            snprintf(err, errsz, "%s (--force analyses the chunks before it)", r.err);
            goto out;
        } else {
            snprintf(err, errsz, "%s", r.err);
            goto out;
        }
    }
    if (r.skipped) {
        p->skipped_chunks = r.skipped;
        warnf(p, "%s: skipped %llu damaged chunk(s), the first at offset %llu", path,
              (unsigned long long)r.skipped, (unsigned long long)r.skipped_off);
    }
    if (p->ended && (p->end_flags & RP_END_SIGNAL))
        warnf(p,
              "%s: the program was killed by signal %d; events recorded until then are "
              "all here (the recorder's signal handler flushed them)",
              path, p->end_status);
    if (!p->ended)
        warnf(p,
              "%s: no END record: the program ended abnormally (crash, signal, _exit) "
              "or is still running; events not flushed before that are missing",
              path);
    workers_stop(v);
    if ((rc = finish(p)) < 0)
        goto fail;
    p->compensated = v->want_comp && p->overhead_known && !(p->mode && !strcmp(p->mode, "direct"));
    p->resolution = p->compensated ? v->res_comp : 1;

    rc = 0;
out:
    workers_stop(v);
    rp_reader_close(&r);
    return rc;
fail:
    drain(p, sub + strlen(sub), 0); /* release the jobs; the first error stands */
    if (rc == RP_ENOMEM && !sub[0])
        snprintf(sub, sizeof(sub), "out of memory");
    snprintf(err, errsz, "%s: %s", path, sub);
    goto out;
}

int rp_profile_symbolize(struct rp_profile *p)
{
    if (!p->maps || !p->maps_len)
        return 0;
    struct rp_symbolizer *s = rp_sym_open(p->maps, p->maps_len);
    if (!s)
        return RP_ENOMEM;
    int rc = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        struct rp_node *n = &p->nodes[i];
        /* functions and locks by their address, and the waits on a
         * condition variable (kind wait, class lock) by the condition's */
        if (n->name || !n->calls ||
            (n->kind != RP_KIND_FUNC && n->kind != RP_KIND_LOCK_WAIT &&
             n->kind != RP_KIND_LOCK_HOLD && !(n->kind == RP_KIND_WAIT && n->cls == RP_CLASS_LOCK)))
            continue;
        struct rp_symbol sym = {0};
        if ((rc = rp_sym_lookup(s, n->key, &sym)) < 0)
            break;
        n->name = sym.name;
        if (!n->file) {
            n->file = sym.file;
            n->line = sym.line;
            sym.file = NULL;
        }
        free(n->module);
        n->module = sym.module;
        sym.name = sym.module = NULL;
        rp_sym_clear(&sym);
    }
    rp_sym_close(s);
    return rc;
}

static void priv_free(struct rp_profile *p)
{
    struct priv *v = p->priv;
    if (!v)
        return;
    workers_stop(v);
    for (uint32_t i = 0; i < v->nts; i++) {
        struct rstate *rs = v->ts[i].rs;
        if (rs) {
            free(rs->stack);
            free(rs->froff);
            zarr_free(rs->active, rs->active_bytes);
            free(rs);
        }
        free(v->ts[i].stack);
    }
    free(v->ts);
    free(v->res);
    free(v->tidx);
    free(v->em.keys);
    free(v->em.vals);
    free(v->em.edges);
    for (size_t k = 0; k < sizeof(v->acc) / sizeof(v->acc[0]); k++)
        acc_free(&v->acc[k]);
    for (int i = 0; i < RP_JOBS_MAX; i++) {
        struct job *j = &v->jobs[i];
        free(j->data);
        free(j->in);
        free(j->closed);
        free(j->out);
        free(j->snap);
    }
    free(v->excl_adj);
    free(v);
    p->priv = NULL;
}

void rp_profile_free(struct rp_profile *p)
{
    priv_free(p);
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        free(p->nodes[i].name);
        free(p->nodes[i].file);
        free(p->nodes[i].module);
        rp_hist_free(&p->nodes[i].hist);
        fh_free(&p->nodes[i].fh);
    }
    for (uint32_t i = 0; i < p->n_threads; i++)
        free(p->threads[i].name);
    for (uint32_t i = 0; i < p->n_procs; i++) {
        free(p->procs[i].file);
        free(p->procs[i].run);
        free(p->procs[i].host);
        free(p->procs[i].map);
    }
    free(p->procs);
    free(p->nodes);
    free(p->edges);
    free(p->threads);
    free(p->program);
    free(p->argv);
    free(p->clock_name);
    free(p->mode);
    free(p->maps);
    memset(p, 0, sizeof(*p));
}

const char *rp_node_name(const struct rp_profile *p, const struct rp_node *n, char *buf,
                         size_t bufsz)
{
    (void)p;
    if (n->id == 0)
        return "<root>";
    int cond = n->kind == RP_KIND_WAIT && n->cls == RP_CLASS_LOCK; /* a condition wait */
    if (n->name && n->name[0]) {
        if (n->kind == RP_KIND_WAIT) {
            snprintf(buf, bufsz, "%s%s [wait]", cond ? "cond " : "", n->name);
            return buf;
        }
        if (n->kind == RP_KIND_LOCK_WAIT || n->kind == RP_KIND_LOCK_HOLD) {
            snprintf(buf, bufsz, "%s [%s]", n->name,
                     n->kind == RP_KIND_LOCK_WAIT ? "wait" : "hold");
            return buf;
        }
        return n->name;
    }
    switch (n->kind) {
    case RP_KIND_LOCK_WAIT:
        snprintf(buf, bufsz, "lock@0x%llx [wait]", (unsigned long long)n->key);
        break;
    case RP_KIND_LOCK_HOLD:
        snprintf(buf, bufsz, "lock@0x%llx [hold]", (unsigned long long)n->key);
        break;
    case RP_KIND_WAIT:
        snprintf(buf, bufsz, "%s@0x%llx [wait]", cond ? "cond" : "wait",
                 (unsigned long long)n->key);
        break;
    default:
        snprintf(buf, bufsz, "0x%llx", (unsigned long long)n->key);
    }
    return buf;
}

const char *rp_why_name(unsigned why)
{
    static const char *const name[RP_WHY_N] = {
        [RP_WHY_FULL] = "full",           [RP_WHY_STOPPED] = "stopped",
        [RP_WHY_FAILED] = "failed",       [RP_WHY_NOMEM] = "nomem",
        [RP_WHY_REENTERED] = "reentered", [RP_WHY_GONE] = "gone",
        [RP_WHY_UNENCODED] = "unencoded"};
    return why < RP_WHY_N ? name[why] : NULL;
}

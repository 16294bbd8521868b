// SPDX-License-Identifier: MIT
/*
 * funcs.c - functions switched on and off by name, and the auto-throttle.
 *
 * -finstrument-functions gives the hooks a code address only, and the
 * recorder depends on libc and threads only, so names come from the loaded
 * modules' own ELF symbol tables (fsyms.c).
 *
 * Decision table.  Each code address seen gets one entry in a fixed open-
 * addressing table (RP_FTAB_SLOTS entries of 24 bytes, 1.5 MiB of address
 * space, touched as used; at most 3/4 of the slots are filled):
 *
 *     key   the code address, 0 = empty; stored last, with release
 *     name  its symbol (NULL: none), idx  a dense number (per-thread counters)
 *     st    FE_OFF (the rules switch it off), FE_THROT (throttled)
 *
 * Lookups take no lock; inserts (a miss: find the symbol, apply the rules)
 * and rule changes take `lock`, a spin lock held only off the hot path and
 * never across a call back into the program.  A miss on an address that no
 * known module holds scans dl_iterate_phdr again, which is how functions of
 * modules dlopen'ed later are named; every address is inserted once, named
 * or not.  When the table is full, later functions are decided again at
 * every event (a symbol search and the rules: slow, still right).
 *
 * Rules: RANKPROF_FILTER (the same list as for profile points, sites.c),
 * then every rp_func_enable() call, in order; the last rule whose glob
 * matches a function's name wins; with an include rule in RANKPROF_FILTER,
 * a name that no rule matches is off (a function without a symbol has the
 * name "").  rp_func_enable_addr() sets one address's switch directly.
 *
 * Shadow stack.  Per thread, a stack of the frames entered while gated:
 * the address, its entry, and the ticks of its recorded enter (0: its enter
 * was not recorded).  The exit pops its frame and is recorded exactly when
 * the enter was, so switching a function while it runs, or throttling it,
 * never unbalances the trace: an off function's callees appear under its
 * caller.  An exit whose address is not on top (a longjmp skipped exits)
 * drops the frames above its own; an exit with no frame (entered before the
 * gate was set, or deeper than RP_FDEPTH) is recorded if its function is on
 * now.  A signal handler's events nest on the same stack: the depth moves
 * before the frame is written, and pops read the frame before moving it.
 *
 * Throttle (RANKPROF_THROTTLE=CALLS:NS, TAU's rule): at each recorded exit
 * the thread adds the call and its inclusive ticks to its counters for the
 * function; once it has seen more than CALLS calls with a mean under NS the
 * function is throttled for every thread: its enters and exits are no
 * longer recorded, only counted, per thread, and the counts are written as
 * FCOUNT chunks at the end (a crash or _exit loses them; the calls recorded
 * before stay).  Except one call in K (RANKPROF_THROTTLE=CALLS:NS:K,
 * RP_THROTTLE_SAMPLE by default, 0: none), per thread and function, which
 * is recorded as before: the function's times go on being measured on a
 * sample of its calls, at the cost of one more counter per throttled call
 * (count_throttled, already off the fast path).  Per-thread counters live in pages of RP_FPAGE
 * functions, mapped when first used.
 */
#define _GNU_SOURCE
#include "funcs.h"

#include <errno.h>
#include <fnmatch.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/bytes.h"
#include "fsyms.h"
#include "rt.h"
#include "rt_int.h"
#include "sites.h"

#define RP_FTAB_BITS  16
#define RP_FTAB_SLOTS (1u << RP_FTAB_BITS)
#define RP_FTAB_MAX   (RP_FTAB_SLOTS / 4 * 3) /* entries at most; idx 1..MAX */
#define RP_FRULES_MAX 64
#define RP_FDEPTH     4096 /* shadow frames per thread */
#define RP_FPAGE      256  /* per-thread counters per page */
#define RP_FPAGES     ((RP_FTAB_MAX + RP_FPAGE) / RP_FPAGE)

#define FE_OFF   1u
#define FE_THROT 2u
#define FE_SUBIN 4u /* a subtree rule keeps it and what it calls (record -F) */
#define FE_SUBEX 8u /* a subtree rule leaves it and what it calls out (record -N) */
#define FE_SUB   (FE_SUBIN | FE_SUBEX)

struct fent {
    _Atomic uint64_t key;
    const char *name;
    uint32_t idx;
    _Atomic uint32_t st;
};

struct frule {
    char *pattern;
    int on;
};

struct fframe {
    uint64_t fn;
    struct fent *e; /* NULL: not in the table (full) */
    uint64_t t0;    /* ticks of the recorded enter; 0: not recorded */
    uint32_t sub;   /* its FE_SUB bits, counted in the thread's insub/exsub */
};

/* counters of one function on one thread; only `throttled` is read by
 * other threads (at the end), with relaxed atomics */
struct fstat {
    uint64_t calls, ticks; /* recorded calls, their inclusive ticks */
    uint64_t throttled;    /* calls counted, not recorded */
    uint64_t skip;         /* throttled calls since the last one timed (thr_sample) */
};

struct fthread {
    uint32_t depth; /* frames pushed; those at RP_FDEPTH and beyond are not kept */
    uint32_t tid;
    /* Subtree rules (RANKPROF_SUBTREE): the kept frames of included and of
     * excluded functions open on the thread, and whether nothing is
     * recorded now (block: under an excluded one, or under no included one
     * when there are include rules) */
    uint32_t insub, exsub, block;
    struct fstat *pages[RP_FPAGES];
    struct fthread *next;
    struct fframe frames[RP_FDEPTH];
};

/* what an ended thread leaves: its (address, throttled calls) pairs */
struct fdone {
    uint32_t tid;
    size_t n;
    struct fdone *next;
    uint64_t pairs[][2];
};

RP_HIDDEN uint8_t rp_funcs_gate;

/*
 * Invariant: tab[] entries with a key are complete (name, idx, st written
 * before the key, release); byidx[i] is the entry with idx i.  Everything
 * but the entries' key and st is guarded by lock.
 */
static struct fent tab[RP_FTAB_SLOTS];
static struct fent *byidx[RP_FTAB_MAX + 1];

static struct {
    atomic_flag lock;
    uint32_t count; /* entries in tab */
    int full_warned;
    struct frule rules[RP_FRULES_MAX];
    unsigned nrules;
    int default_off;
    struct fthread *threads; /* the running threads' states, pushed at the head */
    struct fdone *done;      /* the ended threads' counts */
    pthread_key_t key;
    int have_key;
    int quiet;
} fs = {.lock = ATOMIC_FLAG_INIT};

/* the throttle; calls 0 = off; sample: 1 throttled call in that many is
 * timed (recorded), 0 = none.  Set once at start-up. */
static uint64_t thr_calls, thr_ticks, thr_sample;

/* Subtree rules (RANKPROF_SUBTREE, `record -F/-N`), set once at start-up:
 * "glob" keeps the functions it names and what they call, "-glob" leaves
 * them and what they call out.  sub_in: there is an include rule. */
static struct frule srules[RP_FRULES_MAX];
static unsigned nsrules;
static int sub_in;

static __thread struct fthread *ft;
static __thread int ft_busy; /* inside this file's slow path, or its state is gone */

static void fs_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&fs.lock, memory_order_acquire))
        sched_yield();
}

static void fs_unlock(void)
{
    atomic_flag_clear_explicit(&fs.lock, memory_order_release);
}

/* Takes the lock within ms milliseconds, yielding; returns 0, or -1 when
 * it stays taken (a thread that holds it loads the tables, or was stopped
 * for good by a fatal signal).  Async-signal-safe. */
static int fs_lock_within(long ms)
{
    struct timespec t0, t1;
    unsigned spins = 0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (atomic_flag_test_and_set_explicit(&fs.lock, memory_order_acquire)) {
        if (!(++spins & 63)) {
            clock_gettime(CLOCK_MONOTONIC, &t1);
            if ((t1.tv_sec - t0.tv_sec) * 1000L + (t1.tv_nsec - t0.tv_nsec) / 1000000L > ms)
                return -1;
        }
        sched_yield();
    }
    return 0;
}

RP_HIDDEN void rp_funcs_warn(const char *msg)
{
    if (fs.quiet)
        return;
    rp_rt_say(msg, strlen(msg));
}

/*
 * The start of the function holding code address a (the address its enter
 * hook records), or 0 when no symbol of a loaded module holds it.  For the
 * encoding of unwind.c's records (the writer, or a thread encoding its own
 * buffer): a module already scanned is searched without the lock
 * (fsyms.c), so threads landing at once do not wait for each other; the
 * first lookup loads the symbol tables and one in no known module
 * rescans them, under the lock.  Never waits long: when the lock stays
 * taken two seconds (a thread that died holding it, at a fatal signal) it
 * gives up and returns 0.
 */
RP_HIDDEN uint64_t rp_funcs_start_of(uint64_t a)
{
    int held;
    const struct fsym *s = rp_fsyms_find_loaded(a, &held); /* (no lock: fsyms.c) */
    if (held)
        return s ? s->addr : 0;
    /* the holder may be loading the tables (milliseconds; every thread's
     * first landing comes here): two seconds, not a number of yields
     * (threads landing at once gave up during the load) */
    if (fs_lock_within(2000) < 0)
        return 0;
    rp_fsyms_load();
    s = rp_fsyms_find(a);
    uint64_t start = s ? s->addr : 0;
    fs_unlock();
    return start;
}

RP_HIDDEN uint64_t rp_funcs_start_of_loaded(uint64_t a)
{
    int held;
    /* no lock (fsyms.c): threads landing at once never wait for each
     * other (with the table's lock, taken by another thread's lookup a
     * moment, four threads catching at once missed landings in most runs) */
    const struct fsym *s = rp_fsyms_find_loaded(a, &held); /* no rescan, no loading */
    return s ? s->addr : 0;
}

RP_HIDDEN const char *rp_funcs_name_of(uint64_t a, char *buf, size_t n)
{
    const char *r = NULL;
    fs_lock();
    rp_fsyms_load();
    const struct fsym *s = rp_fsyms_find(a);
    if (s && s->addr == a && s->name && *s->name) {
        snprintf(buf, n, "%s", s->name);
        r = buf;
    }
    fs_unlock();
    return r;
}

RP_HIDDEN void rp_funcs_preload(void)
{
    fs_lock();
    rp_fsyms_load();
    fs_unlock();
}

/* ---- rules and the table -------------------------------------------------- */

/* Whether the rules switch the function named name on (lock held). */
static int rules_on_locked(const char *name)
{
    int on = !fs.default_off;
    for (unsigned i = 0; i < fs.nrules; i++)
        if (fnmatch(fs.rules[i].pattern, name ? name : "", 0) == 0)
            on = fs.rules[i].on;
    return on;
}

/* The FE_SUB bits of the function named name: the subtree rules' (set at
 * start-up, read without the lock). */
static uint32_t sub_of(const char *name)
{
    uint32_t st = 0;
    for (unsigned i = 0; i < nsrules; i++)
        if (fnmatch(srules[i].pattern, name ? name : "", 0) == 0)
            st |= srules[i].on ? FE_SUBIN : FE_SUBEX;
    return st;
}

static inline uint32_t slot_of(uint64_t a)
{
    return (uint32_t)((a * 0x9E3779B97F4A7C15ull) >> (64 - RP_FTAB_BITS));
}

/* The entry of address a, or NULL if it has none yet.  Lock-free. */
static inline struct fent *tab_find(uint64_t a)
{
    for (uint32_t i = slot_of(a);; i = (i + 1) & (RP_FTAB_SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&tab[i].key, memory_order_acquire);
        if (likely(k == a))
            return &tab[i];
        if (!k)
            return NULL;
    }
}

/* The entry of address a, inserted (named, decided) if new.  NULL when the
 * table is full.  Lock held. */
static struct fent *tab_get_locked(uint64_t a)
{
    uint32_t i = slot_of(a);
    for (;; i = (i + 1) & (RP_FTAB_SLOTS - 1)) {
        uint64_t k = atomic_load_explicit(&tab[i].key, memory_order_relaxed);
        if (k == a)
            return &tab[i];
        if (!k)
            break;
    }
    if (fs.count >= RP_FTAB_MAX) {
        if (!fs.full_warned++)
            rp_funcs_warn("rankprof: function table full; later functions are decided per call\n");
        return NULL;
    }
    rp_fsyms_load();
    struct fent *e = &tab[i];
    e->name = rp_fsyms_name(a);
    e->idx = ++fs.count;
    byidx[e->idx] = e;
    atomic_store_explicit(&e->st, (rules_on_locked(e->name) ? 0 : FE_OFF) | sub_of(e->name),
                          memory_order_relaxed);
    atomic_store_explicit(&e->key, a, memory_order_release);
    return e;
}

/*
 * The slow part of a lookup: the entry of a, made if new (NULL when the
 * table is full; *st then holds the rules' decision for a).  Takes the lock;
 * ft_busy keeps a signal handler that runs instrumented code from taking it
 * again on this thread (its events are then not recorded).
 */
static RP_NOINLINE struct fent *tab_miss(uint64_t a, uint32_t *st)
{
    ft_busy++;
    fs_lock();
    struct fent *e = tab_get_locked(a);
    const char *name = e ? NULL : rp_fsyms_name(a);
    *st = e ? atomic_load_explicit(&e->st, memory_order_relaxed)
            : (rules_on_locked(name) ? 0 : FE_OFF) | sub_of(name);
    fs_unlock();
    ft_busy--;
    return e;
}

/* ---- per-thread state ----------------------------------------------------- */

/*
 * Thread exit (the key's destructor): keeps the thread's throttled counts as
 * (address, count) pairs and unmaps its state.  If the pairs cannot be
 * allocated they are lost (the recorded calls stay).  Later events of the
 * thread are decided by the table alone.
 */
static void thread_gone(void *arg)
{
    struct fthread *t = arg;
    size_t n = 0, k = 0;
    ft_busy = 1;
    ft = NULL;
    for (uint32_t p = 0; p < RP_FPAGES; p++)
        for (uint32_t i = 0; t->pages[p] && i < RP_FPAGE; i++)
            n += t->pages[p][i].throttled != 0;
    struct fdone *d = n ? malloc(sizeof(*d) + n * sizeof(d->pairs[0])) : NULL;
    fs_lock();
    for (struct fthread **pp = &fs.threads; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    for (uint32_t p = 0; p < RP_FPAGES; p++) {
        for (uint32_t i = 0; d && t->pages[p] && i < RP_FPAGE; i++) {
            uint64_t c = t->pages[p][i].throttled;
            uint32_t idx = p * RP_FPAGE + i;
            if (c && idx && idx <= RP_FTAB_MAX && byidx[idx]) {
                d->pairs[k][0] = atomic_load_explicit(&byidx[idx]->key, memory_order_relaxed);
                d->pairs[k++][1] = c;
            }
        }
        if (t->pages[p])
            munmap(t->pages[p], rp_rt_map_len(RP_FPAGE * sizeof(struct fstat)));
    }
    if (d) {
        d->tid = t->tid;
        d->n = k;
        d->next = fs.done;
        fs.done = d;
    }
    fs_unlock();
    munmap(t, rp_rt_map_len(sizeof(*t)));
}

/* The calling thread's state, made on its first gated event.  NULL when it
 * cannot be (no memory, or the thread is ending). */
static RP_NOINLINE struct fthread *thread_new(void)
{
    if (ft_busy)
        return NULL;
    ft_busy++;
    struct fthread *t = mmap(NULL, rp_rt_map_len(sizeof(*t)), PROT_READ | PROT_WRITE,
                             MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (t == MAP_FAILED) {
        ft_busy--;
        return NULL;
    }
    t->tid = rp_thread_stream((uint32_t)syscall(SYS_gettid)); /* as rt.c's (format 1.3) */
    t->block = sub_in; /* (with include rules: nothing until one is entered) */
    fs_lock();
    t->next = fs.threads;
    fs.threads = t;
    int have = fs.have_key;
    fs_unlock();
    if (have)
        pthread_setspecific(fs.key, t);
    ft = t;
    ft_busy--;
    return t;
}

/* The counters of entry e on thread t, NULL if its page cannot be mapped. */
static inline struct fstat *stat_of(struct fthread *t, const struct fent *e)
{
    uint32_t p = e->idx / RP_FPAGE;
    if (unlikely(!t->pages[p])) {
        void *m = mmap(NULL, rp_rt_map_len(RP_FPAGE * sizeof(struct fstat)), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            return NULL;
        __atomic_store_n(&t->pages[p], (struct fstat *)m, __ATOMIC_RELEASE);
    }
    return &t->pages[p][e->idx % RP_FPAGE];
}

/* ---- the hooks' rare path ------------------------------------------------- */

/*
 * Appends word with the clock read here and returns that reading (never 0:
 * a frame's t0 of 0 means "not recorded").  rp_append_at stamps the record
 * with it on the fast path; its rare path stamps a later reading of its own.
 */
static inline uint64_t append_timed(uint64_t word)
{
    uint64_t now = rp_ticks();
    rp_append_at(RP_CLASS_BIT_FUNC, word, now);
    return now ? now : 1;
}

/* The decision for address a without a usable entry or thread state. */
static uint32_t decide_slow(uint64_t a, struct fent **e)
{
    if ((*e = tab_find(a)))
        return atomic_load_explicit(&(*e)->st, memory_order_relaxed);
    if (ft_busy)
        return FE_OFF; /* a signal handler inside tab_miss, or the thread is ending */
    uint32_t st;
    *e = tab_miss(a, &st);
    return st;
}

/* Counts a call of throttled function e on thread t (while functions are
 * recorded at all), or, for one call in thr_sample when the caller can
 * record it (can), returns 1: that call is recorded, timed, instead. */
static RP_NOINLINE int count_throttled(struct fthread *t, const struct fent *e, int can)
{
    if (!(atomic_load_explicit(&rp_rt.mask, memory_order_relaxed) & RP_CLASS_BIT_FUNC))
        return 0;
    struct fstat *s = stat_of(t, e);
    if (!s)
        return 0;
    if (thr_sample && ++s->skip >= thr_sample && can) {
        s->skip = 0;
        return 1;
    }
    __atomic_store_n(&s->throttled, s->throttled + 1, __ATOMIC_RELAXED);
    return 0;
}

/* Counts frame f's subtree bits sub (FE_SUB) on thread t: an enter. */
static inline void sub_push(struct fthread *t, struct fframe *f, uint32_t sub)
{
    f->sub = sub;
    t->insub += !!(sub & FE_SUBIN);
    t->exsub += !!(sub & FE_SUBEX);
    t->block = t->exsub || (sub_in && !t->insub);
}

/* Takes a popped frame's subtree bits sub off thread t. */
static inline void sub_pop(struct fthread *t, uint32_t sub)
{
    t->insub -= !!(sub & FE_SUBIN);
    t->exsub -= !!(sub & FE_SUBEX);
    t->block = t->exsub || (sub_in && !t->insub);
}

/* Records the enter of frame f with the throttle on: its ticks are kept. */
static RP_NOINLINE void enter_timed(struct fframe *f, uint64_t a)
{
    f->t0 = append_timed(rp_raw_word(RP_RAW_FUNC_ENTER, a));
}

/*
 * The enter's rare path: no thread state yet, an address not in the table
 * (or not in its first slots), a stack deeper than RP_FDEPTH.  Same result
 * as the fast path.
 */
static RP_NOINLINE void enter_slow(uint64_t a)
{
    struct fent *e;
    uint32_t st = decide_slow(a, &e);
    struct fthread *t = ft;
    if (!t && !(t = thread_new())) {
        if (!st && !sub_in) /* (no state: subtree rules cannot be followed) */
            rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_ENTER, a));
        return;
    }
    uint32_t d = t->depth;
    t->depth = d + 1;
    atomic_signal_fence(memory_order_seq_cst);
    struct fframe *f = d < RP_FDEPTH ? &t->frames[d] : NULL;
    if (f) {
        *f = (struct fframe){a, e, 0, 0};
        if (st & FE_SUB)
            sub_push(t, f, st & FE_SUB);
    }
    st &= ~FE_SUB;
    if (t->block)
        return; /* under an excluded function, or under no included one */
    if (st) {
        if (st == FE_THROT && e && count_throttled(t, e, f != NULL))
            enter_timed(f, a); /* the sample: recorded */
        return;
    }
    if (thr_calls && f) {
        enter_timed(f, a);
        return;
    }
    if (f)
        f->t0 = 1;
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_ENTER, a));
}

/* Records the enter of frame f of the function at a: timed when the
 * throttle is on, else marked recorded (t0 1). */
static inline void enter_record(struct fframe *f, uint64_t a)
{
    if (thr_calls) {
        enter_timed(f, a);
        return;
    }
    f->t0 = 1;
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_ENTER, a));
}

/*
 * The enter of frame f (pushed) of function e at a whose state st is not 0
 * (off, throttled, a subtree rule's) or on a thread whose subtree rules
 * block it.  Same result as enter_slow.
 */
static RP_NOINLINE void enter_gated(struct fthread *t, struct fframe *f, struct fent *e,
                                    uint32_t st, uint64_t a)
{
    if (st & FE_SUB)
        sub_push(t, f, st & FE_SUB);
    st &= ~FE_SUB;
    if (t->block)
        return;
    if (st) {
        if (st == FE_THROT && count_throttled(t, e, 1))
            enter_timed(f, a); /* the sample: recorded */
        return;
    }
    enter_record(f, a);
}

/*
 * The fast path of a gated enter: a leaf that leaves through one tail call
 * for everything unusual.  Pushes the frame (the depth first, so a signal
 * handler's frames go above it), then records the enter if the function is
 * on.  A recorded enter whose class is off is dropped by rp_append, and so
 * is its exit (unless the class comes back on in between: an unmatched
 * exit, as without the gate).
 */
RP_HIDDEN RP_NOINLINE void rp_funcs_enter(uintptr_t fn)
{
    uint64_t a = fn & RP_RAW_PAYLOAD;
    struct fthread *t = ft;
    struct fent *e = tab_find(a);
    if (unlikely(!t || !e || t->depth >= RP_FDEPTH)) {
        enter_slow(a);
        return;
    }
    uint32_t st = atomic_load_explicit(&e->st, memory_order_relaxed);
    uint32_t d = t->depth;
    t->depth = d + 1;
    atomic_signal_fence(memory_order_seq_cst);
    struct fframe *f = &t->frames[d];
    f->fn = a;
    f->e = e;
    f->t0 = 0;
    f->sub = 0;
    if (st | t->block) {
        enter_gated(t, f, e, st, a);
        return;
    }
    enter_record(f, a);
}

/* Records the exit of a timed frame (throttle on) and adds the call to the
 * thread's counters of e; throttles e when it has been called more than
 * thr_calls times with a mean under thr_ticks. */
static RP_NOINLINE void exit_timed(struct fthread *t, struct fent *e, uint64_t t0, uint64_t a)
{
    uint64_t t1 = append_timed(rp_raw_word(RP_RAW_FUNC_EXIT, a));
    struct fstat *s = e ? stat_of(t, e) : NULL;
    if (!s)
        return;
    s->calls++;
    s->ticks += t1 > t0 ? t1 - t0 : 0;
    if (unlikely(s->calls > thr_calls) && s->ticks < thr_ticks * s->calls)
        atomic_fetch_or_explicit(&e->st, FE_THROT, memory_order_relaxed);
}

/* The exit's rare path: no thread state, no frame of fn on top. */
static RP_NOINLINE void exit_slow(uint64_t a)
{
    struct fthread *t = ft;
    uint32_t d = t ? t->depth : 0;
    if (d > RP_FDEPTH) { /* a frame that was not kept */
        t->depth = d - 1;
        goto by_table;
    }
    while (d && t->frames[d - 1].fn != a) /* exits skipped by a longjmp */
        d--;
    if (!d)
        goto by_table;
    struct fframe f = t->frames[d - 1];
    atomic_signal_fence(memory_order_seq_cst);
    for (uint32_t k = t->depth < RP_FDEPTH ? t->depth : RP_FDEPTH; k-- > d - 1;)
        if (t->frames[k].sub)
            sub_pop(t, t->frames[k].sub);
    t->depth = d - 1;
    if (!f.t0)
        return;
    if (thr_calls) {
        exit_timed(t, f.e, f.t0, a);
        return;
    }
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_EXIT, a));
    return;
by_table:; /* no frame: entered before the gate, or not kept */
    struct fent *e;
    if (!(decide_slow(a, &e) & ~FE_SUB) && !(t ? t->block != 0 : sub_in != 0))
        rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_EXIT, a));
}

/* The fast path of a gated exit: pops the frame of fn and records the exit
 * exactly when its enter was recorded.  A leaf, like the enter. */
RP_HIDDEN RP_NOINLINE void rp_funcs_exit(uintptr_t fn)
{
    uint64_t a = fn & RP_RAW_PAYLOAD;
    struct fthread *t = ft;
    uint32_t d;
    if (unlikely(!t || (d = t->depth) - 1 >= RP_FDEPTH || t->frames[d - 1].fn != a)) {
        exit_slow(a);
        return;
    }
    uint64_t t0 = t->frames[d - 1].t0;
    struct fent *e = t->frames[d - 1].e;
    uint32_t sub = t->frames[d - 1].sub;
    atomic_signal_fence(memory_order_seq_cst);
    t->depth = d - 1;
    if (unlikely(sub))
        sub_pop(t, sub);
    if (!t0)
        return;
    if (thr_calls) {
        exit_timed(t, e, t0, a);
        return;
    }
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_EXIT, a));
}

RP_HIDDEN uint64_t rp_funcs_landing(uint64_t pc, uint64_t *end)
{
    struct fthread *t = ft;
    uint64_t fn = pc ? rp_funcs_start_of_loaded(pc) : 0;
    *end = 0;
    if (!t || !fn || t->depth > RP_FDEPTH)
        return pc; /* (frames beyond RP_FDEPTH are not kept: cannot tell) */
    uint32_t d = t->depth, k = d;
    while (k && t->frames[k - 1].fn != fn)
        k--;
    if (!k)
        return pc;    /* no frame of it: an uninstrumented landing, nothing to pop */
    uint32_t low = d; /* the outermost recorded frame the jump leaves */
    for (uint32_t i = d; i-- > k;) {
        if (t->frames[i].sub)
            sub_pop(t, t->frames[i].sub);
        if (t->frames[i].t0)
            low = i;
    }
    atomic_signal_fence(memory_order_seq_cst);
    t->depth = k;
    uint32_t r = k;
    while (r && !t->frames[r - 1].t0)
        r--;
    if (r)
        return r == k ? pc : t->frames[r - 1].fn;
    if (low == d)
        return 0; /* no recorded frame open: nothing to say */
    *end = t->frames[low].fn;
    return *end;
}

/* ---- start, end, fork ----------------------------------------------------- */

/* Adds a rule (lock held).  Returns 0, RP_ENOMEM or RP_EBUSY (table full). */
static int rule_add_locked(const char *pattern, int on)
{
    if (fs.nrules == RP_FRULES_MAX)
        return RP_EBUSY;
    char *c = strdup(pattern);
    if (!c)
        return RP_ENOMEM;
    fs.rules[fs.nrules++] = (struct frule){c, on};
    return 0;
}

static void atfork_child(void)
{
    /* the child's trace is its own: the parent's counts are not its calls,
     * and the other threads do not exist here (their states leak, bounded) */
    atomic_flag_clear(&fs.lock);
    fs.threads = NULL;
    fs.done = NULL;
    struct fthread *t = ft;
    if (t) {
        for (uint32_t p = 0; p < RP_FPAGES; p++)
            if (t->pages[p])
                memset(t->pages[p], 0, RP_FPAGE * sizeof(struct fstat));
        t->next = NULL;
        fs.threads = t;
    }
}

/* Parses "CALLS:NS[:K]" (CALLS or NS may be left out: "CALLS", ":NS",
 * "::K") into the throttle's limits and its sample (1 call in K timed
 * after the throttle, 0: none); "1", "on" or "" is the defaults, "0" is
 * off.  Returns 0, or -1 for anything else. */
static int throttle_parse(const char *s, uint64_t *calls, uint64_t *ns, uint64_t *k)
{
    *calls = 100000;
    *ns = 10000;
    *k = RP_THROTTLE_SAMPLE;
    if (!strcmp(s, "0")) {
        *calls = 0;
        return 0;
    }
    if (!*s || !strcmp(s, "1") || !strcmp(s, "on"))
        return 0;
    char *e;
    if (*s != ':') {
        errno = 0;
        *calls = strtoull(s, &e, 10);
        if (errno || e == s || !*calls)
            return -1;
        s = e;
    }
    if (*s == ':' && s[1] != ':') {
        errno = 0;
        *ns = strtoull(s + 1, &e, 10);
        if (errno || e == s + 1 || !*ns)
            return -1;
        s = e;
    } else if (*s == ':') {
        s++;
    }
    if (*s == ':') {
        errno = 0;
        *k = strtoull(s + 1, &e, 10);
        if (errno || e == s + 1 || *k > UINT32_MAX)
            return -1;
        s = e;
    }
    return *s ? -1 : 0;
}

RP_HIDDEN void rp_funcs_start(int quiet)
{
    fs.quiet = quiet;
    const char *f = getenv("RANKPROF_FILTER");
    const char *th = getenv("RANKPROF_THROTTLE");
    char pat[512];
    int on, r, any = 0;
    fs_lock();
    while ((r = rp_filter_next(&f, pat, sizeof(pat), &on)) != 0) {
        if (r < 0)
            continue; /* sites.c warns about the same rules */
        fs.default_off |= on;
        rule_add_locked(pat, on);
        any = 1;
    }
    const char *sub = getenv("RANKPROF_SUBTREE");
    while (nsrules < RP_FRULES_MAX && (r = rp_filter_next(&sub, pat, sizeof(pat), &on)) != 0) {
        char *c = r > 0 ? strdup(pat) : NULL;
        if (!c) {
            rp_funcs_warn("rankprof: ignoring a RANKPROF_SUBTREE rule: too long\n");
            continue;
        }
        srules[nsrules++] = (struct frule){c, on};
        sub_in |= on;
        any = 1;
    }
    fs.have_key = pthread_key_create(&fs.key, thread_gone) == 0;
    fs_unlock();
    if (th) {
        uint64_t n, ns, k;
        if (throttle_parse(th, &n, &ns, &k) < 0) {
            rp_funcs_warn("rankprof: ignoring RANKPROF_THROTTLE: not CALLS:NS[:K]\n");
        } else if (n) {
            double tk = (double)ns * (rp_rt.freq > 0 ? rp_rt.freq : 1e9) / 1e9;
            thr_ticks = tk < 1 ? 1 : (uint64_t)tk;
            thr_calls = n;
            thr_sample = k;
            any = 1;
        }
    }
    pthread_atfork(NULL, NULL, atfork_child);
    if (any)
        __atomic_store_n(&rp_funcs_gate, 1, __ATOMIC_RELAXED);
}

/* Appends pair (key, c) to *buf (*len used, *cap mapped: rp_map_grow, as
 * the final flush may run in a signal handler that interrupted malloc).
 * Returns 0, or -1 when out of memory (the pair is lost). */
static int pair_put(uint8_t **buf, size_t *len, size_t *cap, uint64_t key, uint64_t c)
{
    if (rp_map_grow((void **)buf, cap, *len + 16, RP_CHUNK_MAX) < 0)
        return -1;
    rp_put64(*buf + *len, key);
    rp_put64(*buf + *len + 8, c);
    *len += 16;
    return 0;
}

/* Writes buf[0..len) as thread tid's FCOUNT chunk if it holds a pair. */
static void chunk_out(uint8_t *buf, size_t len, uint32_t tid,
                      void (*out)(uint32_t, const void *, size_t))
{
    if (len <= 8)
        return;
    rp_put32(buf, tid);
    rp_put32(buf + 4, (uint32_t)thr_sample); /* format 1.3: 1 in that many timed */
    out(RP_CH_FCOUNT, buf, len);
}

RP_HIDDEN void rp_funcs_write(void (*out)(uint32_t type, const void *payload, size_t len),
                              int fatal)
{
    if (!thr_calls)
        return;
    uint8_t *buf = NULL;
    size_t cap = 0, len;
    if (!fatal)
        fs_lock();
    else if (fs_lock_within(100) < 0) /* (the signal may have stopped its holder for good) */
        return;
    for (struct fthread *t = fs.threads; t; t = t->next) {
        len = 8;
        for (uint32_t p = 0; p < RP_FPAGES; p++) {
            struct fstat *pg = __atomic_load_n(&t->pages[p], __ATOMIC_ACQUIRE);
            for (uint32_t i = 0; pg && i < RP_FPAGE; i++) {
                uint64_t c = __atomic_load_n(&pg[i].throttled, __ATOMIC_RELAXED);
                uint32_t idx = p * RP_FPAGE + i;
                if (c && idx && idx <= RP_FTAB_MAX && byidx[idx] &&
                    pair_put(&buf, &len, &cap, atomic_load(&byidx[idx]->key), c) < 0)
                    break;
            }
        }
        chunk_out(buf, len, t->tid, out);
    }
    for (struct fdone *d = fs.done; d; d = d->next) {
        len = 8;
        for (size_t i = 0;
             i < d->n && pair_put(&buf, &len, &cap, d->pairs[i][0], d->pairs[i][1]) == 0; i++)
            ;
        chunk_out(buf, len, d->tid, out);
    }
    fs_unlock();
    rp_map_free(buf, cap);
}

/* ---- public API ----------------------------------------------------------- */

RP_API int rp_func_enable(const char *pattern, int on)
{
    if (!pattern)
        return RP_EINVAL;
    int n = 0;
    ft_busy++;
    fs_lock();
    rp_fsyms_load();
    n = rp_fsyms_count(pattern);
    for (uint32_t i = 1; i <= fs.count; i++) {
        struct fent *e = byidx[i];
        if (fnmatch(pattern, e->name ? e->name : "", 0) != 0)
            continue;
        if (on)
            atomic_fetch_and_explicit(&e->st, ~FE_OFF, memory_order_relaxed);
        else
            atomic_fetch_or_explicit(&e->st, FE_OFF, memory_order_relaxed);
    }
    if (rule_add_locked(pattern, on) < 0 && !fs.full_warned++)
        rp_funcs_warn("rankprof: too many rp_func_enable rules; functions seen later miss some\n");
    fs_unlock();
    ft_busy--;
    __atomic_store_n(&rp_funcs_gate, 1, __ATOMIC_RELAXED);
    return n;
}

RP_API int rp_func_enable_addr(void (*fn)(void), int on)
{
    if (!fn)
        return RP_EINVAL;
    ft_busy++;
    fs_lock();
    struct fent *e = tab_get_locked((uintptr_t)fn & RP_RAW_PAYLOAD);
    if (e && on)
        atomic_fetch_and_explicit(&e->st, ~FE_OFF, memory_order_relaxed);
    else if (e)
        atomic_fetch_or_explicit(&e->st, FE_OFF, memory_order_relaxed);
    fs_unlock();
    ft_busy--;
    if (!e)
        return RP_ENOMEM;
    __atomic_store_n(&rp_funcs_gate, 1, __ATOMIC_RELAXED);
    return 0;
}

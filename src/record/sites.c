// SPDX-License-Identifier: MIT
/*
 * sites.c - profile points: the registry of sites, their run-time switch and
 * name filter, hooks, budgets, and the functions the public macros call.
 *
 * Registry.  Every struct rp_site lives in its module's "rp_sites" section.
 * Each translation unit that includes rankprof.h carries a constructor that
 * calls rp_sites_register(__start_rp_sites, __stop_rp_sites) with its own
 * module's bounds (the linker gives every executable and shared library its
 * own pair, hidden), so the registry is a small table of sections, one per
 * module, deduplicated by start address and reference-counted by the
 * destructors that run at dlclose or exit.  Nothing is allocated per site
 * while a module is loaded, and no
 * site has to run before it can be found: rp_site_enable() and the filter
 * walk the sections.  When a module goes away (its destructor runs before
 * the recorder's final flush at exit, and dlclose unmaps it), its sites'
 * descriptions are copied first, so records still buffered are described
 * from the copy; the copies are never freed (the writer may hold their
 * strings), a bounded cost per unloaded module.  The table is bounded (RP_MODULES_MAX); a module
 * beyond it still records, but is not reached by name rules and its sites cannot be described
 * (their events are skipped and counted as lost) - a warning says so.
 *
 * Switches.  A site is recorded when its `off` byte is 0 and its class bit
 * is in rp_rt.mask.  `off` has two bits: RP_OFF_NAME, set by the name rules
 * below, and RP_OFF_CLASS, a copy of the site's class bit in the mask made
 * whenever the mask changes (rp_sites_sync_classes) or a module registers.
 * So the macros' inline test of `off` - one load and a predictable branch -
 * is the whole cost of a site switched off either way; rp_site_begin()
 * checks the mask again, for the times the copy cannot follow (before
 * start-up, after shutdown).
 * Name rules - RANKPROF_FILTER, then every rp_site_enable() call, in order -
 * decide `off`; the last rule whose glob matches a name wins; with at least
 * one include rule in RANKPROF_FILTER, a name no rule matches is off.  The
 * rules are kept (bounded, RP_RULES_MAX) so a module loaded later gets them
 * too.
 *
 * Ends, budgets, hooks.  A span's end is recorded whenever its begin was and
 * the recorder still records (class RP_CLASS_BIT_ALL), so switching things
 * off never unbalances a stack.  The duration given to budgets and hooks is
 * computed from the very ticks stored in the begin and end records, and the
 * budget is written to DEFS in ticks, so the analyzer's recount of overruns
 * equals the recorder's exactly.
 *
 * Instants and counters are two raw records (the op, then DATA with the
 * value in its ticks field) that must stay adjacent in one buffer: they are
 * written together under the thread's guard, and when the buffer has room
 * for only one, it is declared full first.
 */
#define _GNU_SOURCE
#include "sites.h"

#include <fnmatch.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"
#include "rt_int.h"

#define RP_OFF_NAME  1u /* off bits of struct rp_site */
#define RP_OFF_CLASS 2u

#define RP_MODULES_MAX 256
#define RP_RULES_MAX   64

_Static_assert(sizeof(struct rp_site) == 64, "struct rp_site is an ABI: 64 bytes");
_Static_assert(RP_SITE_POINT == RP_KIND_POINT && RP_SITE_LOCK_WAIT == RP_KIND_LOCK_WAIT &&
                   RP_SITE_LOCK_HOLD == RP_KIND_LOCK_HOLD && RP_SITE_IO == RP_KIND_IO &&
                   RP_SITE_INSTANT == RP_KIND_INSTANT && RP_SITE_COUNTER == RP_KIND_COUNTER,
               "public site kinds are the trace's kinds");
_Static_assert(RP_CLASS_IDX_USER == RP_CLASS_USER && RP_CLASS_IDX_IO == RP_CLASS_IO,
               "public class indexes are the trace's classes");

struct module {
    struct rp_site *start, *stop;
    unsigned refs;
    struct rp_site *copy; /* after unload: the sites' descriptions, else NULL */
};

struct rule {
    char *pattern; /* malloc'd glob */
    int on;
};

/*
 * Invariant: mods[0..nmods) are distinct, non-empty sections; rules are in
 * the order given.  All guarded by lock, a spin lock taken only off the hot
 * path (registration, rules, hooks, the writer's describe) and never held
 * across a call out: a pthread mutex here would be seen by the lock
 * profiler's interposition as the program's own lock.
 */
static struct {
    atomic_flag lock;
    struct module mods[RP_MODULES_MAX];
    unsigned nmods;
    struct rule rules[RP_RULES_MAX];
    unsigned nrules;
    int default_off;  /* RANKPROF_FILTER has an include rule */
    uint32_t classes; /* the mask copied into the sites' RP_OFF_CLASS bits */
    int warned;
} reg = {.lock = ATOMIC_FLAG_INIT, .classes = RP_CLASS_BIT_ALL};

static void reg_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&reg.lock, memory_order_acquire))
        sched_yield();
}

static void reg_unlock(void)
{
    atomic_flag_clear_explicit(&reg.lock, memory_order_release);
}

static pthread_once_t filter_once = PTHREAD_ONCE_INIT;

RP_HIDDEN __thread uint64_t rp_site_data;

static void sites_warn(const char *msg)
{
    if (getenv("RANKPROF_QUIET"))
        return;
    rp_rt_say(msg, strlen(msg));
}

/* ---- rules ---------------------------------------------------------------- */

/* Appends a rule (lock held).  Returns 0, or RP_ENOMEM / RP_EBUSY (table
 * full): the rule then applies to the modules loaded now only. */
static int rule_add_locked(const char *pattern, int on)
{
    if (reg.nrules == RP_RULES_MAX)
        return RP_EBUSY;
    char *copy = strdup(pattern);
    if (!copy)
        return RP_ENOMEM;
    reg.rules[reg.nrules++] = (struct rule){copy, on};
    return 0;
}

RP_HIDDEN int rp_filter_next(const char **s, char *pat, size_t cap, int *on)
{
    while (*s && **s) {
        const char *r = *s;
        size_t n = strcspn(r, ",");
        *s = r + n + (r[n] == ',');
        *on = *r != '-';
        const char *p = *on ? r : r + 1;
        size_t pn = *on ? n : n - 1;
        if (!pn)
            continue;
        if (pn >= cap)
            return -1;
        memcpy(pat, p, pn);
        pat[pn] = 0;
        return 1;
    }
    return 0;
}

/*
 * Parses RANKPROF_FILTER: comma-separated globs, "-glob" to exclude.
 * Runs once, before any rule is applied.
 */
static void filter_parse(void)
{
    const char *s = getenv("RANKPROF_FILTER");
    char pat[512];
    int on, r;
    reg_lock();
    while ((r = rp_filter_next(&s, pat, sizeof(pat), &on)) != 0) {
        if (r < 0) {
            sites_warn("rankprof: RANKPROF_FILTER: a pattern is too long, ignored\n");
            continue;
        }
        if (on)
            reg.default_off = 1;
        if (rule_add_locked(pat, on) < 0)
            sites_warn("rankprof: RANKPROF_FILTER: too many rules, the rest ignored\n");
    }
    reg_unlock();
}

/* Whether the rules switch name on.  Lock held. */
static int rules_decide_locked(const char *name)
{
    int on = !reg.default_off;
    for (unsigned i = 0; i < reg.nrules; i++)
        if (fnmatch(reg.rules[i].pattern, name ? name : "", 0) == 0)
            on = reg.rules[i].on;
    return on;
}

/* ---- registry ------------------------------------------------------------- */

/* RP_OFF_CLASS if the site's class is off in reg.classes, else 0. */
static uint8_t site_class_bit(const struct rp_site *s)
{
    return s->cls < 32 && (reg.classes >> s->cls & 1) ? 0 : RP_OFF_CLASS;
}

/* Stores the off byte of a site not seen by anyone yet, or by the rules. */
static void site_set_bits(struct rp_site *s, uint8_t off)
{
    __atomic_store_n(&s->off, off, __ATOMIC_RELAXED);
}

RP_API void rp_sites_register(struct rp_site *start, struct rp_site *stop)
{
    if (!start || stop <= start)
        return;
    pthread_once(&filter_once, filter_parse);
    reg_lock();
    for (unsigned i = 0; i < reg.nmods; i++) {
        if (reg.mods[i].start == start && !reg.mods[i].copy) {
            reg.mods[i].refs++;
            goto out;
        }
        if (reg.mods[i].start == start) { /* loaded again where an unloaded one was */
            reg.mods[i] = (struct module){start, stop, 1, NULL};
            goto rules;
        }
    }
    if (reg.nmods == RP_MODULES_MAX) {
        if (!reg.warned++)
            sites_warn("rankprof: too many modules with profile points; "
                       "the later ones are not described\n");
        goto out;
    }
    reg.mods[reg.nmods++] = (struct module){start, stop, 1, NULL};
rules:
    for (struct rp_site *s = start; s < stop; s++)
        site_set_bits(s, (reg.nrules && !rules_decide_locked(s->name) ? RP_OFF_NAME : 0) |
                             site_class_bit(s));
out:
    reg_unlock();
}

/* Copies the descriptions of sites [start, stop): a malloc'd array whose
 * name and file point to malloc'd strings.  NULL when out of memory. */
static struct rp_site *sites_copy(const struct rp_site *start, const struct rp_site *stop)
{
    size_t n = (size_t)(stop - start);
    struct rp_site *c = calloc(n, sizeof(*c));
    for (size_t i = 0; c && i < n; i++) {
        c[i].kind = start[i].kind;
        c[i].cls = start[i].cls;
        c[i].line = start[i].line;
        c[i].budget_ns = start[i].budget_ns;
        c[i].name = strdup(start[i].name ? start[i].name : "");
        c[i].file = strdup(start[i].file ? start[i].file : "");
        if (!c[i].name || !c[i].file)
            return NULL; /* leaks what was copied: out of memory at unload */
    }
    return c;
}

RP_API void rp_sites_unregister(struct rp_site *start, struct rp_site *stop)
{
    if (!start || stop <= start)
        return;
    reg_lock();
    for (unsigned i = 0; i < reg.nmods; i++) {
        struct module *m = &reg.mods[i];
        if (m->start != start || m->copy || --m->refs > 0)
            continue;
        if (!(m->copy = sites_copy(start, stop)))
            *m = reg.mods[--reg.nmods];
        break;
    }
    reg_unlock();
}

/* The site at address a if a registered module holds one there (or its
 * copy, if the module is gone), else NULL.  Lock held. */
static const struct rp_site *site_find_locked(uint64_t a)
{
    for (unsigned i = 0; i < reg.nmods; i++) {
        uintptr_t lo = (uintptr_t)reg.mods[i].start, hi = (uintptr_t)reg.mods[i].stop;
        if (a >= lo && a < hi && (a - lo) % sizeof(struct rp_site) == 0) {
            size_t k = (a - lo) / sizeof(struct rp_site);
            return reg.mods[i].copy ? &reg.mods[i].copy[k] : &reg.mods[i].start[k];
        }
    }
    return NULL;
}

/* A budget in clock ticks: the recorder and the trace use this one value. */
static uint64_t budget_ticks(const struct rp_site *s)
{
    if (!s->budget_ns || rp_rt.freq <= 0)
        return 0;
    double t = (double)s->budget_ns * rp_rt.freq / 1e9;
    return t < 1 ? 1 : (uint64_t)t;
}

RP_HIDDEN int rp_sites_describe(uint64_t site, struct rp_def *out)
{
    reg_lock();
    const struct rp_site *s = site_find_locked(site);
    int ok = s && s->kind >= RP_SITE_POINT &&
             (s->kind <= RP_SITE_COUNTER || s->kind == RP_KIND_WAIT) && s->cls < RP_CLASS_MAX;
    if (ok) {
        out->kind = s->kind;
        out->cls = s->cls;
        out->key = site;
        out->name = s->name;
        out->file = s->file;
        out->line = s->line;
        out->budget = budget_ticks(s);
    }
    reg_unlock();
    return ok ? 0 : -1;
}

/*
 * Calls fn(site, arg) for every registered site whose name matches pattern.
 * Returns the number of matches.  Lock held by the caller.
 */
static int sites_match_locked(const char *pattern, void (*fn)(struct rp_site *, void *), void *arg)
{
    int n = 0;
    for (unsigned i = 0; i < reg.nmods; i++)
        for (struct rp_site *s = reg.mods[i].start; !reg.mods[i].copy && s < reg.mods[i].stop; s++)
            if (fnmatch(pattern, s->name ? s->name : "", 0) == 0) {
                fn(s, arg);
                n++;
            }
    return n;
}

static void site_set_off(struct rp_site *s, void *arg)
{
    if (arg)
        __atomic_fetch_and(&s->off, (uint8_t)~RP_OFF_NAME, __ATOMIC_RELAXED);
    else
        __atomic_fetch_or(&s->off, (uint8_t)RP_OFF_NAME, __ATOMIC_RELAXED);
}

RP_HIDDEN void rp_sites_sync_classes(void)
{
    reg_lock();
    reg.classes = atomic_load_explicit(&rp_rt.mask, memory_order_relaxed);
    for (unsigned i = 0; i < reg.nmods; i++)
        for (struct rp_site *s = reg.mods[i].start; !reg.mods[i].copy && s < reg.mods[i].stop;
             s++) {
            if (site_class_bit(s))
                __atomic_fetch_or(&s->off, (uint8_t)RP_OFF_CLASS, __ATOMIC_RELAXED);
            else
                __atomic_fetch_and(&s->off, (uint8_t)~RP_OFF_CLASS, __ATOMIC_RELAXED);
        }
    reg_unlock();
}

RP_API int rp_site_enable(const char *pattern, int on)
{
    if (!pattern)
        return RP_EINVAL;
    pthread_once(&filter_once, filter_parse);
    reg_lock();
    int n = sites_match_locked(pattern, site_set_off, on ? (void *)1 : NULL);
    if (rule_add_locked(pattern, on) < 0 && !reg.warned++)
        sites_warn("rankprof: too many rp_site_enable rules; modules loaded later miss some\n");
    reg_unlock();
    return n;
}

struct hook_set {
    rp_hook_fn fn;
    void *arg;
};

static void site_set_hook(struct rp_site *s, void *arg)
{
    const struct hook_set *h = arg;
    if (s->kind > RP_SITE_IO) /* instants and counters have no duration */
        return;
    __atomic_store_n(&s->hook, NULL, __ATOMIC_RELEASE);
    s->hook_arg = h->arg;
    __atomic_store_n(&s->hook, h->fn, __ATOMIC_RELEASE);
}

RP_API int rp_site_hook(const char *pattern, rp_hook_fn fn, void *arg)
{
    if (!pattern)
        return RP_EINVAL;
    struct hook_set h = {fn, arg};
    reg_lock();
    int n = sites_match_locked(pattern, site_set_hook, &h);
    reg_unlock();
    return n;
}

RP_API uint64_t rp_site_overruns(const char *name)
{
    uint64_t sum = 0;
    if (!name)
        return 0;
    reg_lock();
    for (unsigned i = 0; i < reg.nmods; i++)
        for (struct rp_site *s = reg.mods[i].start; !reg.mods[i].copy && s < reg.mods[i].stop; s++)
            if (s->name && !strcmp(s->name, name))
                sum += __atomic_load_n(&s->overruns, __ATOMIC_RELAXED);
    reg_unlock();
    return sum;
}

/* ---- events --------------------------------------------------------------- */

/*
 * Appends word and returns the ticks its record got: read back from the
 * buffer in trace mode (so durations match the trace exactly), the clock
 * otherwise (direct mode, or a record that went elsewhere).  Returns 0 when
 * the thread does not record at all.  Never 0 for a recorded event.
 */
static inline uint64_t site_emit(uint32_t cls, uint64_t word)
{
    rp_append(cls, word);
    struct rp_tbuf *t = rp_self;
    if (!t)
        return 0;
    uint64_t ticks;
    if (likely(t->pos && t->pos > t->base && t->pos[-1].word == word))
        ticks = t->pos[-1].ticks;
    else
        ticks = rp_ticks();
    return ticks ? ticks : 1;
}

RP_API uint64_t rp_site_begin(struct rp_site *s)
{
    uint32_t bit = 1u << (s->cls & 31);
    if (!(atomic_load_explicit(&rp_rt.mask, memory_order_relaxed) & bit))
        return 0;
    return site_emit(bit, rp_raw_word(RP_RAW_SITE_BEGIN, (uintptr_t)s));
}

RP_API uint64_t rp_site_begin_arg(struct rp_site *s, uint64_t arg)
{
    uint64_t t0 = rp_site_begin(s);
    if (t0)
        rp_append(RP_CLASS_BIT_ALL, rp_raw_word(RP_RAW_ARG, arg));
    return t0;
}

/* One more ARG of the thread's innermost open span.  Cannot fail: an
 * event that cannot be stored is counted as lost. */
RP_API void rp_site_arg(uint64_t arg)
{
    rp_append(RP_CLASS_BIT_ALL, rp_raw_word(RP_RAW_ARG, arg));
}

/* The budget and hook work of an end: only for sites that have either. */
static RP_NOINLINE void site_end_extra(struct rp_site *s, uint64_t dur)
{
    uint64_t b = budget_ticks(s);
    if (b && dur > b)
        __atomic_fetch_add(&s->overruns, 1, __ATOMIC_RELAXED);
    rp_hook_fn fn = __atomic_load_n(&s->hook, __ATOMIC_ACQUIRE);
    if (fn) {
        double ns = rp_rt.freq > 0 ? (double)dur * 1e9 / rp_rt.freq : (double)dur;
        fn(s, (uint64_t)ns, s->hook_arg);
    }
}

RP_API void rp_site_end(struct rp_site *s, uint64_t t0)
{
    if (!t0)
        return;
    uint64_t t1 = site_emit(RP_CLASS_BIT_ALL, rp_raw_word(RP_RAW_SITE_END, (uintptr_t)s));
    if (unlikely(s->budget_ns || __atomic_load_n(&s->hook, __ATOMIC_RELAXED)))
        site_end_extra(s, t1 > t0 ? t1 - t0 : 0);
}

/*
 * The rare path of a two-record event: no buffer with room for both, a
 * signal handler inside the recorder, or a clock that is not the counter.
 * The op goes through rp_append_slow (which starts the thread, switches
 * buffers or hands it to direct mode, with the value in rp_site_data); the
 * DATA record follows it if the op landed in a buffer with room.  If a
 * signal handler slips in between, the op is left without DATA and the
 * encoder counts it as lost.
 */
static RP_NOINLINE void site_emit2_slow(uint64_t word, uint64_t data)
{
    struct rp_tbuf *t = rp_self;
    if (t && !t->guard && t->pos && t->pos + 1 == t->end)
        t->end = t->pos; /* room for one only: call the buffer full */
    rp_site_data = data;
    rp_append_slow(word);
    if (!(t = rp_self) || t->guard)
        return;
    t->guard = 1;
    atomic_signal_fence(memory_order_seq_cst);
    if (t->pos && t->pos > t->base && t->pos < t->end && t->pos[-1].word == word) {
        t->pos->ticks = data;
        t->pos->word = rp_raw_word(RP_RAW_DATA, 0);
        rp_pos_set(t, t->pos + 1);
    }
    atomic_signal_fence(memory_order_seq_cst);
    t->guard = 0;
}

/* An op and its DATA record (instants, counters), always in one buffer. */
static inline void site_emit2(uint32_t cls, uint64_t word, uint64_t data)
{
    if (!rp_append_fast(cls, word, 2, data))
        site_emit2_slow(word, data);
}

RP_API void rp_site_instant(struct rp_site *s, uint64_t arg)
{
    site_emit2(1u << (s->cls & 31), rp_raw_word(RP_RAW_INSTANT, (uintptr_t)s), arg);
}

RP_API void rp_site_counter(struct rp_site *s, int64_t value)
{
    site_emit2(1u << (s->cls & 31), rp_raw_word(RP_RAW_COUNTER, (uintptr_t)s), (uint64_t)value);
}

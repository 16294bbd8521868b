// SPDX-License-Identifier: MIT
/*
 * rankprof.h - the public API of the rankprof recorder.
 *
 * A program built with -finstrument-functions needs none of this: running it
 * under `rankprof record` (or with librankprof.so preloaded) records every
 * function.  This header is for controlling the recorder from the program
 * and for naming regions ("profile points"), locks, devices, instants and
 * counters.  docs/api.md is the user's guide to it.
 *
 * The file has three parts:
 *   the API, one section per area:
 *     1. result codes and event classes
 *     2. control: classes, flush
 *     3. profile points: the site struct, spans, instants, counters, hooks
 *     4. locks by address
 *     5. direct mode
 *     6. functions by name
 *   the disabled build: with RANKPROF_DISABLE defined before this header,
 *     one block turns every call and macro above into nothing
 *   internals: what the macros expand to (rp__*, RP__*) and the constructor
 *     that registers a module's sites; not for direct use
 *
 * Every function returns 0 (or a count) or a negative RP_E* code;
 * rp_strerror() says what the code means.  None of them ever terminates the
 * program.
 *
 * Define RANKPROF_DISABLE before including this header to compile every
 * rankprof call away: the macros expand to nothing, their arguments are not
 * evaluated, and the program references no rankprof symbol.
 */
#ifndef RANKPROF_H
#define RANKPROF_H

#include <stdint.h>
#include <stdio.h> /* FILE, for rp_report */

#ifdef __cplusplus
extern "C" {
#endif

/* ==== 1. result codes and event classes ================================= */

/* Result codes. */
#define RP_OK       0
#define RP_ENOMEM   (-1) /* out of memory */
#define RP_EIO      (-2) /* read or write failed (errno has more) */
#define RP_EFORMAT  (-3) /* not a rankprof trace, or a malformed record */
#define RP_ETRUNC   (-4) /* the file ends inside a header or chunk */
#define RP_ECRC     (-5) /* a checksum does not match */
#define RP_EVERSION (-6) /* a trace version this build cannot read */
#define RP_EINVAL   (-7) /* a bad argument */
#define RP_ENOENT   (-8) /* no such file, name or entry */
#define RP_EBUSY    (-9) /* the recorder is not in a state to do that */

/* Event classes, a bit each in the masks of rp_classes_set(). */
#define RP_CLASS_BIT_FUNC  (1u << 0)
#define RP_CLASS_BIT_POINT (1u << 1)
#define RP_CLASS_BIT_LOCK  (1u << 2)
#define RP_CLASS_BIT_IO    (1u << 3)
#define RP_CLASS_BIT_TIMER (1u << 4)
#define RP_CLASS_BIT_USER  (1u << 5)
#define RP_CLASS_BIT_WAIT  (1u << 6)
#define RP_CLASS_BIT_ALL   0x7fu

#if defined(RP_BUILDING_RUNTIME)
#define RP_API __attribute__((visibility("default")))
#else
#define RP_API
#endif

/*
 * RANKPROF_WEAK: the functions the macros call are weak references and the
 * macros test them first, so a program that is not linked with the recorder
 * still builds and runs (the points do nothing) and records its points when
 * the recorder is preloaded (`rankprof record`).  Costs one more test per
 * macro.  The control functions (rp_site_enable ...) are weak too: test
 * them against NULL before calling them.
 */
#if defined(RANKPROF_WEAK) && !defined(RP_BUILDING_RUNTIME)
#define RP__FN      __attribute__((weak))
#define RP__HAVE(f) ((f) != 0)
#else
#define RP__FN
#define RP__HAVE(f) 1
#endif

/* ==== 2. control ========================================================= */

/* The message for a result code; never NULL. */
RP_API const char *rp_strerror(int code);

/*
 * Switches event classes on (bits in `on`) and off (bits in `off`) at run
 * time; a switched-off class costs one predictable branch per event.
 * Returns the previous mask.
 */
RP_API uint32_t rp_classes_set(uint32_t on, uint32_t off);

/*
 * Hands the calling thread's buffered events to the writer and waits until
 * everything published so far is in the trace file.  Returns 0, RP_EBUSY when
 * the recorder is not recording, or RP_EIO when the writer has failed.
 */
RP_API int rp_flush(void);

/*
 * Adds the pair key=value to the trace's INFO now (a chunk of its own,
 * docs/trace-format.md), e.g. librankprof-mpi's clock offsets.  Returns 0,
 * or RP_EINVAL when the recorder is not writing a trace (direct mode,
 * stopped, not started) or the pair is longer than about 500 bytes.
 */
RP_API int rp_info_add(const char *key, const char *value);

/* ==== 3. profile points ===================================================
 *
 * A profile point is a static struct rp_site, one per call site of a macro,
 * placed in the linker section "rp_sites".  Events carry one pointer to it
 * (as Tracy's source locations do), so the hot path never formats or looks
 * up a name.  There is no registration call to write: every translation unit
 * that includes this header gets a tiny constructor that hands its module's
 * section bounds (__start_rp_sites / __stop_rp_sites, one pair per executable
 * or shared library) to the recorder, which is how rp_site_enable() and the
 * RANKPROF_FILTER environment variable reach every site of every module,
 * including sites that have not run yet.
 *
 * Kinds of site and the class each macro records under:
 *
 *   RP_POINT / RP_POINT_BEGIN / RP_POINT_BUDGET   span "point"      class point
 *   RP_LOCK_WAIT / RP_LOCK_WAIT_BEGIN             span "lock-wait"  class lock
 *   RP_LOCK_HOLD / RP_LOCK_HOLD_BEGIN             span "lock-hold"  class lock
 *   RP_IO / RP_IO_BEGIN                           span "io"         class io
 *   RP_TIMER                                      instant           class timer
 *   RP_MARK                                       instant           class user
 *   RP_COUNTER                                    counter           class user
 *
 * Spans nest with functions and with each other on the calling thread.  A
 * span that began while recording always records its end, even if its class
 * or site was switched off in between, so stacks stay balanced.
 */

/* Kinds of site (the values of the trace format's enum rp_kind). */
#define RP_SITE_POINT     1
#define RP_SITE_LOCK_WAIT 2
#define RP_SITE_LOCK_HOLD 3
#define RP_SITE_IO        4
#define RP_SITE_INSTANT   5
#define RP_SITE_COUNTER   6

/* Class indexes: site->cls = n means class bit (1u << n), RP_CLASS_BIT_*. */
#define RP_CLASS_IDX_FUNC  0
#define RP_CLASS_IDX_POINT 1
#define RP_CLASS_IDX_LOCK  2
#define RP_CLASS_IDX_IO    3
#define RP_CLASS_IDX_TIMER 4
#define RP_CLASS_IDX_USER  5
#define RP_CLASS_IDX_WAIT  6

struct rp_site;

/*
 * A per-point hook: called on the thread that ends the span, right after the
 * end is recorded, with the span's duration in nanoseconds.  It runs inside
 * the profiled program's code path: keep it short; it must not end the same
 * point again.  Events it records are recorded normally.
 */
typedef void (*rp_hook_fn)(const struct rp_site *site, uint64_t ns, void *arg);

/*
 * One call site.  Written by the macros as a static initializer; the fields
 * marked "atomic" are read and written by the recorder with __atomic builtins
 * (the struct stays plain C and C++ compatible).  Layout is part of the ABI:
 * 64 bytes, no padding, so a section of them is an array.
 */
struct rp_site {
    const char *name;   /* the name given to the macro */
    const char *file;   /* __FILE__ */
    uint32_t line;      /* __LINE__ */
    uint8_t kind;       /* RP_SITE_* */
    uint8_t cls;        /* RP_CLASS_IDX_* */
    uint8_t off;        /* atomic: non-zero = switched off (rp_site_enable, filter) */
    uint8_t spare;      /* 0 */
    uint64_t budget_ns; /* 0 = no budget; else activations longer are overruns */
    uint64_t overruns;  /* atomic: activations longer than budget_ns so far */
    rp_hook_fn hook;    /* atomic: called when a span of this site ends, or NULL */
    void *hook_arg;     /* passed to hook */
    void *direct;       /* reserved for direct mode's per-site statistics */
};

/* A begun span: the site, and the clock ticks of its begin (0 = not begun). */
struct rp_span {
    struct rp_site *site;
    uint64_t t0;
};

/* The ARG of an io span: device address (28 bits) and byte count (32 bits). */
#define RP_IO_ARG(addr, nbytes)                                                                    \
    ((((uint64_t)(addr)&0xfffffffu) << 32) | ((uint64_t)(nbytes)&0xffffffffu))

/*
 * Records the begin of a span of site s on the calling thread.  Returns the
 * begin's clock ticks (never 0), or 0 when nothing was recorded (the
 * recorder is not recording, the site's class is off, or the event was
 * lost); pass the result to rp_site_end().  Callers normally use the macros,
 * which test s->off first.
 */
RP_API RP__FN uint64_t rp_site_begin(struct rp_site *s);

/* Like rp_site_begin, and attaches arg (e.g. RP_IO_ARG) to the span. */
RP_API RP__FN uint64_t rp_site_begin_arg(struct rp_site *s, uint64_t arg);

/* Attaches one more argument (60 bits) to the calling thread's innermost
 * open span: a span's arguments are kept in order and the last is its
 * argument (how librankprof-mpi adds a message's tag and requests,
 * docs/trace-format.md).  Call it only while a span you began is open. */
RP_API RP__FN void rp_site_arg(uint64_t arg);

/*
 * Records the end of a span begun at ticks t0 (a non-zero rp_site_begin()
 * result; 0 makes this a no-op).  Counts a budget overrun and calls the
 * site's hook with the duration.  Records nothing once recording has stopped.
 */
RP_API RP__FN void rp_site_end(struct rp_site *s, uint64_t t0);

/* Records an instant of site s with an argument (RP_TIMER, RP_MARK). */
RP_API RP__FN void rp_site_instant(struct rp_site *s, uint64_t arg);

/* Records a counter sample of site s (RP_COUNTER). */
RP_API RP__FN void rp_site_counter(struct rp_site *s, int64_t value);

/*
 * Switches every site whose name matches the glob pattern (fnmatch(3)
 * syntax: *, ?, [...]) on (on != 0) or off, in every module loaded now and
 * in modules loaded later.  Functions are not matched (rp_func_enable, in
 * section 6, switches them).  Returns the number of sites matched, or
 * RP_EINVAL for a NULL pattern.
 */
RP_API RP__FN int rp_site_enable(const char *pattern, int on);

/*
 * Sets the hook (fn, arg) of every span site whose name matches the glob
 * pattern; fn NULL removes it.  Set hooks before the points run: a span
 * ending while its hook changes may see the new function with the old arg.
 * Returns the number of sites matched, or RP_EINVAL for a NULL pattern.
 */
RP_API RP__FN int rp_site_hook(const char *pattern, rp_hook_fn fn, void *arg);

/* Overruns counted so far for the sites named name (summed).  Returns the
 * sum, or 0 when no site has that name. */
RP_API RP__FN uint64_t rp_site_overruns(const char *name);

/* Profile points: a named region of code. */
#define RP_POINT(name)                     RP__SCOPED(name, RP_SITE_POINT, RP_CLASS_IDX_POINT, 0)
#define RP_POINT_BUDGET(name, ns)          RP__SCOPED(name, RP_SITE_POINT, RP_CLASS_IDX_POINT, ns)
#define RP_POINT_BEGIN(h, name)            RP__BEGIN(h, name, RP_SITE_POINT, RP_CLASS_IDX_POINT, 0)
#define RP_POINT_BEGIN_BUDGET(h, name, ns) RP__BEGIN(h, name, RP_SITE_POINT, RP_CLASS_IDX_POINT, ns)
#define RP_POINT_END(h)                    rp__end(&(h))

/* Waiting for and holding a named lock (a lock the recorder cannot see). */
#define RP_LOCK_WAIT(name)          RP__SCOPED(name, RP_SITE_LOCK_WAIT, RP_CLASS_IDX_LOCK, 0)
#define RP_LOCK_WAIT_BEGIN(h, name) RP__BEGIN(h, name, RP_SITE_LOCK_WAIT, RP_CLASS_IDX_LOCK, 0)
#define RP_LOCK_WAIT_END(h)         rp__end(&(h))
#define RP_LOCK_HOLD(name)          RP__SCOPED(name, RP_SITE_LOCK_HOLD, RP_CLASS_IDX_LOCK, 0)
#define RP_LOCK_HOLD_BEGIN(h, name) RP__BEGIN(h, name, RP_SITE_LOCK_HOLD, RP_CLASS_IDX_LOCK, 0)
#define RP_LOCK_HOLD_END(h)         rp__end(&(h))

/* A device transaction of nbytes with the device at addr, e.g. an I2C read. */
#define RP_IO(name, addr, nbytes)                                                                  \
    RP__SITE(RP__CAT(rp__site_, __LINE__), name, RP_SITE_IO, RP_CLASS_IDX_IO, 0);                  \
    struct rp_span RP__CAT(rp__span_, __LINE__) __attribute__((cleanup(rp__end), unused)) =        \
        rp__begin_arg(&RP__CAT(rp__site_, __LINE__), RP_IO_ARG(addr, nbytes))
#define RP_IO_BEGIN(h, name, addr, nbytes)                                                         \
    RP__SITE(RP__CAT(rp__site_, h), name, RP_SITE_IO, RP_CLASS_IDX_IO, 0);                         \
    struct rp_span h = rp__begin_arg(&RP__CAT(rp__site_, h), RP_IO_ARG(addr, nbytes))
#define RP_IO_END(h) rp__end(&(h))

/* Instants and counters. */
#define RP_TIMER(name) RP__INSTANT(name, RP_SITE_INSTANT, RP_CLASS_IDX_TIMER, rp_site_instant, 0)
#define RP_MARK(name, arg)                                                                         \
    RP__INSTANT(name, RP_SITE_INSTANT, RP_CLASS_IDX_USER, rp_site_instant, (uint64_t)(arg))
#define RP_COUNTER(name, value)                                                                    \
    RP__INSTANT(name, RP_SITE_COUNTER, RP_CLASS_IDX_USER, rp_site_counter, (int64_t)(value))

/* ==== 4. locks by address ================================================
 *
 * pthread mutexes, rwlocks and spinlocks are recorded with no source change
 * (librankprof interposes them, docs/locks.md).  For any other lock - an
 * RTOS mutex, a firmware spinlock, a lock-free retry loop - report its
 * life by address; the recorder treats the calls exactly like a pthread
 * lock's:
 *
 *     rp_lock_wait(l);        about to block on l          (lock-wait begins)
 *     rp_lock_acquired(l);    got it (after a wait, or     (wait ends, hold
 *                             directly when uncontended)    begins)
 *     rp_lock_failed(l);      gave up waiting              (wait ends)
 *     rp_lock_released(l);    let it go                    (hold ends)
 *
 * A lock is shown by rp_lock_name()'s name, else by its variable's name from
 * the symbol table, else by its address.  Names are kept in a fixed table of
 * 256 locks, RP_LOCK_NAME_MAX - 1 bytes each; name a lock before its first
 * event (the name goes into the trace when the lock is first seen).
 */
#define RP_LOCK_NAME_MAX 64

/* With RANKPROF_WEAK (section 3) these are weak: test them against NULL. */
RP_API RP__FN void rp_lock_wait(const volatile void *lock);
RP_API RP__FN void rp_lock_acquired(const volatile void *lock);
RP_API RP__FN void rp_lock_failed(const volatile void *lock);
RP_API RP__FN void rp_lock_released(const volatile void *lock);

/*
 * Names the lock at address lock (the name is copied, truncated to
 * RP_LOCK_NAME_MAX - 1 bytes).  Returns 0, RP_EINVAL for a NULL lock or an
 * empty name, RP_EBUSY when the lock already has a name (the first stays),
 * or RP_ENOMEM when the table of names is full.
 */
RP_API RP__FN int rp_lock_name(const volatile void *lock, const char *name);

/* ==== 5. direct mode ======================================================
 *
 * With RANKPROF_MODE=direct (`rankprof record --mode direct`) the recorder
 * keeps the statistics in the process instead of writing a trace
 * (docs/direct-mode.md): per function, point, lock and device calls,
 * inclusive and exclusive time, min, max, mean, variance, percentiles, and
 * per caller->callee edge calls and time.  They are saved to the output file
 * at exit, and printed then when RANKPROF_PRINT=1.
 */

/*
 * Prints the direct-mode table (name, calls, total, avg, max, status) of
 * everything measured so far, all threads merged, to f.  Callable from any
 * thread at any time; running threads are read as they are (events in
 * flight may be missing).  Returns 0, RP_EINVAL for a NULL f, RP_EBUSY when
 * the recorder is not in direct mode, or RP_ENOMEM.
 */
RP_API int rp_report(FILE *f);

/* ==== 6. functions by name ================================================
 *
 * Functions built with -finstrument-functions are switched on and off by
 * name (globs on their symbol names) or by address.  The recorder reads the
 * loaded modules' ELF symbol tables itself the first time a function rule
 * exists (RANKPROF_FILTER at start, or a call below); from then on every
 * function event looks its address up in a table (docs/api.md: a few ns
 * per call).  A switched-off function's enter and exit are both left out,
 * so its callees appear under its caller and its time is its caller's own.
 * A function switched while it runs keeps the decision of its enter for its
 * exit.  RANKPROF_THROTTLE (docs/recording.md) switches busy tiny functions
 * to counting only.
 */

/*
 * Switches every function whose symbol name matches the glob pattern
 * (fnmatch(3)) on (on != 0) or off, now and for functions first called
 * later, in every module (a dlopen'ed one too).  Rules apply in order, the
 * last matching one wins (after RANKPROF_FILTER's).  Returns the number of
 * function symbols in the modules loaded now that match, or RP_EINVAL for a
 * NULL pattern.  Takes a spin lock and may read symbol tables: not from a
 * signal handler.
 */
RP_API RP__FN int rp_func_enable(const char *pattern, int on);

/*
 * Switches the function at address fn on or off (a function pointer; for
 * a function without a symbol, or a faster switch than a glob).  Returns 0,
 * RP_EINVAL for NULL, or RP_ENOMEM when the recorder's function table is
 * full.
 */
RP_API RP__FN int rp_func_enable_addr(void (*fn)(void), int on);

/* ==== the disabled build =================================================
 *
 * With RANKPROF_DISABLE every call above compiles to nothing: no code, no
 * symbol, no "rp_sites" section; arguments are not evaluated (sizeof only
 * names them, so no "unused" warning).  The functions that give a value are
 * statement expressions of that value, usable as values and as statements
 * without a "statement with no effect" warning.  The declarations above
 * stay: they reference nothing by themselves.
 */
#ifdef RANKPROF_DISABLE

/* 1-2. control */
#define rp_strerror(code)                                                                          \
    __extension__({                                                                                \
        (void)sizeof(code);                                                                        \
        "rankprof disabled";                                                                       \
    })
#define rp_classes_set(on, off)                                                                    \
    __extension__({                                                                                \
        (void)sizeof(on), (void)sizeof(off);                                                       \
        0u;                                                                                        \
    })
#define rp_flush() __extension__({ 0; })

/* 3. profile points: the enabled macros above, replaced */
#undef RP_POINT
#undef RP_POINT_BUDGET
#undef RP_POINT_BEGIN
#undef RP_POINT_BEGIN_BUDGET
#undef RP_POINT_END
#undef RP_LOCK_WAIT
#undef RP_LOCK_WAIT_BEGIN
#undef RP_LOCK_WAIT_END
#undef RP_LOCK_HOLD
#undef RP_LOCK_HOLD_BEGIN
#undef RP_LOCK_HOLD_END
#undef RP_IO
#undef RP_IO_BEGIN
#undef RP_IO_END
#undef RP_TIMER
#undef RP_MARK
#undef RP_COUNTER

#define rp_site_enable(pattern, on)                                                                \
    __extension__({                                                                                \
        (void)sizeof(pattern), (void)sizeof(on);                                                   \
        0;                                                                                         \
    })
#define rp_site_hook(pattern, fn, arg)                                                             \
    __extension__({                                                                                \
        (void)sizeof(pattern), (void)sizeof((rp_hook_fn)(fn)), (void)sizeof(arg);                  \
        0;                                                                                         \
    })
#define rp_site_overruns(name)                                                                     \
    __extension__({                                                                                \
        (void)sizeof(name);                                                                        \
        (uint64_t)0;                                                                               \
    })
#define RP_POINT(name)                     /* nothing */
#define RP_POINT_BUDGET(name, ns)          /* nothing */
#define RP_POINT_BEGIN(h, name)            /* nothing */
#define RP_POINT_BEGIN_BUDGET(h, name, ns) /* nothing */
#define RP_POINT_END(h)                    ((void)0)
#define RP_LOCK_WAIT(name)                 /* nothing */
#define RP_LOCK_WAIT_BEGIN(h, name)        /* nothing */
#define RP_LOCK_WAIT_END(h)                ((void)0)
#define RP_LOCK_HOLD(name)                 /* nothing */
#define RP_LOCK_HOLD_BEGIN(h, name)        /* nothing */
#define RP_LOCK_HOLD_END(h)                ((void)0)
#define RP_IO(name, addr, nbytes)          /* nothing */
#define RP_IO_BEGIN(h, name, addr, nbytes) /* nothing */
#define RP_IO_END(h)                       ((void)0)
#define RP_TIMER(name)                     ((void)0)
#define RP_MARK(name, arg)                 ((void)sizeof(arg))
#define RP_COUNTER(name, value)            ((void)sizeof(value))

/* 4. locks by address */
/* clang-format off: one line each, as the declarations above */
#define rp_lock_wait(lock)     ((void)sizeof(lock))
#define rp_lock_acquired(lock) ((void)sizeof(lock))
#define rp_lock_failed(lock)   ((void)sizeof(lock))
#define rp_lock_released(lock) ((void)sizeof(lock))
#define rp_lock_name(lock, name)                                                                   \
    (__extension__({                                                                               \
        (void)sizeof(lock), (void)sizeof(name);                                                    \
        0;                                                                                         \
    }))
/* clang-format on */

/* 5. direct mode */
#define rp_report(f)                                                                               \
    __extension__({                                                                                \
        (void)sizeof(f);                                                                           \
        0;                                                                                         \
    })

/* 6. functions by name */
#define rp_func_enable(pattern, on)                                                                \
    __extension__({                                                                                \
        (void)sizeof(pattern), (void)sizeof(on);                                                   \
        0;                                                                                         \
    })
#define rp_func_enable_addr(fn, on)                                                                \
    __extension__({                                                                                \
        (void)sizeof(fn), (void)sizeof(on);                                                        \
        0;                                                                                         \
    })

#endif /* RANKPROF_DISABLE */

/* ==== internals: what the macros expand to ================================
 *
 * Not for direct use; none of it exists in the disabled build.
 */
#ifndef RANKPROF_DISABLE

/*
 * Called by the constructor below (once per translation unit that includes
 * this header) with the bounds of the calling module's "rp_sites" section,
 * and by its destructor when the module is unloaded.  NULL bounds (a module
 * without sites) are ignored.  Not for direct use.
 *
 * Outside the recorder they are weak references, so a file that includes
 * this header but is linked without the recorder (a tool, a library that
 * uses no macro) still links; the constructor then does nothing.
 */
#if defined(RP_BUILDING_RUNTIME)
RP_API void rp_sites_register(struct rp_site *start, struct rp_site *stop);
RP_API void rp_sites_unregister(struct rp_site *start, struct rp_site *stop);
#else
__attribute__((weak)) void rp_sites_register(struct rp_site *start, struct rp_site *stop);
__attribute__((weak)) void rp_sites_unregister(struct rp_site *start, struct rp_site *stop);

extern struct rp_site __start_rp_sites[] __attribute__((weak, visibility("hidden")));
extern struct rp_site __stop_rp_sites[] __attribute__((weak, visibility("hidden")));

__attribute__((constructor, no_instrument_function, unused)) static void rp__sites_ctor(void)
{
    if (rp_sites_register)
        rp_sites_register(__start_rp_sites, __stop_rp_sites);
}

__attribute__((destructor, no_instrument_function, unused)) static void rp__sites_dtor(void)
{
    if (rp_sites_unregister)
        rp_sites_unregister(__start_rp_sites, __stop_rp_sites);
}
#endif

#define RP__CAT2(a, b) a##b
#define RP__CAT(a, b)  RP__CAT2(a, b)
#define RP__ATTR       __attribute__((always_inline, no_instrument_function, unused))

/* The static site of one macro call. */
#define RP__SITE(var, nm, kind, cls, budget)                                                       \
    static struct rp_site var __attribute__((section("rp_sites"), used, aligned(8))) = {           \
        (nm), __FILE__, __LINE__, (kind), (cls), 0, 0, (uint64_t)(budget), 0, 0, 0, 0}

static inline RP__ATTR struct rp_span rp__begin(struct rp_site *s)
{
    struct rp_span h = {0, 0};
    if (__builtin_expect(!__atomic_load_n(&s->off, __ATOMIC_RELAXED), 1) &&
        RP__HAVE(rp_site_begin)) {
        h.t0 = rp_site_begin(s);
        h.site = s;
    }
    return h;
}

static inline RP__ATTR struct rp_span rp__begin_arg(struct rp_site *s, uint64_t arg)
{
    struct rp_span h = {0, 0};
    if (__builtin_expect(!__atomic_load_n(&s->off, __ATOMIC_RELAXED), 1) &&
        RP__HAVE(rp_site_begin_arg)) {
        h.t0 = rp_site_begin_arg(s, arg);
        h.site = s;
    }
    return h;
}

static inline RP__ATTR void rp__end(struct rp_span *h)
{
    if (h->t0)
        rp_site_end(h->site, h->t0);
    h->t0 = 0;
}

/* A span handle h, begun now, that ends at the end of the enclosing scope. */
#define RP__SCOPED(nm, kind, cls, budget)                                                          \
    RP__SITE(RP__CAT(rp__site_, __LINE__), nm, kind, cls, budget);                                 \
    struct rp_span RP__CAT(rp__span_, __LINE__) __attribute__((cleanup(rp__end), unused)) =        \
        rp__begin(&RP__CAT(rp__site_, __LINE__))

/* A span handle h begun now, ended by the matching *_END(h). */
#define RP__BEGIN(h, nm, kind, cls, budget)                                                        \
    RP__SITE(RP__CAT(rp__site_, h), nm, kind, cls, budget);                                        \
    struct rp_span h = rp__begin(&RP__CAT(rp__site_, h))

#define RP__INSTANT(nm, kind, cls, call, val)                                                      \
    do {                                                                                           \
        RP__SITE(rp__site, nm, kind, cls, 0);                                                      \
        if (__builtin_expect(!__atomic_load_n(&rp__site.off, __ATOMIC_RELAXED), 1) &&              \
            RP__HAVE(call))                                                                        \
            call(&rp__site, (val));                                                                \
    } while (0)

#endif /* !RANKPROF_DISABLE */

#ifdef __cplusplus
}
#endif

#endif /* RANKPROF_H */

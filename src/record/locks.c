// SPDX-License-Identifier: MIT
/*
 * locks.c - lock profiling: the pthread lock functions, interposed, and the
 * address-based API for every other kind of lock (rp_lock_* in rankprof.h).
 *
 * Interposition.  When librankprof.so is preloaded (or librankprof.a is
 * linked before libc), the program's calls to pthread_mutex_*,
 * pthread_rwlock_*, pthread_spin_* and pthread_cond_*wait land here.  Each
 * one records raw lock events and calls the real function, found with
 * dlsym(RTLD_NEXT), so a sanitizer runtime preloaded in front of us
 * (RP_PRELOAD_FIRST) still sees the call first and reaches us through its
 * own RTLD_NEXT: the chain is program -> sanitizer -> rankprof -> libc.
 *
 * What one acquisition records (raw ops of src/trace/writer.h):
 *
 *     try-lock succeeds               ACQ                    uncontended
 *     try-lock busy, lock succeeds    WAIT ... ACQ           contended
 *     try-lock busy, lock fails       WAIT ... FAIL          (timeout, EDEADLK)
 *     the program's try-lock busy     WAIT FAIL              a failed attempt
 *     unlock                          REL (before unlocking, so a release is
 *                                     never stamped after the next owner's grant)
 *     cond wait on c, mutex m         REL m, WAIT c' ...     the hold pauses, the
 *                                     FAIL c', ACQ m         thread waits on c
 *                                     (c' = c | RP_RAW_COND_BIT: a wait span on c)
 *
 * so every acquisition is one lock hold, and a lock-wait span exists only
 * for a thread that found the lock taken: contended acquisitions are
 * exactly the wait spans followed by a grant, failed attempts the wait spans
 * that end in FAIL, uncontended ones the holds without a wait.  The encoder
 * turns WAIT ... ACQ into the wait's exit and the hold's begin at one tick;
 * a hold is an interval, not a frame (HOLD_BEGIN ... HOLD_END, format 1.3:
 * the release may come from another function, docs/locks.md).
 *
 * Timestamps.  The counter is read just before the try-lock, and that read
 * stamps the ACQ of an uncontended acquisition and the WAIT of a contended
 * one (the request); REL is stamped before the real unlock; the ACQ or FAIL
 * that ends a wait when the blocking call returns.  No counter read sits
 * right behind a locked instruction (it would wait for it to retire), and a
 * lock event costs what a function event costs (bench/bench_locks).  So:
 *   - a thread's records stay in time order (nothing is appended between
 *     the read and the ACQ; a signal handler's records that land there are
 *     clamped by the encoder), and every span has a duration >= 0;
 *   - a contended hold begins after the previous holder's release was
 *     stamped (test_rec_locks checks it);
 *   - an uncontended hold includes the try itself, and if the lock was
 *     released by another thread between the read and the try (the try
 *     then succeeds), it begins up to that interval before the release:
 *     the try's latency, the transfer of the lock's cache line at most,
 *     unless the thread is interrupted right there.  No consumer subtracts
 *     one thread's times from another's (docs/locks.md, "What the times
 *     mean"), so nothing goes negative; a sequence diagram may draw that
 *     acquire a few ns before the release.
 *
 * Safety.  The recorder's own mutexes pass straight through, unrecorded:
 * recording them would recurse into the code that holds them.  In
 * librankprof.so that is every lock in the library's writable segment
 * (found once by the constructor), so a mutex added to the recorder later is
 * covered too; linked statically the recorder shares the program's segment,
 * and the range is struct rp_rt, which holds every mutex of the recorder
 * (so one range test serves both).  A switched-off lock class costs one load
 * and a branch.  dlsym may itself lock or allocate: while a thread resolves,
 * a nested call cannot be forwarded (no address yet) and fails with EAGAIN -
 * glibc's dlsym takes no pthread lock, so this is a guard, not a path.
 * Everything is resolved once by a constructor, before the program's threads
 * exist.
 *
 * Holding.  Every interposer also keeps rp_lock_holds (rt.h), the number of
 * the program's locks the thread holds, whether the lock class is on or not
 * (so switching it mid-hold keeps the count right): one more when an
 * acquisition succeeded, before its ACQ is appended; one less when the real
 * unlock succeeded, after its REL; a condition wait leaves it alone (its
 * records are appended while the mutex is held).  While it is non-zero the
 * thread leaves its full buffers to the writer (rt_writer.c): encoding them
 * here would hold the program's lock for the time of the encoding, and its
 * other threads would wait for it - contention the program does not have.
 *
 * Limits: a statically linked executable cannot interpose libc's functions;
 * a condition variable wait that a sanitizer intercepts by symbol version
 * may reach libc without passing here (the hold then includes the wait).
 */
#define _GNU_SOURCE
#include "locks.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <string.h>
#include <time.h>

#include "rt.h"
#include "waits.h"

#define RP_INTERPOSE __attribute__((visibility("default")))

/* ---- the real functions -------------------------------------------------- */

enum real_fn {
    R_MUTEX_LOCK,
    R_MUTEX_TRYLOCK,
    R_MUTEX_TIMEDLOCK,
    R_MUTEX_CLOCKLOCK,
    R_MUTEX_UNLOCK,
    R_RW_RDLOCK,
    R_RW_WRLOCK,
    R_RW_TRYRDLOCK,
    R_RW_TRYWRLOCK,
    R_RW_TIMEDRDLOCK,
    R_RW_TIMEDWRLOCK,
    R_RW_UNLOCK,
    R_SPIN_LOCK,
    R_SPIN_TRYLOCK,
    R_SPIN_UNLOCK,
    R_COND_WAIT,
    R_COND_TIMEDWAIT,
    R_COND_CLOCKWAIT,
    R_NREAL
};

static const char *const real_names[R_NREAL] = {
    "pthread_mutex_lock",         "pthread_mutex_trylock",      "pthread_mutex_timedlock",
    "pthread_mutex_clocklock",    "pthread_mutex_unlock",       "pthread_rwlock_rdlock",
    "pthread_rwlock_wrlock",      "pthread_rwlock_tryrdlock",   "pthread_rwlock_trywrlock",
    "pthread_rwlock_timedrdlock", "pthread_rwlock_timedwrlock", "pthread_rwlock_unlock",
    "pthread_spin_lock",          "pthread_spin_trylock",       "pthread_spin_unlock",
    "pthread_cond_wait",          "pthread_cond_timedwait",     "pthread_cond_clockwait",
};

static void *_Atomic reals[R_NREAL];
static __thread int resolving;

/*
 * Whether f is in another copy of the recorder: an object that defines
 * rp_strerror.  The recorder linked statically into a program run under
 * `rankprof record` has the preloaded copy next: its "real" lock functions
 * would be that copy's interposers, which record the static copy's own
 * locks (a forked child's atfork handler then faulted in one and the
 * process hung).  Cannot fail: 0 when it cannot tell.
 */
static int other_copy(void *f)
{
    Dl_info di, dm;
    if (!dladdr(f, &di) || !di.dli_fname || !di.dli_fname[0])
        return 0;
    /* (no dlclose: the object stays loaded anyway, and the recorder's own
     * dlclose, dl.c, would take the trace's lock, which the caller may hold) */
    void *h = dlopen(di.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
    void *m = h ? dlsym(h, "rp_strerror") : NULL;
    return m && dladdr(m, &dm) && dm.dli_fbase == di.dli_fbase;
}

/* Resolves real function i: the next definition, past another copy of the
 * recorder (other_copy: libc's then).  Returns it, or NULL when it cannot
 * be had (a nested call during resolution, or no next definition). */
static RP_NOINLINE void *real_resolve(enum real_fn i)
{
    if (resolving)
        return NULL;
    resolving = 1;
    void *f = dlsym(RTLD_NEXT, real_names[i]);
    if (f && other_copy(f)) {
        void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY); /* (as other_copy) */
        f = libc ? dlsym(libc, real_names[i]) : NULL;
    }
    resolving = 0;
    if (f)
        atomic_store_explicit(&reals[i], f, memory_order_release);
    return f;
}

static inline void *real(enum real_fn i)
{
    void *f = atomic_load_explicit(&reals[i], memory_order_acquire);
    return likely(f != NULL) ? f : real_resolve(i);
}

/*
 * The recorder's own locks, which pass through unrecorded: those in
 * [own_lo, own_lo + own_len).  Until the constructor runs, and for good when
 * the recorder is linked statically into the program, that is struct rp_rt,
 * which holds all its mutexes (rt.h); in librankprof.so the
 * constructor widens it to the library's whole writable segment, which
 * holds rp_rt too.  Written by the constructor only, before the program's
 * threads exist, so one unsigned range test covers both cases.
 */
static const char *own_lo = (const char *)&rp_rt;
static size_t own_len = sizeof(rp_rt);

/* dl_iterate_phdr callback: the writable PT_LOAD holding &rp_rt, if the
 * object is not the main program (entry 0, whose name is empty). */
static int find_own(struct dl_phdr_info *info, size_t size, void *arg)
{
    uintptr_t at = (uintptr_t)&rp_rt;
    (void)size;
    if (arg == NULL || !info->dlpi_name || !info->dlpi_name[0])
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && (ph->p_flags & PF_W) && at - lo < ph->p_memsz) {
            own_lo = (const char *)lo;
            own_len = ph->p_memsz;
            return 1;
        }
    }
    return 0;
}

__attribute__((constructor)) static void locks_ctor(void)
{
    for (int i = 0; i < R_NREAL; i++)
        (void)real((enum real_fn)i);
    dl_iterate_phdr(find_own, &own_len);
}

/* Calls real function i with the given prototype and arguments; a function
 * that cannot be resolved makes the call fail with EAGAIN. */
#define CALL(i, proto, ...)                                                                        \
    ({                                                                                             \
        proto f_ = (proto)real(i);                                                                 \
        f_ ? f_(__VA_ARGS__) : EAGAIN;                                                             \
    })

typedef int (*lock1_fn)(void *);
typedef int (*timed_fn)(void *, const struct timespec *);
typedef int (*clock_fn)(void *, clockid_t, const struct timespec *);
typedef int (*cwait_fn)(pthread_cond_t *, pthread_mutex_t *);
typedef int (*ctimed_fn)(pthread_cond_t *, pthread_mutex_t *, const struct timespec *);
typedef int (*cclock_fn)(pthread_cond_t *, pthread_mutex_t *, clockid_t, const struct timespec *);

/* ---- recording ----------------------------------------------------------- */

/* Whether lock is one of the recorder's own (in [own_lo, own_lo + own_len)). */
static inline int own_lock(const void *lock)
{
    return (uintptr_t)lock - (uintptr_t)own_lo < own_len;
}

/*
 * Whether lock events of this lock are recorded: the class is on and the
 * lock is not one of the recorder's own.  One load of the class mask, one
 * range test; the appends below then skip the class test (RP_CLASS_CHECKED),
 * so an interposer tests the mask once per call.
 */
static inline int rec_on(const void *lock)
{
    if (!(atomic_load_explicit(&rp_rt.mask, memory_order_relaxed) & RP_CLASS_BIT_LOCK))
        return 0;
    return !own_lock(lock);
}

/* Appends lock event op of lock, stamped now; rec_on(lock) said yes. */
static inline void put(unsigned op, const void *lock)
{
    uint64_t w = rp_raw_word(op, (uintptr_t)lock);
    if (!rp_append_fast_at(RP_CLASS_CHECKED, w, 1, 0, NULL))
        rp_append_slow(w);
}

/* The same, stamped t0: a counter read made before the real call. */
static inline void put_at(unsigned op, const void *lock, uint64_t t0)
{
    uint64_t w = rp_raw_word(op, (uintptr_t)lock);
    if (!rp_append_fast_at(RP_CLASS_CHECKED, w, 1, 0, &t0))
        rp_append_slow(w);
}

/* The address-based API's append: it tests the class itself. */
static inline void rec(unsigned op, const volatile void *lock)
{
    rp_append(RP_CLASS_BIT_LOCK, rp_raw_word(op, (uintptr_t)lock));
}

/* A lock call's result: acquired (EOWNERDEAD hands over a robust mutex). */
static inline int got(int r)
{
    return r == 0 || r == EOWNERDEAD;
}

/* One more of the program's locks held (rp_lock_holds, rt.h): called before
 * the acquisition's record is appended.  Cannot fail (it saturates rather
 * than wrap). */
static inline void hold_add(void)
{
    if (likely(rp_lock_holds != UINT32_MAX))
        rp_lock_holds++;
}

/* One fewer, after the release's record and the real unlock; a release
 * never seen acquired leaves it at 0.  Cannot fail. */
static inline void hold_drop(void)
{
    if (likely(rp_lock_holds != 0))
        rp_lock_holds--;
}

/* The unrecorded path (class off, or the recorder's own lock): r, the real
 * acquisition's result, counted as a hold when it succeeded on one of the
 * program's locks.  Returns r; cannot fail. */
static inline int held(const void *lock, int r)
{
    if (got(r) && !own_lock(lock))
        hold_add();
    return r;
}

/* r, the real unlock's result, counted as a release when it succeeded on
 * one of the program's locks.  Returns r; cannot fail. */
static inline int released(const void *lock, int r)
{
    if (r == 0 && !own_lock(lock))
        hold_drop();
    return r;
}

/*
 * The body of every blocking acquisition: try first, block only when busy.
 * TRY and BLOCK are real-function calls (expressions); rec_on(lock) said
 * yes.  t0_, the counter read just before the try, stamps the ACQ of an
 * uncontended acquisition and the WAIT of a contended one (the request);
 * the ACQ or FAIL after blocking is stamped when the blocking call returns.
 * So the counter is never read right behind the try's locked instruction,
 * which would wait for it to retire.  A try that fails with an error other
 * than EBUSY records nothing and the blocking call decides (as libc would).
 * A success counts in rp_lock_holds before its ACQ is appended.
 */
#define ACQUIRE(lock, TRY, BLOCK)                                                                  \
    do {                                                                                           \
        uint64_t t0_ = rp_counter();                                                               \
        int r0_ = (TRY);                                                                           \
        if (likely(got(r0_))) {                                                                    \
            hold_add();                                                                            \
            put_at(RP_RAW_LOCK_ACQ, (lock), t0_);                                                  \
            return r0_;                                                                            \
        }                                                                                          \
        if (r0_ == EBUSY)                                                                          \
            put_at(RP_RAW_LOCK_WAIT, (lock), t0_);                                                 \
        int r_ = (BLOCK);                                                                          \
        if (got(r_)) {                                                                             \
            hold_add();                                                                            \
            put(RP_RAW_LOCK_ACQ, (lock));                                                          \
        } else if (r0_ == EBUSY)                                                                   \
            put(RP_RAW_LOCK_FAIL, (lock));                                                         \
        return r_;                                                                                 \
    } while (0)

/*
 * The program's own try-lock, TRY: a hold on success, stamped before the
 * try as above; a busy lock is a failed attempt, a wait from before the try
 * to its return.
 */
#define ATTEMPT(lock, TRY)                                                                         \
    do {                                                                                           \
        uint64_t t0_ = rp_counter();                                                               \
        int r_ = (TRY);                                                                            \
        if (likely(got(r_))) {                                                                     \
            hold_add();                                                                            \
            put_at(RP_RAW_LOCK_ACQ, (lock), t0_);                                                  \
        } else if (r_ == EBUSY) {                                                                  \
            put_at(RP_RAW_LOCK_WAIT, (lock), t0_);                                                 \
            put(RP_RAW_LOCK_FAIL, (lock));                                                         \
        }                                                                                          \
        return r_;                                                                                 \
    } while (0)

/* ---- pthread_mutex_* ----------------------------------------------------- */

RP_INTERPOSE int pthread_mutex_lock(pthread_mutex_t *m)
{
    if (!rec_on(m))
        return held(m, CALL(R_MUTEX_LOCK, lock1_fn, m));
    ACQUIRE(m, CALL(R_MUTEX_TRYLOCK, lock1_fn, m), CALL(R_MUTEX_LOCK, lock1_fn, m));
}

RP_INTERPOSE int pthread_mutex_trylock(pthread_mutex_t *m)
{
    if (!rec_on(m))
        return held(m, CALL(R_MUTEX_TRYLOCK, lock1_fn, m));
    ATTEMPT(m, CALL(R_MUTEX_TRYLOCK, lock1_fn, m));
}

RP_INTERPOSE int pthread_mutex_timedlock(pthread_mutex_t *restrict m,
                                         const struct timespec *restrict ts)
{
    if (!rec_on(m))
        return held(m, CALL(R_MUTEX_TIMEDLOCK, timed_fn, m, ts));
    ACQUIRE(m, CALL(R_MUTEX_TRYLOCK, lock1_fn, m), CALL(R_MUTEX_TIMEDLOCK, timed_fn, m, ts));
}

RP_INTERPOSE int pthread_mutex_clocklock(pthread_mutex_t *restrict m, clockid_t clk,
                                         const struct timespec *restrict ts)
{
    if (!rec_on(m))
        return held(m, CALL(R_MUTEX_CLOCKLOCK, clock_fn, m, clk, ts));
    ACQUIRE(m, CALL(R_MUTEX_TRYLOCK, lock1_fn, m), CALL(R_MUTEX_CLOCKLOCK, clock_fn, m, clk, ts));
}

RP_INTERPOSE int pthread_mutex_unlock(pthread_mutex_t *m)
{
    if (rec_on(m))
        put(RP_RAW_LOCK_REL, m);
    return released(m, CALL(R_MUTEX_UNLOCK, lock1_fn, m));
}

/* ---- pthread_rwlock_* (readers and writers share the lock's spans) ------- */

RP_INTERPOSE int pthread_rwlock_rdlock(pthread_rwlock_t *l)
{
    if (!rec_on(l))
        return held(l, CALL(R_RW_RDLOCK, lock1_fn, l));
    ACQUIRE(l, CALL(R_RW_TRYRDLOCK, lock1_fn, l), CALL(R_RW_RDLOCK, lock1_fn, l));
}

RP_INTERPOSE int pthread_rwlock_wrlock(pthread_rwlock_t *l)
{
    if (!rec_on(l))
        return held(l, CALL(R_RW_WRLOCK, lock1_fn, l));
    ACQUIRE(l, CALL(R_RW_TRYWRLOCK, lock1_fn, l), CALL(R_RW_WRLOCK, lock1_fn, l));
}

RP_INTERPOSE int pthread_rwlock_tryrdlock(pthread_rwlock_t *l)
{
    if (!rec_on(l))
        return held(l, CALL(R_RW_TRYRDLOCK, lock1_fn, l));
    ATTEMPT(l, CALL(R_RW_TRYRDLOCK, lock1_fn, l));
}

RP_INTERPOSE int pthread_rwlock_trywrlock(pthread_rwlock_t *l)
{
    if (!rec_on(l))
        return held(l, CALL(R_RW_TRYWRLOCK, lock1_fn, l));
    ATTEMPT(l, CALL(R_RW_TRYWRLOCK, lock1_fn, l));
}

RP_INTERPOSE int pthread_rwlock_timedrdlock(pthread_rwlock_t *restrict l,
                                            const struct timespec *restrict ts)
{
    if (!rec_on(l))
        return held(l, CALL(R_RW_TIMEDRDLOCK, timed_fn, l, ts));
    ACQUIRE(l, CALL(R_RW_TRYRDLOCK, lock1_fn, l), CALL(R_RW_TIMEDRDLOCK, timed_fn, l, ts));
}

RP_INTERPOSE int pthread_rwlock_timedwrlock(pthread_rwlock_t *restrict l,
                                            const struct timespec *restrict ts)
{
    if (!rec_on(l))
        return held(l, CALL(R_RW_TIMEDWRLOCK, timed_fn, l, ts));
    ACQUIRE(l, CALL(R_RW_TRYWRLOCK, lock1_fn, l), CALL(R_RW_TIMEDWRLOCK, timed_fn, l, ts));
}

RP_INTERPOSE int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
    if (rec_on(l))
        put(RP_RAW_LOCK_REL, l);
    return released(l, CALL(R_RW_UNLOCK, lock1_fn, l));
}

/* ---- pthread_spin_* ------------------------------------------------------ */

RP_INTERPOSE int pthread_spin_lock(pthread_spinlock_t *s)
{
    if (!rec_on((const void *)s))
        return held((const void *)s, CALL(R_SPIN_LOCK, lock1_fn, (void *)s));
    ACQUIRE((const void *)s, CALL(R_SPIN_TRYLOCK, lock1_fn, (void *)s),
            CALL(R_SPIN_LOCK, lock1_fn, (void *)s));
}

RP_INTERPOSE int pthread_spin_trylock(pthread_spinlock_t *s)
{
    if (!rec_on((const void *)s))
        return held((const void *)s, CALL(R_SPIN_TRYLOCK, lock1_fn, (void *)s));
    ATTEMPT((const void *)s, CALL(R_SPIN_TRYLOCK, lock1_fn, (void *)s));
}

RP_INTERPOSE int pthread_spin_unlock(pthread_spinlock_t *s)
{
    if (rec_on((const void *)s))
        put(RP_RAW_LOCK_REL, (const void *)s);
    return released((const void *)s, CALL(R_SPIN_UNLOCK, lock1_fn, (void *)s));
}

/* ---- condition variables: the mutex is released while waiting ----------- */

/*
 * With the lock class on, a condition wait on mutex m records
 *
 *     REL m, cond-wait c begins   (one counter read before the real call)
 *     cond-wait c ends, ACQ m     (one counter read after it returns)
 *
 * where the cond-wait is a LOCK_WAIT ... LOCK_FAIL pair whose payload is c
 * with RP_RAW_COND_BIT: a span of kind wait keyed by the condition (see
 * writer.h), so the blocked time is a wait on c, not the caller's own time,
 * and the hold of m pauses as before.  The re-acquisition of m happens
 * inside the real call and is not timed apart.  With the lock class off
 * and the wait class on, the call is an ordinary wait span of its own site
 * (waits.c).  A cancellation inside the wait ends it and records the
 * re-acquisition (a cleanup handler), so the program's own cleanup unlock
 * matches a hold.  The recorder's own mutexes pass through unrecorded.
 * errno is kept.  The mutex stays counted in rp_lock_holds all along (the
 * marks are appended while it is held).
 */

/* Records the begin (end = 0) or end of the condition wait on c, and the
 * release or re-acquisition of m, stamped t. */
static inline void cond_mark(const void *c, const void *m, int end, uint64_t t)
{
    int e = errno;
    if (!end)
        put_at(RP_RAW_LOCK_REL, m, t);
    put_at(end ? RP_RAW_LOCK_FAIL : RP_RAW_LOCK_WAIT,
           (const void *)((uintptr_t)c | RP_RAW_COND_BIT), t);
    if (end)
        put_at(RP_RAW_LOCK_ACQ, m, t); /* re-acquired (or never released: EINVAL) */
    else if (unlikely(rp_rt.direct))   /* it blocks: what it did so far is counted */
        rp_direct_idle();
    errno = e;
}

/* The condition and mutex of a condition wait, for its cleanup handler. */
struct cond_wait {
    const void *c, *m;
};

/* A cancellation inside the wait: glibc re-acquires the mutex, then runs
 * the cleanup handlers (the program's own unlocks it): the wait ends and
 * the hold begins again, as on a return. */
static void cond_cancelled(void *arg)
{
    const struct cond_wait *w = arg;
    cond_mark(w->c, w->m, 1, rp_counter());
}

/* The recorded body of a condition wait: CALL between the two marks. */
#define COND_WAIT(c, m, r, CALL)                                                                   \
    do {                                                                                           \
        struct cond_wait w_ = {(c), (m)};                                                          \
        cond_mark(c, m, 0, rp_counter());                                                          \
        pthread_cleanup_push(cond_cancelled, &w_);                                                 \
        r = (CALL);                                                                                \
        pthread_cleanup_pop(0);                                                                    \
        cond_mark(c, m, 1, rp_counter());                                                          \
    } while (0)

RP_INTERPOSE int pthread_cond_wait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m)
{
    int r;
    if (!rec_on(m)) {
        if (own_lock(m) || !rp_wait_on())
            return CALL(R_COND_WAIT, cwait_fn, c, m);
        RP_WAIT_SPAN(RP_W_COND_WAIT, r = CALL(R_COND_WAIT, cwait_fn, c, m));
        return r;
    }
    COND_WAIT(c, m, r, CALL(R_COND_WAIT, cwait_fn, c, m));
    return r;
}

RP_INTERPOSE int pthread_cond_timedwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m,
                                        const struct timespec *restrict ts)
{
    int r;
    if (!rec_on(m)) {
        if (own_lock(m) || !rp_wait_on())
            return CALL(R_COND_TIMEDWAIT, ctimed_fn, c, m, ts);
        RP_WAIT_SPAN(RP_W_COND_TIMEDWAIT, r = CALL(R_COND_TIMEDWAIT, ctimed_fn, c, m, ts));
        return r;
    }
    COND_WAIT(c, m, r,
              CALL(R_COND_TIMEDWAIT, ctimed_fn, c, m, ts)); /* re-acquires on timeout too */
    return r;
}

/* What C++'s std::condition_variable::wait_for/wait_until call (glibc 2.30
 * and later). */
RP_INTERPOSE int pthread_cond_clockwait(pthread_cond_t *restrict c, pthread_mutex_t *restrict m,
                                        clockid_t clk, const struct timespec *restrict ts)
{
    int r;
    if (!rec_on(m)) {
        if (own_lock(m) || !rp_wait_on())
            return CALL(R_COND_CLOCKWAIT, cclock_fn, c, m, clk, ts);
        RP_WAIT_SPAN(RP_W_COND_CLOCKWAIT, r = CALL(R_COND_CLOCKWAIT, cclock_fn, c, m, clk, ts));
        return r;
    }
    COND_WAIT(c, m, r, CALL(R_COND_CLOCKWAIT, cclock_fn, c, m, clk, ts));
    return r;
}

/* ---- the address-based API ----------------------------------------------- */

RP_API void rp_lock_wait(const volatile void *lock)
{
    rec(RP_RAW_LOCK_WAIT, lock);
}

/* The address-based API's acquisitions and releases count in rp_lock_holds
 * as the interposers' do (a lock released by another thread than its
 * acquirer leaves that one counted as holding it: its buffers then go to
 * the writer). */
RP_API void rp_lock_acquired(const volatile void *lock)
{
    hold_add();
    rec(RP_RAW_LOCK_ACQ, lock);
}

RP_API void rp_lock_failed(const volatile void *lock)
{
    rec(RP_RAW_LOCK_FAIL, lock);
}

RP_API void rp_lock_released(const volatile void *lock)
{
    rec(RP_RAW_LOCK_REL, lock);
    hold_drop();
}

/*
 * Lock names: a fixed open-addressing table, filled by rp_lock_name() and
 * read by the writer thread when it first defines a lock's ids.  A slot is
 * claimed by a CAS of its key from 0, then its name is written, then
 * `ready` is published (release); a reader trusts the name only after
 * seeing ready (acquire).  Slots are never freed or renamed, so a name, once
 * visible, never changes.
 */
#define NAMES_CAP 256 /* power of two */

struct lock_name {
    _Atomic uintptr_t key;
    _Atomic int ready;
    char name[RP_LOCK_NAME_MAX];
};

static struct lock_name names[NAMES_CAP];

static inline uint32_t name_hash(uintptr_t k)
{
    uint64_t h = (uint64_t)k * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 40) & (NAMES_CAP - 1);
}

RP_API int rp_lock_name(const volatile void *lock, const char *name)
{
    uintptr_t k = (uintptr_t)lock;
    if (!k || !name || !*name)
        return RP_EINVAL;
    for (uint32_t n = 0, i = name_hash(k); n < NAMES_CAP; n++, i = (i + 1) & (NAMES_CAP - 1)) {
        uintptr_t cur = atomic_load(&names[i].key);
        if (cur == 0 && atomic_compare_exchange_strong(&names[i].key, &cur, k)) {
            size_t len = strnlen(name, RP_LOCK_NAME_MAX - 1);
            memcpy(names[i].name, name, len);
            names[i].name[len] = 0;
            atomic_store_explicit(&names[i].ready, 1, memory_order_release);
            return 0;
        }
        if (cur == k)
            return RP_EBUSY; /* named before: the first name stays */
    }
    return RP_ENOMEM;
}

RP_HIDDEN const char *rp_lock_name_of(uint64_t key)
{
    uintptr_t k = (uintptr_t)key;
    if (!k)
        return NULL;
    for (uint32_t n = 0, i = name_hash(k); n < NAMES_CAP; n++, i = (i + 1) & (NAMES_CAP - 1)) {
        uintptr_t cur = atomic_load_explicit(&names[i].key, memory_order_acquire);
        if (cur == 0)
            return NULL;
        if (cur == k)
            return atomic_load_explicit(&names[i].ready, memory_order_acquire) ? names[i].name
                                                                               : NULL;
    }
    return NULL;
}

/* ---- the recorder's own locks --------------------------------------------- */

/*
 * The recorder takes its own mutexes through these, straight to the real
 * functions, so that no lock interposer ever sees them: not this copy's
 * (the range test in own_lock covers that too), and not another recorder's
 * in the same process - a program linked with librankprof.a run under
 * `rankprof record`, whose preloaded copy would otherwise record this
 * copy's locks and this copy the other's, each re-entering the other while
 * it holds its lock.  If the real function cannot be had yet (a nested
 * resolution), the call goes through the interposer, which lets the
 * recorder's own locks of this copy pass.  They fail as the real ones do.
 *
 * Under ThreadSanitizer (preloaded in front of us: program -> TSan ->
 * rankprof -> libc) the real functions are behind TSan's interceptors, and
 * locks taken past them are invisible to it: every access they guard would
 * be reported as a race.  There the calls take the ordinary path, through
 * TSan and then this copy's interposer (which lets its own locks pass); a
 * second recorder in a sanitized process is not supported.
 */
#ifdef RP_TSAN
#define OWN_REAL(i) NULL
#else
#define OWN_REAL(i) real(i)
#endif

RP_HIDDEN int rp_own_lock(pthread_mutex_t *m)
{
    lock1_fn f = (lock1_fn)OWN_REAL(R_MUTEX_LOCK);
    return f ? f(m) : pthread_mutex_lock(m);
}

RP_HIDDEN int rp_own_trylock(pthread_mutex_t *m)
{
    lock1_fn f = (lock1_fn)OWN_REAL(R_MUTEX_TRYLOCK);
    return f ? f(m) : pthread_mutex_trylock(m);
}

RP_HIDDEN int rp_own_unlock(pthread_mutex_t *m)
{
    lock1_fn f = (lock1_fn)OWN_REAL(R_MUTEX_UNLOCK);
    return f ? f(m) : pthread_mutex_unlock(m);
}

RP_HIDDEN int rp_own_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
    cwait_fn f = (cwait_fn)OWN_REAL(R_COND_WAIT);
    return f ? f(c, m) : pthread_cond_wait(c, m);
}

RP_HIDDEN int rp_own_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                    const struct timespec *ts)
{
    ctimed_fn f = (ctimed_fn)OWN_REAL(R_COND_TIMEDWAIT);
    return f ? f(c, m, ts) : pthread_cond_timedwait(c, m, ts);
}

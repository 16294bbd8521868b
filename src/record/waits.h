// SPDX-License-Identifier: MIT
/*
 * waits.h - what the wait recorder (waits.c) offers the rest of the
 * recorder: one static site per interposed blocking call, and the inline
 * begin and end of a wait span, for the condition-variable interposers of
 * locks.c, which record a wait too.
 */
#ifndef RP_RECORD_WAITS_H
#define RP_RECORD_WAITS_H

#include <errno.h>
#include <pthread.h>

#include "direct.h"
#include "rt.h"

/* The interposed blocking calls; each has its site, rp_wait_sites[i]. */
enum rp_wait_fn {
    RP_W_NANOSLEEP,
    RP_W_CLOCK_NANOSLEEP,
    RP_W_USLEEP,
    RP_W_SLEEP,
    RP_W_PAUSE,
    RP_W_POLL,
    RP_W_POLL_CHK,
    RP_W_PPOLL,
    RP_W_PPOLL_CHK,
    RP_W_SELECT,
    RP_W_PSELECT,
    RP_W_EPOLL_WAIT,
    RP_W_EPOLL_PWAIT,
    RP_W_EPOLL_PWAIT2,
    RP_W_PTHREAD_JOIN,
    RP_W_COND_WAIT, /* recorded here only while the lock class is off */
    RP_W_COND_TIMEDWAIT,
    RP_W_COND_CLOCKWAIT,
    RP_W_SEM_WAIT,
    RP_W_SEM_TIMEDWAIT,
    RP_W_SEM_CLOCKWAIT,
    RP_W_WAITPID,
    RP_W_WAIT,
    RP_W_WAITID,
    RP_W_SIGWAIT,
    RP_W_SIGTIMEDWAIT,
    RP_W_SIGWAITINFO,
    RP_W_ACCEPT,
    RP_W_ACCEPT4,
    RP_W_RECV,
    RP_W_RECV_CHK,
    RP_W_RECVFROM,
    RP_W_RECVFROM_CHK,
    RP_W_RECVMSG,
    RP_W_READ,
    RP_W_READ_CHK,
    RP_W_READV,
    RP_W_N
};

/*
 * ThreadSanitizer builds of the recorder only.  TSan's own interceptors of
 * blocking calls (poll, nanosleep, read, pthread_join ...) call the real
 * function - ours - with the thread marked as inside a blocking call, where
 * TSan stops modelling atomics and locks; our appends' release stores then
 * look like plain writes, and the writer's reads of the records they publish
 * are reported as races that are not.  So a wait's appends, and the reads
 * and writes of the descriptor-type cache, are hidden from TSan (its
 * dynamic annotations, weak: nothing is required of the runtime).
 * Nothing of this is compiled without TSan.
 */
#ifdef RP_TSAN
void AnnotateIgnoreReadsBegin(const char *file, int line) __attribute__((weak));
void AnnotateIgnoreReadsEnd(const char *file, int line) __attribute__((weak));
void AnnotateIgnoreWritesBegin(const char *file, int line) __attribute__((weak));
void AnnotateIgnoreWritesEnd(const char *file, int line) __attribute__((weak));
#define RP_WAIT_TSAN_BEGIN()                                                                       \
    do {                                                                                           \
        if (AnnotateIgnoreWritesBegin && AnnotateIgnoreReadsBegin) {                               \
            AnnotateIgnoreReadsBegin(__FILE__, __LINE__);                                          \
            AnnotateIgnoreWritesBegin(__FILE__, __LINE__);                                         \
        }                                                                                          \
    } while (0)
#define RP_WAIT_TSAN_END()                                                                         \
    do {                                                                                           \
        if (AnnotateIgnoreWritesEnd && AnnotateIgnoreReadsEnd) {                                   \
            AnnotateIgnoreWritesEnd(__FILE__, __LINE__);                                           \
            AnnotateIgnoreReadsEnd(__FILE__, __LINE__);                                            \
        }                                                                                          \
    } while (0)
#else
#define RP_WAIT_TSAN_BEGIN() ((void)0)
#define RP_WAIT_TSAN_END()   ((void)0)
#endif

/* The sites, kind RP_KIND_WAIT, class RP_CLASS_WAIT, named after the call
 * ("nanosleep"); registered with sites.c by waits.c's constructor. */
RP_HIDDEN extern struct rp_site rp_wait_sites[RP_W_N];

/* Whether the calling thread records a wait now: the wait class is on,
 * and this is neither the writer thread nor a thread inside the recorder
 * (whose own blocking calls pass through unrecorded). */
static inline int rp_wait_on(void)
{
    if (likely(!(atomic_load_explicit(&rp_rt.mask, memory_order_relaxed) & RP_CLASS_BIT_WAIT)))
        return 0;
    struct rp_tbuf *t = rp_self;
    return !rp_is_writer && !(t && t->guard);
}

/* Records the begin of a wait span of blocking call w; rp_wait_on() said
 * yes.  Keeps errno.  Cannot fail: an event that cannot be stored is
 * counted as lost by the append. */
static inline void rp_wait_begin(enum rp_wait_fn w)
{
    int e = errno;
    uint64_t word = rp_raw_word(RP_RAW_SITE_BEGIN, (uintptr_t)&rp_wait_sites[w]);
    RP_WAIT_TSAN_BEGIN();
    if (!rp_append_fast_at(RP_CLASS_CHECKED, word, 1, 0, NULL))
        rp_append_slow(word);
    if (unlikely(rp_rt.sync_write)) /* a forked child: no writer thread */
        rp_rt_child_flush();
    if (unlikely(rp_rt.direct)) /* what it did so far is in its statistics */
        rp_direct_idle();
    RP_WAIT_TSAN_END();
    errno = e;
}

/* Records the end of the wait span begun by rp_wait_begin(w) (whenever the
 * recorder still records, like every site's end).  Keeps errno. */
static inline void rp_wait_end(enum rp_wait_fn w)
{
    int e = errno;
    RP_WAIT_TSAN_BEGIN();
    rp_append(RP_CLASS_BIT_ALL, rp_raw_word(RP_RAW_SITE_END, (uintptr_t)&rp_wait_sites[w]));
    RP_WAIT_TSAN_END();
    errno = e;
}

/* Ends the wait span of site (enum rp_wait_fn)(uintptr_t)arg: the cleanup
 * handler of a thread cancelled (or leaving by pthread_exit from a signal
 * handler) inside the real call, so that the span ends when the wait did. */
static inline void rp_wait_cancelled(void *arg)
{
    rp_wait_end((enum rp_wait_fn)(uintptr_t)arg);
}

/*
 * The wait span of site S around the statement CALL.  All these calls are
 * cancellation points: a cancellation inside one unwinds through the
 * handler pushed here, which ends the span (glibc's C cleanup: a setjmp
 * buffer, about 10 ns of the recorded path).
 */
#define RP_WAIT_SPAN(S, CALL)                                                                      \
    do {                                                                                           \
        rp_wait_begin(S);                                                                          \
        pthread_cleanup_push(rp_wait_cancelled, (void *)(uintptr_t)(S));                           \
        CALL;                                                                                      \
        pthread_cleanup_pop(0);                                                                    \
        rp_wait_end(S);                                                                            \
    } while (0)

#endif /* RP_RECORD_WAITS_H */

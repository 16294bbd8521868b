// SPDX-License-Identifier: MIT
/*
 * rt.h - the recorder runtime shared by its files: per-thread buffers, the
 * hot-path append, and the state of the writer.
 *
 * Each recorded thread owns a small ring of fixed-size buffers of raw
 * records (see src/trace/writer.h).  The thread is the only producer; the
 * consumer is whoever holds the thread's busy flag (rt_writer.c): the
 * thread itself, which encodes and writes a buffer when it publishes it,
 * or the writer thread ("writer" below):
 *
 *     thread:  fills bufs[produced % nbuf]          writer: encodes bufs[consumed % nbuf]
 *              when full: lens[] = count,                   writes it to the file,
 *                         produced++ (release),             consumed++ (release),
 *                         wake the writer                   wake waiting threads
 *              next buffer must satisfy
 *                  produced - consumed < nbuf
 *
 * so a buffer is never written and read at the same time, and a thread's
 * memory is bounded by nbuf * bufsize.  When no buffer is free the thread
 * either waits for the writer (policy "wait", lossless, the default) or
 * drops events (policy "drop"), counting them and recording the count as a
 * LOST event in its next buffer.
 *
 * The hot path (rp_append) takes no lock, makes no call and no allocation:
 * a mask test, a TLS load, a recursion-guard store, a bounds test, the clock
 * and a 16-byte store.
 *
 * Periodic flush.  A thread may run for a long time without filling a
 * buffer; so that a SIGKILL, _exit or crash loses at most RANKPROF_FLUSH_MS
 * of its events, the writer also writes the filled prefix of the buffer a
 * thread is still filling.  Every store to t->pos is a release store
 * (rp_pos_set: a plain mov on x86-64, stlr on arm64), made after the records
 * below it are complete, and the writer loads pos with acquire, so the
 * records it then reads are whole.  The writer does this only for the buffer
 * that is next to consume (consumed == produced), and only if pos points
 * into that buffer, bufs[consumed % nbuf]; it remembers how far it wrote in
 * t->part and writes the rest when the buffer is published.  That is safe
 * because
 *
 *     - the thread never writes below pos in its current buffer;
 *     - after publishing the buffer it cannot come back to it before the
 *       writer consumes it (produced - consumed < nbuf), and only the writer
 *       advances consumed;
 *     - bufs[i] is set before the first pos that points into it is stored,
 *       so a pos the writer sees in bufs[consumed % nbuf] orders that too.
 *
 * A record whose second half (the DATA record of an instant or counter) may
 * still come is left for the next flush.  The same pass, run once more when
 * the writer stops, writes what live threads have recorded at exit() and
 * at a fatal signal.
 */
#ifndef RP_RECORD_RT_H
#define RP_RECORD_RT_H

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>

#include "clock.h"
#include "rankprof.h"
#include "trace/writer.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#define RP_NOINLINE __attribute__((noinline))

/*
 * ThreadSanitizer builds only: RP_TSAN is defined, and RP_TSAN_PUBLISH /
 * RP_TSAN_ACQUIRE state a happens-before arc TSan would otherwise miss.
 * A thread cancelled inside a blocking call TSan intercepts (nanosleep,
 * pthread_cond_wait ...) runs its key destructors, rp_rt_thread_exit among
 * them, still marked as inside that call: the cancellation unwinds past
 * TSan's interceptor without leaving it, and there TSan stops modelling
 * atomics and locks.  The final publish's release store then looks like a
 * plain write, and the writer's read of the last buffer like a race.  The
 * arc is stated on the tbuf with TSan's dynamic annotations, which it honours
 * even there (weak: nothing is required of the runtime).  The same holds
 * for an event recorded inside TSan's own pthread_join, which calls the
 * recorder's (waits.c) within its interceptor: a buffer the thread takes
 * there is free by an acquire load TSan does not model, and its stores
 * into it looked like races with the writer's last read (the writer's
 * hand-back and buf_next state that arc on &t->consumed).  Nothing of this
 * is compiled without TSan.
 */
#if defined(__SANITIZE_THREAD__)
#define RP_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RP_TSAN 1
#endif
#endif
#ifdef RP_TSAN
void AnnotateHappensBefore(const char *file, int line, const volatile void *addr)
    __attribute__((weak));
void AnnotateHappensAfter(const char *file, int line, const volatile void *addr)
    __attribute__((weak));
#define RP_TSAN_PUBLISH(a)                                                                         \
    do {                                                                                           \
        if (AnnotateHappensBefore)                                                                 \
            AnnotateHappensBefore(__FILE__, __LINE__, (a));                                        \
    } while (0)
#define RP_TSAN_ACQUIRE(a)                                                                         \
    do {                                                                                           \
        if (AnnotateHappensAfter)                                                                  \
            AnnotateHappensAfter(__FILE__, __LINE__, (a));                                         \
    } while (0)
#else
#define RP_TSAN_PUBLISH(a) ((void)0)
#define RP_TSAN_ACQUIRE(a) ((void)0)
#endif

#define RP_NBUF_MAX 16

/*
 * Why events were dropped, counted per reason besides the in-band LOST
 * records (which say how many and where, not why), and written as
 * `lost_REASON` INFO keys at the end (format.h).
 */
enum rp_loss {
    RP_LOSS_FULL,      /* no free buffer under the drop policy */
    RP_LOSS_STOPPED,   /* recording had stopped: the final flush or a fatal signal */
    RP_LOSS_FAILED,    /* writing the trace had failed */
    RP_LOSS_NOMEM,     /* no memory for a buffer or a thread's state */
    RP_LOSS_REENTERED, /* a signal handler's, while it interrupted an append */
    RP_LOSS_GONE,      /* after the thread's state was released at its exit */
    RP_LOSS_N
};

struct rp_tbuf {
    /* hot: touched by every event */
    struct rp_raw *pos, *end;
    uint32_t guard; /* non-zero while the thread is inside the recorder */

    /* the ring (thread side) */
    struct rp_raw *base;
    uint64_t lost;           /* events dropped since the last LOST record */
    uint64_t lost_first;     /* ticks of the first of them */
    uint64_t reentered;      /* events dropped by the recursion guard */
    uint64_t why[RP_LOSS_N]; /* drops by reason, this thread's own (written by it
                                only, read by the writer at the end: relaxed) */
    uint64_t end_ticks;      /* when the thread ended (thread_exit), 0 while it runs */
    uint32_t tid;            /* a stream id: kernel tid and reuse generation (format.h) */

    /* shared with the writer */
    /* 1 while someone encodes this thread's records: the thread itself
     * (rp_rt_self_encode) or the writer; taken by compare-and-swap, never
     * waited for on the event path (rt_writer.c, "Who encodes") */
    _Atomic int busy;
    struct rp_raw *bufs[RP_NBUF_MAX];
    uint32_t lens[RP_NBUF_MAX];
    _Atomic uint64_t produced, consumed;
    _Atomic int exited;
    uint64_t rq_exit; /* schedstat fallback: the thread's own last read, at its exit
                         (1 + ns, 0 = none), stored before `exited` (release) */

    /* whoever holds busy */
    uint8_t *eout; /* the thread's own encoder output, rp_enc_bound(4 * bufrecs) bytes
                      (mapped at its first self-encoding), NULL if none */
    int self;      /* the thread itself is encoding: output into eout */
    struct rp_enc_thread enc;
    struct rp_offq offq; /* off-CPU intervals to merge (offcpu.c) */
    uint64_t rq1;        /* schedstat run-queue delay since the thread began: the writer's
                            last read (ns) */
    uint8_t off_reg;     /* offcpu.c has seen this tbuf */
    uint8_t rq_have;     /* rq1 is set */
    uint8_t tsd_round;   /* its key's destructor was put off a round (rp_rt_thread_exit) */
    uint32_t part;       /* records of bufs[consumed % nbuf] already written */
    uint32_t win_done;   /* recording windows' edges applied to its stream (ctl.c) */
    int win_off;         /* the last edge applied switched recording off */
    int announced;
    void *ring;          /* the flight recorder's watched spans (ring.c), NULL: none yet */
    void *altstack;      /* the signal stack the recorder gave the thread (rt.c,
                            altstack_give), NULL: the thread had its own */
    size_t altstack_len; /* its length, below a guard page */
    struct rp_tbuf *next;
};

struct rp_rt {
    _Atomic uint32_t mask; /* enabled classes, RP_CLASS_BIT_*; 0 when not recording */
    uint32_t nbuf;
    uint32_t bufrecs; /* records per buffer */
    int drop;         /* policy: 1 = drop, 0 = wait */
    int quiet;
    int direct;   /* RANKPROF_MODE=direct: events go to direct.c, no buffers */
    int out_file; /* the trace is a regular file (not a pipe, a socket, a device) */
    int fd;
    _Atomic int failed;  /* errno of the first failed write, 0 if none */
    _Atomic int stopped; /* shutdown has begun */
    _Atomic int ending;  /* a fatal signal's, an _exit's, quick_exit's or exec's flush
                            has begun: other threads wait in their next hook for the
                            process to end (rp_rt_fatal_park); cleared if the exec fails */
    unsigned exit_timeout_ms;
    unsigned flush_ms;        /* periodic flush of partial buffers; 0 = off */
    unsigned writer_delay_us; /* test knob: the writer sleeps this per buffer */
    _Atomic int fatal;        /* the fatal signal being handled, 0 if none */
    _Atomic int fatal_done;   /* the writer has written the trace's end for it */
    /* when the first fatal signal arrived (for END's ticks), 0 if none */
    _Atomic uint64_t fatal_ticks;
    /* the stream id of the thread the first fatal signal was delivered to,
     * 0 if none or not recorded (INFO fatal_tid: the stack shown there) */
    _Atomic uint32_t fatal_tid;

    pthread_mutex_t lock; /* guards the list, the conds and writer_running */
    pthread_cond_t wake;  /* writer: there is work */
    pthread_cond_t space; /* threads: a buffer was freed */
    struct rp_tbuf *threads;
    int waiters;
    int writer_running;
    /* the writer has started and is in its loop, where it allocates only
     * under drain_lock (fork waits for it: atfork_prepare) */
    _Atomic int writer_ready;
    /* the writer has done its part of the final flush and leaves (the
     * flush waits for this, not for the thread's end: a thread that ends
     * runs its allocator's clean-up, whose lock a thread stopped by a
     * signal inside malloc may hold) */
    _Atomic int writer_finished;
    /* no writer thread (a forked child): threads write their own buffers
     * under drain_lock */
    int sync_write;
    /* threads encode and write their own full buffers, the time a PAUSE
     * (rt.c, append_locked); with RANKPROF_SELF_ENCODE=0 the writer thread
     * encodes them all (docs/recording.md) */
    int self_encode;
    /* one drainer at a time: the writer's pass, or a thread writing when
     * there is no writer; taken before lock */
    pthread_mutex_t drain_lock;
    /* direct.c's locks (its thread list; rp_direct_print's sort).  Every
     * mutex of the recorder is in this struct: linked statically, the lock
     * interposers know the recorder's own locks by this range (locks.c). */
    pthread_mutex_t direct_lock, print_lock;
    /* a write to the trace file, or a move of its descriptor (rt.c) */
    pthread_mutex_t fd_lock;
    /* the shared id table of the threads' encoding, and the order of DEFS
     * before the EVENTS that use them (rt_writer.c) */
    pthread_mutex_t enc_lock;
    pthread_mutex_t off_lock; /* the off-CPU rings and every tbuf's offq (offcpu.c) */
    _Atomic int self_block;   /* threads must not encode their own buffers (fork) */
    pthread_t writer;
    pthread_key_t key;

    const char *clock_name;
    double freq;
    double clock_step; /* ticks the counter moves by at once (rp_clock_step) */
    uint64_t start_ticks, start_mono;
    uint64_t rec_mono; /* rp_mono_ns when rt_start ended (0 before): recording began */
    int calib_late;    /* measure the cost again while the program runs (RANKPROF_CALIBRATE_LATE) */
    uint64_t events_written, lost_total;
    struct rp_enc enc;
    uint8_t *out; /* encoder output, rp_enc_bound(bufrecs) bytes */
    char path[4096];
};

RP_HIDDEN extern struct rp_rt rp_rt;
RP_HIDDEN extern __thread struct rp_tbuf *rp_self;
/* Non-zero in the writer thread only (its blocking calls are not waits). */
RP_HIDDEN extern __thread int rp_is_writer;
/*
 * The program's locks the calling thread holds, as the lock interposers and
 * the address-based API see them (locks.c): mutexes, rwlocks (read or
 * write), spinlocks, each acquisition counted once, never the recorder's
 * own.  While it is non-zero the thread leaves its full buffers to the
 * writer (rp_rt_self_encode): an encoding done here would make every thread
 * waiting for one of those locks wait for it too.  Invariants:
 *   - an acquisition counts before its record is appended, a release after
 *     the real unlock returned success, so the count says "held" at every
 *     append made while the lock is held (the append may fill the buffer);
 *   - a condition wait leaves it alone: its records are appended before the
 *     real call releases the mutex and after it took it again;
 *   - it never goes below 0: a release that finds it at 0 (a lock the
 *     thread did not see acquired) is not counted.
 * Only the thread itself touches it, with plain loads and stores: a signal
 * handler that interrupts an update and takes a lock lets it go before it
 * returns, so it leaves the count as it found it.  It lives in TLS rather
 * than in the tbuf so that an acquisition made before the thread's first
 * record counts too.
 */
RP_HIDDEN extern __thread uint32_t rp_lock_holds;

/*
 * The rare path of rp_append: the thread's first event, a full buffer, drop
 * mode, a signal handler interrupting an append, or a clock that is not the
 * cycle counter.  Never fails visibly: an event that cannot be recorded is
 * counted as lost.
 */
RP_HIDDEN RP_NOINLINE void rp_append_slow(uint64_t word);
/* A fatal signal is handled, or the process's final flush runs (exit,
 * _exit, quick_exit, exec), on another thread: waits, at most the final
 * flush's deadline and a second, for it to end the process (rt_start.c).
 * Cannot fail. */
RP_HIDDEN RP_NOINLINE void rp_rt_fatal_park(void);
/* An exec after the final flush failed: the process goes on (unrecorded),
 * and no thread waits for it to end.  Cannot fail. */
RP_HIDDEN void rp_rt_exec_failed(void);
/* An _exit, _Exit, quick_exit or exec is about to flush and end the
 * process: recording stops, and the other threads wait in their next hook
 * (rp_rt_fatal_park).  Cannot fail. */
RP_HIDDEN void rp_rt_ending(void);
/* The process is ending by exit, _exit, _Exit or quick_exit with status:
 * END says so (RP_END_STATUS), the first caller's.  Cannot fail. */
RP_HIDDEN void rp_rt_exit_status(int status);

/* The cycle counter, for the fast path only (rp_clock_tsc is checked). */
static inline uint64_t rp_counter(void)
{
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#elif defined(__aarch64__)
    uint64_t v;
    __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
    return v;
#else
    return rp_ticks();
#endif
}

/*
 * Moves t's append position: a release store, so that the writer, which
 * loads pos with acquire for the periodic flush, sees the records below it
 * complete.  Every store to pos goes through here.
 */
static inline void rp_pos_set(struct rp_tbuf *t, struct rp_raw *p)
{
    __atomic_store_n(&t->pos, p, __ATOMIC_RELEASE);
}

/* cls of an append whose caller has tested the class bit itself. */
#define RP_CLASS_CHECKED 0u

/*
 * The fast path of an append of n records (n is 1, or 2 for an op and its
 * DATA record; a constant, so each caller gets its own straight code):
 * returns 1 when done (stored, or the class is off), 0 when the caller must
 * take its rare path.  cls is an RP_CLASS_BIT_*, or RP_CLASS_CHECKED for a
 * caller that has just tested the class itself (the lock interposers, which
 * must decide before calling the real function).  The record's ticks are
 * the cycle counter read here, or *at when at is not NULL (rp_append_at).
 * cls and whether at is NULL are constants at every call, so the function
 * hooks compile as if neither choice existed (checked with objdump).
 *
 * The fast path is a leaf: everything unusual leaves through the caller's
 * one tail call, so the compiler saves no registers.  The guard keeps a
 * signal handler that runs instrumented code from interleaving with this
 * append (its events are counted as re-entered and dropped); the signal
 * fences keep the compiler from moving the stores across the guard (a
 * handler runs on this CPU, so no hardware barrier is needed).  pos is
 * re-read after the guard is set: a handler that ran before may have moved
 * the thread to another buffer.  The records of one append are in one
 * buffer, never split.
 */
static inline __attribute__((always_inline)) int
rp_append_fast_at(uint32_t cls, uint64_t word, unsigned n, uint64_t data, const uint64_t *at)
{
    if (cls != RP_CLASS_CHECKED &&
        unlikely(!(atomic_load_explicit(&rp_rt.mask, memory_order_relaxed) & cls))) {
        if (unlikely(atomic_load_explicit(&rp_rt.ending, memory_order_relaxed)))
            rp_rt_fatal_park(); /* the signal or the exit ends the process meanwhile */
        return 1;
    }
    struct rp_tbuf *t = rp_self;
    if (likely(t != NULL && !t->guard && rp_clock_tsc)) {
        t->guard = 1;
        atomic_signal_fence(memory_order_seq_cst);
        struct rp_raw *p = t->pos;
        if (likely(p < t->end && (n == 1 || t->end - p >= 2))) {
            p->ticks = at ? *at : rp_counter();
            p->word = word;
            if (n == 2) {
                p[1].ticks = data;
                p[1].word = rp_raw_word(RP_RAW_DATA, 0);
            }
            rp_pos_set(t, p + n);
            atomic_signal_fence(memory_order_seq_cst);
            t->guard = 0;
            return 1;
        }
        atomic_signal_fence(memory_order_seq_cst);
        t->guard = 0;
    }
    return 0;
}

/* rp_append_fast_at with the counter read at the store. */
static inline __attribute__((always_inline)) int rp_append_fast(uint32_t cls, uint64_t word,
                                                                unsigned n, uint64_t data)
{
    return rp_append_fast_at(cls, word, n, data, NULL);
}

/* Appends one raw record for the calling thread; cls is an RP_CLASS_BIT_*. */
static inline void rp_append(uint32_t cls, uint64_t word)
{
    if (!rp_append_fast(cls, word, 1, 0))
        rp_append_slow(word);
}

/*
 * rp_append with the ticks of a counter read made earlier by the caller
 * (rp_counter(), on this thread; the lock interposers read it before a
 * locked instruction, not behind it, see src/record/locks.c).  The rare
 * path does not take them: it stamps the record with its own, later, clock
 * read (the first event of a thread, a full buffer, a clock that is not the
 * cycle counter, direct mode).  The caller must append nothing between its
 * read and this call, so that the thread's records stay in time order; a
 * signal handler's records that land in between are the one exception, and
 * the encoder then clamps the backward step to 0 ticks.
 */
static inline void rp_append_at(uint32_t cls, uint64_t word, uint64_t ticks)
{
    if (!rp_append_fast_at(cls, word, 1, 0, &ticks))
        rp_append_slow(word);
}

/*
 * The calling thread's stream id (format.h, "Thread streams"): tid (its
 * kernel tid) with the number of earlier threads of this process that had
 * the same tid above RP_TID_BITS, so that a reused tid is another thread in
 * the trace.  The first call on a thread allocates it (lock-free, once per
 * thread: never on the event path); later calls with the same tid return
 * it.  Cannot fail: without memory for the table every thread gets
 * generation 0 (reused tids then merge, as before format 1.3).
 */
RP_HIDDEN uint32_t rp_thread_stream(uint32_t tid);
/* The process's exit has begun after main's pthread_exit: its atexit
 * handlers and destructors run on the last thread, whose own end has
 * handed its buffer back (rt.c, direct_thread.c); that thread records
 * again. */
RP_HIDDEN extern atomic_int rp_rt_exiting;

/* The calling thread's next rp_thread_stream is a new stream, as a new
 * thread's: a second life after its end (the process's exit running on
 * it).  Cannot fail. */
RP_HIDDEN void rp_thread_stream_renew(void);

/*
 * Sets the calling thread's cancellation state back to state after the
 * recorder disabled it (pthread_setcancelstate): for a thread in
 * asynchronous cancellation, a cancellation sent meanwhile then acts as at
 * a cancellation point, the join's result PTHREAD_CANCELED (rt.c says
 * why).  No system call.  Cannot fail: a failed call leaves the state as it
 * was.
 */
RP_HIDDEN void rp_rt_cancel_on(int state);

/*
 * A section of the recorder that takes its locks on a program thread: no
 * cancellation and no signal handler inside it (rt.c says why).  Cannot
 * fail.  Three system calls in all: per buffer or per thread, never per
 * event.
 */
struct rt_section {
    sigset_t sigs;
    int cancel;
    int clean; /* rp_rt_sig_clean before the section */
};
/* Inside a section entered with no signal blocked that has a handler:
 * then the thread is (as far as can be told) not in a signal handler, whose
 * own signal is blocked while it runs, and may run code that is not
 * async-signal-safe, such as its own encoding (it may allocate).  0
 * outside sections. */
RP_HIDDEN extern __thread int rp_rt_sig_clean;
RP_HIDDEN void section_enter(struct rt_section *s);
RP_HIDDEN void section_leave(struct rt_section *s);

/* Starts the recorder once (environment, file, writer).  Returns 0 or < 0. */
RP_HIDDEN int rp_rt_start(void);
/* Final flush: bounded by RANKPROF_EXIT_TIMEOUT_MS; safe to call twice. */
RP_HIDDEN void rp_rt_shutdown(void);
/* exit() begins on this thread (exec.c's wrapper): waits, bounded, when
 * another thread's exit() or final flush is under way (rt_start.c). */
RP_HIDDEN void rp_rt_exit_begin(void);

/* Writes a MAPS chunk now (the dlclose interposer, dl.c: the library's
 * mapping before it goes).  Nothing when the trace is not open or
 * recording has stopped.  Cannot fail: a failed write stops the recorder
 * as any other does. */
RP_HIDDEN void rp_rt_maps_now(void);

/* The MPI rank the launcher's environment gives the process (OMPI_COMM_WORLD_RANK,
 * PMIX_RANK, PMI_RANK, SLURM_PROCID), as decimal text into buf: 1, or 0 when
 * none is set or it is not a number that fits (mpi.c).  Cannot fail. */
RP_HIDDEN int rp_mpi_rank(char *buf, size_t n);
/* Whether the program is an MPI launcher (mpirun, mpiexec, orted, srun, ...),
 * which records nothing unless RANKPROF_LAUNCHER=record (mpi.c).  Cannot fail. */
RP_HIDDEN int rp_mpi_launcher(void);
/* Writes an INFO chunk of one pair now (rt_out.c; rp_info_add).  Returns 0, or
 * RP_EINVAL when not recording a trace or the pair does not fit 512 bytes. */
RP_HIDDEN int rp_rt_info_now(const char *key, const char *val);

/* A forked child's periodic flush, at the start of a blocking call (rt.c). */
RP_HIDDEN void rp_rt_child_flush(void);
/* A forked child's seed (rt_start.c): rp_rt_seed_keys makes it from the
 * keys (enc_key, TKEY) of the n frames open at the fork, outermost first,
 * unless n > max; rp_rt_seed_pending says how many raw records are still
 * to write (0: none), and rp_rt_seed_put writes them at p, the start of a
 * buffer or batch of thread tid, when it is the thread that forked, and
 * returns where the next record goes. */
RP_HIDDEN void rp_rt_seed_keys(const uint64_t *keys, uint32_t n, uint32_t max);
RP_HIDDEN uint32_t rp_rt_seed_pending(void);
RP_HIDDEN struct rp_raw *rp_rt_seed_put(uint32_t tid, struct rp_raw *p);

/* The program is about to close or take descriptor fd (the close, dup2 and
 * dup3 interposers): if it is the trace's, the trace moves out of the way
 * first (rt.c, "output").  One load and compare otherwise (relaxed: the
 * number is only compared; rp_rt_fd_taken looks again under fd_lock). */
RP_HIDDEN void rp_rt_fd_taken(int fd);
static inline void rp_rt_fd_check(int fd)
{
    if (__builtin_expect(fd == __atomic_load_n(&rp_rt.fd, __ATOMIC_RELAXED) && fd >= 0, 0))
        rp_rt_fd_taken(fd);
}

#endif /* RP_RECORD_RT_H */

// SPDX-License-Identifier: MIT
/*
 * rt_writer.c - encoding the threads' buffers, and the writer thread.  A
 * thread that publishes a full buffer (rt.c) normally encodes it itself
 * (src/trace/writer.c), cut at the recording windows' edges (ctl.c), and
 * writes it (rt_out.c); the writer thread encodes what a thread left to it,
 * writes the filled part of buffers still being filled every
 * RANKPROF_FLUSH_MS, and retires threads that have ended.  The protocol
 * of the buffers is drawn in rt.h.
 *
 * Who encodes.  A thread's encoder state (its shadow stack, its cache of
 * ids, its part and windows' edges) belongs to whoever holds its busy
 * flag, taken by compare-and-swap: the thread itself when it publishes a
 * buffer, or the writer for a partial flush, a buffer the thread left, or
 * its end.  Neither waits for the other while the program runs: a thread
 * that finds the flag taken leaves its buffer to the writer, and the
 * writer skips a thread that is encoding its own (it will have written
 * everything it published when it lets go).  Only the end of recording
 * (exit, a fatal signal) and fork wait, bounded, for the flag.  Every
 * new id is made under rp_rt.enc_lock, and every DEFS chunk is written
 * under it, before the EVENTS chunk that made or found its ids: so no
 * EVENTS chunk reaches the file before the definitions it uses.
 */
#define _GNU_SOURCE
#include "rt_int.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "calib.h"
#include "ctl.h"
#include "common/bytes.h"
#include "direct.h"
#include "funcs.h"
#include "locks.h"
#include "offcpu.h"
#include "rankprof.h"
#include "sites.h"

/* ---- the writer --------------------------------------------------------- */

/* Describes a site pointer for DEFS (sites.c): -1 for an address that is
 * no registered site, so the encoder skips the record. */
RP_HIDDEN int rp_rt_describe_site(void *ctx, uint64_t site, struct rp_def *out)
{
    (void)ctx;
    return rp_sites_describe(site, out);
}

/* rp_rt.out's size in records (rp_enc_bound) */
RP_HIDDEN size_t rp_rt_out_recs;

/* ---- who encodes a thread ------------------------------------------------ */

/* buffers encoded by their own thread, and by the writer (relaxed counters) */
static _Atomic uint64_t enc_by_self, enc_by_writer;

/* A thread's own encoder output (eout) in records: a buffer with as many
 * off-CPU intervals merged in (each takes up to two events' bytes).  Only
 * the pages written are ever touched. */
static inline size_t self_out_recs(void)
{
    return 4 * (size_t)rp_rt.bufrecs;
}

static void enc_lock(void)
{
    rp_own_lock(&rp_rt.enc_lock);
}

static void enc_unlock(void)
{
    rp_own_unlock(&rp_rt.enc_lock);
}

RP_HIDDEN void rp_rt_enc_hooks(void)
{
    rp_rt.enc.lock_name = rp_lock_name_of;
    rp_rt.enc.func_start = rp_funcs_start_of;
    rp_rt.enc.lock = enc_lock;
    rp_rt.enc.unlock = enc_unlock;
}

/* Takes t's busy flag.  Returns 1, or 0 when someone else holds it. */
static inline int tb_claim(struct rp_tbuf *t)
{
    int free_ = 0;
    return atomic_compare_exchange_strong(&t->busy, &free_, 1);
}

static inline void tb_release(struct rp_tbuf *t)
{
    atomic_store_explicit(&t->busy, 0, memory_order_release);
}

static void nap_us(long us)
{
    struct timespec ts = {0, us * 1000};
    syscall(SYS_nanosleep, &ts, NULL); /* (not the interposer, waits.c) */
}

/* Takes t's busy flag, waiting for its holder up to about a second (a
 * thread that crashed while encoding never lets go).  Returns 1, or 0. */
static int tb_claim_wait(struct rp_tbuf *t)
{
    for (int i = 0; i < 20000; i++) {
        if (tb_claim(t))
            return 1;
        nap_us(50);
    }
    return 0;
}

RP_HIDDEN int rp_rt_claim_wait(struct rp_tbuf *t)
{
    return tb_claim_wait(t);
}

RP_HIDDEN void rp_rt_release(struct rp_tbuf *t)
{
    tb_release(t);
}

/* The writer's claim: waiting once recording is stopping (what a thread
 * is encoding then must be in the file before its end), not otherwise. */
static int tb_claim_writer(struct rp_tbuf *t)
{
    return atomic_load(&rp_rt.stopped) || atomic_load(&rp_rt.fatal) ? tb_claim_wait(t)
                                                                    : tb_claim(t);
}

/*
 * Why this is enough (fork): self_block is stored before each flag is
 * claimed, and a thread reads self_block after its own claim, all
 * sequentially consistent.  So a thread either took its flag before our
 * claim (we wait until it lets go, its encoding done) or after our
 * release, and then sees self_block and encodes nothing.  The list of
 * threads cannot change meanwhile (rp_rt.lock is held), and the writer
 * claims only under drain_lock, which the caller holds too.
 */
RP_HIDDEN int rp_rt_self_block_locked(int on)
{
    int unwaited = 0;
    atomic_store(&rp_rt.self_block, on);
    if (!on)
        return 0;
    for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next) {
        if (tb_claim_wait(t)) /* (a thread that sees self_block lets go at once) */
            tb_release(t);
        else
            unwaited++;
    }
    return unwaited;
}

/*
 * Encodes and writes one buffer of thread t (writer thread only), with the
 * thread's off-CPU intervals that fall before its last record merged in
 * (offcpu.c reads the rings first: the switch-in before a record that is
 * already visible here is in a ring by now).
 */
static void encode_buffer(struct rp_tbuf *t, const struct rp_raw *recs, size_t n)
{
    if (t->win_off) { /* after a switch off: the ends of what began before it */
        t->enc.orphans += n;
        return;
    }
    if (!t->announced) {
        rp_out_thread(t);
        t->announced = 1;
    }
    if (unlikely(rp_ring_watch)) /* --ring triggers: a span too long asks for a snapshot */
        rp_ring_scan(&t->ring, recs, n);
    uint64_t lost0 = t->enc.lost, skipped0 = t->enc.skipped, pause0 = t->enc.npause;
    const struct rp_enc_ins *ins = NULL;
    size_t nins = 0;
    if (rp_offcpu_source() == RP_OFFCPU_PERF) {
        rp_offcpu_poll();
        /* the queue is shared with every thread's poll: only the taking is
         * done under its lock, the plan (a pass over the whole batch) by
         * the encoder alone, so threads that encode their own do not queue
         * here; the encoder writes the intervals among the records, with
         * no merged copy of the batch */
        rp_own_lock(&rp_rt.off_lock);
        rp_offq_take(&t->offq, recs, n);
        rp_own_unlock(&rp_rt.off_lock);
        ins = rp_offq_plan(&t->offq, recs, n, &nins);
        /* an off-CPU record takes up to two events' bytes */
        size_t nm = n + nins;
        if (nins && t->self && 2 * nm > self_out_recs()) {
            ins = NULL; /* the intervals are dropped (counted late) */
            __atomic_fetch_add(&t->offq.late, nins, __ATOMIC_RELAXED);
            nins = 0;
        } else if (nins && !t->self && 2 * nm > rp_rt_out_recs) {
            uint8_t *no = realloc(rp_rt.out, rp_enc_bound(2 * nm));
            if (no) {
                rp_rt.out = no;
                rp_rt_out_recs = 2 * nm;
            } else {
                ins = NULL; /* the intervals are dropped (counted late) */
                __atomic_fetch_add(&t->offq.late, nins, __ATOMIC_RELAXED);
                nins = 0;
            }
        }
    }
    uint8_t *out = t->self ? t->eout : rp_rt.out;
    size_t len = rp_enc_events_ins(&rp_rt.enc, &t->enc, t->tid, recs, n, ins, nins, out);
    size_t dlen;
    enc_lock(); /* every pending definition, before these events (top) */
    const uint8_t *defs = rp_enc_take_defs(&rp_rt.enc, &dlen);
    if (dlen)
        rp_out_chunk(RP_CH_DEFS, defs, dlen);
    enc_unlock();
    if (len)
        rp_out_chunk(RP_CH_EVENTS, out, len);
    /* (counters that several encoding threads add to: relaxed, read at the end) */
    __atomic_fetch_add(&rp_rt.events_written, n - (t->enc.npause - pause0), /* PAUSE: ours */
                       __ATOMIC_RELAXED);
    if (atomic_load(&rp_rt.failed))
        __atomic_fetch_add(&rp_rt_unwritten, n, __ATOMIC_RELAXED);
    __atomic_fetch_add(&rp_rt.lost_total, t->enc.lost - lost0, __ATOMIC_RELAXED);
    __atomic_fetch_add(&rp_rt_unencoded, t->enc.skipped - skipped0, __ATOMIC_RELAXED);
    if (t->enc.skipped != skipped0 && n) { /* records the encoder could not keep */
        struct rp_raw rec = {recs[n - 1].ticks,
                             rp_raw_word(RP_RAW_LOST, t->enc.skipped - skipped0)};
        encode_buffer(t, &rec, 1);
    }
}

/*
 * A recording window's edge reaches thread t (ctl.c): the frames open then
 * end there, with their time up to it (an UNWIND record, as at a thread's
 * end), so do the holds of its locks (LOCK_REL records).  What the thread
 * records between a switch off and the next switch on (the ends of spans
 * begun before, which are recorded whatever the mask) is left out, and so
 * are, in a window, the exits and releases of what began before it (the
 * encoder's windowed state).  Writer only.
 */
static void win_apply(struct rp_tbuf *t, const struct rp_win_edge *e)
{
    /* the locks it holds are released there, latest first, and its frames
     * end there (their releases and exits, later, are left out) */
    while (t->enc.nholds) {
        struct rp_raw rel = {e->ticks,
                             rp_raw_word(RP_RAW_LOCK_REL, t->enc.holds[t->enc.nholds - 1].key)};
        uint32_t before = t->enc.nholds;
        encode_buffer(t, &rel, 1);
        if (t->enc.nholds >= before) /* (not encoded: out of memory) */
            t->enc.nholds = before - 1;
    }
    if (t->enc.depth) {
        struct rp_raw rec = {e->ticks, rp_raw_word(RP_RAW_UNWIND, 0)};
        encode_buffer(t, &rec, 1);
    }
    t->enc.windowed = 1;
    t->win_off = !e->on;
}

/* Applies to t the edges up to ticks `until` it has not had yet. */
RP_HIDDEN void rp_rt_win_catch_up(struct rp_tbuf *t, uint64_t until)
{
    const struct rp_win_edge *e;
    uint32_t n = rp_ctl_edges(&e);
    for (; t->win_done < n && e[t->win_done].ticks <= until; t->win_done++)
        win_apply(t, &e[t->win_done]);
}

/*
 * Encodes and writes records of thread t (writer thread only), cut at the
 * edges of the recording windows that fall among them: the records before
 * an edge, the edge, the rest.  An edge after the last record waits for
 * the thread's next records, its end, or rp_rt_win_catch_up.  (A DATA record's
 * ticks field is a value: it goes with the record before it.)
 */
static void write_buffer(struct rp_tbuf *t, const struct rp_raw *recs, size_t n)
{
    const struct rp_win_edge *e;
    uint32_t ne = rp_ctl_edges(&e);
    while (t->win_done < ne && n) {
        size_t k = 0;
        while (k < n && (recs[k].ticks < e[t->win_done].ticks ||
                         (k && recs[k].word >> RP_RAW_SHIFT == RP_RAW_DATA)))
            k++;
        if (k == n)
            break;
        if (k)
            encode_buffer(t, recs, k);
        win_apply(t, &e[t->win_done++]);
        recs += k;
        n -= k;
    }
    if (n)
        encode_buffer(t, recs, n);
}

/*
 * Writes the losses a thread has counted but not yet put in a buffer: events
 * dropped while it had no free buffer, and events of signal handlers that
 * interrupted an append.  Called for a thread that has ended (its counters
 * are final: `exited` was stored with release after them) or for the
 * calling thread at shutdown.
 */
RP_HIDDEN void rp_rt_write_pending_loss(struct rp_tbuf *x)
{
    uint64_t n = x->lost + x->reentered;
    if (!n)
        return;
    struct rp_raw rec = {x->lost ? x->lost_first : rp_ticks(), rp_raw_word(RP_RAW_LOST, n)};
    x->lost = x->reentered = 0;
    write_buffer(x, &rec, 1);
}

/*
 * A thread that has ended (pthread_exit from deep frames, a longjmp out of
 * its start function) may leave frames open: the writer's shadow stack
 * says so.  They end where the thread ended, as one RP_RAW_UNWIND 0 record
 * (writer.h) at its end ticks, so the analyzer keeps their time up to
 * there instead of guessing.  Writer only, for a retired thread whose
 * buffers are all written.
 */
RP_HIDDEN void rp_rt_write_thread_end(struct rp_tbuf *x)
{
    if (!x->enc.depth || !x->end_ticks)
        return;
    struct rp_raw rec = {x->end_ticks, rp_raw_word(RP_RAW_UNWIND, 0)};
    write_buffer(x, &rec, 1);
}

/* Writes t's published buffer number c (its first t->part records were
 * written already), hands it back (consumed, release: the thread may
 * reuse it) and counts it in *by.  The caller holds t's claim. */
static void write_published(struct rp_tbuf *t, uint64_t c, _Atomic uint64_t *by)
{
    uint32_t idx = (uint32_t)(c % rp_rt.nbuf);
    if (t->lens[idx] > t->part)
        write_buffer(t, t->bufs[idx] + t->part, t->lens[idx] - t->part);
    t->part = 0;
    RP_TSAN_PUBLISH(&t->consumed); /* (buf_next's arc, for TSan) */
    atomic_store_explicit(&t->consumed, c + 1, memory_order_release);
    atomic_fetch_add_explicit(by, 1, memory_order_relaxed);
}

/* Writes every published buffer of every thread; retires exited threads
 * whose buffers are all written.  Returns the number of buffers written. */
RP_HIDDEN unsigned rp_rt_drain_once(void)
{
    unsigned done = 0;
    rp_own_lock(&rp_rt.lock);
    struct rp_tbuf *t = rp_rt.threads;
    rp_own_unlock(&rp_rt.lock);

    for (; t; t = t->next) {
        if (!tb_claim_writer(t))
            continue; /* the thread is encoding its own: it writes all it published */
        uint64_t c = atomic_load_explicit(&t->consumed, memory_order_relaxed);
        uint64_t p = atomic_load_explicit(&t->produced, memory_order_acquire);
        RP_TSAN_ACQUIRE(t);
        for (; c < p; c++) {
            write_published(t, c, &enc_by_writer);
            done++;
            if (rp_rt.writer_delay_us)
                usleep(rp_rt.writer_delay_us);
            rp_own_lock(&rp_rt.lock);
            if (rp_rt.waiters)
                pthread_cond_broadcast(&rp_rt.space);
            rp_own_unlock(&rp_rt.lock);
        }
        tb_release(t);
    }
    /*
     * Retire threads that have ended and been written out: their memory is
     * unmapped, and a thread that starts later may be given the same
     * addresses (thread_init).  No barrier is needed for that: every access
     * made here to x comes before the munmap in this thread, and the kernel
     * hands the range out again only after munmap has returned.  What
     * ThreadSanitizer knows of that order comes from its munmap, which
     * forgets the old accesses, and its mmap, which marks the range new; a
     * thread's first event inside a blocking call that ThreadSanitizer
     * wraps (pthread_join: it ignores the interceptors called within) maps
     * its tbuf unseen, so only the munmap is left, and it forgets whole
     * pages only.  A tbuf unmapped with sizeof(*x) bytes kept its shadow,
     * and the new thread's first write to lens[] was reported as a race with
     * this writer's last read of the old one's (a false report: the final
     * flush's publish against write_published, bench_threads under TSan).
     * Hence rp_rt_map_len: whole pages, mapped and unmapped.
     */
    rp_own_lock(&rp_rt.lock);
    for (struct rp_tbuf **pp = &rp_rt.threads; *pp;) {
        struct rp_tbuf *x = *pp;
        /* (an ended thread encodes nothing: the claim only orders its last
         * own encoding before what follows) */
        if (atomic_load(&x->exited) && atomic_load(&x->consumed) == atomic_load(&x->produced) &&
            tb_claim_wait(x)) {
            RP_TSAN_ACQUIRE(x);
            rp_rt_win_catch_up(x, x->end_ticks ? x->end_ticks : UINT64_MAX);
            rp_rt_orphans_retired += x->enc.orphans;
            rp_rt_write_pending_loss(x);
            rp_rt_write_thread_end(x);
            rp_offcpu_forget(x);
            for (unsigned r = 0; r < RP_LOSS_N; r++) /* (its counters are final) */
                rp_rt_loss_retired[r] += x->why[r];
            *pp = x->next;
            for (uint32_t i = 0; i < RP_NBUF_MAX; i++)
                if (x->bufs[i])
                    munmap(x->bufs[i], rp_rt_map_len(rp_rt.bufrecs * sizeof(struct rp_raw)));
            rp_enc_thread_free(&x->enc);
            rp_ring_thread_free(&x->ring);
            if (x->eout)
                munmap(x->eout, rp_rt_map_len(rp_enc_bound(self_out_recs())));
            munmap(x, rp_rt_map_len(sizeof(*x)));
        } else {
            pp = &x->next;
        }
    }
    rp_own_unlock(&rp_rt.lock);
    return done;
}

/* rp_rt_flush_partial with t's busy flag held. */
static int flush_partial_claimed(struct rp_tbuf *t)
{
    uint64_t c = atomic_load_explicit(&t->consumed, memory_order_relaxed);
    if (atomic_load_explicit(&t->produced, memory_order_acquire) != c)
        return 0; /* published buffers first: rp_rt_drain_once */
    struct rp_raw *pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
    struct rp_raw *b = pos ? t->bufs[c % rp_rt.nbuf] : NULL;
    if (!b || pos <= b + t->part || pos > b + rp_rt.bufrecs)
        return 0; /* nothing new, or the thread has moved on to another buffer */
    uint32_t n = (uint32_t)(pos - b);
    unsigned op = (unsigned)(pos[-1].word >> RP_RAW_SHIFT);
    if ((op == RP_RAW_INSTANT || op == RP_RAW_COUNTER) && --n <= t->part)
        return 0; /* its DATA record may still come */
    write_buffer(t, b + t->part, n - t->part);
    t->part = n;
    return 1;
}

/* ---- a thread's own encoding --------------------------------------------- */

RP_HIDDEN void rp_rt_enc_info(struct info_buf *ib)
{
    char v[2][24];
    uint64_t n[2] = {atomic_load_explicit(&enc_by_self, memory_order_relaxed),
                     atomic_load_explicit(&enc_by_writer, memory_order_relaxed)};
    for (int i = 0; i < 2; i++)
        snprintf(v[i], sizeof(v[i]), "%llu", (unsigned long long)n[i]);
    rp_info_put(ib->b, sizeof(ib->b), &ib->len, "buffers_self", v[0], strlen(v[0]));
    rp_info_put(ib->b, sizeof(ib->b), &ib->len, "buffers_writer", v[1], strlen(v[1]));
}

RP_HIDDEN int rp_rt_self_encode(struct rp_tbuf *t)
{
    /* under --drop a thread must never wait: not for a pipe's reader either
     * (a write to a regular file does not wait for anyone) */
    if (!rp_rt.self_encode || rp_rt.writer_delay_us || rp_rt.sync_write ||
        (rp_rt.drop && !rp_rt.out_file))
        return 0;
    /* not in a signal handler (nor with signals blocked: as far as can be
     * told, the same): the encoder allocates, and the code the handler
     * interrupted may be inside malloc */
    if (!rp_rt_sig_clean)
        return 0;
    /* not while the thread holds one of the program's locks (rt.h,
     * rp_lock_holds): every thread waiting for it would wait for the
     * encoding too, contention the program does not have; the writer
     * encodes the buffer (rp_rt_buf_publish wakes it) */
    if (rp_lock_holds)
        return 0;
    if (!tb_claim(t))
        return 0; /* the writer is at it: it writes this buffer too */
    int done = 0;
    /* after the claim: the end of recording and fork set these, then wait
     * for the flag, so a thread that sees none of them finishes first */
    if (atomic_load(&rp_rt.stopped) || atomic_load(&rp_rt.fatal) || atomic_load(&rp_rt.self_block))
        goto out;
    if (!t->eout) {
        void *m = mmap(NULL, rp_rt_map_len(rp_enc_bound(self_out_recs())), PROT_READ | PROT_WRITE,
                       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED)
            goto out;
        t->eout = m;
    }
    t->self = 1;
    uint64_t c = atomic_load_explicit(&t->consumed, memory_order_relaxed);
    uint64_t p = atomic_load_explicit(&t->produced, memory_order_acquire);
    for (; c < p; c++) /* (no one else waits for this thread's buffers: no broadcast) */
        write_published(t, c, &enc_by_self);
    t->self = 0;
    done = 1;
out:
    tb_release(t);
    return done;
}

/*
 * Writes the filled, not yet written part of the buffer t is still filling,
 * if that buffer is the next one to consume (the invariant is in rt.h).
 * Writer only (or a thread without one, under drain_lock).  Returns 1 if it
 * wrote something; 0 also when t is encoding its own buffer right now.
 */
RP_HIDDEN int rp_rt_flush_partial(struct rp_tbuf *t)
{
    if (!tb_claim_writer(t))
        return 0; /* the thread is encoding its own */
    int r = flush_partial_claimed(t);
    tb_release(t);
    return r;
}

/* rp_rt_flush_partials' windows' edges (ne of them, those up to ticks old)
 * for t, with its busy flag held. */
static void catch_up_claimed(struct rp_tbuf *t, uint32_t ne, uint64_t old)
{
    if (t->win_done >= ne)
        return; /* (no edge left for it: nothing to look at) */
    uint64_t c = atomic_load_explicit(&t->consumed, memory_order_relaxed);
    if (atomic_load_explicit(&t->produced, memory_order_acquire) != c)
        return;
    /* as rp_rt_flush_partial: the buffer is read only through a pos that
     * points into it (its store comes before pos's, rt.h) */
    struct rp_raw *pos = __atomic_load_n(&t->pos, __ATOMIC_ACQUIRE);
    struct rp_raw *b = pos ? t->bufs[c % rp_rt.nbuf] : NULL;
    if (!pos || (b && pos == b + t->part))
        rp_rt_win_catch_up(t, old);
}

/* Writes every thread's partial buffer (the writer, or a forked child's
 * thread under drain_lock: it has no writer); returns how many.
 * A thread whose records are all written then gets the windows' edges
 * older than 20 ms (any record of its from before them is in its buffer by
 * then), so that a thread that records nothing after an edge still has its
 * frames ended there.  A thread encoding its own buffer is skipped. */
RP_HIDDEN unsigned rp_rt_flush_partials(void)
{
    unsigned n = 0;
    rp_own_lock(&rp_rt.lock);
    struct rp_tbuf *t = rp_rt.threads;
    rp_own_unlock(&rp_rt.lock);
    const struct rp_win_edge *e;
    uint32_t ne = rp_ctl_edges(&e);
    uint64_t old = rp_ticks() - (uint64_t)(rp_rt.freq / 50);
    for (; t; t = t->next) {
        if (!tb_claim_writer(t))
            continue; /* the thread is encoding its own */
        n += (unsigned)flush_partial_claimed(t);
        catch_up_claimed(t, ne, old);
        tb_release(t);
    }
    return n;
}

RP_HIDDEN void rp_rt_fatal_write(int sig)
{
    if (rp_rt.direct) {
        rp_rt_direct_finish(1);
    } else {
        while (rp_rt_drain_once())
            ;
        rp_rt_flush_partials(); /* every thread's, the caller's too */
    }
    rp_funcs_write(rp_out_chunk, 1); /* throttled functions' call counts */
    rp_out_end_info(0);
    rp_out_clock();
    uint64_t at = atomic_load(&rp_rt.fatal_ticks);
    rp_out_end(RP_END_SIGNAL, sig, at ? at : rp_ticks());
    rp_ctl_shutdown(); /* the control page goes with the process (munmap, unlink) */
    atomic_store(&rp_rt.fatal_done, 1);
}

/*
 * The writer's part of a fatal signal (fatal_handler waits for it): the
 * flush (rp_rt_fatal_write) unless the handler wrote it (no writer ran
 * then).  Recording stops for good: threads waiting for a buffer are
 * released.
 */
RP_HIDDEN void rp_rt_fatal_flush(int sig)
{
    if (atomic_load(&rp_rt.fatal_done))
        return;
    rp_own_lock(&rp_rt.lock);
    atomic_store(&rp_rt.stopped, 1);
    pthread_cond_broadcast(&rp_rt.space);
    rp_own_unlock(&rp_rt.lock);
    rp_rt_fatal_write(sig);
}

static int work_pending_locked(void)
{
    for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next)
        if ((atomic_load(&t->produced) != atomic_load(&t->consumed) &&
             !atomic_load(&t->busy)) || /* (a busy thread writes what it published) */
            atomic_load(&t->exited))
            return 1;
    return 0;
}

/*
 * Set when the main thread has called pthread_exit (the destructor of
 * rp_rt_main_key, which only main holds: exit() runs no key destructors).  From
 * then on the process ends when its last thread does, and glibc counts the
 * writer among its threads, so the writer must not stay: it retires whenever
 * it has nothing to write (writer_main), and a thread that publishes a
 * buffer or needs a free one starts it again (rp_rt_writer_ensure_locked).  The
 * last thread's end then runs exit(0), whose final flush writes the rest.
 * The periodic flush of partial buffers pauses while the writer is retired.
 */
RP_HIDDEN atomic_int rp_rt_main_gone;
RP_HIDDEN atomic_int rp_rt_exiting;
RP_HIDDEN pthread_key_t rp_rt_main_key;

static void note_exiting(void)
{
    atomic_store(&rp_rt_exiting, 1);
}

RP_HIDDEN void rp_rt_main_exit(void *arg)
{
    (void)arg;
    atomic_store(&rp_rt_main_gone, 1);
    /* registered after the program's own atexit handlers (main has
     * returned no more): it runs first at the exit of the last thread,
     * whose calls in them and in the destructors are then recorded */
    atexit(note_exiting);
    if (rp_rt.direct)
        rp_direct_pub_retire(); /* no writer there: its publisher is the thread that stays */
    rp_own_lock(&rp_rt.lock);
    pthread_cond_signal(&rp_rt.wake);
    rp_own_unlock(&rp_rt.lock);
}

/* Whether the writer retires now (rp_rt_main_gone): called with the lock held
 * after a pass that wrote nothing; if so it is marked not running and
 * detached (nobody joins it), and must return without touching the lock. */
static int writer_retire_locked(void)
{
    if (!atomic_load(&rp_rt_main_gone) || atomic_load(&rp_rt.stopped) ||
        atomic_load(&rp_rt.fatal) || work_pending_locked())
        return 0;
    rp_rt.writer_running = 0;
    pthread_detach(pthread_self());
    return 1;
}

/* When measurement k (0 to RP_LATE_N - 1) while the program runs is due
 * (rp_rt_measure_late), in rp_mono_ns: RP_LATE_AFTER_MS x 10^k into the
 * recording; 0 while recording has not begun.  Cannot fail. */
static uint64_t late_due(unsigned k)
{
    uint64_t t = __atomic_load_n(&rp_rt.rec_mono, __ATOMIC_RELAXED), ms = RP_LATE_AFTER_MS;
    while (k--)
        ms *= 10;
    return t ? t + ms * 1000000ull : 0;
}

/*
 * The writer's end once recording has stopped for good (the final flush,
 * a fatal signal).  After main's pthread_exit glibc ends the process by
 * exit(0) on whichever thread ends last, and counts the writer among them:
 * had the writer returned while another thread finishes the final flush
 * (an exit's END) or a signal's handler is about to end the process, its
 * own end could be that exit(0), which ends the process before the END
 * (a program whose main called pthread_exit and whose last thread then
 * ended lost it every time) or with status 0 instead of the signal.  So it
 * stays, asleep, for the final flush's deadline and a second more, by
 * which time the process has ended; then it returns.  Cannot fail.
 */
static void writer_linger(void)
{
    if (!atomic_load(&rp_rt_main_gone))
        return;
    for (unsigned i = 0; i < rp_rt.exit_timeout_ms + 1000; i++)
        nap_us(1000);
}

static void *writer_main(void *arg)
{
    (void)arg;        /* (every signal blocked: rp_rt_thread_start) */
    rp_is_writer = 1; /* (the first use of the recorder's TLS may allocate it) */
    rp_offcpu_writer_started();
    atomic_store(&rp_rt.writer_ready, 1);
    rp_rt_out_old_close(); /* beside the program, not before it starts */

    /* A fatal signal cannot wake the writer (a condition variable is not
     * async-signal-safe): it sees rp_rt.fatal after at most one wait. */
    unsigned wait_ms = rp_rt.flush_ms && rp_rt.flush_ms < 200 ? rp_rt.flush_ms : 200;
    uint64_t last_clock = rp_mono_ns(), last_flush = last_clock;
    /* the measurements while the program runs still to make: several, so
     * that one phase of a shared machine (or of a sanitizer's runtime)
     * slower than the rest does not make the only sample; the analyzer
     * takes the fastest */
    unsigned late = rp_rt.calib_late ? RP_LATE_N : 0;
    uint64_t retry = 0; /* not before then: it was not possible */
    for (;;) {
        /* a measurement, when due (outside the locks: neither a fork nor
         * the program need wait for it); not possible then (no function
         * recorded now), tried again at the writer's next usual wake, so
         * that a run without functions costs no extra wakes */
        uint64_t due = late ? late_due(RP_LATE_N - late) : 0, at = rp_mono_ns();
        if (due && due < retry)
            due = retry;
        if (unlikely(due) && at >= due) {
            if (rp_rt_measure_late()) {
                late--;
                due = late ? late_due(RP_LATE_N - late) : 0; /* the next one's */
            } else
                retry = at + (uint64_t)wait_ms * 1000000;
        }
        rp_own_lock(&rp_rt.lock);
        if (!work_pending_locked() && !atomic_load(&rp_rt.stopped) && !atomic_load(&rp_rt.fatal)) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            /* (no later than the next measurement is due, or than a look
             * at whether recording has begun, which sets when) */
            uint64_t wait_ns = (uint64_t)wait_ms * 1000000;
            uint64_t cap = due > at ? due - at : RP_LATE_AFTER_MS * 1000000ull;
            if (late && cap < wait_ns)
                wait_ns = cap;
            ts.tv_nsec += (long)wait_ns;
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            rp_own_cond_timedwait(&rp_rt.wake, &rp_rt.lock, &ts);
        }
        int stopping = atomic_load(&rp_rt.stopped);
        rp_own_unlock(&rp_rt.lock);

        /* A pass runs under drain_lock, which fork's prepare handler takes
         * first: a fork never copies a writer caught inside the allocator
         * (not every allocator is fork-safe: a sanitizer's is not) or
         * between two halves of a chunk. */
        rp_own_lock(&rp_rt.drain_lock);
        int sig = atomic_load(&rp_rt.fatal);
        if (sig) {
            rp_rt_fatal_flush(sig);
            rp_own_unlock(&rp_rt.drain_lock);
            writer_linger();
            return NULL;
        }
        unsigned n = rp_rt_drain_once();
        if (unlikely(rp_ring_wanted())) { /* every thread's records, then the snapshot */
            rp_rt_flush_partials();
            rp_out_clock();
            rp_ring_snapshot();
        }
        rp_offcpu_poll(); /* at least every wait: the rings do not fill up while
                             the threads record nothing (all blocked) */
        uint64_t now = rp_mono_ns();
        if (rp_rt.flush_ms && now - last_flush >= (uint64_t)rp_rt.flush_ms * 1000000u) {
            rp_offcpu_tick(); /* schedstat fallback: the threads' run-queue delay */
            n += rp_rt_flush_partials();
            last_flush = now;
        }
        if (n && now - last_clock > 500000000u) {
            rp_out_clock(); /* calibration points for runs that never end cleanly */
            last_clock = now;
        }
        if (stopping && !n) {
            rp_rt_flush_partials(); /* what the threads still running have recorded */
            rp_own_unlock(&rp_rt.drain_lock);
            atomic_store(&rp_rt.writer_finished, 1); /* (nothing of the recorder's after) */
            writer_linger();
            return NULL;
        }
        if (!n && atomic_load(&rp_rt_main_gone)) {
            rp_rt_flush_partials();
            rp_own_lock(&rp_rt.lock);
            int retire = writer_retire_locked();
            rp_own_unlock(&rp_rt.lock);
            if (retire) {
                rp_own_unlock(&rp_rt.drain_lock);
                return NULL;
            }
        }
        rp_own_unlock(&rp_rt.drain_lock);
    }
}

/* Starts the writer thread if it is not running.  Called with the lock. */
RP_HIDDEN void rp_rt_writer_ensure_locked(void)
{
    if (rp_rt.writer_running || rp_rt.sync_write || atomic_load(&rp_rt.stopped))
        return;
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 256 * 1024);
    atomic_store(&rp_rt.writer_ready, 0);
    if (rp_rt_thread_start(&rp_rt.writer, &a, writer_main) == 0)
        rp_rt.writer_running = 1;
    pthread_attr_destroy(&a);
}

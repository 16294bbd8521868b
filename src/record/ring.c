// SPDX-License-Identifier: MIT
/*
 * ring.c - the flight recorder (`rankprof record --ring SIZE`,
 * RANKPROF_RING, docs/services.md): the process keeps only its most
 * recent events, in memory, and writes them as a whole trace when asked
 * (`rankprof ctl PID snapshot`), when a trigger fires (a span of a named
 * function or point longer than a threshold, a point over its budget),
 * and when it ends (exit, a fatal signal).
 *
 * While the ring is on, every chunk goes through rp_ring_chunk instead of
 * the file.  EVENTS chunks go into a FIFO of SIZE bytes, one buffer for
 * every thread, and the oldest whole chunks are dropped to make room:
 * every EVENTS chunk carries its thread's open spans (format.h, the
 * snapshot), so the chunks kept replay without those dropped, and the
 * spans open at the start of the kept window are cut frames, as in a
 * piece of a rotated trace (rotate.c).  The other chunks (INFO, MAPS, the
 * first CLOCK, DEFS, THREAD, FCOUNT) are kept whole beside it, in order;
 * of the later CLOCKs only the last.  A snapshot is the file header, those
 * chunks, the FIFO, the last CLOCK, an INFO that says why (key
 * "snapshot"), what the ring held ("ring_size", "ring_dropped") and an
 * END at the snapshot's time (flags 0: the process ran on), written to
 * NAME.snapN.tmp and renamed NAME.snapN (N = 1, 2, ...).  The END of the
 * run writes the same into NAME itself.
 *
 * Bounds: SIZE is global (all threads' kept EVENTS together, 16 bytes of
 * bookkeeping per chunk included); each thread keeps its raw buffers as
 * without the ring (RANKPROF_NBUF x RANKPROF_BUFSIZE); the kept chunks
 * grow with the ids and threads defined, not with the events.  Dropping
 * from the ring is not a loss: the trace says how many events it dropped
 * (ring_dropped), never as lost events.
 *
 * Triggers (RANKPROF_RING_TRIGGER, comma-separated: NAME>DURATION, NAME a
 * glob of function or point names, DURATION with ns, us, ms or s;
 * rate:NAME, a periodic NAME's run of half its period (the median of its
 * last intervals) or more; and "budget": a point's span over its budget)
 * are checked on the raw records
 * of each batch by whoever encodes it (rt_writer.c), with a small stack
 * per thread of the watched spans open; a span that ends over its
 * threshold asks for a snapshot, which the writer thread writes at its
 * next pass, after writing every thread's records (so the snapshot holds
 * the slow span whole and the other threads up to then).  At most one
 * trigger's snapshot per RANKPROF_RING_EVERY_MS (default 10000); the
 * triggers fired and those left out by that limit are counted (INFO
 * ring_triggers, ring_triggers_skipped).  Of the snapshot files, the newest
 * RANKPROF_RING_KEEP (default 16, 0: all) are kept, the older deleted.
 *
 * Locking: the ring's state is under a spin lock of its own (the
 * recorder's mutexes would be recorded), taken before fd_lock; a snapshot
 * holds it while it writes its file.  In a fatal signal's handler (a
 * forked child writing its own end) the lock is tried for about 100 ms,
 * then the end is not written.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/bytes.h"
#include "ctl.h"
#include "funcs.h"
#include "rt_int.h"
#include "sites.h"
#include "trace/control.h"

#define RING_MIN     65536u
#define ENT_HDR      16u /* per kept chunk: u32 bytes, u32 events, u64 base ticks */
#define TRIG_MAX     16
#define TRIG_BUDGET  255 /* tix of the budget trigger */
#define WATCH_DEPTH  64
#define WATCH_CACHE  256
#define REASON_MAX   200
#define WANT_CTL     1 /* ring.want: a ctl snapshot */
#define WANT_TRIGGER 2 /* a trigger fired */
#define WANT_TOP     4 /* rankprof top's file (RP_CTL_PUBLISH) */

struct trig {
    char name[128];
    uint64_t thr; /* ticks; 1 for a rate trigger */
    char thr_txt[32];
    int rate; /* rate:NAME, a periodic task's run against its period */
};

#define RATE_IV   16 /* intervals a rate trigger's period is the median of */
#define RATE_MIN  4  /* intervals before it is judged */
#define RATE_KEYS 8  /* rate-watched keys per thread */

/* A rate-watched key on a thread: the last intervals between the starts
 * of its outermost activations. */
struct rstate {
    uint64_t key, last;
    uint64_t iv[RATE_IV];
    uint32_t n;
};

/* A watched span open on a thread. */
struct wspan {
    uint64_t key, start, thr;
    uint8_t tix;
};

/* A thread's watched spans open, and its cache of decisions by key. */
struct rp_ring_thr {
    struct {
        uint64_t key, thr; /* thr 0: not watched */
        uint8_t tix;
        uint8_t known;
    } cache[WATCH_CACHE];
    struct wspan st[WATCH_DEPTH];
    uint32_t depth;
    struct rstate rs[RATE_KEYS];
};

RP_HIDDEN int rp_ring_on;
RP_HIDDEN int rp_ring_watch;

static struct {
    atomic_flag lock;
    uint8_t *buf; /* the FIFO, cap bytes */
    uint64_t cap, head, used;
    uint64_t nchunks;
    struct rp_kept pre; /* INFO, MAPS, the first CLOCK, DEFS, THREAD, FCOUNT, in order */
    uint8_t clock[64];  /* the last CLOCK chunk, whole */
    size_t clock_len;
    int have_clock;       /* the first CLOCK is in pre */
    uint64_t dropped_ev;  /* events dropped from the ring */
    uint64_t dropped_big; /* chunks larger than the ring */
    int ended;            /* the END was written: chunks go to the file as they are */
    int warned;
    struct trig trig[TRIG_MAX];
    int ntrig, budget;
    uint64_t every_ns, last_fire_ns;
    uint64_t fired, skipped, snaps;
    uint64_t keep;    /* snapshot files kept, the newest (0: all) */
    _Atomic int want; /* what is asked for: WANT_* */
    int published;    /* top_path was written: removed at the end */
    char top_path[64];
    char reason[REASON_MAX];
} ring = {.lock = ATOMIC_FLAG_INIT};

/* Takes the ring's lock; in a fatal signal's handler, for about 100 ms at
 * most.  Returns 1, or 0 when not taken. */
static int ring_lock(void)
{
    int fatal = atomic_load(&rp_rt.fatal) && rp_rt.sync_write;
    for (int i = 0; atomic_flag_test_and_set_explicit(&ring.lock, memory_order_acquire); i++) {
        if (fatal && i > 1000)
            return 0;
        if (fatal) {
            struct timespec us = {0, 100000};
            syscall(SYS_nanosleep, &us, NULL);
        } else {
            sched_yield();
        }
    }
    return 1;
}

static void ring_unlock(void)
{
    atomic_flag_clear_explicit(&ring.lock, memory_order_release);
}

/* Copies n bytes in and out of the FIFO at offset off, wrapping. */
static void fifo_put(uint64_t off, const void *src, size_t n)
{
    off %= ring.cap;
    size_t a = n < ring.cap - off ? n : (size_t)(ring.cap - off);
    memcpy(ring.buf + off, src, a);
    memcpy(ring.buf, (const uint8_t *)src + a, n - a);
}

static void fifo_get(uint64_t off, void *dst, size_t n)
{
    off %= ring.cap;
    size_t a = n < ring.cap - off ? n : (size_t)(ring.cap - off);
    memcpy(dst, ring.buf + off, a);
    memcpy((uint8_t *)dst + a, ring.buf, n - a);
}

/* Drops the oldest kept chunk. */
static void fifo_drop(void)
{
    uint8_t e[ENT_HDR];
    fifo_get(ring.head, e, ENT_HDR);
    uint64_t n = rp_get32(e);
    ring.dropped_ev += rp_get32(e + 4);
    ring.head = (ring.head + ENT_HDR + n) % ring.cap;
    ring.used -= ENT_HDR + n;
    ring.nchunks--;
}

/* Keeps an EVENTS chunk, dropping the oldest to make room. */
static void fifo_push(const uint8_t *hdr, const uint8_t *payload, size_t len)
{
    uint64_t need = ENT_HDR + RP_CHUNK_HDR_SIZE + len;
    uint32_t nev = len >= 16 ? rp_get32(payload + 4) & RP_EV_COUNT_MASK : 0;
    if (need > ring.cap) {
        ring.dropped_big++;
        ring.dropped_ev += nev;
        if (ring.dropped_big == 1 && !(atomic_load(&rp_rt.fatal) && rp_rt.sync_write))
            rp_rt_warn("a chunk of events is larger than the ring of %s and is dropped whole: "
                       "give a larger --ring, or a smaller RANKPROF_BUFSIZE",
                       getenv("RANKPROF_RING"), 0);
        return;
    }
    while (ring.used + need > ring.cap)
        fifo_drop();
    uint8_t e[ENT_HDR];
    rp_put32(e, (uint32_t)(RP_CHUNK_HDR_SIZE + len));
    rp_put32(e + 4, nev);
    rp_put64(e + 8, len >= 16 ? rp_get64(payload + 8) : 0);
    uint64_t tail = ring.head + ring.used;
    fifo_put(tail, e, ENT_HDR);
    fifo_put(tail + ENT_HDR, hdr, RP_CHUNK_HDR_SIZE);
    fifo_put(tail + ENT_HDR + RP_CHUNK_HDR_SIZE, payload, len);
    ring.used += need;
    ring.nchunks++;
}

/* A duration "5ms", "200us", "1.5s", "100ns" in ns; -1 when it is none. */
static double dur_ns(const char *s)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    if (errno || e == s || v < 0)
        return -1;
    if (!strcmp(e, "ns"))
        return v;
    if (!strcmp(e, "us"))
        return v * 1e3;
    if (!strcmp(e, "ms"))
        return v * 1e6;
    if (!strcmp(e, "s"))
        return v * 1e9;
    return -1;
}

/* Reads RANKPROF_RING_TRIGGER; a malformed item is warned about and left out. */
static void trig_parse(const char *s)
{
    char item[192];
    while (s && *s) {
        size_t n = strcspn(s, ",");
        snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item - 1 ? n : sizeof item - 1), s);
        s += n + (s[n] == ',');
        if (!*item)
            continue;
        if (!strcmp(item, "budget")) {
            ring.budget = 1;
            rp_ring_watch = 1;
            continue;
        }
        if (!strncmp(item, "rate:", 5) && item[5] && ring.ntrig < TRIG_MAX &&
            strlen(item + 5) < sizeof ring.trig[0].name) {
            struct trig *t = &ring.trig[ring.ntrig++];
            snprintf(t->name, sizeof t->name, "%s", item + 5);
            t->thr = 1;
            t->rate = 1;
            rp_ring_watch = 1;
            continue;
        }
        char *gt = strrchr(item, '>');
        double ns = gt ? dur_ns(gt + 1) : -1;
        if (!gt || gt == item || ns < 0 || (size_t)(gt - item) >= sizeof ring.trig[0].name ||
            ring.ntrig == TRIG_MAX) {
            rp_rt_warn("RANKPROF_RING_TRIGGER: '%s' is not NAME>DURATION (e.g. "
                       "handle_request>5ms), rate:NAME or 'budget', or one too many; left out",
                       item, 0);
            continue;
        }
        struct trig *t = &ring.trig[ring.ntrig++];
        snprintf(t->name, sizeof t->name, "%.*s", (int)(gt - item), item);
        snprintf(t->thr_txt, sizeof t->thr_txt, "%s", gt + 1);
        t->thr = (uint64_t)(ns * rp_rt.freq / 1e9);
        if (!t->thr)
            t->thr = 1;
        rp_ring_watch = 1;
    }
}

RP_HIDDEN void rp_ring_init(void)
{
    const char *s = getenv("RANKPROF_RING");
    if (!s || !*s || rp_rt.direct)
        return;
    char *e;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || *e || v < RING_MIN || v > (1ull << 50)) {
        rp_rt_warn("RANKPROF_RING=%s is not a size in bytes of at least 65536; the whole run "
                   "is recorded",
                   s, 0);
        return;
    }
    void *m = mmap(NULL, v, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) {
        rp_rt_warn("no memory for the ring of %s bytes; the whole run is recorded", s, errno);
        return;
    }
    ring.buf = m;
    ring.cap = v;
    const char *ev = getenv("RANKPROF_RING_EVERY_MS");
    ring.every_ns = (ev && *ev ? strtoull(ev, NULL, 10) : 10000ull) * 1000000ull;
    const char *kp = getenv("RANKPROF_RING_KEEP");
    ring.keep = kp && *kp ? strtoull(kp, NULL, 10) : 16;
    trig_parse(getenv("RANKPROF_RING_TRIGGER"));
    snprintf(ring.top_path, sizeof ring.top_path, "%s/rankprof.%d.stats", RP_CTL_DIR,
             (int)getpid());
    rp_ring_on = 1;
}

RP_HIDDEN uint64_t rp_ring_size(void)
{
    return rp_ring_on ? ring.cap : 0;
}

RP_HIDDEN void rp_ring_atfork_child(void)
{
    if (!rp_ring_on)
        return;
    atomic_flag_clear_explicit(&ring.lock, memory_order_relaxed);
    ring.head = ring.used = ring.nchunks = 0;
    ring.dropped_ev = ring.dropped_big = 0;
    ring.pre.len = 0; /* the child's own encoder starts its ids afresh */
    ring.have_clock = 0;
    ring.clock_len = 0;
    ring.ended = 0;
    ring.fired = ring.skipped = ring.snaps = 0;
    atomic_store(&ring.want, 0);
    ring.published = 0; /* (the parent's file stays the parent's) */
    snprintf(ring.top_path, sizeof ring.top_path, "%s/rankprof.%d.stats", RP_CTL_DIR,
             (int)getpid());
}

/* ---- writing ------------------------------------------------------------- */

/* Where the ring's content goes: a snapshot's file (fd >= 0, raw writes;
 * *bad set on failure) or the trace (fd -1, rp_out_writev). */
struct dest {
    int fd;
    int bad;
};

static void dest_put(struct dest *d, const void *p, size_t n)
{
    if (!n)
        return;
    if (d->fd < 0) {
        struct iovec iov = {(void *)p, n};
        rp_out_writev(&iov, 1);
        return;
    }
    if (!d->bad && rp_own_write_all(d->fd, p, n) < 0)
        d->bad = 1;
}

static void dest_chunk(struct dest *d, uint32_t type, const void *payload, size_t len)
{
    uint8_t hdr[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(hdr, type, payload, (uint32_t)len);
    dest_put(d, hdr, sizeof hdr);
    dest_put(d, payload, len);
}

static void info_put(uint8_t *b, size_t cap, size_t *len, const char *key, const char *val)
{
    rp_info_put(b, cap, len, key, val, strlen(val));
}

/* Writes the kept chunks, the FIFO, the last CLOCK and the ring's INFO
 * (why: the "snapshot" value, NULL for none) to d.  Ring lock held. */
static void ring_write(struct dest *d, const char *why)
{
    dest_put(d, ring.pre.p, ring.pre.len);
    uint8_t e[ENT_HDR];
    for (uint64_t off = ring.head, left = ring.used; left;) {
        fifo_get(off, e, ENT_HDR);
        uint64_t n = rp_get32(e), at = (off + ENT_HDR) % ring.cap;
        uint64_t a = n < ring.cap - at ? n : ring.cap - at;
        dest_put(d, ring.buf + at, (size_t)a);
        dest_put(d, ring.buf, (size_t)(n - a));
        off = (off + ENT_HDR + n) % ring.cap;
        left -= ENT_HDR + n;
    }
    dest_put(d, ring.clock, ring.clock_len);
    uint8_t b[512];
    size_t len = 0;
    char v[24];
    rp_u64_dec(v, ring.cap);
    info_put(b, sizeof b, &len, "ring_size", v);
    rp_u64_dec(v, ring.dropped_ev);
    info_put(b, sizeof b, &len, "ring_dropped", v);
    uint64_t now = rp_ticks();
    if (now > rp_rt.start_ticks && rp_rt.freq > 0) { /* (no snprintf: a signal handler) */
        rp_u64_dec(v, (uint64_t)((double)(now - rp_rt.start_ticks) * 1e9 / rp_rt.freq));
        info_put(b, sizeof b, &len, "ring_run_ns", v);
    }
    if (ring.ntrig || ring.budget) {
        rp_u64_dec(v, ring.fired);
        info_put(b, sizeof b, &len, "ring_triggers", v);
        rp_u64_dec(v, ring.skipped);
        info_put(b, sizeof b, &len, "ring_triggers_skipped", v);
    }
    if (why)
        info_put(b, sizeof b, &len, "snapshot", why);
    dest_chunk(d, RP_CH_INFO, b, len);
}

/* The END of the run (rp_out_end's chunk): the ring goes into the trace,
 * then this END.  Ring lock held. */
static void ring_end(const uint8_t *hdr, const void *payload, size_t len)
{
    struct dest d = {-1, 0};
    uint32_t flags = len >= 32 ? rp_get32((const uint8_t *)payload + 28) : 0;
    char why[32] = "exit"; /* (async-signal-safe: no snprintf) */
    if (flags & RP_END_SIGNAL) {
        memcpy(why, "signal ", 7);
        rp_u64_dec(why + 7, rp_get32((const uint8_t *)payload + 24));
    }
    ring_write(&d, why);
    dest_put(&d, hdr, RP_CHUNK_HDR_SIZE);
    dest_put(&d, payload, len);
    ring.ended = 1;
    if (ring.published) /* the process ends: top's file goes */
        unlink(ring.top_path);
}

RP_HIDDEN void rp_ring_chunk(uint32_t type, const void *payload, size_t len)
{
    uint8_t hdr[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(hdr, type, payload, (uint32_t)len);
    if (!ring_lock())
        return;
    if (ring.ended) { /* (after the END: nothing should come) */
        struct iovec iov[2] = {{hdr, sizeof hdr}, {(void *)payload, len}};
        rp_out_writev(iov, 2);
    } else if (type == RP_CH_EVENTS) {
        fifo_push(hdr, payload, len);
    } else if (type == RP_CH_END) {
        ring_end(hdr, payload, len);
    } else if (type == RP_CH_CLOCK && ring.have_clock) {
        if (RP_CHUNK_HDR_SIZE + len <= sizeof ring.clock) {
            memcpy(ring.clock, hdr, RP_CHUNK_HDR_SIZE);
            memcpy(ring.clock + RP_CHUNK_HDR_SIZE, payload, len);
            ring.clock_len = RP_CHUNK_HDR_SIZE + len;
        }
    } else {
        ring.have_clock |= type == RP_CH_CLOCK;
        int in_handler = atomic_load(&rp_rt.fatal) && rp_rt.sync_write;
        if (rp_kept_add(&ring.pre, hdr, payload, len, in_handler) < 0 && !ring.warned &&
            !in_handler) {
            ring.warned = 1;
            rp_rt_warn("out of memory for the definitions of %s; its snapshots will not read "
                       "whole",
                       rp_rt.path, 0);
        }
    }
    ring_unlock();
}

/* ---- snapshots ------------------------------------------------------------ */

RP_HIDDEN void rp_ring_request(int publish)
{
    if (rp_ring_on)
        atomic_fetch_or(&ring.want, publish ? WANT_TOP : WANT_CTL);
}

RP_HIDDEN int rp_ring_wanted(void)
{
    return rp_ring_on && atomic_load_explicit(&ring.want, memory_order_relaxed);
}

/* Writes the ring to path (through path.tmp, renamed) as a trace that ends
 * now, saying why; running: the INFO key "running" (what `rankprof top`
 * shows).  Ring lock held.  On failure a warning says why. */
static void snap_write(const char *path, const char *why, int running)
{
    uint8_t fh[RP_FILE_HDR_SIZE], end[32];
    char tmp[sizeof rp_rt.path + 48];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        rp_rt_warn("cannot create the snapshot %s", tmp, errno);
        return;
    }
    struct dest d = {fd, 0};
    rp_file_header(fh);
    dest_put(&d, fh, sizeof fh);
    if (running) {
        uint8_t b[32];
        size_t len = 0;
        info_put(b, sizeof b, &len, "running", "1");
        dest_chunk(&d, RP_CH_INFO, b, len);
    }
    ring_write(&d, why);
    rp_put64(end, rp_ticks());
    rp_put64(end + 8, rp_rt.events_written);
    rp_put64(end + 16, rp_rt.lost_total);
    rp_put32(end + 24, 0);
    rp_put32(end + 28, 0); /* neither exit nor signal: the process runs on */
    dest_chunk(&d, RP_CH_END, end, sizeof end);
    if (close(fd) < 0)
        d.bad = 1;
    if (d.bad || rename(tmp, path) < 0) {
        rp_rt_warn("cannot write the snapshot %s", path, errno);
        unlink(tmp);
    }
}

/* Writes what was asked for (the writer thread, after writing every
 * thread's records): a snapshot NAME.snapN (ctl, a trigger), the file
 * `rankprof top` reads (RP_CTL_DIR/rankprof.PID.stats), and counts it in
 * the control page.  On failure a warning says why; the process goes on. */
RP_HIDDEN void rp_ring_snapshot(void)
{
    char path[sizeof rp_rt.path + 32], why[REASON_MAX + 16];
    int w = atomic_exchange(&ring.want, 0);
    if (!w || !ring_lock())
        return;
    if (w & (WANT_CTL | WANT_TRIGGER)) {
        /* (both asked for before the writer came: one snapshot) */
        snprintf(why, sizeof why, "%s%s", w & WANT_TRIGGER ? ring.reason : "ctl",
                 (w & WANT_TRIGGER) && (w & WANT_CTL) ? "; and ctl" : "");
        uint64_t k = ++ring.snaps;
        snprintf(path, sizeof path, "%s.snap%llu", rp_rt.path, (unsigned long long)k);
        snap_write(path, why, 0);
        if (ring.keep && k > ring.keep) { /* the oldest beyond --ring-keep goes */
            snprintf(path, sizeof path, "%s.snap%llu", rp_rt.path,
                     (unsigned long long)(k - ring.keep));
            unlink(path);
        }
    }
    if (w & WANT_TOP) {
        snap_write(ring.top_path, "top", 1);
        ring.published = 1;
    }
    ring_unlock();
    rp_ctl_snap_done();
}

/* ---- triggers ------------------------------------------------------------ */

/* The name of the function or point of key (tagged), into buf; "" if none.
 * Sets *budget to a point's budget in ticks. */
static const char *key_name(uint64_t key, char *buf, size_t n, uint64_t *budget)
{
    uint64_t pl = key & RP_RAW_PAYLOAD;
    *budget = 0;
    if (key >> RP_RAW_SHIFT == 1) {
        const char *s = rp_funcs_name_of(pl, buf, n);
        return s ? s : "";
    }
    struct rp_def d = {0};
    if (rp_sites_describe(pl, &d) < 0 || !d.name)
        return "";
    *budget = d.budget;
    snprintf(buf, n, "%s", d.name);
    return buf;
}

/* The decision for key: its threshold (0: not watched) and trigger. */
static uint64_t watch_of(struct rp_ring_thr *w, uint64_t key, uint8_t *tix)
{
    uint32_t h = (uint32_t)((key * 0x9E3779B97F4A7C15ull) >> 56) % WATCH_CACHE;
    if (w->cache[h].known && w->cache[h].key == key) {
        *tix = w->cache[h].tix;
        return w->cache[h].thr;
    }
    char buf[256];
    uint64_t budget, thr = 0;
    const char *nm = key_name(key, buf, sizeof buf, &budget);
    uint8_t t = 0;
    for (int i = 0; i < ring.ntrig && !thr; i++)
        if (*nm && fnmatch(ring.trig[i].name, nm, 0) == 0)
            thr = ring.trig[i].thr, t = (uint8_t)i;
    if (!thr && ring.budget && budget)
        thr = budget, t = TRIG_BUDGET;
    w->cache[h].key = key;
    w->cache[h].thr = thr;
    w->cache[h].tix = t;
    w->cache[h].known = 1;
    *tix = t;
    return thr;
}

/* A watched span of key lasted dur ticks, over its threshold, ending at
 * ticks end: a snapshot is asked for, unless one was less than the
 * interval ago. */
static RP_NOINLINE void fire(uint64_t key, uint64_t dur, uint64_t thr, uint8_t tix, uint64_t end,
                             uint64_t period)
{
    char buf[256], why[REASON_MAX];
    uint64_t budget;
    const char *nm = key_name(key, buf, sizeof buf, &budget);
    double ms = (double)dur * 1e3 / rp_rt.freq, at = 0;
    if (end > rp_rt.start_ticks)
        at = (double)(end - rp_rt.start_ticks) / rp_rt.freq;
    if (tix == TRIG_BUDGET)
        snprintf(why, sizeof why, "trigger %s %.3f ms over its budget %.3f ms at %.3f s",
                 *nm ? nm : "?", ms, (double)thr * 1e3 / rp_rt.freq, at);
    else if (period)
        snprintf(why, sizeof why, "trigger rate %s %.3f ms, %.0f%% of its period %.3f ms at %.3f s",
                 *nm ? nm : "?", ms, 100.0 * (double)dur / (double)period,
                 (double)period * 1e3 / rp_rt.freq, at);
    else
        snprintf(why, sizeof why, "trigger %s %.3f ms > %s at %.3f s", *nm ? nm : "?", ms,
                 ring.trig[tix].thr_txt, at);
    uint64_t now = rp_mono_ns();
    if (!ring_lock())
        return;
    ring.fired++;
    if (ring.last_fire_ns && now - ring.last_fire_ns < ring.every_ns) {
        ring.skipped++;
    } else {
        ring.last_fire_ns = now;
        snprintf(ring.reason, sizeof ring.reason, "%s", why);
        atomic_fetch_or(&ring.want, WANT_TRIGGER);
    }
    ring_unlock();
}

/* The rate state of key on w (made when new; NULL when every slot is
 * taken: that key is not judged). */
static struct rstate *rate_of(struct rp_ring_thr *w, uint64_t key)
{
    for (int i = 0; i < RATE_KEYS; i++)
        if (w->rs[i].key == key || !w->rs[i].key) {
            w->rs[i].key = key;
            return &w->rs[i];
        }
    return NULL;
}

/* An activation of a rate-watched key begins at ticks: unless it is
 * nested in one of its own, the interval since the last start is kept. */
static void rate_start(struct rp_ring_thr *w, uint64_t key, uint64_t ticks)
{
    for (uint32_t d = 0; d < w->depth; d++)
        if (w->st[d].key == key)
            return; /* (recursion: not an outermost activation) */
    struct rstate *r = rate_of(w, key);
    if (!r)
        return;
    if (r->last && ticks > r->last)
        r->iv[r->n++ % RATE_IV] = ticks - r->last;
    r->last = ticks;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* An outermost activation of a rate-watched key lasted dur ticks, ending at
 * ticks end: with RATE_MIN intervals known, a run of half the period (the
 * median interval) or more fires, as the analyzer's RATE flag judges
 * (docs/ranking.md), without its regularity tests. */
static void rate_end(struct rp_ring_thr *w, uint64_t key, uint64_t dur, uint8_t tix, uint64_t end)
{
    for (uint32_t d = 0; d < w->depth; d++)
        if (w->st[d].key == key)
            return; /* (the end of a nested one: the depth is already popped) */
    struct rstate *r = rate_of(w, key);
    if (!r || r->n < RATE_MIN)
        return;
    uint64_t v[RATE_IV];
    uint32_t k = r->n < RATE_IV ? r->n : RATE_IV;
    memcpy(v, r->iv, k * sizeof v[0]);
    qsort(v, k, sizeof v[0], cmp_u64);
    uint64_t period = v[k / 2];
    if (2 * dur >= period)
        fire(key, dur, 1, tix, end, period);
}

RP_HIDDEN void rp_ring_scan(void **state, const struct rp_raw *recs, size_t n)
{
    struct rp_ring_thr *w = *state;
    if (atomic_load(&rp_rt.fatal))
        return; /* (the end of the run: no snapshot will come, nothing to allocate) */
    if (!w && !(w = *state = calloc(1, sizeof *w)))
        return; /* (no memory: this thread's spans are not watched) */
    for (size_t i = 0; i < n; i++) {
        unsigned op = (unsigned)(recs[i].word >> RP_RAW_SHIFT);
        uint64_t pl = recs[i].word & RP_RAW_PAYLOAD, key, thr;
        uint8_t tix;
        switch (op) {
        case RP_RAW_FUNC_ENTER:
        case RP_RAW_SITE_BEGIN:
            key = (uint64_t)(op == RP_RAW_FUNC_ENTER ? 1 : 2) << RP_RAW_SHIFT | pl;
            if (!(thr = watch_of(w, key, &tix)) || w->depth == WATCH_DEPTH)
                break;
            if (tix != TRIG_BUDGET && ring.trig[tix].rate)
                rate_start(w, key, recs[i].ticks);
            w->st[w->depth++] = (struct wspan){key, recs[i].ticks, thr, tix};
            break;
        case RP_RAW_FUNC_EXIT:
        case RP_RAW_SITE_END:
            key = (uint64_t)(op == RP_RAW_FUNC_EXIT ? 1 : 2) << RP_RAW_SHIFT | pl;
            for (uint32_t d = w->depth; d-- > 0;)
                if (w->st[d].key == key) {
                    uint64_t dur = recs[i].ticks - w->st[d].start;
                    w->depth = d;
                    if (recs[i].ticks <= w->st[d].start)
                        break;
                    if (w->st[d].tix != TRIG_BUDGET && ring.trig[w->st[d].tix].rate)
                        rate_end(w, key, dur, w->st[d].tix, recs[i].ticks);
                    else if (dur > w->st[d].thr)
                        fire(key, dur, w->st[d].thr, w->st[d].tix, recs[i].ticks, 0);
                    break;
                }
            break;
        case RP_RAW_PAUSE: /* a buffer switch, the recorder's: not the span's time */
            for (uint32_t d = 0; d < w->depth; d++)
                w->st[d].start += pl;
            break;
        case RP_RAW_LOST:
            w->depth = 0;
            break;
        case RP_RAW_UNWIND:
            if (!pl)
                w->depth = 0;
            break;
        case RP_RAW_INSTANT:
        case RP_RAW_COUNTER:
            i++; /* its DATA record */
            break;
        default:
            break;
        }
    }
}

RP_HIDDEN void rp_ring_thread_free(void **state)
{
    free(*state);
    *state = NULL;
}

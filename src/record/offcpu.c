// SPDX-License-Identifier: MIT
/*
 * offcpu.c - when were the recorded threads off CPU (offcpu.h).
 *
 * Source 1, perf context switches.  At start-up one software event per CPU
 * (PERF_COUNT_SW_DUMMY with context_switch = 1, pid = 0, cpu = N, inherit =
 * 1, inherit_thread = 1 where the kernel has it) is opened on the starting
 * thread; the threads it creates later inherit the events, and the kernel
 * writes every switch of every such thread (PERF_RECORD_SWITCH with pid,
 * tid and CLOCK_MONOTONIC time) into the ring of the CPU it happens on.  A
 * per-task event with inherit cannot be mmap'ed with cpu = -1, hence one per
 * CPU.  The program's threads do nothing for it: no call at thread start,
 * no work per event.  Whoever encodes a thread's records (the thread itself
 * or the writer, rt_writer.c) reads the rings first (rp_offcpu_poll, under
 * rp_rt.off_lock, so the switch-in before a record it sees is in the ring
 * by then: the kernel writes it before the thread runs again).
 * Switches are sorted by time, then queued on the tbuf of their thread,
 * where writer.c pairs them into intervals and merges them into the records.
 * Where inherit_thread is missing, forked children inherit the events too;
 * their records carry another pid and are ignored.
 *
 * Perf time is CLOCK_MONOTONIC (use_clockid); it is turned into ticks with
 * the pair (ticks, monotonic ns) read at each poll and the frequency measured
 * over the run so far (the start-up estimate for the first 100 ms), so an
 * interval is placed within the frequency error times its age (under 200 ms).
 *
 * Source 2, schedstat.  When perf_event_open is refused (perf_event_paranoid,
 * seccomp, ENOSYS) or RANKPROF_TEST_OFFCPU_REFUSE=1, the writer reads each
 * live thread's run-queue delay (/proc/self/task/TID/schedstat, field 2)
 * when it first sees the thread, at every periodic flush and when it retires
 * the thread; the sum of the increases is written at the end.  That time is
 * not taken out of any span: the report says so.
 *
 * Everything here fails soft: a ring that cannot be mapped is closed, a
 * record that makes no sense is skipped, lost records are counted.
 */
#define _GNU_SOURCE
#include "offcpu.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/array.h"
#include "locks.h"
#include "rt.h"

#define OFF_CPUS_MAX 1024

struct ring {
    int fd;
    struct perf_event_mmap_page *pg;
    uint8_t *data;
    uint64_t size; /* data bytes, a power of two */
};

/* tid -> tbuf; t NULL with tid != 0: deleted. */
struct mapent {
    uint32_t tid;
    struct rp_tbuf *t;
};

/* A context switch read from a ring. */
struct sw {
    uint64_t ns; /* CLOCK_MONOTONIC */
    uint32_t tid;
    uint32_t seq; /* ties: read order */
    int out;
};

static struct {
    enum rp_offcpu_src src;
    char err[64];
    struct ring *rings;
    unsigned nrings;
    size_t mapsize;
    uint32_t pid;
    /* writer side */
    struct sw *sw;
    uint32_t nsw, capsw, ncarry; /* the first ncarry: unknown tids kept one poll */
    struct mapent *map;
    uint32_t mapcap, mapused;
    uint64_t lost, late_forgotten, runq_forgotten;
    uint64_t tk0, ns0;   /* the (ticks, monotonic ns) pair at start-up */
    uint32_t writer_tid; /* the writer inherits the events too: its switches are dropped */
} off;

/*
 * A (ticks, monotonic ns) pair read close together: the best of a few
 * tries of ticks, ns, ticks (a preemption between the reads would put it
 * off by the time the reader was away), the ticks the middle of the two.
 */
static void clock_pair(uint64_t *tk, uint64_t *ns)
{
    uint64_t best = UINT64_MAX, lim = (uint64_t)(rp_rt.freq / 1e6) + 1; /* 1 us */
    for (int i = 0; i < 8 && best > lim; i++) {
        uint64_t a = rp_ticks(), n = rp_mono_ns(), b = rp_ticks();
        if (b >= a && b - a < best) {
            best = b - a;
            *tk = a + (b - a) / 2;
            *ns = n;
        }
    }
    if (best == UINT64_MAX) {
        *tk = rp_ticks();
        *ns = rp_mono_ns();
    }
}

static const char *errname(int e)
{
    switch (e) {
    case EACCES:
        return "EACCES";
    case EPERM:
        return "EPERM";
    case ENOSYS:
        return "ENOSYS";
    case ENOENT:
        return "ENOENT";
    case EINVAL:
        return "EINVAL";
    case ENODEV:
        return "ENODEV";
    case EMFILE:
        return "EMFILE";
    case ENOMEM:
        return "ENOMEM";
    case EOPNOTSUPP:
        return "EOPNOTSUPP";
    default:
        return "error";
    }
}

enum rp_offcpu_src rp_offcpu_source(void)
{
    return off.src;
}

const char *rp_offcpu_source_name(void)
{
    return off.src == RP_OFFCPU_PERF        ? "perf"
           : off.src == RP_OFFCPU_SCHEDSTAT ? "schedstat"
                                            : "none";
}

const char *rp_offcpu_error(void)
{
    return off.err;
}

static void rings_close(void)
{
    for (unsigned i = 0; i < off.nrings; i++) {
        if (off.rings[i].pg)
            munmap(off.rings[i].pg, off.mapsize);
        if (off.rings[i].fd >= 0)
            close(off.rings[i].fd);
    }
    free(off.rings);
    off.rings = NULL;
    off.nrings = 0;
}

/* Opens the event of one CPU; the fd, or -errno. */
static int open_cpu(int cpu, int inherit_thread)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_DUMMY;
    a.context_switch = 1;
    a.sample_id_all = 1;
    a.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    a.inherit = 1;
    a.inherit_thread = (unsigned)inherit_thread;
    a.use_clockid = 1;
    a.clockid = CLOCK_MONOTONIC;
    long fd = syscall(SYS_perf_event_open, &a, 0, cpu, -1, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : (int)fd;
}

/* Opens and maps the rings; 0, or -errno of what refused it. */
static int rings_open(void)
{
    long ncpu = sysconf(_SC_NPROCESSORS_CONF);
    if (ncpu < 1)
        ncpu = 1;
    if (ncpu > OFF_CPUS_MAX)
        ncpu = OFF_CPUS_MAX;
    long page = sysconf(_SC_PAGESIZE);
    uint64_t pages = 32; /* data pages per CPU (128 KiB with 4 KiB pages) */
    const char *ps = getenv("RANKPROF_OFFCPU_PAGES");
    if (ps && *ps) {
        unsigned long v = strtoul(ps, NULL, 0);
        if (v >= 1 && v <= 4096 && !(v & (v - 1)))
            pages = v;
    }
    off.rings = calloc((size_t)ncpu, sizeof(*off.rings));
    if (!off.rings)
        return -ENOMEM;
    int inherit_thread = 1, first_err = 0;
    for (long c = 0; c < ncpu; c++) {
        int fd = open_cpu((int)c, inherit_thread);
        if (fd == -EINVAL && inherit_thread) { /* a kernel before 5.13 */
            inherit_thread = 0;
            fd = open_cpu((int)c, 0);
        }
        if (fd < 0) {
            if (!first_err)
                first_err = fd;
            if (fd == -ENODEV || fd == -EINVAL)
                continue; /* an offline CPU */
            rings_close();
            return fd;
        }
        struct ring *r = &off.rings[off.nrings++];
        r->fd = fd;
        for (;;) { /* the locked-memory limit may want a smaller ring */
            off.mapsize = (size_t)((pages + 1) * (uint64_t)page);
            void *m = mmap(NULL, off.mapsize, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
            if (m != MAP_FAILED) {
                r->pg = m;
                r->data = (uint8_t *)m + page;
                r->size = pages * (uint64_t)page;
                /* the mapping keeps the event: no descriptor is held, so
                 * the program's descriptors are numbered as without the
                 * recorder (its first open after 0..2 closed is 0) and
                 * nothing of ours is closed or taken by it */
                close(fd);
                r->fd = -1;
                break;
            }
            if (pages == 1 || c > 0) { /* every ring has the first one's size */
                int e = errno;
                off.nrings--;
                close(fd);
                rings_close();
                return -e;
            }
            pages /= 2;
        }
    }
    if (!off.nrings) {
        rings_close();
        return first_err ? first_err : -ENODEV;
    }
    return 0;
}

void rp_offcpu_start(void)
{
    const char *e = getenv("RANKPROF_OFFCPU");
    off.pid = (uint32_t)getpid();
    off.err[0] = 0;
    if (e && !strcmp(e, "0")) {
        off.src = RP_OFFCPU_NONE;
        snprintf(off.err, sizeof(off.err), "switched off by RANKPROF_OFFCPU=0");
        return;
    }
    const char *refuse = getenv("RANKPROF_TEST_OFFCPU_REFUSE");
    int rc = refuse && !strcmp(refuse, "1") ? -EACCES : rings_open();
    if (rc == 0) {
        off.src = RP_OFFCPU_PERF;
        clock_pair(&off.tk0, &off.ns0);
        return;
    }
    snprintf(off.err, sizeof(off.err), "perf_event_open: %s", errname(-rc));
    off.src = access("/proc/self/schedstat", R_OK) == 0 ? RP_OFFCPU_SCHEDSTAT : RP_OFFCPU_NONE;
}

void rp_offcpu_atfork_child(void)
{
    /* The parent's rings: unmapping and closing here leaves the parent's
     * events alone.  The child's own threads get new ones. */
    enum rp_offcpu_src src = off.src;
    rings_close();
    free(off.sw);
    free(off.map);
    memset(&off, 0, sizeof(off));
    if (src == RP_OFFCPU_PERF || src == RP_OFFCPU_SCHEDSTAT)
        rp_offcpu_start();
}

/* ---- the tid -> tbuf map (writer only) ---------------------------------- */

static uint32_t map_slot(uint32_t tid)
{
    uint32_t mask = off.mapcap - 1, i = (uint32_t)rp_mix64(tid) & mask;
    while (off.map[i].tid && off.map[i].tid != tid)
        i = (i + 1) & mask;
    return i;
}

static struct rp_tbuf *map_get(uint32_t tid)
{
    if (!off.mapcap || !tid)
        return NULL;
    return off.map[map_slot(tid)].t;
}

/* Maps tid to t.  Out of memory: not mapped (its switches are dropped). */
static void map_put(uint32_t tid, struct rp_tbuf *t)
{
    if (!tid)
        return;
    if ((off.mapused + 1) * 2 > off.mapcap) {
        uint32_t ncap = off.mapcap ? off.mapcap * 2 : 64, live = 0;
        for (uint32_t i = 0; i < off.mapcap; i++)
            live += off.map[i].t != NULL;
        if ((live + 1) * 4 <= off.mapcap)
            ncap = off.mapcap; /* mostly deleted entries: rehash in place */
        struct mapent *nm = calloc(ncap, sizeof(*off.map));
        if (!nm)
            return;
        struct mapent *old = off.map;
        uint32_t ocap = off.mapcap;
        off.map = nm;
        off.mapcap = ncap;
        off.mapused = 0;
        for (uint32_t i = 0; i < ocap; i++) {
            const struct mapent *o = old + i;
            if (o->t) {
                off.map[map_slot(o->tid)] = *o;
                off.mapused++;
            }
        }
        free(old);
    }
    uint32_t i = map_slot(tid);
    if (!off.map[i].tid)
        off.mapused++;
    off.map[i].tid = tid;
    off.map[i].t = t;
}

/* ---- schedstat ------------------------------------------------------------ */

/* The run-queue delay of thread tid in ns; 0 with *ok = 0 when unreadable. */
static uint64_t runq_ns(uint32_t tid, int *ok)
{
    char path[64], buf[128];
    snprintf(path, sizeof(path), "/proc/self/task/%u/schedstat", tid);
    *ok = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    unsigned long long run, wait;
    if (sscanf(buf, "%llu %llu", &run, &wait) != 2)
        return 0;
    *ok = 1;
    return wait;
}

/* The writer's read of a live thread (the delay counts from its start). */
static void runq_update(struct rp_tbuf *t)
{
    int ok;
    uint64_t v = runq_ns(t->tid, &ok);
    if (!ok)
        return;
    t->rq_have = 1;
    t->rq1 = v;
}

void rp_offcpu_thread_exit(struct rp_tbuf *t)
{
    if (off.src != RP_OFFCPU_SCHEDSTAT)
        return;
    int ok;
    uint64_t v = runq_ns(t->tid, &ok);
    if (ok)
        t->rq_exit = v + 1;
}

/* ---- the writer's part ---------------------------------------------------- */

/* Registers the tbufs created since the last call: they are at the list's
 * head (new ones are pushed there), down to the first registered one.  A
 * try-lock: the writer calls this with rp_rt.lock held when it writes a
 * retired thread's last losses, and never waits for a program thread here;
 * a thread not registered now is next time (its switches wait a poll). */
static void register_new(void)
{
    if (rp_own_trylock(&rp_rt.lock) != 0)
        return;
    struct rp_tbuf *t = rp_rt.threads;
    rp_own_unlock(&rp_rt.lock);
    for (; t && !t->off_reg; t = t->next) {
        t->off_reg = 1;
        if (off.src == RP_OFFCPU_PERF)
            map_put(t->tid, t);
    }
}

static int sw_cmp(const void *a, const void *b)
{
    const struct sw *x = a, *y = b;
    if (x->ns != y->ns)
        return x->ns < y->ns ? -1 : 1;
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* The record of r at *tail, below head: its header in *h, its first bytes
 * (at most 64) in rec, *n of them; *tail moved past it.  Returns 0 at head
 * or at a record that is not whole.  Cannot fail. */
static int ring_next(const struct ring *r, uint64_t *tail, uint64_t head,
                     struct perf_event_header *h, uint8_t rec[64], size_t *n)
{
    if (*tail + sizeof(*h) > head)
        return 0;
    for (size_t i = 0; i < sizeof(*h); i++)
        ((uint8_t *)h)[i] = r->data[(*tail + i) & (r->size - 1)];
    if (h->size < sizeof(*h) || *tail + h->size > head)
        return 0;
    *n = h->size < 64 ? h->size : 64;
    for (size_t i = 0; i < *n; i++)
        rec[i] = r->data[(*tail + i) & (r->size - 1)];
    *tail += h->size;
    return 1;
}

/* Reads one ring's new records into off.sw.  Out of memory: the records
 * stay in the ring for the next poll (or are overwritten: counted lost). */
static void ring_read(struct ring *r, uint32_t *seq)
{
    /* acquire: the records below data_head are complete (perf ABI) */
    uint64_t head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = r->pg->data_tail;
    uint8_t rec[64];
    struct perf_event_header h;
    size_t n;
    while (ring_next(r, &tail, head, &h, rec, &n)) {
        if (h.type == PERF_RECORD_LOST && n >= 24) {
            uint64_t lost;
            memcpy(&lost, rec + 16, 8);
            off.lost += lost;
            continue;
        }
        if (h.type != PERF_RECORD_SWITCH || n < sizeof(h) + 16)
            continue;
        uint32_t pid, tid;
        uint64_t ns;
        memcpy(&pid, rec + n - 16, 4); /* sample_id: pid, tid, time */
        memcpy(&tid, rec + n - 12, 4);
        memcpy(&ns, rec + n - 8, 8);
        if (pid != off.pid)
            continue; /* a forked child's (no inherit_thread) */
        if (rp_grow(&off.sw, &off.capsw, off.nsw + 1, sizeof(*off.sw), 1024) < 0) {
            off.lost++;
            continue;
        }
        off.sw[off.nsw++] =
            (struct sw){ns, tid, (*seq)++, (h.misc & PERF_RECORD_MISC_SWITCH_OUT) != 0};
    }
    /* release: the kernel may reuse the space only after it was read */
    __atomic_store_n(&r->pg->data_tail, tail, __ATOMIC_RELEASE);
}

/* rp_offcpu_poll with rp_rt.off_lock held. */
static void poll_locked(void)
{
    int any = 0;
    for (unsigned i = 0; i < off.nrings && !any; i++)
        any = __atomic_load_n(&off.rings[i].pg->data_head, __ATOMIC_RELAXED) !=
              off.rings[i].pg->data_tail;
    if (!any && !off.ncarry)
        return;
    register_new();
    uint32_t seq = off.ncarry;
    off.nsw = off.ncarry;
    for (unsigned i = 0; i < off.nrings; i++)
        ring_read(&off.rings[i], &seq);
    qsort(off.sw, off.nsw, sizeof(*off.sw), sw_cmp);

    /* monotonic ns -> ticks: the pair read now, and the frequency over the
     * run so far (both pairs read with clock_pair; error ~ 1 us / run time) */
    uint64_t tk, ns;
    clock_pair(&tk, &ns);
    double f = rp_rt.freq / 1e9;
    if (ns > off.ns0 + 100000000u && tk > off.tk0)
        f = (double)(tk - off.tk0) / (double)(ns - off.ns0);
    uint32_t keep = 0, carried = off.ncarry;
    for (uint32_t i = 0; i < off.nsw; i++) {
        struct sw *s = &off.sw[i];
        if (s->tid == off.writer_tid)
            continue;
        struct rp_tbuf *t = map_get(s->tid);
        if (!t) {
            /* a thread created after register_new: kept for one more poll
             * (the first `carried` were kept before: dropped now) */
            if (s->seq >= carried)
                off.sw[keep++] = *s;
            continue;
        }
        double d = ((double)ns - (double)s->ns) * f;
        uint64_t ticks = d >= (double)tk ? 1 : (uint64_t)((double)tk - d);
        rp_offq_switch(&t->offq, ticks, s->out);
    }
    for (uint32_t i = 0; i < keep; i++)
        off.sw[i].seq = i;
    off.ncarry = off.nsw = keep;
}

void rp_offcpu_poll(void)
{
    if (off.src != RP_OFFCPU_PERF)
        return;
    rp_own_lock(&rp_rt.off_lock);
    poll_locked();
    rp_own_unlock(&rp_rt.off_lock);
}

void rp_offcpu_writer_started(void)
{
    uint32_t tid = (uint32_t)syscall(SYS_gettid);
    rp_own_lock(&rp_rt.off_lock); /* (read by every thread's poll) */
    off.writer_tid = tid;
    rp_own_unlock(&rp_rt.off_lock);
}

void rp_offcpu_tick(void)
{
    if (off.src != RP_OFFCPU_SCHEDSTAT)
        return;
    register_new();
    rp_own_lock(&rp_rt.lock);
    struct rp_tbuf *t = rp_rt.threads;
    rp_own_unlock(&rp_rt.lock);
    for (; t; t = t->next)
        if (!atomic_load_explicit(&t->exited, memory_order_relaxed))
            runq_update(t);
}

void rp_offcpu_forget(struct rp_tbuf *t)
{
    if (off.src == RP_OFFCPU_SCHEDSTAT) {
        /* the thread's own read at its exit (it has exited: `exited` was
         * loaded with acquire), else the writer's last */
        if (t->rq_exit)
            off.runq_forgotten += t->rq_exit - 1;
        else if (t->rq_have)
            off.runq_forgotten += t->rq1;
    }
    rp_own_lock(&rp_rt.off_lock); /* (a thread encoding its own may be polling) */
    off.late_forgotten += __atomic_load_n(&t->offq.late, __ATOMIC_RELAXED);
    if (off.mapcap && t->tid) {
        uint32_t i = map_slot(t->tid);
        if (off.map[i].t == t)
            off.map[i].t = NULL; /* tid stays: a deleted entry */
    }
    rp_offq_free(&t->offq);
    rp_own_unlock(&rp_rt.off_lock);
}

/*
 * Empties the rings at the end, when nothing is encoded any more: their
 * LOST records are counted, their switches dropped (they come after the
 * threads' last spans were written: the exiting thread's own waits for the
 * final flush, mostly).  No allocation, unlike a poll: the final flush may
 * run in a signal handler (an _exit in the program's own), which may have
 * interrupted malloc.  Under off_lock.
 */
static void end_drain_locked(void)
{
    off.ncarry = off.nsw = 0;
    for (unsigned i = 0; i < off.nrings; i++) {
        struct ring *r = &off.rings[i];
        uint64_t head = __atomic_load_n(&r->pg->data_head, __ATOMIC_ACQUIRE); /* (ring_read) */
        uint64_t tail = r->pg->data_tail, lost;
        uint8_t rec[64];
        struct perf_event_header h;
        size_t n;
        while (ring_next(r, &tail, head, &h, rec, &n))
            if (h.type == PERF_RECORD_LOST && n >= 24) {
                memcpy(&lost, rec + 16, 8);
                off.lost += lost;
            }
        __atomic_store_n(&r->pg->data_tail, tail, __ATOMIC_RELEASE);
    }
}

void rp_offcpu_end_info(void (*put)(void *ctx, const char *key, const char *val), void *ctx)
{
    char v[32];
    if (off.src == RP_OFFCPU_PERF) {
        rp_own_lock(&rp_rt.lock); /* (before off_lock, as rp_offcpu_forget) */
        rp_own_lock(&rp_rt.off_lock);
        end_drain_locked();
        uint64_t late = off.late_forgotten, lost = off.lost;
        for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next)
            late += __atomic_load_n(&t->offq.late, __ATOMIC_RELAXED);
        rp_own_unlock(&rp_rt.off_lock);
        rp_own_unlock(&rp_rt.lock);
        snprintf(v, sizeof(v), "%llu", (unsigned long long)lost);
        put(ctx, "offcpu_lost", v);
        snprintf(v, sizeof(v), "%llu", (unsigned long long)late);
        put(ctx, "offcpu_late", v);
    } else if (off.src == RP_OFFCPU_SCHEDSTAT) {
        rp_offcpu_tick();
        uint64_t sum = off.runq_forgotten;
        rp_own_lock(&rp_rt.lock);
        for (struct rp_tbuf *t = rp_rt.threads; t; t = t->next)
            if (atomic_load_explicit(&t->exited, memory_order_acquire) && t->rq_exit)
                sum += t->rq_exit - 1;
            else if (t->rq_have)
                sum += t->rq1;
        rp_own_unlock(&rp_rt.lock);
        snprintf(v, sizeof(v), "%llu", (unsigned long long)sum);
        put(ctx, "offcpu_runq_ns", v);
    }
}

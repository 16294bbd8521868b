// SPDX-License-Identifier: MIT
/*
 * rp_bare.c - the bare-metal recorder: -finstrument-functions hooks, the
 * profile-point, io, instant, counter and lock entry points of rankprof.h,
 * and a compact encoder of the standard trace format (src/trace/format.h)
 * into a fixed RAM buffer per context, handed to a user sink when full.
 *
 * Freestanding: no heap, no libc call, no OS; only <stdint.h> and
 * <stddef.h>.  Every event is recorded inside a critical section (PRIMASK on
 * Cortex-M), so interrupt handlers may record too.  What goes out:
 *
 *   file header, INFO, THREAD 1 "main", THREAD 2 "irq"   (rp_bare_start)
 *   THREAD n, the task's name                           (rp_bare_task_add)
 *   INFO offcpu=irq+tasks                               (the first task)
 *   DEFS chunk of one record                            (first sight of an id)
 *   EVENTS chunk, compact stream, no snapshot           (a buffer is full)
 *   END                                                 (rp_bare_stop)
 *
 * Ids: functions are found in a fixed open-addressing table of
 * RP_BARE_MAX_FUNCS code addresses; profile points keep their id in their
 * site (struct rp_site's "direct" field); locks in a table of
 * RP_BARE_MAX_LOCKS.  A function that does not fit in the table is not
 * recorded (its events count as lost).  Function keys are the hook's
 * address with the Thumb bit cleared, which is the symbol's address the
 * host reads from the ELF.
 */
#include <stddef.h>
#include <stdint.h>

#define RP_BUILDING_RUNTIME 1
#include "rankprof.h"
#include "rankprof_bare.h"
#include "trace/format.h"

#ifndef RP_BARE_MAX_FUNCS
#define RP_BARE_MAX_FUNCS 128 /* a power of two */
#endif
#ifndef RP_BARE_MAX_POINTS
#define RP_BARE_MAX_POINTS 32 /* sites with direct-mode statistics, <= 255 */
#endif
#ifndef RP_BARE_MAX_LOCKS
#define RP_BARE_MAX_LOCKS 8
#endif
#ifndef RP_BARE_SPAN_DEPTH
#define RP_BARE_SPAN_DEPTH 16 /* open spans whose ids a stream keeps (a hold's acquirer) */
#endif

#define NOINSTR     __attribute__((no_instrument_function))
#define NOINLINE    __attribute__((noinline, no_instrument_function))
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)

#define HDRS   32u /* chunk header + EVENTS header at the start of a buffer */
#define EV_MAX 56u /* bytes the largest event (with a PAUSE and a LOST before it) takes */

/* ---- critical section and context ---------------------------------------- */

#if defined(__ARM_ARCH_6M__) || defined(__ARM_ARCH_7M__) || defined(__ARM_ARCH_7EM__) ||           \
    defined(__ARM_ARCH_8M_BASE__) || defined(__ARM_ARCH_8M_MAIN__)
static inline NOINSTR uint32_t crit_enter(void)
{
    uint32_t m;
    __asm volatile("mrs %0, primask\n\tcpsid i" : "=r"(m)::"memory");
    return m;
}
static inline NOINSTR void crit_exit(uint32_t m)
{
    __asm volatile("msr primask, %0" ::"r"(m) : "memory");
}
/* In a handler when IPSR holds an exception number. */
static inline NOINSTR int in_isr(void)
{
    uint32_t ipsr;
    __asm volatile("mrs %0, ipsr" : "=r"(ipsr));
    return ipsr != 0;
}
#else
/* Other cores: the port supplies these (masking interrupts, and whether the
 * caller is an interrupt handler). */
uint32_t rp_bare_crit_enter(void);
void rp_bare_crit_exit(uint32_t m);
int rp_bare_in_isr(void);
#define crit_enter rp_bare_crit_enter
#define crit_exit  rp_bare_crit_exit
#define in_isr     rp_bare_in_isr
#endif

/* ---- state ----------------------------------------------------------------- */

struct stream {
    uint8_t *buf;
    uint32_t size, pos;        /* bytes in buf; pos >= HDRS */
    uint32_t tid, nev;         /* nev: events in the chunk being filled */
    uint64_t base;             /* ticks the chunk's first delta is from */
    uint64_t last;             /* ticks of the last event */
    uint32_t lost;             /* events lost since the last one recorded */
    uint32_t pause;            /* ticks the last flush took, said by a PAUSE at the next event */
    uint32_t syn, said;        /* PAUSE and LOST ops in the chunk, and the events the LOST says */
    const volatile void *wait; /* lock whose wait span is innermost, or NULL */
    struct stream *next;       /* the next task's stream (rp_bare_task_add) */
    uint32_t seq;              /* events of the chunks handed on (a hold's events inside) */
    uint32_t depth;            /* spans open, and the ids of the innermost ones: */
    uint16_t open[RP_BARE_SPAN_DEPTH]; /* open[i], the (i+1)-th, while i < RP_BARE_SPAN_DEPTH */
    uint64_t out;                      /* when a task switch sent it out (0: not out) */
#ifdef RP_BARE_FUNC_STATS
    struct fstk *fs; /* its stack of open calls (function statistics) */
#endif
};
_Static_assert(sizeof(struct stream) <= sizeof(struct rp_bare_task), "rp_bare_task too small");

static struct {
    volatile uint8_t on;
    uint64_t (*clock)(void);
    rp_bare_sink_fn sink;
    void *ctx;
    uint32_t hz;
    uint32_t next_id;
    uint64_t events, lost;
    struct stream main, irq;
    struct stream *cur;               /* thread mode's stream: main, or a task's */
    struct stream *hit;               /* the stream the outermost recorded ISR span interrupted */
    uint64_t irq_t0;                  /* and when it began */
    uint32_t irq_depth;               /* spans open in the irq stream */
    uint32_t irq_id;                  /* the [irq] node (kind offcpu), 0 = not defined yet */
    uint32_t off_id;                  /* the [off-cpu] node (a task switched out), or 0 */
    struct stream *tasks;             /* the tasks' streams, a list */
    uint32_t fkey[RP_BARE_MAX_FUNCS]; /* code address | 1 (0 = free) */
    uint16_t fid[RP_BARE_MAX_FUNCS];
    struct {
        const volatile void *lock;
        const char *name;
        uint16_t wait, hold;
        uint16_t acq;  /* the held lock's acquirer: innermost span open at the acquisition */
        uint16_t held; /* acquisitions not yet released (recursive: the outermost is the hold) */
        uint32_t ev;   /* its stream's events up to the HOLD_BEGIN */
        uint64_t t0;   /* when the outermost hold began */
    } locks[RP_BARE_MAX_LOCKS];
} g;

/* ---- bytes ----------------------------------------------------------------- */

static NOINSTR void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
    p[2] = (uint8_t)(v >> 16);
    p[3] = (uint8_t)(v >> 24);
}

static NOINSTR void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

static inline NOINSTR uint8_t *varint(uint8_t *o, uint64_t v)
{
    while (v >= 0x80) {
        *o++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *o++ = (uint8_t)v;
    return o;
}

/* CRC-32 (IEEE, reflected) with a 16-entry table: 64 bytes of flash. */
static NOINSTR uint32_t crc32(uint32_t crc, const void *buf, uint32_t len)
{
    static const uint32_t t[16] = {0x00000000, 0x1db71064, 0x3b6e20c8, 0x26d930ac,
                                   0x76dc4190, 0x6b6b51f4, 0x4db26158, 0x5005713c,
                                   0xedb88320, 0xf00f9344, 0xd6d6a3e8, 0xcb61b38c,
                                   0x9b64c2b0, 0x86d3d2d4, 0xa00ae278, 0xbdbdf21c};
    const uint8_t *p = buf;
    crc = ~crc;
    while (len--) {
        crc ^= *p++;
        crc = (crc >> 4) ^ t[crc & 15];
        crc = (crc >> 4) ^ t[crc & 15];
    }
    return ~crc;
}

static NOINSTR uint32_t slen(const char *s)
{
    uint32_t n = 0;
    while (s && s[n])
        n++;
    return n;
}

/*
 * Writes a chunk of type whose payload is the n pieces p[i] of l[i] bytes.
 * Returns 0 or -2 when the sink failed.
 */
static NOINSTR int chunk(uint32_t type, const void *const *p, const uint32_t *l, int n)
{
    uint8_t h[16];
    uint32_t len = 0, crc = 0;
    int i;
    for (i = 0; i < n; i++) {
        len += l[i];
        crc = crc32(crc, p[i], l[i]);
    }
    put32(h, type);
    put32(h + 4, len);
    put32(h + 8, crc);
    put32(h + 12, crc32(0, h, 12));
    if (g.sink(g.ctx, h, 16) < 0)
        return -2;
    for (i = 0; i < n; i++)
        if (l[i] && g.sink(g.ctx, p[i], l[i]) < 0)
            return -2;
    return 0;
}

/* ---- ids ------------------------------------------------------------------- */

/*
 * Defines the next id: a DEFS chunk of one record.  Returns the id, or 0
 * when the sink failed (the event is then lost).
 */
static NOINLINE uint32_t define(uint8_t kind, uint8_t cls, uint32_t key, const char *name,
                                const char *file, uint32_t line, uint64_t budget)
{
    uint8_t r[RP_DEF_FIXED], ext[RP_DEF_EXT_BUDGET];
    uint32_t nl = slen(name), fl = slen(file), el = budget ? RP_DEF_EXT_BUDGET : 0;
    uint32_t id = g.next_id;
    put32(r, id);
    r[4] = kind;
    r[5] = cls;
    r[6] = (uint8_t)nl;
    r[7] = (uint8_t)(nl >> 8);
    put64(r + 8, key);
    put32(r + 16, line);
    r[20] = (uint8_t)fl;
    r[21] = (uint8_t)(fl >> 8);
    r[22] = (uint8_t)el;
    r[23] = 0;
    put64(ext, budget);
    const void *p[4] = {r, name, file, ext};
    const uint32_t l[4] = {RP_DEF_FIXED, nl, fl, el};
    if (g.sink && chunk(RP_CH_DEFS, p, l, 4) != 0)
        return 0;
    g.next_id++;
    return id;
}

/* The id of the function at fn (defined on first sight), or 0 when the
 * table is full or the sink failed. */
static inline NOINSTR uint32_t func_id(void *fn, uint32_t *slot)
{
    uint32_t key = (uint32_t)(uintptr_t)fn | 1u;
    uint32_t h = (key * 2654435761u) >> 20;
    for (uint32_t n = 0; n < RP_BARE_MAX_FUNCS; n++, h++) {
        h &= RP_BARE_MAX_FUNCS - 1;
        *slot = h;
        if (likely(g.fkey[h] == key))
            return g.fid[h];
        if (g.fkey[h] == 0) {
            uint32_t id = define(RP_KIND_FUNC, RP_CLASS_FUNC, key & ~1u, NULL, NULL, 0, 0);
            if (id) {
                g.fkey[h] = key;
                g.fid[h] = (uint16_t)id;
            }
            return id;
        }
    }
    return 0;
}

#ifdef RP_BARE_FUNC_STATS
/*
 * Direct mode for functions (compiled in with -DRP_BARE_FUNC_STATS):
 * calls, total and max of every function in the id table, in fst[] by its
 * slot, trace or not.  Each context (main, handlers, each task) keeps the
 * slots and start times of its open calls, RP_BARE_FUNC_DEPTH deep (the
 * calls deeper are not timed: counted in fdeep), so that tasks switched in
 * the middle of their calls do not end each other's.  RAM: 16 bytes a
 * function, 16 a level of each stack (a task's is in its buffer).
 */
#ifndef RP_BARE_FUNC_DEPTH
#define RP_BARE_FUNC_DEPTH 32
#endif
static struct {
    uint32_t calls, max;
    uint64_t total;
} fst[RP_BARE_MAX_FUNCS];
static struct fstk {
    uint32_t n;
    struct {
        uint64_t t0;
        uint32_t slot;
    } f[RP_BARE_FUNC_DEPTH];
} fstack[2]; /* main (thread mode without tasks), handlers; a task's is in its buffer */
static uint32_t fdeep;
#define RP_BARE_TASK_EXTRA (sizeof(struct fstk) + 8) /* a task's stack, in its buffer */

/* A call of the function in slot begins at now (slot ~0: not in the
 * table, not timed). */
static NOINSTR void fstat_enter(uint32_t slot, uint64_t now)
{
    struct fstk *k = in_isr() ? &fstack[1] : g.cur->fs;
    if (k->n < RP_BARE_FUNC_DEPTH) {
        k->f[k->n].t0 = now;
        k->f[k->n].slot = slot;
    }
    k->n++;
}

/* The innermost call of the context ends at now. */
static NOINSTR void fstat_exit(uint64_t now)
{
    struct fstk *k = in_isr() ? &fstack[1] : g.cur->fs;
    if (!k->n)
        return;
    if (--k->n >= RP_BARE_FUNC_DEPTH) {
        fdeep++;
        return;
    }
    uint32_t i = k->f[k->n].slot;
    if (i >= RP_BARE_MAX_FUNCS)
        return;
    uint64_t d = now - k->f[k->n].t0;
    fst[i].calls++;
    fst[i].total += d;
    if (d > fst[i].max)
        fst[i].max = d > 0xffffffffu ? 0xffffffffu : (uint32_t)d;
}
#else
#define RP_BARE_TASK_EXTRA 0
#endif

/* n / d by shift and subtract: no libgcc 64-bit division (700 bytes of
 * flash).  *rem gets the remainder when rem is not NULL.  d > 0. */
static NOINLINE uint64_t div64(uint64_t n, uint32_t d, uint32_t *rem)
{
    uint64_t q = 0, r = 0;
    for (int i = 63; i >= 0; i--) {
        r = (r << 1) | ((n >> i) & 1);
        if (r >= d) {
            r -= d;
            q |= (uint64_t)1 << i;
        }
    }
    if (rem)
        *rem = (uint32_t)r;
    return q;
}

/* A point's budget in ticks. */
static NOINSTR uint64_t budget_ticks(uint64_t ns)
{
    return ns ? div64(ns * (g.hz / 1000u), 1000000u, NULL) : 0;
}

/* The id of site s (defined on first sight, kept in s->direct), or 0. */
static inline NOINSTR uint32_t site_id(struct rp_site *s)
{
    uint32_t id = (uint32_t)(uintptr_t)s->direct;
    if (likely(id))
        return id;
    id = define(s->kind, s->cls, (uint32_t)(uintptr_t)s, s->name, s->file, s->line,
                budget_ticks(s->budget_ns));
    s->direct = (void *)(uintptr_t)id;
    return id;
}

/* The wait (hold = 0) or hold id of lock l, or 0 (the table is full, the
 * sink failed); *slot gets its index in g.locks. */
static NOINLINE uint32_t lock_id(const volatile void *l, int hold, int *slot)
{
    for (int i = 0; i < RP_BARE_MAX_LOCKS; i++) {
        if (g.locks[i].lock && g.locks[i].lock != l)
            continue;
        g.locks[i].lock = l;
        *slot = i;
        uint16_t *id = hold ? &g.locks[i].hold : &g.locks[i].wait;
        if (!*id)
            *id = (uint16_t)define(hold ? RP_KIND_LOCK_HOLD : RP_KIND_LOCK_WAIT, RP_CLASS_LOCK,
                                   (uint32_t)(uintptr_t)l, g.locks[i].name, NULL, 0, 0);
        return *id;
    }
    return 0;
}

/* ---- streams --------------------------------------------------------------- */

/* Hands the chunk being filled to the sink.  Returns 0 or -2 (its events are
 * then lost). */
static NOINLINE int flush_stream(struct stream *s)
{
    int rc = 0;
    if (!s->nev)
        return 0;
    uint8_t *b = s->buf;
    uint32_t len = s->pos - 16;
    put32(b + 16, s->tid);
    put32(b + 20, s->nev | RP_EV_COMPACT);
    put64(b + 24, s->base);
    put32(b, RP_CH_EVENTS);
    put32(b + 4, len);
    put32(b + 8, crc32(0, b + 16, len));
    put32(b + 12, crc32(0, b, 12));
    if (g.sink(g.ctx, b, s->pos) < 0) { /* its events are lost, and the loss it said */
        uint32_t real = s->nev - s->syn;
        g.lost += real;
        g.events -= real;
        s->lost += real + s->said;
        rc = -2;
    }
    s->pos = HDRS;
    s->seq += s->nev;
    s->nev = s->syn = s->said = 0;
    s->base = s->last;
    return rc;
}

/*
 * Stream s with room for one event at ticks now, and the event's head
 * written (delta and the op bit); NULL when s is not recorded.  Writes a
 * PAUSE and a LOST op first when a flush took time or events were lost.
 */
static inline __attribute__((always_inline)) NOINSTR uint8_t *ev_head_at(struct stream *s,
                                                                         uint64_t now, int exit)
{
    int p = 0;
    if (unlikely(!s->buf))
        return NULL;
    if (unlikely(s->size - s->pos < EV_MAX)) {
        flush_stream(s);
        uint64_t t = g.clock(); /* the flush's time is said by a PAUSE at the next event */
        s->pause = (uint32_t)(t - now);
    } else if (unlikely(s->pause)) { /* the spans open here are shortened by it */
        p = 1;
    }
    uint8_t *o = s->buf + s->pos;
    uint64_t d = now >= s->last ? now - s->last : 0;
    s->last = now >= s->last ? now : s->last;
    if (unlikely(p)) {
        o = varint(o, d << 1);
        *o++ = 0;
        *o++ = RP_OP_PAUSE;
        o = varint(o, s->pause);
        s->pause = 0;
        s->nev++;
        s->syn++;
        d = 0;
    }
    if (unlikely(s->lost)) {
        o = varint(o, d << 1);
        *o++ = 0;
        *o++ = RP_OP_LOST;
        o = varint(o, s->lost);
        s->said += s->lost;
        s->lost = 0;
        s->nev++;
        s->syn++;
        d = 0;
    }
    return varint(o, (d << 1) | (unsigned)exit);
}

/*
 * Time stream s's spans did not run, from t0 to now, as a span of the
 * off-CPU node *id (kind offcpu, named name, defined on first use) in s:
 * the outermost recorded ISR span's in the stream it interrupted ([irq]),
 * a task's time switched out in its own ([off-cpu]); so that the time is
 * not the open functions' own (the analyzer takes it out of them, as it
 * does time off CPU).  Its two events are the recorder's (syn), not the
 * program's; a PAUSE or LOST the stream owes stays for its next event (it
 * concerns the same open spans).  Lost when the node cannot be defined
 * (the sink failed).
 */
static NOINLINE void off_span(struct stream *s, uint32_t *id, const char *name, uint64_t t0,
                              uint64_t now)
{
    if (!*id)
        *id = define(RP_KIND_OFFCPU, RP_CLASS_FUNC, 0, name, NULL, 0, 0);
    if (!*id || !s->buf)
        return;
    if (s->size - s->pos < EV_MAX) {
        flush_stream(s);
        s->pause = (uint32_t)(g.clock() - now);
    }
    t0 = t0 > s->last ? t0 : s->last; /* (never before the stream's last event) */
    uint8_t *o = varint(s->buf + s->pos, (t0 - s->last) << 1);
    o = varint(varint(o, *id), ((now - t0) << 1) | 1);
    s->last = now;
    s->pos = (uint32_t)(o - s->buf);
    s->nev += 2;
    s->syn += 2;
}

/*
 * The stream of the calling context with room for one event at ticks now,
 * its head written as by ev_head_at; NULL when the context is not recorded.
 * dd: the event opens a span (its id, > 0), ends one (-1) or neither (0):
 * the stream keeps the ids of its open spans (the acquirer of a lock hold
 * is the innermost); in an interrupt handler, the end of the outermost span
 * adds its time to the stream the handler interrupted (off_span, [irq]).
 */
static NOINLINE uint8_t *ev_head(struct stream **sp, uint64_t now, int exit, int dd)
{
    int isr = in_isr();
    struct stream *s = isr ? &g.irq : g.cur;
    uint32_t n = s->depth;
    if (dd > 0) {
        if (n < RP_BARE_SPAN_DEPTH)
            s->open[n] = (uint16_t)dd;
        s->depth = n + 1;
    } else if (dd < 0 && n) { /* (an exit with none open: the depth stays 0) */
        s->depth = n - 1;
    }
    if (isr && dd > 0 && g.irq_depth++ == 0) {
        g.hit = g.cur;
        g.irq_t0 = now;
    } else if (isr && dd < 0 && g.irq_depth && --g.irq_depth == 0) { /* (hit set at 0 -> 1) */
        off_span(g.hit, &g.irq_id, "[irq]", g.irq_t0, now);
    }
    *sp = s;
    return ev_head_at(s, now, exit);
}

/* Closes an event begun by ev_head at o (nev events). */
static inline NOINSTR void ev_done(struct stream *s, uint8_t *o, uint32_t nev)
{
    s->pos = (uint32_t)(o - s->buf);
    s->nev += nev;
    g.events += nev;
}

/* An event lost in the calling context (no id). */
static NOINLINE void ev_lost(void)
{
    struct stream *s = in_isr() ? &g.irq : g.cur;
    if (s->buf) {
        s->lost++;
        g.lost++;
    }
}

/* An "other op" event: head, 0, op, then the caller's operands. */
static inline NOINSTR uint8_t *ev_op(struct stream **sp, uint64_t now, uint8_t op, int dd)
{
    uint8_t *o = ev_head(sp, now, 0, dd);
    if (o) {
        *o++ = 0;
        *o++ = op;
    }
    return o;
}

/* ---- direct mode: statistics of the points ---------------------------- */

static struct {
    uint32_t calls, max;
    uint64_t total;
} pst[RP_BARE_MAX_POINTS];
static uint32_t npst;

/* Adds one activation of dur ticks to site s's statistics (its slot + 1 is
 * kept in s->spare).  Sites past RP_BARE_MAX_POINTS are not counted. */
static NOINSTR void point_stat(struct rp_site *s, uint64_t dur)
{
    uint32_t i = s->spare;
    if (unlikely(!i)) {
        if (npst >= RP_BARE_MAX_POINTS)
            return;
        i = s->spare = (uint8_t)++npst;
    }
    pst[i - 1].calls++;
    pst[i - 1].total += dur;
    if (dur > pst[i - 1].max)
        pst[i - 1].max = dur > 0xffffffffu ? 0xffffffffu : (uint32_t)dur;
}

/* Prints v in decimal, right-aligned in w columns. */
static NOINSTR void put_dec(void (*putc)(char), uint64_t v, int w)
{
    char b[21];
    int n = 0;
    do {
        uint32_t r;
        v = div64(v, 10, &r);
        b[n++] = (char)('0' + r);
    } while (v);
    while (w-- > n)
        putc(' ');
    while (n)
        putc(b[--n]);
}

#ifdef RP_BARE_FUNC_STATS
NOINSTR void rp_bare_print_funcs(void (*putc)(char c))
{
    static const char head[] = "     calls      total        max       mean  function\n";
    for (const char *c = head; *c; c++)
        putc(*c);
    for (uint32_t i = 0; i < RP_BARE_MAX_FUNCS; i++) {
        if (!fst[i].calls)
            continue;
        put_dec(putc, fst[i].calls, 10);
        put_dec(putc, fst[i].total, 11);
        put_dec(putc, fst[i].max, 11);
        put_dec(putc, div64(fst[i].total, fst[i].calls, NULL), 11);
        putc(' ');
        putc(' ');
        putc('0');
        putc('x');
        for (int b = 28; b >= 0; b -= 4) /* the function's address, Thumb bit clear */
            putc("0123456789abcdef"[((g.fkey[i] & ~1u) >> b) & 15]);
        putc('\n');
    }
    if (fdeep) {
        static const char deep[] = "(calls deeper than RP_BARE_FUNC_DEPTH, not timed: ";
        for (const char *c = deep; *c; c++)
            putc(*c);
        put_dec(putc, fdeep, 0);
        putc(')');
        putc('\n');
    }
}
#endif

extern struct rp_site __start_rp_sites[] __attribute__((weak));
extern struct rp_site __stop_rp_sites[] __attribute__((weak));

NOINSTR void rp_bare_print_points(void (*putc)(char c))
{
    static const char head[] = "     calls      total        max       mean  point\n";
    for (const char *c = head; *c; c++)
        putc(*c);
    for (struct rp_site *s = __start_rp_sites; s && s < __stop_rp_sites; s++) {
        uint32_t i = s->spare;
        uint32_t calls = i ? pst[i - 1].calls : 0;
        uint64_t total = i ? pst[i - 1].total : 0;
        put_dec(putc, calls, 10);
        put_dec(putc, total, 11);
        put_dec(putc, i ? pst[i - 1].max : 0, 11);
        put_dec(putc, calls ? div64(total, calls, NULL) : 0, 11);
        putc(' ');
        putc(' ');
        for (const char *c = s->name; c && *c; c++)
            putc(*c);
        putc('\n');
    }
}

/* ---- the hooks ------------------------------------------------------------- */

NOINSTR void __cyg_profile_func_enter(void *fn, void *call_site)
{
    (void)call_site;
    if (unlikely(!g.on))
        return;
    uint32_t m = crit_enter();
    uint64_t now = g.clock();
    struct stream *s;
    uint32_t slot = ~0u, id = func_id(fn, &slot);
    if (unlikely(!id)) {
        ev_lost();
    } else {
        uint8_t *o = ev_head(&s, now, 0, (int)id);
        if (o)
            ev_done(s, varint(o, id), 1);
    }
#ifdef RP_BARE_FUNC_STATS
    fstat_enter(id ? slot : ~0u, now);
#endif
    crit_exit(m);
}

NOINSTR void __cyg_profile_func_exit(void *fn, void *call_site)
{
    (void)fn, (void)call_site;
    if (unlikely(!g.on))
        return;
    uint32_t m = crit_enter();
    struct stream *s;
    uint64_t now = g.clock();
    uint8_t *o = ev_head(&s, now, 1, -1);
    if (o)
        ev_done(s, o, 1);
#ifdef RP_BARE_FUNC_STATS
    fstat_exit(now);
#endif
    crit_exit(m);
}

/* ENTER of site s with an optional ARG; returns the ticks (never 0), or 0
 * when not recording. */
static NOINSTR uint64_t site_begin(struct rp_site *s, int has_arg, uint64_t arg)
{
    if (!g.on)
        return 0;
    uint32_t m = crit_enter();
    uint64_t now = g.clock();
    uint32_t id = site_id(s);
    struct stream *st;
    uint8_t *o = id ? ev_head(&st, now, 0, (int)id) : NULL;
    if (o) {
        o = varint(o, id);
        if (has_arg) {
            *o++ = 0; /* delta 0, other op */
            *o++ = 0;
            *o++ = RP_OP_ARG;
            o = varint(o, arg);
        }
        ev_done(st, o, 1 + (uint32_t)has_arg);
    } else if (!id) {
        ev_lost();
    }
    crit_exit(m);
    return now ? now : 1;
}

NOINSTR uint64_t rp_site_begin(struct rp_site *s)
{
    return site_begin(s, 0, 0);
}

NOINSTR uint64_t rp_site_begin_arg(struct rp_site *s, uint64_t arg)
{
    return site_begin(s, 1, arg);
}

NOINSTR void rp_site_end(struct rp_site *s, uint64_t t0)
{
    uint32_t m = crit_enter();
    struct stream *st;
    uint32_t id = (uint32_t)(uintptr_t)s->direct;
    uint64_t now = g.clock();
    uint8_t *o = g.on && id ? ev_op(&st, now, RP_OP_EXIT_ID, -1) : NULL;
    if (o)
        ev_done(st, varint(o, id), 1);
    point_stat(s, now >= t0 ? now - t0 : 0);
    crit_exit(m);
}

/* An INSTANT or COUNTER event of site s with operand v. */
static NOINSTR void site_value(struct rp_site *s, uint8_t op, uint64_t v)
{
    if (!g.on)
        return;
    uint32_t m = crit_enter();
    uint64_t now = g.clock();
    uint32_t id = site_id(s);
    struct stream *st;
    uint8_t *o = id ? ev_op(&st, now, op, 0) : NULL;
    if (o)
        ev_done(st, varint(varint(o, id), v), 1);
    else if (!id)
        ev_lost();
    point_stat(s, 0);
    crit_exit(m);
}

NOINSTR void rp_site_instant(struct rp_site *s, uint64_t arg)
{
    site_value(s, RP_OP_INSTANT, arg);
}

NOINSTR void rp_site_counter(struct rp_site *s, int64_t value)
{
    site_value(s, RP_OP_COUNTER, ((uint64_t)value << 1) ^ (uint64_t)(value >> 63));
}

/* ---- locks ----------------------------------------------------------------- */

/*
 * A lock event: op 0 = wait begins, 1 = acquired, 2 = failed, 3 = released.
 * A wait is a span (ENTER of the wait id, ended by the acquisition or the
 * failure); a hold is an interval, as the Linux recorder writes it
 * (docs/locks.md, "Holds are intervals"): HOLD_BEGIN at the acquisition,
 * and at the release HOLD_END with its duration, the events inside and
 * its acquirer, the innermost span open at the acquisition; so a lock
 * taken in one function and released in another is one hold of the
 * function that took it.  A recursive acquisition of a held lock is part
 * of the outermost hold (counted there, not written).  A release whose
 * acquisition was not seen writes a HOLD_END of how 0 (an unmatched exit).
 */
static NOINSTR void lock_event(const volatile void *l, int op)
{
    if (!g.on)
        return;
    uint32_t m = crit_enter();
    uint64_t now = g.clock();
    struct stream *st = in_isr() ? &g.irq : g.cur, *s2;
    int k = 0;
    uint32_t id = lock_id(l, op & 1, &k);
    uint8_t *o;
    if (!id) {
        ev_lost();
        goto out;
    }
    if (op == 0) {
        if ((o = ev_head(&s2, now, 0, (int)id)) != NULL) {
            ev_done(s2, varint(o, id), 1);
            s2->wait = l;
        }
        goto out;
    }
    if (op != 3 && st->wait == l) { /* the wait ends: with the lock, or failed (ARG 1, EXIT) */
        if (op == 2 && (o = ev_op(&s2, now, RP_OP_ARG, -1)) != NULL) {
            *o++ = RP_ARG_LOCK_FAILED;
            *o++ = 1; /* EXIT, delta 0 */
            ev_done(s2, o, 2);
        } else if (op == 1 && (o = ev_head(&s2, now, 1, -1)) != NULL) {
            ev_done(s2, o, 1);
        }
        st->wait = NULL;
    }
    if (op == 2)
        goto out;
    __typeof__(g.locks[0]) *L = &g.locks[k];
    if ((op == 1 ? L->held++ : L->held ? --L->held : 0) != 0)
        goto out; /* a recursive acquisition, or its release */
    if ((o = ev_op(&s2, now, op == 1 ? RP_OP_HOLD_BEGIN : RP_OP_HOLD_END, 0)) == NULL)
        goto out;
    o = varint(o, id);
    if (op == 1) {
        uint32_t n = s2->depth;
        L->acq = n ? s2->open[(n < RP_BARE_SPAN_DEPTH ? n : RP_BARE_SPAN_DEPTH) - 1] : 0;
        L->t0 = now;
        ev_done(s2, o, 1);
        L->ev = s2->seq + s2->nev;
        goto out;
    }
    if (L->t0) { /* duration, events inside, how = acquirer << 2 | outer | 1 */
        o = varint(varint(o, now - L->t0), s2->seq + s2->nev - L->ev);
        o = varint(o, (uint32_t)L->acq << 2 | 3);
    } else { /* released, never acquired as far as we know */
        *o++ = 0;
        *o++ = 0;
        *o++ = 0;
    }
    L->t0 = 0;
    ev_done(s2, o, 1);
out:
    crit_exit(m);
}

NOINSTR void rp_lock_wait(const volatile void *lock)
{
    lock_event(lock, 0);
}
NOINSTR void rp_lock_acquired(const volatile void *lock)
{
    lock_event(lock, 1);
}
NOINSTR void rp_lock_failed(const volatile void *lock)
{
    lock_event(lock, 2);
}
NOINSTR void rp_lock_released(const volatile void *lock)
{
    lock_event(lock, 3);
}

/* Names lock (the string is kept, not copied: pass a string constant).
 * Returns 0, RP_EINVAL-like -22 for NULL arguments, -16 when the lock has a
 * name or the table is full. */
NOINSTR int rp_lock_name(const volatile void *lock, const char *name)
{
    if (!lock || !name || !*name)
        return -22;
    for (int i = 0; i < RP_BARE_MAX_LOCKS; i++) {
        if (g.locks[i].lock && g.locks[i].lock != lock)
            continue;
        if (g.locks[i].name)
            return -16;
        g.locks[i].lock = lock;
        g.locks[i].name = name;
        return 0;
    }
    return -16;
}

/* ---- start, flush, stop ---------------------------------------------------- */

/* Appends an INFO key/value pair at o. */
static NOINSTR uint8_t *info(uint8_t *o, const char *k, const char *v)
{
    uint32_t kl = slen(k), vl = slen(v);
    *o++ = (uint8_t)kl;
    *o++ = 0;
    for (uint32_t i = 0; i < kl; i++)
        *o++ = (uint8_t)k[i];
    put32(o, vl);
    o += 4;
    for (uint32_t i = 0; i < vl; i++)
        *o++ = (uint8_t)v[i];
    return o;
}

static NOINSTR void stream_init(struct stream *s, void *buf, uint32_t size, uint32_t tid,
                                uint64_t now)
{
    s->buf = buf;
    s->size = size;
    s->pos = HDRS;
    s->tid = tid;
    s->nev = 0;
    s->base = s->last = now;
    s->lost = s->pause = s->syn = s->said = 0;
    s->wait = NULL;
    s->next = NULL;
    s->seq = s->depth = 0;
    s->out = 0;
#ifdef RP_BARE_FUNC_STATS
    s->fs = &fstack[0]; /* main's (a task's: rp_bare_task_add) */
#endif
}

/* The constant parts of the stream head: the file header (format.h), the
 * INFO pairs every target writes, the THREAD payloads. */
static const uint8_t file_hdr[RP_FILE_HDR_SIZE] = {'R',
                                                   'A',
                                                   'N',
                                                   'K',
                                                   'P',
                                                   'R',
                                                   'O',
                                                   'F',
                                                   RP_VERSION_MAJOR,
                                                   0,
                                                   RP_VERSION_MINOR,
                                                   0,
                                                   RP_FILE_HDR_SIZE};
static const char info_fixed[] = "\x04\0"
                                 "mode"
                                 "\x05\0\0\0"
                                 "trace"
                                 "\x05\0"
                                 "clock"
                                 "\x04\0\0\0"
                                 "bare"
                                 "\x03\0"
                                 "pid"
                                 "\x01\0\0\0"
                                 "1"
                                 "\x08\0"
                                 "recorder"
                                 "\x0d\0\0\0"
                                 "rankprof-bare"
                                 "\x06\0"
                                 "offcpu"
                                 "\x03\0\0\0"
                                 "irq";
static const uint8_t thread_main[] = {1, 0, 0, 0, 0, 0, 0, 0, 'm', 'a', 'i', 'n'};
static const uint8_t thread_irq[] = {2, 0, 0, 0, 0, 0, 0, 0, 'i', 'r', 'q'};

NOINSTR int rp_bare_start(const struct rp_bare_config *c)
{
    uint8_t *b, *o;
    char hz[12], *h = hz + sizeof hz;
    uint32_t v;

    if (!c || !c->clock || !c->hz || (c->sink && (!c->buf || c->buf_size < 256)) ||
        (c->irq_buf && c->irq_buf_size < 64) || slen(c->program) > 120)
        return -1;
    g.on = 0;
    g.clock = c->clock;
    g.sink = c->sink;
    g.ctx = c->sink_ctx;
    g.hz = c->hz;
    g.next_id = 1;
    g.events = g.lost = 0;
    for (v = 0; v < RP_BARE_MAX_FUNCS; v++)
        g.fkey[v] = 0;
    for (v = 0; v < RP_BARE_MAX_LOCKS; v++)
        g.locks[v].wait = g.locks[v].hold = g.locks[v].held = 0, g.locks[v].t0 = 0;
    for (struct rp_site *st = __start_rp_sites; st && st < __stop_rp_sites; st++)
        st->direct = NULL; /* ids of an earlier start are not in this trace */
    if (c->sink) {         /* else direct mode only: statistics, no trace */
        *--h = 0;
        v = c->hz;
        do
            *--h = (char)('0' + v % 10);
        while ((v /= 10) != 0);
        b = c->buf; /* the varying INFO pairs are built in the buffer */
        o = info(b, "program", c->program ? c->program : "firmware");
        o = info(o, "freq_hz", h);
        const void *p[2] = {b, info_fixed};
        uint32_t l[2] = {(uint32_t)(o - b), sizeof info_fixed - 1};
        if (g.sink(g.ctx, file_hdr, sizeof file_hdr) < 0 || chunk(RP_CH_INFO, p, l, 2) != 0)
            return -2;
        p[0] = thread_main;
        l[0] = sizeof thread_main;
        if (chunk(RP_CH_THREAD, p, l, 1) != 0)
            return -2;
        p[0] = thread_irq;
        l[0] = sizeof thread_irq;
        if (c->irq_buf && chunk(RP_CH_THREAD, p, l, 1) != 0)
            return -2;
    }
    uint64_t now = c->clock();
    g.cur = &g.main;
    g.tasks = NULL;
    g.irq_depth = g.irq_id = g.off_id = 0;
    stream_init(&g.main, c->sink ? c->buf : NULL, c->buf_size, 1, now);
    stream_init(&g.irq, c->sink ? c->irq_buf : NULL, c->irq_buf_size, 2, now);
    g.on = 1;
    return 0;
}

NOINSTR int rp_bare_flush(void)
{
    uint32_t m = crit_enter();
    int rc = g.on ? flush_stream(&g.main) : 0;
    if (g.on && g.irq.buf && flush_stream(&g.irq) != 0)
        rc = -2;
    for (struct stream *t = g.on ? g.tasks : NULL; t; t = t->next)
        if (flush_stream(t) != 0)
            rc = -2;
    crit_exit(m);
    return rc;
}

NOINSTR int rp_bare_task_add(struct rp_bare_task *task, uint32_t tid, const char *name, void *buf,
                             uint32_t size)
{
    struct stream *t = (struct stream *)(void *)task;
    uint8_t h[8];
    int rc = 0;
    if (!g.on || !g.sink || !t || tid < 3 || !buf || size < 128 + RP_BARE_TASK_EXTRA)
        return -1;
    uint32_t m = crit_enter();
    put32(h, tid);
    put32(h + 4, 0);
    const void *p[2] = {h, name};
    const uint32_t l[2] = {8, slen(name)};
    if (chunk(RP_CH_THREAD, p, l, 2) != 0)
        rc = -2;
    static const char info_tasks[] = "\x06\0offcpu\x09\0\0\0irq+tasks"; /* (a later INFO wins) */
    p[0] = info_tasks;
    if (!g.tasks && chunk(RP_CH_INFO, p, (const uint32_t[]){sizeof info_tasks - 1}, 1) != 0)
        rc = -2;
    stream_init(t, buf, size, tid, g.clock());
#ifdef RP_BARE_FUNC_STATS /* its stack of open calls, at the end of its buffer */
    uintptr_t e = ((uintptr_t)buf + size - sizeof(struct fstk)) & ~(uintptr_t)7;
    t->fs = (struct fstk *)e;
    t->fs->n = 0;
    t->size = (uint32_t)(e - (uintptr_t)buf);
#endif
    t->next = g.tasks;
    g.tasks = t;
    crit_exit(m);
    return rc;
}

NOINSTR void rp_bare_task_switch(struct rp_bare_task *task)
{
    uint32_t m = crit_enter();
    struct stream *t = task ? (struct stream *)(void *)task : &g.main;
    if (g.on && t != g.cur) { /* the time t was out is off CPU for its open spans */
        uint64_t now = g.clock();
        g.cur->out = now;
        if (t->out)
            off_span(t, &g.off_id, "[off-cpu]", t->out, now);
        t->out = 0;
    }
    g.cur = t;
    crit_exit(m);
}

NOINSTR int rp_bare_stop(int status)
{
    uint8_t e[40];
    if (!g.on)
        return -1;
    int rc = rp_bare_flush();
    uint32_t m = crit_enter();
    g.on = 0;
    uint64_t now = g.clock();
    put64(e, now);
    put64(e + 8, g.events);
    put64(e + 16, g.lost);
    put32(e + 24, (uint32_t)status);
    put32(e + 28, RP_END_EXIT);
    const void *p[1] = {e};
    const uint32_t l[1] = {32};
    if (g.sink && chunk(RP_CH_END, p, l, 1) != 0)
        rc = -2;
    crit_exit(m);
    return rc;
}

NOINSTR uint64_t rp_bare_events(void)
{
    return g.events;
}

NOINSTR uint64_t rp_bare_lost(void)
{
    return g.lost;
}

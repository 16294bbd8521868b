// SPDX-License-Identifier: MIT
/*
 * export_chrome.c - the Chrome trace event format (JSON), read by
 * chrome://tracing, ui.perfetto.dev, Perfetto's trace_processor and
 * speedscope.
 *
 * Streams: one line per event as the timeline (export_timeline.c) hands
 * them out.  Spans are complete events "X" (ts, dur) on their thread (cat
 * = the span kind), written when they end; instants are "i" with thread
 * scope, counters "C" (per process, as the format wants), losses an
 * instant "LOST" with the count, the recorder's pauses a slice
 * "[recorder]" (cat "rankprof") in the innermost span, interval lock
 * holds async "b"/"e" pairs.  Timestamps are microseconds since the first
 * event, with nanosecond decimals.  Process and thread names are "M"
 * metadata events, first.
 *
 * The walking thread only turns each event into a fixed-size record (its
 * times already on the run's axis) in a batch; the batches are formatted
 * by the ordered pool's threads (export_pool.h) and written in order, so
 * the output is the same bytes with any number of threads.
 */
#define _GNU_SOURCE /* open_memstream */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "common/compiler.h"
#include "common/error.h"
#include "report/clockmap.h"
#include "report/export.h"
#include "report/export_pool.h"
#include "report/export_tlpar.h"
#include "report/util.h"
#include "trace/format.h"

/* The events as the walking thread hands them to the pool's workers,
 * which format them (fmt_batch): times already in ns on the run's axis. */
enum { REC_SPAN, REC_PAUSE, REC_INSTANT, REC_COUNTER, REC_LOST, REC_HOLD };
enum { WHY_NONE, WHY_UNWOUND, WHY_CUT, WHY_UNCLOSED, WHY_OTHER };
struct rec {
    uint8_t op, why;
    uint32_t tid, id;
    uint64_t a, b, c; /* span, pause, hold: start, end, arg (hold: its async id);
                         instant, counter, lost: ns, value, - */
};

#define WORKERS_MAX 9 /* the pool's 8 and the walking thread */
#define BATCH       (1u << 20)

/* A worker's cache of thread prefixes, round robin. */
struct thcache {
    struct {
        uint32_t tid;
        unsigned len;
        char s[48]; /* ,"pid":P,"tid":T */
    } th[8];
    unsigned nth, next;
    /* the integer microseconds last written as a timestamp: the events of
     * a microsecond follow one another, so most reuse its digits */
    uint64_t us;
    unsigned uslen; /* 0: none yet */
    char usd[24];
};

struct chrome {
    FILE *out;
    const struct rp_profile *p;
    char **names;
    char **tails;     /* per id: ,"name":"...","cat":"..." (JSON-escaped once), */
    size_t *tail_len; /* their lengths, */
    char *tailbuf;    /* in one block, TAIL_PAD bytes after the last (put_pad) */
    struct thcache tc[WORKERS_MAX];
    uint64_t holds;              /* lock holds written: their async ids */
    struct rp_clockmap cm;       /* the run's one time axis (clockmap.h) */
    struct rp_clockmap_fast cmf; /* its current file's, per event */
    struct rp_xpool *pool;       /* formats and writes the batches of records, in order */
    uint8_t *batch;
    size_t nbatch, capbatch;
    /* a parallel walk's encoder (export_tlpar.h; pool NULL): where the
     * job's text goes, and the job's number (its holds' async ids) */
    struct rp_xbuf *jout;
    uint64_t job;
};

/* ,"pid":P,"tid":T for tid, from worker w's cache (its length in *len).
 * Cannot fail. */
static const char *thread_part(struct chrome *c, unsigned w, uint32_t tid, size_t *len)
{
    struct thcache *k = &c->tc[w];
    for (unsigned i = 0; i < k->nth; i++)
        if (k->th[i].tid == tid) {
            *len = k->th[i].len;
            return k->th[i].s;
        }
    unsigned i = k->nth < 8 ? k->nth++ : (k->next++ & 7);
    k->th[i].tid = tid;
    snprintf(k->th[i].s, sizeof(k->th[i].s), ",\"pid\":%u,\"tid\":%u", rp_export_pid(c->p, tid),
             tid);
    *len = k->th[i].len = (unsigned)strlen(k->th[i].s);
    return k->th[i].s;
}

/* Appends n bytes at s at *q.  Cannot fail (the room was made). */
static inline char *put(char *q, const char *s, size_t n)
{
    memcpy(q, s, n);
    return q + n;
}

#define PUT(q, lit) put(q, lit, sizeof(lit) - 1)

#define TAIL_PAD 16

/* put for a string that TAIL_PAD - 1 bytes may be read past (a tail, a
 * thread part), in words of 16 bytes: no call for a length known only
 * here.  Cannot fail (the room was made, and TAIL_PAD more). */
static inline char *put_pad(char *q, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i += 16)
        memcpy(q + i, s + i, 16);
    return q + n;
}

/* Appends v in decimal at q, its digits written in place (digits written
 * to a buffer and copied as words would stall on store forwarding).
 * Cannot fail (the room was made). */
static inline char *put_u64(char *q, uint64_t v)
{
    unsigned n = 1;
    for (uint64_t t = v; t >= 10; t /= 10)
        n++;
    char *e = q + n;
    do
        *--e = (char)('0' + v % 10);
    while (v /= 10);
    return q + n;
}

/* ".000" to ".999": a timestamp's decimals, copied as one word rather
 * than three digits divided out per event.  Cannot fail. */
static char frac[1000][4];
static pthread_once_t frac_once = PTHREAD_ONCE_INIT;

static void frac_init(void)
{
    for (unsigned f = 0; f < 1000; f++) {
        frac[f][0] = '.';
        frac[f][1] = (char)('0' + f / 100);
        frac[f][2] = (char)('0' + f / 10 % 10);
        frac[f][3] = (char)('0' + f % 10);
    }
}

/* Appends ns as microseconds with three decimals at q.  Cannot fail. */
static inline char *put_us(char *q, uint64_t ns)
{
    q = ns < 1000 ? (*q = '0', q + 1) : put_u64(q, ns / 1000);
    memcpy(q, frac[ns % 1000], 4);
    return q + 4;
}

/* put_us for a timestamp, its integer part reused from worker k's last
 * one when the same (copied as 24 bytes: the room was made).  Cannot
 * fail. */
static inline char *put_ts(char *q, struct thcache *k, uint64_t ns)
{
    uint64_t us = ns / 1000;
    if (unlikely(us != k->us || !k->uslen)) {
        char *e = put_u64(k->usd, us);
        k->uslen = (unsigned)(e - k->usd);
        k->us = us;
    }
    memcpy(q, k->usd, sizeof(k->usd));
    q += k->uslen;
    memcpy(q, frac[ns - us * 1000], 4);
    return q + 4;
}

static const char *const whys[] = {NULL, "unwound", "cut", "unclosed"};

/*
 * The pool's turning function (export_pool.h): the records at in as JSON
 * events, one line each.  This runs per event, so no printf: numbers are
 * formatted by hand and the names are strings made once.  Returns 0 or
 * RP_ENOMEM.
 */
static int fmt_batch(void *arg, unsigned w, const uint8_t *in, size_t n, struct rp_xbuf *out)
{
    struct chrome *c = arg;
    const struct rec *r = (const void *)in, *end = (const void *)(in + n);

    if (w >= WORKERS_MAX)
        w = WORKERS_MAX - 1;
    struct thcache *k = &c->tc[w];
    for (; r < end; r++) {
        int known = r->id < c->p->n_nodes; /* (always: the walk checks ids) */
        size_t tn, tail = known ? c->tail_len[r->id] : 0;
        const char *name = known ? c->tails[r->id] : "";
        if (rp_xbuf_need(out, 512 + 2 * (tail + TAIL_PAD)) <
            0) /* (a hold: two events, two names) */
            return RP_ENOMEM;
        char *q = (char *)out->b + out->n;
        const char *t = thread_part(c, w, r->tid, &tn);
        switch (r->op) {
        case REC_SPAN:
        case REC_PAUSE:
        case REC_HOLD:
            if (r->op == REC_HOLD) {
                q = PUT(q, ",\n{\"ph\":\"b\",\"ts\":");
                q = put_ts(q, k, r->a);
                q = put_pad(q, t, tn);
                q = put_pad(q, name, tail);
                q = PUT(q, ",\"id\":");
                q = put_u64(q, r->c);
                q = PUT(q, "}");
                q = PUT(q, ",\n{\"ph\":\"e\",\"ts\":");
                q = put_ts(q, k, r->b);
                q = put_pad(q, t, tn);
                q = put_pad(q, name, tail);
                q = PUT(q, ",\"id\":");
                q = put_u64(q, r->c);
            } else {
                q = PUT(q, ",\n{\"ph\":\"X\",\"ts\":");
                q = put_ts(q, k, r->a);
                q = PUT(q, ",\"dur\":");
                q = put_us(q, r->b > r->a ? r->b - r->a : 0);
                q = put_pad(q, t, tn);
                if (r->op == REC_PAUSE)
                    q = PUT(q, ",\"name\":\"" RP_EXPORT_RECORDER "\",\"cat\":\"rankprof\"");
                else
                    q = put_pad(q, name, tail);
            }
            if ((r->op == REC_SPAN && r->c) || r->why) {
                q = PUT(q, ",\"args\":{");
                if (r->op == REC_SPAN && r->c) {
                    q = PUT(q, "\"arg\":");
                    q = put_u64(q, r->c);
                    if (r->why)
                        q = PUT(q, ",");
                }
                if (r->why) {
                    const char *why = r->why < WHY_OTHER ? whys[r->why] : "?";
                    q = PUT(q, "\"rankprof\":\"");
                    q = put(q, why, strlen(why));
                    q = PUT(q, "\"");
                }
                q = PUT(q, "}");
            }
            q = PUT(q, "}");
            break;
        case REC_INSTANT:
        case REC_COUNTER:
        case REC_LOST: {
            q = PUT(q, ",\n{\"ph\":\"");
            *q++ = r->op == REC_COUNTER ? 'C' : 'i';
            q = PUT(q, "\",\"ts\":");
            q = put_ts(q, k, r->a);
            q = put_pad(q, t, tn);
            if (r->op == REC_LOST) {
                q = PUT(q, ",\"name\":\"LOST\",\"cat\":\"rankprof\",\"s\":\"t\",\"args\":{"
                           "\"events\":");
                q = put_u64(q, r->b);
            } else if (r->op == REC_INSTANT) {
                q = put_pad(q, name, tail);
                q = PUT(q, ",\"s\":\"t\",\"args\":{\"arg\":");
                q = put_u64(q, r->b);
            } else {
                q = put_pad(q, name, tail);
                q = PUT(q, ",\"args\":{\"value\":");
                int64_t v = (int64_t)r->b;
                if (v < 0)
                    *q++ = '-';
                q = put_u64(q, v < 0 ? -(uint64_t)v : (uint64_t)v);
            }
            q = PUT(q, "}}");
            break;
        }
        default:
            break;
        }
        out->n = (size_t)((uint8_t *)q - out->b);
    }
    return 0;
}

/* The per-id name and category strings, in one block.  Returns 0 or
 * RP_ENOMEM. */
static int make_tails(struct chrome *c)
{
    const struct rp_profile *p = c->p;
    size_t len = 0, *at;
    if (!(c->tails = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*c->tails))) ||
        !(at = c->tail_len = calloc(p->n_nodes + 1, sizeof(*c->tail_len))))
        return RP_ENOMEM;
    FILE *m = open_memstream(&c->tailbuf, &len);
    if (!m)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        at[i] = (size_t)ftello(m); /* (their starts, then their lengths) */
        fputs_unlocked(",\"name\":", m);
        rp_export_put_json(m, c->names[i]);
        fprintf(m, ",\"cat\":\"%s\"", rp_export_cat(p->nodes[i].kind));
    }
    at[p->n_nodes] = (size_t)ftello(m);
    for (unsigned i = 0; i < TAIL_PAD; i++)
        putc_unlocked(0, m);
    if (fclose(m) != 0 || !c->tailbuf)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        c->tails[i] = c->tailbuf + at[i];
        at[i] = at[i + 1] - at[i];
    }
    return 0;
}

/* ns since the run's first event on the axis.  Cannot fail. */
static inline uint64_t ts_ns(struct chrome *c, uint64_t ticks)
{
    double v = rp_clockmap_fast_ns(&c->cm, &c->cmf, ticks);
    return v < 9e18 ? (uint64_t)(int64_t)(v + 0.5) : 0;
}

/* A record to fill in the batch (handing the full batch to the pool
 * first), or NULL with *rc set to the pool's error. */
static inline struct rec *rec_new(struct chrome *c, int *rc)
{
    if (unlikely(c->nbatch + sizeof(struct rec) > c->capbatch) && !c->pool) { /* a job's */
        *rc = fmt_batch(c, 0, c->batch, c->nbatch, c->jout);
        c->nbatch = 0;
        if (*rc < 0)
            return NULL;
    } else if (unlikely(c->nbatch + sizeof(struct rec) > c->capbatch)) {
        *rc = rp_xpool_submit(c->pool, c->nbatch);
        c->nbatch = 0;
        c->batch = rp_xpool_batch(c->pool, &c->capbatch);
        if (*rc < 0)
            return NULL;
    }
    struct rec *r = (struct rec *)(c->batch + c->nbatch);
    c->nbatch += sizeof(*r);
    return r;
}

/* How a span ended, as a record says it. */
static uint8_t why_code(const char *why)
{
    if (!why)
        return WHY_NONE;
    for (uint8_t i = 1; i < WHY_OTHER; i++)
        if (!strcmp(why, whys[i]))
            return i;
    return WHY_OTHER;
}

/*
 * The timeline callbacks (export.h): one record each, formatted by the
 * pool.  They return 0, or the pool's error (RP_EIO once the stream has
 * failed, RP_ENOMEM) to stop early.
 */
static int on_span(void *cookie, uint32_t tid, uint32_t id, uint64_t start, uint64_t end,
                   uint64_t arg, const char *why)
{
    struct chrome *c = cookie;
    int rc = 0;
    struct rec *r = rec_new(c, &rc);
    if (!r)
        return rc;
    r->op = REC_SPAN; /* field by field: no copy from the stack */
    r->why = why ? why_code(why) : WHY_NONE;
    r->tid = tid;
    r->id = id;
    r->a = ts_ns(c, start);
    r->b = ts_ns(c, end);
    r->c = arg;
    return 0;
}

/*
 * A lock hold that is an interval (format 1.3): an async slice, "b" and "e"
 * with an id of its own, so that overlapping holds (hand-over-hand) and
 * holds that outlive the function that took them do not break the nesting
 * of the thread's slices.
 */
static int on_hold(void *cookie, uint32_t tid, uint32_t id, uint64_t start, uint64_t end,
                   const char *why)
{
    struct chrome *c = cookie;
    int rc = 0;
    struct rec *r = rec_new(c, &rc);
    if (!r)
        return rc;
    *r = (struct rec){.op = REC_HOLD,
                      .tid = tid,
                      .id = id,
                      .a = ts_ns(c, start),
                      .b = ts_ns(c, end),
                      .c = c->jout ? (c->job + 1) << 24 | ++c->holds : ++c->holds};
    r->why = why_code(why);
    return 0;
}

static int on_instant(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg)
{
    struct chrome *c = cookie;
    int rc = 0;
    struct rec *r = rec_new(c, &rc);
    if (!r)
        return rc;
    *r = (struct rec){.op = REC_INSTANT, .tid = tid, .id = id, .a = ts_ns(c, ticks), .b = arg};
    return 0;
}

static int on_counter(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, int64_t v)
{
    struct chrome *c = cookie;
    int rc = 0;
    struct rec *r = rec_new(c, &rc);
    if (!r)
        return rc;
    *r = (struct rec){
        .op = REC_COUNTER, .tid = tid, .id = id, .a = ts_ns(c, ticks), .b = (uint64_t)v};
    return 0;
}

/* The recorder's own time (a PAUSE): a slice "[recorder]" of category
 * "rankprof", inside the thread's innermost open slice. */
static int on_pause(void *cookie, uint32_t tid, uint64_t start, uint64_t end)
{
    struct chrome *c = cookie;
    int rc = 0;
    struct rec *r = rec_new(c, &rc);
    if (!r)
        return rc;
    *r = (struct rec){.op = REC_PAUSE, .tid = tid, .a = ts_ns(c, start), .b = ts_ns(c, end)};
    return 0;
}

static int on_lost(void *cookie, uint32_t tid, uint64_t ticks, uint64_t count)
{
    struct chrome *c = cookie;
    int rc = 0;
    struct rec *r = rec_new(c, &rc);
    if (!r)
        return rc;
    *r = (struct rec){.op = REC_LOST, .tid = tid, .a = ts_ns(c, ticks), .b = count};
    return 0;
}

/* A run's file k begins: its ticks follow.  Cannot fail. */
static int on_file(void *cookie, uint32_t k)
{
    struct chrome *c = cookie;
    rp_clockmap_select(&c->cm, k);
    rp_clockmap_fast_init(&c->cm, &c->cmf);
    return 0;
}

/*
 * The parallel walk's encoders (export_tlpar.h): each a copy of c's
 * read-only part (profile, names, clocks) with its own batch of records
 * and thread cache, formatting its job's records into the job's text.  A
 * hold's async id is the job's number + 1 times 2^24 plus its number in
 * the job.  Returns the encoder, or NULL when out of memory.
 */
static void *enc_open(void *arg)
{
    const struct chrome *m = arg;
    struct chrome *e = calloc(1, sizeof(*e));
    if (!e || !(e->batch = malloc(BATCH))) {
        free(e);
        return NULL;
    }
    e->out = m->out;
    e->p = m->p;
    e->names = m->names;
    e->tails = m->tails;
    e->tail_len = m->tail_len;
    e->cm = m->cm; /* (its arrays are m's: read only, freed by m) */
    rp_clockmap_fast_init(&e->cm, &e->cmf);
    e->capbatch = BATCH;
    return e;
}

/* A job begins: its text goes to out.  Cannot fail. */
static int enc_start(void *enc, uint64_t job, uint32_t tid, struct rp_xbuf *out)
{
    struct chrome *e = enc;
    (void)tid;
    e->jout = out;
    e->job = job;
    e->holds = 0;
    e->nbatch = 0;
    return 0;
}

/* The job's last records, formatted.  RP_ENOMEM. */
static int enc_finish(void *enc)
{
    struct chrome *e = enc;
    int rc = fmt_batch(e, 0, e->batch, e->nbatch, e->jout);
    e->nbatch = 0;
    return rc;
}

/* Frees an encoder (export_tlpar.h).  Cannot fail. */
static void enc_close(void *enc)
{
    struct chrome *e = enc;
    free(e->batch);
    free(e);
}

int rp_export_chrome(FILE *out, const struct rp_export_ctx *ctx)
{
    static const struct rp_timeline_ops ops = {.span = on_span,
                                               .instant = on_instant,
                                               .counter = on_counter,
                                               .lost = on_lost,
                                               .hold = on_hold,
                                               .file = on_file,
                                               .pause = on_pause};
    const struct rp_profile *p = ctx->p;
    struct chrome c = {.out = out, .p = p, .names = rp_export_names(p)};
    int rc = RP_ENOMEM;

    pthread_once(&frac_once, frac_init);
    if (!c.names || (rc = make_tails(&c)) < 0 ||
        (rc = rp_clockmap_profile(&c.cm, p, ctx->input, rp_export_param(ctx, "offsets"), ctx->err,
                                  ctx->errsz)) < 0)
        goto out;
    fprintf(out,
            "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"rankprof\","
            "\"ns_per_tick\":%.9g},\n\"traceEvents\":[\n",
            p->ns_per_tick);
    fprintf(out, "{\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":",
            p->pid);
    rp_export_put_json(out, rp_export_title(ctx));
    fputs("}}", out);
    for (uint32_t i = 1; i < p->n_procs; i++) { /* a run's other processes: by their files */
        uint32_t k = 0;
        while (k < i && p->procs[k].pid != p->procs[i].pid)
            k++;
        if (k < i)
            continue; /* a pid's later image (exec): one track */
        fprintf(out,
                ",\n{\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"name\":\"process_name\",\"args\":{"
                "\"name\":",
                p->procs[i].pid);
        const char *file = p->procs[i].file ? p->procs[i].file : "";
        const char *b = strrchr(file, '/');
        rp_export_put_json(out, b ? b + 1 : file);
        fputs("}}", out);
    }
    for (uint32_t i = 0; i < p->n_threads; i++) {
        const struct rp_thread *t = &p->threads[i];
        fprintf(
            out,
            ",\n{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":",
            t->pid ? t->pid : p->pid, t->tid);
        /* the events' "tid" is the stream id: a reused kernel tid (format 1.3)
         * is another thread, named with its generation */
        char nb[64], tb[24];
        if (rp_tid_gen(t->tid))
            snprintf(nb, sizeof(nb), "%s (tid %s)", t->name && t->name[0] ? t->name : "thread",
                     rp_tid_str(t->tid, tb, sizeof(tb)));
        else
            snprintf(nb, sizeof(nb), "%s", t->name && t->name[0] ? t->name : "");
        if (nb[0])
            rp_export_put_json(out, nb);
        else
            fprintf(out, "\"thread %u\"", t->tid);
        fputs("}}", out);
    }
    if (rp_tlpar_usable(ctx)) {
        static const struct rp_tlpar_ops tops = {.tl = &ops,
                                                 .open = enc_open,
                                                 .start = enc_start,
                                                 .finish = enc_finish,
                                                 .close = enc_close};
        rc = rp_tlpar_run(out, ctx, &tops, &c);
        fputs("\n]}\n", out);
        goto out;
    }
    if (fflush(out) != 0) { /* the pool's threads write after the head */
        rc = RP_EIO;
        goto out;
    }
    if (!(c.pool = rp_xpool_open(out, rp_xpool_workers(), BATCH, fmt_batch, &c))) {
        rc = RP_ENOMEM;
        goto out;
    }
    c.batch = rp_xpool_batch(c.pool, &c.capbatch);
    rp_clockmap_fast_init(&c.cm, &c.cmf);
    rc = rp_export_timeline(ctx, &ops, &c);
    int prc = rp_xpool_submit(c.pool, c.nbatch);
    c.nbatch = 0;
    if (rc == 0)
        rc = prc;
    prc = rp_xpool_close(c.pool);
    c.pool = NULL;
    if (rc == 0)
        rc = prc;
    fputs("\n]}\n", out);
out:
    rp_xpool_close(c.pool);
    free(c.tailbuf);
    free(c.tails);
    free(c.tail_len);
    rp_export_names_free(p, c.names);
    rp_clockmap_free(&c.cm);
    return rc;
}

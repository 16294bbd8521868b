// SPDX-License-Identifier: MIT
/*
 * export_chrome.c - the Chrome trace event format (JSON), read by
 * chrome://tracing, ui.perfetto.dev, Perfetto's trace_processor and
 * speedscope.
 *
 * Streams: one line per event as the timeline (export_timeline.c) hands
 * them out.  Spans are "B"/"E" pairs on their thread (cat = the span kind),
 * instants are "i" with thread scope, counters "C" (per process, as the
 * format wants), losses an instant "LOST" with the count, the recorder's
 * pauses a slice "[recorder]" (cat "rankprof") in the innermost span.  Timestamps are
 * microseconds since the first event, with nanosecond decimals.  Process
 * and thread names are "M" metadata events, first.  The stream is written
 * by this thread only: the per-event writes skip stdio's lock.
 */
#define _GNU_SOURCE /* open_memstream */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <stdlib.h>

#include "common/error.h"
#include "report/clockmap.h"
#include "report/export.h"
#include "report/util.h"
#include "trace/format.h"

struct chrome {
    FILE *out;
    const struct rp_profile *p;
    char **names;
    char **tails;     /* per id: ,"name":"...","cat":"..." (JSON-escaped once) */
    size_t *tail_len; /* their lengths */
    struct {
        uint32_t tid;
        unsigned len;
        char s[48]; /* ,"pid":P,"tid":T */
    } th[8];        /* a small cache of thread prefixes, round robin */
    unsigned nth, next;
    uint64_t holds;        /* lock holds written: their async ids */
    struct rp_clockmap cm; /* the run's one time axis (clockmap.h) */
};

/* Writes v in decimal ending at end; returns where it starts. */
static char *u64_dec(char *end, uint64_t v)
{
    do
        *--end = (char)('0' + v % 10);
    while (v /= 10);
    return end;
}

/* An event's bytes, gathered for one write. */
struct line {
    size_t n;
    char b[256];
};

/* Adds n bytes at s to l (writing what l holds first when they do not fit). */
static inline void line_put(struct chrome *c, struct line *l, const char *s, size_t n)
{
    if (l->n + n > sizeof(l->b)) {
        fwrite_unlocked(l->b, 1, l->n, c->out);
        l->n = 0;
        if (n > sizeof(l->b)) {
            fwrite_unlocked(s, 1, n, c->out);
            return;
        }
    }
    memcpy(l->b + l->n, s, n);
    l->n += n;
}

/* Writes what l holds.  Write errors are left for ferror(). */
static inline void line_out(struct chrome *c, struct line *l)
{
    fwrite_unlocked(l->b, 1, l->n, c->out);
    l->n = 0;
}

/* ,"pid":P,"tid":T for tid, from a small cache (its length in *len).
 * Cannot fail. */
static const char *thread_part(struct chrome *c, uint32_t tid, size_t *len)
{
    for (unsigned i = 0; i < c->nth; i++)
        if (c->th[i].tid == tid) {
            *len = c->th[i].len;
            return c->th[i].s;
        }
    unsigned i = c->nth < 8 ? c->nth++ : (c->next++ & 7);
    c->th[i].tid = tid;
    snprintf(c->th[i].s, sizeof(c->th[i].s), ",\"pid\":%u,\"tid\":%u", rp_export_pid(c->p, tid),
             tid);
    *len = c->th[i].len = (unsigned)strlen(c->th[i].s);
    return c->th[i].s;
}

/*
 * Starts an event in l: phase, timestamp (us with ns decimals), pid and
 * tid.  This runs per event, so no printf: the time is formatted by hand
 * and the rest are strings made once.
 */
static void head(struct chrome *c, struct line *l, char ph, uint32_t tid, uint64_t ticks)
{
    char buf[64], *end = buf + sizeof(buf), *q;
    double v = rp_clockmap_ns(&c->cm, ticks);
    uint64_t ns = v < 1.8e19 ? (uint64_t)(v + 0.5) : 0;
    size_t tn;

    q = u64_dec(end, ns % 1000 + 1000); /* three digits, zero-padded, after a '1' */
    *q = '.';
    q = u64_dec(q, ns / 1000);
    char pre[] = ",\n{\"ph\":\"?\",\"ts\":";
    pre[9] = ph;
    l->n = 0;
    line_put(c, l, pre, sizeof(pre) - 1);
    line_put(c, l, q, (size_t)(end - q));
    const char *t = thread_part(c, tid, &tn);
    line_put(c, l, t, tn);
}

/* Writes an event's start with ,"name":...,"cat":... of id (for the rare
 * events, which go on with fprintf).  Write errors are left for ferror(). */
static void head_name(struct chrome *c, char ph, uint32_t tid, uint64_t ticks, uint32_t id)
{
    struct line l;
    head(c, &l, ph, tid, ticks);
    line_put(c, &l, c->tails[id], c->tail_len[id]);
    line_out(c, &l);
}

/* The per-id name and category strings.  Returns 0 or RP_ENOMEM. */
static int make_tails(struct chrome *c)
{
    const struct rp_profile *p = c->p;
    if (!(c->tails = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*c->tails))) ||
        !(c->tail_len = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*c->tail_len))))
        return RP_ENOMEM;
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        size_t len;
        FILE *m = open_memstream(&c->tails[i], &len);
        if (!m)
            return RP_ENOMEM;
        fputs_unlocked(",\"name\":", m);
        rp_export_put_json(m, c->names[i]);
        fprintf(m, ",\"cat\":\"%s\"", rp_export_cat(p->nodes[i].kind));
        if (fclose(m) != 0)
            return RP_ENOMEM;
        c->tail_len[i] = len;
    }
    return 0;
}

/*
 * The timeline callbacks (export.h): one JSON event each.  They return 0
 * (on_begin: RP_EIO once the stream has failed, to stop early); write
 * errors are otherwise left for the caller's ferror().
 */
static int on_begin(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks)
{
    struct chrome *c = cookie;
    struct line l;
    head(c, &l, 'B', tid, ticks);
    line_put(c, &l, c->tails[id], c->tail_len[id]);
    line_put(c, &l, "}", 1);
    line_out(c, &l);
    return ferror_unlocked(c->out) ? RP_EIO : 0;
}

static int on_end(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg,
                  const char *why)
{
    struct chrome *c = cookie;
    struct line l;
    head(c, &l, 'E', tid, ticks);
    if (!arg && !why) {
        line_put(c, &l, "}", 1);
        line_out(c, &l);
        return 0;
    }
    line_out(c, &l);
    if (arg || why) {
        fputs_unlocked(",\"args\":{", c->out);
        if (arg)
            fprintf(c->out, "\"arg\":%" PRIu64 "%s", arg, why ? "," : "");
        if (why)
            fprintf(c->out, "\"rankprof\":\"%s\"", why);
        fputc_unlocked('}', c->out);
    }
    fputc_unlocked('}', c->out);
    (void)id;
    return 0;
}

/*
 * A lock hold that is an interval (format 1.3): an async slice, "b" and "e"
 * with an id of its own, so that overlapping holds (hand-over-hand) and
 * holds that outlive the function that took them do not break the nesting
 * of the thread's B/E slices.
 */
static int on_hold(void *cookie, uint32_t tid, uint32_t id, uint64_t start, uint64_t end,
                   const char *why)
{
    struct chrome *c = cookie;
    uint64_t n = ++c->holds;
    head_name(c, 'b', tid, start, id);
    fprintf(c->out, ",\"id\":%" PRIu64 "}", n);
    head_name(c, 'e', tid, end, id);
    fprintf(c->out, ",\"id\":%" PRIu64, n);
    if (why)
        fprintf(c->out, ",\"args\":{\"rankprof\":\"%s\"}", why);
    fputc('}', c->out);
    return ferror(c->out) ? RP_EIO : 0;
}

static int on_instant(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg)
{
    struct chrome *c = cookie;
    head_name(c, 'i', tid, ticks, id);
    fprintf(c->out, ",\"s\":\"t\",\"args\":{\"arg\":%" PRIu64 "}}", arg);
    return 0;
}

static int on_counter(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, int64_t v)
{
    struct chrome *c = cookie;
    head_name(c, 'C', tid, ticks, id);
    fprintf(c->out, ",\"args\":{\"value\":%" PRId64 "}}", v);
    return 0;
}

/* The recorder's own time (a PAUSE): a slice "[recorder]" of category
 * "rankprof", inside the thread's innermost open slice. */
static int on_pause(void *cookie, uint32_t tid, uint64_t start, uint64_t end)
{
    struct chrome *c = cookie;
    static const char tail[] = ",\"name\":\"" RP_EXPORT_RECORDER "\",\"cat\":\"rankprof\"}";
    struct line l;
    head(c, &l, 'B', tid, start);
    line_put(c, &l, tail, sizeof(tail) - 1);
    line_out(c, &l);
    head(c, &l, 'E', tid, end);
    line_put(c, &l, "}", 1);
    line_out(c, &l);
    return ferror_unlocked(c->out) ? RP_EIO : 0;
}

static int on_lost(void *cookie, uint32_t tid, uint64_t ticks, uint64_t count)
{
    struct chrome *c = cookie;
    struct line l;
    head(c, &l, 'i', tid, ticks);
    line_out(c, &l);
    fprintf(c->out,
            ",\"name\":\"LOST\",\"cat\":\"rankprof\",\"s\":\"t\",\"args\":{\"events\":%" PRIu64
            "}}",
            count);
    return 0;
}

/* A run's file k begins: its ticks follow.  Cannot fail. */
static int on_file(void *cookie, uint32_t k)
{
    rp_clockmap_select(&((struct chrome *)cookie)->cm, k);
    return 0;
}

int rp_export_chrome(FILE *out, const struct rp_export_ctx *ctx)
{
    static const struct rp_timeline_ops ops = {.begin = on_begin,
                                               .end = on_end,
                                               .instant = on_instant,
                                               .counter = on_counter,
                                               .lost = on_lost,
                                               .hold = on_hold,
                                               .file = on_file,
                                               .pause = on_pause};
    const struct rp_profile *p = ctx->p;
    struct chrome c = {.out = out, .p = p, .names = rp_export_names(p)};
    int rc = RP_ENOMEM;

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
    rc = rp_export_timeline(ctx, &ops, &c);
    fputs("\n]}\n", out);
out:
    if (c.tails)
        for (uint32_t i = 0; i < p->n_nodes; i++)
            free(c.tails[i]);
    free(c.tails);
    free(c.tail_len);
    rp_export_names_free(p, c.names);
    rp_clockmap_free(&c.cm);
    return rc;
}

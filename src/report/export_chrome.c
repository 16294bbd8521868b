/*
 * export_chrome.c - the Chrome trace event format (JSON), read by
 * chrome://tracing, ui.perfetto.dev, Perfetto's trace_processor and
 * speedscope.
 *
 * Streams: one line per event as the timeline (export_timeline.c) hands
 * them out.  Spans are "B"/"E" pairs on their thread (cat = the span kind),
 * instants are "i" with thread scope, counters "C" (per process, as the
 * format wants), losses an instant "LOST" with the count.  Timestamps are
 * microseconds since the first event, with nanosecond decimals.  Process
 * and thread names are "M" metadata events, first.
 */
#include <inttypes.h>
#include <stdlib.h>

#include "common/error.h"
#include "report/export.h"
#include "report/util.h"

struct chrome {
    FILE *out;
    const struct rp_profile *p;
    char **names;
};

static void head(struct chrome *c, const char *ph, uint32_t tid, uint64_t ticks)
{
    fprintf(c->out, ",\n{\"ph\":\"%s\",\"pid\":%u,\"tid\":%u,\"ts\":%.3f", ph, c->p->pid, tid,
            rp_export_us(c->p, ticks));
}

static void name_cat(struct chrome *c, uint32_t id)
{
    fputs(",\"name\":", c->out);
    rp_export_put_json(c->out, c->names[id]);
    fprintf(c->out, ",\"cat\":\"%s\"", rp_export_cat(c->p->nodes[id].kind));
}

static int on_begin(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks)
{
    struct chrome *c = cookie;
    head(c, "B", tid, ticks);
    name_cat(c, id);
    fputc('}', c->out);
    return ferror(c->out) ? RP_EIO : 0;
}

static int on_end(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg,
                  const char *why)
{
    struct chrome *c = cookie;
    head(c, "E", tid, ticks);
    if (arg || why) {
        fputs(",\"args\":{", c->out);
        if (arg)
            fprintf(c->out, "\"arg\":%" PRIu64 "%s", arg, why ? "," : "");
        if (why)
            fprintf(c->out, "\"rankprof\":\"%s\"", why);
        fputc('}', c->out);
    }
    fputc('}', c->out);
    (void)id;
    return 0;
}

static int on_instant(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg)
{
    struct chrome *c = cookie;
    head(c, "i", tid, ticks);
    name_cat(c, id);
    fprintf(c->out, ",\"s\":\"t\",\"args\":{\"arg\":%" PRIu64 "}}", arg);
    return 0;
}

static int on_counter(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, int64_t v)
{
    struct chrome *c = cookie;
    head(c, "C", tid, ticks);
    name_cat(c, id);
    fprintf(c->out, ",\"args\":{\"value\":%" PRId64 "}}", v);
    return 0;
}

static int on_lost(void *cookie, uint32_t tid, uint64_t ticks, uint64_t count)
{
    struct chrome *c = cookie;
    head(c, "i", tid, ticks);
    fprintf(c->out,
            ",\"name\":\"LOST\",\"cat\":\"rankprof\",\"s\":\"t\",\"args\":{\"events\":%" PRIu64
            "}}",
            count);
    return 0;
}

int rp_export_chrome(FILE *out, const struct rp_export_ctx *ctx)
{
    static const struct rp_timeline_ops ops = {.begin = on_begin,
                                               .end = on_end,
                                               .instant = on_instant,
                                               .counter = on_counter,
                                               .lost = on_lost};
    const struct rp_profile *p = ctx->p;
    struct chrome c = {out, p, rp_export_names(p)};

    if (!c.names)
        return RP_ENOMEM;
    fprintf(out,
            "{\"displayTimeUnit\":\"ns\",\"otherData\":{\"generator\":\"rankprof\","
            "\"ns_per_tick\":%.9g},\n\"traceEvents\":[\n",
            p->ns_per_tick);
    fprintf(out, "{\"ph\":\"M\",\"pid\":%u,\"tid\":0,\"name\":\"process_name\",\"args\":{\"name\":",
            p->pid);
    rp_export_put_json(out, rp_export_title(ctx));
    fputs("}}", out);
    for (uint32_t i = 0; i < p->n_threads; i++) {
        const struct rp_thread *t = &p->threads[i];
        fprintf(
            out,
            ",\n{\"ph\":\"M\",\"pid\":%u,\"tid\":%u,\"name\":\"thread_name\",\"args\":{\"name\":",
            p->pid, t->tid);
        if (t->name && t->name[0])
            rp_export_put_json(out, t->name);
        else
            fprintf(out, "\"thread %u\"", t->tid);
        fputs("}}", out);
    }
    int rc = rp_export_timeline(ctx, &ops, &c);
    fputs("\n]}\n", out);
    rp_export_names_free(p, c.names);
    return rc;
}

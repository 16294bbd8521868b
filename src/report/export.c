// SPDX-License-Identifier: MIT
/*
 * export.c - the table of export formats and the helpers they share.
 *
 * One line per format.  Keep the table sorted the way `rankprof export
 * --help` should list it: the report's own formats first, then timelines,
 * then aggregated views, then the page that holds them all.
 */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "report/export.h"
#include "report/util.h"
#include "trace/format.h"

const struct rp_export_format rp_export_formats[] = {
    {"json", RP_EXPORT_RANK, "json", "the report of `report --format json` (docs/report-json.md)",
     rp_export_json},
    {"csv", RP_EXPORT_RANK, "csv", "the report's rows, one per node", rp_export_csv},
    {"chrome", RP_EXPORT_PROFILE | RP_EXPORT_WALK | RP_EXPORT_FILTER, "json",
     "Chrome trace event JSON: chrome://tracing, ui.perfetto.dev, speedscope", rp_export_chrome},
    {"perfetto", RP_EXPORT_PROFILE | RP_EXPORT_WALK | RP_EXPORT_FILTER | RP_EXPORT_BINARY,
     "pftrace", "Perfetto's protobuf TrackEvent trace: ui.perfetto.dev, trace_processor",
     rp_export_perfetto},
    {"folded", RP_EXPORT_PROFILE | RP_EXPORT_WALK | RP_EXPORT_FILTER, "folded",
     "call paths with their exclusive ns, for flamegraph.pl and speedscope", rp_export_folded},
    {"flamegraph", RP_EXPORT_PROFILE | RP_EXPORT_WALK | RP_EXPORT_FILTER, "svg",
     "an interactive SVG flame graph", rp_export_flamegraph},
    {"callgrind", RP_EXPORT_PROFILE, "callgrind",
     "callgrind profile: KCachegrind, QCachegrind, callgrind_annotate", rp_export_callgrind},
    {"plantuml", RP_EXPORT_PROFILE, "puml",
     "a PlantUML sequence diagram: threads, locks, devices, timers (docs/sequence.md)",
     rp_export_plantuml},
    {"mermaid", RP_EXPORT_PROFILE, "mmd", "the same sequence diagram in Mermaid",
     rp_export_mermaid},
    {"pprof", RP_EXPORT_PROFILE | RP_EXPORT_WALK | RP_EXPORT_FILTER | RP_EXPORT_BINARY, "pb.gz",
     "pprof's gzipped profile.proto: go tool pprof, pprof web UI", rp_export_pprof},
    {"html", RP_EXPORT_RANK | RP_EXPORT_FILTER, "html",
     "one self-contained page: ranked table, callers/callees, flame graph, sequence",
     rp_export_html},
#ifdef RP_HAVE_OTF2
    {"otf2", RP_EXPORT_PROFILE | RP_EXPORT_DIR, "otf2",
     "an OTF2 archive in the directory -o: Vampir, otf2-print, Score-P tools "
     "(docs/multi-process.md)",
     rp_export_otf2},
#else
    {"otf2", RP_EXPORT_PROFILE | RP_EXPORT_DIR | RP_EXPORT_UNAVAILABLE, "otf2",
     "an OTF2 archive (unavailable: this build has no libotf2)", rp_export_otf2},
#endif
    {NULL, 0, NULL, NULL, NULL},
};

const struct rp_export_format *rp_export_find(const char *name)
{
    for (const struct rp_export_format *f = rp_export_formats; f->name; f++)
        if (!strcmp(f->name, name))
            return f;
    return NULL;
}

const char *rp_export_param(const struct rp_export_ctx *ctx, const char *key)
{
    size_t n = strlen(key);
    const char *v = NULL;
    for (unsigned i = 0; i < ctx->n_params; i++)
        if (!strncmp(ctx->params[i], key, n) && ctx->params[i][n] == '=')
            v = ctx->params[i] + n + 1;
    return v;
}

const char *rp_export_title(const struct rp_export_ctx *ctx)
{
    if (ctx->title)
        return ctx->title;
    if (ctx->p && ctx->p->program && ctx->p->program[0]) {
        const char *s = strrchr(ctx->p->program, '/');
        return s && s[1] ? s + 1 : ctx->p->program;
    }
    return "rankprof";
}

/* A JSON string literal; with script, the characters HTML parses in a
 * <script> element escaped too. */
static void put_json(FILE *out, const char *str, int script)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t len = strlen((const char *)s);

    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        int k = c < 0x80 ? 1 : rp_utf8_seq(s + i, len - i);
        if (c == '"' || c == '\\')
            fprintf(out, "\\%c", c);
        else if (c < 0x20 || c == 0x7f || (script && (c == '<' || c == '>' || c == '&')))
            fprintf(out, "\\u%04x", c);
        else if (k < 0)
            fputs("\\ufffd", out);
        else
            fwrite(s + i, 1, (size_t)k, out);
        i += k < 0 ? (size_t)-k : (size_t)k;
    }
    fputc('"', out);
}

void rp_export_put_json(FILE *out, const char *str)
{
    put_json(out, str, 0);
}

void rp_export_put_js(FILE *out, const char *str)
{
    put_json(out, str, 1);
}

void rp_export_put_markup(FILE *out, const char *str, size_t max, int keep_newlines)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t len = strlen((const char *)s), i = 0;
    int cut = len > max;

    if (cut)
        len = max;
    while (i < len) {
        unsigned char c = s[i];
        int k = c < 0x80 ? 1 : rp_utf8_seq(s + i, len - i);
        if (c == '<')
            fputs("&lt;", out);
        else if (c == '>')
            fputs("&gt;", out);
        else if (c == '&')
            fputs("&amp;", out);
        else if (c == '"')
            fputs("&quot;", out);
        else if (c == '\'')
            fputs("&#39;", out);
        else if ((c < 0x20 && c != '\t' && !(keep_newlines && c == '\n')) || c == 0x7f || k < 0)
            fputs("\xef\xbf\xbd", out);
        else
            fwrite(s + i, 1, (size_t)k, out);
        i += k < 0 ? (size_t)-k : (size_t)k;
    }
    if (cut)
        fputs("..", out);
}

char **rp_export_names(const struct rp_profile *p)
{
    char **names = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*names));
    char buf[512];

    if (!names)
        return NULL;
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        const char *s = rp_node_name(p, &p->nodes[i], buf, sizeof(buf));
        if (!(names[i] = strdup(s))) {
            rp_export_names_free(p, names);
            return NULL;
        }
    }
    return names;
}

void rp_export_names_free(const struct rp_profile *p, char **names)
{
    if (!names)
        return;
    for (uint32_t i = 0; i < p->n_nodes; i++)
        free(names[i]);
    free(names);
}

const char *rp_export_cat(uint8_t kind)
{
    if (kind == RP_KIND_INSTANT)
        return "instant";
    if (kind == RP_KIND_COUNTER)
        return "counter";
    return rp_kind_str(kind);
}

double rp_export_us(const struct rp_profile *p, uint64_t ticks)
{
    return ticks > p->first_tick ? (double)(ticks - p->first_tick) * p->ns_per_tick / 1e3 : 0;
}

uint32_t rp_export_pid(const struct rp_profile *p, uint32_t tid)
{
    for (uint32_t i = 0; i < p->n_threads; i++)
        if (p->threads[i].tid == tid && p->threads[i].pid)
            return p->threads[i].pid;
    return p->pid;
}

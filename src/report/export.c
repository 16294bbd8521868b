/*
 * export.c - the table of export formats and the helpers they share.
 *
 * One line per format.  Keep the table sorted the way `rankprof export
 * --help` should list it: the report's own formats first, then timelines,
 * then aggregated views, then the page that holds them all.
 */
#include <string.h>

#include "report/export.h"

const struct rp_export_format rp_export_formats[] = {
    {"json", RP_EXPORT_RANK, "json", "the report of DESIGN §9 (docs/report-json.md)",
     rp_export_json},
    {"csv", RP_EXPORT_RANK, "csv", "the report's rows, one per node", rp_export_csv},
    {"folded", RP_EXPORT_PROFILE, "folded",
     "call paths with their exclusive ns, for flamegraph.pl and speedscope", rp_export_folded},
    {"flamegraph", RP_EXPORT_PROFILE, "svg", "an interactive SVG flame graph",
     rp_export_flamegraph},
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

// SPDX-License-Identifier: MIT
/*
 * export_callgrind.c - the callgrind profile format, for KCachegrind,
 * QCachegrind and callgrind_annotate (valgrind's docs/cl-format.html).
 *
 * One cost type, "Time", in nanoseconds.  Per function (every span kind: a
 * lock wait is a "function" too, so its cost shows where it is waited for):
 *
 *   fl=(3) /src/calltree.c        the source file, when symbols gave one
 *   fn=(5) a                      a's own line, with its exclusive time
 *   58 61281
 *   cfl=(3)                       per callee: its file, name, the calls
 *   cfn=(4) b                     and their inclusive time (every
 *   calls=6 50                    activation, as the edge profile keeps it)
 *   58 382201
 *
 * Names and files are compressed: "(id) name" the first time, "(id)"
 * after; an unknown file is "???", as valgrind writes it.  Position is the function's first line
 * (the trace does not hold call sites); 0 when unknown.  The summary is the sum of the exclusive
 * costs printed, so it equals what the tools add up.  The output is built
 * from the flat and edge profiles: memory by functions and edges.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "report/export.h"
#include "report/util.h"
#include "trace/format.h"

struct cg {
    FILE *out;
    const struct rp_profile *p;
    char **names;
    uint8_t *fn_seen;  /* per node: its "(id) name" was written */
    char **files;      /* distinct file names, index = compressed id - 1 */
    uint32_t *file_of; /* per node: compressed file id ("???" when unknown) */
    uint32_t nfiles;
};

/* Names may hold newlines (points are user strings): the format is line
 * based, so they become spaces. */
static void put_line_safe(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == '\n' || *s == '\r' ? ' ' : *s, out);
}

/* Gives every distinct file a compressed id.  Returns 0 or RP_ENOMEM. */
static int index_files(struct cg *g)
{
    const struct rp_profile *p = g->p;
    if (!(g->file_of = calloc(p->n_nodes, sizeof(*g->file_of))) ||
        !(g->files = calloc(p->n_nodes, sizeof(*g->files))))
        return RP_ENOMEM;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const char *f = p->nodes[i].file;
        if (!f || !f[0])
            f = "???"; /* what valgrind writes for an unknown file */
        uint32_t j = 0;
        while (j < g->nfiles && strcmp(g->files[j], f))
            j++;
        if (j == g->nfiles)
            g->files[g->nfiles++] = (char *)f;
        g->file_of[i] = j + 1;
    }
    return 0;
}

/* "fl=" / "cfl=" line for node i; the name only the first time. */
static void put_file(struct cg *g, const char *key, uint32_t i, uint8_t *file_seen)
{
    uint32_t f = g->file_of[i];
    fprintf(g->out, "%s=(%u)", key, f);
    if (!file_seen[f]) {
        fputc(' ', g->out);
        put_line_safe(g->out, g->files[f - 1]);
        file_seen[f] = 1;
    }
    fputc('\n', g->out);
}

/* "fn=" / "cfn=" line for node i; the name only the first time. */
static void put_fn(struct cg *g, const char *key, uint32_t i)
{
    fprintf(g->out, "%s=(%u)", key, i);
    if (!g->fn_seen[i]) {
        fputc(' ', g->out);
        put_line_safe(g->out, g->names[i]);
        g->fn_seen[i] = 1;
    }
    fputc('\n', g->out);
}

/* qsort: edges by caller, then callee. */
static int by_caller(const void *a, const void *b)
{
    const struct rp_edge *x = *(const struct rp_edge *const *)a;
    const struct rp_edge *y = *(const struct rp_edge *const *)b;
    if (x->caller != y->caller)
        return x->caller < y->caller ? -1 : 1;
    return (x->callee > y->callee) - (x->callee < y->callee);
}

/* The whole file.  Returns 0 or RP_ENOMEM; write errors are left for ferror(). */
static int write_all(struct cg *g, const struct rp_export_ctx *ctx)
{
    const struct rp_profile *p = g->p;
    const struct rp_edge **edges = malloc((p->n_edges + 1) * sizeof(*edges));
    uint8_t *file_seen = calloc(g->nfiles + 1, 1);
    uint64_t summary = 0;

    if (!edges || !file_seen) {
        free(edges);
        free(file_seen);
        return RP_ENOMEM;
    }
    for (uint32_t i = 0; i < p->n_edges; i++)
        edges[i] = &p->edges[i];
    qsort(edges, p->n_edges, sizeof(*edges), by_caller);
    for (uint32_t i = 1; i < p->n_nodes; i++)
        summary += p->nodes[i].calls ? rp_ticks_ns(p, p->nodes[i].excl) : 0;

    fprintf(g->out, "# callgrind format\nversion: 1\ncreator: rankprof\npid: %u\ncmd: ", p->pid);
    put_line_safe(g->out, rp_export_title(ctx));
    for (size_t k = 0, first = 1; k < p->argv_len; k += strlen(p->argv + k) + 1, first = 0)
        if (!first) {
            fputc(' ', g->out);
            put_line_safe(g->out, p->argv + k);
        }
    fprintf(g->out,
            "\npositions: line\nevents: Time\n"
            "summary: %" PRIu64 "\n",
            summary);

    uint32_t e = 0;
    while (e < p->n_edges && edges[e]->caller == 0)
        e++; /* calls from <root> have no caller to list them under */
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const struct rp_node *n = &p->nodes[i];
        if (n->kind == RP_KIND_INSTANT || n->kind == RP_KIND_COUNTER ||
            (!n->calls && (e == p->n_edges || edges[e]->caller != i)))
            continue;
        fputc('\n', g->out);
        put_file(g, "fl", i, file_seen);
        put_fn(g, "fn", i);
        fprintf(g->out, "%u %" PRIu64 "\n", n->line, n->calls ? rp_ticks_ns(p, n->excl) : 0);
        for (; e < p->n_edges && edges[e]->caller == i; e++) {
            uint32_t c = edges[e]->callee;
            put_file(g, "cfl", c, file_seen);
            put_fn(g, "cfn", c);
            fprintf(g->out, "calls=%" PRIu64 " %u\n%u %" PRIu64 "\n", edges[e]->calls,
                    p->nodes[c].line, n->line, rp_ticks_ns(p, edges[e]->incl));
        }
    }
    fprintf(g->out, "\ntotals: %" PRIu64 "\n", summary);
    free(edges);
    free(file_seen);
    return 0;
}

int rp_export_callgrind(FILE *out, const struct rp_export_ctx *ctx)
{
    struct cg g = {.out = out, .p = ctx->p};
    int rc = RP_ENOMEM;

    g.names = rp_export_names(ctx->p);
    g.fn_seen = calloc(ctx->p->n_nodes ? ctx->p->n_nodes : 1, 1);
    if (g.names && g.fn_seen && (rc = index_files(&g)) == 0)
        rc = write_all(&g, ctx);
    rp_export_names_free(ctx->p, g.names);
    free(g.fn_seen);
    free(g.files);
    free(g.file_of);
    return rc;
}

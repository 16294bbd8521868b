// SPDX-License-Identifier: MIT
/*
 * export_pprof.c - pprof's profile.proto, gzipped, for `go tool pprof`,
 * pprof's web UI and speedscope (github.com/google/pprof, proto/
 * profile.proto).
 *
 * A profile of call paths (analyze/cct.h): one Sample per path with calls
 * or exclusive time, its location ids leaf first, two values per sample:
 *
 *   sample_type[0] = calls/count        activations on that path
 *   sample_type[1] = time/nanoseconds   their exclusive time
 *
 * so pprof's "flat" is each function's exclusive time and "cum" its time
 * counting each path once, i.e. its inclusive time without double counting
 * recursion - the report's exclusive_ns and inclusive_ns.  One Function and
 * one Location (id = span id, line = the function's first line) per span
 * id, all in one Mapping, the program.  Strings are interned in the string
 * table: "" first, the fixed strings, the program, per span id its name,
 * then the distinct file names.
 *
 * Profile is a message whose fields may come in any order, so it is
 * written field by field, each encoded in a small buffer and deflated as
 * it comes: memory by paths and functions, not by trace length.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "analyze/cct.h"
#include "analyze/merge.h"
#include "common/error.h"
#include "report/export.h"
#include "report/export_pb.h"
#include "report/util.h"
#include "trace/format.h"

enum { /* Profile */
       P_SAMPLE_TYPE = 1,
       P_SAMPLE = 2,
       P_MAPPING = 3,
       P_LOCATION = 4,
       P_FUNCTION = 5,
       P_STRING = 6,
       P_DURATION = 10,
       P_PERIOD_TYPE = 11,
       P_PERIOD = 12,
       P_COMMENT = 13,
       P_DEFAULT_TYPE = 14,
       VT_TYPE = 1,
       VT_UNIT = 2,
       S_LOCATION = 1,
       S_VALUE = 2,
       M_ID = 1,
       M_FILENAME = 5,
       M_HAS_FUNCTIONS = 7,
       M_HAS_FILENAMES = 8,
       M_HAS_LINES = 9,
       L_ID = 1,
       L_MAPPING = 2,
       L_ADDRESS = 3,
       L_LINE = 4,
       LN_FUNCTION = 1,
       LN_LINE = 2,
       F_ID = 1,
       F_NAME = 2,
       F_SYSTEM_NAME = 3,
       F_FILENAME = 4,
       F_START_LINE = 5,
};

/* The fixed strings, at these indices of the string table. */
enum { S_EMPTY, S_CALLS, S_COUNT, S_TIME, S_NS, S_COMMENT, S_PROGRAM, S_FIXED };
static const char *const fixed[S_PROGRAM] = {
    "",     "calls",       "count",
    "time", "nanoseconds", "recorded by rankprof; time = exclusive ns per path"};

struct pp {
    z_stream z;
    FILE *out;
    uint8_t zbuf[1 << 15];
    struct pb pb;
    int zerr;
};

/* Deflates pb's bytes (flush: Z_FINISH at the end).  RP_EIO / RP_ENOMEM. */
static int pp_flush(struct pp *g, int flush)
{
    if (g->pb.bad)
        return RP_ENOMEM;
    g->z.next_in = g->pb.b;
    g->z.avail_in = (uInt)g->pb.n;
    do {
        g->z.next_out = g->zbuf;
        g->z.avail_out = sizeof(g->zbuf);
        int zr = deflate(&g->z, flush);
        if (zr == Z_STREAM_ERROR)
            return RP_EIO;
        size_t have = sizeof(g->zbuf) - g->z.avail_out;
        if (have && fwrite(g->zbuf, 1, have, g->out) != have)
            return RP_EIO;
    } while (g->z.avail_out == 0 || (flush == Z_FINISH && g->z.avail_in));
    pb_reset(&g->pb);
    return 0;
}

/* Writes the field when the buffer has grown; the end flushes the rest. */
static int pp_maybe_flush(struct pp *g)
{
    return g->pb.n >= 16384 ? pp_flush(g, Z_NO_FLUSH) : 0;
}

/* A ValueType {type, unit} (string indices) as field `field`. */
static void value_type(struct pb *pb, unsigned field, int64_t type, int64_t unit)
{
    pb_open(pb, field);
    pb_uint(pb, VT_TYPE, (uint64_t)type);
    pb_uint(pb, VT_UNIT, (uint64_t)unit);
    pb_close(pb);
}

/* String table: the fixed strings, one name per span id, then the files.
 * file_str[i] is node i's file's index (0 = none).  Returns 0 or a code. */
static int strings(struct pp *g, const struct rp_profile *p, char **names, uint64_t *file_str)
{
    uint64_t next = S_FIXED + p->n_nodes;
    for (unsigned i = 0; i < S_PROGRAM; i++)
        pb_str(&g->pb, P_STRING, fixed[i]);
    pb_str(&g->pb, P_STRING, p->program ? p->program : "");
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        pb_str(&g->pb, P_STRING, names[i]);
        if (pp_maybe_flush(g) < 0)
            return RP_EIO;
    }
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const char *f = p->nodes[i].file;
        if (!f || !f[0])
            continue;
        uint32_t j = 1;
        while (j < i && !(p->nodes[j].file && !strcmp(p->nodes[j].file, f)))
            j++;
        if (j < i) {
            file_str[i] = file_str[j];
            continue;
        }
        file_str[i] = next++;
        pb_str(&g->pb, P_STRING, f);
        if (pp_maybe_flush(g) < 0)
            return RP_EIO;
    }
    return 0;
}

/*
 * The program's mapping, already symbolized (has_functions: pprof must not
 * look the addresses up again), then one function and one location per
 * span id.
 */
static int functions(struct pp *g, const struct rp_profile *p, const uint64_t *file_str)
{
    pb_open(&g->pb, P_MAPPING);
    pb_uint(&g->pb, M_ID, 1);
    pb_uint(&g->pb, M_FILENAME, S_PROGRAM);
    pb_uint(&g->pb, M_HAS_FUNCTIONS, 1);
    pb_uint(&g->pb, M_HAS_FILENAMES, 1);
    pb_uint(&g->pb, M_HAS_LINES, 1);
    pb_close(&g->pb);
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const struct rp_node *n = &p->nodes[i];
        if (n->kind == RP_KIND_INSTANT || n->kind == RP_KIND_COUNTER)
            continue; /* not spans; every span kind (wait too) is a frame */
        pb_open(&g->pb, P_FUNCTION);
        pb_uint(&g->pb, F_ID, i);
        pb_uint(&g->pb, F_NAME, S_FIXED + i);
        pb_uint(&g->pb, F_SYSTEM_NAME, S_FIXED + i);
        pb_uint(&g->pb, F_FILENAME, file_str[i]);
        pb_uint(&g->pb, F_START_LINE, n->line);
        pb_close(&g->pb);
        pb_open(&g->pb, P_LOCATION);
        pb_uint(&g->pb, L_ID, i);
        pb_uint(&g->pb, L_MAPPING, 1);
        if (n->kind == RP_KIND_FUNC && n->key)
            pb_uint(&g->pb, L_ADDRESS, n->key);
        pb_open(&g->pb, L_LINE);
        pb_uint(&g->pb, LN_FUNCTION, i);
        pb_uint(&g->pb, LN_LINE, n->line);
        pb_close(&g->pb);
        pb_close(&g->pb);
        if (pp_maybe_flush(g) < 0)
            return RP_EIO;
    }
    return 0;
}

/* One sample per path that has calls or time: locations leaf first. */
static int samples(struct pp *g, const struct rp_profile *p, const struct rp_cct *t)
{
    for (uint32_t i = 1; i < t->n; i++) {
        const struct rp_cct_node *n = &t->nodes[i];
        uint64_t ns = rp_ticks_ns(p, n->excl);
        if (!n->calls && !ns)
            continue;
        pb_open(&g->pb, P_SAMPLE);
        pb_open(&g->pb, S_LOCATION); /* packed */
        for (uint32_t j = i; j; j = t->nodes[j].parent)
            pb_varint(&g->pb, t->nodes[j].id);
        pb_close(&g->pb);
        pb_open(&g->pb, S_VALUE);
        pb_varint(&g->pb, n->calls);
        pb_varint(&g->pb, ns);
        pb_close(&g->pb);
        pb_close(&g->pb);
        if (pp_maybe_flush(g) < 0)
            return RP_EIO;
    }
    return 0;
}

int rp_export_pprof(FILE *out, const struct rp_export_ctx *ctx)
{
    const struct rp_profile *p = ctx->p;
    struct rp_cct t = {0};
    struct pp *g = calloc(1, sizeof(*g));
    char **names = rp_export_names(p);
    uint64_t *file_str = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*file_str));
    int rc = RP_ENOMEM;

    if (!g || !names || !file_str)
        goto out;
    g->out = out;
    /* windowBits 15 + 16: a gzip wrapper, as pprof files are */
    if (deflateInit2(&g->z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        goto out;
    g->zerr = 1; /* deflateEnd needed */
    t.filter = ctx->filter;
    if ((rc = rp_profile_merged(p) /* a run's files */
                  ? rp_cct_build_set(&t, ctx->replay, p, 0, ctx->progress, ctx->err, ctx->errsz)
                  : rp_cct_build(&t, ctx->input, ctx->replay, p, 0, ctx->progress, ctx->err,
                                 ctx->errsz)) < 0 ||
        (rc = rp_cct_frames_check(&t, "pprof", ctx->err, ctx->errsz)) < 0)
        goto out;
    value_type(&g->pb, P_SAMPLE_TYPE, S_CALLS, S_COUNT);
    value_type(&g->pb, P_SAMPLE_TYPE, S_TIME, S_NS);
    value_type(&g->pb, P_PERIOD_TYPE, S_TIME, S_NS);
    pb_uint(&g->pb, P_PERIOD, 1);
    pb_uint(&g->pb, P_DEFAULT_TYPE, S_TIME);
    pb_uint(&g->pb, P_COMMENT, S_COMMENT);
    pb_uint(&g->pb, P_DURATION, rp_ticks_ns(p, p->last_tick - p->first_tick));
    if ((rc = strings(g, p, names, file_str)) < 0 || (rc = functions(g, p, file_str)) < 0 ||
        (rc = samples(g, p, &t)) < 0)
        goto out;
    rc = pp_flush(g, Z_FINISH);
out:
    if (g && g->zerr)
        deflateEnd(&g->z);
    if (g)
        free(g->pb.b);
    free(g);
    free(file_str);
    rp_export_names_free(p, names);
    rp_cct_free(&t);
    return rc;
}

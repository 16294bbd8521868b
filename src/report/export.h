// SPDX-License-Identifier: MIT
/*
 * export.h - `rankprof export`: one entry per output format, like the ops
 * tables of uftrace's cmds/dump.c.  A format says what it needs (a loaded
 * profile, a ranked one) and gets one call that writes the whole output.
 *
 * Adding a format: write `int rp_export_NAME(FILE *, const struct
 * rp_export_ctx *)` in src/report/export_NAME.c (or beside your generator),
 * declare it below, and add one line to the table in export.c.  The CLI
 * (src/cli/cmd_export.c) and its --help list the formats from the table.
 *
 * How a format streams: the profile (flat + edges, memory by distinct
 * functions) is built first when the format asks for it; formats that need
 * every event (chrome, perfetto) or every call path (folded, flamegraph,
 * pprof) read the trace again with rp_walk_file (src/analyze/walk.h), whose
 * memory is one chunk plus the open spans.
 */
#ifndef RP_REPORT_EXPORT_H
#define RP_REPORT_EXPORT_H

#include <stdio.h>

#include "analyze/cct.h"
#include "analyze/profile.h"
#include "analyze/replay.h"
#include "report/report.h"

/* What a format needs before it runs (rp_export_format.needs). */
enum {
    RP_EXPORT_PROFILE = 1u << 0,     /* replayed and named: ctx->p is set */
    RP_EXPORT_RANK = 1u << 1,        /* also ranked and flagged (implies PROFILE) */
    RP_EXPORT_BINARY = 1u << 2,      /* output is not text: never to a terminal */
    RP_EXPORT_FILTER = 1u << 3,      /* honours ctx->filter (the others refuse one) */
    RP_EXPORT_DIR = 1u << 4,         /* writes the directory ctx->output itself (out is NULL) */
    RP_EXPORT_UNAVAILABLE = 1u << 5, /* not in this build: refused before loading */
    RP_EXPORT_WALK = 1u << 6,        /* walks the events itself (the call-path tree): ctx->p
                                        has names and no statistics (rp_replay_opts.defs_only)
                                        when read from one file */
};

/* Everything a format may use; read-only for the format. */
struct rp_export_ctx {
    const char *input;                   /* the trace file */
    const struct rp_replay_opts *replay; /* force, tid: the same for every pass */
    const struct rp_profile *p;          /* per needs, else NULL */
    const struct rp_report_opts *report; /* sort, limit, ranked/flagged, thresholds */
    const char *title;                   /* from --title, or NULL: the program name */
    int progress;                        /* long passes may report progress on stderr */
    const struct rp_span_filter *filter; /* --depth, --min-duration, --function,
                                            --exclude (cct.h), or NULL: for the formats
                                            with RP_EXPORT_FILTER */
    const char *const *params;           /* -O KEY=VALUE strings, n_params of them */
    unsigned n_params;
    const char *output; /* -o, or NULL: for the formats with RP_EXPORT_DIR */
    char *err;          /* a format's message on failure, errsz bytes */
    size_t errsz;
};

struct rp_export_format {
    const char *name;
    unsigned needs;  /* RP_EXPORT_* */
    const char *ext; /* usual file suffix, for the docs and the help */
    const char *help;
    /*
     * Writes the whole export to out.  Returns 0, or a negative RP_E* code
     * with a message in ctx->err (which may stay empty for RP_EIO/RP_ENOMEM:
     * the CLI then prints the code's meaning).  Write errors may be left for
     * the caller's ferror()/fclose() check.
     */
    int (*run)(FILE *out, const struct rp_export_ctx *ctx);
};

/* The table, ending with an entry whose name is NULL. */
extern const struct rp_export_format rp_export_formats[];

/* The format called name, or NULL. */
const struct rp_export_format *rp_export_find(const char *name);

/*
 * The value of -O key=VALUE (the last one given), or NULL when absent.
 * Cannot fail.
 */
const char *rp_export_param(const struct rp_export_ctx *ctx, const char *key);

/*
 * The title of an export: ctx->title, else the program's base name, else
 * "rankprof".  Cannot fail.
 */
const char *rp_export_title(const struct rp_export_ctx *ctx);

/* Writes str as a JSON string literal (strictly escaped, invalid UTF-8 as
 * U+FFFD).  Write errors are left for ferror(). */
void rp_export_put_json(FILE *out, const char *str);

/* rp_export_put_json, with '<', '>' and '&' as \u escapes too: safe inside
 * an HTML <script> element. */
void rp_export_put_js(FILE *out, const char *str);

/*
 * Writes at most max bytes of str (then "..") escaped for HTML and XML text
 * and attribute values: < > & " ' as entities; invalid UTF-8 and control
 * characters as U+FFFD, except tab, and newline when keep_newlines.  Write
 * errors are left for ferror().
 */
void rp_export_put_markup(FILE *out, const char *str, size_t max, int keep_newlines);

/*
 * Every node's display name (rp_node_name), strdup'd, indexed by id: one
 * array so that per-event formats do not format names per event.  NULL when
 * out of memory.  Free with rp_export_names_free.
 */
char **rp_export_names(const struct rp_profile *p);
void rp_export_names_free(const struct rp_profile *p, char **names);

/* The category of a kind in timelines: rp_kind_str's, "instant", "counter". */
const char *rp_export_cat(uint8_t kind);

/* The process of thread tid: its rp_thread.pid in a profile merged from a
 * run's files, else the profile's pid.  Cannot fail. */
uint32_t rp_export_pid(const struct rp_profile *p, uint32_t tid);

/* Microseconds from the run's first event to ticks (0 before it). */
double rp_export_us(const struct rp_profile *p, uint64_t ticks);

/*
 * Timelines (chrome, perfetto): the events of ctx's trace as matched spans,
 * streamed in file order.  Spans are matched per thread with the rules of
 * replay.c; a span that replay drops without time (lost events) is ended
 * where it was dropped with why = "unclosed", so a viewer still nests it; a
 * span left without its exit ends with why = "unwound" (a longjmp, an
 * exception) or "cut" (its thread or the process ended).  end's arg is
 * the span's last ARG value (io bytes) or 0.  Any callback may be NULL; a
 * negative return stops with it.
 */
struct rp_timeline_ops {
    int (*thread)(void *cookie, uint32_t tid, const char *name);
    int (*begin)(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks);
    int (*end)(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg,
               const char *why);
    int (*instant)(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg);
    int (*counter)(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, int64_t value);
    int (*lost)(void *cookie, uint32_t tid, uint64_t ticks, uint64_t count);
    /* a lock hold [start, end] of thread tid, an interval that need not nest
     * with the spans (format 1.3, docs/locks.md), once it has ended (why:
     * "unclosed" when still held where the replay drops it); without it,
     * such holds are left out of the timeline */
    int (*hold)(void *cookie, uint32_t tid, uint32_t id, uint64_t start, uint64_t end,
                const char *why);
    /* a run's file p->procs[k] begins (a merged profile only): the events
     * that follow are its process's (thread ids may repeat across hosts) */
    int (*file)(void *cookie, uint32_t k);
    /* an ARG given to span id, the innermost open on thread tid (a span may
     * carry several: librankprof-mpi's, format.h rp_mpi_arg; the last is
     * end's arg too), told whether or not a filter keeps the span */
    int (*arg)(void *cookie, uint32_t tid, uint32_t id, uint64_t value);
    /* the recorder's own time on thread tid, [start, end] (a PAUSE: a
     * buffer switch, the thread encoding its buffer or waiting for the writer), nested in the
     * innermost open span; the report takes it out of every span open
     * then, so a span's time there is its slice less the pauses inside
     * it.  Exporters show it as a slice named RP_EXPORT_RECORDER. */
    int (*pause)(void *cookie, uint32_t tid, uint64_t start, uint64_t end);
    /* a whole span [start, end] once it has ended (or was dropped: why
     * "unclosed"), with end's arg and why, called instead of end: for a
     * format that writes a span as one event (begin may then be NULL; a
     * filter still decides which spans are told) */
    int (*span)(void *cookie, uint32_t tid, uint32_t id, uint64_t start, uint64_t end, uint64_t arg,
                const char *why);
};

/* The name of the recorder's own slices in timelines (rp_timeline_ops.pause). */
#define RP_EXPORT_RECORDER "[recorder]"

/* Runs ops over ctx's trace (ctx->p must be set).  Returns 0, RP_ENOMEM, a
 * reader's code with ctx->err set, or a callback's code. */
int rp_export_timeline(const struct rp_export_ctx *ctx, const struct rp_timeline_ops *ops,
                       void *cookie);

/* The formats.  Each follows rp_export_format.run. */
int rp_export_json(FILE *out, const struct rp_export_ctx *ctx);
int rp_export_csv(FILE *out, const struct rp_export_ctx *ctx);
int rp_export_chrome(FILE *out, const struct rp_export_ctx *ctx);
int rp_export_perfetto(FILE *out, const struct rp_export_ctx *ctx);
int rp_export_callgrind(FILE *out, const struct rp_export_ctx *ctx);
int rp_export_pprof(FILE *out, const struct rp_export_ctx *ctx);
int rp_export_html(FILE *out, const struct rp_export_ctx *ctx);

int rp_export_folded(FILE *out, const struct rp_export_ctx *ctx);
int rp_export_flamegraph(FILE *out, const struct rp_export_ctx *ctx);
int rp_export_plantuml(FILE *out, const struct rp_export_ctx *ctx); /* seq.c */
int rp_export_mermaid(FILE *out, const struct rp_export_ctx *ctx);  /* seq.c */
int rp_export_otf2(FILE *out, const struct rp_export_ctx *ctx);     /* RP_EXPORT_DIR */

/*
 * The flame graph's <svg> element; embedded leaves out the XML declaration
 * (for the HTML report).  Fails like a format's run.
 */
int rp_export_flame_svg(FILE *out, const struct rp_export_ctx *ctx, int embedded);

#endif /* RP_REPORT_EXPORT_H */

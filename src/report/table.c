// SPDX-License-Identifier: MIT
/*
 * table.c - the terminal table, `rankprof report`'s default output
 * (docs/design.md §8): a header saying what run this is and how
 * trustworthy it is (lost events, unmatched exits, how the run ended, how
 * the ranking converged),
 * one aligned row per span node in the requested order, then one line per
 * flagged row saying why it was flagged.
 *
 * Rank columns appear only when the profile is ranked and the flags column
 * only when it is flagged: no column ever shows a value that was not
 * computed.  Names and paths may come from untrusted trace files, so control
 * characters and invalid UTF-8 are shown as '?' (never sent to the terminal).
 */
#define _GNU_SOURCE /* qsort_r */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "analyze/chains.h"
#include "common/strblk.h"
#include "common/error.h"
#include "report/names.h"
#include "report/report.h"
#include "report/term.h"
#include "report/util.h"
#include "trace/format.h"

/* room for a name rp_node_name formats into our buffer ("<lock> [hold]") */

#define CELL       32             /* bytes of one formatted numeric cell */
#define NAME_MIN   24             /* never trim a name below this many columns */
#define WHY_NAME   40             /* name column width of the "why" lines, at most */
#define WIDTH_DEF  120            /* line width when $COLUMNS does not say */
#define WIDTH_MIN  40             /* narrower widths are taken as this */
#define NAME_WANT  32             /* columns are left out until the name has this many */
#define ARROW      "\xe2\x86\x92" /* U+2192, between the frames of a chain */
#define ANSI_RESET "\033[0m"

enum col { C_RANK, C_STAND, C_INVOL, C_CALLS, C_TOTAL, C_SELF, C_AVG, C_MAX, C_P95, C_FLAGS, NCOL };

static const char *const col_head[NCOL] = {"rank", "standing", "involved", "calls", "total",
                                           "self", "avg",      "max",      "p95",   "flags"};

/* ANSI colour per flag bit (RP_FLAG_* order), used only when o->color. */
static const char *const flag_color[] = {
    "\033[1;36m", /* DISPATCH: bold cyan */
    "\033[1;31m", /* HOT: bold red */
    "\033[1;33m", /* JITTER: bold yellow */
    "\033[1;35m", /* RATE: bold magenta */
    "\033[31m",   /* CONTENDED: red */
    "\033[33m",   /* BUDGET: yellow */
};

/* A duration in ns with three significant digits and a unit.  Cannot fail. */
static void fmt_dur(char *b, size_t n, double ns)
{
    static const struct {
        double scale;
        const char *unit;
    } u[] = {{1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
    double v;
    const char *unit;

    if (!isfinite(ns) || ns < 0)
        ns = 0;
    if (ns < 999.5) {
        snprintf(b, n, "%.0fns", ns);
        return;
    }
    v = ns / 1e9;
    unit = "s";
    for (size_t i = 0; i < sizeof u / sizeof u[0] - 1; i++) {
        if (ns < 999.5 * u[i].scale) {
            v = ns / u[i].scale;
            unit = u[i].unit;
            break;
        }
    }
    if (v < 9.995)
        snprintf(b, n, "%.2f%s", v, unit);
    else if (v < 99.95)
        snprintf(b, n, "%.1f%s", v, unit);
    else
        snprintf(b, n, "%.0f%s", v, unit);
}

/* A fraction as a percentage; small values get two decimals.  Cannot fail. */
static void fmt_pct(char *b, size_t n, double frac)
{
    double v = isfinite(frac) ? frac * 100 : 0;

    snprintf(b, n, fabs(v) < 9.995 ? "%.2f%%" : "%.1f%%", v);
}

/* Ticks to ns as a double; 0 when not finite. */
static double ns_of(const struct rp_profile *p, double ticks)
{
    double ns = ticks * p->ns_per_tick;
    return isfinite(ns) ? ns : 0;
}

/*
 * The flag names of `flags`, comma-separated, into b (plain text, for
 * width).  Cannot fail; truncates at a flag boundary when b is too small.
 */
static void fmt_flags(char *b, size_t n, uint32_t flags)
{
    size_t len = 0;

    b[0] = '\0';
    for (unsigned bit = 0; bit < 32; bit++) {
        char fb[64];
        if (!(flags & (1u << bit)))
            continue;
        const char *s = rp_flags_str(1u << bit, fb, sizeof fb);
        if (!s || !*s)
            continue;
        int w = snprintf(b + len, n - len, "%s%s", len ? "," : "", s);
        if (w < 0 || (size_t)w >= n - len) {
            b[len] = '\0';
            break;
        }
        len += (size_t)w;
    }
}

/* Prints the flags of one row, coloured, padded to width.  Errors are left
 * for ferror(). */
static void put_flags_color(FILE *out, uint32_t flags, const char *plain, int width)
{
    int first = 1;

    for (unsigned bit = 0; bit < 32; bit++) {
        char fb[64];
        if (!(flags & (1u << bit)))
            continue;
        const char *s = rp_flags_str(1u << bit, fb, sizeof fb);
        if (!s || !*s)
            continue;
        if (!first)
            fputc(',', out);
        if (bit < sizeof flag_color / sizeof flag_color[0])
            fprintf(out, "%s%s%s", flag_color[bit], s, ANSI_RESET);
        else
            fputs(s, out);
        first = 0;
    }
    fprintf(out, "%*s", width - (int)strlen(plain), "");
}

/*
 * The line width to fit: o->width when set, else the terminal's (stdout a
 * terminal), else $COLUMNS when it is sane, else WIDTH_DEF.  Cannot fail.
 */
static size_t line_width(FILE *out, const struct rp_report_opts *o)
{
    const char *c = getenv("COLUMNS");
    struct winsize ws;
    char *end;
    long v;

    if (o->width == RP_WIDTH_WIDE)
        return SIZE_MAX;
    if (o->width)
        return o->width < WIDTH_MIN ? WIDTH_MIN : o->width;
    if (isatty(fileno(out)) && ioctl(fileno(out), TIOCGWINSZ, &ws) == 0 && ws.ws_col >= WIDTH_MIN)
        return ws.ws_col;
    if (!c || !*c)
        return WIDTH_DEF;
    v = strtol(c, &end, 10);
    return (*end || v < WIDTH_MIN || v > 4096) ? WIDTH_DEF : (size_t)v;
}

/* The last path component of path. */
static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* " (file:line)" of a node, made safe, into loc (n bytes); "" when unknown. */
static void fmt_loc(char *loc, size_t n, const struct rp_node *nd)
{
    char raw[512];

    loc[0] = '\0';
    if (!nd->file || !*nd->file)
        return;
    if (nd->line)
        snprintf(raw, sizeof raw, "%s:%" PRIu32, base_name(nd->file), nd->line);
    else
        snprintf(raw, sizeof raw, "%s", base_name(nd->file));
    strcpy(loc, " (");
    rp_term_cat(loc, n - 2, raw, SIZE_MAX);
    strcat(loc, ")");
}

/*
 * The name cell of a row: the longest form of the node's name (names.h, at
 * most shortened to level max) that fits avail columns with its
 * " (file:line)", which is never dropped.  When none fits, the form of
 * level max; with cut its front is then cut ("...sum_dots<...>(...)"),
 * never its end, as long as 16 columns of it stay, else it is left long
 * for the row to wrap.  Cannot fail.
 */
static void fmt_name(char *b, size_t n, const struct rp_profile *p, const struct rp_node *nd,
                     size_t avail, int max, int cut)
{
    char nb[RP_NAME_BUF], form[RP_NAME_BUF], loc[512];
    const char *name = rp_node_name(p, nd, nb, sizeof nb);
    size_t lw;

    b[0] = '\0';
    fmt_loc(loc, sizeof loc, nd);
    lw = rp_term_width(loc);
    /* only a procedure's name is parsed as C++: a lock's or a device's is
     * its own, only ever cut at the front */
    if (nd->kind != RP_KIND_FUNC)
        max = RP_NAME_FULL;
    for (int l = RP_NAME_FULL; l <= max; l++) {
        rp_name_form(name, l, form, sizeof form);
        if (rp_term_width(form) + lw <= avail)
            break;
    }
    if (cut && rp_term_width(form) + lw > avail && avail >= lw + 16)
        rp_term_cat_tail(b, n, form, avail - lw);
    else
        rp_term_cat(b, n, form, SIZE_MAX);
    rp_term_cat(b, n, loc, SIZE_MAX);
}

/*
 * The name cell of chain c's row: "first -> second -> ... -> last (file:line),
 * K frames" with the middle frames left out ("first -> ... -> last") when
 * they do not fit avail.  Cannot fail.
 */
static void fmt_chain(char *b, size_t n, const struct rp_profile *p, const struct rp_chains *ch,
                      uint32_t c, size_t avail)
{
    const uint32_t *m = ch->member + ch->start[c];
    uint32_t k = ch->start[c + 1] - ch->start[c];
    char tail[64], last[1024];

    snprintf(tail, sizeof tail, ", %" PRIu32 " frames", k);
    fmt_name(last, sizeof last, p, &p->nodes[m[k - 1]], avail, RP_NAME_NOTEMPLATE, 1);
    /* from all frames down to first and last only */
    for (uint32_t shown = k; shown >= 2; shown--) {
        b[0] = '\0';
        for (uint32_t i = 0; i + 1 < k; i++) {
            char nb[RP_NAME_BUF], form[RP_NAME_BUF];
            /* the first shown - 2 frames after the first are kept, then "..." */
            if (i && i > shown - 2) {
                if (i == shown - 1)
                    strncat(b, "... " ARROW " ", n - strlen(b) - 1);
                continue;
            }
            rp_name_form(rp_node_name(p, &p->nodes[m[i]], nb, sizeof nb), RP_NAME_NOTEMPLATE, form,
                         sizeof form);
            rp_term_cat(b, n, form, SIZE_MAX);
            strncat(b, " " ARROW " ", n - strlen(b) - 1);
        }
        rp_term_cat(b, n, last, SIZE_MAX);
        strncat(b, tail, n - strlen(b) - 1);
        if (rp_term_width(b) <= avail)
            return;
    }
}

/* Under a run with no end record: what the threads recorded after the
 * writer's last periodic flush is missing, and not in the lost count,
 * which counts the recorder's drops only.  (How long before the record's
 * end each thread stops says nothing: a thread blocked all that time
 * recorded nothing to lose.)  Errors are left for ferror(). */
static void put_unflushed(FILE *out)
{
    fputs("  what the threads recorded after the last periodic flush (every 200 ms by default, "
          "RANKPROF_FLUSH_MS) is missing, not counted as lost\n",
          out);
}

/* The header lines above the table.  Errors are left for ferror(). */
static void put_header(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o)
{
    const char *warn = o->color ? "\033[1;31m" : "", *reset = o->color ? ANSI_RESET : "";
    uint64_t unmatched = p->unmatched_exits, unclosed = p->unclosed;
    char total[CELL], run[CELL], prog[1024] = "";

    rp_term_cat(prog, sizeof prog, p->program && *p->program ? p->program : "(unknown program)",
                SIZE_MAX);
    fmt_dur(total, sizeof total, ns_of(p, (double)p->total));
    fmt_dur(run, sizeof run,
            ns_of(p, p->last_tick > p->first_tick ? (double)(p->last_tick - p->first_tick) : 0));
    fprintf(out, "rankprof: %s", prog);
    if (p->pid)
        fprintf(out, " (pid %" PRIu32 ")", p->pid);
    /* the run's length and, with threads, their summed time (what the
     * shares of the table are of) */
    fprintf(out, "  run %s", run);
    if (p->n_threads > 1)
        fprintf(out, ", threads' time %s", total);
    fprintf(out, "  %" PRIu32 " thread%s  %" PRIu64 " events  %s%" PRIu64 " lost%s\n", p->n_threads,
            p->n_threads == 1 ? "" : "s", p->events, p->lost ? warn : "", p->lost,
            p->lost ? reset : "");
    if (p->n_procs > 1) { /* a run's files, merged (docs/robustness.md) */
        fprintf(out, "processes: %" PRIu32 ", merged:", p->n_procs);
        for (uint32_t i = 0; i < p->n_procs && i < 8; i++) {
            char f[512] = "";
            rp_term_cat(f, sizeof f, p->procs[i].file ? p->procs[i].file : "?", SIZE_MAX);
            fprintf(out, "%s %" PRIu32 " (%s)", i ? "," : "", p->procs[i].pid, f);
        }
        if (p->n_procs > 8)
            fprintf(out, ", and %" PRIu32 " more (rankprof info lists them)", p->n_procs - 8);
        fputs("; --process PID reports one\n", out);
    }
    if (p->lost) {
        fprintf(out, "%sWARNING: the recorder dropped %" PRIu64 " events", warn, p->lost);
        rp_report_lost_why(out, p);
        fprintf(out, "; counts and times below are incomplete%s\n", reset);
    }
    if (unmatched || unclosed)
        fprintf(out,
                "note: %" PRIu64 " unmatched exit%s and %" PRIu64
                " unclosed span%s (dropped at lost events, or lock holds never released) were "
                "counted, not guessed\n",
                unmatched, unmatched == 1 ? "" : "s", unclosed, unclosed == 1 ? "" : "s");
    if (p->running && p->cut && !p->unwound)
        fprintf(out,
                "note: %" PRIu64 " frame%s still open, with their time so far (calls marked *)\n",
                p->cut, p->cut == 1 ? "" : "s");
    else if (p->unwound || p->cut)
        fprintf(out,
                "note: %" PRIu64 " frame%s left without an exit: %" PRIu64
                " unwound (longjmp, exceptions), %" PRIu64
                " open when their thread or the run ended; each ends there, with its time "
                "(calls marked *)\n",
                p->unwound + p->cut, p->unwound + p->cut == 1 ? "" : "s", p->unwound, p->cut);
    /* one "run:" line: how it ended, or that it runs (a live view) */
    int how = 0;
    if (p->running)
        how = 1;
    else if (p->ended && p->snapshot && !(p->end_flags & (RP_END_EXIT | RP_END_SIGNAL)))
        fputs("run: still running at this snapshot (rankprof record --ring); the spans open then "
              "end there\n",
              out);
    else if (!p->ended) {
        fprintf(out,
                "%srun: did not end normally (no end record: crashed, killed or cut short)%s\n",
                warn, reset);
        put_unflushed(out);
    } else if (p->end_flags & RP_END_SIGNAL)
        fprintf(out, "%srun: killed by signal %" PRId32 "%s\n", warn, p->end_status, reset);
    else
        how = 2;
    if (p->fatal_n) { /* where the thread the signal hit was (innermost last) */
        char tb[24], line[2048] = "";
        rp_tid_str(p->fatal_tid, tb, sizeof tb);
        for (uint32_t k = 0; k < p->fatal_n; k++) {
            char nb[RP_NAME_BUF];
            if (k)
                rp_term_cat(line, sizeof line, " -> ", SIZE_MAX);
            rp_term_cat(line, sizeof line,
                        rp_node_name(p, &p->nodes[p->fatal_stack[k]], nb, sizeof nb), 60);
        }
        fprintf(out, "  at the signal, thread %s was in: %s%s%s\n", tb,
                p->fatal_depth > p->fatal_n ? "... " : "", line,
                p->fatal_depth > p->fatal_n ? " (innermost frames)" : "");
    }
    if (how == 1 && p->checkpoint)
        fputs("run: killed, or still running (its recorder's last checkpoint: the statistics as "
              "of then; the calls open then end there)\n",
              out);
    else if (how == 1)
        fputs("run: still running (the statistics so far; the calls open in a waiting thread end "
              "now)\n",
              out);
    else if (how == 2 && rp_profile_status_known(p))
        fprintf(out, "run: ended normally, exit status %" PRId32 "\n", p->end_status);
    else if (how == 2)
        fputs("run: ended normally\n", out);
    if (p->ended && (p->end_flags & RP_END_TIMEOUT))
        fprintf(out, "%swarning: the final flush timed out; some buffers may be missing%s\n", warn,
                reset);
    if (p->filter)
        fprintf(out, "filter: %s (only the spans it keeps: docs/filters.md)\n", p->filter);
    rp_report_comp_line(out, p);
    rp_report_offcpu_line(out, p);
    rp_report_outside_line(out, p);
    rp_report_windows_line(out, p);
    if (o->ranked)
        fprintf(out, "rank: %s weights, alpha %g, %" PRIu32 " iterations, residual %.3g\n",
                rp_weight_name(p->rank.weight), p->rank.alpha, p->rank.iterations,
                p->rank.residual);
}

/*
 * See report.h.  Fails with RP_EINVAL for a NULL argument, RP_ENOMEM when
 * the rows cannot be allocated, RP_EIO when writing fails.
 */
/*
 * Prints a row's name cell and ends the line; a name wider than avail goes
 * on over more lines, each broken at its last space that fits (at avail
 * columns when there is none) and indented by `indent` to the name column.
 * Errors are left for ferror().
 */
static void put_name(FILE *out, const char *name, size_t avail, size_t indent)
{
    const unsigned char *s = (const unsigned char *)name;
    int first = 1, ok;

    while (rp_term_width((const char *)s) > avail) {
        const unsigned char *q = s, *brk = NULL;
        for (size_t w = 0; w < avail && *q; w++) {
            if (*q == ' ' && q != s)
                brk = q;
            q += rp_term_next(q, &ok);
        }
        if (*q == ' ')
            brk = q;
        if (!brk)
            brk = q;
        fprintf(out, "%*s%.*s\n", first ? 0 : (int)indent, "", (int)(brk - s), (const char *)s);
        while (*brk == ' ')
            brk++;
        s = brk;
        first = 0;
    }
    fprintf(out, "%*s%s\n", first ? 0 : (int)indent, "", (const char *)s);
}

/* Whether a row named like row r (same[]) is in another module.  Cannot fail. */
static int other_module(const struct rp_profile *p, const uint32_t *order, char **names,
                        const unsigned char *same, uint32_t n, uint32_t r)
{
    const char *m = p->nodes[order[r]].module;
    for (uint32_t q = 0; q < n; q++) {
        const char *o = p->nodes[order[q]].module;
        if (q != r && same[q] && !strcmp(names[q], names[r]) &&
            (!m || !o || strcmp(base_name(m), base_name(o))))
            return 1;
    }
    return 0;
}

/*
 * Prints s, which starts at column indent, and ends the line; where it
 * would pass column lw it goes on over more lines broken at spaces, each
 * indented to column indent (a word longer than the room is left whole, for
 * the final wrap).  Errors are left for ferror().
 */
static void put_hanging(FILE *out, const char *s, size_t indent, size_t lw)
{
    size_t room = lw > indent + 20 ? lw - indent : SIZE_MAX;

    while (rp_term_width(s) > room) {
        const unsigned char *q = (const unsigned char *)s, *brk = NULL;
        int ok;
        for (size_t w = 0; w <= room && *q; w++) {
            if (*q == ' ')
                brk = q;
            q += rp_term_next(q, &ok);
        }
        if (!brk || brk == (const unsigned char *)s)
            break;
        fprintf(out, "%.*s\n%*s", (int)(brk - (const unsigned char *)s), s, (int)indent, "");
        s = (const char *)brk + 1;
    }
    fprintf(out, "%s\n", s);
}

/* The rows' names are kept in blocks of NAMES_BLOCK bytes (strblk.h), not
 * a malloc block each (32 bytes at least, for names of a few characters:
 * most rows of a profile with very many). */
#define NAMES_BLOCK ((size_t)64 << 10)

/* Points *slot at a copy of s in a (what it pointed at stays, unused, until
 * the blocks are freed).  Returns 0 or RP_ENOMEM (*slot unchanged). */
static int set_name(struct rp_strblks *a, char **slot, const char *s)
{
    size_t len = strlen(s) + 1;
    char *c = rp_strblks_take(a, len, NAMES_BLOCK);
    if (!c)
        return RP_ENOMEM;
    memcpy(c, s, len);
    *slot = c;
    return 0;
}

/* qsort_r order of row indices by their names (ctx: the names). */
static int by_name(const void *a, const void *b, void *ctx)
{
    char **names = ctx;
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    int c = strcmp(names[x], names[y]);
    return c ? c : (x > y) - (x < y);
}

/* Sets same[r] for every name that another row has too.  Returns 0 or
 * RP_ENOMEM. */
static int mark_same(char **names, uint32_t n, unsigned char *same)
{
    uint32_t *idx = malloc((n ? n : 1) * sizeof *idx);

    if (!idx)
        return RP_ENOMEM;
    memset(same, 0, n);
    for (uint32_t r = 0; r < n; r++)
        idx[r] = r;
    qsort_r(idx, n, sizeof *idx, by_name, names);
    for (uint32_t k = 1; k < n; k++)
        if (!strcmp(names[idx[k - 1]], names[idx[k]]))
            same[idx[k - 1]] = same[idx[k]] = 1;
    free(idx);
    return 0;
}

/* The numeric cells of node n's row into row; sets *p95 when it has a p95.
 * Cannot fail. */
static void fmt_row(const struct rp_profile *p, const struct rp_node *n, char row[NCOL][CELL],
                    int *p95)
{
    snprintf(row[C_RANK], CELL, "%" PRIu32, n->rank);
    fmt_pct(row[C_STAND], CELL, rp_node_standing(p, n));
    fmt_pct(row[C_INVOL], CELL, rp_node_involvement(p, n));
    /* '~': throttled, its times are of the recorded calls only; '*': some
     * activations were cut (left without their exit); both listed below */
    snprintf(row[C_CALLS], CELL, "%" PRIu64 "%s%s", n->calls + rp_node_throttled(n),
             rp_node_throttled(n) ? "~" : "", rp_node_cut(n) ? "*" : "");
    fmt_dur(row[C_TOTAL], CELL, ns_of(p, (double)n->incl));
    fmt_dur(row[C_SELF], CELL, ns_of(p, (double)n->excl));
    fmt_dur(row[C_AVG], CELL, ns_of(p, rp_node_mean(n)));
    /* wall time, like avg and p95 (the JSON's oncpu_max_ns is less the time
     * off CPU and waiting below) */
    fmt_dur(row[C_MAX], CELL, ns_of(p, (double)rp_node_max(n)));
    /* of every call: "<20ns" when the calls below resolution are 95 % */
    uint64_t q95 = 0;
    int below = rp_node_q_all(p, n, 0.95, &q95);
    if (below == 0)
        fmt_dur(row[C_P95], CELL, ns_of(p, (double)q95));
    else if (below == 1)
        rp_fmt_below_res(p, row[C_P95], CELL);
    else
        strcpy(row[C_P95], "-");
    if (below >= 0)
        *p95 = 1;
    fmt_flags(row[C_FLAGS], CELL, n->flags);
}

/*
 * The whole table (header, rows, the notes and why lines under it) into
 * out, laid out for lw columns (SIZE_MAX: no limit).  Returns 0 or
 * RP_ENOMEM; write errors are left for ferror().
 */
/* The table's state while it is written: its rows, columns and names. */
struct tab {
    const struct rp_profile *p;
    const struct rp_report_opts *o;
    size_t lw;                   /* the line width */
    uint32_t *order, *chain_row; /* rows' nodes; chain + 1 of each, 0 none */
    uint32_t n_rows, n_all;      /* rows shown, rows there are */
    char **names;                /* each row's name as printed, in ... */
    struct rp_strblks nm;        /* ... these blocks */
    unsigned char *same;         /* scratch of mark_same */
    int on[NCOL], width[NCOL];
    size_t used, avail; /* columns' width, the name's */
    char dropped[64];   /* columns left out to fit */
    struct rp_chains ch;
};

/* The rows: the report's order, a pass-through chain as one row where its
 * last frame ranks, at most o->limit.  Returns 0 or RP_ENOMEM. */
static int tab_rows(struct tab *t)
{
    struct rp_report_opts all = *t->o;
    int rc;
    all.limit = 0;
    if (!(t->order = rp_report_rows(t->p, &all, &t->n_all, NULL)))
        return RP_ENOMEM;
    if (t->o->chains && t->o->flagged && (rc = rp_chains_find(t->p, &t->ch)) < 0)
        return rc;
    t->chain_row = calloc(t->n_all ? t->n_all : 1, sizeof *t->chain_row);
    if (!t->chain_row)
        return RP_ENOMEM;
    uint32_t n = 0;
    for (uint32_t r = 0; r < t->n_all; r++) {
        int64_t c = rp_chain_of(&t->ch, t->order[r]);
        if (c >= 0 && t->ch.member[t->ch.start[c + 1] - 1] != t->order[r])
            continue;
        t->chain_row[n] = (uint32_t)(c + 1);
        t->order[n++] = t->order[r];
    }
    t->n_all = n;
    t->n_rows = t->o->limit && n > t->o->limit ? t->o->limit : n;
    t->names = calloc(t->n_rows ? t->n_rows : 1, sizeof *t->names);
    t->same = calloc(t->n_rows ? t->n_rows : 1, 1);
    return t->names && t->same ? 0 : RP_ENOMEM;
}

/* The columns: their widths (rows formatted to measure them), and the ones
 * that matter least left out when the line is narrow.  Cannot fail. */
static void tab_columns(struct tab *t)
{
    char row[NCOL][CELL];
    for (int c = 0; c < NCOL; c++)
        t->on[c] = 1;
    t->on[C_RANK] = t->on[C_STAND] = t->on[C_INVOL] = t->o->ranked;
    t->on[C_FLAGS] = t->o->flagged;
    t->on[C_P95] = 0;
    for (int c = 0; c < NCOL; c++)
        t->width[c] = (int)strlen(col_head[c]);
    for (uint32_t r = 0; r < t->n_rows; r++) { /* the widths; rows are formatted again to print */
        fmt_row(t->p, &t->p->nodes[t->order[r]], row, &t->on[C_P95]);
        for (int c = 0; c < NCOL; c++)
            if ((int)strlen(row[c]) > t->width[c])
                t->width[c] = (int)strlen(row[c]);
    }
    for (int c = 0; c < NCOL; c++)
        if (t->on[c])
            t->used += (size_t)t->width[c] + 2;
    /* a narrow line leaves out the columns that matter least, saying so */
    static const int drop[] = {C_P95, C_MAX, C_AVG, C_STAND};
    for (size_t d = 0; d < sizeof drop / sizeof drop[0] && t->used + NAME_WANT > t->lw; d++) {
        if (!t->on[drop[d]])
            continue;
        t->on[drop[d]] = 0;
        t->used -= (size_t)t->width[drop[d]] + 2;
        snprintf(t->dropped + strlen(t->dropped), sizeof t->dropped - strlen(t->dropped), "%s%s",
                 t->dropped[0] ? ", " : "", col_head[drop[d]]);
    }
    t->avail = t->lw > t->used + NAME_MIN ? t->lw - t->used : NAME_MIN;
}

/* The rows' names: the longest form that fits, then longer forms where two
 * rows would read the same, then the module or the address where even the
 * whole names and locations are the same (static copies of one function).
 * Returns 0 or RP_ENOMEM. */
static int tab_names(struct tab *t)
{
    const struct rp_profile *p = t->p;
    char nbuf[1024];
    int rc;
    for (uint32_t r = 0; r < t->n_rows; r++) {
        if (t->chain_row[r])
            fmt_chain(nbuf, sizeof nbuf, p, &t->ch, t->chain_row[r] - 1, t->avail);
        else
            fmt_name(nbuf, sizeof nbuf, p, &p->nodes[t->order[r]], t->avail, RP_NAME_NOTEMPLATE, 1);
        if ((rc = set_name(&t->nm, &t->names[r], nbuf)) < 0)
            return rc;
    }
    for (int max = RP_NAME_NOTEMPLATE; max >= RP_NAME_FULL; max--) {
        int any = 0;
        if ((rc = mark_same(t->names, t->n_rows, t->same)) < 0)
            return rc;
        for (uint32_t r = 0; r < t->n_rows; r++)
            if (t->same[r] && !t->chain_row[r]) {
                fmt_name(nbuf, sizeof nbuf, p, &p->nodes[t->order[r]], t->avail, max, 0);
                if ((rc = set_name(&t->nm, &t->names[r], nbuf)) < 0)
                    return rc;
                any = 1;
            }
        if (!any)
            break;
    }
    for (int pass = 0; pass < 2; pass++) {
        /* the module first, then (modules alike too) the address */
        if ((rc = mark_same(t->names, t->n_rows, t->same)) < 0)
            return rc;
        for (uint32_t r = 0; r < t->n_rows; r++) {
            const struct rp_node *n = &p->nodes[t->order[r]];
            if (!t->same[r] || t->chain_row[r])
                continue;
            if (!pass && n->module && *n->module &&
                other_module(p, t->order, t->names, t->same, t->n_rows, r))
                snprintf(nbuf, sizeof nbuf, "%s [%s]", t->names[r], base_name(n->module));
            else if (pass)
                snprintf(nbuf, sizeof nbuf, "%s @0x%" PRIx64, t->names[r], n->key);
            else
                continue;
            if ((rc = set_name(&t->nm, &t->names[r], nbuf)) < 0)
                return rc;
        }
    }
    return 0;
}

/* The column heads and the rows, then what was left out.  Write errors are
 * left for ferror(). */
static void tab_put_rows(FILE *out, const struct tab *t)
{
    char row[NCOL][CELL];
    fputc('\n', out);
    for (int c = 0; c < NCOL; c++)
        if (t->on[c])
            fprintf(out, c == C_FLAGS ? "%-*s  " : "%*s  ", t->width[c], col_head[c]);
    fputs("name\n", out);
    for (uint32_t r = 0; r < t->n_rows; r++) {
        const struct rp_node *n = &t->p->nodes[t->order[r]];
        int p95;
        fmt_row(t->p, n, row, &p95);
        for (int c = 0; c < NCOL; c++) {
            if (!t->on[c])
                continue;
            if (c == C_FLAGS && t->o->color && n->flags) {
                put_flags_color(out, n->flags, row[c], t->width[c]);
                fputs("  ", out);
            } else {
                fprintf(out, c == C_FLAGS ? "%-*s  " : "%*s  ", t->width[c], row[c]);
            }
        }
        put_name(out, t->names[r], t->avail, t->used);
    }
    if (t->n_rows < t->n_all)
        fprintf(out, "(%" PRIu32 " more row%s not shown)\n", t->n_all - t->n_rows,
                t->n_all - t->n_rows == 1 ? "" : "s");
    if (t->ch.n)
        fprintf(out,
                t->ch.n == 1 ? "(1 pass-through chain shown as one row, with the numbers of its "
                               "last frame; the ranks of its other frames are skipped: "
                               "--no-chains shows every frame)\n"
                             : "(%" PRIu32 " pass-through chains shown as one row each, with the "
                               "numbers of their last frame; the ranks of their other frames "
                               "are skipped: --no-chains shows every frame)\n",
                t->ch.n);
    if (t->dropped[0])
        fprintf(out, "(%s not shown to fit %zu columns: --wide shows every column)\n", t->dropped,
                t->lw);
}

/* Why each flagged row is flagged, under a name form that fits WHY_NAME
 * columns, told apart by address where two would read the same.  The rows'
 * names are replaced.  Returns 0 or RP_ENOMEM. */
static int tab_put_whys(FILE *out, struct tab *t)
{
    const struct rp_profile *p = t->p;
    struct rp_flag_opts fo_def;
    const struct rp_flag_opts *fo = t->o->flag;
    char nbuf[1024];
    size_t nw = 0;
    int any = 0, rc;
    if (!fo) {
        rp_flag_opts_default(&fo_def);
        fo = &fo_def;
    }
    rp_strblks_free(&t->nm); /* (every name is replaced) */
    for (uint32_t r = 0; r < t->n_rows; r++) {
        const struct rp_node *n = &p->nodes[t->order[r]];
        char nb[RP_NAME_BUF], form[RP_NAME_BUF];
        const char *full = rp_node_name(p, n, nb, sizeof nb);
        t->names[r] = NULL;
        if (!n->flags)
            continue;
        for (int l = RP_NAME_FULL; l < RP_NAME_LEVELS; l++)
            if (rp_term_width(rp_name_form(full, l, form, sizeof form)) <= WHY_NAME)
                break;
        nbuf[0] = '\0';
        rp_term_cat_tail(nbuf, sizeof nbuf, form, WHY_NAME);
        if ((rc = set_name(&t->nm, &t->names[r], nbuf)) < 0)
            return rc;
    }
    for (uint32_t r = 0; r < t->n_rows; r++) /* unflagged rows: distinct, unused */
        if (!t->names[r] && (rc = set_name(&t->nm, &t->names[r], "")) < 0)
            return rc;
    if ((rc = mark_same(t->names, t->n_rows, t->same)) < 0)
        return rc;
    for (uint32_t r = 0; r < t->n_rows; r++) {
        if (!t->same[r] || !p->nodes[t->order[r]].flags)
            continue;
        snprintf(nbuf, sizeof nbuf, "%s @0x%" PRIx64, t->names[r], p->nodes[t->order[r]].key);
        if ((rc = set_name(&t->nm, &t->names[r], nbuf)) < 0)
            return rc;
    }
    for (uint32_t r = 0; r < t->n_rows; r++) {
        size_t w = rp_term_width(t->names[r]);
        if (p->nodes[t->order[r]].flags && w > nw)
            nw = w;
    }
    if (nw > WHY_NAME)
        nw = WHY_NAME;
    for (uint32_t r = 0; r < t->n_rows; r++) {
        const struct rp_node *n = &p->nodes[t->order[r]];
        char why[512];
        if (!n->flags || !rp_flags_explain(p, n, fo, why, sizeof why))
            continue;
        if (!any++)
            fputc('\n', out);
        size_t w = rp_term_width(t->names[r]);
        fputs(t->names[r], out);
        if (w > nw)
            fprintf(out, "\n%*s", (int)nw, "");
        else
            fprintf(out, "%*s", (int)(nw - w), "");
        /* one explanation per line; continuation lines under the first */
        int first = 1;
        for (char *line = why, *next; line; line = next) {
            char safe[512] = "";
            next = strchr(line, '\n');
            if (next)
                *next++ = '\0';
            if (!*line)
                continue;
            rp_term_cat(safe, sizeof safe, line, SIZE_MAX);
            fprintf(out, "%*s", first ? 2 : (int)nw + 2, "");
            put_hanging(out, safe, nw + 2, t->lw);
            first = 0;
        }
        if (first)
            fputc('\n', out);
    }
    return 0;
}

/* The notes under the table: what a [wait] row is, the throttled rows
 * (~), the rows with cut calls (*).  Write errors are left for ferror(). */
static void tab_put_notes(FILE *out, const struct tab *t)
{
    const struct rp_profile *p = t->p;
    for (uint32_t r = 0; r < t->n_rows; r++) { /* once, when the table has one */
        if (p->nodes[t->order[r]].kind != RP_KIND_WAIT)
            continue;
        fputs("\n[wait] rows are blocking calls (sleep, poll, join, condition waits ...): time "
              "spent blocked,\nnot working, and not in their callers' self time "
              "(docs/waits.md).\n",
              out);
        break;
    }
    /* blocked time among the first rows of a time ranking: a thread that
     * waits all run long (an idle pool worker) ranks its wait on top, or
     * the function that waits (pigz's wait_for_, over its condition
     * wait): a row that is blocked time, or whose time is mostly blocked
     * below it (rp_node_blocked: off CPU, waiting, holding a lock) */
    for (uint32_t r = 0; p->rank.weight == RP_WEIGHT_TIME && r < t->n_rows && r < 3; r++) {
        const struct rp_node *n = &p->nodes[t->order[r]];
        if (n->kind != RP_KIND_WAIT && n->kind != RP_KIND_LOCK_WAIT && n->kind != RP_KIND_OFFCPU &&
            !(n->incl && rp_node_blocked(n) >= 0.5 * (double)n->incl))
            continue;
        fputs("\nTime spent blocked ranks among the first rows (time weights count it): "
              "--weight cpu\nranks by time on CPU (docs/ranking.md).\n",
              out);
        break;
    }
    /* functions the recorder's throttle switched to counting only */
    for (uint32_t r = 0, any = 0; r < t->n_rows; r++) {
        const struct rp_node *n = &p->nodes[t->order[r]];
        char nb[RP_NAME_BUF], safe[256] = "";
        if (!rp_node_throttled(n))
            continue;
        if (!any++) {
            if (p->throttle_sample)
                fprintf(out,
                        "\n~ throttled (after they proved busy and short, counted, and 1 call in "
                        "%" PRIu32 " still timed:\nsampled: their times are of the first calls and "
                        "that sample, and the time of the\nothers is in their callers' self "
                        "time):\n",
                        p->throttle_sample);
            else
                fputs("\n~ throttled (counted, not recorded, after they proved busy and short; "
                      "their times are of the\nrecorded calls only, and the time of the others "
                      "is in their callers' self time):\n",
                      out);
        }
        rp_term_cat(safe, sizeof safe, rp_node_name(p, n, nb, sizeof nb), 200);
        fprintf(out, "  %s  %" PRIu64 " of %" PRIu64 " calls recorded\n", safe, n->calls,
                n->calls + rp_node_throttled(n));
    }
    /* functions with activations left without their exit (replay.c) */
    for (uint32_t r = 0, any = 0; r < t->n_rows; r++) {
        const struct rp_node *n = &p->nodes[t->order[r]];
        char nb[RP_NAME_BUF], safe[256] = "";
        if (!rp_node_cut(n))
            continue;
        if (!any++)
            fputs("\n* cut: activations left without their exit (a longjmp, an exception, or still "
                  "open when\ntheir thread or the run ended), ended there with their time:\n",
                  out);
        rp_term_cat(safe, sizeof safe, rp_node_name(p, n, nb, sizeof nb), 200);
        fprintf(out, "  %s  %" PRIu64 " of %" PRIu64 " calls cut\n", safe, rp_node_cut(n),
                n->calls);
    }
}

static int put_table(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o,
                     size_t lw)
{
    struct tab t = {.p = p, .o = o, .lw = lw};
    int rc = tab_rows(&t);
    if (rc < 0)
        goto out;
    put_header(out, p, o);
    if (!t.n_rows) {
        fputs("\nno spans recorded\n", out);
        goto out;
    }
    tab_columns(&t);
    if ((rc = tab_names(&t)) < 0)
        goto out;
    tab_put_rows(out, &t);
    if (o->flagged && (rc = tab_put_whys(out, &t)) < 0)
        goto out;
    tab_put_notes(out, &t);
out:
    rp_chains_free(&t.ch);
    rp_strblks_free(&t.nm);
    free(t.names);
    free(t.same);
    free(t.chain_row);
    free(t.order);
    return rc;
}

/*
 * See report.h.  Fails with RP_EINVAL for a NULL argument, RP_ENOMEM when
 * the rows cannot be allocated, RP_EIO when writing fails.
 */
int rp_report_table(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o)
{
    size_t lw;
    FILE *mem;
    int rc;

    if (!out || !p || !o || (p->n_nodes && !p->nodes))
        return RP_EINVAL;
    lw = line_width(out, o);
    if (lw == SIZE_MAX) {
        rc = put_table(out, p, o, lw);
        if (rc == 0 && (fflush(out) != 0 || ferror(out)))
            rc = RP_EIO;
        return rc;
    }
    struct rp_term_wrap w = {.out = out, .lw = lw};
    if (!(mem = rp_term_wrap_open(&w))) {
        free(w.line);
        return RP_ENOMEM;
    }
    rc = put_table(mem, p, o, lw);
    if (rp_term_wrap_close(mem, &w) < 0 && rc == 0)
        rc = RP_ENOMEM;
    if (rc == 0 && (fflush(out) != 0 || ferror(out)))
        rc = RP_EIO;
    return rc;
}

/*
 * table.c - the terminal table, `rankprof report`'s default output (DESIGN
 * §8): a header saying what run this is and how trustworthy it is (lost
 * events, unmatched exits, how the run ended, how the ranking converged),
 * one aligned row per span node in the requested order, then one line per
 * flagged row saying why it was flagged.
 *
 * Rank columns appear only when the profile is ranked and the flags column
 * only when it is flagged: no column ever shows a value that was not
 * computed.  Names and paths may come from untrusted trace files, so control
 * characters and invalid UTF-8 are shown as '?' (never sent to the terminal).
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "report/report.h"
#include "report/util.h"
#include "trace/format.h"

/* room for a name rp_node_name formats into our buffer ("<lock> [hold]") */
#define RP_NAME_BUF 512

#define CELL       32  /* bytes of one formatted numeric cell */
#define NAME_MIN   24  /* never trim a name below this many columns */
#define WHY_NAME   40  /* name column width of the "why" lines, at most */
#define WIDTH_DEF  120 /* line width when $COLUMNS does not say */
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

/*
 * Length of the next character to show at s (s[0] != 0), and in *ok whether
 * it may go to a terminal as is: printable ASCII or a valid, non-C1 UTF-8
 * sequence.  Anything else is one byte to show as '?'.
 */
static size_t disp_next(const unsigned char *s, int *ok)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;

    *ok = 0;
    if (c < 0x80) {
        *ok = c >= 0x20 && c != 0x7f;
        return 1;
    }
    if (c < 0xC2 || c >= 0xF5)
        return 1;
    if (c < 0xE0) {
        need = 1;
        if (c == 0xC2)
            lo = 0xA0; /* U+0080..U+009F are C1 controls */
    } else if (c < 0xF0) {
        need = 2;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else {
        need = 3;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    }
    for (size_t k = 1; k <= need; k++) {
        if (s[k] < lo || s[k] > hi)
            return 1;
        lo = 0x80;
        hi = 0xBF;
    }
    *ok = 1;
    return need + 1;
}

/* Columns s takes on a terminal (one per character shown).  Cannot fail. */
static size_t disp_width(const char *str)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t w = 0;
    int ok;

    while (*s) {
        s += disp_next(s, &ok);
        w++;
    }
    return w;
}

/*
 * Appends at most max_cols characters of str, made safe for a terminal, to
 * the NUL-terminated buffer dst of size dstsz; stops early (never splitting a
 * character) when dst is full.  Returns the columns appended.
 */
static size_t disp_cat(char *dst, size_t dstsz, const char *str, size_t max_cols)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t len = strlen(dst), w = 0;
    int ok;

    while (*s && w < max_cols) {
        size_t k = disp_next(s, &ok);
        size_t put = ok ? k : 1;
        if (len + put + 1 > dstsz)
            break;
        if (ok)
            memcpy(dst + len, s, k);
        else
            dst[len] = '?';
        len += put;
        s += k;
        w++;
    }
    dst[len] = '\0';
    return w;
}

/*
 * Appends str to dst trimmed to max_cols columns: whole if it fits, else its
 * first max_cols - 3 characters and "...".  Returns the columns appended.
 */
static size_t disp_cat_trim(char *dst, size_t dstsz, const char *str, size_t max_cols)
{
    if (disp_width(str) <= max_cols)
        return disp_cat(dst, dstsz, str, max_cols);
    if (max_cols <= 3)
        return disp_cat(dst, dstsz, "...", max_cols);
    size_t w = disp_cat(dst, dstsz, str, max_cols - 3);
    return w + disp_cat(dst, dstsz, "...", 3);
}

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

/* The line width to fit: $COLUMNS when it is sane, else WIDTH_DEF. */
static size_t line_width(void)
{
    const char *c = getenv("COLUMNS");
    char *end;
    long v;

    if (!c || !*c)
        return WIDTH_DEF;
    v = strtol(c, &end, 10);
    return (*end || v < 40 || v > 4096) ? WIDTH_DEF : (size_t)v;
}

/* The last path component of path. */
static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/*
 * The name cell of a row: the node name, then " (file:line)" when known,
 * trimmed to avail columns (the name is trimmed first, the location dropped
 * only when it would take more than half the room).  Cannot fail.
 */
static void fmt_name(char *b, size_t n, const struct rp_profile *p, const struct rp_node *nd,
                     size_t avail)
{
    char nb[RP_NAME_BUF], loc[512] = "";
    const char *name = rp_node_name(p, nd, nb, sizeof nb);
    size_t nw, lw;

    b[0] = '\0';
    if (nd->file && *nd->file) {
        char raw[512];
        if (nd->line)
            snprintf(raw, sizeof raw, "%s:%" PRIu32, base_name(nd->file), nd->line);
        else
            snprintf(raw, sizeof raw, "%s", base_name(nd->file));
        strcpy(loc, " (");
        disp_cat(loc, sizeof loc - 2, raw, SIZE_MAX);
        strcat(loc, ")");
    }
    nw = disp_width(name);
    lw = disp_width(loc);
    if (nw + lw <= avail) {
        disp_cat(b, n, name, SIZE_MAX);
        disp_cat(b, n, loc, SIZE_MAX);
    } else if (lw && lw <= avail / 2) {
        disp_cat_trim(b, n, name, avail - lw);
        disp_cat(b, n, loc, SIZE_MAX);
    } else {
        disp_cat_trim(b, n, name, avail);
    }
}

/* The header lines above the table.  Errors are left for ferror(). */
static void put_header(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o)
{
    const char *warn = o->color ? "\033[1;31m" : "", *reset = o->color ? ANSI_RESET : "";
    uint64_t unmatched = p->unmatched_exits, unclosed = p->unclosed;
    char total[CELL], prog[1024] = "";

    disp_cat(prog, sizeof prog, p->program && *p->program ? p->program : "(unknown program)",
             SIZE_MAX);
    fmt_dur(total, sizeof total, ns_of(p, (double)p->total));
    fprintf(out, "rankprof: %s", prog);
    if (p->pid)
        fprintf(out, " (pid %" PRIu32 ")", p->pid);
    fprintf(out, "  total %s  %" PRIu32 " thread%s  %" PRIu64 " events  %s%" PRIu64 " lost%s\n",
            total, p->n_threads, p->n_threads == 1 ? "" : "s", p->events, p->lost ? warn : "",
            p->lost, p->lost ? reset : "");
    if (p->n_procs > 1) { /* a run's files, merged (docs/robustness.md) */
        fprintf(out, "processes: %" PRIu32 ", merged:", p->n_procs);
        for (uint32_t i = 0; i < p->n_procs && i < 8; i++) {
            char f[512] = "";
            disp_cat(f, sizeof f, p->procs[i].file ? p->procs[i].file : "?", SIZE_MAX);
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
                " unclosed span%s were counted, not guessed\n",
                unmatched, unmatched == 1 ? "" : "s", unclosed, unclosed == 1 ? "" : "s");
    if (p->unwound || p->cut)
        fprintf(out,
                "note: %" PRIu64 " frame%s left without an exit: %" PRIu64
                " unwound (longjmp, exceptions), %" PRIu64
                " open when their thread or the run ended; each ends there, with its time "
                "(calls marked *)\n",
                p->unwound + p->cut, p->unwound + p->cut == 1 ? "" : "s", p->unwound, p->cut);
    if (!p->ended)
        fprintf(out,
                "%srun: did not end normally (no end record: crashed, killed or cut short)%s\n",
                warn, reset);
    else if (p->end_flags & RP_END_SIGNAL)
        fprintf(out, "%srun: killed by signal %" PRId32 "%s\n", warn, p->end_status, reset);
    else if (p->end_flags & RP_END_EXIT)
        fprintf(out, "run: ended normally, exit status %" PRId32 "\n", p->end_status);
    else
        fputs("run: ended normally\n", out);
    if (p->ended && (p->end_flags & RP_END_TIMEOUT))
        fprintf(out, "%swarning: the final flush timed out; some buffers may be missing%s\n", warn,
                reset);
    rp_report_comp_line(out, p);
    rp_report_offcpu_line(out, p);
    if (o->ranked)
        fprintf(out, "rank: %s weights, alpha %g, %" PRIu32 " iterations, residual %.3g\n",
                p->rank.weight_calls ? "call" : "time", p->rank.alpha, p->rank.iterations,
                p->rank.residual);
}

/*
 * See report.h.  Fails with RP_EINVAL for a NULL argument, RP_ENOMEM when
 * the rows cannot be allocated, RP_EIO when writing fails.
 */
int rp_report_table(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o)
{
    uint32_t *order = NULL, n_rows, n_all;
    char(*cells)[NCOL][CELL] = NULL;
    int on[NCOL], width[NCOL];
    size_t used = 0, avail;
    struct rp_flag_opts fo_def;
    const struct rp_flag_opts *fo = o ? o->flag : NULL;
    int rc = 0;

    if (!out || !p || !o || (p->n_nodes && !p->nodes))
        return RP_EINVAL;
    if (!(order = rp_report_rows(p, o, &n_rows, &n_all))) {
        rc = RP_ENOMEM;
        goto out;
    }
    cells = calloc(n_rows ? n_rows : 1, sizeof *cells);
    if (!cells) {
        rc = RP_ENOMEM;
        goto out;
    }

    put_header(out, p, o);
    if (!n_rows) {
        fputs("\nno spans recorded\n", out);
        goto flush;
    }

    for (int c = 0; c < NCOL; c++)
        on[c] = 1;
    on[C_RANK] = on[C_STAND] = on[C_INVOL] = o->ranked;
    on[C_FLAGS] = o->flagged;
    on[C_P95] = 0;
    for (uint32_t r = 0; r < n_rows; r++) {
        const struct rp_node *n = &p->nodes[order[r]];
        char(*row)[CELL] = cells[r];
        snprintf(row[C_RANK], CELL, "%" PRIu32, n->rank);
        fmt_pct(row[C_STAND], CELL, n->standing);
        fmt_pct(row[C_INVOL], CELL, n->involvement);
        /* '*': some activations were cut (left without their exit), listed below */
        snprintf(row[C_CALLS], CELL, "%" PRIu64 "%s", n->calls + n->throttled, n->cut ? "*" : "");
        fmt_dur(row[C_TOTAL], CELL, ns_of(p, (double)n->incl));
        fmt_dur(row[C_SELF], CELL, ns_of(p, (double)n->excl));
        fmt_dur(row[C_AVG], CELL, ns_of(p, n->mean));
        /* wall time, like avg and p95 (JITTER judges the on-CPU maximum) */
        fmt_dur(row[C_MAX], CELL, ns_of(p, (double)n->max));
        if (n->hist.counts && n->hist.n) {
            fmt_dur(row[C_P95], CELL, ns_of(p, (double)rp_node_q(n, 0.95)));
            on[C_P95] = 1;
        } else {
            strcpy(row[C_P95], "-");
        }
        fmt_flags(row[C_FLAGS], CELL, n->flags);
    }
    for (int c = 0; c < NCOL; c++) {
        width[c] = (int)strlen(col_head[c]);
        for (uint32_t r = 0; r < n_rows; r++)
            if ((int)strlen(cells[r][c]) > width[c])
                width[c] = (int)strlen(cells[r][c]);
        if (on[c])
            used += (size_t)width[c] + 2;
    }
    avail = line_width() > used + NAME_MIN ? line_width() - used : NAME_MIN;

    fputc('\n', out);
    for (int c = 0; c < NCOL; c++)
        if (on[c])
            fprintf(out, c == C_FLAGS ? "%-*s  " : "%*s  ", width[c], col_head[c]);
    fputs("name\n", out);
    for (uint32_t r = 0; r < n_rows; r++) {
        const struct rp_node *n = &p->nodes[order[r]];
        char name[1024];
        for (int c = 0; c < NCOL; c++) {
            if (!on[c])
                continue;
            if (c == C_FLAGS && o->color && n->flags) {
                put_flags_color(out, n->flags, cells[r][c], width[c]);
                fputs("  ", out);
            } else {
                fprintf(out, c == C_FLAGS ? "%-*s  " : "%*s  ", width[c], cells[r][c]);
            }
        }
        fmt_name(name, sizeof name, p, n, avail);
        fprintf(out, "%s\n", name);
    }
    if (n_rows < n_all)
        fprintf(out, "(%" PRIu32 " more row%s not shown)\n", n_all - n_rows,
                n_all - n_rows == 1 ? "" : "s");

    /* why each flagged row is flagged */
    if (o->flagged) {
        size_t nw = 0;
        int any = 0;
        if (!fo) {
            rp_flag_opts_default(&fo_def);
            fo = &fo_def;
        }
        for (uint32_t r = 0; r < n_rows; r++) {
            const struct rp_node *n = &p->nodes[order[r]];
            char nb[RP_NAME_BUF];
            size_t w = disp_width(rp_node_name(p, n, nb, sizeof nb));
            if (n->flags && w > nw)
                nw = w;
        }
        if (nw > WHY_NAME)
            nw = WHY_NAME;
        for (uint32_t r = 0; r < n_rows; r++) {
            const struct rp_node *n = &p->nodes[order[r]];
            char why[512], name[256] = "", nb[RP_NAME_BUF];
            if (!n->flags || !rp_flags_explain(p, n, fo, why, sizeof why))
                continue;
            if (!any++)
                fputc('\n', out);
            size_t w = disp_cat_trim(name, sizeof name, rp_node_name(p, n, nb, sizeof nb), nw);
            fprintf(out, "%s%*s", name, (int)(nw - w), "");
            /* one explanation per line; continuation lines under the first */
            int first = 1;
            for (char *line = why, *next; line; line = next) {
                char safe[512] = "";
                next = strchr(line, '\n');
                if (next)
                    *next++ = '\0';
                if (!*line)
                    continue;
                disp_cat(safe, sizeof safe, line, SIZE_MAX);
                fprintf(out, "%*s%s\n", first ? 2 : (int)nw + 2, "", safe);
                first = 0;
            }
            if (first)
                fputc('\n', out);
        }
    }

    /* what a [wait] row is, once, when the table has one */
    for (uint32_t r = 0; r < n_rows; r++) {
        if (p->nodes[order[r]].kind != RP_KIND_WAIT)
            continue;
        fputs("\n[wait] rows are blocking calls (sleep, poll, join, condition waits ...): time "
              "spent blocked,\nnot working, and not in their callers' self time "
              "(docs/waits.md).\n",
              out);
        break;
    }

    /* functions the recorder's throttle switched to counting only */
    for (uint32_t r = 0, any = 0; r < n_rows; r++) {
        const struct rp_node *n = &p->nodes[order[r]];
        char nb[RP_NAME_BUF], safe[256] = "";
        if (!n->throttled)
            continue;
        if (!any++)
            fputs("\nthrottled (counted, not recorded, after they proved busy and short; their "
                  "times are of the\nrecorded calls only, and the time of the others is in "
                  "their callers' self time):\n",
                  out);
        disp_cat(safe, sizeof safe, rp_node_name(p, n, nb, sizeof nb), 200);
        fprintf(out, "  %s  %" PRIu64 " of %" PRIu64 " calls recorded\n", safe, n->calls,
                n->calls + n->throttled);
    }

    /* functions with activations left without their exit (replay.c) */
    for (uint32_t r = 0, any = 0; r < n_rows; r++) {
        const struct rp_node *n = &p->nodes[order[r]];
        char nb[RP_NAME_BUF], safe[256] = "";
        if (!n->cut)
            continue;
        if (!any++)
            fputs("\n* cut: activations left without their exit (a longjmp, an exception, or still "
                  "open when\ntheir thread or the run ended), ended there with their time:\n",
                  out);
        disp_cat(safe, sizeof safe, rp_node_name(p, n, nb, sizeof nb), 200);
        fprintf(out, "  %s  %" PRIu64 " of %" PRIu64 " calls cut\n", safe, n->cut, n->calls);
    }

flush:
    if (fflush(out) != 0 || ferror(out))
        rc = RP_EIO;
out:
    free(cells);
    free(order);
    return rc;
}

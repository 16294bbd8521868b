// SPDX-License-Identifier: MIT
/*
 * diff_report.c - `rankprof diff` written out: a table for people (the
 * rows that changed, the largest change in own time first) and JSON for
 * scripts and CI jobs (every row; docs/report-json.md, "diff").
 */
#include "diff_report.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "analyze/histwin.h"
#include "common/error.h"
#include "util.h"

#define ANSI_RESET "\033[0m"
#define NAME_BUF   512

const char *rp_verdict_str(unsigned verdict)
{
    static const char *const s[] = {
        [RP_DIFF_SAME] = "same",     [RP_DIFF_SLOWER] = "slower", [RP_DIFF_FASTER] = "faster",
        [RP_DIFF_FEW] = "few-calls", [RP_DIFF_SMALL] = "small",   [RP_DIFF_SCHED] = "off-cpu",
        [RP_DIFF_NEW] = "new",       [RP_DIFF_GONE] = "gone"};
    return verdict < sizeof(s) / sizeof(s[0]) ? s[verdict] : "unknown";
}

/* The row's node on the side it has (the new run's when both). */
static const struct rp_node *row_node(const struct rp_diff_view *v, const struct rp_diff_row *r,
                                      const struct rp_profile **p)
{
    *p = r->b != RP_DIFF_NONE ? v->b : v->a;
    return &(*p)->nodes[r->b != RP_DIFF_NONE ? r->b : r->a];
}

/* The q-quantile per call of node idx of p in ns, or -1 when it is missing
 * or has no times per call. */
static double per_call_q(const struct rp_profile *p, uint32_t idx, double q)
{
    if (idx == RP_DIFF_NONE)
        return -1;
    struct rp_hist buf;
    const struct rp_hist *h = rp_diff_per_call(p, &p->nodes[idx], &buf);
    return h->n ? (double)rp_hist_q(h, q) * p->ns_per_tick : -1;
}

static uint64_t calls_of(const struct rp_profile *p, uint32_t idx)
{
    return idx == RP_DIFF_NONE ? 0 : p->nodes[idx].calls + rp_node_throttled(&p->nodes[idx]);
}

/* ---- table --------------------------------------------------------------- */

/* A duration, or "-" for a missing side (v < 0). */
static const char *dur(double v, char *buf, size_t n)
{
    if (v < 0)
        return snprintf(buf, n, "-"), buf;
    return rp_fmt_ns(v, buf, n);
}

/* A signed change in own time: "+1.21s", "-3.4ms". */
static const char *delta(double v, char *buf, size_t n)
{
    char t[32];
    snprintf(buf, n, "%c%s", v < 0 ? '-' : '+', rp_fmt_ns(fabs(v), t, sizeof t));
    return buf;
}

static const char *verdict_color(const struct rp_diff_row *r)
{
    if (r->verdict == RP_DIFF_SLOWER)
        return r->regression ? "\033[1;31m" : "\033[31m";
    if (r->verdict == RP_DIFF_FASTER)
        return "\033[32m";
    return NULL;
}

/* The header: both runs, the rule, the drift, the counts. */
static void table_head(FILE *out, const struct rp_diff_view *v)
{
    const struct rp_diff *d = v->d;
    const struct rp_diff_opts *o = v->o;
    char ta[32], tb[32];
    uint32_t both = 0, nw = 0, gone = 0;
    for (uint32_t i = 0; i < d->n; i++) {
        both += d->rows[i].verdict != RP_DIFF_NEW && d->rows[i].verdict != RP_DIFF_GONE;
        nw += d->rows[i].verdict == RP_DIFF_NEW;
        gone += d->rows[i].verdict == RP_DIFF_GONE;
    }
    fprintf(out, "rankprof diff: base %s (own time %s), new %s (own time %s)\n", v->name_a,
            rp_fmt_ns(d->total_a, ta, sizeof ta), v->name_b, rp_fmt_ns(d->total_b, tb, sizeof tb));
    fprintf(out,
            "judged on the time per call (own time where the trace has it): a change past "
            "%+.0f%% or %+.0f%% (--threshold) with %g%% confidence (--confidence; "
            "Mann-Whitney U), for the rows with at least %g%% of a run's own time "
            "(--min-share); a slower row is a regression\n",
            o->threshold * 100, (1 / (1 + o->threshold) - 1) * 100, o->confidence * 100,
            o->min_share * 100);
    fprintf(out,
            "the whole run: x%.3f per call (drift: the median ratio, weighted by own time)%s\n",
            d->drift, o->relative ? "; taken out of every row (--relative)" : "");
    fprintf(out,
            "regressions: %" PRIu32 ", improvements: %" PRIu32 "; %" PRIu32
            " in both runs, %" PRIu32 " new, %" PRIu32 " gone\n\n",
            d->regressions, d->improvements, both, nw, gone);
}

int rp_diff_table(FILE *out, const struct rp_diff_view *v)
{
    const struct rp_diff *d = v->d;
    char nb[NAME_BUF], c[10][32];
    uint32_t shown = 0, hidden = 0;

    table_head(out, v);
    fprintf(out, "%-9s %9s %9s %9s %9s %9s %7s %9s %9s %8s %8s  %s\n", "verdict", "d.self",
            "self A", "self B", "call A", "call B", "ratio", "calls A", "calls B", "stand A",
            "stand B", "name");
    for (uint32_t i = 0; i < d->n; i++) {
        const struct rp_diff_row *r = &d->rows[i];
        if (!v->all && (r->verdict == RP_DIFF_SAME || r->verdict == RP_DIFF_FEW ||
                        r->verdict == RP_DIFF_SMALL || r->verdict == RP_DIFF_SCHED)) {
            hidden++;
            continue;
        }
        if (v->limit && shown == v->limit) {
            hidden++;
            continue;
        }
        shown++;
        const struct rp_profile *p;
        const struct rp_node *n = row_node(v, r, &p);
        const char *col = v->color ? verdict_color(r) : NULL;
        char ratio[16] = "-", sa[16] = "-", sb[16] = "-";
        if (r->ratio > 0 && isfinite(r->ratio))
            snprintf(ratio, sizeof ratio, "x%.2f", r->ratio);
        if (r->a != RP_DIFF_NONE && v->a->rank.iterations)
            snprintf(sa, sizeof sa, "%.2f%%", rp_node_standing(v->a, &v->a->nodes[r->a]) * 100);
        if (r->b != RP_DIFF_NONE && v->b->rank.iterations)
            snprintf(sb, sizeof sb, "%.2f%%", rp_node_standing(v->b, &v->b->nodes[r->b]) * 100);
        snprintf(c[0], sizeof c[0], "%" PRIu64, calls_of(v->a, r->a));
        snprintf(c[1], sizeof c[1], "%" PRIu64, calls_of(v->b, r->b));
        fprintf(out, "%s%-9s%s %9s %9s %9s %9s %9s %7s %9s %9s %8s %8s  %s\n", col ? col : "",
                rp_verdict_str(r->verdict), col ? ANSI_RESET : "",
                delta(r->self_b - r->self_a, c[2], sizeof c[2]),
                dur(r->a != RP_DIFF_NONE ? r->self_a : -1, c[3], sizeof c[3]),
                dur(r->b != RP_DIFF_NONE ? r->self_b : -1, c[4], sizeof c[4]),
                dur(per_call_q(v->a, r->a, 0.5), c[5], sizeof c[5]),
                dur(per_call_q(v->b, r->b, 0.5), c[6], sizeof c[6]), ratio,
                r->a != RP_DIFF_NONE ? c[0] : "-", r->b != RP_DIFF_NONE ? c[1] : "-", sa, sb,
                rp_node_name(p, n, nb, sizeof nb));
    }
    if (!shown)
        fprintf(out, "(no row changed past the threshold with confidence)\n");
    if (hidden)
        fprintf(out, "(%" PRIu32 " more rows: %s)\n", hidden,
                v->all ? "--limit 0 shows them" : "--all shows the unchanged ones, --limit 0 all");
    return ferror(out) ? RP_EIO : 0;
}

/* ---- JSON ---------------------------------------------------------------- */

static void json_num(FILE *out, const char *key, double v)
{
    char b[40];
    fprintf(out, ", \"%s\": %s", key, rp_num_str(b, v));
}

/* "key": the value rounded; left out on a missing side (v < 0), as the
 * report leaves out what it does not know (docs/report-json.md). */
static void json_ns(FILE *out, const char *key, double v)
{
    if (v >= 0)
        fprintf(out, ", \"%s\": %.0f", key, v);
}

static void json_run(FILE *out, const char *key, const struct rp_profile *p, const char *name,
                     double own)
{
    fprintf(out, "  \"%s\": { \"file\": ", key);
    rp_json_str(out, name);
    fputs(", \"program\": ", out);
    rp_json_str(out, p->program ? p->program : "");
    fprintf(out, ", \"own_ns\": %.0f, \"events\": %" PRIu64 " },\n", own, p->events);
}

static void json_row(FILE *out, const struct rp_diff_view *v, const struct rp_diff_row *r)
{
    const struct rp_profile *p;
    const struct rp_node *n = row_node(v, r, &p);
    char nb[NAME_BUF];
    int ha = r->a != RP_DIFF_NONE, hb = r->b != RP_DIFF_NONE;

    fputs("    { \"name\": ", out);
    rp_json_str(out, rp_node_name(p, n, nb, sizeof nb));
    fprintf(out, ", \"kind\": \"%s\", \"verdict\": \"%s\", \"regression\": %s",
            rp_kind_str(n->kind), rp_verdict_str(r->verdict), r->regression ? "true" : "false");
    json_ns(out, "calls_base", ha ? (double)calls_of(v->a, r->a) : -1);
    json_ns(out, "calls_new", hb ? (double)calls_of(v->b, r->b) : -1);
    json_ns(out, "self_ns_base", ha ? r->self_a : -1);
    json_ns(out, "self_ns_new", hb ? r->self_b : -1);
    json_ns(out, "total_ns_base", ha ? (double)v->a->nodes[r->a].incl * v->a->ns_per_tick : -1);
    json_ns(out, "total_ns_new", hb ? (double)v->b->nodes[r->b].incl * v->b->ns_per_tick : -1);
    json_ns(out, "per_call_p50_ns_base", per_call_q(v->a, r->a, 0.5));
    json_ns(out, "per_call_p50_ns_new", per_call_q(v->b, r->b, 0.5));
    json_ns(out, "per_call_p99_ns_base", per_call_q(v->a, r->a, 0.99));
    json_ns(out, "per_call_p99_ns_new", per_call_q(v->b, r->b, 0.99));
    if (r->ratio > 0 && isfinite(r->ratio))
        json_num(out, "ratio", r->ratio);
    json_num(out, "z", r->z);
    json_num(out, "p_value", r->p);
    json_num(out, "share", r->share);
    if (ha && v->a->rank.iterations)
        json_num(out, "standing_base", rp_node_standing(v->a, &v->a->nodes[r->a]));
    if (hb && v->b->rank.iterations)
        json_num(out, "standing_new", rp_node_standing(v->b, &v->b->nodes[r->b]));
    fputs(" }", out);
}

int rp_diff_json(FILE *out, const struct rp_diff_view *v)
{
    const struct rp_diff *d = v->d;
    const struct rp_diff_opts *o = v->o;
    char b[4][40];

    fputs("{\n", out);
    json_run(out, "base", v->a, v->name_a, d->total_a);
    json_run(out, "new", v->b, v->name_b, d->total_b);
    fprintf(out, "  \"threshold\": %s, \"confidence\": %s, \"min_share\": %s, \"relative\": %s,\n",
            rp_num_str(b[0], o->threshold), rp_num_str(b[1], o->confidence),
            rp_num_str(b[2], o->min_share), o->relative ? "true" : "false");
    fprintf(out,
            "  \"drift\": %s, \"regressions\": %" PRIu32 ", \"improvements\": %" PRIu32
            ",\n  \"rows\": [",
            rp_num_str(b[3], d->drift), d->regressions, d->improvements);
    for (uint32_t i = 0; i < d->n; i++) {
        fputs(i ? ",\n" : "\n", out);
        json_row(out, v, &d->rows[i]);
    }
    fputs(d->n ? "\n  ]\n}\n" : "]\n}\n", out);
    return ferror(out) ? RP_EIO : 0;
}

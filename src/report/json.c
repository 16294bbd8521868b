/*
 * json.c - `report --format json`: the stable machine interface of DESIGN §9,
 * documented field by field in docs/report-json.md.  Version 1 fields never
 * change meaning; new fields may be added.
 *
 * Names may come from untrusted trace files, so every string is escaped
 * strictly: control characters as \u00XX, invalid UTF-8 replaced by \ufffd
 * (one per maximal invalid subpart, as Unicode recommends and Python's
 * "replace" does), and every number printed is finite.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "report/report.h"
#include "trace/format.h"

/* room for a name rp_node_name formats into our buffer ("<lock> [hold]") */
#define RP_NAME_BUF 512

/*
 * Length of the valid UTF-8 sequence at s[0..len) (len >= 1), or minus the
 * length of the maximal invalid subpart there, which one U+FFFD replaces.
 * Rejects overlong forms, surrogates and code points above U+10FFFF.
 */
static int utf8_seq(const unsigned char *s, size_t len)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    int need;

    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return -1;
    if (c < 0xE0) {
        need = 1;
    } else if (c < 0xF0) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c < 0xF5) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return -1;
    }
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= len || s[k] < lo || s[k] > hi)
            return -k;
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

/* Writes s as a JSON string literal.  Write errors are left for ferror(). */
static void put_str(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t len = strlen((const char *)s);

    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(out, "\\u%04x", c);
            i++;
        } else {
            int k = utf8_seq(s + i, len - i);
            if (k < 0) {
                fputs("\\ufffd", out);
                i += (size_t)-k;
            } else {
                fwrite(s + i, 1, (size_t)k, out);
                i += (size_t)k;
            }
        }
    }
    fputc('"', out);
}

/*
 * Writes a double as a JSON number: the shortest of %.15g/%.17g that reads
 * back exactly, 0 for NaN and infinities, and a '.' decimal point whatever
 * the locale says.
 */
static void put_num(FILE *out, double v)
{
    char buf[40];

    if (!isfinite(v)) {
        fputc('0', out);
        return;
    }
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    for (char *c = buf; *c; c++)
        if (*c == ',')
            *c = '.';
    fputs(buf, out);
}

/* Ticks to whole nanoseconds, rounded; 0 when the product is not finite. */
static uint64_t to_ns(const struct rp_profile *p, uint64_t ticks)
{
    double ns = (double)ticks * p->ns_per_tick;

    if (!isfinite(ns) || ns <= 0)
        return 0;
    if (ns >= 18446744073709551615.0)
        return UINT64_MAX;
    return (uint64_t)llround(ns);
}

/* The q-quantile of n's durations in ticks from its histogram, clamped to
 * [min, max] (a bucket midpoint can lie just outside them).  Cannot fail. */
static uint64_t node_q(const struct rp_node *n, double q)
{
    uint64_t v = rp_hist_q(&n->hist, q);
    if (v > n->max)
        v = n->max;
    if (v < n->min)
        v = n->min;
    return v;
}

static const char *kind_str(uint8_t kind)
{
    switch (kind) {
    case RP_KIND_FUNC:
        return "func";
    case RP_KIND_POINT:
        return "point";
    case RP_KIND_LOCK_WAIT:
        return "lock-wait";
    case RP_KIND_LOCK_HOLD:
        return "lock-hold";
    case RP_KIND_IO:
        return "io";
    default:
        return "unknown"; /* rp_report_order never yields these */
    }
}

/* Sample standard deviation in ticks from Welford's m2; 0 for fewer than 2. */
static double node_stddev(const struct rp_node *n)
{
    if (n->calls < 2 || !(n->m2 > 0))
        return 0;
    return sqrt(n->m2 / (double)(n->calls - 1));
}

static void put_u64_field(FILE *out, const char *key, uint64_t v)
{
    fprintf(out, ", \"%s\": %" PRIu64, key, v);
}

static void put_num_field(FILE *out, const char *key, double v)
{
    fprintf(out, ", \"%s\": ", key);
    put_num(out, v);
}

/* One element of "nodes".  Write errors are left for ferror(). */
static void put_node(FILE *out, const struct rp_profile *p, uint32_t idx,
                     const struct rp_report_opts *o)
{
    const struct rp_node *n = &p->nodes[idx];
    double npt = p->ns_per_tick;
    char nb[RP_NAME_BUF];

    fputs("    { \"name\": ", out);
    put_str(out, rp_node_name(p, n, nb, sizeof nb));
    fprintf(out, ", \"kind\": \"%s\"", kind_str(n->kind));
    put_u64_field(out, "calls", n->calls);
    put_u64_field(out, "inclusive_ns", to_ns(p, n->incl));
    put_u64_field(out, "exclusive_ns", to_ns(p, n->excl));
    put_num_field(out, "mean_ns", n->mean * npt);
    put_u64_field(out, "min_ns", to_ns(p, n->min));
    put_u64_field(out, "max_ns", to_ns(p, n->max));
    put_num_field(out, "stddev_ns", node_stddev(n) * npt);
    if (n->hist.counts && n->hist.n) {
        put_u64_field(out, "p50_ns", to_ns(p, node_q(n, 0.50)));
        put_u64_field(out, "p95_ns", to_ns(p, node_q(n, 0.95)));
        put_u64_field(out, "p99_ns", to_ns(p, node_q(n, 0.99)));
    }
    if (o->ranked) {
        put_num_field(out, "standing", n->standing);
        put_num_field(out, "involvement", n->involvement);
        fprintf(out, ", \"rank\": %" PRIu32, n->rank);
    }
    if (o->flagged) {
        int first = 1;
        fputs(", \"flags\": [", out);
        for (unsigned b = 0; b < 32; b++) {
            char fb[64];
            if (!(n->flags & (1u << b)))
                continue;
            const char *s = rp_flags_str(1u << b, fb, sizeof fb);
            if (!s || !*s)
                continue;
            if (!first)
                fputs(", ", out);
            put_str(out, s);
            first = 0;
        }
        fputc(']', out);
    }
    /* extras (allowed by the shape): where the node is, and its trace id */
    if (n->file) {
        fputs(", \"file\": ", out);
        put_str(out, n->file);
    }
    if (n->line)
        fprintf(out, ", \"line\": %" PRIu32, n->line);
    fprintf(out, ", \"id\": %" PRIu32 " }", idx);
}

/* One element of "edges".  Write errors are left for ferror(). */
static void put_edge(FILE *out, const struct rp_profile *p, const struct rp_edge *e)
{
    char nb[RP_NAME_BUF];

    fputs("    { \"caller\": ", out);
    put_str(out, e->caller ? rp_node_name(p, &p->nodes[e->caller], nb, sizeof nb) : "<root>");
    fputs(", \"callee\": ", out);
    put_str(out, e->callee ? rp_node_name(p, &p->nodes[e->callee], nb, sizeof nb) : "<root>");
    put_u64_field(out, "calls", e->calls);
    put_u64_field(out, "inclusive_ns", to_ns(p, e->incl));
    put_u64_field(out, "min_ns", to_ns(p, e->min));
    put_u64_field(out, "max_ns", to_ns(p, e->max));
    put_num_field(out, "mean_ns",
                  e->calls ? (double)e->incl / (double)e->calls * p->ns_per_tick : 0);
    fprintf(out, ", \"caller_id\": %" PRIu32 ", \"callee_id\": %" PRIu32 " }", e->caller,
            e->callee);
}

/* One element of "thread_list".  Write errors are left for ferror(). */
static void put_thread(FILE *out, const struct rp_profile *p, const struct rp_thread *t)
{
    fprintf(out, "    { \"tid\": %" PRIu32, t->tid);
    if (t->name) {
        fputs(", \"name\": ", out);
        put_str(out, t->name);
    }
    put_u64_field(out, "events", t->events);
    put_u64_field(out, "lost", t->lost);
    put_u64_field(out, "unmatched_exits", t->unmatched_exits);
    put_u64_field(out, "unclosed", t->unclosed);
    put_u64_field(out, "total_ns", to_ns(p, t->last > t->first ? t->last - t->first : 0));
    fputs(" }", out);
}

/* The analysis warnings (p->warn, one per line) as JSON strings, comma
 * separated.  Write errors are left for ferror(). */
static void put_warnings(FILE *out, const char *warn)
{
    char line[sizeof((struct rp_profile *)0)->warn];
    int first = 1;

    for (const char *s = warn; *s;) {
        size_t n = strcspn(s, "\n");
        if (n) {
            memcpy(line, s, n);
            line[n] = '\0';
            if (!first)
                fputs(", ", out);
            put_str(out, line);
            first = 0;
        }
        s += n;
        if (*s)
            s++;
    }
}

/*
 * See report.h.  Fails with RP_EINVAL for a NULL argument, RP_ENOMEM when
 * the row order cannot be allocated, RP_EIO when writing fails.  o->limit,
 * when not 0, caps the "nodes" array (edges are always complete).
 */
int rp_report_json(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o)
{
    uint32_t *order = NULL, n_rows;
    uint64_t unmatched = 0, unclosed = 0;
    int rc = 0;

    if (!out || !p || !o || (p->n_nodes && !p->nodes))
        return RP_EINVAL;
    order = malloc(sizeof *order * (p->n_nodes ? p->n_nodes : 1));
    if (!order) {
        rc = RP_ENOMEM;
        goto out;
    }
    n_rows = rp_report_order(p, o->sort, order);
    if (o->limit && n_rows > o->limit)
        n_rows = o->limit;
    for (uint32_t i = 0; i < p->n_threads; i++) {
        unmatched += p->threads[i].unmatched_exits;
        unclosed += p->threads[i].unclosed;
    }
    if (p->unmatched_exits > unmatched) /* the replay's sums, when threads say less */
        unmatched = p->unmatched_exits;
    if (p->unclosed > unclosed)
        unclosed = p->unclosed;

    fputs("{\n  \"version\": 1,\n  \"program\": ", out);
    put_str(out, p->program ? p->program : "");
    fprintf(out, ",\n  \"total_ns\": %" PRIu64, to_ns(p, p->total));
    fprintf(out, ",\n  \"threads\": %" PRIu32, p->n_threads);
    fprintf(out, ",\n  \"lost_events\": %" PRIu64, p->lost);
    fprintf(out, ",\n  \"events\": %" PRIu64, p->events);
    fprintf(out, ",\n  \"unmatched_exits\": %" PRIu64 ",\n  \"unclosed\": %" PRIu64, unmatched,
            unclosed);
    fprintf(out, ",\n  \"ended_normally\": %s",
            p->ended && !(p->end_flags & RP_END_SIGNAL) ? "true" : "false");
    fprintf(out, ",\n  \"skipped_chunks\": %" PRIu64 ",\n  \"warnings\": [", p->skipped_chunks);
    put_warnings(out, p->warn);
    fputs("],\n  \"ns_per_tick\": ", out);
    put_num(out, p->ns_per_tick);
    if (o->ranked) {
        fprintf(out, ",\n  \"rank\": { \"weight\": \"%s\", \"alpha\": ",
                p->rank.weight_calls ? "calls" : "time");
        put_num(out, p->rank.alpha);
        fprintf(out, ", \"iterations\": %" PRIu32 ", \"residual\": ", p->rank.iterations);
        put_num(out, p->rank.residual);
        fputs(" }", out);
    }

    fputs(",\n  \"nodes\": [", out);
    for (uint32_t i = 0; i < n_rows; i++) {
        fputs(i ? ",\n" : "\n", out);
        put_node(out, p, order[i], o);
    }
    fputs(n_rows ? "\n  ],\n  \"edges\": [" : "],\n  \"edges\": [", out);
    uint32_t n_edges = 0;
    for (uint32_t i = 0; i < p->n_edges; i++) {
        const struct rp_edge *e = &p->edges[i];
        if (e->caller >= p->n_nodes || e->callee >= p->n_nodes)
            continue; /* cannot happen after replay; never index out of bounds */
        fputs(n_edges++ ? ",\n" : "\n", out);
        put_edge(out, p, e);
    }
    fputs(n_edges ? "\n  ],\n  \"thread_list\": [" : "],\n  \"thread_list\": [", out);
    for (uint32_t i = 0; i < p->n_threads; i++) {
        fputs(i ? ",\n" : "\n", out);
        put_thread(out, p, &p->threads[i]);
    }
    fputs(p->n_threads ? "\n  ]\n}\n" : "]\n}\n", out);

    if (fflush(out) != 0 || ferror(out))
        rc = RP_EIO;
out:
    free(order);
    return rc;
}

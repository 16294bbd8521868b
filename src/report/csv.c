/*
 * csv.c - `report --format csv`: one row per node, the same fields as the
 * JSON "nodes" (docs/report-json.md), as RFC 4180 CSV: a header row, CRLF
 * line ends, fields quoted when they hold a comma, quote, CR, LF or other
 * control character, quotes doubled.  Invalid UTF-8 in names (which may come
 * from untrusted trace files) is replaced by U+FFFD so the file is always
 * valid UTF-8.  Columns that would need fake values are left out: standing,
 * involvement and rank only when ranked, flags (joined with '|') only when
 * flagged; p50/p95/p99 are empty when a node has no histogram.
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
 * (The same rule as json.c, so both outputs give the same names.)
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

/* Writes one text field, quoted when needed.  Errors are left for ferror(). */
static void put_field(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t len = strlen((const char *)s);
    int quote = len && (s[0] == ' ' || s[len - 1] == ' ');

    for (size_t i = 0; i < len && !quote; i++)
        if (s[i] == ',' || s[i] == '"' || s[i] < 0x20 || s[i] == 0x7f)
            quote = 1;
    if (quote)
        fputc('"', out);
    for (size_t i = 0; i < len;) {
        int k = utf8_seq(s + i, len - i);
        if (k < 0) {
            fputs("\xef\xbf\xbd", out); /* U+FFFD */
            i += (size_t)-k;
            continue;
        }
        if (s[i] == '"')
            fputc('"', out);
        fwrite(s + i, 1, (size_t)k, out);
        i += (size_t)k;
    }
    if (quote)
        fputc('"', out);
}

/* A double as a CSV number: %.15g or %.17g, whichever reads back; 0 if not
 * finite; always a '.' decimal point. */
static void put_num(FILE *out, double v)
{
    char buf[40];

    if (!isfinite(v)) {
        fputs(",0", out);
        return;
    }
    snprintf(buf, sizeof buf, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, sizeof buf, "%.17g", v);
    for (char *c = buf; *c; c++)
        if (*c == ',')
            *c = '.';
    fputc(',', out);
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

static void put_u64(FILE *out, uint64_t v)
{
    fprintf(out, ",%" PRIu64, v);
}

static const char *kind_str(uint8_t kind)
{
    static const char *const names[] = {"func", "point", "lock-wait", "lock-hold", "io"};
    return kind <= RP_KIND_IO ? names[kind] : "unknown";
}

/* One data row.  Errors are left for ferror(). */
static void put_row(FILE *out, const struct rp_profile *p, uint32_t idx,
                    const struct rp_report_opts *o)
{
    const struct rp_node *n = &p->nodes[idx];
    double npt = p->ns_per_tick;
    char nb[RP_NAME_BUF];

    put_field(out, rp_node_name(p, n, nb, sizeof nb));
    fprintf(out, ",%s", kind_str(n->kind));
    put_u64(out, n->calls);
    put_u64(out, to_ns(p, n->incl));
    put_u64(out, to_ns(p, n->excl));
    put_num(out, n->mean * npt);
    put_u64(out, to_ns(p, n->min));
    put_u64(out, to_ns(p, n->max));
    put_num(out, n->calls >= 2 && n->m2 > 0 ? sqrt(n->m2 / (double)(n->calls - 1)) * npt : 0);
    if (n->hist.counts && n->hist.n) {
        put_u64(out, to_ns(p, node_q(n, 0.50)));
        put_u64(out, to_ns(p, node_q(n, 0.95)));
        put_u64(out, to_ns(p, node_q(n, 0.99)));
    } else {
        fputs(",,,", out);
    }
    if (o->ranked) {
        put_num(out, n->standing);
        put_num(out, n->involvement);
        fprintf(out, ",%" PRIu32, n->rank);
    }
    if (o->flagged) {
        char flags[256] = "";
        size_t len = 0;
        for (unsigned b = 0; b < 32; b++) {
            char fb[64];
            if (!(n->flags & (1u << b)))
                continue;
            const char *s = rp_flags_str(1u << b, fb, sizeof fb);
            if (!s || !*s)
                continue;
            int w = snprintf(flags + len, sizeof flags - len, "%s%s", len ? "|" : "", s);
            if (w < 0 || (size_t)w >= sizeof flags - len)
                break;
            len += (size_t)w;
        }
        fputc(',', out);
        put_field(out, flags);
    }
    fputc(',', out);
    put_field(out, n->file);
    if (n->line)
        fprintf(out, ",%" PRIu32, n->line);
    else
        fputc(',', out);
    fprintf(out, ",%" PRIu32 "\r\n", idx);
}

/*
 * See report.h.  Fails with RP_EINVAL for a NULL argument, RP_ENOMEM when
 * the row order cannot be allocated, RP_EIO when writing fails.  o->limit,
 * when not 0, caps the number of rows.
 */
int rp_report_csv(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o)
{
    uint32_t *order = NULL, n_rows;
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

    fputs("name,kind,calls,inclusive_ns,exclusive_ns,mean_ns,min_ns,max_ns,stddev_ns,"
          "p50_ns,p95_ns,p99_ns",
          out);
    if (o->ranked)
        fputs(",standing,involvement,rank", out);
    if (o->flagged)
        fputs(",flags", out);
    fputs(",file,line,id\r\n", out);
    for (uint32_t i = 0; i < n_rows; i++)
        put_row(out, p, order[i], o);

    if (fflush(out) != 0 || ferror(out))
        rc = RP_EIO;
out:
    free(order);
    return rc;
}

// SPDX-License-Identifier: MIT
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
#include "report/util.h"
#include "trace/format.h"

/* room for a name rp_node_name formats into our buffer ("<lock> [hold]") */

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
        int k = rp_utf8_seq(s + i, len - i);
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

/* Writes ",<number>" (rp_num_str). */
static void put_num(FILE *out, double v)
{
    char buf[40];
    fputc(',', out);
    fputs(rp_num_str(buf, v), out);
}

static void put_u64(FILE *out, uint64_t v)
{
    fprintf(out, ",%" PRIu64, v);
}

/* One data row.  Errors are left for ferror(). */
static void put_row(FILE *out, const struct rp_profile *p, uint32_t idx,
                    const struct rp_report_opts *o)
{
    const struct rp_node *n = &p->nodes[idx];
    double npt = p->ns_per_tick;
    char nb[RP_NAME_BUF];

    put_field(out, rp_node_name(p, n, nb, sizeof nb));
    fprintf(out, ",%s", rp_kind_str(n->kind));
    put_u64(out, n->calls + rp_node_throttled(n)); /* throttled calls too: the exact count */
    put_u64(out, rp_ticks_ns(p, n->incl));
    put_u64(out, rp_ticks_ns(p, n->excl));
    put_num(out, rp_node_mean(n) * npt);
    put_u64(out, rp_ticks_ns(p, rp_node_min(n)));
    put_u64(out, rp_ticks_ns(p, rp_node_max(n)));
    put_num(out, n->calls >= 2 && rp_node_m2(n) > 0
                     ? sqrt(rp_node_m2(n) / (double)(n->calls - 1)) * npt
                     : 0);
    struct rp_hist hb;
    const struct rp_hist *h = rp_node_hist(n, &hb);
    if (h->len && h->n) {
        put_u64(out, rp_ticks_ns(p, rp_node_q(n, 0.50)));
        put_u64(out, rp_ticks_ns(p, rp_node_q(n, 0.95)));
        put_u64(out, rp_ticks_ns(p, rp_node_q(n, 0.99)));
    } else {
        fputs(",,,", out);
    }
    if (o->ranked) {
        put_num(out, rp_node_standing(p, n));
        put_num(out, rp_node_involvement(p, n));
        fprintf(out, ",%" PRIu32, n->rank);
    }
    if (o->flagged) {
        char flags[256] = "";
        size_t len = 0;
        for (unsigned b = 0; b < 32; b++) {
            const char *s = rp_flag_name(b);
            if (!(n->flags & (1u << b)) || !s)
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
    if (!(order = rp_report_rows(p, o, &n_rows, NULL))) {
        rc = RP_ENOMEM;
        goto out;
    }

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

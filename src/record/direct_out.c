// SPDX-License-Identifier: MIT
/*
 * direct_out.c - what direct mode gives out, always from a merged snapshot
 * (direct_thread.c): the lookups the tests use, the totals, the THREAD,
 * DEFS and STATS chunks written at exit (docs/trace-format.md), and the
 * table rp_report() prints.
 *
 * Invariant: a snapshot is the caller's own copy, so nothing here races
 * with the threads that keep recording.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/span.h"
#include "common/utf8.h"
#include "direct_int.h"
#include "funcs.h"
#include "rankprof.h"
#include "sites.h"
#include "trace/writer.h"

/* Expands s's sparse histogram into counts[RP_HIST_BUCKETS]; returns the
 * number of values in it. */
static uint64_t hist_expand(const struct dtable *t, const struct dstat *s, uint32_t *counts)
{
    uint64_t n = 0;
    memset(counts, 0, RP_HIST_BUCKETS * sizeof(*counts));
    for (unsigned r = 0; r < HROWS; r++) {
        if (!s->row[r])
            continue;
        const uint32_t *c = row_at(t, s->row[r]);
        for (unsigned i = 0; i < RP_HIST_SUB; i++) {
            counts[r * RP_HIST_SUB + i] = c[i];
            n += c[i];
        }
    }
    return n;
}

static void view_of(const struct dtable *t, const struct dstat *s, uint32_t *counts,
                    struct rp_dview *v)
{
    v->calls = s->calls;
    v->incl = s->incl;
    v->dur = s->dur;
    v->excl = rp_span_excl_total(s->excl);
    v->cut = s->cut;
    v->min = s->min != UINT64_MAX ? s->min : 0;
    v->max = s->max;
    v->first = s->first;
    v->last = s->last;
    v->overruns = s->overruns;
    rp_dstat_moments(s, s->calls, &v->mean, &v->m2);
    uint64_t n = hist_expand(t, s, counts);
    v->p50 = rp_hist_quantile(counts, n, 0.50);
    v->p95 = rp_hist_quantile(counts, n, 0.95);
    v->p99 = rp_hist_quantile(counts, n, 0.99);
}

RP_HIDDEN int rp_direct_lookup(uint8_t kind, uint64_t key, struct rp_dview *out)
{
    struct snap s;
    uint32_t *counts = malloc(RP_HIST_BUCKETS * sizeof(*counts));
    int rc = counts ? rp_dsnap_take(&s) : RP_ENOMEM;
    if (rc < 0)
        goto out;
    uint32_t i = s.tab.icap ? idx_find(s.tab.idx, s.tab.icap, TKEY(kind, key)) : 0;
    if (i)
        view_of(&s.tab, stat_at(&s.tab, i), counts, out);
    rc = i ? 0 : RP_ENOENT;
    rp_dsnap_free(&s);
out:
    free(counts);
    return rc;
}

RP_HIDDEN int rp_direct_lookup_edge(uint8_t ckind, uint64_t ckey, uint8_t kind, uint64_t key,
                                    struct rp_dedge_view *out)
{
    struct snap s;
    int rc = rp_dsnap_take(&s);
    if (rc < 0)
        return rc;
    rc = RP_ENOENT;
    const struct dtable *t = &s.tab;
    uint32_t caller = ckind == 0xff ? 0
                      : t->icap     ? idx_find(t->idx, t->icap, TKEY(ckind, ckey))
                                    : 0;
    uint32_t callee = t->icap ? idx_find(t->idx, t->icap, TKEY(kind, key)) : 0;
    uint32_t e1 = 0;
    if (callee && (caller || ckind == 0xff) && t->ecap)
        e1 = idx_find(t->eidx, t->ecap, (uint64_t)caller << 32 | callee);
    if (e1) {
        struct dedge *e = edge_at(t, e1 - 1);
        *out = (struct rp_dedge_view){e->calls, e->incl, e->calls ? e->min : 0, e->max};
        rc = 0;
    }
    rp_dsnap_free(&s);
    return rc;
}

RP_HIDDEN int rp_direct_totals(struct rp_dtotals *out)
{
    struct snap s;
    int rc = rp_dsnap_take(&s);
    if (rc < 0)
        return rc;
    memset(out, 0, sizeof(*out));
    out->threads = s.nth;
    for (uint32_t i = 0; i < s.nth; i++) {
        out->events += s.th[i].events;
        out->dropped += s.th[i].dropped;
        out->unmatched += s.th[i].unmatched;
        out->unclosed += s.th[i].unclosed;
        out->unwound += s.th[i].unwound;
        out->cut += s.th[i].cut;
    }
    rp_dsnap_free(&s);
    return 0;
}

/* ---- output: DEFS, STATS and the printed table -------------------------- */

/*
 * The definition of table key k for DEFS: kind, class and, for sites, the
 * names the site carries.  Functions and locks are named by the analyzer
 * (from MAPS and the binaries).  Returns 0, or -1 to leave the id out.
 */
static int key_def(uint64_t k, struct rp_def *d)
{
    static const uint8_t cls[RP_KIND_MAX] = {
        [RP_KIND_FUNC] = RP_CLASS_FUNC,      [RP_KIND_POINT] = RP_CLASS_POINT,
        [RP_KIND_LOCK_WAIT] = RP_CLASS_LOCK, [RP_KIND_LOCK_HOLD] = RP_CLASS_LOCK,
        [RP_KIND_IO] = RP_CLASS_IO,          [RP_KIND_INSTANT] = RP_CLASS_USER,
        [RP_KIND_COUNTER] = RP_CLASS_USER,   [RP_KIND_WAIT] = RP_CLASS_LOCK, /* a condition */
    };
    uint8_t kind = TKIND(k);
    if (kind >= RP_KIND_MAX)
        return -1;
    memset(d, 0, sizeof(*d));
    d->kind = kind;
    d->cls = cls[kind];
    d->key = TPAYLOAD(k);
    /* sites are keyed as points whatever their kind; the site says which */
    return kind == RP_KIND_POINT ? rp_sites_describe(d->key, d) : 0;
}

/* A DEFS or STATS payload under construction; flushed as a chunk of that
 * type when full. */
struct sbuf {
    uint8_t *p;
    size_t len, cap;
    rp_direct_out_fn out;
    uint32_t type; /* RP_CH_DEFS or RP_CH_STATS */
};

/* Room for n more bytes, flushing the chunk so far if needed. */
static uint8_t *sb_room(struct sbuf *b, size_t n)
{
    if (b->len + n > b->cap && b->len) {
        b->out(b->type, b->p, b->len);
        b->len = 0;
    }
    if (n > b->cap)
        return NULL;
    uint8_t *q = b->p + b->len;
    b->len += n;
    return q;
}

/* Room for a record of tag with a len-byte body, its header written
 * (trace-format.md 4.9).  Returns the body. */
static uint8_t *sb_rec(struct sbuf *b, uint32_t tag, uint32_t len)
{
    uint8_t *q = sb_room(b, 8 + len);
    rp_put32(q, tag);
    rp_put32(q + 4, len);
    return q + 8;
}

/* A record of tag whose body is u32 x, u32 0, then the n u64 values v
 * (ENDS, CUT, OUTSIDE). */
_Static_assert(RP_STATS_ENDS_LEN == 8 + 8 * 2 && RP_STATS_CUT_LEN == 8 + 8 * 1 &&
                   RP_STATS_OUTSIDE_LEN == 8 + 8 * 2,
               "ENDS, CUT and OUTSIDE: u32, u32 0 and u64s (put_x64)");
static void put_x64(struct sbuf *b, uint32_t tag, uint32_t x, const uint64_t *v, unsigned n)
{
    uint8_t *q = sb_rec(b, tag, 8 + 8 * n);
    rp_put32(q, x);
    rp_put32(q + 4, 0);
    for (unsigned i = 0; i < n; i++)
        rp_put64(q + 8 + 8 * i, v[i]);
}

static void put_thread(struct sbuf *b, const struct tsum *t)
{
    uint8_t *q = sb_rec(b, RP_STATS_THREAD, RP_STATS_THREAD_LEN);
    rp_put32(q, t->tid);
    rp_put32(q + 4, 0);
    rp_put64(q + 8, t->first);
    rp_put64(q + 16, t->last);
    rp_put64(q + 24, t->events);
    rp_put64(q + 32, t->unmatched);
    rp_put64(q + 40, t->unclosed);
    rp_put64(q + 48, t->dropped);
    if (t->unwound || t->cut)
        put_x64(b, RP_STATS_ENDS, t->tid, (const uint64_t[]){t->unwound, t->cut}, 2);
}

/* The CUT record of id, after its NODE record: not more than its calls (a
 * running thread's cut may be read before the calls it ends). */
static void put_cut(struct sbuf *b, uint32_t id, const struct dstat *s)
{
    uint64_t cut = s->cut < s->calls ? s->cut : s->calls;
    if (cut)
        put_x64(b, RP_STATS_CUT, id, &cut, 1);
}

/* The FATAL record (rp_dfatal), its frames by their ids in the snapshot
 * (those without one left out). */
static void put_fatal(struct sbuf *b, const struct dtable *t, const uint32_t *ids)
{
    uint32_t fid[RP_STATS_FATAL_MAX], n = 0;
    for (uint32_t i = 0; i < rp_dfatal.n && i < RP_STATS_FATAL_MAX; i++) {
        uint32_t x = t->icap ? idx_find(t->idx, t->icap, rp_dfatal.keys[i]) : 0;
        if (x && x < t->n && ids[x])
            fid[n++] = ids[x];
    }
    if (!n)
        return;
    uint8_t *q = sb_rec(b, RP_STATS_FATAL, RP_STATS_FATAL_LEN + 4 * n);
    rp_put32(q, rp_dfatal.tid);
    rp_put32(q + 4, rp_dfatal.depth);
    rp_put32(q + 8, n);
    rp_put32(q + 12, 0);
    for (uint32_t i = 0; i < n; i++)
        rp_put32(q + 16 + 4 * i, fid[i]);
}

static uint64_t dbits(double v)
{
    uint64_t u;
    memcpy(&u, &v, sizeof(u));
    return u;
}

static void put_node(struct sbuf *b, uint32_t id, const struct dtable *t, const struct dstat *s,
                     const uint32_t *counts)
{
    uint32_t nb = 0;
    for (unsigned i = 0; i < RP_HIST_BUCKETS; i++)
        nb += counts[i] != 0;
    uint32_t len = RP_STATS_NODE_LEN + nb * 8;
    uint8_t *q = sb_rec(b, RP_STATS_NODE, len);
    rp_put32(q, id);
    rp_put32(q + 4, nb);
    double mean, m2;
    rp_dstat_moments(s, s->calls, &mean, &m2);
    /* a running thread's fields are read one by one (direct_int.h), so one
     * may be an activation ahead of another: kept consistent as the reader
     * checks (min <= max <= sum, inclusive and exclusive <= sum) */
    uint64_t dur = s->dur, mx = s->max < dur ? s->max : dur;
    uint64_t mn = s->min != UINT64_MAX ? (s->min < mx ? s->min : mx) : 0;
    uint64_t excl = rp_span_excl_total(s->excl);
    const uint64_t f[] = {s->calls,    s->incl < dur ? s->incl : dur,
                          dur,         excl < dur ? excl : dur,
                          mn,          mx,
                          s->first,    s->last,
                          s->overruns, dbits(mean),
                          dbits(m2)};
    for (unsigned i = 0; i < sizeof(f) / sizeof(f[0]); i++)
        rp_put64(q + 8 + 8 * i, f[i]);
    q += RP_STATS_NODE_LEN;
    for (unsigned i = 0; i < RP_HIST_BUCKETS; i++) {
        if (!counts[i])
            continue;
        rp_put16(q, (uint16_t)i);
        rp_put16(q + 2, 0);
        rp_put32(q + 4, counts[i]);
        q += 8;
    }
    (void)t;
}

/* The OUTSIDE record of id, when s has spans outside the program's code. */
static void put_outside(struct sbuf *b, uint32_t id, const struct dstat *s)
{
    uint64_t calls = LD(s->ocalls), ticks = LD(s->oticks);
    if (calls)
        put_x64(b, RP_STATS_OUTSIDE, id, (const uint64_t[]){calls, ticks}, 2);
}

static void put_edge(struct sbuf *b, uint32_t caller, uint32_t callee, const struct dedge *e)
{
    uint8_t *q = sb_rec(b, RP_STATS_EDGE, RP_STATS_EDGE_LEN);
    rp_put32(q, caller);
    rp_put32(q + 4, callee);
    rp_put64(q + 8, e->calls);
    rp_put64(q + 16, e->incl);
    rp_put64(q + 24, e->calls ? e->min : 0);
    rp_put64(q + 32, e->max);
}

static void out_threads(const struct snap *s, rp_direct_out_fn out)
{
    for (uint32_t i = 0; i < s->nth; i++) {
        uint8_t p[8 + 16];
        size_t n = strnlen(s->th[i].name, 16);
        rp_put32(p, s->th[i].tid);
        rp_put32(p + 4, 0);
        memcpy(p + 8, s->th[i].name, n);
        out(RP_CH_THREAD, p, 8 + n);
    }
}

/* STATS records need at most this much room (a node with every bucket);
 * so does a DEFS record (names and files of at most 65535 bytes). */
#define SB_CAP (8 + RP_STATS_NODE_LEN + 8 * RP_HIST_BUCKETS + (1u << 20))

/* The DEFS chunks of every id s's table defines: ids[i] its id, dense from
 * 1, or 0 for an entry left out. */
static void out_defs(const struct snap *s, uint32_t *ids, struct sbuf *b)
{
    uint32_t next = 1;
    b->type = RP_CH_DEFS;
    for (uint32_t i = 1; i < s->tab.n; i++) {
        struct rp_def d;
        if (key_def(stat_at(&s->tab, i)->key, &d) != 0)
            continue;
        ids[i] = next++;
        rp_def_put(sb_room(b, rp_def_len(&d)), ids[i], &d);
    }
    if (b->len)
        b->out(RP_CH_DEFS, b->p, b->len);
    b->len = 0;
    b->type = RP_CH_STATS;
}

/*
 * The statistics so far as THREAD, DEFS and STATS chunks.  Allocates only
 * with mmap (zalloc), never malloc: the final flush may run in the
 * program's signal handler (an _exit there), which may have interrupted
 * malloc on this thread.  Returns the events counted, or RP_ENOMEM with
 * nothing written.
 */
RP_HIDDEN int64_t rp_direct_write(rp_direct_out_fn out)
{
    struct snap s;
    struct sbuf b = {.cap = SB_CAP, .out = out};
    uint32_t *ids = NULL, *counts = NULL;
    size_t ids_bytes = 0, counts_bytes = RP_HIST_BUCKETS * sizeof(*counts);
    int64_t rc = rp_dsnap_take(&s);
    if (rc < 0)
        return rc;
    rc = RP_ENOMEM;
    ids_bytes = (size_t)s.tab.n * sizeof(*ids);
    ids = zalloc(ids_bytes);
    counts = zalloc(counts_bytes);
    b.p = zalloc(b.cap);
    if (!ids || !counts || !b.p)
        goto out;
    out_threads(&s, out);
    out_defs(&s, ids, &b);
    int64_t events = 0;
    for (uint32_t i = 0; i < s.nth; i++) {
        put_thread(&b, &s.th[i]);
        events += (int64_t)s.th[i].events;
    }
    for (uint32_t i = 1; i < s.tab.n; i++) {
        if (!ids[i])
            continue;
        struct dstat *st = stat_at(&s.tab, i);
        uint64_t hn = hist_expand(&s.tab, st, counts);
        /* a running thread's histogram may hold a value its calls do not
         * count yet (stat_add: calls first, the histogram last): not more
         * values than calls (the reader checks), the slowest left out */
        for (unsigned h = RP_HIST_BUCKETS; hn > st->calls && h-- > 0;) {
            uint32_t cut = hn - st->calls < counts[h] ? (uint32_t)(hn - st->calls) : counts[h];
            counts[h] -= cut;
            hn -= cut;
        }
        put_node(&b, ids[i], &s.tab, st, counts);
        put_cut(&b, ids[i], st);
        put_outside(&b, ids[i], st);
    }
    put_fatal(&b, &s.tab, ids);
    for (uint32_t i = 0; i < s.tab.nedges; i++) {
        struct dedge *ed = edge_at(&s.tab, i);
        uint32_t caller = (uint32_t)(ed->key >> 32), callee = (uint32_t)ed->key;
        if (ids[callee] && (!caller || ids[caller]))
            put_edge(&b, caller ? ids[caller] : 0, ids[callee], ed);
    }
    if (b.len)
        out(RP_CH_STATS, b.p, b.len);
    rc = events;
out:
    zfree(b.p, b.cap);
    zfree(ids, ids_bytes);
    zfree(counts, counts_bytes);
    rp_dsnap_free(&s);
    return rc;
}

/* The printed name of table key k, in buf. */
static const char *key_name(uint64_t k, char *buf, size_t bufsz)
{
    uint8_t kind = TKIND(k);
    uint64_t a = TPAYLOAD(k);
    Dl_info di;
    switch (kind) {
    case RP_KIND_FUNC:
        /* the symbol tables funcs.c reads (static functions too), as
         * `rankprof report` names them; else module+offset, as the report
         * names an address without a symbol */
        if (rp_funcs_name_of(a, buf, bufsz)) {
            return buf;
        } else if (!dladdr((void *)(uintptr_t)a, &di) || !di.dli_fname) {
            snprintf(buf, bufsz, "0x%llx", (unsigned long long)a);
        } else if (di.dli_sname && (uintptr_t)di.dli_saddr == (uintptr_t)a) {
            snprintf(buf, bufsz, "%s", di.dli_sname);
        } else {
            const char *m = strrchr(di.dli_fname, '/');
            snprintf(buf, bufsz, "%s+0x%llx", m ? m + 1 : di.dli_fname,
                     (unsigned long long)(a - (uintptr_t)di.dli_fbase));
        }
        return buf;
    case RP_KIND_LOCK_WAIT:
    case RP_KIND_LOCK_HOLD:
        snprintf(buf, bufsz, "lock@0x%llx [%s]", (unsigned long long)a,
                 kind == RP_KIND_LOCK_WAIT ? "wait" : "hold");
        return buf;
    case RP_KIND_WAIT: /* sites are keyed as points: this is a condition */
        snprintf(buf, bufsz, "cond@0x%llx [wait]", (unsigned long long)a);
        return buf;
    default: {
        struct rp_def d = {0};
        if (rp_sites_describe(a, &d) == 0 && d.name)
            snprintf(buf, bufsz, "%s%s", d.name,
                     d.kind == RP_KIND_LOCK_WAIT || d.kind == RP_KIND_WAIT ? " [wait]"
                     : d.kind == RP_KIND_LOCK_HOLD                         ? " [hold]"
                                                                           : "");
        else
            snprintf(buf, bufsz, "site@0x%llx", (unsigned long long)a);
        return buf;
    }
    }
}

/*
 * The first max_cols characters of name, as text for a terminal, in buf
 * (bufsz >= 5): each byte a terminal could act on written as \xNN, as the
 * analyzer writes the names every other output shows (docs/exports.md):
 * the C0 controls, DEL, the C1 controls (0xc2 0x80-0x9f) and every byte of
 * invalid UTF-8; "\x1b" is four characters.  Never splits a character or
 * an escape; stops early when buf is full.  Returns the characters
 * written.  Cannot fail.
 */
static size_t name_text(const char *name, char *buf, size_t bufsz, size_t max_cols)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *b = (const unsigned char *)name;
    size_t n = strlen(name), o = 0, cols = 0;
    for (size_t i = 0; i < n;) {
        int k = rp_utf8_seq(b + i, n - i);
        int bad = k < 0 || (k == 1 && (b[i] < 0x20 || b[i] == 0x7f)) ||
                  (k == 2 && b[i] == 0xc2 && b[i + 1] < 0xa0);
        size_t m = k < 0 ? (size_t)-k : (size_t)k, need = bad ? 4 * m : m;
        size_t c = bad ? 4 * m : 1;
        if (o + need >= bufsz || cols + c > max_cols)
            break;
        for (size_t j = 0; j < m; j++) {
            if (bad) {
                buf[o++] = '\\';
                buf[o++] = 'x';
                buf[o++] = hex[b[i + j] >> 4];
                buf[o++] = hex[b[i + j] & 15];
            } else {
                buf[o++] = (char)b[i + j];
            }
        }
        cols += c;
        i += m;
    }
    buf[o] = 0;
    return cols;
}

/* Prints a duration in ticks with a unit that keeps it short. */
static void fmt_time(char *buf, size_t n, double ns)
{
    if (ns < 1e3)
        snprintf(buf, n, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, n, "%.2f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, n, "%.2f ms", ns / 1e6);
    else
        snprintf(buf, n, "%.3f s", ns / 1e9);
}

/* The printed table's name column: at most this many characters. */
#define NAME_COLS 40

static const struct dtable *sort_tab;

static int by_incl(const void *a, const void *b)
{
    const struct dstat *x = stat_at(sort_tab, *(const uint32_t *)a);
    const struct dstat *y = stat_at(sort_tab, *(const uint32_t *)b);
    if (x->incl != y->incl)
        return x->incl < y->incl ? 1 : -1;
    return x->calls < y->calls ? 1 : x->calls > y->calls ? -1 : 0;
}

RP_HIDDEN int rp_direct_print(FILE *f, double ns_per_tick)
{
    struct snap s;
    int rc = rp_dsnap_take(&s);
    if (rc < 0)
        return rc;
    uint32_t *order = malloc(s.tab.n * sizeof(*order)), n = 0;
    if (!order) {
        rp_dsnap_free(&s);
        return RP_ENOMEM;
    }
    for (uint32_t i = 1; i < s.tab.n; i++)
        if (stat_at(&s.tab, i)->calls)
            order[n++] = i;
    rp_own_lock(&rp_rt.print_lock); /* qsort's comparator reads sort_tab */
    sort_tab = &s.tab;
    qsort(order, n, sizeof(*order), by_incl);
    rp_own_unlock(&rp_rt.print_lock);

    uint64_t events = 0, dropped = 0;
    for (uint32_t i = 0; i < s.nth; i++) {
        events += s.th[i].events;
        dropped += s.th[i].dropped;
    }
    fprintf(f, "rankprof direct profile: %u threads, %llu events, %u ids", s.nth,
            (unsigned long long)events, n);
    if (dropped)
        fprintf(f, ", %llu events NOT RECORDED (a table bound was hit)",
                (unsigned long long)dropped);
    if (s.unlisted)
        fprintf(f, ", %llu events of ended threads not listed (counted in the rows)",
                (unsigned long long)s.unlisted);
    fprintf(f, "\n%-40s %12s %12s %12s %12s  %s\n", "name", "calls", "total", "avg", "max",
            "status");
    for (uint32_t i = 0; i < n; i++) {
        const struct dstat *st = stat_at(&s.tab, order[i]);
        char name[256], shown[4 * NAME_COLS + 1], tot[32], avg[32], mx[32];
        uint8_t kind = TKIND(st->key);
        key_name(st->key, name, sizeof(name));
        /* names are the program's text: escaped, as every output shows them */
        size_t cols = name_text(name, shown, sizeof(shown), NAME_COLS);
        int span = kind != RP_KIND_INSTANT && kind != RP_KIND_COUNTER && st->dur;
        fmt_time(tot, sizeof(tot), (double)st->incl * ns_per_tick);
        fmt_time(avg, sizeof(avg), (double)st->dur / (double)st->calls * ns_per_tick);
        fmt_time(mx, sizeof(mx), (double)st->max * ns_per_tick);
        fprintf(f, "%s%*s %12llu %12s %12s %12s  %s\n", shown, (int)(NAME_COLS - cols), "",
                (unsigned long long)st->calls, span ? tot : "-", span ? avg : "-", span ? mx : "-",
                st->overruns ? "OVER BUDGET" : "ok");
    }
    fflush(f);
    free(order);
    rp_dsnap_free(&s);
    return 0;
}

RP_API int rp_report(FILE *f)
{
    if (!f)
        return RP_EINVAL;
    if (!rp_rt.direct)
        return RP_EBUSY;
    return rp_direct_print(f, rp_rt.freq > 0 ? 1e9 / rp_rt.freq : 1.0);
}

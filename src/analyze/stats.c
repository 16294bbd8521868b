// SPDX-License-Identifier: MIT
/*
 * stats.c - the analyzer's side of direct mode: STATS chunks (layout in
 * src/trace/format.h) added to a profile's nodes, edges and threads.
 *
 * A STATS chunk is untrusted input like any other: every record is checked
 * against the chunk's bounds before it is read, every id must have been
 * defined by a DEFS chunk, every field must be consistent with the others
 * (min <= max, inclusive and exclusive within the duration sum, histogram
 * buckets in range, increasing, and not counting more values than calls),
 * and nothing is allocated with a size taken from the file.  The first bad
 * record stops the analysis with its file offset.
 *
 * FCOUNT chunks (throttled calls, rp_fcount_read) are checked the same way
 * and add to the function nodes' `throttled` counts.
 *
 * Records add up (several STATS chunks, or several records for one id, are
 * merged): sums are added, min/max combined, and the Welford mean and M2 of
 * two parts are merged by Chan's formula:
 *
 *     n = na + nb   d = mb - ma   mean = ma + d nb / n
 *     M2 = M2a + M2b + d^2 na nb / n
 */
#include "stats.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "common/error.h"
#include "emap.h"
#include "trace/format.h"
#include "trace/reader.h"

static int bad(const struct rp_chunk *c, const uint8_t *rec, char *err, size_t errsz,
               const char *what)
{
    snprintf(err, errsz, "malformed STATS record at offset %llu (%s)",
             (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(rec - c->data)), what);
    return RP_EFORMAT;
}

/* Is id a node that a DEFS chunk defined? */
static int defined(const struct rp_profile *p, uint32_t id)
{
    return id > 0 && id < p->n_nodes && p->nodes[id].kind != 0xff;
}

static double getd(const uint8_t *q)
{
    uint64_t u = rp_get64(q);
    double d;
    memcpy(&d, &u, sizeof(d));
    return d;
}

/* The thread of p announced as tid, or NULL.  Cannot fail. */
static struct rp_thread *thread_of(struct rp_profile *p, uint32_t tid)
{
    for (uint32_t i = 0; i < p->n_threads; i++)
        if (p->threads[i].tid == tid)
            return &p->threads[i];
    return NULL;
}

static int read_thread_rec(struct rp_profile *p, const uint8_t *q, uint32_t only_tid,
                           const char **why)
{
    uint32_t tid = rp_get32(q);
    uint64_t first = rp_get64(q + 8), last = rp_get64(q + 16), events = rp_get64(q + 24);
    if (events && first > last) {
        *why = "first event after the last";
        return RP_EFORMAT;
    }
    if (only_tid && !rp_tid_match(only_tid, tid))
        return 0;
    struct rp_thread *th = thread_of(p, tid);
    if (!th) {
        *why = "a thread no THREAD chunk announced";
        return RP_EFORMAT;
    }
    if (events) {
        if (!th->events || first < th->first)
            th->first = first;
        if (last > th->last)
            th->last = last;
    }
    th->events += events;
    th->unmatched_exits += rp_get64(q + 32);
    th->unclosed += rp_get64(q + 40);
    th->lost += rp_get64(q + 48);
    p->events += events;
    return 0;
}

/* Checks and adds a NODE record (body q of len bytes). */
static int read_node_rec(struct rp_profile *p, const uint8_t *q, uint32_t len, const char **why)
{
    uint32_t id = rp_get32(q), nb = rp_get32(q + 4);
    uint64_t f[9];
    for (unsigned i = 0; i < 9; i++)
        f[i] = rp_get64(q + 8 + 8 * i);
    uint64_t calls = f[0], incl = f[1], dur = f[2], excl = f[3], mn = f[4], mx = f[5];
    double mean = getd(q + 80), m2 = getd(q + 88);

    if (!defined(p, id))
        return *why = "id not defined by a DEFS chunk", RP_EFORMAT;
    if (nb > RP_HIST_BUCKETS || len != RP_STATS_NODE_LEN + 8u * nb)
        return *why = "length does not match its bucket count", RP_EFORMAT;
    if (calls && (mn > mx || incl > dur || excl > dur || (mx > dur)))
        return *why = "inconsistent times (min > max, or a part larger than the sum)", RP_EFORMAT;
    if (!(mean >= 0 && m2 >= 0)) /* also rejects NaN */
        return *why = "negative or NaN mean or variance", RP_EFORMAT;
    const uint8_t *b = q + RP_STATS_NODE_LEN;
    uint64_t sum = 0;
    int prev = -1;
    for (uint32_t i = 0; i < nb; i++, b += 8) {
        uint16_t bucket = rp_get16(b);
        uint32_t cnt = rp_get32(b + 4);
        if (bucket >= RP_HIST_BUCKETS || (int)bucket <= prev || !cnt)
            return *why = "histogram bucket out of range, out of order or empty", RP_EFORMAT;
        prev = bucket;
        sum += cnt;
    }
    if (sum > calls)
        return *why = "histogram counts more values than calls", RP_EFORMAT;

    struct rp_node *n = &p->nodes[id];
    struct rp_node_x x = rp_node_x_raw(n); /* (its histogram n's: set back below) */
    /* the buckets come in increasing order: the window spans the first and
     * the last */
    b = q + RP_STATS_NODE_LEN;
    if (nb && rp_hist_cover(&x.hist, rp_get16(b), rp_get16(b + 8u * (nb - 1))))
        return RP_ENOMEM;
    if (n->x)
        n->x->hist = x.hist;
    for (; nb--; b += 8)
        rp_hist_bump(&x.hist, rp_get16(b), rp_get32(b + 4));
    x.hist.n += sum;
    if (calls) {
        uint64_t na = n->calls, nt = na + calls;
        double d = mean - x.mean;
        x.m2 += m2 + d * d * (double)na * (double)calls / (double)nt;
        x.mean += d * (double)calls / (double)nt;
        n->calls = nt;
        n->incl += incl;
        x.dur_sum += dur;
        n->excl += excl;
        x.min = !na || mn < x.min ? mn : x.min;
        x.max = mx > x.max ? mx : x.max;
        x.overruns += f[8]; /* (f[6], f[7]: the first and last start, which no report reads) */
    }
    if (rp_node_x_setraw(n, &x) < 0) { /* (only when n had none apart) */
        rp_hist_free(&x.hist);
        return RP_ENOMEM;
    }
    return 0;
}

static int read_edge_rec(struct rp_profile *p, struct rp_emap *em, const uint8_t *q,
                         const char **why)
{
    uint32_t caller = rp_get32(q), callee = rp_get32(q + 4);
    uint64_t calls = rp_get64(q + 8), incl = rp_get64(q + 16);
    uint64_t mn = rp_get64(q + 24), mx = rp_get64(q + 32);
    if ((caller && !defined(p, caller)) || !defined(p, callee))
        return *why = "caller or callee not defined by a DEFS chunk", RP_EFORMAT;
    if (calls && (mn > mx || mx > incl))
        return *why = "inconsistent times (min > max, or max over the total)", RP_EFORMAT;
    if (!calls)
        return 0;
    struct rp_edge *e = rp_emap_get(em, caller, callee);
    if (!e)
        return RP_ENOMEM;
    e->min = !e->calls || mn < e->min ? mn : e->min;
    e->max = mx > e->max ? mx : e->max;
    e->calls += calls;
    e->incl += incl;
    return 0;
}

/* An ENDS record at q: the thread's spans ended without their exit,
 * unwound and cut.  RP_EFORMAT with *why. */
static int read_ends_rec(struct rp_profile *p, const uint8_t *q, uint32_t only_tid,
                         const char **why)
{
    uint32_t tid = rp_get32(q);
    struct rp_thread *th = thread_of(p, tid);
    if (!th)
        return *why = "a thread no THREAD chunk announced", RP_EFORMAT;
    if (only_tid && !rp_tid_match(only_tid, tid))
        return 0;
    th->unwound += rp_get64(q + 8);
    th->cut += rp_get64(q + 16);
    return 0;
}

/* A CUT record at q: how many of the id's calls so far ended without their
 * exit.  RP_EFORMAT with *why, or RP_ENOMEM. */
static int read_cut_rec(struct rp_profile *p, const uint8_t *q, const char **why)
{
    uint32_t id = rp_get32(q);
    uint64_t cut = rp_get64(q + 8);
    if (!defined(p, id))
        return *why = "id not defined by a DEFS chunk", RP_EFORMAT;
    struct rp_node *n = &p->nodes[id];
    struct rp_node_x x = rp_node_x_raw(n);
    if (cut > n->calls - x.cut)
        return *why = "more calls cut than its NODE records count", RP_EFORMAT;
    if (!cut)
        return 0;
    x.cut += cut;
    if (rp_node_x_setraw(n, &x) < 0) { /* (only when n had none apart) */
        rp_hist_free(&x.hist);
        return RP_ENOMEM;
    }
    return 0;
}

/* A FATAL record at q (len bytes): where the thread a fatal signal hit
 * was, its innermost frames by id.  RP_EFORMAT with *why. */
static int read_fatal_rec(struct rp_profile *p, const uint8_t *q, uint32_t len, const char **why)
{
    uint32_t tid = rp_get32(q), depth = rp_get32(q + 4), n = rp_get32(q + 8);
    if (n > RP_STATS_FATAL_MAX || len != RP_STATS_FATAL_LEN + 4 * n)
        return *why = "wrong length", RP_EFORMAT;
    if (n > depth)
        return *why = "more frames than its depth", RP_EFORMAT;
    if (!thread_of(p, tid))
        return *why = "a thread no THREAD chunk announced", RP_EFORMAT;
    for (uint32_t k = 0; k < n; k++)
        if (!defined(p, rp_get32(q + 16 + 4 * k)))
            return *why = "id not defined by a DEFS chunk", RP_EFORMAT;
    _Static_assert(RP_STATS_FATAL_MAX <= RP_FATAL_FRAMES, "a FATAL record fits the profile");
    p->fatal_tid = tid;
    p->fatal_depth = depth;
    p->fatal_n = n;
    for (uint32_t k = 0; k < n; k++)
        p->fatal_stack[k] = rp_get32(q + 16 + 4 * k);
    return 0;
}

/* Says once, among the profile's warnings, that --thread cannot split
 * direct-mode statistics. */
static void warn_thread_filter(struct rp_profile *p)
{
    static const char msg[] = "direct-mode statistics are per process: the thread "
                              "selection applies to the thread totals only\n";
    size_t n = strlen(p->warn);
    if (!strstr(p->warn, msg) && n + sizeof(msg) <= sizeof(p->warn))
        memcpy(p->warn + n, msg, sizeof(msg));
}

/* An OUTSIDE record at q: the edge from RP_OUTSIDE_CALLER to its id in em
 * (finish_accs moves it to p->outside).  RP_EFORMAT with *why, or
 * RP_ENOMEM. */
static int read_outside_rec(struct rp_profile *p, struct rp_emap *em, const uint8_t *q,
                            const char **why)
{
    uint32_t id = rp_get32(q);
    uint64_t calls = rp_get64(q + 8), ticks = rp_get64(q + 16);
    if (!defined(p, id))
        return *why = "id not defined by a DEFS chunk", RP_EFORMAT;
    p->outside_apart = 1;
    if (!calls)
        return 0;
    struct rp_edge *e = rp_emap_get(em, RP_OUTSIDE_CALLER, id);
    if (!e)
        return RP_ENOMEM;
    e->calls += calls;
    e->incl += ticks;
    return 0;
}

int rp_stats_read(struct rp_profile *p, struct rp_emap *em, const struct rp_chunk *c,
                  uint32_t only_tid, char *err, size_t errsz)
{
    if (only_tid)
        warn_thread_filter(p);
    const uint8_t *q = c->data, *end = c->data + c->len;
    while (q < end) {
        const char *why = NULL;
        int rc = 0;
        if ((size_t)(end - q) < 8)
            return bad(c, q, err, errsz, "record header cut short");
        uint32_t tag = rp_get32(q), len = rp_get32(q + 4);
        if ((size_t)(end - q) - 8 < len)
            return bad(c, q, err, errsz, "record longer than its chunk");
        const uint8_t *body = q + 8;
        switch (tag) {
        case RP_STATS_THREAD:
            rc = len == RP_STATS_THREAD_LEN ? read_thread_rec(p, body, only_tid, &why)
                                            : (why = "wrong length", RP_EFORMAT);
            break;
        case RP_STATS_NODE:
            rc = len >= RP_STATS_NODE_LEN ? read_node_rec(p, body, len, &why)
                                          : (why = "wrong length", RP_EFORMAT);
            break;
        case RP_STATS_EDGE:
            rc = len == RP_STATS_EDGE_LEN ? read_edge_rec(p, em, body, &why)
                                          : (why = "wrong length", RP_EFORMAT);
            break;
        case RP_STATS_OUTSIDE:
            rc = len == RP_STATS_OUTSIDE_LEN ? read_outside_rec(p, em, body, &why)
                                             : (why = "wrong length", RP_EFORMAT);
            break;
        case RP_STATS_ENDS:
            rc = len == RP_STATS_ENDS_LEN ? read_ends_rec(p, body, only_tid, &why)
                                          : (why = "wrong length", RP_EFORMAT);
            break;
        case RP_STATS_CUT:
            rc = len == RP_STATS_CUT_LEN ? read_cut_rec(p, body, &why)
                                         : (why = "wrong length", RP_EFORMAT);
            break;
        case RP_STATS_FATAL:
            rc = len >= RP_STATS_FATAL_LEN ? read_fatal_rec(p, body, len, &why)
                                           : (why = "wrong length", RP_EFORMAT);
            break;
        default:
            break; /* a newer record type: skipped */
        }
        if (rc == RP_EFORMAT)
            return bad(c, q, err, errsz, why);
        if (rc < 0)
            return rc;
        q = body + len;
    }
    return 0;
}

/* ---- FCOUNT: calls of throttled functions ---------------------------------- */

struct keyidx {
    uint64_t key;
    uint32_t idx;
};

static int keyidx_cmp(const void *a, const void *b)
{
    const struct keyidx *x = a, *y = b;
    return x->key < y->key ? -1 : x->key > y->key;
}

int rp_fcount_read(struct rp_profile *p, const struct rp_chunk *c, uint32_t only_tid, char *err,
                   size_t errsz)
{
    if (c->len < 8 || (c->len - 8) % 16 != 0) {
        snprintf(err, errsz, "malformed FCOUNT chunk at offset %llu (length %u)",
                 (unsigned long long)c->offset, c->len);
        return RP_EFORMAT;
    }
    uint32_t k = rp_get32(c->data + 4); /* 1 in k timed after the throttle (0: none) */
    if (k > p->throttle_sample)
        p->throttle_sample = k;
    if ((only_tid && !rp_tid_match(only_tid, rp_get32(c->data))) || c->len == 8)
        return 0;
    struct keyidx *ki = malloc((p->n_nodes ? p->n_nodes : 1) * sizeof(*ki));
    if (!ki)
        return RP_ENOMEM;
    uint32_t n = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (p->nodes[i].kind == RP_KIND_FUNC)
            ki[n++] = (struct keyidx){p->nodes[i].key, i};
    qsort(ki, n, sizeof(*ki), keyidx_cmp);
    for (const uint8_t *q = c->data + 8; q < c->data + c->len; q += 16) {
        struct keyidx want = {rp_get64(q), 0};
        const struct keyidx *hit = bsearch(&want, ki, n, sizeof(*ki), keyidx_cmp);
        if (!hit)
            continue;
        struct rp_node_x x = rp_node_x_raw(&p->nodes[hit->idx]);
        x.throttled += rp_get64(q + 8);
        if (rp_node_x_setraw(&p->nodes[hit->idx], &x) < 0) {
            free(ki);
            return RP_ENOMEM;
        }
    }
    free(ki);
    return 0;
}

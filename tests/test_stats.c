// SPDX-License-Identifier: MIT
/*
 * test_stats.c - unit tests of the analyzer's STATS reader (analyze/stats.c)
 * through rp_replay_file: a direct-mode file written here record by record
 * (the layout of docs/trace-format.md §4.9, encoded independently of the
 * recorder) is loaded and every field checked; records split over two
 * chunks add up (Chan's merge of mean and M2 against the two-pass values);
 * then each kind of damage, with valid checksums so that only the STATS
 * checks can catch it, must fail with RP_EFORMAT and a message naming the
 * offset of the bad record.  Also the analyzer's histogram (analyze/histwin.h),
 * a window of rows: against the full array of src/common/hist.h filled with
 * the same values (percentiles equal, the window exactly the rows from the
 * lowest value's to the highest's), merged from parts, and saturating.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/profile.h"
#include "analyze/replay.h"
#include "check.h"
#include "common/bytes.h"
#include "common/error.h"
#include "trace/format.h"
#include "trace/writer.h"

static char path[] = "/tmp/rp_test_stats.XXXXXX";

static uint8_t file[1 << 16];
static size_t flen;

static void chunk(uint32_t type, const void *payload, size_t len)
{
    rp_chunk_header(file + flen, type, payload, (uint32_t)len);
    memcpy(file + flen + RP_CHUNK_HDR_SIZE, payload, len);
    flen += RP_CHUNK_HDR_SIZE + len;
}

static uint8_t *rec(uint8_t *q, uint32_t tag, uint32_t len)
{
    rp_put32(q, tag);
    rp_put32(q + 4, len);
    return q + 8;
}

static uint8_t *thread_rec(uint8_t *q, uint32_t tid, uint64_t first, uint64_t last, uint64_t events)
{
    uint8_t *b = rec(q, RP_STATS_THREAD, RP_STATS_THREAD_LEN);
    memset(b, 0, RP_STATS_THREAD_LEN);
    rp_put32(b, tid);
    rp_put64(b + 8, first);
    rp_put64(b + 16, last);
    rp_put64(b + 24, events);
    rp_put64(b + 48, 3); /* not recorded */
    return b + RP_STATS_THREAD_LEN;
}

static void putd(uint8_t *q, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    rp_put64(q, u);
}

/* A NODE record for durations v[0..n) (one bucket per value given). */
static uint8_t *node_rec(uint8_t *q, uint32_t id, const uint64_t *v, uint32_t n, uint64_t incl,
                         uint64_t excl, const uint16_t *buckets, const uint32_t *counts,
                         uint32_t nb)
{
    uint64_t sum = 0, mn = UINT64_MAX, mx = 0;
    for (uint32_t i = 0; i < n; i++) {
        sum += v[i];
        mn = v[i] < mn ? v[i] : mn;
        mx = v[i] > mx ? v[i] : mx;
    }
    double mean = (double)sum / n, m2 = 0;
    for (uint32_t i = 0; i < n; i++)
        m2 += ((double)v[i] - mean) * ((double)v[i] - mean);
    uint8_t *b = rec(q, RP_STATS_NODE, RP_STATS_NODE_LEN + 8 * nb);
    rp_put32(b, id);
    rp_put32(b + 4, nb);
    const uint64_t f[] = {n, incl, sum, excl, mn, mx, 100, 900, 1};
    for (int i = 0; i < 9; i++)
        rp_put64(b + 8 + 8 * i, f[i]);
    putd(b + 80, mean);
    putd(b + 88, m2);
    for (uint32_t i = 0; i < nb; i++) {
        rp_put16(b + RP_STATS_NODE_LEN + 8 * i, buckets[i]);
        rp_put16(b + RP_STATS_NODE_LEN + 8 * i + 2, 0);
        rp_put32(b + RP_STATS_NODE_LEN + 8 * i + 4, counts[i]);
    }
    return b + RP_STATS_NODE_LEN + 8 * nb;
}

static uint8_t *edge_rec(uint8_t *q, uint32_t caller, uint32_t callee, uint64_t calls,
                         uint64_t incl, uint64_t mn, uint64_t mx)
{
    uint8_t *b = rec(q, RP_STATS_EDGE, RP_STATS_EDGE_LEN);
    rp_put32(b, caller);
    rp_put32(b + 4, callee);
    rp_put64(b + 8, calls);
    rp_put64(b + 16, incl);
    rp_put64(b + 24, mn);
    rp_put64(b + 32, mx);
    return b + RP_STATS_EDGE_LEN;
}

static uint8_t *cut_rec(uint8_t *q, uint32_t id, uint64_t cut)
{
    uint8_t *b = rec(q, RP_STATS_CUT, RP_STATS_CUT_LEN);
    rp_put32(b, id);
    rp_put32(b + 4, 0);
    rp_put64(b + 8, cut);
    return b + RP_STATS_CUT_LEN;
}

static uint8_t *ends_rec(uint8_t *q, uint32_t tid, uint64_t unwound, uint64_t cut)
{
    uint8_t *b = rec(q, RP_STATS_ENDS, RP_STATS_ENDS_LEN);
    rp_put32(b, tid);
    rp_put32(b + 4, 0);
    rp_put64(b + 8, unwound);
    rp_put64(b + 16, cut);
    return b + RP_STATS_ENDS_LEN;
}

/* A FATAL record: thread tid was in ids[0..n) (outermost first) of depth. */
static uint8_t *fatal_rec(uint8_t *q, uint32_t tid, uint32_t depth, const uint32_t *ids, uint32_t n)
{
    uint8_t *b = rec(q, RP_STATS_FATAL, RP_STATS_FATAL_LEN + 4 * n);
    rp_put32(b, tid);
    rp_put32(b + 4, depth);
    rp_put32(b + 8, n);
    rp_put32(b + 12, 0);
    for (uint32_t i = 0; i < n; i++)
        rp_put32(b + 16 + 4 * i, ids[i]);
    return b + RP_STATS_FATAL_LEN + 4 * n;
}

/* Offsets (in the file) of the records of the second STATS chunk: node 2's,
 * the edge, node 2's CUT, thread 7's ENDS, its FATAL (each right after the
 * one before). */
static size_t off_node2, off_edge, off_cut, off_ends, off_fatal;

/*
 * The file: ids 1 (func "outer") and 2 (point "work"); thread 7; node 2
 * has durations {10, 20, 30} in chunk one and {40, 50} in chunk two, 2 of
 * its 5 calls cut; thread 7 has 3 spans unwound and 1 cut, and a fatal
 * signal hit it 5 frames deep, in 1 -> 2 innermost.
 * corrupt(b) may damage the record bytes before they are checksummed.
 */
static void build(void (*corrupt)(uint8_t *rec2, uint8_t *edge))
{
    uint8_t info[256], p[4096], *q;
    size_t ilen = 0;
    flen = 0;
    rp_file_header(file);
    flen = RP_FILE_HDR_SIZE;
    rp_info_put(info, sizeof(info), &ilen, "mode", "direct", 6);
    rp_info_put(info, sizeof(info), &ilen, "freq_hz", "1000000000", 10);
    chunk(RP_CH_INFO, info, ilen);
    uint8_t th[12] = {7, 0, 0, 0, 0, 0, 0, 0, 'w', 'r', 'k', '1'};
    chunk(RP_CH_THREAD, th, sizeof(th));

    struct rp_enc e;
    rp_enc_init(&e, NULL, NULL);
    struct rp_def d1 = {.kind = RP_KIND_FUNC, .cls = RP_CLASS_FUNC, .key = 0x4000, .name = "outer"};
    struct rp_def d2 = {
        .kind = RP_KIND_POINT, .cls = RP_CLASS_POINT, .key = 0x8000, .name = "work"};
    CHECK_EQ(rp_enc_id(&e, &d1), 1);
    CHECK_EQ(rp_enc_id(&e, &d2), 2);
    size_t dlen;
    const uint8_t *defs = rp_enc_take_defs(&e, &dlen);
    chunk(RP_CH_DEFS, defs, dlen);
    rp_enc_free(&e);

    static const uint64_t a[] = {10, 20, 30}, b2[] = {40, 50}, o[] = {200};
    static const uint16_t ba[] = {10, 20, 30}, bb[] = {40, 49}, bo[] = {200};
    static const uint32_t one[] = {1, 1, 1}, ob[] = {1, 1};
    q = thread_rec(p, 7, 1000, 5000, 12);
    q = node_rec(q, 1, o, 1, 200, 50, bo, one, 1);
    q = node_rec(q, 2, a, 3, 60, 60, ba, one, 3);
    q = edge_rec(q, 0, 1, 1, 200, 200, 200);
    chunk(RP_CH_STATS, p, (size_t)(q - p));

    off_node2 = flen + RP_CHUNK_HDR_SIZE;
    q = node_rec(p, 2, b2, 2, 90, 90, bb, ob, 2);
    off_edge = off_node2 + (size_t)(q - p);
    q = edge_rec(q, 1, 2, 5, 150, 10, 50);
    off_cut = off_node2 + (size_t)(q - p);
    q = cut_rec(q, 2, 2);
    off_ends = off_node2 + (size_t)(q - p);
    q = ends_rec(q, 7, 3, 1);
    off_fatal = off_node2 + (size_t)(q - p);
    static const uint32_t hit[] = {1, 2};
    q = fatal_rec(q, 7, 5, hit, 2);
    if (corrupt)
        corrupt(p, p + (off_edge - off_node2));
    chunk(RP_CH_STATS, p, (size_t)(q - p));
    uint8_t end[32] = {0};
    rp_put32(end + 28, RP_END_EXIT);
    chunk(RP_CH_END, end, sizeof(end));

    FILE *f = fopen(path, "wb");
    fwrite(file, 1, flen, f);
    fclose(f);
}

static void test_load(void)
{
    struct rp_profile p = {0};
    char err[512];
    build(NULL);
    CHECK_EQ(rp_replay_file(path, NULL, &p, NULL, NULL, err, sizeof(err)), 0);
    CHECK(p.mode && !strcmp(p.mode, "direct"));
    CHECK_EQ(p.n_nodes, 3);
    struct rp_node *w = &p.nodes[2];
    CHECK_EQ(w->calls, 5);
    CHECK_EQ(rp_node_dur_sum(w), 150);
    CHECK_EQ(w->incl, 150);
    CHECK_EQ(w->excl, 150);
    CHECK_EQ(rp_node_min(w), 10);
    CHECK_EQ(rp_node_max(w), 50);
    CHECK_EQ(rp_node_overruns(w), 2);
    CHECK_NEAR(rp_node_mean(w), 30.0, 1e-12);
    CHECK_NEAR(rp_node_m2(w), 1000.0, 1e-9); /* (-20)^2 + (-10)^2 + 0 + 10^2 + 20^2 */
    struct rp_hist hb;
    const struct rp_hist *wh = rp_node_hist(w, &hb);
    CHECK_EQ(wh->n, 5);
    CHECK(wh->lo == 0 && wh->len == 64); /* the rows of buckets 10 and 50 */
    CHECK_EQ(rp_hist_q(wh, 0.5), 30);
    CHECK_EQ(rp_hist_q(wh, 1.0), 49); /* bucket 49 is [49, 50) */
    CHECK_EQ(p.n_edges, 2);
    for (uint32_t i = 0; i < p.n_edges; i++) {
        struct rp_edge *e = &p.edges[i];
        if (e->caller == 1) {
            CHECK_EQ(e->callee, 2);
            CHECK_EQ(e->calls, 5);
            CHECK_EQ(e->incl, 150);
            CHECK_EQ(e->min, 10);
            CHECK_EQ(e->max, 50);
        } else {
            CHECK_EQ(e->caller, 0);
            CHECK_EQ(e->callee, 1);
        }
    }
    CHECK_EQ(p.n_threads, 1);
    CHECK_EQ(p.threads[0].tid, 7);
    CHECK_EQ(p.threads[0].events, 12);
    CHECK_EQ(p.threads[0].lost, 3);
    CHECK_EQ(p.total, 4000);
    CHECK_EQ(rp_node_cut(w), 2);
    CHECK_EQ(rp_node_cut(&p.nodes[1]), 0);
    CHECK_EQ(p.threads[0].unwound, 3);
    CHECK_EQ(p.threads[0].cut, 1);
    CHECK_EQ(p.unwound, 3);
    CHECK_EQ(p.cut, 1);
    CHECK_EQ(p.fatal_tid, 7);
    CHECK_EQ(p.fatal_depth, 5);
    CHECK_EQ(p.fatal_n, 2);
    CHECK(p.fatal_stack[0] == 1 && p.fatal_stack[1] == 2);
    rp_profile_free(&p);
}

/* ---- damage --------------------------------------------------------------- */

static void bad_id(uint8_t *n, uint8_t *e)
{
    (void)e, rp_put32(n + 8, 9);
}
static void bad_len(uint8_t *n, uint8_t *e)
{
    (void)e, rp_put32(n + 4, RP_STATS_NODE_LEN + 8);
}
static void bad_long(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put32(e + 4, 4000);
}
static void bad_minmax(uint8_t *n, uint8_t *e)
{
    (void)e, rp_put64(n + 8 + 40, 60);
}
static void bad_incl(uint8_t *n, uint8_t *e)
{
    (void)e, rp_put64(n + 8 + 16, 91);
}
static void bad_bucket(uint8_t *n, uint8_t *e)
{
    (void)e, rp_put16(n + 8 + 96, 5000);
}
static void bad_order(uint8_t *n, uint8_t *e)
{
    (void)e, rp_put16(n + 8 + 104, 40);
}
static void bad_count(uint8_t *n, uint8_t *e)
{
    (void)e, rp_put32(n + 8 + 100, 7);
}
static void bad_nan(uint8_t *n, uint8_t *e)
{
    (void)e, putd(n + 8 + 88, -1.0);
}
static void bad_callee(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put32(e + 12, 0);
}
static void bad_emax(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put64(e + 8 + 32, 151);
}

/* (the CUT record follows the edge, the ENDS record the CUT) */
static uint8_t *cut_at(uint8_t *e)
{
    return e + 8 + RP_STATS_EDGE_LEN;
}
static void bad_cut_many(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put64(cut_at(e) + 8 + 8, 6); /* of 5 calls */
}
static void bad_cut_id(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put32(cut_at(e) + 8, 9);
}
static void bad_ends_tid(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put32(cut_at(e) + 8 + RP_STATS_CUT_LEN + 8, 8);
}
static void bad_ends_len(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put32(cut_at(e) + 8 + RP_STATS_CUT_LEN + 4, 16);
}
static uint8_t *fatal_at(uint8_t *e)
{
    return cut_at(e) + 8 + RP_STATS_CUT_LEN + 8 + RP_STATS_ENDS_LEN;
}
static void bad_fatal_depth(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put32(fatal_at(e) + 8 + 4, 1); /* 2 frames of 1 */
}
static void bad_fatal_id(uint8_t *n, uint8_t *e)
{
    (void)n, rp_put32(fatal_at(e) + 8 + 20, 9);
}

static void test_damage(void)
{
    enum { NODE, EDGE, CUT, ENDS, FATAL };
    static const struct {
        void (*fn)(uint8_t *, uint8_t *);
        int at; /* the bad record */
        const char *why;
    } cases[] = {
        {bad_id, NODE, "not defined"},        {bad_len, NODE, "length"},
        {bad_long, EDGE, "longer than"},      {bad_minmax, NODE, "min > max"},
        {bad_incl, NODE, "larger than"},      {bad_bucket, NODE, "bucket"},
        {bad_order, NODE, "out of order"},    {bad_count, NODE, "more values than calls"},
        {bad_nan, NODE, "negative or NaN"},   {bad_callee, EDGE, "not defined"},
        {bad_emax, EDGE, "max over"},         {bad_cut_many, CUT, "more calls cut"},
        {bad_cut_id, CUT, "not defined"},     {bad_ends_tid, ENDS, "no THREAD chunk"},
        {bad_ends_len, ENDS, "wrong length"}, {bad_fatal_depth, FATAL, "than its depth"},
        {bad_fatal_id, FATAL, "not defined"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        struct rp_profile p = {0};
        char err[512], want[64];
        build(cases[i].fn);
        int rc = rp_replay_file(path, NULL, &p, NULL, NULL, err, sizeof(err));
        CHECK_EQ(rc, (unsigned long long)RP_EFORMAT);
        const size_t off[] = {off_node2, off_edge, off_cut, off_ends, off_fatal};
        snprintf(want, sizeof(want), "STATS record at offset %zu ", off[cases[i].at]);
        if (!strstr(err, want) || !strstr(err, cases[i].why)) {
            fprintf(stderr, "case %zu: error '%s' lacks '%s' or '%s'\n", i, err, want,
                    cases[i].why);
            failures++;
        }
        rp_profile_free(&p);
    }
}

static unsigned long long rng = 88172645463325252ull;

static uint64_t next_u64(void)
{
    return check_xorshift(&rng);
}

/* A value of shape k: within one octave, spread over 40 octaves, two far
 * clusters, or tiny (below 32, a bucket each). */
static uint64_t value(int k)
{
    uint64_t r = next_u64();
    switch (k) {
    case 0:
        return 4096 + r % 4096;
    case 1:
        return (r >> 24) >> (r % 40); /* 40 bits, shifted down by 0..39 */
    case 2:
        return r % 2 ? 100 + r % 50 : ((uint64_t)1 << 40) + r % 1000;
    default:
        return r % 32;
    }
}

static void test_hist_window(void)
{
    static uint32_t dense[RP_HIST_BUCKETS];
    static const double qs[] = {0.001, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0};
    for (int k = 0; k < 4; k++) {
        struct rp_hist h = {0}, a = {0}, b = {0};
        uint64_t lo = UINT64_MAX, hi = 0;
        memset(dense, 0, sizeof dense);
        for (int i = 0; i < 20000; i++) {
            uint64_t v = value(k);
            lo = v < lo ? v : lo;
            hi = v > hi ? v : hi;
            rp_hist_count(dense, v);
            CHECK(rp_hist_add(&h, v) == 0);
            CHECK(rp_hist_add(i % 3 ? &a : &b, v) == 0); /* two parts */
        }
        unsigned rlo = rp_hist_index(lo) / RP_HIST_SUB * RP_HIST_SUB;
        unsigned rhi = rp_hist_index(hi) / RP_HIST_SUB * RP_HIST_SUB + RP_HIST_SUB;
        CHECK(h.lo == rlo && h.lo + h.len == rhi); /* exactly the rows between */
        CHECK(rp_hist_merge(&a, &b) == 0);
        a.n += b.n;
        CHECK(a.lo == h.lo && a.len == h.len && a.n == h.n);
        for (unsigned j = 0; j < sizeof qs / sizeof qs[0]; j++) {
            uint64_t want = rp_hist_quantile(dense, 20000, qs[j]);
            CHECK_EQ(rp_hist_q(&h, qs[j]), want);
            CHECK_EQ(rp_hist_q(&a, qs[j]), want);
        }
        if (k == 0)
            CHECK_EQ(h.len, RP_HIST_SUB); /* one octave: one row, 128 bytes */
        rp_hist_free(&h);
        rp_hist_free(&a);
        rp_hist_free(&b);
    }
    /* saturation: a count at UINT32_MAX stays there */
    struct rp_hist s = {0};
    CHECK(rp_hist_add(&s, 7) == 0);
    rp_hist_bump(&s, 7, UINT32_MAX);
    CHECK_EQ(s.counts[7 - s.lo], UINT32_MAX);
    rp_hist_bump(&s, 7, 1);
    CHECK_EQ(s.counts[7 - s.lo], UINT32_MAX);
    CHECK_EQ(rp_hist_q(&(struct rp_hist){0}, 0.5), 0); /* empty */
    rp_hist_free(&s);
}

static const struct check_case cases[] = {
    {"load", test_load},
    {"damage", test_damage},
    {"hist_window", test_hist_window},
};

int main(int argc, char **argv)
{
    int fd = mkstemp(path);
    if (fd < 0)
        return 1;
    close(fd);
    int rc = check_run("test_stats", argc, argv, cases, sizeof cases / sizeof cases[0]);
    unlink(path);
    return rc;
}

// SPDX-License-Identifier: MIT
/*
 * test_rec_direct.c - unit tests of the direct-mode engine (record/direct.c),
 * driven with given timestamps through rp_direct_feed(), so every number is
 * known in advance:
 *
 *   percentiles   5000 log-spread durations: p50/p95/p99 of the histogram
 *                 within 3 % of the nearest-rank values of the sorted list;
 *                 calls, min, max, sum exact; Welford mean and M2 against
 *                 the two-pass values
 *   exclusive     A(100) calls B(10) and C(20): excl(A) = 70, edges
 *   recursion     f -> f -> f: inclusive counts the outermost activation
 *                 only; duration sum counts all three; edges root->f, f->f
 *   matching      an exit with nothing open is unmatched; an exit of a span
 *                 open deeper ends the ones above it, with their time
 *   threads       4 threads feed the same known sequence; two end (merged at
 *                 thread exit), two stay live; the merged snapshot is exact,
 *                 while the main thread takes snapshots during the feeding
 *   bounds        more ids than a table holds and a stack deeper than the
 *                 shadow stack: counted as dropped, nothing crashes
 *   STATS         rp_direct_write's chunks parsed here by an independent
 *                 reader: the NODE record of a function equals the snapshot
 *   buckets       durations at and around every power of two land in the
 *                 buckets of src/common/hist.h
 *   rp_report     RP_EBUSY outside direct mode; the table row of a known id
 *
 * The recorder's constructor starts trace mode with the test's environment;
 * the test stops it first and removes its file (the engine does not use it).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/bytes.h"
#include "common/hist.h"
#include "record/direct.h"
#include "record/rt.h"
#include "trace/format.h"
#include "trace/writer.h"

#define W(op, pl) rp_raw_word(RP_RAW_##op, (pl))

static void enter(struct rp_dthread *d, uint64_t t, uint64_t fn)
{
    rp_direct_feed(d, t, W(FUNC_ENTER, fn));
}

static void leave(struct rp_dthread *d, uint64_t t, uint64_t fn)
{
    rp_direct_feed(d, t, W(FUNC_EXIT, fn));
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* The nearest-rank q-quantile of sorted v[n]. */
static uint64_t nearest_rank(const uint64_t *v, size_t n, double q)
{
    double r = q * (double)n;
    size_t k = (size_t)r;
    if ((double)k < r)
        k++;
    return v[k ? k - 1 : 0];
}

static void test_percentiles(void)
{
    enum { N = 5000 };
    static uint64_t durs[N], sorted[N];
    const uint64_t fn = 0x10000;
    struct rp_dthread *d = rp_direct_thread_new(1001);
    CHECK(d != NULL);
    uint64_t x = 12345, t = 1000, sum = 0, mn = UINT64_MAX, mx = 0;
    for (int i = 0; i < N; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        /* log-spread over 5..2^30 ticks */
        unsigned e = 2 + (unsigned)(x >> 59) % 28;
        uint64_t dur = (1ull << e) + ((x >> 20) & ((1ull << e) - 1)) + 5;
        durs[i] = dur;
        enter(d, t, fn);
        leave(d, t + dur, fn);
        t += dur + 7;
        sum += dur;
        mn = dur < mn ? dur : mn;
        mx = dur > mx ? dur : mx;
    }
    memcpy(sorted, durs, sizeof(durs));
    qsort(sorted, N, sizeof(sorted[0]), cmp_u64);

    struct rp_dview v;
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, fn, &v), 0);
    CHECK_EQ(v.calls, N);
    CHECK_EQ(v.dur, sum);
    CHECK_EQ(v.incl, sum);
    CHECK_EQ(v.excl, sum);
    CHECK_EQ(v.min, mn);
    CHECK_EQ(v.max, mx);
    double mean = (double)sum / N, m2 = 0;
    for (int i = 0; i < N; i++)
        m2 += ((double)durs[i] - mean) * ((double)durs[i] - mean);
    CHECK_NEAR(v.mean, mean, mean * 1e-9);
    CHECK_NEAR(v.m2, m2, m2 * 1e-9);
    const double qs[] = {0.5, 0.95, 0.99};
    const uint64_t got[] = {v.p50, v.p95, v.p99};
    for (int i = 0; i < 3; i++) {
        double want = (double)nearest_rank(sorted, N, qs[i]);
        CHECK_NEAR((double)got[i], want, want * 0.03);
    }
    rp_direct_thread_end(d);
}

static void test_exclusive(void)
{
    const uint64_t A = 0x20000, B = 0x20010, C = 0x20020;
    struct rp_dthread *d = rp_direct_thread_new(1002);
    enter(d, 0, A);
    enter(d, 10, B);
    leave(d, 20, B);
    enter(d, 50, C);
    leave(d, 70, C);
    leave(d, 100, A);
    struct rp_dview v;
    struct rp_dedge_view e;
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, A, &v), 0);
    CHECK_EQ(v.incl, 100);
    CHECK_EQ(v.excl, 70);
    CHECK_EQ(v.first, 0);
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, C, &v), 0);
    CHECK_EQ(v.incl, 20);
    CHECK_EQ(v.excl, 20);
    CHECK_EQ(v.first, 50);
    CHECK_EQ(rp_direct_lookup_edge(RP_KIND_FUNC, A, RP_KIND_FUNC, B, &e), 0);
    CHECK_EQ(e.calls, 1);
    CHECK_EQ(e.incl, 10);
    CHECK_EQ(rp_direct_lookup_edge(0xff, 0, RP_KIND_FUNC, A, &e), 0);
    CHECK_EQ(e.calls, 1);
    CHECK_EQ(e.incl, 100);
    CHECK_EQ(rp_direct_lookup_edge(RP_KIND_FUNC, B, RP_KIND_FUNC, C, &e), RP_ENOENT);
    rp_direct_thread_end(d);
}

static void test_recursion(void)
{
    const uint64_t f = 0x30000, g = 0x30010;
    struct rp_dthread *d = rp_direct_thread_new(1003);
    /* f[0,100] -> f[10,80] -> f[20,50] -> g[30,40] */
    enter(d, 0, f);
    enter(d, 10, f);
    enter(d, 20, f);
    enter(d, 30, g);
    leave(d, 40, g);
    leave(d, 50, f);
    leave(d, 80, f);
    leave(d, 100, f);
    struct rp_dview v;
    struct rp_dedge_view e;
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, f, &v), 0);
    CHECK_EQ(v.calls, 3);
    CHECK_EQ(v.incl, 100);          /* the outermost activation only */
    CHECK_EQ(v.dur, 100 + 70 + 30); /* every activation */
    CHECK_EQ(v.excl, 30 + 40 + 20); /* dur - callees' time, per frame */
    CHECK_EQ(v.min, 30);
    CHECK_EQ(v.max, 100);
    CHECK_EQ(rp_direct_lookup_edge(RP_KIND_FUNC, f, RP_KIND_FUNC, f, &e), 0);
    CHECK_EQ(e.calls, 2);
    CHECK_EQ(e.incl, 100);
    CHECK_EQ(e.min, 30);
    CHECK_EQ(e.max, 70);
    CHECK_EQ(rp_direct_lookup_edge(RP_KIND_FUNC, f, RP_KIND_FUNC, g, &e), 0);
    CHECK_EQ(e.calls, 1);
    rp_direct_thread_end(d);
}

static void test_matching(void)
{
    const uint64_t a = 0x40000, b = 0x40010, c = 0x40020;
    struct rp_dtotals t0, t1;
    CHECK_EQ(rp_direct_totals(&t0), 0);
    struct rp_dthread *d = rp_direct_thread_new(1004);
    leave(d, 5, c); /* nothing open: unmatched */
    enter(d, 10, a);
    enter(d, 20, b);
    enter(d, 30, c);
    leave(d, 60, a); /* ends c (30) and b (40) there, with their time, then a */
    struct rp_dview v;
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, a, &v), 0);
    CHECK_EQ(v.calls, 1);
    CHECK_EQ(v.incl, 50);
    CHECK_EQ(v.excl, 10);
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, b, &v), 0);
    CHECK_EQ(v.calls, 1);
    CHECK_EQ(v.incl, 40);
    CHECK_EQ(v.excl, 10);
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, c, &v), 0);
    CHECK_EQ(v.calls, 1);
    CHECK_EQ(v.incl, 30);
    /* locks, inside a function: wait, acquire (wait ends, hold begins),
     * release */
    const uint64_t lk = 0x48000, lk2 = 0x48100;
    enter(d, 90, a);
    rp_direct_feed(d, 100, W(LOCK_WAIT, lk));
    rp_direct_feed(d, 130, W(LOCK_ACQ, lk));
    rp_direct_feed(d, 200, W(LOCK_REL, lk));
    leave(d, 210, a);
    CHECK_EQ(rp_direct_lookup(RP_KIND_LOCK_WAIT, lk, &v), 0);
    CHECK_EQ(v.incl, 30);
    CHECK_EQ(rp_direct_lookup(RP_KIND_LOCK_HOLD, lk, &v), 0);
    CHECK_EQ(v.incl, 70);
    /* with no function open: outside the program's code, no call */
    rp_direct_feed(d, 300, W(LOCK_WAIT, lk2));
    rp_direct_feed(d, 330, W(LOCK_ACQ, lk2));
    rp_direct_feed(d, 400, W(LOCK_REL, lk2));
    CHECK_EQ(rp_direct_lookup(RP_KIND_LOCK_WAIT, lk2, &v), 0);
    CHECK_EQ(v.calls, 0);
    CHECK_EQ(rp_direct_lookup(RP_KIND_LOCK_HOLD, lk2, &v), 0);
    CHECK_EQ(v.calls, 0);
    rp_direct_thread_end(d);
    CHECK_EQ(rp_direct_totals(&t1), 0);
    CHECK_EQ(t1.unmatched - t0.unmatched, 1);
    CHECK_EQ(t1.unclosed - t0.unclosed, 0);
    CHECK_EQ(t1.events - t0.events, 13);
}

/* ---- threads ------------------------------------------------------------- */

#define NT    4
#define ITERS 20000
static const uint64_t TW = 0x50000, TL = 0x50010;
static pthread_barrier_t bar;

/* Worker i: ITERS times  w[t, t+30+k] -> l[t+5, t+15+k%7]  (k = it % 13). */
static void *feeder(void *arg)
{
    int i = (int)(intptr_t)arg;
    struct rp_dthread *d = rp_direct_thread_new(2000 + (uint32_t)i);
    uint64_t t = 0;
    pthread_barrier_wait(&bar);
    for (int it = 0; it < ITERS; it++) {
        uint64_t k = (uint64_t)(it % 13);
        enter(d, t, TW);
        enter(d, t + 5, TL);
        leave(d, t + 15 + k % 7, TL);
        leave(d, t + 30 + k, TW);
        t += 100;
    }
    pthread_barrier_wait(&bar); /* all fed */
    if (i % 2)
        rp_direct_thread_end(d); /* merged at thread end */
    pthread_barrier_wait(&bar);  /* main checks the merge */
    pthread_barrier_wait(&bar);  /* main is done */
    if (!(i % 2))
        rp_direct_thread_end(d);
    return NULL;
}

static void test_threads(void)
{
    pthread_t th[NT];
    pthread_barrier_init(&bar, NULL, NT + 1);
    for (int i = 0; i < NT; i++)
        pthread_create(&th[i], NULL, feeder, (void *)(intptr_t)i);
    pthread_barrier_wait(&bar);
    /* snapshots of running threads: never more than fed, never torn */
    uint64_t prev = 0;
    for (int s = 0; s < 20; s++) {
        struct rp_dview v;
        if (rp_direct_lookup(RP_KIND_FUNC, TW, &v) == 0) {
            CHECK(v.calls >= prev && v.calls <= (uint64_t)NT * ITERS);
            /* an entry is made at a span's start: a snapshot taken before any
             * span of it ended (a busy host can hold every feeder back) has no
             * calls, and its min and max read 0 */
            if (v.calls)
                CHECK(v.min >= 30 && v.max <= 42);
            else
                CHECK(v.min == 0 && v.max == 0);
            prev = v.calls;
        }
    }
    pthread_barrier_wait(&bar);
    pthread_barrier_wait(&bar);

    /* the expected numbers, computed once for one thread */
    uint64_t wsum = 0, lsum = 0, wexcl = 0;
    double wm = 0, wm2 = 0;
    for (int it = 0; it < ITERS; it++) {
        uint64_t k = (uint64_t)(it % 13), w = 30 + k, l = 10 + k % 7;
        wsum += w;
        lsum += l;
        wexcl += w - l;
        double dlt = (double)w - wm;
        wm += dlt / (it + 1);
        wm2 += dlt * ((double)w - wm);
    }
    struct rp_dview v;
    struct rp_dedge_view e;
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, TW, &v), 0);
    CHECK_EQ(v.calls, (uint64_t)NT * ITERS);
    CHECK_EQ(v.incl, NT * wsum);
    CHECK_EQ(v.excl, NT * wexcl);
    CHECK_EQ(v.min, 30);
    CHECK_EQ(v.max, 42);
    CHECK_NEAR(v.mean, wm, 1e-9 * wm);
    CHECK_NEAR(v.m2, NT * wm2, 1e-6 * NT * wm2); /* equal parts: Chan adds M2s */
    CHECK_EQ(v.p50, 36);                         /* the median k is 6; bucket [36, 37) is exact */
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, TL, &v), 0);
    CHECK_EQ(v.incl, NT * lsum);
    CHECK_EQ(rp_direct_lookup_edge(RP_KIND_FUNC, TW, RP_KIND_FUNC, TL, &e), 0);
    CHECK_EQ(e.calls, (uint64_t)NT * ITERS);
    CHECK_EQ(e.incl, NT * lsum);
    CHECK_EQ(e.min, 10);
    CHECK_EQ(e.max, 16);
    CHECK_EQ(rp_direct_lookup_edge(0xff, 0, RP_KIND_FUNC, TW, &e), 0);
    CHECK_EQ(e.calls, (uint64_t)NT * ITERS);
    pthread_barrier_wait(&bar);
    for (int i = 0; i < NT; i++)
        pthread_join(th[i], NULL);
    pthread_barrier_destroy(&bar);
    /* all ended now: the process table says the same */
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, TW, &v), 0);
    CHECK_EQ(v.calls, (uint64_t)NT * ITERS);
    CHECK_EQ(v.incl, NT * wsum);
}

static void test_bounds(void)
{
    struct rp_dtotals t0, t1;
    CHECK_EQ(rp_direct_totals(&t0), 0);
    struct rp_dthread *d = rp_direct_thread_new(1005);
    /* 10000 frames deep: more than the shadow stack */
    for (uint64_t i = 0; i < 10000; i++)
        enter(d, i, 0x60000);
    for (uint64_t i = 0; i < 10000; i++)
        leave(d, 100000 + i, 0x60000);
    /* 20000 distinct functions: more than a thread table's 16383 ids */
    for (uint64_t i = 0; i < 20000; i++) {
        enter(d, 200000 + 10 * i, 0x1000000 + 16 * i);
        leave(d, 200000 + 10 * i + 5, 0x1000000 + 16 * i);
    }
    struct rp_dview v;
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, 0x1000000, &v), 0);
    CHECK_EQ(v.calls, 1);
    rp_direct_thread_end(d);
    CHECK_EQ(rp_direct_totals(&t1), 0);
    CHECK(t1.dropped - t0.dropped > 0);
    CHECK_EQ(t1.unmatched - t0.unmatched, 0); /* the deep exits still pair up */
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, 0x60000, &v), 0);
    CHECK(v.calls > 0 && v.calls <= 10000);
}

/* ---- STATS through an independent reader -------------------------------- */

static uint8_t chunks[8 << 20];
static size_t chunks_len;

static void capture(uint32_t type, const void *payload, size_t len)
{
    if (chunks_len + 8 + len > sizeof(chunks))
        return;
    rp_put32(chunks + chunks_len, type);
    rp_put32(chunks + chunks_len + 4, (uint32_t)len);
    memcpy(chunks + chunks_len + 8, payload, len);
    chunks_len += 8 + len;
}

/* The id the captured DEFS chunks give the function at address fn, or 0. */
static uint32_t captured_func_id(uint64_t fn)
{
    uint32_t id = 0;
    for (size_t o = 0; o < chunks_len;) {
        uint32_t type = rp_get32(chunks + o), len = rp_get32(chunks + o + 4);
        const uint8_t *q = chunks + o + 8, *end = q + len;
        if (type == RP_CH_DEFS)
            for (; q < end;
                 q += RP_DEF_FIXED + rp_get16(q + 6) + rp_get16(q + 20) + rp_get16(q + 22))
                if (q[4] == RP_KIND_FUNC && rp_get64(q + 8) == fn)
                    id = rp_get32(q);
        o += 8 + len;
    }
    return id;
}

static void test_stats_chunk(void)
{
    const uint64_t fn = 0x10000; /* from test_percentiles */
    struct rp_dview v;
    CHECK_EQ(rp_direct_lookup(RP_KIND_FUNC, fn, &v), 0);
    chunks_len = 0;
    CHECK(rp_direct_write(capture) > 0);
    /* fn's id in DEFS, then its NODE record in STATS */
    uint32_t id = captured_func_id(fn), nodes = 0, edges = 0, threads = 0;
    int found = 0;
    for (size_t o = 0; o < chunks_len;) {
        uint32_t type = rp_get32(chunks + o), len = rp_get32(chunks + o + 4);
        const uint8_t *q = chunks + o + 8, *end = q + len;
        if (type == RP_CH_STATS)
            for (; q < end; q += 8 + rp_get32(q + 4)) {
                uint32_t tag = rp_get32(q);
                const uint8_t *b = q + 8;
                threads += tag == RP_STATS_THREAD;
                edges += tag == RP_STATS_EDGE;
                if (tag != RP_STATS_NODE)
                    continue;
                nodes++;
                if (rp_get32(b) != id)
                    continue;
                found = 1;
                uint32_t nb = rp_get32(b + 4);
                CHECK_EQ(rp_get32(q + 4), RP_STATS_NODE_LEN + 8 * nb);
                CHECK_EQ(rp_get64(b + 8), v.calls);
                CHECK_EQ(rp_get64(b + 16), v.incl);
                CHECK_EQ(rp_get64(b + 24), v.dur);
                CHECK_EQ(rp_get64(b + 32), v.excl);
                CHECK_EQ(rp_get64(b + 40), v.min);
                CHECK_EQ(rp_get64(b + 48), v.max);
                uint64_t sum = 0;
                static uint32_t counts[RP_HIST_BUCKETS];
                memset(counts, 0, sizeof(counts));
                for (uint32_t k = 0; k < nb; k++) {
                    const uint8_t *bk = b + RP_STATS_NODE_LEN + 8 * k;
                    counts[rp_get16(bk)] = rp_get32(bk + 4);
                    sum += rp_get32(bk + 4);
                }
                CHECK_EQ(sum, v.calls);
                CHECK_EQ(rp_hist_quantile(counts, sum, 0.5), v.p50);
                CHECK_EQ(rp_hist_quantile(counts, sum, 0.99), v.p99);
            }
        o += 8 + len;
    }
    CHECK(id != 0);
    CHECK(found);
    CHECK(nodes > 20000 / 2); /* test_bounds' functions */
    CHECK(edges > 0);
    CHECK(threads >= 4);
}

/*
 * The engine's histogram buckets are those of src/common/hist.h: durations
 * 0..4096 and 2^e - 1, 2^e, 2^e + 1 and 1.5 * 2^e for every e, through the
 * engine and the STATS chunk, land exactly where rp_hist_count puts them.
 */
static void test_buckets(void)
{
    const uint64_t fn = 0x70000;
    static uint32_t want[RP_HIST_BUCKETS], got[RP_HIST_BUCKETS];
    memset(want, 0, sizeof(want));
    memset(got, 0, sizeof(got));
    struct rp_dthread *d = rp_direct_thread_new(1006);
    CHECK(d != NULL);
    uint64_t n = 0;
    for (uint64_t v = 0; v <= 4096; v++, n++) {
        enter(d, 1, fn);
        leave(d, 1 + v, fn);
        rp_hist_count(want, v);
    }
    for (unsigned e = 5; e < 63; e++) {
        const uint64_t vs[] = {(1ull << e) - 1, 1ull << e, (1ull << e) + 1, 3ull << (e - 1)};
        for (unsigned k = 0; k < 4; k++, n++) {
            enter(d, 1, fn);
            leave(d, 1 + vs[k], fn);
            rp_hist_count(want, vs[k]);
        }
    }
    rp_direct_thread_end(d);
    chunks_len = 0;
    CHECK(rp_direct_write(capture) > 0);
    uint32_t id = captured_func_id(fn);
    uint64_t sum = 0;
    for (size_t o = 0; o < chunks_len;) {
        uint32_t type = rp_get32(chunks + o), len = rp_get32(chunks + o + 4);
        const uint8_t *q = chunks + o + 8, *end = q + len;
        if (type == RP_CH_STATS)
            for (; q < end; q += 8 + rp_get32(q + 4)) {
                const uint8_t *b = q + 8;
                if (rp_get32(q) != RP_STATS_NODE || rp_get32(b) != id)
                    continue;
                for (uint32_t k = 0; k < rp_get32(b + 4); k++) {
                    const uint8_t *bk = b + RP_STATS_NODE_LEN + 8 * k;
                    got[rp_get16(bk)] = rp_get32(bk + 4);
                    sum += rp_get32(bk + 4);
                }
            }
        o += 8 + len;
    }
    CHECK(id != 0);
    CHECK_EQ(sum, n);
    unsigned bad = 0;
    for (unsigned b = 0; b < RP_HIST_BUCKETS; b++)
        bad += got[b] != want[b];
    CHECK_EQ(bad, 0);
}

/* rp_report: RP_EBUSY outside direct mode; in it, the table. */
static void test_report(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f != NULL);
    CHECK_EQ(rp_report(NULL), (unsigned long long)RP_EINVAL);
    CHECK_EQ(rp_report(f), (unsigned long long)RP_EBUSY);
    rp_rt.direct = 1; /* as RANKPROF_MODE=direct would have set it */
    rp_rt.freq = 1e9;
    CHECK_EQ(rp_report(f), 0);
    rp_rt.direct = 0;
    fclose(f);
    /* test_exclusive's A: 1 call of 100 ticks (= ns at 1 GHz), no budget */
    CHECK(buf && strstr(buf, "name                                            calls"));
    char row[128];
    snprintf(row, sizeof(row), "0x%x ", 0x20000);
    const char *r = buf ? strstr(buf, row) : NULL;
    CHECK(r != NULL);
    if (r)
        CHECK(strncmp(r + strcspn(r, "1"), "1       100 ns       100 ns       100 ns  ok", 44) ==
              0);
    free(buf);
}

static const struct check_case cases[] = {
    {"percentiles", test_percentiles}, {"exclusive", test_exclusive},
    {"recursion", test_recursion},     {"matching", test_matching},
    {"buckets", test_buckets},         {"threads", test_threads},
    {"bounds", test_bounds},           {"stats_chunk", test_stats_chunk},
    {"report", test_report},
};

/* (all of them: buckets before bounds, which fills the process table) */
int main(int argc, char **argv)
{
    /* stop the trace recorder the constructor started; the engine is ours */
    rp_rt_shutdown();
    if (rp_rt.path[0])
        unlink(rp_rt.path);
    CHECK_EQ(rp_direct_init(), 0);
    return check_run("test_rec_direct", argc, argv, cases, sizeof cases / sizeof cases[0]);
}

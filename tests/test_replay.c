// SPDX-License-Identifier: MIT
/*
 * test_replay.c - unit tests of the replay (analyze/replay.c): the synthetic
 * trace of trace_fixture.h replayed to the profile derived by hand, without
 * its END chunk, with FCOUNT records; hand-made event streams (compact and
 * general, cut short, undefined ids); off-CPU intervals and recorder
 * pauses; frames left without their exit; reused thread ids; lock holds as
 * intervals; spans below the clock's resolution.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/cct.h"
#include "analyze/profile.h"
#include "analyze/replay.h"
#include "common/bytes.h"
#include "common/error.h"
#include "trace/format.h"
#include "trace/reader.h"
#include "trace/writer.h"
#include "check.h"
#include "analyze/spanwalk.h"
#include "report/util.h"
#include "trace_fixture.h"

static void test_replay(const char *path)
{
    struct rp_profile p = {0};
    char err[512];
    int rc = rp_replay_file(path, NULL, &p, NULL, NULL, err, sizeof(err));
    CHECK_EQ(rc, 0);
    if (rc)
        fprintf(stderr, "  replay: %s\n", err);
    CHECK_EQ(p.warn[0], 0); /* a complete file: no warnings */
    if (p.warn[0])
        fprintf(stderr, "  warnings: %s\n", p.warn);
    check_profile(&p, 1);
    /* statistics apart (struct rp_node_x) only where one is not its
     * default: the instant and the wait, one call each, have none; A and
     * B have a cut call, C three calls of varied durations (m2) */
    if (p.n_nodes > IW) {
        CHECK(p.nodes[IS].x == NULL);
        CHECK(p.nodes[IW].x == NULL);
        CHECK(p.nodes[IA].x != NULL && p.nodes[IB].x != NULL && p.nodes[IC].x != NULL);
        CHECK(rp_node_x_get(&p.nodes[IW]).mean == 20.0 && rp_node_m2(&p.nodes[IW]) == 0.0);
        CHECK_EQ(rp_node_oncpu_max(&p.nodes[IW]), 20);
    }
    rp_profile_free(&p);

    /* only thread 202: B 5 + 10, C 90 */
    struct rp_replay_opts o = {.tid = 202};
    memset(&p, 0, sizeof(p));
    CHECK_EQ(rp_replay_file(path, &o, &p, NULL, NULL, err, sizeof(err)), 0);
    CHECK_EQ(p.n_threads, 1);
    if (p.n_nodes > IC) {
        CHECK_EQ(p.nodes[IB].calls, 2);
        CHECK_EQ(p.nodes[IB].incl, 15);
        CHECK_EQ(p.nodes[IC].excl, 80);
    }
    CHECK_EQ(p.events, 7);
    rp_profile_free(&p);
}

static void test_no_end(void)
{
    struct fbuf f = {0};
    char path[256], err[512];
    struct rp_profile p;
    build_trace(&f, 0);
    snprintf(path, sizeof(path), "%s/noend.rpt", tmpdir);
    write_file(path, f.p, f.len);
    CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), 0);
    CHECK_STR(p.warn, "abnormally");
    CHECK_STR(p.warn, path);
    check_profile(&p, 0); /* same numbers, only the END is missing */
    rp_profile_free(&p);
    unlink(path);
    free(f.p);
}

/*
 * FCOUNT (format 1.2): throttled calls counted by the recorder, per thread
 * and code address, are added to the function nodes and shown in none of
 * the statistics (calls stays the recorded count).  An address without a
 * node is ignored; --thread takes the chunk of that thread only; a payload
 * that is not whole pairs is an error naming the chunk.
 */
static void test_fcount(void)
{
    struct fbuf f = {0};
    char path[256], err[512];
    struct rp_profile p;
    build_trace(&f, 0);
    uint8_t fc[8 + 3 * 16];
    rp_put32(fc, 101);
    rp_put32(fc + 4, 0);
    rp_put64(fc + 8, FB);
    rp_put64(fc + 16, 7);
    rp_put64(fc + 24, 0xdead000); /* no such function: ignored */
    rp_put64(fc + 32, 3);
    rp_put64(fc + 40, FC);
    rp_put64(fc + 48, 1);
    fb_chunk(&f, RP_CH_FCOUNT, fc, sizeof(fc));
    rp_put32(fc, 202);
    fb_chunk(&f, RP_CH_FCOUNT, fc, 8 + 16); /* B: 7 more */
    uint8_t end[32] = {0};
    rp_put32(end + 28, RP_END_EXIT);
    fb_chunk(&f, RP_CH_END, end, sizeof(end));
    snprintf(path, sizeof(path), "%s/fcount.rpt", tmpdir);
    write_file(path, f.p, f.len);
    CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), 0);
    check_profile(&p, 1); /* every statistic as without the counts */
    if (p.n_nodes > IC) {
        CHECK_EQ(rp_node_throttled(&p.nodes[IB]), 14);
        CHECK_EQ(rp_node_throttled(&p.nodes[IC]), 1);
        CHECK_EQ(rp_node_throttled(&p.nodes[IA]), 0);
    }
    rp_profile_free(&p);

    struct rp_replay_opts o = {.tid = 202};
    memset(&p, 0, sizeof(p));
    CHECK_EQ(rp_replay_file(path, &o, &p, NULL, NULL, err, sizeof(err)), 0);
    if (p.n_nodes > IC) {
        CHECK_EQ(rp_node_throttled(&p.nodes[IB]), 7);
        CHECK_EQ(rp_node_throttled(&p.nodes[IC]), 0);
    }
    rp_profile_free(&p);

    /* a pair cut short */
    f.len -= RP_CHUNK_HDR_SIZE + sizeof(end);
    fb_chunk(&f, RP_CH_FCOUNT, fc, 8 + 15);
    write_file(path, f.p, f.len);
    memset(&p, 0, sizeof(p));
    CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), RP_EFORMAT);
    CHECK_STR(err, "malformed FCOUNT chunk at offset");
    rp_profile_free(&p);
    unlink(path);
    free(f.p);
}

/*
 * The same spans in the compact stream and in the general one, with leaves,
 * recursion and a node defined (in a later DEFS chunk) below one the
 * replayers have already seen; then a stream whose last event is cut short
 * in four ways, and an ENTER of an id no DEFS defined: each is an error
 * naming the event's offset.
 */
static void test_replay_streams(void)
{
    struct fbuf f = {0};
    struct rp_profile p;
    char err[512];
    uint8_t d[64];
    file_start(&f);
    fb_chunk(&f, RP_CH_DEFS, d, def_rec(d, 3, "c")); /* ids 1 and 2 not yet */
    /* c { c {20} } : ENTER 3 +10, ENTER 3 +5, EXIT +20, EXIT +30 */
    static const uint8_t s1[] = {10 << 1, 3, 5 << 1, 3, 20 << 1 | 1, 30 << 1 | 1};
    ev_chunk(&f, RP_EV_COMPACT, s1, sizeof(s1));
    fb_chunk(&f, RP_CH_DEFS, d, def_rec(d, 2, "b"));
    /* b { c {4} } 14 : ENTER 2 +1, ENTER 3 +2, EXIT +4, EXIT +8 */
    static const uint8_t s2[] = {1 << 1, 2, 2 << 1, 3, 4 << 1 | 1, 8 << 1 | 1};
    ev_chunk(&f, RP_EV_COMPACT | RP_EV_SNAPSHOT, s2, sizeof(s2)); /* a worker's job */
    static const uint8_t s3[] = {1 << RP_OP_BITS | RP_OP_ENTER, 2,
                                 2 << RP_OP_BITS | RP_OP_ENTER, 3,
                                 4 << RP_OP_BITS | RP_OP_EXIT,  8 << RP_OP_BITS | RP_OP_EXIT};
    ev_chunk(&f, 0, s3, sizeof(s3));
    int rc = replay_buf(&f, &p, err, sizeof(err));
    CHECK_EQ(rc, 0);
    if (rc)
        fprintf(stderr, "  replay: %s\n", err);
    if (rc == 0 && p.n_nodes > 3) {
        CHECK_EQ(p.nodes[3].calls, 4);
        CHECK_EQ(rp_node_dur_sum(&p.nodes[3]), 20 + 55 + 4 + 4);
        CHECK_EQ(p.nodes[3].incl, 55 + 4 + 4); /* the inner recursion not twice */
        CHECK_EQ(p.nodes[3].excl, 20 + 35 + 4 + 4);
        CHECK_EQ(rp_node_min(&p.nodes[3]), 4);
        CHECK_EQ(rp_node_max(&p.nodes[3]), 55);
        CHECK_EQ(p.nodes[2].calls, 2);
        CHECK_EQ(p.nodes[2].incl, 28);
        CHECK_EQ(p.nodes[2].excl, 20);
        const struct rp_edge *e = find_edge(&p, 2, 3);
        CHECK(e && e->calls == 2 && e->incl == 8);
        e = find_edge(&p, 3, 3);
        CHECK(e && e->calls == 1 && e->incl == 20);
        CHECK_EQ(p.events, 12);
    }
    rp_profile_free(&p);

    /* format 1.5, predicted ENTERs: the example of docs/trace-format.md,
     * main (1) calls f (2) four times, the fourth ENTER predicted, in a
     * chunk of its own and as a worker's job (snapshot), replayed and
     * decoded one by one (rankprof dump) */
    {
        static const uint8_t s4[] = {0x02, 0x01, 0x16, 0x02, 0x3f, 0x0a, 0x02,
                                     0x19, 0x06, 0x02, 0x27, 0x0c, 0x0f, 0x05};
        for (int snap = 0; snap < 2; snap++) {
            struct fbuf g = {0};
            file_start(&g);
            fb_chunk(&g, RP_CH_DEFS, d, def_rec(d, 1, "main"));
            fb_chunk(&g, RP_CH_DEFS, d, def_rec(d, 2, "f"));
            ev_chunk(&g, RP_EV_COMPACT | RP_EV_PREDICT | (snap ? RP_EV_SNAPSHOT : 0), s4,
                     sizeof(s4));
            rc = replay_buf(&g, &p, err, sizeof(err));
            CHECK_EQ(rc, 0);
            if (rc)
                fprintf(stderr, "  replay: %s\n", err);
            if (rc == 0 && p.n_nodes > 2) {
                CHECK_EQ(p.nodes[1].calls, 1);
                CHECK_EQ(p.nodes[1].incl, 82);
                CHECK_EQ(p.nodes[1].excl, 82 - 69);
                CHECK_EQ(p.nodes[2].calls, 4);
                CHECK_EQ(rp_node_dur_sum(&p.nodes[2]), 31 + 12 + 19 + 7);
                CHECK_EQ(rp_node_min(&p.nodes[2]), 7);
                CHECK_EQ(rp_node_max(&p.nodes[2]), 31);
                const struct rp_edge *e = find_edge(&p, 1, 2);
                CHECK(e && e->calls == 4 && e->incl == 69);
                CHECK_EQ(p.events, 10);
            }
            rp_profile_free(&p);
            free(g.p);
        }
        uint8_t c[16 + sizeof(s4)];
        rp_put32(c, 42);
        rp_put32(c + 4, 10 | RP_EV_COMPACT | RP_EV_PREDICT);
        rp_put64(c + 8, 1000);
        memcpy(c + 16, s4, sizeof(s4));
        static const struct {
            uint8_t op;
            uint32_t id;
            uint64_t ticks;
        } want[] = {{RP_OP_ENTER, 1, 1000}, {RP_OP_ENTER, 2, 1005}, {RP_OP_EXIT, 0, 1036},
                    {RP_OP_ENTER, 2, 1038}, {RP_OP_EXIT, 0, 1050},  {RP_OP_ENTER, 2, 1051},
                    {RP_OP_EXIT, 0, 1070},  {RP_OP_ENTER, 2, 1073}, {RP_OP_EXIT, 0, 1080},
                    {RP_OP_EXIT, 0, 1082}};
        struct rp_evdec dec;
        struct rp_event ev;
        CHECK_EQ(rp_evdec_init(&dec, c, sizeof(c)), 0);
        for (size_t k = 0; k < 10; k++) {
            CHECK_EQ(rp_evdec_next(&dec, &ev), 1);
            CHECK(ev.op == want[k].op && ev.id == want[k].id && ev.ticks == want[k].ticks);
        }
        CHECK_EQ(rp_evdec_next(&dec, &ev), 0);
    }

    /* absurd clocks (a fuzzer's find): four leaves of 2^61 ticks and one of
     * 8 sum past 2^63 in the exclusive time, which must wrap modulo 2^64,
     * not overflow (UBSan aborts); read as signed the total is negative and
     * shows as 0, like any negative total */
    {
        struct fbuf g = {0};
        uint8_t s[64], *q = s;
        file_start(&g);
        fb_chunk(&g, RP_CH_DEFS, d, def_rec(d, 3, "c"));
        for (int k = 0; k < 5; k++) {
            q = rp_put_varint(q, 1 << 1); /* ENTER c +1 */
            *q++ = 3;
            q = rp_put_varint(q, (k < 4 ? 1ull << 61 : 8) << 1 | 1); /* EXIT */
        }
        ev_chunk(&g, RP_EV_COMPACT, s, (size_t)(q - s));
        rc = replay_buf(&g, &p, err, sizeof(err));
        CHECK_EQ(rc, 0);
        if (rc == 0 && p.n_nodes > 3) {
            CHECK_EQ(p.nodes[3].calls, 5);
            CHECK_EQ(rp_node_max(&p.nodes[3]), 1ull << 61);
            CHECK_EQ(rp_node_dur_sum(&p.nodes[3]), (1ull << 63) + 8);
            CHECK_EQ(p.nodes[3].excl, 0); /* read as signed: negative, shown as 0 */
        }
        rp_profile_free(&p);
        free(g.p);
    }

    /* the last event cut short, in each form: its offset is named */
    static const struct {
        uint32_t flags;
        uint8_t s[8];
        size_t n, at; /* the stream, and where its bad event begins */
        const char *what;
    } bad[] = {
        {RP_EV_COMPACT, {2 << 1, 3, 0x80}, 3, 2, "malformed event"},         /* head runs over */
        {RP_EV_COMPACT, {2 << 1, 3, 4 << 1}, 3, 2, "malformed event"},       /* ENTER, no id */
        {RP_EV_COMPACT, {2 << 1, 3, 2 << 1, 0x83}, 4, 2, "malformed event"}, /* id runs over */
        {0, {2 << RP_OP_BITS, 3, 4 << RP_OP_BITS}, 3, 2, "malformed event"}, /* ENTER, no id */
        {RP_EV_COMPACT, {2 << 1, 3, 1 << 1, 1}, 4, 2, "uses id 1"},          /* not defined */
        {RP_EV_COMPACT, {2 << 1, 0}, 2, 0, "malformed event"},               /* 0 and no op */
        /* format 1.5, predicted ENTERs: nothing predicted yet, no id, an
         * op no version has, an id not defined */
        {RP_EV_COMPACT | RP_EV_PREDICT, {2 << 2 | 2, 3, 1 << 1 | 1, 0}, 4, 3, "malformed event"},
        {RP_EV_COMPACT | RP_EV_PREDICT, {2 << 2 | 2, 3, 4 << 2 | 2}, 3, 2, "malformed event"},
        {RP_EV_COMPACT | RP_EV_PREDICT,
         {2 << 2 | 2, 3, 2 << 2 | 2, 0, 11},
         5,
         2,
         "malformed event"},
        {RP_EV_COMPACT | RP_EV_PREDICT, {2 << 2 | 2, 3, 1 << 2 | 2, 1}, 4, 2, "uses id 1"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        struct fbuf g = {0};
        file_start(&g);
        fb_chunk(&g, RP_CH_DEFS, d, def_rec(d, 3, "c"));
        ev_chunk(&g, bad[i].flags, bad[i].s, bad[i].n);
        char want[64];
        snprintf(
            want, sizeof(want), "offset %llu",
            (unsigned long long)(g.chunk_off[g.nchunks - 1] + RP_CHUNK_HDR_SIZE + 16 + bad[i].at));
        CHECK_EQ(replay_buf(&g, &p, err, sizeof(err)), RP_EFORMAT);
        CHECK_STR(err, bad[i].what);
        CHECK_STR(err, want);
        rp_profile_free(&p);
        free(g.p);
    }
    free(f.p);
}

/* ---- off-CPU intervals and recorder pauses (format 1.3) ------------------- */

#define OF 0x401000u /* the functions of test_offcpu */
#define OG 0x402000u
#define OH 0x403000u
#define OK 0x404000u
#define OL 0x9000u /* a lock */

static struct rp_raw oraw(uint64_t ticks, unsigned op, uint64_t pl)
{
    return (struct rp_raw){ticks, rp_raw_word(op, pl)};
}

/* Encodes recs[0..n) of tid 7 into f: DEFS, then EVENTS. */
static void enc_batch(struct fbuf *f, struct rp_enc *e, struct rp_enc_thread *t,
                      const struct rp_raw *recs, size_t n, uint8_t *out)
{
    size_t len = rp_enc_events(e, t, 7, recs, n, out), dlen;
    const uint8_t *defs = rp_enc_take_defs(e, &dlen);
    if (dlen)
        fb_chunk(f, RP_CH_DEFS, defs, dlen);
    fb_chunk(f, RP_CH_EVENTS, out, len);
}

static const struct rp_node *node_by_key(const struct rp_profile *p, uint8_t kind, uint64_t key)
{
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (p->nodes[i].kind == kind && p->nodes[i].key == key)
            return &p->nodes[i];
    return NULL;
}

/*
 * The writer's merge of off-CPU intervals (rp_offq) and the encoder's
 * off-CPU spans and pauses, replayed.  One thread, three batches as the
 * writer would encode them, the first two split by a periodic flush while
 * the thread was off CPU (its switch-out is in the first poll, its
 * switch-in in the second):
 *
 *   100 F {  110 G {} 120   off 130-150   200 H {  off 250-1250
 *            pause 30 at 1280 } 1300   1400 lock-wait (off 1450-1600
 *            inside: the wait itself) 1700 hold 1750 } 2000
 *   off 2100-2200 (no span open: left out)  2300 K {} 2310
 *   batch 3: off 2400-2500 (no span), a late interval 1500-1550 (its
 *   time already written: dropped, counted), 3000 K {} 3010
 *
 * so, in ticks (1 ns each, no compensation): H incl 1100 - 30 = 1070,
 * offcpu 1000, excl 70, on-CPU max 70; F incl 1900 - 30 = 1870, offcpu
 * 20, excl 1870 - 10 - 20 - 1070 - 300 = 470 (the hold is an interval of
 * its own, not a callee: docs/locks.md), and on-CPU max 1870 - 20 -
 * 1000 - 300 (the lock wait) = 550: the 20 off CPU in the first chunk is
 * taken out of the on-CPU duration of a span that ends in a later one
 * (the join adds it: docs/report-json.md);
 * [off-cpu] 2 calls, 1020; the lock wait 300; 30 ticks paused.
 */
/* recs[0..*n) with the intervals rp_offq_plan places among them, as the
 * encoder writes them (rp_enc_events_ins: test_encode checks that its bytes
 * are those of this copy), *n updated. */
static const struct rp_raw *merge(struct rp_offq *q, const struct rp_raw *recs, size_t *n)
{
    static struct rp_raw m[64];
    size_t nins, o = 0;
    const struct rp_enc_ins *ins = rp_offq_plan(q, recs, *n, &nins);
    for (size_t i = 0, k = 0; i < *n; i++) {
        while (k < nins && ins[k].pos == i)
            m[o++] = ins[k++].rec;
        m[o++] = recs[i];
    }
    *n = o;
    return m;
}

/* The recorder's two steps: take under the queue's lock, place outside. */
static const struct rp_raw *take_merge(struct rp_offq *q, const struct rp_raw *recs, size_t *n)
{
    rp_offq_take(q, recs, *n);
    return merge(q, recs, n);
}

static void test_offcpu(void)
{
    struct rp_enc e;
    struct rp_enc_thread t = {0};
    struct rp_offq q = {0};
    struct fbuf f = {0};
    struct rp_profile p;
    char err[512];
    uint8_t *out = malloc(rp_enc_bound(64));
    CHECK_EQ(rp_enc_init(&e, NULL, NULL), 0);
    file_start(&f);

    struct rp_raw b1[] = {oraw(100, RP_RAW_FUNC_ENTER, OF), oraw(110, RP_RAW_FUNC_ENTER, OG),
                          oraw(120, RP_RAW_FUNC_EXIT, OG), oraw(200, RP_RAW_FUNC_ENTER, OH)};
    rp_offq_switch(&q, 130, 1);
    rp_offq_switch(&q, 150, 0);
    rp_offq_switch(&q, 250, 1); /* off CPU at the flush */
    size_t n = 4;
    CHECK_EQ(rp_offq_take(&q, b1, n), 1); /* 130-150 ends by 200; 250- is open */
    CHECK_EQ(q.n, 0);
    const struct rp_raw *m = merge(&q, b1, &n);
    CHECK_EQ(n, 5);
    CHECK_EQ(m[3].word, rp_raw_word(RP_RAW_OFFCPU, 20));
    CHECK_EQ(m[3].ticks, 130);
    CHECK_EQ(m[4].ticks, 200);
    CHECK_EQ(q.n, 0);
    CHECK_EQ(q.out_at, 250);
    enc_batch(&f, &e, &t, m, n, out);

    rp_offq_switch(&q, 1250, 0);
    rp_offq_switch(&q, 1450, 1);
    rp_offq_switch(&q, 1600, 0);
    rp_offq_switch(&q, 2100, 1);
    rp_offq_switch(&q, 2200, 0);
    rp_offq_switch(&q, 2400, 1);
    rp_offq_switch(&q, 2500, 0);
    struct rp_raw b2[] = {oraw(1280, RP_RAW_PAUSE, 30),      oraw(1300, RP_RAW_FUNC_EXIT, OH),
                          oraw(1400, RP_RAW_LOCK_WAIT, OL),  oraw(1700, RP_RAW_LOCK_ACQ, OL),
                          oraw(1750, RP_RAW_LOCK_REL, OL),   oraw(2000, RP_RAW_FUNC_EXIT, OF),
                          oraw(2300, RP_RAW_FUNC_ENTER, OK), oraw(2310, RP_RAW_FUNC_EXIT, OK)};
    n = 8;
    CHECK_EQ(rp_offq_take(&q, b2, n), 3);
    m = merge(&q, b2, &n);
    CHECK_EQ(q.ndue, 0);
    CHECK_EQ(n, 11);
    CHECK_EQ(m[0].ticks, 250);
    CHECK_EQ(m[0].word, rp_raw_word(RP_RAW_OFFCPU, 1000));
    CHECK_EQ(q.n, 1); /* 2400-2500 waits for a record after it */
    enc_batch(&f, &e, &t, m, n, out);
    CHECK_EQ(t.offcpu, 2);
    CHECK_EQ(t.offcpu_skipped, 2); /* in the lock wait, and with no span open */
    CHECK_EQ(t.paused, 30);

    rp_offq_switch(&q, 1500, 1);
    rp_offq_switch(&q, 1550, 0);
    struct rp_raw b3[] = {oraw(3000, RP_RAW_FUNC_ENTER, OK), oraw(3010, RP_RAW_FUNC_EXIT, OK)};
    n = 2;
    m = take_merge(&q, b3, &n);
    CHECK_EQ(n, 3);
    CHECK_EQ(q.late, 1);
    CHECK_EQ(q.n, 0);
    enc_batch(&f, &e, &t, m, n, out);
    CHECK_EQ(t.offcpu_skipped, 3);
    uint8_t end[32] = {0};
    rp_put32(end + 28, RP_END_EXIT);
    fb_chunk(&f, RP_CH_END, end, sizeof(end));

    CHECK_EQ(replay_buf(&f, &p, err, sizeof(err)), 0);
    const struct rp_node *nf = node_by_key(&p, RP_KIND_FUNC, OF),
                         *nh = node_by_key(&p, RP_KIND_FUNC, OH),
                         *nk = node_by_key(&p, RP_KIND_FUNC, OK),
                         *no = node_by_key(&p, RP_KIND_OFFCPU, 0),
                         *nw = node_by_key(&p, RP_KIND_LOCK_WAIT, OL);
    CHECK(nf && nh && nk && no && nw);
    if (nf && nh && nk && no && nw) {
        CHECK_EQ(nh->incl, 1070);
        CHECK_EQ(rp_node_offcpu(nh), 1000);
        CHECK_EQ(nh->excl, 70);
        CHECK_EQ(rp_node_max(nh), 1070);
        CHECK_EQ(rp_node_oncpu_max(nh), 70);
        CHECK_EQ(rp_node_oncpu_min(nh), 70);
        CHECK_EQ(rp_node_offcpu_below(nh), 1000);
        CHECK_EQ(nf->incl, 1870);
        CHECK_EQ(rp_node_offcpu(nf), 20);
        CHECK_EQ(nf->excl, 470); /* a lock hold is an interval, not a callee */
        CHECK_EQ(rp_node_max(nf), 1870);
        CHECK_EQ(rp_node_oncpu_max(nf), 550);
        CHECK_EQ(rp_node_oncpu_max(nk), 10);
        CHECK_EQ(rp_node_oncpu_min(nk), 10);
        CHECK_EQ(nk->calls, 2);
        CHECK_EQ(rp_node_offcpu(nk), 0);
        CHECK_EQ(no->calls, 2);
        CHECK_EQ(no->incl, 1020);
        CHECK_STR(no->name, "[off-cpu]");
        CHECK_EQ(nw->incl, 300);
        CHECK_EQ(rp_node_offcpu(nw), 0);
    }
    CHECK_EQ(p.paused, 30);
    CHECK_EQ(p.n_threads, 1);
    if (p.n_threads)
        CHECK_EQ(p.threads[0].paused, 30);
    CHECK_EQ(p.unclosed + p.unmatched_exits, 0);
    rp_profile_free(&p);
    rp_offq_free(&q);

    /* A pause (the thread waited for the writer, 200-300) is the
     * recorder's time: an interval is cut at its start, one inside it is
     * dropped (not late). */
    struct rp_raw b4[] = {oraw(100, RP_RAW_FUNC_ENTER, OF), oraw(300, RP_RAW_PAUSE, 100),
                          oraw(400, RP_RAW_FUNC_EXIT, OF)};
    rp_offq_switch(&q, 150, 1);
    rp_offq_switch(&q, 250, 0);
    rp_offq_switch(&q, 260, 1);
    rp_offq_switch(&q, 290, 0);
    n = 3;
    m = take_merge(&q, b4, &n);
    CHECK_EQ(n, 4);
    CHECK_EQ(m[1].ticks, 150);
    CHECK_EQ(m[1].word, rp_raw_word(RP_RAW_OFFCPU, 50));
    CHECK_EQ(q.late, 0);
    CHECK_EQ(q.n, 0);
    rp_offq_free(&q);

    /* A DATA record (an instant's value in its ticks field) is no time: an
     * interval never comes between it and its INSTANT. */
    struct rp_raw b5[] = {oraw(100, RP_RAW_FUNC_ENTER, OF), oraw(200, RP_RAW_INSTANT, 0x77),
                          oraw(5, RP_RAW_DATA, 0), oraw(300, RP_RAW_FUNC_EXIT, OF)};
    rp_offq_switch(&q, 210, 1);
    rp_offq_switch(&q, 250, 0);
    n = 4;
    m = take_merge(&q, b5, &n);
    CHECK_EQ(n, 5);
    CHECK_EQ(m[2].word, rp_raw_word(RP_RAW_DATA, 0));
    CHECK_EQ(m[3].word, rp_raw_word(RP_RAW_OFFCPU, 40));
    CHECK_EQ(q.late, 0);
    rp_offq_free(&q);
    rp_enc_thread_free(&t);
    rp_enc_free(&e);
    free(out);
    free(f.p);
}

/* ---- frames left without their exit --------------------------------------- */

/* Functions of the unwinding trace: landing A, deep B, C, D, after E. */
enum { UA = 0x501000, UB = 0x502000, UC = 0x503000, UD = 0x504000, UE = 0x505000, UF = 0x506000 };

/* func_start for the writer: each function spans 0x100 bytes; UF is a
 * function that is never open; anything else is no function. */
static uint64_t ufunc_start(uint64_t a)
{
    uint64_t f = a & ~0xfffull;
    return f >= UA && f <= UF && (a & 0xfff) < 0x100 ? f : 0;
}

/*
 * Thread 9, three EVENTS chunks (each with the writer's stack snapshot):
 *   1: A 100, B 110, C 120                     -- ends 3 deep
 *   2: D 130; UNWIND into no function at 140 and into F (not open) at 150:
 *      ignored; UNWIND into A at 160: D, C, B end there (30, 40, 50);
 *      E 170..180 (A's call)                    -- ends 1 deep (A)
 *   3: B 190, C 200, EXIT A at 210: C, B end there (10, 20), A 110;
 *      B 220 (at the root now), C 230, the thread ends at 250 (UNWIND 0):
 *      C 20, B 30
 * Thread 10: A 300, B 310, never ended: cut at the END's 1000 (A 700, B
 *   690), or at the thread's last event, 310, without an END (A 10, B 0).
 */
static const struct rrec u9a[] = {
    R(100, RP_RAW_FUNC_ENTER, UA),
    R(110, RP_RAW_FUNC_ENTER, UB),
    R(120, RP_RAW_FUNC_ENTER, UC),
};
static const struct rrec u9b[] = {
    R(130, RP_RAW_FUNC_ENTER, UD), R(140, RP_RAW_UNWIND, 0x999010),
    R(150, RP_RAW_UNWIND, UF + 8), R(160, RP_RAW_UNWIND, UA + 0x42),
    R(170, RP_RAW_FUNC_ENTER, UE), R(180, RP_RAW_FUNC_EXIT, UE),
};
static const struct rrec u9c[] = {
    R(190, RP_RAW_FUNC_ENTER, UB), R(200, RP_RAW_FUNC_ENTER, UC), R(210, RP_RAW_FUNC_EXIT, UA),
    R(220, RP_RAW_FUNC_ENTER, UB), R(230, RP_RAW_FUNC_ENTER, UC), R(250, RP_RAW_UNWIND, 0),
};
static const struct rrec u10[] = {
    R(300, RP_RAW_FUNC_ENTER, UA),
    R(310, RP_RAW_FUNC_ENTER, UB),
};

struct swcount {
    uint64_t dur[8], ends, unwound, cut;
};

static int sw_end(void *ctx, const struct rp_sw_span *s)
{
    struct swcount *k = ctx;
    if (s->id < 8)
        k->dur[s->id] += s->dur;
    k->ends++;
    k->unwound += s->cut == RP_SW_UNWOUND;
    k->cut += s->cut == RP_SW_CUT;
    return 0;
}

/* Checks the replay of the unwinding trace at path; with_end: it has END. */
static void check_unwind_profile(const char *path, const struct rp_profile *p, int with_end)
{
    /* ids in first-seen order: A 1, B 2, C 3, D 4, E 5 (F never defined) */
    enum { A = 1, B, C, D, E };
    uint64_t a10 = with_end ? 700 : 10, b10 = with_end ? 690 : 0;
    CHECK_EQ(p->n_nodes, 6);
    if (p->n_nodes != 6)
        return;
    CHECK_EQ(p->nodes[A].calls, 2);
    CHECK_EQ(rp_node_cut(&p->nodes[A]), 1);
    CHECK_EQ(p->nodes[A].incl, 110 + a10);
    CHECK_EQ(p->nodes[A].excl, 110 - 50 - 10 - 20 + a10 - b10);
    CHECK_EQ(p->nodes[B].calls, 4);
    CHECK_EQ(rp_node_cut(&p->nodes[B]), 4);
    CHECK_EQ(rp_node_dur_sum(&p->nodes[B]), 50 + 20 + 30 + b10);
    CHECK_EQ(p->nodes[B].excl, (50 - 40) + (20 - 10) + (30 - 20) + b10);
    CHECK_EQ(p->nodes[C].calls, 3);
    CHECK_EQ(rp_node_cut(&p->nodes[C]), 3);
    CHECK_EQ(rp_node_dur_sum(&p->nodes[C]), 40 + 10 + 20);
    CHECK_EQ(p->nodes[C].excl, (40 - 30) + 10 + 20);
    CHECK_EQ(p->nodes[D].calls, 1);
    CHECK_EQ(rp_node_cut(&p->nodes[D]), 1);
    CHECK_EQ(p->nodes[D].incl, 30);
    CHECK_EQ(p->nodes[E].calls, 1);
    CHECK_EQ(rp_node_cut(&p->nodes[E]), 0);
    CHECK_EQ(p->n_edges, 6);
    CHECK_EDGE(p, 0, A, 2, 110 + a10, with_end ? 110 : 10, with_end ? 700 : 110);
    CHECK_EDGE(p, A, B, 3, 70 + b10, 20, with_end ? 690 : 50); /* (0: below resolution) */
    CHECK_EDGE(p, 0, B, 1, 30, 30, 30);                        /* entered after A ended */
    CHECK_EDGE(p, B, C, 3, 70, 10, 40);
    CHECK_EDGE(p, C, D, 1, 30, 30, 30);
    CHECK_EDGE(p, A, E, 1, 10, 10, 10); /* from the frame it landed in */
    CHECK_EQ(p->unwound, 5);
    CHECK_EQ(p->cut, 4);
    CHECK_EQ(p->unclosed, 0);
    CHECK_EQ(p->unmatched_exits, 0);
    CHECK_EQ(p->end_ticks, with_end ? 1000 : 0);
    for (uint32_t i = 0; i < p->n_threads; i++) {
        const struct rp_thread *t = &p->threads[i];
        CHECK_EQ(t->unwound, t->tid == 9 ? 5 : 0);
        CHECK_EQ(t->cut, 2);
        CHECK_EQ(t->last, t->tid == 9 ? 250 : with_end ? 1000 : 310);
    }

    /* the calling-context tree and the span walk follow the same rules */
    struct rp_replay_opts o = {0};
    struct rp_cct t = {0};
    char err[512];
    uint64_t calls[6] = {0};
    CHECK_EQ(rp_cct_build(&t, path, &o, p, 0, 0, err, sizeof(err)), 0);
    for (uint32_t i = 1; i < t.n; i++)
        if (t.nodes[i].id < 6)
            calls[t.nodes[i].id] += t.nodes[i].calls;
    for (uint32_t id = A; id <= E; id++)
        CHECK_EQ(calls[id], p->nodes[id].calls);
    CHECK_EQ(t.unwound, 5);
    CHECK_EQ(t.cut, 4);
    CHECK_EQ(t.unclosed, 0);
    rp_cct_free(&t);
    struct swcount k = {0};
    static const struct rp_sw_ops ops = {.end = sw_end};
    CHECK_EQ(rp_sw_file(path, &o, p, &ops, &k, 0, err, sizeof(err)), 0);
    CHECK_EQ(k.ends, 11);
    CHECK_EQ(k.unwound, 5);
    CHECK_EQ(k.cut, 4);
    for (uint32_t id = A; id <= E; id++)
        CHECK_EQ(k.dur[id], rp_node_dur_sum(&p->nodes[id]));
}

/*
 * RP_RAW_UNWIND through the writer (the landing frame found through
 * func_start; addresses in no open function ignored, not counted as lost),
 * RP_OP_UNWIND through the reader, and the replay: in order and chunk-
 * parallel (the snapshots of chunks 2 and 3 begin inside the frames the
 * unwinding ends), the same exact numbers, with an END and without.
 */
static void test_unwind(void)
{
    struct rp_enc e;
    struct rp_enc_thread t9 = {0}, t10 = {0};
    struct fbuf f = {0};
    CHECK_EQ(rp_enc_init(&e, describe, NULL), 0);
    e.func_start = ufunc_start;
    file_start(&f);
    const struct {
        struct rp_enc_thread *t;
        uint32_t tid;
        const struct rrec *r;
        size_t n;
        uint32_t depth_after, nev;
    } parts[] = {
        {&t9, 9, u9a, 3, 3, 3},
        {&t9, 9, u9b, 6, 1, 4}, /* the two ignored UNWINDs are no events */
        {&t10, 10, u10, 2, 2, 2},
        {&t9, 9, u9c, 6, 0, 6},
    };
    for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
        struct rp_raw raw[8];
        for (size_t k = 0; k < parts[i].n; k++)
            raw[k] = (struct rp_raw){parts[i].r[k].ticks,
                                     rp_raw_word(parts[i].r[k].op, parts[i].r[k].pl)};
        uint8_t *out = malloc(rp_enc_bound(parts[i].n));
        size_t len = rp_enc_events(&e, parts[i].t, parts[i].tid, raw, parts[i].n, out), dl;
        const uint8_t *defs = rp_enc_take_defs(&e, &dl);
        if (dl)
            fb_chunk(&f, RP_CH_DEFS, defs, dl);
        fb_chunk(&f, RP_CH_EVENTS, out, len);
        CHECK_EQ(parts[i].t->depth, parts[i].depth_after);
        CHECK_EQ(parts[i].t->skipped, 0);
        CHECK_EQ(rp_get32(out + 4) & RP_EV_COUNT_MASK, parts[i].nev);
        CHECK(rp_get32(out + 4) & RP_EV_SNAPSHOT);
        if (parts[i].r == u9b) { /* ENTER D, UNWIND to A, ENTER E, EXIT */
            struct rp_evdec d;
            struct rp_event ev;
            static const uint8_t ops[] = {RP_OP_ENTER, RP_OP_UNWIND, RP_OP_ENTER, RP_OP_EXIT};
            static const uint32_t ids[] = {4, 1, 5, 0};
            CHECK_EQ(rp_evdec_init(&d, out, (uint32_t)len), 0);
            CHECK_EQ(d.snap_depth, 3);
            for (int k = 0; k < 4; k++) {
                CHECK_EQ(rp_evdec_next(&d, &ev), 1);
                CHECK_EQ(ev.op, ops[k]);
                CHECK_EQ(ev.id, ids[k]);
            }
            CHECK_EQ(ev.ticks, 180);
            CHECK_EQ(rp_evdec_next(&d, &ev), 0);
        }
        if (parts[i].r == u9c) { /* ... UNWIND 0 at 250: the thread ends */
            struct rp_evdec d;
            struct rp_event ev = {0};
            CHECK_EQ(rp_evdec_init(&d, out, (uint32_t)len), 0);
            while (rp_evdec_next(&d, &ev) > 0 && ev.ticks < 250)
                ;
            CHECK(ev.op == RP_OP_UNWIND && ev.id == 0 && ev.ticks == 250);
        }
        free(out);
    }
    size_t noend = f.len;
    uint8_t end[32] = {0};
    rp_put64(end, 1000);
    rp_put32(end + 28, RP_END_EXIT);
    fb_chunk(&f, RP_CH_END, end, sizeof(end));

    char path[256], err[512];
    snprintf(path, sizeof(path), "%s/unwind.rpt", tmpdir);
    for (int with_end = 1; with_end >= 0; with_end--) {
        write_file(path, f.p, with_end ? f.len : noend);
        for (int jobs = 0; jobs <= 2; jobs += 2) { /* in order, then chunk-parallel */
            struct rp_profile p;
            setenv("RANKPROF_REPLAY_JOBS", jobs ? "2" : "0", 1);
            int rc = replay_rc(path, 0, &p, err, sizeof(err));
            CHECK_EQ(rc, 0);
            if (rc)
                fprintf(stderr, "  replay: %s\n", err);
            else
                check_unwind_profile(path, &p, with_end);
            rp_profile_free(&p);
        }
    }
    unsetenv("RANKPROF_REPLAY_JOBS");
    /* a 1.2 file's END ticks are when it was closed, not when the process
     * ended: its open frames end at their thread's last event */
    rp_put16(f.p + 10, 2);
    write_file(path, f.p, f.len);
    struct rp_profile p;
    CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), 0);
    CHECK_EQ(p.ended, 1);
    check_unwind_profile(path, &p, 0);
    rp_profile_free(&p);
    unlink(path);
    rp_enc_thread_free(&t9);
    rp_enc_thread_free(&t10);
    rp_enc_free(&e);
    free(f.p);
}

/* ---- reused thread ids (format 1.3 thread streams) ---------------------------- */

/* Encodes n raw records of stream tid with t into an EVENTS chunk of f
 * (its DEFS first). */
static void enc_chunk(struct fbuf *f, struct rp_enc *e, struct rp_enc_thread *t, uint32_t tid,
                      const struct rrec *r, size_t n)
{
    struct rp_raw raw[32];
    for (size_t k = 0; k < n; k++) {
        raw[k].ticks = r[k].ticks;
        raw[k].word = rp_raw_word(r[k].op, r[k].pl);
    }
    uint8_t *out = malloc(rp_enc_bound(n));
    size_t len = rp_enc_events(e, t, tid, raw, n, out), dl;
    const uint8_t *defs = rp_enc_take_defs(e, &dl);
    if (dl)
        fb_chunk(f, RP_CH_DEFS, defs, dl);
    fb_chunk(f, RP_CH_EVENTS, out, len);
    free(out);
}

static void thread_chunk(struct fbuf *f, uint32_t tid, const char *name)
{
    uint8_t th[8 + 16];
    size_t n = strlen(name);
    rp_put32(th, tid);
    rp_put32(th + 4, 0);
    memcpy(th + 8, name, n);
    fb_chunk(f, RP_CH_THREAD, th, 8 + n);
}

/*
 * Two threads with kernel tid 100: the first (stream 100) runs A[1000..1100]
 * and, in a chunk the writer wrote after the second thread's, B[1200..1300];
 * the second (stream 100 | 1 << RP_TID_BITS, generation 1) runs
 * A[5000..5010] B[5020..5030].  They are two threads, each with its own
 * span of time (total 300 + 30 ticks, not the 4030 of one merged thread),
 * `--thread 100` selects both and the stream id only the second.
 */
static void test_reused_tid(void)
{
    static const struct rrec old1[] = {R(1000, RP_RAW_FUNC_ENTER, FA),
                                       R(1100, RP_RAW_FUNC_EXIT, FA)};
    static const struct rrec old2[] = {R(1200, RP_RAW_FUNC_ENTER, FB),
                                       R(1300, RP_RAW_FUNC_EXIT, FB)};
    static const struct rrec young[] = {
        R(5000, RP_RAW_FUNC_ENTER, FA), R(5010, RP_RAW_FUNC_EXIT, FA),
        R(5020, RP_RAW_FUNC_ENTER, FB), R(5030, RP_RAW_FUNC_EXIT, FB)};
    const uint32_t s0 = 100, s1 = 100 | 1u << RP_TID_BITS;
    struct fbuf f = {0};
    struct rp_enc e;
    struct rp_enc_thread t0 = {0}, t1 = {0};
    char path[256], err[512];
    struct rp_profile p;

    CHECK_EQ(rp_tid_of(s1), 100);
    CHECK_EQ(rp_tid_gen(s1), 1);
    CHECK(rp_tid_match(100, s0) && rp_tid_match(100, s1) && rp_tid_match(s1, s1));
    CHECK(!rp_tid_match(s1, s0) && !rp_tid_match(101, s1));
    file_start(&f);
    CHECK_EQ(rp_enc_init(&e, describe, NULL), 0);
    thread_chunk(&f, s0, "old");
    enc_chunk(&f, &e, &t0, s0, old1, 2);
    thread_chunk(&f, s1, "young");
    enc_chunk(&f, &e, &t1, s1, young, 4);
    enc_chunk(&f, &e, &t0, s0, old2, 2);
    rp_enc_thread_free(&t0);
    rp_enc_thread_free(&t1);
    rp_enc_free(&e);
    snprintf(path, sizeof(path), "%s/reused.rpt", tmpdir);
    write_file(path, f.p, f.len);

    for (int workers = 0; workers < 2; workers++) { /* in order, and in parallel */
        setenv("RANKPROF_REPLAY_JOBS", workers ? "2" : "0", 1);
        memset(&p, 0, sizeof(p));
        CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), 0);
        CHECK_EQ(p.n_threads, 2);
        if (p.n_threads == 2) {
            const struct rp_thread *a = &p.threads[0], *b = &p.threads[1];
            CHECK_EQ(a->tid, s0);
            CHECK_EQ(b->tid, s1);
            CHECK_STR(a->name, "old");
            CHECK_STR(b->name, "young");
            CHECK_EQ(a->first, 1000);
            CHECK_EQ(a->last, 1300);
            CHECK_EQ(b->first, 5000);
            CHECK_EQ(b->last, 5030);
            CHECK_EQ(a->events + b->events, 8);
        }
        CHECK_EQ(p.total, 330);
        CHECK_EQ(p.unmatched_exits + p.unclosed, 0);
        CHECK_EQ(p.nodes[1].calls, 2); /* A: once on each thread */
        CHECK_EQ(rp_node_dur_sum(&p.nodes[1]), 110);
        rp_profile_free(&p);
    }
    unsetenv("RANKPROF_REPLAY_JOBS");

    /* --thread: the kernel tid selects both, the stream id only its thread */
    struct rp_replay_opts o = {.tid = 100};
    memset(&p, 0, sizeof(p));
    CHECK_EQ(rp_replay_file(path, &o, &p, NULL, NULL, err, sizeof(err)), 0);
    CHECK_EQ(p.n_threads, 2);
    CHECK_EQ(p.total, 330);
    rp_profile_free(&p);
    o.tid = s1;
    memset(&p, 0, sizeof(p));
    CHECK_EQ(rp_replay_file(path, &o, &p, NULL, NULL, err, sizeof(err)), 0);
    CHECK_EQ(p.n_threads, 1);
    CHECK_EQ(p.total, 30);
    if (p.n_threads == 1)
        CHECK_EQ(p.threads[0].tid, s1);
    rp_profile_free(&p);
    unlink(path);
    free(f.p);
}

/* ---- lock holds as intervals (format 1.3) ------------------------------------- */

/*
 * Thread 300, two chunks.  Chunk 1: A[100..120] takes lock LK at 110 and
 * again at 115 (a recursive lock) and returns holding both.  Chunk 2:
 * B[200..230] releases the inner hold at 210 and the outer at 220; a
 * release at 240 of a hold never taken (unmatched); LK taken at 250 and
 * never released (unclosed).  Expected: 2 holds of 95 and 110 ticks, both
 * taken in A (the edge A -> hold), the outer one inclusive; the holds take
 * no time from A or B (exclusive 20 and 30), own no time; the same in
 * order and in parallel.
 */
static void test_holds(void)
{
    static const struct rrec c1[] = {R(100, RP_RAW_FUNC_ENTER, FA), R(110, RP_RAW_LOCK_ACQ, LK),
                                     R(115, RP_RAW_LOCK_ACQ, LK), R(120, RP_RAW_FUNC_EXIT, FA)};
    static const struct rrec c2[] = {R(200, RP_RAW_FUNC_ENTER, FB), R(210, RP_RAW_LOCK_REL, LK),
                                     R(220, RP_RAW_LOCK_REL, LK),   R(230, RP_RAW_FUNC_EXIT, FB),
                                     R(240, RP_RAW_LOCK_REL, LK),   R(250, RP_RAW_LOCK_ACQ, LK)};
    struct fbuf f = {0};
    struct rp_enc e;
    struct rp_enc_thread t = {0};
    char path[256], err[512];
    struct rp_profile p;

    file_start(&f);
    CHECK_EQ(rp_enc_init(&e, describe, NULL), 0);
    thread_chunk(&f, 300, "holder");
    enc_chunk(&f, &e, &t, 300, c1, 4);
    CHECK_EQ(t.nholds, 2);
    CHECK_EQ(t.depth, 0);
    enc_chunk(&f, &e, &t, 300, c2, 6);
    CHECK_EQ(t.nholds, 1);
    rp_enc_thread_free(&t);
    rp_enc_free(&e);
    snprintf(path, sizeof(path), "%s/holds.rpt", tmpdir);
    write_file(path, f.p, f.len);

    for (int workers = 0; workers < 2; workers++) {
        setenv("RANKPROF_REPLAY_JOBS", workers ? "2" : "0", 1);
        memset(&p, 0, sizeof(p));
        CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), 0);
        /* ids: A 1, lock hold 2, B 3 */
        CHECK_EQ(p.n_nodes, 4);
        if (p.n_nodes == 4) {
            const struct rp_node *a = &p.nodes[1], *h = &p.nodes[2], *b = &p.nodes[3];
            CHECK_EQ(h->kind, RP_KIND_LOCK_HOLD);
            CHECK_EQ(h->calls, 2);
            CHECK_EQ(rp_node_dur_sum(h), 205);
            CHECK_EQ(h->incl, 110);
            CHECK_EQ(h->excl, 0);
            CHECK_EQ(rp_node_min(h), 95);
            CHECK_EQ(rp_node_max(h), 110);
            CHECK_EQ(a->excl, 20);
            CHECK_EQ(b->excl, 30);
            CHECK_EDGE(&p, 1, 2, 2, 205, 95, 110);
            CHECK(!find_edge(&p, 3, 2));
        }
        CHECK(p.hold_intervals);
        CHECK_EQ(p.unmatched_exits, 1);
        CHECK_EQ(p.unclosed, 1);
        rp_profile_free(&p);
    }
    unsetenv("RANKPROF_REPLAY_JOBS");
    unlink(path);
    free(f.p);
}

/* ---- spans below resolution (comp.h) ------------------------------------------- */

/*
 * A compensated trace (overhead 0, spread 3 ticks: resolution 4 ticks) with
 * 15 spans of A: 0, 1, 2, 3 ticks three times each (below resolution) and
 * 10, 20, 30.  Expected: 15 calls, 12 below resolution, all in the sums
 * (78 ticks), none in the minimum (10), the histogram (3 values) or the
 * median (20); uncompensated (resolution 1 tick) only the three 0-tick
 * spans are below it.  With a clock that moves 4 ticks at once (INFO
 * clock_step_ticks 4): resolution 4 + 3 = 7 ticks compensated, 4 not, so
 * the same 12 spans are below it either way; and the same with a step of
 * 4.5 ticks (INFO "4.5": counted as the 4 ticks one step can read as).
 * The table's p95 and median
 * are of all 15 (rp_node_q_all): the median (rank 7.5 of 15) among the 12
 * below resolution, the p95 (rank 14.25) the resolved ones' 0.75 quantile,
 * 30; with 1-tick resolution the median is 2 ticks.
 */
static void test_below_resolution_step(const char *step)
{
    static const uint64_t durs[] = {0, 1, 2, 3, 10, 0, 1, 2, 3, 20, 0, 1, 2, 3, 30};
    struct rrec r[30];
    uint64_t t = 1000;
    for (int i = 0; i < 15; i++) {
        r[2 * i] = (struct rrec)R(t, RP_RAW_FUNC_ENTER, FA);
        r[2 * i + 1] = (struct rrec)R(t + durs[i], RP_RAW_FUNC_EXIT, FA);
        t += durs[i] + 100;
    }
    struct fbuf f = {0};
    struct rp_enc e;
    struct rp_enc_thread th = {0};
    char path[256], err[512];
    uint8_t hdr[RP_FILE_HDR_SIZE], info[256];
    size_t il = 0;
    rp_file_header(hdr);
    fb_put(&f, hdr, sizeof(hdr));
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "freq_hz", "1000000000", 10), 0);
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "overhead_ticks", "0.00", 4), 0);
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "overhead_self_ticks", "0.00", 4), 0);
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "overhead_spread_ticks", "3.00", 4), 0);
    if (step)
        CHECK_EQ(rp_info_put(info, sizeof(info), &il, "clock_step_ticks", step, strlen(step)), 0);
    fb_chunk(&f, RP_CH_INFO, info, il);
    CHECK_EQ(rp_enc_init(&e, describe, NULL), 0);
    thread_chunk(&f, 9, "t");
    enc_chunk(&f, &e, &th, 9, r, 30);
    rp_enc_thread_free(&th);
    rp_enc_free(&e);
    snprintf(path, sizeof(path), "%s/res.rpt", tmpdir);
    write_file(path, f.p, f.len);

    for (int off = 0; off < 2; off++) {
        struct rp_replay_opts o = {.no_compensate = off};
        struct rp_profile p = {0};
        CHECK_EQ(rp_replay_file(path, &o, &p, NULL, NULL, err, sizeof(err)), 0);
        int fine = off && !step; /* resolution 1 tick */
        CHECK(p.clock_step == (step ? strtod(step, NULL) : 0));
        CHECK_EQ(p.resolution, step ? (off ? 4 : 7) : off ? 1 : 4);
        if (p.n_nodes == 2) {
            const struct rp_node *a = &p.nodes[1];
            CHECK_EQ(a->calls, 15);
            struct rp_hist hb;
            const struct rp_hist *ah = rp_node_hist(a, &hb);
            CHECK_EQ(rp_node_dur_sum(a), 78);
            CHECK_EQ(a->excl, 78);
            CHECK_EQ(rp_node_below_res(a), fine ? 3 : 12);
            CHECK_EQ(p.below_res, rp_node_below_res(a));
            CHECK_EQ(ah->n, fine ? 12 : 3);
            CHECK_EQ(rp_node_min(a), fine ? 1 : 10);
            CHECK_EQ(rp_node_max(a), 30);
            CHECK_EQ(rp_hist_q(ah, 0.5), fine ? 2 : 20);
            CHECK_EDGE(&p, 0, 1, 15, 78, fine ? 1 : 10, 30);
            uint64_t q = 0;
            CHECK_EQ(rp_node_q_all(&p, a, 0.95, &q), 0);
            CHECK_EQ(q, 30);
            q = 0;
            CHECK_EQ(rp_node_q_all(&p, a, 0.5, &q), fine ? 0 : 1);
            CHECK_EQ(q, fine ? 2 : 0);
        } else {
            CHECK_EQ(p.n_nodes, 2);
        }
        rp_profile_free(&p);
    }
    unlink(path);
    free(f.p);
}

static void test_below_resolution(void)
{
    test_below_resolution_step(NULL);
    test_below_resolution_step("4");
    test_below_resolution_step("4.5");
}

static char good_path[256]; /* the synthetic trace, written by main() */

static void test_replay_good(void)
{
    test_replay(good_path);
}

/*
 * The definitions alone (rp_replay_opts.defs_only) from skimmed EVENTS
 * chunks: thread 9 enters f 1000 deep (chunk 1, at ticks 100 to 1099),
 * then exits once at 2000 (chunk 2, whose stack snapshot of 1000 frames is
 * longer than the skim, so that its first event is read whole).  Counts
 * and the first event are the whole reading's; a damaged payload of chunk
 * 2 is found (read whole), one of chunk 1 past its skim is left to the
 * replay, which finds it.
 */
static void test_defs_skim(void)
{
    enum { DEEP = 1000 };
    struct rp_enc e;
    struct rp_enc_thread t = {0};
    struct fbuf f = {0};
    uint64_t off[2], len[2];
    CHECK_EQ(rp_enc_init(&e, describe, NULL), 0);
    file_start(&f);
    for (int part = 0; part < 2; part++) {
        struct rp_raw raw[DEEP];
        size_t n = part ? 1 : DEEP;
        for (size_t k = 0; k < n; k++)
            raw[k] = part ? (struct rp_raw){2000, rp_raw_word(RP_RAW_FUNC_EXIT, FA)}
                          : (struct rp_raw){100 + k, rp_raw_word(RP_RAW_FUNC_ENTER, FA)};
        uint8_t *out = malloc(rp_enc_bound(n));
        size_t dl, ol = rp_enc_events(&e, &t, 9, raw, n, out);
        const uint8_t *defs = rp_enc_take_defs(&e, &dl);
        if (dl)
            fb_chunk(&f, RP_CH_DEFS, defs, dl);
        off[part] = f.len;
        len[part] = ol;
        fb_chunk(&f, RP_CH_EVENTS, out, ol);
        free(out);
    }
    rp_enc_thread_free(&t);
    rp_enc_free(&e);
    CHECK(len[0] > RP_READER_SKIM + 50 && len[1] > RP_READER_SKIM + 50);

    char path[256], err[512];
    snprintf(path, sizeof(path), "%s/skim.rpt", tmpdir);
    struct rp_replay_opts defs = {.defs_only = 1}, all = {0};
    struct rp_profile p;
    for (int damage = 0; damage < 3; damage++) { /* none, chunk 1, chunk 2 */
        uint8_t *d = malloc(f.len);
        memcpy(d, f.p, f.len);
        if (damage)
            d[off[damage - 1] + RP_CHUNK_HDR_SIZE + RP_READER_SKIM + 20] ^= 0x40;
        write_file(path, d, f.len);
        free(d);
        memset(&p, 0, sizeof(p));
        int rc = rp_replay_file(path, &defs, &p, NULL, NULL, err, sizeof(err));
        CHECK_EQ(rc, damage == 2 ? RP_ECRC : 0);
        if (rc == 0) {
            CHECK_EQ(p.events, DEEP + 1);
            CHECK_EQ(p.first_tick, 100);
        } else {
            CHECK(strstr(err, "checksum mismatch") != NULL);
        }
        rp_profile_free(&p);
        memset(&p, 0, sizeof(p));
        rc = rp_replay_file(path, &all, &p, NULL, NULL, err, sizeof(err));
        CHECK_EQ(rc, damage ? RP_ECRC : 0);
        if (rc == 0)
            CHECK_EQ(p.first_tick, 100);
        rp_profile_free(&p);
    }
    unlink(path);
    free(f.p);
}

static const struct check_case cases[] = {
    {"replay", test_replay_good},
    {"no_end", test_no_end},
    {"fcount", test_fcount},
    {"streams", test_replay_streams},
    {"offcpu", test_offcpu},
    {"unwind", test_unwind},
    {"reused_tid", test_reused_tid},
    {"holds", test_holds},
    {"below_resolution", test_below_resolution},
    {"defs_skim", test_defs_skim},
};

int main(int argc, char **argv)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    struct fbuf f = {0};
    build_trace(&f, 1);
    snprintf(good_path, sizeof(good_path), "%s/good.rpt", tmpdir);
    write_file(good_path, f.p, f.len);
    free(f.p);
    int rc = check_run("test_replay", argc, argv, cases, sizeof cases / sizeof cases[0]);
    unlink(good_path);
    rmdir(tmpdir);
    return rc;
}

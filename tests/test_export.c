// SPDX-License-Identifier: MIT
/*
 * test_export.c - the calling-context tree (src/analyze/cct.c) and the span
 * matching of the timeline exports (src/report/export_timeline.c) on a
 * hand-encoded trace full of the cases the matching rules are about, with
 * every number known.  Ticks are nanoseconds (no CLOCK chunk: 1 ns/tick).
 *
 *   tid 1, first EVENTS chunk:
 *      0 enter A    10 enter B    20 enter C    30 EXIT_ID B  (C dropped: unclosed)
 *     40 enter B    45 enter B    50 exit (B)   60 exit (B)
 *   tid 2:
 *      5 enter C    15 exit (C)
 *   tid 1, second EVENTS chunk (its stack continues: A is open):
 *     70 exit (A)   75 exit        (unmatched)
 *     80 enter A    90 LOST 5      (A dropped: unclosed)
 *    100 enter C   110 exit (C)   120 enter A   (still open at the end: unclosed)
 *
 * Paths and their exclusive time: A 70-20-20 = 30; A;B 20 + (20-5) = 35;
 * A;B;B 5; C 10 + 10 = 20.  Calls: A 1, B 3 (A;B 2, A;B;B 1), C 2.
 * Unclosed 3, unmatched exits 1.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libdeflate.h>

#include "analyze/cct.h"
#include "analyze/replay.h"
#include "analyze/spanwalk.h"
#include "check.h"
#include "common/bytes.h"
#include "report/clockmap.h"
#include "report/export.h"
#include "report/export_pb.h"
#include "report/export_zpkt.h"
#include "trace/writer.h"

enum { A = 1, B = 2, C = 3 };

static void chunk(FILE *f, uint32_t type, const void *p, size_t len)
{
    uint8_t h[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(h, type, p, (uint32_t)len);
    fwrite(h, 1, sizeof(h), f);
    fwrite(p, 1, len, f);
}

static size_t put_varint(uint8_t *q, uint64_t v)
{
    size_t n = 0;
    do {
        q[n] = (uint8_t)(v & 0x7f) | (v >= 0x80 ? 0x80 : 0);
        v >>= 7;
        n++;
    } while (v);
    return n;
}

/* One event: {ticks, op, operand}; the operand is written when the op has one. */
struct ev {
    uint64_t t;
    unsigned op;
    uint64_t x;
};

static void events(FILE *f, uint32_t tid, const struct ev *e, size_t n)
{
    uint8_t buf[1024];
    size_t len = 16;
    rp_put32(buf, tid);
    rp_put32(buf + 4, (uint32_t)n);
    rp_put64(buf + 8, e[0].t);
    uint64_t now = e[0].t;
    for (size_t i = 0; i < n; i++) {
        len += put_varint(buf + len, (e[i].t - now) << RP_OP_BITS | e[i].op);
        now = e[i].t;
        if (e[i].op != RP_OP_EXIT)
            len += put_varint(buf + len, e[i].x);
    }
    chunk(f, RP_CH_EVENTS, buf, len);
}

static void def(uint8_t *q, size_t *len, uint32_t id, const char *name)
{
    uint8_t *d = q + *len;
    memset(d, 0, RP_DEF_FIXED);
    rp_put32(d, id);
    d[4] = RP_KIND_POINT;
    d[5] = RP_CLASS_POINT;
    d[6] = (uint8_t)strlen(name);
    rp_put64(d + 8, 0x1000 * id);
    memcpy(d + RP_DEF_FIXED, name, strlen(name));
    *len += RP_DEF_FIXED + strlen(name);
}

static void write_trace(const char *path)
{
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    uint8_t h[RP_FILE_HDR_SIZE], defs[256];
    size_t dlen = 0;
    rp_file_header(h);
    fwrite(h, 1, sizeof(h), f);
    def(defs, &dlen, A, "A");
    def(defs, &dlen, B, "B");
    def(defs, &dlen, C, "C");
    chunk(f, RP_CH_DEFS, defs, dlen);
    const struct ev t1a[] = {
        {0, RP_OP_ENTER, A},  {10, RP_OP_ENTER, B}, {20, RP_OP_ENTER, C}, {30, RP_OP_EXIT_ID, B},
        {40, RP_OP_ENTER, B}, {45, RP_OP_ENTER, B}, {50, RP_OP_EXIT, 0},  {60, RP_OP_EXIT, 0},
    };
    const struct ev t2[] = {{5, RP_OP_ENTER, C}, {15, RP_OP_EXIT, 0}};
    const struct ev t1b[] = {
        {70, RP_OP_EXIT, 0},   {75, RP_OP_EXIT, 0},  {80, RP_OP_ENTER, A},  {90, RP_OP_LOST, 5},
        {100, RP_OP_ENTER, C}, {110, RP_OP_EXIT, 0}, {120, RP_OP_ENTER, A},
    };
    events(f, 1, t1a, sizeof(t1a) / sizeof(t1a[0]));
    events(f, 2, t2, sizeof(t2) / sizeof(t2[0]));
    events(f, 1, t1b, sizeof(t1b) / sizeof(t1b[0]));
    CHECK(fclose(f) == 0);
}

/* The tree against the numbers of the header and the replay's flat profile. */
static void test_cct(const char *path, const struct rp_profile *p)
{
    struct rp_replay_opts o = {0};
    struct rp_cct t = {0};
    char err[512];
    uint64_t calls[4] = {0}, excl[4] = {0};

    CHECK_EQ(rp_cct_build(&t, path, &o, p, 0, 0, err, sizeof(err)), 0);
    CHECK_EQ(t.n, 6);        /* root, A, A;B, A;B;C, A;B;B, C */
    CHECK_EQ(t.unclosed, 1); /* A at the LOST */
    CHECK_EQ(t.unwound, 1);  /* C, above the EXIT_ID B */
    CHECK_EQ(t.cut, 1);      /* A, open at the end */
    CHECK_EQ(t.unmatched, 1);
    for (uint32_t i = 1; i < t.n; i++) {
        const struct rp_cct_node *n = &t.nodes[i];
        calls[n->id] += n->calls;
        excl[n->id] += n->excl;
        if (n->id == B && n->depth == 2) {
            CHECK_EQ(n->calls, 2);
            CHECK_EQ(n->incl, 40);
            CHECK_EQ(n->excl, 25); /* the first B's callee C ended at the EXIT_ID */
        }
        if (n->id == B && n->depth == 3)
            CHECK_EQ(n->excl, 5);
        if (n->id == C && n->depth == 3) { /* ended by EXIT_ID B, with its time */
            CHECK_EQ(n->calls, 1);
            CHECK_EQ(n->incl, 10);
        }
    }
    for (uint32_t id = A; id <= C; id++) {
        CHECK_EQ(calls[id], p->nodes[id].calls);
        CHECK_EQ(excl[id], p->nodes[id].excl);
    }
    CHECK_EQ(calls[A], 2); /* the one open at the end is cut, 0 ticks */
    CHECK_EQ(excl[A], 30);
    CHECK_EQ(calls[B], 3);
    CHECK_EQ(calls[C], 3);
    CHECK_EQ(excl[C], 30);
    CHECK_EQ(t.unclosed, p->unclosed);
    CHECK_EQ(t.unwound, p->unwound);
    CHECK_EQ(t.cut, p->cut);
    CHECK_EQ(rp_node_cut(&p->nodes[C]), 1);
    CHECK_EQ(rp_node_cut(&p->nodes[A]), 1);
    CHECK_EQ(t.unmatched, p->unmatched_exits);
    rp_cct_free(&t);

    /* by thread: a node per thread under the root, the same paths below */
    CHECK_EQ(rp_cct_build(&t, path, &o, p, 1, 0, err, sizeof(err)), 0);
    CHECK_EQ(t.n, 9); /* root, 2 threads; tid 1: A, A;B, A;B;C, A;B;B, C; tid 2: C */
    uint32_t nthreads = 0, tids = 0;
    for (uint32_t c = t.nodes[0].child; c; c = t.nodes[c].sibling) {
        CHECK_EQ(t.nodes[c].id, 0);
        CHECK_EQ(t.nodes[c].depth, 1);
        nthreads++;
        tids |= 1u << t.nodes[c].tid;
    }
    CHECK_EQ(nthreads, 2);
    CHECK_EQ(tids, (1u << 1) | (1u << 2));
    uint64_t c2 = 0;
    for (uint32_t i = 1; i < t.n; i++)
        if (t.nodes[i].id == C && t.nodes[t.nodes[i].parent].tid == 2)
            c2 += t.nodes[i].calls;
    CHECK_EQ(c2, 1);
    rp_cct_free(&t);
}

struct counts {
    int begins, ends, unclosed, unwound, cut, lost, depth[3];
    uint64_t lost_n;
};

static int on_begin(void *c, uint32_t tid, uint32_t id, uint64_t ticks)
{
    struct counts *k = c;
    (void)id, (void)ticks;
    k->begins++;
    k->depth[tid]++;
    return 0;
}

static int on_end(void *c, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg, const char *why)
{
    struct counts *k = c;
    (void)id, (void)ticks, (void)arg;
    k->ends++;
    k->unclosed += why && !strcmp(why, "unclosed");
    k->unwound += why && !strcmp(why, "unwound");
    k->cut += why && !strcmp(why, "cut");
    CHECK(k->depth[tid] > 0); /* never an end without its begin */
    k->depth[tid]--;
    return 0;
}

static int on_lost(void *c, uint32_t tid, uint64_t ticks, uint64_t n)
{
    struct counts *k = c;
    (void)tid;
    CHECK_EQ(ticks, 90);
    k->lost++;
    k->lost_n += n;
    return 0;
}

static void test_timeline(const char *path, const struct rp_profile *p)
{
    static const struct rp_timeline_ops ops = {.begin = on_begin, .end = on_end, .lost = on_lost};
    struct rp_replay_opts ro = {0};
    struct rp_report_opts rep = {0};
    char err[512] = "";
    struct rp_export_ctx ctx = {
        .input = path, .replay = &ro, .p = p, .report = &rep, .err = err, .errsz = sizeof(err)};
    struct counts k = {0};

    CHECK_EQ(rp_export_timeline(&ctx, &ops, &k), 0);
    CHECK_EQ(k.begins, 9);
    CHECK_EQ(k.ends, 9);
    CHECK_EQ(k.unclosed, 1); /* A at the LOST */
    CHECK_EQ(k.unwound, 1);  /* C under the EXIT_ID B */
    CHECK_EQ(k.cut, 1);      /* A, open at the end */
    CHECK_EQ(k.lost, 1);
    CHECK_EQ(k.lost_n, 5);
    CHECK_EQ(k.depth[1], 0);
    CHECK_EQ(k.depth[2], 0);

    /* folded: exactly the five paths with exclusive time (the cut A has none) */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    CHECK_EQ(rp_export_folded(m, &ctx), 0);
    fclose(m);
    const char *want[] = {"A 30\n", "A;B 25\n", "A;B;B 5\n", "A;B;C 10\n", "C 20\n"};
    size_t total = 0;
    for (unsigned i = 0; i < 5; i++) {
        CHECK(strstr(text, want[i]) != NULL);
        total += strlen(want[i]);
    }
    CHECK_EQ(len, total);
    free(text);

    /* chrome: every span one complete event ("X"), the dropped spans marked */
    m = open_memstream(&text, &len);
    CHECK_EQ(rp_export_chrome(m, &ctx), 0);
    fclose(m);
    int nx = 0, nbe = 0, nu = 0, nw = 0, nc = 0;
    for (const char *s = text; (s = strstr(s, "\"ph\":\"")); s += 6) {
        nx += s[6] == 'X';
        nbe += s[6] == 'B' || s[6] == 'E';
    }
    for (const char *s = text; (s = strstr(s, "unclosed")); s++)
        nu++;
    for (const char *s = text; (s = strstr(s, "\"rankprof\":\"unwound\"")); s++)
        nw++;
    for (const char *s = text; (s = strstr(s, "\"rankprof\":\"cut\"")); s++)
        nc++;
    CHECK_EQ(nx, 9);
    CHECK_EQ(nbe, 0);
    /* whole events as the pool's threads format them: times, args, names */
    static const char *const lines[] = {
        "\n{\"ph\":\"X\",\"ts\":0.015,\"dur\":0.010,\"pid\":0,\"tid\":1,\"name\":\"C\","
        "\"cat\":\"point\",\"args\":{\"rankprof\":\"unwound\"}},\n",
        "\n{\"ph\":\"X\",\"ts\":0.000,\"dur\":0.065,\"pid\":0,\"tid\":1,\"name\":\"A\","
        "\"cat\":\"point\"},\n",
        "\n{\"ph\":\"i\",\"ts\":0.085,\"pid\":0,\"tid\":1,\"name\":\"LOST\",\"cat\":"
        "\"rankprof\",\"s\":\"t\",\"args\":{\"events\":5}},\n",
        "\n{\"ph\":\"X\",\"ts\":0.115,\"dur\":0.000,\"pid\":0,\"tid\":1,\"name\":\"A\","
        "\"cat\":\"point\",\"args\":{\"rankprof\":\"cut\"}}\n]}\n",
    };
    for (unsigned i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
        CHECK(strstr(text, lines[i]) != NULL);
    CHECK_EQ(nu, 1);
    CHECK_EQ(nw, 1);
    CHECK_EQ(nc, 1);
    free(text);
}

/* export_pb.h: nested lengths come out as the shortest varints, at every
 * size the 4 reserved bytes can hold (1, 2 and 3 bytes here). */
static void test_pb(void)
{
    struct pb pb = {0};
    static char big[20000];
    memset(big, 'x', sizeof(big) - 1);

    const size_t sizes[] = {0, 5, 127, 128, 200, 16383, 16384, 19999};
    for (unsigned k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++) {
        size_t n = sizes[k];
        big[n] = 0;
        pb_reset(&pb);
        pb_open(&pb, 1);      /* outer: field 1, LEN */
        pb_uint(&pb, 3, 300); /* 0x18 0xac 0x02 */
        pb_str(&pb, 2, big);  /* 0x12 varint(n) bytes */
        pb_close(&pb);
        big[n] = 'x';
        CHECK(!pb.bad);
        /* expected: 0x0a varint(inner) 0x18 0xac 0x02 0x12 varint(n) x... */
        size_t vn = n < 128 ? 1 : n < 16384 ? 2 : 3;
        size_t inner = 3 + 1 + vn + n;
        size_t vi = inner < 128 ? 1 : inner < 16384 ? 2 : 3;
        CHECK_EQ(pb.n, 1 + vi + inner);
        CHECK_EQ(pb.b[0], 0x0a);
        uint64_t got = 0, len = 0;
        const uint8_t *q = rp_get_varint(pb.b + 1, pb.b + pb.n, &got);
        CHECK(q == pb.b + 1 + vi); /* the shortest encoding */
        CHECK_EQ(got, inner);
        CHECK_EQ(q[0], 0x18);
        CHECK_EQ(q[1], 0xac);
        CHECK_EQ(q[2], 0x02);
        CHECK_EQ(q[3], 0x12);
        const uint8_t *str = rp_get_varint(q + 4, pb.b + pb.n, &len);
        CHECK(str == q + 4 + vn);
        CHECK_EQ(len, n);
        CHECK(n == 0 || (str[0] == 'x' && str[n - 1] == 'x'));
    }
    free(pb.b);
}

/*
 * The recorder's pauses (PAUSE, compact stream only), tid 1:
 *
 *      0 enter A    10 enter B    20 PAUSE 5    30 exit (B)   40 exit (A)
 *     50 enter C    52 PAUSE 9    60 exit (C)
 *
 * The replay takes each pause out of every span open then: A 40 - 5 = 35,
 * B 20 - 5 = 15, C 10 - 9 = 1.  The span walk's dur is the same; the
 * timeline tells the pauses [15, 20] (inside B) and [50, 52] (its start
 * not before C's enter at 50, where the pause's 9 ticks would put it), and
 * chrome writes each as a "[recorder]" slice.
 */
struct pz {
    int n;
    uint64_t start[4], end[4];
    uint64_t dur[4];
    uint32_t parent[4], depth[4];
};

static int pz_span_end(void *c, const struct rp_sw_span *s)
{
    struct pz *k = c;
    if (s->id < 4)
        k->dur[s->id] += s->dur;
    return 0;
}

static int pz_pause(void *c, uint32_t tid, uint64_t start, uint64_t end, uint32_t parent,
                    uint32_t depth)
{
    struct pz *k = c;
    CHECK_EQ(tid, 1);
    if (k->n < 4) {
        k->start[k->n] = start;
        k->end[k->n] = end;
        k->parent[k->n] = parent;
        k->depth[k->n] = depth;
    }
    k->n++;
    return 0;
}

static int pz_tl_pause(void *c, uint32_t tid, uint64_t start, uint64_t end)
{
    return pz_pause(c, tid, start, end, 0, 0);
}

static void test_pause(void)
{
    char path[] = "/tmp/rp_test_export_pause.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    CHECK(f != NULL);
    uint8_t h[RP_FILE_HDR_SIZE], defs[256], ev[128];
    size_t dlen = 0, n = 16;
    rp_file_header(h);
    fwrite(h, 1, sizeof(h), f);
    def(defs, &dlen, A, "A");
    def(defs, &dlen, B, "B");
    def(defs, &dlen, C, "C");
    chunk(f, RP_CH_DEFS, defs, dlen);
    /* compact (format.h): head delta << 1 | exit, an ENTER's id, 0 and an op */
    const uint8_t s[] = {0 << 1,      A, 10 << 1,     B,           10 << 1,   0,
                         RP_OP_PAUSE, 5, 10 << 1 | 1, 10 << 1 | 1, 10 << 1,   C,
                         2 << 1,      0, RP_OP_PAUSE, 9,           8 << 1 | 1};
    rp_put32(ev, 1);
    rp_put32(ev + 4, 8 | RP_EV_COMPACT);
    rp_put64(ev + 8, 0);
    memcpy(ev + n, s, sizeof(s));
    chunk(f, RP_CH_EVENTS, ev, n + sizeof(s));
    CHECK(fclose(f) == 0);

    struct rp_replay_opts o = {0};
    struct rp_profile p = {0};
    char err[512] = "";
    int rc = rp_replay_file(path, &o, &p, NULL, NULL, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    CHECK_EQ(rc, 0);
    CHECK_EQ(p.n_nodes, 4);
    if (rc < 0 || p.n_nodes != 4)
        goto out;
    CHECK_EQ(rp_node_dur_sum(&p.nodes[A]), 35);
    CHECK_EQ(rp_node_dur_sum(&p.nodes[B]), 15);
    CHECK_EQ(rp_node_dur_sum(&p.nodes[C]), 1);

    struct pz k = {0};
    static const struct rp_sw_ops ops = {.end = pz_span_end, .pause = pz_pause};
    CHECK_EQ(rp_sw_file(path, &o, &p, &ops, &k, 0, err, sizeof(err)), 0);
    for (uint32_t id = A; id <= C; id++)
        CHECK_EQ(k.dur[id], rp_node_dur_sum(&p.nodes[id]));
    CHECK_EQ(k.n, 2);
    CHECK_EQ(k.start[0], 15);
    CHECK_EQ(k.end[0], 20);
    CHECK_EQ(k.parent[0], B);
    CHECK_EQ(k.depth[0], 2);
    CHECK_EQ(k.start[1], 50); /* (52 - 9 is before C's enter) */
    CHECK_EQ(k.end[1], 52);
    CHECK_EQ(k.parent[1], C);
    CHECK_EQ(k.depth[1], 1);

    struct rp_report_opts rep = {0};
    struct rp_export_ctx ctx = {
        .input = path, .replay = &o, .p = &p, .report = &rep, .err = err, .errsz = sizeof(err)};
    static const struct rp_timeline_ops tops = {.pause = pz_tl_pause};
    struct pz t = {0};
    CHECK_EQ(rp_export_timeline(&ctx, &tops, &t), 0);
    CHECK_EQ(t.n, 2);
    CHECK_EQ(t.start[0], 15);
    CHECK_EQ(t.end[0], 20);

    /* chrome: each pause a [recorder] slice, [15, 20] in one X event */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    CHECK_EQ(rp_export_chrome(m, &ctx), 0);
    fclose(m);
    const char *rb = strstr(text, "\"ph\":\"X\",\"ts\":0.015,\"dur\":0.005,\"pid\"");
    CHECK(rb != NULL);
    const char *nm = rb ? strstr(rb, "\"name\":\"[recorder]\",\"cat\":\"rankprof\"") : NULL;
    CHECK(nm != NULL && nm < strchr(rb, '}')); /* that event's name */
    int nr = 0;
    for (const char *q = text; (q = strstr(q, "[recorder]")); q++)
        nr++;
    CHECK_EQ(nr, 2);
    free(text);
out:
    rp_profile_free(&p);
    unlink(path);
}

static char trace_path[] = "/tmp/rp_test_export.XXXXXX";
static struct rp_profile trace_prof;

static void test_cct_trace(void)
{
    test_cct(trace_path, &trace_prof);
}
static void test_timeline_trace(void)
{
    test_timeline(trace_path, &trace_prof);
}

/*
 * clockmap.c: the timelines' origin is the run's first event also when the
 * profile was read without a replay (defs_only: no thread knows its first
 * event) as one file of a set: here an EVENTS chunk based at tick 100 whose
 * first event is at 1100 (a thread's buffer begun before its first call).
 */
static void test_origin(void)
{
    char path[] = "/tmp/rp_test_export_origin.XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    FILE *f = fdopen(fd, "wb");
    CHECK(f != NULL);
    uint8_t h[RP_FILE_HDR_SIZE], defs[64], ev[64];
    size_t dlen = 0, n = 16;
    rp_file_header(h);
    fwrite(h, 1, sizeof(h), f);
    def(defs, &dlen, 1, "A");
    chunk(f, RP_CH_DEFS, defs, dlen);
    const uint8_t s[] = {0xd0, 0x0f, 1, 10 << 1 | 1}; /* enter A 1000 after the base, exit */
    rp_put32(ev, 1);
    rp_put32(ev + 4, 2 | RP_EV_COMPACT);
    rp_put64(ev + 8, 100);
    memcpy(ev + n, s, sizeof(s));
    chunk(f, RP_CH_EVENTS, ev, n + sizeof(s));
    CHECK(fclose(f) == 0);

    struct rp_proc proc = {.file = path};
    struct rp_profile p = {.n_procs = 1, .procs = &proc, .first_tick = 1100, .ns_per_tick = 1};
    struct rp_clockmap m;
    char err[256] = "";
    CHECK_EQ(rp_clockmap_profile(&m, &p, path, NULL, err, sizeof(err)), 0);
    CHECK(rp_clockmap_ns(&m, 1100) == 0);
    CHECK(rp_clockmap_ns(&m, 1110) == 10);
    rp_clockmap_free(&m);
    unlink(path);
}

/* in[0..n) through rp_zpkt_zlib, inflated back by libdeflate: the same
 * bytes; returns the stream's size (0 when it failed). */
static size_t zpkt_round(struct rp_zpkt *z, const uint8_t *in, size_t n)
{
    struct rp_xbuf out = {0};
    uint8_t *back = malloc(n + 1);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    size_t got = 0, zn = 0;
    CHECK(back && d);
    out.n = 3; /* appended after what out holds */
    CHECK_EQ(rp_xbuf_need(&out, 3), 0);
    memcpy(out.b, "abc", 3);
    CHECK_EQ(rp_zpkt_zlib(z, in, n, &out), 0);
    CHECK(!memcmp(out.b, "abc", 3));
    CHECK_EQ(libdeflate_zlib_decompress(d, out.b + 3, out.n - 3, back, n + 1, &got),
             LIBDEFLATE_SUCCESS);
    CHECK_EQ(got, n);
    if (got == n && !memcmp(back, in, n))
        zn = out.n - 3;
    else
        CHECK(!"the stream inflates to other bytes");
    libdeflate_free_decompressor(d);
    free(back);
    free(out.b);
    return zn;
}

/* A batch of packets through rp_zpkt_zlib_marked, the timestamp's varint
 * of each packet that begins with field 10 then field 8 marked and the
 * run before it keyed by its bytes (as the encoder keys the same bytes
 * alike), inflated back: the same bytes; returns the stream's size. */
static size_t zpkt_round_marked(struct rp_zpkt *z, const uint8_t *in, size_t n)
{
    struct rp_zmark *m = malloc((n / 4 + 1) * sizeof(*m));
    struct rp_xbuf out = {0};
    uint8_t *back = malloc(n + 1);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    size_t nm = 0, s = 0, got = 0, zn = 0;
    CHECK(m && back && d);
    for (size_t i = 0, e; i + 2 < n && in[i] == 0x0a; i = e) {
        size_t j = i + 2, len = in[i + 1];
        if (len >= 0x80) /* (a two-byte length: the long name) */
            len = (len & 0x7f) | (size_t)in[j++] << 7;
        if ((e = j + len) > n)
            break;
        if (e - j < 4 || in[j] != 10 << 3 || in[j + 1] >= 0x80 || in[j + 2] != 8 << 3)
            continue;
        size_t t0 = j + 3, t1 = t0;
        while (t1 < e && in[t1] >= 0x80)
            t1++;
        if (++t1 > e)
            break;
        uint64_t key = 1469598103934665603ull; /* FNV-1a of the run's bytes */
        for (size_t k = s; k < t0; k++)
            key = (key ^ in[k]) * 1099511628211ull;
        if (nm % 7 == 3)
            key = 0; /* (some runs unkeyed: hashed and compared) */
        m[nm++] = (struct rp_zmark){
            .at = (uint32_t)t0, .len = (uint32_t)(t1 - t0), .key = key | (key != 0)};
        s = t1;
    }
    CHECK_EQ(rp_zpkt_zlib_marked(z, in, n, m, nm, &out), 0);
    CHECK_EQ(libdeflate_zlib_decompress(d, out.b, out.n, back, n + 1, &got), LIBDEFLATE_SUCCESS);
    CHECK_EQ(got, n);
    if (got == n && !memcmp(back, in, n))
        zn = out.n;
    else
        CHECK(!"the marked stream inflates to other bytes");
    libdeflate_free_decompressor(d);
    free(back);
    free(out.b);
    free(m);
    return zn;
}

/*
 * export_zpkt.c: streams of packets like the perfetto export's (slice
 * begins and ends on two sequences, timestamps of 1 to 3 bytes, a long
 * interned name, a packet cut off at the end), of random bytes, of a
 * repeated byte and of nothing inflate to their input; the packets take
 * the matches (a run between two timestamps as one match).
 */
static void test_zpkt(void)
{
    struct rp_zpkt *z = rp_zpkt_alloc();
    CHECK(z != NULL);
    if (!z)
        return;
    size_t cap = 4 << 20, n = 0;
    uint8_t *b = malloc(cap);
    unsigned long long r = 88172645463325252ull;
    CHECK(b != NULL);
    /* a descriptor with a name longer than a match */
    b[n++] = 0x0a;
    b[n++] = 0x90, b[n++] = 0x03; /* 400 */
    for (unsigned i = 0; i < 400; i++)
        b[n++] = (uint8_t)('a' + i % 26);
    uint64_t bits = 0;
    while (n + 64 < cap - 100) {
        unsigned seq = 2 + (unsigned)(check_xorshift(&r) % 2);
        uint32_t id = 1 + (uint32_t)(check_xorshift(&r) % 5);
        if (check_xorshift(&r) % 64 == 0) /* a rare name: a match from far back */
            id = 6 + (uint32_t)(check_xorshift(&r) % 8);
        for (int end = 0; end < 2; end++) {
            uint64_t ts = check_xorshift(&r) % 3 == 0 ? check_xorshift(&r) % 100000 : 20;
            uint8_t pkt[32], *q = pkt;
            *q++ = 10 << 3, *q++ = (uint8_t)seq;
            *q++ = 8 << 3;
            for (; ts >= 0x80; ts >>= 7)
                *q++ = (uint8_t)(ts | 0x80);
            *q++ = (uint8_t)ts;
            bits += 31 + 9 * (uint64_t)(q - pkt - 3);
            *q++ = 13 << 3, *q++ = 2;
            *q++ = 11 << 3 | 2, *q++ = end ? 2 : 6;
            *q++ = 9 << 3, *q++ = end ? 2 : 1;
            if (!end)
                *q++ = 10 << 3, *q++ = (uint8_t)id, *q++ = 3 << 3, *q++ = 1;
            b[n++] = 0x0a;
            b[n++] = (uint8_t)(q - pkt);
            memcpy(b + n, pkt, (size_t)(q - pkt));
            n += (size_t)(q - pkt);
        }
    }
    memcpy(b + n, "\x0a\x30\x50\x02\x40\x05", 6); /* a packet running past the end */
    n += 6;
    size_t zn = zpkt_round(z, b, n);
    /* each packet's run a match (at most 31 bits) and its timestamp's
     * bytes (9 bits at most each), plus room for the runs seen first */
    CHECK(zn > 0 && zn < bits / 8 + 8192);
    CHECK(zn < n / 3);
    size_t zm = zpkt_round_marked(z, b, n); /* (keyed, one in 7 not) */
    CHECK(zm > 0 && zm < bits / 8 + 8192);
    CHECK(zpkt_round_marked(z, b, 3000) > 0); /* cut inside a packet */
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)check_xorshift(&r);
    CHECK(zpkt_round(z, b, n) > n);
    memset(b, 0x0a, 70000);
    CHECK(zpkt_round(z, b, 70000) > 0);
    CHECK(zpkt_round(z, b, 5) > 0);
    CHECK(zpkt_round(z, b, 0) > 0);
    free(b);
    rp_zpkt_free(z);
}

/*
 * rp_clockmap_fast_ns on a file of five CLOCK chunks (four slopes) gives
 * rp_clockmap_ns's doubles for ticks before, on, between and after the
 * chunks, in order and jumping back and forth (its kept segment).
 */
static void test_clock_fast(void)
{
    uint64_t tk[] = {1000, 1049, 2500, 7013, 9000}; /* 49 * (1.0 / 49) != 1 */
    uint64_t ns[] = {0, 1, 1307, 3111, 4103};
    double slope[4];
    for (unsigned i = 0; i < 4; i++)
        slope[i] = (double)(ns[i + 1] - ns[i]) / (double)(tk[i + 1] - tk[i]);
    struct rp_clockmap_file f = {.tk = tk, .ns = ns, .slope = slope, .n = 5};
    struct rp_clockmap m = {.f = &f, .n = 1, .ns_per_tick = 1, .origin = 0};
    struct rp_clockmap_fast q;
    rp_clockmap_fast_init(&m, &q);
    CHECK(q.linear);
    const uint64_t at[] = {0,    999,  1000, 1001, 1999, 2000, 2001, 2499, 2500,
                           6999, 7000, 8999, 9000, 9001, 1e6,  1500, 8000, 3000,
                           2000, 1999, 9000, 0,    7500, 2250, 1250, 2600, 1ull << 62};
    for (unsigned i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
        double want = rp_clockmap_ns(&m, at[i]), got = rp_clockmap_fast_ns(&m, &q, at[i]);
        if (got != want)
            fprintf(stderr, "ticks %llu: %.17g, want %.17g\n", (unsigned long long)at[i], got,
                    want);
        CHECK(got == want);
    }
    for (unsigned i = 0; i < 5; i++) /* each chunk's ticks just after the tick before */
        for (uint64_t t = tk[i] - 1; t <= tk[i] + 1; t++) {
            double want = rp_clockmap_ns(&m, t), got = rp_clockmap_fast_ns(&m, &q, t);
            if (got != want)
                fprintf(stderr, "ticks %llu: %.17g, want %.17g\n", (unsigned long long)t, got,
                        want);
            CHECK(got == want);
        }
    unsigned long long r = 2463534242ull;
    for (unsigned i = 0; i < 10000; i++) {
        uint64_t t = check_xorshift(&r) % 11000;
        CHECK(rp_clockmap_fast_ns(&m, &q, t) == rp_clockmap_ns(&m, t));
    }
}

static const struct check_case cases[] = {
    {"origin", test_origin},           {"pb", test_pb},       {"cct", test_cct_trace},
    {"timeline", test_timeline_trace}, {"pause", test_pause}, {"zpkt", test_zpkt},
    {"clock_fast", test_clock_fast},
};

int main(int argc, char **argv)
{
    int fd = mkstemp(trace_path);
    CHECK(fd >= 0);
    close(fd);
    write_trace(trace_path);

    struct rp_replay_opts o = {0};
    char err[512];
    int rc = rp_replay_file(trace_path, &o, &trace_prof, NULL, NULL, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "%s\n", err);
    CHECK_EQ(rc, 0);
    rc = check_run("test_export", argc, argv, cases, sizeof cases / sizeof cases[0]);
    rp_profile_free(&trace_prof);
    unlink(trace_path);
    return rc;
}

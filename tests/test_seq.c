// SPDX-License-Identifier: MIT
/*
 * test_seq.c - the lock profile (src/report/locks.c) and the sequence
 * diagrams (src/report/seq.c) on a synthetic trace whose every span is known.
 *
 * The trace is built with the real encoder (src/trace/writer.c) from raw
 * records, so the encoding of lock events is tested too: an ACQ without a
 * WAIT opens a hold alone, a FAIL marks its wait with RP_ARG_LOCK_FAILED,
 * and the encoder's lock_name hook names the lock.  Ticks are nanoseconds
 * (two CLOCK chunks 1e8 ticks and 1e8 ns apart).
 *
 *   tid 1 "main"                              tid 2 "worker"
 *   1000 enter F1                             1050 enter F2
 *   1100 ACQ L (uncontended)                  1150 WAIT L
 *   1200 io "i2c" begin, ARG dev 0x48, 6 B
 *   1300 io end
 *   1500 REL L                                1500 ACQ L (granted after 350)
 *   1600 instant "tick" (class timer)
 *   1650 named lock site "uart": wait
 *   1660 ... ends; 1665 hold begins
 *   1695 hold ends
 *                                             1700 REL L
 *                                             1800 WAIT L, 1810 FAIL L
 *                                             1900 instant "note" = 42 (class user)
 *   2000 exit F1                              2100 exit F2
 *
 * Lock L ("bus_lock"): 2 acquisitions, 1 contended, 1 failed, 2 waits of
 * 350 + 10 ns (max 350), holds of 400 + 200 ns (max 400).  Lock "uart"
 * (RP_LOCK_WAIT / RP_LOCK_HOLD sites, one node each, grouped by name): 1
 * acquisition, contended, wait 10 ns, hold 30 ns.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/replay.h"
#include "check.h"
#include "common/bytes.h"
#include "common/error.h"
#include "report/lock_report.h"
#include "report/seq.h"
#include "trace/writer.h"

#define F1   0x401000u
#define F2   0x402000u
#define L    0x5000u
#define IO   0x1000u
#define TICK 0x2000u
#define MARK 0x3000u
#define UW   0x4000u
#define UH   0x4100u

static int describe(void *ctx, uint64_t site, struct rp_def *d)
{
    (void)ctx;
    switch (site) {
    case IO:
        *d = (struct rp_def){.kind = RP_KIND_IO, .cls = RP_CLASS_IO, .name = "i2c"};
        return 0;
    case TICK:
        *d = (struct rp_def){.kind = RP_KIND_INSTANT, .cls = RP_CLASS_TIMER, .name = "tick"};
        return 0;
    case MARK:
        *d = (struct rp_def){.kind = RP_KIND_INSTANT, .cls = RP_CLASS_USER, .name = "note"};
        return 0;
    case UW:
        *d = (struct rp_def){.kind = RP_KIND_LOCK_WAIT, .cls = RP_CLASS_LOCK, .name = "uart"};
        return 0;
    case UH:
        *d = (struct rp_def){.kind = RP_KIND_LOCK_HOLD, .cls = RP_CLASS_LOCK, .name = "uart"};
        return 0;
    }
    return -1;
}

static const char *name_lock(uint64_t key)
{
    return key == L ? "bus_lock" : NULL;
}

static void chunk(FILE *f, uint32_t type, const void *p, size_t len)
{
    uint8_t h[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(h, type, p, (uint32_t)len);
    fwrite(h, 1, sizeof(h), f);
    fwrite(p, 1, len, f);
}

static void clock_chunk(FILE *f, uint64_t ticks, uint64_t ns)
{
    uint8_t c[24] = {0};
    rp_put64(c, ticks);
    rp_put64(c + 8, ns);
    chunk(f, RP_CH_CLOCK, c, sizeof(c));
}

static void thread_chunk(FILE *f, uint32_t tid, const char *name)
{
    uint8_t t[64] = {0};
    rp_put32(t, tid);
    memcpy(t + 8, name, strlen(name));
    chunk(f, RP_CH_THREAD, t, 8 + strlen(name));
}

/* Encodes one thread's records into DEFS (if new ids) + EVENTS. */
static void events(FILE *f, struct rp_enc *e, uint32_t tid, const struct rp_raw *r, size_t n)
{
    struct rp_enc_thread t = {0};
    uint8_t *out = malloc(rp_enc_bound(n));
    size_t len = rp_enc_events(e, &t, tid, r, n, out), dlen;
    const uint8_t *defs = rp_enc_take_defs(e, &dlen);
    if (dlen)
        chunk(f, RP_CH_DEFS, defs, dlen);
    chunk(f, RP_CH_EVENTS, out, len);
    CHECK_EQ(t.skipped, 0);
    free(out);
    rp_enc_thread_free(&t);
}

#define R(t, op, pl)                                                                               \
    {                                                                                              \
        (t), (uint64_t)(op) << RP_RAW_SHIFT | (pl)                                                 \
    }

static void write_trace(const char *path)
{
    const struct rp_raw t1[] = {
        R(1000, RP_RAW_FUNC_ENTER, F1), R(1100, RP_RAW_LOCK_ACQ, L),
        R(1200, RP_RAW_SITE_BEGIN, IO), R(1200, RP_RAW_ARG, (0x48ull << 32) | 6),
        R(1300, RP_RAW_SITE_END, IO),   R(1500, RP_RAW_LOCK_REL, L),
        R(1600, RP_RAW_INSTANT, TICK),  {0, (uint64_t)RP_RAW_DATA << RP_RAW_SHIFT},
        R(1650, RP_RAW_SITE_BEGIN, UW), R(1660, RP_RAW_SITE_END, UW),
        R(1665, RP_RAW_SITE_BEGIN, UH), R(1695, RP_RAW_SITE_END, UH),
        R(2000, RP_RAW_FUNC_EXIT, F1),
    };
    const struct rp_raw t2[] = {
        R(1050, RP_RAW_FUNC_ENTER, F2), R(1150, RP_RAW_LOCK_WAIT, L),
        R(1500, RP_RAW_LOCK_ACQ, L),    R(1700, RP_RAW_LOCK_REL, L),
        R(1800, RP_RAW_LOCK_WAIT, L),   R(1810, RP_RAW_LOCK_FAIL, L),
        R(1900, RP_RAW_INSTANT, MARK),  {42, (uint64_t)RP_RAW_DATA << RP_RAW_SHIFT},
        R(2100, RP_RAW_FUNC_EXIT, F2),
    };
    FILE *f = fopen(path, "wb");
    uint8_t hdr[RP_FILE_HDR_SIZE];
    uint8_t info[256];
    size_t ilen = 0;
    struct rp_enc e;

    rp_file_header(hdr);
    fwrite(hdr, 1, sizeof(hdr), f);
    rp_info_put(info, sizeof(info), &ilen, "program", "synthetic", 9);
    chunk(f, RP_CH_INFO, info, ilen);
    clock_chunk(f, 0, 0);
    thread_chunk(f, 1, "main");
    thread_chunk(f, 2, "worker");
    CHECK_EQ(rp_enc_init(&e, describe, NULL), 0);
    e.lock_name = name_lock;
    events(f, &e, 1, t1, sizeof(t1) / sizeof(t1[0]));
    events(f, &e, 2, t2, sizeof(t2) / sizeof(t2[0]));
    rp_enc_free(&e);
    clock_chunk(f, 100000000, 100000000);
    uint8_t end[32] = {0};
    rp_put32(end + 28, RP_END_EXIT);
    chunk(f, RP_CH_END, end, sizeof(end));
    fclose(f);
}

static void load(const char *path, struct rp_profile *p)
{
    char err[512];
    memset(p, 0, sizeof(*p));
    int rc = rp_replay_file(path, NULL, p, NULL, NULL, err, sizeof(err));
    if (rc < 0)
        fprintf(stderr, "replay: %s\n", err);
    CHECK_EQ(rc, 0);
    CHECK_NEAR(p->ns_per_tick, 1.0, 1e-12);
}

static void check_stat(const struct rp_lock_stat *s, uint64_t acq, uint64_t cont, uint64_t fail,
                       uint64_t wsum, uint64_t wmax, uint64_t hsum, uint64_t hmax)
{
    CHECK_EQ(s->acquisitions, acq);
    CHECK_EQ(s->contended, cont);
    CHECK_EQ(s->failed, fail);
    CHECK_EQ(s->waits, cont + fail);
    CHECK_EQ(s->wait_sum, wsum);
    CHECK_EQ(s->wait_max, wmax);
    CHECK_EQ(s->hold_sum, hsum);
    CHECK_EQ(s->hold_max, hmax);
}

static void test_locks(const char *path, const struct rp_profile *p)
{
    struct rp_locks lk = {0};
    char err[512], nb[64];
    CHECK_EQ(rp_locks_build(&lk, path, NULL, p, RP_LOCKS_SORT_WAIT, err, sizeof(err)), 0);
    CHECK_EQ(lk.nlocks, 2);
    if (lk.nlocks != 2)
        return;
    CHECK(!strcmp(lk.locks[1].name, "uart")); /* less wait: second */
    check_stat(&lk.locks[1].s, 1, 1, 0, 10, 10, 30, 30);
    CHECK_EQ(lk.locks[1].nsites, 1);
    CHECK_EQ(p->nodes[lk.locks[1].sites[0].caller].key, F1);
    CHECK(!strcmp(lk.locks[0].name, "bus_lock"));
    check_stat(&lk.locks[0].s, 2, 1, 1, 360, 350, 600, 400);
    /* the same numbers as the replay's nodes */
    uint64_t wait = 0, hold = 0, holds = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        if (p->nodes[i].kind == RP_KIND_LOCK_WAIT)
            wait += rp_node_dur_sum(&p->nodes[i]);
        if (p->nodes[i].kind == RP_KIND_LOCK_HOLD) {
            hold += rp_node_dur_sum(&p->nodes[i]);
            holds += p->nodes[i].calls;
        }
    }
    CHECK_EQ(wait, 360 + 10);
    CHECK_EQ(hold, 600 + 30);
    CHECK_EQ(holds, 3);
    /* sites, sorted by wait: F2 (waited) before F1 */
    CHECK_EQ(lk.locks[0].nsites, 2);
    if (lk.locks[0].nsites == 2) {
        CHECK_EQ(p->nodes[lk.locks[0].sites[0].caller].key, F2);
        check_stat(&lk.locks[0].sites[0].s, 1, 1, 1, 360, 350, 200, 200);
        CHECK_EQ(p->nodes[lk.locks[0].sites[1].caller].key, F1);
        check_stat(&lk.locks[0].sites[1].s, 1, 0, 0, 0, 0, 400, 400);
    }
    CHECK_STR(rp_lock_display_name(&p->nodes[lk.locks[0].sites[0].caller], nb, sizeof(nb)),
              "0x402000");
    rp_locks_free(&lk);
}

/* The diagram as a string. */
static char *diagram(const char *path, const struct rp_profile *p, const struct rp_seq_opts *o)
{
    char *buf = NULL, err[512];
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    int rc = rp_seq_write(f, path, NULL, p, o, err, sizeof(err));
    fclose(f);
    CHECK_EQ(rc, 0);
    return buf;
}

/* Checks that the lines appear in this order, each once. */
static void check_order(const char *text, const char *const *lines, size_t n)
{
    const char *at = text;
    for (size_t i = 0; i < n; i++) {
        const char *hit = at ? strstr(at, lines[i]) : NULL;
        if (!hit) {
            fprintf(stderr, "missing in order: \"%s\"\nin:\n%s\n", lines[i], text);
            failures++;
            return;
        }
        at = hit + strlen(lines[i]);
    }
}

static void test_plantuml(const char *path, const struct rp_profile *p)
{
    struct rp_seq_opts o = {.format = RP_SEQ_PLANTUML, .title = "synthetic"};
    char *d = diagram(path, p, &o);
    static const char *const want[] = {
        "@startuml\ntitle synthetic\n",
        "participant \"T1 main\" as P1\n",
        "participant \"T2 worker\" as P2\n",
        "entity \"bus_lock\" as P3\n",
        "entity \"uart\" as P4\n",
        "database \"i2c\" as P5\n",
        "control \"tick\" as P6\n",
        "P1 -> P3 : 100 ns acquire\n",
        "P2 -> P3 : 150 ns request\n",
        "P1 -> P5 : 200 ns i2c @0x48 6 B\n",
        "P5 --> P1 : 300 ns done in 100 ns\n",
        "P1 -> P3 : 500 ns release, held 400 ns\n",
        "P1 -> P2 : 500 ns wakes via bus_lock\n",
        "P3 --> P2 : 500 ns grant after 350 ns\n",
        "P6 -> P1 : 600 ns fire\n",
        "P1 -> P4 : 650 ns request\n",
        "P4 --> P1 : 660 ns grant after 10 ns\n",
        "P1 -> P4 : 695 ns release, held 30 ns\n",
        "P2 -> P3 : 700 ns release, held 200 ns\n",
        "P2 -> P3 : 800 ns request\n",
        "P3 --> P2 : 810 ns fail after 10 ns\n",
        "note over P2 : 900 ns note = 42\n",
        "@enduml\n",
    };
    check_order(d, want, sizeof(want) / sizeof(want[0]));
    CHECK(!strstr(d, "cut:"));
    CHECK(!strstr(d, "665 ns")); /* the named hold after its grant: no "acquire" */
    free(d);

    /* the cap: the 3 earliest messages, and a note saying what was cut */
    o.max_messages = 3;
    d = diagram(path, p, &o);
    static const char *const cut[] = {
        "P1 -> P3 : 100 ns acquire\n",
        "P2 -> P3 : 150 ns request\n",
        "P1 -> P4 : 200 ns i2c @0x48 6 B\n",
        "note over P1, P4 : cut: 11 more messages from 300 ns on are not shown (the cap is 3",
    };
    check_order(d, cut, sizeof(cut) / sizeof(cut[0]));
    CHECK(!strstr(d, "release"));
    free(d);

    /* a window [500 ns, 700 ns] */
    o = (struct rp_seq_opts){.format = RP_SEQ_PLANTUML, .from_ns = 500, .to_ns = 700};
    d = diagram(path, p, &o);
    static const char *const win[] = {
        "release, held 400 ns\n", "wakes via bus_lock\n",
        "grant after 350 ns\n",   "fire\n",
        "release, held 200 ns\n", "@enduml\n",
    };
    check_order(d, win, sizeof(win) / sizeof(win[0]));
    CHECK(!strstr(d, "acquire") && !strstr(d, "150 ns request") && !strstr(d, "i2c"));
    CHECK_STR(d, "650 ns request");
    free(d);

    /* one thread: no wake-up (the releaser is not shown), no T1 */
    o = (struct rp_seq_opts){.format = RP_SEQ_PLANTUML, .ntids = 1, .tids = {2}};
    d = diagram(path, p, &o);
    CHECK(!strstr(d, "T1 main") && !strstr(d, "wakes") && !strstr(d, "tick"));
    CHECK_STR(d, "grant after 350 ns");
    free(d);

    /* classes: io only */
    o = (struct rp_seq_opts){.format = RP_SEQ_PLANTUML, .classes = RP_SEQ_IO};
    d = diagram(path, p, &o);
    CHECK(!strstr(d, "bus_lock") && !strstr(d, "tick") && !strstr(d, "note ="));
    CHECK_STR(d, "P1 -> P2 : 200 ns i2c @0x48 6 B\n");
    free(d);

    /* procedures of thread 1: F1 gets a lifeline, called by the thread */
    o = (struct rp_seq_opts){.format = RP_SEQ_PLANTUML, .classes = RP_SEQ_FUNC, .func_tid = 1};
    d = diagram(path, p, &o);
    CHECK_STR(d, "participant \"0x401000\" as P2\n");
    CHECK_STR(d, "P1 -> P2 : 0 ns call\n");
    CHECK_STR(d, "P2 --> P1 : 1.00 us return after 1.00 us\n");
    CHECK(!strstr(d, "0x402000"));
    free(d);

    /* an empty window still gives a valid diagram with a note */
    o = (struct rp_seq_opts){.format = RP_SEQ_PLANTUML, .from_ns = 5000000};
    d = diagram(path, p, &o);
    CHECK_STR(d, "participant \"rankprof\" as P1\n");
    CHECK_STR(d, "note over P1 : no messages");
    CHECK_STR(d, "@enduml\n");
    free(d);
}

static void test_mermaid(const char *path, const struct rp_profile *p)
{
    struct rp_seq_opts o = {.format = RP_SEQ_MERMAID};
    char *d = diagram(path, p, &o);
    static const char *const want[] = {
        "sequenceDiagram\n",
        "    participant P1 as T1 main\n",
        "    participant P3 as bus_lock\n",
        "    P1->>P3: 100 ns acquire\n",
        "    P1->>P2: 500 ns wakes via bus_lock\n",
        "    P3-->>P2: 500 ns grant after 350 ns\n",
        "    Note over P2: 900 ns note = 42\n",
    };
    check_order(d, want, sizeof(want) / sizeof(want[0]));
    CHECK(!strstr(d, "@startuml"));
    free(d);

    unsigned cls = 0;
    char err[128];
    CHECK_EQ(rp_seq_parse_classes("lock,timer", &cls, err, sizeof(err)), 0);
    CHECK_EQ(cls, RP_SEQ_LOCK | RP_SEQ_TIMER);
    CHECK_EQ(rp_seq_parse_classes("lock,bogus", &cls, err, sizeof(err)), RP_EINVAL);
    CHECK_STR(err, "bogus");
}

static char trace_path[] = "/tmp/rp_test_seq.XXXXXX";
static struct rp_profile trace_prof;

static void test_locks_trace(void)
{
    test_locks(trace_path, &trace_prof);
}
static void test_plantuml_trace(void)
{
    test_plantuml(trace_path, &trace_prof);
}
static void test_mermaid_trace(void)
{
    test_mermaid(trace_path, &trace_prof);
}

static const struct check_case cases[] = {
    {"locks", test_locks_trace},
    {"plantuml", test_plantuml_trace},
    {"mermaid", test_mermaid_trace},
};

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "--write")) { /* only write the trace (to look at it) */
        write_trace(argv[2]);
        return failures != 0;
    }
    int fd = mkstemp(trace_path);
    if (fd < 0)
        return 1;
    close(fd);
    write_trace(trace_path);
    load(trace_path, &trace_prof);
    int rc = check_run("test_seq", argc, argv, cases, sizeof cases / sizeof cases[0]);
    rp_profile_free(&trace_prof);
    unlink(trace_path);
    return rc;
}

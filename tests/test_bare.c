// SPDX-License-Identifier: MIT
/*
 * test_bare.c - unit tests of the bare-metal recorder (src/bare/rp_bare.c,
 * compiled into this binary for the host) read back by the analyzer: a
 * fake clock (10 ticks a read), a RAM sink, the critical-section and
 * interrupt-context hooks supplied here.  Checks exact calls, edges and
 * times of functions, points, io, locks and an "interrupt" stream; chunks
 * cut by a small buffer and their PAUSEs; losses when the sink is full;
 * direct mode with no sink; bad configurations.  Runs without the ARM
 * toolchain (tests/e2e_firmware.sh covers the target).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../src/bare/rp_bare.c"
#include "analyze/profile.h"
#include "analyze/replay.h"
#include "check.h"

static uint64_t fake_now;
static int fake_isr;
static uint8_t ram[1 << 16];
static struct rp_bare_ram sink = {ram, sizeof ram, 0};
static char tmpdir[] = "/tmp/test_bare.XXXXXX";

uint32_t rp_bare_crit_enter(void)
{
    return 0;
}
void rp_bare_crit_exit(uint32_t m)
{
    (void)m;
}
int rp_bare_in_isr(void)
{
    return fake_isr;
}

static uint64_t fake_clock(void)
{
    return fake_now += 10;
}

/* The sink of rp_bare_cm.c (not built for the host). */
int rp_bare_ram_sink(void *ctx, const void *data, uint32_t len)
{
    struct rp_bare_ram *r = ctx;
    if (r->size - r->used < len)
        return -1;
    memcpy(r->buf + r->used, data, len);
    r->used += len;
    return 0;
}

static uint8_t buf[4096], ibuf[256];

static int start(uint32_t bufsize, uint32_t sinksize)
{
    struct rp_bare_config c = {.hz = 100000000,
                               .clock = fake_clock,
                               .sink = rp_bare_ram_sink,
                               .sink_ctx = &sink,
                               .buf = buf,
                               .buf_size = bufsize,
                               .irq_buf = ibuf,
                               .irq_buf_size = sizeof ibuf,
                               .program = "test"};
    fake_now = 0;
    fake_isr = 0;
    sink.used = 0;
    sink.size = sinksize;
    return rp_bare_start(&c);
}

/* Replays what the sink holds into *p; returns the replay's result. */
static int replay(struct rp_profile *p)
{
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/bare.rpt", tmpdir);
    FILE *f = fopen(path, "wb");
    fwrite(ram, 1, sink.used, f);
    fclose(f);
    memset(p, 0, sizeof *p);
    int rc = rp_replay_file(path, NULL, p, NULL, NULL, err, sizeof err);
    if (rc)
        fprintf(stderr, "  replay: %s\n", err);
    unlink(path);
    return rc;
}

static const struct rp_node *node(const struct rp_profile *p, uint8_t kind, uint64_t key,
                                  uint32_t *index)
{
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (p->nodes[i].kind == kind && p->nodes[i].key == key) {
            if (index)
                *index = i;
            return &p->nodes[i];
        }
    return NULL;
}

static uint64_t edge_calls(const struct rp_profile *p, uint32_t caller, uint32_t callee)
{
    for (uint32_t i = 0; i < p->n_edges; i++)
        if (p->edges[i].caller == caller && p->edges[i].callee == callee)
            return p->edges[i].calls;
    return 0;
}

#define FA ((void *)0x1001) /* Thumb addresses: odd */
#define FB ((void *)0x2001)
#define FI ((void *)0x3001)

/* Functions, a point with a budget, io with its ARG, a lock, an instant,
 * a counter, and an "interrupt" with a function of its own. */
static void test_events(void)
{
    static struct rp_site pt = {"pt", "t.c", 7, RP_SITE_POINT, RP_CLASS_IDX_POINT, 0, 0, 25, 0,
                                0,    0,     0};
    static struct rp_site io = {"io0", "t.c", 8, RP_SITE_IO, RP_CLASS_IDX_IO, 0, 0, 0, 0, 0, 0, 0};
    static struct rp_site tick = {"tick", "t.c", 9, RP_SITE_INSTANT, RP_CLASS_IDX_TIMER, 0, 0, 0, 0,
                                  0,      0,     0};
    static struct rp_site cnt = {"cnt", "t.c", 10, RP_SITE_COUNTER, RP_CLASS_IDX_USER, 0, 0, 0, 0,
                                 0,     0,     0};
    static int lock;
    struct rp_profile p;
    uint32_t ia = 0, ib = 0, ii = 0, ip = 0;

    CHECK_EQ(start(sizeof buf, sizeof ram), 0);
    for (int i = 0; i < 3; i++) {
        __cyg_profile_func_enter(FA, NULL); /* A: 10 ticks + B's 30 + 10 = 50 */
        __cyg_profile_func_enter(FB, NULL); /* B: 30 ticks (one read inside) */
        rp_site_instant(&tick, 0);
        __cyg_profile_func_exit(FB, NULL);
        __cyg_profile_func_exit(FA, NULL);
    }
    uint64_t t0 = rp_site_begin(&pt); /* pt: 10 reads inside + end = 30 ticks > 25: overrun */
    uint64_t t1 = rp_site_begin_arg(&io, RP_IO_ARG(0x6b, 4));
    rp_lock_acquired(&lock);
    rp_site_counter(&cnt, -5);
    rp_lock_released(&lock);
    rp_site_end(&io, t1);
    rp_site_end(&pt, t0);
    fake_isr = 1;
    __cyg_profile_func_enter(FI, NULL);
    __cyg_profile_func_exit(FI, NULL);
    fake_isr = 0;
    CHECK_EQ(rp_bare_stop(0), 0);
    CHECK_EQ(rp_bare_lost(), 0);

    CHECK_EQ(replay(&p), 0);
    CHECK_EQ(p.n_threads, 2);
    for (uint32_t i = 0; i < p.n_threads; i++) /* the interrupt's 2 events on thread 2 */
        if (p.threads[i].tid == 2)
            CHECK_EQ(p.threads[i].events, 2);
    CHECK_EQ(p.lost, 0);
    CHECK_EQ(p.unmatched_exits, 0);
    CHECK_EQ(p.unclosed, 0);
    const struct rp_node *a = node(&p, RP_KIND_FUNC, 0x1000, &ia); /* Thumb bit cleared */
    const struct rp_node *b = node(&p, RP_KIND_FUNC, 0x2000, &ib);
    const struct rp_node *fi = node(&p, RP_KIND_FUNC, 0x3000, &ii);
    const struct rp_node *n = node(&p, RP_KIND_POINT, (uint32_t)(uintptr_t)&pt, &ip);
    CHECK(a && b && fi && n);
    if (a && b && fi && n) {
        CHECK_EQ(a->calls, 3);
        CHECK_EQ(b->calls, 3);
        CHECK_EQ(a->incl, 3 * 40);
        CHECK_EQ(b->incl, 3 * 20);
        CHECK_EQ(edge_calls(&p, 0, ia), 3);
        CHECK_EQ(edge_calls(&p, ia, ib), 3);
        CHECK_EQ(edge_calls(&p, 0, ii), 1); /* the interrupt is a root of its own */
        CHECK_EQ(fi->calls, 1);
        CHECK_EQ(n->calls, 1);
        CHECK_EQ(rp_node_budget(n), 2); /* 25 ns at 100 MHz */
        CHECK_EQ(rp_node_overruns(n), 1);
        CHECK_EQ(strcmp(n->name, "pt"), 0);
    }
    const struct rp_node *nio = node(&p, RP_KIND_IO, (uint32_t)(uintptr_t)&io, NULL);
    const struct rp_node *hold = node(&p, RP_KIND_LOCK_HOLD, (uint32_t)(uintptr_t)&lock, NULL);
    CHECK(nio && hold);
    if (nio && hold) {
        CHECK_EQ(nio->calls, 1);
        CHECK_EQ(hold->calls, 1);
        CHECK_EQ(hold->incl, 20);
    }
    rp_profile_free(&p);
}

/* Holds are intervals (docs/locks.md): taken in B, released in its caller
 * A, the hold is B's (the acquirer), as long as from the acquisition to the
 * release; a recursive acquisition is part of the outermost hold; a
 * release never acquired is an unmatched exit. */
static void test_holds(void)
{
    static int lock, other;
    struct rp_profile p;
    uint32_t ia = 0, ib = 0, ih = 0;
    CHECK_EQ(start(sizeof buf, sizeof ram), 0);
    for (int i = 0; i < 5; i++) {
        __cyg_profile_func_enter(FA, NULL);
        __cyg_profile_func_enter(FB, NULL);
        rp_lock_acquired(&lock); /* taken in B ... */
        rp_lock_acquired(&lock); /* (recursively) */
        __cyg_profile_func_exit(FB, NULL);
        rp_lock_released(&lock);
        rp_lock_released(&lock); /* ... released in A: 40 ticks after the first */
        __cyg_profile_func_exit(FA, NULL);
    }
    rp_lock_released(&other); /* never acquired */
    CHECK_EQ(rp_bare_stop(0), 0);
    CHECK_EQ(replay(&p), 0);
    CHECK_EQ(p.unmatched_exits, 1);
    CHECK_EQ(p.unclosed, 0);
    const struct rp_node *a = node(&p, RP_KIND_FUNC, 0x1000, &ia);
    const struct rp_node *b = node(&p, RP_KIND_FUNC, 0x2000, &ib);
    const struct rp_node *h = node(&p, RP_KIND_LOCK_HOLD, (uint32_t)(uintptr_t)&lock, &ih);
    CHECK(a && b && h);
    if (a && b && h) {
        CHECK_EQ(a->calls, 5);
        CHECK_EQ(b->calls, 5);
        CHECK_EQ(edge_calls(&p, ia, ib), 5);
        CHECK_EQ(h->calls, 5);
        CHECK_EQ(edge_calls(&p, ib, ih), 5); /* the acquirer's */
        CHECK_EQ(edge_calls(&p, ia, ih), 0);
        CHECK_EQ(h->incl, 5 * 40);
        CHECK_EQ(h->excl, 0);
        CHECK_EQ(b->incl, 5 * 30); /* no time taken from either */
        CHECK_EQ(a->excl, 5 * 40);
    }
    rp_profile_free(&p);
}

/* A 256-byte buffer: many chunks, each flush said by a PAUSE (the clock
 * read after the flush, 10 ticks), the counts still exact. */
static void test_chunks(void)
{
    struct rp_profile p;
    uint32_t ia = 0, ib = 0;
    CHECK_EQ(start(256, sizeof ram), 0);
    for (int i = 0; i < 1000; i++) {
        __cyg_profile_func_enter(FA, NULL);
        __cyg_profile_func_enter(FB, NULL);
        __cyg_profile_func_exit(FB, NULL);
        __cyg_profile_func_exit(FA, NULL);
    }
    CHECK_EQ(rp_bare_stop(0), 0);
    CHECK_EQ(rp_bare_events(), 4000);
    CHECK_EQ(replay(&p), 0);
    const struct rp_node *a = node(&p, RP_KIND_FUNC, 0x1000, &ia);
    const struct rp_node *b = node(&p, RP_KIND_FUNC, 0x2000, &ib);
    CHECK(a && b);
    if (a && b) {
        CHECK_EQ(a->calls, 1000);
        CHECK_EQ(b->calls, 1000);
        CHECK_EQ(edge_calls(&p, ia, ib), 1000);
        CHECK_EQ(rp_node_max(b), 10); /* a flush inside B is taken out by its PAUSE */
        CHECK_EQ(rp_node_max(a), 30);
    }
    CHECK(p.threads[0].paused > 0);
    CHECK_EQ(p.lost, 0);
    rp_profile_free(&p);
}

/* A sink that refuses writes number fail_from .. fail_to - 1. */
static int calls, fail_from, fail_to;
static int flaky_sink(void *ctx, const void *data, uint32_t len)
{
    calls++;
    if (calls > fail_from && calls <= fail_to)
        return -1;
    return rp_bare_ram_sink(ctx, data, len);
}

/* A sink that fails for a while: the chunks it refuses are counted as lost,
 * the next chunk that gets out says how many (LOST), and the replay closes
 * the spans open there; a sink that stays full loses the rest. */
static void test_lost(void)
{
    struct rp_profile p;
    struct rp_bare_config c = {.hz = 1000,
                               .clock = fake_clock,
                               .sink = flaky_sink,
                               .sink_ctx = &sink,
                               .buf = buf,
                               .buf_size = 256};
    sink.used = 0;
    sink.size = sizeof ram;
    calls = 0;
    fail_from = 20;
    fail_to = 23;
    CHECK_EQ(rp_bare_start(&c), 0);
    for (int i = 0; i < 1000; i++) {
        __cyg_profile_func_enter(FA, NULL);
        __cyg_profile_func_exit(FA, NULL);
    }
    CHECK_EQ(rp_bare_stop(0), 0);
    CHECK(rp_bare_lost() > 0);
    CHECK_EQ(rp_bare_events() + rp_bare_lost(), 2000);
    CHECK_EQ(replay(&p), 0);
    CHECK_EQ(p.lost, rp_bare_lost());
    rp_profile_free(&p);

    CHECK_EQ(start(256, 2048), 0); /* a RAM sink that fills up */
    for (int i = 0; i < 1000; i++) {
        __cyg_profile_func_enter(FA, NULL);
        __cyg_profile_func_exit(FA, NULL);
    }
    CHECK(rp_bare_stop(0) <= 0); /* the END may still fit */
    CHECK(rp_bare_lost() > 0);
    CHECK_EQ(rp_bare_events() + rp_bare_lost(), 2000);
    CHECK_EQ(replay(&p), 0); /* what got out reads (no END: a warning) */
    rp_profile_free(&p);
}

/* No sink: direct mode only, the points' statistics and nothing written. */
static void test_direct(void)
{
    static struct rp_site pt = {"dpt", "t.c", 7, RP_SITE_POINT, RP_CLASS_IDX_POINT, 0, 0, 0, 0,
                                0,     0,     0};
    struct rp_bare_config c = {.hz = 1000, .clock = fake_clock};
    CHECK_EQ(rp_bare_start(&c), 0);
    for (int i = 0; i < 4; i++) {
        uint64_t t = rp_site_begin(&pt);
        rp_site_end(&pt, t);
    }
    CHECK_EQ(rp_bare_stop(0), 0);
    CHECK(pt.spare != 0);
    if (pt.spare) {
        CHECK_EQ(pst[pt.spare - 1].calls, 4);
        CHECK_EQ(pst[pt.spare - 1].total, 40);
        CHECK_EQ(pst[pt.spare - 1].max, 10);
    }
}

/* A second start: sites in the section get new ids, defined in the new
 * trace (an id kept from the first would be undefined there). */
RP__SITE(restart_site, "again", RP_SITE_POINT, RP_CLASS_IDX_POINT, 0);

static void test_restart(void)
{
    struct rp_profile p;
    for (int run = 0; run < 2; run++) {
        CHECK_EQ(start(sizeof buf, sizeof ram), 0);
        __cyg_profile_func_enter(run ? FB : FA, NULL); /* the second run: "again" is id 2 */
        __cyg_profile_func_exit(run ? FB : FA, NULL);
        uint64_t t = rp_site_begin(&restart_site);
        rp_site_end(&restart_site, t);
        CHECK_EQ(rp_bare_stop(0), 0);
    }
    CHECK_EQ(replay(&p), 0);
    const struct rp_node *n = node(&p, RP_KIND_POINT, (uint32_t)(uintptr_t)&restart_site, NULL);
    CHECK(n != NULL);
    if (n) {
        CHECK_EQ(n->calls, 1);
        CHECK_EQ(strcmp(n->name, "again"), 0);
    }
    CHECK_EQ(p.unmatched_exits, 0);
    rp_profile_free(&p);
}

/* Two RTOS tasks preempting each other in the middle of their functions:
 * with a stream each, every span nests on its own thread. */
static void test_tasks(void)
{
    static struct rp_bare_task ta, tb;
    static uint8_t ba[4096], bb[4096]; /* (no flush inside the loop) */
    struct rp_profile p;
    uint32_t ia = 0, ib = 0;
    CHECK_EQ(start(sizeof buf, sizeof ram), 0);
    CHECK_EQ(rp_bare_task_add(&ta, 3, "task_a", ba, sizeof ba), 0);
    CHECK_EQ(rp_bare_task_add(&tb, 4, "task_b", bb, sizeof bb), 0);
    CHECK_EQ(rp_bare_task_add(&tb, 2, "bad", bb, sizeof bb), -1); /* 1 and 2 are taken */
    for (int i = 0; i < 100; i++) {
        rp_bare_task_switch(&ta);
        __cyg_profile_func_enter(FA, NULL);
        rp_bare_task_switch(&tb);
        __cyg_profile_func_enter(FB, NULL);
        rp_bare_task_switch(&ta);
        __cyg_profile_func_exit(FA, NULL);
        rp_bare_task_switch(&tb);
        __cyg_profile_func_exit(FB, NULL);
    }
    rp_bare_task_switch(NULL);
    CHECK_EQ(rp_bare_stop(0), 0);
    CHECK_EQ(replay(&p), 0);
    CHECK_EQ(p.n_threads, 4);
    CHECK_EQ(p.unmatched_exits, 0);
    CHECK_EQ(p.unclosed, 0);
    const struct rp_node *a = node(&p, RP_KIND_FUNC, 0x1000, &ia);
    const struct rp_node *b = node(&p, RP_KIND_FUNC, 0x2000, &ib);
    CHECK(a && b);
    if (a && b) {
        CHECK_EQ(a->calls, 100);
        CHECK_EQ(b->calls, 100);
        CHECK_EQ(edge_calls(&p, 0, ia), 100); /* roots: neither calls the other */
        CHECK_EQ(edge_calls(&p, 0, ib), 100);
        CHECK_EQ(edge_calls(&p, ia, ib), 0);
        /* each switch reads the clock: A runs 10 ticks, is out 20 (from the
         * switch to B to the switch back: off CPU), runs 10 more */
        CHECK_EQ(rp_node_max(a), 40);
        CHECK_EQ(rp_node_offcpu(a), 100 * 20);
        CHECK_EQ(a->excl, 100 * 20);
        CHECK_EQ(rp_node_offcpu(b), 100 * 20);
        CHECK_EQ(b->excl, 100 * 20);
    }
    uint32_t io = 0;
    const struct rp_node *off = node(&p, RP_KIND_OFFCPU, 0, &io);
    CHECK(off && strcmp(off->name, "[off-cpu]") == 0);
    CHECK_EQ(edge_calls(&p, ia, io), 100); /* one span a switch back into A's open span */
    CHECK_EQ(edge_calls(&p, ib, io), 100);
    CHECK_EQ(strcmp(p.offcpu_src, "irq+tasks"), 0); /* the INFO of the first task */
    for (uint32_t i = 0; i < p.n_threads; i++)
        if (p.threads[i].tid == 3)
            CHECK_EQ(strcmp(p.threads[i].name, "task_a"), 0);
    rp_profile_free(&p);
}

static void test_bad_config(void)
{
    struct rp_bare_config c = {.hz = 1000,
                               .clock = fake_clock,
                               .sink = rp_bare_ram_sink,
                               .sink_ctx = &sink,
                               .buf = buf,
                               .buf_size = 100};
    CHECK_EQ(rp_bare_start(&c), -1); /* buffer under 256 bytes */
    c.buf_size = sizeof buf;
    c.hz = 0;
    CHECK_EQ(rp_bare_start(&c), -1);
    c.hz = 1000;
    sink.used = 0;
    sink.size = 10; /* the file header does not fit */
    CHECK_EQ(rp_bare_start(&c), -2);
    CHECK_EQ(rp_bare_stop(0), -1); /* not recording */
}

static const struct check_case cases[] = {
    {"events", test_events},         {"chunks", test_chunks},   {"lost", test_lost},
    {"direct", test_direct},         {"restart", test_restart}, {"tasks", test_tasks},
    {"bad_config", test_bad_config}, {"holds", test_holds},
};

int main(int argc, char **argv)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    int rc = check_run("test_bare", argc, argv, cases, sizeof cases / sizeof cases[0]);
    rmdir(tmpdir);
    return rc;
}

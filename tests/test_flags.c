// SPDX-License-Identifier: MIT
/*
 * test_flags.c - checks the flags (flags.c: rp_flags_apply, rp_flags_explain,
 * rp_flags_str) on hand-built profiles, each with a near miss that must not
 * be flagged, and off-CPU, wait and lock-wait time in them.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/flags.h"
#include "analyze/profile.h"
#include "analyze/rank.h"
#include "common/error.h"
#include "trace/format.h"
#include "check.h"

#define NN 16
static struct rp_node fn[NN];
static struct rp_edge fe[NN];

/* The profile of fn[0..n) and fe[0..m) (none when m is 0), its total time
 * in ticks of ns_per_tick ns, nothing else set.  Cannot fail. */
static struct rp_profile profile_of(uint32_t n, uint32_t m, uint64_t total, double ns_per_tick)
{
    return (struct rp_profile){.nodes = fn,
                               .n_nodes = n,
                               .edges = m ? fe : NULL,
                               .n_edges = m,
                               .total = total,
                               .ns_per_tick = ns_per_tick};
}

/* Empties fn and fe (and frees what the nodes kept apart, struct rp_node_x
 * and the flags' distributions in it). */
static void clear_nodes(void)
{
    for (unsigned i = 0; i < NN; i++) {
        if (fn[i].x) {
            rp_hist_free(&fn[i].x->hist);
            rp_flag_hists_free(&fn[i].x->fh);
        }
        free(fn[i].x);
    }
    memset(fn, 0, sizeof fn);
    memset(fe, 0, sizeof fe);
}

static void set_node(uint32_t i, uint8_t kind, uint64_t calls, uint64_t excl, uint64_t dur)
{
    fn[i].id = i;
    fn[i].kind = kind;
    fn[i].calls = calls;
    fn[i].excl = excl;
    fn[i].incl = dur;
    if (fn[i].x)
        fn[i].x->dur_sum = dur;
}

/* Node i's statistics apart, allocated with their defaults when it has
 * none (to set its durations' sum, extremes and histogram). */
static struct rp_node_x *xs(uint32_t i)
{
    struct rp_node_x *x = rp_node_xw(&fn[i]);
    CHECK(x != NULL);
    if (!x)
        exit(1);
    return x;
}

/* Sets node i's largest duration (and on-CPU and run maxima) to mx. */
static void set_max(uint32_t i, uint64_t mx)
{
    struct rp_node_x *x = xs(i);
    x->max = x->oncpu_max = x->run_max = mx;
}

static void test_flags(void)
{
    struct rp_profile p;
    struct rp_flag_opts fo;
    struct rp_rank_opts ro = {1e-9, 1e-14, 10000, 0};
    char buf[512];

    rp_flag_opts_default(&fo);
    CHECK(fo.dispatch_involvement == 0.10 && fo.hot_self == 0.05 && fo.jitter_calls == 100);

    /*
     * Dispatch profile, total 10000 ticks:
     *   <root> -> main 10000: self 10, calls d 9500, e 490
     *   d 9500: self 40 (0.42 %), calls w1 3160, w2 3160, w3 3140
     *   e 490 (4.9 % of all: near miss for HOT), w1..w3 leaves (31.6 % ...)
     *   d2: a second dispatcher-like node under ROOT with 11 % self: near
     *   miss for DISPATCH (d2 -> v1, v2 equally, 2 callees).
     * main: involvement 1, self 0.1 %, but fanout exp(H(9500/9990,
     * 490/9990)) = 1.22 < 2: near miss for DISPATCH.
     * d: involvement 0.95 (alpha -> 0), fanout exp(H(.334, .334, .332))
     * = 3.0, so DISPATCH "95% involved, 0.4% self, spreads over 3.0 callees".
     * Indices: 0 ROOT, 1 main, 2 d, 3 e, 4 w1, 5 w2, 6 w3.
     */
    clear_nodes();
    set_node(1, RP_KIND_FUNC, 1, 10, 10000);
    set_node(2, RP_KIND_FUNC, 1, 40, 9500);
    set_node(3, RP_KIND_FUNC, 1, 490, 490);
    set_node(4, RP_KIND_FUNC, 1, 3160, 3160);
    set_node(5, RP_KIND_FUNC, 1, 3160, 3160);
    set_node(6, RP_KIND_FUNC, 1, 3140, 3140);
    fn[0].excl = 10000; /* ROOT must never be flagged, whatever it holds */
    static const uint32_t es[6] = {0, 1, 1, 2, 2, 2}, ed[6] = {1, 2, 3, 4, 5, 6};
    static const uint64_t ew[6] = {10000, 9500, 490, 3160, 3160, 3140};
    for (int e = 0; e < 6; e++)
        fe[e] = (struct rp_edge){.caller = es[e], .callee = ed[e], .calls = 1, .incl = ew[e]};
    p = profile_of(7, 6, 10000, 1.0);
    CHECK(rp_rank_profile(&p, &ro) == 0);
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK(fn[0].flags == 0);
    CHECK(fn[2].flags == RP_FLAG_DISPATCH);
    CHECK(fn[1].flags == 0); /* fanout near miss: by time (by calls 2) */
    CHECK_NEAR(rp_node_fanout(&fn[1]), 2.0, 1e-12);
    CHECK_NEAR(rp_node_fanout_time(&fn[1]),
               exp(-(9500.0 / 9990 * log(9500.0 / 9990) + 490.0 / 9990 * log(490.0 / 9990))),
               1e-12);
    CHECK(fn[3].flags == 0); /* 4.9 % self: not HOT */
    CHECK(fn[4].flags == RP_FLAG_HOT && fn[5].flags == RP_FLAG_HOT && fn[6].flags == RP_FLAG_HOT);
    double h = -(2 * (3160.0 / 9460) * log(3160.0 / 9460) + 3140.0 / 9460 * log(3140.0 / 9460));
    CHECK_NEAR(rp_node_fanout_time(&fn[2]), exp(h), 1e-12);
    CHECK_NEAR(rp_node_fanout(&fn[2]), 3.0, 1e-12);
    CHECK(rp_flags_explain(&p, &fn[2], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "DISPATCH 95% involved, 0.4% self, hands work to 3.0 callees by calls, 3.0 by "
                   "time");
    CHECK(rp_flags_explain(&p, &fn[4], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "HOT 31.6% of all on-CPU time is its own");
    CHECK(rp_flags_explain(&p, &fn[1], NULL, buf, sizeof buf) == 0 && buf[0] == 0);

    /* self-share near miss: d with 11 % self (1045 of 9500) is not DISPATCH
     * (but then 10.45 % of all time: HOT) */
    set_node(2, RP_KIND_FUNC, 1, 1045, 9500);
    fe[3].incl = 2820;
    fe[4].incl = 2820;
    fe[5].incl = 2815;
    CHECK(rp_rank_profile(&p, &ro) == 0);
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK(fn[2].flags == RP_FLAG_HOT);
    CHECK(rp_flags_explain(&p, &fn[2], NULL, buf, sizeof buf) > 0);
    /* of all on-CPU time: the nodes' own times, 11005 here (w1..w3 kept theirs) */
    CHECK_STR(buf, "HOT 9.5% of all on-CPU time is its own");

    /* involvement near miss: d is involved in 95 % of the time; with the
     * threshold raised to 96 % it is no longer DISPATCH */
    set_node(2, RP_KIND_FUNC, 1, 40, 9500);
    fe[3].incl = 3160;
    fe[4].incl = 3160;
    fe[5].incl = 3140;
    CHECK(rp_rank_profile(&p, &ro) == 0);
    fo.dispatch_involvement = 0.96; /* d's is 0.95 */
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(!(fn[2].flags & RP_FLAG_DISPATCH));
    rp_flag_opts_default(&fo);
    /* the margin: 0.7 x 1.5 = 1.05 is over d's 0.95; without it (1) d is over
     * 0.7; the self share 0.42 % against 0.10 / 100 = 0.1 % is under */
    fo.dispatch_involvement = 0.7;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(!(fn[2].flags & RP_FLAG_DISPATCH));
    fo.dispatch_margin = 1;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[2].flags & RP_FLAG_DISPATCH);
    rp_flag_opts_default(&fo);
    fo.dispatch_margin = 100; /* self share must be <= 0.1 %: d has 0.42 % */
    fo.dispatch_involvement = 0.001;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(!(fn[2].flags & RP_FLAG_DISPATCH));
    rp_flag_opts_default(&fo);

    /*
     * Recursion and DISPATCH.  d now also calls itself: 20 nested
     * activations adding 6 ticks of self time and 9000 ticks of edge time
     * (the nested frames' durations, counted again), so that excl = 46,
     * incl = 9500 (outermost), dur_sum = 18500.  The self edge is not a
     * callee to spread over: fanout stays 3.0, not the 2.9 the self edge's
     * 49 % share would make, and the self share is 46 / 9500 = 0.5 %.
     * Then w2 and w3 are dropped from d's callees: with the self edge
     * counted d would spread over exp(H(9000/12160, 3160/12160)) = 1.78
     * callees, without it over 1.0: no DISPATCH either way, and fanout 1.
     */
    set_node(2, RP_KIND_FUNC, 21, 46, 9500);
    xs(2)->dur_sum = 18500;
    fe[6] = (struct rp_edge){.caller = 2, .callee = 2, .calls = 20, .incl = 9000};
    p.n_edges = 7;
    CHECK(rp_rank_profile(&p, &ro) == 0);
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK(fn[2].flags == RP_FLAG_DISPATCH);
    CHECK_NEAR(rp_node_fanout_time(&fn[2]), exp(h), 1e-12);
    CHECK(rp_flags_explain(&p, &fn[2], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "0.5% self, hands work to 3.0 callees by calls, 3.0 by time");
    p.n_edges = 5;
    fe[4] = fe[6]; /* edges: root->main, main->d, main->e, d->w1, d->d */
    CHECK(rp_rank_profile(&p, &ro) == 0);
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK(!(fn[2].flags & RP_FLAG_DISPATCH));
    CHECK_NEAR(rp_node_fanout(&fn[2]), 1.0, 1e-15);
    CHECK_NEAR(rp_node_fanout_time(&fn[2]), 1.0, 1e-15);
    fe[4] = (struct rp_edge){.caller = 2, .callee = 5, .calls = 1, .incl = 3160};
    p.n_edges = 6;
    set_node(2, RP_KIND_FUNC, 1, 40, 9500);

    /*
     * JITTER, RATE, CONTENDED, BUDGET; ns_per_tick 2 to see the conversion,
     * HOT switched off (fo.hot_self 2).  JITTER judges the histogram of own
     * time (here hist: the nodes have no callees), RATE the intervals.
     *   1 j:  200 calls, 192 x 1000 ticks and 8 x 100000 (4 %): p99 100000
     *         is 100x the median, 8 calls that slow -> JITTER, "p99 199 us
     *         against a median of 2.00 us (8 of 200 calls slow)" (the
     *         histogram's bucket midpoints)
     *   2 j2: the same with 8 x 9000: 9x -> not
     *   3 j3: 200 calls, 192 x 10 and 8 x 200: 20x, but 380 ns over the
     *         median, under the 2 us floor (a tiny function) -> not
     *   4 r:  20 intervals of 1000 between starts, durations 100 but one
     *         600 (60 % of the period), its caller 12 blocked 90 % of its
     *         time -> RATE
     *   5 r2: the same with max 400 (40 %) -> not
     *   6 wait / 7 hold of lock 0x1000: 150 / 1000 = 15 % -> CONTENDED both
     *   8 wait / 9 hold of lock 0x2000: 90 / 1000 = 9 % -> neither
     *   10 b: budget 500, 3 overruns -> BUDGET; 11 b2: no overruns -> not
     *   12 the loop calling r and r2, 13 its wait
     */
    clear_nodes();
    p = profile_of(14, 0, 100000000, 2.0);
    p.own_known = 1;
    rp_flag_opts_default(&fo);
    fo.hot_self = 2;
    struct {
        uint32_t i;
        uint64_t usual, outlier;
    } jit[] = {{1, 1000, 100000}, {2, 1000, 9000}, {3, 10, 200}};
    for (size_t k = 0; k < 3; k++) {
        uint32_t i = jit[k].i;
        set_node(i, RP_KIND_FUNC, 200, 0, 0);
        fn[i].excl = fn[i].incl = 192 * jit[k].usual + 8 * jit[k].outlier;
        struct rp_node_x *x = xs(i);
        for (uint32_t c = 0; c < 200; c++)
            CHECK(rp_hist_add(&x->hist, c % 25 == 24 ? jit[k].outlier : jit[k].usual) == 0);
        set_max(i, jit[k].outlier);
        x->min = x->oncpu_min = jit[k].usual;
        x->below_res = 0;
    }
    set_node(4, RP_KIND_FUNC, 21, 2600, 2600);
    set_max(4, 600);
    set_node(5, RP_KIND_FUNC, 21, 2400, 2400);
    set_max(5, 400);
    for (uint32_t i = 4; i <= 5; i++) {
        struct rp_flag_hists *fh = rp_node_fhw(&fn[i], 0);
        CHECK(fh != NULL);
        for (int c = 0; c < 20; c++) {
            CHECK(rp_hist_add(&fn[i].x->hist, 100) == 0);
            CHECK(rp_hist_add(&fh->ivl, 1000) == 0);
        }
        CHECK(rp_hist_add(&fn[i].x->hist, fn[i].x->max) == 0);
        fn[i].x->below_res = 0;
    }
    set_node(12, RP_KIND_FUNC, 1, 0, 50000);
    set_node(13, RP_KIND_WAIT, 21, 45000, 45000);
    fe[1] = (struct rp_edge){.caller = 12, .callee = 4, .calls = 21, .incl = 2600};
    fe[2] = (struct rp_edge){.caller = 12, .callee = 5, .calls = 21, .incl = 2400};
    fe[3] = (struct rp_edge){.caller = 12, .callee = 13, .calls = 21, .incl = 45000};
    p.edges = fe + 1;
    p.n_edges = 3;
    set_node(6, RP_KIND_LOCK_WAIT, 10, 150, 150);
    set_node(7, RP_KIND_LOCK_HOLD, 10, 1000, 1000);
    set_node(8, RP_KIND_LOCK_WAIT, 10, 90, 90);
    set_node(9, RP_KIND_LOCK_HOLD, 10, 1000, 1000);
    fn[6].key = fn[7].key = 0x1000;
    fn[8].key = fn[9].key = 0x2000;
    set_node(10, RP_KIND_POINT, 5, 100, 100);
    rp_node_xw(&fn[10])->budget = 500;
    rp_node_xw(&fn[10])->overruns = 3;
    set_node(11, RP_KIND_POINT, 5, 100, 100);
    rp_node_xw(&fn[11])->budget = 500;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[1].flags == RP_FLAG_JITTER);
    CHECK(fn[2].flags == 0);
    CHECK(fn[3].flags == 0);
    CHECK(fn[4].flags == RP_FLAG_RATE);
    CHECK(fn[5].flags == 0);
    CHECK(fn[6].flags == RP_FLAG_CONTENDED && fn[7].flags == RP_FLAG_CONTENDED);
    CHECK(fn[8].flags == 0 && fn[9].flags == 0);
    CHECK(fn[10].flags == RP_FLAG_BUDGET && fn[11].flags == 0);

    CHECK(rp_flags_explain(&p, &fn[1], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "JITTER own time p99 199 us against a median of 2.00 us (8 of 200 calls slow)");
    /* a median below the resolution (2.5 us here) is said so, not as a time */
    p.resolution = 1250;
    CHECK(rp_flags_explain(&p, &fn[1], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "JITTER own time p99 199 us against a median below the resolution (2.50 us) "
                   "(8 of 200 calls slow)");
    p.resolution = 0;
    CHECK(rp_flags_explain(&p, &fn[4], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "RATE runs every 2.00 us (20 intervals, half within 2.00 us-2.00 us), its "
                   "longest run 1.20 us is 60.0% of the period");
    CHECK(rp_flags_explain(&p, &fn[6], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "CONTENDED waited 300 ns = 15.0% of 2.00 us held");
    CHECK(rp_flags_explain(&p, &fn[7], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "15.0%");
    /* the holders blocked or off CPU for 10 % of the held time or more:
     * said (300 of 1000 ticks, hold_op's offcpu_below), not at 4.5 % */
    for (int k = 0; k < 2; k++) {
        struct rp_node_x *hx = xs(7);
        hx->offcpu_below = k ? 300 : 45;
        CHECK(rp_flags_explain(&p, &fn[6], NULL, buf, sizeof buf) > 0);
        CHECK(!strstr(buf, "by holders blocked or off CPU") == !k);
        if (k)
            CHECK_STR(buf, "CONTENDED waited 300 ns = 15.0% of 2.00 us held, 30.0% of it by "
                           "holders blocked or off CPU");
        hx->offcpu_below = 0;
    }
    CHECK(rp_flags_explain(&p, &fn[10], NULL, buf, sizeof buf) > 0);
    CHECK_STR(buf, "BUDGET 3 of 5 runs over 1.00 us");
    /* truncation keeps the buffer terminated and reports what is in it */
    size_t k = rp_flags_explain(&p, &fn[1], NULL, buf, 8);
    CHECK(k == 7 && strlen(buf) == 7);

    /* a stricter option turns a flag off: JITTER needs 200x now; RATE a
     * caller blocked 95 % of its time */
    fo.jitter_ratio = 200;
    fo.rate_idle = 0.95;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[1].flags == 0 && fn[4].flags == 0);
    rp_flag_opts_default(&fo);
    fo.hot_self = 2;
    /* JITTER wants jitter_slow activations that slow: j has 8 */
    fo.jitter_slow = 9;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[1].flags == 0 && fn[4].flags == RP_FLAG_RATE);
    fo.jitter_slow = 8;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[1].flags == RP_FLAG_JITTER);
    /* and at most jitter_rare of its calls that slow: 8 of 200 is 4 % */
    fo.jitter_rare = 0.035;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[1].flags == 0);
    fo.jitter_rare = 0.04;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[1].flags == RP_FLAG_JITTER);
    /* CONTENDED wants contended_waits waits: lock 0x1000 has 10 */
    fo.contended_waits = 11;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[6].flags == 0 && fn[7].flags == 0);
    fo.contended_waits = 10;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[6].flags == RP_FLAG_CONTENDED && fn[7].flags == RP_FLAG_CONTENDED);
    rp_flag_opts_default(&fo);
    fo.hot_self = 2;
    /* RATE judges run_max in a replayed trace: r's longest run less the time
     * it was preempted, 300 (30 % of the period), is no overrun */
    p.oncpu_known = 1;
    rp_node_xw(&fn[4])->run_max = 300;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[4].flags == 0);
    rp_node_xw(&fn[4])->run_max = 600;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[4].flags == RP_FLAG_RATE);
    p.oncpu_known = 0;

    /*
     * Recursion: JITTER and RATE are not judged on a node that recursed.
     * Node 1 (the JITTER case) and node 4 (the RATE case) keep their
     * statistics but now one of their activations ran inside another:
     * node 1 through dur_sum > incl, node 4 through a self edge (its nested
     * activation took no time at all).  Then node 1 is made flat again and
     * node 4's self edge has no calls, which is no recursion: the flags
     * return.
     */
    fn[1].incl = rp_node_dur_sum(&fn[1]) - 1;
    fe[0] = (struct rp_edge){.caller = 4, .callee = 4, .calls = 1, .incl = 0};
    p.edges = fe;
    p.n_edges = 4;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[1].flags == 0);
    CHECK(fn[4].flags == 0);
    CHECK(fn[6].flags == RP_FLAG_CONTENDED); /* the rest is untouched */
    fn[1].incl = rp_node_dur_sum(&fn[1]);
    fe[0].calls = 0;
    CHECK(rp_flags_apply(&p, &fo) == 0);
    CHECK(fn[1].flags == RP_FLAG_JITTER && fn[4].flags == RP_FLAG_RATE);

    CHECK(strcmp(rp_flags_str(RP_FLAG_DISPATCH | RP_FLAG_HOT, buf, sizeof buf), "DISPATCH,HOT") ==
          0);
    CHECK(strcmp(rp_flags_str(0, buf, sizeof buf), "") == 0);
    CHECK(strcmp(rp_flags_str(RP_FLAG_CONTENDED | RP_FLAG_BUDGET, buf, sizeof buf),
                 "CONTENDED,BUDGET") == 0);
    clear_nodes();
}

/*
 * Off-CPU time (format 1.3) in the flags: the [off-cpu] node is never
 * flagged (35 % of all time, its "self", would be HOT); DISPATCH leaves it
 * out (d: 900 self of 9500, 3500 of it off CPU: 15 % self on CPU, not
 * DISPATCH, though 9.5 % by wall time and fan-out 3.0 with [off-cpu] as a
 * callee would be); JITTER judges the on-CPU maximum (w1: max 1000 ticks,
 * 5 of it on CPU, median 1 tick: not JITTER).
 * Indices: 0 ROOT, 1 main, 2 d, 3 [off-cpu], 4 w1, 5 w2.
 * The same holds when node 3 is a wait or a lock wait instead: blocked
 * time is not work handed on, and d is a driver that waits, not a
 * dispatcher.
 */
static void test_flags_offcpu_as(uint8_t kind)
{
    struct rp_profile p;
    struct rp_rank_opts ro = {1e-9, 1e-14, 10000, 0};

    clear_nodes();
    set_node(1, RP_KIND_FUNC, 1, 500, 10000);
    set_node(2, RP_KIND_FUNC, 1, 900, 9500);
    set_node(3, kind, 20, 3500, 3500);
    set_node(4, RP_KIND_FUNC, 20, 2550, 2550);
    set_node(5, RP_KIND_FUNC, 1, 2550, 2550);
    if (kind == RP_KIND_OFFCPU)
        rp_node_xw(&fn[2])->offcpu = 3500;
    set_max(4, 1000);
    xs(4)->oncpu_max = 5;
    static const uint32_t es[5] = {0, 1, 2, 2, 2}, ed[5] = {1, 2, 3, 4, 5};
    static const uint64_t ew[5] = {10000, 9500, 3500, 2550, 2550};
    for (int e = 0; e < 5; e++)
        fe[e] = (struct rp_edge){.caller = es[e], .callee = ed[e], .calls = 1, .incl = ew[e]};
    p = profile_of(6, 5, 10000, 1.0);
    p.oncpu_known = 1;
    CHECK(rp_rank_profile(&p, &ro) == 0);
    CHECK(rp_flags_apply(&p, NULL) == 0);
    if (kind != RP_KIND_LOCK_WAIT) /* (a lock wait with no hold is CONTENDED) */
        CHECK_EQ(fn[3].flags, 0);
    CHECK_EQ(fn[2].flags, RP_FLAG_HOT);            /* 9 % of all time self; not DISPATCH */
    CHECK_NEAR(rp_node_fanout(&fn[2]), 2.0, 1e-9); /* w1 and w2 only */
    CHECK_EQ(fn[4].flags & RP_FLAG_JITTER, 0);
    p.oncpu_known = 0; /* (direct mode: no own time of a node with callees) */
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK_EQ(fn[4].flags & RP_FLAG_JITTER, 0);
}

static void test_flags_offcpu(void)
{
    test_flags_offcpu_as(RP_KIND_OFFCPU);
    test_flags_offcpu_as(RP_KIND_WAIT);
    test_flags_offcpu_as(RP_KIND_LOCK_WAIT);
}

/* A leaf called once keeps its histogram's one count in the node
 * (rp_hist_cover1, no counts block): JITTER's count of slow activations
 * reads it there, with thresholds that let a single call be judged. */
static void test_flags_one_bucket(void)
{
    struct rp_profile p;
    struct rp_flag_opts fo;
    struct rp_rank_opts ro = {1e-9, 1e-14, 10000, 0};

    clear_nodes();
    set_node(1, RP_KIND_FUNC, 1, 4000, 10000);
    set_node(2, RP_KIND_FUNC, 1, 6000, 6000);
    struct rp_hist hb; /* (called once: its one count, min and max are its defaults) */
    const struct rp_hist *h = rp_node_hist(&fn[2], &hb);
    CHECK(!fn[2].x && h->counts == NULL && h->len == 1 && h->lo == rp_hist_index(6000));
    CHECK(rp_node_min(&fn[2]) == 6000 && rp_node_max(&fn[2]) == 6000);
    fe[0] = (struct rp_edge){.caller = 0, .callee = 1, .calls = 1, .incl = 10000};
    fe[1] = (struct rp_edge){.caller = 1, .callee = 2, .calls = 1, .incl = 6000};
    p = profile_of(3, 2, 10000, 1.0);
    rp_flag_opts_default(&fo);
    fo.jitter_calls = 1;
    fo.jitter_ratio = 1;
    fo.jitter_floor_ns = 0;
    CHECK(rp_rank_profile(&p, &ro) == 0);
    CHECK(rp_flags_apply(&p, &fo) == 0);
    h = rp_node_hist(&fn[2], &hb);
    CHECK(!fn[2].x && h->counts == NULL && rp_hist_c(h)[0] == 1 && h->n == 1);
}

/*
 * HOT's second rule (hot-run, 0.5 % of the run's length) judges own time
 * against the longest thread's life less what the recorder took of it:
 * its waits for the recorder and, when compensated, its cost per event.
 *   thread A: 100,000 ticks, 60,000 of them waiting for the recorder, 4,000
 *   events of 10 ticks a pair: 20,000 ticks its program's;
 *   thread B: 15,000 ticks, nothing the recorder's.
 *   f 120 own ticks (0.6 % of 20,000; 0.12 % of the wall time): HOT;
 *   g  90 own ticks (0.45 %): not HOT, though 43 % of the time on CPU;
 *   uncompensated, A's program time is 40,000: f (0.3 %) is not HOT either.
 */
static void test_flags_hot_run(void)
{
    struct rp_profile p;
    struct rp_thread th[2] = {
        {.tid = 1, .first = 1000, .last = 101000, .paused = 60000, .events = 4000},
        {.tid = 2, .first = 5000, .last = 20000, .events = 10},
    };

    clear_nodes();
    set_node(1, RP_KIND_FUNC, 1, 0, 210);
    set_node(2, RP_KIND_FUNC, 1, 120, 120);
    set_node(3, RP_KIND_FUNC, 1, 90, 90);
    fe[0] = (struct rp_edge){.caller = 0, .callee = 1, .calls = 1, .incl = 210};
    fe[1] = (struct rp_edge){.caller = 1, .callee = 2, .calls = 1, .incl = 120};
    fe[2] = (struct rp_edge){.caller = 1, .callee = 3, .calls = 1, .incl = 90};
    p = profile_of(4, 3, 115000, 1.0);
    p.threads = th;
    p.n_threads = 2;
    p.first_tick = 0;
    p.last_tick = 200000;
    p.compensated = 1;
    p.overhead_pair = 10.0;
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK_EQ(fn[2].flags, RP_FLAG_HOT);
    CHECK_EQ(fn[3].flags, 0);
    p.compensated = 0;
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK_EQ(fn[2].flags, 0);
    /* no thread with a life of its own (direct mode): the profile's span */
    th[0].last = th[0].first;
    th[1].last = th[1].first;
    p.last_tick = 20000;
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK_EQ(fn[2].flags, RP_FLAG_HOT);
    CHECK_EQ(fn[3].flags, 0);
}

/*
 * CONTENDED wants the lock's waits at 0.5 % of the run's length too
 * (contended-run, the run as hot-run's): a lock waited for 3 times, 40
 * ticks in all, in a run of 20,000 (0.2 %) is not; 120 ticks (0.6 %) is.
 */
static void test_flags_contended_run(void)
{
    struct rp_profile p;
    struct rp_thread th = {.tid = 1, .first = 0, .last = 20000, .events = 20};

    for (int k = 0; k < 2; k++) {
        uint64_t wait = k ? 120 : 40;
        clear_nodes();
        set_node(1, RP_KIND_FUNC, 1, 1000, 1000 + wait + 100);
        set_node(2, RP_KIND_LOCK_WAIT, 3, wait, wait);
        set_node(3, RP_KIND_LOCK_HOLD, 3, 100, 100);
        fn[2].key = fn[3].key = 0x1000;
        fe[0] = (struct rp_edge){.caller = 0, .callee = 1, .calls = 1, .incl = 1000 + wait + 100};
        fe[1] = (struct rp_edge){.caller = 1, .callee = 2, .calls = 3, .incl = wait};
        fe[2] = (struct rp_edge){.caller = 1, .callee = 3, .calls = 3, .incl = 100};
        p = profile_of(4, 3, 20000, 1.0);
        p.threads = &th;
        p.n_threads = 1;
        CHECK(rp_flags_apply(&p, NULL) == 0);
        CHECK_EQ(fn[2].flags & RP_FLAG_CONTENDED, k ? RP_FLAG_CONTENDED : 0);
        CHECK_EQ(fn[3].flags & RP_FLAG_CONTENDED, k ? RP_FLAG_CONTENDED : 0);
    }
}

/*
 * JITTER wants its tail to cost the run something (jitter-run): 200 calls,
 * 8 of them 100,000 ticks against a median of 1000, so 792,000 ticks
 * beyond the median: 0.79 % of a run of 10^8 ticks (JITTER), 0.079 % of
 * one of 10^9 (not: under 0.1 %), and JITTER again there with jitter-run 0.
 */
static void test_flags_jitter_run(void)
{
    struct rp_flag_opts fo;
    rp_flag_opts_default(&fo);
    for (int k = 0; k < 3; k++) {
        struct rp_thread th = {.tid = 1, .first = 0, .last = k ? 1000000000 : 100000000};
        clear_nodes();
        struct rp_profile p = profile_of(2, 0, th.last, 1.0);
        p.own_known = 1;
        p.threads = &th;
        p.n_threads = 1;
        set_node(1, RP_KIND_FUNC, 200, 0, 0);
        fn[1].excl = fn[1].incl = 192 * 1000 + 8 * 100000;
        struct rp_node_x *x = xs(1);
        for (uint32_t c = 0; c < 200; c++)
            CHECK(rp_hist_add(&x->hist, c % 25 == 24 ? 100000 : 1000) == 0);
        set_max(1, 100000);
        x->min = x->oncpu_min = 1000;
        x->below_res = 0;
        fo.hot_self = 2; /* (HOT off) */
        fo.jitter_run = k == 2 ? 0.0 : 0.001;
        CHECK(rp_flags_apply(&p, &fo) == 0);
        CHECK_EQ(fn[1].flags, k == 1 ? 0 : RP_FLAG_JITTER);
    }
}

/*
 * DISPATCH's fan-out by time passes its threshold (2) by half the margin,
 * 2.5: d2 splits its time evenly between two callees (2.0 by calls and by
 * time, which can only move below 2.0 from run to run): not DISPATCH;
 * d3 between three, 50/30/20 % (2.8 by time): DISPATCH.
 */
static void test_flags_fanout_margin(void)
{
    struct rp_profile p;
    struct rp_rank_opts ro = {1e-9, 1e-14, 10000, 0};

    clear_nodes();
    set_node(1, RP_KIND_FUNC, 1, 10, 20020);   /* main */
    set_node(2, RP_KIND_FUNC, 1, 5, 10005);    /* d2 */
    set_node(3, RP_KIND_FUNC, 1, 5, 10005);    /* d3 */
    set_node(4, RP_KIND_FUNC, 10, 5000, 5000); /* a */
    set_node(5, RP_KIND_FUNC, 10, 5000, 5000); /* b */
    set_node(6, RP_KIND_FUNC, 10, 5000, 5000); /* c */
    set_node(7, RP_KIND_FUNC, 10, 3000, 3000); /* e */
    set_node(8, RP_KIND_FUNC, 10, 2000, 2000); /* f */
    fe[0] = (struct rp_edge){.caller = 0, .callee = 1, .calls = 1, .incl = 20020};
    fe[1] = (struct rp_edge){.caller = 1, .callee = 2, .calls = 1, .incl = 10005};
    fe[2] = (struct rp_edge){.caller = 1, .callee = 3, .calls = 1, .incl = 10005};
    fe[3] = (struct rp_edge){.caller = 2, .callee = 4, .calls = 10, .incl = 5000};
    fe[4] = (struct rp_edge){.caller = 2, .callee = 5, .calls = 10, .incl = 5000};
    fe[5] = (struct rp_edge){.caller = 3, .callee = 6, .calls = 10, .incl = 5000};
    fe[6] = (struct rp_edge){.caller = 3, .callee = 7, .calls = 10, .incl = 3000};
    fe[7] = (struct rp_edge){.caller = 3, .callee = 8, .calls = 10, .incl = 2000};
    p = profile_of(9, 8, 20020, 1.0);
    CHECK(rp_rank_profile(&p, &ro) == 0);
    CHECK(rp_flags_apply(&p, NULL) == 0);
    CHECK(fabs(rp_node_fanout_time(&fn[2]) - 2.0) < 1e-9);
    CHECK(fabs(rp_node_fanout_time(&fn[3]) - exp(-(.5 * log(.5) + .3 * log(.3) + .2 * log(.2)))) <
          1e-9);
    CHECK_EQ(fn[2].flags & RP_FLAG_DISPATCH, 0);
    CHECK_EQ(fn[3].flags & RP_FLAG_DISPATCH, RP_FLAG_DISPATCH);
}

/* qsort order of edges: by caller, then callee.  Cannot fail. */
static int by_caller_callee(const void *a, const void *b)
{
    const struct rp_edge *x = a, *y = b;
    if (x->caller != y->caller)
        return x->caller < y->caller ? -1 : 1;
    return x->callee < y->callee ? -1 : x->callee > y->callee;
}

/* What rp_flags_apply wrote into a node. */
struct flagged {
    uint32_t flags;
    double fanout, fanout_time, blocked;
};

/*
 * The flags judge a caller's edges as a group: with the edges sorted by
 * caller (as the replay leaves them) in place, else through an order of
 * their indices that keeps each caller's edges in their order (the
 * entropies are summed in it).  Both give the same bits, and the expected
 * flags:
 *   1 main -> 2 d, 3 loop, 9 loop2, 13 rec (DISPATCH); 2 d -> 4, 5, 6;
 *   3 loop -> 7 r, 8 wait, 4; 9 loop2 -> 7 r, 10 wait: r is periodic and
 *   its callers wait 85 % of their time (RATE, from both callers' waits,
 *   and HOT); 4 -> 11 lock wait, 12 hold of one lock (CONTENDED); 13 calls
 *   itself.
 */
static void test_flags_edge_order(void)
{
    struct rp_profile p;
    struct rp_rank_opts ro = {1e-9, 1e-14, 10000, 0};
    struct flagged sorted[NN];

    clear_nodes();
    set_node(1, RP_KIND_FUNC, 1, 10, 120000);
    set_node(2, RP_KIND_FUNC, 1, 40, 9500);
    set_node(3, RP_KIND_FUNC, 1, 0, 50000);
    set_node(4, RP_KIND_FUNC, 2, 2000, 3660);
    set_node(5, RP_KIND_FUNC, 1, 3160, 3160);
    set_node(6, RP_KIND_FUNC, 1, 3140, 3140);
    set_node(7, RP_KIND_FUNC, 21, 2600, 2600);
    set_max(7, 600);
    struct rp_flag_hists *fh = rp_node_fhw(&fn[7], 0);
    CHECK(fh != NULL);
    for (int c = 0; c < 20; c++) {
        CHECK(rp_hist_add(&fn[7].x->hist, 100) == 0);
        CHECK(rp_hist_add(&fh->ivl, 1000) == 0);
    }
    CHECK(rp_hist_add(&fn[7].x->hist, 600) == 0);
    fn[7].x->below_res = 0;
    set_node(8, RP_KIND_WAIT, 21, 45000, 45000);
    set_node(9, RP_KIND_FUNC, 1, 8700, 50000);
    set_node(10, RP_KIND_WAIT, 10, 40000, 40000);
    set_node(11, RP_KIND_LOCK_WAIT, 10, 150, 150);
    set_node(12, RP_KIND_LOCK_HOLD, 10, 1000, 1000);
    fn[11].key = fn[12].key = 0x1000;
    set_node(13, RP_KIND_FUNC, 3, 400, 400);
    xs(13)->dur_sum = 900;
    static const struct {
        uint32_t caller, callee;
        uint64_t calls, incl;
    } es[16] = {{0, 1, 1, 120000}, {1, 2, 1, 9500},   {1, 3, 1, 50000},   {1, 9, 1, 50000},
                {1, 13, 1, 400},   {2, 4, 1, 3160},   {2, 5, 1, 3160},    {2, 6, 1, 3140},
                {3, 7, 11, 1300},  {3, 8, 11, 45000}, {3, 4, 1, 500},     {4, 11, 10, 150},
                {4, 12, 10, 1000}, {9, 7, 10, 1300},  {9, 10, 10, 40000}, {13, 13, 2, 500}};
    for (int e = 0; e < 16; e++)
        fe[e] = (struct rp_edge){.caller = es[e].caller,
                                 .callee = es[e].callee,
                                 .calls = es[e].calls,
                                 .incl = es[e].incl};
    p = profile_of(14, 16, 120000, 1.0);
    p.own_known = 1;
    CHECK(rp_rank_profile(&p, &ro) == 0);
    CHECK(rp_flags_apply(&p, NULL) == 0);
    for (uint32_t i = 0; i < 14; i++)
        sorted[i] = (struct flagged){fn[i].flags, rp_node_fanout(&fn[i]),
                                     rp_node_fanout_time(&fn[i]), rp_node_blocked(&fn[i])};
    CHECK(fn[1].flags == RP_FLAG_DISPATCH);
    CHECK(fn[7].flags == (RP_FLAG_RATE | RP_FLAG_HOT));
    CHECK(fn[11].flags == RP_FLAG_CONTENDED && fn[12].flags == RP_FLAG_CONTENDED);
    CHECK(sorted[3].blocked == 45000.0 && sorted[9].blocked == 40000.0);
    CHECK_NEAR(sorted[1].fanout, 4.0, 1e-12);
    CHECK(sorted[13].fanout == 0.0 && (fn[13].flags & (RP_FLAG_JITTER | RP_FLAG_RATE)) == 0);

    /* the same edges in two other orders, each caller's in its order: the
     * callers last first, and the callers' edges taken in turn */
    for (int pass = 0; pass < 2; pass++) {
        struct rp_edge t[16];
        uint32_t beg[NN + 1] = {0}, k = 0;
        memcpy(t, fe, sizeof t);
        for (int e = 0; e < 16; e++)
            beg[t[e].caller + 1]++;
        for (uint32_t c = 0; c < NN; c++)
            beg[c + 1] += beg[c];
        if (pass == 0) {
            for (uint32_t c = NN; c-- > 0;)
                for (uint32_t e = beg[c]; e < beg[c + 1]; e++)
                    fe[k++] = t[e];
        } else {
            for (uint32_t r = 0; k < 16; r++)
                for (uint32_t c = 0; c < NN; c++)
                    if (beg[c] + r < beg[c + 1])
                        fe[k++] = t[beg[c] + r];
        }
        int unsorted = 0; /* (so rp_flags_apply goes through its order) */
        for (int e = 1; e < 16; e++)
            unsorted |= fe[e - 1].caller > fe[e].caller;
        CHECK(unsorted);
        for (uint32_t i = 0; i < 14; i++)
            fn[i].flags = 0;
        CHECK(rp_flags_apply(&p, NULL) == 0);
        for (uint32_t i = 0; i < 14; i++) {
            CHECK_EQ(fn[i].flags, sorted[i].flags);
            CHECK(rp_node_fanout(&fn[i]) == sorted[i].fanout);
            CHECK(rp_node_fanout_time(&fn[i]) == sorted[i].fanout_time);
            CHECK(rp_node_blocked(&fn[i]) == sorted[i].blocked);
        }
        qsort(fe, 16, sizeof fe[0], by_caller_callee);
    }
    rp_hist_free(&fn[7].x->hist);
}

static const struct check_case cases[] = {
    {"flags", test_flags},
    {"offcpu", test_flags_offcpu},
    {"one_bucket", test_flags_one_bucket},
    {"hot_run", test_flags_hot_run},
    {"fanout_margin", test_flags_fanout_margin},
    {"contended_run", test_flags_contended_run},
    {"jitter_run", test_flags_jitter_run},
    {"edge_order", test_flags_edge_order},
};

int main(int argc, char **argv)
{
    int rc = check_run("test_flags", argc, argv, cases, sizeof cases / sizeof cases[0]);
    clear_nodes();
    return rc;
}

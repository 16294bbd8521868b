// SPDX-License-Identifier: MIT
/*
 * test_node.c - tests of a profile node's statistics kept apart
 * (src/analyze/profile.h, struct rp_node_x): a node of one span has its
 * durations' sum, extremes and histogram at their defaults, from its calls
 * and inclusive time, and keeps nothing apart; one whose span was below the
 * resolution the same, with its one bit; a value off its default, or a node
 * of several spans, keeps them apart (freed with the profile: the
 * sanitizers' leak check).  Exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/profile.h"
#include "common/error.h"
#include "trace/format.h"
#include "check.h"

/* A profile of n zeroed nodes (kind FUNC), freed by rp_profile_free. */
static struct rp_profile *mk(uint32_t n)
{
    static struct rp_profile p;
    memset(&p, 0, sizeof p);
    p.nodes = calloc(n, sizeof *p.nodes);
    CHECK(p.nodes != NULL);
    if (!p.nodes)
        exit(1);
    p.n_nodes = p.cap_nodes = n;
    for (uint32_t i = 0; i < n; i++)
        p.nodes[i].id = i;
    return &p;
}

/* The statistics replay's finish gives a node of one span of dur ticks,
 * counted in its histogram (below: below the resolution).  Cannot fail. */
static struct rp_node_x one_span(struct rp_node *n, uint64_t dur, int below)
{
    n->calls = 1;
    n->incl = n->excl = dur;
    struct rp_node_x v = rp_node_x_raw(n);
    v.dur_sum = dur;
    v.max = v.oncpu_max = v.run_max = dur;
    v.min = v.oncpu_min = below ? 0 : dur;
    CHECK(rp_hist_add(&v.hist, dur) == 0); /* (a block of one count: kept in the struct) */
    if (below) {                           /* (finish_node: its bucket emptied) */
        rp_hist_w(&v.hist)[0] = 0;
        v.hist.n = 0;
        v.below_res = 1;
    }
    v.mean = (double)dur;
    return v;
}

static void test_size(void)
{
    if (sizeof(void *) == 8)
        CHECK_EQ(sizeof(struct rp_node), 88);
}

static void test_once(void)
{
    struct rp_profile *p = mk(2);
    struct rp_node *n = &p->nodes[1];
    struct rp_node_x v = one_span(n, 5000, 0);
    CHECK_EQ(rp_node_x_set(n, &v), 0);
    CHECK(n->x == NULL);
    CHECK_EQ(n->below1, 0);
    CHECK_EQ(rp_node_dur_sum(n), 5000);
    CHECK_EQ(rp_node_min(n), 5000);
    CHECK_EQ(rp_node_max(n), 5000);
    CHECK_EQ(rp_node_oncpu_min(n), 5000);
    CHECK_EQ(rp_node_oncpu_max(n), 5000);
    CHECK_EQ(rp_node_run_max(n), 5000);
    CHECK_EQ(rp_node_below_res(n), 0);
    CHECK(rp_node_mean(n) == 5000.0);
    struct rp_hist hb;
    const struct rp_hist *h = rp_node_hist(n, &hb);
    CHECK(h->counts == NULL && h->len == 1 && h->n == 1);
    CHECK_EQ(h->lo, rp_hist_index(5000));
    CHECK_EQ(rp_hist_c(h)[0], 1);
    /* what the node reads back is what was set */
    struct rp_node_x g = rp_node_x_get(n);
    CHECK(g.dur_sum == 5000 && g.min == 5000 && g.max == 5000 && g.hist.n == 1);
    CHECK(g.hist.lo == h->lo && g.hist.len == 1 && g.hist.counts == NULL && g.hist.one == 1);

    /* called never: 0 and empty, nothing apart */
    struct rp_node *z = &p->nodes[0];
    struct rp_node_x zv = rp_node_x_get(z);
    zv.min = 0;
    CHECK_EQ(rp_node_x_set(z, &zv), 0);
    CHECK(z->x == NULL);
    CHECK(rp_node_dur_sum(z) == 0 && rp_node_min(z) == 0 && rp_node_max(z) == 0);
    CHECK(rp_node_hist(z, &hb)->len == 0 && rp_node_hist(z, &hb)->n == 0);
    rp_profile_free(p);
}

static void test_below(void)
{
    struct rp_profile *p = mk(2);
    struct rp_node *n = &p->nodes[1];
    struct rp_node_x v = one_span(n, 3, 1);
    CHECK_EQ(rp_node_x_set(n, &v), 0);
    CHECK(n->x == NULL);
    CHECK_EQ(n->below1, 1);
    CHECK_EQ(rp_node_dur_sum(n), 3);
    CHECK_EQ(rp_node_min(n), 0); /* (not in the minimum) */
    CHECK_EQ(rp_node_max(n), 3);
    CHECK_EQ(rp_node_oncpu_min(n), 0);
    CHECK_EQ(rp_node_below_res(n), 1);
    CHECK(rp_node_mean(n) == 3.0);
    struct rp_hist hb;
    const struct rp_hist *h = rp_node_hist(n, &hb);
    CHECK(h->counts == NULL && h->len == 1 && h->n == 0 && rp_hist_c(h)[0] == 0);
    CHECK_EQ(h->lo, rp_hist_index(3));
    /* the same node counted after all: its bit follows */
    v = one_span(n, 3, 0);
    CHECK_EQ(rp_node_x_set(n, &v), 0);
    CHECK(n->x == NULL && n->below1 == 0 && rp_node_min(n) == 3);
    CHECK_EQ(rp_node_hist(n, &hb)->n, 1);
    CHECK_EQ(rp_node_below_res(n), 0);
    rp_profile_free(p);
}

static void test_apart(void)
{
    struct rp_profile *p = mk(4);
    struct rp_node *n = &p->nodes[1];
    /* one span whose maximum is not its duration: kept apart */
    struct rp_node_x v = one_span(n, 5000, 0);
    v.max = v.oncpu_max = v.run_max = 6000;
    CHECK_EQ(rp_node_x_set(n, &v), 0);
    CHECK(n->x != NULL);
    CHECK_EQ(rp_node_max(n), 6000);
    CHECK_EQ(rp_node_min(n), 5000);
    /* back at its defaults: nothing apart */
    v = rp_node_x_get(n);
    v.max = v.oncpu_max = v.run_max = 5000;
    CHECK_EQ(rp_node_x_set(n, &v), 0);
    CHECK(n->x == NULL);
    CHECK_EQ(rp_node_max(n), 5000);

    /* a sum of durations over incl (a recursion): apart, the rest kept */
    v = rp_node_x_get(n);
    v.dur_sum = 9000;
    CHECK_EQ(rp_node_x_set(n, &v), 0);
    CHECK(n->x != NULL);
    CHECK_EQ(rp_node_dur_sum(n), 9000);
    CHECK_EQ(n->incl, 5000);
    struct rp_hist hb;
    const struct rp_hist *h = rp_node_hist(n, &hb);
    CHECK(h == &n->x->hist && h->n == 1 && h->lo == rp_hist_index(5000));

    /* a histogram of two buckets: apart, its counts owned by the node */
    struct rp_node *m = &p->nodes[2];
    m->calls = 1;
    m->incl = m->excl = 100;
    v = rp_node_x_get(m);
    CHECK(rp_hist_add(&v.hist, 20000) == 0); /* (grows the window: counts allocated) */
    CHECK_EQ(rp_node_x_set(m, &v), 0);
    CHECK(m->x != NULL && m->x->hist.counts != NULL);
    CHECK_EQ(rp_node_hist(m, &hb)->n, 2);

    /* several calls: apart */
    struct rp_node *k = &p->nodes[3];
    k->calls = 2;
    k->incl = k->excl = 30;
    v = rp_node_x_raw(k);
    v.dur_sum = 30;
    v.min = v.oncpu_min = 10;
    v.max = v.oncpu_max = v.run_max = 20;
    CHECK(rp_hist_add(&v.hist, 10) == 0 && rp_hist_add(&v.hist, 20) == 0);
    v.mean = 15.0;
    v.m2 = 50.0;
    CHECK_EQ(rp_node_x_set(k, &v), 0);
    CHECK(k->x != NULL);
    CHECK(rp_node_min(k) == 10 && rp_node_max(k) == 20 && rp_node_dur_sum(k) == 30);
    CHECK_EQ(rp_node_hist(k, &hb)->n, 2);
    rp_profile_free(p); /* (frees the counts apart) */
}

static void test_kinds(void)
{
    struct rp_profile *p = mk(2);
    struct rp_node *n = &p->nodes[1];
    /* an instant seen once: no duration, nothing apart, empty histogram */
    n->kind = RP_KIND_INSTANT;
    n->calls = 1;
    struct rp_node_x v = rp_node_x_raw(n);
    v.min = v.oncpu_min = 0;
    CHECK_EQ(rp_node_x_set(n, &v), 0);
    CHECK(n->x == NULL);
    struct rp_hist hb;
    CHECK(rp_node_hist(n, &hb)->len == 0);
    CHECK(rp_node_min(n) == 0 && rp_node_max(n) == 0 && rp_node_below_res(n) == 0);

    /* the raw sums while a replay is read: none until set */
    struct rp_node *r = &p->nodes[0];
    struct rp_node_x raw = rp_node_x_raw(r);
    CHECK(raw.min == UINT64_MAX && raw.oncpu_min == UINT64_MAX && raw.hist.len == 0);
    CHECK_EQ(rp_node_x_setraw(r, &raw), 0);
    CHECK(r->x == NULL);
    raw.dur_sum = 7;
    CHECK_EQ(rp_node_x_setraw(r, &raw), 0);
    CHECK(r->x != NULL && rp_node_x_raw(r).dur_sum == 7);
    rp_profile_free(p);
}

static const struct check_case cases[] = {
    {"size", test_size},   {"once", test_once},   {"below", test_below},
    {"apart", test_apart}, {"kinds", test_kinds},
};

int main(int argc, char **argv)
{
    return check_run("test_node", argc, argv, cases, sizeof cases / sizeof cases[0]);
}

// SPDX-License-Identifier: MIT
/*
 * test_diff.c - tests of `rankprof diff`'s analysis (src/analyze/diff.c):
 *
 *   mwu_hand     the Mann-Whitney test on samples worked by hand: separated
 *                samples, ties across them (midranks and the tie correction),
 *                the sign of z, everything tied, an empty side;
 *   mwu_pairs    on random bucketed samples, U against an independent count
 *                of the pairs (b > a, and half the ties), and the variance
 *                against the tie-corrected formula written out here;
 *   match        two profiles built by hand: nodes paired by kind and name
 *                (not by index; a name twice pairs in order), new and gone
 *                rows, the planted 4x slower node judged slower, first, a
 *                regression; the unchanged ones same; too few calls; the
 *                resolution; --relative taking a uniform slowdown out.
 * Exits non-zero on any failure.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/diff.h"
#include "analyze/histwin.h"
#include "check.h"
#include "trace/format.h"

static void mwu_hand(void)
{
    double z, p;
    /* A = {1, 2, 3}, B = {4, 5, 6}: U_B = 9, mean 4.5, var = 9/12 * 7 = 5.25 */
    double va[] = {1, 2, 3}, ca[] = {1, 1, 1}, vb[] = {4, 5, 6}, cb[] = {1, 1, 1};
    CHECK(rp_mann_whitney(va, ca, 3, vb, cb, 3, &z, &p) == 0);
    CHECK_NEAR(z, 4.5 / sqrt(5.25), 1e-12);
    CHECK_NEAR(p, erfc(4.5 / sqrt(5.25) / sqrt(2)), 1e-12);
    /* swapped: the same z with the other sign, the same p */
    double z2, p2;
    CHECK(rp_mann_whitney(vb, cb, 3, va, ca, 3, &z2, &p2) == 0);
    CHECK_NEAR(z2, -z, 1e-12);
    CHECK_NEAR(p2, p, 1e-12);
    /* ties: A = {1, 2, 2}, B = {2, 3} (counts): ranks 1 | 2,3,4 (2 each:
     * midrank 3) | 5; R_B = 3 + 5 = 8, U_B = 8 - 3 = 5, mean 3,
     * var = 6/12 * (6 - (27 - 3)/(5 * 4)) = 0.5 * 4.8 = 2.4 */
    double ta[] = {1, 2}, tca[] = {1, 2}, tb[] = {2, 3}, tcb[] = {1, 1};
    CHECK(rp_mann_whitney(ta, tca, 2, tb, tcb, 2, &z, &p) == 0);
    CHECK_NEAR(z, 2 / sqrt(2.4), 1e-12);
    /* every value the same: no test */
    double one[] = {7}, c3[] = {3}, c4[] = {4};
    CHECK(rp_mann_whitney(one, c3, 1, one, c4, 1, &z, &p) < 0);
    CHECK(z == 0 && p == 1);
    /* an empty side */
    CHECK(rp_mann_whitney(va, ca, 3, vb, cb, 0, &z, &p) < 0);
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static void mwu_pairs(void)
{
    for (int round = 0; round < 50; round++) {
        /* values 1..K with random counts, B shifted by 0..2 */
        enum { K = 12 };
        double va[K], ca[K], vb[K], cb[K];
        unsigned na = 0, nb = 0, shift = (unsigned)(rnd() % 3);
        for (unsigned v = 1; v <= K; v++) {
            unsigned x = (unsigned)(rnd() % 4), y = (unsigned)(rnd() % 4);
            if (x)
                va[na] = v, ca[na++] = x;
            if (y && v + shift <= K + 2)
                vb[nb] = v + shift, cb[nb++] = y;
        }
        double n1 = 0, n2 = 0, u = 0;
        for (unsigned i = 0; i < na; i++)
            n1 += ca[i];
        for (unsigned j = 0; j < nb; j++)
            n2 += cb[j];
        for (unsigned i = 0; i < na; i++) /* every pair, independently */
            for (unsigned j = 0; j < nb; j++)
                u += ca[i] * cb[j] * (vb[j] > va[i] ? 1 : vb[j] == va[i] ? 0.5 : 0);
        double ties = 0; /* per distinct value, t^3 - t */
        for (unsigned v = 1; v <= K + 2; v++) {
            double t = 0;
            for (unsigned i = 0; i < na; i++)
                t += va[i] == v ? ca[i] : 0;
            for (unsigned j = 0; j < nb; j++)
                t += vb[j] == v ? cb[j] : 0;
            ties += t * t * t - t;
        }
        double n = n1 + n2, var = n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1)));
        double z, p;
        int rc = rp_mann_whitney(va, ca, na, vb, cb, nb, &z, &p);
        if (!(n1 > 0 && n2 > 0 && var > 0)) {
            CHECK(rc < 0);
            continue;
        }
        CHECK(rc == 0);
        CHECK_NEAR(z, (u - n1 * n2 / 2) / sqrt(var), 1e-9);
        CHECK_NEAR(p, erfc(fabs(z) / sqrt(2)), 1e-12);
    }
}

/* ---- match -------------------------------------------------------------- */

/* Node i of p: name, calls with own time per call `own` ticks each (the
 * durations' histogram holds them: no own histograms, as in direct mode). */
static void node(struct rp_profile *p, uint32_t i, const char *name, uint64_t calls, uint64_t own,
                 uint64_t jitter)
{
    struct rp_node *x = &p->nodes[i];
    x->id = i;
    x->kind = RP_KIND_FUNC;
    x->name = strdup(name);
    struct rp_node_x *v = rp_node_xw(x);
    CHECK(v != NULL);
    if (!v)
        return;
    v->min = UINT64_MAX;
    for (uint64_t k = 0; k < calls; k++) {
        uint64_t d = own + (jitter ? rnd() % jitter : 0);
        x->calls++;
        x->incl += d;
        x->excl += d;
        v->min = d < v->min ? d : v->min;
        v->max = d > v->max ? d : v->max;
        CHECK(rp_hist_add(&v->hist, d) == 0);
    }
    v->dur_sum = x->incl;
    v->oncpu_min = v->min;
    v->oncpu_max = v->run_max = v->max;
    v->mean = calls ? (double)x->incl / (double)calls : 0.0;
}

static void profile(struct rp_profile *p, uint32_t n)
{
    memset(p, 0, sizeof(*p));
    p->nodes = calloc(n, sizeof(*p->nodes));
    p->n_nodes = p->cap_nodes = n;
    p->ns_per_tick = 1;
    p->resolution = 5;
    p->nodes[0].name = strdup("<root>");
}

static const struct rp_diff_row *row_named(const struct rp_diff *d, const struct rp_profile *a,
                                           const struct rp_profile *b, const char *name, int k)
{
    for (uint32_t i = 0; i < d->n; i++) {
        const struct rp_diff_row *r = &d->rows[i];
        const struct rp_node *x = r->b != RP_DIFF_NONE ? &b->nodes[r->b] : &a->nodes[r->a];
        if (x->name && !strcmp(x->name, name) && k-- == 0)
            return r;
    }
    return NULL;
}

static void match(void)
{
    struct rp_profile a, b;
    profile(&a, 7);
    profile(&b, 7);
    /* base: indices differ from the new run's on purpose */
    node(&a, 1, "parse", 200, 1000, 100);
    node(&a, 2, "target", 200, 1000, 100);
    node(&a, 3, "render", 200, 2000, 100);
    node(&a, 4, "dup", 50, 1000, 100);
    node(&a, 5, "dup", 50, 3000, 100);
    node(&a, 6, "old", 10, 1000, 0);
    node(&b, 6, "parse", 200, 1000, 100);
    node(&b, 5, "target", 200, 4000, 100); /* planted: 4x */
    node(&b, 4, "render", 200, 2000, 100);
    node(&b, 1, "dup", 50, 1000, 100);
    node(&b, 3, "dup", 50, 3000, 100);
    node(&b, 2, "fresh", 3, 1000, 0);

    struct rp_diff_opts o;
    rp_diff_opts_default(&o);
    struct rp_diff d;
    CHECK(rp_diff_compute(&a, &b, &o, &d) == 0);
    CHECK_EQ(d.n, 7);
    CHECK_EQ(d.regressions, 1);
    CHECK_EQ(d.improvements, 0);
    const struct rp_diff_row *t = row_named(&d, &a, &b, "target", 0);
    CHECK(t == &d.rows[0]); /* the largest change in own time */
    if (t) {
        CHECK_EQ(t->a, 2);
        CHECK_EQ(t->b, 5);
        CHECK_EQ(t->verdict, RP_DIFF_SLOWER);
        CHECK(t->regression);
        CHECK(t->ratio > 3.5 && t->ratio < 4.5);
        CHECK(t->z > 10 && t->p < 1e-20);
    }
    const char *same[] = {"parse", "render"};
    for (int i = 0; i < 2; i++) {
        const struct rp_diff_row *r = row_named(&d, &a, &b, same[i], 0);
        CHECK(r && r->verdict == RP_DIFF_SAME && !r->regression);
    }
    /* a name twice: the first of the base with the first of the new */
    const struct rp_diff_row *d0 = row_named(&d, &a, &b, "dup", 0),
                             *d1 = row_named(&d, &a, &b, "dup", 1);
    CHECK(d0 && d1);
    if (d0 && d1) {
        const struct rp_diff_row *lo = d0->a == 4 ? d0 : d1, *hi = d0->a == 4 ? d1 : d0;
        CHECK_EQ(lo->a, 4);
        CHECK_EQ(lo->b, 1);
        CHECK_EQ(hi->a, 5);
        CHECK_EQ(hi->b, 3);
        CHECK(lo->verdict == RP_DIFF_SAME && hi->verdict == RP_DIFF_SAME);
    }
    const struct rp_diff_row *g = row_named(&d, &a, &b, "old", 0),
                             *f = row_named(&d, &a, &b, "fresh", 0);
    CHECK(g && g->verdict == RP_DIFF_GONE && g->b == RP_DIFF_NONE && g->self_a == 10000);
    CHECK(f && f->verdict == RP_DIFF_NEW && f->a == RP_DIFF_NONE && f->self_b == 3000);
    CHECK_NEAR(d.drift, 1.0, 0.05); /* most own time unchanged */
    rp_diff_free(&d);

    /* the same profile against itself: nothing changed, z 0 */
    CHECK(rp_diff_compute(&a, &a, &o, &d) == 0);
    CHECK_EQ(d.regressions + d.improvements, 0);
    for (uint32_t i = 0; i < d.n; i++)
        CHECK((d.rows[i].verdict == RP_DIFF_SAME || d.rows[i].verdict == RP_DIFF_SMALL) &&
              d.rows[i].z == 0 && d.rows[i].p == 1);
    rp_diff_free(&d);

    /* too few calls to judge; a change below the resolution is none */
    struct rp_profile c, e;
    profile(&c, 3);
    profile(&e, 3);
    node(&c, 1, "rare", 3, 1000, 0);
    node(&e, 1, "rare", 3, 9000, 0);
    node(&c, 2, "tiny", 500, 2, 2);
    node(&e, 2, "tiny", 500, 6, 2); /* 3x, but 4 ticks a call: below 5 */
    CHECK(rp_diff_compute(&c, &e, &o, &d) == 0);
    const struct rp_diff_row *rr = row_named(&d, &c, &e, "rare", 0),
                             *ti = row_named(&d, &c, &e, "tiny", 0);
    CHECK(rr && rr->verdict == RP_DIFF_FEW);
    CHECK(ti && ti->verdict == RP_DIFF_SAME && ti->z > 10);
    rp_diff_free(&d);

    /* everything 1.5x slower: slower as measured, same relative to the drift */
    struct rp_profile s, u;
    profile(&s, 4);
    profile(&u, 4);
    node(&s, 1, "x", 300, 1000, 50);
    node(&s, 2, "y", 300, 2000, 50);
    node(&s, 3, "z", 100, 1000, 50);
    node(&u, 1, "x", 300, 1500, 50);
    node(&u, 2, "y", 300, 3000, 50);
    node(&u, 3, "z", 100, 6000, 50); /* and z 6x: 4x relative (less than half the weight) */
    CHECK(rp_diff_compute(&s, &u, &o, &d) == 0);
    CHECK_EQ(d.regressions, 3);
    rp_diff_free(&d);
    o.relative = 1;
    CHECK(rp_diff_compute(&s, &u, &o, &d) == 0);
    CHECK_NEAR(d.drift, 1.5, 0.05);
    CHECK_EQ(d.regressions, 1);
    const struct rp_diff_row *zr = row_named(&d, &s, &u, "z", 0);
    CHECK(zr && zr->regression && zr->ratio > 3.5 && zr->ratio < 4.5);
    rp_diff_free(&d);

    rp_profile_free(&a);
    rp_profile_free(&b);
    rp_profile_free(&c);
    rp_profile_free(&e);
    rp_profile_free(&s);
    rp_profile_free(&u);
}

int main(int argc, char **argv)
{
    static const struct check_case cases[] = {
        {"mwu_hand", mwu_hand}, {"mwu_pairs", mwu_pairs}, {"match", match}};
    return check_run("test_diff", argc, argv, cases, sizeof(cases) / sizeof(cases[0]));
}

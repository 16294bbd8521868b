// SPDX-License-Identifier: MIT
/*
 * test_table.c - unit tests of the table's pieces that need no trace:
 * the name forms and short-name matching of report/names.c, and the
 * pass-through chains of analyze/chains.c on hand-built profiles (a plain
 * chain, a flagged frame that breaks it, a callee with a second caller, a
 * direct recursion, a cycle of wrappers, and a chain of two re-entering an
 * interpreter whose dur_sum counts the nested calls again).
 */
#include <stdlib.h>
#include <string.h>

#include "analyze/chains.h"
#include "analyze/profile.h"
#include "check.h"
#include "common/error.h"
#include "report/names.h"
#include "trace/format.h"

#define CHECK_FORM(name, level, want)                                                              \
    do {                                                                                           \
        char b_[256];                                                                              \
        rp_name_form(name, level, b_, sizeof b_);                                                  \
        if (strcmp(b_, want)) {                                                                    \
            fprintf(stderr, "%s:%d: form %d of \"%s\" is \"%s\", expected \"%s\"\n", __FILE__,     \
                    __LINE__, level, name, b_, want);                                              \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void test_names(void)
{
    const char *t = "int geo::detail::sum_dots<int>(int const*, int const*, unsigned long)";
    CHECK_FORM(t, RP_NAME_FULL, t);
    CHECK_FORM(t, RP_NAME_NORET,
               "geo::detail::sum_dots<int>(int const*, int const*, unsigned long)");
    CHECK_FORM(t, RP_NAME_NOPARAMS, "geo::detail::sum_dots<int>(...)");
    CHECK_FORM(t, RP_NAME_NOSCOPE, "sum_dots<int>(...)");
    CHECK_FORM(t, RP_NAME_NOTEMPLATE, "sum_dots<...>(...)");
    /* C names are their own forms */
    CHECK_FORM("luaV_execute", RP_NAME_NOTEMPLATE, "luaV_execute");
    CHECK_FORM("foo.isra.0", RP_NAME_NOTEMPLATE, "foo.isra.0");
    /* names of locks, waits and devices are no C++: a space is no return type */
    CHECK_FORM("nanosleep [wait]", RP_NAME_NOTEMPLATE, "nanosleep [wait]");
    CHECK_FORM("<lock 0x55d0> [hold]", RP_NAME_NOTEMPLATE, "<lock 0x55d0> [hold]");
    /* empty parameters stay "()"; a trailing const stays */
    CHECK_FORM("ns::A::get() const", RP_NAME_NOSCOPE, "get() const");
    /* spaces inside template arguments are not the return type's end */
    const char *v = "std::vector<int, std::allocator<int> >::push_back(int const&)";
    CHECK_FORM(v, RP_NAME_NORET, v);
    CHECK_FORM(v, RP_NAME_NOSCOPE, "push_back(...)");
    /* the anonymous namespace is scope, not parameters */
    CHECK_FORM("(anonymous namespace)::helper(int)", RP_NAME_NOSCOPE, "helper(...)");
    /* operators are left whole rather than misparsed */
    CHECK_FORM("bool operator<<T>(T const&, T const&)", RP_NAME_NOTEMPLATE,
               "bool operator<<T>(T const&, T const&)");

    CHECK_EQ(rp_name_match(t, t), 2);
    CHECK_EQ(rp_name_match(t, "sum_dots"), 1);
    CHECK_EQ(rp_name_match(t, "sum_dots<int>"), 1);
    CHECK_EQ(rp_name_match(t, "detail::sum_dots"), 1);
    CHECK_EQ(rp_name_match(t, "geo::detail::sum_dots<int>"), 1);
    CHECK_EQ(rp_name_match(t, "geo::detail::sum_dots<int>(int const*, int const*, unsigned long)"),
             1);
    CHECK_EQ(rp_name_match(t, "dots"), 0); /* not at a "::" boundary */
    CHECK_EQ(rp_name_match(t, "sum_dots<double>"), 0);
    CHECK_EQ(rp_name_match(t, "int"), 0);
    CHECK_EQ(rp_name_match("main", "main"), 2);
    CHECK_EQ(rp_name_match("main", "mai"), 0);
    CHECK_EQ(rp_name_match("main", ""), 0);
    /* globs: the whole name, then the short forms */
    CHECK_EQ(rp_name_match("parse_expr", "parse_*"), 2);
    CHECK_EQ(rp_name_match("parse_expr", "p?rse_[a-f]xpr"), 2);
    CHECK_EQ(rp_name_match("parse_expr", "*_stmt"), 0);
    CHECK_EQ(rp_name_match(t, "sum_*"), 1);                 /* the last component */
    CHECK_EQ(rp_name_match(t, "geo::detail::*"), 1);        /* the qualified name */
    CHECK_EQ(rp_name_match(t, "*::detail::*"), 2);          /* (the whole name matches too) */
    CHECK_EQ(rp_name_match(t, "sum_dots<*>"), 1);           /* with its template arguments */
    CHECK_EQ(rp_name_match(t, "geo::*(int const*, *)"), 1); /* without the return type */
    CHECK_EQ(rp_name_match(t, "mul_*"), 0);
}

/* Sets n's durations' sum and inclusive time to v (one call, no recursion). */
static void set_dur(struct rp_node *n, uint64_t v)
{
    n->incl = v;
    if (n->x)
        n->x->dur_sum = v;
}

/* A profile of n function nodes (index 1..n-1) and the given edges. */
struct e {
    uint32_t a, b;
    uint64_t incl;
};
static void make(struct rp_profile *p, uint32_t n, const uint64_t *dur, const uint64_t *incl,
                 const struct e *ed, uint32_t ne)
{
    memset(p, 0, sizeof *p);
    p->n_nodes = n;
    p->nodes = calloc(n, sizeof *p->nodes);
    p->edges = calloc(ne ? ne : 1, sizeof *p->edges);
    for (uint32_t i = 1; i < n; i++) {
        p->nodes[i].kind = RP_KIND_FUNC;
        p->nodes[i].calls = 1;
        p->nodes[i].incl = incl ? incl[i] : dur[i];
        if (dur[i] != p->nodes[i].incl) { /* (recursed: dur_sum apart) */
            struct rp_node_x *x = rp_node_xw(&p->nodes[i]);
            CHECK(x != NULL);
            if (x)
                x->dur_sum = dur[i];
        }
    }
    for (uint32_t k = 0; k < ne; k++) {
        p->edges[k].caller = ed[k].a;
        p->edges[k].callee = ed[k].b;
        p->edges[k].incl = ed[k].incl;
        p->edges[k].calls = 1;
    }
    p->n_edges = ne;
}

static void drop(struct rp_profile *p)
{
    for (uint32_t i = 0; i < p->n_nodes; i++) /* (what they keep apart) */
        free(p->nodes[i].x);
    free(p->nodes);
    free(p->edges);
}

static void test_chains(void)
{
    struct rp_profile p;
    struct rp_chains c;

    /* 1 -> 2 -> 3 -> 4 -> {5, 6}: 1..4 pass through (>= 95 % to one
     * callee); 5 is the work and passes nothing on: the chain is 1 2 3 4 */
    {
        uint64_t dur[] = {0, 1000, 990, 985, 980, 960, 10};
        struct e ed[] = {{0, 1, 1000}, {1, 2, 990}, {2, 3, 985}, {3, 4, 980},
                         {4, 5, 960},  {4, 6, 10},  {5, 6, 0}};
        make(&p, 7, dur, NULL, ed, 6);
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 1);
        CHECK_EQ(c.start[1] - c.start[0], 4);
        for (uint32_t k = 0; k < 4 && c.n; k++)
            CHECK_EQ(c.member[k], k + 1);
        CHECK_EQ(rp_chain_of(&c, 1), 0);
        CHECK_EQ(rp_chain_of(&c, 4), 0);
        CHECK_EQ(rp_chain_of(&c, 5), -1);
        rp_chains_free(&c);
        /* a flag on 3 splits it: 1 -> 2 stays, 3 is a row, 4 alone is none */
        p.nodes[3].flags = RP_FLAG_JITTER;
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 1);
        CHECK_EQ(c.start[1], 2);
        CHECK_EQ(rp_chain_of(&c, 3), -1);
        CHECK_EQ(rp_chain_of(&c, 4), -1);
        rp_chains_free(&c);
        p.nodes[3].flags = 0;
        /* 3 gets a second caller with 10 % of its time: 2 -/-> 3 */
        set_dur(&p.nodes[3], 1100);
        set_dur(&p.nodes[4], 1090);
        p.edges[3].incl = 1090;
        p.edges[4].incl = 1080;
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 2); /* 1 2 and 3 4 */
        CHECK(rp_chain_of(&c, 2) != rp_chain_of(&c, 3));
        rp_chains_free(&c);
        drop(&p);
    }
    /* 1 -> 2 -> {3 80 %, 4 20 %} (e2e_table's chain.c: step -> leaf_a,
     * leaf_b): 2 hands 80 % to 3, no pass-through.  3 descheduled 3000
     * ticks in its own frame: 2 -> 3 carries 95.4 % of 2's time, but only
     * the same 80 % of its time on CPU: still none, and without a second
     * wrapper 1 is in no chain either */
    {
        uint64_t dur[] = {0, 1000, 1000, 800, 200};
        struct e ed[] = {{1, 2, 1000}, {2, 3, 800}, {2, 4, 200}};
        make(&p, 5, dur, NULL, ed, 3);
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 0);
        rp_chains_free(&c);
        set_dur(&p.nodes[1], 4000);
        set_dur(&p.nodes[2], 4000);
        set_dur(&p.nodes[3], 3800);
        p.edges[0].incl = 4000;
        p.edges[1].incl = 3800;
        struct rp_node_x x = rp_node_x_get(&p.nodes[3]);
        x.offcpu = 3000;
        CHECK_EQ(rp_node_x_set(&p.nodes[3], &x), 0);
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 0); /* (1 2 when the time off CPU counted) */
        rp_chains_free(&c);
        drop(&p);
    }
    /* on CPU (a replayed trace: oncpu_known): 1 -> 2 -> 3 -> {4 96 %, 5};
     * 1, 2 and 3 pass through (a chain 1 2 3, entering the work at 4) until
     * 4 waits 900 of its 960 ticks (offcpu_below), as pigz's get_space for
     * buffer space under its reading loop: 3 then hands it 60 of its 100
     * ticks on CPU, no pass-through, and the chain is 1 2, entering 3 */
    {
        uint64_t dur[] = {0, 1000, 1000, 1000, 960, 40};
        struct e ed[] = {{1, 2, 1000}, {2, 3, 1000}, {3, 4, 960}, {3, 5, 40}};
        make(&p, 6, dur, NULL, ed, 4);
        p.oncpu_known = 1;
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 1);
        CHECK_EQ(c.start[1] - c.start[0], 3);
        rp_chains_free(&c);
        for (uint32_t i = 1; i <= 4; i++) { /* (the wait is below 1, 2, 3 and 4) */
            struct rp_node_x x = rp_node_x_get(&p.nodes[i]);
            x.offcpu_below = 900;
            CHECK_EQ(rp_node_x_set(&p.nodes[i], &x), 0);
        }
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 1);
        CHECK_EQ(c.start[1] - c.start[0], 2);
        CHECK_EQ(rp_chain_of(&c, 3), -1);
        rp_chains_free(&c);
        drop(&p);
    }
    /* direct recursion: 1 -> 2, 2 -> 2 and 2 -> 3: 2 is no wrapper */
    {
        uint64_t dur[] = {0, 1000, 1900, 990};
        uint64_t incl[] = {0, 1000, 995, 990};
        struct e ed[] = {{1, 2, 995}, {2, 2, 905}, {2, 3, 990}};
        make(&p, 4, dur, incl, ed, 3);
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 0);
        rp_chains_free(&c);
        drop(&p);
    }
    /* a cycle of wrappers 1 -> 2 -> 1 (mutual recursion, a tiny base case):
     * found without looping, and no chain (no frame starts it) */
    {
        uint64_t dur[] = {0, 1000, 1000};
        struct e ed[] = {{1, 2, 999}, {2, 1, 999}};
        make(&p, 3, dur, NULL, ed, 2);
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 0);
        rp_chains_free(&c);
        drop(&p);
    }
    /* interpreter re-entry: 1 -> 2 -> 3 and 3 -> 2 again: 2's dur_sum (2000)
     * counts the nested calls, its inclusive time (995) does not; the link
     * 1 -> 2 is judged on the latter.  3 hands half to 2: no wrapper */
    {
        uint64_t dur[] = {0, 1000, 2000, 1990, 1000};
        uint64_t incl[] = {0, 1000, 995, 990, 1000};
        struct e ed[] = {{1, 2, 995}, {2, 3, 1990}, {3, 2, 1000}, {3, 4, 10}};
        make(&p, 5, dur, incl, ed, 4);
        CHECK_EQ(rp_chains_find(&p, &c), 0);
        CHECK_EQ(c.n, 1);
        CHECK_EQ(rp_chain_of(&c, 1), 0);
        CHECK_EQ(rp_chain_of(&c, 2), 0);
        rp_chains_free(&c);
        drop(&p);
    }
    CHECK_EQ(rp_chains_find(NULL, &c), RP_EINVAL);
}

static const struct check_case cases[] = {
    {"names", test_names},
    {"chains", test_chains},
};

int main(int argc, char **argv)
{
    return check_run("test_table", argc, argv, cases, sizeof cases / sizeof cases[0]);
}

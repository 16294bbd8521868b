// SPDX-License-Identifier: MIT
/*
 * test_merge.c - tests of merging the profiles of a run's processes
 * (src/analyze/merge.c) on two profiles built by hand, every expected number
 * worked out below: nodes matched by kind, name and module (not by address),
 * unnamed nodes by address, undefined ids skipped, sums, extremes, the
 * pooled mean and variance, histograms, edges, threads and processes; and
 * the copies of a function in one process folded (rp_merge_fold).
 * Exits non-zero on any failure.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/merge.h"
#include "common/error.h"
#include "trace/format.h"
#include "check.h"

static void node(struct rp_profile *p, uint32_t i, const char *name, const char *module,
                 uint64_t key, const uint64_t *durs, unsigned n)
{
    struct rp_node *x = &p->nodes[i];
    x->id = i;
    x->kind = RP_KIND_FUNC;
    x->name = (char *)name;
    x->module = (char *)module;
    x->key = key;
    uint64_t mn = n ? UINT64_MAX : 0, mx = 0, dur = 0;
    struct rp_hist h = {0};
    double mean = 0, m2 = 0;
    for (unsigned k = 0; k < n; k++) { /* Welford, as replay.c keeps it */
        x->calls++;
        x->incl += durs[k];
        dur += durs[k];
        x->excl += durs[k];
        mn = durs[k] < mn ? durs[k] : mn;
        mx = durs[k] > mx ? durs[k] : mx;
        double d = (double)durs[k] - mean;
        mean += d / (double)x->calls;
        m2 += d * ((double)durs[k] - mean);
        CHECK(rp_hist_add(&h, durs[k]) == 0);
    }
    struct rp_node_x v = rp_node_x_get(x);
    v.dur_sum = dur;
    v.min = v.oncpu_min = mn;
    v.max = v.oncpu_max = v.run_max = mx;
    v.hist = h;
    v.below_res = 0;
    v.mean = mean;
    v.m2 = m2;
    CHECK(rp_node_x_set(x, &v) == 0);
}

/* n's calls, inclusive ticks, minimum, maximum, mean and m2 against
 * the values worked out by hand (a macro: a failure names the line). */
#define CHECK_SPANS(n, c, in, mn, mx, mean, m2)                                                    \
    do {                                                                                           \
        CHECK_EQ((n)->calls, c);                                                                   \
        CHECK_EQ((n)->incl, in);                                                                   \
        CHECK_EQ(rp_node_min(n), mn);                                                              \
        CHECK_EQ(rp_node_max(n), mx);                                                              \
        CHECK(fabs(rp_node_mean(n) - (mean)) < 1e-9);                                              \
        CHECK(fabs(rp_node_m2(n) - (m2)) < 1e-9);                                                  \
    } while (0)

static const uint32_t *map_of(const struct rp_profile *m, uint32_t k)
{
    return k < m->n_procs ? m->procs[k].map : NULL;
}

/* The merged node named name in module (NULL: unnamed with key), or NULL. */
static const struct rp_node *find(const struct rp_profile *m, const char *name, const char *module,
                                  uint64_t key)
{
    for (uint32_t i = 1; i < m->n_nodes; i++) {
        const struct rp_node *x = &m->nodes[i];
        if (name ? x->name && !strcmp(x->name, name) && !strcmp(x->module, module)
                 : !x->name && x->key == key)
            return x;
    }
    return NULL;
}

/* A node of a heap profile (rp_merge_fold frees it): name, file, line,
 * key, and its spans durs[0..n) as node() makes them. */
static void hnode(struct rp_profile *p, uint32_t i, const char *name, const char *file,
                  uint32_t line, uint64_t key, const uint64_t *durs, unsigned n)
{
    node(p, i, NULL, NULL, key, durs, n);
    struct rp_node *x = &p->nodes[i];
    x->name = strdup(name);
    x->file = file ? strdup(file) : NULL;
    x->line = line;
    x->module = strdup("/bin/c");
    CHECK(x->name && x->module && (!file || x->file));
}

/*
 * rp_merge_fold on one process's profile, by hand: main (c.c:1) calls the
 * two out-of-line copies of sq (h.h:3; spans 2 4 and 6), the static
 * helpers of a.c and b.c (one name, two files), and two functions t
 * without a source file (two addresses); the fatal stack main, sq's
 * second copy.  sq is one node: 3 calls, 12 ticks, min 2, max 6, mean 4,
 * m2 (2-4)^2 + 0 + (6-4)^2 = 8, its edge from main 3 calls, 12 ticks,
 * min 2, max 6; the helpers and the t stay two each.
 */
static void fold(void)
{
    struct rp_profile c = {.n_nodes = 8, .n_edges = 7, .n_threads = 1, .n_procs = 1, .pid = 300};
    c.nodes = calloc(8, sizeof(*c.nodes));
    c.edges = calloc(7, sizeof(*c.edges));
    c.threads = calloc(1, sizeof(*c.threads));
    c.procs = calloc(1, sizeof(*c.procs));
    CHECK(c.nodes && c.edges && c.threads && c.procs);
    if (!c.nodes || !c.edges || !c.threads || !c.procs)
        return;
    c.threads[0] = (struct rp_thread){.tid = 300, .events = 16};
    c.procs[0] = (struct rp_proc){.file = strdup("c.data"), .pid = 300};
    c.maps = strdup("maps");
    c.maps_len = 4;
    c.fatal_n = c.fatal_depth = 2;
    c.fatal_tid = 300;
    c.fatal_stack[0] = 1;
    c.fatal_stack[1] = 3;
    snprintf(c.warn, sizeof(c.warn), "one warning\n");
    c.ns_per_tick = 1.0;
    hnode(&c, 1, "main", "c.c", 1, 0x100, (const uint64_t[]){100}, 1);
    hnode(&c, 2, "sq", "h.h", 3, 0x10, (const uint64_t[]){2, 4}, 2);
    hnode(&c, 3, "sq", "h.h", 3, 0x20, (const uint64_t[]){6}, 1);
    hnode(&c, 4, "helper", "a.c", 5, 0x30, (const uint64_t[]){1}, 1);
    hnode(&c, 5, "helper", "b.c", 5, 0x40, (const uint64_t[]){1, 1}, 2);
    hnode(&c, 6, "t", NULL, 0, 0x50, (const uint64_t[]){3}, 1);
    hnode(&c, 7, "t", NULL, 0, 0x60, (const uint64_t[]){3}, 1);
    const struct rp_edge e[7] = {{0, 1, 1, 100, 100, 100, 0}, {1, 2, 2, 6, 2, 4, 0},
                                 {1, 3, 1, 6, 6, 6, 0},       {1, 4, 1, 1, 1, 1, 0},
                                 {1, 5, 2, 2, 1, 1, 0},       {1, 6, 1, 3, 3, 3, 0},
                                 {1, 7, 1, 3, 3, 3, 0}};
    memcpy(c.edges, e, sizeof(e));

    CHECK_EQ(rp_merge_fold(&c), 0);
    CHECK_EQ(c.folded, 1);
    CHECK_EQ(c.n_nodes, 7); /* root, main, sq, two helpers, two t */
    CHECK_EQ(c.n_edges, 6);
    CHECK_EQ(c.n_procs, 1);
    CHECK(c.maps && c.maps_len == 4 && !strcmp(c.warn, "one warning\n"));
    const struct rp_node *sq = NULL;
    unsigned helpers = 0, ts = 0;
    for (uint32_t i = 1; i < c.n_nodes; i++) {
        const struct rp_node *x = &c.nodes[i];
        sq = !strcmp(x->name, "sq") ? x : sq;
        helpers += !strcmp(x->name, "helper");
        ts += !strcmp(x->name, "t");
    }
    CHECK(sq != NULL);
    CHECK_EQ(helpers, 2);
    CHECK_EQ(ts, 2);
    if (sq) {
        CHECK_SPANS(sq, 3, 12, 2, 6, 4.0, 8.0);
        unsigned to_sq = 0;
        for (uint32_t k = 0; k < c.n_edges; k++) {
            const struct rp_edge *x = &c.edges[k];
            if (x->callee != sq->id)
                continue;
            to_sq++;
            CHECK_EQ(x->calls, 3);
            CHECK_EQ(x->incl, 12);
            CHECK_EQ(x->min, 2);
            CHECK_EQ(x->max, 6);
        }
        CHECK_EQ(to_sq, 1);
        /* the second passes' map: both copies' ids to sq; the fatal stack */
        const uint32_t *map = map_of(&c, 0);
        CHECK(map && c.procs[0].n_map == 8);
        if (map)
            CHECK(map[2] == sq->id && map[3] == sq->id && map[4] != map[5] && map[6] != map[7]);
        CHECK(c.fatal_n == 2 && c.fatal_stack[1] == sq->id);
        CHECK(c.fatal_stack[0] == (map ? map[1] : 0));
        CHECK(rp_profile_merged(&c));
    }
    /* a profile without copies is left as it is */
    struct rp_node *before = c.nodes;
    CHECK_EQ(rp_merge_fold(&c), 0);
    CHECK(c.nodes == before && c.n_nodes == 7);
    rp_profile_free(&c);
}

int main(void)
{
    fold();

    /* process A (pid 100): f (/bin/a) 10 20 30, g (/bin/a) 5, an unnamed
     * function at 0x5000, an undefined id; root -> f, f -> g */
    struct rp_node na[5] = {0}, nb[6] = {0};
    struct rp_edge ea[2] = {{0, 1, 3, 60, 10, 30, 0}, {1, 2, 1, 5, 5, 5, 0}};
    struct rp_thread ta[1] = {{.tid = 100, .events = 8}};
    struct rp_profile a = {.nodes = na,
                           .n_nodes = 5,
                           .edges = ea,
                           .n_edges = 2,
                           .threads = ta,
                           .n_threads = 1,
                           .pid = 100,
                           .events = 8,
                           .lost = 1,
                           .ended = 1,
                           .ns_per_tick = 1.0,
                           .first_tick = 1000,
                           .last_tick = 2000};
    a.program = "/bin/a";
    node(&a, 1, "f", "/bin/a", 0x1000, (const uint64_t[]){10, 20, 30}, 3);
    node(&a, 2, "g", "/bin/a", 0x1100, (const uint64_t[]){5}, 1);
    node(&a, 3, NULL, "/bin/a", 0x5000, (const uint64_t[]){7}, 1);
    na[4].id = 4;
    na[4].kind = 0xff;

    /* process B (pid 200, another layout): g 1 3, f 50, an f of another
     * module, the unnamed 0x5000 again and an unnamed 0x6000; root -> f,
     * f -> g twice */
    struct rp_edge eb[2] = {{0, 2, 1, 50, 50, 50, 0}, {2, 1, 2, 4, 1, 3, 0}};
    struct rp_thread tb[2] = {{.tid = 200, .events = 9}, {.tid = 201, .events = 3}};
    struct rp_profile b = {.nodes = nb,
                           .n_nodes = 6,
                           .edges = eb,
                           .n_edges = 2,
                           .threads = tb,
                           .n_threads = 2,
                           .pid = 200,
                           .events = 12,
                           .lost = 2,
                           .ended = 0,
                           .ns_per_tick = 1.0,
                           .first_tick = 900,
                           .last_tick = 1500};
    node(&b, 1, "g", "/bin/a", 0x2222, (const uint64_t[]){1, 3}, 2);
    node(&b, 2, "f", "/bin/a", 0x9999, (const uint64_t[]){50}, 1);
    node(&b, 3, "f", "/lib/b", 0x1000, (const uint64_t[]){4}, 1);
    node(&b, 4, NULL, "/bin/a", 0x5000, (const uint64_t[]){9}, 1);
    node(&b, 5, NULL, "/bin/a", 0x6000, (const uint64_t[]){2}, 1);

    struct rp_profile m = {0};
    struct rp_merge mg;
    CHECK_EQ(rp_merge_init(&mg, &m), 0);
    mg.keep_maps = 1;
    CHECK_EQ(rp_merge_add(&mg, &a, &(struct rp_proc){.file = "rp.data", .run = "r1"}), 0);
    CHECK_EQ(rp_merge_add(&mg, &b, &(struct rp_proc){.file = "rp.data.200", .ppid = 100}), 0);
    rp_merge_free(&mg);

    /* root, f, g, 0x5000, f of /lib/b, 0x6000 */
    CHECK_EQ(m.n_nodes, 6);
    const struct rp_node *f = find(&m, "f", "/bin/a", 0), *g = find(&m, "g", "/bin/a", 0);
    const struct rp_node *fb = find(&m, "f", "/lib/b", 0), *u5 = find(&m, NULL, NULL, 0x5000);
    CHECK(f && g && fb && u5 && find(&m, NULL, NULL, 0x6000));
    if (f && g && fb && u5) {
        /* f: 10 20 30 50: mean 27.5, m2 17.5^2 + 7.5^2 + 2.5^2 + 22.5^2 = 875 */
        CHECK_SPANS(f, 4, 110, 10, 50, 27.5, 875.0);
        CHECK_EQ(f->x ? f->x->hist.n : 0, 4);
        CHECK_EQ(f->key, 0x1000); /* the first process's address */
        /* g: 5 1 3: 9 ticks, mean 3, m2 8 */
        CHECK_SPANS(g, 3, 9, 1, 5, 3.0, 8.0);
        CHECK_EQ(fb->calls, 1);
        CHECK_EQ(u5->calls, 2);
        CHECK_EQ(u5->incl, 16);
        for (uint32_t i = 0; i < m.n_nodes; i++)
            CHECK_EQ(m.nodes[i].id, i);
        /* edges: root -> f 4 calls 110, min 10, max 50; f -> g 3 calls 9 */
        CHECK_EQ(m.n_edges, 2);
        for (uint32_t e = 0; e < m.n_edges; e++) {
            const struct rp_edge *x = &m.edges[e];
            if (x->caller == 0) {
                CHECK_EQ(x->callee, f->id);
                CHECK_EQ(x->calls, 4);
                CHECK_EQ(x->incl, 110);
                CHECK_EQ(x->min, 10);
                CHECK_EQ(x->max, 50);
            } else {
                CHECK_EQ(x->caller, f->id);
                CHECK_EQ(x->callee, g->id);
                CHECK_EQ(x->calls, 3);
                CHECK_EQ(x->incl, 9);
                CHECK_EQ(x->min, 1);
                CHECK_EQ(x->max, 5);
            }
        }
        /* the maps a second pass needs: the undefined id maps to 0 */
        const uint32_t *ma = map_of(&m, 0), *mb = map_of(&m, 1);
        CHECK(ma && mb);
        if (ma && mb) {
            CHECK_EQ(ma[1], f->id);
            CHECK_EQ(ma[4], 0);
            CHECK_EQ(mb[2], f->id);
            CHECK_EQ(mb[1], g->id);
            CHECK_EQ(mb[4], u5->id);
        }
    }
    /* the run: sums, the earliest start, the worst ending, threads per process */
    CHECK_EQ(m.events, 20);
    CHECK_EQ(m.lost, 3);
    CHECK_EQ(m.first_tick, 900);
    CHECK_EQ(m.last_tick, 2000);
    CHECK_EQ(m.ended, 0);
    CHECK_EQ(m.pid, 100);
    CHECK(m.program && !strcmp(m.program, "/bin/a"));
    CHECK_EQ(m.n_threads, 3);
    CHECK_EQ(m.threads[0].pid, 100);
    CHECK_EQ(m.threads[2].pid, 200);
    CHECK_EQ(m.n_procs, 2);
    CHECK(!strcmp(m.procs[1].file, "rp.data.200") && m.procs[1].ppid == 100);
    CHECK(m.procs[0].run && !strcmp(m.procs[0].run, "r1") && !m.procs[1].run);
    CHECK_EQ(m.procs[1].threads, 2);
    CHECK_EQ(m.procs[1].events, 12);
    CHECK(rp_profile_merged(&m));
    rp_profile_free(&m);
    for (unsigned i = 0; i < 5; i++) {
        if (na[i].x)
            rp_hist_free(&na[i].x->hist);
        free(na[i].x);
    }
    for (unsigned i = 0; i < 6; i++) {
        if (nb[i].x)
            rp_hist_free(&nb[i].x->hist);
        free(nb[i].x);
    }
    if (failures)
        fprintf(stderr, "test_merge: %d failures\n", (int)failures);
    return failures != 0;
}

// SPDX-License-Identifier: MIT
/*
 * trace_fixture.h - what test_trace.c and test_replay.c build traces with:
 * the synthetic trace whose every number is derived by hand (build_trace)
 * and what its replay must give (check_profile), and hand-made event
 * streams (file_start, def_rec, ev_chunk, replay_buf).  Included once per
 * test binary, after check.h; the files go to tmpdir, made by main().
 */
#ifndef RP_TESTS_TRACE_FIXTURE_H
#define RP_TESTS_TRACE_FIXTURE_H

static char tmpdir[] = "/tmp/rp_test_trace.XXXXXX";

/* ---- building a synthetic trace ------------------------------------------ */

struct fbuf {
    uint8_t *p;
    size_t len, cap;
    uint64_t chunk_off[32]; /* offsets of the chunk headers */
    uint32_t chunk_type[32];
    int nchunks;
};

static inline void fb_put(struct fbuf *f, const void *d, size_t n)
{
    if (f->len + n > f->cap) {
        f->cap = (f->len + n) * 2 + 256;
        f->p = realloc(f->p, f->cap);
        if (!f->p)
            abort();
    }
    memcpy(f->p + f->len, d, n);
    f->len += n;
}

static inline void fb_chunk(struct fbuf *f, uint32_t type, const void *payload, size_t len)
{
    uint8_t h[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(h, type, payload, (uint32_t)len);
    if (f->nchunks < 32) {
        f->chunk_off[f->nchunks] = f->len;
        f->chunk_type[f->nchunks++] = type;
    }
    fb_put(f, h, sizeof(h));
    fb_put(f, payload, len);
}

static inline void write_file(const char *path, const void *d, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || (n && fwrite(d, 1, n, f) != n) || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
}

/* Function addresses, a lock and an instant site. */
enum {
    FA = 0x401000,
    FB = 0x402000,
    FC = 0x403000,
    LK = 0x7f0000009000ull,
    SITE = 0x7000,
};

static inline int describe(void *ctx, uint64_t site, struct rp_def *out)
{
    (void)ctx;
    if (site != SITE)
        return -1;
    out->kind = RP_KIND_INSTANT;
    out->cls = RP_CLASS_USER;
    out->key = site;
    out->name = "tick";
    out->file = "t.c";
    out->line = 42;
    return 0;
}

/* A raw record before packing: rp_raw_word() is applied in build_trace()
 * (a function call cannot appear in a static initializer). */
struct rrec {
    uint64_t ticks;
    unsigned op;
    uint64_t pl;
};
#define R(t, op, pl)                                                                               \
    {                                                                                              \
        (t), (op), (pl)                                                                            \
    }

/*
 * Thread 101, part 1 (EVENTS chunk 1):
 *   A[1000..1100] calls B[1010..1040] and B[1050..1060]
 *   A[1200..1250] (outer) calls A[1210..1230] (inner, recursion)
 *     -- the chunk ends inside both A's
 */
static const struct rrec t101a[] = {
    R(1000, RP_RAW_FUNC_ENTER, FA), R(1010, RP_RAW_FUNC_ENTER, FB), R(1040, RP_RAW_FUNC_EXIT, FB),
    R(1050, RP_RAW_FUNC_ENTER, FB), R(1060, RP_RAW_FUNC_EXIT, FB),  R(1100, RP_RAW_FUNC_EXIT, FA),
    R(1200, RP_RAW_FUNC_ENTER, FA), R(1210, RP_RAW_FUNC_ENTER, FA),
};
/*
 * Thread 202 (EVENTS chunk 2): B[2000..2005]; C[2010..2100] calls
 * B[2020..2030], and an instant at 2040 (argument 99) inside C.
 */
static const struct rrec t202[] = {
    R(2000, RP_RAW_FUNC_ENTER, FB), R(2005, RP_RAW_FUNC_EXIT, FB), R(2010, RP_RAW_FUNC_ENTER, FC),
    R(2020, RP_RAW_FUNC_ENTER, FB), R(2030, RP_RAW_FUNC_EXIT, FB), R(2040, RP_RAW_INSTANT, SITE),
    R(99, RP_RAW_DATA, 0),          R(2100, RP_RAW_FUNC_EXIT, FC),
};
/*
 * Thread 101, part 2 (EVENTS chunk 3):
 *   inner A exits 1230, outer A exits 1250
 *   C[1290..1360]: waits for L [1300..1320], holds it [1320..1350]
 *   A[1400..1420] enters B at 1410; A exits while B is open (non-innermost:
 *     B is dropped as unclosed)
 *   exit of C at 1500 with nothing open: an unmatched exit
 *   B entered at 1600, then 5 events lost at 1610 (B dropped as unclosed)
 *   C[1620..1630]
 *   A entered at 1700 and never closed
 */
static const struct rrec t101b[] = {
    R(1230, RP_RAW_FUNC_EXIT, FA),  R(1250, RP_RAW_FUNC_EXIT, FA),  R(1290, RP_RAW_FUNC_ENTER, FC),
    R(1300, RP_RAW_LOCK_WAIT, LK),  R(1320, RP_RAW_LOCK_ACQ, LK),   R(1350, RP_RAW_LOCK_REL, LK),
    R(1360, RP_RAW_FUNC_EXIT, FC),  R(1400, RP_RAW_FUNC_ENTER, FA), R(1410, RP_RAW_FUNC_ENTER, FB),
    R(1420, RP_RAW_FUNC_EXIT, FA),  R(1500, RP_RAW_FUNC_EXIT, FC),  R(1600, RP_RAW_FUNC_ENTER, FB),
    R(1610, RP_RAW_LOST, 5),        R(1620, RP_RAW_FUNC_ENTER, FC), R(1630, RP_RAW_FUNC_EXIT, FC),
    R(1700, RP_RAW_FUNC_ENTER, FA),
};

/* Ids in first-seen order: A=1, B=2 (chunk 1); C=3, the site=4 (chunk 2);
 * L wait=5, L hold=6 (chunk 3). */
enum { IA = 1, IB = 2, IC = 3, IS = 4, IW = 5, IH = 6 };

struct xev {
    uint8_t op;
    uint32_t id;
    uint64_t ticks, arg;
};

static const struct xev x1[] = {
    {RP_OP_ENTER, IA, 1000, 0}, {RP_OP_ENTER, IB, 1010, 0}, {RP_OP_EXIT, 0, 1040, 0},
    {RP_OP_ENTER, IB, 1050, 0}, {RP_OP_EXIT, 0, 1060, 0},   {RP_OP_EXIT, 0, 1100, 0},
    {RP_OP_ENTER, IA, 1200, 0}, {RP_OP_ENTER, IA, 1210, 0},
};
static const struct xev x2[] = {
    {RP_OP_ENTER, IB, 2000, 0}, {RP_OP_EXIT, 0, 2005, 0}, {RP_OP_ENTER, IC, 2010, 0},
    {RP_OP_ENTER, IB, 2020, 0}, {RP_OP_EXIT, 0, 2030, 0}, {RP_OP_INSTANT, IS, 2040, 99},
    {RP_OP_EXIT, 0, 2100, 0},
};
/* LOCK_ACQ becomes two events: the exit of the wait and the begin of the
 * hold at the same tick; LOCK_REL the hold's end, with its duration 30
 * (format 1.3: a hold is an interval, not a frame).  The exit of A at 1420 is not innermost (B is
 * open) so it is EXIT_ID; the exit of C at 1500 finds the shadow stack empty, so it is EXIT_ID too
 * (the reader cannot match it either). */
static const struct xev x3[] = {
    {RP_OP_EXIT, 0, 1230, 0},       {RP_OP_EXIT, 0, 1250, 0},     {RP_OP_ENTER, IC, 1290, 0},
    {RP_OP_ENTER, IW, 1300, 0},     {RP_OP_EXIT, 0, 1320, 0},     {RP_OP_HOLD_BEGIN, IH, 1320, 0},
    {RP_OP_HOLD_END, IH, 1350, 30}, {RP_OP_EXIT, 0, 1360, 0},     {RP_OP_ENTER, IA, 1400, 0},
    {RP_OP_ENTER, IB, 1410, 0},     {RP_OP_EXIT_ID, IA, 1420, 0}, {RP_OP_EXIT_ID, IC, 1500, 0},
    {RP_OP_ENTER, IB, 1600, 0},     {RP_OP_LOST, 0, 1610, 5},     {RP_OP_ENTER, IC, 1620, 0},
    {RP_OP_EXIT, 0, 1630, 0},       {RP_OP_ENTER, IA, 1700, 0},
};

struct xdef {
    uint32_t id;
    uint8_t kind, cls;
    uint64_t key;
    uint32_t line;
    const char *name, *file;
};

static const struct xdef xdefs[] = {
    {IA, RP_KIND_FUNC, RP_CLASS_FUNC, FA, 0, "", ""},
    {IB, RP_KIND_FUNC, RP_CLASS_FUNC, FB, 0, "", ""},
    {IC, RP_KIND_FUNC, RP_CLASS_FUNC, FC, 0, "", ""},
    {IS, RP_KIND_INSTANT, RP_CLASS_USER, SITE, 42, "tick", "t.c"},
    {IW, RP_KIND_LOCK_WAIT, RP_CLASS_LOCK, LK, 0, "", ""},
    {IH, RP_KIND_LOCK_HOLD, RP_CLASS_LOCK, LK, 0, "", ""},
};
#define NDEFS (sizeof(xdefs) / sizeof(xdefs[0]))

/* DEFS chunks expected after each EVENTS encoding: ids [lo, hi]. */
static const int defs_after[3][2] = {{IA, IB}, {IC, IS}, {IW, IH}};

/* Builds the whole synthetic trace.  with_end: append the END chunk. */
static inline void build_trace(struct fbuf *f, int with_end)
{
    uint8_t hdr[RP_FILE_HDR_SIZE];
    rp_file_header(hdr);
    fb_put(f, hdr, sizeof(hdr));

    uint8_t info[512];
    size_t il = 0;
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "program", "synthetic", 9), 0);
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "pid", "4242", 4), 0);
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "clock", "tsc", 3), 0);
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "freq_hz", "1000000000", 10), 0);
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "mode", "trace", 5), 0);
    /* a pair that does not fit is refused and appends nothing */
    size_t il0 = il;
    CHECK_EQ(rp_info_put(info, il + 8, &il, "toolong", "0123456789", 10), RP_EINVAL);
    CHECK_EQ(il, il0);
    fb_chunk(f, RP_CH_INFO, info, il);

    /* clock pairs: 20e6 ticks over 10 ms -> 0.5 ns per tick */
    uint8_t clk[24] = {0};
    rp_put64(clk, 1000);
    rp_put64(clk + 8, 5000000000ull);
    fb_chunk(f, RP_CH_CLOCK, clk, sizeof(clk));

    uint8_t th[8 + 4];
    rp_put32(th, 101);
    rp_put32(th + 4, 0);
    memcpy(th + 8, "main", 4);
    fb_chunk(f, RP_CH_THREAD, th, sizeof(th));

    struct rp_enc e;
    struct rp_enc_thread ta = {0}, tb = {0};
    CHECK_EQ(rp_enc_init(&e, describe, NULL), 0);
    const struct {
        struct rp_enc_thread *t;
        uint32_t tid;
        const struct rrec *r;
        size_t n;
    } parts[3] = {
        {&ta, 101, t101a, sizeof(t101a) / sizeof(t101a[0])},
        {&tb, 202, t202, sizeof(t202) / sizeof(t202[0])},
        {&ta, 101, t101b, sizeof(t101b) / sizeof(t101b[0])},
    };
    for (int i = 0; i < 3; i++) {
        struct rp_raw raw[32];
        for (size_t k = 0; k < parts[i].n; k++) {
            raw[k].ticks = parts[i].r[k].ticks;
            raw[k].word = rp_raw_word(parts[i].r[k].op, parts[i].r[k].pl);
        }
        uint8_t *out = malloc(rp_enc_bound(parts[i].n));
        size_t len = rp_enc_events(&e, parts[i].t, parts[i].tid, raw, parts[i].n, out);
        CHECK(len > 16 && len <= rp_enc_bound(parts[i].n));
        size_t dl;
        const uint8_t *defs = rp_enc_take_defs(&e, &dl);
        /* each of these parts defines exactly two new ids; a DEFS record of
         * an unnamed id is RP_DEF_FIXED bytes, the site's adds "tick" "t.c" */
        CHECK_EQ(dl, 2 * RP_DEF_FIXED + (i == 1 ? 7 : 0));
        if (dl)
            fb_chunk(f, RP_CH_DEFS, defs, dl);
        fb_chunk(f, RP_CH_EVENTS, out, len);
        free(out);
    }
    /* nothing skipped; the LOST record was counted */
    CHECK_EQ(ta.skipped, 0);
    CHECK_EQ(tb.skipped, 0);
    CHECK_EQ(ta.lost, 5);
    /* what is still open on the encoder's shadow stack of 101: A (1700) */
    CHECK_EQ(ta.depth, 1);
    rp_enc_thread_free(&ta);
    rp_enc_thread_free(&tb);
    rp_enc_free(&e);

    rp_put64(clk, 1000 + 20000000ull);
    rp_put64(clk + 8, 5000000000ull + 10000000ull);
    fb_chunk(f, RP_CH_CLOCK, clk, sizeof(clk));

    if (with_end) {
        uint8_t end[32];
        rp_put64(end, 3000);
        rp_put64(end + 8, 32);
        rp_put64(end + 16, 5);
        rp_put32(end + 24, 0);
        rp_put32(end + 28, RP_END_EXIT);
        fb_chunk(f, RP_CH_END, end, sizeof(end));
    }
}

static inline const struct rp_edge *find_edge(const struct rp_profile *p, uint32_t a, uint32_t b)
{
    for (uint32_t i = 0; i < p->n_edges; i++)
        if (p->edges[i].caller == a && p->edges[i].callee == b)
            return &p->edges[i];
    return NULL;
}

#define CHECK_EDGE(p, a, b, ncalls, nincl, nmin, nmax)                                             \
    do {                                                                                           \
        const struct rp_edge *e_ = find_edge((p), (a), (b));                                       \
        CHECK(e_ != NULL);                                                                         \
        if (e_) {                                                                                  \
            CHECK_EQ(e_->calls, ncalls);                                                           \
            CHECK_EQ(e_->incl, nincl);                                                             \
            CHECK_EQ(e_->min, nmin);                                                               \
            CHECK_EQ(e_->max, nmax);                                                               \
        }                                                                                          \
    } while (0)

/*
 * The numbers of the synthetic timeline, worked by hand.
 *
 * A: activations 100 (1000..1100), 50 (outer 1200..1250), 20 (inner
 *    1210..1230), 20 (1400..1420; B inside ended by the EXIT_ID of A, 10),
 *    and the one entered at 1700, still open at the end: cut, X ticks (to
 *    the END's 3000, X = 1300, or to the thread's last event, X = 0,
 *    without an END) -> calls 5, dur_sum 190 + X, min 20 (0), max 100
 *    (1300); incl counts the outer recursion only: 100 + 50 + 20 + X;
 *    excl: 100-30-10 = 60, inner 20, outer 50-20 = 30, 20-10, X -> 120 + X.
 * B: 30 (1010..1040), 10 (1050..1060), 5 (2000..2005), 10 (2020..2030),
 *    10 (1410..1420, unwound by the EXIT_ID of A) -> calls 5, dur_sum =
 *    incl = excl = 65, min 5, max 30.  (B at 1600 never ends: the LOST
 *    drops it, unclosed, no time.)
 * C: 70 (1290..1360, of which wait 20 and hold 30), 10 (1620..1630),
 *    90 (2010..2100, of which B 10) -> calls 3, dur_sum = incl = 170,
 *    excl 20 + 10 + 80 = 110, min 10, max 90.
 * wait L: 20 (1300..1320); hold L: 30 (1320..1350).
 * tick: one instant -> calls 1.
 * Edges: root->A 4 calls (100, 50, 20, X) incl 170 + X; A->B 3 (30, 10, 10) 50;
 *    A->A 1 (20); root->C 2 (70, 10) + thread 202's C (90) = 3, 170;
 *    C->wait 1 (20); C->hold 1 (30); root->B 1 (5); C->B 1 (10).  8 edges.
 * Thread 101: events 8 + 17 = 25, first 1000, last 1700 + X, lost 5,
 *    unmatched exits 1 (C at 1500), unclosed 1 (B at 1610), unwound 1 (B
 *    at 1420), cut 1 (A at the end).  Thread 202: 7 events, 2000..2100,
 *    nothing unmatched.
 * Total: 32 events, total time (1700+X-1000) + (2100-2000) = 800 + X ticks.
 * Clock: (20e6 ticks, 10e6 ns) between the two CLOCK chunks -> 0.5 ns/tick.
 * Histograms (src/common/hist.h: below 32 a bucket each, then 32 a row per
 * octave, a bucket reported as its midpoint), kept as the rows from the
 * shortest span's to the longest's:
 *    A: 20, 20 (row 0), 50 (bucket 32 + 18 = 50, row 1), 100 (e = 6:
 *       64 + (100 >> 1) % 32 = 82, row 2, [100, 102) -> 101), X: with X =
 *       0 rows 0-2, p50 20, p100 101; with X = 1300 (row 6) rows 0-6, p50
 *       50, p100 1296;
 *    B: 5, 10, 10, 10, 30: row 0 alone, p50 10, p100 30;
 *    C: 10 (row 0), 70 (64 + 35 % 32 = 67 -> 71), 90 (64 + 45 % 32 = 77 ->
 *       91), the 90 from the other thread's chunk: rows 0-2 with row 1
 *       empty, p50 71, p100 91.
 */
static inline void check_profile(const struct rp_profile *p, int ended)
{
    CHECK_EQ(p->n_nodes, NDEFS + 1);
    if (p->n_nodes != NDEFS + 1)
        return;
    const struct rp_node *a = &p->nodes[IA], *b = &p->nodes[IB], *c = &p->nodes[IC];
    /* the A open at the end is cut there: at the END's ticks, if later */
    uint64_t x = p->ended && p->end_ticks > 1700 ? p->end_ticks - 1700 : 0;
    CHECK(x == 0 || x == 1300);
    CHECK_EQ(a->calls, 5);
    CHECK_EQ(rp_node_cut(a), 1);
    CHECK_EQ(rp_node_dur_sum(a), 190 + x);
    CHECK_EQ(a->incl, 170 + x);
    CHECK_EQ(a->excl, 120 + x);
    /* (without an END the cut A lasts 0 ticks: below the resolution of 1
     * tick, so not the minimum nor in the histogram; comp.h) */
    CHECK_EQ(rp_node_min(a), 20);
    CHECK_EQ(rp_node_below_res(a), x ? 0 : 1);
    CHECK_EQ(rp_node_max(a), x ? 1300 : 100);
    CHECK_EQ(b->calls, 5);
    CHECK_EQ(rp_node_cut(b), 1);
    CHECK_EQ(rp_node_cut(c), 0);
    CHECK_EQ(rp_node_dur_sum(b), 65);
    CHECK_EQ(b->incl, 65);
    CHECK_EQ(b->excl, 65);
    CHECK_EQ(rp_node_min(b), 5);
    CHECK_EQ(rp_node_max(b), 30);
    CHECK_EQ(c->calls, 3);
    CHECK_EQ(rp_node_dur_sum(c), 170);
    CHECK_EQ(c->incl, 170);
    CHECK_EQ(c->excl, 140); /* the hold [1320..1350] is C's own time: no callee */
    CHECK_EQ(rp_node_min(c), 10);
    CHECK_EQ(rp_node_max(c), 90);
    struct rp_hist hba, hbb, hbc;
    const struct rp_hist *ah = rp_node_hist(a, &hba), *bh = rp_node_hist(b, &hbb),
                         *ch = rp_node_hist(c, &hbc);
    CHECK(ah->n == (x ? 5 : 4) && ah->lo == 0 && ah->len == (x ? 7 : 3) * RP_HIST_SUB);
    CHECK_EQ(rp_hist_q(ah, 0.5), x ? 50 : 20);
    CHECK_EQ(rp_hist_q(ah, 1.0), x ? 1296 : 101);
    CHECK(bh->n == 5 && bh->lo == 0 && bh->len == RP_HIST_SUB);
    CHECK_EQ(rp_hist_q(bh, 0.5), 10);
    CHECK_EQ(rp_hist_q(bh, 1.0), 30);
    CHECK(ch->n == 3 && ch->lo == 0 && ch->len == 3 * RP_HIST_SUB);
    CHECK_EQ(rp_hist_q(ch, 0.5), 71);
    CHECK_EQ(rp_hist_q(ch, 1.0), 91);
    CHECK_EQ(p->nodes[IW].calls, 1);
    CHECK_EQ(p->nodes[IW].incl, 20);
    CHECK_EQ(p->nodes[IW].kind, RP_KIND_LOCK_WAIT);
    CHECK_EQ(p->nodes[IW].key, LK);
    CHECK_EQ(p->nodes[IH].calls, 1);
    CHECK_EQ(p->nodes[IH].incl, 30);
    CHECK_EQ(p->nodes[IH].kind, RP_KIND_LOCK_HOLD);
    CHECK_EQ(p->nodes[IS].calls, 1);
    CHECK_EQ(p->nodes[IS].kind, RP_KIND_INSTANT);
    CHECK_STR(p->nodes[IS].name, "tick");
    CHECK_STR(p->nodes[IS].file, "t.c");
    CHECK_EQ(p->nodes[IS].line, 42);

    CHECK_EQ(p->n_edges, 8);
    CHECK_EDGE(p, 0, IA, 4, 170 + x, 20, x ? 1300 : 100); /* (0 ticks: below resolution) */
    CHECK_EDGE(p, IA, IB, 3, 50, 10, 30);
    CHECK_EDGE(p, IA, IA, 1, 20, 20, 20);
    CHECK_EDGE(p, 0, IC, 3, 170, 10, 90);
    CHECK_EDGE(p, IC, IW, 1, 20, 20, 20);
    CHECK_EDGE(p, IC, IH, 1, 30, 30, 30);
    CHECK_EDGE(p, 0, IB, 1, 5, 5, 5);
    CHECK_EDGE(p, IC, IB, 1, 10, 10, 10);

    CHECK_EQ(p->n_threads, 2);
    for (uint32_t i = 0; i < p->n_threads; i++) {
        const struct rp_thread *t = &p->threads[i];
        if (t->tid == 101) {
            CHECK_EQ(t->events, 25);
            CHECK_EQ(t->first, 1000);
            CHECK_EQ(t->last, 1700 + x);
            CHECK_EQ(t->lost, 5);
            CHECK_EQ(t->unmatched_exits, 1);
            CHECK_EQ(t->unclosed, 1);
            CHECK_EQ(t->unwound, 1);
            CHECK_EQ(t->cut, 1);
            CHECK_STR(t->name, "main");
        } else {
            CHECK_EQ(t->tid, 202);
            CHECK_EQ(t->events, 7);
            CHECK_EQ(t->first, 2000);
            CHECK_EQ(t->last, 2100);
            CHECK_EQ(t->lost, 0);
            CHECK_EQ(t->unmatched_exits, 0);
            CHECK_EQ(t->unclosed, 0);
        }
    }
    CHECK_EQ(p->events, 32);
    CHECK_EQ(p->lost, 5);
    CHECK_EQ(p->unmatched_exits, 1);
    CHECK_EQ(p->unclosed, 1);
    CHECK_EQ(p->unwound, 1);
    CHECK_EQ(p->cut, 1);
    CHECK_EQ(p->total, 800 + x);
    CHECK_EQ(p->first_tick, 1000);
    CHECK_EQ(p->last_tick, x ? 3000 : 2100);
    CHECK(p->ns_per_tick == 0.5);
    CHECK_EQ(p->pid, 4242);
    CHECK_STR(p->program, "synthetic");
    CHECK_STR(p->clock_name, "tsc");
    CHECK_STR(p->mode, "trace");
    CHECK_EQ(p->ended, ended);
    if (ended) {
        CHECK_EQ(p->end_flags, RP_END_EXIT);
        CHECK_EQ(p->end_status, 0);
    }
}

static inline int replay_rc(const char *path, int force, struct rp_profile *p, char *err,
                            size_t errsz)
{
    struct rp_replay_opts o = {.force = force};
    memset(p, 0, sizeof(*p));
    return rp_replay_file(path, &o, p, NULL, NULL, err, errsz);
}

/* ---- the replay loop on hand-made event streams ------------------------------ */

/* A DEFS record of a point named name (kind POINT, no file, no extension). */
static inline size_t def_rec(uint8_t *q, uint32_t id, const char *name)
{
    size_t nl = strlen(name);
    memset(q, 0, RP_DEF_FIXED);
    rp_put32(q, id);
    q[4] = RP_KIND_POINT;
    rp_put16(q + 6, (uint16_t)nl);
    rp_put64(q + 8, 0x1000 + id);
    memcpy(q + RP_DEF_FIXED, name, nl);
    return RP_DEF_FIXED + nl;
}

/* An EVENTS chunk of tid 7 at base 1000 from the stream s[0..n); flags:
 * RP_EV_COMPACT, RP_EV_SNAPSHOT (an empty one).  The header states the
 * events the stream decodes to (up to a malformed one), plus miscount. */
static inline void ev_chunk_n(struct fbuf *f, uint32_t flags, const uint8_t *s, size_t n,
                              int miscount)
{
    uint8_t pl[128];
    size_t k = 16;
    struct rp_evdec d;
    struct rp_event ev;
    rp_put32(pl, 7);
    rp_put32(pl + 4, flags);
    rp_put64(pl + 8, 1000);
    if (flags & RP_EV_SNAPSHOT)
        pl[k++] = 0; /* depth 0 */
    memcpy(pl + k, s, n);
    CHECK_EQ(rp_evdec_init(&d, pl, (uint32_t)(k + n)), 0);
    while (rp_evdec_next(&d, &ev) > 0)
        ;
    rp_put32(pl + 4, flags | (uint32_t)((int)d.n + miscount));
    fb_chunk(f, RP_CH_EVENTS, pl, k + n);
}

static inline void ev_chunk(struct fbuf *f, uint32_t flags, const uint8_t *s, size_t n)
{
    ev_chunk_n(f, flags, s, n, 0);
}

static inline void file_start(struct fbuf *f)
{
    uint8_t hdr[RP_FILE_HDR_SIZE], info[128];
    size_t il = 0;
    rp_file_header(hdr);
    fb_put(f, hdr, sizeof(hdr));
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "freq_hz", "1000000000", 10), 0);
    fb_chunk(f, RP_CH_INFO, info, il);
}

/* Replays f; returns the code, the profile in *p, the message in err. */
static inline int replay_buf(const struct fbuf *f, struct rp_profile *p, char *err, size_t errsz)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/stream.rpt", tmpdir);
    write_file(path, f->p, f->len);
    int rc = replay_rc(path, 0, p, err, errsz);
    unlink(path);
    return rc;
}

#endif /* RP_TESTS_TRACE_FIXTURE_H */

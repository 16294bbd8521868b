/*
 * test_trace.c - unit tests of the trace format: the CRC, varints and
 * zigzag (common/bytes.h, crc32.c), the encoder (trace/writer.c), the reader
 * (trace/reader.c) and the replay (analyze/replay.c) on a synthetic trace
 * whose every number is derived by hand below, and the reader's behaviour on
 * damaged files (truncated at every offset, bit flips, absurd lengths, wrong
 * magic or version, a missing END chunk).
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
#include "report/spanwalk.h"

static char tmpdir[] = "/tmp/rp_test_trace.XXXXXX";

/* ---- CRC ----------------------------------------------------------------- */

/* The textbook bit-at-a-time CRC-32 (reflected polynomial 0xEDB88320). */
static uint32_t crc_bitwise(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    while (n--) {
        c ^= *p++;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
    }
    return ~c;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rng(void)
{
    /* xorshift64*: reproducible, no libc rand */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1Dull;
}

static void test_crc(void)
{
    /* zlib's crc32, looked up at run time: the glob-built test cannot add
     * -lz to its link line.  libz.so.1 is on every system with libdw. */
    typedef unsigned long (*zcrc_fn)(unsigned long, const unsigned char *, unsigned);
    zcrc_fn zcrc = NULL;
    void *z = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    if (z)
        zcrc = (zcrc_fn)(uintptr_t)dlsym(z, "crc32");
    if (!zcrc)
        printf("note: libz.so.1 not loadable, CRC checked against the bitwise reference only\n");

    /* the standard check value of CRC-32/ISO-HDLC */
    CHECK_EQ(rp_crc32(0, "123456789", 9), 0xCBF43926u);
    CHECK_EQ(rp_crc32(0, "", 0), 0u);

    static uint8_t buf[8192 + 16];
    for (size_t i = 0; i < sizeof(buf); i++)
        buf[i] = (uint8_t)rng();
    /* every length 0..600 and some long ones, at every alignment 0..7 */
    size_t lens[700], nl = 0;
    for (size_t n = 0; n <= 600; n++)
        lens[nl++] = n;
    for (size_t n = 1000; n <= 8192; n += 719)
        lens[nl++] = n;
    lens[nl++] = 8192;
    for (size_t i = 0; i < nl; i++) {
        for (size_t al = 0; al < 8; al++) {
            const uint8_t *p = buf + al;
            uint32_t got = rp_crc32(0, p, lens[i]);
            uint32_t want = crc_bitwise(p, lens[i]);
            if (got != want) {
                CHECK_EQ(got, want);
                fprintf(stderr, "  (length %zu, alignment %zu)\n", lens[i], al);
            }
            if (zcrc && got != (uint32_t)zcrc(0, p, (unsigned)lens[i])) {
                CHECK_EQ(got, zcrc(0, p, (unsigned)lens[i]));
                fprintf(stderr, "  (zlib, length %zu, alignment %zu)\n", lens[i], al);
            }
            /* chaining: crc(a||b) == crc(crc(a), b) for every split point class */
            size_t split = lens[i] / 3;
            if (rp_crc32(rp_crc32(0, p, split), p + split, lens[i] - split) != got) {
                CHECK(!"chained CRC differs");
                fprintf(stderr, "  (length %zu split %zu)\n", lens[i], split);
            }
        }
    }
    if (z)
        dlclose(z);
}

/* ---- varints and zigzag ---------------------------------------------------- */

static void test_varint(void)
{
    /* value -> LEB128 length: 7 bits per byte, so 2^7 needs 2, 2^63 needs
     * ceil(64/7) = 10 */
    static const struct {
        uint64_t v;
        size_t len;
    } cases[] = {
        {0, 1},
        {1, 1},
        {127, 1},
        {128, 2},
        {16383, 2},
        {16384, 3},
        {(1ull << 35) - 1, 5},
        {1ull << 35, 6},
        {(1ull << 63) - 1, 9},
        {1ull << 63, 10},
        {UINT64_MAX, 10},
    };
    uint8_t b[16];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        memset(b, 0xee, sizeof(b));
        uint8_t *e = rp_put_varint(b, cases[i].v);
        CHECK_EQ(e - b, cases[i].len);
        CHECK_EQ(b[cases[i].len], 0xee); /* nothing written past the end */
        uint64_t v = 12345;
        const uint8_t *q = rp_get_varint(b, e, &v);
        CHECK(q == e);
        CHECK_EQ(v, cases[i].v);
        /* every truncation of it is rejected, never read past end */
        for (size_t cut = 0; cut < cases[i].len; cut++)
            CHECK(rp_get_varint(b, b + cut, &v) == NULL);
    }
    /* the one-byte fast path must respect end too */
    b[0] = 5;
    uint64_t v;
    CHECK(rp_get_varint(b, b, &v) == NULL);

    /* 11 bytes: 0x80 x10 then 0x00 (an over-long zero); the 10th byte may
     * carry only bit 63, so 0x80 there is rejected */
    uint8_t eleven[11];
    memset(eleven, 0x80, 10);
    eleven[10] = 0;
    CHECK(rp_get_varint(eleven, eleven + 11, &v) == NULL);
    memset(eleven, 0xff, 10);
    eleven[10] = 0x01;
    CHECK(rp_get_varint(eleven, eleven + 11, &v) == NULL);
    /* 10 bytes whose last is 0x02 would need bit 64: rejected */
    uint8_t ten[10];
    memset(ten, 0xff, 9);
    ten[9] = 0x02;
    CHECK(rp_get_varint(ten, ten + 10, &v) == NULL);
    ten[9] = 0x01; /* = UINT64_MAX */
    CHECK(rp_get_varint(ten, ten + 10, &v) == ten + 10);
    CHECK_EQ(v, UINT64_MAX);

    /* zigzag: 0,-1,1,-2,2 -> 0,1,2,3,4; the extremes map to the top */
    static const struct {
        int64_t s;
        uint64_t z;
    } zz[] = {
        {0, 0},
        {-1, 1},
        {1, 2},
        {-2, 3},
        {2, 4},
        {-64, 127},
        {64, 128},
        {INT64_MAX, UINT64_MAX - 1},
        {INT64_MIN, UINT64_MAX},
    };
    for (size_t i = 0; i < sizeof(zz) / sizeof(zz[0]); i++) {
        CHECK_EQ(rp_zigzag(zz[i].s), zz[i].z);
        CHECK_EQ(rp_unzigzag(zz[i].z), zz[i].s);
    }
    for (int i = 0; i < 100000; i++) {
        uint64_t r = rng() >> (rng() & 63);
        int64_t s = (int64_t)r * ((r & 1) ? -1 : 1);
        uint8_t *e = rp_put_varint(b, rp_zigzag(s));
        uint64_t u;
        if (rp_get_varint(b, e, &u) != e || rp_unzigzag(u) != s) {
            CHECK(!"zigzag varint round trip");
            fprintf(stderr, "  (value %lld)\n", (long long)s);
            break;
        }
    }
}

/* ---- building a synthetic trace ------------------------------------------ */

struct fbuf {
    uint8_t *p;
    size_t len, cap;
    uint64_t chunk_off[32]; /* offsets of the chunk headers */
    uint32_t chunk_type[32];
    int nchunks;
};

static void fb_put(struct fbuf *f, const void *d, size_t n)
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

static void fb_chunk(struct fbuf *f, uint32_t type, const void *payload, size_t len)
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

static void write_file(const char *path, const void *d, size_t n)
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

static int describe(void *ctx, uint64_t site, struct rp_def *out)
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
static void build_trace(struct fbuf *f, int with_end)
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

/* ---- reading it back ------------------------------------------------------ */

static void check_events(const struct rp_chunk *c, const struct xev *x, size_t nx, uint32_t tid,
                         uint64_t base)
{
    struct rp_evdec d;
    struct rp_event ev;
    CHECK_EQ(rp_evdec_init(&d, c->data, c->len), 0);
    CHECK_EQ(d.tid, tid);
    CHECK_EQ(d.count, nx);
    CHECK_EQ(d.now, base);
    size_t i = 0;
    int rc;
    while ((rc = rp_evdec_next(&d, &ev)) > 0) {
        if (i >= nx) {
            CHECK(!"more events than expected");
            return;
        }
        if (ev.op != x[i].op || ev.id != x[i].id || ev.ticks != x[i].ticks || ev.arg != x[i].arg) {
            fprintf(stderr, "  event %zu of tid %u: got op %u id %u ticks %llu arg %llu\n", i, tid,
                    ev.op, ev.id, (unsigned long long)ev.ticks, (unsigned long long)ev.arg);
            CHECK_EQ(ev.op, x[i].op);
            CHECK_EQ(ev.id, x[i].id);
            CHECK_EQ(ev.ticks, x[i].ticks);
            CHECK_EQ(ev.arg, x[i].arg);
        }
        if (ev.op == RP_OP_HOLD_END) { /* no events inside; taken in C, the outer hold */
            CHECK_EQ(ev.arg2, 0);
            CHECK_EQ(ev.arg3, (uint64_t)IC << 2 | 2 | 1);
        }
        i++;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(i, nx);
    /* a payload shorter than its header is refused */
    CHECK_EQ(rp_evdec_init(&d, c->data, 15), RP_EFORMAT);
    /* a stream cut anywhere decodes a prefix of the events and then ends or
     * reports a malformed event; it never reads past the cut */
    CHECK_EQ(rp_evdec_init(&d, c->data, c->len), 0);
    uint32_t e0 = (uint32_t)(d.p - c->data); /* where the events begin */
    for (uint32_t cut = 16; cut < c->len; cut++) {
        /* a cut inside the stack snapshot is a malformed chunk */
        if (cut < e0) {
            CHECK_EQ(rp_evdec_init(&d, c->data, cut), RP_EFORMAT);
            continue;
        }
        CHECK_EQ(rp_evdec_init(&d, c->data, cut), 0);
        size_t k = 0;
        while ((rc = rp_evdec_next(&d, &ev)) > 0)
            k++;
        CHECK(rc == 0 || rc == RP_EFORMAT);
        CHECK(k < nx);
        CHECK(d.p <= c->data + cut);
    }
}

static void test_read_back(const char *path, const struct fbuf *f)
{
    struct rp_reader r;
    struct rp_chunk c;
    CHECK_EQ(rp_reader_open(&r, path), 0);
    CHECK_EQ(r.major, RP_VERSION_MAJOR);
    int n = 0, nev = 0, ndefs = 0, rc;
    uint32_t next_id = 1;
    while ((rc = rp_reader_next(&r, &c)) > 0) {
        CHECK(n < f->nchunks);
        if (n < f->nchunks) {
            CHECK_EQ(c.offset, f->chunk_off[n]);
            CHECK_EQ(c.type, f->chunk_type[n]);
        }
        n++;
        if (c.type == RP_CH_EVENTS) {
            static const struct xev *xs[3] = {x1, x2, x3};
            static const size_t nxs[3] = {sizeof(x1) / sizeof(x1[0]), sizeof(x2) / sizeof(x2[0]),
                                          sizeof(x3) / sizeof(x3[0])};
            static const uint32_t tids[3] = {101, 202, 101};
            static const uint64_t bases[3] = {1000, 2000, 1230};
            if (nev < 3)
                check_events(&c, xs[nev], nxs[nev], tids[nev], bases[nev]);
            nev++;
        } else if (c.type == RP_CH_DEFS) {
            const uint8_t *q = c.data, *end = c.data + c.len;
            uint32_t want_lo = ndefs < 3 ? (uint32_t)defs_after[ndefs][0] : 0;
            CHECK_EQ(next_id, want_lo);
            while (q < end) {
                CHECK(end - q >= RP_DEF_FIXED);
                uint32_t id = rp_get32(q);
                uint16_t nlen = rp_get16(q + 6), flen = rp_get16(q + 20);
                CHECK_EQ(id, next_id); /* dense, in first-seen order */
                if (id >= 1 && id <= NDEFS) {
                    const struct xdef *x = &xdefs[id - 1];
                    CHECK_EQ(q[4], x->kind);
                    CHECK_EQ(q[5], x->cls);
                    CHECK_EQ(rp_get64(q + 8), x->key);
                    CHECK_EQ(rp_get32(q + 16), x->line);
                    CHECK_EQ(nlen, strlen(x->name));
                    CHECK_EQ(flen, strlen(x->file));
                    CHECK(!memcmp(q + RP_DEF_FIXED, x->name, nlen));
                    CHECK(!memcmp(q + RP_DEF_FIXED + nlen, x->file, flen));
                }
                q += RP_DEF_FIXED + nlen + flen;
                next_id++;
            }
            CHECK(q == end);
            if (ndefs < 3)
                CHECK_EQ(next_id - 1, defs_after[ndefs][1]);
            ndefs++;
        }
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(n, f->nchunks);
    CHECK_EQ(nev, 3);
    CHECK_EQ(ndefs, 3);
    CHECK_EQ(next_id, NDEFS + 1);
    /* at the end it stays at the end */
    CHECK_EQ(rp_reader_next(&r, &c), 0);
    rp_reader_close(&r);
}

static const struct rp_edge *find_edge(const struct rp_profile *p, uint32_t a, uint32_t b)
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
static void check_profile(const struct rp_profile *p, int ended)
{
    CHECK_EQ(p->n_nodes, NDEFS + 1);
    if (p->n_nodes != NDEFS + 1)
        return;
    const struct rp_node *a = &p->nodes[IA], *b = &p->nodes[IB], *c = &p->nodes[IC];
    /* the A open at the end is cut there: at the END's ticks, if later */
    uint64_t x = p->ended && p->end_ticks > 1700 ? p->end_ticks - 1700 : 0;
    CHECK(x == 0 || x == 1300);
    CHECK_EQ(a->calls, 5);
    CHECK_EQ(a->cut, 1);
    CHECK_EQ(a->dur_sum, 190 + x);
    CHECK_EQ(a->incl, 170 + x);
    CHECK_EQ(a->excl, 120 + x);
    /* (without an END the cut A lasts 0 ticks: below the resolution of 1
     * tick, so not the minimum nor in the histogram; comp.h) */
    CHECK_EQ(a->min, 20);
    CHECK_EQ(a->below_res, x ? 0 : 1);
    CHECK_EQ(a->max, x ? 1300 : 100);
    CHECK_EQ(b->calls, 5);
    CHECK_EQ(b->cut, 1);
    CHECK_EQ(c->cut, 0);
    CHECK_EQ(b->dur_sum, 65);
    CHECK_EQ(b->incl, 65);
    CHECK_EQ(b->excl, 65);
    CHECK_EQ(b->min, 5);
    CHECK_EQ(b->max, 30);
    CHECK_EQ(c->calls, 3);
    CHECK_EQ(c->dur_sum, 170);
    CHECK_EQ(c->incl, 170);
    CHECK_EQ(c->excl, 140); /* the hold [1320..1350] is C's own time: no callee */
    CHECK_EQ(c->min, 10);
    CHECK_EQ(c->max, 90);
    CHECK(a->hist.n == (x ? 5 : 4) && a->hist.lo == 0 && a->hist.len == (x ? 7 : 3) * RP_HIST_SUB);
    CHECK_EQ(rp_hist_q(&a->hist, 0.5), x ? 50 : 20);
    CHECK_EQ(rp_hist_q(&a->hist, 1.0), x ? 1296 : 101);
    CHECK(b->hist.n == 5 && b->hist.lo == 0 && b->hist.len == RP_HIST_SUB);
    CHECK_EQ(rp_hist_q(&b->hist, 0.5), 10);
    CHECK_EQ(rp_hist_q(&b->hist, 1.0), 30);
    CHECK(c->hist.n == 3 && c->hist.lo == 0 && c->hist.len == 3 * RP_HIST_SUB);
    CHECK_EQ(rp_hist_q(&c->hist, 0.5), 71);
    CHECK_EQ(rp_hist_q(&c->hist, 1.0), 91);
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

/* ---- damaged files --------------------------------------------------------- */

static int replay_rc(const char *path, int force, struct rp_profile *p, char *err, size_t errsz)
{
    struct rp_replay_opts o = {.force = force};
    memset(p, 0, sizeof(*p));
    return rp_replay_file(path, &o, p, NULL, NULL, err, errsz);
}

static void test_truncation(const struct fbuf *f)
{
    char path[256], err[512];
    struct rp_profile p;
    snprintf(path, sizeof(path), "%s/cut.rpt", tmpdir);
    uint64_t last = f->chunk_off[f->nchunks - 1]; /* the END chunk */
    int bad = 0;

    for (size_t cut = 0; cut < f->len && bad < 10; cut++) {
        write_file(path, f->p, cut);
        int boundary = cut == RP_FILE_HDR_SIZE;
        for (int i = 0; i < f->nchunks; i++)
            boundary |= cut == f->chunk_off[i];
        int fails0 = failures;

        int rc = replay_rc(path, 0, &p, err, sizeof(err));
        if (boundary) {
            /* A cut between two chunks leaves a well-formed trace of a run
             * that stopped there (a crash looks exactly like this): it is
             * read, with the warning that it ended abnormally.  Its numbers
             * are those of the complete chunks. */
            CHECK_EQ(rc, 0);
            CHECK_STR(p.warn, "abnormally");
            CHECK_STR(p.warn, path);
        } else {
            CHECK_EQ(rc, RP_ETRUNC);
            CHECK_STR(err, path);
            CHECK_STR(err, "offset");
            /* names the offset of the chunk the file ends in */
            if (cut > RP_FILE_HDR_SIZE) {
                uint64_t at = RP_FILE_HDR_SIZE;
                for (int i = 0; i < f->nchunks; i++)
                    if (f->chunk_off[i] < cut)
                        at = f->chunk_off[i];
                char want[64];
                snprintf(want, sizeof(want), "offset %llu", (unsigned long long)at);
                CHECK_STR(err, want);
            }
        }
        rp_profile_free(&p);

        /* force: anything past the file header is analysed up to the cut */
        rc = replay_rc(path, 1, &p, err, sizeof(err));
        if (cut < RP_FILE_HDR_SIZE) {
            CHECK_EQ(rc, RP_ETRUNC);
            CHECK_STR(err, "offset");
        } else {
            CHECK_EQ(rc, 0);
            CHECK_STR(p.warn, "abnormally");
            if (!boundary)
                CHECK_STR(p.warn, "offset");
            if (cut > last) /* inside END: every event chunk is intact */
                check_profile(&p, 0);
        }
        rp_profile_free(&p);
        if (failures != fails0) {
            fprintf(stderr, "  (file cut at %zu of %zu bytes: rc %d, err \"%s\")\n", cut, f->len,
                    rc, err);
            bad++;
        }
    }
}

static void test_bitflips(const struct fbuf *f)
{
    char path[256], err[512], want[64];
    struct rp_profile p;
    snprintf(path, sizeof(path), "%s/flip.rpt", tmpdir);
    uint8_t *d = malloc(f->len);

    for (int ci = 0; ci < f->nchunks; ci++) {
        uint64_t off = f->chunk_off[ci];
        uint64_t end = ci + 1 < f->nchunks ? f->chunk_off[ci + 1] : f->len;
        /* one byte in each header field (type, length, payload crc, header
         * crc), the first and the last byte of the payload */
        uint64_t at[6] = {off + 0, off + 5, off + 9, off + 15, off + 16, end - 1};
        for (int k = 0; k < 6; k++) {
            if (at[k] >= end)
                continue;
            for (int bit = 0; bit < 8; bit++) {
                memcpy(d, f->p, f->len);
                d[at[k]] ^= (uint8_t)(1u << bit);
                write_file(path, d, f->len);
                int fails0 = failures;
                int rc = replay_rc(path, 0, &p, err, sizeof(err));
                CHECK_EQ(rc, RP_ECRC);
                CHECK_STR(err, path);
                snprintf(want, sizeof(want), "offset %llu ", (unsigned long long)off);
                CHECK_STR(err, want);
                rp_profile_free(&p);
                /* force skips a chunk whose payload is damaged; a damaged
                 * header still stops the reading (its length is unknown).
                 * Skipping THREAD or a CLOCK chunk leaves every event. */
                uint32_t ty = f->chunk_type[ci];
                if (at[k] - off >= RP_CHUNK_HDR_SIZE &&
                    (ty == RP_CH_THREAD || ty == RP_CH_INFO || ty == RP_CH_END)) {
                    rc = replay_rc(path, 1, &p, err, sizeof(err));
                    CHECK_EQ(rc, 0);
                    CHECK_EQ(p.skipped_chunks, 1);
                    snprintf(want, sizeof(want), "the first at offset %llu",
                             (unsigned long long)off);
                    CHECK_STR(p.warn, want);
                    CHECK_EQ(p.events, 32);
                    CHECK_EQ(p.nodes[IA].incl, 170 + (p.ended ? 1300 : 0));
                    rp_profile_free(&p);
                }
                if (failures != fails0)
                    fprintf(stderr, "  (chunk %d at %llu, byte %llu bit %d: rc %d \"%s\")\n", ci,
                            (unsigned long long)off, (unsigned long long)at[k], bit, rc, err);
            }
        }
    }
    free(d);
}

static void test_bad_headers(const struct fbuf *f)
{
    char path[256], err[512];
    struct rp_profile p;
    snprintf(path, sizeof(path), "%s/bad.rpt", tmpdir);
    uint8_t *d = malloc(f->len + 64);

    /* wrong magic */
    memcpy(d, f->p, f->len);
    d[3] ^= 0x20;
    write_file(path, d, f->len);
    CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), RP_EFORMAT);
    CHECK_STR(err, path);
    CHECK_STR(err, "offset 0");
    rp_profile_free(&p);
    /* wrong magic, even in a file shorter than the magic */
    write_file(path, "RANX", 4);
    CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), RP_EFORMAT);
    rp_profile_free(&p);

    /* version 2.0 */
    memcpy(d, f->p, f->len);
    rp_put16(d + 8, 2);
    rp_put16(d + 10, 0);
    write_file(path, d, f->len);
    CHECK_EQ(replay_rc(path, 1, &p, err, sizeof(err)), RP_EVERSION);
    CHECK_STR(err, path);
    CHECK_STR(err, "2.0");
    rp_profile_free(&p);
    /* a newer minor version is read */
    memcpy(d, f->p, f->len);
    rp_put16(d + 10, 7);
    write_file(path, d, f->len);
    CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), 0);
    rp_profile_free(&p);

    /* a missing file */
    snprintf(path, sizeof(path), "%s/does-not-exist.rpt", tmpdir);
    CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)), RP_ENOENT);
    CHECK_STR(err, path);
    rp_profile_free(&p);
    snprintf(path, sizeof(path), "%s/bad.rpt", tmpdir);

    /*
     * Chunk headers with a sound header crc claiming absurd lengths, placed
     * after the INFO chunk: over RP_CHUNK_MAX is a format error; under it but
     * past the end of the file is a truncation.  Neither may size the
     * reader's buffer by the claim (r.cap is what it allocated).
     */
    static const uint32_t claims[] = {0xffffffffu, RP_CHUNK_MAX + 1, RP_CHUNK_MAX, RP_CHUNK_MAX - 1,
                                      1u << 25};
    uint64_t at = f->chunk_off[1];
    for (size_t i = 0; i < sizeof(claims) / sizeof(claims[0]); i++) {
        memcpy(d, f->p, at);
        uint8_t *h = d + at;
        rp_put32(h, RP_CH_EVENTS);
        rp_put32(h + 4, claims[i]);
        rp_put32(h + 8, 0);
        rp_put32(h + 12, rp_crc32(0, h, 12));
        memset(h + 16, 0x55, 48);
        write_file(path, d, at + 64);

        struct rp_reader r;
        struct rp_chunk c;
        CHECK_EQ(rp_reader_open(&r, path), 0);
        CHECK_EQ(rp_reader_next(&r, &c), 1); /* INFO */
        int rc = rp_reader_next(&r, &c);
        CHECK_EQ(rc, claims[i] > RP_CHUNK_MAX ? RP_EFORMAT : RP_ETRUNC);
        char want[64];
        snprintf(want, sizeof(want), "offset %llu", (unsigned long long)at);
        CHECK_STR(r.err, want);
        CHECK_STR(r.err, path);
        /* the buffer holds at most what the file could supply (INFO needed
         * 64 KiB, the reader's first size), not the claim */
        CHECK(r.cap <= 65536);
        if (r.cap > 65536)
            fprintf(stderr, "  (claim %u: reader allocated %zu bytes for a %llu-byte file)\n",
                    claims[i], r.cap, (unsigned long long)(at + 64));
        rp_reader_close(&r);

        CHECK_EQ(replay_rc(path, 0, &p, err, sizeof(err)),
                 claims[i] > RP_CHUNK_MAX ? RP_EFORMAT : RP_ETRUNC);
        CHECK_STR(err, want);
        rp_profile_free(&p);
    }
    free(d);
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
        CHECK_EQ(p.nodes[IB].throttled, 14);
        CHECK_EQ(p.nodes[IC].throttled, 1);
        CHECK_EQ(p.nodes[IA].throttled, 0);
    }
    rp_profile_free(&p);

    struct rp_replay_opts o = {.tid = 202};
    memset(&p, 0, sizeof(p));
    CHECK_EQ(rp_replay_file(path, &o, &p, NULL, NULL, err, sizeof(err)), 0);
    if (p.n_nodes > IC) {
        CHECK_EQ(p.nodes[IB].throttled, 7);
        CHECK_EQ(p.nodes[IC].throttled, 0);
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

/* ---- the replay loop on hand-made event streams ------------------------------ */

/* A DEFS record of a point named name (kind POINT, no file, no extension). */
static size_t def_rec(uint8_t *q, uint32_t id, const char *name)
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
static void ev_chunk_n(struct fbuf *f, uint32_t flags, const uint8_t *s, size_t n, int miscount)
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

static void ev_chunk(struct fbuf *f, uint32_t flags, const uint8_t *s, size_t n)
{
    ev_chunk_n(f, flags, s, n, 0);
}

static void file_start(struct fbuf *f)
{
    uint8_t hdr[RP_FILE_HDR_SIZE], info[128];
    size_t il = 0;
    rp_file_header(hdr);
    fb_put(f, hdr, sizeof(hdr));
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "freq_hz", "1000000000", 10), 0);
    fb_chunk(f, RP_CH_INFO, info, il);
}

/* Replays f; returns the code, the profile in *p, the message in err. */
static int replay_buf(const struct fbuf *f, struct rp_profile *p, char *err, size_t errsz)
{
    char path[256];
    snprintf(path, sizeof(path), "%s/stream.rpt", tmpdir);
    write_file(path, f->p, f->len);
    int rc = replay_rc(path, 0, p, err, errsz);
    unlink(path);
    return rc;
}

/* rp_text_dup: what every name from a trace or a binary passes through */
static void test_text_dup(void)
{
    static const struct {
        const char *in;
        size_t n;
        int keep_nul;
        const char *out;
    } t[] = {
        {"plain_name", 10, 0, "plain_name"},
        {"a\x1b]52;c;aGk=\x07z", 14, 0, "a\\x1b]52;c;aGk=\\x07z"},
        {"\x01\x7f\t\n", 4, 0, "\\x01\\x7f\\x09\\x0a"},
        {"c1 \xc2\x9b x", 7, 0, "c1 \\xc2\\x9b x"}, /* U+009B, a CSI */
        {"nb\xc2\xa0\xc3\xa9\xf0\x9f\x98\x80", 10, 0, "nb\xc2\xa0\xc3\xa9\xf0\x9f\x98\x80"},
        {"bad\xff\xc3", 5, 0, "bad\\xff\\xc3"}, /* invalid UTF-8 */
        {"a\0b", 3, 0, "a\\x00b"},
    };
    for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
        size_t len = 0;
        char *o = rp_text_dup(t[i].in, t[i].n, t[i].keep_nul, &len);
        CHECK(o && !strcmp(o, t[i].out) && len == strlen(t[i].out));
        if (o && strcmp(o, t[i].out))
            fprintf(stderr, "  rp_text_dup case %zu: got \"%s\"\n", i, o);
        free(o);
    }
    size_t len = 0; /* argv: NULs kept as separators */
    char *o = rp_text_dup("a\0\x1b\0", 4, 1, &len);
    CHECK(o && len == 7 && !memcmp(o, "a\0\\x1b\0", 7));
    free(o);
}

/* Replays f and checks that it fails with RP_EFORMAT and a message holding want. */
static void check_malformed(const struct fbuf *f, const char *want)
{
    struct rp_profile p;
    char err[512];
    int rc = replay_buf(f, &p, err, sizeof(err));
    CHECK_EQ(rc, RP_EFORMAT);
    if (rc != RP_EFORMAT || !strstr(err, want))
        fprintf(stderr, "  want \"%s\", got rc %d: %s\n", want, rc, rc ? err : "");
    CHECK(rc != 0 && strstr(err, want) != NULL);
    rp_profile_free(&p);
}

/*
 * Every count and length the format states is checked (trace-format.md 4):
 * an EVENTS chunk whose stream holds more or fewer events than its header's
 * nevents, in order and in a worker's job; an INFO record whose value or key
 * runs past its chunk; fixed-size CLOCK, THREAD, LOST and END payloads that
 * are shorter than the format says.  Each is an error naming the offset.
 */
static void test_counts_lengths(void)
{
    static const uint8_t s[] = {10 << 1, 3, 5 << 1, 3, 20 << 1 | 1, 30 << 1 | 1}; /* 4 events */
    uint8_t d[64], b[64];
    char want[160];
    struct fbuf f;
    struct rp_evdec dec;
    struct rp_event ev;

    for (int snap = 0; snap < 2; snap++)
        for (int miss = -1; miss <= 1; miss += 2) {
            memset(&f, 0, sizeof(f));
            file_start(&f);
            fb_chunk(&f, RP_CH_DEFS, d, def_rec(d, 3, "c"));
            size_t at = f.len;
            ev_chunk_n(&f, RP_EV_COMPACT | (snap ? RP_EV_SNAPSHOT : 0), s, sizeof(s), miss);
            snprintf(want, sizeof(want),
                     "EVENTS chunk at offset %zu states %d events, its stream holds 4", at,
                     4 + miss);
            check_malformed(&f, want);
            /* the decoder (dump, timelines, the sequence diagram) agrees */
            CHECK_EQ(rp_evdec_init(&dec, f.p + at + RP_CHUNK_HDR_SIZE,
                                   (uint32_t)(f.len - at - RP_CHUNK_HDR_SIZE)),
                     0);
            int rc, k = 0;
            while ((rc = rp_evdec_next(&dec, &ev)) > 0)
                k++;
            CHECK_EQ(rc, RP_EFORMAT);
            CHECK_EQ(k, 4);
            CHECK(rp_evdec_miscount(&dec));
            free(f.p);
        }

    /* INFO: a value length past the record's chunk, a key length past it,
     * and a record cut inside its lengths */
    for (int k = 0; k < 3; k++) {
        uint8_t hdr[RP_FILE_HDR_SIZE];
        size_t il = 0;
        memset(&f, 0, sizeof(f));
        rp_file_header(hdr);
        fb_put(&f, hdr, sizeof(hdr));
        CHECK_EQ(rp_info_put(b, sizeof(b), &il, "freq_hz", "1000000000", 10), 0);
        size_t rec = il;
        CHECK_EQ(rp_info_put(b, sizeof(b), &il, "program", "/bin/x", 6), 0);
        if (k == 0)
            rp_put32(b + rec + 2 + 7, 7); /* the value claims one byte more */
        else if (k == 1)
            rp_put16(b + rec, 40); /* the key runs past the chunk */
        else
            il = rec + 4; /* a record of 4 bytes: not even its lengths */
        fb_chunk(&f, RP_CH_INFO, b, il);
        snprintf(want, sizeof(want), "malformed INFO record at offset %zu",
                 (size_t)RP_FILE_HDR_SIZE + RP_CHUNK_HDR_SIZE + rec);
        check_malformed(&f, want);
        free(f.p);
    }

    /* a FIFO for -i is refused at once, never waited on (nobody writes it) */
    {
        char fifo[256];
        struct rp_reader r;
        snprintf(fifo, sizeof(fifo), "%s/in.fifo", tmpdir);
        CHECK_EQ(mkfifo(fifo, 0600), 0);
        CHECK_EQ(rp_reader_open(&r, fifo), RP_EIO);
        CHECK(strstr(r.err, "is a FIFO") != NULL);
        rp_reader_close(&r);
        unlink(fifo);
    }

    /* a LOST chunk (format 4.7) is counted, not skipped */
    {
        struct rp_profile p;
        char err[512];
        memset(&f, 0, sizeof(f));
        file_start(&f);
        memset(b, 0, 32);
        rp_put32(b, 7);
        rp_put64(b + 8, 1234);
        fb_chunk(&f, RP_CH_LOST, b, 32);
        int rc = replay_buf(&f, &p, err, sizeof(err));
        CHECK_EQ(rc, 0);
        CHECK_EQ(p.lost, 1234);
        CHECK(p.n_threads == 1 && p.threads[0].lost == 1234);
        rp_profile_free(&p);
        free(f.p);
    }

    /* fixed-size payloads shorter than the format's */
    static const struct {
        uint32_t type, len;
        const char *name;
    } fx[] = {{RP_CH_CLOCK, 16, "CLOCK"},
              {RP_CH_THREAD, 4, "THREAD"},
              {RP_CH_LOST, 24, "LOST"},
              {RP_CH_END, 28, "END"}};
    for (size_t k = 0; k < sizeof(fx) / sizeof(fx[0]); k++) {
        memset(&f, 0, sizeof(f));
        file_start(&f);
        size_t at = f.len;
        memset(b, 0, sizeof(b));
        fb_chunk(&f, fx[k].type, b, fx[k].len);
        snprintf(want, sizeof(want), "malformed %s chunk at offset %zu: %u bytes", fx[k].name, at,
                 fx[k].len);
        check_malformed(&f, want);
        free(f.p);
    }
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
        CHECK_EQ(p.nodes[3].dur_sum, 20 + 55 + 4 + 4);
        CHECK_EQ(p.nodes[3].incl, 55 + 4 + 4); /* the inner recursion not twice */
        CHECK_EQ(p.nodes[3].excl, 20 + 35 + 4 + 4);
        CHECK_EQ(p.nodes[3].min, 4);
        CHECK_EQ(p.nodes[3].max, 55);
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
            CHECK_EQ(p.nodes[3].max, 1ull << 61);
            CHECK_EQ(p.nodes[3].dur_sum, (1ull << 63) + 8);
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
 * its own, not a callee: docs/locks.md), and on-CPU max 1870 -
 * 1000 - 300 (the lock wait) = 570: the 20 off CPU in the first chunk is
 * not taken out of the on-CPU duration of a span that ends in a later one
 * (docs/report-json.md);
 * [off-cpu] 2 calls, 1020; the lock wait 300; 30 ticks paused.
 */
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
    const struct rp_raw *m = rp_offq_merge(&q, b1, &n);
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
    m = rp_offq_merge(&q, b2, &n);
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
    m = rp_offq_merge(&q, b3, &n);
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
        CHECK_EQ(nh->offcpu, 1000);
        CHECK_EQ(nh->excl, 70);
        CHECK_EQ(nh->max, 1070);
        CHECK_EQ(nh->oncpu_max, 70);
        CHECK_EQ(nh->oncpu_min, 70);
        CHECK_EQ(nh->offcpu_below, 1000);
        CHECK_EQ(nf->incl, 1870);
        CHECK_EQ(nf->offcpu, 20);
        CHECK_EQ(nf->excl, 470); /* a lock hold is an interval, not a callee */
        CHECK_EQ(nf->max, 1870);
        CHECK_EQ(nf->oncpu_max, 570);
        CHECK_EQ(nk->oncpu_max, 10);
        CHECK_EQ(nk->oncpu_min, 10);
        CHECK_EQ(nk->calls, 2);
        CHECK_EQ(nk->offcpu, 0);
        CHECK_EQ(no->calls, 2);
        CHECK_EQ(no->incl, 1020);
        CHECK_STR(no->name, "[off-cpu]");
        CHECK_EQ(nw->incl, 300);
        CHECK_EQ(nw->offcpu, 0);
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
    m = rp_offq_merge(&q, b4, &n);
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
    m = rp_offq_merge(&q, b5, &n);
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
    CHECK_EQ(p->nodes[A].cut, 1);
    CHECK_EQ(p->nodes[A].incl, 110 + a10);
    CHECK_EQ(p->nodes[A].excl, 110 - 50 - 10 - 20 + a10 - b10);
    CHECK_EQ(p->nodes[B].calls, 4);
    CHECK_EQ(p->nodes[B].cut, 4);
    CHECK_EQ(p->nodes[B].dur_sum, 50 + 20 + 30 + b10);
    CHECK_EQ(p->nodes[B].excl, (50 - 40) + (20 - 10) + (30 - 20) + b10);
    CHECK_EQ(p->nodes[C].calls, 3);
    CHECK_EQ(p->nodes[C].cut, 3);
    CHECK_EQ(p->nodes[C].dur_sum, 40 + 10 + 20);
    CHECK_EQ(p->nodes[C].excl, (40 - 30) + 10 + 20);
    CHECK_EQ(p->nodes[D].calls, 1);
    CHECK_EQ(p->nodes[D].cut, 1);
    CHECK_EQ(p->nodes[D].incl, 30);
    CHECK_EQ(p->nodes[E].calls, 1);
    CHECK_EQ(p->nodes[E].cut, 0);
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
        CHECK_EQ(k.dur[id], p->nodes[id].dur_sum);
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
        CHECK_EQ(p.nodes[1].dur_sum, 110);
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
            CHECK_EQ(h->dur_sum, 205);
            CHECK_EQ(h->incl, 110);
            CHECK_EQ(h->excl, 0);
            CHECK_EQ(h->min, 95);
            CHECK_EQ(h->max, 110);
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
 * spans are below it.
 */
static void test_below_resolution(void)
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
        CHECK_EQ(p.resolution, off ? 1 : 4);
        if (p.n_nodes == 2) {
            const struct rp_node *a = &p.nodes[1];
            CHECK_EQ(a->calls, 15);
            CHECK_EQ(a->dur_sum, 78);
            CHECK_EQ(a->excl, 78);
            CHECK_EQ(a->below_res, off ? 3 : 12);
            CHECK_EQ(p.below_res, a->below_res);
            CHECK_EQ(a->hist.n, off ? 12 : 3);
            CHECK_EQ(a->min, off ? 1 : 10);
            CHECK_EQ(a->max, 30);
            CHECK_EQ(rp_hist_q(&a->hist, 0.5), off ? 2 : 20);
            CHECK_EDGE(&p, 0, 1, 15, 78, off ? 1 : 10, 30);
        } else {
            CHECK_EQ(p.n_nodes, 2);
        }
        rp_profile_free(&p);
    }
    unlink(path);
    free(f.p);
}

int main(void)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    test_crc();
    test_varint();

    struct fbuf f = {0};
    build_trace(&f, 1);
    char path[256];
    snprintf(path, sizeof(path), "%s/good.rpt", tmpdir);
    write_file(path, f.p, f.len);
    test_read_back(path, &f);
    test_replay(path);
    test_no_end();
    test_fcount();
    test_replay_streams();
    test_counts_lengths();
    test_text_dup();
    test_offcpu();
    test_unwind();
    test_reused_tid();
    test_holds();
    test_below_resolution();
    test_truncation(&f);
    test_bitflips(&f);
    test_bad_headers(&f);
    free(f.p);

    /* clean up the temporary directory */
    static const char *const files[] = {"good.rpt", "cut.rpt", "flip.rpt", "bad.rpt"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, files[i]);
        unlink(path);
    }
    rmdir(tmpdir);

    if (failures) {
        fprintf(stderr, "test_trace: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_trace: all checks passed\n");
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * test_trace.c - unit tests of the trace format: the CRC, varints and
 * zigzag (common/bytes.h, crc32.c), the encoder (trace/writer.c) and the
 * reader (trace/reader.c) on a synthetic trace whose every number is derived
 * by hand (trace_fixture.h), every count and length the format states, and
 * the reader's behaviour on damaged files (truncated at every offset, bit
 * flips, absurd lengths, wrong magic or version).  The replay of traces is
 * test_replay.c.
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
#include "analyze/spanwalk.h"
#include "trace_fixture.h"

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
    uint64_t v = 0;
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

/* ---- damaged files --------------------------------------------------------- */

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
 * Skimming (rp_reader.skim): a file of EVENTS chunks of 10, 256, 257 and
 * 5000 bytes between other chunks, read skimming EVENTS, hands out the same
 * chunks in order, the others whole, each EVENTS chunk as its first
 * min(len, RP_READER_SKIM) bytes, skimmed only when longer, and
 * rp_reader_whole gives the whole of it.  A damaged EVENTS payload is not
 * seen skimming but is by rp_reader_whole (RP_ECRC); a damaged DEFS
 * payload is (RP_ECRC); a file cut inside an EVENTS payload ends with
 * RP_ETRUNC at that chunk, as without skimming.
 */
static void test_skim(void)
{
    static const uint32_t lens[] = {10, RP_READER_SKIM, RP_READER_SKIM + 1, 5000};
    static uint8_t pay[5000 + 8];
    struct fbuf f = {0};
    char path[256];
    snprintf(path, sizeof(path), "%s/skim.rpt", tmpdir);
    for (size_t i = 0; i < sizeof(pay); i++)
        pay[i] = (uint8_t)rng();
    file_start(&f);
    for (size_t i = 0; i < 4; i++) {
        fb_chunk(&f, RP_CH_EVENTS, pay + i, lens[i]);
        fb_chunk(&f, RP_CH_DEFS, pay + 100 + i, 300 + i);
    }
    write_file(path, f.p, f.len);

    struct rp_reader r;
    struct rp_chunk c;
    int rc, n = 0;
    CHECK_EQ(rp_reader_open(&r, path), 0);
    r.skim = 1u << RP_CH_EVENTS;
    while ((rc = rp_reader_next(&r, &c)) > 0) {
        CHECK(n < f.nchunks);
        if (n >= f.nchunks)
            break;
        CHECK_EQ(c.offset, f.chunk_off[n]);
        CHECK_EQ(c.type, f.chunk_type[n]);
        const uint8_t *want = f.p + f.chunk_off[n] + RP_CHUNK_HDR_SIZE;
        uint32_t full = rp_get32(f.p + f.chunk_off[n] + 4);
        if (c.type == RP_CH_EVENTS) {
            uint32_t k = full < RP_READER_SKIM ? full : RP_READER_SKIM;
            CHECK_EQ(c.len, k);
            CHECK_EQ(c.skimmed, full > RP_READER_SKIM);
            CHECK(!memcmp(c.data, want, k));
            CHECK_EQ(rp_reader_whole(&r, &c), 0);
            CHECK_EQ(c.skimmed, 0);
        } else {
            CHECK_EQ(c.skimmed, 0);
        }
        CHECK_EQ(c.len, full);
        CHECK(!memcmp(c.data, want, full));
        n++;
    }
    CHECK_EQ(rc, 0);
    CHECK_EQ(n, f.nchunks);
    rp_reader_close(&r);

    /* damaged payloads: EVENTS (the 5000 bytes', chunk 7) only when read
     * whole, DEFS (chunk 8) always */
    for (int which = 7; which <= 8; which++) {
        uint8_t *d = malloc(f.len);
        memcpy(d, f.p, f.len);
        d[f.chunk_off[which] + RP_CHUNK_HDR_SIZE + 299] ^= 0x10;
        write_file(path, d, f.len);
        free(d);
        CHECK_EQ(rp_reader_open(&r, path), 0);
        r.skim = 1u << RP_CH_EVENTS;
        n = 0;
        while ((rc = rp_reader_next(&r, &c)) > 0) {
            n++;
            if (c.offset == f.chunk_off[7])
                CHECK_EQ(rp_reader_whole(&r, &c), which == 7 ? RP_ECRC : 0);
        }
        CHECK_EQ(rc, which == 7 ? 0 : RP_ECRC);
        CHECK_EQ(n, which == 7 ? f.nchunks : 8);
        CHECK(which == 7 || strstr(r.err, "checksum mismatch"));
        rp_reader_close(&r);
    }

    /* cut inside the last EVENTS payload */
    write_file(path, f.p, f.chunk_off[7] + RP_CHUNK_HDR_SIZE + 1000);
    CHECK_EQ(rp_reader_open(&r, path), 0);
    r.skim = 1u << RP_CH_EVENTS;
    n = 0;
    while ((rc = rp_reader_next(&r, &c)) > 0)
        n++;
    CHECK_EQ(rc, RP_ETRUNC);
    CHECK_EQ(n, 7);
    CHECK(strstr(r.err, "truncated"));
    rp_reader_close(&r);
    unlink(path);
    free(f.p);
}

static struct fbuf good;    /* the synthetic trace, built by main() */
static char good_path[256]; /* and written here */

static void test_read_back_good(void)
{
    test_read_back(good_path, &good);
}
static void test_truncation_good(void)
{
    test_truncation(&good);
}
static void test_bitflips_good(void)
{
    test_bitflips(&good);
}
static void test_bad_headers_good(void)
{
    test_bad_headers(&good);
}

static const struct check_case cases[] = {
    {"crc", test_crc},
    {"varint", test_varint},
    {"read_back", test_read_back_good},
    {"counts_lengths", test_counts_lengths},
    {"text_dup", test_text_dup},
    {"truncation", test_truncation_good},
    {"bitflips", test_bitflips_good},
    {"bad_headers", test_bad_headers_good},
    {"skim", test_skim},
};

int main(int argc, char **argv)
{
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    build_trace(&good, 1);
    snprintf(good_path, sizeof(good_path), "%s/good.rpt", tmpdir);
    write_file(good_path, good.p, good.len);
    int rc = check_run("test_trace", argc, argv, cases, sizeof cases / sizeof cases[0]);
    free(good.p);

    /* clean up the temporary directory */
    static const char *const files[] = {"good.rpt", "cut.rpt", "flip.rpt", "bad.rpt"};
    char path[256];
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        snprintf(path, sizeof(path), "%s/%s", tmpdir, files[i]);
        unlink(path);
    }
    rmdir(tmpdir);
    return rc;
}

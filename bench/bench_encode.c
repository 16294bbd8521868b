// SPDX-License-Identifier: MIT
/*
 * bench_encode.c - the writer's CPU per record: rp_enc_events (and the CRC
 * of its output, as the recorder's writer computes it) on raw buffers of
 * 16384 records shaped like bench/workload.c (a dispatcher calling 8 leaves
 * and fib(5), 24 calls per iteration, 20-60 ticks between events).
 *
 *   bench_encode [REPEATS]          prints ns per record of encode, CRC and
 *                                   the placing of four off-CPU intervals per
 *                                   buffer (rp_offq_take and rp_offq_plan) (median, min, max over
 * REPEATS passes of 64 buffers) and bytes per call bench_encode --dump FILE [N]    encodes N
 * (default 200) buffers of a random mix of every raw op and writes every DEFS and EVENTS payload to
 * FILE, so two builds of the encoder can be compared byte for byte (cmp)
 *
 * Built by CMake, not run by ctest (a timing).  Exits 1 on a bad argument
 * or when FILE cannot be written.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/bytes.h"
#include "trace/writer.h"

#define BUFRECS 16384
#define NBUF    64

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static struct rp_raw *recs;
static size_t nrecs, caprecs;
static uint64_t now = 1000000;

static void put(unsigned op, uint64_t pl)
{
    if (nrecs == caprecs) {
        caprecs = caprecs ? caprecs * 2 : 1 << 16;
        recs = realloc(recs, caprecs * sizeof(*recs));
        if (!recs)
            exit(1);
    }
    now += 20 + next_rand() % 41;
    recs[nrecs++] = (struct rp_raw){now, rp_raw_word(op, pl)};
}

#define FN(i) (0x401000u + 0x40u * (i))

static void fib(unsigned n)
{
    put(RP_RAW_FUNC_ENTER, FN(9));
    if (n >= 2) {
        fib(n - 1);
        fib(n - 2);
    }
    put(RP_RAW_FUNC_EXIT, FN(9));
}

/* the workload's records: main, then dispatch() iterations */
static void gen_workload(size_t n)
{
    put(RP_RAW_FUNC_ENTER, FN(11));
    while (nrecs < n) {
        put(RP_RAW_FUNC_ENTER, FN(10));
        for (unsigned i = 0; i < 8; i++) {
            put(RP_RAW_FUNC_ENTER, FN(i));
            put(RP_RAW_FUNC_EXIT, FN(i));
        }
        fib(5);
        put(RP_RAW_FUNC_EXIT, FN(10));
    }
}

static int describe(void *ctx, uint64_t site, struct rp_def *out)
{
    (void)ctx;
    if (site % 7 == 3)
        return -1; /* not a site */
    static const uint8_t kinds[] = {RP_KIND_POINT, RP_KIND_IO, RP_KIND_WAIT, RP_KIND_INSTANT,
                                    RP_KIND_COUNTER};
    out->kind = kinds[site % 5];
    out->cls = RP_CLASS_POINT;
    out->name = "site";
    out->file = "f.c";
    out->line = (uint32_t)site;
    out->budget = site % 2 ? 1000 : 0;
    return 0;
}

static uint64_t func_start(uint64_t addr)
{
    return addr % 5 == 0 ? 0 : addr & ~0x3full;
}

/* a random mix of every raw op, mostly calls */
static void gen_varied(size_t n)
{
    while (nrecs < n) {
        uint64_t r = next_rand();
        unsigned op = (unsigned)(r % 16);
        uint64_t k = (r >> 8) % 40;
        if (r % 3) /* mostly calls: enter/exit of a few functions */
            op = (r >> 20) % 2;
        switch (op) {
        case RP_RAW_FUNC_ENTER:
        case RP_RAW_FUNC_EXIT:
            put(op, FN(k % 20));
            break;
        case RP_RAW_SITE_BEGIN:
        case RP_RAW_SITE_END:
        case RP_RAW_INSTANT:
        case RP_RAW_COUNTER:
            put(op, 0x7000 + k % 12);
            if (op >= RP_RAW_INSTANT && r % 5)
                put(RP_RAW_DATA, r >> 40);
            break;
        case RP_RAW_LOCK_WAIT:
        case RP_RAW_LOCK_ACQ:
        case RP_RAW_LOCK_REL:
        case RP_RAW_LOCK_FAIL:
            put(op, 0x9000 + 8 * (k % 4) + ((r >> 30) % 4 == 0 ? RP_RAW_COND_BIT : 0));
            break;
        case RP_RAW_UNWIND:
            put(op, r % 4 ? FN(k % 20) + 5 : 0);
            break;
        case RP_RAW_OFFCPU:
        case RP_RAW_PAUSE:
        case RP_RAW_LOST:
        case RP_RAW_ARG:
            put(op, (r >> 32) % 100);
            break;
        default:
            put(op, r >> 40);
        }
    }
}

static double nsec(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int dump(const char *path, size_t nbuf)
{
    gen_varied(nbuf * BUFRECS);
    FILE *f = fopen(path, "wb");
    uint8_t *out = malloc(rp_enc_bound(BUFRECS + 4));
    struct rp_enc e;
    struct rp_enc_thread t[3] = {{0}};
    if (!f || !out || rp_enc_init(&e, describe, NULL) < 0) {
        fprintf(stderr, "bench_encode: cannot write %s\n", path);
        return 1;
    }
    e.func_start = func_start;
    for (size_t off = 0; off < nrecs;) {
        size_t n = 1 + next_rand() % BUFRECS;
        n = n > nrecs - off ? nrecs - off : n;
        unsigned th = (unsigned)(next_rand() % 3);
        size_t len = rp_enc_events(&e, &t[th], th + 1, recs + off, n, out), dlen;
        const uint8_t *defs = rp_enc_take_defs(&e, &dlen);
        fwrite(defs, 1, dlen, f);
        fwrite(out, 1, len, f);
        fprintf(f, "|%llu %llu %llu %llu %llu|", (unsigned long long)t[th].skipped,
                (unsigned long long)t[th].lost, (unsigned long long)t[th].seq,
                (unsigned long long)t[th].offcpu, (unsigned long long)t[th].offcpu_skipped);
        off += n;
    }
    for (int i = 0; i < 3; i++)
        rp_enc_thread_free(&t[i]);
    rp_enc_free(&e);
    free(out);
    return fclose(f) ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc > 2 && !strcmp(argv[1], "--dump"))
        return dump(argv[2], argc > 3 ? strtoul(argv[3], NULL, 10) : 200);
    int reps = argc > 1 ? atoi(argv[1]) : 15;
    if (reps < 1) {
        fprintf(stderr, "bench_encode: bad repeat count '%s'\n", argv[1]);
        return 1;
    }
    gen_workload(NBUF * BUFRECS);
    uint8_t *out = malloc(rp_enc_bound(BUFRECS));
    double *te = calloc(reps, sizeof(double)), *tc = calloc(reps, sizeof(double));
    double *tm = calloc(reps, sizeof(double));
    if (!out || !te || !tc || !tm)
        return 1;
    size_t bytes = 0;
    uint32_t sink = 0;
    for (int r = 0; r < reps; r++) {
        /* a fresh encoder per pass, as a fresh recording: the first buffer
         * defines the ids, the rest find them */
        struct rp_enc e;
        struct rp_enc_thread t = {0};
        if (rp_enc_init(&e, describe, NULL) < 0)
            return 1;
        double enc = 0, crc = 0, mrg = 0;
        struct rp_offq q = {0};
        bytes = 0;
        for (size_t b = 0; b < NBUF; b++) {
            /* four context switches in each buffer, as the writer places
             * them (measured apart, encoded without them) */
            const struct rp_raw *rb = recs + b * BUFRECS;
            for (int s = 1; s <= 4; s++) {
                rp_offq_switch(&q, rb[s * 3000].ticks + 1, 1);
                rp_offq_switch(&q, rb[s * 3000].ticks + 5, 0);
            }
            size_t nins;
            double t_m = nsec();
            rp_offq_take(&q, rb, BUFRECS);
            const struct rp_enc_ins *ins = rp_offq_plan(&q, rb, BUFRECS, &nins);
            mrg += nsec() - t_m;
            sink += nins == 4 && ins[3].pos == 12001;
            double t0 = nsec();
            size_t len = rp_enc_events(&e, &t, 1, recs + b * BUFRECS, BUFRECS, out), dlen;
            rp_enc_take_defs(&e, &dlen);
            double t1 = nsec();
            sink += rp_crc32(0, out, len);
            double t2 = nsec();
            enc += t1 - t0;
            crc += t2 - t1;
            bytes += len;
        }
        tm[r] = mrg / (NBUF * BUFRECS);
        rp_offq_free(&q);
        te[r] = enc / (NBUF * BUFRECS);
        tc[r] = crc / (NBUF * BUFRECS);
        rp_enc_thread_free(&t);
        rp_enc_free(&e);
    }
    qsort(te, reps, sizeof(double), cmpd);
    qsort(tc, reps, sizeof(double), cmpd);
    qsort(tm, reps, sizeof(double), cmpd);
    printf("encode ns/record %.3f (min %.3f max %.3f)  crc ns/record %.3f (min %.3f max %.3f)  "
           "plan ns/record %.3f (min %.3f max %.3f)  bytes/call %.4f  [%u]\n",
           te[reps / 2], te[0], te[reps - 1], tc[reps / 2], tc[0], tc[reps - 1], tm[reps / 2],
           tm[0], tm[reps - 1], 2.0 * bytes / (NBUF * BUFRECS), sink & 1);
    free(te);
    free(tc);
    free(tm);
    free(out);
    free(recs);
    return 0;
}

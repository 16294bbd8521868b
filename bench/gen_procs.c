// SPDX-License-Identifier: MIT
/*
 * gen_procs.c - writes the trace set of a synthetic run of many processes,
 * for measuring how the readers merge N files (docs/multi-process.md,
 * "Many processes").
 *
 *   gen_procs DIR NPROC CALLS [FUNCS]
 *
 * writes DIR/rp.data and DIR/rp.data.PID for NPROC processes (pids 1000,
 * 1001, ...; one run id; INFO rank = its index, host "gen"), each one
 * thread making CALLS calls of FUNCS named points "fn_K" (default 200),
 * round robin, each nested in "outer" every 10 calls: 2.2 * CALLS events a
 * process.  Ticks are nanoseconds.  Exits 1 with a message on any error.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "trace/writer.h"

static unsigned nfuncs = 200;
static char **fname;

static int describe(void *ctx, uint64_t site, struct rp_def *d)
{
    (void)ctx;
    if (site == 0 || site > nfuncs + 1)
        return -1;
    *d = (struct rp_def){.kind = RP_KIND_POINT, .cls = RP_CLASS_POINT, .name = fname[site - 1]};
    return 0;
}

static int chunk(FILE *f, uint32_t type, const void *p, size_t len)
{
    uint8_t h[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(h, type, p, (uint32_t)len);
    return fwrite(h, 1, sizeof(h), f) == sizeof(h) && fwrite(p, 1, len, f) == len ? 0 : -1;
}

static int clock_chunk(FILE *f, uint64_t ticks, uint64_t real)
{
    uint8_t c[24];
    rp_put64(c, ticks);
    rp_put64(c + 8, ticks);
    rp_put64(c + 16, real);
    return chunk(f, RP_CH_CLOCK, c, sizeof(c));
}

#define BATCH 65536

static int one(const char *path, unsigned idx, unsigned long calls, uint64_t real0)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    uint8_t hdr[RP_FILE_HDR_SIZE], info[512];
    size_t il = 0;
    char v[32];
    rp_file_header(hdr);
    fwrite(hdr, 1, sizeof(hdr), f);
    rp_info_put(info, sizeof(info), &il, "program", "gen_procs", 9);
    snprintf(v, sizeof(v), "%u", 1000 + idx);
    rp_info_put(info, sizeof(info), &il, "pid", v, strlen(v));
    rp_info_put(info, sizeof(info), &il, "ppid", "999", 3);
    rp_info_put(info, sizeof(info), &il, "run", "0123456789abcdef", 16);
    rp_info_put(info, sizeof(info), &il, "host", "gen", 3);
    snprintf(v, sizeof(v), "%u", idx);
    rp_info_put(info, sizeof(info), &il, "rank", v, strlen(v));
    rp_info_put(info, sizeof(info), &il, "clock", "monotonic", 9);
    rp_info_put(info, sizeof(info), &il, "freq_hz", "1000000000", 10);
    chunk(f, RP_CH_INFO, info, il);
    clock_chunk(f, 1000, real0);
    uint8_t th[16] = {0};
    rp_put32(th, 1);
    memcpy(th + 8, "main", 4);
    chunk(f, RP_CH_THREAD, th, 12);

    struct rp_enc e;
    struct rp_enc_thread t = {0};
    if (rp_enc_init(&e, describe, NULL) < 0)
        return -1;
    struct rp_raw *r = malloc(BATCH * sizeof(*r));
    uint8_t *out = malloc(rp_enc_bound(BATCH));
    if (!r || !out)
        return -1;
    uint64_t ts = 2000;
    size_t n = 0;
    uint64_t outer = nfuncs + 1;
    for (unsigned long c = 0; c < calls; c++) {
        uint64_t site = 1 + (c + idx) % nfuncs;
        if (c % 10 == 0)
            r[n++] = (struct rp_raw){ts++, (uint64_t)RP_RAW_SITE_BEGIN << RP_RAW_SHIFT | outer};
        r[n++] = (struct rp_raw){ts, (uint64_t)RP_RAW_SITE_BEGIN << RP_RAW_SHIFT | site};
        ts += 10 + site % 7;
        r[n++] = (struct rp_raw){ts++, (uint64_t)RP_RAW_SITE_END << RP_RAW_SHIFT | site};
        if (c % 10 == 9 || c + 1 == calls)
            r[n++] = (struct rp_raw){ts++, (uint64_t)RP_RAW_SITE_END << RP_RAW_SHIFT | outer};
        if (n + 8 > BATCH || c + 1 == calls) {
            size_t len = rp_enc_events(&e, &t, 1, r, n, out), dl;
            const uint8_t *defs = rp_enc_take_defs(&e, &dl);
            if (dl)
                chunk(f, RP_CH_DEFS, defs, dl);
            chunk(f, RP_CH_EVENTS, out, len);
            n = 0;
        }
    }
    clock_chunk(f, ts, real0 + ts);
    uint8_t end[32] = {0};
    rp_put64(end, ts);
    rp_put32(end + 28, RP_END_EXIT);
    chunk(f, RP_CH_END, end, sizeof(end));
    rp_enc_thread_free(&t);
    rp_enc_free(&e);
    free(r);
    free(out);
    return fclose(f);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: gen_procs DIR NPROC CALLS [FUNCS]\n");
        return 2;
    }
    unsigned np = (unsigned)atoi(argv[2]);
    unsigned long calls = strtoul(argv[3], NULL, 10);
    if (argc > 4)
        nfuncs = (unsigned)atoi(argv[4]);
    if (!np || !nfuncs || !(fname = calloc(nfuncs + 1, sizeof(*fname))))
        return 2;
    for (unsigned i = 0; i < nfuncs; i++)
        if (asprintf(&fname[i], "fn_%u", i) < 0)
            return 1;
    fname[nfuncs] = "outer";
    uint64_t real0 = 1700000000000000000ull;
    for (unsigned i = 0; i < np; i++) {
        char path[4096];
        if (i == 0)
            snprintf(path, sizeof(path), "%s/rp.data", argv[1]);
        else
            snprintf(path, sizeof(path), "%s/rp.data.%u", argv[1], 1000 + i);
        if (one(path, i, calls, real0) != 0) {
            fprintf(stderr, "gen_procs: %s: cannot write\n", path);
            return 1;
        }
    }
    return 0;
}

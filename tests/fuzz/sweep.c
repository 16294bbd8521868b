// SPDX-License-Identifier: MIT
/*
 * sweep.c - the corruption sweep (docs/robustness.md): every truncation and
 * many byte flips of a real trace, each read strictly and with --force,
 * through the analyzer's own functions (in process, so that thousands of
 * damaged files take seconds; tests/e2e_corrupt.sh runs the real command on
 * a sample of the same damage).
 *
 * usage: corrupt_sweep TRACE [FLIP_STRIDE [CUT_STRIDE]]   (default 1: every byte)
 *
 * The rules, for a damaged copy D of an intact trace T:
 *
 *   strict read  fails with an error that names an offset ("offset N"), or
 *                succeeds; a success without a warning must report exactly
 *                what T reports (its JSON report is identical), since the
 *                damage was in bytes no reader uses (reserved fields);
 *   --force      succeeds (a file with a sound header), or fails naming an
 *                offset (damage in the file header); a success carries a
 *                warning unless its report is identical to T's;
 *   both         never crash, never hang (ctest's timeout), never leak
 *                (under ASan), and no function gets more calls ended by
 *                their own exit (calls - cut) than T has calls when the file
 *                was only cut short (a prefix ends the spans still open at
 *                its end as cut; T may have dropped them at a LOST).
 *
 * Prints a summary line; exits 1 with a FAIL line at the first violation.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyze/flags.h"
#include "analyze/rank.h"
#include "analyze/replay.h"
#include "report/report.h"

struct result {
    int rc;
    char err[768];
    char *json; /* the JSON report (rank, flags), malloc'd; NULL on error */
    int warned; /* p.warn was not empty */
    uint32_t n;
    uint64_t *calls; /* per node id (ids are the same for any prefix of T): calls
                        ended by their own exit (calls - cut) */
};

static const char *tmp_path;
static int fd = -1;

static void fail(const char *what, size_t off, const struct result *r)
{
    fprintf(stderr, "corrupt_sweep: FAIL: %s at byte %zu: rc %d, %s\n", what, off, r->rc,
            r->err[0] ? r->err : "(no error message)");
    exit(1);
}

/* Replaces the scratch file's contents with len bytes of data. */
static void put(const uint8_t *data, size_t len)
{
    if (ftruncate(fd, 0) < 0 || pwrite(fd, data, len, 0) != (ssize_t)len) {
        perror("corrupt_sweep: scratch file");
        exit(2);
    }
}

/* Reads the scratch file as `report --format json` would.  Exits 2 only
 * when the sweep itself cannot work (out of memory). */
static void analyse(int force, struct result *r)
{
    struct rp_profile p = {0};
    struct rp_replay_opts ro = {.force = force};
    memset(r, 0, sizeof(*r));
    r->rc = rp_replay_file(tmp_path, &ro, &p, NULL, NULL, r->err, sizeof(r->err));
    if (r->rc == 0) {
        struct rp_rank_opts rk = {.alpha = 0.01, .tol = 1e-12, .max_iter = 10000};
        struct rp_flag_opts fl;
        rp_flag_opts_default(&fl);
        if (rp_rank_profile(&p, &rk) < 0 || rp_flags_apply(&p, &fl) < 0)
            exit(2);
        struct rp_report_opts o = {.sort = RP_SORT_RANK, .ranked = 1, .flagged = 1, .flag = &fl};
        size_t len;
        FILE *m = open_memstream(&r->json, &len);
        if (!m || rp_report_json(m, &p, &o) < 0 || fclose(m) != 0)
            exit(2);
        r->warned = p.warn[0] != 0;
        r->n = p.n_nodes;
        if (!(r->calls = calloc(p.n_nodes + 1, sizeof(*r->calls))))
            exit(2);
        for (uint32_t i = 0; i < p.n_nodes; i++)
            r->calls[i] = p.nodes[i].calls - rp_node_cut(&p.nodes[i]);
    }
    rp_profile_free(&p);
}

static void result_free(struct result *r)
{
    free(r->json);
    free(r->calls);
}

/* The JSON reports without their "warnings" line: a truncated trace may
 * say so and still report the same numbers. */
static int same_report(const struct result *a, const struct result *b)
{
    return a->json && b->json && !strcmp(a->json, b->json);
}

/* Checks one damaged copy (already in the scratch file). */
static void check(const struct result *orig, size_t off, int truncated, unsigned *ok, unsigned *err,
                  unsigned *warned)
{
    for (int force = 0; force < 2; force++) {
        struct result r;
        analyse(force, &r);
        if (r.rc < 0) {
            if (!strstr(r.err, "offset"))
                fail("an error that names no offset", off, &r);
            if (force && off >= 32 && truncated)
                fail("--force failed on a trace cut after its header", off, &r);
            (*err)++;
        } else if (!r.warned) {
            if (!same_report(orig, &r))
                fail(force ? "--force: different numbers without a warning"
                           : "different numbers without a warning",
                     off, &r);
            (*ok)++;
        } else {
            (*warned)++;
        }
        if (r.rc == 0 && truncated)
            for (uint32_t i = 0; i < r.n; i++)
                if (i >= orig->n || r.calls[i] > orig->calls[i])
                    fail("a prefix with more calls than the whole trace", off, &r);
        result_free(&r);
    }
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: corrupt_sweep TRACE [FLIP_STRIDE [CUT_STRIDE]]\n");
        return 2;
    }
    size_t stride = argc > 2 ? strtoul(argv[2], NULL, 10) : 1;
    size_t cut_stride = argc > 3 ? strtoul(argv[3], NULL, 10) : 1;
    FILE *f = fopen(argv[1], "rb");
    uint8_t *t = malloc(1 << 24);
    size_t size = f && t ? fread(t, 1, 1 << 24, f) : 0;
    if (f)
        fclose(f);
    if (!size || size == 1 << 24 || !stride || !cut_stride) {
        fprintf(stderr, "corrupt_sweep: cannot read %s (or larger than 16 MiB)\n", argv[1]);
        return 2;
    }
    static char path[64];
    fd = memfd_create("rp_sweep", MFD_CLOEXEC);
    if (fd < 0)
        return 2;
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    tmp_path = path;

    struct result orig;
    put(t, size);
    analyse(0, &orig);
    if (orig.rc < 0 || orig.warned) {
        fprintf(stderr, "corrupt_sweep: the intact trace does not read cleanly: %s\n",
                orig.err[0] ? orig.err : "it has warnings (no END?)");
        return 1;
    }
    unsigned ok = 0, err = 0, warned = 0;
    size_t ncut = 0;
    for (size_t k = 0; k < size; k += cut_stride, ncut++) { /* every truncation */
        put(t, k);
        check(&orig, k, 1, &ok, &err, &warned);
    }
    unsigned tok = ok, terr = err, twarn = warned;
    uint8_t *d = malloc(size);
    if (!d)
        return 2;
    for (size_t k = 0; k < size; k += stride) { /* flips: one bit, then a whole byte */
        static const uint8_t masks[] = {0x01, 0x80, 0xff};
        for (unsigned m = 0; m < sizeof(masks); m++) {
            memcpy(d, t, size);
            d[k] ^= masks[m];
            put(d, size);
            check(&orig, k, 0, &ok, &err, &warned);
        }
    }
    printf("corrupt_sweep: %zu bytes; %zu truncations: %u errors naming the offset, %u "
           "warned, %u identical; flips every %zu bytes: %u errors, %u warned, %u identical "
           "(strict and --force each)\n",
           size, ncut, terr, twarn, tok, stride, err - terr, warned - twarn, ok - tok);
    free(d);
    free(t);
    result_free(&orig);
    close(fd);
    return 0;
}

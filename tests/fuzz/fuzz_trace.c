// SPDX-License-Identifier: MIT
/*
 * fuzz_trace.c - the libFuzzer target for everything that reads a trace
 * file: the chunk reader with its event decoder, and the whole report
 * pipeline (replay, rank, flags, table and JSON output).
 *
 * A trace is untrusted input (it may come from another machine), so for any
 * bytes at all these must return an error or a result, never crash, read
 * out of bounds, leak, or allocate without bound.  The input is handed over
 * as a file (a memfd, named /proc/self/fd/N) because that is what the
 * analyzer reads.  Each input is read twice: strictly, and with --force
 * (skip damaged chunks), which takes other paths.
 *
 * Checksums would stop almost every mutation at the first chunk, so each
 * input is also tried a second time with its checksums made right (every
 * complete chunk gets the CRCs the writer would give it): that copy reaches
 * the payload parsers (INFO, DEFS, EVENTS, ...) with arbitrary contents,
 * which is what a writer bug, or a crafted file, would present.
 *
 * Built two ways (tests/fuzz/CMakeLists.txt): with clang and
 * -fsanitize=fuzzer,address,undefined when RP_FUZZ=ON (the fuzzer), and in
 * every build with corpus_main.c as the driver, which replays the committed
 * corpus (tests/fuzz/corpus) as a regression test under ctest.
 *
 * Symbol lookup is not exercised here: it reads the binaries that a MAPS
 * chunk names, which would make a run depend on the files of the machine.
 * tests/e2e_corrupt.sh covers it through the real command.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "analyze/flags.h"
#include "common/bytes.h"
#include "analyze/rank.h"
#include "analyze/replay.h"
#include "report/report.h"
#include "trace/reader.h"
#include "trace/writer.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Walks every chunk and decodes every event stream, as `dump` does. */
static void read_chunks(const char *path, int force)
{
    struct rp_reader r;
    struct rp_chunk c;
    if (rp_reader_open(&r, path) < 0)
        return;
    r.force = force;
    while (rp_reader_next(&r, &c) > 0) {
        struct rp_evdec d;
        struct rp_event ev;
        if (c.type != RP_CH_EVENTS || rp_evdec_init(&d, c.data, c.len) < 0)
            continue;
        while (rp_evdec_next(&d, &ev) > 0)
            ;
    }
    rp_reader_close(&r);
}

/* Replays, ranks, flags and prints the trace, as `report` does. */
static void report(const char *path, int force, FILE *sink)
{
    struct rp_profile p = {0};
    struct rp_replay_opts ro = {.force = force};
    char err[768];
    if (rp_replay_file(path, &ro, &p, NULL, NULL, err, sizeof(err)) == 0) {
        struct rp_rank_opts rk = {.alpha = 0.01, .tol = 1e-12, .max_iter = 200};
        struct rp_flag_opts fl;
        rp_flag_opts_default(&fl);
        int ranked = rp_rank_profile(&p, &rk) == 0 && rp_flags_apply(&p, &fl) == 0;
        struct rp_report_opts o = {
            .sort = RP_SORT_RANK, .ranked = ranked, .flagged = ranked, .flag = &fl};
        rp_report_table(sink, &p, &o);
        rp_report_json(sink, &p, &o);
    }
    rp_profile_free(&p);
}

/* Gives every complete chunk after a 32-byte header its right CRCs. */
static void fix_crcs(uint8_t *b, size_t size)
{
    size_t off = RP_FILE_HDR_SIZE;
    while (off + RP_CHUNK_HDR_SIZE <= size) {
        uint32_t len = rp_get32(b + off + 4);
        if (len > size - off - RP_CHUNK_HDR_SIZE)
            break;
        rp_chunk_header(b + off, rp_get32(b + off), b + off + RP_CHUNK_HDR_SIZE, len);
        off += RP_CHUNK_HDR_SIZE + (size_t)len;
    }
}

/* Runs every reader of data, held in a file.  Aborts only if the harness
 * itself cannot work (no memfd). */
static void run(const uint8_t *data, size_t size)
{
    static FILE *sink;
    char path[64];
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    int fd = memfd_create("rp_fuzz", MFD_CLOEXEC);
    if (fd < 0)
        abort();
    for (size_t o = 0; o < size;) {
        ssize_t w = write(fd, data + o, size - o);
        if (w <= 0)
            abort();
        o += (size_t)w;
    }
    snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    for (int force = 0; force < 2; force++) {
        read_chunks(path, force);
        report(path, force, sink);
    }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run(data, size);
    uint8_t *fixed = malloc(size ? size : 1);
    if (!fixed)
        abort();
    memcpy(fixed, data, size);
    fix_crcs(fixed, size);
    if (memcmp(fixed, data, size) != 0)
        run(fixed, size);
    free(fixed);
    return 0;
}

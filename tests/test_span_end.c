// SPDX-License-Identifier: MIT
/*
 * test_span_end.c - one span-end rule (src/common/span.h) for direct mode
 * and the replay: the same stream of raw events is fed to direct mode's
 * engine (rp_direct_feed) and encoded by the trace writer into a file that
 * the analyzer replays, and every statistic of every id must be the same
 * in both: calls, inclusive, exclusive, minimum, maximum and cut per id,
 * and per thread the unmatched exits, the unwound and the cut spans.
 *
 *   rule      exits matched, recursion, an exit of a span open deeper
 *             (unwound), an exit with nothing to match, a longjmp's landing
 *             (RP_RAW_UNWIND to a function's address), a lock's wait and
 *             hold, and the thread's end with spans open (cut); the
 *             numbers are also checked against the values worked out by
 *             hand, so that the two cannot agree on a wrong answer
 *   random    random streams with the same shapes (seeded): both agree
 *
 * Durations are at least one tick: the replay's resolution is one tick,
 * and a span below it is no minimum (span.h, rp_span_min), while direct
 * mode has no resolution.
 *
 * Links the recorder (direct mode) and the analyzer; the recorder's
 * constructor starts trace mode with the test's environment, so main()
 * stops it first and removes its file.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/profile.h"
#include "analyze/replay.h"
#include "check.h"
#include "common/bytes.h"
#include "record/direct.h"
#include "record/rt.h"
#include "trace/format.h"
#include "trace/writer.h"

static char tmpdir[] = "/tmp/rp_test_span_end.XXXXXX";

enum { FA = 0x401000, FB = 0x402000, FC = 0x403000, FD = 0x404000, FN = 4 };
static const uint64_t LK = 0x7f0000009000ull;

/* The test's functions are 0x1000 bytes long, from 0x400000 on: the start
 * of the one holding pc (the writer's and direct mode's func_start). */
static uint64_t start_of(uint64_t pc)
{
    return pc >= 0x400000 && pc < 0x800000 ? pc & ~0xfffull : 0;
}

struct ev {
    uint64_t t;
    unsigned op;
    uint64_t pl;
};

/* What an id's statistics are, in either mode. */
struct stat {
    uint64_t calls, incl, excl, min, max, cut;
    int seen;
};
struct thr {
    uint64_t unmatched, unwound, cut;
};

/* ---- direct mode ---------------------------------------------------------- */

static uint32_t next_tid = 100;

static void run_direct(const struct ev *e, size_t n, struct stat *st, size_t nst,
                       const uint8_t *kinds, const uint64_t *keys, struct thr *th)
{
    struct rp_dtotals t0, t1;
    CHECK_EQ(rp_direct_totals(&t0), 0);
    struct rp_dview v0[8];
    for (size_t i = 0; i < nst; i++)
        if (rp_direct_lookup(kinds[i], keys[i], &v0[i]) != 0)
            memset(&v0[i], 0, sizeof(v0[i]));
    struct rp_dthread *d = rp_direct_thread_new(next_tid++);
    CHECK(d != NULL);
    if (!d)
        return;
    for (size_t i = 0; i < n; i++)
        rp_direct_feed(d, e[i].t, rp_raw_word(e[i].op, e[i].pl));
    rp_direct_thread_end(d);
    /* the process table holds every earlier case's too: take differences */
    CHECK_EQ(rp_direct_totals(&t1), 0);
    th->unmatched = t1.unmatched - t0.unmatched;
    th->unwound = t1.unwound - t0.unwound;
    th->cut = t1.cut - t0.cut;
    for (size_t i = 0; i < nst; i++) {
        struct rp_dview v;
        memset(&st[i], 0, sizeof(st[i]));
        if (rp_direct_lookup(kinds[i], keys[i], &v) != 0)
            continue;
        st[i].seen = v.calls > v0[i].calls;
        st[i].calls = v.calls - v0[i].calls;
        st[i].incl = v.incl - v0[i].incl;
        st[i].excl = v.excl - v0[i].excl;
        st[i].cut = v.cut - v0[i].cut;
        /* min and max of this stream only: each case uses its own ids */
        st[i].min = v.min;
        st[i].max = v.max;
    }
}

/* ---- the trace writer and the replay --------------------------------------- */

static void put(uint8_t **f, size_t *len, size_t *cap, const void *d, size_t n)
{
    if (*len + n > *cap) {
        *cap = (*len + n) * 2 + 256;
        *f = realloc(*f, *cap);
        if (!*f)
            abort();
    }
    memcpy(*f + *len, d, n);
    *len += n;
}

static void put_chunk(uint8_t **f, size_t *len, size_t *cap, uint32_t type, const void *p, size_t n)
{
    uint8_t h[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(h, type, p, (uint32_t)n);
    put(f, len, cap, h, sizeof(h));
    put(f, len, cap, p, n);
}

static void run_replay(const struct ev *e, size_t n, struct stat *st, size_t nst,
                       const uint8_t *kinds, const uint64_t *keys, struct thr *th)
{
    uint8_t *f = NULL, hdr[RP_FILE_HDR_SIZE], info[128], thc[12];
    size_t len = 0, cap = 0, il = 0;
    rp_file_header(hdr);
    put(&f, &len, &cap, hdr, sizeof(hdr));
    CHECK_EQ(rp_info_put(info, sizeof(info), &il, "freq_hz", "1000000000", 10), 0);
    put_chunk(&f, &len, &cap, RP_CH_INFO, info, il);
    rp_put32(thc, 7);
    rp_put32(thc + 4, 0);
    memcpy(thc + 8, "main", 4);
    put_chunk(&f, &len, &cap, RP_CH_THREAD, thc, sizeof(thc));

    struct rp_enc enc;
    struct rp_enc_thread et = {0};
    CHECK_EQ(rp_enc_init(&enc, NULL, NULL), 0);
    enc.func_start = start_of;
    struct rp_raw *raw = calloc(n, sizeof(*raw));
    uint8_t *out = malloc(rp_enc_bound(n));
    if (!raw || !out)
        abort();
    for (size_t i = 0; i < n; i++) {
        raw[i].ticks = e[i].t;
        raw[i].word = rp_raw_word(e[i].op, e[i].pl);
    }
    size_t el = rp_enc_events(&enc, &et, 7, raw, n, out);
    size_t dl;
    const uint8_t *defs = rp_enc_take_defs(&enc, &dl);
    if (dl)
        put_chunk(&f, &len, &cap, RP_CH_DEFS, defs, dl);
    put_chunk(&f, &len, &cap, RP_CH_EVENTS, out, el);
    free(out);
    free(raw);
    rp_enc_thread_free(&et);
    rp_enc_free(&enc);

    char path[256], err[256] = "";
    snprintf(path, sizeof(path), "%s/stream.rpt", tmpdir);
    FILE *fp = fopen(path, "wb");
    CHECK(fp && fwrite(f, 1, len, fp) == len && fclose(fp) == 0);
    free(f);
    struct rp_profile p;
    struct rp_replay_opts o = {0};
    memset(&p, 0, sizeof(p));
    int rc = rp_replay_file(path, &o, &p, NULL, NULL, err, sizeof(err));
    unlink(path);
    CHECK_EQ(rc, 0);
    if (rc) {
        fprintf(stderr, "replay: %s\n", err);
        return;
    }
    memset(th, 0, sizeof(*th));
    for (uint32_t i = 0; i < p.n_threads; i++) {
        th->unmatched += p.threads[i].unmatched_exits;
        th->unwound += p.threads[i].unwound;
        th->cut += p.threads[i].cut;
    }
    for (size_t k = 0; k < nst; k++) {
        memset(&st[k], 0, sizeof(st[k]));
        for (uint32_t i = 1; i < p.n_nodes; i++) {
            const struct rp_node *x = &p.nodes[i];
            if (x->kind != kinds[k] || x->key != keys[k] || !x->calls)
                continue;
            st[k] = (struct stat){x->calls,       x->incl,        x->excl, rp_node_min(x),
                                  rp_node_max(x), rp_node_cut(x), 1};
        }
    }
    rp_profile_free(&p);
}

/* Feeds e[0..n) to both and checks that every statistic agrees. */
static void both(const char *what, const struct ev *e, size_t n, const uint8_t *kinds,
                 const uint64_t *keys, size_t nst, struct stat *dst, struct thr *dth)
{
    struct stat rst[8];
    struct thr rth;
    run_direct(e, n, dst, nst, kinds, keys, dth);
    run_replay(e, n, rst, nst, kinds, keys, &rth);
    for (size_t i = 0; i < nst; i++) {
        if (dst[i].seen != rst[i].seen || dst[i].calls != rst[i].calls ||
            dst[i].incl != rst[i].incl || dst[i].excl != rst[i].excl ||
            (dst[i].calls && (dst[i].min != rst[i].min || dst[i].max != rst[i].max)) ||
            dst[i].cut != rst[i].cut) {
            fprintf(stderr,
                    "%s: id %zu (kind %u key 0x%llx): direct calls %llu incl %llu excl %llu min "
                    "%llu max %llu cut %llu; replay calls %llu incl %llu excl %llu min %llu max "
                    "%llu cut %llu\n",
                    what, i, kinds[i], (unsigned long long)keys[i],
                    (unsigned long long)dst[i].calls, (unsigned long long)dst[i].incl,
                    (unsigned long long)dst[i].excl, (unsigned long long)dst[i].min,
                    (unsigned long long)dst[i].max, (unsigned long long)dst[i].cut,
                    (unsigned long long)rst[i].calls, (unsigned long long)rst[i].incl,
                    (unsigned long long)rst[i].excl, (unsigned long long)rst[i].min,
                    (unsigned long long)rst[i].max, (unsigned long long)rst[i].cut);
            failures++;
        }
    }
    CHECK_EQ(dth->unmatched, rth.unmatched);
    CHECK_EQ(dth->unwound, rth.unwound);
    CHECK_EQ(dth->cut, rth.cut);
}

#define E(t, op, pl)                                                                               \
    {                                                                                              \
        (t), RP_RAW_##op, (pl)                                                                     \
    }

static void test_rule(void)
{
    /* each case its own addresses, so that min and max are of its stream */
    const uint64_t A = FA, B = FB, C = FC, D = FD;
    static const struct ev s[] = {
        E(1000, FUNC_ENTER, FA),
        E(1010, FUNC_ENTER, FB),
        E(1015, FUNC_ENTER, FC),
        E(1020, FUNC_EXIT, FC), /* C 5 */
        E(1030, FUNC_ENTER, FC),
        E(1031, FUNC_EXIT, FC), /* C 1 */
        E(1040, FUNC_EXIT, FB), /* B 30, own 24 */
        E(1050, FUNC_ENTER, FB),
        E(1060, FUNC_ENTER, FC),
        E(1070, FUNC_ENTER, FD),
        E(1080, FUNC_EXIT, FB), /* unwinds D 10 and C 20; B 30, own 10 */
        E(1100, FUNC_ENTER, FA),
        E(1110, FUNC_ENTER, FA),
        E(1120, FUNC_EXIT, FA), /* inner A 10 */
        E(1125, FUNC_EXIT, FA), /* A 25, own 15: not outermost (A of 1000 open) */
        E(1130, FUNC_EXIT, FD), /* nothing to match */
        E(1140, FUNC_ENTER, FB),
        E(1150, FUNC_ENTER, FC),
        E(1160, FUNC_ENTER, FD),
        E(1170, UNWIND, FB + 0x10), /* a longjmp into B: D 10, C 20 unwound */
        E(1180, FUNC_ENTER, FC),
        E(1190, FUNC_EXIT, FC), /* C 10, called from B */
        E(1200, FUNC_EXIT, FB), /* B 60, own 60 - 20 - 10 = 30 */
        E(1210, FUNC_ENTER, FC),
        E(1220, FUNC_ENTER, FD),
        E(1230, LOCK_WAIT, 0x7f0000009000ull),
        E(1240, LOCK_ACQ, 0x7f0000009000ull), /* wait 10; the hold begins */
        E(1250, LOCK_REL, 0x7f0000009000ull), /* hold 10 */
        E(1300, UNWIND, 0),                   /* the thread ends: D 80, C 90, A 300 cut */
    };
    const uint8_t kinds[] = {RP_KIND_FUNC, RP_KIND_FUNC,      RP_KIND_FUNC,
                             RP_KIND_FUNC, RP_KIND_LOCK_WAIT, RP_KIND_LOCK_HOLD};
    const uint64_t keys[] = {A, B, C, D, LK, LK};
    struct stat st[6];
    struct thr th;
    both("rule", s, sizeof(s) / sizeof(s[0]), kinds, keys, 6, st, &th);

    /* and the numbers worked out by hand (direct mode's; the replay's agree) */
    CHECK_EQ(th.unmatched, 1);
    CHECK_EQ(th.unwound, 4);
    CHECK_EQ(th.cut, 3);
    /* A: 10, 25 and the cut 300; outermost only the 300 */
    CHECK_EQ(st[0].calls, 3);
    CHECK_EQ(st[0].incl, 300);
    CHECK_EQ(st[0].min, 10);
    CHECK_EQ(st[0].max, 300);
    CHECK_EQ(st[0].cut, 1);
    /* B: 30 (1010), 30 (1050, callees unwound with it), 60 (1140) */
    CHECK_EQ(st[1].calls, 3);
    CHECK_EQ(st[1].incl, 120);
    CHECK_EQ(st[1].excl, 24 + 10 + 30);
    CHECK_EQ(st[1].cut, 0);
    /* C: 5, 1, 20 (unwound), 20 (unwound), 10, 90 (cut) */
    CHECK_EQ(st[2].calls, 6);
    CHECK_EQ(st[2].incl, 146);
    CHECK_EQ(st[2].min, 1);
    CHECK_EQ(st[2].max, 90);
    CHECK_EQ(st[2].cut, 3);
    /* D: 10 (unwound), 10 (unwound), 80 (cut, the wait of 10 inside) */
    CHECK_EQ(st[3].calls, 3);
    CHECK_EQ(st[3].incl, 100);
    CHECK_EQ(st[3].excl, 90);
    CHECK_EQ(st[3].cut, 3);
    CHECK_EQ(st[4].calls, 1); /* the wait */
    CHECK_EQ(st[4].incl, 10);
    CHECK_EQ(st[5].calls, 1); /* the hold: an interval, no exclusive time */
    CHECK_EQ(st[5].incl, 10);
    CHECK_EQ(st[5].excl, 0);
}

/* Random streams over four functions of their own (an address range per
 * round): enters, exits of the innermost, of a deeper one, of one not
 * open, landings, and the thread's end. */
static void test_random(void)
{
    unsigned long long seed = 0x5eed1234abcdull;
    uint64_t unmatched = 0, unwound = 0, cut = 0;
    for (int round = 0; round < 40; round++) {
        struct ev s[400];
        uint64_t base = 0x500000 + (uint64_t)round * 0x10000, t = 1000;
        uint64_t open[64];
        size_t n = 0, depth = 0;
        while (n < 390) {
            unsigned r = (unsigned)(check_xorshift(&seed) % 100);
            t += 1 + check_xorshift(&seed) % 50;
            uint64_t fn = base + (check_xorshift(&seed) % FN) * 0x1000;
            if ((r < 45 || !depth) && depth < 60) {
                s[n++] = (struct ev){t, RP_RAW_FUNC_ENTER, fn};
                open[depth++] = fn;
            } else if (r < 85) {
                s[n++] = (struct ev){t, RP_RAW_FUNC_EXIT, open[--depth]};
            } else if (r < 92) { /* an exit of a deeper span, or of none open */
                size_t at = (size_t)(check_xorshift(&seed) % (depth + 1));
                s[n++] = (struct ev){t, RP_RAW_FUNC_EXIT, at < depth ? open[at] : fn};
                size_t k = depth;
                while (k > 0 && open[k - 1] != s[n - 1].pl)
                    k--;
                if (k)
                    depth = k - 1;
            } else if (depth) { /* a landing in an open function (or one not open) */
                size_t at = (size_t)(check_xorshift(&seed) % depth);
                uint64_t to = r < 97 ? open[at] : fn;
                s[n++] = (struct ev){t, RP_RAW_UNWIND, to + 0x20};
                size_t k = depth;
                while (k > 0 && open[k - 1] != to)
                    k--;
                if (k)
                    depth = k;
            }
        }
        (void)open;
        s[n++] = (struct ev){t + 5, RP_RAW_UNWIND, 0};
        uint8_t kinds[FN];
        uint64_t keys[FN];
        for (int i = 0; i < FN; i++) {
            kinds[i] = RP_KIND_FUNC;
            keys[i] = base + (uint64_t)i * 0x1000;
        }
        struct stat st[FN];
        struct thr th;
        char what[32];
        snprintf(what, sizeof(what), "random round %d", round);
        both(what, s, n, kinds, keys, FN, st, &th);
        unmatched += th.unmatched;
        unwound += th.unwound;
        cut += th.cut;
    }
    /* the rounds took every way a span can end */
    CHECK(unmatched > 0 && unwound > 0 && cut > 0);
}

static const struct check_case cases[] = {
    {"rule", test_rule},
    {"random", test_random},
};

int main(int argc, char **argv)
{
    /* stop the trace recorder the constructor started; the engine is ours */
    rp_rt_shutdown();
    if (rp_rt.path[0])
        unlink(rp_rt.path);
    CHECK_EQ(rp_direct_init(), 0);
    rp_direct_start_of = start_of;
    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    int rc = check_run("test_span_end", argc, argv, cases, sizeof cases / sizeof cases[0]);
    rmdir(tmpdir);
    return rc;
}

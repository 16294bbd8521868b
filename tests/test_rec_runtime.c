// SPDX-License-Identifier: MIT
/*
 * test_rec_runtime.c - unit tests of the recorder runtime, linked with the
 * static recorder (librankprof.a): the clock (record/clock.c: its rate, and
 * its step on simulated counters) and the whole
 * trace path in-process (record/rt.c, hooks.c): four threads calling the
 * -finstrument-functions hooks, buffers handed off to the writer, the file
 * read back by a minimal reader written here (its own CRC and varints, so a
 * bug shared by the recorder's writer and the analyzer's reader is caught).
 *
 * How the recorder is started.  The library's constructor runs before main()
 * and starts recording with whatever environment the process was given, so a
 * setenv() in main() comes too late, and calling rp_rt_start() again would
 * start a second recorder over the first (it is not idempotent; only the
 * pthread_once in the constructor is).  So the test runs itself: the parent
 * (no RP_TEST_CHILD) stops the recorder its own constructor started, removes
 * that file, tests the clock, and spawns /proc/self/exe with RANKPROF_* set
 * for each run; each child's constructor starts the recorder exactly as a
 * profiled program's would.  posix_spawn is used, not fork: fork would run
 * the recorder's atfork handler in the child, which opens a trace of its own.
 *
 * Runs:
 *   wait  RANKPROF_BUFSIZE=4096 (256 records), RANKPROF_NBUF=2, policy wait:
 *         every event arrives, in order, with nothing lost.
 *   drop  same buffers, policy drop, and the trace file is a FIFO that the
 *         parent does not read until every thread has finished: the writer
 *         blocks once the pipe is full (64 KiB), so threads must drop.  Then
 *         recorded + reported lost (+ lost not yet reported when the thread
 *         ended, read from the thread's own state) == produced, exactly.
 *
 * The child sends its facts (thread ids, events produced, losses pending at
 * thread end) to the parent on fd 100; the parent checks the trace against them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "record/clock.h"
#include "record/rt.h"
#include "check.h"

extern char **environ;
void __cyg_profile_func_enter(void *fn, void *site);
void __cyg_profile_func_exit(void *fn, void *site);

#define NT    4     /* recorded threads */
#define NITER 20000 /* pattern repetitions per thread */
#define NPAT  8     /* records per repetition */

/* Fake function addresses: three shared, one per thread. */
#define F1    0x100000u
#define F2    0x100100u
#define F3    0x100200u
#define FT(k) (0x200000u + 0x100u * (k))
#define FN(a) ((void *)(uintptr_t)(a))

/* What a child tells the parent, on this fd. */
#define FACTS_FD 100
struct facts {
    uint32_t tid[NT];
    uint64_t produced[NT];
    uint64_t pending[NT];   /* t->lost when the thread returned: not yet in the trace */
    uint64_t reentered[NT]; /* events dropped by the recursion guard */
    uint32_t bufrecs, nbuf, mask;
    int drop;
};

/* ---- the child: record --------------------------------------------------- */

static struct facts facts;
static pthread_barrier_t go;

/*
 * One repetition, 8 records: f1 calls f2, which calls f3; then f1 calls the
 * thread's own ft.
 *     ENTER f1, ENTER f2, ENTER f3, EXIT f3, EXIT f2, ENTER ft, EXIT ft, EXIT f1
 */
static void *worker(void *arg)
{
    int k = (int)(intptr_t)arg;
    facts.tid[k] = (uint32_t)syscall(SYS_gettid);
    pthread_barrier_wait(&go);
    for (int i = 0; i < NITER; i++) {
        __cyg_profile_func_enter(FN(F1), NULL);
        __cyg_profile_func_enter(FN(F2), NULL);
        __cyg_profile_func_enter(FN(F3), NULL);
        __cyg_profile_func_exit(FN(F3), NULL);
        __cyg_profile_func_exit(FN(F2), NULL);
        __cyg_profile_func_enter(FN(FT(k)), NULL);
        __cyg_profile_func_exit(FN(FT(k)), NULL);
        __cyg_profile_func_exit(FN(F1), NULL);
    }
    facts.produced[k] = (uint64_t)NITER * NPAT;
    struct rp_tbuf *t = rp_self;
    CHECK(t != NULL);
    if (t) {
        facts.pending[k] = t->lost;
        facts.reentered[k] = t->reentered;
    }
    return NULL;
}

static int child_main(const char *mode)
{
    const char *out = getenv("RANKPROF_OUTPUT");
    /* the constructor started the recorder with this environment */
    CHECK(out && !strcmp(rp_rt.path, out));
    CHECK_EQ(atomic_load(&rp_rt.mask), RP_CLASS_BIT_ALL & ~RP_CLASS_BIT_WAIT);
    CHECK_EQ(rp_rt.bufrecs, 4096 / sizeof(struct rp_raw)); /* 256 */
    CHECK_EQ(rp_rt.nbuf, 2);
    CHECK_EQ(rp_rt.drop, !strcmp(mode, "drop"));
    facts.bufrecs = rp_rt.bufrecs;
    facts.nbuf = rp_rt.nbuf;
    facts.mask = atomic_load(&rp_rt.mask);
    facts.drop = rp_rt.drop;

    pthread_t th[NT];
    pthread_barrier_init(&go, NULL, NT);
    for (int k = 0; k < NT; k++)
        if (pthread_create(&th[k], NULL, worker, (void *)(intptr_t)k) != 0) {
            perror("pthread_create");
            return 2;
        }
    for (int k = 0; k < NT; k++)
        pthread_join(th[k], NULL);
    pthread_barrier_destroy(&go);

    /* the parent starts reading a FIFO output only after this */
    if (write(FACTS_FD, &facts, sizeof(facts)) != (ssize_t)sizeof(facts))
        failures++;
    close(FACTS_FD);
    rp_rt_shutdown();
    CHECK_EQ(rp_rt.fd, -1); /* finished in time and closed */
    CHECK_EQ(atomic_load(&rp_rt.failed), 0);
    return failures ? 1 : 0;
}

/* ---- the parent: an independent reader ------------------------------------ */

static uint32_t crc_tab[256];

static uint32_t crc32_ref(const uint8_t *p, size_t n)
{
    if (!crc_tab[1])
        for (uint32_t i = 0; i < 256; i++) {
            uint32_t c = i;
            for (int k = 0; k < 8; k++)
                c = (c & 1) ? (c >> 1) ^ 0xEDB88320u : c >> 1;
            crc_tab[i] = c;
        }
    uint32_t c = 0xffffffffu;
    while (n--)
        c = crc_tab[(c ^ *p++) & 0xff] ^ (c >> 8);
    return ~c;
}

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* LEB128 from [*p, end); returns 0 on a short or over-long varint. */
static int varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t r = 0;
    for (int i = 0; i < 10; i++) {
        if (*p >= end)
            return 0;
        uint8_t b = *(*p)++;
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            return 1;
        }
    }
    return 0;
}

#define MAXID 64

struct tcount {
    uint64_t enters, exits, exit_ids, lost, lost_recs, chunks, events;
    uint64_t last_ticks;
    uint64_t pos;            /* wait run: position in the repeated pattern */
    uint64_t pauses, offcpu; /* the writer's events in the current chunk */
    uint64_t pauses_all;     /* PAUSE records: each took a record of a buffer */
    int announced;
    int seq_bad;
};

/* Checks a whole trace against what the child produced. */
static void verify(const uint8_t *d, size_t n, const struct facts *fx, int drop)
{
    uint64_t key_of[MAXID] = {0};
    uint8_t kind_of[MAXID];
    memset(kind_of, 0xff, sizeof(kind_of));
    uint32_t nids = 0;
    struct tcount tc[NT] = {{0}};
    uint64_t end_events = 0, end_lost = 0, nend = 0, nchunks = 0;
    uint32_t end_flags = 0;

    CHECK(n >= 32);
    if (n < 32)
        return;
    CHECK(!memcmp(d, "RANKPROF", 8));
    CHECK_EQ(d[8] | d[9] << 8, 1); /* major version */
    CHECK_EQ(le32(d + 12), 32);    /* header size */

    size_t off = 32;
    while (off < n) {
        CHECK(n - off >= 16);
        if (n - off < 16)
            return;
        const uint8_t *h = d + off;
        uint32_t type = le32(h), len = le32(h + 4);
        CHECK_EQ(crc32_ref(h, 12), le32(h + 12));
        CHECK(len <= n - off - 16);
        if (len > n - off - 16 || crc32_ref(h, 12) != le32(h + 12)) {
            fprintf(stderr, "  (chunk at offset %zu)\n", off);
            return;
        }
        const uint8_t *pl = h + 16, *pe = pl + len;
        CHECK_EQ(crc32_ref(pl, len), le32(h + 8));
        CHECK_EQ(nend, 0); /* END is the last chunk */
        nchunks++;

        if (type == 4 && len >= 8) { /* THREAD */
            for (int k = 0; k < NT; k++)
                if (le32(pl) == fx->tid[k])
                    tc[k].announced++;
        } else if (type == 5) { /* DEFS: u32 id, u8 kind, u8 class, u16 nlen, u64 key,
                                   u32 line, u16 flen, u16 0, name, file */
            for (const uint8_t *q = pl; q < pe;) {
                CHECK(pe - q >= 24);
                if (pe - q < 24)
                    break;
                uint32_t id = le32(q);
                unsigned nlen = q[6] | q[7] << 8, flen = q[20] | q[21] << 8;
                CHECK_EQ(id, nids + 1); /* dense, in order */
                if (id < MAXID) {
                    kind_of[id] = q[4];
                    key_of[id] = le64(q + 8);
                }
                nids = id;
                q += 24 + nlen + flen;
                CHECK(q <= pe);
            }
        } else if (type == 6) { /* EVENTS: u32 tid, u32 n, u64 base, stream */
            CHECK(len >= 16);
            uint32_t tid = le32(pl), nev = le32(pl + 4) & 0x07ffffffu;
            int compact = (le32(pl + 4) >> 30) & 1; /* EXIT, ENTER id, or 0 + op */
            /* format 1.5: an ENTER of the predicted id is its head alone */
            int pred = compact && (le32(pl + 4) >> 27 & 1);
            static uint32_t ptab[1024];
            uint32_t px = 0, py = 0, *slot = NULL;
            memset(ptab, 0, sizeof(ptab));
            uint64_t now = le64(pl + 8);
            const uint8_t *ev0 = pl + 16;
            if (le32(pl + 4) >> 31) { /* a stack snapshot: depth, (id, start[, events][, paused]) */
                uint64_t depth = 0, x,
                         per = 2 + (le32(pl + 4) >> 29 & 1) + (le32(pl + 4) >> 28 & 1);
                CHECK(varint(&ev0, pe, &depth) && depth <= 1024);
                for (uint64_t i = 0; i < per * depth; i++)
                    CHECK(varint(&ev0, pe, &x));
            }
            int k = -1;
            for (int i = 0; i < NT; i++)
                if (fx->tid[i] == tid)
                    k = i;
            CHECK(k >= 0); /* only the four workers record */
            if (k < 0) {
                off += 16 + len;
                continue;
            }
            struct tcount *t = &tc[k];
            t->chunks++;
            /* the clock never runs backwards for one thread */
            CHECK(now >= t->last_ticks);
            uint64_t got = 0, hv, v;
            int in_off = 0; /* inside an off-CPU span (the writer's, format 1.3) */
            for (const uint8_t *q = ev0; q < pe; got++) {
                if (!varint(&q, pe, &hv)) {
                    CHECK(!"bad event varint");
                    break;
                }
                unsigned op = hv & 7;
                now += hv >> 3;
                v = 0;
                if (compact) {
                    now -= hv >> 3;
                    now += hv & 1 || !pred ? hv >> 1 : hv >> 2;
                    op = hv & 1 ? 1 : 0;
                    if (op == 1)
                        px++;
                    else
                        slot = &ptab[(uint32_t)((px ^ py << 16) * 0x9e3779b1u) >> 22];
                    if (op == 0 && pred && !(hv & 2)) { /* the predicted id */
                        CHECK(*slot != 0);
                        v = *slot;
                    } else if (op == 0 && !varint(&q, pe, &v)) {
                        CHECK(!"bad ENTER varint");
                        break;
                    }
                    if (op == 0 && v) {
                        *slot = (uint32_t)v;
                        py = px >> 3;
                        px = (uint32_t)v << 3;
                    }
                    if (op == 0 && v == 0) { /* an extended op follows */
                        uint64_t x = 0;
                        CHECK(varint(&q, pe, &x) && ((x >= 2 && x <= 6) || x == 8));
                        op = (unsigned)x;
                    }
                }
                uint64_t key = 0;
                /* the writer's own events (format 1.3): a PAUSE (the thread
                 * waited for a buffer) and off-CPU spans (ENTER of the
                 * kind-8 node, then its EXIT) are not the thread's */
                if (op == 8) {
                    CHECK(varint(&q, pe, &v));
                    t->pauses++;
                    t->pauses_all++;
                    continue;
                }
                if (compact && op == 0 && v < MAXID && v > 0 && kind_of[v] == 8) {
                    in_off = 1;
                    t->offcpu++;
                    continue;
                }
                if (op == 1 && in_off) {
                    in_off = 0;
                    continue;
                }
                if (op == 0 || op == 2) { /* ENTER, EXIT_ID: + id */
                    if (!((compact && op == 0) || varint(&q, pe, &v)) || v == 0 || v > nids) {
                        CHECK(!"event id not defined before use");
                        break;
                    }
                    if (v < MAXID) {
                        CHECK_EQ(kind_of[v], 0); /* RP_KIND_FUNC */
                        key = key_of[v];
                    }
                }
                switch (op) {
                case 0:
                    t->enters++;
                    break;
                case 1:
                    t->exits++;
                    break;
                case 2:
                    t->exit_ids++;
                    break;
                case 6:
                    if (!varint(&q, pe, &v)) {
                        CHECK(!"bad LOST varint");
                        break;
                    }
                    t->lost += v;
                    t->lost_recs++;
                    break;
                default:
                    fprintf(stderr, "  unexpected op %u in tid %u\n", op, tid);
                    failures++;
                }
                if (!drop && !t->seq_bad) {
                    /* ENTER f1, ENTER f2, ENTER f3, EXIT, EXIT, ENTER ft, EXIT, EXIT */
                    static const int want_op[NPAT] = {0, 0, 0, 1, 1, 0, 1, 1};
                    const uint64_t want_key[NPAT] = {F1, F2, F3, 0, 0, FT(k), 0, 0};
                    unsigned i = (unsigned)(t->pos % NPAT);
                    if (op != (unsigned)want_op[i] || key != want_key[i]) {
                        fprintf(stderr,
                                "  tid %u event %llu: op %u key 0x%llx, expected op %d key "
                                "0x%llx\n",
                                tid, (unsigned long long)t->pos, op, (unsigned long long)key,
                                want_op[i], (unsigned long long)want_key[i]);
                        failures++;
                        t->seq_bad = 1;
                    }
                    t->pos++;
                }
            }
            CHECK_EQ(got, nev);
            t->events += got - t->pauses - 2 * t->offcpu;
            t->pauses = t->offcpu = 0;
            t->last_ticks = now;
        } else if (type == 8) { /* END */
            CHECK(len >= 32);
            nend++;
            end_events = le64(pl + 8);
            end_lost = le64(pl + 16);
            end_flags = le32(pl + 28);
        }
        off += 16 + len;
    }
    CHECK_EQ(nend, 1);
    CHECK_EQ(end_flags, 1); /* RP_END_EXIT */
    /* ids: f1, f2, f3 and one ft per thread, and [off-cpu] if the threads
     * were preempted while recorded (format 1.3) */
    int noff = 0;
    for (uint32_t i = 1; i <= nids && i < MAXID; i++)
        noff += kind_of[i] == 8;
    CHECK(noff <= 1);
    CHECK_EQ(nids, 3 + NT + noff);

    uint64_t sum_rec = 0, sum_lost = 0, sum_lost_recs = 0, sum_pending = 0;
    for (int k = 0; k < NT; k++) {
        struct tcount *t = &tc[k];
        uint64_t recorded = t->enters + t->exits + t->exit_ids;
        CHECK_EQ(t->announced, 1);
        CHECK_EQ(fx->reentered[k], 0);
        CHECK_EQ(t->events, recorded + t->lost_recs);
        if (!drop) {
            /* 20000 x 8 = 160000 records = 625 full buffers of 256, each
             * one EVENTS chunk; every event in order, nothing lost */
            CHECK_EQ(t->enters, (uint64_t)NITER * 4);
            CHECK_EQ(t->exits, (uint64_t)NITER * 4);
            CHECK_EQ(t->exit_ids, 0);
            CHECK_EQ(t->lost, 0);
            CHECK_EQ(t->lost_recs, 0);
            CHECK_EQ(fx->pending[k], 0);
            CHECK_EQ(t->chunks, ((uint64_t)NITER * NPAT + t->pauses_all + 255) / 256);
            CHECK_EQ(t->pos, (uint64_t)NITER * NPAT);
        } else {
            /* never silent: each event is recorded or counted as lost in
             * the trace, including the losses still pending in the thread
             * when it ended (the writer reports them when it retires it) */
            CHECK_EQ(recorded + t->lost, fx->produced[k]);
        }
        CHECK_EQ(fx->produced[k], (uint64_t)NITER * NPAT);
        sum_rec += recorded;
        sum_lost += t->lost;
        sum_lost_recs += t->lost_recs;
        sum_pending += fx->pending[k];
    }
    /* END counts raw records written (LOST records included) and the losses
     * the LOST records reported */
    CHECK_EQ(end_events, sum_rec + sum_lost_recs);
    CHECK_EQ(end_lost, sum_lost);
    if (drop) {
        /* the pipe holds 64 KiB, the run makes megabytes: drops are certain */
        CHECK(sum_lost > 0);
        printf("drop run: %llu of %llu events recorded, %llu reported lost in %llu LOST "
               "records (%llu of them still pending when their thread ended)\n",
               (unsigned long long)sum_rec, (unsigned long long)NT * NITER * NPAT,
               (unsigned long long)sum_lost, (unsigned long long)sum_lost_recs,
               (unsigned long long)sum_pending);
    }
    printf("%s run: %llu chunks checked\n", drop ? "drop" : "wait", (unsigned long long)nchunks);
}

/* ---- the parent: spawn the runs ------------------------------------------- */

static char tmpdir[] = "/tmp/rp_test_rec.XXXXXX";

static char *read_all(int fd, size_t *len)
{
    size_t cap = 1 << 20, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (n == cap) {
            cap *= 2;
            b = realloc(b, cap);
        }
        if (!b)
            abort();
        ssize_t r = read(fd, b + n, cap - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
    }
    *len = n;
    return b;
}

static void run_child(const char *self, const char *mode)
{
    char out[512], env_out[600];
    snprintf(out, sizeof(out), "%s/%s.rpt", tmpdir, mode);
    snprintf(env_out, sizeof(env_out), "RANKPROF_OUTPUT=%s", out);
    int drop = !strcmp(mode, "drop");
    char env_child[64], env_pol[64];
    snprintf(env_child, sizeof(env_child), "RP_TEST_CHILD=%s", mode);
    snprintf(env_pol, sizeof(env_pol), "RANKPROF_POLICY=%s", mode);

    /* the environment minus any RANKPROF_* (RANKPROF_CLAIMED in particular:
     * it would make the child write OUTPUT.PID) */
    size_t ne = 0;
    while (environ[ne])
        ne++;
    char **envp = calloc(ne + 16, sizeof(*envp));
    size_t j = 0;
    for (size_t i = 0; i < ne; i++)
        if (strncmp(environ[i], "RANKPROF_", 9) && strncmp(environ[i], "RP_TEST_", 8))
            envp[j++] = environ[i];
    envp[j++] = env_child;
    envp[j++] = env_out;
    envp[j++] = env_pol;
    envp[j++] = "RANKPROF_BUFSIZE=4096";
    envp[j++] = "RANKPROF_NBUF=2";
    envp[j++] = "RANKPROF_CLASSES=-wait"; /* exact function events: no joins */
    envp[j++] = "RANKPROF_EXIT_TIMEOUT_MS=60000";
    /* no periodic flush: a thread slowed down (TSan, a loaded machine) would
     * get a partial buffer written as a chunk of its own, and the wait run
     * counts chunks exactly; the flush has its own tests (e2e_abnormal) */
    envp[j++] = "RANKPROF_FLUSH_MS=0";
    envp[j] = NULL;

    int fifo = -1;
    if (drop) {
        CHECK_EQ(mkfifo(out, 0600), 0);
        /* a reader must exist before the child's constructor opens it for
         * writing; non-blocking so this open does not wait for the writer */
        fifo = open(out, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        CHECK(fifo >= 0);
    }
    int sp[2];
    if (pipe2(sp, O_CLOEXEC) != 0) {
        perror("pipe");
        exit(2);
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    /* the child's copy of the write end; everything else is close-on-exec
     * (the recorder opens its file on the lowest free fd: not this one) */
    posix_spawn_file_actions_adddup2(&fa, sp[1], FACTS_FD);
    char *argv[] = {(char *)self, NULL};
    pid_t pid;
    int rc = posix_spawn(&pid, self, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(sp[1]);
    if (rc != 0) {
        fprintf(stderr, "posix_spawn %s: %s\n", self, strerror(rc));
        exit(2);
    }

    struct facts fx;
    size_t got = 0;
    while (got < sizeof(fx)) {
        ssize_t r = read(sp[0], (char *)&fx + got, sizeof(fx) - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(sp[0]);
    CHECK_EQ(got, sizeof(fx)); /* the child reached the end of its recording */

    size_t n = 0;
    char *data = NULL;
    if (drop && fifo >= 0) {
        int fl = fcntl(fifo, F_GETFL);
        fcntl(fifo, F_SETFL, fl & ~O_NONBLOCK);
        data = read_all(fifo, &n); /* until the recorder closes it */
        close(fifo);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
        fprintf(stderr, "  %s run: child status 0x%x\n", mode, st);
    if (!drop) {
        int fd = open(out, O_RDONLY);
        CHECK(fd >= 0);
        if (fd >= 0) {
            data = read_all(fd, &n);
            close(fd);
        }
    }
    if (got == sizeof(fx) && data) {
        CHECK_EQ(fx.bufrecs, 256);
        CHECK_EQ(fx.nbuf, 2);
        CHECK_EQ(fx.drop, drop);
        verify((const uint8_t *)data, n, &fx, drop);
    }
    free(data);
    free(envp);
    unlink(out);
}

/* ---- the clock ------------------------------------------------------------- */

static void test_clock(void)
{
    const char *name = rp_clock_init();
    CHECK(name && (!strcmp(name, "tsc") || !strcmp(name, "cntvct") || !strcmp(name, "monotonic")));
    CHECK_EQ(!strcmp(name, "monotonic"), !rp_clock_tsc);

    /* calibration over 20 ms vs an independent 50 ms measurement: two
     * (monotonic ns, ticks) pairs around a sleep */
    double f = rp_clock_calibrate(20);
    struct timespec a, b, pause = {0, 50 * 1000000};
    clock_gettime(CLOCK_MONOTONIC, &a);
    uint64_t t0 = rp_ticks();
    nanosleep(&pause, NULL);
    clock_gettime(CLOCK_MONOTONIC, &b);
    uint64_t t1 = rp_ticks();
    double ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
    double f2 = (double)(t1 - t0) * 1e9 / ns;
    CHECK(ns >= 50e6);
    CHECK(fabs(f - f2) <= 0.02 * f2);
    if (fabs(f - f2) > 0.02 * f2)
        fprintf(stderr, "  calibrate(20) = %.0f Hz, measured %.0f Hz over %.1f ms\n", f, f2,
                ns / 1e6);

    /* monotonic on one thread over a million reads */
    uint64_t prev = rp_ticks(), back = 0;
    for (int i = 0; i < 1000000; i++) {
        uint64_t t = rp_ticks();
        if (t < prev)
            back++;
        prev = t;
    }
    CHECK_EQ(back, 0);

    /* RANKPROF_CLOCK=monotonic: ticks are monotonic nanoseconds */
    setenv("RANKPROF_CLOCK", "monotonic", 1);
    CHECK(!strcmp(rp_clock_init(), "monotonic"));
    CHECK_EQ(rp_clock_tsc, 0);
    CHECK(rp_clock_calibrate(20) == 1e9);
    uint64_t m0 = rp_mono_ns(), tk = rp_ticks(), m1 = rp_mono_ns();
    CHECK(m0 <= tk && tk <= m1);
    unsetenv("RANKPROF_CLOCK");
    CHECK(!strcmp(rp_clock_init(), name));
}

/*
 * The step of one group of read differences (rp_clock_step_group) on
 * counters simulated here: one that moves by whole steps of 21 ticks; ones
 * that move by fractional steps (24.5, 24.4543, 12.3 ticks: the counter
 * shows floor(updates x step + phase)), read 1 to 6 updates apart; and one
 * that moves by one tick, read 30 to 200 ticks apart or, as a quiet loop
 * would, at a few fixed distances (37 + 7 m, a tick either way) - a step
 * of 1.  The fractional steps come back within 0.5 %.
 */
static void test_clock_step(void)
{
    static const double steps[] = {21, 24.5, 24.4543, 12.3};
    uint32_t d[128];
    unsigned seed = 7;
    for (unsigned s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
        double q = steps[s], phase = 0.37;
        uint64_t m = 1000, prev = (uint64_t)(m * q + phase);
        for (unsigned i = 0; i < 128; i++) {
            m += 1 + rand_r(&seed) % 6;
            uint64_t now = (uint64_t)(m * q + phase);
            d[i] = (uint32_t)(now - prev);
            prev = now;
        }
        double got = rp_clock_step_group(d, 128);
        CHECK(fabs(got - q) <= 0.005 * q);
        if (fabs(got - q) > 0.005 * q)
            fprintf(stderr, "  a counter moving by %.4f ticks: step %.4f\n", q, got);
    }
    for (unsigned i = 0; i < 128; i++)
        d[i] = 30 + rand_r(&seed) % 171;
    CHECK(rp_clock_step_group(d, 128) == 1);
    for (unsigned i = 0; i < 128; i++)
        d[i] = 37 + 7 * (i * 7 % 13) + rand_r(&seed) % 3 - 1;
    CHECK(rp_clock_step_group(d, 128) == 1);
    /* and the machine's own: at least 1 tick, under 4096 */
    double own = rp_clock_step();
    CHECK(own >= 1 && own < 4096);
}

static char self_exe[4096];

static void test_wait(void)
{
    run_child(self_exe, "wait");
}
static void test_drop(void)
{
    run_child(self_exe, "drop");
}

static const struct check_case cases[] = {
    {"clock", test_clock},
    {"clock_step", test_clock_step},
    {"wait", test_wait},
    {"drop", test_drop},
};

int main(int argc, char **argv)
{
    const char *mode = getenv("RP_TEST_CHILD");
    alarm(120); /* a hung run fails instead of blocking the suite */
    if (mode)
        return child_main(mode);

    /* The constructor has already started recording (before main) with the
     * inherited environment: stop it and remove its file, which holds no
     * event (this thread never called a hook). */
    CHECK(atomic_load(&rp_rt.mask) != 0);
    int had_file = rp_rt.fd >= 0;
    rp_rt_shutdown();
    CHECK_EQ(atomic_load(&rp_rt.mask), 0);
    CHECK_EQ(rp_rt.fd, -1);
    if (had_file)
        unlink(rp_rt.path);
    /* a second shutdown (the destructor's) is harmless */
    rp_rt_shutdown();

    if (!mkdtemp(tmpdir)) {
        perror("mkdtemp");
        return 2;
    }
    ssize_t sl = readlink("/proc/self/exe", self_exe, sizeof(self_exe) - 1);
    if (sl <= 0) {
        perror("/proc/self/exe");
        return 2;
    }
    self_exe[sl] = 0;
    int rc = check_run("test_rec_runtime", argc, argv, cases, sizeof cases / sizeof cases[0]);
    rmdir(tmpdir);
    return rc;
}

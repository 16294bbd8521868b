// SPDX-License-Identifier: MIT
/*
 * cmd_record.c - `rankprof record`: runs a program with the recorder
 * preloaded.  Everything is passed through environment variables, so the
 * same variables work without this command (docs/recording.md):
 *
 *   LD_PRELOAD          librankprof.so, in front of what was there (not when
 *                       the program has the recorder linked in: librankprof.a)
 *   RANKPROF_OUTPUT     the trace file (absolute path)
 *   RANKPROF_MODE       trace, or direct (statistics in the process, no trace:
 *                       docs/direct-mode.md)
 *   RANKPROF_PRINT      1: print the direct-mode table at exit (--print)
 *   RANKPROF_POLICY     wait (lossless, default) or drop
 *   RANKPROF_CLASSES    event classes to record, e.g. func,lock
 *   RANKPROF_START      off: loaded but not recording until `rankprof ctl PID
 *                       start` (--off)
 *   RANKPROF_MAX_SIZE   bytes: the trace rotated in pieces that never hold more
 *                       together, the newest kept (--max-size)
 *   RANKPROF_RING       bytes: the flight recorder, only the newest events kept
 *                       in memory, written at the end and in snapshots (--ring)
 *   RANKPROF_RING_TRIGGER  NAME>DURATION,rate:NAME,budget: a span that asks for a
 *                       snapshot (--ring-trigger)
 *   RANKPROF_RING_EVERY_MS  at most one trigger's snapshot in this many ms
 *                       (--ring-every SECONDS)
 *   RANKPROF_RING_KEEP  snapshot files kept, the newest (--ring-keep N)
 *   RANKPROF_THROTTLE   CALLS:NS[:K], or 1 for TAU's 100000:10000 and K 100
 *                       (--throttle[=...]): functions called more than CALLS
 *                       times with a mean under NS ns are then counted, and
 *                       1 call in K recorded (K 0: none)
 *
 * Exits with the program's exit status (128 + N when signal N killed it),
 * or 1 when the program succeeded but the trace was not written whole: the
 * output could not be created, writing it failed (disk full), the file
 * there is an older run's, or the program is static (nothing preloaded)
 * without the recorder linked in.
 * An output that cannot be written, or is a symbolic link (unless
 * --force), or is not a regular file, is refused before the program runs.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <glob.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "analyze/profile.h"
#include "analyze/set.h"
#include "cli.h"
#include "common/bytes.h"
#include "trace/control.h"
#include "trace/format.h"

#ifndef RP_LIBDIR_BUILD
#define RP_LIBDIR_BUILD ""
#endif
#ifndef RP_LIBDIR_INSTALL
#define RP_LIBDIR_INSTALL "/usr/local/lib"
#endif

static int is_file(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

/* Finds librankprof.so: $RANKPROF_LIB, beside this executable (a build
 * tree), the build directory, ../lib and the install directory. */
static void find_lib(char *out, size_t outsz)
{
    const char *env = getenv("RANKPROF_LIB");
    if (env && *env) {
        if (!is_file(env))
            rp_die("RANKPROF_LIB=%s: no such file", env);
        snprintf(out, outsz, "%s", env);
        return;
    }
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = 0;
        char *dir = dirname(exe);
        const char *cands[] = {"%s/librankprof.so", "%s/../lib/librankprof.so",
                               "%s/../lib/x86_64-linux-gnu/librankprof.so",
                               "%s/../lib/aarch64-linux-gnu/librankprof.so"};
        for (size_t i = 0; i < sizeof(cands) / sizeof(cands[0]); i++) {
            snprintf(out, outsz, cands[i], dir);
            if (is_file(out))
                return;
        }
    }
    const char *dirs[] = {RP_LIBDIR_BUILD, RP_LIBDIR_INSTALL};
    for (size_t i = 0; i < 2; i++) {
        snprintf(out, outsz, "%s/librankprof.so", dirs[i]);
        if (dirs[i][0] && is_file(out))
            return;
    }
    rp_die("cannot find librankprof.so (set RANKPROF_LIB to its path)");
}

static const char *check_classes(const char *list)
{
    static const char *const ok[] = {"all", "func", "point", "lock", "io", "timer", "user", "wait"};
    const char *s = list;
    while (*s) {
        s += *s == '-'; /* "-wait": all but wait */
        size_t n = strcspn(s, ",");
        int found = 0;
        for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
            if (strlen(ok[i]) == n && !strncmp(s, ok[i], n))
                found = 1;
        if (!found)
            rp_usage_die("record",
                         "--classes: unknown class '%.*s' (known: all, func, point, "
                         "lock, io, timer, user, wait; -CLASS leaves one out)",
                         (int)n, s);
        s += n;
        if (*s == ',')
            s++;
    }
    return list;
}

/* ---- telling the truth about the output (docs/recording.md) ----------- */

/*
 * Whether the notes at off (size bytes, entries aligned to align) in f
 * hold the recorder's: owner "rankprof", type 1 (rt_start.c).  Cannot
 * fail: 0 when they cannot be read.
 */
static int has_rec_note(FILE *f, uint64_t off, uint64_t size, uint64_t align)
{
    uint64_t a = align == 8 ? 8 : 4, pos = 0;
    if (size > (1u << 20) || fseek(f, (long)off, SEEK_SET) != 0)
        return 0;
    while (pos + 12 <= size) {
        unsigned char h[12], name[16];
        if (fread(h, 1, 12, f) != 12)
            return 0;
        uint64_t namesz = rp_get32(h), descsz = rp_get32(h + 4);
        uint64_t nsz = (namesz + a - 1) & ~(a - 1), dsz = (descsz + a - 1) & ~(a - 1);
        if (namesz == 9 && rp_get32(h + 8) == 1 && fread(name, 1, nsz, f) == nsz &&
            memcmp(name, "rankprof", 9) == 0)
            return 1;
        pos += 12 + nsz + dsz;
        if (fseek(f, (long)(off + pos), SEEK_SET) != 0)
            return 0;
    }
    return 0;
}

/*
 * What record must know of the program that execvp would run, an ELF
 * executable: whether it is static (no PT_INTERP: LD_PRELOAD cannot reach
 * it) and whether the recorder is linked into it (librankprof.a: the
 * recorder's ELF note, rt_start.c, in a PT_NOTE segment; a second,
 * preloaded copy would take its signals and its lock functions).  Returns
 * 0 and sets *is_static and *has_rec, or -1 when the program is not found
 * or not a little-endian ELF file (a script: its interpreter is what
 * runs), both then 0.
 */
static int prog_elf(const char *prog, int *is_static, int *has_rec)
{
    char path[PATH_MAX];
    *is_static = *has_rec = 0;
    if (strchr(prog, '/')) {
        snprintf(path, sizeof(path), "%s", prog);
    } else {
        const char *pv = getenv("PATH");
        int found = 0;
        for (const char *d = pv ? pv : "/usr/bin:/bin"; d && !found;) {
            size_t n = strcspn(d, ":");
            snprintf(path, sizeof(path), "%.*s/%s", (int)n, n ? d : ".", prog);
            found = access(path, X_OK) == 0 && is_file(path);
            d = d[n] ? d + n + 1 : NULL;
        }
        if (!found)
            return -1;
    }
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char e[64];
    int rc = -1, interp = 0;
    if (fread(e, 1, 64, f) != 64 ||
        memcmp(e,
               "\x7f"
               "ELF",
               4) != 0 ||
        e[5] != 1)
        goto out; /* (little-endian ELF only: what this runs on) */
    int is64 = e[4] == 2;
    uint64_t phoff = is64 ? rp_get64(e + 32) : rp_get32(e + 28);
    unsigned phentsize = rp_get16(e + (is64 ? 54 : 42)), phnum = rp_get16(e + (is64 ? 56 : 44));
    if (phentsize < (is64 ? 56u : 32u) || phnum > 4096)
        goto out;
    rc = 0;
    for (unsigned i = 0; i < phnum; i++) {
        unsigned char ph[56];
        if (fseek(f, (long)(phoff + (uint64_t)i * phentsize), SEEK_SET) != 0 ||
            fread(ph, 1, is64 ? 56 : 32, f) != (is64 ? 56u : 32u)) {
            rc = -1;
            break;
        }
        if (rp_get32(ph) == 3) /* PT_INTERP */
            interp = 1;
        else if (rp_get32(ph) == 4 && !*has_rec) /* PT_NOTE */
            *has_rec = has_rec_note(f, is64 ? rp_get64(ph + 8) : rp_get32(ph + 4),
                                    is64 ? rp_get64(ph + 32) : rp_get32(ph + 16),
                                    is64 ? rp_get64(ph + 48) : rp_get32(ph + 28));
    }
    *is_static = rc == 0 && !interp;
out:
    if (rc < 0)
        *has_rec = 0;
    fclose(f);
    return rc;
}

/*
 * Refuses, before the program runs, an output that cannot be written or
 * must not be: a missing or unwritable directory, a path that exists and is
 * not a regular file, a symbolic link unless follow.  Saves what is there
 * now in *before (st_ino 0: nothing).  Exits with a message on refusal.
 */
static void check_output(const char *out, const char *abs_out, int follow, struct stat *before)
{
    struct stat st;
    memset(before, 0, sizeof(*before));
    if (lstat(abs_out, &st) == 0) {
        if (S_ISLNK(st.st_mode) && !follow)
            rp_die("%s is a symbolic link: refusing to write the trace through it "
                   "(--force follows it)",
                   out);
        if (stat(abs_out, &st) == 0) {
            if (!S_ISREG(st.st_mode))
                rp_die("%s exists and is not a regular file: refusing to write a trace there", out);
            *before = st;
        }
    }
    char dir[2 * PATH_MAX + 2];
    snprintf(dir, sizeof(dir), "%s", abs_out);
    char *d = dirname(dir);
    if (stat(d, &st) != 0)
        rp_die("cannot create %s: directory %s: %s", out, d, strerror(errno));
    if (!S_ISDIR(st.st_mode))
        rp_die("cannot create %s: %s is not a directory", out, d);
    if (access(d, W_OK | X_OK) != 0 && !(before->st_ino && access(abs_out, W_OK) == 0))
        rp_die("cannot create %s: directory %s: %s", out, d, strerror(errno));
}

/*
 * Looks for the END chunk at the end of the trace at path (format 3.2: END
 * is the last chunk), checking both its CRCs.  Returns 1 and its flags and
 * lost count, 0 when the file does not end with one, -1 if unreadable.
 */
static int trace_end(const char *path, uint32_t *flags, uint64_t *lost)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    unsigned char b[4096 + RP_CHUNK_HDR_SIZE];
    int rc = 0;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    long take = size < (long)sizeof(b) ? size : (long)sizeof(b);
    if (size < 0 || fseek(f, size - take, SEEK_SET) != 0 ||
        fread(b, 1, (size_t)take, f) != (size_t)take) {
        fclose(f);
        return -1;
    }
    fclose(f);
    for (long at = take - RP_CHUNK_HDR_SIZE - 32; at >= 0 && size - take + at >= RP_FILE_HDR_SIZE;
         at--) {
        unsigned char *h = b + at;
        uint32_t len = rp_get32(h + 4);
        if (rp_get32(h) != RP_CH_END || (long)len != take - at - RP_CHUNK_HDR_SIZE ||
            rp_crc32(0, h, 12) != rp_get32(h + 12) ||
            rp_crc32(0, h + RP_CHUNK_HDR_SIZE, len) != rp_get32(h + 8))
            continue;
        *lost = rp_get64(h + RP_CHUNK_HDR_SIZE + 16);
        *flags = rp_get32(h + RP_CHUNK_HDR_SIZE + 28);
        rc = 1;
        break;
    }
    return rc;
}

/* The program record runs; 0 until it is forked. */
static volatile pid_t child_pid;
/* 1: the program runs in a process group of its own (run_program) */
static volatile sig_atomic_t child_own_group;
static time_t child_start; /* the wall clock (s) just before it was forked */

/*
 * After the run: says what was written, or why not.  Returns 0 when the
 * trace is there, new and complete, else 1 (with the reason on stderr).
 * When the program wrote OUT.PID (PID its own: another process held OUT,
 * e.g. a sibling rank of an MPI job each started by `mpirun rankprof
 * record`), that file is the one checked.  shown is the program as the
 * messages show it (prog_text); alone: it is a static executable without
 * the recorder linked in (prog_elf), which nothing could record.
 */
static int report_output(const char *out, const char *abs_out, const struct stat *before, int alone,
                         const char *shown, int killed)
{
    struct stat sb;
    static char own[4096 + 16], own_out[4096 + 16];
    if (child_pid > 0 && snprintf(own, sizeof(own), "%s.%d", abs_out, (int)child_pid) > 0 &&
        stat(own, &sb) == 0 && sb.st_mtim.tv_sec >= child_start) { /* (not an older run's) */
        snprintf(own_out, sizeof(own_out), "%s.%d", out, (int)child_pid);
        out = own_out;
        abs_out = own;
        static const struct stat none; /* (a new file: nothing to compare) */
        before = &none;
    }
    if (stat(abs_out, &sb) != 0) {
        if (alone)
            fprintf(stderr,
                    "rankprof: %s was not written: %s is statically linked, so the recorder "
                    "could not be preloaded into it (link it dynamically, or with librankprof.a: "
                    "docs/recording.md)\n",
                    out, shown);
        else
            fprintf(stderr,
                    "rankprof: %s was not written: the recorder could not create it (see its "
                    "message above) or did not run in the program\n",
                    out);
        return 1;
    }
    if (before->st_ino && sb.st_ino == before->st_ino && sb.st_dev == before->st_dev &&
        sb.st_mtim.tv_sec == before->st_mtim.tv_sec &&
        sb.st_mtim.tv_nsec == before->st_mtim.tv_nsec &&
        sb.st_ctim.tv_sec == before->st_ctim.tv_sec &&
        sb.st_ctim.tv_nsec == before->st_ctim.tv_nsec) {
        fprintf(stderr, "rankprof: %s was not written: the file there is from an earlier run%s\n",
                out,
                alone ? " (the program is statically linked: the recorder "
                        "could not be preloaded into it)"
                      : " (the recorder could not open it: see its message above)");
        return 1;
    }
    uint32_t flags = 0;
    uint64_t lost = 0;
    int end = trace_end(abs_out, &flags, &lost);
    char ckpt[4096 + 32];
    if (end <= 0 && snprintf(ckpt, sizeof(ckpt), "%s%s", abs_out, RP_CTL_CKPT_SUFFIX) > 0 &&
        access(ckpt, R_OK) == 0) { /* direct mode's last checkpoint (trace/control.h) */
        fprintf(stderr,
                "rankprof: %s holds no statistics%s; its recorder's last checkpoint, %s%s, "
                "holds them as of then, and the reader commands read it in its place\n",
                out, killed ? " (the program was killed)" : "", out, RP_CTL_CKPT_SUFFIX);
        return 1;
    }
    if (end <= 0) {
        fprintf(stderr,
                "rankprof: %s (%lld bytes) is incomplete: it does not end with an END record%s; "
                "`rankprof report --force` reads what is there\n",
                out, (long long)sb.st_size,
                killed ? " (the program was killed)"
                       : " (writing it failed, e.g. the disk is full, or the program ended "
                         "without exit: see the messages above)");
        return 1;
    }
    fprintf(stderr, "rankprof: wrote %s (%lld bytes", out, (long long)sb.st_size);
    glob_t g; /* the older pieces of a rotated trace (--max-size) */
    char *pat = NULL;
    if (asprintf(&pat, "%s.part[0-9]*", abs_out) < 0)
        pat = NULL;
    if (pat && glob(pat, 0, NULL, &g) == 0) {
        long long all = (long long)sb.st_size;
        for (size_t i = 0; i < g.gl_pathc; i++) {
            struct stat ps;
            if (stat(g.gl_pathv[i], &ps) == 0)
                all += (long long)ps.st_size;
        }
        fprintf(stderr, ", and %zu older piece%s %s.partN: %lld bytes in all", g.gl_pathc,
                g.gl_pathc == 1 ? "" : "s", out, all);
        globfree(&g);
    }
    free(pat);
    pat = NULL; /* the flight recorder's snapshots (--ring) */
    if (asprintf(&pat, "%s.snap[0-9]*", abs_out) < 0)
        pat = NULL;
    if (pat && glob(pat, 0, NULL, &g) == 0) {
        size_t n = 0;
        for (size_t i = 0; i < g.gl_pathc; i++) { /* (only NAME.snapN: not .tmp, ...) */
            const char *k = g.gl_pathv[i] + strlen(abs_out) + 5;
            n += strspn(k, "0123456789") == strlen(k);
        }
        if (n)
            fprintf(stderr, ", and %zu snapshot%s %s.snapN", n, n == 1 ? "" : "s", out);
        globfree(&g);
    }
    free(pat);
    if (lost)
        fprintf(stderr, ", %llu events lost", (unsigned long long)lost);
    fprintf(stderr, ")\n");
    /* the run's other processes (docs/robustness.md, "One file per process") */
    struct rp_set set;
    char err[768];
    if (rp_set_find(abs_out, &set, err, sizeof(err)) == 0 && set.n > 1)
        fprintf(stderr,
                "rankprof: and %u more file%s, one per other process of the run (%s.PID): "
                "report, graph, info, locks, dump and export read them together (--one-file: "
                "%s alone)\n",
                set.n - 1, set.n == 2 ? "" : "s", out, out);
    if (set.n_skipped)
        fprintf(stderr,
                "rankprof: %u %s.PID file%s beside it %s not of this run: the reader commands "
                "leave %s out\n",
                set.n_skipped, out, set.n_skipped == 1 ? "" : "s",
                set.n_skipped == 1 ? "is" : "are", set.n_skipped == 1 ? "it" : "them");
    rp_set_free(&set);
    if (flags & RP_END_TIMEOUT) {
        fprintf(stderr, "rankprof: %s is incomplete: the final flush gave up on some buffers\n",
                out);
        return 1;
    }
    return 0;
}

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGALRM};

/*
 * Passes a signal sent to record on to the program, whose trace is then
 * written by its own ending; record keeps waiting and reports after it.
 * In record's process group (run_program), a signal from the terminal
 * (si_code SI_KERNEL: Ctrl-C, a hang-up) has reached the program already
 * and is not sent twice.  In its own group the program gets only what
 * record passes on, once: the same signal from the same sender again
 * within 50 ms is one signal sent two ways (`timeout` signals record and
 * its process group).  Async-signal-safe: kill and clock_gettime only.
 * Cannot fail visibly (a program already gone makes kill fail, and
 * waitpid then returns).
 */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
    static int64_t last_ns[NSIG];
    static pid_t last_pid[NSIG];
    (void)uc;
    int saved = errno;
    if (child_pid <= 0 || sig <= 0 || sig >= NSIG)
        goto out;
    if (!child_own_group) {
        if (si == NULL || si->si_code != SI_KERNEL)
            kill(child_pid, sig);
        goto out;
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    pid_t from = si ? si->si_pid : 0;
    if (last_ns[sig] && now - last_ns[sig] < 50000000 && from == last_pid[sig])
        goto out;
    last_ns[sig] = now;
    last_pid[sig] = from;
    kill(child_pid, sig);
out:
    errno = saved;
}

/*
 * Whether record runs in its terminal's foreground process group: used
 * interactively, where the terminal's signals (Ctrl-C) and job control
 * (Ctrl-Z, fg) reach the program directly, in record's group.  Not with
 * no terminal, in a background job, or in a group that `timeout` or a
 * supervisor made: signals sent to that group would reach the program and
 * record alike, and record would pass them on a second time.  Cannot fail.
 */
static int in_foreground(void)
{
    int fd = open("/dev/tty", O_RDONLY | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    pid_t fg = tcgetpgrp(fd);
    close(fd);
    return fg > 0 && fg == getpgrp();
}

/* What the command line asks for. */
struct rec_opts {
    const char *out, *mode, *classes, *throttle;
    char subtree[4096]; /* -F NAME and -N NAME as RANKPROF_SUBTREE: "NAME,-NAME" */
    int drop, print, force, off;
    int mpi;                     /* --mpi: librankprof-mpi.so preloaded too */
    unsigned long long max_size; /* 0: none */
    unsigned long long ring;     /* --ring: bytes, 0: none */
    char trigger[4096];          /* --ring-trigger items, comma-separated */
    long long every_ms;          /* --ring-every, -1: the recorder's default */
    long long keep;              /* --ring-keep, -1: the recorder's default */
};

/* SIZE[K|M|G] (binary units) of at least 64K, or dies naming opt. */
static unsigned long long size_arg(const char *opt, const char *arg)
{
    char *e;
    errno = 0;
    unsigned long long v = strtoull(arg, &e, 10), mul = 1;
    if (*e == 'k' || *e == 'K')
        mul = 1ull << 10, e++;
    else if (*e == 'm' || *e == 'M')
        mul = 1ull << 20, e++;
    else if (*e == 'g' || *e == 'G')
        mul = 1ull << 30, e++;
    if (errno || e == arg || *e || arg[0] == '-' || v > (1ull << 50) / mul || v * mul < 65536)
        rp_usage_die("record",
                     "%s %s: give a size of at least 64K (a number of bytes, or with K, M or G)",
                     opt, arg);
    return v * mul;
}

/* Whether s is a duration: a number then ns, us, ms or s. */
static int is_duration(const char *s)
{
    char *e;
    errno = 0;
    double v = strtod(s, &e);
    return !errno && e != s && v >= 0 &&
           (!strcmp(e, "ns") || !strcmp(e, "us") || !strcmp(e, "ms") || !strcmp(e, "s"));
}

/* Adds --ring-trigger's items (comma-separated NAME>DURATION, rate:NAME or
 * budget) to
 * r->trigger; dies (usage) on a malformed one. */
static void trigger_add(struct rec_opts *r, const char *arg)
{
    char item[256];
    for (const char *s = arg;;) {
        size_t n = strcspn(s, ",");
        snprintf(item, sizeof item, "%.*s", (int)(n < sizeof item - 1 ? n : sizeof item - 1), s);
        const char *gt = strrchr(item, '>');
        int rate = !strncmp(item, "rate:", 5) && item[5];
        if (n >= sizeof item - 1 ||
            (strcmp(item, "budget") != 0 && !rate && (!gt || gt == item || !is_duration(gt + 1))))
            rp_usage_die("record",
                         "--ring-trigger %s: give NAME>DURATION (a function or point name or "
                         "glob, e.g. 'handle_request>5ms'; ns, us, ms or s), rate:NAME or "
                         "'budget'",
                         arg);
        if (!s[n])
            break;
        s += n + 1;
    }
    size_t n = strlen(r->trigger);
    if (snprintf(r->trigger + n, sizeof r->trigger - n, "%s%s", n ? "," : "", arg) >=
        (int)(sizeof r->trigger - n))
        rp_usage_die("record", "--ring-trigger: too many triggers");
}

/* Reads the options into r; returns the index of PROGRAM.  Dies (usage) on
 * a bad option or when there is no program. */
static int parse_args(int argc, char **argv, struct rec_opts *r)
{
    static const struct option lo[] = {{"output", required_argument, NULL, 'o'},
                                       {"mode", required_argument, NULL, 'm'},
                                       {"classes", required_argument, NULL, 'c'},
                                       {"drop", no_argument, NULL, 'd'},
                                       {"print", no_argument, NULL, 'p'},
                                       {"off", no_argument, NULL, 'O'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"throttle", optional_argument, NULL, 't'},
                                       {"force", no_argument, NULL, 'f'},
                                       {"max-size", required_argument, NULL, 'M'},
                                       {"ring", required_argument, NULL, 'R'},
                                       {"ring-trigger", required_argument, NULL, 'T'},
                                       {"ring-every", required_argument, NULL, 'E'},
                                       {"ring-keep", required_argument, NULL, 'K'},
                                       {"mpi", no_argument, NULL, 'P'}, /* (multi-process.md) */
                                       {"function", required_argument, NULL, 'F'},
                                       {"filter", required_argument, NULL, 'F'},
                                       {"exclude", required_argument, NULL, 'N'},
                                       {"notrace", required_argument, NULL, 'N'},
                                       {NULL, 0, NULL, 0}};
    int c;

    *r = (struct rec_opts){.out = RP_DEFAULT_DATA, .mode = "trace", .every_ms = -1, .keep = -1};
    opterr = 0;
    while ((c = getopt_long(argc, argv, "+o:hF:N:", lo, NULL)) != -1) {
        switch (c) {
        case 'o':
            r->out = optarg;
            break;
        case 'm':
            r->mode = optarg;
            if (strcmp(r->mode, "trace") != 0 && strcmp(r->mode, "direct") != 0)
                rp_usage_die("record", "--mode %s: the modes are 'trace' and 'direct'", r->mode);
            break;
        case 'p':
            r->print = 1;
            break;
        case 'P':
            r->mpi = 1;
            break;
        case 'O':
            r->off = 1;
            break;
        case 'c':
            r->classes = check_classes(optarg);
            break;
        case 'd':
            r->drop = 1;
            break;
        case 'f':
            r->force = 1;
            break;
        case 'M':
            r->max_size = size_arg("--max-size", optarg);
            break;
        case 'R':
            r->ring = size_arg("--ring", optarg);
            break;
        case 'T':
            trigger_add(r, optarg);
            break;
        case 'E': {
            char *e;
            errno = 0;
            double s = strtod(optarg, &e);
            if (errno || e == optarg || *e || s < 0 || s > 1e9)
                rp_usage_die("record", "--ring-every %s: give a number of seconds (e.g. 10, 0.5)",
                             optarg);
            r->every_ms = (long long)(s * 1000 + 0.5);
            break;
        }
        case 'K': {
            char *e;
            errno = 0;
            long long k = strtoll(optarg, &e, 10);
            if (errno || e == optarg || *e || k < 0)
                rp_usage_die("record", "--ring-keep %s: give a number of files (0: all)", optarg);
            r->keep = k;
            break;
        }
        case 't': {
            /* CALLS[:NS[:K]], :NS or ::K, numbers; the recorder applies the
             * defaults */
            const char *q = r->throttle = optarg ? optarg : "1";
            q += strspn(q, "0123456789");
            if (*q == ':' && q[1] && q[1] != ':')
                q += 1 + strspn(q + 1, "0123456789");
            else if (*q == ':' && q[1] == ':')
                q++;
            if (*q == ':' && q[1] >= '0' && q[1] <= '9')
                q += 1 + strspn(q + 1, "0123456789");
            if (*q || !strcmp(r->throttle, ":"))
                rp_usage_die("record",
                             "--throttle=%s: give CALLS:NS or CALLS:NS:K (e.g. 100000:10000:100)",
                             r->throttle);
            break;
        }
        case 'F':
        case 'N': { /* RANKPROF_SUBTREE's list: "glob,-glob" (src/record/funcs.c) */
            size_t n = strlen(r->subtree);
            if (!*optarg || strchr(optarg, ',') || optarg[0] == '-')
                rp_usage_die("record", "-%c %s: expected a function's name or a glob", c, optarg);
            if (snprintf(r->subtree + n, sizeof(r->subtree) - n, "%s%s%s", n ? "," : "",
                         c == 'N' ? "-" : "", optarg) >= (int)(sizeof(r->subtree) - n))
                rp_usage_die("record", "-%c: too many names", c);
            break;
        }
        case 'h':
            rp_help("record");
        default:
            rp_usage_die("record", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        rp_usage_die("record", "no program given");
    if (r->max_size && strcmp(r->mode, "trace") != 0)
        rp_usage_die("record", "--max-size is for a trace (direct mode writes a few kilobytes)");
    if (r->ring && strcmp(r->mode, "trace") != 0)
        rp_usage_die("record", "--ring is for a trace (direct mode keeps statistics: rankprof "
                               "ctl PID snapshot writes them)");
    if (r->ring && r->max_size)
        rp_usage_die("record", "--ring and --max-size: choose one (the ring writes only its "
                               "SIZE at the end and in snapshots)");
    if ((r->trigger[0] || r->every_ms >= 0 || r->keep >= 0) && !r->ring)
        rp_usage_die("record", "--ring-trigger, --ring-every and --ring-keep need --ring SIZE");
    if (r->print && strcmp(r->mode, "direct") != 0)
        rp_usage_die("record", "--print needs --mode direct (a trace is printed by report)");
    return optind;
}

/* The environment the recorder reads (cmd_record.c's top comment), with
 * the recorder lib preloaded when preload_lib and the trace at abs_out.
 * Dies when out of memory. */
static void set_env(const struct rec_opts *r, const char *lib, int preload_lib, const char *abs_out)
{
    const char *pre = getenv("LD_PRELOAD");
    char *preload;
#ifdef RP_PRELOAD_FIRST /* a sanitizer build: its runtime must come first */
    const char *first = RP_PRELOAD_FIRST ":";
#else
    const char *first = "";
#endif
    if (preload_lib) {
        if (asprintf(&preload, "%s%s%s%s", first, lib, pre && *pre ? ":" : "", pre ? pre : "") < 0)
            rp_die("out of memory");
        setenv("LD_PRELOAD", preload, 1);
        free(preload);
    }
    setenv("RANKPROF_OUTPUT", abs_out, 1);
    setenv("RANKPROF_MODE", r->mode, 1);
    if (r->off) /* armed, not recording: rankprof ctl PID start */
        setenv("RANKPROF_START", "off", 1);
    if (r->print)
        setenv("RANKPROF_PRINT", "1", 1);
    setenv("RANKPROF_POLICY", r->drop ? "drop" : "wait", 1);
    if (r->classes)
        setenv("RANKPROF_CLASSES", r->classes, 1);
    if (r->throttle)
        setenv("RANKPROF_THROTTLE", r->throttle, 1);
    if (r->subtree[0])
        setenv("RANKPROF_SUBTREE", r->subtree, 1);
    if (r->max_size) {
        char v[32];
        snprintf(v, sizeof v, "%llu", r->max_size);
        setenv("RANKPROF_MAX_SIZE", v, 1);
    } else {
        unsetenv("RANKPROF_MAX_SIZE");
    }
    unsetenv("RANKPROF_RING");
    unsetenv("RANKPROF_RING_TRIGGER");
    unsetenv("RANKPROF_RING_EVERY_MS");
    unsetenv("RANKPROF_RING_KEEP");
    if (r->ring) {
        char v[32];
        snprintf(v, sizeof v, "%llu", r->ring);
        setenv("RANKPROF_RING", v, 1);
        if (r->trigger[0])
            setenv("RANKPROF_RING_TRIGGER", r->trigger, 1);
        if (r->every_ms >= 0) {
            snprintf(v, sizeof v, "%lld", r->every_ms);
            setenv("RANKPROF_RING_EVERY_MS", v, 1);
        }
        if (r->keep >= 0) {
            snprintf(v, sizeof v, "%lld", r->keep);
            setenv("RANKPROF_RING_KEEP", v, 1);
        }
    }
    unsetenv("RANKPROF_CLAIMED");
}

/*
 * The program's name as record's messages show it: the bytes a terminal
 * could act on (controls, C1, invalid UTF-8) written as \xNN, as every
 * output shows the names of a trace (docs/exports.md).  A malloc'd copy in
 * *own (the caller frees it), or a fixed text when out of memory (*own
 * NULL).
 */
static const char *prog_text(const char *prog, char **own)
{
    *own = rp_text_dup(prog, strlen(prog), 0, NULL);
    return *own ? *own : "the program";
}

/* Runs argv[0] (shown, in messages) with argv, passing the signals a user
 * sends (forwarded) on to it, and returns its wait status.  Outside a
 * terminal's foreground the program runs in a process group of its own
 * and ends if record is killed (PR_SET_PDEATHSIG: a group SIGKILL,
 * `timeout -k`, reaches only record's group).  Dies when it cannot be
 * started or waited for. */
static int run_program(char **argv, const char *shown)
{
    int own = !in_foreground();
    pid_t self = getpid();
    /* SIGINT, SIGTERM, SIGHUP, ... are the program's: record passes them on
     * and waits for it (forward_signal).  Blocked across the fork, so that
     * one arriving before the handlers know the child is not lost. */
    sigset_t fwd, old;
    sigemptyset(&fwd);
    for (unsigned i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(&fwd, forwarded[i]);
    sigprocmask(SIG_BLOCK, &fwd, &old);
    child_start = time(NULL);
    pid_t pid = fork();
    if (pid < 0)
        rp_die("fork: %s", strerror(errno));
    if (pid == 0) {
        if (own) {
            setpgid(0, 0);
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != self) /* (record died before the line above) */
                _exit(127);
        }
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(argv[0], argv);
        fprintf(stderr, "rankprof: cannot run %s: %s\n", shown, strerror(errno));
        _exit(127);
    }
    if (own)
        setpgid(pid, pid); /* (as the child does: whichever runs first) */
    child_own_group = own;
    child_pid = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (unsigned i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaction(forwarded[i], &sa, NULL);
    sigprocmask(SIG_SETMASK, &old, NULL);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            rp_die("waitpid: %s", strerror(errno));
    return st;
}

int cmd_record(int argc, char **argv)
{
    struct rec_opts r;
    int prog = parse_args(argc, argv, &r);

    char lib[2 * PATH_MAX + 2], abs_out[2 * PATH_MAX + 2];
    find_lib(lib, PATH_MAX);
    if (r.mpi) { /* the PMPI layer beside the recorder: preloaded after it */
        char *slash = strrchr(lib, '/');
        size_t dir = slash ? (size_t)(slash - lib) + 1 : 0;
        char mpi[PATH_MAX + 32];
        snprintf(mpi, sizeof(mpi), "%.*slibrankprof-mpi.so", (int)dir, lib);
        if (!is_file(mpi))
            rp_die("--mpi: no %s (it is built when mpicc is found: install libopenmpi-dev and "
                   "rebuild)",
                   mpi);
        size_t n = strlen(lib);
        snprintf(lib + n, sizeof(lib) - n, ":%s", mpi);
    }
    if (r.out[0] == '/') {
        snprintf(abs_out, sizeof(abs_out), "%s", r.out);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            rp_die("cannot get the current directory: %s", strerror(errno));
        snprintf(abs_out, sizeof(abs_out), "%s/%s", cwd, r.out);
    }
    struct stat before;
    check_output(r.out, abs_out, r.force, &before);
    /* a program with the recorder linked in records itself: a second copy
     * preloaded would take its signals and lock functions (--mpi's layer
     * needs the shared one, and brings it) */
    int is_static, has_rec;
    prog_elf(argv[prog], &is_static, &has_rec);
    set_env(&r, lib, !has_rec || r.mpi, abs_out);
    char *own;
    const char *shown = prog_text(argv[prog], &own);
    int st = run_program(argv + prog, shown);
    int bad = report_output(r.out, abs_out, &before, is_static && !has_rec, shown, WIFSIGNALED(st));
    /* the program's status; 1 when it succeeded but the trace did not */
    int rc = WIFSIGNALED(st) ? 128 + WTERMSIG(st) : WEXITSTATUS(st) ? WEXITSTATUS(st) : bad;
    if (WIFSIGNALED(st))
        fprintf(stderr, "rankprof: %s was killed by signal %d (%s)\n", shown, WTERMSIG(st),
                strsignal(WTERMSIG(st)));
    free(own);
    return rc;
}

// SPDX-License-Identifier: MIT
/*
 * cmd_ctl.c - `rankprof ctl PID start|stop|toggle|status|snapshot`: switches
 * the recording of a running process that has the recorder (preloaded by
 * `rankprof record`, or linked), through its control page and signal
 * (src/trace/control.h, docs/services.md).
 *
 * A command is a queued signal whose value says what to do; the process's
 * handler does it and counts it in the page (seq), which this command
 * waits for (2 s at most), so that when it returns the switch has taken:
 * every call the program makes after that is recorded (start), or not
 * (stop).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "trace/control.h"

/* Whether process pid has the recorder loaded (its maps name it). */
static int has_recorder(long pid)
{
    char path[64], line[4096];
    snprintf(path, sizeof path, "/proc/%ld/maps", pid);
    FILE *f = fopen(path, "r");
    int found = 0;
    if (!f)
        return 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, "librankprof") != NULL;
    fclose(f);
    return found;
}

/*
 * When process pid started, in CLOCK_REALTIME seconds (from the boot time
 * and its start in clock ticks since boot; about 10 ms precise), or -1 when
 * /proc does not say.
 */
static double proc_started(long pid)
{
    char path[64], buf[1024];
    double btime = -1;
    FILE *f = fopen("/proc/stat", "r");
    if (f) {
        while (btime < 0 && fgets(buf, sizeof buf, f))
            if (!strncmp(buf, "btime ", 6))
                btime = strtod(buf + 6, NULL);
        fclose(f);
    }
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (btime < 0 || !(f = fopen(path, "r")))
        return -1;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* (the name may hold anything) */
    unsigned long long start = 0;
    /* after the name: state (field 3) ... starttime (field 22) */
    if (!p || sscanf(p + 1,
                     " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
                     "%*d %*d %llu",
                     &start) != 1)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return btime + (double)start / (double)(hz > 0 ? hz : 100);
}

/* The control page of pid, mapped read-only; dies saying why there is none. */
const struct rp_ctl_page *rp_ctl_page_of(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "%s/rankprof.%ld", RP_CTL_DIR, pid);
    if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
        rp_die("ctl: no process %ld", pid);
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) {
        if (has_recorder(pid))
            rp_die("ctl: process %ld has the recorder but no control page (%s: %s); a plain "
                   "signal still switches it: kill -s RTMIN+8 %ld",
                   pid, path, strerror(errno), pid);
        rp_die("ctl: process %ld has no rankprof recorder: start it with `rankprof record "
               "--off -- PROGRAM` (or link librankprof)",
               pid);
    }
    void *m = mmap(NULL, sizeof(struct rp_ctl_page), PROT_READ, MAP_SHARED, fd, 0);
    close(fd);
    const struct rp_ctl_page *pg = m;
    if (m == MAP_FAILED || pg->magic != RP_CTL_MAGIC || pg->version != RP_CTL_VERSION ||
        pg->pid != (uint32_t)pid)
        rp_die("ctl: %s is not the control page of process %ld (a stale or foreign file)", path,
               pid);
    /* a process killed by SIGKILL leaves its page: one older than the
     * process now holding the pid is that dead process's (1 s of slack:
     * the boot time is in whole seconds) */
    double started = proc_started(pid);
    if (started > 0 && (double)pg->start_ns / 1e9 < started - 1.0)
        rp_die("ctl: process %ld has no rankprof recorder (%s is left by an earlier process "
               "with that number, killed before it could remove it)",
               pid, path);
    return pg;
}

static void print_status(long pid, const struct rp_ctl_page *pg)
{
    printf("process %ld: %s (%u window%s), %s mode, trace %s, control signal %d\n", pid,
           pg->recording ? "recording" : "not recording", pg->windows, pg->windows == 1 ? "" : "s",
           pg->direct ? "direct" : "trace", pg->path, pg->signo);
}

/* Whether pid has ended or is ending: gone, or its recorder has shut down
 * (its control page is unlinked then, and no request is answered). */
static int ending(long pid)
{
    char path[64];
    snprintf(path, sizeof path, "%s/rankprof.%ld", RP_CTL_DIR, pid);
    return (kill((pid_t)pid, 0) < 0 && errno == ESRCH) || access(path, F_OK) < 0;
}

/* Asks pid's recorder for a statistics file (RP_CTL_PUBLISH or
 * RP_CTL_SNAPSHOT; with a flight recorder, the snapshot of its ring) and
 * waits until it is written (at most 10 s: a snapshot merges every
 * thread's tables).  Returns 0, or -1 when the process ended (or began
 * to) before writing it; dies saying why when it cannot. */
int rp_ctl_stats(long pid, const struct rp_ctl_page *pg, int cmd)
{
    if (!pg->direct && !pg->ring && cmd != RP_CTL_SNAPSHOT)
        rp_die("process %ld records a trace: its statistics are known in the process in direct "
               "mode only (rankprof record --mode direct); read the trace with rankprof report",
               pid);
    if (!pg->direct && !pg->ring)
        rp_die("process %ld records a whole trace: a snapshot needs a flight recorder "
               "(rankprof record --ring SIZE) or direct mode (--mode direct); read the trace "
               "with rankprof report",
               pid);
    if (pg->signo <= 0)
        rp_die("process %ld's recorder has no control signal (the program handles it: set "
               "RANKPROF_CTL_SIGNAL to a free one when starting it)",
               pid);
    uint32_t seen = __atomic_load_n(&pg->snaps, __ATOMIC_ACQUIRE);
    union sigval v = {.sival_int = cmd};
    if (sigqueue((pid_t)pid, pg->signo, v) < 0)
        rp_die("cannot signal process %ld: %s", pid, strerror(errno));
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 10000 && __atomic_load_n(&pg->snaps, __ATOMIC_ACQUIRE) == seen; i++) {
        if (i % 16 == 15 && ending(pid))
            return __atomic_load_n(&pg->snaps, __ATOMIC_ACQUIRE) == seen ? -1 : 0;
        nanosleep(&ms, NULL);
    }
    if (__atomic_load_n(&pg->snaps, __ATOMIC_ACQUIRE) == seen)
        rp_die("process %ld did not write its statistics in 10 s (a forked child, or its "
               "control signal %d blocked?)",
               pid, pg->signo);
    return 0;
}

/* The highest N of the files path.snapN there are (a flight recorder's
 * snapshots), 0 if none. */
static unsigned long long snap_newest(const char *path)
{
    char pat[RP_CTL_PATH + 32];
    glob_t g;
    unsigned long long best = 0;
    snprintf(pat, sizeof pat, "%s%s[0-9]*", path, RP_CTL_SNAP_SUFFIX);
    if (glob(pat, 0, NULL, &g) != 0)
        return 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *k = g.gl_pathv[i] + strlen(path) + strlen(RP_CTL_SNAP_SUFFIX);
        if (strspn(k, "0123456789") == strlen(k)) {
            unsigned long long n = strtoull(k, NULL, 10);
            best = n > best ? n : best;
        }
    }
    globfree(&g);
    return best;
}

int cmd_ctl(int argc, char **argv)
{
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
        rp_help("ctl");
    if (argc != 3)
        rp_usage_die("ctl", "expected PID and a command (start, stop, toggle, status or snapshot)");
    char *end;
    errno = 0;
    long pid = strtol(argv[1], &end, 10);
    if (errno || end == argv[1] || *end || pid <= 0)
        rp_usage_die("ctl", "'%s' is not a process id", argv[1]);
    const char *what = argv[2];
    int cmd = !strcmp(what, "start")      ? RP_CTL_START
              : !strcmp(what, "stop")     ? RP_CTL_STOP
              : !strcmp(what, "toggle")   ? RP_CTL_TOGGLE
              : !strcmp(what, "status")   ? -1
              : !strcmp(what, "snapshot") ? RP_CTL_SNAPSHOT
                                          : -2;
    if (cmd == -2)
        rp_usage_die("ctl", "unknown command '%s' (start, stop, toggle, status or snapshot)", what);

    const struct rp_ctl_page *pg = rp_ctl_page_of(pid);
    if (cmd == RP_CTL_SNAPSHOT) {
        if (rp_ctl_stats(pid, pg, RP_CTL_SNAPSHOT) < 0)
            rp_die("ctl: process %ld ended before writing its statistics", pid);
        if (pg->direct)
            printf("process %ld: statistics written to %s%s\n", pid, pg->path, RP_CTL_SNAP_SUFFIX);
        else /* (a trigger's snapshot asked for meanwhile is the same one) */
            printf("process %ld: the last events (ring of %llu bytes) written to %s%s%llu\n", pid,
                   (unsigned long long)pg->ring, pg->path, RP_CTL_SNAP_SUFFIX,
                   snap_newest(pg->path));
        return 0;
    }
    if (cmd == -1) {
        print_status(pid, pg);
        return 0;
    }
    if (pg->signo <= 0)
        rp_die("ctl: process %ld's recorder has no control signal (the program handles it: "
               "set RANKPROF_CTL_SIGNAL to a free one when starting it)",
               pid);
    uint64_t seq = __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE);
    union sigval v = {.sival_int = cmd};
    if (sigqueue((pid_t)pid, pg->signo, v) < 0)
        rp_die("ctl: cannot signal process %ld: %s", pid, strerror(errno));
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 2000 && __atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE) == seq; i++)
        nanosleep(&ms, NULL);
    if (__atomic_load_n(&pg->seq, __ATOMIC_ACQUIRE) == seq)
        rp_die("ctl: process %ld did not answer in 2 s (its control signal %d blocked?)", pid,
               pg->signo);
    print_status(pid, pg);
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * cmd_top.c - `rankprof top PID`: the ranked table of a running process,
 * refreshed every second, as top does; `-b` prints the tables one after
 * the other (top's batch mode).
 *
 * In direct mode each refresh asks the process for its statistics
 * (RP_CTL_PUBLISH through its control page and signal,
 * src/trace/control.h): a thread of its recorder writes them as a complete
 * direct-mode trace file to /dev/shm/rankprof.PID.stats
 * (src/record/direct_pub.c).  In trace mode each refresh reads the trace
 * the process is writing (the control page names it), as far as it is
 * written: the recorder writes its buffers every 200 ms, so the table is
 * that far behind, and costs the time a report of the file so far takes.
 * Either is read as any file is (rp_load: replay, names, ranking, flags)
 * and printed by the report's table.  The process ending ends top.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "common/error.h"
#include "report/report.h"
#include "trace/control.h"

static struct termios saved_tio;
static int tio_set;

static void tio_restore(void)
{
    if (tio_set) {
        tcsetattr(0, TCSANOW, &saved_tio);
        fputs("\033[?25h", stdout); /* the cursor back */
        fflush(stdout);
        tio_set = 0;
    }
}

/* Keys one at a time, unechoed; restored at exit.  Dies when stdin is not
 * a terminal. */
static void tio_raw(void)
{
    if (!isatty(0) || !isatty(1) || tcgetattr(0, &saved_tio) < 0)
        rp_die("top: not a terminal (use -b for batch mode)");
    struct termios t = saved_tio;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(0, TCSANOW, &t) < 0)
        rp_die("top: cannot set up the terminal: %s", strerror(errno));
    tio_set = 1;
    atexit(tio_restore);
    fputs("\033[?25l", stdout); /* no cursor */
}

/* Waits ms milliseconds for a key; returns 1 when it was q (or the input
 * ended), 0 otherwise. */
static int wait_key(int ms)
{
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        struct timespec t1;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        long left = ms - ((t1.tv_sec - t0.tv_sec) * 1000 + (t1.tv_nsec - t0.tv_nsec) / 1000000);
        if (left <= 0)
            return 0;
        struct pollfd p = {0, POLLIN, 0};
        int r = poll(&p, 1, (int)left);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return 0;
        char c;
        ssize_t n = read(0, &c, 1);
        if (n <= 0 || c == 'q' || c == 'Q' || c == 3)
            return 1;
        if (c == ' ' || c == '\n')
            return 0; /* refresh now */
    }
}

static void on_stop(int sig)
{
    tio_restore();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* The terminal's rows, or 24. */
static unsigned term_rows(void)
{
    struct winsize w;
    if (ioctl(1, TIOCGWINSZ, &w) == 0 && w.ws_row > 0)
        return w.ws_row;
    return 24;
}

int cmd_top(int argc, char **argv)
{
    static const struct option lo[] = {{"batch", no_argument, NULL, 'b'},
                                       {"iterations", required_argument, NULL, 'n'},
                                       {"delay", required_argument, NULL, 'd'},
                                       {"limit", required_argument, NULL, 'l'},
                                       {"no-chains", no_argument, NULL, 'K'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    int batch = 0, chains = 1, c;
    uint64_t iters = 0;
    double delay = 1;
    uint32_t limit = 0;
    int limit_set = 0;
    opterr = 0;
    while ((c = getopt_long(argc, argv, "bn:d:h", lo, NULL)) != -1) {
        switch (c) {
        case 'b':
            batch = 1;
            break;
        case 'n':
            iters = rp_opt_u64("--iterations", optarg);
            if (!iters)
                rp_usage_die("top", "-n %s: at least 1", optarg);
            break;
        case 'd':
            delay = rp_opt_double("--delay", optarg, 0.05, 3600);
            break;
        case 'l':
            limit = (uint32_t)rp_opt_u64("--limit", optarg);
            limit_set = 1;
            break;
        case 'K':
            chains = 0;
            break;
        case 'h':
            rp_help("top");
        default:
            rp_usage_die("top", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        rp_usage_die("top", "expected one PID");
    char *end;
    errno = 0;
    long pid = strtol(argv[optind], &end, 10);
    if (errno || end == argv[optind] || *end || pid <= 0)
        rp_usage_die("top", "'%s' is not a process id", argv[optind]);

    const struct rp_ctl_page *pg = rp_ctl_page_of(pid);
    char path[RP_CTL_PATH + 64];
    /* (rp_ctl_page_of dies without a recorder); a flight recorder writes
     * the file on request, as direct mode does */
    int trace = !pg->direct && !pg->ring;
    if (trace && !pg->path[0])
        rp_die("top: process %ld records no trace file (its recorder writes none yet)", pid);
    if (trace)
        snprintf(path, sizeof path, "%.*s", RP_CTL_PATH, pg->path);
    else
        snprintf(path, sizeof path, "%s/rankprof.%ld.stats", RP_CTL_DIR, pid);
    if (!batch) {
        tio_raw();
        signal(SIGINT, on_stop);
        signal(SIGTERM, on_stop);
    }
    for (uint64_t i = 0; !iters || i < iters; i++) {
        if ((i && kill((pid_t)pid, 0) < 0 && errno == ESRCH) ||
            (!trace && rp_ctl_stats(pid, pg, RP_CTL_PUBLISH) < 0)) {
            tio_restore();
            fprintf(stderr, "rankprof: top: process %ld ended\n", pid);
            break;
        }
        struct rp_load_opts ld;
        rp_load_opts_default(&ld);
        rp_opt_input("top", 'i', path, &ld);
        rp_opt_input("top", RP_OPT_ONE_FILE, NULL, &ld);
        /* a trace being written: up to its last whole chunk, with no END
         * (said once, in the first table's warnings) */
        ld.replay.force = trace;
        ld.quiet = trace && i > 0;
        struct rp_profile p = {0};
        rp_load(&ld, &p);
        if (trace && !p.ended)
            p.running = 1;
        struct rp_report_opts ro = {.sort = RP_SORT_RANK, .chains = chains, .limit = limit};
        ro.ranked = ro.flagged = ld.rank;
        ro.flag = &ld.flag;
        time_t now = time(NULL);
        char hms[16];
        strftime(hms, sizeof hms, "%H:%M:%S", localtime(&now));
        if (!batch) {
            ro.color = !getenv("NO_COLOR");
            if (!limit_set) {
                unsigned rows = term_rows();
                ro.limit = rows > 16 ? rows - 14 : 2;
            }
            fputs("\033[H\033[2J", stdout);
        }
        printf("rankprof top - process %ld - %s - every %gs%s\n", pid, hms, delay,
               batch ? "" : " (q quits)");
        int rc = rp_report_table(stdout, &p, &ro);
        rp_profile_free(&p);
        if (rc == 0 && fflush(stdout) != 0)
            rc = RP_EIO;
        if (rc < 0) {
            tio_restore();
            rp_die("top: writing the table: %s", rp_strerror(rc));
        }
        if (iters && i + 1 == iters)
            break;
        if (batch) {
            putchar('\n');
            struct timespec ts = {(time_t)delay, (long)((delay - (double)(time_t)delay) * 1e9)};
            while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        } else if (wait_key((int)(delay * 1000))) {
            break;
        }
    }
    tio_restore();
    return 0;
}

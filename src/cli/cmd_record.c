/*
 * cmd_record.c - `rankprof record`: runs a program with the recorder
 * preloaded.  Everything is passed through environment variables, so the
 * same variables work without this command (docs/recording.md):
 *
 *   LD_PRELOAD          librankprof.so, in front of what was there
 *   RANKPROF_OUTPUT     the trace file (absolute path)
 *   RANKPROF_MODE       trace, or direct (statistics in the process, no trace:
 *                       docs/direct-mode.md)
 *   RANKPROF_PRINT      1: print the direct-mode table at exit (--print)
 *   RANKPROF_POLICY     wait (lossless, default) or drop
 *   RANKPROF_CLASSES    event classes to record, e.g. func,lock
 *   RANKPROF_THROTTLE   CALLS:NS, or 1 for TAU's 100000:10000 (--throttle[=...]):
 *                       functions called more than CALLS times with a mean
 *                       under NS ns are then counted, not recorded
 *
 * Exits with the program's exit status (128 + N when signal N killed it).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"

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

/* The program record runs; 0 until it is forked. */
static volatile pid_t child_pid;
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP};

/*
 * Passes a signal sent to record on to the program, whose trace is then
 * written by its own ending; record keeps waiting and reports after it.
 * A signal from the terminal (si_code SI_KERNEL: Ctrl-C, a hang-up) has
 * reached the program's process group already and is not sent twice.
 * Async-signal-safe: kill only.  Cannot fail visibly (a program already
 * gone makes kill fail, and waitpid then returns).
 */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    int saved = errno;
    if (child_pid > 0 && (si == NULL || si->si_code != SI_KERNEL))
        kill(child_pid, sig);
    errno = saved;
}

int cmd_record(int argc, char **argv)
{
    static const struct option lo[] = {
        {"output", required_argument, NULL, 'o'},   {"mode", required_argument, NULL, 'm'},
        {"classes", required_argument, NULL, 'c'},  {"drop", no_argument, NULL, 'd'},
        {"print", no_argument, NULL, 'p'},          {"help", no_argument, NULL, 'h'},
        {"throttle", optional_argument, NULL, 't'}, {NULL, 0, NULL, 0}};
    const char *out = RP_DEFAULT_DATA, *mode = "trace", *classes = NULL, *throttle = NULL;
    int drop = 0, print = 0, c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "+o:h", lo, NULL)) != -1) {
        switch (c) {
        case 'o':
            out = optarg;
            break;
        case 'm':
            mode = optarg;
            if (strcmp(mode, "trace") != 0 && strcmp(mode, "direct") != 0)
                rp_usage_die("record", "--mode %s: the modes are 'trace' and 'direct'", mode);
            break;
        case 'p':
            print = 1;
            break;
        case 'c':
            classes = check_classes(optarg);
            break;
        case 'd':
            drop = 1;
            break;
        case 't': {
            /* CALLS[:NS] or :NS, numbers; the recorder applies the defaults */
            const char *q = throttle = optarg ? optarg : "1";
            q += strspn(q, "0123456789");
            if (*q == ':' && q[1])
                q += 1 + strspn(q + 1, "0123456789");
            if (*q || !strcmp(throttle, ":"))
                rp_usage_die("record", "--throttle=%s: give CALLS:NS (e.g. 100000:10000)",
                             throttle);
            break;
        }
        case 'h':
            rp_usage_die("record", "record runs PROGRAM with the recorder preloaded");
        default:
            rp_usage_die("record", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind >= argc)
        rp_usage_die("record", "no program given");
    if (print && strcmp(mode, "direct") != 0)
        rp_usage_die("record", "--print needs --mode direct (a trace is printed by report)");

    char lib[PATH_MAX], abs_out[2 * PATH_MAX + 2];
    find_lib(lib, sizeof(lib));
    if (out[0] == '/') {
        snprintf(abs_out, sizeof(abs_out), "%s", out);
    } else {
        char cwd[PATH_MAX];
        if (!getcwd(cwd, sizeof(cwd)))
            rp_die("cannot get the current directory: %s", strerror(errno));
        snprintf(abs_out, sizeof(abs_out), "%s/%s", cwd, out);
    }
    const char *pre = getenv("LD_PRELOAD");
    char *preload;
#ifdef RP_PRELOAD_FIRST /* a sanitizer build: its runtime must come first */
    const char *first = RP_PRELOAD_FIRST ":";
#else
    const char *first = "";
#endif
    if (asprintf(&preload, "%s%s%s%s", first, lib, pre && *pre ? ":" : "", pre ? pre : "") < 0)
        rp_die("out of memory");
    setenv("LD_PRELOAD", preload, 1);
    setenv("RANKPROF_OUTPUT", abs_out, 1);
    setenv("RANKPROF_MODE", mode, 1);
    if (print)
        setenv("RANKPROF_PRINT", "1", 1);
    setenv("RANKPROF_POLICY", drop ? "drop" : "wait", 1);
    if (classes)
        setenv("RANKPROF_CLASSES", classes, 1);
    if (throttle)
        setenv("RANKPROF_THROTTLE", throttle, 1);
    unsetenv("RANKPROF_CLAIMED");
    free(preload);

    /* SIGINT, SIGTERM and SIGHUP are the program's: record passes them on
     * and waits for it (forward_signal).  Blocked across the fork, so that
     * one arriving before the handlers know the child is not lost. */
    sigset_t fwd, old;
    sigemptyset(&fwd);
    for (unsigned i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaddset(&fwd, forwarded[i]);
    sigprocmask(SIG_BLOCK, &fwd, &old);
    pid_t pid = fork();
    if (pid < 0)
        rp_die("fork: %s", strerror(errno));
    if (pid == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        execvp(argv[optind], argv + optind);
        fprintf(stderr, "rankprof: cannot run %s: %s\n", argv[optind], strerror(errno));
        _exit(127);
    }
    child_pid = pid;
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = forward_signal;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    for (unsigned i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
        sigaction(forwarded[i], &sa, NULL);
    signal(SIGQUIT, SIG_IGN); /* the terminal sends it to the program too */
    sigprocmask(SIG_SETMASK, &old, NULL);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            rp_die("waitpid: %s", strerror(errno));
    struct stat sb;
    if (stat(abs_out, &sb) == 0)
        fprintf(stderr, "rankprof: wrote %s (%lld bytes)\n", out, (long long)sb.st_size);
    else
        fprintf(stderr, "rankprof: %s was not written (is the program dynamically linked?)\n", out);
    if (WIFSIGNALED(st)) {
        fprintf(stderr, "rankprof: %s was killed by signal %d (%s)\n", argv[optind], WTERMSIG(st),
                strsignal(WTERMSIG(st)));
        return 128 + WTERMSIG(st);
    }
    return WEXITSTATUS(st);
}

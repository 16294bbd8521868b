// SPDX-License-Identifier: MIT
/*
 * crash.c - a program that ends abnormally in a chosen way, for
 * tests/e2e_abnormal.sh.  usage: prog_crash MODE [N]
 *
 * main calls work() N times (default 1000); work() calls leaf() twice.  Then:
 *
 *   segv     writes through a NULL pointer            (SIGSEGV)
 *   deep     the same in crash_in(0), called as main -> crash_in(3) ->
 *            crash_in(2) -> crash_in(1) -> crash_in(0)
 *   overflow recurses in overflow_in() until the stack (limited to 1 MiB)
 *            runs out: SIGSEGV with no stack left for a handler but an
 *            alternate one
 *   abort    calls abort()                            (SIGABRT)
 *   fpe      divides by zero                          (SIGFPE)
 *   chain    installs its own SIGSEGV handler, which prints "program handler"
 *            and calls the handler it replaced (the recorder's, when
 *            recorded), then writes through NULL
 *   exit     a second thread calls work() N times and exit(3) while main
 *            waits in pthread_join (so main's buffer is still being filled)
 *   _exit    sleeps 1 s (the periodic flush runs), then _exit(4)
 *   kill     sleeps 1 s, then SIGKILLs itself
 *   normal   returns 0
 *
 * Expected calls in the trace: work N (2N for exit), leaf 2N (4N for exit),
 * main 1 unless main's span is still open at the end (every mode but
 * normal: main is then one unclosed span).
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "lib/calls.h"

static long n_calls = 1000;
static struct sigaction old_segv;

static __attribute__((no_instrument_function)) void program_handler(int sig, siginfo_t *si,
                                                                    void *uc)
{
    static const char msg[] = "program handler\n";
    ssize_t w = write(1, msg, sizeof(msg) - 1);
    (void)w;
    if (old_segv.sa_flags & SA_SIGINFO)
        old_segv.sa_sigaction(sig, si, uc);
    else if (old_segv.sa_handler != SIG_DFL && old_segv.sa_handler != SIG_IGN)
        old_segv.sa_handler(sig);
    else { /* nothing to chain to: die by the signal */
        signal(sig, SIG_DFL);
        raise(sig);
    }
}

/* The faults themselves, hidden from UBSan (the tests build every program
 * with the sanitizers too), which would otherwise end the program first. */
#define NO_UBSAN __attribute__((no_sanitize("undefined"), noinline, no_instrument_function))

static NO_UBSAN void store_null(volatile int *p)
{
    *p = 1;
}

static NO_UBSAN long divide(long a, volatile int b)
{
    return a / b;
}

static void *exiter(void *arg)
{
    (void)arg;
    for (long i = 0; i < n_calls; i++)
        work((unsigned)i);
    fflush(stdout);
    exit(3);
}

/* Recurses d more times, then writes through p (deep). */
__attribute__((noinline)) int crash_in(int d, volatile int *p)
{
    if (d == 0) {
        store_null(p);
        return 0;
    }
    return crash_in(d - 1, p) + 1;
}

/* Recurses until the stack overflows: each level holds 1 KiB. */
__attribute__((noinline)) int overflow_in(volatile int *p)
{
    volatile char pad[1024];
    pad[0] = (char)*p;
    return pad[0] == 0 ? overflow_in(p) + pad[0] : 0; /* (*p is 0) */
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "normal";
    if (argc > 2)
        n_calls = atol(argv[2]);
    for (long i = 0; i < n_calls; i++)
        work((unsigned)i);
    printf("crash: %s after %ld calls\n", mode, n_calls);
    fflush(stdout);

    volatile int *volatile null = NULL;
    volatile int zero = 0;
    if (!strcmp(mode, "segv")) {
        store_null(null);
    } else if (!strcmp(mode, "deep")) {
        sink = (unsigned)crash_in(3, null);
    } else if (!strcmp(mode, "overflow")) {
        struct rlimit rl; /* (the limit is checked when the stack grows) */
        if (getrlimit(RLIMIT_STACK, &rl) != 0)
            rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
        if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1 << 20)
            rl.rlim_cur = 1 << 20;
        setrlimit(RLIMIT_STACK, &rl);
        sink = (unsigned)overflow_in(&zero);
    } else if (!strcmp(mode, "abort")) {
        abort();
    } else if (!strcmp(mode, "fpe")) {
        sink = (unsigned)divide(n_calls, zero);
    } else if (!strcmp(mode, "chain")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_sigaction = program_handler;
        sa.sa_flags = SA_SIGINFO | SA_RESETHAND;
        sigaction(SIGSEGV, &sa, &old_segv);
        store_null(null);
    } else if (!strcmp(mode, "exit")) {
        pthread_t th;
        pthread_create(&th, NULL, exiter, NULL);
        pthread_join(th, NULL);
    } else if (!strcmp(mode, "_exit")) {
        sleep(1);
        _exit(4);
    } else if (!strcmp(mode, "kill")) {
        sleep(1);
        kill(getpid(), SIGKILL);
    } else if (strcmp(mode, "normal") != 0) {
        fprintf(stderr, "crash: unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}

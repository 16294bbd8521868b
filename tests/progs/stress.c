// SPDX-License-Identifier: MIT
/*
 * stress.c - many threads recording at once, for tests/e2e_stress.sh.
 *
 *   prog_stress threads T N     T threads run body(N) at the same time
 *   prog_stress churn R K N     R rounds, each starting K threads that run
 *                               body(N) and exit (threads come and go all
 *                               the time: R * K threads in all)
 *   prog_stress serial N        body(N) on the main thread only
 *   prog_stress paced T N       like threads, but each thread sleeps 1 ms
 *                               every 100 calls of outer() (so that the
 *                               periodic flush runs while threads append)
 *   prog_stress masked T N      like threads, with SIGINT, SIGTERM and
 *                               SIGHUP blocked in every thread (left at
 *                               their default: a service's workers, whose
 *                               signals one thread takes with sigwait)
 *   prog_stress handled T N     like threads, with SIGUSR2 blocked in every
 *                               thread and a handler installed for it
 *
 * body(N) calls outer() N times; outer() calls inner() twice.  Expected
 * calls: outer = threads * N, inner = 2 * threads * N, body = threads,
 * main 1; edges <root>->body (threads; <root>->main 1 more), body->outer,
 * outer->inner.  Raw records: 2 per call.  Prints "calls C" with C the
 * number of function calls made, main included.
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static _Thread_local volatile unsigned long sink; /* per thread: no race */

void inner(unsigned long x)
{
    sink += x;
}

void outer(unsigned long x)
{
    inner(x);
    inner(x >> 1);
}

static int paced;

void *body(void *arg)
{
    long n = (long)arg;
    for (long i = 0; i < n; i++) {
        outer((unsigned long)i);
        if (paced && i % 100 == 99)
            usleep(1000);
    }
    return NULL;
}

/* Runs k threads of body(n) and joins them.  Exits 1 if one cannot start. */
static __attribute__((no_instrument_function)) void run_threads(long k, long n)
{
    pthread_t *th = calloc((size_t)k, sizeof(*th));
    if (!th)
        exit(1);
    for (long i = 0; i < k; i++)
        if (pthread_create(&th[i], NULL, body, (void *)n) != 0) {
            perror("pthread_create");
            exit(1);
        }
    for (long i = 0; i < k; i++)
        pthread_join(th[i], NULL);
    free(th);
}

static void on_usr2(int sig)
{
    (void)sig;
}

/* Blocks SIGINT, SIGTERM and SIGHUP (masked), or SIGUSR2 with a handler
 * installed (handled), in this thread and the threads it starts. */
static __attribute__((no_instrument_function)) void block(int handled)
{
    sigset_t m;
    sigemptyset(&m);
    if (handled) {
        signal(SIGUSR2, on_usr2);
        sigaddset(&m, SIGUSR2);
    } else {
        sigaddset(&m, SIGINT);
        sigaddset(&m, SIGTERM);
        sigaddset(&m, SIGHUP);
    }
    pthread_sigmask(SIG_BLOCK, &m, NULL);
}

int main(int argc, char **argv)
{
    long threads = 0, n = 0;
    if (argc == 4 && (!strcmp(argv[1], "masked") || !strcmp(argv[1], "handled")))
        block(argv[1][0] == 'h');
    if (argc == 4 && (!strcmp(argv[1], "threads") || !strcmp(argv[1], "paced") ||
                      !strcmp(argv[1], "masked") || !strcmp(argv[1], "handled"))) {
        paced = argv[1][0] == 'p';
        threads = atol(argv[2]);
        n = atol(argv[3]);
        run_threads(threads, n);
    } else if (argc == 5 && !strcmp(argv[1], "churn")) {
        long rounds = atol(argv[2]), k = atol(argv[3]);
        n = atol(argv[4]);
        for (long r = 0; r < rounds; r++)
            run_threads(k, n);
        threads = rounds * k;
    } else if (argc == 3 && !strcmp(argv[1], "serial")) {
        threads = 1;
        n = atol(argv[2]);
        body((void *)n);
    } else {
        fprintf(stderr,
                "usage: prog_stress threads|paced|masked|handled T N | churn R K N | serial N\n");
        return 2;
    }
    printf("calls %ld\n", 1 + threads * (1 + 3 * n));
    return 0;
}

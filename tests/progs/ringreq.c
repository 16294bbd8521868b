// SPDX-License-Identifier: MIT
/*
 * ringreq.c - requests with exactly known counts and one planted slow
 * call, for tests/e2e_ring.sh (record --ring, the flight recorder).
 *
 *   prog_ringreq WARM N SLOW MS [hold]
 *       main calls warm() WARM times, then serves N requests: request i
 *       (0, 1, ...) is a profile point "request" with a budget of 10 ms
 *       around a mark "seq" with argument i and handle_request(i), which
 *       calls parse() and compute() once;
 *       request SLOW (none when SLOW >= N) sleeps MS ms in compute().
 *       Prints "pid P" first and "ready R" (R: the requests served so
 *       far) after them, flushed.  With hold: each line read from stdin
 *       serves N more requests (none slow) and prints "ready R" again;
 *       end of input ends the program.  Exits 0.
 */
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rankprof.h"

static volatile unsigned long sink;
static unsigned long slow = (unsigned long)-1, slow_ms;

__attribute__((noinline)) void warm(unsigned long i)
{
    sink += i;
}

__attribute__((noinline)) void parse(unsigned long i)
{
    sink += i * 3;
}

__attribute__((noinline)) void compute(unsigned long i)
{
    if (i == slow) {
        struct timespec ts = {(time_t)(slow_ms / 1000), (long)(slow_ms % 1000) * 1000000};
        nanosleep(&ts, NULL);
    }
    sink += i * 7;
}

__attribute__((noinline)) void handle_request(unsigned long i)
{
    parse(i);
    compute(i);
}

static void serve(unsigned long from, unsigned long n)
{
    for (unsigned long i = from; i < from + n; i++) {
        RP_POINT_BUDGET("request", 10000000);
        RP_MARK("seq", i);
        handle_request(i);
    }
    printf("ready %lu\n", from + n);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    unsigned long nwarm = strtoul(argv[1], NULL, 10), n = strtoul(argv[2], NULL, 10);
    slow = strtoul(argv[3], NULL, 10);
    slow_ms = strtoul(argv[4], NULL, 10);
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    for (unsigned long i = 0; i < nwarm; i++)
        warm(i);
    serve(0, n);
    if (argc > 5 && !strcmp(argv[5], "hold")) {
        char line[64];
        unsigned long done = n;
        /* (polled in short waits: ThreadSanitizer runs a signal's handler
         * only when the thread comes out of a call it does not know blocks,
         * such as a read of a pipe) */
        for (;;) {
            struct pollfd pf = {.fd = 0, .events = POLLIN};
            if (poll(&pf, 1, 50) <= 0)
                continue;
            if (!fgets(line, sizeof line, stdin))
                break;
            serve(done, n);
            done += n;
        }
    }
    return 0;
}

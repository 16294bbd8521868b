// SPDX-License-Identifier: MIT
/*
 * sampled.c - a function that turns slow after the throttle took it, for
 * tests/e2e_throttle.sh (record --throttle=CALLS:NS:K):
 *
 *   prog_sampled N   main calls work(i) N times: for i < N / 2 it returns
 *                    at once, then it is busy for 20 us at least (it
 *                    watches the clock).  Prints nothing; exits 0.
 *
 * Throttled early (its first calls are short), work() shows the slow half
 * only through the calls the throttle still times.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

static unsigned long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long)ts.tv_sec * 1000000000ul + (unsigned long)ts.tv_nsec;
}

__attribute__((noinline)) void work(unsigned long i, unsigned long half)
{
    if (i < half) {
        sink += i;
        return;
    }
    unsigned long t0 = now_ns();
    while (now_ns() - t0 < 20000)
        sink++;
}

int main(int argc, char **argv)
{
    unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    for (unsigned long i = 0; i < n; i++)
        work(i, n / 2);
    return 0;
}

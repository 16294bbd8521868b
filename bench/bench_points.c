// SPDX-License-Identifier: MIT
/*
 * bench_points.c - what a profile point costs: nanoseconds per RP_POINT
 * scope when the site is switched off (rp_site_enable), when its class is
 * switched off (rp_classes_set), and when it is recorded (a begin and an
 * end record), against an empty loop.  The budget of issue 3: a
 * switched-off site costs <= 3 ns.
 *
 * Linked with the recorder, so it records while it runs: run it as
 *   RANKPROF_OUTPUT=/dev/null ./bench_points [ITERATIONS]
 * Prints one line per case: "name ns_per_iteration".
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rankprof.h"

static volatile unsigned sink;

static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) static void loop_empty(long n)
{
    for (long i = 0; i < n; i++)
        sink += (unsigned)i;
}

__attribute__((noinline)) static void loop_off(long n)
{
    for (long i = 0; i < n; i++) {
        RP_POINT("bench.off");
        sink += (unsigned)i;
    }
}

__attribute__((noinline)) static void loop_on(long n)
{
    for (long i = 0; i < n; i++) {
        RP_POINT("bench.on");
        sink += (unsigned)i;
    }
}

/* Best of 5 runs of f(n), in ns per iteration. */
static double best(void (*f)(long), long n)
{
    double b = 1e300;
    for (int r = 0; r < 5; r++) {
        double t0 = now_ns();
        f(n);
        double t = (now_ns() - t0) / (double)n;
        b = t < b ? t : b;
    }
    return b;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    if (n <= 0) {
        fprintf(stderr, "usage: bench_points [ITERATIONS]\n");
        return 2;
    }
    rp_site_enable("bench.off", 0);
    double empty = best(loop_empty, n);
    double off = best(loop_off, n);
    uint32_t was = rp_classes_set(0, RP_CLASS_BIT_POINT);
    double cls_off = best(loop_on, n);
    rp_classes_set(was & RP_CLASS_BIT_POINT, 0);
    /* recorded: 20000 spans = 40000 records, less than the default 4
     * buffers of 16384, so the best run measures the thread's cost rather
     * than the writer's encoding speed (which bench.sh measures) */
    long m = n < 20000 ? n : 20000;
    double on = best(loop_on, m);
    printf("empty_loop        %6.2f\n", empty);
    printf("site_off          %6.2f  (+%.2f ns)\n", off, off - empty);
    printf("class_off         %6.2f  (+%.2f ns)\n", cls_off, cls_off - empty);
    printf("recorded          %6.2f  (+%.2f ns, %s)\n", on, on - empty,
           was & RP_CLASS_BIT_POINT ? "begin + end" : "not recording");
    return 0;
}

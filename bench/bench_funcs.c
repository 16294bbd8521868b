// SPDX-License-Identifier: MIT
/*
 * bench_funcs.c - what an instrumented function costs per call under the
 * function filter: an uninstrumented call (the floor), a recorded call
 * before any function rule exists (the default hooks), a call of a
 * function switched off by name (rp_func_enable), and a recorded call once
 * the filter is active (every hook looks its address up).  The budget of
 * issue 3: a switched-off function costs <= 3 ns per call.
 *
 * Built with -finstrument-functions and linked with the recorder, so it
 * records while it runs:
 *   RANKPROF_OUTPUT=/dev/null ./bench_funcs [ITERATIONS]
 * Prints one line per case: "name ns_per_call".  The loops themselves are
 * not instrumented; each iteration makes one call.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rankprof.h"

#define NOI __attribute__((no_instrument_function))

static volatile unsigned sink;

NOI static double now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

/* the called functions: the same body, instrumented or not */
NOI __attribute__((noinline)) void fn_plain(unsigned i)
{
    sink += i;
}

__attribute__((noinline)) void fn_on(unsigned i)
{
    sink += i;
}

__attribute__((noinline)) void fn_off(unsigned i)
{
    sink += i;
}

NOI __attribute__((noinline)) static void loop_plain(long n)
{
    for (long i = 0; i < n; i++)
        fn_plain((unsigned)i);
}

NOI __attribute__((noinline)) static void loop_on(long n)
{
    for (long i = 0; i < n; i++)
        fn_on((unsigned)i);
}

NOI __attribute__((noinline)) static void loop_off(long n)
{
    for (long i = 0; i < n; i++)
        fn_off((unsigned)i);
}

/* Best of 5 runs of f(n), in ns per iteration. */
NOI static double best(void (*f)(long), long n)
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

NOI int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20000000;
    if (n <= 0) {
        fprintf(stderr, "usage: bench_funcs [ITERATIONS]\n");
        return 2;
    }
    /* recorded: 8000 calls = 16000 records, within the first buffer, so
     * the thread's cost is measured, not the writer's (bench.sh does) */
    long m = n < 8000 ? n : 8000;
    double plain = best(loop_plain, n);
    double on = best(loop_on, m);
    uint32_t was = rp_classes_set(0, RP_CLASS_BIT_FUNC);
    double cls_off = best(loop_on, n);
    rp_classes_set(was & RP_CLASS_BIT_FUNC, 0);
    int matched = rp_func_enable("fn_off", 0);
    double off = best(loop_off, n);
    double gated = best(loop_on, m);
    printf("plain_call        %6.2f\n", plain);
    printf("recorded          %6.2f  (+%.2f ns, default hooks)\n", on, on - plain);
    printf("class_off         %6.2f  (+%.2f ns, function class off: the hooks' floor)\n", cls_off,
           cls_off - plain);
    printf("func_off          %6.2f  (+%.2f ns, %d symbol%s matched)\n", off, off - plain, matched,
           matched == 1 ? "" : "s");
    printf("recorded_filtered %6.2f  (+%.2f ns, filter active)\n", gated, gated - plain);
    return 0;
}

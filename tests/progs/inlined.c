// SPDX-License-Identifier: MIT
/*
 * inlined.c - a test program for the instrumentation options, recorded by
 * tests/e2e_inlined.sh, which builds it with each compiler and option.
 * main calls outer() N times (N = argv[1], default 1000); outer() calls the
 * forced-inline helper mix() twice.
 *
 * Expected call counts:
 *   GCC -finstrument-functions (inlined copies instrumented too):
 *       main 1, outer N, mix 2N; edges main->outer N, outer->mix 2N.
 *   GCC ... -finstrument-functions-exclude-function-list=mix,
 *   clang -finstrument-functions-after-inlining:
 *       main 1, outer N, no mix; edge main->outer N.
 * Prints "sum = S".
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned sink;

static inline __attribute__((always_inline)) unsigned mix(unsigned x)
{
    return (x * 2654435761u) ^ (x >> 7);
}

__attribute__((noinline)) unsigned outer(unsigned x)
{
    unsigned r = mix(x) + mix(x + 1);
    sink = r;
    return r;
}

int main(int argc, char **argv)
{
    unsigned n = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 1000u;
    unsigned s = 0;
    for (unsigned i = 0; i < n; i++)
        s += outer(i);
    printf("sum = %u\n", s);
    return 0;
}

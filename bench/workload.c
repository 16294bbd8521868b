// SPDX-License-Identifier: MIT
/*
 * workload.c - the benchmark workload of the issues: per iteration a
 * dispatch() calls 8 small noinline leaves (a few multiply-adds each) and a
 * recursive fib(5) (15 calls): 24 instrumented calls per iteration.  The
 * default 2,000,000 iterations make 48M calls.  Prints the iterations and a
 * checksum so the work cannot be optimised away.
 *
 * Built four ways (bench/CMakeLists.txt): plain, -finstrument-functions,
 * -pg, and by scripts/bench.sh with -DTRACY_ENABLE against Tracy's client,
 * where ZONE_BEGIN/ZONE_END put an explicit Tracy zone around the body of
 * every function (main included), so that Tracy sees the same 24 calls per
 * iteration plus one, named, as the hooks do.  Elsewhere they are empty.
 */
#include <stdio.h>
#include <stdlib.h>

#ifdef TRACY_ENABLE
#include "tracy/TracyC.h"
#define ZONE_BEGIN(name) TracyCZoneN(zone, name, 1)
#define ZONE_END()       TracyCZoneEnd(zone)
#else
#define ZONE_BEGIN(name) ((void)0)
#define ZONE_END()       ((void)0)
#endif

#define LEAF(n)                                                                                    \
    __attribute__((noinline)) unsigned leaf##n(unsigned x)                                         \
    {                                                                                              \
        ZONE_BEGIN("leaf" #n);                                                                     \
        unsigned r = x * (2654435761u + n) + (x >> 3) * (n + 1) + 0x9e37u;                         \
        ZONE_END();                                                                                \
        return r;                                                                                  \
    }
LEAF(0)
LEAF(1)
LEAF(2)
LEAF(3)
LEAF(4)
LEAF(5)
LEAF(6)
LEAF(7)

__attribute__((noinline)) unsigned fib(unsigned n)
{
    ZONE_BEGIN("fib");
    unsigned r = n < 2 ? n : fib(n - 1) + fib(n - 2);
    ZONE_END();
    return r;
}

__attribute__((noinline)) unsigned dispatch(unsigned x)
{
    ZONE_BEGIN("dispatch");
    x = leaf0(x);
    x = leaf1(x);
    x = leaf2(x);
    x = leaf3(x);
    x = leaf4(x);
    x = leaf5(x);
    x = leaf6(x);
    x = leaf7(x);
    x += fib(5);
    ZONE_END();
    return x;
}

int main(int argc, char **argv)
{
    ZONE_BEGIN("main");
    unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000ul;
    unsigned x = 1;
    for (unsigned long i = 0; i < iters; i++)
        x = dispatch(x);
    printf("iterations %lu calls %lu checksum %u\n", iters, iters * 24 + 1, x);
    ZONE_END();
    return 0;
}

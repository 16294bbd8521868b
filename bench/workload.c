/*
 * workload.c - the benchmark workload of the issues: per iteration a
 * dispatch() calls 8 small noinline leaves (a few multiply-adds each) and a
 * recursive fib(5) (15 calls): 24 instrumented calls per iteration.  The
 * default 2,000,000 iterations make 48M calls.  Prints the iterations and a
 * checksum so the work cannot be optimised away.
 */
#include <stdio.h>
#include <stdlib.h>

#define LEAF(n)                                                                  \
    __attribute__((noinline)) unsigned leaf##n(unsigned x)                       \
    {                                                                            \
        return x * (2654435761u + n) + (x >> 3) * (n + 1) + 0x9e37u;            \
    }
LEAF(0) LEAF(1) LEAF(2) LEAF(3) LEAF(4) LEAF(5) LEAF(6) LEAF(7)

__attribute__((noinline)) unsigned fib(unsigned n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) unsigned dispatch(unsigned x)
{
    x = leaf0(x);
    x = leaf1(x);
    x = leaf2(x);
    x = leaf3(x);
    x = leaf4(x);
    x = leaf5(x);
    x = leaf6(x);
    x = leaf7(x);
    return x + fib(5);
}

int main(int argc, char **argv)
{
    unsigned long iters = argc > 1 ? strtoul(argv[1], NULL, 10) : 2000000ul;
    unsigned x = 1;
    for (unsigned long i = 0; i < iters; i++)
        x = dispatch(x);
    printf("iterations %lu calls %lu checksum %u\n", iters, iters * 24 + 1, x);
    return 0;
}

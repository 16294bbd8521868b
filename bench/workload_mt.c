// SPDX-License-Identifier: MIT
/*
 * workload_mt.c - the thread rows of `make bench`: T threads each run
 * ITERS iterations of workload.c's pattern (a dispatch() calling 8 small
 * noinline leaves and a recursive fib(5): 24 instrumented calls per
 * iteration), started together at a barrier.  main and the thread bodies
 * are not instrumented, so a run makes exactly T * ITERS * 24 calls.
 *
 *   workload_mt T ITERS     prints "threads T calls C checksum S"
 *
 * Exits 1 on bad arguments or when a thread cannot be started.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define NOHOOK __attribute__((no_instrument_function))
#define MAXT   64

#define LEAF(n)                                                                                    \
    __attribute__((noinline)) unsigned leaf##n(unsigned x)                                         \
    {                                                                                              \
        return x * (2654435761u + n) + (x >> 3) * (n + 1) + 0x9e37u;                               \
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
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

__attribute__((noinline)) unsigned dispatch(unsigned x)
{
    return leaf0(x) ^ leaf1(x) ^ leaf2(x) ^ leaf3(x) ^ leaf4(x) ^ leaf5(x) ^ leaf6(x) ^ leaf7(x) ^
           fib(5);
}

static pthread_barrier_t start;
static unsigned long iters;
static unsigned sums[MAXT];

NOHOOK static void *body(void *arg)
{
    unsigned *sum = arg, s = 0;
    pthread_barrier_wait(&start);
    for (unsigned long i = 0; i < iters; i++)
        s += dispatch((unsigned)i);
    *sum = s;
    return NULL;
}

NOHOOK int main(int argc, char **argv)
{
    long t = argc > 2 ? strtol(argv[1], NULL, 10) : 0;
    iters = argc > 2 ? strtoul(argv[2], NULL, 10) : 0;
    if (t < 1 || t > MAXT || iters == 0) {
        fprintf(stderr, "usage: workload_mt THREADS(1..%d) ITERS\n", MAXT);
        return 1;
    }
    pthread_t th[MAXT];
    pthread_barrier_init(&start, NULL, (unsigned)t);
    for (long i = 0; i < t; i++)
        if (pthread_create(&th[i], NULL, body, &sums[i]) != 0) {
            fprintf(stderr, "workload_mt: cannot start thread %ld\n", i);
            return 1;
        }
    unsigned s = 0;
    for (long i = 0; i < t; i++) {
        pthread_join(th[i], NULL);
        s += sums[i];
    }
    printf("threads %ld calls %lu checksum %u\n", t, (unsigned long)t * iters * 24, s);
    return 0;
}

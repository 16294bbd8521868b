// SPDX-License-Identifier: MIT
/*
 * tiny.c - known tiny functions, for the recorder's overhead compensation
 * (tests/e2e_comp.sh, docs/performance.md).
 *
 *   main -> parent()  REPS times; each runs ITERS x { WORK; leaf(); }
 *        -> fib(FIB)  once
 *
 * leaf() has an empty body, so everything measured in it is the recorder's.
 * The same loop with an uninstrumented leaf (parent_ref, leaf_ref: marked
 * no_instrument_function) is run REPS times too, interleaved with
 * parent()'s runs, and timed with CLOCK_MONOTONIC: it is what parent()
 * costs without the recorder.  fib_ref is fib without instrumentation,
 * timed the same way.  Prints
 *
 *   ref_ns MIN MEDIAN        parent_ref over its REPS runs
 *   fib_ref_ns MIN           fib_ref(FIB), best of REPS
 *   fib(FIB) = F
 *
 * Arguments: [REPS [ITERS [FIB [WORK]]]], default 41 5000 18 2 (WORK:
 * multiply-adds per iteration besides the call).  A run of parent()
 * records 10000 events, less than one recorder buffer (16384 by default),
 * so the fastest of the runs is one without a buffer hand-off.
 *
 * With PROG_TINY_LOCALE set, main first sets that locale (LC_ALL) and
 * prints "locale 1.5" as printf writes it there ("locale 1,5" under
 * de_DE): the recorder's numbers must not follow the program's locale.
 */
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define NOINST __attribute__((no_instrument_function))

/* work_n dependent multiply-adds (about 3 cycles each) the compiler cannot fold */
static int work_n = 2;
#define WORK(x)                                                                                    \
    do {                                                                                           \
        for (int k_ = 0; k_ < work_n; k_++)                                                        \
            x = x * 2862933555777941757ull + 3037000493ull;                                        \
        __asm__ __volatile__("" : "+r"(x));                                                        \
    } while (0)

static unsigned long long sink;

__attribute__((noinline)) void leaf(void)
{
    __asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline)) void parent(long iters)
{
    unsigned long long x = sink;
    for (long i = 0; i < iters; i++) {
        WORK(x);
        leaf();
    }
    sink = x;
}

__attribute__((noinline)) int fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

NOINST __attribute__((noinline)) void leaf_ref(void)
{
    __asm__ __volatile__("" ::: "memory");
}

NOINST __attribute__((noinline)) void parent_ref(long iters)
{
    unsigned long long x = sink;
    for (long i = 0; i < iters; i++) {
        WORK(x);
        leaf_ref();
    }
    sink = x;
}

NOINST __attribute__((noinline)) int fib_ref(int n)
{
    return n < 2 ? n : fib_ref(n - 1) + fib_ref(n - 2);
}

NOINST static unsigned long long now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (unsigned long long)ts.tv_sec * 1000000000ull + (unsigned long long)ts.tv_nsec;
}

NOINST static int cmp(const void *a, const void *b)
{
    unsigned long long x = *(const unsigned long long *)a, y = *(const unsigned long long *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 41;
    long iters = argc > 2 ? atol(argv[2]) : 5000;
    int nfib = argc > 3 ? atoi(argv[3]) : 18;
    work_n = argc > 4 ? atoi(argv[4]) : 2;
    unsigned long long ref[64], fbest = ~0ull;
    const char *loc = getenv("PROG_TINY_LOCALE");
    if (loc && setlocale(LC_ALL, loc))
        printf("locale %.1f\n", 1.5);
    if (reps < 1 || reps > 64)
        reps = 41;
    for (int r = 0; r < reps; r++) {
        parent(iters);
        unsigned long long t0 = now_ns();
        parent_ref(iters);
        ref[r] = now_ns() - t0;
        t0 = now_ns();
        sink += (unsigned long long)fib_ref(nfib);
        t0 = now_ns() - t0;
        fbest = t0 < fbest ? t0 : fbest;
    }
    int f = fib(nfib);
    qsort(ref, (size_t)reps, sizeof(ref[0]), cmp);
    printf("ref_ns %llu %llu\n", ref[0], ref[reps / 2]);
    printf("fib_ref_ns %llu\n", fbest);
    printf("fib(%d) = %d\n", nfib, f);
    return 0;
}

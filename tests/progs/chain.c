// SPDX-License-Identifier: MIT
/*
 * chain.c - a test program for pass-through chains, recorded by
 * tests/e2e_table.sh: main -> app_main -> run_all -> run_once -> engine
 * each hand all their time to the next (one call each), engine calls step
 * 1000 times (enough work that main's own time, a sanitizer's start-up
 * included, stays under HOT's 5 %), and step spreads its time over leaf_b (1 part, called
 * first) and leaf_a (4 parts): graph step lists leaf_a first only when it
 * sorts by time.  The chain is main ... engine, 5 frames; step, leaf_a and
 * leaf_b are rows of their own.  Prints "sum = <n>".
 */
#include <stdio.h>

static volatile unsigned long sink;

__attribute__((noinline, no_instrument_function)) static void spin(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        sink += i;
}

void leaf_a(void)
{
    spin(40000);
}

void leaf_b(void)
{
    spin(10000);
}

void step(void)
{
    leaf_b();
    leaf_a();
}

void engine(void)
{
    for (int i = 0; i < 1000; i++)
        step();
}

void run_once(void)
{
    engine();
}

void run_all(void)
{
    run_once();
}

void app_main(void)
{
    run_all();
}

int main(void)
{
    app_main();
    printf("sum = %lu\n", sink);
    return 0;
}

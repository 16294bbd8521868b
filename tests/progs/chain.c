/*
 * chain.c - a test program for pass-through chains, recorded by
 * tests/e2e_table.sh: main -> app_main -> run_all -> run_once -> engine
 * each hand all their time to the next (one call each), engine calls step
 * 200 times, and step spreads its time over leaf_a (3 parts) and leaf_b
 * (2 parts).  The chain is main ... engine, 5 frames; step, leaf_a and
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
    spin(30000);
}

void leaf_b(void)
{
    spin(20000);
}

void step(void)
{
    leaf_a();
    leaf_b();
}

void engine(void)
{
    for (int i = 0; i < 200; i++)
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

// SPDX-License-Identifier: MIT
/*
 * calltree.c - a test program with an exactly known call tree, recorded by
 * tests/e2e_basic.sh.  Every function does a deterministic busy loop of a
 * known number of work units (spin(), not instrumented, so the loop is the
 * function's own exclusive time) and calls its children a fixed number of
 * times:
 *
 *   function  own units  calls made (per activation)
 *   main      1          a x3, then c x1
 *   a         2          b x2, c x1
 *   b         1          leaf x5
 *   c         3          leaf x2
 *   leaf      1          -
 *
 * Expected call counts: main 1, a 3, b 6, c 4, leaf 38 (= 6*5 + 4*2).
 * Expected edges: <root>->main 1, main->a 3, main->c 1, a->b 6, a->c 3,
 *                 b->leaf 30, c->leaf 8.
 * Duration of one activation, in units: leaf 1, b 6, c 5, a 19 (2 + 2*6 + 5),
 * main 63 (1 + 3*19 + 5).
 * Exclusive time in units: main 1, a 6, b 6, c 12, leaf 38 (63 in all).
 * One unit is UNIT_SPIN loop iterations, about 10 us: short, so that most
 * activations run without being preempted even on a loaded machine and the
 * test can compare the shortest durations (min_ns) of each function.
 */
#include <stdint.h>
#include <stdio.h>

#define UNIT_SPIN 5000u

static volatile uint64_t sink;

static __attribute__((no_instrument_function)) void spin(unsigned units)
{
    for (uint32_t i = 0; i < units * UNIT_SPIN; i++)
        sink += i;
}

void leaf(void)
{
    spin(1);
}

void b(void)
{
    spin(1);
    for (int i = 0; i < 5; i++)
        leaf();
}

void c(void)
{
    spin(3);
    for (int i = 0; i < 2; i++)
        leaf();
}

void a(void)
{
    spin(2);
    for (int i = 0; i < 2; i++)
        b();
    c();
}

int main(void)
{
    spin(1);
    for (int i = 0; i < 3; i++)
        a();
    c();
    printf("calltree: done (sink %llu)\n", (unsigned long long)sink);
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * mutual.c - mutual recursion, for tests/e2e_spanfilters.sh: a node whose
 * outermost activation a filter leaves out while inner ones are kept.
 *
 *   main calls x(3) ten times; x(n) spins and calls y(n) while n > 0; y(n)
 *   spins and calls x(n - 1).  So per call of x(3): x(3) -> y(3) -> x(2) ->
 *   y(2) -> x(1) -> y(1) -> x(0).
 *
 * Expected calls: main 1, x 40, y 30.  With -F y: x 30 (x(2), x(1), x(0)
 * under each y(3)), y 30; x's inclusive time is that of its outermost kept
 * activations, the x(2), so it is at least x's longest kept call.
 */
#include <stdint.h>

static volatile uint64_t sink;

static __attribute__((no_instrument_function)) void spin(void)
{
    for (uint32_t i = 0; i < 2000; i++)
        sink += i;
}

void y(int n);

void x(int n)
{
    spin();
    if (n > 0)
        y(n);
}

void y(int n)
{
    spin();
    x(n - 1);
}

int main(void)
{
    for (int i = 0; i < 10; i++)
        x(3);
    return 0;
}

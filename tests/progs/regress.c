// SPDX-License-Identifier: MIT
/*
 * regress.c - a program whose one procedure can be made slower, for
 * `rankprof diff` (tests/e2e_diff.sh, docs/diff.md).  All work is counted
 * in loop iterations, never in clock time.
 *
 *   prog_regress [FACTOR [ROUNDS]]
 *
 * run_round() is called ROUNDS times (default 400); each calls parse(),
 * lookup() twice, render() and target() once.  Every one of them does a
 * fixed amount of arithmetic of its own (about 20 us; target()'s times
 * FACTOR, default 1), so FACTOR 4 makes target() four times slower per
 * call and leaves every other procedure's own time per call as it was.
 * Prints "rounds N factor F".  Exits 2 on a bad argument.
 */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

/* (not instrumented, so that the time is its caller's own) */
__attribute__((no_instrument_function, always_inline)) static inline void spin(unsigned long n)
{
    unsigned long x = sink;
    for (unsigned long i = 0; i < n; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    sink = x;
}

#define UNIT 20000ul

void parse(void)
{
    spin(UNIT);
}
void lookup(void)
{
    spin(UNIT);
}
void render(void)
{
    spin(2 * UNIT);
}

static unsigned long factor = 1;
void target(void)
{
    spin(UNIT * factor);
}

void run_round(void)
{
    parse();
    lookup();
    lookup();
    render();
    target();
}

int main(int argc, char **argv)
{
    unsigned long rounds = 400;
    if (argc > 1 && (factor = strtoul(argv[1], NULL, 10)) == 0)
        return 2;
    if (argc > 2 && (rounds = strtoul(argv[2], NULL, 10)) == 0)
        return 2;
    for (unsigned long r = 0; r < rounds; r++)
        run_round();
    printf("rounds %lu factor %lu\n", rounds, factor);
    return 0;
}

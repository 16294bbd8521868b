// SPDX-License-Identifier: MIT
/*
 * phases.c - a run in two phases with exactly known counts, for
 * tests/e2e_rotate.sh (record --max-size): the newest phase must be whole
 * in a rotated trace, the oldest may be cut.
 *
 *   prog_phases N1 N2 [EVERY]   main calls early() N1 times, then late() N2
 *                               times; each calls leaf() once.  With EVERY,
 *                               main sleeps 1 ms after every EVERY calls of
 *                               early (a run that lasts, writing no more).
 *                               Prints nothing; exits 0.
 */
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) void leaf(unsigned long i)
{
    sink += i;
}

__attribute__((noinline)) void early(unsigned long i)
{
    leaf(i);
}

__attribute__((noinline)) void late(unsigned long i)
{
    leaf(i);
}

int main(int argc, char **argv)
{
    unsigned long n1 = argc > 1 ? strtoul(argv[1], NULL, 10) : 1000;
    unsigned long n2 = argc > 2 ? strtoul(argv[2], NULL, 10) : 1000;
    unsigned long every = argc > 3 ? strtoul(argv[3], NULL, 10) : 0;
    for (unsigned long i = 0; i < n1; i++) {
        early(i);
        if (every && i % every == every - 1) {
            struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL);
        }
    }
    for (unsigned long i = 0; i < n2; i++)
        late(i);
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * calls.h - the call pattern several test programs count on, defined in
 * the one file that includes it (instrumented, like the program): each
 * work(x) calls leaf twice, so calls(n) makes n calls of work and 2n of
 * leaf.  None of them can fail.
 */
#ifndef RP_TESTS_CALLS_H
#define RP_TESTS_CALLS_H

static volatile unsigned sink;

void leaf(unsigned x)
{
    sink += x;
}

void work(unsigned x)
{
    leaf(x);
    leaf(x + 1);
}

static __attribute__((unused)) void calls(long n)
{
    for (long i = 0; i < n; i++)
        work((unsigned)i);
}

#endif

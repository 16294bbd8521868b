// SPDX-License-Identifier: MIT
/*
 * a.c - half of the copies program (tests/e2e_inlined.sh, copies): part_a
 * calls its copy of sq n times and its own static helper once.
 */
#include "copies.h"

static int helper(int x)
{
    return x + 1;
}

int part_a(int n)
{
    int s = 0;
    for (int i = 0; i < n; i++)
        s += sq(i);
    return helper(s);
}

// SPDX-License-Identifier: MIT
/*
 * b.c - the other half of the copies program (tests/e2e_inlined.sh,
 * copies): part_b calls its copy of sq 2n times and its own static helper
 * (another function of the same name as a.c's) twice; main calls part_a(n)
 * and part_b(n), n = argv[1] (default 1000), and prints "sum = S".
 */
#include <stdio.h>
#include <stdlib.h>

#include "copies.h"

static int helper(int x)
{
    return x - 1;
}

int part_b(int n)
{
    int s = 0;
    for (int i = 0; i < 2 * n; i++)
        s += sq(i + 1);
    return helper(helper(s));
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    printf("sum = %d\n", part_a(n) + part_b(n));
    return 0;
}

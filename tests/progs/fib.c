// SPDX-License-Identifier: MIT
/*
 * fib.c - a test program for recursion, recorded by tests/e2e_basic.sh:
 * main calls fib(20) once; fib recurses naively.
 *
 * Expected call counts: main 1, fib 21891 (= 2 * F(21) - 1 = 2 * 10946 - 1).
 * Expected edges: <root>->main 1, main->fib 1, fib->fib 21890.
 * Since only the outermost activation of fib counts toward its inclusive
 * time, fib's inclusive time is at most main's and almost all of it.
 * Prints "fib(20) = 6765".
 */
#include <stdio.h>

int fib(int n)
{
    return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

int main(void)
{
    printf("fib(20) = %d\n", fib(20));
    return 0;
}

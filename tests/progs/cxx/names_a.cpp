// SPDX-License-Identifier: MIT
/*
 * names_a.cpp - with names_b.cpp, the program of names.h: main calls
 * geo::detail::sum_dots<int> 300 times, sum_dots<double> 200 times, and
 * each translation unit's copy of scale_copy 100 times (from_a, from_b).
 * Prints "names <total>".
 */
#include <cstdio>

#include "names.h"

long from_a(int rounds)
{
    long s = 0;
    for (int i = 0; i < rounds; i++)
        s += scale_copy(i);
    return s;
}

int main()
{
    int ai[64], bi[64];
    double ad[64], bd[64];
    long total = 0;
    for (int i = 0; i < 64; i++) {
        ai[i] = bi[i] = i;
        ad[i] = bd[i] = i * 0.5;
    }
    for (int r = 0; r < 300; r++)
        total += geo::detail::sum_dots<int>(ai, bi, 64);
    for (int r = 0; r < 200; r++)
        total += (long)geo::detail::sum_dots<double>(ad, bd, 64);
    total += from_a(100) + from_b(100);
    std::printf("names %ld\n", total);
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * names_b.cpp - the second translation unit of names.h's program: its own
 * copy of scale_copy.
 */
#include "names.h"

long from_b(int rounds)
{
    long s = 0;
    for (int i = 0; i < rounds; i++)
        s += scale_copy(i);
    return s;
}

// SPDX-License-Identifier: MIT
/*
 * copies.h - a static inline function that both translation units of the
 * copies program (a.c, b.c) put out of line under -finstrument-functions:
 * two copies of sq, one name, file and line, two addresses.
 */
#ifndef COPIES_H
#define COPIES_H

static inline int sq(int x)
{
    return x * x + 1;
}

int part_a(int n);
int part_b(int n);

#endif

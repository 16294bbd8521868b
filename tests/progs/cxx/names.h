// SPDX-License-Identifier: MIT
/*
 * names.h - for tests/progs/cxx/names_a.cpp and names_b.cpp (e2e_table.sh):
 * a template in nested namespaces, instantiated for int and double, and a
 * static inline function each translation unit gets its own copy of
 * (built with -fno-inline): two procedures with one name and one file:line.
 */
#ifndef NAMES_H
#define NAMES_H

namespace geo
{
namespace detail
{
template <typename T> T sum_dots(const T *a, const T *b, unsigned long n)
{
    T s = 0;
    for (unsigned long i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}
} // namespace detail
} // namespace geo

static inline long scale_copy(long x)
{
    return x * 3 + 1;
}

long from_a(int rounds);
long from_b(int rounds);

#endif

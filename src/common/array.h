// SPDX-License-Identifier: MIT
/*
 * array.h - the two pieces the growing tables share: doubling an array to a
 * needed length (the analyzer), and mixing a 64-bit key into a hash (the
 * analyzer, the writer's id table and direct mode's index).  libc only, so
 * the recorder can use it.
 */
#ifndef RP_COMMON_ARRAY_H
#define RP_COMMON_ARRAY_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "error.h"

/*
 * Makes the array *arr (of elements of size elem, *cap allocated) hold at
 * least need elements, doubling from `first`.  Returns 0, or RP_ENOMEM with
 * the array unchanged.
 */
static inline int rp_grow(void *arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t first)
{
    if (need <= *cap)
        return 0;
    uint32_t ncap = *cap ? *cap : first;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*(void **)arr, (size_t)ncap * elem);
    if (!n)
        return RP_ENOMEM;
    *(void **)arr = n;
    *cap = ncap;
    return 0;
}

/* A 64-bit key mixed so that its low bits index an open-addressing table. */
static inline uint64_t rp_mix64(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ull;
    k ^= k >> 29;
    return k;
}

#endif /* RP_COMMON_ARRAY_H */

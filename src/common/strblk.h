// SPDX-License-Identifier: MIT
/*
 * strblk.h - strings packed one after the other in large blocks, freed all
 * at once: for the many short names of a profile with very many
 * procedures, where a malloc block each would take at least 32 bytes (the
 * profile's string arena, profile.c; the table's row names, table.c).
 */
#ifndef RP_COMMON_STRBLK_H
#define RP_COMMON_STRBLK_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"

struct rp_strblk {
    char *base;
    size_t used, cap;
};

/* The blocks; bytes are taken from the last one.  Zero-filled: none. */
struct rp_strblks {
    struct rp_strblk *blk;
    uint32_t nblk, capblk;
};

/*
 * n bytes from the last block of a, or from a new one of `block` bytes (n,
 * when more) when it has no room.  Returns NULL when out of memory (a
 * unchanged).
 */
static inline char *rp_strblks_take(struct rp_strblks *a, size_t n, size_t block)
{
    struct rp_strblk *b = a->nblk ? &a->blk[a->nblk - 1] : NULL;
    if (!b || b->cap - b->used < n) {
        size_t cap = n > block ? n : block;
        char *base = malloc(cap);
        if (!base || rp_grow(&a->blk, &a->capblk, a->nblk + 1, sizeof(*a->blk), 16) < 0) {
            free(base);
            return NULL;
        }
        b = &a->blk[a->nblk++];
        *b = (struct rp_strblk){base, 0, cap};
    }
    char *r = b->base + b->used;
    b->used += n;
    return r;
}

/* Frees every block of a.  Cannot fail. */
static inline void rp_strblks_free(struct rp_strblks *a)
{
    for (uint32_t i = 0; i < a->nblk; i++)
        free(a->blk[i].base);
    free(a->blk);
    memset(a, 0, sizeof(*a));
}

#endif

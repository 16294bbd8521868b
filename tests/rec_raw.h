// SPDX-License-Identifier: MIT
/*
 * rec_raw.h - reading back the raw records the calling thread appended, for
 * the recorder's unit tests (test_rec_*.c): they call the recorder's
 * functions and then look at the records in the thread's buffer.
 */
#ifndef RP_TESTS_REC_RAW_H
#define RP_TESTS_REC_RAW_H

#include <stddef.h>

#include "record/rt.h"

/* The records the calling thread appended since *from; moves *from on. */
static inline size_t since(struct rp_raw **from, struct rp_raw **first)
{
    struct rp_raw *p = rp_self->pos;
    size_t n = (size_t)(p - *from);
    *first = *from;
    *from = p;
    return n;
}

/* A raw record's op (enum rp_raw_op) and payload. */
static inline unsigned op_of(const struct rp_raw *r)
{
    return (unsigned)(r->word >> RP_RAW_SHIFT);
}

static inline uint64_t pl_of(const struct rp_raw *r)
{
    return r->word & RP_RAW_PAYLOAD;
}

#endif /* RP_TESTS_REC_RAW_H */

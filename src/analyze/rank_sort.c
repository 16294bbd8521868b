// SPDX-License-Identifier: MIT
/*
 * rank_sort.c - the ranks: the nodes sorted by standing, a radix sort in
 * two halves side by side with two threads (rp_rank_assign).
 */
#include <assert.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "rank_int.h"

/*
 * Ranks: sorts the nodes 1..n by their key (node_key), larger first, ties
 * by lower index, and stores each one's place (1, 2, ...) in rank[i - 1],
 * all in the caller's scratch: the keys are read from pi and span, never
 * stored, and the ranks are written over the half the sorted items are not
 * in.  In two steps.  First a stable LSD radix sort, RADIX_BITS at a time, of 8-byte
 * items: the index (plus one) in the low b bits, b = the bits n needs, under
 * the top 64 - b bits of the complemented key, half of what (key, index)
 * pairs would move per pass; it starts in index order, so equal prefixes
 * stay in index order.  Then every run of equal prefixes is put in full key
 * order (sort_run).  A key is a double's bits: its prefix keeps 52 - b bits
 * of the mantissa, so a run holds keys within 2^(b - 52) of each other (or
 * equal): with a million nodes, b = 20 and the runs are few and short,
 * where a fixed 32-bit prefix would leave keys within 2^-20 of each other
 * to sort_run, which reads them at random and costs more than the one
 * radix pass this takes in addition.  With threads > 1 the items are made,
 * each radix pass moves them, and the ranks are stored, in two halves side by
 * side: the first half's items of a digit go before the second's, so the
 * order is the one a single pass gives.  Returns 0 or RP_ENOMEM.
 */
#define RADIX_BITS 11
#define RADIX      (1u << RADIX_BITS)
#define SHORT_RUN  16

struct rank_key {
    uint64_t key; /* complemented: ascending order ranks */
    uint32_t idx;
};

static int rank_key_cmp(const void *pa, const void *pb)
{
    const struct rank_key *x = pa, *y = pb;
    if (x->key != y->key)
        return x->key < y->key ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/*
 * Puts the items a[0 .. len) (index in the bits of mask, in increasing
 * order) in order of their complemented full key, ties by index: nothing
 * to do when the keys are already in order (as equal keys are), insertion
 * for a short run, qsort in *buf (grown as needed) for a long one.
 * Returns 0 or RP_ENOMEM.
 */
static int sort_run(uint64_t *a, uint32_t len, uint64_t mask, const double *pi,
                    const unsigned char *span, struct rank_key **buf, uint32_t *cap)
{
    struct rank_key small[SHORT_RUN], *r = small;
    uint32_t k;

    for (k = 1; k < len && ~node_key(pi, span, (uint32_t)(a[k] & mask)) >=
                               ~node_key(pi, span, (uint32_t)(a[k - 1] & mask));
         k++)
        ;
    if (k == len)
        return 0;
    if (len > SHORT_RUN) {
        if (len > *cap) {
            struct rank_key *t = realloc(*buf, (size_t)len * sizeof *t);
            if (!t)
                return RP_ENOMEM;
            *buf = t;
            *cap = len;
        }
        r = *buf;
    }
    for (k = 0; k < len; k++)
        r[k] = (struct rank_key){~node_key(pi, span, (uint32_t)(a[k] & mask)),
                                 (uint32_t)(a[k] & mask)};
    if (len > SHORT_RUN) {
        qsort(r, len, sizeof *r, rank_key_cmp);
    } else {
        for (k = 1; k < len; k++) {
            struct rank_key t = r[k];
            uint32_t j = k;
            for (; j > 0 && rank_key_cmp(&r[j - 1], &t) > 0; j--)
                r[j] = r[j - 1];
            r[j] = t;
        }
    }
    for (k = 0; k < len; k++)
        a[k] = (a[k] & ~mask) | r[k].idx; /* the prefix is the run's */
    return 0;
}

/* One half of the places of rp_rank_assign, [k0, k1), and the counts of the
 * current digit of the items there, which become their write positions for
 * the pass over that digit. */
struct radix_half {
    const double *pi;
    const unsigned char *span;
    uint64_t *a, *b;
    uint32_t *rank;
    uint32_t k0, k1;
    unsigned ib;      /* the index's bits, under the key's prefix */
    unsigned step, d; /* RADIX_START, RADIX_COUNT or RADIX_PASS (of digit d), RADIX_STORE */
    uint32_t cnt[RADIX];
};

enum { RADIX_START, RADIX_COUNT, RADIX_PASS, RADIX_STORE };

/* Does one step of rp_rank_assign over a half: makes its items, counts digit
 * d of the items now at [k0, k1), moves them to their places for digit d
 * (a to b), or stores the ranks of the places [k0, k1).  Takes a void * to
 * run on a thread (rp_rank_run_pair).  Cannot fail. */
static void radix_step(void *arg)
{
    struct radix_half *h = arg;
    uint64_t mask = ((uint64_t)1 << h->ib) - 1;

    if (h->step == RADIX_START) {
        for (uint32_t k = h->k0; k < h->k1; k++)
            h->a[k] = (~node_key(h->pi, h->span, k + 1) & ~mask) | (k + 1);
    } else if (h->step == RADIX_COUNT) {
        uint32_t sh = h->ib + h->d * RADIX_BITS;
        memset(h->cnt, 0, sizeof h->cnt);
        for (uint32_t k = h->k0; k < h->k1; k++)
            h->cnt[(h->a[k] >> sh) & (RADIX - 1)]++;
    } else if (h->step == RADIX_PASS) {
        uint32_t sh = h->ib + h->d * RADIX_BITS;
        for (uint32_t k = h->k0; k < h->k1; k++)
            h->b[h->cnt[(h->a[k] >> sh) & (RADIX - 1)]++] = h->a[k];
    } else {
        for (uint32_t k = h->k0; k < h->k1; k++)
            h->rank[(h->a[k] & mask) - 1] = k + 1;
    }
}

/* Runs a step over both halves, side by side when threads > 1.  Cannot
 * fail. */
static void radix_both(struct radix_half *h, int threads, unsigned step, unsigned d)
{
    h[0].step = h[1].step = step;
    h[0].d = h[1].d = d;
    rp_rank_run_pair(threads, radix_step, &h[0], radix_step, &h[1]);
}

int rp_rank_assign(uint32_t n, const double *pi, const unsigned char *span, uint64_t *buf,
                   uint32_t **rank, int threads)
{
    uint64_t *a = buf, *b = buf + n;
    unsigned ib = 64 - (unsigned)__builtin_clzll(n),
             digits = (64 - ib + RADIX_BITS - 1) / RADIX_BITS;
    struct radix_half h[2] = {
        {.pi = pi, .span = span, .a = a, .b = b, .k0 = 0, .k1 = n / 2, .ib = ib},
        {.pi = pi, .span = span, .a = a, .b = b, .k0 = n / 2, .k1 = n, .ib = ib}};
    struct rank_key *runs = NULL;
    uint32_t cap = 0;
    int rc;

    assert(n > 0);
    radix_both(h, threads, RADIX_START, 0);
    for (unsigned d = 0; d < digits; d++) {
        radix_both(h, threads, RADIX_COUNT, d);
        uint32_t *lo = h[0].cnt, *hi = h[1].cnt, sum = 0, sh = ib + d * RADIX_BITS;
        uint32_t r0 = (a[0] >> sh) & (RADIX - 1);
        if (lo[r0] + hi[r0] == n)
            continue; /* every key has this digit */
        /* the first half's items of each digit go before the second's:
         * stable, as one pass over all would be */
        for (uint32_t r = 0; r < RADIX; r++) {
            uint32_t tl = lo[r], th = hi[r];
            lo[r] = sum;
            hi[r] = sum + tl;
            sum += tl + th;
        }
        radix_both(h, threads, RADIX_PASS, d);
        uint64_t *t = a; /* the items are in b now */
        a = b;
        b = t;
        h[0].a = h[1].a = a;
        h[0].b = h[1].b = b;
    }
    for (uint32_t s = 0, t; s < n; s = t) {
        for (t = s + 1; t < n && a[t] >> ib == a[s] >> ib; t++)
            ;
        if (t - s > 1 &&
            (rc = sort_run(a + s, t - s, ((uint64_t)1 << ib) - 1, pi, span, &runs, &cap)))
            goto out;
    }
    /* the ranks go over the half of buf the items are not in: 4 bytes of
     * its 8 a node */
    h[0].rank = h[1].rank = *rank = (uint32_t *)b;
    radix_both(h, threads, RADIX_STORE, 0);
    rc = 0;
out:
    free(runs);
    return rc;
}

/*
 * check.h - the assertions the unit tests share.  A failed check prints
 * file:line and what it compared, counts the failure and lets the test go on,
 * so one run shows every failure; main() returns non-zero when `failures` is
 * not 0.  The counter is atomic: checks may run in several threads.
 */
#ifndef RP_TESTS_CHECK_H
#define RP_TESTS_CHECK_H

#include <math.h>
#include <stdio.h>
#include <string.h>

static _Atomic int failures;

/* The next number of a xorshift64 generator (Marsaglia's 13, 7, 17) whose
 * state, never 0, is *s: the tests' reproducible pseudo-random input. */
static inline unsigned long long check_xorshift(unsigned long long *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond);               \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* Integers (as unsigned long long), printed in decimal and hex. */
#define CHECK_EQ(a, b)                                                                             \
    do {                                                                                           \
        unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);             \
        if (a_ != b_) {                                                                            \
            fprintf(stderr, "%s:%d: CHECK failed: %s == %s (%llu vs %llu, 0x%llx vs 0x%llx)\n",    \
                    __FILE__, __LINE__, #a, #b, a_, b_, a_, b_);                                   \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#define CHECK_NEAR(a, b, tol)                                                                      \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (!(fabs(a_ - b_) <= (tol))) {                                                           \
            fprintf(stderr, "%s:%d: %s = %.15g, expected %s = %.15g (tol %g)\n", __FILE__,         \
                    __LINE__, #a, a_, #b, b_, (double)(tol));                                      \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

/* hay (which may be NULL: that fails) contains needle. */
#define CHECK_STR(hay, needle)                                                                     \
    do {                                                                                           \
        const char *h_ = (hay), *n_ = (needle);                                                    \
        if (!h_ || !strstr(h_, n_)) {                                                              \
            fprintf(stderr, "%s:%d: CHECK failed: \"%s\" does not contain \"%s\"\n", __FILE__,     \
                    __LINE__, h_ ? h_ : "(null)", n_);                                             \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

#endif /* RP_TESTS_CHECK_H */

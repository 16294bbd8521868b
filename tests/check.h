// SPDX-License-Identifier: MIT
/*
 * check.h - the assertions the unit tests share.  A failed check prints
 * file:line and what it compared, counts the failure and lets the test go on,
 * so one run shows every failure; main() returns non-zero when `failures` is
 * not 0.  The counter is atomic: checks may run in several threads.
 *
 * A test binary lists its cases (struct check_case) and main() ends in
 * check_run(): `test_rank trees` runs only test_trees,
 * `test_rank trees random` both, no argument every case in order, and
 * `test_rank --list` prints the names.
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

/* A named case of a test binary: its table is {"trees", test_trees}, ... */
struct check_case {
    const char *name;
    void (*run)(void);
};

/*
 * Runs the cases named in argv[1..] in the order given, or all n in table
 * order when there is none; --list prints the names.  Returns main()'s
 * status: 0, 1 when a check failed, 2 (running nothing) when a name is not
 * a case, with the list of cases on stderr.
 */
static inline int check_run(const char *prog, int argc, char **argv, const struct check_case *cases,
                            size_t n)
{
    if (argc == 2 && !strcmp(argv[1], "--list")) {
        for (size_t i = 0; i < n; i++)
            printf("%s\n", cases[i].name);
        return 0;
    }
    for (int a = 1; a < argc; a++) {
        size_t i = 0;
        while (i < n && strcmp(argv[a], cases[i].name))
            i++;
        if (i == n) {
            fprintf(stderr, "%s: no case '%s'; the cases are:", prog, argv[a]);
            for (i = 0; i < n; i++)
                fprintf(stderr, " %s", cases[i].name);
            fprintf(stderr, "\n");
            return 2;
        }
    }
    size_t todo = argc > 1 ? (size_t)argc - 1 : n;
    for (size_t k = 0; k < todo; k++) {
        const struct check_case *c = &cases[k];
        if (argc > 1) /* (every name was found above) */
            for (c = cases; strcmp(argv[k + 1], c->name); c++)
                ;
        int before = failures;
        c->run();
        if (failures != before)
            fprintf(stderr, "%s: %s: %d check(s) failed\n", prog, c->name, failures - before);
    }
    if (failures) {
        fprintf(stderr, "%s: %d check(s) failed\n", prog, (int)failures);
        return 1;
    }
    printf("%s: all checks of %zu case(s) passed\n", prog, todo);
    return 0;
}

#endif /* RP_TESTS_CHECK_H */

// SPDX-License-Identifier: MIT
/*
 * busy.h - the clock and the busy wait of the test programs that time
 * their work: not instrumented, so they add no span of their own.  None of
 * them can fail.
 */
#ifndef RP_TESTS_BUSY_H
#define RP_TESTS_BUSY_H

#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds. */
static __attribute__((no_instrument_function, unused)) uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Busy (never sleeping) for ns nanoseconds of wall-clock time. */
static __attribute__((no_instrument_function, unused)) void busy(uint64_t ns)
{
    uint64_t end = now_ns() + ns;
    while (now_ns() < end)
        ;
}

#endif

// SPDX-License-Identifier: MIT
/*
 * clock.h - the recorder's time source.
 *
 * rp_ticks() is on the hot path: the invariant TSC on x86-64, the virtual
 * counter CNTVCT_EL0 on aarch64, CLOCK_MONOTONIC in nanoseconds elsewhere or
 * when the counter is not trustworthy (then rp_clock_tsc is 0).  Ticks are
 * turned into nanoseconds offline: the trace carries (ticks, monotonic ns)
 * pairs from the start and the end of the run, and a start-up estimate of the
 * frequency for runs too short to measure it.
 */
#ifndef RP_RECORD_CLOCK_H
#define RP_RECORD_CLOCK_H

#include <stdint.h>
#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define RP_HIDDEN __attribute__((visibility("hidden")))

RP_HIDDEN extern int rp_clock_tsc; /* 1: the cycle counter is used */

static inline uint64_t rp_mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The monotonic clock as ticks, out of line so the hot path stays small. */
RP_HIDDEN __attribute__((noinline, cold)) uint64_t rp_ticks_mono(void);

static inline uint64_t rp_ticks(void)
{
#if defined(__x86_64__) || defined(__i386__)
    if (__builtin_expect(rp_clock_tsc, 1))
        return __rdtsc();
#elif defined(__aarch64__)
    if (__builtin_expect(rp_clock_tsc, 1)) {
        uint64_t v;
        __asm__ __volatile__("mrs %0, cntvct_el0" : "=r"(v));
        return v;
    }
#endif
    return rp_ticks_mono();
}

/*
 * Decides the clock (honouring RANKPROF_CLOCK=monotonic|tsc) and sets
 * rp_clock_tsc.  Returns the clock's name ("tsc", "cntvct", "monotonic").
 * Cannot fail: the monotonic clock is the fallback.
 */
RP_HIDDEN const char *rp_clock_init(void);

/*
 * Measures the tick frequency against CLOCK_MONOTONIC over about `ms`
 * milliseconds of spinning.  Returns ticks per second (1e9 for the monotonic
 * clock; the architected frequency register on aarch64).
 */
RP_HIDDEN double rp_clock_calibrate(unsigned ms);

/*
 * The counter's step: the ticks it moves by at once, not always a whole
 * number (1 on most counters; on the TSC of an AMD Zen, which moves every
 * 10 ns, 21 at 2.1 GHz and 24.5 at 2445 MHz), found from a few thousand
 * reads (about 50 us).  A span shorter than a step can measure as 0.
 * Cannot fail: 1 when it cannot tell.
 */
RP_HIDDEN double rp_clock_step(void);

/*
 * One group's step (clock.c): of the n differences between reads in d (1 to
 * 4095 ticks each; sorted here), their gcd when above 1, else the
 * fractional step of 8 ticks or more that fits them all within a tick, else
 * 1.  rp_clock_step takes the one most groups agree on.  Cannot fail.
 */
RP_HIDDEN double rp_clock_step_group(uint32_t *d, unsigned n);

#endif /* RP_RECORD_CLOCK_H */

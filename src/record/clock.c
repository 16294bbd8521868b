// SPDX-License-Identifier: MIT
/*
 * clock.c - choosing and calibrating the recorder's clock.
 *
 * On x86 the TSC is used only when CPUID says it is invariant (leaf
 * 0x80000007, EDX bit 8: it ticks at a constant rate in every P-, C- and
 * T-state and is synchronised across cores by the platform); otherwise a
 * migrating thread could see time run backwards or at another rate.
 */
#include "clock.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

RP_HIDDEN int rp_clock_tsc;

RP_HIDDEN uint64_t rp_ticks_mono(void)
{
    return rp_mono_ns();
}

static int counter_usable(void)
{
#if defined(__x86_64__) || defined(__i386__)
    unsigned a, b, c, d;
    if (!__get_cpuid(0x80000000u, &a, &b, &c, &d) || a < 0x80000007u)
        return 0;
    __get_cpuid(0x80000007u, &a, &b, &c, &d);
    return (d >> 8) & 1;
#elif defined(__aarch64__)
    return 1; /* the generic timer is architecturally constant-rate */
#else
    return 0;
#endif
}

RP_HIDDEN const char *rp_clock_init(void)
{
    const char *want = getenv("RANKPROF_CLOCK");

    rp_clock_tsc = counter_usable();
    if (want && !strcmp(want, "monotonic"))
        rp_clock_tsc = 0;
    if (!rp_clock_tsc)
        return "monotonic";
#if defined(__aarch64__)
    return "cntvct";
#else
    return "tsc";
#endif
}

/*
 * The counter and the monotonic clock read together: the counter on both
 * sides of the clock, its middle taken, the tightest of 8 tries.  A
 * preemption or an interrupt between two reads (70 us of one is 3.5 % of
 * a 2 ms calibration) would otherwise shift the pair by its length.
 */
static void clock_pair(uint64_t *ns, uint64_t *ticks)
{
    uint64_t best = UINT64_MAX;
    for (int i = 0; i < 8; i++) {
        uint64_t a = rp_ticks(), n = rp_mono_ns(), b = rp_ticks();
        if (b - a < best) {
            best = b - a;
            *ns = n;
            *ticks = a + (b - a) / 2;
        }
    }
}

RP_HIDDEN double rp_clock_calibrate(unsigned ms)
{
    if (!rp_clock_tsc)
        return 1e9;
#if defined(__aarch64__)
    uint64_t f;
    __asm__ __volatile__("mrs %0, cntfrq_el0" : "=r"(f));
    if (f)
        return (double)f;
#endif
    uint64_t n0 = 0, t0 = 0, n1 = 0, t1 = 0;
    clock_pair(&n0, &t0);
    while (rp_mono_ns() - n0 < (uint64_t)ms * 1000000u)
        ;
    clock_pair(&n1, &t1);
    return (double)(t1 - t0) * 1e9 / (double)(n1 - n0);
}

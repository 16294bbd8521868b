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

/*
 * The counter's step.  A counter may advance in steps of several ticks:
 * on AMD Zen the TSC counts at the nominal frequency but moves once per
 * 10 ns of its 100 MHz reference (21 ticks at 2.1 GHz), so two reads
 * differ by 0, 21 or 42 ticks and never by 5; a span measured as 21 ticks
 * lasted anywhere from 1 to 41.  The step is the greatest common divisor
 * of the differences between reads a varying few loop turns apart
 * (back-to-back reads would only show the read's own latency), taken in
 * STEP_GROUPS groups of STEP_READS: a thread moved to another CPU between
 * two reads, or a host's exit, can move the counter by any amount and
 * spoil its group, so the step is the value most groups agree on (at
 * least three in four), else 1.  Differences of STEP_MAX ticks or more are
 * left out.  Returns the step in ticks.  Cannot fail.
 */
#define STEP_GROUPS 16
#define STEP_READS  128
#define STEP_MAX    4096u

/* The gcd of the differences of STEP_READS reads, 0 when none qualified.
 * Cannot fail. */
static uint64_t step_group(void)
{
    uint64_t g = 0, prev = rp_ticks();
    volatile unsigned sink = 0;
    for (unsigned i = 0; i < STEP_READS && g != 1; i++) {
        for (unsigned k = 0; k < (i * 7) % 13; k++)
            sink += k;
        uint64_t now = rp_ticks(), d = now - prev;
        prev = now;
        if (d == 0 || d >= STEP_MAX)
            continue;
        while (d) { /* g = gcd(g, d) */
            uint64_t r = g % d;
            g = d;
            d = r;
        }
    }
    return g;
}

RP_HIDDEN uint64_t rp_clock_step(void)
{
    uint64_t g[STEP_GROUPS];
    for (unsigned i = 0; i < STEP_GROUPS; i++)
        g[i] = step_group();
    for (unsigned i = 0; i < STEP_GROUPS / 4 + 1; i++) {
        unsigned n = 0;
        for (unsigned k = 0; k < STEP_GROUPS; k++)
            n += g[k] == g[i];
        if (g[i] > 1 && 4 * n >= 3 * STEP_GROUPS)
            return g[i];
    }
    return 1;
}

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
 * 10 ns of its 100 MHz reference, so two reads differ by whole steps: by
 * 0, 21 or 42 ticks at 2.1 GHz, never by 5; by 24 or 25, 49, 73 or 74 at
 * 2445 MHz, where a step is 24.5 ticks.  A span measured as one step
 * lasted anywhere from a tick to two steps.  The differences looked at are
 * those between reads a varying few loop turns apart (back-to-back reads
 * would only show the read's own latency), in STEP_GROUPS groups of
 * STEP_READS, each group giving a step:
 *
 *   - whole: the greatest common divisor of its differences, when above 1;
 *   - else fractional: the q of at least STEP_QMIN ticks that puts every
 *     difference within a tick of a multiple of q (the counter shows a
 *     whole number of ticks, so one step reads as floor(q) or ceil(q)),
 *     from the smallest difference (one step, or a few) refined by the
 *     least squares over the sorted differences; none when no such q fits.
 *
 * A thread moved to another CPU between two reads, or a host's exit, can
 * move the counter by any amount and spoil its group, so the step is the
 * one at least three groups in four agree on (within 1 %: their mean),
 * else 1.  The floor of STEP_QMIN keeps a counter that moves
 * by one tick, whose few distinct differences a small q could happen to
 * fit, from reading as stepped.  Differences of STEP_MAX ticks or more are
 * left out.  Returns the step in ticks.  Cannot fail.
 */
#define STEP_GROUPS 16
#define STEP_READS  128
#define STEP_MAX    4096u
#define STEP_QMIN   8.0

/* Fills d with one group's differences (1 to STEP_MAX - 1 ticks); returns
 * how many.  Cannot fail. */
static unsigned step_reads(uint32_t *d)
{
    uint64_t prev = rp_ticks();
    volatile unsigned sink = 0;
    unsigned n = 0;
    for (unsigned i = 0; i < STEP_READS; i++) {
        for (unsigned k = 0; k < (i * 7) % 13; k++)
            sink += k;
        uint64_t now = rp_ticks(), x = now - prev;
        prev = now;
        if (x > 0 && x < STEP_MAX)
            d[n++] = (uint32_t)x;
    }
    return n;
}

/* The gcd of d[0..n); 0 when n is 0. */
static uint64_t step_gcd(const uint32_t *d, unsigned n)
{
    uint64_t g = 0;
    for (unsigned i = 0; i < n && g != 1; i++) {
        uint64_t x = d[i];
        while (x) {
            uint64_t r = g % x;
            g = x;
            x = r;
        }
    }
    return g;
}

/* The fractional step of sorted d[0..n) (see above), 0 when none fits.  The
 * smallest difference is taken for 1 to 4 steps; each difference in turn,
 * given the multiple of the step so far nearest to it, refines the step
 * (sum of differences / sum of multiples). */
static double step_fit(const uint32_t *d, unsigned n)
{
#define STEP_NEAREST(x, q) ((double)(uint64_t)((x) / (q) + 0.5)) /* (no libm) */
    for (unsigned j = 1; n >= STEP_READS / 2 && j <= 4; j++) {
        double q = (double)d[0] / j, sd = 0, sk = 0;
        if (q < STEP_QMIN)
            break;
        for (unsigned i = 0; i < n; i++) {
            double k = STEP_NEAREST(d[i], q);
            sd += d[i];
            sk += k;
            q = sd / sk;
        }
        unsigned i = 0;
        while (i < n && __builtin_fabs(d[i] - STEP_NEAREST(d[i], q) * q) <= 1.0)
            i++;
        if (i == n)
            return q;
    }
    return 0;
#undef STEP_NEAREST
}

RP_HIDDEN double rp_clock_step_group(uint32_t *d, unsigned n)
{
    for (unsigned i = 1; i < n; i++) { /* insertion sort: n is small */
        uint32_t x = d[i];
        unsigned j = i;
        for (; j > 0 && d[j - 1] > x; j--)
            d[j] = d[j - 1];
        d[j] = x;
    }
    uint64_t g = step_gcd(d, n);
    if (g > 1)
        return (double)g;
    double q = step_fit(d, n);
    return q > 0 ? q : 1;
}

RP_HIDDEN double rp_clock_step(void)
{
    uint32_t d[STEP_READS];
    double q[STEP_GROUPS];
    for (unsigned i = 0; i < STEP_GROUPS; i++)
        q[i] = rp_clock_step_group(d, step_reads(d));
    for (unsigned i = 0; i < STEP_GROUPS / 4 + 1; i++) {
        unsigned n = 0;
        double sum = 0;
        for (unsigned k = 0; k < STEP_GROUPS; k++)
            if (__builtin_fabs(q[k] - q[i]) <= 0.01 * q[i])
                n++, sum += q[k];
        if (q[i] > 1 && 4 * n >= 3 * STEP_GROUPS)
            return sum / n; /* (whole steps agree exactly: their own value) */
    }
    return 1;
}

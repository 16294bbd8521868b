// SPDX-License-Identifier: MIT
/*
 * rp_bare_cm.c - Cortex-M helpers for the bare-metal recorder: SysTick and
 * DWT as 64-bit clocks, semihosting (file sink, console, exit) and a RAM
 * sink.  Freestanding, registers only (no CMSIS needed).  Every function
 * here is left out of -finstrument-functions.
 */
#include <stdint.h>

#include "rankprof_bare.h"

#define NOINSTR __attribute__((no_instrument_function))

#define SYST_CSR (*(volatile uint32_t *)0xe000e010u)
#define SYST_RVR (*(volatile uint32_t *)0xe000e014u)
#define SYST_CVR (*(volatile uint32_t *)0xe000e018u)
#define DEMCR    (*(volatile uint32_t *)0xe000edfcu)
#define DWT_CTRL (*(volatile uint32_t *)0xe0001000u)
#define DWT_CYC  (*(volatile uint32_t *)0xe0001004u)

#define COUNTFLAG (1u << 16)

static uint64_t systick_wraps; /* wraps seen */
static uint32_t systick_reload;
static uint32_t dwt_last, dwt_high;

/* Masks interrupts; returns the previous PRIMASK. */
static inline NOINSTR uint32_t mask(void)
{
    uint32_t m;
    __asm volatile("mrs %0, primask\n\tcpsid i" : "=r"(m)::"memory");
    return m;
}
static inline NOINSTR void unmask(uint32_t m)
{
    __asm volatile("msr primask, %0" ::"r"(m) : "memory");
}

NOINSTR void rp_bare_systick_start(uint32_t reload, int with_interrupt)
{
    systick_reload = reload & 0xffffffu;
    SYST_CSR = 0;
    SYST_RVR = systick_reload;
    SYST_CVR = 0;
    systick_wraps = 0;
    SYST_CSR = 5u | (with_interrupt ? 2u : 0u); /* processor clock, enable, [tickint] */
}

/*
 * The wrap count is kept by whoever sees COUNTFLAG first (reading the CSR
 * clears it): this clock, or the SysTick handler.  Masked, so the two never
 * race.  A period is counted from the tick the counter reaches 0 (when the
 * flag rises), so a wrap between the counter read and the flag read is
 * caught by reading the counter again, and the time never steps back.
 * Cannot fail.
 */
NOINSTR uint64_t rp_bare_systick_clock(void)
{
    uint32_t m = mask();
    uint32_t v = SYST_CVR;
    if (SYST_CSR & COUNTFLAG) {
        systick_wraps++;
        v = SYST_CVR;
    }
    uint64_t t = systick_wraps * (systick_reload + 1u) + (v ? systick_reload + 1u - v : 0);
    unmask(m);
    return t;
}

NOINSTR void rp_bare_systick_isr(void)
{
    uint32_t m = mask();
    if (SYST_CSR & COUNTFLAG)
        systick_wraps++;
    unmask(m);
}

NOINSTR int rp_bare_dwt_start(void)
{
    DEMCR |= 1u << 24;         /* TRCENA */
    if (DWT_CTRL & (1u << 25)) /* NOCYCCNT */
        return -1;
    DWT_CYC = 0;
    DWT_CTRL |= 1u;
    dwt_last = dwt_high = 0;
    return 0;
}

/* A 32-bit counter made 64-bit: it must be read at least once per 2^32
 * cycles.  Cannot fail. */
NOINSTR uint64_t rp_bare_dwt_clock(void)
{
    uint32_t m = mask();
    uint32_t c = DWT_CYC;
    if (c < dwt_last)
        dwt_high++;
    dwt_last = c;
    uint64_t t = ((uint64_t)dwt_high << 32) | c;
    unmask(m);
    return t;
}

/* ---- semihosting ----------------------------------------------------------- */

/* One semihosting call: op in r0, the argument block in r1. */
static NOINSTR int semihost(uint32_t op, const void *arg)
{
    register uint32_t r0 __asm("r0") = op;
    register const void *r1 __asm("r1") = arg;
    __asm volatile("bkpt 0xab" : "+r"(r0) : "r"(r1) : "memory");
    return (int)r0;
}

NOINSTR int rp_bare_semihost_open(const char *path)
{
    uint32_t n = 0;
    while (path[n])
        n++;
    uint32_t a[3] = {(uint32_t)(uintptr_t)path, 6 /* "wb" */, n};
    return semihost(0x01, a);
}

NOINSTR int rp_bare_semihost_sink(void *ctx, const void *data, uint32_t len)
{
    uint32_t a[3] = {(uint32_t) * (int *)ctx, (uint32_t)(uintptr_t)data, len};
    return semihost(0x05, a) == 0 ? 0 : -1; /* returns the bytes NOT written */
}

NOINSTR void rp_bare_semihost_close(int handle)
{
    uint32_t a[1] = {(uint32_t)handle};
    semihost(0x02, a);
}

NOINSTR void rp_bare_semihost_putc(char c)
{
    semihost(0x03, &c);
}

NOINSTR void rp_bare_semihost_exit(int status)
{
    uint32_t a[2] = {0x20026u /* ADP_Stopped_ApplicationExit */, (uint32_t)status};
    for (;;)
        semihost(0x20 /* SYS_EXIT_EXTENDED */, a);
}

NOINSTR int rp_bare_pl011_sink(void *ctx, const void *data, uint32_t len)
{
    volatile uint32_t *u = ctx; /* DR at 0, FR at 0x18 */
    const uint8_t *p = data;
    while (len--) {
        while (u[6] & (1u << 5)) /* FR.TXFF: the transmit FIFO is full */
            ;
        u[0] = *p++;
    }
    return 0;
}

NOINSTR int rp_bare_ram_sink(void *ctx, const void *data, uint32_t len)
{
    struct rp_bare_ram *r = ctx;
    const uint8_t *p = data;
    if (r->size - r->used < len)
        return -1;
    for (uint32_t i = 0; i < len; i++)
        r->buf[r->used + i] = p[i];
    r->used += len;
    return 0;
}

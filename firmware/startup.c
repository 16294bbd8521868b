// SPDX-License-Identifier: MIT
/*
 * startup.c - reset handler and vector table of the bundled firmware example
 * on the Cortex-M3 of QEMU's mps2-an385: copies .data, clears .bss, starts
 * SysTick (the clock, and the interrupt the example's monitor runs from) and
 * the bare-metal recorder writing RP_OUT (default "firmware.rpt") on the
 * host through semihosting, runs main(), stops the recorder, prints the
 * profile points' table and main's duration in ticks and events recorded,
 * and ends QEMU with main's status.  Fails (status
 * 99) when the trace file cannot be opened.
 */
#include <stdint.h>

#include "rankprof_bare.h"

#ifndef RP_OUT
#define RP_OUT "firmware.rpt"
#endif
#ifndef RP_SYSTICK_RELOAD
#define RP_SYSTICK_RELOAD 2499u /* 100 us at the board's 25 MHz */
#endif
#define NOINSTR __attribute__((no_instrument_function))

extern uint32_t __data_start__, __data_end__, __data_load__, __bss_start__, __bss_end__,
    __stack_top__;
int main(void);
void SysTick_Handler(void);

static uint8_t rp_buf[2048], rp_irq_buf[512];
static int rp_fh;

static NOINSTR void puts_sh(const char *s)
{
    while (*s)
        rp_bare_semihost_putc(*s++);
}

static NOINSTR void put_u32(uint32_t v)
{
    char b[10];
    int n = 0;
    do
        b[n++] = (char)('0' + v % 10);
    while ((v /= 10) != 0);
    while (n)
        rp_bare_semihost_putc(b[--n]);
}

NOINSTR void Reset_Handler(void)
{
    uint32_t *d = &__data_start__, *s = &__data_load__;
    while (d < &__data_end__)
        *d++ = *s++;
    for (d = &__bss_start__; d < &__bss_end__; d++)
        *d = 0;

    rp_bare_systick_start(RP_SYSTICK_RELOAD, 1);
    rp_fh = rp_bare_semihost_open(RP_OUT);
    if (rp_fh < 0) {
        puts_sh("firmware: cannot open " RP_OUT " on the host\n");
        rp_bare_semihost_exit(99);
    }
    struct rp_bare_config c = {.hz = 25000000u,
                               .clock = rp_bare_systick_clock,
                               .sink = rp_bare_semihost_sink,
                               .sink_ctx = &rp_fh,
                               .buf = rp_buf,
                               .buf_size = sizeof rp_buf,
                               .irq_buf = rp_irq_buf,
                               .irq_buf_size = sizeof rp_irq_buf,
                               .program = "firmware.elf"};
#ifndef RP_NO_RECORD /* RP_NO_RECORD: the recorder linked in but off, to measure its cost */
    if (rp_bare_start(&c) != 0) {
        puts_sh("firmware: the recorder did not start\n");
        rp_bare_semihost_exit(99);
    }
#else
    (void)c;
#endif
    uint64_t t0 = rp_bare_systick_clock();
    int st = main();
    uint64_t t1 = rp_bare_systick_clock();
    uint64_t ev = rp_bare_events();
#ifndef RP_NO_RECORD
    if (rp_bare_stop(st) != 0)
        puts_sh("firmware: writing the trace failed\n");
#endif
    rp_bare_semihost_close(rp_fh);
    rp_bare_print_points(rp_bare_semihost_putc);
#ifdef RP_BARE_FUNC_STATS
    rp_bare_print_funcs(rp_bare_semihost_putc);
#endif
    puts_sh("firmware: main ");
    put_u32((uint32_t)(t1 - t0));
    puts_sh(" ticks, ");
    put_u32((uint32_t)ev);
    puts_sh(" events recorded\n");
    rp_bare_semihost_exit(st);
}

static NOINSTR void Default_Handler(void)
{
    puts_sh("firmware: unexpected exception\n");
    rp_bare_semihost_exit(98);
}

__attribute__((section(".vectors"), used)) static void (*const vectors[16])(void) = {
    (void (*)(void))(uintptr_t)&__stack_top__,
    Reset_Handler,
    Default_Handler, /* NMI */
    Default_Handler, /* HardFault */
    Default_Handler, /* MemManage */
    Default_Handler, /* BusFault */
    Default_Handler, /* UsageFault */
    0,
    0,
    0,
    0,
    Default_Handler, /* SVCall */
    Default_Handler, /* DebugMon */
    0,
    Default_Handler, /* PendSV */
    SysTick_Handler,
};

// SPDX-License-Identifier: MIT
/*
 * rankprof_bare.h - the bare-metal recorder (src/bare/): rankprof on a
 * microcontroller with no OS, no heap and no threads.  docs/firmware.md
 * says how to add it to a Cortex-M project.
 *
 * The program includes rankprof.h as on Linux (RP_POINT, RP_IO, RP_TIMER,
 * RP_COUNTER, rp_lock_*), is compiled with -finstrument-functions, and is
 * linked with src/bare/rp_bare.c (the recorder) and, on Cortex-M,
 * src/bare/rp_bare_cm.c (SysTick and DWT clocks, semihosting and RAM
 * sinks).  It starts the recorder with a clock, a sink and a RAM buffer:
 *
 *     static uint8_t rp_buf[2048], rp_irq_buf[512];
 *     struct rp_bare_config c = {
 *         .hz = 25000000, .clock = rp_bare_systick_clock,
 *         .sink = rp_bare_semihost_sink, .sink_ctx = &fh,
 *         .buf = rp_buf, .buf_size = sizeof rp_buf,
 *         .irq_buf = rp_irq_buf, .irq_buf_size = sizeof rp_irq_buf,
 *         .program = "fw.elf"};
 *     rp_bare_start(&c);  ...  rp_bare_stop(0);
 *
 * and the sink receives a standard rankprof trace (src/trace/format.h):
 * on the host, `rankprof import --elf fw.elf fw.rpt` names it from the ELF
 * for report, graph, export and the rest.  Events of the main context go
 * to thread 1 ("main") or to the running RTOS task's stream
 * (rp_bare_task_switch); events recorded in an interrupt handler go to
 * thread 2 ("irq") when irq_buf is given, so an ISR is a root of its own
 * and never a callee of the function it interrupted.
 *
 * Interrupt safety: every event is recorded inside a critical section
 * (PRIMASK on Cortex-M, else the user's rp_bare_crit_enter/exit), so events
 * from ISRs never tear the buffer.  When a buffer is full it is handed to
 * the sink there and then (inside the critical section); when the sink
 * fails, the events are counted as lost.
 */
#ifndef RANKPROF_BARE_H
#define RANKPROF_BARE_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * A sink: writes len bytes somewhere (a host file, a UART, RAM).  Returns
 * 0, or a negative number when the bytes could not be written (they are
 * then counted as lost).  Called with interrupts masked.
 */
typedef int (*rp_bare_sink_fn)(void *ctx, const void *data, uint32_t len);

struct rp_bare_config {
    uint32_t hz;             /* clock ticks per second (INFO freq_hz) */
    uint64_t (*clock)(void); /* monotonic ticks; called with interrupts masked */
    rp_bare_sink_fn sink;
    void *sink_ctx;
    void *buf; /* chunk buffer of the main context, >= 256 bytes */
    uint32_t buf_size;
    void *irq_buf;         /* chunk buffer of interrupt handlers (thread 2), or NULL: */
    uint32_t irq_buf_size; /* then ISR events are not recorded */
    const char *program;   /* INFO "program", e.g. the ELF's name; may be NULL */
};

/*
 * Writes the file header, INFO and THREAD chunks to the sink and starts
 * recording.  Returns 0, -1 for a bad configuration (no clock, no sink, a
 * buffer under 256 bytes, hz 0) or -2 when the sink failed.
 */
int rp_bare_start(const struct rp_bare_config *c);

/* Hands the buffered events of both contexts to the sink.  Returns 0 or -2
 * when the sink failed (the events are counted as lost). */
int rp_bare_flush(void);

/*
 * Flushes, writes the END chunk (status, the totals) and stops recording.
 * Returns 0, -2 when the sink failed, -1 when not recording.
 */
int rp_bare_stop(int status);

/*
 * Tasks of an RTOS: each task gets a stream (a thread of the trace) of its
 * own, so that spans nest per task although tasks preempt each other.
 * rp_bare_task_add (after rp_bare_start) registers task's stream: thread
 * id tid (>= 3: 1 and 2 are main and irq), its name, its chunk buffer
 * (>= 128 bytes); returns 0, -1 (bad arguments, not recording, no sink)
 * or -2 (the sink failed).  rp_bare_task_switch(task) sends the events of
 * thread mode to task's stream from then on (NULL: back to main): call it
 * from the RTOS's context-switch hook (FreeRTOS: traceTASK_SWITCHED_IN).
 * The time a task (or main) was switched out is off-CPU time of the spans
 * it had open: a span of the node [off-cpu] in its stream, written when it
 * is switched back in.  Built with -DRP_BARE_FUNC_STATS, the task's
 * buffer also holds its stack of open calls (RP_BARE_FUNC_DEPTH * 16 + 16
 * bytes at its end; size must be at least that plus 128).
 * The struct is the recorder's; keep it alive while recording.
 */
struct rp_bare_task {
    uint64_t opaque[16];
};
int rp_bare_task_add(struct rp_bare_task *task, uint32_t tid, const char *name, void *buf,
                     uint32_t size);
void rp_bare_task_switch(struct rp_bare_task *task);

/* Events recorded, and events lost (sink failures, full id tables). */
uint64_t rp_bare_events(void);
uint64_t rp_bare_lost(void);

/*
 * Direct mode: the statistics of every profile point (RP_POINT, RP_IO ...)
 * are kept in the sites themselves, trace or not, and
 * rp_bare_print_points() prints the kernel-style table of them, one line a
 * site in section order: calls, total, max and mean in clock ticks, then
 * the name.  putc writes one character (a UART, semihosting).  Needs the
 * linker section bounds __start_rp_sites / __stop_rp_sites (docs/firmware.md).
 * Cannot fail.
 */
void rp_bare_print_points(void (*putc)(char c));

/*
 * Direct mode for functions, compiled in when the recorder is built with
 * -DRP_BARE_FUNC_STATS (16 bytes of RAM a function of the id table, 512 for
 * each of the two stacks of open calls, RP_BARE_FUNC_DEPTH = 32 deep, and
 * about 300 bytes of flash): rp_bare_print_funcs() prints one line a
 * function called so far: calls, total, max and mean in clock ticks
 * (inclusive: callees and handlers included), then its address (name it
 * with `arm-none-eabi-addr2line -f -e fw.elf ADDR`, or `nm`).  Calls
 * deeper than RP_BARE_FUNC_DEPTH are counted on a last line, not timed.
 * Cannot fail.
 */
void rp_bare_print_funcs(void (*putc)(char c));

/* ---- Cortex-M helpers (src/bare/rp_bare_cm.c) ---------------------------- */

/* SysTick as a 64-bit clock: starts it on the processor clock with reload
 * (at most 0xffffff; a wrap every reload + 1 cycles, and the clock must be
 * read, or rp_bare_systick_isr() called, at least once per wrap), with or
 * without its interrupt.  Cannot fail. */
void rp_bare_systick_start(uint32_t reload, int with_interrupt);
uint64_t rp_bare_systick_clock(void);
/* Call from SysTick_Handler when the SysTick interrupt is on. */
void rp_bare_systick_isr(void);

/* The DWT cycle counter as a 64-bit clock (Cortex-M3/M4/M7 silicon; reads 0
 * under QEMU).  Returns 0 or -1 when the core has no cycle counter. */
int rp_bare_dwt_start(void);
uint64_t rp_bare_dwt_clock(void);

/* Semihosting (a debugger or QEMU -semihosting): opens path on the host for
 * writing; returns a handle >= 0 or -1.  The sink's ctx is a pointer to an
 * int holding the handle. */
int rp_bare_semihost_open(const char *path);
int rp_bare_semihost_sink(void *ctx, const void *data, uint32_t len);
void rp_bare_semihost_close(int handle);
void rp_bare_semihost_putc(char c);
/* Ends the QEMU run with exit status status (SYS_EXIT_EXTENDED). */
void rp_bare_semihost_exit(int status) __attribute__((noreturn));

/* A PL011 UART (lm3s6965evb, LPC, STM32's are not): ctx is its base
 * address, e.g. (void *)0x4000c000, the port already set up (baud rate,
 * enabled).  Waits while the transmit FIFO is full; cannot fail.  Capture
 * the port raw into a file on the host; under QEMU: -serial file:fw.rpt. */
int rp_bare_pl011_sink(void *ctx, const void *data, uint32_t len);

/* A RAM sink: appends to buf until it is full, then fails.  Read it out
 * with a debugger: `dump binary memory fw.rpt buf buf+used` in gdb. */
struct rp_bare_ram {
    uint8_t *buf;
    uint32_t size;
    uint32_t used;
};
int rp_bare_ram_sink(void *ctx, const void *data, uint32_t len);

#ifdef __cplusplus
}
#endif

#endif /* RANKPROF_BARE_H */

// SPDX-License-Identifier: MIT
/*
 * firmware.c - an example program shaped like microcontroller firmware, to be
 * profiled with `rankprof record -- ./firmware [TICKS]`.
 *
 * What it does
 *   main() brings up the "board" (board_init), starts a monitor thread and
 *   runs the cooperative scheduler sched_run() for TICKS timer ticks (default
 *   2000).  Each loop iteration calls timer_tick() (the timer interrupt, kept
 *   in the loop so the counts stay deterministic) and then dispatches, through
 *   a function-pointer task table, every task whose period divides the tick
 *   number (ticks are numbered 1..TICKS):
 *
 *     task_sensor        every  1 tick: reads 6 data bytes from the sensor
 *     task_control       every  2 ticks: 16-tap FIR + PI law (filter_update),
 *                        writes the actuator register
 *     task_telemetry     every 10 ticks: reads the 2-byte temperature; every
 *                        100th run does a long flush (telemetry_flush): a
 *                        128-byte block write plus a simulated flash erase -
 *                        the worst case far from the typical case
 *     task_housekeeping  every 50 ticks: reads the status register, kicks the
 *                        watchdog register
 *
 *   The I2C driver (i2c_read_reg, i2c_write_reg -> i2c_xfer) talks to a fake
 *   sensor with 256 registers under one pthread mutex (the bus lock).  Every
 *   byte on the wire burns a fixed number of loop iterations (BYTE_SPIN), so
 *   bus time is deterministic work, not sleeping.  A second thread,
 *   monitor_main, polls the status register TICKS/20 times with a 2 ms sleep
 *   between polls, so it contends with the scheduler for the bus lock.
 *
 *   The run takes about 0.3-0.6 s and prints one summary line.  Everything is
 *   deterministic: the sensor's samples come from a fixed-seed LCG, and the
 *   printed checksum depends only on TICKS (the monitor reads a register whose
 *   value never changes, so the interleaving cannot change the output).
 *
 * Exact call counts (instrumented functions only; spin() and dev_prepare()
 * are marked no_instrument_function, libc is not instrumented), for T = TICKS:
 *
 *   function            formula                          T = 2000 (default)
 *   main                1                                    1
 *   board_init          1                                    1
 *   sched_run           1                                    1
 *   timer_tick          T                                 2000
 *   task_sensor         T                                 2000
 *   task_control        T/2                               1000
 *   filter_update       T/2                               1000
 *   task_telemetry      T/10                               200
 *   telemetry_flush     (T/10)/100                           2
 *   task_housekeeping   T/50                                40
 *   monitor_main        1 (thread entry, caller <root>)      1
 *   monitor_poll        T/20                               100
 *   i2c_read_reg        1 + T + T/10 + T/50 + T/20        2341
 *   i2c_write_reg       1 + T/2 + T/50                    1041
 *   i2c_xfer            reads + writes + flushes          3384
 *   (all divisions round down)
 *
 * Edges (caller -> callee: calls) for T = 2000:
 *   <root> -> main 1, <root> -> monitor_main 1,
 *   main -> board_init 1, main -> sched_run 1,
 *   board_init -> i2c_read_reg 1, board_init -> i2c_write_reg 1,
 *   sched_run -> timer_tick 2000, sched_run -> task_sensor 2000,
 *   sched_run -> task_control 1000, sched_run -> task_telemetry 200,
 *   sched_run -> task_housekeeping 40,
 *   task_sensor -> i2c_read_reg 2000,
 *   task_control -> filter_update 1000, task_control -> i2c_write_reg 1000,
 *   task_telemetry -> i2c_read_reg 200, task_telemetry -> telemetry_flush 2,
 *   telemetry_flush -> i2c_xfer 2,
 *   task_housekeeping -> i2c_read_reg 40, task_housekeeping -> i2c_write_reg 40,
 *   monitor_main -> monitor_poll 100, monitor_poll -> i2c_read_reg 100,
 *   i2c_read_reg -> i2c_xfer 2341, i2c_write_reg -> i2c_xfer 1041.
 *
 * Profile points, io spans, instants and counters (include/rankprof.h),
 * placed so that they contain no instrumented call and leave the function
 * edges above as they are:
 *
 *   name             kind      where                       T = 2000
 *   sensor.convert   point     task_sensor, after the read     2000
 *   telemetry.pack   point     task_telemetry, buffering        200
 *   flash.erase      point     telemetry_flush, budget 1 ms       2
 *                              (both erases overrun it: 2 overruns)
 *   i2c0             io        i2c_xfer, under the bus lock    3384
 *                              ARG = device 0x6b, bytes on the wire
 *   tick             instant   timer_tick (class timer)        2000
 *   monitor.status   counter   monitor_poll (class user)        100
 *
 * Each point's caller is the function it is in (sensor.convert under
 * task_sensor 2000 times, and so on); i2c0 is under i2c_xfer, or under the
 * bus lock's hold span when locks are recorded.  No function edge changes.
 *
 * tests/e2e_basic.sh checks these numbers (tests/e2e_points.sh the points
 * part); change both together.
 *
 * Built with -O1 -g -fno-inline -finstrument-functions and NOT linked with
 * rankprof: `rankprof record` preloads the recorder, and RANKPROF_WEAK makes
 * the points do nothing when it is absent.
 *
 * Bare metal (-DRP_BARE, firmware/build.sh, `make firmware-demo`): the same
 * program for the Cortex-M3 of QEMU's mps2-an385 with the bare-metal
 * recorder (docs/firmware.md), started by firmware/startup.c before main.
 * The bus lock is a flag reported with rp_lock_acquired/released; the
 * monitor is the SysTick interrupt (every 100 us): it calls monitor_poll
 * while polls are left and the bus is free, and main waits for the last
 * poll.  The spins are shorter (BYTE_SPIN 40, ERASE_SPIN 400000, so each
 * erase still overruns its 1 ms budget).  The summary line is the same;
 * the counts above hold except that there is no monitor_main: <root> ->
 * monitor_poll 100, in thread 2 "irq".  tests/e2e_firmware.sh checks them.
 */
#include <stddef.h>
#include <stdint.h>
#ifndef RP_BARE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define RANKPROF_WEAK /* run with or without the recorder */
#else
#include "rankprof_bare.h"
#endif
#include "rankprof.h"

#define NOINSTR __attribute__((no_instrument_function))

/* ---- tuning: the "hardware" speed ---------------------------------------- */

#ifndef RP_BARE
#define BYTE_SPIN  4000u    /* loop iterations per byte on the bus */
#define ERASE_SPIN 8000000u /* loop iterations of one flash-page erase */
#else
#define BYTE_SPIN  40u     /* a Cortex-M3 under QEMU: about 1/100 of a PC's speed */
#define ERASE_SPIN 400000u /* about 2 ms at 1 ns an instruction (-icount shift=0) */
#endif
#define FLUSH_BYTES  128      /* payload of the telemetry block write */
#define FLUSH_EVERY  100      /* telemetry runs per flush */
#define MON_DIVISOR  20       /* the monitor polls TICKS/MON_DIVISOR times */
#define MON_SLEEP_NS 2000000L /* between monitor polls */
#define FIR_TAPS     16
#define DEV_ADDR     0x6b    /* the sensor's I2C address */
#define ERASE_BUDGET 1000000 /* ns: the page erase should take at most 1 ms */

/* Burns n loop iterations: deterministic CPU work standing in for bus or
 * flash time.  Not instrumented, so it is part of its caller's own time. */
static NOINSTR void spin(uint32_t n)
{
    volatile uint32_t sink = 0;
    for (uint32_t i = 0; i < n; i++)
        sink += i;
}

/* ---- the fake I2C device --------------------------------------------------- */

enum {
    REG_WHO_AM_I = 0x0f, /* reads 0x6b */
    REG_CTRL = 0x10,     /* actuator / control output */
    REG_STATUS = 0x1e,   /* constant 0x07: data ready, temp ready, ok */
    REG_TEMP = 0x20,     /* 2 bytes, little-endian */
    REG_DATA = 0x28,     /* 6 bytes: x, y, z, each little-endian int16 */
    REG_WDOG = 0x40,     /* watchdog kick */
    REG_FIFO = 0x80,     /* block-write sink for the telemetry flush */
};

static struct {
#ifndef RP_BARE
    pthread_mutex_t lock; /* the bus lock */
#else
    volatile uint8_t lock; /* the bus lock: taken by the main context only */
#endif
    uint8_t regs[256];
    uint32_t lcg;   /* sample generator state, fixed seed */
    uint64_t bytes; /* bytes moved on the bus */
    uint32_t wdog_kicks;
    uint32_t fifo_sum; /* checksum of everything block-written */
#ifndef RP_BARE
} bus = {.lock = PTHREAD_MUTEX_INITIALIZER, .lcg = 12345u};
#else
} bus = {.lcg = 12345u};
#endif

/* The bus lock.  On Linux a pthread mutex, recorded by the recorder's
 * interposers; on the bare-metal build a flag reported with rp_lock_*: only
 * the main context takes it (the monitor interrupt polls when it is free). */
static inline NOINSTR void bus_lock(void)
{
#ifndef RP_BARE
    pthread_mutex_lock(&bus.lock);
#else
    bus.lock = 1;
    rp_lock_acquired(&bus.lock);
#endif
}

static inline NOINSTR void bus_unlock(void)
{
#ifndef RP_BARE
    pthread_mutex_unlock(&bus.lock);
#else
    rp_lock_released(&bus.lock);
    bus.lock = 0;
#endif
}

/* Device side of a read of `reg`: new samples appear when DATA is read. */
static NOINSTR void dev_prepare(uint8_t reg)
{
    if (reg == REG_DATA) {
        for (int i = 0; i < 6; i++) {
            bus.lcg = bus.lcg * 1103515245u + 12345u;
            bus.regs[REG_DATA + i] = (uint8_t)(bus.lcg >> 16);
        }
    } else if (reg == REG_TEMP) {
        bus.lcg = bus.lcg * 1103515245u + 12345u;
        uint16_t t = (uint16_t)(2500 + ((bus.lcg >> 16) & 0x3f)); /* 25.00 C + noise */
        bus.regs[REG_TEMP] = (uint8_t)t;
        bus.regs[REG_TEMP + 1] = (uint8_t)(t >> 8);
    }
}

/* ---- the driver ------------------------------------------------------------ */

/*
 * One bus transaction: address byte, the tx bytes (tx[0] is the register),
 * then, if nrx > 0, a repeated start, the address again and nrx bytes read
 * from consecutive registers.  Holds the bus lock for the whole transfer.
 */
int i2c_xfer(const uint8_t *tx, size_t ntx, uint8_t *rx, size_t nrx)
{
    size_t nbytes = 1 + ntx + (nrx ? 1 + nrx : 0);

    bus_lock();
    RP_IO_BEGIN(io, "i2c0", DEV_ADDR, nbytes);
    spin((uint32_t)nbytes * BYTE_SPIN);
    uint8_t reg = ntx ? tx[0] : 0;
    if (nrx) {
        dev_prepare(reg);
        for (size_t i = 0; i < nrx; i++)
            rx[i] = bus.regs[(uint8_t)(reg + i)];
    } else if (reg == REG_FIFO) {
        for (size_t i = 1; i < ntx; i++)
            bus.fifo_sum = bus.fifo_sum * 31u + tx[i];
    } else {
        for (size_t i = 1; i < ntx; i++)
            bus.regs[(uint8_t)(reg + i - 1)] = tx[i];
        if (reg == REG_WDOG)
            bus.wdog_kicks++;
    }
    bus.bytes += nbytes;
    RP_IO_END(io);
    bus_unlock();
    return 0;
}

int i2c_read_reg(uint8_t reg, uint8_t *buf, size_t n)
{
    return i2c_xfer(&reg, 1, buf, n);
}

int i2c_write_reg(uint8_t reg, uint8_t val)
{
    uint8_t tx[2] = {reg, val};
    return i2c_xfer(tx, 2, NULL, 0);
}

/* ---- the timer ------------------------------------------------------------- */

static volatile uint32_t g_ticks; /* incremented by the "timer interrupt" */

void timer_tick(void)
{
    RP_TIMER("tick");
    g_ticks++;
}

/* ---- tasks ----------------------------------------------------------------- */

static struct {
    int16_t hist[FIR_TAPS]; /* last x samples, ring */
    unsigned pos;
    int32_t integ; /* PI integrator */
    int16_t last_x;
    uint8_t out;
    uint32_t out_sum;
} ctl;

static struct {
    uint32_t runs, flushes;
    uint8_t buf[FLUSH_BYTES];
    unsigned fill;
    uint32_t temp_sum;
} tlm;

static uint32_t g_status_sum;
static uint32_t g_monitor_polls, g_monitor_status_sum;

void task_sensor(void)
{
    uint8_t d[6];
    i2c_read_reg(REG_DATA, d, sizeof d);
    RP_POINT("sensor.convert");
    ctl.last_x = (int16_t)(d[0] | (d[1] << 8));
}

/* 16-tap moving-average FIR in fixed point, then a PI law toward 0. */
uint8_t filter_update(int16_t x)
{
    static const int16_t coef[FIR_TAPS] = {1, 2, 3, 4, 5, 6, 7, 8, 8, 7, 6, 5, 4, 3, 2, 1};
    ctl.hist[ctl.pos] = x;
    ctl.pos = (ctl.pos + 1) % FIR_TAPS;
    int32_t acc = 0;
    for (unsigned i = 0; i < FIR_TAPS; i++)
        acc += coef[i] * ctl.hist[(ctl.pos + i) % FIR_TAPS];
    int32_t y = acc / 72; /* sum of coef */
    int32_t err = -y;
    ctl.integ += err / 16;
    if (ctl.integ > 1 << 20)
        ctl.integ = 1 << 20;
    if (ctl.integ < -(1 << 20))
        ctl.integ = -(1 << 20);
    int32_t u = (err / 4 + ctl.integ / 64) / 256 + 128;
    return (uint8_t)(u < 0 ? 0 : u > 255 ? 255 : u);
}

void task_control(void)
{
    ctl.out = filter_update(ctl.last_x);
    ctl.out_sum += ctl.out;
    i2c_write_reg(REG_CTRL, ctl.out);
}

/* The rare slow path: write the telemetry buffer out, then erase a page. */
void telemetry_flush(void)
{
    uint8_t tx[1 + FLUSH_BYTES];
    tx[0] = REG_FIFO;
    for (unsigned i = 0; i < FLUSH_BYTES; i++)
        tx[1 + i] = tlm.buf[i];
    i2c_xfer(tx, sizeof tx, NULL, 0);
    RP_POINT_BEGIN_BUDGET(erase, "flash.erase", ERASE_BUDGET);
    spin(ERASE_SPIN);
    RP_POINT_END(erase);
    tlm.fill = 0;
    tlm.flushes++;
}

void task_telemetry(void)
{
    uint8_t t[2];
    i2c_read_reg(REG_TEMP, t, sizeof t);
    RP_POINT_BEGIN(pack, "telemetry.pack");
    tlm.temp_sum += (uint32_t)(t[0] | (t[1] << 8));
    tlm.buf[tlm.fill++ % FLUSH_BYTES] = t[0];
    tlm.buf[tlm.fill++ % FLUSH_BYTES] = ctl.out;
    RP_POINT_END(pack);
    if (++tlm.runs % FLUSH_EVERY == 0)
        telemetry_flush();
}

void task_housekeeping(void)
{
    uint8_t st;
    i2c_read_reg(REG_STATUS, &st, 1);
    g_status_sum += st;
    i2c_write_reg(REG_WDOG, 0xa5);
}

/* ---- the scheduler --------------------------------------------------------- */

struct task {
    const char *name;
    uint32_t period; /* ticks */
    void (*fn)(void);
    uint32_t runs;
};

static struct task task_table[] = {
    {"sensor", 1, task_sensor, 0},
    {"control", 2, task_control, 0},
    {"telemetry", 10, task_telemetry, 0},
    {"housekeeping", 50, task_housekeeping, 0},
};
#define N_TASKS (sizeof task_table / sizeof task_table[0])

void sched_run(uint32_t ticks)
{
    for (uint32_t i = 0; i < ticks; i++) {
        timer_tick();
        uint32_t now = g_ticks;
        for (unsigned k = 0; k < N_TASKS; k++) {
            if (now % task_table[k].period == 0) {
                task_table[k].fn();
                task_table[k].runs++;
            }
        }
    }
}

/* ---- the monitor thread ---------------------------------------------------- */

void monitor_poll(void)
{
    uint8_t st;
    i2c_read_reg(REG_STATUS, &st, 1);
    g_monitor_status_sum += st; /* this thread's own; main reads it after join */
    g_monitor_polls++;
    RP_COUNTER("monitor.status", g_monitor_status_sum);
}

#ifndef RP_BARE
void *monitor_main(void *arg)
{
    uint32_t polls = *(const uint32_t *)arg;
    struct timespec ts = {0, MON_SLEEP_NS};
    for (uint32_t i = 0; i < polls; i++) {
        monitor_poll();
        nanosleep(&ts, NULL);
    }
    return NULL;
}

#else
/* The bare-metal monitor: the SysTick interrupt (every 100 us, firmware/
 * startup.c) polls while polls are left and the bus is free; main waits
 * for the last poll. */
static volatile uint32_t g_mon_left;

NOINSTR void SysTick_Handler(void)
{
    rp_bare_systick_isr();
    if (g_mon_left && !bus.lock) {
        monitor_poll();
        g_mon_left--;
    }
}
#endif

/* ---- bring-up and main ----------------------------------------------------- */

int board_init(void)
{
    uint8_t who = 0;
    bus.regs[REG_WHO_AM_I] = 0x6b;
    bus.regs[REG_STATUS] = 0x07;
    i2c_read_reg(REG_WHO_AM_I, &who, 1);
    if (who != 0x6b)
        return -1;
    i2c_write_reg(REG_CTRL, 128);
    return 0;
}

#ifndef RP_BARE
int main(int argc, char **argv)
{
    uint32_t ticks = 2000;
    if (argc > 1) {
        char *end;
        unsigned long v = strtoul(argv[1], &end, 10);
        if (*end || v == 0 || v > 10000000ul) {
            fprintf(stderr, "usage: %s [TICKS]   (1..10000000, default 2000)\n", argv[0]);
            return 2;
        }
        ticks = (uint32_t)v;
    }
    if (board_init() != 0) {
        fprintf(stderr, "firmware: sensor not found\n");
        return 1;
    }

    uint32_t polls = ticks / MON_DIVISOR;
    pthread_t mon;
    if (pthread_create(&mon, NULL, monitor_main, &polls) != 0) {
        fprintf(stderr, "firmware: cannot start the monitor thread\n");
        return 1;
    }
    sched_run(ticks);
    pthread_join(mon, NULL);

    uint32_t check = ctl.out_sum * 2654435761u ^ tlm.temp_sum ^ bus.fifo_sum ^ g_status_sum ^
                     g_monitor_status_sum;
    printf("firmware: ticks=%" PRIu32 " sensor=%" PRIu32 " control=%" PRIu32 " telemetry=%" PRIu32
           " flushes=%" PRIu32 " housekeeping=%" PRIu32 " monitor=%" PRIu32 " wdog=%" PRIu32
           " bus_bytes=%" PRIu64 " check=%08" PRIx32 "\n",
           ticks, task_table[0].runs, task_table[1].runs, task_table[2].runs, tlm.flushes,
           task_table[3].runs, g_monitor_polls, bus.wdog_kicks, bus.bytes, check);
    return 0;
}
#else
/* Prints name=v in decimal (hex: 8 digits) over semihosting. */
static NOINSTR void put_kv(const char *name, uint64_t v, int hex)
{
    char b[24];
    int n = 0;
    while (*name)
        rp_bare_semihost_putc(*name++);
    rp_bare_semihost_putc('=');
    do {
        unsigned d = hex ? (unsigned)(v & 15) : (unsigned)(v % 10);
        b[n++] = (char)(d < 10 ? '0' + d : 'a' + d - 10);
        v = hex ? v >> 4 : v / 10;
    } while (v || (hex && n < 8));
    while (n)
        rp_bare_semihost_putc(b[--n]);
}

#ifndef FW_TICKS
#define FW_TICKS 2000
#endif

#ifdef FW_TASKS
/*
 * The tasks variant (-DFW_TASKS, tests/e2e_firmware.sh): instead of the
 * scheduler loop, two tasks with stacks of their own, switched as an RTOS
 * switches them (fw_yield: the callee-saved registers pushed on the
 * task's stack, its stack pointer saved, the other's restored), each
 * switch told to the recorder (rp_bare_task_switch).  Task "ta" runs
 * ta_step FW_STEPS times: it takes the bus in a callee (bus_take returns
 * holding it), works, yields to "tb" in the middle, works, and releases
 * the bus itself; task "tb" runs tb_step (a longer work, then a yield back
 * to ta) until ta is done, then goes back to main.  Calls for
 * FW_STEPS = 50: main, tasks_run, ta_run, tb_run 1; ta_step, bus_take,
 * tb_step 50; the bus is held 50 times, from bus_take; ta's and tb's
 * steps are each switched out 50 times in the middle ([off-cpu]), main
 * once, in tasks_run.
 */
#ifndef FW_STEPS
#define FW_STEPS 50
#endif
#define TA_SPIN 2000u  /* a step of ta works 2 x this */
#define TB_SPIN 16000u /* a step of tb: 4 times ta's */

struct fw_task {
    uint32_t sp;             /* saved while switched out */
    struct rp_bare_task *rp; /* its stream (NULL: main's) */
};
static struct rp_bare_task rp_ta, rp_tb;
static struct fw_task fw_main_ctx, fw_ta = {0, &rp_ta}, fw_tb = {0, &rp_tb};
static struct fw_task *fw_cur = &fw_main_ctx;
static uint64_t stack_ta[128], stack_tb[128]; /* 1 KB each, 8-byte aligned */
static uint8_t rp_buf_ta[2048], rp_buf_tb[2048];
static volatile int fw_ta_done;
static uint32_t fw_tb_steps;

/* Saves the callee-saved registers and the stack pointer in *save, and
 * resumes the context whose stack pointer is sp. */
__attribute__((naked, no_instrument_function)) static void fw_swap(uint32_t *save, uint32_t sp)
{
    (void)save, (void)sp;
    __asm volatile("push {r4-r11, lr}\n\t"
                   "mov r2, sp\n\t"
                   "str r2, [r0]\n\t"
                   "mov sp, r1\n\t"
                   "pop {r4-r11, pc}\n\t");
}

/* Switches to task `to`: the RTOS's context switch, with its hook. */
static NOINSTR void fw_yield(struct fw_task *to)
{
    struct fw_task *from = fw_cur;
    fw_cur = to;
    rp_bare_task_switch(to->rp);
    fw_swap(&from->sp, to->sp);
}

/* A first context for t on the stack ending at top: fw_swap resumes it
 * at entry (registers 0). */
static NOINSTR void fw_task_init(struct fw_task *t, uint64_t *top, void (*entry)(void))
{
    uint32_t *sp = (uint32_t *)(void *)top - 9;
    for (int i = 0; i < 8; i++)
        sp[i] = 0;
    sp[8] = (uint32_t)(uintptr_t)entry;
    t->sp = (uint32_t)(uintptr_t)sp;
}

/* Takes the bus and returns holding it (the caller releases it). */
void bus_take(void)
{
    bus_lock();
}

void ta_step(void)
{
    bus_take();
    spin(TA_SPIN);
    fw_yield(&fw_tb);
    spin(TA_SPIN);
    bus_unlock();
}

void ta_run(void)
{
    for (int i = 0; i < FW_STEPS; i++)
        ta_step();
}

void tb_step(void)
{
    spin(TB_SPIN);
    fw_tb_steps++;
    fw_yield(&fw_ta);
}

void tb_run(void)
{
    while (!fw_ta_done)
        tb_step();
}

static NOINSTR void ta_entry(void)
{
    ta_run();
    fw_ta_done = 1;
    for (;;)
        fw_yield(&fw_tb);
}

static NOINSTR void tb_entry(void)
{
    tb_run();
    for (;;)
        fw_yield(&fw_main_ctx);
}

void tasks_run(void)
{
    rp_bare_task_add(&rp_ta, 3, "ta", rp_buf_ta, sizeof rp_buf_ta);
    rp_bare_task_add(&rp_tb, 4, "tb", rp_buf_tb, sizeof rp_buf_tb);
    fw_task_init(&fw_ta, stack_ta + 128, ta_entry);
    fw_task_init(&fw_tb, stack_tb + 128, tb_entry);
    fw_yield(&fw_ta); /* back when tb is done */
}

int main(void)
{
    tasks_run();
    put_kv("firmware: tasks steps", FW_STEPS, 0);
    put_kv(" tb", fw_tb_steps, 0);
    put_kv(" bus_held", bus.lock, 0);
    rp_bare_semihost_putc('\n');
    return 0;
}
#else
/* Started by firmware/startup.c with the recorder on; returns the status. */
int main(void)
{
    const uint32_t ticks = FW_TICKS;
    if (board_init() != 0)
        return 1;
    g_mon_left = ticks / MON_DIVISOR;
    sched_run(ticks);
    while (g_mon_left)
        __asm volatile("wfi");

    uint32_t check = ctl.out_sum * 2654435761u ^ tlm.temp_sum ^ bus.fifo_sum ^ g_status_sum ^
                     g_monitor_status_sum;
    put_kv("firmware: ticks", ticks, 0);
    put_kv(" sensor", task_table[0].runs, 0);
    put_kv(" control", task_table[1].runs, 0);
    put_kv(" telemetry", task_table[2].runs, 0);
    put_kv(" flushes", tlm.flushes, 0);
    put_kv(" housekeeping", task_table[3].runs, 0);
    put_kv(" monitor", g_monitor_polls, 0);
    put_kv(" wdog", bus.wdog_kicks, 0);
    put_kv(" bus_bytes", bus.bytes, 0);
    put_kv(" check", check, 1);
    rp_bare_semihost_putc('\n');
    return 0;
}
#endif /* FW_TASKS */
#endif

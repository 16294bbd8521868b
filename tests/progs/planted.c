// SPDX-License-Identifier: MIT
/*
 * planted.c - a program with planted behaviour for the flags
 * (tests/e2e_planted.sh, docs/ranking.md "Flags"): every flag it plants
 * must be found, and none of its traps flagged, also on a busy machine.
 * All work is counted in loop iterations, not clock time, so that its
 * shares of the CPU do not move with the load; only the periodic threads
 * keep time (absolute deadlines on CLOCK_MONOTONIC).
 *
 * Planted (the exact flags the test expects; every other row has none):
 *   hot_leaf      HOT: half of dispatch's work, ~half of all on-CPU time;
 *   dispatch      DISPATCH: ROUNDS calls, each calling hot_leaf and the
 *                 NOPS op_* functions once (by calls 26 callees, by time ~10),
 *                 nothing of its own;
 *   overrun_task  RATE: runs every PERIOD_MS on its own thread (absolute
 *                 deadlines, a missed deadline skipped), mostly 50 us, but
 *                 in runs LATE_A and LATE_B it waits SLOW_MS = 150 % of the
 *                 period (a slow device): regular starts, worst duration
 *                 over the period;
 *   lookup        JITTER: a leaf called LOOKUPS times, ~0.3 us, except every
 *                 SLOW_EVERY-th call a slow path of its own (~40 us of
 *                 arithmetic): 2.5 % of its calls, so p99 is the slow path;
 *   counter_lock  CONTENDED: two threads (locker) take it HOLDS times each
 *                 and hold it for ~80 us of work (critical); before that,
 *                 in each of CONTEND_ROUNDS rounds that start at a barrier,
 *                 one holds it FIRST_HOLD_MS / CONTEND_ROUNDS more (asleep)
 *                 while the other tries to take it: CONTEND_ROUNDS waits
 *                 for certain (CONTENDED wants 3: one is no pattern), and
 *                 ~100 ms of waits: 2 to 4 % of a run of 2.5 to 5 s
 *                 (CONTENDED wants 0.5 %).
 * Traps (must carry no flag):
 *   op_0 .. op_24 each ~2 % of the on-CPU time (not HOT), steady;
 *   tiny          a ~2-ns leaf called TINY times, or argv[1] times (not
 *                 JITTER, not HOT);
 *   steady_task   the same period, 50 us every run, on a thread of its own
 *                 (not RATE: its worst run is far below its period);
 *   sleeper, nap  a thread that sleeps NAP_MS and is joined (waits: never
 *                 HOT, JITTER or RATE);
 *   batch, batch_item  a thread whose batch() sleeps BATCH_NAP_MS once, then
 *                 calls batch_item ITEMS times back to back with 4 times its
 *                 work of its own between calls, one item 3 times as long:
 *                 its starts are regular (~0.1 ms apart: a stop of the
 *                 thread would have to last 25 ms to spread them over 8
 *                 octaves), its median run a fifth of their interval, its
 *                 longest 60 % of it, and its caller blocked most of its
 *                 time (not RATE: one wait among ITEMS calls is no loop
 *                 waiting for each period);
 *   main, locker, critical, the thread functions.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "lib/busy.h"

#define ROUNDS         3000
#define NOPS           25
#define OP_ITERS       12000  /* ~2 % of the work each */
#define HOT_ITERS      300000 /* = NOPS * OP_ITERS: half of dispatch */
#define LOOKUPS        4000
#define SLOW_EVERY     40
#define TINY           1000000
#define PERIOD_MS      40
#define RUNS           50
#define LATE_A         15
#define LATE_B         35
#define SLOW_MS        60
#define HOLDS          40
#define FIRST_HOLD_MS  100
#define CONTEND_ROUNDS 4
#define NAP_MS         150
#define ITEMS          100
#define ITEM_ITERS     20000
#define BATCH_NAP_MS   300

static __thread volatile uint64_t sink; /* per thread: the threads share nothing */

/* n iterations of arithmetic that the compiler cannot drop. */
static __attribute__((no_instrument_function, noinline)) uint64_t spin(uint64_t n)
{
    uint64_t x = sink + 1;
    for (uint64_t i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

static __attribute__((no_instrument_function)) void sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

void hot_leaf(void)
{
    sink += spin(HOT_ITERS);
}

/* an op: its definition, then its declaration again (for the semicolon) */
#define OP(k)                                                                                      \
    void op_##k(void)                                                                              \
    {                                                                                              \
        sink += spin(OP_ITERS);                                                                    \
    }                                                                                              \
    void op_##k(void)
OP(0);
OP(1);
OP(2);
OP(3);
OP(4);
OP(5);
OP(6);
OP(7);
OP(8);
OP(9);
OP(10);
OP(11);
OP(12);
OP(13);
OP(14);
OP(15);
OP(16);
OP(17);
OP(18);
OP(19);
OP(20);
OP(21);
OP(22);
OP(23);
OP(24);

static void (*const ops[NOPS])(void) = {
    op_0,  op_1,  op_2,  op_3,  op_4,  op_5,  op_6,  op_7,  op_8,  op_9,  op_10, op_11, op_12,
    op_13, op_14, op_15, op_16, op_17, op_18, op_19, op_20, op_21, op_22, op_23, op_24};

void dispatch(int round)
{
    for (int k = 0; k < NOPS; k++) {
        if (k == round % NOPS)
            hot_leaf();
        ops[k]();
    }
}

int tiny(int x)
{
    return x * 3 + 1;
}

void lookup(int i)
{
    sink += spin(i % SLOW_EVERY == SLOW_EVERY - 1 ? 60000 : 300);
}

void steady_task(void)
{
    sink += spin(15000);
}

void overrun_task(int run)
{
    sink += spin(15000);
    if (run == LATE_A || run == LATE_B)
        usleep(SLOW_MS * 1000);
}

/* Runs task every PERIOD_MS, RUNS times; a deadline already passed is
 * skipped (the next one on the grid is taken). */
static void periodic(void (*task)(int), int arg_is_run)
{
    uint64_t t0 = now_ns(), next = t0;
    for (int r = 0; r < RUNS; r++) {
        task(arg_is_run ? r : 0);
        uint64_t now = now_ns();
        do
            next += PERIOD_MS * 1000000ull;
        while (next <= now);
        sleep_until(next);
    }
}

static void steady_wrap(int r)
{
    (void)r;
    steady_task();
}

void *steady_thread(void *arg)
{
    (void)arg;
    periodic(steady_wrap, 0);
    return NULL;
}

void *overrun_thread(void *arg)
{
    (void)arg;
    periodic(overrun_task, 1);
    return NULL;
}

static pthread_mutex_t counter_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t lockers_ready;
static int first_locker = 1;

void critical(void)
{
    sink += spin(60000);
}

/* In each round one locker (in turn) takes the lock before the barrier and
 * keeps it a share of FIRST_HOLD_MS more (asleep), so that the other's
 * attempt waits for certain; after the rounds they compete. */
void *locker(void *arg)
{
    int me = arg != NULL;
    for (int r = 0; r < CONTEND_ROUNDS; r++) {
        int holder = r % 2 == me;
        if (holder)
            pthread_mutex_lock(&counter_lock);
        pthread_barrier_wait(&lockers_ready);
        if (holder)
            usleep(FIRST_HOLD_MS * 1000 / CONTEND_ROUNDS);
        else
            pthread_mutex_lock(&counter_lock);
        pthread_mutex_unlock(&counter_lock);
        pthread_barrier_wait(&lockers_ready); /* (both out before the next round) */
    }
    for (int i = 0; i < HOLDS; i++) {
        pthread_mutex_lock(&counter_lock);
        critical();
        pthread_mutex_unlock(&counter_lock);
    }
    return NULL;
}

void nap(void)
{
    usleep(NAP_MS * 1000);
}

void batch_item(int i)
{
    sink += spin(i == ITEMS / 2 ? 3 * ITEM_ITERS : ITEM_ITERS);
}

void batch(void)
{
    usleep(BATCH_NAP_MS * 1000);
    for (int i = 0; i < ITEMS; i++) {
        sink += spin(4 * ITEM_ITERS);
        batch_item(i);
    }
}

void *batcher(void *arg)
{
    (void)arg;
    batch();
    return NULL;
}

void *sleeper(void *arg)
{
    (void)arg;
    nap();
    return NULL;
}

int main(int argc, char **argv)
{
    long tiny_calls = argc > 1 ? atol(argv[1]) : TINY;
    pthread_t st, ot, l1, l2, sl, bt;
    pthread_create(&st, NULL, steady_thread, NULL);
    pthread_create(&ot, NULL, overrun_thread, NULL);
    pthread_create(&sl, NULL, sleeper, NULL);
    pthread_create(&bt, NULL, batcher, NULL);
    pthread_barrier_init(&lockers_ready, NULL, 2);
    pthread_create(&l1, NULL, locker, &first_locker);
    pthread_create(&l2, NULL, locker, NULL);
    unsigned acc = 0; /* wraps: unsigned */
    for (int i = 0; i < tiny_calls; i++)
        acc += (unsigned)tiny(i);
    sink += (uint64_t)acc;
    for (int i = 0; i < LOOKUPS; i++)
        lookup(i);
    for (int r = 0; r < ROUNDS; r++)
        dispatch(r);
    pthread_join(l1, NULL);
    pthread_join(l2, NULL);
    pthread_join(sl, NULL);
    pthread_join(bt, NULL);
    pthread_join(st, NULL);
    pthread_join(ot, NULL);
    printf("planted: done\n");
    return 0;
}

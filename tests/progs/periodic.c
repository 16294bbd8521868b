// SPDX-License-Identifier: MIT
/*
 * periodic.c - a periodic loop, recorded by tests/e2e_flags.sh (docs/design.md §7
 * RATE): main wakes up every PERIOD_MS (absolute deadlines, so the
 * period stays PERIOD_MS when one run is late; a period missed altogether
 * is skipped) and calls sensor() and
 * control(), RUNS times.  Both are busy for SHORT_US, except that control()
 * is busy for LATE_MS = 80 % of the period in run LATE_RUN.
 *
 * Expected calls: main 1, sensor RUNS, control RUNS.
 * Expected flags:
 *   control  RATE: its starts are regular (main waits for each period) and
 *            its worst case (40 ms) is 80 % of the period (50 ms), over the
 *            50 % threshold; not JITTER (RUNS calls are too few for a p99);
 *   sensor   not RATE: its worst case is ~0.2 % of the period; only a stop
 *            of over 25 ms by the scheduler inside one of its 0.1 ms runs
 *            could change that.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/busy.h"

#define RUNS      20
#define PERIOD_MS 50
#define SHORT_US  100
#define LATE_MS   40
#define LATE_RUN  6

/* Busy (never sleeping) for ns nanoseconds of this thread's CPU time: the
 * same work however often a busy machine preempts it (RATE judges a run
 * less the time it was preempted). */
static __attribute__((no_instrument_function)) uint64_t cpu_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static __attribute__((no_instrument_function)) void busy_cpu(uint64_t ns)
{
    uint64_t end = cpu_ns() + ns;
    while (cpu_ns() < end)
        ;
}

/* Sleeps until the CLOCK_MONOTONIC time t (ns). */
static __attribute__((no_instrument_function)) void sleep_until(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000u), (long)(t % 1000000000u)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

void sensor(void)
{
    busy_cpu(SHORT_US * 1000u);
}

void control(int run)
{
    busy_cpu(run == LATE_RUN ? LATE_MS * 1000000u : SHORT_US * 1000u);
}

int main(void)
{
    const uint64_t period = (uint64_t)PERIOD_MS * 1000000u;
    uint64_t next = now_ns();
    for (int k = 0; k < RUNS; k++) {
        sleep_until(next);
        sensor();
        control(k);
        /* the next period's start; one missed while late (a machine busy
         * enough to hold the late run past it) is skipped, not caught up
         * with back-to-back runs, as a periodic task does */
        next += period;
        for (uint64_t now = now_ns(); next + period / 2 < now;)
            next += period;
    }
    printf("%d runs\n", RUNS);
    return 0;
}

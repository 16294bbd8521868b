// SPDX-License-Identifier: MIT
/*
 * dispatch.c - a dispatcher, recorded by tests/e2e_flags.sh (docs/design.md §7
 * DISPATCH and HOT): main calls dispatch() once; dispatch() runs ROUNDS
 * rounds, each calling worker_a, worker_b and worker_c (each busy for
 * WORK_MS of wall-clock time) and note() (which only counts).  dispatch only
 * loops: its own time is a few microseconds of the ~180 ms.
 *
 * Expected calls: main 1, dispatch 1, worker_a/b/c ROUNDS each, note ROUNDS.
 * Expected flags:
 *   dispatch  DISPATCH: involved ~100 %, self far below 1 %, spreads over
 *             ~3 callees (exp of the entropy of 1/3, 1/3, 1/3 and ~0);
 *   worker_a/b/c HOT: ~33 % of all time each in themselves;
 *   main      not DISPATCH: its time goes to one callee (fan-out 1.0);
 *   note      not HOT: far below 0.1 % of all time.
 * The work is timed by the clock, not by a loop count, so it takes as long
 * under sanitizers.  The scheduler can stop the program anywhere, and the
 * stop counts as time of the function that was running: the near misses
 * are the short functions (dispatch's own loop, note), so that a stop
 * lands in them rarely, and it would have to last over 9 ms (note HOT) or
 * 18 ms (dispatch over 10 % self) to change a flag.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/busy.h"

#define ROUNDS  20
#define WORK_MS 3

void worker_a(void)
{
    busy(WORK_MS * 1000000u);
}

void worker_b(void)
{
    busy(WORK_MS * 1000000u);
}

void worker_c(void)
{
    busy(WORK_MS * 1000000u);
}

static volatile int notes;

void note(void)
{
    notes++;
}

void dispatch(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        worker_a();
        worker_b();
        worker_c();
        note();
    }
}

int main(void)
{
    dispatch();
    printf("dispatched %d rounds\n", ROUNDS);
    return 0;
}

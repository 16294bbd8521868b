// SPDX-License-Identifier: MIT
/*
 * jitter.c - one outlier, recorded by tests/e2e_flags.sh (docs/design.md §7 JITTER):
 * main calls spiky() CALLS times, busy for TYPICAL_MS each except once for
 * 100 x TYPICAL_MS, then steady() CALLS times, busy for STEADY_MS each.
 *
 * Expected calls: main 1, spiky CALLS, steady CALLS.
 * Expected flags:
 *   spiky   JITTER: max 100 ms is 100x the median 1 ms (threshold 10x);
 *   steady  not JITTER: all its runs take 20 ms; a run would have to be
 *           stopped by the scheduler for 180 ms to reach 10x the median.
 * (Both run back to back, so both are also RATE: busy for all of their
 * mean period.)
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/busy.h"

#define CALLS      12
#define TYPICAL_MS 1
#define OUTLIER    7 /* which call of spiky is 100x */
#define STEADY_MS  20

void spiky(int k)
{
    busy((k == OUTLIER ? 100u : 1u) * TYPICAL_MS * 1000000u);
}

void steady(void)
{
    busy(STEADY_MS * 1000000u);
}

int main(void)
{
    for (int k = 0; k < CALLS; k++)
        spiky(k);
    for (int k = 0; k < CALLS; k++)
        steady();
    printf("%d + %d calls\n", CALLS, CALLS);
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * shortjitter.c - JITTER over every activation, those below the resolution
 * included, recorded by tests/e2e_flags.sh (docs/ranking.md, "Flags"):
 *
 *   mostly_empty  EMPTY_CALLS calls: all but one in EVERY return at once
 *                 (below the resolution: the histogram keeps them apart);
 *                 of those, SLOW are busy for SLOW_NS, the others for
 *                 MID_NS.  Among the calls the histogram keeps (20: the test
 *                 lowers jitter-calls to 10) the 99th percentile is SLOW_NS,
 *                 100 x the median; over all calls it is below the
 *                 resolution, and 5 slow calls of 4000 are no pattern: not
 *                 JITTER.
 *   spiky_fast    SPIKY_CALLS calls busy for MID_NS, every SPIKY_EVERY-th
 *                 (32 calls, 3 %) for SLOW_NS: JITTER (its p99 is 100 x
 *                 its median).
 *
 * Expected calls: main 1, mostly_empty EMPTY_CALLS, spiky_fast SPIKY_CALLS.
 * Their 10,000 events fit in one of the recorder's buffers (16,384 records
 * by default), so no call runs across two chunks.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/busy.h"

#define EMPTY_CALLS 4000
#define EVERY       200
#define SLOW        5
#define SPIKY_CALLS 1000
#define SPIKY_EVERY 32
#define MID_NS      300u
#define SLOW_NS     30000u

void mostly_empty(int k)
{
    /* every EVERY-th call: the first SLOW of them slow, the others busy */
    if (k % EVERY == 0)
        busy(k / EVERY < SLOW ? SLOW_NS : MID_NS);
}

void spiky_fast(int k)
{
    busy(k % SPIKY_EVERY == 0 ? SLOW_NS : MID_NS);
}

int main(void)
{
    for (int k = 0; k < EMPTY_CALLS; k++)
        mostly_empty(k);
    for (int k = 0; k < SPIKY_CALLS; k++)
        spiky_fast(k);
    printf("%d + %d calls\n", EMPTY_CALLS, SPIKY_CALLS);
    return 0;
}

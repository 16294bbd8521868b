// SPDX-License-Identifier: MIT
/*
 * sleepyboss.c - DISPATCH judged on time on CPU, recorded by
 * tests/e2e_flags.sh: two callers of three workers, whose own callee
 * rest() sleeps (a wait two levels below the callers).
 *
 *   boss       ROUNDS times: busy for BOSS_US itself, then calls worker_a,
 *              worker_b and worker_c.  On CPU it does 18 % of its work
 *              itself (200 of 1100 us a round): no dispatcher, not
 *              DISPATCH.  Against its wall time, the workers' naps in it
 *              (3 x NAP_US a round), its self share would be 3 %.
 *   hands_out  the same rounds, busy for HANDS_US itself: 1 % of its work
 *              on CPU, DISPATCH.
 *   worker_*   busy for WORK_US, then rest(), which sleeps NAP_US.
 *
 * Expected calls: main 1, boss 1, hands_out 1, worker_a/b/c 2 x ROUNDS,
 * rest 6 x ROUNDS.
 */
#include <stdint.h>
#include <stdio.h>
#include <time.h>

#include "lib/busy.h"

#define ROUNDS   20
#define BOSS_US  200
#define HANDS_US 10
#define WORK_US  300
#define NAP_US   2000

void rest(void)
{
    struct timespec ts = {0, NAP_US * 1000};
    nanosleep(&ts, NULL);
}

void worker_a(void)
{
    busy(WORK_US * 1000u);
    rest();
}

void worker_b(void)
{
    busy(WORK_US * 1000u);
    rest();
}

void worker_c(void)
{
    busy(WORK_US * 1000u);
    rest();
}

void boss(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        busy(BOSS_US * 1000u);
        worker_a();
        worker_b();
        worker_c();
    }
}

void hands_out(void)
{
    for (int r = 0; r < ROUNDS; r++) {
        busy(HANDS_US * 1000u);
        worker_a();
        worker_b();
        worker_c();
    }
}

int main(void)
{
    boss();
    hands_out();
    printf("%d rounds\n", ROUNDS);
    return 0;
}

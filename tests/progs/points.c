// SPDX-License-Identifier: MIT
/*
 * points.c - a program with exactly known profile points, lock and io spans,
 * instants and counters, for tests/e2e_points.sh.  Built twice: normally
 * (prog_points, linked with the recorder) and with -DRANKPROF_DISABLE
 * (prog_points_off, which must reference no rankprof symbol).
 *
 * Usage: points [N]   (N = 36 by default; N must be a multiple of 18)
 *
 * Exact counts for N (each line: name, kind, activations):
 *   outer        point      N / 3        scoped, ends after a `break`
 *   inner        point      N            3 per outer, nested in outer
 *   early        point      N            scoped in early_exit(), which
 *                                        returns from 3 places
 *   manual       point      N / 2        RP_POINT_BEGIN / RP_POINT_END
 *   budgeted     point      N / 3        budget 3 ms; every 3rd call
 *                                        sleeps 8 ms: N / 9 overruns
 *   bus          lock-wait  N / 2, lock-hold N / 2 (named lock spans)
 *   i2c0         io         N            ARG = device 0x48, 6 bytes
 *   worker       point      THREADS * N  (THREADS = 4 threads)
 *   hidden.a     point      0            switched off by rp_site_enable
 *   tick         instant    N            class timer
 *   mark         instant    N / 2        class user, arg = i
 *   level        counter    N            class user, value = -i
 *   muted        instant    0            class user switched off around it
 * and prints "... hooks H overruns O slow_ge_8ms 1" where H is the number of
 * hook calls on "budgeted" (N / 3), O the recorder's overrun count (N / 9)
 * and the last field says every sleeping call's hook saw >= 7.5 ms.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rankprof.h"

#define THREADS 4

static int n_iter = 36;
static volatile unsigned sink;

/* Deterministic work; a local sink, since the worker threads call it too. */
static void burn(unsigned n)
{
    volatile unsigned local = 0;
    for (unsigned i = 0; i < n; i++)
        local += i;
}

static void nap_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* outer spans 3 inners; the loop leaves by break, the scope ends after it */
static void nested(void)
{
    RP_POINT("outer");
    for (int k = 0;; k++) {
        RP_POINT("inner");
        burn(100);
        if (k == 2)
            break;
    }
}

/* the scoped point ends on every return */
static int early_exit(int i)
{
    RP_POINT("early");
    if (i % 3 == 0)
        return 0;
    burn(50);
    if (i % 3 == 1)
        return 1;
    return 2;
}

static int budget_calls;

static void budgeted(void)
{
    RP_POINT_BUDGET("budgeted", 3000000); /* 3 ms */
    if (++budget_calls % 3 == 0)
        nap_ms(8);
}

static int hook_calls;
static uint64_t hook_min_slow = UINT64_MAX;

static void on_end(const struct rp_site *s, uint64_t ns, void *arg)
{
    (void)s;
    (void)arg;
    hook_calls++;
    if (budget_calls % 3 == 0 && ns < hook_min_slow)
        hook_min_slow = ns;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < n_iter; i++) {
        RP_POINT("worker");
        burn(20);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        n_iter = atoi(argv[1]);
    if (n_iter <= 0 || n_iter % 18) {
        fprintf(stderr, "usage: points [N], N a positive multiple of 18\n");
        return 2;
    }
    int hooked = rp_site_hook("budgeted", on_end, NULL);
    int hidden = rp_site_enable("hidden.*", 0);

    for (int i = 0; i < n_iter; i++) {
        if (i % 3 == 0) {
            nested();
            budgeted();
        }
        sink += (unsigned)early_exit(i);
        if (i % 2 == 0) {
            RP_POINT_BEGIN(m, "manual");
            burn(10);
            RP_POINT_END(m);

            RP_LOCK_WAIT_BEGIN(w, "bus");
            RP_LOCK_WAIT_END(w);
            RP_LOCK_HOLD_BEGIN(hd, "bus");
            burn(30);
            RP_LOCK_HOLD_END(hd);
            RP_MARK("mark", i);
        }
        {
            RP_IO("i2c0", 0x48, 6);
            burn(60);
        }
        {
            RP_POINT("hidden.a");
            burn(5);
        }
        RP_TIMER("tick");
        RP_COUNTER("level", -i);

        uint32_t was = rp_classes_set(0, RP_CLASS_BIT_USER);
        RP_MARK("muted", i);
        rp_classes_set(was & RP_CLASS_BIT_USER, 0);
    }

    pthread_t t[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < THREADS; i++)
        pthread_join(t[i], NULL);

    printf("points %d hooked %d hidden %d hooks %d overruns %llu slow_ge_8ms %d\n", n_iter, hooked,
           hidden, hook_calls, (unsigned long long)rp_site_overruns("budgeted"),
           hook_calls ? hook_min_slow >= 7500000 : 0);
    return 0;
}

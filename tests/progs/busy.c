// SPDX-License-Identifier: MIT
/*
 * busy.c - more runnable threads than cores, doing fixed work in small
 * instrumented functions, so that the scheduler preempts them (e2e_offcpu).
 *
 *   prog_busy NTHREADS CALLS SPIN [SLEEP_US]
 *
 * Each of NTHREADS threads runs worker(), which calls step() CALLS times;
 * step() calls tiny() (which spins SPIN iterations, about SPIN ns) once.
 * With SLEEP_US, worker() also calls nap() once, which sleeps that long in
 * nanosleep (off CPU, not preempted).  The main thread joins them.  Prints
 * nothing; exits 0.
 */
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

static unsigned long calls, spin, sleep_us;
static __thread volatile unsigned long sink; /* per thread: no data race */

__attribute__((noinline)) void tiny(void)
{
    for (unsigned long i = 0; i < spin; i++)
        sink += i;
}

__attribute__((noinline)) void step(void)
{
    tiny();
}

__attribute__((noinline)) void nap(void)
{
    struct timespec ts = {(time_t)(sleep_us / 1000000), (long)(sleep_us % 1000000) * 1000};
    nanosleep(&ts, NULL);
}

__attribute__((noinline)) void *worker(void *arg)
{
    (void)arg;
    if (sleep_us)
        nap();
    for (unsigned long i = 0; i < calls; i++)
        step();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int n = atoi(argv[1]);
    calls = strtoul(argv[2], NULL, 0);
    spin = strtoul(argv[3], NULL, 0);
    sleep_us = argc > 4 ? strtoul(argv[4], NULL, 0) : 0;
    pthread_t t[64];
    if (n < 1 || n > 64)
        return 2;
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    return 0;
}

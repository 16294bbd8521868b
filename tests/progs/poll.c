// SPDX-License-Identifier: MIT
/*
 * poll.c - loops of calls below the resolution, for the hint on loops
 * whose hooks' cost compensation takes out (e2e_comp, poll).
 *
 *   prog_poll spin MS   poller() calls ready() until main, after sleeping
 *                       MS ms, sets the flag ready() reads: a spin, as
 *                       long with the recorder as without (millions of
 *                       calls of ready() in one activation of poller())
 *   prog_poll work N    worker() calls step() N times, each about 100 ns
 *                       of arithmetic (above the resolution): a loop of
 *                       fixed work, with nothing to say
 *
 * Prints "spins S" (the calls of ready()) or "work W"; exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int flag;
static unsigned long spins;
static volatile unsigned long sink;

__attribute__((noinline)) int ready(void)
{
    return __atomic_load_n(&flag, __ATOMIC_ACQUIRE);
}

__attribute__((noinline)) void *poller(void *arg)
{
    (void)arg;
    while (!ready())
        spins++;
    return NULL;
}

__attribute__((noinline)) void step(void)
{
    for (int i = 0; i < 100; i++)
        sink += (unsigned long)i * 7;
}

__attribute__((noinline)) void worker(unsigned long n)
{
    for (unsigned long i = 0; i < n; i++)
        step();
}

int main(int argc, char **argv)
{
    unsigned long n = argc == 3 ? strtoul(argv[2], NULL, 10) : 0;
    if (argc == 3 && !strcmp(argv[1], "spin")) {
        pthread_t t;
        struct timespec ts = {(time_t)(n / 1000), (long)(n % 1000) * 1000000L};
        if (pthread_create(&t, NULL, poller, NULL))
            return 1;
        nanosleep(&ts, NULL);
        __atomic_store_n(&flag, 1, __ATOMIC_RELEASE);
        pthread_join(t, NULL);
        printf("spins %lu\n", spins);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "work")) {
        worker(n);
        printf("work %lu\n", n);
        return 0;
    }
    fprintf(stderr, "usage: prog_poll spin MS | work N\n");
    return 2;
}

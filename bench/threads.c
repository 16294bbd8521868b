// SPDX-License-Identifier: MIT
/*
 * threads.c - recorder memory per thread: starts N threads that each make
 * CALLS instrumented calls (0: they only start and wait), stops them all at
 * a barrier, reads this process's resident set size from /proc/self/status
 * while every thread is alive, then lets them finish.
 *
 *   bench_threads N CALLS      prints "threads N calls CALLS rss_kb K"
 *
 * Built with -finstrument-functions; only work() is instrumented, so with
 * CALLS = 0 a recorded run has threads that never record (the cost of the
 * recorder being loaded), and with CALLS > 0 every thread has its buffers.
 * scripts/bench.sh runs it with and without the recorder and takes the
 * difference per thread.  Exits 1 if a thread cannot be started or the RSS
 * cannot be read.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NOHOOK __attribute__((no_instrument_function))

static pthread_barrier_t at_peak, done;
static unsigned long calls;
static volatile unsigned sink;

__attribute__((noinline)) unsigned work(unsigned x)
{
    return x * 2654435761u + 0x9e37u;
}

NOHOOK static void *thread_main(void *arg)
{
    unsigned x = (unsigned)(unsigned long)arg;
    for (unsigned long i = 0; i < calls; i++)
        x = work(x);
    sink = x;
    pthread_barrier_wait(&at_peak);
    pthread_barrier_wait(&done);
    return NULL;
}

/* Returns VmRSS in KiB, or -1 if /proc/self/status has none. */
NOHOOK static long rss_kb(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    if (!f)
        return -1;
    while (fgets(line, sizeof(line), f))
        if (!strncmp(line, "VmRSS:", 6))
            kb = strtol(line + 6, NULL, 10);
    fclose(f);
    return kb;
}

NOHOOK int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: bench_threads THREADS CALLS\n");
        return 2;
    }
    unsigned n = (unsigned)strtoul(argv[1], NULL, 10);
    calls = strtoul(argv[2], NULL, 10);
    if (n < 1 || n > 4096) {
        fprintf(stderr, "bench_threads: THREADS must be 1..4096\n");
        return 2;
    }
    pthread_t *t = calloc(n, sizeof(*t));
    if (!t)
        return 1;
    pthread_barrier_init(&at_peak, NULL, n + 1);
    pthread_barrier_init(&done, NULL, n + 1);
    for (unsigned i = 0; i < n; i++)
        if (pthread_create(&t[i], NULL, thread_main, (void *)(unsigned long)(i + 1)) != 0) {
            fprintf(stderr, "bench_threads: cannot start thread %u\n", i);
            return 1;
        }
    pthread_barrier_wait(&at_peak);
    long kb = rss_kb();
    pthread_barrier_wait(&done);
    for (unsigned i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    free(t);
    if (kb < 0) {
        fprintf(stderr, "bench_threads: no VmRSS in /proc/self/status\n");
        return 1;
    }
    printf("threads %u calls %lu rss_kb %ld\n", n, calls, kb);
    return 0;
}

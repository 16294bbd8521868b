// SPDX-License-Identifier: MIT
/*
 * twomode.c - a program with exactly known counts, recorded in both trace
 * and direct mode by tests/e2e_direct.sh, which checks that the two modes
 * agree: main starts NTHREADS threads running worker(); a worker calls
 * step() NITER times; step() calls leaf() 3 times and, on every 10th call,
 * rec(3), which recurses down to rec(0).
 *
 * Expected call counts: main 1, worker 4, step 8000, leaf 24000,
 *   rec 3200 (800 outermost activations, each with 4 frames).
 * Expected edges: <root>->main 1, <root>->worker 4, worker->step 8000,
 *   step->leaf 24000, step->rec 800, rec->rec 2400.
 * Recursion: inclusive(rec) counts only the outermost activations, so it
 *   equals the inclusive time of the edge step->rec exactly.
 *
 * `twomode report`: worker 0 also calls rp_report(stdout) when its loop is
 * done, while the others may still run (direct mode prints the table so
 * far; the recorder is preloaded, so rp_report is a weak reference).
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

int rp_report(FILE *f) __attribute__((weak));
static int do_report;
static void *report_arg;

#define NTHREADS 4
#define NITER    2000

static __attribute__((no_instrument_function)) uint64_t spin(uint64_t x, int n)
{
    for (int i = 0; i < n; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

uint64_t leaf(uint64_t x)
{
    return spin(x, 40);
}

uint64_t rec(uint64_t x, int depth)
{
    x = spin(x, 20);
    return depth ? rec(x, depth - 1) : x;
}

uint64_t step(uint64_t x, int i)
{
    x = leaf(x) ^ leaf(x >> 1) ^ leaf(x >> 2);
    if (i % 10 == 0)
        x = rec(x, 3);
    return x;
}

void *worker(void *arg)
{
    uint64_t *acc = arg;
    uint64_t x = *acc;
    for (int i = 0; i < NITER; i++)
        x = step(x, i);
    *acc = x;
    if (do_report && arg == report_arg && rp_report)
        printf("rp_report: %d\n", rp_report(stdout));
    return NULL;
}

int main(int argc, char **argv)
{
    do_report = argc > 1 && !strcmp(argv[1], "report");
    pthread_t t[NTHREADS];
    uint64_t acc[NTHREADS];
    report_arg = &acc[0]; /* before the threads that read it start */
    for (int i = 0; i < NTHREADS; i++) {
        acc[i] = (uint64_t)i + 1;
        if (pthread_create(&t[i], NULL, worker, &acc[i]) != 0) {
            fprintf(stderr, "twomode: pthread_create failed\n");
            return 1;
        }
    }
    uint64_t total = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        total ^= acc[i];
    }
    printf("twomode: %llx\n", (unsigned long long)total);
    return 0;
}

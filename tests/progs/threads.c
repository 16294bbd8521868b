// SPDX-License-Identifier: MIT
/*
 * threads.c - a multi-threaded test program, recorded by tests/e2e_basic.sh:
 * main starts NTHREADS threads running worker(); each worker calls work()
 * NITER times and work() calls leaf() twice.  main joins them and prints the
 * total.
 *
 * Expected: 5 threads with events (main + 4 workers).
 * Expected call counts: main 1, worker 4, work 40000, leaf 80000.
 * Expected edges: <root>->main 1, <root>->worker 4 (thread entries have an
 *                 empty stack), worker->work 40000, work->leaf 80000.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>

#define NTHREADS 4
#define NITER    10000

static __attribute__((no_instrument_function)) uint64_t spin(uint64_t x)
{
    for (int i = 0; i < 50; i++)
        x = x * 6364136223846793005ull + 1442695040888963407ull;
    return x;
}

uint64_t leaf(uint64_t x)
{
    return spin(x);
}

uint64_t work(uint64_t x)
{
    return leaf(x) + (leaf(x >> 3) >> 17);
}

void *worker(void *arg)
{
    uint64_t *acc = arg;
    uint64_t x = *acc;
    for (int i = 0; i < NITER; i++)
        x = work(x);
    *acc = x;
    return NULL;
}

int main(void)
{
    pthread_t t[NTHREADS];
    uint64_t acc[NTHREADS];
    for (int i = 0; i < NTHREADS; i++) {
        acc[i] = (uint64_t)i + 1;
        if (pthread_create(&t[i], NULL, worker, &acc[i]) != 0) {
            fprintf(stderr, "threads: pthread_create failed\n");
            return 1;
        }
    }
    uint64_t total = 0;
    for (int i = 0; i < NTHREADS; i++) {
        pthread_join(t[i], NULL);
        total ^= acc[i];
    }
    printf("threads: %d x %d work() calls, result %016llx\n", NTHREADS, NITER,
           (unsigned long long)total);
    return 0;
}

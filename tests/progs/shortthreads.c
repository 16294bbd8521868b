// SPDX-License-Identifier: MIT
/*
 * shortthreads.c - many short-lived threads, one after another, recorded by
 * tests/e2e_threads.sh: main starts N threads (argv[1], default 40000)
 * sequentially, joining each before the next, and each runs worker(),
 * which calls step() K times (argv[2], default 3).  With more threads than
 * the kernel's pid_max, thread ids are reused.
 *
 * Output, one line: "threads N distinct D wall_ns W" - N threads made, D
 * distinct kernel tids among them (each thread reports its own gettid),
 * W the run's wall time from before the first thread to after the last.
 *
 * Expected: N + 1 threads in the trace (main and every worker, even those
 * whose tid an earlier worker had), worker N calls, step N*K calls.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "lib/busy.h"

static int k_calls = 3;

uint64_t step(uint64_t x)
{
    return x * 6364136223846793005ull + 1442695040888963407ull;
}

void *worker(void *arg)
{
    uint32_t *tid = arg;
    uint64_t x = (uint64_t)(uintptr_t)arg;
    for (int i = 0; i < k_calls; i++)
        x = step(x);
    *tid = (uint32_t)syscall(SYS_gettid) | (uint32_t)(x & 0); /* keep x alive */
    return NULL;
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 40000;
    if (argc > 2)
        k_calls = atoi(argv[2]);
    uint32_t *tids = calloc((size_t)n + 1, sizeof(*tids));
    if (!tids || n < 1)
        return 1;
    uint64_t t0 = now_ns();
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, NULL, worker, &tids[i]) != 0) {
            perror("pthread_create");
            return 1;
        }
        pthread_join(t, NULL);
    }
    uint64_t t1 = now_ns();
    qsort(tids, (size_t)n, sizeof(*tids), cmp_u32);
    int distinct = 0;
    for (int i = 0; i < n; i++)
        distinct += i == 0 || tids[i] != tids[i - 1];
    printf("threads %d distinct %d wall_ns %llu\n", n, distinct, (unsigned long long)(t1 - t0));
    free(tids);
    return 0;
}

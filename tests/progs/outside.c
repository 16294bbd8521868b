// SPDX-License-Identifier: MIT
/*
 * outside.c - waits that no code of the program makes, for
 * tests/e2e_outside.sh.  usage: prog_outside N K
 *
 *   start-up  a constructor, not instrumented, sleeps once (nanosleep):
 *             no span of the program is open
 *   library   a thread whose code is not instrumented (as a library's own
 *             thread) makes K calls of usleep(100) and K of poll(0 fds,
 *             a 1 ms timeout: a poll that only looks would be no wait)
 *   program   main calls work() N times; work() calls usleep(100) once
 *
 * Expected: usleep [wait] N calls, all from work, and K outside; poll
 * [wait] and nanosleep [wait] no calls, K and 1 outside; with --outside,
 * usleep N + K calls, poll K, nanosleep 1, from the root.
 */
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define NOINSTR __attribute__((no_instrument_function))

static long k_lib;

NOINSTR static void *library_thread(void *arg)
{
    (void)arg;
    for (long i = 0; i < k_lib; i++) {
        usleep(100);
        poll(NULL, 0, 1);
    }
    return NULL;
}

NOINSTR __attribute__((constructor)) static void start_up(void)
{
    struct timespec ts = {0, 1000000};
    nanosleep(&ts, NULL);
}

void work(void)
{
    usleep(100);
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 20;
    k_lib = argc > 2 ? atol(argv[2]) : 30;
    pthread_t t;
    if (pthread_create(&t, NULL, library_thread, NULL) != 0)
        return 2;
    for (long i = 0; i < n; i++)
        work();
    pthread_join(t, NULL);
    printf("outside: n=%ld k=%ld\n", n, k_lib);
    return 0;
}

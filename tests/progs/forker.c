// SPDX-License-Identifier: MIT
/*
 * forker.c - fork from a multi-threaded process.  The parent calls work()
 * 100 times, starts a helper thread that calls work() 50 times, forks while
 * that thread runs; the child calls child_work() 30 times (each calling
 * work() once) and exits; the parent joins, waits and calls work() 20 more
 * times.  Expected traces: the parent's file has work 170 (100 + 50 + 20),
 * child_work 0; the child's own file (NAME.PID) has child_work 30, work 30.
 *
 * The fork waits until the helper has begun (its first work() call) and the
 * helper ends only after the fork: a thread that starts or ends allocates
 * inside the C library, and GCC's libasan has no fork handler, so a child
 * forked at that moment inherits a held allocator lock and hangs at its
 * exit (LeakSanitizer) - a hazard of the program, not of the recorder.
 *
 *   prog_forker THREADS FORKS   a storm instead: THREADS threads call
 *       work_small() until main has forked FORKS children one after another
 *       (each calls child_work() once and exits 0), then end.  Prints
 *       "children N calls C": the children that exited 0, the calls made.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned sink;
static int started, forked; /* the helper has begun; main has forked */

void work(void)
{
    for (int i = 0; i < 1000; i++)
        sink += i;
}

void child_work(void)
{
    work();
}

void work_small(void)
{
    __atomic_fetch_add(&sink, 1, __ATOMIC_RELAXED); /* (several threads) */
}

static void *helper(void *arg)
{
    (void)arg;
    work();
    __atomic_store_n(&started, 1, __ATOMIC_RELEASE);
    for (int i = 1; i < 50; i++)
        work();
    while (!__atomic_load_n(&forked, __ATOMIC_ACQUIRE))
        usleep(1000);
    return NULL;
}

static int storm_go, storm_done;

/* A storm's thread: work_small() until main has forked them all (counted). */
static void *stormer(void *arg)
{
    unsigned long *n = arg;
    work_small();
    *n = 1;
    __atomic_fetch_add(&storm_go, 1, __ATOMIC_ACQ_REL);
    while (!__atomic_load_n(&storm_done, __ATOMIC_ACQUIRE)) {
        work_small();
        ++*n;
    }
    return NULL;
}

/* The storm (see the top): threads record while main forks. */
static int storm(int nthreads, int forks)
{
    pthread_t th[16];
    unsigned long n[16] = {0}, calls = 0;
    int ok = 0;
    if (nthreads > 16)
        nthreads = 16;
    for (int i = 0; i < nthreads; i++)
        pthread_create(&th[i], NULL, stormer, &n[i]);
    while (__atomic_load_n(&storm_go, __ATOMIC_ACQUIRE) < nthreads) /* all begun */
        usleep(1000);
    for (int f = 0; f < forks; f++) {
        pid_t pid = fork();
        if (pid == 0) {
            child_work();
            exit(0);
        }
        int st;
        if (pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && !WEXITSTATUS(st))
            ok++;
    }
    __atomic_store_n(&storm_done, 1, __ATOMIC_RELEASE);
    for (int i = 0; i < nthreads; i++) {
        pthread_join(th[i], NULL);
        calls += n[i];
    }
    printf("children %d calls %lu\n", ok, calls);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc > 2)
        return storm(atoi(argv[1]), atoi(argv[2]));
    pthread_t th;
    for (int i = 0; i < 100; i++)
        work();
    pthread_create(&th, NULL, helper, NULL);
    while (!__atomic_load_n(&started, __ATOMIC_ACQUIRE))
        usleep(1000);
    pid_t pid = fork();
    __atomic_store_n(&forked, 1, __ATOMIC_RELEASE);
    if (pid == 0) {
        for (int i = 0; i < 30; i++)
            child_work();
        return 0;
    }
    pthread_join(th, NULL);
    int st;
    waitpid(pid, &st, 0);
    for (int i = 0; i < 20; i++)
        work();
    printf("child %d\n", (int)pid);
    return 0;
}

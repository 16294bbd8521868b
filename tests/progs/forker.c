// SPDX-License-Identifier: MIT
/*
 * forker.c - fork from a multi-threaded process.  The parent calls work()
 * 100 times, starts a helper thread that calls work() 50 times, forks while
 * that thread runs; the child calls child_work() 30 times (each calling
 * work() once) and exits; the parent joins, waits and calls work() 20 more
 * times.  Expected traces: the parent's file has work 170 (100 + 50 + 20),
 * child_work 0; the child's own file (NAME.PID) has child_work 30, work 30.
 */
#include <pthread.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

volatile unsigned sink;

void work(void)
{
    for (int i = 0; i < 1000; i++)
        sink += i;
}

void child_work(void)
{
    work();
}

static void *helper(void *arg)
{
    (void)arg;
    for (int i = 0; i < 50; i++)
        work();
    return NULL;
}

int main(void)
{
    pthread_t th;
    for (int i = 0; i < 100; i++)
        work();
    pthread_create(&th, NULL, helper, NULL);
    pid_t pid = fork();
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

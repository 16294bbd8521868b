// SPDX-License-Identifier: MIT
/*
 * runset.c - a run of several processes for tests/e2e_set.sh: a parent that
 * forks two children, one of which execs, each making known calls.
 *
 *   prog_runset          parent_work() 7 times; forks child A (child_work()
 *                        10 times, shared() 3 times, exit) and child B
 *                        (child_work() 20 times, shared() 3 times, then
 *                        execs itself as "prog_runset image"); waits for
 *                        both, then shared() 2 times
 *   prog_runset image    exec_work() 5 times, shared() 4 times
 *
 * shared() takes the mutex mu once per call.  Merged: parent_work 7,
 * child_work 30, exec_work 5, shared 12 (mu acquired 12 times).  Prints
 * "a PID" and "b PID" (B's pid is also the exec'd image's).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned sink;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;

void parent_work(unsigned i)
{
    sink += i;
}

void child_work(unsigned i)
{
    sink += i * 3;
}

void exec_work(unsigned i)
{
    sink += i * 5;
}

void shared(unsigned i) /* takes mu once */
{
    pthread_mutex_lock(&mu);
    sink ^= i;
    pthread_mutex_unlock(&mu);
}

static void calls(void (*f)(unsigned), unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        f(i);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "image")) {
        calls(exec_work, 5);
        calls(shared, 4);
        return 0;
    }
    calls(parent_work, 7);
    fflush(stdout);
    pid_t a = fork();
    if (a == 0) {
        calls(child_work, 10);
        calls(shared, 3);
        exit(0);
    }
    pid_t b = fork();
    if (b == 0) {
        calls(child_work, 20);
        calls(shared, 3);
        execl("/proc/self/exe", argv[0], "image", (char *)NULL);
        perror("exec");
        _exit(1);
    }
    printf("a %d\nb %d\n", (int)a, (int)b);
    fflush(stdout);
    int st;
    waitpid(a, &st, 0);
    waitpid(b, &st, 0);
    calls(shared, 2);
    return 0;
}

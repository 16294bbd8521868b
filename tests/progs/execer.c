// SPDX-License-Identifier: MIT
/*
 * execer.c - a recorded program that execs, for tests/e2e_stress.sh.
 *
 *   prog_execer          calls step() 5 times, runs /bin/true through
 *                        vfork + execl (the recorder must leave the parent's
 *                        trace alone: the child shares its memory), calls
 *                        step() 5 more times, then execs itself as
 *                        "prog_execer child"
 *   prog_execer child    calls step() 25 times and returns
 *
 * The first image writes the trace file given to `rankprof record`, complete
 * (the recorder flushes it at the exec); the exec'd image is a new process
 * for the recorder (same pid) and writes NAME.PID.  Expected: step 10 in the
 * first file, which ends normally with main unclosed; step 25 and main 1 in
 * NAME.PID.  Prints "pid P".
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned sink;

void step(unsigned i)
{
    sink += i;
}

int main(int argc, char **argv)
{
    int child = argc > 1 && !strcmp(argv[1], "child");
    for (unsigned i = 0; i < (child ? 25u : 5u); i++)
        step(i);
    if (child)
        return 0;
    pid_t pid = vfork();
    if (pid == 0) {
        execl("/bin/true", "true", (char *)NULL);
        _exit(127);
    }
    if (pid > 0)
        waitpid(pid, NULL, 0);
    for (unsigned i = 0; i < 5; i++)
        step(i);
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    execl("/proc/self/exe", argv[0], "child", (char *)NULL);
    perror("exec");
    return 1;
}

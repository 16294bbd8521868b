/*
 * execer.c - a recorded program that execs, for tests/e2e_stress.sh.
 *
 *   prog_execer          calls step() 10 times, then execs itself as
 *                        "prog_execer child"
 *   prog_execer child    calls step() 25 times and returns
 *
 * The first image writes the trace file given to `rankprof record`; the
 * exec'd image is a new process for the recorder (same pid) and writes
 * NAME.PID.  Expected: step 10 in the first file, 25 in NAME.PID.
 * Prints "pid P".
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile unsigned sink;

void step(unsigned i)
{
    sink += i;
}

int main(int argc, char **argv)
{
    int child = argc > 1 && !strcmp(argv[1], "child");
    for (unsigned i = 0; i < (child ? 25u : 10u); i++)
        step(i);
    if (child)
        return 0;
    printf("pid %d\n", (int)getpid());
    fflush(stdout);
    execl("/proc/self/exe", argv[0], "child", (char *)NULL);
    perror("exec");
    return 1;
}

// SPDX-License-Identifier: MIT
/*
 * offchunks.c - one span that runs across many trace chunks with time
 * blocked below it, for tests/e2e_replay.sh (offchunks): main calls
 * napper() once, which ROUNDS times calls work() (LEAVES calls of leaf())
 * and then sleeps NAP_US in nanosleep (a wait span).  Recorded with 4 KiB
 * buffers (256 records: about 10 rounds), napper's span crosses some 30
 * chunks, and every chunk but its last has waits below it.
 *
 * Usage: prog_offchunks [deep]
 * With "deep", main calls napper from the bottom of dive(), a recursion
 * DEPTH deep: a stack the replay keeps between its chunks
 * (src/analyze/replay_int.h, "Deep stacks") rather than handing it from
 * chunk to chunk.
 *
 * Expected: main 1 call, napper 1, work ROUNDS, leaf ROUNDS x LEAVES,
 * nanosleep [wait] ROUNDS (and dive DEPTH); main's and napper's time off
 * CPU or waiting below them (offcpu_below_ns) at least the waits' time,
 * and their on-CPU maximum (oncpu_max_ns) their duration less that.
 */
#include <stdio.h>
#include <string.h>
#include <time.h>

#define ROUNDS 300
#define LEAVES 10
#define NAP_US 300
#define DEPTH  5000

static volatile unsigned sink;

void leaf(unsigned x)
{
    sink += x;
}

void work(unsigned r)
{
    for (unsigned i = 0; i < LEAVES; i++)
        leaf(r + i);
}

void napper(void)
{
    struct timespec ts = {0, NAP_US * 1000};
    for (unsigned r = 0; r < ROUNDS; r++) {
        work(r);
        nanosleep(&ts, NULL);
    }
}

void dive(unsigned d)
{
    if (d > 1)
        dive(d - 1);
    else
        napper();
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "deep"))
        dive(DEPTH);
    else
        napper();
    printf("%d rounds\n", ROUNDS);
    return 0;
}

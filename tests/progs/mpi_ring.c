// SPDX-License-Identifier: MIT
/*
 * mpi_ring.c - an MPI job with exactly known calls for tests/e2e_mpi.sh,
 * built with mpicc (only when CMake finds it).
 *
 * Each of the N ranks calls rank_work() 3 * (rank + 1) times, then passes
 * a token round the ring 10 times: ring_step() once per round on every
 * rank; in it, rank 0 sends to rank 1 and receives from rank N-1, every
 * other rank receives from rank-1 (in wait_token()) and sends to rank+1.
 * Before the first round rank 0 sleeps 100 ms, so every other rank waits
 * at least that long in its first MPI_Recv (inside wait_token()).
 *
 * Merged over N ranks: rank_work 3N(N+1)/2, ring_step 10N, wait_token 10N.
 * Prints "rank R of N pid P".
 */
#include <mpi.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned sink;

void rank_work(unsigned i)
{
    sink += i;
}

int wait_token(int from)
{
    int token = 0;
    MPI_Recv(&token, 1, MPI_INT, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return token;
}

void ring_step(int rank, int size, int round)
{
    int next = (rank + 1) % size, prev = (rank + size - 1) % size;
    if (rank == 0) {
        if (round == 0) {
            struct timespec ts = {0, 100000000};
            nanosleep(&ts, NULL);
        }
        int token = round;
        MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
        sink += (unsigned)wait_token(prev);
    } else {
        int token = wait_token(prev) + 1;
        MPI_Send(&token, 1, MPI_INT, next, 7, MPI_COMM_WORLD);
    }
}

int main(int argc, char **argv)
{
    int rank = 0, size = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (unsigned i = 0; i < 3u * (unsigned)(rank + 1); i++)
        rank_work(i);
    if (size > 1)
        for (int r = 0; r < 10; r++)
            ring_step(rank, size, r);
    MPI_Barrier(MPI_COMM_WORLD);
    printf("rank %d of %d pid %d\n", rank, size, (int)getpid());
    fflush(stdout);
    MPI_Finalize();
    return 0;
}

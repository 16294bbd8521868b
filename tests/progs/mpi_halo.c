// SPDX-License-Identifier: MIT
/*
 * mpi_halo.c - a halo exchange with non-blocking calls, for
 * tests/e2e_mpi.sh.  usage: mpirun -np N prog_mpi_halo [ROUNDS [sendrecv]]
 *
 * Each round every rank posts MPI_Irecv from both neighbours on the ring,
 * MPI_Isend to both, computes (stencil), waits with MPI_Waitall, and then
 * gathers one int per rank with MPI_Allgatherv.  Exact calls per rank for
 * R rounds (R = 10 by default): exchange R, stencil R, MPI_Irecv 2R,
 * MPI_Isend 2R, MPI_Waitall R, MPI_Allgatherv R.  With "sendrecv", the
 * exchange is two MPI_Sendrecv instead (to the right with tag 1, to the
 * left with tag 2): MPI_Sendrecv 2R in place of the non-blocking calls.
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static volatile double sink;

void stencil(const double *halo, int n)
{
    double s = 0;
    for (int k = 0; k < 20000; k++)
        s += halo[k % n] * 0.5;
    sink += s;
}

static int use_sendrecv;

void exchange(int rank, int size, double *mine, double *halo)
{
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    if (use_sendrecv) {
        MPI_Sendrecv(mine, 1, MPI_DOUBLE, right, 1, &halo[0], 1, MPI_DOUBLE, left, 1,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(mine, 1, MPI_DOUBLE, left, 2, &halo[1], 1, MPI_DOUBLE, right, 2,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        stencil(mine, 1);
        return;
    }
    MPI_Request req[4];
    MPI_Irecv(&halo[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&halo[1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(mine, 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(mine, 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[3]);
    stencil(mine, 1);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
}

int main(int argc, char **argv)
{
    int rank, size, rounds = argc > 1 ? atoi(argv[1]) : 10;
    use_sendrecv = argc > 2 && !strcmp(argv[2], "sendrecv");
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    double mine = rank, halo[2] = {0, 0};
    int *all = calloc((size_t)size, sizeof(int)), *counts = calloc((size_t)size, sizeof(int)),
        *displs = calloc((size_t)size, sizeof(int));
    for (int r = 0; r < size; r++)
        counts[r] = 1, displs[r] = r;
    for (int i = 0; i < rounds; i++) {
        exchange(rank, size, &mine, halo);
        int v = (int)(halo[0] + halo[1]);
        MPI_Allgatherv(&v, 1, MPI_INT, all, counts, displs, MPI_INT, MPI_COMM_WORLD);
        mine += 1;
    }
    printf("halo rank %d of %d: %d %d\n", rank, size, all[0], all[size - 1]);
    free(all);
    free(counts);
    free(displs);
    MPI_Finalize();
    return 0;
}

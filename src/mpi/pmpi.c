// SPDX-License-Identifier: MIT
/*
 * pmpi.c - librankprof-mpi.so, the optional MPI layer (docs/multi-process.md),
 * preloaded after librankprof.so (`rankprof record --mpi`).  Built with
 * mpicc; the recorder itself keeps no MPI dependency, and this library
 * reaches it only through its public functions, found at run time (without
 * the recorder it records nothing and only forwards the calls).
 *
 * Through the PMPI profiling interface, every wrapped MPI call is a span
 * of kind wait, class wait (as the recorder's blocking calls, waits.c): the
 * time a rank spends blocked in a receive, a wait, a barrier or a
 * collective is a callee of the caller, not its own work.  Its argument
 * (RP_IO_ARG) is the peer (the destination, the source asked for, or the
 * root; 0xfffffff for any or none) and the bytes of the call's buffer.
 *
 * Clock offsets: at MPI_Init and again at MPI_Finalize every rank > 0
 * measures the offset of its CLOCK_MONOTONIC to rank 0's with 10
 * ping-pongs (the one with the shortest round trip counts: offset = rank
 * 0's time - the middle of the round trip), and writes it into its trace
 * as INFO clock_offset_init and clock_offset_fini, "LOCAL_NS OFFSET_NS
 * RTT_NS" (the error is at most half the round trip; rank 0: "T 0 0").  The OTF2 export adds the
 * offset, interpolated linearly in time between the two, to the rank's timestamps.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>

/* the header's types only: its constructor would register this library's
 * (empty) site section at load time, before a sanitizer's runtime is up;
 * the sites are registered at MPI_Init instead (find_recorder) */
#define RANKPROF_DISABLE 1
#include "rankprof.h"

enum {
    S_SEND,
    S_SSEND,
    S_RECV,
    S_SENDRECV,
    S_WAIT,
    S_WAITALL,
    S_BARRIER,
    S_BCAST,
    S_REDUCE,
    S_ALLREDUCE,
    S_GATHER,
    S_ALLGATHER,
    S_SCATTER,
    S_ALLTOALL,
    S_INIT,
    S_FINALIZE,
    S_ISEND,
    S_IRECV,
    S_WAITANY,
    S_WAITSOME,
    S_PROBE,
    S_ALLGATHERV,
    S_ALLTOALLV,
    S_N
};

#define SITE(n)                                                                                    \
    {                                                                                              \
        .name = n, .file = "mpi", .kind = 7 /* RP_KIND_WAIT */, .cls = RP_CLASS_IDX_WAIT           \
    }
static struct rp_site sites[S_N] = {
    [S_SEND] = SITE("MPI_Send"),           [S_SSEND] = SITE("MPI_Ssend"),
    [S_RECV] = SITE("MPI_Recv"),           [S_SENDRECV] = SITE("MPI_Sendrecv"),
    [S_WAIT] = SITE("MPI_Wait"),           [S_WAITALL] = SITE("MPI_Waitall"),
    [S_BARRIER] = SITE("MPI_Barrier"),     [S_BCAST] = SITE("MPI_Bcast"),
    [S_REDUCE] = SITE("MPI_Reduce"),       [S_ALLREDUCE] = SITE("MPI_Allreduce"),
    [S_GATHER] = SITE("MPI_Gather"),       [S_ALLGATHER] = SITE("MPI_Allgather"),
    [S_SCATTER] = SITE("MPI_Scatter"),     [S_ALLTOALL] = SITE("MPI_Alltoall"),
    [S_INIT] = SITE("MPI_Init"),           [S_FINALIZE] = SITE("MPI_Finalize"),
    [S_ISEND] = SITE("MPI_Isend"),         [S_IRECV] = SITE("MPI_Irecv"),
    [S_WAITANY] = SITE("MPI_Waitany"),     [S_WAITSOME] = SITE("MPI_Waitsome"),
    [S_PROBE] = SITE("MPI_Probe"),         [S_ALLGATHERV] = SITE("MPI_Allgatherv"),
    [S_ALLTOALLV] = SITE("MPI_Alltoallv"),
};

/* The recorder's functions, or NULL without it. */
static uint64_t (*begin_fn)(struct rp_site *, uint64_t);
static void (*end_fn)(struct rp_site *, uint64_t);
static int (*info_fn)(const char *, const char *);

/* Finds the recorder and registers the sites.  Cannot fail: without the
 * recorder the calls are only forwarded. */
static void find_recorder(void)
{
    void (*reg)(struct rp_site *, struct rp_site *) =
        (void (*)(struct rp_site *, struct rp_site *))dlsym(RTLD_DEFAULT, "rp_sites_register");
    begin_fn = (uint64_t(*)(struct rp_site *, uint64_t))dlsym(RTLD_DEFAULT, "rp_site_begin_arg");
    end_fn = (void (*)(struct rp_site *, uint64_t))dlsym(RTLD_DEFAULT, "rp_site_end");
    info_fn = (int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "rp_info_add");
    if (!reg || !begin_fn || !end_fn) {
        begin_fn = NULL;
        return;
    }
    reg(sites, sites + S_N);
}

/* peer of comm as a rank of MPI_COMM_WORLD, or -1 (any, none, an
 * inter-communicator's remote side, or an MPI error).  Cannot fail. */
static int world_peer(int peer, MPI_Comm comm)
{
    int res = MPI_UNEQUAL, inter = 0, out = MPI_UNDEFINED;
    if (peer < 0 || comm == MPI_COMM_WORLD)
        return peer < 0 ? -1 : peer;
    if (PMPI_Comm_compare(comm, MPI_COMM_WORLD, &res) == MPI_SUCCESS &&
        (res == MPI_IDENT || res == MPI_CONGRUENT))
        return peer;
    if (PMPI_Comm_test_inter(comm, &inter) != MPI_SUCCESS || inter)
        return -1;
    MPI_Group g, w;
    if (PMPI_Comm_group(comm, &g) != MPI_SUCCESS)
        return -1;
    if (PMPI_Comm_group(MPI_COMM_WORLD, &w) == MPI_SUCCESS) {
        PMPI_Group_translate_ranks(g, 1, &peer, w, &out);
        PMPI_Group_free(&w);
    }
    PMPI_Group_free(&g);
    return out == MPI_UNDEFINED ? -1 : out;
}

/* The span argument: peer (a rank of comm, as a rank of MPI_COMM_WORLD:
 * 28 bits, 0xfffffff for any or none) and bytes (at most 2^32 - 1).
 * Cannot fail: an unknown type counts 0 bytes. */
static uint64_t arg_of(int peer, int count, MPI_Datatype t, MPI_Comm comm)
{
    peer = begin_fn ? world_peer(peer, comm) : -1;
    int size = 0;
    if (count > 0 && t != MPI_DATATYPE_NULL)
        PMPI_Type_size(t, &size);
    uint64_t bytes = (uint64_t)(count > 0 ? count : 0) * (uint64_t)(size > 0 ? size : 0);
    return RP_IO_ARG(peer >= 0 ? (uint32_t)peer : 0xfffffffu,
                     bytes > 0xffffffffu ? 0xffffffffu : bytes);
}

/* The begin and end of a span of site s through the recorder (nothing
 * without it, or with the site or its class off).  Cannot fail: the
 * recorder counts what it cannot store. */
static inline uint64_t span_begin(int s, uint64_t arg)
{
    return begin_fn && !sites[s].off ? begin_fn(&sites[s], arg) : 0;
}

static inline void span_end(int s, uint64_t t0)
{
    if (t0)
        end_fn(&sites[s], t0);
}

#define SPAN(S, ARG, CALL)                                                                         \
    do {                                                                                           \
        uint64_t t0_ = span_begin(S, ARG);                                                         \
        int rc_ = CALL;                                                                            \
        span_end(S, t0_);                                                                          \
        return rc_;                                                                                \
    } while (0)

/* CLOCK_MONOTONIC in ns, the clock of the traces' CLOCK chunks.  Cannot
 * fail. */
static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/*
 * The clock offset to rank 0 (see the top), written as INFO key.  Every
 * rank of MPI_COMM_WORLD takes part; rank 0 answers each other rank's 10
 * pings in rank order.  Best effort: an MPI error leaves the offset
 * unwritten.
 */
static void clock_offset(const char *key)
{
    int rank = 0, size = 1;
    enum { PINGS = 10, TAG = 0x7a11 };
    MPI_Comm c;
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &c) != MPI_SUCCESS)
        return;
    PMPI_Comm_rank(c, &rank);
    PMPI_Comm_size(c, &size);
    int64_t at = mono_ns(), off = 0, best = INT64_MAX, t;
    if (rank == 0) {
        for (int r = 1; r < size; r++)
            for (int i = 0; i < PINGS; i++) {
                if (PMPI_Recv(&t, 1, MPI_INT64_T, r, TAG, c, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                    goto out;
                t = mono_ns();
                if (PMPI_Send(&t, 1, MPI_INT64_T, r, TAG, c) != MPI_SUCCESS)
                    goto out;
            }
    } else {
        for (int i = 0; i < PINGS; i++) {
            int64_t t1 = mono_ns();
            if (PMPI_Send(&t1, 1, MPI_INT64_T, 0, TAG, c) != MPI_SUCCESS ||
                PMPI_Recv(&t, 1, MPI_INT64_T, 0, TAG, c, MPI_STATUS_IGNORE) != MPI_SUCCESS)
                goto out;
            int64_t t2 = mono_ns();
            if (t2 - t1 < best) {
                best = t2 - t1;
                at = t1 + (t2 - t1) / 2;
                off = t - at;
            }
        }
    }
    char v[64];
    snprintf(v, sizeof(v), "%lld %lld %lld", (long long)at, (long long)off,
             (long long)(rank ? best : 0));
    if (info_fn)
        info_fn(key, v);
out:
    PMPI_Comm_free(&c);
}

/*
 * The wrapped calls: each returns what the MPI library's returns.  MPI_Init
 * (and MPI_Init_thread) and MPI_Finalize are spans too, the clock offset's
 * ping-pongs included (microseconds): the library's start-up and shutdown,
 * mostly waiting for the other ranks, with the waits and locks it makes
 * inside, are not the caller's own work.
 */
/* The start of MPI_Init's span (the recorder found first). */
static uint64_t init_begin(void)
{
    find_recorder();
    return span_begin(S_INIT, RP_IO_ARG(0xfffffffu, 0));
}

/* The end of MPI_Init's span begun at t0, the clock offset measured
 * inside it when the library started (rc); returns rc. */
static int init_end(uint64_t t0, int rc)
{
    if (rc == MPI_SUCCESS)
        clock_offset("clock_offset_init");
    span_end(S_INIT, t0);
    return rc;
}

int MPI_Init(int *argc, char ***argv)
{
    uint64_t t0 = init_begin();
    return init_end(t0, PMPI_Init(argc, argv));
}

int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    uint64_t t0 = init_begin();
    return init_end(t0, PMPI_Init_thread(argc, argv, required, provided));
}

int MPI_Finalize(void)
{
    uint64_t t0 = span_begin(S_FINALIZE, RP_IO_ARG(0xfffffffu, 0));
    begin_fn = NULL; /* (nothing more after this) */
    clock_offset("clock_offset_fini");
    int rc = PMPI_Finalize();
    span_end(S_FINALIZE, t0);
    return rc;
}

int MPI_Send(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    SPAN(S_SEND, arg_of(dest, count, t, comm), PMPI_Send(buf, count, t, dest, tag, comm));
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    SPAN(S_SSEND, arg_of(dest, count, t, comm), PMPI_Ssend(buf, count, t, dest, tag, comm));
}

int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    SPAN(S_RECV, arg_of(src, count, t, comm), PMPI_Recv(buf, count, t, src, tag, comm, st));
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
    SPAN(S_SENDRECV, arg_of(dest, scount, stype, comm),
         PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, st));
}

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    SPAN(S_WAIT, arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD), PMPI_Wait(req, st));
}

int MPI_Waitall(int n, MPI_Request reqs[], MPI_Status sts[])
{
    SPAN(S_WAITALL, arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD), PMPI_Waitall(n, reqs, sts));
}

int MPI_Barrier(MPI_Comm comm)
{
    SPAN(S_BARRIER, arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD), PMPI_Barrier(comm));
}

int MPI_Bcast(void *buf, int count, MPI_Datatype t, int root, MPI_Comm comm)
{
    SPAN(S_BCAST, arg_of(root, count, t, comm), PMPI_Bcast(buf, count, t, root, comm));
}

int MPI_Reduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, int root,
               MPI_Comm comm)
{
    SPAN(S_REDUCE, arg_of(root, count, t, comm), PMPI_Reduce(sbuf, rbuf, count, t, op, root, comm));
}

int MPI_Allreduce(const void *sbuf, void *rbuf, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
    SPAN(S_ALLREDUCE, arg_of(-1, count, t, MPI_COMM_WORLD),
         PMPI_Allreduce(sbuf, rbuf, count, t, op, comm));
}

int MPI_Gather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
               MPI_Datatype rtype, int root, MPI_Comm comm)
{
    SPAN(S_GATHER, arg_of(root, scount, stype, comm),
         PMPI_Gather(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Allgather(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                  MPI_Datatype rtype, MPI_Comm comm)
{
    SPAN(S_ALLGATHER, arg_of(-1, scount, stype, MPI_COMM_WORLD),
         PMPI_Allgather(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

int MPI_Scatter(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                MPI_Datatype rtype, int root, MPI_Comm comm)
{
    SPAN(S_SCATTER, arg_of(root, rcount, rtype, comm),
         PMPI_Scatter(sbuf, scount, stype, rbuf, rcount, rtype, root, comm));
}

int MPI_Alltoall(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf, int rcount,
                 MPI_Datatype rtype, MPI_Comm comm)
{
    SPAN(S_ALLTOALL, arg_of(-1, scount, stype, MPI_COMM_WORLD),
         PMPI_Alltoall(sbuf, scount, stype, rbuf, rcount, rtype, comm));
}

/* Non-blocking calls: their own time is the library's too (the waits for
 * their requests are MPI_Wait, MPI_Waitall, MPI_Waitany, MPI_Waitsome). */
int MPI_Isend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    SPAN(S_ISEND, arg_of(dest, count, t, comm), PMPI_Isend(buf, count, t, dest, tag, comm, req));
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    SPAN(S_IRECV, arg_of(src, count, t, comm), PMPI_Irecv(buf, count, t, src, tag, comm, req));
}

int MPI_Waitany(int n, MPI_Request reqs[], int *index, MPI_Status *st)
{
    SPAN(S_WAITANY, arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
         PMPI_Waitany(n, reqs, index, st));
}

int MPI_Waitsome(int n, MPI_Request reqs[], int *outcount, int indices[], MPI_Status sts[])
{
    SPAN(S_WAITSOME, arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
         PMPI_Waitsome(n, reqs, outcount, indices, sts));
}

int MPI_Probe(int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    SPAN(S_PROBE, arg_of(src, 0, MPI_DATATYPE_NULL, comm), PMPI_Probe(src, tag, comm, st));
}

int MPI_Allgatherv(const void *sbuf, int scount, MPI_Datatype stype, void *rbuf,
                   const int rcounts[], const int displs[], MPI_Datatype rtype, MPI_Comm comm)
{
    SPAN(S_ALLGATHERV, arg_of(-1, scount, stype, MPI_COMM_WORLD),
         PMPI_Allgatherv(sbuf, scount, stype, rbuf, rcounts, displs, rtype, comm));
}

int MPI_Alltoallv(const void *sbuf, const int scounts[], const int sdispls[], MPI_Datatype stype,
                  void *rbuf, const int rcounts[], const int rdispls[], MPI_Datatype rtype,
                  MPI_Comm comm)
{
    SPAN(S_ALLTOALLV, arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
         PMPI_Alltoallv(sbuf, scounts, sdispls, stype, rbuf, rcounts, rdispls, rtype, comm));
}

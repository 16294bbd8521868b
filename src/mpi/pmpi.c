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
 *
 * Messages (format.h, rp_mpi_arg): through rp_site_arg, a send's or a
 * receive's span carries its tag (a receive's as matched, from its status),
 * MPI_Isend's and MPI_Irecv's the id of the request they start, and the
 * waits and tests the ids of the requests they complete (a receive's with
 * its source, tag and bytes); the last ARG stays the peer and bytes.  The
 * requests are kept in a table from MPI_Request to id until they complete
 * (persistent requests are not followed).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "trace/format.h"

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
    S_TEST,
    S_TESTALL,
    S_TESTANY,
    S_TESTSOME,
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
    [S_ALLTOALLV] = SITE("MPI_Alltoallv"), [S_TEST] = SITE("MPI_Test"),
    [S_TESTALL] = SITE("MPI_Testall"),     [S_TESTANY] = SITE("MPI_Testany"),
    [S_TESTSOME] = SITE("MPI_Testsome"),
};

/* The recorder's functions, or NULL without it. */
static uint64_t (*begin_fn)(struct rp_site *, uint64_t);
static void (*end_fn)(struct rp_site *, uint64_t);
static int (*info_fn)(const char *, const char *);
static void (*arg_fn)(uint64_t); /* NULL with an older recorder: no tags, no requests */

/* Finds the recorder and registers the sites.  Cannot fail: without the
 * recorder the calls are only forwarded. */
static void find_recorder(void)
{
    void (*reg)(struct rp_site *, struct rp_site *) =
        (void (*)(struct rp_site *, struct rp_site *))dlsym(RTLD_DEFAULT, "rp_sites_register");
    begin_fn = (uint64_t(*)(struct rp_site *, uint64_t))dlsym(RTLD_DEFAULT, "rp_site_begin_arg");
    end_fn = (void (*)(struct rp_site *, uint64_t))dlsym(RTLD_DEFAULT, "rp_site_end");
    info_fn = (int (*)(const char *, const char *))dlsym(RTLD_DEFAULT, "rp_info_add");
    arg_fn = (void (*)(uint64_t))dlsym(RTLD_DEFAULT, "rp_site_arg");
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

/* One more ARG of the span begun at t0 (nothing if it was not).  Cannot
 * fail. */
static inline void span_arg(uint64_t t0, unsigned type, uint64_t v)
{
    if (t0 && arg_fn)
        arg_fn(RP_MPI_ARG(type, v));
}

/* The end of the span of site s begun at t0, with its last ARG (the peer and
 * bytes) again after the ARGs added since its begin.  Cannot fail. */
static inline void span_end_arg(int s, uint64_t t0, uint64_t arg)
{
    if (t0 && arg_fn)
        arg_fn(arg);
    span_end(s, t0);
}

/* ---- requests: MPI_Request -> id, until completed ------------------------ */

struct req {
    uint64_t key; /* the handle's bytes; 0: a free slot */
    uint64_t id;
    int recv;
    MPI_Comm comm; /* a receive's: its status's source is a rank of it */
};
static struct req *reqs;
static size_t req_cap, req_used; /* cap: a power of two, or 0 */
static uint64_t req_next;
static char req_mu; /* a spin lock: a pthread mutex would be recorded as the program's */

static void req_lock(void)
{
    while (__atomic_test_and_set(&req_mu, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&req_mu, __ATOMIC_RELAXED)) {
#if defined(__x86_64__) || defined(__i386__)
            __builtin_ia32_pause();
#endif
        }
}

static void req_unlock(void)
{
    __atomic_clear(&req_mu, __ATOMIC_RELEASE);
}

/* A request's handle as a key (its bytes; never 0 for a live request).
 * Cannot fail. */
static uint64_t req_key(MPI_Request r)
{
    uint64_t k = 0;
    memcpy(&k, &r, sizeof(r) < sizeof(k) ? sizeof(r) : sizeof(k));
    return k;
}

static size_t req_slot(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (req_cap - 1);
}

/* Adds request r (a receive: recv) and returns its new id, 0 when out of
 * memory (the request then goes unfollowed). */
static uint64_t req_add(MPI_Request r, int recv, MPI_Comm comm)
{
    uint64_t k = req_key(r), id = 0;
    if (!k || r == MPI_REQUEST_NULL)
        return 0;
    req_lock();
    if (2 * (req_used + 1) > req_cap) { /* grow: rehash into twice the room */
        size_t ncap = req_cap ? 2 * req_cap : 64, ocap = req_cap;
        struct req *n = calloc(ncap, sizeof(*n)), *o = reqs;
        if (!n)
            goto out;
        reqs = n, req_cap = ncap;
        for (size_t i = 0; i < ocap; i++)
            if (o[i].key) {
                size_t j = req_slot(o[i].key);
                while (reqs[j].key)
                    j = (j + 1) & (req_cap - 1);
                reqs[j] = o[i];
            }
        free(o);
    }
    size_t j = req_slot(k); /* (a key may be there already: see req_take) */
    while (reqs[j].key)
        j = (j + 1) & (req_cap - 1);
    req_used++;
    id = ++req_next;
    reqs[j] = (struct req){.key = k, .id = id, .recv = recv, .comm = comm};
out:
    req_unlock();
    return id;
}

/* Takes request handle r out of the table: its id (0 when not followed),
 * whether it is a receive and its communicator. */
static uint64_t req_take(MPI_Request r, int *recv, MPI_Comm *comm)
{
    uint64_t k = req_key(r), id = 0;
    if (!k || r == MPI_REQUEST_NULL)
        return 0;
    req_lock();
    if (req_cap) {
        /* the oldest request with this handle: Open MPI hands out one
         * completed request object for every send done at once */
        size_t j = req_cap;
        for (size_t i = req_slot(k); reqs[i].key; i = (i + 1) & (req_cap - 1))
            if (reqs[i].key == k && (j == req_cap || reqs[i].id < reqs[j].id))
                j = i;
        if (j < req_cap) {
            id = reqs[j].id;
            *recv = reqs[j].recv;
            *comm = reqs[j].comm;
            reqs[j].key = 0; /* removed: the cluster after it moves back */
            req_used--;
            for (size_t i = (j + 1) & (req_cap - 1); reqs[i].key; i = (i + 1) & (req_cap - 1)) {
                struct req e = reqs[i];
                reqs[i].key = 0;
                size_t h = req_slot(e.key);
                while (reqs[h].key)
                    h = (h + 1) & (req_cap - 1);
                reqs[h] = e;
            }
        }
    }
    req_unlock();
    return id;
}

/* A status's source (a rank of comm) as a rank of MPI_COMM_WORLD in 24 bits
 * (0xffffff unknown) << 32 | its tag.  Cannot fail. */
static uint64_t status_arg(const MPI_Status *st, MPI_Comm comm)
{
    int src = st->MPI_SOURCE >= 0 ? world_peer(st->MPI_SOURCE, comm) : -1;
    return (uint64_t)(src >= 0 && src < 0xffffff ? (uint32_t)src : 0xffffffu) << 32 |
           (uint32_t)st->MPI_TAG;
}

/* The bytes a receive's status says it received.  Cannot fail: 0 if it
 * does not say. */
static uint64_t status_bytes(const MPI_Status *st)
{
    int n = 0;
    if (PMPI_Get_count(st, MPI_BYTE, &n) != MPI_SUCCESS || n < 0)
        return 0;
    return (uint64_t)n;
}

/* The ARGs of a request that completed in the span begun at t0: handle h
 * (before the call freed it) and its status st.  Cannot fail. */
static void completed(uint64_t t0, MPI_Request h, const MPI_Status *st)
{
    int recv = 0;
    MPI_Comm comm = MPI_COMM_WORLD;
    uint64_t id = req_take(h, &recv, &comm);
    if (!id)
        return;
    span_arg(t0, recv ? RP_MPI_ARG_RECVD : RP_MPI_ARG_SENT, id);
    if (recv) {
        span_arg(t0, RP_MPI_ARG_STATUS, status_arg(st, comm));
        span_arg(t0, RP_MPI_ARG_BYTES, status_bytes(st));
    }
}

/* Room for the handles and statuses of n requests: a stack buffer of
 * AUTO, else malloc'd.  NULL when out of memory (the requests then go
 * unfollowed). */
enum { AUTO = 16 };
struct reqbuf {
    MPI_Request h[AUTO], *hp;
    MPI_Status s[AUTO], *sp;
};
static int reqbuf_init(struct reqbuf *b, int n, const MPI_Request *reqs_in)
{
    b->hp = b->h, b->sp = b->s;
    if (n > AUTO) {
        b->hp = malloc((size_t)n * sizeof(*b->hp));
        b->sp = malloc((size_t)n * sizeof(*b->sp));
        if (!b->hp || !b->sp) {
            free(b->hp), free(b->sp);
            b->hp = NULL, b->sp = NULL;
            return -1;
        }
    }
    if (n > 0)
        memcpy(b->hp, reqs_in, (size_t)n * sizeof(*b->hp));
    return 0;
}
static void reqbuf_free(struct reqbuf *b)
{
    if (b->hp != b->h)
        free(b->hp);
    if (b->sp != b->s)
        free(b->sp);
}

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
    uint64_t arg = arg_of(dest, count, t, comm), t0 = span_begin(S_SEND, arg);
    int rc = PMPI_Send(buf, count, t, dest, tag, comm);
    span_arg(t0, RP_MPI_ARG_TAG, (uint32_t)tag);
    span_end_arg(S_SEND, t0, arg);
    return rc;
}

int MPI_Ssend(const void *buf, int count, MPI_Datatype t, int dest, int tag, MPI_Comm comm)
{
    uint64_t arg = arg_of(dest, count, t, comm), t0 = span_begin(S_SSEND, arg);
    int rc = PMPI_Ssend(buf, count, t, dest, tag, comm);
    span_arg(t0, RP_MPI_ARG_TAG, (uint32_t)tag);
    span_end_arg(S_SSEND, t0, arg);
    return rc;
}

/* A receive's last ARG: the source and bytes its status says (a receive
 * from MPI_ANY_SOURCE gets its peer), else the ones asked for. */
int MPI_Recv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm, MPI_Status *st)
{
    MPI_Status own;
    uint64_t arg = arg_of(src, count, t, comm), t0 = span_begin(S_RECV, arg);
    if (t0 && arg_fn && st == MPI_STATUS_IGNORE)
        st = &own;
    int rc = PMPI_Recv(buf, count, t, src, tag, comm, st);
    if (t0 && arg_fn && rc == MPI_SUCCESS) {
        uint64_t sa = status_arg(st, comm), peer = sa >> 32;
        span_arg(t0, RP_MPI_ARG_TAG, (uint32_t)st->MPI_TAG);
        arg = RP_IO_ARG(peer == 0xffffff ? 0xfffffffu : peer, status_bytes(st));
    } else {
        span_arg(t0, RP_MPI_ARG_TAG, (uint32_t)tag);
    }
    span_end_arg(S_RECV, t0, arg);
    return rc;
}

int MPI_Sendrecv(const void *sbuf, int scount, MPI_Datatype stype, int dest, int stag, void *rbuf,
                 int rcount, MPI_Datatype rtype, int src, int rtag, MPI_Comm comm, MPI_Status *st)
{
    /* the send's peer, bytes and tag; its receive's STATUS and BYTES, with
     * no RECVD before them (format.h rp_mpi_arg) */
    MPI_Status own;
    uint64_t arg = arg_of(dest, scount, stype, comm), t0 = span_begin(S_SENDRECV, arg);
    if (t0 && arg_fn && st == MPI_STATUS_IGNORE)
        st = &own;
    int rc =
        PMPI_Sendrecv(sbuf, scount, stype, dest, stag, rbuf, rcount, rtype, src, rtag, comm, st);
    span_arg(t0, RP_MPI_ARG_TAG, (uint32_t)stag);
    if (t0 && arg_fn && rc == MPI_SUCCESS) {
        span_arg(t0, RP_MPI_ARG_STATUS, status_arg(st, comm));
        span_arg(t0, RP_MPI_ARG_BYTES, status_bytes(st));
    }
    span_end_arg(S_SENDRECV, t0, arg);
    return rc;
}

int MPI_Wait(MPI_Request *req, MPI_Status *st)
{
    MPI_Status own;
    MPI_Request h = req ? *req : MPI_REQUEST_NULL;
    uint64_t arg = arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD), t0 = span_begin(S_WAIT, arg);
    if (st == MPI_STATUS_IGNORE)
        st = &own;
    int rc = PMPI_Wait(req, st);
    if (rc == MPI_SUCCESS)
        completed(t0, h, st);
    span_end_arg(S_WAIT, t0, arg);
    return rc;
}

int MPI_Waitall(int n, MPI_Request reqs_in[], MPI_Status sts[])
{
    struct reqbuf b;
    uint64_t arg = arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
             t0 = span_begin(S_WAITALL, arg);
    int keep = t0 && arg_fn && reqbuf_init(&b, n, reqs_in) == 0;
    if (keep && sts == MPI_STATUSES_IGNORE)
        sts = b.sp;
    int rc = PMPI_Waitall(n, reqs_in, sts);
    if (keep) {
        for (int i = 0; i < n && rc == MPI_SUCCESS; i++)
            completed(t0, b.hp[i], &sts[i]);
        reqbuf_free(&b);
    }
    span_end_arg(S_WAITALL, t0, arg);
    return rc;
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
    uint64_t arg = arg_of(dest, count, t, comm), t0 = span_begin(S_ISEND, arg);
    int rc = PMPI_Isend(buf, count, t, dest, tag, comm, req);
    if (t0 && arg_fn && rc == MPI_SUCCESS) {
        span_arg(t0, RP_MPI_ARG_TAG, (uint32_t)tag);
        uint64_t id = req_add(*req, 0, comm);
        if (id)
            span_arg(t0, RP_MPI_ARG_REQ, id);
    }
    span_end_arg(S_ISEND, t0, arg);
    return rc;
}

int MPI_Irecv(void *buf, int count, MPI_Datatype t, int src, int tag, MPI_Comm comm,
              MPI_Request *req)
{
    uint64_t arg = arg_of(src, count, t, comm), t0 = span_begin(S_IRECV, arg);
    int rc = PMPI_Irecv(buf, count, t, src, tag, comm, req);
    if (t0 && arg_fn && rc == MPI_SUCCESS) {
        span_arg(t0, RP_MPI_ARG_TAG, (uint32_t)tag);
        uint64_t id = req_add(*req, 1, comm);
        if (id)
            span_arg(t0, RP_MPI_ARG_REQ, id);
    }
    span_end_arg(S_IRECV, t0, arg);
    return rc;
}

int MPI_Waitany(int n, MPI_Request reqs_in[], int *index, MPI_Status *st)
{
    struct reqbuf b;
    uint64_t arg = arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
             t0 = span_begin(S_WAITANY, arg);
    int keep = t0 && arg_fn && reqbuf_init(&b, n, reqs_in) == 0;
    if (keep && st == MPI_STATUS_IGNORE)
        st = b.sp;
    int rc = PMPI_Waitany(n, reqs_in, index, st);
    if (keep) {
        if (rc == MPI_SUCCESS && *index != MPI_UNDEFINED && *index >= 0 && *index < n)
            completed(t0, b.hp[*index], st);
        reqbuf_free(&b);
    }
    span_end_arg(S_WAITANY, t0, arg);
    return rc;
}

/* The requests of a Waitsome or Testsome that completed: indices[0..out)
 * of the handles in b, their statuses in sts.  Cannot fail. */
static void completed_some(uint64_t t0, const struct reqbuf *b, int n, int out, const int *indices,
                           const MPI_Status *sts)
{
    for (int i = 0; out != MPI_UNDEFINED && i < out; i++)
        if (indices[i] >= 0 && indices[i] < n)
            completed(t0, b->hp[indices[i]], &sts[i]);
}

int MPI_Waitsome(int n, MPI_Request reqs_in[], int *outcount, int indices[], MPI_Status sts[])
{
    struct reqbuf b;
    uint64_t arg = arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
             t0 = span_begin(S_WAITSOME, arg);
    int keep = t0 && arg_fn && reqbuf_init(&b, n, reqs_in) == 0;
    if (keep && sts == MPI_STATUSES_IGNORE)
        sts = b.sp;
    int rc = PMPI_Waitsome(n, reqs_in, outcount, indices, sts);
    if (keep) {
        if (rc == MPI_SUCCESS)
            completed_some(t0, &b, n, *outcount, indices, sts);
        reqbuf_free(&b);
    }
    span_end_arg(S_WAITSOME, t0, arg);
    return rc;
}

int MPI_Test(MPI_Request *req, int *flag, MPI_Status *st)
{
    MPI_Status own;
    MPI_Request h = req ? *req : MPI_REQUEST_NULL;
    uint64_t arg = arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD), t0 = span_begin(S_TEST, arg);
    if (st == MPI_STATUS_IGNORE)
        st = &own;
    int rc = PMPI_Test(req, flag, st);
    if (rc == MPI_SUCCESS && *flag)
        completed(t0, h, st);
    span_end_arg(S_TEST, t0, arg);
    return rc;
}

int MPI_Testall(int n, MPI_Request reqs_in[], int *flag, MPI_Status sts[])
{
    struct reqbuf b;
    uint64_t arg = arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
             t0 = span_begin(S_TESTALL, arg);
    int keep = t0 && arg_fn && reqbuf_init(&b, n, reqs_in) == 0;
    if (keep && sts == MPI_STATUSES_IGNORE)
        sts = b.sp;
    int rc = PMPI_Testall(n, reqs_in, flag, sts);
    if (keep) {
        for (int i = 0; i < n && rc == MPI_SUCCESS && *flag; i++)
            completed(t0, b.hp[i], &sts[i]);
        reqbuf_free(&b);
    }
    span_end_arg(S_TESTALL, t0, arg);
    return rc;
}

int MPI_Testany(int n, MPI_Request reqs_in[], int *index, int *flag, MPI_Status *st)
{
    struct reqbuf b;
    uint64_t arg = arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
             t0 = span_begin(S_TESTANY, arg);
    int keep = t0 && arg_fn && reqbuf_init(&b, n, reqs_in) == 0;
    if (keep && st == MPI_STATUS_IGNORE)
        st = b.sp;
    int rc = PMPI_Testany(n, reqs_in, index, flag, st);
    if (keep) {
        if (rc == MPI_SUCCESS && *flag && *index != MPI_UNDEFINED && *index >= 0 && *index < n)
            completed(t0, b.hp[*index], st);
        reqbuf_free(&b);
    }
    span_end_arg(S_TESTANY, t0, arg);
    return rc;
}

int MPI_Testsome(int n, MPI_Request reqs_in[], int *outcount, int indices[], MPI_Status sts[])
{
    struct reqbuf b;
    uint64_t arg = arg_of(-1, 0, MPI_DATATYPE_NULL, MPI_COMM_WORLD),
             t0 = span_begin(S_TESTSOME, arg);
    int keep = t0 && arg_fn && reqbuf_init(&b, n, reqs_in) == 0;
    if (keep && sts == MPI_STATUSES_IGNORE)
        sts = b.sp;
    int rc = PMPI_Testsome(n, reqs_in, outcount, indices, sts);
    if (keep) {
        if (rc == MPI_SUCCESS)
            completed_some(t0, &b, n, *outcount, indices, sts);
        reqbuf_free(&b);
    }
    span_end_arg(S_TESTSOME, t0, arg);
    return rc;
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

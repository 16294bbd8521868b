// SPDX-License-Identifier: MIT
/*
 * export_otf2.c - `rankprof export --format otf2 -o DIR`: an OTF2 archive
 * (DIR/traces.otf2, DIR/traces.def, DIR/traces/) for Vampir, otf2-print and
 * the Score-P tools, written with libotf2 when the build found it
 * (RP_HAVE_OTF2; docs/exports.md, docs/multi-process.md).
 *
 * One location group per process (a pid: the images it exec'd are one),
 * under one system tree node per host; one location per thread; one region
 * per function, point, lock wait, io span, blocking call and MPI call
 * that occurs, its Enter and Leave at the span's ends; with
 * librankprof-mpi, an MpiSend in each MPI_Send/MPI_Ssend and an MpiRecv in
 * each MPI_Recv whose peer is known, on MPI_COMM_WORLD (the rank's main
 * thread is its location there; tag 0: tags are not recorded).  Timestamps are
 * nanoseconds of CLOCK_MONOTONIC: each process's ticks are mapped through
 * its own CLOCK chunks (trace-format.md) by linear interpolation, so that
 * the processes of one host share one axis; a process recorded on another
 * host than rank 0 with librankprof-mpi's offsets to rank 0's clock (INFO
 * clock_offset_init and clock_offset_fini) has them added, interpolated
 * linearly in time, which puts it on rank 0's axis (-O offsets=on: every
 * process that has them; off: none).  A location's
 * timestamps never go backwards (libotf2 requires it): a later one that
 * would is written at the previous one.  Not written: lock holds (they do
 * not nest with the spans), instants, counters and losses.
 *
 * Memory: one writer per thread (libotf2's buffers) and the tables of
 * processes and threads; nothing grows with the events.
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"
#include "report/clockmap.h"
#include "report/export.h"
#include "trace/format.h"
#include "trace/reader.h"

#ifndef RP_HAVE_OTF2

int rp_export_otf2(FILE *out, const struct rp_export_ctx *ctx)
{
    (void)out;
    snprintf(ctx->err, ctx->errsz,
             "this rankprof was built without libotf2, so the otf2 format is unavailable "
             "(install libotf2-trace-dev, e.g. `scripts/deps.sh build`, and rebuild)");
    return RP_EINVAL;
}

#else

#include <otf2/otf2.h>

/* A process (a pid). */
struct grp {
    uint32_t pid, proc; /* proc: its first file's index in p->procs */
    uint32_t last;      /* its last file's index */
    uint32_t host;      /* system tree node */
};

/* A request an MPI span completed (format.h RP_MPI_ARG_SENT, _RECVD). */
struct done {
    uint64_t id, bytes;
    uint32_t src, tag; /* a receive's, from its status */
    int recv;
};

struct loc {
    uint32_t tid, grp;
    uint64_t last, events;
    OTF2_EvtWriter *w;
    char name[64];
    /* the ARGs of its open MPI span (librankprof-mpi, format.h rp_mpi_arg) */
    uint32_t tag;
    uint64_t req;
    struct done *done;
    uint32_t ndone, capdone;
    struct done own; /* MPI_Sendrecv's receive (own.recv: its STATUS came) */
    int in_done;     /* a RECVD's STATUS and BYTES follow */
};

/* What an MPI node's span writes besides its Enter and Leave (o->msg). */
enum { M_NONE, M_SEND, M_RECV, M_ISEND, M_IRECV, M_COMPLETE, M_SENDRECV };

struct otf {
    const struct rp_export_ctx *ctx;
    const struct rp_profile *p;
    OTF2_Archive *ar;
    struct grp *grps;
    uint32_t ngrp, capgrp;
    struct loc *locs;
    uint32_t nloc, caploc, hit;
    uint32_t *proc_grp; /* per file of p->procs: its process */
    uint32_t cur;       /* the process being walked */
    uint32_t *reg;      /* per node: its region + 1, 0 before it occurs (OTF2 wants dense ids) */
    uint32_t *node;     /* per region: its node */
    uint32_t nreg;
    char **names;    /* per node: its display name */
    uint8_t *msg;    /* per node: its M_* (librankprof-mpi) */
    int world;       /* the ranks are 0..n-1, one process each: messages can be written */
    uint32_t nranks; /* the processes with a rank */
    uint64_t nmsg;   /* MpiSend and MpiRecv events written */
    uint64_t min_ns, max_ns, clamped;
    struct rp_clockmap cm; /* the files' clocks (clockmap.h): the one axis */
};

/* libotf2's flush callbacks: flush when a buffer is full, no timestamp. */
static OTF2_FlushType pre_flush(void *u, OTF2_FileType ft, OTF2_LocationRef l, void *c, bool fin)
{
    (void)u, (void)ft, (void)l, (void)c, (void)fin;
    return OTF2_FLUSH;
}
static OTF2_TimeStamp post_flush(void *u, OTF2_FileType ft, OTF2_LocationRef l)
{
    (void)u, (void)ft, (void)l;
    return 0;
}
static OTF2_FlushCallbacks flush_cbs = {.otf2_pre_flush = pre_flush, .otf2_post_flush = post_flush};

/* The location of thread tid of the process being walked (made on first
 * sight, with its writer).  NULL when out of memory. */
static struct loc *loc_of(struct otf *o, uint32_t tid)
{
    if (o->hit < o->nloc && o->locs[o->hit].tid == tid && o->locs[o->hit].grp == o->cur)
        return &o->locs[o->hit];
    uint32_t g = o->cur;
    for (uint32_t i = 0; i < o->nloc; i++)
        if (o->locs[i].tid == tid && o->locs[i].grp == g)
            return &o->locs[o->hit = i];
    if (rp_grow(&o->locs, &o->caploc, o->nloc + 1, sizeof(*o->locs), 16) < 0)
        return NULL;
    struct loc *l = &o->locs[o->nloc];
    memset(l, 0, sizeof(*l));
    l->tid = tid;
    l->grp = g;
    snprintf(l->name, sizeof(l->name), "thread %u", tid);
    if (!(l->w = OTF2_Archive_GetEvtWriter(o->ar, o->nloc)))
        return NULL;
    o->hit = o->nloc++;
    return l;
}

/*
 * A run's file p->procs[k] begins: its process is the current one, and
 * every process whose last file came before it is complete, its writers'
 * buffers flushed and freed now (memory: the processes being walked).
 * Returns 0 or RP_EIO.
 */
static int on_file(void *cookie, uint32_t k)
{
    struct otf *o = cookie;
    o->cur = o->proc_grp[k];
    rp_clockmap_select(&o->cm, k);
    for (uint32_t i = 0; i < o->nloc; i++)
        if (o->locs[i].w && o->grps[o->locs[i].grp].last < k) {
            if (OTF2_Archive_CloseEvtWriter(o->ar, o->locs[i].w) != OTF2_SUCCESS)
                return RP_EIO;
            o->locs[i].w = NULL;
        }
    return 0;
}

/* The timestamp of ticks on l, never before l's last.  Cannot fail. */
static uint64_t stamp(struct otf *o, struct loc *l, uint64_t ticks)
{
    double v = rp_clockmap_abs(&o->cm, ticks);
    uint64_t ns = v > 0 && v < 1.8e19 ? (uint64_t)v : 0;
    if (ns < l->last) {
        ns = l->last;
        o->clamped++;
    }
    l->last = ns;
    if (ns < o->min_ns)
        o->min_ns = ns;
    if (ns > o->max_ns)
        o->max_ns = ns;
    return ns;
}

/* The timeline callbacks (export.h): a thread's name, a span's Enter and
 * Leave on its thread's location.  Each returns 0, RP_ENOMEM, or RP_EIO
 * when libotf2 fails. */
static int on_thread(void *cookie, uint32_t tid, const char *name)
{
    struct otf *o = cookie;
    struct loc *l = loc_of(o, tid);
    if (!l)
        return RP_ENOMEM;
    if (name && *name)
        snprintf(l->name, sizeof(l->name), "%s (%u)", name, tid);
    return 0;
}

static int on_begin(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks)
{
    struct otf *o = cookie;
    struct loc *l = loc_of(o, tid);
    if (!l)
        return RP_ENOMEM;
    if (!l->w) /* (its process was complete: cannot happen in p->procs order) */
        return 0;
    if (!o->reg[id]) {
        o->node[o->nreg] = id;
        o->reg[id] = ++o->nreg;
        const char *nm = o->names[id];
        if (o->p->nodes[id].kind == RP_KIND_WAIT && o->world)
            o->msg[id] = !strncmp(nm, "MPI_Send ", 9) || !strncmp(nm, "MPI_Ssend ", 10) ? M_SEND
                         : !strncmp(nm, "MPI_Recv ", 9)                                 ? M_RECV
                         : !strncmp(nm, "MPI_Isend ", 10)                               ? M_ISEND
                         : !strncmp(nm, "MPI_Irecv ", 10)                               ? M_IRECV
                         : !strncmp(nm, "MPI_Sendrecv ", 13)                            ? M_SENDRECV
                         : !strncmp(nm, "MPI_Wait", 8) || !strncmp(nm, "MPI_Test", 8)   ? M_COMPLETE
                                                                                        : M_NONE;
    }
    if (o->msg[id]) { /* its ARGs follow */
        l->tag = 0;
        l->req = 0;
        l->ndone = 0;
        l->own.recv = 0;
        l->in_done = 0;
    }
    l->events++;
    return OTF2_EvtWriter_Enter(l->w, NULL, stamp(o, l, ticks), o->reg[id] - 1) == OTF2_SUCCESS
               ? 0
               : RP_EIO;
}

/* An ARG of span id on thread tid: an MPI span's tag, request or completed
 * requests (format.h rp_mpi_arg).  Returns 0 or RP_ENOMEM. */
static int on_arg(void *cookie, uint32_t tid, uint32_t id, uint64_t v)
{
    struct otf *o = cookie;
    if (!o->msg[id])
        return 0;
    struct loc *l = loc_of(o, tid);
    if (!l)
        return RP_ENOMEM;
    uint64_t val = RP_MPI_ARG_VAL(v);
    struct done *d = l->in_done && l->ndone ? &l->done[l->ndone - 1] : &l->own;
    switch (RP_MPI_ARG_TYPE(v)) {
    case RP_MPI_ARG_TAG:
        l->tag = (uint32_t)val;
        break;
    case RP_MPI_ARG_REQ:
        l->req = val;
        break;
    case RP_MPI_ARG_SENT:
    case RP_MPI_ARG_RECVD:
        if (rp_grow(&l->done, &l->capdone, l->ndone + 1, sizeof(*l->done), 4) < 0)
            return RP_ENOMEM;
        l->done[l->ndone++] = (struct done){
            .id = val, .recv = RP_MPI_ARG_TYPE(v) == RP_MPI_ARG_RECVD, .src = 0xffffffu};
        l->in_done = RP_MPI_ARG_TYPE(v) == RP_MPI_ARG_RECVD;
        break;
    case RP_MPI_ARG_STATUS: /* a RECVD's, or MPI_Sendrecv's own receive */
        d->src = (uint32_t)(val >> 32) & 0xffffffu;
        d->tag = (uint32_t)val;
        d->recv = 1;
        break;
    case RP_MPI_ARG_BYTES:
        d->bytes = val;
        l->in_done = 0;
        break;
    default:
        break;
    }
    return 0;
}

/*
 * The MPI events of an MPI span of node id ending at ticks on l, before its
 * Leave: a send's MpiSend, a receive's MpiRecv (peer and bytes from arg,
 * the tag from its ARGs), MPI_Sendrecv's MpiSend and MpiRecv, MPI_Isend's MpiIsend, MPI_Irecv's
 * MpiIrecvRequest, and for each request a wait or test completed an
 * MpiIsendComplete or an MpiIrecv (on MPI_COMM_WORLD; a peer that is not a
 * rank of it writes none).  Returns 0 or RP_EIO.
 */
static int mpi_events(struct otf *o, struct loc *l, uint32_t id, uint64_t ticks, uint64_t arg)
{
    uint32_t peer = (uint32_t)(arg >> 32) & 0xfffffffu;
    uint64_t len = arg & 0xffffffffu;
    OTF2_ErrorCode e = OTF2_SUCCESS;
    uint64_t n = 0;
    int known = peer != 0xfffffffu && peer < o->nranks;
    switch (o->msg[id]) {
    case M_SEND:
    case M_RECV:
        if (!known)
            break;
        e = o->msg[id] == M_SEND
                ? OTF2_EvtWriter_MpiSend(l->w, NULL, stamp(o, l, ticks), peer, 0, l->tag, len)
                : OTF2_EvtWriter_MpiRecv(l->w, NULL, stamp(o, l, ticks), peer, 0, l->tag, len);
        n = 1;
        break;
    case M_ISEND:
        if (!known || !l->req)
            break;
        e = OTF2_EvtWriter_MpiIsend(l->w, NULL, stamp(o, l, ticks), peer, 0, l->tag, len, l->req);
        n = 1;
        break;
    case M_IRECV:
        if (!l->req)
            break;
        e = OTF2_EvtWriter_MpiIrecvRequest(l->w, NULL, stamp(o, l, ticks), l->req);
        n = 1;
        break;
    case M_SENDRECV: /* its send, then its receive */
        if (known) {
            e = OTF2_EvtWriter_MpiSend(l->w, NULL, stamp(o, l, ticks), peer, 0, l->tag, len);
            n++;
        }
        if (e == OTF2_SUCCESS && l->own.recv && l->own.src < o->nranks) {
            e = OTF2_EvtWriter_MpiRecv(l->w, NULL, stamp(o, l, ticks), l->own.src, 0, l->own.tag,
                                       l->own.bytes);
            n++;
        }
        break;
    case M_COMPLETE:
        for (uint32_t i = 0; i < l->ndone && e == OTF2_SUCCESS; i++) {
            const struct done *d = &l->done[i];
            if (!d->recv) {
                e = OTF2_EvtWriter_MpiIsendComplete(l->w, NULL, stamp(o, l, ticks), d->id);
                n++;
            } else if (d->src < o->nranks) {
                e = OTF2_EvtWriter_MpiIrecv(l->w, NULL, stamp(o, l, ticks), d->src, 0, d->tag,
                                            d->bytes, d->id);
                n++;
            }
        }
        break;
    default:
        break;
    }
    l->ndone = 0;
    l->events += n;
    o->nmsg += n;
    return e == OTF2_SUCCESS ? 0 : RP_EIO;
}

static int on_end(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg,
                  const char *why)
{
    struct otf *o = cookie;
    (void)arg, (void)why;
    struct loc *l = loc_of(o, tid);
    if (!l)
        return RP_ENOMEM;
    if (!l->w)
        return 0;
    if (!o->reg[id]) /* (cannot happen: a span ends after it began) */
        return 0;
    int rc = o->msg[id] ? mpi_events(o, l, id, ticks, arg) : 0;
    if (rc < 0)
        return rc;
    l->events++;
    return OTF2_EvtWriter_Leave(l->w, NULL, stamp(o, l, ticks), o->reg[id] - 1) == OTF2_SUCCESS
               ? 0
               : RP_EIO;
}

/* The role and paradigm of a node's region.  Cannot fail. */
static void region_kind(const struct rp_node *n, const char *name, OTF2_RegionRole *role,
                        OTF2_Paradigm *par)
{
    *role = OTF2_REGION_ROLE_FUNCTION;
    *par = OTF2_PARADIGM_USER;
    if (!strncmp(name, "MPI_", 4)) {
        *par = OTF2_PARADIGM_MPI;
        if (strstr(name, "Barrier"))
            *role = OTF2_REGION_ROLE_BARRIER;
        else if (strstr(name, "Bcast") || strstr(name, "Scatter"))
            *role = OTF2_REGION_ROLE_COLL_ONE2ALL;
        else if (strstr(name, "Reduce") && !strstr(name, "Allreduce"))
            *role = OTF2_REGION_ROLE_COLL_ALL2ONE;
        else if (strstr(name, "Gather") && !strstr(name, "Allgather"))
            *role = OTF2_REGION_ROLE_COLL_ALL2ONE;
        else if (strstr(name, "All"))
            *role = OTF2_REGION_ROLE_COLL_ALL2ALL;
        else if (strstr(name, "Send") || strstr(name, "Recv") || strstr(name, "Wait") ||
                 strstr(name, "send") || strstr(name, "recv") || strstr(name, "Test"))
            *role = OTF2_REGION_ROLE_POINT2POINT;
        return;
    }
    switch (n->kind) {
    case RP_KIND_FUNC:
        *par = OTF2_PARADIGM_COMPILER;
        break;
    case RP_KIND_POINT:
        *role = OTF2_REGION_ROLE_CODE;
        break;
    case RP_KIND_LOCK_WAIT:
    case RP_KIND_LOCK_HOLD:
        *par = OTF2_PARADIGM_PTHREAD;
        break;
    case RP_KIND_IO:
        *role = OTF2_REGION_ROLE_FILE_IO;
        break;
    case RP_KIND_OFFCPU:
        *role = OTF2_REGION_ROLE_ARTIFICIAL;
        *par = OTF2_PARADIGM_MEASUREMENT_SYSTEM;
        break;
    default:
        break;
    }
}

/* Sets up the processes: one per pid, with its clock.  RP_ENOMEM. */
static int make_groups(struct otf *o)
{
    const struct rp_profile *p = o->p;
    uint32_t n = p->n_procs ? p->n_procs : 1;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t pid = p->n_procs ? p->procs[i].pid : p->pid, g = 0;
        while (g < o->ngrp && o->grps[g].pid != pid)
            g++;
        if (g == o->ngrp) {
            if (rp_grow(&o->grps, &o->capgrp, o->ngrp + 1, sizeof(*o->grps), 8) < 0)
                return RP_ENOMEM;
            memset(&o->grps[g], 0, sizeof(o->grps[g]));
            o->grps[g].pid = pid;
            o->grps[g].proc = i;
            o->ngrp++;
        }
        o->grps[g].last = i;
        if (o->proc_grp)
            o->proc_grp[i] = g;
    }
    /* -O offsets=auto (the default): another host's ranks only (one host's
     * monotonic clock is one clock); on: every rank's; off: none */
    int rc = rp_clockmap_profile(&o->cm, p, o->ctx->input, rp_export_param(o->ctx, "offsets"),
                                 o->ctx->err, o->ctx->errsz);
    if (rc < 0)
        return rc;
    /* messages need MPI_COMM_WORLD: the processes with a rank (not the
     * launcher's) have the ranks 0..n-1, once each */
    o->nranks = 0;
    for (uint32_t g = 0; g < o->ngrp; g++)
        o->nranks += p->n_procs && p->procs[o->grps[g].proc].has_rank;
    o->world = o->nranks > 0;
    for (uint32_t g = 0; g < o->ngrp && o->world; g++) {
        const struct rp_proc *r = &p->procs[o->grps[g].proc];
        if (!r->has_rank)
            continue;
        o->world = r->rank < o->nranks;
        for (uint32_t h = 0; h < g && o->world; h++)
            o->world =
                !p->procs[o->grps[h].proc].has_rank || p->procs[o->grps[h].proc].rank != r->rank;
    }
    return 0;
}

/* The global definitions: clock, strings, system tree, groups, locations,
 * regions.  Returns 0 or RP_EIO. */
static int write_defs(struct otf *o, char **names)
{
    const struct rp_profile *p = o->p;
    OTF2_GlobalDefWriter *gw = OTF2_Archive_GetGlobalDefWriter(o->ar);
    if (!gw)
        return RP_EIO;
    uint64_t len = o->max_ns > o->min_ns ? o->max_ns - o->min_ns : 0;
    if (o->min_ns == UINT64_MAX)
        o->min_ns = 0;
    uint64_t real = o->cm.have_real ? o->min_ns + (uint64_t)o->cm.real_minus_mono : 0;
    OTF2_ErrorCode e =
        OTF2_GlobalDefWriter_WriteClockProperties(gw, 1000000000ull, o->min_ns, len, real);
    uint32_t s = 0; /* string ids, in order */
    char buf[512];
#define STR(text) (e |= OTF2_GlobalDefWriter_WriteString(gw, s, (text)), s++)
    uint32_t root = STR("rankprof"), cls_machine = STR("machine"), cls_node = STR("node");
    e |= OTF2_GlobalDefWriter_WriteSystemTreeNode(gw, 0, root, cls_machine,
                                                  OTF2_UNDEFINED_SYSTEM_TREE_NODE);
    /* hosts: one node each, numbered from 1 */
    uint32_t nhost = 0;
    for (uint32_t g = 0; g < o->ngrp; g++) {
        const struct rp_proc *r = p->n_procs ? &p->procs[o->grps[g].proc] : NULL;
        const char *h = r && r->host ? r->host : "localhost";
        uint32_t k = 0;
        for (; k < g; k++) {
            const struct rp_proc *q = p->n_procs ? &p->procs[o->grps[k].proc] : NULL;
            if (!strcmp(q && q->host ? q->host : "localhost", h))
                break;
        }
        if (k < g) {
            o->grps[g].host = o->grps[k].host;
            continue;
        }
        o->grps[g].host = ++nhost;
        uint32_t hs = STR(h);
        e |= OTF2_GlobalDefWriter_WriteSystemTreeNode(gw, nhost, hs, cls_node, 0);
    }
    for (uint32_t g = 0; g < o->ngrp; g++) {
        const struct rp_proc *r = p->n_procs ? &p->procs[o->grps[g].proc] : NULL;
        if (r && r->has_rank)
            snprintf(buf, sizeof(buf), "rank %u (pid %u)", r->rank, o->grps[g].pid);
        else
            snprintf(buf, sizeof(buf), "pid %u", o->grps[g].pid);
        uint32_t gs = STR(buf);
        e |=
            OTF2_GlobalDefWriter_WriteLocationGroup(gw, g, gs, OTF2_LOCATION_GROUP_TYPE_PROCESS,
                                                    o->grps[g].host, OTF2_UNDEFINED_LOCATION_GROUP);
    }
    for (uint32_t i = 0; i < o->nloc; i++) {
        uint32_t ls = STR(o->locs[i].name);
        e |= OTF2_GlobalDefWriter_WriteLocation(gw, i, ls, OTF2_LOCATION_TYPE_CPU_THREAD,
                                                o->locs[i].events, o->locs[i].grp);
    }
    if (o->nmsg) { /* MPI_COMM_WORLD: rank r is its process's first location */
        uint64_t *m = calloc(o->nranks, sizeof(*m));
        if (!m)
            return RP_ENOMEM;
        for (uint32_t g = 0; g < o->ngrp; g++) {
            if (!p->procs[o->grps[g].proc].has_rank)
                continue;
            uint32_t r = p->procs[o->grps[g].proc].rank, k = o->nloc, first = o->nloc;
            for (uint32_t i = 0; i < o->nloc && k == o->nloc; i++)
                if (o->locs[i].grp == g) { /* its main thread (tid = pid), else its first */
                    first = first < o->nloc ? first : i;
                    k = o->locs[i].tid == o->grps[g].pid ? i : k;
                }
            m[r] = k < o->nloc ? k : first < o->nloc ? first : 0;
        }
        uint32_t ls = STR("MPI_COMM_WORLD locations"), gs = STR("MPI_COMM_WORLD group"),
                 cs = STR("MPI_COMM_WORLD");
        e |= OTF2_GlobalDefWriter_WriteGroup(gw, 0, ls, OTF2_GROUP_TYPE_COMM_LOCATIONS,
                                             OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, o->nranks, m);
        for (uint32_t r = 0; r < o->nranks; r++)
            m[r] = r;
        e |= OTF2_GlobalDefWriter_WriteGroup(gw, 1, gs, OTF2_GROUP_TYPE_COMM_GROUP,
                                             OTF2_PARADIGM_MPI, OTF2_GROUP_FLAG_NONE, o->nranks, m);
        e |= OTF2_GlobalDefWriter_WriteComm(gw, 0, cs, 1, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE);
        free(m);
    }
    uint32_t empty = STR("");
    for (uint32_t r = 0; r < o->nreg; r++) {
        uint32_t id = o->node[r];
        const struct rp_node *n = &p->nodes[id];
        OTF2_RegionRole role;
        OTF2_Paradigm par;
        region_kind(n, names[id], &role, &par);
        uint32_t ns = STR(names[id]);
        uint32_t fs = n->file ? STR(n->file) : empty;
        uint32_t ds = STR(rp_export_cat(n->kind));
        e |= OTF2_GlobalDefWriter_WriteRegion(gw, r, ns, ns, ds, role, par, OTF2_REGION_FLAG_NONE,
                                              fs, n->line, n->line);
    }
#undef STR
    return e == OTF2_SUCCESS ? 0 : RP_EIO;
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

/* Removes the directory tree at path (a failed archive).  Best effort. */
static void remove_tree(const char *path)
{
    nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int rp_export_otf2(FILE *out, const struct rp_export_ctx *ctx)
{
    static const struct rp_timeline_ops ops = {
        .thread = on_thread, .begin = on_begin, .end = on_end, .file = on_file, .arg = on_arg};
    const struct rp_profile *p = ctx->p;
    struct otf o = {.ctx = ctx, .p = p, .min_ns = UINT64_MAX};
    char tmp[4096 + 32];
    char **names = NULL;
    int rc = RP_ENOMEM;
    struct stat st;

    (void)out;
    if (!ctx->output) {
        snprintf(ctx->err, ctx->errsz, "an OTF2 archive is a directory: give -o DIR");
        return RP_EINVAL;
    }
    if (stat(ctx->output, &st) == 0) {
        snprintf(ctx->err, ctx->errsz,
                 "%s exists: an OTF2 archive is written to a new directory (remove it or give "
                 "another -o)",
                 ctx->output);
        return RP_EINVAL;
    }
    snprintf(tmp, sizeof(tmp), "%s.tmp.%ld", ctx->output, (long)getpid());
    if (!(o.names = names = rp_export_names(p)) ||
        !(o.reg = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*o.reg))) ||
        !(o.node = calloc(p->n_nodes ? p->n_nodes : 1, sizeof(*o.node))) ||
        !(o.proc_grp = calloc(p->n_procs ? p->n_procs : 1, sizeof(*o.proc_grp))) ||
        !(o.msg = calloc(p->n_nodes ? p->n_nodes : 1, 1)) || (rc = make_groups(&o)) < 0)
        goto out;
    o.ar = OTF2_Archive_Open(tmp, "traces", OTF2_FILEMODE_WRITE, 1024 * 1024, 4 * 1024 * 1024,
                             OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
    if (!o.ar) {
        snprintf(ctx->err, ctx->errsz, "%s: libotf2 cannot create the archive", tmp);
        rc = RP_EIO;
        goto out;
    }
    if (OTF2_Archive_SetFlushCallbacks(o.ar, &flush_cbs, NULL) != OTF2_SUCCESS ||
        OTF2_Archive_SetSerialCollectiveCallbacks(o.ar) != OTF2_SUCCESS ||
        OTF2_Archive_OpenEvtFiles(o.ar) != OTF2_SUCCESS) {
        snprintf(ctx->err, ctx->errsz, "%s: libotf2 cannot open its event files", tmp);
        rc = RP_EIO;
        goto out;
    }
    if ((rc = rp_export_timeline(ctx, &ops, &o)) < 0)
        goto out;
    rc = RP_EIO;
    for (uint32_t i = 0; i < o.nloc; i++)
        if (o.locs[i].w && OTF2_Archive_CloseEvtWriter(o.ar, o.locs[i].w) != OTF2_SUCCESS)
            goto fail;
    if (OTF2_Archive_CloseEvtFiles(o.ar) != OTF2_SUCCESS ||
        OTF2_Archive_OpenDefFiles(o.ar) != OTF2_SUCCESS)
        goto fail;
    for (uint32_t i = 0; i < o.nloc; i++) { /* empty local definitions: libotf2 wants them */
        OTF2_DefWriter *dw = OTF2_Archive_GetDefWriter(o.ar, i);
        if (!dw || OTF2_Archive_CloseDefWriter(o.ar, dw) != OTF2_SUCCESS)
            goto fail;
    }
    if (OTF2_Archive_CloseDefFiles(o.ar) != OTF2_SUCCESS || (rc = write_defs(&o, names)) < 0)
        goto fail;
    OTF2_ErrorCode ce = OTF2_Archive_Close(o.ar);
    o.ar = NULL;
    if (ce != OTF2_SUCCESS)
        goto fail;
    if (rename(tmp, ctx->output) != 0) {
        snprintf(ctx->err, ctx->errsz, "%s: cannot rename %s to it: %s", ctx->output, tmp,
                 strerror(errno));
        rc = RP_EIO;
        goto out;
    }
    tmp[0] = 0;
    if (o.clamped)
        fprintf(stderr,
                "rankprof: otf2: %llu timestamps written at their thread's previous one (a "
                "thread's mapped clock may not go backwards)\n",
                (unsigned long long)o.clamped);
    rc = 0;
    goto out;
fail:
    if (!ctx->err[0])
        snprintf(ctx->err, ctx->errsz, "%s: libotf2 failed writing the archive", tmp);
    rc = RP_EIO;
out:
    if (o.ar)
        OTF2_Archive_Close(o.ar);
    if (rc < 0 && tmp[0])
        remove_tree(tmp);
    rp_clockmap_free(&o.cm);
    free(o.grps);
    for (uint32_t i = 0; i < o.nloc; i++)
        free(o.locs[i].done);
    free(o.locs);
    free(o.reg);
    free(o.node);
    free(o.proc_grp);
    free(o.msg);
    rp_export_names_free(p, names);
    return rc;
}

#endif /* RP_HAVE_OTF2 */

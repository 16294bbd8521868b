// SPDX-License-Identifier: MIT
/*
 * seq.c - sequence diagrams (seq.h), PlantUML or Mermaid.
 *
 * One streamed pass over the spans (spanwalk.h) turns the events of the
 * chosen threads, classes and time window into messages:
 *
 *     span / event                     message(s)
 *     lock-hold without a wait         thread -> lock   "acquire"
 *     lock-wait then lock-hold         thread -> lock   "request"
 *                                      lock  --> thread "grant after <wait>"
 *     lock-wait with the failed ARG    lock  --> thread "fail after <wait>"
 *     end of a lock-hold               thread -> lock   "release, held <hold>"
 *     io span (ARG: device, bytes)     thread -> device "<name> @0xADDR N B"
 *                                      device --> thread "done in <dur>"
 *     instant of class timer           timer -> thread  "<name>"
 *     instant of class user            a note over the thread
 *     func span of func_tid            caller -> callee "call", callee --> caller
 *     MPI send (librankprof-mpi)       thread -> peer   "<call> tag T, N B"
 *     MPI receive, or a wait or test   peer  --> thread "<call> tag T, N B"
 *     completing receives              (peer: the peer rank's main thread, or
 *                                      "rank R" when it is not in the run)
 *
 * Spans are reported when they end, on their own thread, so messages do not
 * arrive in time order across threads.  They go into a max-heap that keeps
 * the max_messages earliest ones (memory is bounded by the cap, whatever the
 * trace's length); the heap is then sorted by (time, arrival).  A pass over
 * the sorted messages adds the cross-thread wake-ups: a grant to thread B
 * after a wait, when the lock's last release was by thread A != B, is
 * preceded by A -> B "wakes via <lock>".  Lifelines are declared in the order
 * threads, locks, devices, timers, procedures, each by first appearance.
 */
#include "seq.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/profile.h"
#include "common/array.h"
#include "common/error.h"
#include "export.h"
#include "analyze/lockprof.h"
#include "analyze/spanwalk.h"
#include "report/clockmap.h"
#include "report/util.h"
#include "trace/format.h"

#define SEQ_DEFAULT_MAX 400
#define SEQ_NAME_MAX    96 /* bytes of a lifeline or message text */

enum mtype {
    M_ACQ,
    M_REQ,
    M_GRANT,
    M_FAIL,
    M_REL,
    M_WAKE,
    M_IO,
    M_IO_DONE,
    M_TIMER,
    M_MARK,
    M_CALL,
    M_RET,
    M_MSEND, /* peer_tid: the peer rank, arg: tag << 32 | bytes */
    M_MRECV
};

struct msg {
    uint64_t t, seq;
    uint64_t dur, arg;
    uint32_t tid, peer_tid; /* peer: the woken thread of M_WAKE */
    uint32_t node;          /* the lock, device, timer, mark or callee node */
    uint32_t from_node;     /* M_CALL/M_RET: the caller (0 = the thread) */
    uint8_t type, has_arg;
};

/* Lifeline kinds, in declaration order. */
enum pkind { P_THREAD, P_LOCK, P_DEVICE, P_TIMER, P_FUNC, P_RANK };

struct part {
    uint8_t kind;
    uint32_t tid; /* P_THREAD */
    char name[SEQ_NAME_MAX];
    uint32_t first;        /* index of the first message that uses it */
    uint32_t last_rel_tid; /* P_LOCK: thread of the last release (0 = none) */
};

/* Per thread: the last granted wait and the hold that followed it. */
struct grant {
    uint32_t tid;
    int pending;        /* a wait was granted, its hold not yet begun */
    uint32_t wait_node; /* that wait */
    uint32_t hold_node; /* the hold that followed the last grant */
    uint64_t hold_start;
};

struct seq {
    const struct rp_profile *p;
    const struct rp_seq_opts *o;
    uint64_t from, to; /* window in ticks, inclusive */
    struct msg *heap;  /* max-heap on (t, seq), at most cap entries */
    uint32_t n, cap;
    uint64_t seq;
    uint64_t cut;      /* messages that did not fit */
    uint64_t cut_from; /* earliest time among them */
    struct part *parts;
    uint32_t nparts, capparts;
    struct grant *grants; /* per thread, see on_begin */
    uint32_t ngrants;
    struct mpis *mpis; /* per thread: its open MPI span's ARGs (on_arg) */
    uint32_t nmpis, capmpis;
    struct rp_clockmap cm; /* a run's files: message times on one axis */
};

/* A thread's open MPI span: its tag and the receives it completed. */
struct mpis {
    uint32_t tid, tag, ndone, capdone;
    int in_done; /* a RECVD's STATUS and BYTES follow */
    struct {
        uint32_t src, tag;
        uint64_t bytes;
    } * done;
};

int rp_seq_parse_classes(const char *s, unsigned *out, char *err, size_t errsz)
{
    static const char *const names[] = {"lock", "io", "timer", "user", "func", "mpi"};
    unsigned m = 0;
    while (*s) {
        size_t n = strcspn(s, ",");
        unsigned k = 0;
        if (n == 3 && !strncmp(s, "all", 3))
            m |= RP_SEQ_ALL;
        else {
            while (k < 6 && (strlen(names[k]) != n || strncmp(s, names[k], n)))
                k++;
            if (k == 6) {
                snprintf(err, errsz, "unknown class '%.*s' (lock, io, timer, user, func, mpi, all)",
                         (int)n, s);
                return RP_EINVAL;
            }
            m |= 1u << k;
        }
        s += n;
        if (*s == ',')
            s++;
    }
    *out = m;
    return 0;
}

/* ---- the bounded heap ------------------------------------------------------ */

static inline int later(const struct msg *a, const struct msg *b)
{
    return a->t != b->t ? a->t > b->t : a->seq > b->seq;
}

static void heap_up(struct msg *h, uint32_t i)
{
    while (i > 0) {
        uint32_t up = (i - 1) / 2;
        if (!later(&h[i], &h[up]))
            break;
        struct msg x = h[i];
        h[i] = h[up];
        h[up] = x;
        i = up;
    }
}

static void heap_down(struct msg *h, uint32_t n, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < n && later(&h[l], &h[m]))
            m = l;
        if (r < n && later(&h[r], &h[m]))
            m = r;
        if (m == i)
            return;
        struct msg x = h[i];
        h[i] = h[m];
        h[m] = x;
        i = m;
    }
}

static void note_cut(struct seq *s, uint64_t t)
{
    if (!s->cut++ || t < s->cut_from)
        s->cut_from = t;
}

/* Keeps m if it is among the cap earliest messages so far. */
static void emit(struct seq *s, struct msg m)
{
    if (s->cm.n > 1) { /* a run's files: ticks of the one axis (clockmap.h) */
        double v = (double)s->p->first_tick +
                   rp_clockmap_ns(&s->cm, m.t) / (s->p->ns_per_tick > 0 ? s->p->ns_per_tick : 1);
        m.t = v < 1.8e19 ? (uint64_t)v : UINT64_MAX;
    }
    if (m.t < s->from || m.t > s->to)
        return;
    m.seq = s->seq++;
    if (s->n < s->cap) {
        s->heap[s->n] = m;
        heap_up(s->heap, s->n++);
        return;
    }
    if (!later(&s->heap[0], &m)) { /* m is the latest: it is cut */
        note_cut(s, m.t);
        return;
    }
    note_cut(s, s->heap[0].t);
    s->heap[0] = m;
    heap_down(s->heap, s->n, 0);
}

static int cmp_msg(const void *x, const void *y)
{
    const struct msg *a = x, *b = y;
    return later(a, b) ? 1 : later(b, a) ? -1 : 0;
}

/* ---- spans to messages ----------------------------------------------------- */

static int want_tid(const struct seq *s, uint32_t tid)
{
    if (!s->o->ntids)
        return 1;
    for (unsigned i = 0; i < s->o->ntids; i++)
        if (rp_tid_match(s->o->tids[i], tid)) /* a tid: every thread that had it */
            return 1;
    return 0;
}

/* Whether two lock nodes are the same lock: the same name (the wait and
 * hold nodes of an address, or of named lock sites). */
static int same_lock(const struct seq *s, uint32_t a, uint32_t b)
{
    char ba[512], bb[512];
    return !strcmp(rp_lock_display_name(&s->p->nodes[a], ba, sizeof(ba)),
                   rp_lock_display_name(&s->p->nodes[b], bb, sizeof(bb)));
}

/* The grant state of thread tid, created if new; NULL when out of memory. */
static struct grant *grant_of(struct seq *s, uint32_t tid)
{
    for (uint32_t i = 0; i < s->ngrants; i++)
        if (s->grants[i].tid == tid)
            return &s->grants[i];
    struct grant *ng = realloc(s->grants, (s->ngrants + 1) * sizeof(*ng));
    if (!ng)
        return NULL;
    s->grants = ng;
    ng = &s->grants[s->ngrants++];
    memset(ng, 0, sizeof(*ng));
    ng->tid = tid;
    return ng;
}

/*
 * A granted wait's hold is the next span its thread begins, if that is a
 * hold of the same lock (for pthread locks it begins at the grant's tick;
 * for named lock sites a moment later).  Such a hold draws no "acquire":
 * the grant said it.  Returns 0 or RP_ENOMEM.
 */
static int on_begin(void *ctx, const struct rp_sw_span *sp)
{
    struct seq *s = ctx;
    struct grant *g = grant_of(s, sp->tid);
    if (!g)
        return RP_ENOMEM;
    if (g->pending && s->p->nodes[sp->id].kind == RP_KIND_LOCK_HOLD &&
        same_lock(s, g->wait_node, sp->id)) {
        g->hold_node = sp->id;
        g->hold_start = sp->start;
    }
    g->pending = 0;
    return 0;
}

static int granted(struct seq *s, const struct rp_sw_span *sp)
{
    struct grant *g = grant_of(s, sp->tid);
    return g && g->hold_node == sp->id && g->hold_start == sp->start;
}

/* Whether n is an MPI call of librankprof-mpi.  Cannot fail. */
static int is_mpi(const struct rp_node *n)
{
    return n->kind == RP_KIND_WAIT && n->name && !strncmp(n->name, "MPI_", 4) && n->file &&
           !strcmp(n->file, "mpi");
}

/* The MPI state of thread tid, made if new; NULL when out of memory. */
static struct mpis *mpis_of(struct seq *s, uint32_t tid)
{
    for (uint32_t i = 0; i < s->nmpis; i++)
        if (s->mpis[i].tid == tid)
            return &s->mpis[i];
    if (rp_grow(&s->mpis, &s->capmpis, s->nmpis + 1, sizeof(*s->mpis), 8) < 0)
        return NULL;
    memset(&s->mpis[s->nmpis], 0, sizeof(s->mpis[0]));
    s->mpis[s->nmpis].tid = tid;
    return &s->mpis[s->nmpis++];
}

/* An ARG of an open MPI span (format.h rp_mpi_arg): its tag, the
 * receives it completed.  Returns 0 or RP_ENOMEM. */
static int on_arg(void *ctx, const struct rp_sw_span *sp, uint64_t v)
{
    struct seq *s = ctx;
    if (!(s->o->classes & RP_SEQ_MPI) || !is_mpi(&s->p->nodes[sp->id]) || !want_tid(s, sp->tid))
        return 0;
    struct mpis *ms = mpis_of(s, sp->tid);
    if (!ms)
        return RP_ENOMEM;
    uint64_t val = RP_MPI_ARG_VAL(v);
    switch (RP_MPI_ARG_TYPE(v)) {
    case RP_MPI_ARG_TAG:
        ms->tag = (uint32_t)val;
        break;
    case RP_MPI_ARG_RECVD:
    case RP_MPI_ARG_STATUS: /* a RECVD's, or MPI_Sendrecv's own receive */
        if (RP_MPI_ARG_TYPE(v) == RP_MPI_ARG_RECVD || !ms->in_done) {
            if (rp_grow(&ms->done, &ms->capdone, ms->ndone + 1, sizeof(*ms->done), 4) < 0)
                return RP_ENOMEM;
            ms->done[ms->ndone].src = 0xffffffu;
            ms->done[ms->ndone].tag = 0;
            ms->done[ms->ndone++].bytes = 0;
            ms->in_done = 1;
        }
        if (RP_MPI_ARG_TYPE(v) == RP_MPI_ARG_STATUS) {
            ms->done[ms->ndone - 1].src = (uint32_t)(val >> 32) & 0xffffffu;
            ms->done[ms->ndone - 1].tag = (uint32_t)val;
        }
        break;
    case RP_MPI_ARG_BYTES:
        if (ms->ndone)
            ms->done[ms->ndone - 1].bytes = val;
        ms->in_done = 0;
        break;
    default:
        break;
    }
    return 0;
}

/*
 * The messages of an ended MPI span: a send's to its peer rank when it
 * begins, a receive's from its peer when it ends, and one from each
 * source of the receives a wait or test completed (format.h
 * rp_mpi_arg; the last ARG is the peer and bytes).  Returns 0 or
 * RP_ENOMEM.
 */
static int mpi_msgs(struct seq *s, const struct rp_sw_span *sp)
{
    const char *nm = s->p->nodes[sp->id].name;
    struct mpis *ms = mpis_of(s, sp->tid);
    if (!ms)
        return RP_ENOMEM;
    uint32_t peer = (uint32_t)(sp->arg >> 32) & 0xfffffffu;
    uint64_t bytes = sp->arg & 0xffffffffu;
    struct msg m = {.tid = sp->tid, .node = sp->id, .dur = sp->dur, .peer_tid = peer};
    int send = !strcmp(nm, "MPI_Send") || !strcmp(nm, "MPI_Ssend") || !strcmp(nm, "MPI_Isend") ||
               !strcmp(nm, "MPI_Sendrecv");
    if (sp->has_arg && peer != 0xfffffffu && (send || !strcmp(nm, "MPI_Recv"))) {
        m.t = send ? sp->start : sp->end;
        m.type = send ? M_MSEND : M_MRECV;
        m.arg = (uint64_t)ms->tag << 32 | bytes;
        emit(s, m);
    }
    for (uint32_t i = 0; i < ms->ndone; i++) {
        if (ms->done[i].src == 0xffffffu)
            continue;
        m.t = sp->end;
        m.type = M_MRECV;
        m.peer_tid = ms->done[i].src;
        m.arg = (uint64_t)ms->done[i].tag << 32 | (ms->done[i].bytes & 0xffffffffu);
        emit(s, m);
    }
    ms->ndone = 0;
    ms->tag = 0;
    ms->in_done = 0;
    return 0;
}

static int on_end(void *ctx, const struct rp_sw_span *sp)
{
    struct seq *s = ctx;
    const struct rp_node *n = &s->p->nodes[sp->id];
    unsigned cls = s->o->classes;
    struct msg m = {.tid = sp->tid, .node = sp->id, .dur = sp->dur};

    if (!want_tid(s, sp->tid))
        return 0;
    switch (n->kind) {
    case RP_KIND_LOCK_HOLD:
        if (!(cls & RP_SEQ_LOCK))
            return 0;
        /* after a wait, the wait's grant says it; alone, the hold is an acquire */
        m.t = sp->start;
        m.type = M_ACQ;
        if (!granted(s, sp))
            emit(s, m);
        m.t = sp->end;
        m.type = M_REL;
        emit(s, m);
        return 0;
    case RP_KIND_LOCK_WAIT:
        if (!(cls & RP_SEQ_LOCK))
            return 0;
        m.t = sp->start;
        m.type = M_REQ;
        emit(s, m);
        m.t = sp->end;
        m.type = sp->has_arg && sp->arg == RP_ARG_LOCK_FAILED ? M_FAIL : M_GRANT;
        emit(s, m);
        if (m.type == M_GRANT) {
            struct grant *g = grant_of(s, sp->tid);
            if (!g)
                return RP_ENOMEM;
            g->pending = 1;
            g->wait_node = sp->id;
        }
        return 0;
    case RP_KIND_IO:
        if (!(cls & RP_SEQ_IO))
            return 0;
        m.t = sp->start;
        m.type = M_IO;
        m.arg = sp->arg;
        m.has_arg = (uint8_t)sp->has_arg;
        emit(s, m);
        m.t = sp->end;
        m.type = M_IO_DONE;
        emit(s, m);
        return 0;
    case RP_KIND_FUNC:
        if (!(cls & RP_SEQ_FUNC) || sp->tid != s->o->func_tid)
            return 0;
        m.from_node = sp->parent && s->p->nodes[sp->parent].kind == RP_KIND_FUNC ? sp->parent : 0;
        m.t = sp->start;
        m.type = M_CALL;
        emit(s, m);
        m.t = sp->end;
        m.type = M_RET;
        emit(s, m);
        return 0;
    case RP_KIND_WAIT:
        return (cls & RP_SEQ_MPI) && is_mpi(n) ? mpi_msgs(s, sp) : 0;
    default:
        return 0;
    }
}

static int on_instant(void *ctx, uint32_t tid, uint32_t id, uint64_t ticks, int64_t value,
                      int counter, uint32_t parent)
{
    struct seq *s = ctx;
    const struct rp_node *n = &s->p->nodes[id];
    (void)parent;
    if (counter || !want_tid(s, tid))
        return 0;
    struct msg m = {.t = ticks, .tid = tid, .node = id, .arg = (uint64_t)value, .has_arg = 1};
    if (n->cls == RP_CLASS_TIMER && (s->o->classes & RP_SEQ_TIMER))
        m.type = M_TIMER;
    else if (n->cls != RP_CLASS_TIMER && (s->o->classes & RP_SEQ_USER))
        m.type = M_MARK;
    else
        return 0;
    emit(s, m);
    return 0;
}

/* ---- lifelines --------------------------------------------------------------- */

/* Copies src into dst (SEQ_NAME_MAX bytes) keeping only characters that are
 * plain text in both languages: quotes, backslashes, ';', '#', ':', '<',
 * '>' and control characters become '_', so no name can end a statement,
 * start an escape or markup, or break a line. */
static void clean(char *dst, const char *src)
{
    size_t i = 0;
    for (; src && src[i] && i < SEQ_NAME_MAX - 1; i++) {
        unsigned char c = (unsigned char)src[i];
        dst[i] = c < 0x20 || c == 0x7f || strchr("\"\\;#:<>{}", c) ? '_' : (char)c;
    }
    dst[i] = 0;
}

static void node_label(const struct seq *s, uint32_t id, char *out)
{
    char buf[512];
    const struct rp_node *n = &s->p->nodes[id];
    if (n->kind == RP_KIND_LOCK_WAIT || n->kind == RP_KIND_LOCK_HOLD)
        clean(out, rp_lock_display_name(n, buf, sizeof(buf)));
    else
        clean(out, rp_node_name(s->p, n, buf, sizeof(buf)));
}

/* The lifeline (kind, tid or node name), added if new; -1 when out of memory. */
static int part_of(struct seq *s, uint8_t kind, uint32_t tid, uint32_t node, uint32_t msg_idx)
{
    char name[SEQ_NAME_MAX];
    if (kind == P_THREAD) {
        const char *tn = NULL;
        for (uint32_t i = 0; i < s->p->n_threads; i++)
            if (s->p->threads[i].tid == tid)
                tn = s->p->threads[i].name;
        char buf[SEQ_NAME_MAX + 40], tb[24];
        if (tid) /* tid 0: the lifeline an empty diagram's note needs */
            snprintf(buf, sizeof(buf), "T%s%s%s", rp_tid_str(tid, tb, sizeof(tb)),
                     tn && *tn ? " " : "", tn ? tn : "");
        else
            snprintf(buf, sizeof(buf), "rankprof");
        clean(name, buf);
    } else if (kind == P_RANK) { /* node: the rank */
        snprintf(name, sizeof(name), "rank %u", node);
    } else {
        node_label(s, node, name);
    }
    for (uint32_t i = 0; i < s->nparts; i++)
        if (s->parts[i].kind == kind && !strcmp(s->parts[i].name, name))
            return (int)i;
    if (s->nparts == s->capparts) {
        uint32_t ncap = s->capparts ? s->capparts * 2 : 32;
        struct part *np = realloc(s->parts, ncap * sizeof(*np));
        if (!np)
            return -1;
        s->parts = np;
        s->capparts = ncap;
    }
    struct part *pt = &s->parts[s->nparts];
    memset(pt, 0, sizeof(*pt));
    pt->kind = kind;
    pt->tid = tid;
    pt->first = msg_idx;
    memcpy(pt->name, name, sizeof(name));
    return (int)s->nparts++;
}

/* The lifelines a message goes from and to (to = -2 for a note). */
static int ends_of(struct seq *s, const struct msg *m, uint32_t idx, int *from, int *to)
{
    int th = part_of(s, P_THREAD, m->tid, 0, idx), other = -2;
    switch (m->type) {
    case M_ACQ:
    case M_REQ:
    case M_GRANT:
    case M_FAIL:
    case M_REL:
        other = part_of(s, P_LOCK, 0, m->node, idx);
        break;
    case M_WAKE:
        other = part_of(s, P_THREAD, m->peer_tid, 0, idx);
        break;
    case M_IO:
    case M_IO_DONE:
        other = part_of(s, P_DEVICE, 0, m->node, idx);
        break;
    case M_TIMER:
        other = part_of(s, P_TIMER, 0, m->node, idx);
        break;
    case M_CALL:
    case M_RET:
        other = part_of(s, P_FUNC, 0, m->node, idx);
        if (m->from_node)
            th = part_of(s, P_FUNC, 0, m->from_node, idx);
        break;
    case M_MSEND:
    case M_MRECV: { /* the peer rank's main thread (tid = its pid), else "rank R" */
        uint32_t pid = 0;
        for (uint32_t i = 0; i < s->p->n_procs && !pid; i++)
            if (s->p->procs[i].has_rank && s->p->procs[i].rank == m->peer_tid)
                pid = s->p->procs[i].pid;
        for (uint32_t i = 0; pid && i < s->p->n_threads; i++)
            if (s->p->threads[i].tid == pid) {
                other = part_of(s, P_THREAD, pid, 0, idx);
                break;
            }
        if (other == -2)
            other = part_of(s, P_RANK, 0, m->peer_tid, idx);
        break;
    }
    case M_MARK:
        break;
    }
    if (th < 0 || other == -1)
        return RP_ENOMEM;
    int reply = m->type == M_GRANT || m->type == M_FAIL || m->type == M_IO_DONE ||
                m->type == M_TIMER || m->type == M_RET || m->type == M_MRECV;
    *from = reply ? other : th;
    *to = reply ? th : other;
    return 0;
}

static int cmp_part(const void *x, const void *y)
{
    const struct part *a = x, *b = y;
    if (a->kind != b->kind)
        return a->kind < b->kind ? -1 : 1;
    return a->first < b->first ? -1 : a->first > b->first;
}

/* ---- text ----------------------------------------------------------------------- */

static void fmt_dur(const struct seq *s, uint64_t ticks, char *buf, size_t bufsz)
{
    rp_fmt_dur((double)ticks * s->p->ns_per_tick, " ", buf, bufsz);
}

/* The message text, time first. */
static void msg_text(const struct seq *s, const struct msg *m, char *out, size_t outsz)
{
    char t[32], d[32], nm[SEQ_NAME_MAX];
    fmt_dur(s, m->t - s->p->first_tick, t, sizeof(t));
    fmt_dur(s, m->dur, d, sizeof(d));
    node_label(s, m->node, nm);
    switch (m->type) {
    case M_ACQ:
        snprintf(out, outsz, "%s acquire", t);
        break;
    case M_REQ:
        snprintf(out, outsz, "%s request", t);
        break;
    case M_GRANT:
        snprintf(out, outsz, "%s grant after %s", t, d);
        break;
    case M_FAIL:
        snprintf(out, outsz, "%s fail after %s", t, d);
        break;
    case M_REL:
        snprintf(out, outsz, "%s release, held %s", t, d);
        break;
    case M_WAKE:
        snprintf(out, outsz, "%s wakes via %s", t, nm);
        break;
    case M_IO:
        if (m->has_arg)
            snprintf(out, outsz, "%s %s @0x%" PRIx64 " %" PRIu64 " B", t, nm,
                     (m->arg >> 32) & 0xfffffffu, m->arg & 0xffffffffu);
        else
            snprintf(out, outsz, "%s %s", t, nm);
        break;
    case M_IO_DONE:
        snprintf(out, outsz, "%s done in %s", t, d);
        break;
    case M_TIMER:
        snprintf(out, outsz, "%s fire", t);
        break;
    case M_MARK:
        snprintf(out, outsz, "%s %s = %" PRId64, t, nm, (int64_t)m->arg);
        break;
    case M_CALL:
        snprintf(out, outsz, "%s call", t);
        break;
    case M_MSEND:
    case M_MRECV:
        snprintf(out, outsz, "%s %s tag %" PRIu32 ", %" PRIu64 " B", t, s->p->nodes[m->node].name,
                 (uint32_t)(m->arg >> 32), m->arg & 0xffffffffu);
        break;
    case M_RET:
        snprintf(out, outsz, "%s return after %s", t, d);
        break;
    }
}

static void put_header(FILE *f, const struct seq *s)
{
    char title[SEQ_NAME_MAX];
    clean(title, s->o->title ? s->o->title : "rankprof");
    if (s->o->format == RP_SEQ_PLANTUML)
        fprintf(f, "@startuml\ntitle %s\nskinparam maxMessageSize 300\n", title);
    else
        fprintf(f, "sequenceDiagram\n    %%%% %s\n", title);
}

static void put_part(FILE *f, const struct seq *s, const struct part *pt, uint32_t alias)
{
    static const char *const puml[] = {"participant", "entity",      "database",
                                       "control",     "participant", "participant"};
    if (s->o->format == RP_SEQ_PLANTUML)
        fprintf(f, "%s \"%s\" as P%" PRIu32 "\n", puml[pt->kind], pt->name, alias);
    else
        fprintf(f, "    participant P%" PRIu32 " as %s\n", alias, pt->name);
}

static void put_msg(FILE *f, const struct seq *s, uint32_t from, uint32_t to, int reply,
                    const char *text)
{
    if (s->o->format == RP_SEQ_PLANTUML)
        fprintf(f, "P%" PRIu32 " %s P%" PRIu32 " : %s\n", from, reply ? "-->" : "->", to, text);
    else
        fprintf(f, "    P%" PRIu32 "%sP%" PRIu32 ": %s\n", from, reply ? "-->>" : "->>", to, text);
}

static void put_note(FILE *f, const struct seq *s, uint32_t a, uint32_t b, const char *text)
{
    if (s->o->format == RP_SEQ_PLANTUML) {
        if (a == b)
            fprintf(f, "note over P%" PRIu32 " : %s\n", a, text);
        else
            fprintf(f, "note over P%" PRIu32 ", P%" PRIu32 " : %s\n", a, b, text);
    } else {
        if (a == b)
            fprintf(f, "    Note over P%" PRIu32 ": %s\n", a, text);
        else
            fprintf(f, "    Note over P%" PRIu32 ",P%" PRIu32 ": %s\n", a, b, text);
    }
}

/* Inserts the wake-ups into the sorted messages (out has room for 2n). */
static uint32_t add_wakeups(struct seq *s, const struct msg *in, uint32_t n, struct msg *out)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        const struct msg *m = &in[i];
        if (m->type == M_REL || m->type == M_GRANT) {
            int li = part_of(s, P_LOCK, 0, m->node, i);
            if (li >= 0 && m->type == M_REL)
                s->parts[li].last_rel_tid = m->tid;
            if (li >= 0 && m->type == M_GRANT && s->parts[li].last_rel_tid &&
                s->parts[li].last_rel_tid != m->tid) {
                out[k] = *m;
                out[k].type = M_WAKE;
                out[k].tid = s->parts[li].last_rel_tid;
                out[k].peer_tid = m->tid;
                k++;
            }
        }
        out[k++] = *m;
    }
    s->nparts = 0; /* the lifelines are declared from the final list */
    return k;
}

static int write_text(FILE *f, struct seq *s, const struct msg *ms, uint32_t n)
{
    int from, to;
    uint32_t *alias = NULL;
    int rc = RP_ENOMEM;

    for (uint32_t i = 0; i < n; i++)
        if (ends_of(s, &ms[i], i, &from, &to) < 0)
            goto out;
    if (!s->nparts && part_of(s, P_THREAD, 0, 0, 0) < 0)
        goto out; /* an empty diagram still needs a lifeline for its note */
    /* declaration order: by kind, then first use; alias = position */
    struct part *sorted = malloc(s->nparts * sizeof(*sorted));
    if (!sorted || !(alias = malloc(s->nparts * sizeof(*alias)))) {
        free(sorted);
        goto out;
    }
    memcpy(sorted, s->parts, s->nparts * sizeof(*sorted));
    qsort(sorted, s->nparts, sizeof(*sorted), cmp_part);
    put_header(f, s);
    for (uint32_t i = 0; i < s->nparts; i++) {
        put_part(f, s, &sorted[i], i + 1);
        for (uint32_t j = 0; j < s->nparts; j++)
            if (s->parts[j].kind == sorted[i].kind && !strcmp(s->parts[j].name, sorted[i].name))
                alias[j] = i + 1;
    }
    free(sorted);
    char text[2 * SEQ_NAME_MAX + 64];
    for (uint32_t i = 0; i < n; i++) {
        const struct msg *m = &ms[i];
        (void)ends_of(s, m, i, &from, &to); /* found above: cannot fail now */
        msg_text(s, m, text, sizeof(text));
        if (to == -2)
            put_note(f, s, alias[from], alias[from], text);
        else
            put_msg(f, s, alias[from], alias[to],
                    m->type == M_GRANT || m->type == M_FAIL || m->type == M_IO_DONE ||
                        m->type == M_RET || m->type == M_MRECV,
                    text);
    }
    if (!n || s->cut) {
        char d[32];
        if (s->cut) {
            fmt_dur(s, s->cut_from - s->p->first_tick, d, sizeof(d));
            snprintf(text, sizeof(text),
                     "cut: %" PRIu64 " more messages from %s on are not shown (the cap is %" PRIu32
                     ", see docs/sequence.md)",
                     s->cut, d, s->cap);
        } else {
            snprintf(text, sizeof(text), "no messages in this window, threads and classes");
        }
        put_note(f, s, 1, s->nparts, text);
    }
    fputs(s->o->format == RP_SEQ_PLANTUML ? "@enduml\n" : "", f);
    rc = 0;
out:
    free(alias);
    return rc;
}

/* Whether p defines a span or instant that can make a message of classes:
 * without one the pass over the events is not made (it would find
 * nothing).  Cannot fail. */
static int drawable(const struct rp_profile *p, unsigned classes)
{
    if (classes & RP_SEQ_FUNC)
        return 1;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        uint8_t k = p->nodes[i].kind;
        if (((k == RP_KIND_LOCK_WAIT || k == RP_KIND_LOCK_HOLD) && (classes & RP_SEQ_LOCK)) ||
            (k == RP_KIND_IO && (classes & RP_SEQ_IO)) ||
            (k == RP_KIND_INSTANT && (classes & (RP_SEQ_TIMER | RP_SEQ_USER))) ||
            ((classes & RP_SEQ_MPI) && is_mpi(&p->nodes[i])))
            return 1;
    }
    return 0;
}

/* The classes a diagram of so shows: the default (all but FUNC) when none
 * is named, FUNC added for a thread's procedures.  Cannot fail. */
static unsigned seq_classes(const struct rp_seq_opts *so)
{
    unsigned c = so->classes ? so->classes : RP_SEQ_ALL & ~RP_SEQ_FUNC;
    return so->func_tid ? c | RP_SEQ_FUNC : c;
}

/* A run's file k begins: its ticks follow.  Cannot fail. */
static int on_file(void *ctx, uint32_t k)
{
    rp_clockmap_select(&((struct seq *)ctx)->cm, k);
    return 0;
}

int rp_seq_write(FILE *out, const char *path, const struct rp_replay_opts *o,
                 const struct rp_profile *p, const struct rp_seq_opts *so, char *err, size_t errsz)
{
    struct rp_seq_opts opt = *so;
    struct seq s = {.p = p, .o = &opt};
    struct msg *sorted = NULL;
    int rc = RP_ENOMEM;

    err[0] = 0;
    opt.classes = seq_classes(&opt);
    s.cap = opt.max_messages ? opt.max_messages : SEQ_DEFAULT_MAX;
    double tpn = p->ns_per_tick > 0 ? 1.0 / p->ns_per_tick : 1.0;
    s.from = p->first_tick + (uint64_t)((double)opt.from_ns * tpn);
    s.to = opt.to_ns ? p->first_tick + (uint64_t)((double)opt.to_ns * tpn) : UINT64_MAX;
    if (!(s.heap = malloc(s.cap * sizeof(*s.heap))))
        goto out;
    struct rp_sw_ops ops = {
        .begin = on_begin, .end = on_end, .instant = on_instant, .arg = on_arg, .file = on_file};
    if (p->n_procs > 1 && (rc = rp_clockmap_profile(&s.cm, p, path, NULL, err, errsz)) < 0)
        goto out;
    rc = RP_ENOMEM;
    if (drawable(p, opt.classes) && (rc = rp_sw_file(path, o, p, &ops, &s, 0, err, errsz)) < 0)
        goto out;
    rc = RP_ENOMEM;
    qsort(s.heap, s.n, sizeof(*s.heap), cmp_msg);
    if (!(sorted = malloc((2 * (size_t)s.n + 1) * sizeof(*sorted))))
        goto out;
    uint32_t n = add_wakeups(&s, s.heap, s.n, sorted);
    rc = write_text(out, &s, sorted, n);
out:
    free(sorted);
    free(s.heap);
    free(s.parts);
    free(s.grants);
    for (uint32_t i = 0; i < s.nmpis; i++)
        free(s.mpis[i].done);
    free(s.mpis);
    rp_clockmap_free(&s.cm);
    return rc;
}

/* ---- the export formats ------------------------------------------------------- */

/* Parses a time like "250us", "12ms", "1.5s", "800ns" (no unit: ms) into
 * ns.  Returns 0 or RP_EINVAL. */
static int parse_time(const char *v, uint64_t *ns)
{
    char *end;
    double x = strtod(v, &end);
    double unit = 1e6;
    if (end == v || !(x >= 0) || x > 1e12)
        return RP_EINVAL;
    if (!strcmp(end, "ns"))
        unit = 1;
    else if (!strcmp(end, "us"))
        unit = 1e3;
    else if (!strcmp(end, "s"))
        unit = 1e9;
    else if (*end && strcmp(end, "ms"))
        return RP_EINVAL;
    *ns = (uint64_t)(x * unit);
    return 0;
}

static int parse_u32(const char *v, uint32_t *out)
{
    char *end;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end || v[0] == '-' || x > UINT32_MAX)
        return RP_EINVAL;
    *out = (uint32_t)x;
    return 0;
}

/* Fills so from the export's -O parameters: from, to, threads, classes,
 * funcs, max.  Returns 0 or RP_EINVAL with ctx->err naming the parameter. */
static int seq_params(const struct rp_export_ctx *ctx, struct rp_seq_opts *so)
{
    const char *v;
    if ((v = rp_export_param(ctx, "from")) && parse_time(v, &so->from_ns) < 0)
        goto bad_from;
    if ((v = rp_export_param(ctx, "to")) && parse_time(v, &so->to_ns) < 0) {
        snprintf(ctx->err, ctx->errsz, "-O to=%s: expected a time like 20ms, 1.5s, 300us", v);
        return RP_EINVAL;
    }
    if ((v = rp_export_param(ctx, "threads"))) {
        while (*v) {
            char tid[16];
            size_t n = strcspn(v, ",");
            if (so->ntids == RP_SEQ_MAX_TIDS || n >= sizeof(tid))
                goto bad_threads;
            memcpy(tid, v, n);
            tid[n] = 0;
            if (parse_u32(tid, &so->tids[so->ntids++]) < 0)
                goto bad_threads;
            v += n + (v[n] == ',');
        }
    }
    if ((v = rp_export_param(ctx, "classes")) &&
        rp_seq_parse_classes(v, &so->classes, ctx->err, ctx->errsz) < 0)
        return RP_EINVAL;
    if ((v = rp_export_param(ctx, "funcs")) && parse_u32(v, &so->func_tid) < 0) {
        snprintf(ctx->err, ctx->errsz, "-O funcs=%s: expected a thread id", v);
        return RP_EINVAL;
    }
    if ((v = rp_export_param(ctx, "max")) &&
        (parse_u32(v, &so->max_messages) < 0 || !so->max_messages)) {
        snprintf(ctx->err, ctx->errsz, "-O max=%s: expected a positive number of messages", v);
        return RP_EINVAL;
    }
    return 0;
bad_from:
    snprintf(ctx->err, ctx->errsz, "-O from=%s: expected a time like 20ms, 1.5s, 300us", v);
    return RP_EINVAL;
bad_threads:
    snprintf(ctx->err, ctx->errsz, "-O threads=%s: expected up to %d thread ids, comma-separated",
             rp_export_param(ctx, "threads"), RP_SEQ_MAX_TIDS);
    return RP_EINVAL;
}

static int export_seq(FILE *out, const struct rp_export_ctx *ctx, enum rp_seq_format fmt)
{
    struct rp_seq_opts so = {.format = fmt, .title = rp_export_title(ctx)};
    int rc = seq_params(ctx, &so);
    if (rc < 0)
        return rc;
    return rp_seq_write(out, ctx->input, ctx->replay, ctx->p, &so, ctx->err, ctx->errsz);
}

int rp_export_plantuml(FILE *out, const struct rp_export_ctx *ctx)
{
    return export_seq(out, ctx, RP_SEQ_PLANTUML);
}

int rp_export_mermaid(FILE *out, const struct rp_export_ctx *ctx)
{
    return export_seq(out, ctx, RP_SEQ_MERMAID);
}

int rp_seq_export_drawable(const struct rp_export_ctx *ctx)
{
    char err[256];
    struct rp_export_ctx c = *ctx;
    struct rp_seq_opts so = {0};
    c.err = err; /* (a bad -O: the diagram itself says so) */
    c.errsz = sizeof(err);
    return seq_params(&c, &so) < 0 || drawable(ctx->p, seq_classes(&so));
}

// SPDX-License-Identifier: MIT
/*
 * export_perfetto.c - Perfetto's native protobuf trace (TrackEvent), for
 * ui.perfetto.dev and trace_processor: several times smaller and faster to
 * load than the Chrome JSON of the same trace.
 *
 * Encoded by hand; the field numbers are those of perfetto's
 * protos/perfetto/trace/ (trace.proto, trace_packet.proto,
 * track_event/{track_descriptor,process_descriptor,thread_descriptor,
 * counter_descriptor,track_event,debug_annotation}.proto,
 * interned_data/interned_data.proto).  The file is a Trace: a sequence of
 * `packet` fields (1), each a TracePacket:
 *
 *   1. track descriptors, on sequence 1: the process, every thread
 *      (parent the process) and, when first used, every counter (walked
 *      in parallel: first used in each chunk, so one may come again);
 *   2. per EVENTS chunk (one thread's), walked in parallel
 *      (export_tlpar.h), a trusted sequence of its own (2 + the chunk's
 *      number; with a span filter or a run's set of files, walked in
 *      order: per thread, 2 + its index in the profile): a first packet
 *      that clears its incremental state, makes the thread's track its
 *      events' default (TrackEventDefaults) and defines its incremental
 *      clock, then one packet per event: TrackEvent slice begin/end,
 *      instant or counter, at ns since the sequence's previous event; an
 *      event on the thread's own track names no track.  A slice begun in
 *      one chunk and ended in another is on the same track, where
 *      trace_processor matches its begin and end.
 *
 * Names are interned per sequence: the first packet of a sequence that
 * uses a span id carries an InternedData entry {iid = id, name}; categories
 * likewise with iid = kind + 1.  The sequence's first packet says
 * SEQ_INCREMENTAL_STATE_CLEARED, the events SEQ_NEEDS_INCREMENTAL_STATE,
 * as the format requires.
 *
 * Each packet is built in one buffer (export_pb.h), or, for most slices,
 * in place (slice_fast; walked in parallel, a run of them at once:
 * slices_run).  The packets are gathered into batches of BATCH bytes
 * (walked in parallel: a chunk's packets, compressed by the thread that
 * walked it, each timestamp handed to export_zpkt.h's compressor as its
 * packet is written), each
 * written as a zlib stream (export_zpkt.h: no match search,
 * the runs between timestamps copied from where they were last) as one
 * packet's `compressed_packets` (50), which trace_processor and the UI
 * inflate: the events of a trace repeat a few shapes, so a call (two
 * events, about 28 bytes plain) takes about 6 bytes.  -O compress=small
 * deflates them with libdeflate (level 1) instead: about a quarter of the
 * bytes for 1.7 times the CPU.  -O compress=0 writes the batches plain, for
 * readers without zlib.  Walked in order, the
 * batches are compressed by the ordered pool's threads (export_pool.h)
 * while the next ones are encoded, and written in order: the same bytes
 * with any number of threads, as the parallel walk's.  Memory: the packet
 * buffer, the pool's batches (or a batch per walking thread, and the
 * chunks in flight) and their compressed copies, a bit per id for each
 * sequence that uses it (in pages; per walking thread in parallel) and a
 * byte per id (per walking thread).
 */
#include <assert.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <libdeflate.h>

#include "common/array.h"
#include "common/compiler.h"
#include "common/error.h"
#include "report/clockmap.h"
#include "report/export.h"
#include "report/export_pb.h"
#include "report/export_pool.h"
#include "report/export_tlpar.h"
#include "report/export_zpkt.h"
#include "report/util.h"
#include "trace/format.h"

/* field numbers */
enum {
    TRACE_PACKET = 1,
    PKT_CLOCK_SNAPSHOT = 6,
    PKT_TIMESTAMP = 8,
    PKT_SEQ_ID = 10,
    PKT_TRACK_EVENT = 11,
    PKT_INTERNED = 12,
    PKT_SEQ_FLAGS = 13,
    PKT_COMPRESSED = 50,
    PKT_CLOCK_ID = 58,
    PKT_DEFAULTS = 59,
    DEF_CLOCK_ID = 58,
    DEF_TRACK_EVENT = 11,
    TED_TRACK_UUID = 11,
    CS_CLOCKS = 1,
    CLK_ID = 1,
    CLK_TIMESTAMP = 2,
    CLK_INCREMENTAL = 3,
    PKT_TRACK_DESC = 60,
    TD_UUID = 1,
    TD_NAME = 2,
    TD_PROCESS = 3,
    TD_THREAD = 4,
    TD_PARENT = 5,
    TD_COUNTER = 8,
    PD_PID = 1,
    PD_NAME = 6,
    THD_PID = 1,
    THD_TID = 2,
    THD_NAME = 5,
    TE_CATEGORY_IIDS = 3,
    TE_DEBUG = 4,
    TE_TYPE = 9,
    TE_NAME_IID = 10,
    TE_TRACK = 11,
    TE_NAME = 23,
    TE_CATEGORIES = 22,
    TE_COUNTER_VALUE = 30,
    DA_UINT = 3,
    DA_STRING = 6,
    DA_NAME = 10,
    ID_CATEGORIES = 1,
    ID_NAMES = 2,
    IN_IID = 1,
    IN_NAME = 2,
};
enum { TYPE_SLICE_BEGIN = 1, TYPE_SLICE_END = 2, TYPE_INSTANT = 3, TYPE_COUNTER = 4 };
enum { SEQ_CLEARED = 1, SEQ_NEEDS = 2 };

#define SEQ_ID 1u
/* The sequence's own incremental clock (ids 64-127 are sequence-scoped): an
 * event's timestamp is ns since the previous one on it; BOOTTIME, the
 * trace's clock, for an event earlier than that one (absolute). */
#define CLOCK_DELTA 64u
#define CLOCK_BOOT  6u
/* Track uuids are small, so that each event's track_uuid is one or two
 * bytes: the process 1, threads 2.. in the order the profile lists them,
 * counters after them. */
#define PROC_UUID 1ull
/* plain bytes of packets per compressed_packets */
#define BATCH (1u << 20)

/*
 * A packet sequence: each thread's events are on a sequence of their own
 * whose default track is the thread's, with its own incremental clock and
 * interned names; sequence 1 holds the descriptors and the events of a
 * thread the profile does not list.
 */
#define PAGE_IDS 4096u /* ids per page of interned bits */
struct pseq {
    uint32_t id;      /* trusted_packet_sequence_id */
    int started;      /* its first packet (state cleared, defaults, clocks) written */
    uint64_t track;   /* its default track, 0 for none */
    uint64_t last_ns; /* its incremental clock's value: its latest event's ns */
    uint8_t cat_sent[RP_KIND_MAX + 1];
    uint8_t **pages; /* names interned on it, a bit per id, PAGE_IDS ids per page made when
                        first used (a thread pays for the ids it uses) */
};

struct perfetto {
    FILE *out;
    const struct rp_export_ctx *ctx;
    const struct rp_profile *p;
    char **names;
    uint8_t *interned; /* per id: bit 1 counter track sent; in a job, bit 2: its name
                          and category interned on the job's sequence, bits 3-7 the
                          category + 1 */
    struct pseq *seqs; /* [0]: sequence 1; [1 + i]: p->threads[i]'s */
    uint32_t npages;   /* pages of a sequence's interned bits */
    uint32_t hit;      /* index in p->threads of the last thread looked up */
    struct pb pb;
    int compress; /* batches of packets: 0 plain, 1 export_zpkt.h's, 2 libdeflate's */
    /* the batch being filled: the pool's (export_pool.h), which deflates
     * and writes the batches on its threads, in order */
    struct rp_xpool *pool;
    uint8_t *batch;
    size_t nbatch, capbatch;
    struct rp_zpkt *z[9];                /* per pool worker, made on first use */
    struct libdeflate_compressor *zd[9]; /* likewise, for -O compress=small */
    struct rp_clockmap cm;               /* the run's one time axis (clockmap.h) */
    struct rp_clockmap_fast cmf;         /* its current file's, per event */
    uint64_t *hold_tracks;               /* lock-hold tracks described: uuid + 1, open addressing */
    uint32_t nhold, caphold;
    /* a parallel walk's encoder (export_tlpar.h; pool NULL): the job's
     * sequence, where its compressed batches go, and the ids whose
     * interned bits the job set (cleared for the next) */
    struct pseq *job, jq;
    struct rp_xbuf *jout;
    uint32_t *touched;
    uint32_t ntouched, captouched;
    /* its batch's timestamps, marked for its compressor z[0] as the
     * packets are written (export_zpkt.h, rp_zpkt_mark: its stream open in
     * jout, from zat, when zopen): where the last slice_fast packet ended
     * (0: none last) and the key of the bytes after its timestamp (its
     * TrackEvent) */
    int zopen;
    size_t zat, fast_end;
    uint64_t fast_key;
    uint64_t jhead; /* the job's seq_head (its length jhead_n, 0: none) */
    unsigned jhead_n;
};

/* Starts a TracePacket on sequence seq (the Trace's `packet` field). */
static void packet_begin_on(struct perfetto *f, uint32_t seq)
{
    pb_reset(&f->pb);
    pb_open(&f->pb, TRACE_PACKET);
    pb_uint(&f->pb, PKT_SEQ_ID, seq);
}

/* Starts a TracePacket on sequence 1. */
static void packet_begin(struct perfetto *f)
{
    packet_begin_on(f, SEQ_ID);
}

/* Whether id's name was interned on q.  Cannot fail. */
static inline int name_sent(const struct pseq *q, uint32_t id)
{
    const uint8_t *pg = q->pages[id / PAGE_IDS];
    return pg && pg[id % PAGE_IDS / 8] >> (id % 8) & 1;
}

/* Notes that a job set id's bits (name interned, counter described), to
 * clear them for the next job (enc_start).  Returns 0 or RP_ENOMEM. */
static int touch(struct perfetto *f, uint32_t id)
{
    if (!f->job)
        return 0;
    if (rp_grow(&f->touched, &f->captouched, f->ntouched + 1, sizeof(*f->touched), 64) < 0)
        return RP_ENOMEM;
    f->touched[f->ntouched++] = id;
    return 0;
}

/* Marks id's name interned on q.  Returns 0 or RP_ENOMEM. */
static int name_set(struct perfetto *f, struct pseq *q, uint32_t id)
{
    uint8_t **pg = &q->pages[id / PAGE_IDS];
    if (!*pg && !(*pg = calloc(PAGE_IDS / 8, 1)))
        return RP_ENOMEM;
    if (touch(f, id) < 0)
        return RP_ENOMEM;
    (*pg)[id % PAGE_IDS / 8] |= (uint8_t)(1u << (id % 8));
    return 0;
}

enum { HEAD = 16 }; /* room for a compressed packet's head before the deflated bytes */

/* Opens the stream of a parallel walk's encoder's batch (compress 1): the
 * batch's marks go to it as its packets are written, its bytes at the end
 * of the job's output after HEAD bytes of room.  Returns 0 or RP_ENOMEM. */
static int zopen(struct perfetto *f)
{
    if (!f->z[0] && !(f->z[0] = rp_zpkt_alloc()))
        return RP_ENOMEM;
    struct rp_xbuf *out = f->jout;
    if (rp_xbuf_need(out, HEAD) < 0)
        return RP_ENOMEM;
    f->zat = out->n;
    out->n += HEAD;
    if (rp_zpkt_open(f->z[0], f->capbatch, out) < 0) {
        out->n = f->zat;
        return RP_ENOMEM;
    }
    f->zopen = 1;
    return 0;
}

/*
 * The pool's turning function (export_pool.h): the nb bytes of packets at
 * b as one packet of compressed_packets (a zlib stream by worker w's
 * compressor, export_zpkt.h), or as they are without compression.  Returns 0 or
 * RP_ENOMEM.
 */
static int batch_turn(void *arg, unsigned w, const uint8_t *b, size_t nb, struct rp_xbuf *out)
{
    struct perfetto *f = arg;
    uint8_t head[HEAD];
    size_t n = 0, at = out->n; /* (after what out holds: a job's output so far) */

    if (!f->compress) {
        if (rp_xbuf_need(out, nb) < 0)
            return RP_ENOMEM;
        memcpy(out->b + at, b, nb);
        out->n = at + nb;
        return 0;
    }
    if (w >= sizeof(f->z) / sizeof(f->z[0]))
        w = sizeof(f->z) / sizeof(f->z[0]) - 1;
    size_t zn;
    if (f->compress == 2) { /* a general compressor: half the bytes, three times the time */
        if (!f->zd[w] && !(f->zd[w] = libdeflate_alloc_compressor(1)))
            return RP_ENOMEM;
        size_t bound = libdeflate_zlib_compress_bound(f->zd[w], nb);
        if (rp_xbuf_need(out, HEAD + bound) < 0)
            return RP_ENOMEM;
        if (!(zn = libdeflate_zlib_compress(f->zd[w], b, nb, out->b + at + HEAD, bound)))
            return RP_ENOMEM; /* not reached: out has the bound's room */
    } else if (f->job) {      /* its stream, opened by its first mark (or now: none) */
        if (!f->zopen && zopen(f) < 0)
            return RP_ENOMEM;
        at = f->zat;
        rp_zpkt_close(f->z[0], b, nb, out);
        f->zopen = 0;
        zn = out->n - at - HEAD;
    } else {
        if (!f->z[w] && !(f->z[w] = rp_zpkt_alloc()))
            return RP_ENOMEM;
        out->n = at + HEAD;
        if (rp_zpkt_zlib(f->z[w], b, nb, out) < 0)
            return RP_ENOMEM;
        zn = out->n - at - HEAD;
    }
    /* Trace.packet (1) { compressed_packets (50): the deflated packets } */
    uint64_t inner = 2 + (uint64_t)zn, v;
    for (v = zn; v >= 0x80; v >>= 7)
        inner++;
    inner++;
    head[n++] = TRACE_PACKET << 3 | 2;
    for (v = inner; v >= 0x80; v >>= 7)
        head[n++] = (uint8_t)(v | 0x80);
    head[n++] = (uint8_t)v;
    head[n++] = (uint8_t)((PKT_COMPRESSED << 3 | 2) | 0x80); /* field 50: two bytes */
    head[n++] = (uint8_t)((PKT_COMPRESSED << 3 | 2) >> 7);
    for (v = zn; v >= 0x80; v >>= 7)
        head[n++] = (uint8_t)(v | 0x80);
    head[n++] = (uint8_t)v;
    memcpy(out->b + at + HEAD - n, head, n);
    memmove(out->b + at, out->b + at + HEAD - n, n + zn);
    out->n = at + n + zn;
    return 0;
}

/* Hands the batch to the pool (which deflates and writes it, in order;
 * a later call returns its error) and takes the next; for a parallel
 * walk's encoder, deflates it at the end of the job's output.  Returns 0,
 * RP_ENOMEM or RP_EIO. */
static int batch_flush(struct perfetto *f)
{
    if (!f->pool) {
        int rc = 0;
        if (f->nbatch && (rc = batch_turn(f, 0, f->batch, f->nbatch, f->jout)) < 0)
            f->jout->n = 0; /* (a job that failed writes nothing) */
        f->nbatch = f->fast_end = 0;
        f->zopen = 0;
        return rc;
    }
    int rc = rp_xpool_submit(f->pool, f->nbatch);
    f->nbatch = 0;
    f->batch = rp_xpool_batch(f->pool, &f->capbatch);
    return rc;
}

/* Closes the packet and writes it, or adds it to the batch.  RP_ENOMEM
 * (the encoder failed) or RP_EIO. */
static int packet_end(struct perfetto *f)
{
    pb_close(&f->pb);
    if (f->pb.bad)
        return RP_ENOMEM;
    if (f->nbatch + f->pb.n > f->capbatch) {
        int rc = batch_flush(f);
        if (rc < 0)
            return rc;
        if (f->pb.n > f->capbatch && !f->pool) { /* a huge packet (a long name) */
            uint8_t *b = realloc(f->batch, f->pb.n);
            if (!b)
                return RP_ENOMEM;
            f->batch = b;
            f->capbatch = f->pb.n;
        } else if (f->pb.n > f->capbatch) { /* likewise: a batch of its own */
            if (rp_xpool_reserve(f->pool, f->pb.n) < 0)
                return RP_ENOMEM;
            f->batch = rp_xpool_batch(f->pool, &f->capbatch);
        }
    }
    memcpy(f->batch + f->nbatch, f->pb.b, f->pb.n);
    f->nbatch += f->pb.n;
    f->fast_end = 0; /* (the next slice_fast packet's run has these bytes) */
    return 0;
}

/* Nanoseconds since the run's first event, to the nearest (halves up:
 * one addition and one conversion per event, not llround's dependent
 * chain); 0 before it or when not finite. */
static inline uint64_t ts_ns(struct perfetto *f, uint64_t ticks)
{
    double ns = rp_clockmap_fast_ns(&f->cm, &f->cmf, ticks) + 0.5;
    if (!(ns < 9e18)) /* not finite, or too late to be a time */
        return 0;
    return (uint64_t)(int64_t)ns; /* ns >= 0.5 */
}

/* A thread's track: 2 + its index in the profile (which lists every thread
 * the first pass saw, so every thread of this pass). */
static uint64_t thread_uuid(struct perfetto *f, uint32_t tid)
{
    const struct rp_profile *p = f->p;
    if (f->hit < p->n_threads && p->threads[f->hit].tid == tid)
        return 2 + f->hit;
    for (uint32_t i = 0; i < p->n_threads; i++)
        if (p->threads[i].tid == tid)
            return 2 + (f->hit = i);
    return PROC_UUID; /* not reached: both passes read the same file */
}

/* The first packet of sequence q: its incremental state cleared, its
 * defaults (the incremental clock, its track) and the incremental clock
 * at 0 = BOOTTIME 0.  Fails like packet_end. */
static int packet_end(struct perfetto *f);
static int seq_start(struct perfetto *f, struct pseq *q)
{
    packet_begin_on(f, q->id);
    pb_uint(&f->pb, PKT_SEQ_FLAGS, SEQ_CLEARED);
    pb_open(&f->pb, PKT_DEFAULTS);
    pb_uint(&f->pb, DEF_CLOCK_ID, CLOCK_DELTA);
    if (q->track) {
        pb_open(&f->pb, DEF_TRACK_EVENT);
        pb_uint(&f->pb, TED_TRACK_UUID, q->track);
        pb_close(&f->pb);
    }
    pb_close(&f->pb);
    pb_open(&f->pb, PKT_CLOCK_SNAPSHOT);
    pb_open(&f->pb, CS_CLOCKS);
    pb_uint(&f->pb, CLK_ID, CLOCK_DELTA);
    pb_uint(&f->pb, CLK_TIMESTAMP, 0);
    pb_uint(&f->pb, CLK_INCREMENTAL, 1);
    pb_close(&f->pb);
    pb_open(&f->pb, CS_CLOCKS);
    pb_uint(&f->pb, CLK_ID, CLOCK_BOOT);
    pb_uint(&f->pb, CLK_TIMESTAMP, 0);
    pb_close(&f->pb);
    pb_close(&f->pb);
    q->started = 1;
    return packet_end(f);
}

/* The sequence of thread tid's events, started (its first packet written)
 * if new; NULL with *rc set when that failed. */
static inline struct pseq *seq_of(struct perfetto *f, uint32_t tid, int *rc)
{
    if (likely(f->job && f->job->started)) /* a parallel walk's job: one thread's */
        return f->job;
    if (f->job) {
        if (unlikely(!f->job->started) && (*rc = seq_start(f, f->job)) < 0)
            return NULL;
        return f->job;
    }
    uint64_t u = thread_uuid(f, tid);
    struct pseq *q = &f->seqs[u == PROC_UUID ? 0 : u - 1];
    if (unlikely(!q->started) && (*rc = seq_start(f, q)) < 0)
        return NULL;
    return q;
}

/* A counter's track: after the threads'.  Cannot fail. */
static uint64_t counter_uuid(const struct perfetto *f, uint32_t id)
{
    return 2 + (uint64_t)f->p->n_threads + id;
}

/* The track of process pid: PROC_UUID for the profile's own, bit 61 and
 * the pid for a run's other processes (a merged profile).  Cannot fail. */
static uint64_t proc_uuid(const struct rp_profile *p, uint32_t pid)
{
    return pid == p->pid ? PROC_UUID : 1ull << 61 | pid;
}

/* A thread's TrackDescriptor.  Fails like packet_end. */
static int thread_track(struct perfetto *f, uint32_t tid, const char *name)
{
    char buf[64], tb[24];
    packet_begin(f);
    pb_open(&f->pb, PKT_TRACK_DESC);
    pb_uint(&f->pb, TD_UUID, thread_uuid(f, tid));
    uint32_t pid = rp_export_pid(f->p, tid);
    pb_uint(&f->pb, TD_PARENT, proc_uuid(f->p, pid));
    pb_open(&f->pb, TD_THREAD);
    pb_uint(&f->pb, THD_PID, pid);
    pb_uint(&f->pb, THD_TID, tid);
    if (rp_tid_gen(tid)) /* a reused kernel tid: the track's tid is the stream id */
        snprintf(buf, sizeof(buf), "%s (tid %s)", name && name[0] ? name : "thread",
                 rp_tid_str(tid, tb, sizeof(tb))),
            name = buf;
    else if (!name || !name[0])
        snprintf(buf, sizeof(buf), "thread %u", tid), name = buf;
    pb_str(&f->pb, THD_NAME, name);
    pb_close(&f->pb);
    pb_close(&f->pb);
    return packet_end(f);
}

/* A counter's track, the first time the counter is used. */
static int counter_track(struct perfetto *f, uint32_t id)
{
    if (f->interned[id] & 2)
        return 0;
    if (touch(f, id) < 0)
        return RP_ENOMEM;
    f->interned[id] |= 2;
    packet_begin(f);
    pb_open(&f->pb, PKT_TRACK_DESC);
    pb_uint(&f->pb, TD_UUID, counter_uuid(f, id));
    pb_uint(&f->pb, TD_PARENT, PROC_UUID);
    pb_str(&f->pb, TD_NAME, f->names[id]);
    pb_open(&f->pb, TD_COUNTER);
    pb_close(&f->pb);
    pb_close(&f->pb);
    return packet_end(f);
}

/*
 * The track of lock id's holds on thread tid (format 1.3: holds are
 * intervals that need not nest with the thread's slices, and a thread's
 * holds of one lock never overlap, recursion aside, which nests), described
 * the first time.  Its uuid: bit 62, the thread's index, the id.  Returns
 * the uuid, 0 when out of memory or the description failed to write.
 */
static uint64_t hold_track(struct perfetto *f, uint32_t tid, uint32_t id)
{
    uint64_t thr = thread_uuid(f, tid);
    uint64_t uuid = 1ull << 62 | (thr - 2) << 32 | id, k = uuid + 1;
    if ((f->nhold + 1) * 2 > f->caphold) {
        uint32_t ncap = f->caphold ? f->caphold * 2 : 64;
        uint64_t *nt = calloc(ncap, sizeof(*nt));
        if (!nt)
            return 0;
        for (uint32_t i = 0; i < f->caphold; i++)
            if (f->hold_tracks[i]) {
                uint32_t j = (uint32_t)rp_mix64(f->hold_tracks[i]) & (ncap - 1);
                while (nt[j])
                    j = (j + 1) & (ncap - 1);
                nt[j] = f->hold_tracks[i];
            }
        free(f->hold_tracks);
        f->hold_tracks = nt;
        f->caphold = ncap;
    }
    uint32_t i = (uint32_t)rp_mix64(k) & (f->caphold - 1);
    while (f->hold_tracks[i] && f->hold_tracks[i] != k)
        i = (i + 1) & (f->caphold - 1);
    if (f->hold_tracks[i])
        return uuid;
    f->hold_tracks[i] = k;
    f->nhold++;
    packet_begin(f);
    pb_open(&f->pb, PKT_TRACK_DESC);
    pb_uint(&f->pb, TD_UUID, uuid);
    pb_uint(&f->pb, TD_PARENT, thr);
    pb_str(&f->pb, TD_NAME, f->names[id]);
    pb_close(&f->pb);
    return packet_end(f) < 0 ? 0 : uuid;
}

/*
 * Starts an event packet at ticks: the sequence flags, then the interned
 * name and category of id (0: none) if this is their first use, then opens
 * the TrackEvent with its type and track.
 */
static void event_begin(struct perfetto *f, struct pseq *q, uint64_t ticks, uint32_t id,
                        unsigned type, uint64_t track)
{
    struct pb *pb = &f->pb;
    uint8_t kind = id ? f->p->nodes[id].kind : 0;
    unsigned cat = kind < RP_KIND_MAX ? kind : RP_KIND_MAX;

    packet_begin_on(f, q->id);
    uint64_t ns = ts_ns(f, ticks);
    if (ns >= q->last_ns) {
        pb_uint(pb, PKT_TIMESTAMP, ns - q->last_ns);
        q->last_ns = ns;
    } else { /* out of order (a lock hold, a filter's late begin): absolute */
        pb_uint(pb, PKT_TIMESTAMP, ns);
        pb_uint(pb, PKT_CLOCK_ID, CLOCK_BOOT);
    }
    pb_uint(pb, PKT_SEQ_FLAGS, SEQ_NEEDS);
    if (id && (!name_sent(q, id) || !q->cat_sent[cat])) {
        pb_open(pb, PKT_INTERNED);
        if (!q->cat_sent[cat]) {
            pb_open(pb, ID_CATEGORIES);
            pb_uint(pb, IN_IID, cat + 1);
            pb_str(pb, IN_NAME, rp_export_cat(kind));
            pb_close(pb);
            q->cat_sent[cat] = 1;
        }
        if (!name_sent(q, id)) {
            pb_open(pb, ID_NAMES);
            pb_uint(pb, IN_IID, id);
            pb_str(pb, IN_NAME, f->names[id]);
            pb_close(pb);
            if (name_set(f, q, id) < 0)
                pb->bad = 1; /* out of memory: packet_end says so */
        }
        pb_close(pb);
    }
    pb_open(pb, PKT_TRACK_EVENT);
    pb_uint(pb, TE_TYPE, type);
    if (track != q->track)
        pb_uint(pb, TE_TRACK, track);
    if (id && type != TYPE_COUNTER) {
        pb_uint(pb, TE_NAME_IID, id);
        pb_uint(pb, TE_CATEGORY_IIDS, cat + 1);
    }
}

/* Closes the TrackEvent and its packet; fails like packet_end. */
static int event_end(struct perfetto *f)
{
    pb_close(&f->pb); /* the TrackEvent */
    return packet_end(f);
}

/* A DebugAnnotation {name: v} on the open TrackEvent. */
static void debug_uint(struct pb *pb, const char *name, uint64_t v)
{
    pb_open(pb, TE_DEBUG);
    pb_str(pb, DA_NAME, name);
    pb_uint(pb, DA_UINT, v);
    pb_close(pb);
}

/* A varint at q (room for 10 bytes); returns the byte after it.  Cannot
 * fail. */
static inline uint8_t *put_varint(uint8_t *q, uint64_t v)
{
    for (; v >= 0x80; v >>= 7)
        *q++ = (uint8_t)(v | 0x80);
    *q++ = (uint8_t)v;
    return q;
}

/* A slice packet's bytes after its timestamp (slice_fast): the sequence
 * flags and the TrackEvent of type, with id's name and category (cat)
 * when id is set.  Returns the byte after them.  Cannot fail. */
static inline uint8_t *slice_tail(uint8_t *p, unsigned type, uint32_t id, unsigned cat)
{
    *p++ = PKT_SEQ_FLAGS << 3;
    *p++ = SEQ_NEEDS;
    *p++ = PKT_TRACK_EVENT << 3 | 2;
    uint8_t *te = p++; /* the TrackEvent's (one-byte) length */
    *p++ = TE_TYPE << 3;
    *p++ = (uint8_t)type;
    if (id) { /* (on the sequence's default track: the thread's) */
        *p++ = TE_NAME_IID << 3;
        p = put_varint(p, id);
        *p++ = TE_CATEGORY_IIDS << 3;
        *p++ = (uint8_t)(cat + 1);
    }
    *te = (uint8_t)(p - te - 1);
    return p;
}

/* slice_tail's bytes as whole words, for an id under 0x80 (or 0, an
 * end): the same bytes, two 8-byte stores and two bytes.  p needs 16 bytes
 * of room.  Returns the byte after them.  Cannot fail. */
static inline uint8_t *slice_tail_small(uint8_t *p, unsigned type, uint32_t id, unsigned cat)
{
    uint64_t tw = (uint64_t)(PKT_SEQ_FLAGS << 3) | (uint64_t)SEQ_NEEDS << 8 |
                  (uint64_t)(PKT_TRACK_EVENT << 3 | 2) << 16 | (uint64_t)(TE_TYPE << 3) << 32 |
                  (uint64_t)type << 40;
    if (!id) {
        tw |= (uint64_t)2 << 24;
        memcpy(p, &tw, 8);
        return p + 6;
    }
    tw |= (uint64_t)6 << 24 | (uint64_t)(TE_NAME_IID << 3) << 48 | (uint64_t)id << 56;
    memcpy(p, &tw, 8);
    p[8] = TE_CATEGORY_IIDS << 3;
    p[9] = (uint8_t)(cat + 1);
    return p + 10;
}

/* The head of an event packet on sequence seq up to its timestamp's
 * varint, as the bytes of *w from the first (the Trace's packet tag, a
 * one-byte length left 0, the sequence id, the timestamp's tag).  Returns
 * its length, 0 when it does not fit in a word.  Cannot fail. */
static inline unsigned seq_head(uint32_t seq, uint64_t *w)
{
    uint8_t b[16];
    uint8_t *p = b;
    *p++ = TRACE_PACKET << 3 | 2;
    *p++ = 0;
    *p++ = PKT_SEQ_ID << 3;
    p = put_varint(p, seq);
    *p++ = PKT_TIMESTAMP << 3;
    unsigned n = (unsigned)(p - b);
    *w = 0;
    for (unsigned i = 0; i < n && i < 8; i++)
        *w |= (uint64_t)b[i] << (8 * i);
    return n <= 8 ? n : 0;
}

/*
 * The packet of a slice's begin (id set) or end (id 0) whose names are
 * interned already and whose time is not before the previous event's: most
 * packets.  The same bytes as event_begin and event_end write, encoded
 * here at once (no nested length to move up) and appended to the batch.
 * Returns 1 when written, 0 when the packet is not such a one (the caller
 * writes it the long way), or packet_end's error.
 */
static inline __attribute__((always_inline)) int slice_fast(struct perfetto *f, struct pseq *q,
                                                            uint64_t ns, uint32_t id, unsigned type,
                                                            const int job)
{
    unsigned cat = 0;
    assert(!job == !f->job); /* (job: f->job as a constant) */
    if (ns < q->last_ns || !q->track)
        return 0;
    if (id && likely(f->interned[id] & 4)) { /* a job's: its name and category sent */
        cat = (f->interned[id] >> 3) - 1u;
    } else if (id) {
        uint8_t kind = f->p->nodes[id].kind;
        cat = kind < RP_KIND_MAX ? kind : RP_KIND_MAX;
        if (!name_sent(q, id) || !q->cat_sent[cat])
            return 0;
        if (job) /* (its name was interned in this job: touched, cleared for the next) */
            f->interned[id] |= (uint8_t)(4 | (cat + 1) << 3);
    }
    if (unlikely(f->nbatch + 64 > f->capbatch)) { /* room for the longest such packet */
        int rc = batch_flush(f);
        if (rc < 0)
            return rc;
    }
    if (job && f->compress == 1 && unlikely(!f->zopen)) { /* the batch's first mark */
        int rc = zopen(f);
        if (rc < 0)
            return rc;
    }
    /* written in place: bytes stored to a buffer on the stack and copied
     * as words would stall on store forwarding; the packet's head (up to
     * its timestamp) and its TrackEvent stored as words where they fit */
    uint8_t *pkt = f->batch + f->nbatch, *p, *ts;
    uint64_t dt = ns - q->last_ns;
    uint32_t tslen;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t hw;
    unsigned hn = job ? f->jhead_n : seq_head(q->id, &hw);
    if (job)
        hw = f->jhead;
    if (likely(hn)) {
        memcpy(pkt, &hw, 8);
        p = ts = pkt + hn;
        if (likely(dt < 0x80))
            *p++ = (uint8_t)dt;
        else
            p = put_varint(p, dt);
        tslen = (uint32_t)(p - ts);
        /* the TrackEvent: type, then the name's and category's iids */
        if (id < 0x80)
            p = slice_tail_small(p, type, id, cat);
        else
            p = slice_tail(p, type, id, cat);
    } else
#endif
    {
        p = pkt + 2; /* tag and (one-byte) length first */
        *p++ = PKT_SEQ_ID << 3;
        p = put_varint(p, q->id);
        *p++ = PKT_TIMESTAMP << 3;
        ts = p;
        p = put_varint(p, dt);
        tslen = (uint32_t)(p - ts);
        p = slice_tail(p, type, id, cat);
    }
    pkt[0] = TRACE_PACKET << 3 | 2;
    pkt[1] = (uint8_t)(p - pkt - 2);
    size_t n = (size_t)(p - pkt);
    if (job) { /* its timestamp marked; the bytes before it keyed when they are the
                     last fast packet's TrackEvent and this one's head (seq id < 2^24) */
        uint64_t key = 0;
        if (f->fast_end && f->fast_end == f->nbatch && q->id < 1u << 24)
            key = f->fast_key | (uint64_t)pkt[1] << 33 | (uint64_t)q->id << 40;
        size_t t0 = f->nbatch + (size_t)(ts - pkt);
        if (f->compress == 1)
            rp_zpkt_mark(f->z[0], f->batch, t0, t0 + tslen, key);
        f->fast_key = (uint64_t)id | (uint64_t)(type - 1) << 32;
        f->fast_end = f->nbatch + n;
    }
    f->nbatch += n;
    q->last_ns = ns;
    return 1;
}

/* The timeline callbacks (export.h): a packet each; fail like packet_end.
 * job: f is a parallel walk's encoder (f->job set), the callbacks of
 * job_ops (a constant, which the inlined slice_fast folds); ns: ticks as
 * ts_ns maps them. */
static inline __attribute__((always_inline)) int
begin_on(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t ns, const int job)
{
    struct perfetto *f = cookie;
    int rc = 0;
    struct pseq *q = seq_of(f, tid, &rc);
    if (!q)
        return rc;
    if ((rc = slice_fast(f, q, ns, id, TYPE_SLICE_BEGIN, job)))
        return rc < 0 ? rc : 0;
    event_begin(f, q, ticks, id, TYPE_SLICE_BEGIN, thread_uuid(f, tid));
    return event_end(f);
}

static int on_begin(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks)
{
    return begin_on(cookie, tid, id, ticks, ts_ns(cookie, ticks), 0);
}

static int on_begin_job(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks)
{
    return begin_on(cookie, tid, id, ticks, ts_ns(cookie, ticks), 1);
}

/* The debug annotation "rankprof" = why (how a slice ended: "unwound",
 * "cut", ...) of the event being written; nothing when why is NULL. */
static void debug_why(struct perfetto *f, const char *why)
{
    if (!why)
        return;
    pb_open(&f->pb, TE_DEBUG);
    pb_str(&f->pb, DA_NAME, "rankprof");
    pb_str(&f->pb, DA_STRING, why);
    pb_close(&f->pb);
}

static inline __attribute__((always_inline)) int end_on(void *cookie, uint32_t tid, uint64_t ticks,
                                                        uint64_t ns, uint64_t arg, const char *why,
                                                        const int job)
{
    struct perfetto *f = cookie;
    int rc = 0;
    struct pseq *q = seq_of(f, tid, &rc);
    if (!q)
        return rc;
    if (!arg && !why && (rc = slice_fast(f, q, ns, 0, TYPE_SLICE_END, job)))
        return rc < 0 ? rc : 0;
    event_begin(f, q, ticks, 0, TYPE_SLICE_END, thread_uuid(f, tid));
    if (arg)
        debug_uint(&f->pb, "arg", arg);
    debug_why(f, why);
    return event_end(f);
}

static int on_end(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg,
                  const char *why)
{
    (void)id;
    return end_on(cookie, tid, ticks, ts_ns(cookie, ticks), arg, why, 0);
}

static int on_end_job(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg,
                      const char *why)
{
    (void)id;
    return end_on(cookie, tid, ticks, ts_ns(cookie, ticks), arg, why, 1);
}

/*
 * The packets of r[i..m) (times ns[i..m)) that slice_fast would write for
 * a job, from i on, as slice_fast writes them and marks their timestamps,
 * with the encoder's and the compressor's state in locals (the packets'
 * byte stores would otherwise make the compiler load it again for each):
 * a begin of an id below 128 whose name is interned in the job, a plain
 * end, in time order, while the batch has room.  Returns the index of the
 * first it did not write (m: all).  Cannot fail.
 */
static uint32_t slices_run(struct perfetto *f, const struct rp_tlpar_slice *r, const uint64_t *ns,
                           uint32_t i, uint32_t m)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    struct pseq *q = f->job;
    const int zc = f->compress == 1;
    if (!q->started || !q->track || !f->jhead_n || (zc && !f->zopen))
        return i;
    struct rp_zpkt *z = f->z[0];
    struct rp_zbits w = {0};
    size_t zs = 0;
    if (zc) {
        w = z->w;
        zs = z->s;
    }
    uint8_t *const batch = f->batch;
    const uint8_t *const interned = f->interned;
    const size_t lim = f->capbatch - 64; /* (room for the longest such packet) */
    const uint64_t hw = f->jhead;
    const unsigned hn = f->jhead_n;
    const int keyed = q->id < 1u << 24;
    const uint64_t seqk = (uint64_t)q->id << 40;
    size_t nb = f->nbatch;
    /* the bytes before a packet's timestamp are keyed after a fast packet
     * (all but perhaps the first here) */
    int adj = f->fast_end && f->fast_end == nb && keyed;
    uint64_t fk = f->fast_key, last = q->last_ns;
    for (; i < m; i++) {
        uint64_t t = ns[i];
        uint32_t id = 0, cat = 0;
        if (t < last || nb > lim)
            break;
        if (!r[i].end) {
            id = r[i].id;
            if (id >= 0x80 || !(interned[id] & 4))
                break;
            cat = (interned[id] >> 3) - 1u;
        } else if (r[i].arg) {
            break;
        }
        unsigned type = id ? TYPE_SLICE_BEGIN : TYPE_SLICE_END;
        uint8_t *pkt = batch + nb, *p = pkt + hn;
        uint64_t dt = t - last;
        memcpy(pkt, &hw, 8);
        if (likely(dt < 0x80))
            *p++ = (uint8_t)dt;
        else
            p = put_varint(p, dt);
        size_t t0 = nb + hn, t1 = (size_t)(p - batch);
        p = slice_tail_small(p, type, id, cat); /* (id < 0x80: tested above) */
        size_t n = (size_t)(p - pkt);
        pkt[0] = TRACE_PACKET << 3 | 2;
        pkt[1] = (uint8_t)(n - 2);
        uint64_t key = adj ? fk | (uint64_t)(n - 2) << 33 | seqk : 0;
        /* rp_zpkt_mark, its state in w and zs */
        if (zc && !rp_zpkt_mark_fast(z, &w, &zs, batch, t0, t1, key)) {
            z->w = w;
            z->s = zs;
            rp_zpkt_mark_slow(z, batch, t0, t1, key);
            w = z->w;
            zs = z->s;
        }
        fk = (uint64_t)id | (uint64_t)(type - 1) << 32;
        nb += n;
        adj = keyed;
        last = t;
    }
    if (nb != f->nbatch)
        f->fast_end = nb;
    f->nbatch = nb;
    f->fast_key = fk;
    q->last_ns = last;
    if (zc) {
        z->w = w;
        z->s = zs;
    }
#else
    (void)f, (void)r, (void)ns, (void)m;
#endif
    return i;
}

/* ns[i] = ts_ns of r[i].ticks, i < m: within the clock's segment kept (the
 * common case: every tick of a run), the same arithmetic as
 * rp_clockmap_fast_ns on the segment's constants held in registers and
 * without a branch but the segment's test; else by ts_ns (which moves the
 * segment).  Cannot fail. */
static void ns_run(struct perfetto *f, const struct rp_tlpar_slice *r, uint64_t *ns, uint32_t m)
{
    const struct rp_clockmap_fast *q = &f->cmf;
    for (uint32_t i = 0; i < m; i++) {
        if (q->linear) {
            const uint64_t lo = q->lo, hi = q->hi < 1ull << 63 ? q->hi : 1ull << 63;
            const double ns0 = q->ns0, tk0 = q->tk0, slope = q->slope, org = q->origin;
            for (; i < m && r[i].ticks - lo < hi - lo; i++) {
                double v = ns0 + ((double)(int64_t)r[i].ticks - tk0) * slope - org;
                double y = (v > 0 ? v : 0) + 0.5;
                ns[i] = (uint64_t)(int64_t)(y < 9e18 ? y : 0); /* (as ts_ns: not NaN) */
            }
            if (i == m)
                break;
        }
        ns[i] = ts_ns(f, r[i].ticks);
    }
}

/* A run of a job's begins and plain ends (rp_tlpar_ops.slices): their
 * times mapped first, in a loop of their own (independent conversions, the
 * clock's constants in registers), then their packets, by slices_run
 * while it can, else by begin_on and end_on.  Fails like packet_end. */
static int on_slices_job(void *cookie, uint32_t tid, const struct rp_tlpar_slice *s, uint32_t n)
{
    enum { PART = 128 };
    struct perfetto *f = cookie;
    uint64_t ns[PART];
    int rc = 0;
    for (uint32_t at = 0; at < n && rc == 0; at += PART) {
        uint32_t m = n - at < PART ? n - at : PART;
        const struct rp_tlpar_slice *r = s + at;
        ns_run(f, r, ns, m);
        for (uint32_t i = slices_run(f, r, ns, 0, m); i < m && rc == 0;
             i = rc == 0 ? slices_run(f, r, ns, i + 1, m) : i) {
            rc = r[i].end ? end_on(f, tid, r[i].ticks, ns[i], r[i].arg, NULL, 1)
                          : begin_on(f, tid, r[i].id, r[i].ticks, ns[i], 1);
        }
    }
    return rc;
}

/* A lock hold that is an interval: a slice on its own track (hold_track). */
static int on_hold(void *cookie, uint32_t tid, uint32_t id, uint64_t start, uint64_t end,
                   const char *why)
{
    struct perfetto *f = cookie;
    int rc = 0;
    struct pseq *q = seq_of(f, tid, &rc);
    if (!q)
        return rc;
    uint64_t track = hold_track(f, tid, id);
    if (!track)
        return RP_ENOMEM;
    event_begin(f, q, start, id, TYPE_SLICE_BEGIN, track);
    if ((rc = event_end(f)) < 0)
        return rc;
    event_begin(f, q, end, 0, TYPE_SLICE_END, track);
    debug_why(f, why);
    return event_end(f);
}

static int on_instant(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, uint64_t arg)
{
    struct perfetto *f = cookie;
    int rc = 0;
    struct pseq *q = seq_of(f, tid, &rc);
    if (!q)
        return rc;
    event_begin(f, q, ticks, id, TYPE_INSTANT, thread_uuid(f, tid));
    debug_uint(&f->pb, "arg", arg);
    return event_end(f);
}

static int on_counter(void *cookie, uint32_t tid, uint32_t id, uint64_t ticks, int64_t v)
{
    struct perfetto *f = cookie;
    int rc = counter_track(f, id);
    struct pseq *q = rc < 0 ? NULL : seq_of(f, tid, &rc);
    if (!q)
        return rc;
    event_begin(f, q, ticks, 0, TYPE_COUNTER, counter_uuid(f, id));
    pb_uint(&f->pb, TE_COUNTER_VALUE, (uint64_t)v); /* int64: two's complement varint */
    return event_end(f);
}

/* The recorder's own time (a PAUSE): a slice "[recorder]" of category
 * "rankprof" on the thread's track, inside its innermost open slice (names
 * not interned: one per buffer of the thread's, rare). */
static int on_pause(void *cookie, uint32_t tid, uint64_t start, uint64_t end)
{
    struct perfetto *f = cookie;
    int rc = 0;
    struct pseq *q = seq_of(f, tid, &rc);
    if (!q)
        return rc;
    uint64_t track = thread_uuid(f, tid);
    event_begin(f, q, start, 0, TYPE_SLICE_BEGIN, track);
    pb_str(&f->pb, TE_NAME, RP_EXPORT_RECORDER);
    pb_str(&f->pb, TE_CATEGORIES, "rankprof");
    if ((rc = event_end(f)) < 0)
        return rc;
    event_begin(f, q, end, 0, TYPE_SLICE_END, track);
    return event_end(f);
}

static int on_lost(void *cookie, uint32_t tid, uint64_t ticks, uint64_t count)
{
    struct perfetto *f = cookie;
    int rc = 0;
    struct pseq *q = seq_of(f, tid, &rc);
    if (!q)
        return rc;
    event_begin(f, q, ticks, 0, TYPE_INSTANT, thread_uuid(f, tid));
    pb_str(&f->pb, TE_NAME, "LOST"); /* not interned: rare */
    debug_uint(&f->pb, "events", count);
    return event_end(f);
}

/* A run's file k begins: its ticks follow.  Cannot fail. */
static int on_file(void *cookie, uint32_t k)
{
    struct perfetto *f = cookie;
    rp_clockmap_select(&f->cm, k);
    rp_clockmap_fast_init(&f->cm, &f->cmf);
    return 0;
}

/*
 * The parallel walk's encoders (export_tlpar.h): each a copy of f's
 * read-only part (profile, names, clocks) with its own packet buffer,
 * batch, compressor and interning state.  Job k of thread tid is
 * sequence 2 + k whose default track is the thread's: its first packet
 * clears the state and interns anew, and a slice begun in an earlier job
 * ends on the same track.  Returns the encoder, or NULL when out of memory.
 */
static void enc_close(void *enc);
static void *enc_open(void *arg)
{
    const struct perfetto *m = arg;
    struct perfetto *e = calloc(1, sizeof(*e));
    if (!e)
        return NULL;
    e->out = m->out;
    e->ctx = m->ctx;
    e->p = m->p;
    e->names = m->names;
    e->compress = m->compress;
    e->cm = m->cm; /* (its arrays are m's: read only, freed by m) */
    rp_clockmap_fast_init(&e->cm, &e->cmf);
    e->npages = m->npages;
    e->job = &e->jq;
    e->capbatch = BATCH;
    if (!(e->interned = calloc(m->p->n_nodes ? m->p->n_nodes : 1, 1)) ||
        !(e->jq.pages = calloc(e->npages, sizeof(*e->jq.pages))) || !(e->batch = malloc(BATCH))) {
        enc_close(e);
        return NULL;
    }
    return e;
}

/* A job begins (export_tlpar.h): the interning state of the last one
 * cleared.  Cannot fail. */
static int enc_start(void *enc, uint64_t job, uint32_t tid, struct rp_xbuf *out)
{
    struct perfetto *e = enc;
    for (uint32_t i = 0; i < e->ntouched; i++) {
        uint32_t id = e->touched[i];
        e->interned[id] = 0;
        if (e->jq.pages[id / PAGE_IDS])
            e->jq.pages[id / PAGE_IDS][id % PAGE_IDS / 8] = 0;
    }
    e->ntouched = 0;
    e->fast_end = 0;
    e->zopen = 0;
    memset(e->jq.cat_sent, 0, sizeof(e->jq.cat_sent));
    e->jq.id = (uint32_t)(2 + job);
    e->jhead_n = seq_head(e->jq.id, &e->jhead);
    e->jq.started = 0;
    e->jq.track = thread_uuid(e, tid);
    e->jq.last_ns = 0;
    if (e->caphold)
        memset(e->hold_tracks, 0, e->caphold * sizeof(*e->hold_tracks));
    e->nhold = 0;
    e->jout = out;
    e->nbatch = 0;
    return 0;
}

/* The job's last batch, deflated to its output.  RP_ENOMEM. */
static int enc_finish(void *enc)
{
    return batch_flush(enc);
}

/* Frees an encoder (export_tlpar.h).  Cannot fail. */
static void enc_close(void *enc)
{
    struct perfetto *e = enc;
    if (e->z[0])
        rp_zpkt_free(e->z[0]);
    if (e->zd[0])
        libdeflate_free_compressor(e->zd[0]);
    free(e->pb.b);
    free(e->batch);
    free(e->touched);
    free(e->hold_tracks);
    free(e->interned);
    for (uint32_t k = 0; e->jq.pages && k < e->npages; k++)
        free(e->jq.pages[k]);
    free(e->jq.pages);
    free(e);
}

int rp_export_perfetto(FILE *out, const struct rp_export_ctx *ctx)
{
    /* the walk in order's callbacks, and a parallel walk's jobs' (their
     * slice packets keyed for the compressor: slice_fast's job) */
#define TIMELINE_OPS(begin_cb, end_cb)                                                             \
    {                                                                                              \
        .begin = begin_cb, .end = end_cb, .instant = on_instant, .counter = on_counter,            \
        .lost = on_lost, .hold = on_hold, .file = on_file, .pause = on_pause                       \
    }
    static const struct rp_timeline_ops ops = TIMELINE_OPS(on_begin, on_end),
                                        job_ops = TIMELINE_OPS(on_begin_job, on_end_job);
#undef TIMELINE_OPS
    const struct rp_profile *p = ctx->p;
    struct perfetto f = {.out = out, .ctx = ctx, .p = p};
    struct rp_xbuf hdr = {0};
    int rc = RP_ENOMEM;

    const char *cz = rp_export_param(ctx, "compress");
    if (cz && strcmp(cz, "0") && strcmp(cz, "1") && strcmp(cz, "small")) {
        snprintf(ctx->err, ctx->errsz, "-O compress=%s: expected 0, 1 or small", cz);
        return RP_EINVAL;
    }
    f.compress = !cz || !strcmp(cz, "1") ? 1 : !strcmp(cz, "small") ? 2 : 0;
    f.names = rp_export_names(p);
    f.interned = calloc(p->n_nodes ? p->n_nodes : 1, 1);
    f.seqs = calloc((size_t)p->n_threads + 1, sizeof(*f.seqs));
    f.npages = p->n_nodes / PAGE_IDS + 1;
    if (!f.names || !f.interned || !f.seqs)
        goto out;
    for (uint32_t i = 0; i <= p->n_threads; i++) {
        if (!(f.seqs[i].pages = calloc(f.npages, sizeof(*f.seqs[i].pages))))
            goto out;
        f.seqs[i].id = SEQ_ID + i;
        f.seqs[i].track = i ? 1 + (uint64_t)i : 0; /* thread_uuid's */
    }
    if ((rc = rp_clockmap_profile(&f.cm, p, ctx->input, rp_export_param(ctx, "offsets"), ctx->err,
                                  ctx->errsz)) < 0)
        goto out;
    rp_clockmap_fast_init(&f.cm, &f.cmf);
    rc = RP_ENOMEM;
    int par = rp_tlpar_usable(ctx);
    if (par) { /* the descriptors deflated into hdr, then the parallel walk */
        f.jout = &hdr;
        f.capbatch = BATCH;
        if (!(f.batch = malloc(BATCH)))
            goto out;
    } else if (!(f.pool = rp_xpool_open(out, rp_xpool_workers(), BATCH, batch_turn, &f))) {
        goto out;
    } else {
        f.batch = rp_xpool_batch(f.pool, &f.capbatch);
    }
    packet_begin(&f);
    pb_open(&f.pb, PKT_TRACK_DESC);
    pb_uint(&f.pb, TD_UUID, PROC_UUID);
    pb_open(&f.pb, TD_PROCESS);
    pb_uint(&f.pb, PD_PID, p->pid);
    pb_str(&f.pb, PD_NAME, rp_export_title(ctx));
    pb_close(&f.pb);
    pb_close(&f.pb);
    if ((rc = packet_end(&f)) < 0)
        goto out;
    for (uint32_t i = 1; i < p->n_procs && rc == 0; i++) { /* a run's other processes */
        uint32_t k = 0;
        while (k < i && p->procs[k].pid != p->procs[i].pid)
            k++;
        if (k < i || p->procs[i].pid == p->pid)
            continue; /* a pid's later image (exec): one track */
        const char *file = p->procs[i].file ? p->procs[i].file : "";
        const char *b = strrchr(file, '/');
        packet_begin(&f);
        pb_open(&f.pb, PKT_TRACK_DESC);
        pb_uint(&f.pb, TD_UUID, proc_uuid(p, p->procs[i].pid));
        pb_open(&f.pb, TD_PROCESS);
        pb_uint(&f.pb, PD_PID, p->procs[i].pid);
        pb_str(&f.pb, PD_NAME, b ? b + 1 : file);
        pb_close(&f.pb);
        pb_close(&f.pb);
        rc = packet_end(&f);
    }
    for (uint32_t i = 0; i < p->n_threads && rc == 0; i++) {
        uint32_t k = 0; /* a merged run: a pid's later image (exec) has the same tid */
        while (p->n_procs > 1 && k < i && p->threads[k].tid != p->threads[i].tid)
            k++;
        if (p->n_procs <= 1 || k == i)
            rc = thread_track(&f, p->threads[i].tid, p->threads[i].name);
    }
    if (rc == 0 && par) {
        static const struct rp_tlpar_ops tops = {.tl = &job_ops,
                                                 .open = enc_open,
                                                 .start = enc_start,
                                                 .finish = enc_finish,
                                                 .close = enc_close,
                                                 .slices = on_slices_job};
        if ((rc = batch_flush(&f)) == 0 && hdr.n && fwrite(hdr.b, 1, hdr.n, out) != hdr.n)
            rc = RP_EIO;
        if (rc == 0)
            rc = rp_tlpar_run(out, ctx, &tops, &f);
        goto out;
    }
    if (rc == 0)
        rc = rp_export_timeline(ctx, &ops, &f);
    if (rc == 0)
        rc = batch_flush(&f);
out:;
    int wrc = rp_xpool_close(f.pool);
    if (rc == 0)
        rc = wrc;
    for (size_t i = 0; i < sizeof(f.z) / sizeof(f.z[0]); i++)
        if (f.z[i])
            rp_zpkt_free(f.z[i]);
    for (size_t i = 0; i < sizeof(f.zd) / sizeof(f.zd[0]); i++)
        if (f.zd[i])
            libdeflate_free_compressor(f.zd[i]);
    free(f.pb.b);
    free(hdr.b);
    if (!f.pool)
        free(f.batch);
    free(f.hold_tracks);
    free(f.interned);
    if (f.seqs)
        for (uint32_t i = 0; i <= p->n_threads; i++) {
            for (uint32_t k = 0; f.seqs[i].pages && k < f.npages; k++)
                free(f.seqs[i].pages[k]);
            free(f.seqs[i].pages);
        }
    free(f.seqs);
    rp_export_names_free(p, f.names);
    rp_clockmap_free(&f.cm);
    return rc;
}

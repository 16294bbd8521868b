// SPDX-License-Identifier: MIT
/*
 * reader.h - reading a trace file chunk by chunk, streaming: one chunk in
 * memory at a time, each checked before it is handed out.
 */
#ifndef RP_TRACE_READER_H
#define RP_TRACE_READER_H

#include <stdint.h>
#include <stdio.h>

#include "common/bytes.h"
#include "common/compiler.h"
#include "format.h"

struct rp_reader {
    FILE *f;
    const char *path;
    uint64_t off;  /* offset of the next chunk header */
    uint64_t size; /* file size at open */
    uint8_t *buf;
    size_t cap;
    int force;            /* skip chunks whose payload checksum fails */
    uint64_t skipped;     /* chunks skipped under force */
    uint64_t skipped_off; /* offset of the first of them */
    uint16_t major, minor;
    char err[512]; /* the last error, naming the file and offset */
    /* A rotated trace (record --max-size): NAME.partK (K ascending), then
     * NAME, read one after the other as one trace; path is the one being
     * read, offsets are in it. */
    char **pieces;
    uint32_t npieces, ipiece;
    uint32_t first_part; /* K of the oldest NAME.partK there (0: not rotated); above 1,
                            the pieces before it were deleted (--max-size) */
    /* Chunk types (a bit each, 1u << type) handed out skimmed: their
     * first RP_READER_SKIM bytes, their checksum not checked (set before
     * the first rp_reader_next; then each chunk is read with one pread,
     * its header and those bytes at once).  For a pass that needs little
     * of the events (the definitions, each chunk's first event). */
    uint32_t skim;
};

#define RP_READER_SKIM 256

struct rp_chunk {
    uint32_t type;
    uint32_t len;        /* bytes at data: the payload's, or its first when skimmed */
    const uint8_t *data; /* valid until the next rp_reader_next */
    uint64_t offset;     /* of the chunk header in the file */
    int skimmed;         /* only the payload's first len bytes (rp_reader.skim), unchecked */
};

/*
 * Opens path and checks the file header.  When files path.partK exist
 * beside it (a trace rotated by `rankprof record --max-size`), they are
 * read first, oldest (smallest K) first, then path, as one trace; a piece
 * deleted meanwhile (the recorder still running) is passed over.  Returns 0, or RP_ENOENT / RP_EIO
 * (cannot open or read), RP_ETRUNC (shorter than a header), RP_EFORMAT (not a
 * rankprof trace), RP_EVERSION (a newer major version); r->err says which
 * file and why.  On error nothing needs closing.
 */
int rp_reader_open(struct rp_reader *r, const char *path);

/*
 * Reads the next chunk.  Returns 1 and fills *c; 0 at the end of the file;
 * or RP_ETRUNC (the file ends inside a chunk), RP_ECRC (a checksum fails),
 * RP_EFORMAT (a length over RP_CHUNK_MAX), RP_ENOMEM, RP_EIO.  After an error
 * r->err names the file and the chunk's offset, and further calls return the
 * same error.  With r->force, a chunk whose header is sound but whose
 * payload checksum fails is skipped and counted instead.
 */
int rp_reader_next(struct rp_reader *r, struct rp_chunk *c);

/*
 * Reads skimmed chunk c (rp_reader.skim) again, whole, its checksum
 * checked.  Returns 0 with *c the whole chunk, or RP_ETRUNC, RP_ECRC,
 * RP_ENOMEM, RP_EIO with r->err naming the file and offset.
 */
int rp_reader_whole(struct rp_reader *r, struct rp_chunk *c);

void rp_reader_close(struct rp_reader *r);

/* A chunk as rp_chunks_skim hands it out: its header (type at 0, length
 * at 4, payload checksum at 8) and its payload's first npay bytes
 * (RP_SKIM_PEEK at most), read at once; the payload starts at offset at
 * of f (fseeko there to read more). */
struct rp_skimmed {
    const uint8_t *hdr, *pay;
    uint32_t npay;
    uint64_t at;
    FILE *f;
};

#define RP_SKIM_PEEK 24 /* (a CLOCK chunk's payload, an EVENTS chunk's header) */

/* Reads the whole payload of skimmed chunk k into buf (room for its
 * length, hdr + 4) and checks its checksum.  Returns 0, or -1 when it
 * could not be read whole or the checksum fails. */
int rp_skimmed_read(const struct rp_skimmed *k, uint8_t *buf);

/*
 * Skims the chunks of f from offset off by their headers (each header's
 * checksum and length checked) and the first bytes of their payloads, one
 * pread per chunk: fn gets each (struct rp_skimmed).  Stops at the end,
 * at the first damaged header, or when fn returns non-zero (which it
 * returns; else 0).  For the few chunks of a large file a command needs
 * before reading it (its clocks, its first events).
 */
int rp_chunks_skim(FILE *f, uint64_t off, int (*fn)(void *ctx, const struct rp_skimmed *k),
                   void *ctx);

/*
 * Makes a reader that reached the end of a file still being written (0
 * from rp_reader_next, or RP_ETRUNC: the file ended inside a chunk) read
 * on from the next chunk not read (r->off), once more is written: a live
 * reading (src/analyze/live.c).  Returns 0, or RP_EIO when the file cannot
 * be positioned there (r->err says so).
 */
int rp_reader_resume(struct rp_reader *r);

/*
 * The next pair of an INFO payload (format.h: u16 key length, key, u32
 * value length, value) at *p, before end: sets *key, *klen, *val, *vlen
 * and advances *p past it.  Returns 1, 0 at the end, or -1 when the pair
 * runs past end (a malformed payload; *p is left at it).
 */
int rp_info_next(const uint8_t **p, const uint8_t *end, const uint8_t **key, uint32_t *klen,
                 const uint8_t **val, uint32_t *vlen);

/* Decoded event, for tools that want them one by one (dump). */
struct rp_event {
    uint8_t op;          /* enum rp_op */
    uint32_t id;         /* ENTER, EXIT_ID, INSTANT, COUNTER, HOLD_BEGIN, HOLD_END */
    uint64_t ticks;      /* absolute */
    uint64_t arg;        /* INSTANT argument, COUNTER zigzag value, ARG value, LOST count,
                            HOLD_END raw duration */
    uint64_t arg2, arg3; /* HOLD_END: the events inside, and `how` (format.h) */
};

struct rp_evdec {
    const uint8_t *p, *start, *end;
    uint64_t now;
    uint32_t tid, count; /* count: the header's nevents */
    uint32_t n;          /* the events decoded so far */
    const uint8_t *snap; /* the stack snapshot (format.h), or NULL if none */
    uint32_t snap_depth;
    int snap_counts; /* its spans carry event counts (RP_EV_SNAPCOUNT) */
    int snap_pauses; /* and PAUSE ticks (RP_EV_SNAPPAUSE) */
    int compact;     /* the compact event stream (format.h) */
    int pred;        /* with predicted ENTERs (RP_EV_PREDICT, format 1.5): */
    uint32_t pr_x, pr_y, pr_tab[RP_PRED_SLOTS]; /* the prediction (format.h) */
};

/*
 * Starts decoding an EVENTS payload, after checking its stack snapshot if it
 * has one (d->snap, d->snap_depth; read it with rp_evdec_frame).  Returns 0,
 * or RP_EFORMAT if the payload is shorter than its header or the snapshot is
 * malformed (deeper than RP_SNAP_MAX, an id of 0 or over 32 bits, a varint
 * past the end); d->p - d->start is then the offset of the fault.
 */
int rp_evdec_init(struct rp_evdec *d, const uint8_t *payload, uint32_t len);

/*
 * Reads the next frame of a snapshot that rp_evdec_init has checked: *q
 * starts at d->snap + its depth varint (rp_evdec_frames gives it).  *events
 * is the frame's event count (the thread's events after its ENTER and
 * before the chunk), 0 when the snapshot has none (d->snap_counts 0).
 * *start is moved later by the thread's PAUSEs since the ENTER (format.h):
 * *paused of them (0 when the snapshot says none), so the ENTER was at
 * *start - *paused.  Cannot fail on a checked snapshot.
 */
static inline const uint8_t *rp_evdec_frame(const struct rp_evdec *d, const uint8_t *q,
                                            uint32_t *id, uint64_t *start, uint64_t *events,
                                            uint64_t *paused)
{
    uint64_t v = 0, z = 0, c = 0, pz = 0;
    q = rp_get_varint(q, d->end, &v);
    q = rp_get_varint(q, d->end, &z);
    if (d->snap_counts)
        q = rp_get_varint(q, d->end, &c);
    if (d->snap_pauses)
        q = rp_get_varint(q, d->end, &pz);
    *id = (uint32_t)v;
    *start = rp_get64(d->start + 8) - (uint64_t)rp_unzigzag(z);
    *events = c;
    *paused = pz;
    return q;
}

/* Where the frames of d's checked snapshot begin (after the depth). */
static inline const uint8_t *rp_evdec_frames(const struct rp_evdec *d)
{
    uint64_t depth;
    return rp_get_varint(d->snap, d->end, &depth);
}

/*
 * Decodes the next event.  Returns 1, 0 at the end, or RP_EFORMAT for a
 * malformed event (its offset within the payload is d->p - d->start), and
 * at the end of a stream that held another number of events than its
 * header's nevents (d->p == d->end, d->n != d->count: rp_evdec_miscount).
 */
int rp_evdec_next(struct rp_evdec *d, struct rp_event *ev);

/*
 * The next event of d, as rp_evdec_next decodes it, with the common cases
 * of a compact stream inline (format.h: a one-byte EXIT, a one-byte ENTER of
 * the predicted id): RP_EVDEC_EXIT for such an EXIT (ev->ticks set, the
 * rest of ev untouched), RP_EVDEC_ENTER for such an ENTER (ev->id and
 * ev->ticks set), RP_EVDEC_OTHER for any other event (ev filled by
 * rp_evdec_next).  Returns 0 at the end; fails as rp_evdec_next.
 */
enum { RP_EVDEC_EXIT = 1, RP_EVDEC_ENTER = 2, RP_EVDEC_OTHER = 3 };
static inline int rp_evdec_next_quick(struct rp_evdec *d, struct rp_event *ev)
{
    const uint8_t *p = d->p;
    if (likely(p < d->end && *p < 0x80 && d->compact)) {
        unsigned h = *p;
        if (h & 1) { /* EXIT */
            d->now += h >> 1;
            d->pr_x += d->pred;
            d->p = p + 1;
            d->n++;
            ev->ticks = d->now;
            return RP_EVDEC_EXIT;
        }
        uint32_t *slot = &d->pr_tab[rp_pred_slot(d->pr_x, d->pr_y)];
        if (d->pred && !(h & 2) && *slot) { /* ENTER of the predicted id */
            d->now += h >> 2;
            ev->id = *slot;
            rp_pred_enter(&d->pr_x, &d->pr_y, ev->id);
            d->p = p + 1;
            d->n++;
            ev->ticks = d->now;
            return RP_EVDEC_ENTER;
        }
    }
    int rc = rp_evdec_next(d, ev);
    return rc > 0 ? RP_EVDEC_OTHER : rc;
}

/* Whether a decoder that failed did so because its stream ended with
 * another number of events than the header states (format 4.6). */
static inline int rp_evdec_miscount(const struct rp_evdec *d)
{
    return d->p == d->end && d->n != d->count;
}

#endif /* RP_TRACE_READER_H */

/*
 * reader.h - reading a trace file chunk by chunk, streaming: one chunk in
 * memory at a time, each checked before it is handed out.
 */
#ifndef RP_TRACE_READER_H
#define RP_TRACE_READER_H

#include <stdint.h>
#include <stdio.h>

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
};

struct rp_chunk {
    uint32_t type;
    uint32_t len;
    const uint8_t *data; /* valid until the next rp_reader_next */
    uint64_t offset;     /* of the chunk header in the file */
};

/*
 * Opens path and checks the file header.  Returns 0, or RP_ENOENT / RP_EIO
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

void rp_reader_close(struct rp_reader *r);

/* Decoded event, for tools that want them one by one (dump). */
struct rp_event {
    uint8_t op;     /* enum rp_op */
    uint32_t id;    /* ENTER, EXIT_ID, INSTANT, COUNTER */
    uint64_t ticks; /* absolute */
    uint64_t arg;   /* INSTANT argument, COUNTER zigzag value, ARG value, LOST count */
};

struct rp_evdec {
    const uint8_t *p, *start, *end;
    uint64_t now;
    uint32_t tid, count;
};

/*
 * Starts decoding an EVENTS payload.  Returns 0, or RP_EFORMAT if the
 * payload is shorter than its header.
 */
int rp_evdec_init(struct rp_evdec *d, const uint8_t *payload, uint32_t len);

/*
 * Decodes the next event.  Returns 1, 0 at the end, or RP_EFORMAT for a
 * malformed event (its offset within the payload is d->p - d->start).
 */
int rp_evdec_next(struct rp_evdec *d, struct rp_event *ev);

#endif /* RP_TRACE_READER_H */

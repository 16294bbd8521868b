// SPDX-License-Identifier: MIT
/*
 * export_zpkt.h - a zlib stream of protobuf TracePackets made without
 * searching for matches: the perfetto export's batches of packets
 * (export_perfetto.c) repeat a few shapes whose only new bytes are each
 * event's timestamp, so the batch is cut at the timestamps' varints and
 * every run of bytes between two of them is written as a copy of the same
 * run seen last (found by its hash and checked byte for byte) or, the first
 * time, as literals; the timestamps are literals.  Fixed Huffman codes (one
 * deflate block): no tables to build or send.  Any bytes are compressed
 * correctly; bytes that are not such packets just compress less.
 */
#ifndef RP_REPORT_EXPORT_ZPKT_H
#define RP_REPORT_EXPORT_ZPKT_H

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"
#include "report/export_pool.h"

struct rp_zpkt;

/* A compressor (its hash table and code tables).  NULL when out of memory. */
RP_HIDDEN struct rp_zpkt *rp_zpkt_alloc(void);

/* Frees z (NULL is a no-op).  Cannot fail. */
RP_HIDDEN void rp_zpkt_free(struct rp_zpkt *z);

/*
 * Appends in[0..n) as one zlib stream (RFC 1950/1951) to out, after its
 * out->n bytes.  Returns 0 or RP_ENOMEM (out's bytes unchanged, its room
 * perhaps grown).
 */
RP_HIDDEN int rp_zpkt_zlib(struct rp_zpkt *z, const uint8_t *in, size_t n, struct rp_xbuf *out);

/* A timestamp's varint in a batch of packets, as the encoder that wrote
 * them marks it: its offset and length, and a key for the run of bytes
 * before it (since the previous mark's varint, or the batch's start): runs
 * with the same key are the same bytes; 0 when unknown (the run is hashed
 * and compared as rp_zpkt_zlib does). */
struct rp_zmark {
    uint32_t at, len;
    uint64_t key;
};

/*
 * rp_zpkt_zlib for a batch whose timestamps the encoder marked (m[0..nm),
 * in order): the packets are not parsed, and a keyed run is copied from
 * the latest run with its key without comparing bytes.  Fails as
 * rp_zpkt_zlib.
 */
RP_HIDDEN int rp_zpkt_zlib_marked(struct rp_zpkt *z, const uint8_t *in, size_t n,
                                  const struct rp_zmark *m, size_t nm, struct rp_xbuf *out);

#endif /* RP_REPORT_EXPORT_ZPKT_H */

// SPDX-License-Identifier: MIT
/*
 * writer.h - turning raw hot-path records into trace chunks.  Used by the
 * recorder's writer thread, and by tests and tools that synthesise traces.
 * Pure computation on caller memory: no I/O, no threads.
 *
 * Raw records are what the instrumented thread stores: 16 bytes, the tick
 * count and one word packing a 4-bit raw op with a 60-bit payload (a code
 * address, a site pointer, a lock address or a value):
 *
 *     word = op << 60 | payload
 *
 * The encoder maps every (kind, key) pair to a dense id (1, 2, ...), queues a
 * DEFS entry the first time it sees one, keeps a shadow stack per thread so
 * that an exit matching the innermost open span costs one byte of op, and
 * writes the delta/varint event stream of format.h.
 */
#ifndef RP_TRACE_WRITER_H
#define RP_TRACE_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "format.h"

struct rp_raw {
    uint64_t ticks;
    uint64_t word;
};

#define RP_RAW_SHIFT   60
#define RP_RAW_PAYLOAD ((1ull << RP_RAW_SHIFT) - 1)

/* Raw ops (the top 4 bits of rp_raw.word). */
enum rp_raw_op {
    RP_RAW_FUNC_ENTER = 0, /* payload: code address */
    RP_RAW_FUNC_EXIT = 1,  /* payload: code address */
    RP_RAW_SITE_BEGIN = 2, /* payload: struct rp_site pointer (point or io span) */
    RP_RAW_SITE_END = 3,   /* payload: struct rp_site pointer */
    RP_RAW_LOCK_WAIT = 4,  /* payload: lock address; lock-wait begins */
    RP_RAW_LOCK_ACQ = 5,   /* payload: lock address; its open wait (if any) ends, hold begins */
    RP_RAW_LOCK_REL = 6,   /* payload: lock address; hold ends */
    RP_RAW_LOCK_FAIL = 7,  /* payload: lock address; wait ends, not acquired */
    RP_RAW_INSTANT = 8,    /* payload: struct rp_site pointer; next record: argument */
    RP_RAW_COUNTER = 9,    /* payload: struct rp_site pointer; next record: value */
    RP_RAW_ARG = 10,       /* payload: argument of the innermost open span */
    RP_RAW_LOST = 11,      /* payload: events dropped before this point (drop mode) */
    RP_RAW_UNWIND = 12,    /* payload: a code address in the function that goes on after a
                              longjmp or a caught exception (the frames above its
                              activation were left without exits); 0: the thread ends
                              here (every open frame was left) */
    RP_RAW_PAUSE = 13,     /* payload: ticks the thread spent in the recorder (waiting
                              for a free buffer, or encoding its own), ending at this
                              record's ticks (format 1.3) */
    RP_RAW_OFFCPU = 14,    /* payload: ticks the thread was off CPU, from this record's
                              ticks on; never stored by a thread: the writer merges them
                              from context-switch records (rp_offq) (format 1.3) */
    RP_RAW_DATA = 15,      /* payload of the previous INSTANT/COUNTER (ticks field) */
};

/*
 * In the payload of LOCK_WAIT and LOCK_FAIL: the address is a condition
 * variable, and the span is a wait of kind RP_KIND_WAIT, class
 * RP_CLASS_LOCK, keyed by that address (pthread_cond_wait between the
 * release and the re-acquisition of its mutex).  LOCK_FAIL with the bit
 * ends it.  No address of a lock has bit 59 set.
 */
#define RP_RAW_COND_BIT (1ull << 59)

static inline uint64_t rp_raw_word(unsigned op, uint64_t payload)
{
    return (uint64_t)op << RP_RAW_SHIFT | (payload & RP_RAW_PAYLOAD);
}

/* What the encoder needs to know about an id when it first defines it. */
struct rp_def {
    uint8_t kind; /* enum rp_kind */
    uint8_t cls;  /* enum rp_class */
    uint64_t key;
    const char *name; /* may be NULL (functions: named by the analyzer) */
    const char *file; /* may be NULL */
    uint32_t line;
    uint64_t budget; /* ticks; 0 = none (a DEFS extension, format 1.1) */
};

/*
 * Describes a site (a struct rp_site pointer in a raw payload) for its DEFS
 * entry; called once per new site.  Returns 0, or < 0 to make the encoder
 * treat the record as unknown and skip it.
 */
typedef int (*rp_describe_fn)(void *ctx, uint64_t site, struct rp_def *out);

/* An open span on the writer's shadow stack. */
struct rp_enc_frame {
    uint64_t key; /* (kind + 1) << 60 | key: an exit with the same key is innermost */
    uint32_t id;
    uint8_t kind;   /* enum rp_kind of the id (sites: the real kind) */
    uint64_t start; /* ticks, as the reader will see them (moved later by pauses) */
    uint64_t ev;    /* the thread's event number of its ENTER (1 = the first event) */
};

/* A lock hold the thread has begun and not yet ended (format 1.3: holds
 * are intervals, not frames on the stack). */
struct rp_enc_hold {
    uint64_t key;   /* the lock address */
    uint32_t id;    /* its lock-hold id */
    uint32_t acq;   /* the id of the innermost open span at the acquisition, 0 = none */
    uint64_t start; /* ticks, as the reader will see them */
    uint64_t ev;    /* the thread's event number of its HOLD_BEGIN */
};

/* Writer-side state of one recorded thread. */
struct rp_enc_thread {
    struct rp_enc_frame *stack; /* open spans, innermost last; stack[-1] is a sentinel of
                                   key 0 (no span's), so that the innermost span's key
                                   is read without a test of the depth */
    uint32_t depth, cap;
    struct rp_enc_hold *holds; /* locks held, in acquisition order */
    uint32_t nholds, capholds;
    uint64_t skipped;           /* records the encoder could not encode */
    uint64_t lost;              /* events reported lost by LOST records */
    uint64_t seq;               /* events written for the thread so far (snapshot counts) */
    int nosnap;                 /* the shadow stack lost a frame: write no stack snapshots */
    uint64_t paused;            /* ticks of PAUSE records written (format 1.3) */
    uint64_t npause;            /* PAUSE records written */
    uint64_t offcpu;            /* off-CPU intervals written as spans */
    uint64_t offcpu_skipped;    /* off-CPU intervals left out: inside a wait span, or
                                   with no span open */
    int windowed;               /* recording was switched on or off (rankprof ctl): an exit with no
                                   span open is of a frame entered before, and is left out */
    uint64_t orphans;           /* such exits */
    struct rp_enc_cache *cache; /* this thread's front of the id table (made on first use) */
    /* per depth: `paused` when the frame there was pushed, valid while
     * pz_ev[d] is that frame's ev; set by the first PAUSE after the push (a
     * push costs nothing), so that a snapshot can say how far each start
     * was moved (format 1.4) */
    uint64_t *pz_at, *pz_ev;
    uint32_t pz_cap;
    /* the ENTER prediction's context in the chunk being written (format.h);
     * its table is in the cache (without one, made or not at the chunk's
     * start, the chunk has no RP_EV_PREDICT); of y only the low 16 bits
     * are kept, all that rp_pred_slot reads */
    uint32_t pr_x, pr_y;
};

#define RP_ENC_CACHE 4096 /* direct-mapped front of the id table, per thread */
#define RP_ENC_HEADS 512  /* deltas whose heads the encoder's table holds encoded */

/* The compact heads (format.h) of an EXIT ([0]) and of a predicted ENTER
 * ([1]) with one delta, as bytes: a fast loop writes two bytes and moves on
 * by the length. */
struct rp_enc_head {
    uint8_t b[2][2]; /* the varint (at most two bytes below RP_ENC_HEADS) */
    uint8_t len[2], pad[2];
};

/* A thread's direct-mapped cache of ids: read and written only by whoever
 * encodes that thread, so a known id costs no lock and no shared write. */
struct rp_enc_cache {
    uint64_t keys[RP_ENC_CACHE]; /* (kind, key) of the cached id; 0 = empty */
    uint32_t ids[RP_ENC_CACHE];
    uint8_t kinds[RP_ENC_CACHE];            /* the id's enum rp_kind (sites: the real kind) */
    uint32_t pred[RP_PRED_SLOTS];           /* the chunk's ENTER prediction (format.h) */
    struct rp_enc_head heads[RP_ENC_HEADS]; /* by delta: its EXIT's and predicted ENTER's */
};

/*
 * The id table is shared by every thread's encoding: several threads may
 * call rp_enc_events at once (each with its own struct rp_enc_thread) when
 * the owner sets lock and unlock, which are then called around every use
 * of the shared table (a new id, a cache miss).  The caller must hold the
 * same lock around rp_enc_take_defs and the write of what it returns, so
 * that every DEFS entry reaches the file before the EVENTS that use it.
 */
struct rp_enc {
    void (*lock)(void); /* NULL: one encoding thread, no locking */
    void (*unlock)(void);
    uint64_t *keys; /* open addressing: (kind, key) -> id; 0 = empty slot */
    uint32_t *ids;
    uint32_t cap, count;
    uint8_t *defs; /* DEFS payload pending since the last take */
    size_t defs_len, defs_cap;
    uint8_t *kinds; /* per id: its enum rp_kind (sites: the real kind) */
    uint32_t kinds_cap;
    uint32_t offcpu_id; /* the "[off-cpu]" node's id, 0 until first used */
    rp_describe_fn describe;
    void *describe_ctx;
    /* The name of the lock at address key for its DEFS entries, or NULL;
     * the hook may be NULL.  Set by the owner after rp_enc_init. */
    const char *(*lock_name)(uint64_t key);
    /* The start address of the function holding code address addr (the key
     * its enter hook records), or 0 when unknown; for RP_RAW_UNWIND.  NULL:
     * unwind records with an address are ignored.  Set by the owner. */
    uint64_t (*func_start)(uint64_t addr);
};

/* Initialises e.  Returns 0 or RP_ENOMEM. */
int rp_enc_init(struct rp_enc *e, rp_describe_fn describe, void *ctx);
void rp_enc_free(struct rp_enc *e);
void rp_enc_thread_free(struct rp_enc_thread *t);

/*
 * Defines (kind, key) if new and returns its id, or 0 when out of memory.
 * def->name/file are copied into the pending DEFS payload.
 */
uint32_t rp_enc_id(struct rp_enc *e, const struct rp_def *def);

/*
 * One DEFS record defining id as d, for a writer that keeps no id table
 * (direct mode's statistics, whose ids are already distinct): rp_def_len
 * is its length, rp_def_put writes it at p (rp_def_len(d) bytes of room)
 * and returns that length.  Names and files longer than 65535 bytes are
 * cut there.  Neither allocates nor fails.
 */
size_t rp_def_len(const struct rp_def *d);
size_t rp_def_put(uint8_t *p, uint32_t id, const struct rp_def *d);

/*
 * Upper bound on the EVENTS payload for n raw records (header included).
 * The longest event of one record is a lock release's HOLD_END: a head, the
 * escape and op bytes, an id, the duration, the events inside and a word
 * of at most 34 bits (format.h).
 */
static inline size_t rp_enc_bound(size_t n)
{
    return 16 + RP_VARINT_MAX + RP_SNAP_MAX * (5 + 2 * RP_VARINT_MAX) + n * (4 * RP_VARINT_MAX + 2);
}

/*
 * Encodes n raw records of thread tid into an EVENTS payload at out (which
 * must hold rp_enc_bound(n) bytes).  New ids are queued as DEFS, which the
 * caller must write (rp_enc_take_defs) before this EVENTS chunk.  Returns
 * the payload length (16 or more).  Cannot fail: records that are malformed
 * (unknown op, DATA without INSTANT) or whose id cannot be allocated (out of
 * memory) are counted in t->skipped and left out.
 */
size_t rp_enc_events(struct rp_enc *e, struct rp_enc_thread *t, uint32_t tid,
                     const struct rp_raw *recs, size_t n, uint8_t *out);

/* A record the encoder writes before recs[pos] (an off-CPU interval:
 * rp_offq_plan). */
struct rp_enc_ins {
    size_t pos;
    struct rp_raw rec;
};

/*
 * rp_enc_events of recs[0..n) with ins[0..nins) written among them, each
 * before recs[ins[k].pos] (positions in order, below n, never before a
 * DATA record): the bytes rp_enc_events writes for the merged records,
 * without a merged copy of the batch.  out must hold rp_enc_bound(n +
 * nins) bytes.  Cannot fail, as rp_enc_events.
 */
size_t rp_enc_events_ins(struct rp_enc *e, struct rp_enc_thread *t, uint32_t tid,
                         const struct rp_raw *recs, size_t n, const struct rp_enc_ins *ins,
                         size_t nins, uint8_t *out);

/*
 * Off-CPU intervals of one thread waiting to be merged into its raw records
 * (format 1.3).  Fed with the thread's context switches in time order
 * (rp_offq_switch), it pairs each switch-out with the next switch-in into an
 * interval; rp_offq_take moves those due for a batch (ended by its last
 * record) aside, and rp_offq_plan places them among the batch's records as
 * RP_RAW_OFFCPU records, each before the first record at or after its end,
 * so an interval that ends after a batch's last record (a thread off CPU at
 * a periodic flush) waits for the next batch.  An interval is clamped to
 * start no earlier than the record before it and to end no later than the
 * record after it; one that is then empty (its switch records came after
 * later records were already encoded) is counted as late.
 */
struct rp_offq {
    /* the queue, fed by rp_offq_switch (in the recorder: under its lock) */
    struct rp_raw *iv; /* intervals as RP_RAW_OFFCPU records, oldest first */
    uint32_t n, cap;
    uint64_t out_at;   /* ticks of a switch-out with no switch-in yet; 0 = none */
    uint64_t unpaired; /* switch-ins with no switch-out (lost records, or the first) */
    uint64_t late;     /* intervals dropped: their time was already written (added to
                          with relaxed atomics from either side) */

    /* the merge's: whoever encodes the thread's records */
    struct rp_raw *due; /* intervals taken from the queue (rp_offq_take), oldest first */
    uint32_t ndue, capdue;
    uint64_t last;          /* ticks of the last record merged (0 = none yet) */
    struct rp_enc_ins *ins; /* where they go: what rp_offq_plan returns */
    uint32_t inscap;
};

/* A switch of the thread at ticks: out (1) or in (0).  Fails only when out of
 * memory: the interval is then dropped (counted as late). */
void rp_offq_switch(struct rp_offq *q, uint64_t ticks, int out);

/*
 * Takes the queued intervals that end by the last record of recs[0..n) for
 * the next rp_offq_plan: the short part that needs the queue to itself (the
 * plan, a pass over every record, does not).  Returns how many are taken
 * and not placed yet.  Out of memory: the intervals stay queued.
 */
size_t rp_offq_take(struct rp_offq *q, const struct rp_raw *recs, size_t n);

/*
 * Where the taken intervals go among recs[0..n): the insertions for
 * rp_enc_events_ins (owned by q, valid until the next call), *nins of
 * them, each an interval clamped as above; NULL and 0 when none was taken
 * or none is left after clamping.  Out of memory: NULL, and the intervals
 * stay taken.
 */
const struct rp_enc_ins *rp_offq_plan(struct rp_offq *q, const struct rp_raw *recs, size_t n,
                                      size_t *nins);

void rp_offq_free(struct rp_offq *q);

/*
 * Hands over the pending DEFS payload: *len is its length (0 if none).  The
 * pointer stays valid until the next encoder call; the pending list is empty
 * afterwards.
 */
const uint8_t *rp_enc_take_defs(struct rp_enc *e, size_t *len);

/* Fills a 32-byte file header. */
void rp_file_header(uint8_t out[RP_FILE_HDR_SIZE]);

/* Fills a 16-byte chunk header for payload[0..len). */
void rp_chunk_header(uint8_t out[RP_CHUNK_HDR_SIZE], uint32_t type, const void *payload,
                     uint32_t len);

/*
 * Appends an INFO key/value pair to buf (which has cap bytes, *len used).
 * Returns 0, or RP_EINVAL when it would not fit (nothing appended).
 */
int rp_info_put(uint8_t *buf, size_t cap, size_t *len, const char *key, const void *val,
                size_t vlen);

#endif /* RP_TRACE_WRITER_H */

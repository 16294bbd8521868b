// SPDX-License-Identifier: MIT
/*
 * format.h - the rankprof trace file format (version 1), shared by the
 * recorder's writer and the analyzer's reader.  docs/trace-format.md is the
 * prose version of this file; change both together.
 *
 * A trace is a 32-byte file header followed by self-delimiting chunks:
 *
 *   +----------------------+  offset 0
 *   | magic "RANKPROF"     |  8 bytes
 *   | u16 major, u16 minor |
 *   | u32 header size (32) |
 *   | u32 flags, u32 0     |
 *   | u64 0                |
 *   +----------------------+  offset 32
 *   | chunk header (16)    |  u32 type | u32 payload length | u32 payload crc32
 *   |                      |  | u32 header crc32 (of the 12 bytes before it)
 *   | payload              |
 *   +----------------------+
 *   | chunk ...            |
 *   +----------------------+
 *   | END chunk            |  present only when the process ended normally
 *   +----------------------+
 *
 * All integers are little-endian.  The header crc protects the length before
 * the reader trusts it; the payload crc protects everything else.  A chunk is
 * never longer than RP_CHUNK_MAX, so no allocation is sized by an unchecked
 * field.
 *
 * Events are delta- and varint-encoded inside EVENTS chunks (see "event
 * stream" below); each EVENTS chunk restarts its deltas from a base stored in
 * its own header, so one damaged chunk never shifts the time of another.
 */
#ifndef RP_TRACE_FORMAT_H
#define RP_TRACE_FORMAT_H

#include <stdint.h>

#define RP_MAGIC          "RANKPROF"
#define RP_MAGIC_LEN      8
#define RP_VERSION_MAJOR  1
#define RP_VERSION_MINOR  5
#define RP_FILE_HDR_SIZE  32
#define RP_CHUNK_HDR_SIZE 16
#define RP_CHUNK_MAX      (64u << 20) /* payload limit the reader enforces */

/*
 * Thread streams (format 1.3).  The u32 "tid" of THREAD, EVENTS, LOST,
 * FCOUNT chunks and of STATS thread records names one recorded thread:
 * the kernel thread id in the low RP_TID_BITS bits (Linux tids are below
 * 2^22), and above them its generation, the number of earlier threads of
 * the process the recorder saw with the same kernel tid (ids are reused
 * once a thread has ended).  Generation 0 is the plain tid, as in older
 * files, so an older reader sees a reused tid as another thread id.
 */
#define RP_TID_BITS 22
#define RP_TID_MASK ((1u << RP_TID_BITS) - 1)
#define RP_GEN_MAX  ((1u << (32 - RP_TID_BITS)) - 1) /* generations saturate here */

/* The kernel tid and the generation of a thread stream id. */
static inline uint32_t rp_tid_of(uint32_t stream)
{
    return stream & RP_TID_MASK;
}
static inline uint32_t rp_tid_gen(uint32_t stream)
{
    return stream >> RP_TID_BITS;
}

/* Whether stream id s is selected by a thread filter `want` (not 0): the
 * stream itself, or, for a plain kernel tid, every generation of it. */
static inline int rp_tid_match(uint32_t want, uint32_t s)
{
    return want == s || (want <= RP_TID_MASK && (s & RP_TID_MASK) == want);
}

/* Chunk types.  Readers skip (and count) types they do not know. */
enum rp_chunk_type {
    RP_CH_INFO = 1,    /* key/value strings: program, argv, pid, clock, mode ... */
    RP_CH_CLOCK = 2,   /* u64 ticks, u64 monotonic ns, u64 realtime ns: calibration */
    RP_CH_MAPS = 3,    /* text of /proc/self/maps, executable mappings only */
    RP_CH_THREAD = 4,  /* u32 tid (a stream id, above), u32 flags, then the thread name */
    RP_CH_DEFS = 5,    /* id definitions, see struct layout below */
    RP_CH_EVENTS = 6,  /* u32 tid, u32 nevents | flags, u64 base ticks, [snapshot], events */
    RP_CH_LOST = 7,    /* u32 tid, u32 0, u64 count, u64 first ticks, u64 last ticks */
    RP_CH_END = 8,     /* u64 ticks, u64 events, u64 lost, i32 status, u32 flags */
    RP_CH_STATS = 9,   /* direct mode: per-id statistics (see direct mode docs) */
    RP_CH_FCOUNT = 10, /* u32 tid, u32 0, then { u64 code address, u64 calls } pairs: calls
                          of throttled functions, counted and not recorded (format 1.2) */
};

/*
 * INFO payload: repeated { u16 key length, key, u32 value length, value }.
 * Keys written by the recorder: "program", "argv" (NUL-separated), "pid",
 * "ppid", "clock" ("tsc", "cntvct", "monotonic", or "bare": a bare-metal
 * target's clock, whose rate freq_hz is), "freq_hz" (start-up
 * estimate), "mode" ("trace" or "direct"), "recorder" (version), "policy"
 * ("wait" or "drop"), "offcpu" (format 1.3: how off-CPU time was separated:
 * "perf" context switches, "schedstat" (not separated; the run-queue delay
 * is given at the end), or "none"), "offcpu_error" (why perf was not used),
 * and, when the recorder measured its own cost at
 * start-up (format 1.2, trace mode): "overhead_ticks" (what one recorded
 * call, its enter and exit event, adds to the time of the span around it;
 * decimal, may have a fraction) and "overhead_self_ticks" (the part of a
 * span's own enter and exit that falls inside the span).  The analyzer
 * subtracts them (docs/performance.md).  Format 1.3 adds
 * "overhead_spread_ticks" (p95 - median of the measured span of an empty
 * call: the analyzer's resolution is 1 tick + its ceiling), "rank" (the
 * MPI rank, from the launcher's environment), "overhead_late" ("pending"
 * in the first INFO, then "PAIR SELF SPREAD" ticks or "none" in an INFO of
 * its own, up to three: the writer's measurements while the program ran,
 * the fastest of all used), and
 * librankprof-mpi's "clock_offset_init" and "clock_offset_fini" ("LOCAL
 * OFFSET RTT" ns).
 */

/* The kind of a defined id; stored in DEFS and in the JSON "kind" field. */
enum rp_kind {
    RP_KIND_FUNC = 0,      /* key is a code address */
    RP_KIND_POINT = 1,     /* named region, key is the site struct address */
    RP_KIND_LOCK_WAIT = 2, /* key is the lock address */
    RP_KIND_LOCK_HOLD = 3, /* key is the lock address */
    RP_KIND_IO = 4,        /* device transaction */
    RP_KIND_INSTANT = 5,   /* a point in time: timer, IRQ, user mark */
    RP_KIND_COUNTER = 6,   /* a sampled value */
    RP_KIND_WAIT = 7,      /* a blocking call (format 1.3): key is its site, or, with
                              class RP_CLASS_LOCK, the condition variable waited on */
    RP_KIND_OFFCPU = 8,    /* the thread was off CPU in the enclosing span (format 1.3):
                              a synthetic node "[off-cpu]", key 0 */
    RP_KIND_MAX
};

/*
 * DEFS payload: repeated records, each
 *   u32 id | u8 kind | u8 class | u16 name length | u64 key | u32 line |
 *   u16 file length | u16 extension length | name bytes | file bytes |
 *   extension bytes
 * Ids are dense, start at 1 and are defined before the first EVENTS chunk
 * that uses them.  Functions have an empty name: the analyzer names them from
 * the MAPS chunk and the binaries' symbol tables.
 *
 * The extension (format 1.1; always 0 bytes in 1.0 files, where the field
 * was "reserved") holds optional fields in this order, each present only if
 * the extension is long enough; readers skip bytes they do not know:
 *   u64 budget   a point's time budget in ticks (0 = none)
 */
#define RP_DEF_FIXED      24
#define RP_DEF_EXT_BUDGET 8 /* extension bytes up to and including the budget */

/*
 * Event stream (payload of EVENTS after its 16-byte header).  Each event is
 *
 *   varint h = (delta << 3) | op      delta: ticks since the previous event
 *   [operands, by op]                 (the first is relative to base ticks)
 *
 * ops:
 */
enum rp_op {
    RP_OP_ENTER = 0,   /* + varint id: a span begins (function, point, lock, io) */
    RP_OP_EXIT = 1,    /* the innermost open span ends */
    RP_OP_EXIT_ID = 2, /* + varint id: span id ends, when it is not the innermost */
    RP_OP_INSTANT = 3, /* + varint id, varint argument */
    RP_OP_COUNTER = 4, /* + varint id, zigzag varint value */
    RP_OP_ARG = 5,     /* + varint argument of the innermost open span (io bytes) */
    RP_OP_LOST = 6,    /* + varint count: events the recorder dropped here; the
                          spans open before it are closed by the reader as lost */
    RP_OP_UNWIND = 7,  /* + varint id (format 1.3, compact stream only): the stack
                          unwound without exits (longjmp, an exception caught);
                          every span above the innermost open span id ends here,
                          with its time.  id 0: the thread ends here, every open
                          span ends (pthread_exit, the thread's end) */
    RP_OP_PAUSE = 8,   /* + varint ticks (format 1.3, compact stream only): the thread
                          spent that long in the recorder (waiting for the writer, or
                          encoding its own buffer) just before this point; every
                          span open here is shortened by it (the reader moves their
                          starts later by it, as the writer does in its snapshots) */
    /* Compact stream only (format 1.3), lock holds as intervals that need not
     * nest with the spans (docs/locks.md):
     *   HOLD_BEGIN  + varint id: the thread acquired lock-hold id;
     *   HOLD_END    + varint id, varint raw, varint events, varint how:
     *               the hold of id begun raw ticks before ends, with `events`
     *               of the thread's events between its HOLD_BEGIN and this;
     *               how = acquirer << 2 | outer << 1 | 1, acquirer the node
     *               of the innermost span open at the HOLD_BEGIN (0 = none),
     *               outer 1 unless another hold of the same lock was open
     *               under it (recursion); how = 0 (raw = events = 0): a
     *               release with no acquisition known (an unmatched exit).
     * Self-contained, so a chunk replays without the chunks before it. */
    RP_OP_HOLD_BEGIN = 9,
    RP_OP_HOLD_END = 10,
};
/* The highest op a reader of this version knows. */
#define RP_OP_LAST RP_OP_HOLD_END
#define RP_OP_BITS 3

/* The ARG of a lock-wait span that ended without the lock (a failed
 * try-lock, a timed-out or refused wait); a wait with no ARG was granted. */
#define RP_ARG_LOCK_FAILED 1

/*
 * librankprof-mpi's spans (a wait site of file "mpi") may carry more ARGs
 * than one (format 1.3; docs/multi-process.md): the last is always the
 * peer and bytes (RP_IO_ARG), what an older reader keeps; the ones before
 * it say, in their top bits (56..59), what they are:
 *   TAG     the message's tag (low 32 bits; a receive's as matched,
 *           0xffffffff for MPI_ANY_TAG not yet matched)
 *   REQ     the request an MPI_Isend or MPI_Irecv started (low 56 bits: its
 *           id, numbered from 1 in each process)
 *   SENT    a send request the call completed (a wait or test)
 *   RECVD   a receive request the call completed, followed by its STATUS
 *           (source as a rank of MPI_COMM_WORLD, 24 bits, 0xffffff unknown,
 *           << 32 | tag) and BYTES (received)
 * MPI_Sendrecv's are its send's TAG, then its receive's STATUS and BYTES
 * with no RECVD before them.
 */
enum rp_mpi_arg {
    RP_MPI_ARG_TAG = 1,
    RP_MPI_ARG_REQ = 2,
    RP_MPI_ARG_SENT = 3,
    RP_MPI_ARG_RECVD = 4,
    RP_MPI_ARG_STATUS = 5,
    RP_MPI_ARG_BYTES = 6,
};
#define RP_MPI_ARG(type, v)  (((uint64_t)(type) << 56) | ((uint64_t)(v) & ((1ull << 56) - 1)))
#define RP_MPI_ARG_TYPE(arg) ((unsigned)((arg) >> 56) & 15u)
#define RP_MPI_ARG_VAL(arg)  ((arg) & ((1ull << 56) - 1))
#define RP_OP_MASK           7u

#define RP_VARINT_MAX 10 /* bytes of a 64-bit LEB128 varint */

/*
 * EVENTS header: u32 tid | u32 (event count | flags) | u64 base ticks.  With
 * RP_EV_SNAPSHOT in the flags, the event stream is preceded by the stack of
 * spans open on the thread when the chunk begins, outermost first:
 *
 *   varint depth (<= RP_SNAP_MAX), then per span: varint id,
 *   zigzag varint (base ticks - the span's start ticks),
 *   [varint events]   with RP_EV_SNAPCOUNT (format 1.2): the number of the
 *                     thread's events after the span's ENTER and before
 *                     this chunk (what overhead compensation needs)
 *   [varint paused]   with RP_EV_SNAPPAUSE (format 1.4): the ticks of the
 *                     thread's PAUSEs after the span's ENTER and before this
 *                     chunk, by which its start above was moved later: its
 *                     ENTER was at start - paused (what -r's window judges)
 *
 * so that a reader can replay each chunk on its own (in parallel) and check
 * that the chunks of a thread join up.  Without it (depth over the limit,
 * or older files) the chunks of a thread replay in order.
 */
#define RP_EV_COUNT_MASK                                                                           \
    0x07ffffffu /* 0x0fffffff before 1.5, 0x1fffffff before 1.4,                                   \
                   0x3fffffff before 1.2 (no chunk holds more) */
#define RP_EV_SNAPSHOT  0x80000000u
#define RP_EV_SNAPCOUNT 0x20000000u /* the snapshot's spans carry event counts */
#define RP_EV_SNAPPAUSE 0x10000000u /* and their PAUSE ticks (format 1.4): only when one has */
#define RP_EV_COMPACT   0x40000000u /* the compact event stream, below */
#define RP_EV_PREDICT   0x08000000u /* and its predicted ENTERs (format 1.5), below */

/*
 * The compact event stream (RP_EV_COMPACT, what the recorder writes): one
 * bit of op instead of three, because ENTER and EXIT are nearly all events
 * and a delta of up to 63 ticks then fits the one byte of the head:
 *
 *   varint h = (delta << 1) | 1                  EXIT
 *   varint h = (delta << 1), varint id (not 0)   ENTER id
 *   varint h = (delta << 1), byte 0, byte op     any other op (EXIT_ID,
 *                                                INSTANT, COUNTER, ARG, LOST,
 *                                                UNWIND, HOLD_BEGIN, HOLD_END),
 *                                                then its operands as above
 *
 * With RP_EV_PREDICT as well (format 1.5, what the recorder writes), an
 * ENTER whose id is the predicted one (rp_pred_slot) is its head alone:
 *
 *   varint h = (delta << 1) | 1                  EXIT
 *   varint h = (delta << 2)                      ENTER of the predicted id
 *   varint h = (delta << 2) | 2, varint id       ENTER id (not 0)
 *   varint h = (delta << 2) | 2, byte 0, op      any other op, as above
 *
 * The prediction, kept alike by the writer and every reader, starts empty
 * in each chunk: a table of RP_PRED_SLOTS ids, all 0, and two 32-bit
 * words x = y = 0.  An ENTER reads and writes the slot rp_pred_slot(x, y)
 * (its id is stored there), then sets y to x / 8 and x to its id * 8; an
 * EXIT adds 1 to x (so x is the id of the chunk's latest ENTER * 8 + the
 * EXITs since, modulo 2^32, and y, while fewer than 8 EXITs came between,
 * the id of the ENTER before it); no other op changes anything.  A
 * predicted ENTER whose slot holds 0 is malformed.
 */
#define RP_SNAP_MAX 1024

#define RP_PRED_SLOTS 1024

/* The prediction slot of context x, y (above). */
static inline uint32_t rp_pred_slot(uint32_t x, uint32_t y)
{
    return (uint32_t)((x ^ y << 16) * 0x9e3779b1u) >> 22;
}

/* The context x, y after an ENTER of id (above; an EXIT is x + 1): the
 * writer and every reader learn through it.  Cannot fail. */
static inline void rp_pred_enter(uint32_t *x, uint32_t *y, uint32_t id)
{
    *y = *x >> 3;
    *x = id << 3;
}

/* Event classes; a bit each in the run-time mask. */
enum rp_class {
    RP_CLASS_FUNC = 0,
    RP_CLASS_POINT = 1,
    RP_CLASS_LOCK = 2,
    RP_CLASS_IO = 3,
    RP_CLASS_TIMER = 4,
    RP_CLASS_USER = 5,
    RP_CLASS_WAIT = 6, /* blocking calls (format 1.3) */
    RP_CLASS_MAX
};

/* END flags */
#define RP_END_EXIT    1u /* exit() or return from main */
#define RP_END_SIGNAL  2u /* a fatal signal; status holds the signal number */
#define RP_END_TIMEOUT 4u /* the final flush gave up waiting for some buffers */
/* with RP_END_EXIT: status holds the exit status (the process called exit,
 * _exit, _Exit or quick_exit; not set after a return from main, whose exit
 * the recorder does not see) */
#define RP_END_STATUS 8u

/*
 * STATS payload (direct mode; docs/direct-mode.md): repeated records, each
 *   u32 tag | u32 body length | body
 * so a reader skips tags it does not know.  Bodies:
 *   THREAD  u32 tid, u32 0, u64 first ticks, u64 last ticks, u64 events,
 *           u64 unmatched exits, u64 unclosed spans, u64 events not recorded
 *   NODE    u32 id, u32 nbuckets, u64 calls, incl, dur_sum, excl, min, max,
 *           first start, last start, overruns, f64 mean, f64 m2 (Welford,
 *           ticks), then nbuckets x { u16 bucket, u16 0, u32 count } in
 *           increasing bucket order (src/common/hist.h buckets)
 *   EDGE    u32 caller id (0 = root), u32 callee id, u64 calls, incl, min, max
 *   OUTSIDE u32 id, u32 0, u64 calls, u64 ticks: the id's spans outside the
 *           program's code (docs/waits.md), in no NODE or EDGE record
 *           (an older reader skips it)
 *   ENDS    u32 thread id, u32 0, u64 unwound, u64 cut: the thread's spans
 *           ended without their exit, where the stack unwound past them or
 *           at the thread's or the run's end (an older reader skips it)
 *   CUT     u32 id, u32 0, u64 cut: how many of the id's calls (its NODE
 *           records before) ended without their exit (an older reader
 *           skips it)
 *   FATAL   u32 thread id, u32 depth, u32 n, u32 0, then n x u32 id: the
 *           frames open on the thread a fatal signal hit, the innermost n
 *           (at most RP_STATS_FATAL_MAX) of depth, outermost first (an
 *           older reader skips it)
 * Ids are those of the DEFS chunks before it; a file may hold several
 * STATS chunks, whose records add up.
 */
enum rp_stats_tag {
    RP_STATS_THREAD = 1,
    RP_STATS_NODE = 2,
    RP_STATS_EDGE = 3,
    RP_STATS_OUTSIDE = 4,
    RP_STATS_ENDS = 5,
    RP_STATS_CUT = 6,
    RP_STATS_FATAL = 7,
};
#define RP_STATS_THREAD_LEN  56
#define RP_STATS_NODE_LEN    96 /* without the buckets */
#define RP_STATS_EDGE_LEN    40
#define RP_STATS_OUTSIDE_LEN 24
#define RP_STATS_ENDS_LEN    24
#define RP_STATS_CUT_LEN     16
#define RP_STATS_FATAL_LEN   16 /* without the ids */
#define RP_STATS_FATAL_MAX   64

#endif /* RP_TRACE_FORMAT_H */

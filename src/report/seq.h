// SPDX-License-Identifier: MIT
/*
 * seq.h - sequence diagrams of a trace (docs/design.md §1, §8): PlantUML or Mermaid
 * text with a lifeline per thread, lock, device and timer (and, as an
 * option, per procedure of one thread), and a message per lock request,
 * grant, release and failure, device transaction, timer fire, user mark and
 * cross-thread wake-up.  docs/sequence.md shows one.
 */
#ifndef RP_REPORT_SEQ_H
#define RP_REPORT_SEQ_H

#include <stdint.h>
#include <stdio.h>

#include "analyze/replay.h"

enum rp_seq_format { RP_SEQ_PLANTUML, RP_SEQ_MERMAID };

/* Message classes, a bit each in rp_seq_opts.classes. */
enum {
    RP_SEQ_LOCK = 1u << 0,  /* request, grant, release, failure, wake-up */
    RP_SEQ_IO = 1u << 1,    /* device transactions */
    RP_SEQ_TIMER = 1u << 2, /* timer fires */
    RP_SEQ_USER = 1u << 3,  /* user marks (instants of class user) */
    RP_SEQ_FUNC = 1u << 4,  /* calls and returns of func_tid's procedures */
    RP_SEQ_MPI = 1u << 5,   /* MPI messages (librankprof-mpi): sends and receives */
    RP_SEQ_ALL = 0x3fu,
};

#define RP_SEQ_MAX_TIDS 16

struct rp_seq_opts {
    enum rp_seq_format format;
    uint64_t from_ns, to_ns;        /* window from the run's first event; to_ns 0 = end */
    uint32_t tids[RP_SEQ_MAX_TIDS]; /* only these threads; ntids 0 = all */
    unsigned ntids;
    unsigned classes;      /* RP_SEQ_*; 0 means the default: all but FUNC */
    uint32_t func_tid;     /* the thread whose procedures get lifelines (FUNC) */
    uint32_t max_messages; /* the cap; 0 = the default, 400 */
    const char *title;     /* or NULL */
};

/*
 * Parses "lock,io,timer,user,func" (or "all") into RP_SEQ_* bits.  Returns
 * 0, or RP_EINVAL naming the bad class in err.
 */
int rp_seq_parse_classes(const char *s, unsigned *out, char *err, size_t errsz);

struct rp_export_ctx;
/*
 * Whether the plantuml or mermaid export with ctx's -O parameters (classes,
 * funcs) can have a message: ctx->p defines a span or instant of a class it
 * shows (a lock, an io span, a timer or a mark, an MPI call; any procedure
 * with funcs).  Without one the pass over the events is not made and the
 * diagram has no message.  1 when the parameters are bad (the diagram says
 * what is wrong).  Cannot fail.
 */
int rp_seq_export_drawable(const struct rp_export_ctx *ctx);

/*
 * Writes the diagram of the trace at path (read with o, the options of the
 * replay that built the named profile p) to out.  Streams the trace; keeps
 * the first max_messages messages of the window (memory bounded by the cap),
 * and says in a note how many were cut and from when.  Returns 0, RP_ENOMEM,
 * or the walk's error with err set.  Write errors are left for ferror().
 */
int rp_seq_write(FILE *out, const char *path, const struct rp_replay_opts *o,
                 const struct rp_profile *p, const struct rp_seq_opts *so, char *err, size_t errsz);

#endif /* RP_REPORT_SEQ_H */

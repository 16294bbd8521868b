// SPDX-License-Identifier: MIT
/*
 * walk.c - event-by-event streaming of a trace (walk.h).
 */
#include "walk.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/error.h"

void rp_walk_progress(const struct rp_reader *r, int *shown)
{
    if (!r->size)
        return;
    int pct = (int)(r->off * 100 / r->size);
    if (pct == *shown)
        return;
    *shown = pct;
    fprintf(stderr, "\rrankprof: reading %s: %3d%%", r->path, pct);
}

/* Decodes one EVENTS chunk and hands its events to ops->event. */
static int walk_events(const struct rp_chunk *c, uint32_t only_tid, const struct rp_walk_ops *ops,
                       void *ctx, char *err, size_t errsz)
{
    struct rp_evdec d;
    struct rp_event ev;
    int rc;

    if (rp_evdec_init(&d, c->data, c->len) < 0) {
        snprintf(err, errsz, "EVENTS chunk at offset %llu is shorter than its header",
                 (unsigned long long)c->offset);
        return RP_EFORMAT;
    }
    if ((only_tid && !rp_tid_match(only_tid, d.tid)) || !ops->event)
        return 0;
    while ((rc = rp_evdec_next(&d, &ev)) > 0)
        if ((rc = ops->event(ctx, d.tid, &ev)) < 0)
            return rc;
    if (rc < 0)
        rp_walk_evdec_err(c, &d, err, errsz);
    return rc;
}

void rp_walk_evdec_err(const struct rp_chunk *c, const struct rp_evdec *d, char *err, size_t errsz)
{
    if (rp_evdec_miscount(d))
        snprintf(err, errsz, "EVENTS chunk at offset %llu states %u events, its stream holds %u",
                 (unsigned long long)c->offset, d->count, d->n);
    else
        snprintf(err, errsz, "malformed event at offset %llu (in the chunk at offset %llu)",
                 (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(d->p - d->start)),
                 (unsigned long long)c->offset);
}

int rp_walk_reader_rc(const struct rp_reader *r, int rc, int force, char *err, size_t errsz)
{
    if (rc >= 0 || err[0] || !r->err[0])
        return rc;
    if (force && (rc == RP_ETRUNC || rc == RP_ECRC))
        return 0; /* the sound part is the trace */
    snprintf(err, errsz, "%s", r->err);
    return rc;
}

int rp_walk_file(const char *path, const struct rp_replay_opts *o, const struct rp_walk_ops *ops,
                 void *ctx, int progress, char *err, size_t errsz)
{
    struct rp_reader r;
    struct rp_chunk c;
    int rc, shown = -1;

    err[0] = 0;
    if ((rc = rp_reader_open(&r, path)) < 0) {
        snprintf(err, errsz, "%s", r.err);
        return rc;
    }
    r.force = o->force;
    progress = progress && isatty(2);
    while ((rc = rp_reader_next(&r, &c)) > 0) {
        if (c.type == RP_CH_EVENTS)
            rc = walk_events(&c, o->tid, ops, ctx, err, errsz);
        else if (c.type == RP_CH_THREAD && c.len >= 8 && ops->thread &&
                 (!o->tid || rp_tid_match(o->tid, rp_get32(c.data))))
            rc = ops->thread(ctx, rp_get32(c.data), (const char *)c.data + 8, c.len - 8);
        if (rc < 0)
            break;
        if (progress)
            rp_walk_progress(&r, &shown);
    }
    rc = rp_walk_reader_rc(&r, rc, o->force, err, errsz);
    if (progress && shown >= 0)
        fputs("\r\033[K", stderr);
    rp_reader_close(&r);
    return rc < 0 ? rc : 0;
}

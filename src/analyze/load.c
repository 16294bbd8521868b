// SPDX-License-Identifier: MIT
/*
 * load.c - reading a trace into a profile (rp_replay_file): the chunks in
 * file order, definitions (DEFS), key/value records (INFO), clocks,
 * threads, the end; EVENTS chunks are replayed (replay.c) by the workers
 * or in order, direct mode's STATS are read by stats.c.  Naming the nodes
 * from the binaries (rp_profile_symbolize) comes after.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bigmem.h"
#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"
#include "replay_int.h"
#include "stats.h"
#include "symbols.h"
#include "trace/reader.h"

/* Makes nodes[0..id] exist.  Returns 0 or RP_ENOMEM. */
/*
 * A DEFS text (n bytes at s) for display (rp_text_dup) in p's string arena;
 * intern: one copy per distinct text (files).  Printable ASCII, the usual
 * case, is copied as it is.  Returns NULL when out of memory.
 */
static char *def_text(struct rp_profile *p, const uint8_t *s, size_t n, int intern)
{
    size_t i = 0;
    while (i < n && s[i] >= 0x20 && s[i] < 0x7f)
        i++;
    if (i == n)
        return rp_profile_strndup(p, (const char *)s, n, intern);
    size_t len;
    char *t = rp_text_dup(s, n, 0, &len), *r = t ? rp_profile_strndup(p, t, len, intern) : NULL;
    free(t);
    return r;
}

static int nodes_reserve(struct rp_profile *p, uint32_t id)
{
    if (id < p->n_nodes)
        return 0;
    if (rp_grow(&p->nodes, &p->cap_nodes, id + 1, sizeof(*p->nodes), 256) < 0)
        return RP_ENOMEM;
    for (uint32_t i = p->n_nodes; i <= id; i++) {
        memset(&p->nodes[i], 0, sizeof(p->nodes[i]));
        p->nodes[i].id = i;
        p->nodes[i].kind = 0xff; /* undefined until DEFS says */
    }
    p->n_nodes = id + 1;
    return 0;
}

/*
 * Replays an EVENTS chunk: as a job for the workers when it carries a
 * snapshot and there are workers, else here after the jobs before it.
 * Returns 0, or < 0 with the message in err.
 */
static int replay_events(struct rp_profile *p, const struct rp_chunk *c, uint32_t only_tid,
                         char *err, size_t errsz)
{
    struct priv *v = p->priv;
    int rc;

    if (c->len < 16) {
        snprintf(err, errsz, "malformed event at offset %llu (in the chunk at offset %llu)",
                 (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE),
                 (unsigned long long)c->offset);
        return RP_EFORMAT;
    }
    uint32_t tid = rp_get32(c->data);
    if (only_tid && !rp_tid_match(only_tid, tid))
        return 0;
    struct tstate *t = rp_tstate_get(p, tid);
    if (!t)
        return RP_ENOMEM;
    /* Compensation needs every frame's event count: a snapshot without them
     * (not from this recorder) is not enough, the chunk replays in order. */
    uint32_t word = rp_get32(c->data + 4);
    int comp = v->want_comp && p->overhead_known;
    int parallel =
        v->started && v->nworkers && (word & RP_EV_SNAPSHOT) && (!comp || (word & RP_EV_SNAPCOUNT));
    if (!parallel && (rc = rp_jobs_drain(p, err, errsz)) < 0)
        return rc;
    /* Deep stacks: a job of a resident thread needs its stack on the thread */
    if (parallel && t->rs && (rc = rp_resident_evict(v, t)) < 0)
        return rc;
    if (!parallel && !t->rs && t->depth >= RP_RESIDENT_MIN && (rc = rp_resident_enter(p, t)) < 0)
        return rc;
    uint64_t seq = atomic_load_explicit(&v->submitted, memory_order_relaxed); /* ours to write */
    if (parallel && seq - v->joined == RP_JOBS_MAX && (rc = rp_jobs_join_oldest(p, err, errsz)) < 0)
        return rc;
    struct job *j = &v->jobs[seq % RP_JOBS_MAX];
    if (rp_grow(&j->data, &j->cap, c->len + RP_REPLAY_PAD, 1, 65536) < 0)
        return RP_ENOMEM;
    memcpy(j->data, c->data, c->len);
    memset(j->data + c->len, 0, RP_REPLAY_PAD);
    j->len = c->len;
    j->offset = c->offset;
    j->ti = t->ti;
    atomic_store_explicit(&j->done, 0, memory_order_relaxed);
    /* a thread's first chunk in order starts from its snapshot too: it may
     * begin inside spans (a rotated trace's oldest piece, a ring's window) */
    j->from_snap = parallel || (!t->depth && !p->threads[t->ti].events && (word & RP_EV_SNAPSHOT) &&
                                (!comp || (word & RP_EV_SNAPCOUNT)));
    j->comp = comp;
    j->offid = v->offid;
    j->flt = v->flt;
    j->outside = v->outside;
    j->pairfp = v->pairfp;
    j->selffp = v->selffp;
    j->res = comp ? v->res_comp : rp_comp_res(0, 0, p->clock_step);
    j->resident = !parallel && t->rs;
    j->evbase = j->resident ? t->rs->base : 0;
    if (j->resident) {
        struct acc *a = &v->acc[ACC_MAIN];
        rp_rs_swap(a, t->rs);
        rp_replay_chunk(p, a, j);
        rp_rs_swap(a, t->rs);
        return rp_replay_join(p, j, err, errsz);
    }
    if (!parallel) {
        /* U is the thread's stack as the chunks before left it */
        if (rp_grow(&j->in, &j->capin, t->depth + 1, sizeof(*j->in), 64) < 0)
            return RP_ENOMEM;
        if (t->depth) /* t->stack is NULL until the first push */
            memcpy(j->in, t->stack, t->depth * sizeof(*j->in));
        j->nin = t->depth;
        rp_replay_chunk(p, &v->acc[ACC_MAIN], j);
        return rp_replay_join(p, j, err, errsz);
    }
    rp_jobs_submit(v, seq);
    return 0;
}

/* Tells the replayers' id checks that node id is defined (no job runs). */
static void defined(struct priv *v, uint32_t id)
{
    for (size_t k = 0; k < sizeof(v->acc) / sizeof(v->acc[0]); k++)
        if (id < v->acc[k].nact && (v->acc[k].active[id] & RP_ACTIVE_UNDEF))
            v->acc[k].active[id] &= ~RP_ACTIVE_UNDEF; /* (untouched pages stay so) */
    for (uint32_t k = 0; k < v->nres; k++) {          /* resident threads' own counts */
        struct rstate *rs = v->ts[v->res[k]].rs;
        if (id < rs->nact)
            rs->active[id] &= ~RP_ACTIVE_UNDEF;
    }
}

/* Records the kind of a node that the accumulators already hold (struct hot's
 * `blocked`). */
static void defined_kind(struct priv *v, uint32_t id, uint8_t kind)
{
    for (size_t k = 0; k < sizeof(v->acc) / sizeof(v->acc[0]); k++)
        if (id < v->acc[k].nhot && v->acc[k].hot[id].blocked != blocked_kind(kind))
            v->acc[k].hot[id].blocked = blocked_kind(kind);
}

static int read_defs(struct rp_profile *p, const struct rp_chunk *c, char *err, size_t errsz)
{
    const uint8_t *q = c->data, *end = c->data + c->len;
    while (q < end) {
        if ((size_t)(end - q) < RP_DEF_FIXED)
            goto bad;
        uint32_t id = rp_get32(q);
        uint8_t kind = q[4], cls = q[5];
        uint16_t nlen = rp_get16(q + 6), flen = rp_get16(q + 20), xlen = rp_get16(q + 22);
        if ((size_t)(end - q) < RP_DEF_FIXED + (size_t)nlen + flen + xlen || id == 0 ||
            kind >= RP_KIND_MAX ||
            (uint64_t)id * RP_DEF_FIXED > c->offset + RP_CHUNK_HDR_SIZE + c->len)
            goto bad; /* ids are dense, each defined by a record of 24+ bytes */
        if (nodes_reserve(p, id) < 0)
            return RP_ENOMEM;
        struct rp_node *n = &p->nodes[id];
        if (n->kind != 0xff) { /* an id is defined once, or again unchanged at the start of
                                  each piece of a rotated trace (record --max-size) */
            if (n->kind != kind || n->key != rp_get64(q + 8))
                goto bad;
            q += RP_DEF_FIXED + nlen + flen + xlen;
            continue;
        }
        n->kind = kind;
        defined(p->priv, id);
        defined_kind(p->priv, id, kind);
        if (kind == RP_KIND_OFFCPU && !((struct priv *)p->priv)->offid)
            ((struct priv *)p->priv)->offid = id;
        n->cls = cls;
        n->key = rp_get64(q + 8);
        n->line = rp_get32(q + 16);
        if (nlen && !(n->name = def_text(p, q + RP_DEF_FIXED, nlen, 0)))
            return RP_ENOMEM;
        if (flen && !(n->file = def_text(p, q + RP_DEF_FIXED + nlen, flen, 1)))
            return RP_ENOMEM;
        if (xlen >= RP_DEF_EXT_BUDGET) { /* format 1.1 extension (format.h) */
            struct rp_node_x x = rp_node_x_raw(n);
            x.budget = rp_get64(q + RP_DEF_FIXED + nlen + flen);
            if (rp_node_x_setraw(n, &x) < 0)
                return RP_ENOMEM;
        }
        q += RP_DEF_FIXED + nlen + flen + xlen;
    }
    return 0;
bad:
    snprintf(err, errsz, "malformed definition at offset %llu",
             (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(q - c->data)));
    return RP_EFORMAT;
}

/*
 * Reads the key/value records of an INFO chunk into p.  Returns 0, or
 * RP_EFORMAT (err names the record's file offset) for a record that runs
 * past the payload (format 4.1); the records before it are kept.
 */
/* An INFO value (not NUL-terminated, vlen bytes) as a decimal number; 0
 * when it is not one.  Cannot fail. */
static uint64_t info_u64(const char *val, uint32_t vlen)
{
    char tmp[32];
    size_t l = vlen < sizeof(tmp) - 1 ? vlen : sizeof(tmp) - 1;
    memcpy(tmp, val, l);
    tmp[l] = 0;
    return strtoull(tmp, NULL, 10);
}

/* INFO overhead_late's value: "pending" (the first INFO's promise), or
 * "PAIR SELF SPREAD" in ticks when the recorder measured again, or "none";
 * of several values (a run has up to RP_LATE_MAX), the fastest is kept.
 * Cannot fail (anything else counts as none). */
static void late_parse(struct priv *v, const char *val, uint32_t vlen)
{
    char tmp[96];
    size_t l = vlen < sizeof(tmp) - 1 ? vlen : sizeof(tmp) - 1;
    memcpy(tmp, val, l);
    tmp[l] = 0;
    double a, b, c;
    char extra;
    if (!strcmp(tmp, "pending"))
        v->late_pending = v->late_pending ? v->late_pending : 1;
    else if (sscanf(tmp, "%lf %lf %lf %c", &a, &b, &c, &extra) == 3 && a >= 0 && a <= 1e6 &&
             b >= 0 && b <= a && c >= 0 && c <= 1e6) {
        if (v->late_have && a >= v->late_pair)
            return; /* the fastest of them (up to RP_LATE_MAX in a run) */
        v->late_have = 1;
        v->late_pair = a;
        v->late_self = b;
        v->late_spread = c;
    }
}

static int read_info(struct rp_profile *p, const struct rp_chunk *c, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    const uint8_t *q = c->data, *end = c->data + c->len, *kb, *vb;
    uint32_t klen, vlen;
    int more;
    while ((more = rp_info_next(&q, end, &kb, &klen, &vb, &vlen)) > 0) {
        const char *k = (const char *)kb, *val = (const char *)vb;
        char **dst = NULL;
#define KEY(s) (klen == sizeof(s) - 1 && !memcmp(k, s, klen))
        if (KEY("program"))
            dst = &p->program;
        else if (KEY("clock"))
            dst = &p->clock_name;
        else if (KEY("mode"))
            dst = &p->mode;
        else if (KEY("argv")) {
            free(p->argv);
            p->argv = rp_text_dup(val, vlen, 1, &p->argv_len);
        } else if (KEY("offcpu")) { /* format 1.3: how off-CPU time is known */
            size_t l = vlen < sizeof(p->offcpu_src) - 1 ? vlen : sizeof(p->offcpu_src) - 1;
            memcpy(p->offcpu_src, val, l);
            p->offcpu_src[l] = 0;
        } else if (KEY("offcpu_error")) {
            size_t l = vlen < sizeof(p->offcpu_err) - 1 ? vlen : sizeof(p->offcpu_err) - 1;
            memcpy(p->offcpu_err, val, l);
            p->offcpu_err[l] = 0;
            for (size_t i = 0; i < l; i++) /* printed in report headers: no controls */
                if ((unsigned char)p->offcpu_err[i] < 0x20 || p->offcpu_err[i] == 0x7f)
                    p->offcpu_err[i] = '?';
        } else if (KEY("running")) { /* direct mode's statistics so far (top) */
            p->running = info_u64(val, vlen) != 0;
        } else if (KEY("checkpoint")) { /* ... written unasked, against SIGKILL */
            p->checkpoint = info_u64(val, vlen) != 0;
        } else if (KEY("fatal_tid")) { /* the thread a fatal signal hit */
            uint64_t x = info_u64(val, vlen);
            p->fatal_tid = (uint32_t)(x > UINT32_MAX ? 0 : x);
        } else if (KEY("snapshot")) { /* the flight recorder's (record --ring) */
            dst = &p->snapshot;
        } else if (KEY("ring_size") || KEY("ring_dropped") || KEY("ring_run_ns") ||
                   KEY("ring_triggers") || KEY("ring_triggers_skipped")) {
            uint64_t x = info_u64(val, vlen);
            *(KEY("ring_size")       ? &p->ring_size
              : KEY("ring_dropped")  ? &p->ring_dropped
              : KEY("ring_run_ns")   ? &p->ring_run_ns
              : KEY("ring_triggers") ? &p->ring_triggers
                                     : &p->ring_triggers_skipped) = x;
        } else if (KEY("windows") || KEY("recorded_ns") || KEY("window_exits")) {
            uint64_t x = info_u64(val, vlen); /* recording switched at run time (ctl) */
            if (KEY("windows"))
                p->windows = (uint32_t)(x > UINT32_MAX ? UINT32_MAX : x);
            else if (KEY("recorded_ns"))
                p->recorded_ns = x;
            else
                p->window_exits = x;
        } else if (klen > 5 && !memcmp(k, "lost_", 5)) { /* drops by reason */
            for (unsigned w = 0; w < RP_WHY_N; w++)
                if ((size_t)klen - 5 == strlen(rp_why_name(w)) &&
                    !memcmp(k + 5, rp_why_name(w), klen - 5)) {
                    p->lost_why[w] = info_u64(val, vlen);
                    p->lost_why_known = 1;
                }
        } else if (KEY("offcpu_lost") || KEY("offcpu_late") || KEY("offcpu_runq_ns")) {
            uint64_t x = info_u64(val, vlen);
            if (KEY("offcpu_lost"))
                p->offcpu_lost = x;
            else if (KEY("offcpu_late"))
                p->offcpu_late = x;
            else {
                p->offcpu_runq_ns = x;
                p->offcpu_runq_known = 1;
            }
        } else if (KEY("overhead_late")) {
            late_parse(v, val, vlen);
        } else if (KEY("pid") || KEY("freq_hz") || KEY("overhead_ticks") ||
                   KEY("overhead_self_ticks") || KEY("overhead_spread_ticks") ||
                   KEY("clock_step_ticks")) {
            char tmp[32];
            size_t l = vlen < sizeof(tmp) - 1 ? vlen : sizeof(tmp) - 1;
            memcpy(tmp, val, l);
            tmp[l] = 0;
            if (KEY("pid"))
                p->pid = (uint32_t)strtoul(tmp, NULL, 10);
            else if (KEY("freq_hz"))
                v->freq_hz = strtod(tmp, NULL);
            else if (KEY("overhead_ticks"))
                p->overhead_pair = strtod(tmp, NULL);
            else if (KEY("clock_step_ticks")) { /* 1 tick unless in [2, 1e6] */
                double step = strtod(tmp, NULL);
                p->clock_step = step >= 2 && step <= 1e6 ? step : 1;
            } else if (KEY("overhead_spread_ticks"))
                p->overhead_spread = strtod(tmp, NULL);
            else
                p->overhead_self = strtod(tmp, NULL);
            if (KEY("overhead_ticks"))
                p->overhead_known = 1;
        }
#undef KEY
        if (dst) {
            free(*dst);
            *dst = rp_text_dup(val, vlen, 0, NULL);
        }
    }
    if (more == 0)
        return 0;
    snprintf(err, errsz,
             "malformed INFO record at offset %llu: it runs past the end of its chunk at offset "
             "%llu (%u bytes)",
             (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(q - c->data)),
             (unsigned long long)c->offset, c->len);
    return RP_EFORMAT;
}

/* Whether the fixed-size payload of chunk c has at least need bytes (format
 * section 4: longer is a later minor version, shorter is malformed).
 * Returns 0, or RP_EFORMAT with err naming the chunk's offset. */
static int fixed_len(const struct rp_chunk *c, const char *name, uint32_t need, char *err,
                     size_t errsz)
{
    if (c->len >= need)
        return 0;
    snprintf(err, errsz, "malformed %s chunk at offset %llu: %u bytes, the format says %u", name,
             (unsigned long long)c->offset, c->len, need);
    return RP_EFORMAT;
}

/*
 * Checks the overhead INFO read so far and fixes what compensation uses:
 * a value that is not a number in [0, 1e6] ticks makes the trace count as
 * one without a measurement (with a warning); self is at most pair.
 */
static void overhead_check(struct rp_profile *p)
{
    struct priv *v = p->priv;
    if (!p->overhead_known)
        return;
    if (!(p->overhead_pair >= 0 && p->overhead_pair <= 1e6) ||
        !(p->overhead_self >= 0 && p->overhead_self <= 1e6)) {
        rp_profile_warn(
            p, "the trace's overhead measurement is not a number in range; not compensated");
        p->overhead_known = 0;
        p->overhead_pair = p->overhead_self = 0;
        return;
    }
    if (p->overhead_self > p->overhead_pair)
        p->overhead_self = p->overhead_pair;
    if (!(p->overhead_spread >= 0 && p->overhead_spread <= 1e6)) /* format 1.3; else 0 */
        p->overhead_spread = 0;
    v->res_comp = rp_comp_res(1, p->overhead_spread, p->clock_step);
    v->pairfp = rp_comp_fixed(p->overhead_pair);
    v->selffp = rp_comp_fixed(p->overhead_self);
}

static void read_clock(struct rp_profile *p, const struct rp_chunk *c)
{
    struct priv *v = p->priv;
    if (c->len < 16)
        return;
    uint64_t t = rp_get64(c->data), ns = rp_get64(c->data + 8);
    if (!v->nclk++) {
        v->clk_first_ticks = t;
        v->clk_first_ns = ns;
    }
    v->clk_last_ticks = t;
    v->clk_last_ns = ns;
}

static void read_thread(struct rp_profile *p, const struct rp_chunk *c, uint32_t only_tid)
{
    if (c->len < 8 || (only_tid && !rp_tid_match(only_tid, rp_get32(c->data))))
        return;
    struct tstate *t = rp_tstate_get(p, rp_get32(c->data));
    if (!t)
        return;
    struct rp_thread *th = &p->threads[t->ti];
    free(th->name);
    th->name = rp_text_dup(c->data + 8, c->len - 8, 0, NULL);
}

void rp_replay_priv_free(struct rp_profile *p)
{
    struct priv *v = p->priv;
    if (!v)
        return;
    rp_workers_stop(v);
    for (uint32_t i = 0; i < v->nts; i++) {
        struct rstate *rs = v->ts[i].rs;
        if (rs) {
            free(rs->stack);
            rp_zarr_free(rs->active, rs->active_bytes);
            free(rs);
        }
        free(v->ts[i].stack);
    }
    free(v->ts);
    free(v->res);
    free(v->tidx);
    rp_emap_free(&v->em);
    for (size_t k = 0; k < sizeof(v->acc) / sizeof(v->acc[0]); k++)
        rp_acc_free(&v->acc[k]);
    for (int i = 0; i < RP_JOBS_MAX; i++) {
        struct job *j = &v->jobs[i];
        free(j->data);
        free(j->in);
        free(j->closed);
        free(j->us);
        free(j->out);
        free(j->snap);
    }
    free(v);
    p->priv = NULL;
    rp_big_trim(); /* and the pages with it: the replayers' threads freed them */
}

/* The END chunk c (format 4.x): how the process ended, and from 1.3 on
 * when (minor: the file's minor version).  Returns 0 or RP_EFORMAT. */
static int read_end(struct rp_profile *p, const struct rp_chunk *c, unsigned minor, char *err,
                    size_t errsz)
{
    int rc;
    if ((rc = fixed_len(c, "END", 32, err, errsz)) < 0)
        return rc;
    p->ended = 1;
    p->end_status = (int32_t)rp_get32(c->data + 24);
    p->end_flags = rp_get32(c->data + 28);
    /* where frames still open end (rp_replay_close_open): from 1.3 on, when
     * the process ended; before, when the file was closed, which may be long
     * after: those end at their thread's last event */
    if (minor >= 3)
        p->end_ticks = rp_get64(c->data);
    return 0;
}

/* A LOST chunk c (format 4.7; the recorder uses the LOST op instead): the
 * events its thread lost.  Returns 0, RP_EFORMAT or RP_ENOMEM. */
static int read_lost(struct rp_profile *p, const struct rp_chunk *c, uint32_t only_tid, char *err,
                     size_t errsz)
{
    int rc;
    if ((rc = fixed_len(c, "LOST", 32, err, errsz)) < 0 ||
        (only_tid && !rp_tid_match(only_tid, rp_get32(c->data))))
        return rc;
    struct tstate *t = rp_tstate_get(p, rp_get32(c->data));
    if (!t)
        return RP_ENOMEM;
    p->threads[t->ti].lost += rp_get64(c->data + 8);
    return 0;
}

/* The address range of a maps line "start-end perms ...": 0 when it has
 * none. */
static int map_range(const char *l, const char *end, uint64_t *lo, uint64_t *hi)
{
    char buf[48];
    size_t n = (size_t)(end - l) < sizeof buf - 1 ? (size_t)(end - l) : sizeof buf - 1;
    memcpy(buf, l, n);
    buf[n] = 0;
    unsigned long long a, b;
    if (sscanf(buf, "%llx-%llx", &a, &b) != 2 || b <= a)
        return 0;
    *lo = a;
    *hi = b;
    return 1;
}

/*
 * A MAPS chunk: its mappings, and those of the MAPS before it that none of
 * them overlaps (a library closed since: the recorder writes the maps
 * before each dlclose, dl.c).  So every library the run had mapped can be
 * named, and a range mapped again names what is there at the end.
 * Returns 0 or RP_ENOMEM.
 */
static int maps_add(struct rp_profile *p, const char *m, size_t len)
{
    size_t cap = len + p->maps_len + 1, o = len;
    char *out = malloc(cap);
    if (!out)
        return RP_ENOMEM;
    if (len)
        memcpy(out, m, len);
    if (len && m[len - 1] != '\n')
        out[o++] = '\n';
    const char *pe = p->maps ? p->maps + p->maps_len : NULL;
    for (const char *l = p->maps; l && l < pe;) {
        const char *le = memchr(l, '\n', (size_t)(pe - l));
        le = le ? le : pe;
        uint64_t a, b, x, y;
        int keep = map_range(l, le, &a, &b);
        for (const char *k = m, *ke = len ? m + len : m; keep && k < ke;) {
            const char *kl = memchr(k, '\n', (size_t)(ke - k));
            kl = kl ? kl : ke;
            if (map_range(k, kl, &x, &y) && x < b && a < y)
                keep = 0; /* mapped again: the later mapping names it */
            k = kl + 1;
        }
        if (keep && o + (size_t)(le - l) + 1 <= cap) {
            memcpy(out + o, l, (size_t)(le - l));
            o += (size_t)(le - l);
            out[o++] = '\n';
        }
        l = le + 1;
    }
    free(p->maps);
    p->maps = out;
    p->maps_len = o;
    return 0;
}

/* Reads chunk c of the file r into p: EVENTS chunks are replayed here or
 * handed to the workers (replay_events).  Returns 0, or < 0 with the
 * message in err. */
/* An EVENTS chunk not replayed (rp_replay_opts.defs_only): its events
 * counted from its header, its first event's ticks kept (the earliest is
 * the run's first_tick, which time windows count from).  Skimmed (its
 * first bytes: replay_run), it is read whole from r only when its first
 * event is not among them (a deep stack snapshot before it).  Returns 0,
 * or the reader's error with its message in err. */
static int count_events(struct rp_profile *p, struct rp_reader *r, struct rp_chunk *c,
                        uint32_t only_tid, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    struct rp_evdec d;
    struct rp_event ev;

    if (c->len < 16 || (only_tid && !rp_tid_match(only_tid, rp_get32(c->data))))
        return 0;
    p->events += rp_get32(c->data + 4) & RP_EV_COUNT_MASK;
    int got = rp_evdec_init(&d, c->data, c->len) == 0 && rp_evdec_next(&d, &ev) > 0;
    if (!got && c->skimmed) {
        int rc = rp_reader_whole(r, c);
        if (rc < 0) {
            snprintf(err, errsz, "%s", r->err);
            return rc;
        }
        got = rp_evdec_init(&d, c->data, c->len) == 0 && rp_evdec_next(&d, &ev) > 0;
    }
    if (got && (!v->first_ev || ev.ticks < v->first_ev))
        v->first_ev = ev.ticks;
    return 0;
}

/* rp_chunks_skim's callback for late_look: the INFO chunks that have the
 * measurements made while the program ran (late_parse into ctx, a struct
 * priv); the last of them (the RP_LATE_MAX-th) stops it, as does the END.
 * Returns 1 to stop, 0 to go on. */
static int late_of(void *ctx, const struct rp_skimmed *k)
{
    struct priv *v = ctx;
    uint32_t type = rp_get32(k->hdr), len = rp_get32(k->hdr + 4);
    if (type == RP_CH_END)
        return 1;
    if (type != RP_CH_INFO || len > 65536)
        return 0;
    uint8_t *b = malloc(len ? len : 1);
    const uint8_t *q = b, *kb, *vb;
    uint32_t kl, vl;
    if (b && rp_skimmed_read(k, b) == 0)
        while (v->late_seen < RP_LATE_MAX && rp_info_next(&q, b + len, &kb, &kl, &vb, &vl) > 0)
            if (kl == 13 && !memcmp(kb, "overhead_late", 13) &&
                !(vl == 7 && !memcmp(vb, "pending", 7))) {
                late_parse(v, (const char *)vb, vl);
                v->late_seen++;
            }
    free(b);
    return v->late_seen >= RP_LATE_MAX;
}

/*
 * The recorder measures its cost again while the program runs (calib.h:
 * 10 ms, 100 ms and 1 s into the run); the first INFO says so
 * ("pending").  Before any event is replayed, the chunk headers after r's
 * position are skimmed for those measurements (up to the last, or the
 * END: one read per chunk), and the fastest of all is the one
 * compensation uses.  Cannot fail: without it, the
 * start-up measurement stands.
 */
static void late_look(struct rp_profile *p, struct rp_reader *r)
{
    struct priv *v = p->priv;
    v->late_pending = 2;
    if (!p->overhead_known || !r->f)
        return;
    rp_chunks_skim(r->f, r->off, late_of, v);
    if (!v->late_have)
        return;
    p->overhead_late_pair = v->late_pair;
    p->overhead_late = 1;
    if (v->late_pair < p->overhead_pair) {
        p->overhead_pair = v->late_pair;
        p->overhead_self = v->late_self;
        p->overhead_spread = v->late_spread;
        p->overhead_late = 2;
    }
}

static int read_chunk(struct rp_profile *p, struct rp_reader *r, struct rp_chunk *c,
                      uint32_t only_tid, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    int rc = 0;

    switch (c->type) {
    case RP_CH_INFO:
        rc = read_info(p, c, err, errsz);
        if (rc == 0 && v->late_pending == 1)
            late_look(p, r);
        overhead_check(p);
        break;
    case RP_CH_CLOCK:
        if ((rc = fixed_len(c, "CLOCK", 24, err, errsz)) == 0)
            read_clock(p, c);
        break;
    case RP_CH_MAPS:
        rc = maps_add(p, (const char *)c->data, c->len);
        break;
    case RP_CH_THREAD:
        if ((rc = fixed_len(c, "THREAD", 8, err, errsz)) == 0)
            read_thread(p, c, only_tid);
        break;
    case RP_CH_DEFS:
        rc = read_defs(p, c, err, errsz);
        break;
    case RP_CH_EVENTS:
        if (p->defs_only)
            rc = count_events(p, r, c, only_tid, err, errsz);
        else
            rc = replay_events(p, c, only_tid, err, errsz);
        break;
    case RP_CH_STATS: /* direct mode: stats.c */
        rc = rp_stats_read(p, &v->em, c, only_tid, err, errsz);
        /* direct mode counts lock holds as intervals from format 1.3 on */
        p->hold_intervals |= r->major == 1 && r->minor >= 3;
        break;
    case RP_CH_FCOUNT: /* throttled calls: stats.c */
        rc = rp_fcount_read(p, c, only_tid, err, errsz);
        break;
    case RP_CH_LOST:
        rc = read_lost(p, c, only_tid, err, errsz);
        break;
    case RP_CH_END:
        rc = read_end(p, c, r->minor, err, errsz);
        break;
    default:
        break; /* unknown chunk types are skipped: newer minor versions */
    }
    return rc;
}

/*
 * After the last chunk: the reader's error rc (a damaged end, kept as a
 * warning under force), the chunks it skipped, and how the program ended,
 * as warnings.  Returns 0, or rc with the message in err.
 */
static int read_done(struct rp_profile *p, const struct rp_reader *r, int rc, const char *path,
                     int force, char *err, size_t errsz)
{
    if (rc < 0) {
        if (force && (rc == RP_ETRUNC || rc == RP_ECRC)) {
            rp_profile_warn(p, "%s; analysed the %llu bytes before it", r->err,
                            (unsigned long long)r->off);
        } else if (rc == RP_ETRUNC || rc == RP_ECRC) {
            snprintf(err, errsz, "%s (--force analyses the chunks before it)", r->err);
            return rc;
        } else {
            snprintf(err, errsz, "%s", r->err);
            return rc;
        }
    }
    if (r->skipped) {
        p->skipped_chunks = r->skipped;
        rp_profile_warn(p, "%s: skipped %llu damaged chunk(s), the first at offset %llu", path,
                        (unsigned long long)r->skipped, (unsigned long long)r->skipped_off);
    }
    if (r->first_part > 1) {
        p->pieces_deleted = r->first_part - 1;
        rp_profile_warn(p,
                        "%s: the run's first %u pieces were deleted (record --max-size): the "
                        "calls and times are those of the pieces kept, %s.part%u on, not of "
                        "the whole run",
                        path, r->first_part - 1, path, r->first_part);
    }
    if (p->ended && (p->end_flags & RP_END_SIGNAL))
        rp_profile_warn(p,
                        "%s: the program was killed by signal %d; events recorded until then "
                        "are all here (the recorder's signal handler flushed them)",
                        path, p->end_status);
    if (!p->ended)
        rp_profile_warn(p,
                        "%s: no END record: the program ended abnormally (crash, signal, "
                        "_exit) or is still running; events not flushed before that are "
                        "missing",
                        path);
    return 0;
}

int rp_replay_chunks(struct rp_profile *p, struct rp_reader *r, uint32_t only_tid, rp_chunk_fn fn,
                     void *ctx, int *rd, char *sub, size_t subsz)
{
    struct rp_chunk c;
    int rc;

    while ((rc = rp_reader_next(r, &c)) > 0) {
        sub[0] = 0;
        /* jobs read the node table: join them before it changes */
        if (c.type != RP_CH_EVENTS && c.type != RP_CH_CLOCK && c.type != RP_CH_THREAD &&
            (rc = rp_jobs_drain(p, sub, subsz)) < 0)
            return rc;
        rc = read_chunk(p, r, &c, only_tid, sub, subsz);
        if (rc >= 0 && fn)
            rc = fn(ctx, p, &c);
        if (rc < 0)
            return rc;
    }
    *rd = rc;
    return rp_jobs_drain(p, sub, subsz);
}

int rp_replay_complete(struct rp_profile *p, const struct rp_reader *r, int rd, const char *path,
                       int force, char *err, size_t errsz, char *sub, size_t subsz)
{
    struct priv *v = p->priv;
    int rc;

    if ((rc = read_done(p, r, rd, path, force, err, errsz)) < 0)
        return rc;
    rp_workers_stop(v);
    sub[0] = 0;
    if ((rc = rp_threads_end(p)) < 0 || (rc = rp_replay_finish(p)) < 0) {
        snprintf(err, errsz, "%s: %s", path, sub[0] ? sub : "out of memory");
        return rc;
    }
    if (p->defs_only) { /* the first event, and the end as the end and clocks say */
        p->first_tick = v->first_ev;
        p->last_tick = p->end_ticks > v->clk_last_ticks ? p->end_ticks : v->clk_last_ticks;
    }
    p->compensated = v->want_comp && p->overhead_known && !(p->mode && !strcmp(p->mode, "direct"));
    p->resolution = p->compensated ? v->res_comp : rp_comp_res(0, 0, p->clock_step);
    return 0;
}

int rp_replay_start(struct rp_profile *p, const struct rp_replay_opts *o)
{
    struct rp_replay_opts none = {0};

    if (!o)
        o = &none;
    if (!(p->priv = calloc(1, sizeof(struct priv))))
        return RP_ENOMEM;
    struct priv *v = p->priv;
    v->p = p;
    v->want_comp = !o->no_compensate;
    v->flt = o->filter;
    v->outside = !o->keep_outside;
    p->defs_only = o->defs_only;
    p->outside_apart = v->outside;
    if (nodes_reserve(p, 0) < 0)
        return RP_ENOMEM;
    p->nodes[0].kind = RP_KIND_FUNC;
    return 0;
}

/* rp_replay_file with the replay's state in p->priv.  Returns as it. */
static int replay_run(const char *path, const struct rp_replay_opts *o, struct rp_profile *p,
                      rp_chunk_fn fn, void *ctx, char *err, size_t errsz)
{
    struct priv *v = p->priv;
    struct rp_reader r;
    char sub[256];
    int rc, rd = 0;

    if ((rc = rp_reader_open(&r, path)) < 0) {
        snprintf(err, errsz, "%s", r.err);
        return rc;
    }
    r.force = o->force;
    /* Only the events' first bytes are needed without a replay; a damaged
     * chunk is for the pass that reads them all to find (under force, both
     * passes must skip the same chunks: each is read whole). */
    if (o->defs_only && !o->force && !fn)
        r.skim = 1u << RP_CH_EVENTS;
    /* A per-chunk callback sees the profile as of its chunk: replay in order. */
    if (!fn)
        rp_workers_start(v, rp_workers_count());
    if ((rc = rp_replay_chunks(p, &r, o->tid, fn, ctx, &rd, sub, sizeof(sub))) < 0)
        goto fail;
    rc = rp_replay_complete(p, &r, rd, path, o->force, err, errsz, sub, sizeof(sub));
out:
    rp_workers_stop(v);
    rp_reader_close(&r);
    return rc;
fail:
    rp_jobs_drain(p, sub + strlen(sub), 0); /* release the jobs; the first error stands */
    if (rc == RP_ENOMEM && !sub[0])
        snprintf(sub, sizeof(sub), "out of memory");
    snprintf(err, errsz, "%s: %s", path, sub);
    goto out;
}

int rp_replay_file(const char *path, const struct rp_replay_opts *o, struct rp_profile *p,
                   rp_chunk_fn fn, void *ctx, char *err, size_t errsz)
{
    struct rp_replay_opts none = {0};

    err[0] = 0;
    int rc = rp_replay_start(p, o);
    if (rc == 0)
        rc = replay_run(path, o ? o : &none, p, fn, ctx, err, errsz);
    rp_replay_priv_free(p); /* the profile holds the results: the replay's state goes */
    return rc;
}

int rp_profile_symbolize(struct rp_profile *p)
{
    if (!p->maps || !p->maps_len)
        return 0;
    struct rp_symbolizer *s = rp_sym_open(p->maps, p->maps_len);
    if (!s)
        return RP_ENOMEM;
    /* a node without calls is named when an edge leaves it: a frame still
     * open at the end (direct mode: a thread running at exit) is a caller */
    uint8_t *caller = calloc(p->n_nodes ? p->n_nodes : 1, 1);
    if (!caller) {
        rp_sym_close(s);
        return RP_ENOMEM;
    }
    for (uint32_t k = 0; k < p->n_edges; k++)
        if (p->edges[k].caller < p->n_nodes)
            caller[p->edges[k].caller] = 1;
    int rc = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        struct rp_node *n = &p->nodes[i];
        /* functions and locks by their address, and the waits on a
         * condition variable (kind wait, class lock) by the condition's */
        if (n->name || (!n->calls && !p->defs_only && !caller[i]) ||
            (n->kind != RP_KIND_FUNC && n->kind != RP_KIND_LOCK_WAIT &&
             n->kind != RP_KIND_LOCK_HOLD && !(n->kind == RP_KIND_WAIT && n->cls == RP_CLASS_LOCK)))
            continue;
        struct rp_symbol sym = {0};
        if ((rc = rp_sym_lookup(s, n->key, &sym)) < 0)
            break;
        char buf[600];
        const char *sname = sym.name;
        if (!sname && sym.module && sym.has_offset && n->kind == RP_KIND_FUNC) {
            /* no symbol: the binary and the address in it, as direct mode's
             * printed table names it, the same from run to run (ASLR) */
            const char *b = strrchr(sym.module, '/');
            snprintf(buf, sizeof buf, "%s+0x%llx", b ? b + 1 : sym.module,
                     (unsigned long long)sym.offset);
            sname = buf;
        }
        /* in the profile's arena, files and modules once each */
        char *name = NULL, *file = NULL, *module = NULL;
        if ((sname && !(name = rp_profile_strndup(p, sname, strlen(sname), 0))) ||
            (!n->file && sym.file &&
             !(file = rp_profile_strndup(p, sym.file, strlen(sym.file), 1))) ||
            (sym.module && !(module = rp_profile_strndup(p, sym.module, strlen(sym.module), 1)))) {
            rp_sym_clear(&sym);
            rc = RP_ENOMEM;
            break;
        }
        n->name = name;
        if (!n->file) {
            n->file = file;
            n->line = sym.line;
        }
        rp_profile_strfree(p, n->module);
        n->module = module;
        rp_sym_clear(&sym);
    }
    free(caller);
    rp_sym_close(s);
    return rc;
}

// SPDX-License-Identifier: MIT
/*
 * writer.c - the trace encoder: raw records in, chunk payloads out.
 *
 * The id table is open addressing with linear probing over a power-of-two
 * array, keyed by (kind + 1) << 60 | key, so a zero key marks an empty slot
 * and no valid entry is ever zero.  It grows at 50 % load.  Invariant: ids
 * are handed out densely from 1 in first-seen order, and an id's DEFS entry
 * is queued before the EVENTS payload that first uses it is returned.
 *
 * Each thread's encoding has its own direct-mapped cache in front of the
 * table (struct rp_enc_cache), so several threads can encode at once: the
 * shared table, the pending DEFS and the kinds are touched only on a cache
 * miss, under the owner's lock (writer.h).
 *
 * This file runs in the recorder's threads: it may allocate, but never
 * blocks other than on the owner's lock, never does I/O and never calls
 * back into instrumented code other than the describe callback.
 */
#include "writer.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"

#define likely(x)     __builtin_expect(!!(x), 1)
#define unlikely(x)   __builtin_expect(!!(x), 0)
#define RP_NOINLINE_W __attribute__((noinline))

#define ENC_INIT_CAP 1024

/* 0: rp_enc_events without its fast loop (enc_calls), every record through
 * the general one: tests/test_encode.c builds such a copy as the reference
 * whose bytes the fast loop's must equal. */
#ifndef RP_ENC_FAST
#define RP_ENC_FAST 1
#endif

/* The table key of (kind, key): never 0, so 0 marks an empty slot. */
static inline uint64_t enc_key(uint8_t kind, uint64_t key)
{
    return ((uint64_t)(kind + 1) << RP_RAW_SHIFT) | (key & RP_RAW_PAYLOAD);
}

/* The slot holding table key k, or the empty slot where it would go. */
static inline uint32_t enc_slot(const struct rp_enc *e, uint64_t k)
{
    uint32_t mask = e->cap - 1, i = (uint32_t)rp_mix64(k) & mask;
    while (e->keys[i] && e->keys[i] != k)
        i = (i + 1) & mask;
    return i;
}

/* Grows the id table to twice its size.  Returns 0 or RP_ENOMEM (the old
 * table stays intact). */
static int enc_grow(struct rp_enc *e)
{
    uint32_t ncap = e->cap ? e->cap * 2 : ENC_INIT_CAP;
    uint64_t *nk = calloc(ncap, sizeof(*nk));
    uint32_t *ni = calloc(ncap, sizeof(*ni));
    if (!nk || !ni) {
        free(nk);
        free(ni);
        return RP_ENOMEM;
    }
    for (uint32_t i = 0; i < e->cap; i++) {
        if (!e->keys[i])
            continue;
        uint32_t j = (uint32_t)rp_mix64(e->keys[i]) & (ncap - 1);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = e->keys[i];
        ni[j] = e->ids[i];
    }
    free(e->keys);
    free(e->ids);
    e->keys = nk;
    e->ids = ni;
    e->cap = ncap;
    return 0;
}

int rp_enc_init(struct rp_enc *e, rp_describe_fn describe, void *ctx)
{
    memset(e, 0, sizeof(*e));
    e->describe = describe;
    e->describe_ctx = ctx;
    return enc_grow(e);
}

void rp_enc_free(struct rp_enc *e)
{
    free(e->keys);
    free(e->ids);
    free(e->defs);
    free(e->kinds);
    memset(e, 0, sizeof(*e));
}

void rp_enc_thread_free(struct rp_enc_thread *t)
{
    free(t->stack ? t->stack - 1 : NULL);
    free(t->holds);
    free(t->cache);
    free(t->pz_at);
    free(t->pz_ev);
    memset(t, 0, sizeof(*t));
}

size_t rp_def_len(const struct rp_def *d)
{
    size_t nlen = d->name ? strnlen(d->name, 65535) : 0;
    size_t flen = d->file ? strnlen(d->file, 65535) : 0;
    return RP_DEF_FIXED + nlen + flen + (d->budget ? RP_DEF_EXT_BUDGET : 0);
}

size_t rp_def_put(uint8_t *p, uint32_t id, const struct rp_def *d)
{
    size_t nlen = d->name ? strnlen(d->name, 65535) : 0;
    size_t flen = d->file ? strnlen(d->file, 65535) : 0;
    size_t ext = d->budget ? RP_DEF_EXT_BUDGET : 0;
    rp_put32(p, id);
    p[4] = d->kind;
    p[5] = d->cls;
    rp_put16(p + 6, (uint16_t)nlen);
    rp_put64(p + 8, d->key);
    rp_put32(p + 16, d->line);
    rp_put16(p + 20, (uint16_t)flen);
    rp_put16(p + 22, (uint16_t)ext);
    memcpy(p + RP_DEF_FIXED, d->name ? d->name : "", nlen);
    memcpy(p + RP_DEF_FIXED + nlen, d->file ? d->file : "", flen);
    if (ext)
        rp_put64(p + RP_DEF_FIXED + nlen + flen, d->budget);
    return RP_DEF_FIXED + nlen + flen + ext;
}

/* Appends one DEFS record.  Returns 0 or RP_ENOMEM. */
static int enc_queue_def(struct rp_enc *e, uint32_t id, const struct rp_def *d)
{
    size_t need = rp_def_len(d);
    if (e->defs_len + need > e->defs_cap) {
        size_t ncap = e->defs_cap ? e->defs_cap * 2 : 4096;
        while (ncap < e->defs_len + need)
            ncap *= 2;
        uint8_t *nd = realloc(e->defs, ncap);
        if (!nd)
            return RP_ENOMEM;
        e->defs = nd;
        e->defs_cap = ncap;
    }
    e->defs_len += rp_def_put(e->defs + e->defs_len, id, d);
    return 0;
}

uint32_t rp_enc_id(struct rp_enc *e, const struct rp_def *def)
{
    uint64_t k = enc_key(def->kind, def->key);
    uint32_t i = enc_slot(e, k);

    if (e->keys[i])
        return e->ids[i];
    if ((e->count + 1) * 2 > e->cap) {
        if (enc_grow(e) < 0)
            return 0;
        return rp_enc_id(e, def);
    }
    uint32_t id = e->count + 1;
    if (rp_grow(&e->kinds, &e->kinds_cap, id + 1, 1, 1024) < 0 || enc_queue_def(e, id, def) < 0)
        return 0;
    e->kinds[id] = def->kind;
    e->keys[i] = k;
    e->ids[i] = id;
    e->count++;
    return id;
}

static inline void enc_lock(struct rp_enc *e)
{
    if (e->lock)
        e->lock();
}

static inline void enc_unlock(struct rp_enc *e)
{
    if (e->unlock)
        e->unlock();
}

/*
 * Looks up (kind, key) without a describe call: functions and locks (named
 * by the lock_name hook, if any).  The thread's direct-mapped cache in
 * front of the table makes the common case (a hot function seen again) one
 * compare, without the lock.
 */
static inline uint32_t enc_cache_slot(uint8_t kind, uint64_t key)
{
    return (uint32_t)((key >> 4) ^ (key >> 16) ^ kind) & (RP_ENC_CACHE - 1);
}

static RP_NOINLINE_W uint32_t enc_plain_miss(struct rp_enc *e, struct rp_enc_thread *t,
                                             uint8_t kind, uint8_t cls, uint64_t key)
{
    struct rp_def d = {.kind = kind, .cls = cls, .key = key};
    if (e->lock_name &&
        (kind == RP_KIND_LOCK_WAIT || kind == RP_KIND_LOCK_HOLD || kind == RP_KIND_WAIT))
        d.name = e->lock_name(key);
    enc_lock(e);
    uint32_t id = rp_enc_id(e, &d);
    enc_unlock(e);
    if (id && t->cache) {
        uint32_t slot = enc_cache_slot(kind, key);
        t->cache->keys[slot] = enc_key(kind, key);
        t->cache->ids[slot] = id;
        t->cache->kinds[slot] = kind;
    }
    return id;
}

static inline uint32_t enc_plain_id(struct rp_enc *e, struct rp_enc_thread *t, uint8_t kind,
                                    uint8_t cls, uint64_t key)
{
    uint32_t slot = enc_cache_slot(kind, key);
    if (likely(t->cache != NULL) && t->cache->keys[slot] == enc_key(kind, key))
        return t->cache->ids[slot];
    return enc_plain_miss(e, t, kind, cls, key);
}

/* A site's id, its real kind in *kind: kind and names come from the
 * describe callback.  Returns 0 for a site that cannot be described or
 * when out of memory. */
static uint32_t enc_site_id(struct rp_enc *e, struct rp_enc_thread *t, uint64_t site, uint8_t *kind)
{
    /* Sites are keyed as RP_KIND_POINT whatever their kind, so a site seen
     * before is found without a describe call. */
    uint64_t k = enc_key(RP_KIND_POINT, site);
    uint32_t slot = enc_cache_slot(RP_KIND_POINT, site);
    if (likely(t->cache != NULL) && t->cache->keys[slot] == k) {
        *kind = t->cache->kinds[slot];
        return t->cache->ids[slot];
    }
    uint32_t id = 0;
    enc_lock(e);
    uint32_t i = enc_slot(e, k);
    if (e->keys[i]) {
        id = e->ids[i];
        *kind = e->kinds[id];
        goto out;
    }
    struct rp_def d = {0};
    if (!e->describe || e->describe(e->describe_ctx, site, &d) < 0)
        goto out;
    /* Store under the POINT key whatever the kind; DEFS carries the real one. */
    uint8_t real_kind = d.kind;
    d.kind = RP_KIND_POINT;
    d.key = site;
    size_t before = e->defs_len;
    id = rp_enc_id(e, &d);
    if (id && e->defs_len > before) {
        e->defs[before + 4] = real_kind; /* patch the queued record's kind */
        e->kinds[id] = real_kind;
    }
    if (id)
        *kind = e->kinds[id];
out:
    enc_unlock(e);
    if (id && t->cache) {
        t->cache->keys[slot] = k;
        t->cache->ids[slot] = id;
        t->cache->kinds[slot] = *kind;
    }
    return id;
}

static inline void enc_push(struct rp_enc_thread *t, uint64_t key, uint32_t id, uint8_t kind,
                            uint64_t start, uint64_t ev);

/*
 * Writes the head of an op other than ENTER and EXIT (put_enter, put_exit)
 * in the compact stream (format.h): the delta in an ENTER's head with an id
 * to follow, a 0 where the id would be, and the op; the caller writes the
 * operands.  The prediction's table is in the thread's cache: without one
 * the chunk has no predicted ENTERs.
 */
static inline uint8_t *put_op(const struct rp_enc_thread *t, uint8_t *o, uint64_t delta,
                              unsigned op)
{
    o = rp_put_varint(o, t->cache ? delta << 2 | 2 : delta << 1);
    *o++ = 0;
    *o++ = (uint8_t)op;
    return o;
}

/* Writes an EXIT (format.h) and counts it for the prediction. */
static inline uint8_t *put_exit(struct rp_enc_thread *t, uint8_t *o, uint64_t delta)
{
    t->pr_x++;
    return rp_put_varint(o, delta << 1 | 1);
}

/* Writes an ENTER of id (format.h): its head alone when the prediction
 * says id, else the head and the id; the prediction learns id. */
static inline uint8_t *put_enter(struct rp_enc_thread *t, uint8_t *o, uint64_t delta, uint32_t id)
{
    if (!t->cache) {
        o = rp_put_varint(o, delta << 1);
        return rp_put_varint(o, id);
    }
    uint32_t *slot = &t->cache->pred[rp_pred_slot(t->pr_x, t->pr_y)];
    rp_pred_enter(&t->pr_x, &t->pr_y, id);
    if (*slot == id)
        return rp_put_varint(o, delta << 2);
    *slot = id;
    o = rp_put_varint(o, delta << 2 | 2);
    return rp_put_varint(o, id);
}

/*
 * Writes the start of span id (table key k) at ticks `now` (as the reader
 * will see them) and opens it on the shadow stack; nev is the number of
 * events of the chunk written before this one.
 */
static inline uint8_t *enc_enter(struct rp_enc_thread *t, uint8_t *o, uint64_t delta, uint64_t k,
                                 uint32_t id, uint8_t kind, uint64_t now, uint32_t nev)
{
    o = put_enter(t, o, delta, id);
    enc_push(t, k, id, kind, now, t->seq + nev + 1);
    return o;
}

static inline void enc_push(struct rp_enc_thread *t, uint64_t key, uint32_t id, uint8_t kind,
                            uint64_t start, uint64_t ev)
{
    if (t->depth == t->cap) {
        /* (with the sentinel below the stack: writer.h) */
        uint32_t ncap = t->cap ? t->cap * 2 : 256;
        struct rp_enc_frame *ns =
            ncap > (1u << 20) ? NULL
                              : realloc(t->stack ? t->stack - 1 : NULL, (ncap + 1) * sizeof(*ns));
        if (!ns) {
            /* Beyond this depth exits are written with ids, and the shadow
             * stack no longer mirrors the reader's: no more snapshots. */
            t->nosnap = 1;
            return;
        }
        ns[0] = (struct rp_enc_frame){0};
        t->stack = ns + 1;
        t->cap = ncap;
    }
    t->stack[t->depth++] = (struct rp_enc_frame){key, id, kind, start, ev};
}

/*
 * Writes the end of the span with key k as EXIT when it is the innermost
 * open span (found by key: no id lookup), or as EXIT_ID, and mirrors on the
 * shadow stack what the reader will do: an exit of a span that is open
 * deeper closes everything above it.  Returns the output position, or NULL
 * when the id cannot be had (out of memory).
 */
static inline uint8_t *enc_exit(struct rp_enc *e, struct rp_enc_thread *t, uint8_t *o,
                                uint64_t delta, uint8_t kind, uint8_t cls, uint64_t key)
{
    uint64_t k = enc_key(kind, key);
    if (likely(t->depth && t->stack[t->depth - 1].key == k)) {
        t->depth--;
        return put_exit(t, o, delta);
    }
    uint32_t id = enc_plain_id(e, t, kind, cls, key);
    if (!id)
        return NULL;
    o = put_op(t, o, delta, RP_OP_EXIT_ID);
    o = rp_put_varint(o, id);
    for (uint32_t d = t->depth; d-- > 0;) {
        if (t->stack[d].key == k) {
            t->depth = d;
            break;
        }
    }
    return o;
}

/*
 * Lock holds (format 1.3): an acquisition writes HOLD_BEGIN and remembers
 * the hold; the release of that lock (the latest hold of it, LIFO) writes
 * HOLD_END with everything the reader needs to count it on its own: the
 * duration, the events inside (compensation), the acquirer and whether it
 * is the outermost hold of that lock.  A hold does not go on the shadow
 * stack, so a lock taken in one function and released in another (a
 * wrapper, hand-over-hand locking) is one interval, and the spans around
 * it match as calls.  Returns the output position; a hold that cannot be
 * remembered (out of memory) is released as unknown.
 */
static uint8_t *enc_hold_begin(struct rp_enc_thread *t, uint8_t *o, uint64_t delta, uint64_t key,
                               uint32_t id, uint64_t now, uint32_t nev)
{
    o = put_op(t, o, delta, RP_OP_HOLD_BEGIN);
    o = rp_put_varint(o, id);
    if (t->nholds == t->capholds) {
        uint32_t ncap = t->capholds ? t->capholds * 2 : 16;
        struct rp_enc_hold *nh = ncap > (1u << 20) ? NULL : realloc(t->holds, ncap * sizeof(*nh));
        if (!nh)
            return o;
        t->holds = nh;
        t->capholds = ncap;
    }
    t->holds[t->nholds++] = (struct rp_enc_hold){key, id, t->depth ? t->stack[t->depth - 1].id : 0,
                                                 now, t->seq + nev + 1};
    return o;
}

/* Whether t holds the lock at key (as far as its holds say). */
static inline int enc_holds(const struct rp_enc_thread *t, uint64_t key)
{
    for (uint32_t i = t->nholds; i > 0; i--)
        if (t->holds[i - 1].key == key)
            return 1;
    return 0;
}

static uint8_t *enc_hold_end(struct rp_enc_thread *t, uint8_t *o, uint64_t delta, uint64_t key,
                             uint32_t id, uint64_t now, uint32_t nev)
{
    uint32_t i = t->nholds;
    while (i > 0 && t->holds[i - 1].key != key)
        i--;
    o = put_op(t, o, delta, RP_OP_HOLD_END);
    o = rp_put_varint(o, id);
    if (!i) { /* released, never acquired as far as we know */
        o = rp_put_varint(o, 0);
        o = rp_put_varint(o, 0);
        return rp_put_varint(o, 0);
    }
    const struct rp_enc_hold *h = &t->holds[i - 1];
    int outer = 1;
    for (uint32_t k = 0; k < i - 1 && outer; k++)
        outer = t->holds[k].key != key;
    o = rp_put_varint(o, now >= h->start ? now - h->start : 0);
    o = rp_put_varint(o, t->seq + nev + 1 - h->ev - 1);
    o = rp_put_varint(o, (uint64_t)h->acq << 2 | (uint64_t)outer << 1 | 1);
    memmove(&t->holds[i - 1], &t->holds[i], (t->nholds - i) * sizeof(*t->holds));
    t->nholds--;
    return o;
}

/* Writes the varint h at o with no branch on its length when it is under
 * 2^14 (an ENTER's head is one or two bytes about as often on some
 * programs): may write one byte past a one-byte varint, inside the room
 * rp_enc_bound leaves for the event. */
static inline uint8_t *put_head(uint8_t *o, uint64_t h)
{
    if (likely(h < 0x4000)) {
        uint32_t two = h >= 0x80;
        /* low 7 bits, bit 7 if two, then bits 7..13: one 16-bit store */
        rp_put16(o, (uint16_t)(h + (h & 0x3f80) + (two << 7)));
        return o + 1 + two;
    }
    return rp_put_varint(o, h);
}

/* Writes the head of an EXIT (enter 0) or of a predicted ENTER (1) from
 * h, its delta's entry in the cache's table of encoded heads: two loads
 * and a store, no branch on the varint's length. */
static inline uint8_t *put_tab_head(const struct rp_enc_head *h, uint8_t *o, int enter)
{
    memcpy(o, h->b[enter], 2);
    return o + h->len[enter];
}

/* The fast loop's ENTER of id whose delta has no head in the table or
 * whose id is not the predicted one (xy: the context as rp_pred_slot
 * reads it): put_enter's bytes.  Cannot fail. */
static RP_NOINLINE_W uint8_t *put_enter_slow(struct rp_enc_cache *c, uint8_t *o, uint64_t delta,
                                             uint32_t id, uint32_t xy)
{
    uint32_t *ps = &c->pred[rp_pred_slot(xy, 0)];
    if (*ps == id)
        return put_head(o, delta << 2);
    *ps = id;
    o = put_head(o, delta << 2 | 2);
    return rp_put_varint(o, id);
}

/*
 * The fast loop of rp_enc_events: encodes the run of FUNC_ENTER and
 * FUNC_EXIT records from recs[i] on (nearly all records) with the stack
 * top, the previous ticks, the output position and the prediction's
 * context in registers (stores through the output would otherwise make the
 * compiler reload them), and returns the index of the first record it
 * leaves to the general loop: another op, an id not in the cache, an exit
 * that is not of the innermost span, an enter onto a full stack, ticks
 * that go back, and the buffer's last record.  An enter whose next record
 * is its exit (a leaf) writes both events without a push and a pop.  The
 * bytes are those the general loop would write.  Cannot fail.
 *
 * What the loop costs is the instructions it issues (its loads hit, its
 * branches follow the program's calls), so it does without every one it
 * can: every record here is one event, so the event number of a record is
 * a constant plus its index (only a push works it out); a FUNC_EXIT's word
 * is its span's table key; the sentinel below the stack stands for the
 * test of an empty one; heads come from a table by delta, whose bound
 * also catches ticks that go back (a delta "below 0"); the prediction's y
 * is kept shifted as rp_pred_slot reads it (its low 16 bits, all that is
 * read of it).
 */
static inline size_t enc_calls(struct rp_enc *e, struct rp_enc_thread *t, const struct rp_raw *recs,
                               size_t i, size_t n, uint8_t **op, uint64_t *prevp, uint32_t *nevp)
{
    uint8_t *o = *op;
    uint64_t prev = *prevp;
    const struct rp_raw *r = recs + i, *last = recs + n - 1;
    uint64_t ev0 = t->seq + 1 + *nevp - i; /* the event number of recs[j] is ev0 + j */
    struct rp_enc_frame *base = t->stack, *top = base + t->depth, *lim = base + t->cap;
    struct rp_enc_cache *c = t->cache;

    (void)e;
    if (unlikely(!base || !c)) /* no stack yet (the general loop makes one), no cache */
        return i;
    uint32_t x = t->pr_x, y16 = t->pr_y << 16; /* the prediction's context */
    for (; r < last; r++) {
        uint64_t w = r->word, ticks = r->ticks, delta = ticks - prev, rop = w >> RP_RAW_SHIFT;
        if (rop) {
            if (unlikely(rop != RP_RAW_FUNC_EXIT || top[-1].key != w)) /* (top[-1]: the sentinel) */
                break;
            if (likely(delta < RP_ENC_HEADS)) {
                o = put_tab_head(&c->heads[delta], o, 0);
            } else {
                if (ticks < prev)
                    break;
                o = put_head(o, delta << 1 | 1);
            }
            top--;
            x++;
            prev = ticks;
            continue;
        }
        uint64_t k = enc_key(RP_KIND_FUNC, w);
        uint32_t slot = enc_cache_slot(RP_KIND_FUNC, w);
        if (unlikely(c->keys[slot] != k || top == lim))
            break;
        uint32_t id = c->ids[slot], ps = rp_pred_slot(x ^ y16, 0);
        if (likely(delta < RP_ENC_HEADS && c->pred[ps] == id)) {
            o = put_tab_head(&c->heads[delta], o, 1);
        } else {
            if (ticks < prev)
                break;
            o = put_enter_slow(c, o, delta, id, x ^ y16);
        }
        y16 = (x & ~7u) << 13; /* rp_pred_enter's y = x >> 3, shifted */
        x = id << 3;
        if (r[1].word == k) { /* a leaf, if in time */
            uint64_t t2 = r[1].ticks, d2 = t2 - ticks;
            if (likely(d2 < RP_ENC_HEADS)) {
                o = put_tab_head(&c->heads[d2], o, 0);
            } else if (t2 >= ticks) {
                o = put_head(o, d2 << 1 | 1);
            } else {
                goto push;
            }
            r++;
            x++;
            prev = t2;
            continue;
        }
    push:
        *top++ = (struct rp_enc_frame){k, id, RP_KIND_FUNC, ticks, ev0 + (size_t)(r - recs)};
        prev = ticks;
    }
    t->depth = (uint32_t)(top - base);
    t->pr_x = x;
    t->pr_y = y16 >> 16;
    *op = o;
    *prevp = prev;
    *nevp = (uint32_t)(ev0 + (size_t)(r - recs) - t->seq - 1);
    return (size_t)(r - recs);
}

/*
 * A PAUSE is about to move the starts of t's open spans: each frame that no
 * PAUSE has seen since its push notes `paused` as it was at the push (none
 * came between).  Out of memory: the shadow stack can no longer say what
 * its starts were, and no more snapshots are written (the chunks then
 * replay in order).
 */
static __attribute__((noinline)) void pause_note(struct rp_enc_thread *t)
{
    if (t->depth > t->pz_cap) {
        uint32_t cap = t->depth < 64 ? 64 : t->depth * 2;
        uint64_t *a = realloc(t->pz_at, cap * sizeof(*a));
        if (a)
            t->pz_at = a;
        uint64_t *b = a ? realloc(t->pz_ev, cap * sizeof(*b)) : NULL;
        if (!b) {
            t->nosnap = 1;
            return;
        }
        t->pz_ev = b;
        for (uint32_t d = t->pz_cap; d < cap; d++)
            t->pz_ev[d] = 0; /* (no frame's ev is 0) */
        t->pz_cap = cap;
    }
    for (uint32_t d = 0; d < t->depth; d++)
        if (t->pz_ev[d] != t->stack[d].ev) {
            t->pz_ev[d] = t->stack[d].ev;
            t->pz_at[d] = t->paused;
        }
}

/* The PAUSE ticks by which the start of t's frame d was moved (0: none
 * since its push). */
static inline uint64_t frame_paused(const struct rp_enc_thread *t, uint32_t d)
{
    return d < t->pz_cap && t->pz_ev[d] == t->stack[d].ev ? t->paused - t->pz_at[d] : 0;
}

size_t rp_enc_events_ins(struct rp_enc *e, struct rp_enc_thread *t, uint32_t tid,
                         const struct rp_raw *recs, size_t n, const struct rp_enc_ins *ins,
                         size_t nins, uint8_t *out)
{
    uint8_t *o = out + 16;
    /* the first record's time: an insertion's before recs[0], if any */
    const uint64_t first = !n ? 0 : nins && !ins[0].pos ? ins[0].rec.ticks : recs[0].ticks;
    uint64_t prev = first;
    size_t ki = 0; /* the next insertion */
    /* nev: the events the thread recorded; nsyn: the writer's own (off-CPU
     * spans, pauses), left out of the event numbers of the snapshots, so
     * that overhead compensation counts only what the thread paid for */
    uint32_t nev = 0, nsyn = 0, flags = RP_EV_COMPACT;
    uint8_t skind;

    if (unlikely(!t->cache)) { /* out of memory: every id comes from the table */
        t->cache = calloc(1, sizeof(*t->cache));
        for (uint32_t d = 0; t->cache && d < RP_ENC_HEADS; d++) {
            struct rp_enc_head *h = &t->cache->heads[d];
            h->len[0] = (uint8_t)(rp_put_varint(h->b[0], d << 1 | 1) - h->b[0]);
            h->len[1] = (uint8_t)(rp_put_varint(h->b[1], d << 2) - h->b[1]);
        }
    }
    t->pr_x = t->pr_y = 0; /* the prediction starts empty in each chunk */
    if (t->cache) {
        memset(t->cache->pred, 0, sizeof(t->cache->pred));
        flags |= RP_EV_PREDICT;
    }

    /* The spans open when this chunk begins, outermost first: the reader
     * can then replay the chunk without the ones before it (in parallel).
     * Each says how many events came after its ENTER, so that the reader
     * can subtract the recorder's cost of those (overhead compensation). */
    if (!t->nosnap && t->depth <= RP_SNAP_MAX) {
        /* (PAUSEs after its ENTER: the outermost frame has the most) */
        int pz = t->depth && frame_paused(t, 0);
        flags |= RP_EV_SNAPSHOT | RP_EV_SNAPCOUNT | (pz ? RP_EV_SNAPPAUSE : 0);
        o = rp_put_varint(o, t->depth);
        for (uint32_t d = 0; d < t->depth; d++) {
            o = rp_put_varint(o, t->stack[d].id);
            o = rp_put_varint(o, rp_zigzag((int64_t)(prev - t->stack[d].start)));
            o = rp_put_varint(o, t->seq - t->stack[d].ev);
            if (pz)
                o = rp_put_varint(o, frame_paused(t, d));
        }
    }
    for (size_t i = 0; i < n; i++) {
        if (RP_ENC_FAST) { /* up to the next insertion */
            size_t lim = ki < nins ? ins[ki].pos : n;
            if (lim > i + 1 && (i = enc_calls(e, t, recs, i, lim, &o, &prev, &nev)) >= n)
                break;
        }
        const struct rp_raw *r = &recs[i];
        if (unlikely(ki < nins && ins[ki].pos == i)) {
            assert(recs[i].word >> RP_RAW_SHIFT != RP_RAW_DATA); /* (its op's own) */
            r = &ins[ki++].rec; /* (an OFFCPU record: i is not read below) */
            i--;                /* (with the loop's i++: recs[i] comes next) */
        }
        unsigned op = (unsigned)(r->word >> RP_RAW_SHIFT);
        uint64_t pl = r->word & RP_RAW_PAYLOAD;
        uint64_t delta = r->ticks >= prev ? r->ticks - prev : 0;
        uint64_t now = prev + delta; /* the event's time as the reader sees it */
        uint32_t id, id2;

        uint8_t *no;
        switch (op) {
        case RP_RAW_FUNC_ENTER:
            id = enc_plain_id(e, t, RP_KIND_FUNC, RP_CLASS_FUNC, pl);
            if (unlikely(!id))
                goto skip;
            o = enc_enter(t, o, delta, enc_key(RP_KIND_FUNC, pl), id, RP_KIND_FUNC, now, nev);
            break;
        case RP_RAW_FUNC_EXIT:
            if (t->windowed && !t->depth) { /* entered before the window */
                t->orphans++;
                continue;
            }
            if (unlikely(!(no = enc_exit(e, t, o, delta, RP_KIND_FUNC, RP_CLASS_FUNC, pl))))
                goto skip;
            o = no;
            break;
        case RP_RAW_SITE_BEGIN:
            if (!(id = enc_site_id(e, t, pl, &skind)))
                goto skip;
            o = enc_enter(t, o, delta, enc_key(RP_KIND_POINT, pl), id, skind, now, nev);
            break;
        case RP_RAW_SITE_END:
            if (t->windowed && !t->depth) { /* entered before the window */
                t->orphans++;
                continue;
            }
            if (!enc_site_id(e, t, pl, &skind)) /* defines it if this is the first sight */
                goto skip;
            if (!(no = enc_exit(e, t, o, delta, RP_KIND_POINT, RP_CLASS_POINT, pl)))
                goto skip;
            o = no;
            break;
        case RP_RAW_LOCK_WAIT:
            if (pl & RP_RAW_COND_BIT) { /* a condition wait: kind wait, class lock */
                pl &= ~RP_RAW_COND_BIT;
                if (!(id = enc_plain_id(e, t, RP_KIND_WAIT, RP_CLASS_LOCK, pl)))
                    goto skip;
                o = enc_enter(t, o, delta, enc_key(RP_KIND_WAIT, pl), id, RP_KIND_WAIT, now, nev);
                break;
            }
            if (!(id = enc_plain_id(e, t, RP_KIND_LOCK_WAIT, RP_CLASS_LOCK, pl)))
                goto skip;
            o = enc_enter(t, o, delta, enc_key(RP_KIND_LOCK_WAIT, pl), id, RP_KIND_LOCK_WAIT, now,
                          nev);
            break;
        case RP_RAW_LOCK_FAIL:
            if (t->windowed && !t->depth) { /* a wait begun before the window */
                t->orphans++;
                continue;
            }
            if (pl & RP_RAW_COND_BIT) { /* a condition wait ends */
                pl &= ~RP_RAW_COND_BIT;
                if (!(no = enc_exit(e, t, o, delta, RP_KIND_WAIT, RP_CLASS_LOCK, pl)))
                    goto skip;
                o = no;
                break;
            }
            /* A wait that ends without the lock says so in an ARG, so that
             * readers can tell it from a wait that ended in a grant. */
            if (t->depth && t->stack[t->depth - 1].key == enc_key(RP_KIND_LOCK_WAIT, pl)) {
                o = put_op(t, o, delta, RP_OP_ARG);
                o = rp_put_varint(o, RP_ARG_LOCK_FAILED);
                delta = 0;
                nev++;
            }
            if (!(no = enc_exit(e, t, o, delta, RP_KIND_LOCK_WAIT, RP_CLASS_LOCK, pl)))
                goto skip;
            o = no;
            break;
        case RP_RAW_LOCK_REL:                       /* the hold ends: an interval, off the stack */
            if (t->windowed && !enc_holds(t, pl)) { /* taken before the window */
                t->orphans++;
                continue;
            }
            if (!(id2 = enc_plain_id(e, t, RP_KIND_LOCK_HOLD, RP_CLASS_LOCK, pl)))
                goto skip;
            o = enc_hold_end(t, o, delta, pl, id2, now, nev);
            break;
        case RP_RAW_LOCK_ACQ:
            /* After a LOCK_WAIT of this lock (the innermost open span: the
             * thread was blocked in between) the wait ends and the hold
             * begins at the same tick.  Without one the lock was taken
             * without waiting: the hold begins alone. */
            if (!(id2 = enc_plain_id(e, t, RP_KIND_LOCK_HOLD, RP_CLASS_LOCK, pl)))
                goto skip;
            if (t->depth && t->stack[t->depth - 1].key == enc_key(RP_KIND_LOCK_WAIT, pl)) {
                t->depth--;
                o = put_exit(t, o, delta);
                delta = 0;
                nev++;
            }
            o = enc_hold_begin(t, o, delta, pl, id2, now, nev); /* off the stack */
            break;
        case RP_RAW_INSTANT:
        case RP_RAW_COUNTER:
            if (i + 1 >= n || recs[i + 1].word >> RP_RAW_SHIFT != RP_RAW_DATA)
                goto skip;
            id = enc_site_id(e, t, pl, &skind);
            if (!id)
                goto skip;
            o = put_op(t, o, delta, op == RP_RAW_INSTANT ? RP_OP_INSTANT : RP_OP_COUNTER);
            o = rp_put_varint(o, id);
            o = rp_put_varint(o, op == RP_RAW_INSTANT ? recs[i + 1].ticks
                                                      : rp_zigzag((int64_t)recs[i + 1].ticks));
            i++; /* the DATA record is consumed */
            break;
        case RP_RAW_ARG:
            o = put_op(t, o, delta, RP_OP_ARG);
            o = rp_put_varint(o, pl);
            break;
        case RP_RAW_UNWIND: {
            /* The stack unwound without exits (format.h RP_OP_UNWIND).  With
             * an address: the frame that goes on is the innermost open
             * activation of the function holding it; an address in no
             * function we know, or in none open here, is ignored (not a
             * loss: nothing is wrong with the events).  0: the thread ends
             * here.  The shadow stack is popped as the reader will pop. */
            uint32_t to = 0;
            id = 0;
            if (pl) {
                uint64_t fn = e->func_start ? e->func_start(pl) : 0;
                uint64_t k = enc_key(RP_KIND_FUNC, fn);
                for (to = t->depth; fn && to > 0 && t->stack[to - 1].key != k; to--)
                    ;
                if (!fn || !to || to == t->depth)
                    continue; /* unknown, not open, or nothing above it */
                id = t->stack[to - 1].id;
            } else if (!t->depth) {
                continue; /* nothing open: nothing to say */
            }
            o = put_op(t, o, delta, RP_OP_UNWIND);
            o = rp_put_varint(o, id);
            t->depth = to;
            break;
        }
        case RP_RAW_PAUSE:
            /* The thread waited pl ticks for the writer just before now:
             * every open span is shortened by it, here (their starts move
             * later, so snapshots carry it) as in the reader. */
            o = put_op(t, o, delta, RP_OP_PAUSE);
            o = rp_put_varint(o, pl);
            pause_note(t);
            for (uint32_t d = 0; d < t->depth; d++)
                t->stack[d].start += pl;
            t->paused += pl;
            t->npause++;
            prev = now;
            nsyn++;
            continue;
        case RP_RAW_OFFCPU: {
            /* The thread was off CPU from now for pl ticks: a span of the
             * "[off-cpu]" node under the innermost open span.  Not inside
             * a wait (that is the wait itself) and not with no span open
             * (no span to take it out of). */
            uint8_t k = t->depth ? t->stack[t->depth - 1].kind : RP_KIND_MAX;
            if (k == RP_KIND_MAX || k == RP_KIND_WAIT || k == RP_KIND_LOCK_WAIT || !pl) {
                t->offcpu_skipped++;
                continue;
            }
            enc_lock(e);
            if (!e->offcpu_id) {
                struct rp_def d = {
                    .kind = RP_KIND_OFFCPU, .cls = RP_CLASS_FUNC, .name = "[off-cpu]"};
                e->offcpu_id = rp_enc_id(e, &d);
            }
            id = e->offcpu_id;
            enc_unlock(e);
            if (!id)
                goto skip;
            o = put_enter(t, o, delta, id);
            o = put_exit(t, o, pl);
            t->offcpu++;
            prev = now + pl;
            nsyn += 2;
            continue;
        }
        case RP_RAW_LOST: /* what was open before is unknown now, to both sides */
            o = put_op(t, o, delta, RP_OP_LOST);
            o = rp_put_varint(o, pl);
            t->depth = 0;
            t->nholds = 0; /* (a release after this is of a hold unknown to the reader) */
            t->lost += pl;
            break;
        default:
        skip:
            t->skipped++;
            continue;
        }
        prev = r->ticks >= prev ? r->ticks : prev;
        nev++;
    }
    assert(ki == nins); /* (insertions in order, each below n: every one written) */
    t->seq += nev;
    rp_put32(out, tid);
    rp_put32(out + 4, (nev + nsyn) | flags);
    rp_put64(out + 8, first);
    return (size_t)(o - out);
}

size_t rp_enc_events(struct rp_enc *e, struct rp_enc_thread *t, uint32_t tid,
                     const struct rp_raw *recs, size_t n, uint8_t *out)
{
    return rp_enc_events_ins(e, t, tid, recs, n, NULL, 0, out);
}

void rp_offq_switch(struct rp_offq *q, uint64_t ticks, int out)
{
    if (out) {
        q->out_at = ticks ? ticks : 1;
        return;
    }
    if (!q->out_at) {
        q->unpaired++;
        return;
    }
    uint64_t a = q->out_at;
    q->out_at = 0;
    if (ticks <= a)
        return;
    if (rp_grow(&q->iv, &q->cap, q->n + 1, sizeof(*q->iv), 16) < 0) {
        __atomic_fetch_add(&q->late, 1, __ATOMIC_RELAXED);
        return;
    }
    q->iv[q->n++] = (struct rp_raw){a, rp_raw_word(RP_RAW_OFFCPU, ticks - a)};
}

/* The ticks of the last record of recs[0..nr) that is a time (a DATA
 * record's ticks field is its INSTANT's or COUNTER's value). */
static uint64_t offq_end(const struct rp_raw *recs, size_t nr)
{
    size_t lr = nr - 1;
    while (lr > 0 && recs[lr].word >> RP_RAW_SHIFT == RP_RAW_DATA)
        lr--;
    return recs[lr].ticks;
}

size_t rp_offq_take(struct rp_offq *q, const struct rp_raw *recs, size_t n)
{
    if (!n || !q->n)
        return q->ndue;
    /* only intervals that end by the batch's last record go in now */
    uint64_t endt = offq_end(recs, n);
    uint32_t m = 0;
    while (m < q->n && q->iv[m].ticks + (q->iv[m].word & RP_RAW_PAYLOAD) <= endt)
        m++;
    if (m && rp_grow(&q->due, &q->capdue, q->ndue + m, sizeof(*q->due), 16) == 0) {
        memcpy(q->due + q->ndue, q->iv, m * sizeof(*q->iv));
        q->ndue += m;
        q->n -= m;
        memmove(q->iv, q->iv + m, q->n * sizeof(*q->iv));
    }
    return q->ndue;
}

const struct rp_enc_ins *rp_offq_plan(struct rp_offq *q, const struct rp_raw *recs, size_t nr,
                                      size_t *nins)
{
    size_t k = 0, o = 0;
    *nins = 0;
    if (!nr)
        return NULL;
    uint64_t endt = offq_end(recs, nr), last = q->last;
    const uint32_t m = q->ndue;
    if (!m)
        goto plain;
    if (m > q->inscap) { /* (each interval goes in once at most) */
        struct rp_enc_ins *ni = realloc(q->ins, m * sizeof(*ni));
        if (!ni)
            goto plain;
        q->ins = ni;
        q->inscap = m;
    }
    for (size_t i = 0; i < nr; i++) {
        /* The records before the next interval starts stay as they are
         * (most of them: an interval goes in before the first record after
         * its start); only the latest time among them is wanted. */
        size_t j = i;
        if (k < m) {
            for (uint64_t a = q->due[k].ticks; j < nr; j++) {
                if (recs[j].word >> RP_RAW_SHIFT == RP_RAW_DATA)
                    continue;
                if (recs[j].ticks > a)
                    break;
                last = recs[j].ticks > last ? recs[j].ticks : last;
            }
        } else {
            for (; j < nr; j++)
                if (recs[j].word >> RP_RAW_SHIFT != RP_RAW_DATA)
                    last = recs[j].ticks > last ? recs[j].ticks : last;
        }
        if ((i = j) == nr)
            break;
        uint64_t t = recs[i].ticks, lim = t;
        if (recs[i].word >> RP_RAW_SHIFT == RP_RAW_DATA)
            continue; /* stays right after its INSTANT or COUNTER */
        /* A pause (a buffer switch: the thread encoded its buffer or waited
         * for the writer, off CPU for that reason) ends at t: its time is
         * the recorder's, taken out of the spans as a whole, so no off-CPU
         * span covers any of it. */
        if (recs[i].word >> RP_RAW_SHIFT == RP_RAW_PAUSE) {
            uint64_t d = recs[i].word & RP_RAW_PAYLOAD;
            lim = d < t ? t - d : 0;
        }
        while (k < m) {
            uint64_t a = q->due[k].ticks, b = a + (q->due[k].word & RP_RAW_PAYLOAD);
            if (a >= t && b > t)
                break; /* after this record */
            int late = b <= last;
            a = a > last ? a : last;
            b = b < lim ? b : lim;
            if (b > a)
                q->ins[o++] = (struct rp_enc_ins){i, {a, rp_raw_word(RP_RAW_OFFCPU, b - a)}};
            else if (late)
                __atomic_fetch_add(&q->late, 1, __ATOMIC_RELAXED); /* (not one inside a pause) */
            k++;
        }
        last = t > last ? t : last;
    }
    q->last = last;
    q->ndue = 0;
    *nins = o;
    return o ? q->ins : NULL;
plain:
    q->last = endt > last ? endt : last;
    return NULL;
}

void rp_offq_free(struct rp_offq *q)
{
    free(q->iv);
    free(q->due);
    free(q->ins);
    memset(q, 0, sizeof(*q));
}

const uint8_t *rp_enc_take_defs(struct rp_enc *e, size_t *len)
{
    *len = e->defs_len;
    e->defs_len = 0;
    return e->defs;
}

void rp_file_header(uint8_t out[RP_FILE_HDR_SIZE])
{
    memset(out, 0, RP_FILE_HDR_SIZE);
    memcpy(out, RP_MAGIC, RP_MAGIC_LEN);
    rp_put16(out + 8, RP_VERSION_MAJOR);
    rp_put16(out + 10, RP_VERSION_MINOR);
    rp_put32(out + 12, RP_FILE_HDR_SIZE);
}

void rp_chunk_header(uint8_t out[RP_CHUNK_HDR_SIZE], uint32_t type, const void *payload,
                     uint32_t len)
{
    rp_put32(out, type);
    rp_put32(out + 4, len);
    rp_put32(out + 8, rp_crc32(0, payload, len));
    rp_put32(out + 12, rp_crc32(0, out, 12));
}

int rp_info_put(uint8_t *buf, size_t cap, size_t *len, const char *key, const void *val,
                size_t vlen)
{
    size_t klen = strlen(key);
    if (klen > 65535 || vlen > UINT32_MAX || *len + 6 + klen + vlen > cap)
        return RP_EINVAL;
    uint8_t *p = buf + *len;
    rp_put16(p, (uint16_t)klen);
    memcpy(p + 2, key, klen);
    rp_put32(p + 2 + klen, (uint32_t)vlen);
    memcpy(p + 6 + klen, val, vlen);
    *len += 6 + klen + vlen;
    return 0;
}

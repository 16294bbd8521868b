// SPDX-License-Identifier: MIT
/*
 * lockprof.c - the lock profile: for every lock and every call site that took
 * it, acquisitions, contended and failed waits, wait and hold totals, means
 * and maxima (lockprof.h).
 *
 * How spans become counts (the recorder's rules, docs/locks.md):
 *   - every lock-hold span is one acquisition;
 *   - a lock-wait span exists only when the thread found the lock taken; it
 *     ends in a grant (contended acquisition) unless it carries the ARG
 *     RP_ARG_LOCK_FAILED (a failed try-lock, a timeout);
 *   - so uncontended = acquisitions - contended, exactly.
 * The call site of a span is the span below it on the thread's stack (the
 * function that asked for the lock), ROOT when there is none.
 *
 * Condition variables: a pthread_cond_wait is a span of kind wait, class
 * lock, keyed by the condition (src/record/locks.c); every such span is one
 * wait on that condition, listed after the locks ("conds" in JSON).
 *
 * Filtered (rp_locks.filter), a wait is counted as the span it is, and a
 * hold as a span under the innermost span open at its release (replay.c's
 * rule): each thread keeps the filter state of its open spans, indexed by
 * depth.
 *
 * Pass two (spanwalk) accumulates per (call site, lock node) in an open
 * addressing table; rp_locks_build then groups the entries by lock name,
 * since one lock has a wait node and a hold node (and a named lock macro one
 * pair per site), and sorts.  The CONTENDED flag is the profile's
 * (flags.c), never recomputed here.
 */
#include "lockprof.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "flags.h"
#include "profile.h"
#include "common/array.h"
#include "common/error.h"
#include "spanwalk.h"
#include "trace/format.h"

struct rp_lock_acc {
    uint64_t key; /* (caller << 32 | node) + 1; 0 = empty */
    uint32_t caller, node;
    struct rp_lock_stat s;
};

static int acc_grow(struct rp_locks *L)
{
    uint32_t ncap = L->capacc ? L->capacc * 2 : 256;
    struct rp_lock_acc *n = calloc(ncap, sizeof(*n));
    if (!n)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < L->capacc; i++) {
        if (!L->acc[i].key)
            continue;
        uint32_t j = (uint32_t)rp_mix64(L->acc[i].key) & (ncap - 1);
        while (n[j].key)
            j = (j + 1) & (ncap - 1);
        n[j] = L->acc[i];
    }
    free(L->acc);
    L->acc = n;
    L->capacc = ncap;
    return 0;
}

/* The entry of (caller, node), created if new; NULL when out of memory. */
static struct rp_lock_acc *acc_get(struct rp_locks *L, uint32_t caller, uint32_t node)
{
    if ((L->nacc + 1) * 2 > L->capacc && acc_grow(L) < 0)
        return NULL;
    uint64_t k = ((uint64_t)caller << 32 | node) + 1;
    uint32_t mask = L->capacc - 1, i = (uint32_t)rp_mix64(k) & mask;
    while (L->acc[i].key && L->acc[i].key != k)
        i = (i + 1) & mask;
    if (!L->acc[i].key) {
        L->acc[i].key = k;
        L->acc[i].caller = caller;
        L->acc[i].node = node;
        L->nacc++;
    }
    return &L->acc[i];
}

/* A thread's open spans' filter states, by depth (filtered walks only). */
struct fthread {
    uint32_t tid;
    struct rp_sf_frame *st;
    uint32_t cap;
};

struct collect {
    struct rp_locks *L;
    const struct rp_profile *p;
    struct fthread *th; /* open addressing by tid, tid 0 = empty (nth used of cap) */
    uint32_t nth, capth;
};

/* The filter states of thread tid, made room for depth + 1 of them; NULL
 * when out of memory. */
static struct rp_sf_frame *fstack(struct collect *c, uint32_t tid, uint32_t depth)
{
    if ((c->nth + 1) * 2 > c->capth) {
        uint32_t ncap = c->capth ? c->capth * 2 : 16;
        struct fthread *n = calloc(ncap, sizeof(*n));
        if (!n)
            return NULL;
        for (uint32_t i = 0; i < c->capth; i++) {
            if (!c->th[i].st)
                continue;
            uint32_t j = (uint32_t)rp_mix64(c->th[i].tid) & (ncap - 1);
            while (n[j].st)
                j = (j + 1) & (ncap - 1);
            n[j] = c->th[i];
        }
        free(c->th);
        c->th = n;
        c->capth = ncap;
    }
    uint32_t i = (uint32_t)rp_mix64(tid) & (c->capth - 1);
    while (c->th[i].st && c->th[i].tid != tid)
        i = (i + 1) & (c->capth - 1);
    struct fthread *t = &c->th[i];
    if (!t->st)
        c->nth++;
    t->tid = tid;
    if (depth + 1 > t->cap || !t->st) {
        uint32_t ncap = t->cap ? t->cap : 16;
        while (ncap < depth + 1)
            ncap *= 2;
        struct rp_sf_frame *n = realloc(t->st, ncap * sizeof(*n));
        if (!n)
            return NULL;
        memset(n + t->cap, 0, (ncap - t->cap) * sizeof(*n)); /* (none read unset) */
        t->st = n;
        t->cap = ncap;
    }
    return t->st;
}

static int is_lock_hold(const struct collect *c, uint32_t id)
{
    return c->p->nodes[id].kind == RP_KIND_LOCK_HOLD;
}

/* Filtered: the state of a span that begins (holds are no frames). */
static int on_begin(void *ctx, const struct rp_sw_span *s)
{
    struct collect *c = ctx;
    if (is_lock_hold(c, s->id))
        return 0;
    struct rp_sf_frame *st = fstack(c, s->tid, s->depth);
    if (!st)
        return RP_ENOMEM;
    rp_sf_enter(c->L->filter, s->depth ? &st[s->depth - 1] : NULL, s->id, s->start, &st[s->depth]);
    return 0;
}

/* Filtered: whether the lock span s is counted. */
static int kept(struct collect *c, const struct rp_sw_span *s, int *nomem)
{
    struct rp_sf_frame *st = fstack(c, s->tid, s->depth), hold;
    if (!st)
        return *nomem = 1, 0;
    if (!is_lock_hold(c, s->id))
        return rp_sf_kept(c->L->filter, &st[s->depth], s->dur);
    rp_sf_enter(c->L->filter, s->depth ? &st[s->depth - 1] : NULL, s->id, s->start, &hold);
    return rp_sf_kept(c->L->filter, &hold, s->dur);
}

static int on_end(void *ctx, const struct rp_sw_span *s)
{
    struct collect *c = ctx;
    uint8_t kind = c->p->nodes[s->id].kind;
    int cond = kind == RP_KIND_WAIT && c->p->nodes[s->id].cls == RP_CLASS_LOCK, nomem = 0;
    if (kind != RP_KIND_LOCK_WAIT && kind != RP_KIND_LOCK_HOLD && !cond)
        return 0;
    if (c->L->filter && !kept(c, s, &nomem))
        return nomem ? RP_ENOMEM : 0;
    struct rp_lock_acc *a = acc_get(c->L, s->parent, s->id);
    if (!a)
        return RP_ENOMEM;
    uint64_t dur = s->dur; /* compensated, as in the report */
    if (kind == RP_KIND_LOCK_HOLD) {
        a->s.acquisitions++;
        a->s.hold_sum += dur;
        a->s.hold_max = dur > a->s.hold_max ? dur : a->s.hold_max;
    } else {
        a->s.waits++;
        /* a wait cut short (its thread or the run ended, a longjmp left
         * it) ended without the lock, like a refused one */
        if (cond)
            ; /* a condition wait: neither granted nor failed */
        else if ((s->has_arg && s->arg == RP_ARG_LOCK_FAILED) || s->cut)
            a->s.failed++;
        else
            a->s.contended++;
        a->s.wait_sum += dur;
        a->s.wait_max = dur > a->s.wait_max ? dur : a->s.wait_max;
    }
    return 0;
}

static void stat_add(struct rp_lock_stat *d, const struct rp_lock_stat *s)
{
    d->acquisitions += s->acquisitions;
    d->contended += s->contended;
    d->failed += s->failed;
    d->waits += s->waits;
    d->wait_sum += s->wait_sum;
    d->hold_sum += s->hold_sum;
    d->wait_max = s->wait_max > d->wait_max ? s->wait_max : d->wait_max;
    d->hold_max = s->hold_max > d->hold_max ? s->hold_max : d->hold_max;
}

const char *rp_lock_display_name(const struct rp_node *n, char *buf, size_t bufsz)
{
    if (n->kind == RP_KIND_WAIT) { /* a condition variable */
        if (n->name && n->name[0])
            snprintf(buf, bufsz, "cond %s", n->name);
        else
            snprintf(buf, bufsz, "cond@0x%" PRIx64, n->key);
        return buf;
    }
    if (n->name && n->name[0])
        return n->name;
    snprintf(buf, bufsz, "lock@0x%" PRIx64, n->key);
    return buf;
}

/* Sorting: entries by (lock name, caller); locks and sites by the key. */
struct ent {
    char *name; /* owned */
    const struct rp_lock_acc *a;
};

static int cmp_ent(const void *x, const void *y)
{
    const struct ent *a = x, *b = y;
    int c = strcmp(a->name, b->name);
    if (c)
        return c;
    return a->a->caller < b->a->caller ? -1 : a->a->caller > b->a->caller;
}

static enum rp_locks_sort sort_key;

static int cmp_stat(const struct rp_lock_stat *a, const struct rp_lock_stat *b)
{
    uint64_t x = 0, y = 0;
    switch (sort_key) {
    case RP_LOCKS_SORT_WAIT:
        x = a->wait_sum, y = b->wait_sum;
        if (x == y)
            x = a->hold_sum, y = b->hold_sum;
        break;
    case RP_LOCKS_SORT_HOLD:
        x = a->hold_sum, y = b->hold_sum;
        break;
    case RP_LOCKS_SORT_ACQ:
        x = a->acquisitions, y = b->acquisitions;
        break;
    case RP_LOCKS_SORT_CONTENDED:
        x = a->contended, y = b->contended;
        break;
    case RP_LOCKS_SORT_NAME:
        return 0;
    }
    return x > y ? -1 : x < y;
}

static int cmp_lock(const void *x, const void *y)
{
    const struct rp_lock *a = x, *b = y;
    int c = cmp_stat(&a->s, &b->s);
    return c ? c : strcmp(a->name, b->name);
}

static int cmp_site(const void *x, const void *y)
{
    const struct rp_lock_site *a = x, *b = y;
    int c = cmp_stat(&a->s, &b->s);
    return c ? c : (a->caller < b->caller ? -1 : a->caller > b->caller);
}

/* Groups the entries into locks and sites.  Returns 0 or RP_ENOMEM. */
static int group(struct rp_locks *L, const struct rp_profile *p)
{
    struct ent *e = calloc(L->nacc ? L->nacc : 1, sizeof(*e));
    if (!e)
        return RP_ENOMEM;
    uint32_t n = 0;
    int rc = RP_ENOMEM;
    char buf[512];
    for (uint32_t i = 0; i < L->capacc; i++) {
        if (!L->acc[i].key)
            continue;
        e[n].a = &L->acc[i];
        if (!(e[n++].name =
                  strdup(rp_lock_display_name(&p->nodes[L->acc[i].node], buf, sizeof(buf)))))
            goto out;
    }
    qsort(e, n, sizeof(*e), cmp_ent);
    L->locks = calloc(n ? n : 1, sizeof(*L->locks));
    if (!L->locks)
        goto out;
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i;
        while (j < n && !strcmp(e[j].name, e[i].name))
            j++;
        struct rp_lock *lk = &L->locks[L->nlocks++];
        if (!(lk->name = strdup(e[i].name)) || !(lk->sites = calloc(j - i, sizeof(*lk->sites))))
            goto out;
        for (uint32_t k = i; k < j; k++) {
            const struct rp_lock_acc *a = e[k].a;
            stat_add(&lk->s, &a->s);
            lk->flags |= p->nodes[a->node].flags & RP_FLAG_CONTENDED;
            lk->cond |= p->nodes[a->node].kind == RP_KIND_WAIT;
            if (!lk->nsites || lk->sites[lk->nsites - 1].caller != a->caller)
                lk->sites[lk->nsites++].caller = a->caller;
            stat_add(&lk->sites[lk->nsites - 1].s, &a->s);
        }
        i = j;
    }
    rc = 0;
out:
    for (uint32_t i = 0; i < n; i++)
        free(e[i].name);
    free(e);
    return rc;
}

int rp_locks_build(struct rp_locks *L, const char *path, const struct rp_replay_opts *o,
                   const struct rp_profile *p, enum rp_locks_sort sort, char *err, size_t errsz)
{
    struct collect c = {L, p, NULL, 0, 0};
    struct rp_sw_ops ops = {.begin = L->filter ? on_begin : NULL, .end = on_end};
    int rc = rp_sw_file(path, o, p, &ops, &c, 0, err, errsz);
    for (uint32_t i = 0; i < c.capth; i++)
        free(c.th[i].st);
    free(c.th);
    if (rc < 0)
        return rc;
    if ((rc = group(L, p)) < 0)
        return rc;
    sort_key = sort;
    qsort(L->locks, L->nlocks, sizeof(*L->locks), cmp_lock);
    for (uint32_t i = 0; i < L->nlocks; i++)
        qsort(L->locks[i].sites, L->locks[i].nsites, sizeof(*L->locks[i].sites), cmp_site);
    return 0;
}

void rp_locks_free(struct rp_locks *L)
{
    for (uint32_t i = 0; i < L->nlocks; i++) {
        free(L->locks[i].name);
        free(L->locks[i].sites);
    }
    free(L->locks);
    free(L->acc);
    memset(L, 0, sizeof(*L));
}

// SPDX-License-Identifier: MIT
/*
 * profile.c - the profile data structure's own functions (profile.h):
 * warnings, display copies of trace text, node names, freeing.
 */
#include "profile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/strblk.h"
#include "common/utf8.h"
#include "trace/format.h"

void rp_profile_warn(struct rp_profile *p, const char *fmt, ...)
{
    size_t n = strlen(p->warn);
    if (n + 2 >= sizeof(p->warn))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->warn + n, sizeof(p->warn) - n - 1, fmt, ap);
    va_end(ap);
    n = strlen(p->warn);
    p->warn[n] = '\n';
    p->warn[n + 1] = 0;
}

void rp_flag_hists_free(struct rp_flag_hists **fh)
{
    if (!*fh)
        return;
    rp_hist_free(&(*fh)->own);
    rp_hist_free(&(*fh)->ivl);
    free(*fh);
    *fh = NULL;
}

char *rp_text_dup(const void *s, size_t n, int keep_nul, size_t *outlen)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *b = s;
    char *d = malloc(4 * n + 1), *o = d; /* at most 4 bytes out per byte in */
    if (!d)
        return NULL;
    for (size_t i = 0; i < n;) {
        int k = rp_utf8_seq(b + i, n - i);
        /* a control byte, a C1 control (0xc2 0x80-0x9f) or invalid UTF-8 */
        int bad = k < 0 || (k == 1 && (b[i] < 0x20 || b[i] == 0x7f) && !(keep_nul && !b[i])) ||
                  (k == 2 && b[i] == 0xc2 && b[i + 1] < 0xa0);
        size_t m = k < 0 ? (size_t)-k : (size_t)k;
        for (size_t j = 0; j < m; j++) {
            if (bad) {
                *o++ = '\\';
                *o++ = 'x';
                *o++ = hex[b[i + j] >> 4];
                *o++ = hex[b[i + j] & 15];
            } else {
                *o++ = (char)b[i + j];
            }
        }
        i += m;
    }
    *o = 0;
    if (outlen)
        *outlen = (size_t)(o - d);
    char *r = realloc(d, (size_t)(o - d) + 1);
    return r ? r : d;
}

/*
 * The string arena (rp_profile_strndup): blocks of RP_POOL_BLOCK bytes (or
 * one string, when longer) filled one after the other, and an open-
 * addressing set of the interned strings.
 */
#define RP_POOL_BLOCK ((size_t)256 << 10)

struct rp_strpool {
    struct rp_strblks b; /* strings are taken from the last block */
    int sorted;          /* b.blk is sorted by base (rp_profile_free's lookups) */
    char **set;          /* interned strings, NULL = empty */
    uint32_t setcap;     /* a power of two, at least twice setn */
    uint32_t setn;
};

static uint64_t str_hash(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* n + 1 bytes in the arena.  Returns NULL when out of memory. */
static char *pool_take(struct rp_strpool *sp, size_t n)
{
    uint32_t had = sp->b.nblk;
    char *r = rp_strblks_take(&sp->b, n + 1, RP_POOL_BLOCK);
    if (sp->b.nblk != had)
        sp->sorted = 0;
    return r;
}

/* The interned copy of s[0..n) in sp's set, NULL when it has none; *slot
 * is where it goes.  Cannot fail. */
static char *pool_find(const struct rp_strpool *sp, const char *s, size_t n, uint32_t *slot)
{
    uint32_t mask = sp->setcap - 1, i = (uint32_t)str_hash(s, n) & mask;
    for (; sp->set[i]; i = (i + 1) & mask)
        if (!strncmp(sp->set[i], s, n) && !sp->set[i][n])
            break;
    *slot = i;
    return sp->set[i];
}

/* Doubles sp's set (64 slots at first).  Returns 0 or -1 (out of memory). */
static int pool_set_grow(struct rp_strpool *sp)
{
    uint32_t cap = sp->setcap ? sp->setcap * 2 : 64, old = sp->setcap;
    char **set = calloc(cap, sizeof(*set)), **was = sp->set;
    if (!set)
        return -1;
    sp->set = set;
    sp->setcap = cap;
    for (uint32_t k = 0; k < old; k++) {
        uint32_t slot;
        if (was[k]) {
            (void)pool_find(sp, was[k], strlen(was[k]), &slot);
            set[slot] = was[k];
        }
    }
    free(was);
    return 0;
}

char *rp_profile_strndup(struct rp_profile *p, const char *s, size_t n, int intern)
{
    struct rp_strpool *sp = p->strs;
    uint32_t slot = 0;
    if (!sp && !(sp = p->strs = calloc(1, sizeof(*sp))))
        return NULL;
    if (intern) {
        char *had;
        if ((sp->setn + 1) * 2 > sp->setcap && pool_set_grow(sp) < 0)
            return NULL;
        if ((had = pool_find(sp, s, n, &slot)))
            return had;
    }
    char *r = pool_take(sp, n);
    if (!r)
        return NULL;
    memcpy(r, s, n);
    r[n] = 0;
    if (intern) {
        sp->set[slot] = r;
        sp->setn++;
    }
    return r;
}

static int blk_cmp(const void *a, const void *b)
{
    const struct rp_strblk *x = a, *y = b;
    return x->base < y->base ? -1 : x->base > y->base;
}

/* Whether s is in p's arena.  Cannot fail. */
static int in_pool(struct rp_profile *p, const char *s)
{
    struct rp_strpool *sp = p->strs;
    if (!sp || !s || !sp->b.nblk)
        return 0;
    if (!sp->sorted) { /* (the last is then another block: any has room or not) */
        qsort(sp->b.blk, sp->b.nblk, sizeof(*sp->b.blk), blk_cmp);
        sp->sorted = 1;
    }
    uint32_t lo = 0, hi = sp->b.nblk; /* the last block with base <= s */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)sp->b.blk[mid].base <= (uintptr_t)s)
            lo = mid;
        else
            hi = mid;
    }
    const struct rp_strblk *b = &sp->b.blk[lo];
    return (uintptr_t)s >= (uintptr_t)b->base && (uintptr_t)s < (uintptr_t)b->base + b->cap;
}

void rp_profile_strfree(struct rp_profile *p, char *s)
{
    if (!in_pool(p, s))
        free(s);
}

int rp_node_x_set(struct rp_node *n, const struct rp_node_x *v)
{
    struct rp_node_x w = *v, d;
    uint32_t *one = NULL; /* counts of one bucket, kept in the struct once set */
    uint8_t had = n->below1;
    if (w.hist.counts && w.hist.len == 1) {
        one = w.hist.counts;
        w.hist.one = one[0];
        w.hist.counts = NULL;
    }
    w.fh = rp_node_fh(n);
    n->below1 = rp_node_one(n) && !w.hist.n; /* (the defaults below depend on it) */
    d = rp_node_x_default(n);
    d.fh = w.fh;
    if (!w.fh && !memcmp(&d, &w, sizeof(d))) { /* (no padding; -0.0 and NaN kept apart) */
        free(n->x);
        n->x = NULL;
        free(one);
        return 0;
    }
    if (!n->x && !(n->x = malloc(sizeof(*n->x)))) {
        n->below1 = had;
        free(v->hist.counts);
        return RP_ENOMEM;
    }
    *n->x = w;
    free(one);
    return 0;
}

struct rp_node_x *rp_node_xw(struct rp_node *n)
{
    if (!n->x && (n->x = malloc(sizeof(*n->x))))
        *n->x = rp_node_x_default(n);
    return n->x;
}

int rp_node_x_setraw(struct rp_node *n, const struct rp_node_x *v)
{
    struct rp_node_x d = rp_node_x_rawdef(), w = *v;
    w.fh = d.fh = rp_node_fh(n);
    if (!n->x && !memcmp(&d, &w, sizeof(d)))
        return 0;
    if (!n->x && !(n->x = malloc(sizeof(*n->x))))
        return RP_ENOMEM;
    *n->x = w;
    return 0;
}

struct rp_flag_hists *rp_node_fhw(struct rp_node *n, int raw)
{
    struct rp_node_x *x = n->x;
    if (x && x->fh)
        return x->fh;
    struct rp_flag_hists *fh = calloc(1, sizeof(*fh));
    if (!fh || (!x && !(x = malloc(sizeof(*x))))) {
        free(fh);
        return NULL;
    }
    if (!n->x) {
        *x = raw ? rp_node_x_rawdef() : rp_node_x_default(n);
        n->x = x;
    }
    return x->fh = fh;
}

void rp_profile_free(struct rp_profile *p)
{
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        rp_profile_strfree(p, p->nodes[i].name);
        rp_profile_strfree(p, p->nodes[i].file);
        rp_profile_strfree(p, p->nodes[i].module);
        if (p->nodes[i].x) {
            rp_hist_free(&p->nodes[i].x->hist);
            rp_flag_hists_free(&p->nodes[i].x->fh);
        }
        free(p->nodes[i].x);
    }
    for (uint32_t i = 0; i < p->n_threads; i++)
        free(p->threads[i].name);
    for (uint32_t i = 0; i < p->n_procs; i++) {
        free(p->procs[i].file);
        free(p->procs[i].run);
        free(p->procs[i].host);
        free(p->procs[i].map);
    }
    free(p->procs);
    free(p->nodes);
    free(p->edges);
    free(p->outside);
    free(p->threads);
    free(p->program);
    free(p->filter);
    free(p->argv);
    free(p->clock_name);
    free(p->mode);
    free(p->snapshot);
    free(p->maps);
    if (p->strs) {
        rp_strblks_free(&p->strs->b);
        free(p->strs->set);
        free(p->strs);
    }
    memset(p, 0, sizeof(*p));
}

const char *rp_node_name(const struct rp_profile *p, const struct rp_node *n, char *buf,
                         size_t bufsz)
{
    (void)p;
    if (n->id == 0)
        return "<root>";
    int cond = n->kind == RP_KIND_WAIT && n->cls == RP_CLASS_LOCK; /* a condition wait */
    if (n->name && n->name[0]) {
        if (n->kind == RP_KIND_WAIT) {
            snprintf(buf, bufsz, "%s%s [wait]", cond ? "cond " : "", n->name);
            return buf;
        }
        if (n->kind == RP_KIND_LOCK_WAIT || n->kind == RP_KIND_LOCK_HOLD) {
            snprintf(buf, bufsz, "%s [%s]", n->name,
                     n->kind == RP_KIND_LOCK_WAIT ? "wait" : "hold");
            return buf;
        }
        return n->name;
    }
    switch (n->kind) {
    case RP_KIND_LOCK_WAIT:
        snprintf(buf, bufsz, "lock@0x%llx [wait]", (unsigned long long)n->key);
        break;
    case RP_KIND_LOCK_HOLD:
        snprintf(buf, bufsz, "lock@0x%llx [hold]", (unsigned long long)n->key);
        break;
    case RP_KIND_WAIT:
        snprintf(buf, bufsz, "%s@0x%llx [wait]", cond ? "cond" : "wait",
                 (unsigned long long)n->key);
        break;
    default:
        snprintf(buf, bufsz, "0x%llx", (unsigned long long)n->key);
    }
    return buf;
}

const char *rp_why_name(unsigned why)
{
    static const char *const name[RP_WHY_N] = {
        [RP_WHY_FULL] = "full",           [RP_WHY_STOPPED] = "stopped",
        [RP_WHY_FAILED] = "failed",       [RP_WHY_NOMEM] = "nomem",
        [RP_WHY_REENTERED] = "reentered", [RP_WHY_GONE] = "gone",
        [RP_WHY_UNENCODED] = "unencoded"};
    return why < RP_WHY_N ? name[why] : NULL;
}

const struct rp_outside *rp_node_outside(const struct rp_profile *p, uint32_t id)
{
    uint32_t lo = 0, hi = p->n_outside;
    while (lo < hi) { /* (sorted by id) */
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->outside[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < p->n_outside && p->outside[lo].id == id ? &p->outside[lo] : NULL;
}

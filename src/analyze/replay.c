/*
 * replay.c - from trace chunks to a profile.
 *
 * Each thread's events are replayed on its own stack of open spans.  When a
 * span ends (EXIT, or EXIT_ID of the innermost span):
 *
 *     dur            = end - start
 *     node.dur_sum  += dur            node.excl += dur - (time in its callees)
 *     node.incl     += dur            only if no other activation of the same
 *                                     node is open below it (recursion)
 *     parent.child  += dur            parent = the span below, or ROOT
 *     edge(parent, node): calls, incl += dur, min, max
 *
 * What cannot be matched is counted, never guessed: an exit with no open
 * span is an unmatched exit; an EXIT_ID naming a span open deeper closes the
 * spans above it without time (counted as unclosed); spans still open at the
 * end of the trace, or when the recorder lost events (a LOST op), are
 * counted as unclosed and add no time.
 *
 * Memory: one frame per open span per thread and one counter per (thread,
 * node) for the recursion test; nothing grows with the length of the trace.
 */
#include "replay.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "common/error.h"
#include "symbols.h"

#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#include "trace/reader.h"

struct frame {
    uint32_t id;
    uint64_t start;
    uint64_t child; /* ticks spent in spans called from this one */
};

struct tstate {
    uint32_t tid;
    uint32_t ti; /* index in p->threads */
    struct frame *stack;
    uint32_t depth, cap;
    uint32_t *active; /* per node id: open activations on this stack */
    uint32_t nactive;
};

/*
 * What replay touches for every span of a node, packed in one place (the
 * full struct rp_node is filled from it at the end): the statistics, the
 * exact sum of squares, and a one-entry cache of the edge from the node's
 * last caller, which hits for every callee that has one usual caller.
 */
struct hot {
    uint64_t calls, dur_sum, excl, incl, min, max, first, last;
    unsigned __int128 sq; /* sum of squared durations, exact */
    uint32_t *hist;       /* RP_HIST_BUCKETS counts, NULL until the first span */
    uint32_t last_caller, last_edge;
};

struct priv {
    struct tstate *ts;
    uint32_t nts, capts;
    uint64_t *ekeys; /* edge hash: (caller << 32 | callee) + 1, 0 = empty */
    uint32_t *evals;
    uint32_t ecap;
    struct hot *hot; /* per node */
    uint64_t clk_first_ticks, clk_first_ns, clk_last_ticks, clk_last_ns;
    int nclk;
    double freq_hz;
};

static void warnf(struct rp_profile *p, const char *fmt, ...)
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

/*
 * Makes the array *arr (of elements of size elem, *cap allocated) hold at
 * least need elements, doubling from `first`.  Returns 0, or RP_ENOMEM with
 * the array unchanged.
 */
static int grow(void *arr, uint32_t *cap, uint32_t need, size_t elem, uint32_t first)
{
    if (need <= *cap)
        return 0;
    uint32_t ncap = *cap ? *cap : first;
    while (ncap < need)
        ncap *= 2;
    void *n = realloc(*(void **)arr, (size_t)ncap * elem);
    if (!n)
        return RP_ENOMEM;
    *(void **)arr = n;
    *cap = ncap;
    return 0;
}

/* Makes nodes[0..id] exist.  Returns 0 or RP_ENOMEM. */
static int nodes_reserve(struct rp_profile *p, uint32_t id)
{
    struct priv *v = p->priv;
    if (id < p->n_nodes)
        return 0;
    if (id >= p->cap_nodes) {
        /* hot[] has (at least) the nodes' capacity: both grow the same way */
        uint32_t hcap = p->cap_nodes;
        if (grow(&v->hot, &hcap, id + 1, sizeof(*v->hot), 256) < 0 ||
            grow(&p->nodes, &p->cap_nodes, id + 1, sizeof(*p->nodes), 256) < 0)
            return RP_ENOMEM;
    }
    for (uint32_t i = p->n_nodes; i <= id; i++) {
        memset(&p->nodes[i], 0, sizeof(p->nodes[i]));
        memset(&v->hot[i], 0, sizeof(v->hot[i]));
        v->hot[i].min = v->hot[i].first = UINT64_MAX;
        v->hot[i].last_caller = UINT32_MAX;
        p->nodes[i].id = i;
        p->nodes[i].min = UINT64_MAX;
        p->nodes[i].kind = 0xff; /* undefined until DEFS says */
    }
    p->n_nodes = id + 1;
    return 0;
}

static inline uint64_t ehash(uint64_t k)
{
    k ^= k >> 31;
    k *= 0x9e3779b97f4a7c15ull;
    k ^= k >> 29;
    return k;
}

static int edges_grow(struct rp_profile *p)
{
    struct priv *v = p->priv;
    uint32_t ncap = v->ecap ? v->ecap * 2 : 1024;
    uint64_t *nk = calloc(ncap, sizeof(*nk));
    uint32_t *nv = malloc(ncap * sizeof(*nv));
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return RP_ENOMEM;
    }
    for (uint32_t i = 0; i < v->ecap; i++) {
        if (!v->ekeys[i])
            continue;
        uint32_t j = (uint32_t)ehash(v->ekeys[i]) & (ncap - 1);
        while (nk[j])
            j = (j + 1) & (ncap - 1);
        nk[j] = v->ekeys[i];
        nv[j] = v->evals[i];
    }
    free(v->ekeys);
    free(v->evals);
    v->ekeys = nk;
    v->evals = nv;
    v->ecap = ncap;
    return 0;
}

/* The edge caller -> callee, created if new; NULL when out of memory. */
static struct rp_edge *edge_get(struct rp_profile *p, uint32_t caller, uint32_t callee)
{
    struct priv *v = p->priv;
    uint64_t k = ((uint64_t)caller << 32 | callee) + 1;
    uint32_t mask = v->ecap - 1, i = (uint32_t)ehash(k) & mask;
    while (v->ekeys[i]) {
        if (v->ekeys[i] == k)
            return &p->edges[v->evals[i]];
        i = (i + 1) & mask;
    }
    if ((p->n_edges + 1) * 2 > v->ecap) {
        if (edges_grow(p) < 0)
            return NULL;
        return edge_get(p, caller, callee);
    }
    if (grow(&p->edges, &p->cap_edges, p->n_edges + 1, sizeof(*p->edges), 256) < 0)
        return NULL;
    struct rp_edge *e = &p->edges[p->n_edges];
    memset(e, 0, sizeof(*e));
    e->caller = caller;
    e->callee = callee;
    e->min = UINT64_MAX;
    v->ekeys[i] = k;
    v->evals[i] = p->n_edges++;
    return e;
}

static struct tstate *tstate_get(struct rp_profile *p, uint32_t tid)
{
    struct priv *v = p->priv;
    for (uint32_t i = 0; i < v->nts; i++)
        if (v->ts[i].tid == tid)
            return &v->ts[i];
    if (grow(&v->ts, &v->capts, v->nts + 1, sizeof(*v->ts), 16) < 0 ||
        grow(&p->threads, &p->cap_threads, p->n_threads + 1, sizeof(*p->threads), 16) < 0)
        return NULL;
    struct rp_thread *th = &p->threads[p->n_threads];
    memset(th, 0, sizeof(*th));
    th->tid = tid;
    struct tstate *t = &v->ts[v->nts++];
    memset(t, 0, sizeof(*t));
    t->tid = tid;
    t->ti = p->n_threads++;
    return t;
}

/* The edge caller -> callee through the callee's one-entry cache. */
static inline struct rp_edge *edge_of(struct rp_profile *p, struct hot *h, uint32_t caller,
                                      uint32_t callee)
{
    if (h->last_caller == caller)
        return &p->edges[h->last_edge];
    struct rp_edge *e = edge_get(p, caller, callee);
    if (e) {
        h->last_caller = caller;
        h->last_edge = (uint32_t)(e - p->edges);
    }
    return e;
}

/* Ends the innermost span of t at `now`.  Returns 0 or RP_ENOMEM. */
static inline __attribute__((always_inline)) int span_end(struct rp_profile *p, struct tstate *t,
                                                        uint64_t now)
{
    struct priv *v = p->priv;
    struct frame *f = &t->stack[--t->depth];
    struct hot *h = &v->hot[f->id];
    uint64_t dur = now >= f->start ? now - f->start : 0;
    uint64_t self = dur >= f->child ? dur - f->child : 0;

    h->calls++;
    h->dur_sum += dur;
    h->excl += self;
    h->min = dur < h->min ? dur : h->min;
    h->max = dur > h->max ? dur : h->max;
    h->sq += (unsigned __int128)dur * dur;
    if (unlikely(!h->hist) && !(h->hist = calloc(RP_HIST_BUCKETS, sizeof(uint32_t))))
        return RP_ENOMEM;
    rp_hist_count(h->hist, dur);
    h->first = f->start < h->first ? f->start : h->first;
    h->last = f->start > h->last ? f->start : h->last;
    if (--t->active[f->id] == 0)
        h->incl += dur;

    uint32_t parent = 0;
    if (t->depth) {
        struct frame *pf = &t->stack[t->depth - 1];
        pf->child += dur;
        parent = pf->id;
    }
    struct rp_edge *e = edge_of(p, h, parent, f->id);
    if (unlikely(!e))
        return RP_ENOMEM;
    e->calls++;
    e->incl += dur;
    e->min = dur < e->min ? dur : e->min;
    e->max = dur > e->max ? dur : e->max;
    return 0;
}

/* Drops every open span of t without time (lost events, end of trace). */
static void stack_abandon(struct rp_profile *p, struct tstate *t)
{
    p->threads[t->ti].unclosed += t->depth;
    while (t->depth)
        t->active[t->stack[--t->depth].id]--;
}

static int replay_events(struct rp_profile *p, const struct rp_chunk *c, uint32_t only_tid,
                         char *err, size_t errsz)
{
    struct rp_evdec d;
    struct rp_event ev;
    int rc;

    if (rp_evdec_init(&d, c->data, c->len) < 0)
        goto bad;
    if (only_tid && d.tid != only_tid)
        return 0;
    struct tstate *t = tstate_get(p, d.tid);
    if (!t)
        return RP_ENOMEM;
    struct rp_thread *th = &p->threads[t->ti];
    if (t->nactive < p->n_nodes) {
        uint32_t *na = realloc(t->active, p->cap_nodes * sizeof(*na));
        if (!na)
            return RP_ENOMEM;
        memset(na + t->nactive, 0, (p->cap_nodes - t->nactive) * sizeof(*na));
        t->active = na;
        t->nactive = p->cap_nodes;
    }
    /* The decoding of rp_evdec_next, inlined: this loop runs per event. */
    struct priv *v = p->priv;
    uint64_t n = 0, now = d.now, h, x;
    const uint8_t *q = d.p, *end = d.end, *ev0 = q;
    rc = 0;
    ev.id = 0;
    while (q < end) {
        ev0 = q;
        if (likely(*q < 0x80))
            h = *q++;
        else if (!(q = rp_get_varint(q, end, &h)))
            goto bad_at;
        now += h >> RP_OP_BITS;
        if (unlikely(!n++) && !th->events)
            th->first = now;
        switch (h & RP_OP_MASK) {
        case RP_OP_ENTER:
            if (likely(q < end && *q < 0x80))
                x = *q++;
            else if (!(q = rp_get_varint(q, end, &x)))
                goto bad_at;
            ev.id = (uint32_t)x;
            if (unlikely(x == 0 || x >= p->n_nodes || p->nodes[x].kind == 0xff))
                goto undefined;
            if (unlikely(t->depth == t->cap) &&
                grow(&t->stack, &t->cap, t->depth + 1, sizeof(*t->stack), 64) < 0)
                return RP_ENOMEM;
            t->stack[t->depth++] = (struct frame){(uint32_t)x, now, 0};
            t->active[x]++;
            break;
        case RP_OP_EXIT:
            if (unlikely(!t->depth)) {
                th->unmatched_exits++;
                break;
            }
            if (unlikely((rc = span_end(p, t, now)) < 0))
                return rc;
            break;
        case RP_OP_EXIT_ID: {
            if (!(q = rp_get_varint(q, end, &x)))
                goto bad_at;
            ev.id = (uint32_t)x;
            if (x == 0 || x >= p->n_nodes || p->nodes[x].kind == 0xff)
                goto undefined;
            uint32_t at = t->depth;
            while (at > 0 && t->stack[at - 1].id != x)
                at--;
            if (!at) {
                th->unmatched_exits++;
                break;
            }
            /* spans opened above it were never closed: drop them */
            th->unclosed += t->depth - at;
            while (t->depth > at)
                t->active[t->stack[--t->depth].id]--;
            if ((rc = span_end(p, t, now)) < 0)
                return rc;
            break;
        }
        case RP_OP_INSTANT:
        case RP_OP_COUNTER:
            if (!(q = rp_get_varint(q, end, &x)))
                goto bad_at;
            ev.id = (uint32_t)x;
            if (x == 0 || x >= p->n_nodes || p->nodes[x].kind == 0xff)
                goto undefined;
            if (!(q = rp_get_varint(q, end, &ev.arg)))
                goto bad_at;
            v->hot[x].calls++;
            break;
        case RP_OP_ARG:
            if (!(q = rp_get_varint(q, end, &ev.arg)))
                goto bad_at;
            break;
        case RP_OP_LOST:
            if (!(q = rp_get_varint(q, end, &ev.arg)))
                goto bad_at;
            th->lost += ev.arg;
            stack_abandon(p, t);
            break;
        default:
            goto bad_at;
        }
    }
    d.p = q;
    th->last = now;
    th->events += n;
    p->events += n;
    return 0;
bad_at:
    d.p = ev0;
bad:
    snprintf(err, errsz, "malformed event at offset %llu (in the chunk at offset %llu)",
             (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(d.p - d.start)),
             (unsigned long long)c->offset);
    return RP_EFORMAT;
undefined:
    d.p = ev0;
    snprintf(err, errsz, "event at offset %llu uses id %u, which no DEFS chunk defined",
             (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(d.p - d.start)),
             ev.id);
    return RP_EFORMAT;
}

static char *dupn(const void *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        memcpy(d, s, n);
        d[n] = 0;
    }
    return d;
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
            kind >= RP_KIND_MAX || id > p->n_nodes + (1u << 24))
            goto bad;
        if (nodes_reserve(p, id) < 0)
            return RP_ENOMEM;
        struct rp_node *n = &p->nodes[id];
        if (n->kind != 0xff)
            goto bad; /* an id is defined once */
        n->kind = kind;
        n->cls = cls;
        n->key = rp_get64(q + 8);
        n->line = rp_get32(q + 16);
        if (nlen && !(n->name = dupn(q + RP_DEF_FIXED, nlen)))
            return RP_ENOMEM;
        if (flen && !(n->file = dupn(q + RP_DEF_FIXED + nlen, flen)))
            return RP_ENOMEM;
        if (xlen >= RP_DEF_EXT_BUDGET) /* format 1.1 extension (format.h) */
            n->budget = rp_get64(q + RP_DEF_FIXED + nlen + flen);
        q += RP_DEF_FIXED + nlen + flen + xlen;
    }
    return 0;
bad:
    snprintf(err, errsz, "malformed definition at offset %llu",
             (unsigned long long)(c->offset + RP_CHUNK_HDR_SIZE + (uint64_t)(q - c->data)));
    return RP_EFORMAT;
}

static void read_info(struct rp_profile *p, const struct rp_chunk *c)
{
    struct priv *v = p->priv;
    const uint8_t *q = c->data, *end = c->data + c->len;
    while ((size_t)(end - q) >= 6) {
        uint16_t klen = rp_get16(q);
        if ((size_t)(end - q) < 6u + klen)
            break;
        uint32_t vlen = rp_get32(q + 2 + klen);
        if ((size_t)(end - q) < 6u + klen + vlen)
            break;
        const char *k = (const char *)q + 2;
        const char *val = (const char *)q + 6 + klen;
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
            p->argv = dupn(val, vlen);
            p->argv_len = p->argv ? vlen : 0;
        } else if (KEY("pid") || KEY("freq_hz")) {
            char tmp[32];
            size_t l = vlen < sizeof(tmp) - 1 ? vlen : sizeof(tmp) - 1;
            memcpy(tmp, val, l);
            tmp[l] = 0;
            if (KEY("pid"))
                p->pid = (uint32_t)strtoul(tmp, NULL, 10);
            else
                v->freq_hz = strtod(tmp, NULL);
        }
#undef KEY
        if (dst) {
            free(*dst);
            *dst = dupn(val, vlen);
        }
        q += 6u + klen + vlen;
    }
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
    if (c->len < 8 || (only_tid && rp_get32(c->data) != only_tid))
        return;
    struct tstate *t = tstate_get(p, rp_get32(c->data));
    if (!t)
        return;
    struct rp_thread *th = &p->threads[t->ti];
    free(th->name);
    th->name = dupn(c->data + 8, c->len - 8);
}

/* Converts accumulators to the profile's final fields. */
static void finish(struct rp_profile *p)
{
    struct priv *v = p->priv;

    for (uint32_t i = 0; i < v->nts; i++)
        stack_abandon(p, &v->ts[i]);
    if (v->nclk >= 2 && v->clk_last_ns - v->clk_first_ns >= 10000000u &&
        v->clk_last_ticks > v->clk_first_ticks)
        p->ns_per_tick = (double)(v->clk_last_ns - v->clk_first_ns) /
                         (double)(v->clk_last_ticks - v->clk_first_ticks);
    else if (v->freq_hz > 0)
        p->ns_per_tick = 1e9 / v->freq_hz;
    else
        p->ns_per_tick = 1.0;
    p->total = 0;
    for (uint32_t i = 0; i < p->n_threads; i++) {
        struct rp_thread *th = &p->threads[i];
        if (th->events)
            p->total += th->last - th->first;
        p->lost += th->lost;
        p->unmatched_exits += th->unmatched_exits;
        p->unclosed += th->unclosed;
        if (!p->first_tick || (th->events && th->first < p->first_tick))
            p->first_tick = th->first;
        if (th->last > p->last_tick)
            p->last_tick = th->last;
    }
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        struct rp_node *n = &p->nodes[i];
        struct hot *h = &v->hot[i];
        if (n->kind == 0xff)
            n->kind = RP_KIND_FUNC;
        n->calls = h->calls;
        n->dur_sum = h->dur_sum;
        n->excl = h->excl;
        n->incl = h->incl;
        n->min = h->calls && h->min != UINT64_MAX ? h->min : 0;
        n->max = h->max;
        n->first_start = h->calls ? h->first : 0;
        n->last_start = h->last;
        n->hist.counts = h->hist; /* the node owns it now */
        n->hist.n = h->hist ? h->calls : 0;
        h->hist = NULL;
        if (!n->calls || n->kind == RP_KIND_INSTANT || n->kind == RP_KIND_COUNTER)
            continue;
        double cnt = (double)n->calls;
        n->mean = (double)n->dur_sum / cnt;
        /* m2 = sum (x - mean)^2 = sumsq - sum^2 / n */
        long double m2 = (long double)h->sq -
                         (long double)n->dur_sum * (long double)n->dur_sum / (long double)cnt;
        n->m2 = m2 > 0 ? (double)m2 : 0.0;
    }
    p->nodes[0].kind = RP_KIND_FUNC;
}

int rp_replay_file(const char *path, const struct rp_replay_opts *o, struct rp_profile *p,
                   rp_chunk_fn fn, void *ctx, char *err, size_t errsz)
{
    struct rp_reader r;
    struct rp_chunk c;
    struct rp_replay_opts none = {0};
    char sub[256];
    int rc;

    if (!o)
        o = &none;
    err[0] = 0;
    if (!p->priv && !(p->priv = calloc(1, sizeof(struct priv))))
        return RP_ENOMEM;
    if ((rc = nodes_reserve(p, 0)) < 0 || (rc = edges_grow(p)) < 0)
        return rc;
    p->nodes[0].kind = RP_KIND_FUNC;
    if ((rc = rp_reader_open(&r, path)) < 0) {
        snprintf(err, errsz, "%s", r.err);
        return rc;
    }
    r.force = o->force;
    while ((rc = rp_reader_next(&r, &c)) > 0) {
        sub[0] = 0;
        switch (c.type) {
        case RP_CH_INFO:
            read_info(p, &c);
            break;
        case RP_CH_CLOCK:
            read_clock(p, &c);
            break;
        case RP_CH_MAPS:
            free(p->maps);
            p->maps = dupn(c.data, c.len);
            p->maps_len = p->maps ? c.len : 0;
            break;
        case RP_CH_THREAD:
            read_thread(p, &c, o->tid);
            break;
        case RP_CH_DEFS:
            rc = read_defs(p, &c, sub, sizeof(sub));
            break;
        case RP_CH_EVENTS:
            rc = replay_events(p, &c, o->tid, sub, sizeof(sub));
            break;
        case RP_CH_END:
            p->ended = 1;
            if (c.len >= 32) {
                p->end_status = (int32_t)rp_get32(c.data + 24);
                p->end_flags = rp_get32(c.data + 28);
            }
            break;
        default:
            break; /* unknown chunk types are skipped: newer minor versions */
        }
        if (rc >= 0 && fn)
            rc = fn(ctx, p, &c);
        if (rc < 0) {
            if (rc == RP_ENOMEM)
                snprintf(sub, sizeof(sub), "out of memory");
            snprintf(err, errsz, "%s: %s", path, sub);
            goto out;
        }
    }
    if (rc < 0) {
        if (o->force && (rc == RP_ETRUNC || rc == RP_ECRC)) {
            warnf(p, "%s; analysed the %llu bytes before it", r.err,
                  (unsigned long long)r.off);
            rc = 0;
        } else {
            snprintf(err, errsz, "%s", r.err);
            goto out;
        }
    }
    if (r.skipped) {
        p->skipped_chunks = r.skipped;
        warnf(p, "%s: skipped %llu damaged chunk(s), the first at offset %llu", path,
              (unsigned long long)r.skipped, (unsigned long long)r.skipped_off);
    }
    if (!p->ended)
        warnf(p, "%s: no END record: the program ended abnormally (crash, signal, _exit) "
                 "or is still running; events not flushed before that are missing", path);
    finish(p);
    rc = 0;
out:
    rp_reader_close(&r);
    return rc;
}

int rp_profile_symbolize(struct rp_profile *p)
{
    if (!p->maps || !p->maps_len)
        return 0;
    struct rp_symbolizer *s = rp_sym_open(p->maps, p->maps_len);
    if (!s)
        return RP_ENOMEM;
    int rc = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        struct rp_node *n = &p->nodes[i];
        if (n->name || !n->calls || (n->kind != RP_KIND_FUNC && n->kind != RP_KIND_LOCK_WAIT &&
                                     n->kind != RP_KIND_LOCK_HOLD))
            continue;
        struct rp_symbol sym = {0};
        if ((rc = rp_sym_lookup(s, n->key, &sym)) < 0)
            break;
        n->name = sym.name;
        if (!n->file) {
            n->file = sym.file;
            n->line = sym.line;
            sym.file = NULL;
        }
        free(n->module);
        n->module = sym.module;
        sym.name = sym.module = NULL;
        rp_sym_clear(&sym);
    }
    rp_sym_close(s);
    return rc;
}

static void priv_free(struct rp_profile *p)
{
    struct priv *v = p->priv;
    if (!v)
        return;
    for (uint32_t i = 0; i < v->nts; i++) {
        free(v->ts[i].stack);
        free(v->ts[i].active);
    }
    free(v->ts);
    free(v->ekeys);
    free(v->evals);
    for (uint32_t i = 0; i < p->n_nodes && v->hot; i++)
        free(v->hot[i].hist);
    free(v->hot);
    free(v);
    p->priv = NULL;
}

void rp_profile_free(struct rp_profile *p)
{
    priv_free(p);
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        free(p->nodes[i].name);
        free(p->nodes[i].file);
        free(p->nodes[i].module);
        rp_hist_free(&p->nodes[i].hist);
    }
    for (uint32_t i = 0; i < p->n_threads; i++)
        free(p->threads[i].name);
    free(p->nodes);
    free(p->edges);
    free(p->threads);
    free(p->program);
    free(p->argv);
    free(p->clock_name);
    free(p->mode);
    free(p->maps);
    memset(p, 0, sizeof(*p));
}

const char *rp_node_name(const struct rp_profile *p, const struct rp_node *n, char *buf,
                         size_t bufsz)
{
    (void)p;
    if (n->id == 0)
        return "<root>";
    if (n->name && n->name[0]) {
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
    default:
        snprintf(buf, bufsz, "0x%llx", (unsigned long long)n->key);
    }
    return buf;
}

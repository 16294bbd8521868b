// SPDX-License-Identifier: MIT
/*
 * merge.c - merging the profiles of a run's processes into one (merge.h).
 *
 * The merged profile's node i is found from (kind, class, name, file, line,
 * module) by
 * an open-addressing hash whose slots hold node indices (ROOT, index 0, is
 * never looked up), its edges from (caller, callee) by another; both stay
 * at most half full.  A node without a name (an address symbolization
 * could not name) is matched by its address, which only a forked child
 * shares with its parent.
 */
#include "merge.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/error.h"
#include "trace/format.h"

/* FNV-1a of s (NULL: nothing) continued from h, then mixed.  Cannot fail. */
static uint64_t hash_str(uint64_t h, const char *s)
{
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 0x100000001b3ull;
    return h * 0x9e3779b97f4a7c15ull;
}

/* The hash of a node's key: kind, class, name, file, line, module (address
 * when unnamed).  Cannot fail. */
static uint64_t node_hash(const struct rp_node *n)
{
    uint64_t h = 0xcbf29ce484222325ull ^ ((uint64_t)n->kind << 8 | n->cls);
    h = hash_str(h, n->name);
    h = hash_str(h ^ n->line, n->file);
    h = hash_str(h, n->module);
    if (!n->name || !n->name[0])
        h ^= n->key * 0xc2b2ae3d27d4eb4full;
    return h ^ h >> 31;
}

/* Whether a and b are the same text, NULL being "".  Cannot fail. */
static int str_eq(const char *a, const char *b)
{
    return (a ? a : "")[0] == (b ? b : "")[0] && !strcmp(a ? a : "", b ? b : "");
}

/* Whether a has a name and a source file: one place in the code. */
static int node_placed(const struct rp_node *a)
{
    return a->name && a->name[0] && a->file && a->file[0];
}

/*
 * Whether a and b are the same node (merge.h): of two processes, or with
 * `one` copies of one function in one process (two functions of one name
 * in a file without debug information are told apart by address, and
 * only functions are folded: a lock's node is its object's).  Cannot fail.
 */
static int node_eq(const struct rp_node *a, const struct rp_node *b, int one)
{
    if (a->kind != b->kind || a->cls != b->cls || !str_eq(a->name, b->name) ||
        !str_eq(a->file, b->file) || a->line != b->line || !str_eq(a->module, b->module))
        return 0;
    if (one && (a->kind != RP_KIND_FUNC || !node_placed(a)))
        return a->key == b->key;
    return (a->name && a->name[0]) || a->key == b->key;
}

/* Doubles the node hash as needed for the dst's count.  RP_ENOMEM. */
static int rehash(struct rp_merge *m)
{
    struct rp_profile *d = m->dst;
    if (2 * (uint64_t)d->n_nodes >= m->n_nslots) {
        uint32_t n = m->n_nslots ? m->n_nslots * 2 : 1024;
        while (2 * (uint64_t)d->n_nodes >= n)
            n *= 2;
        uint32_t *s = calloc(n, sizeof(*s));
        if (!s)
            return RP_ENOMEM;
        for (uint32_t i = 1; i < d->n_nodes; i++) {
            uint32_t h = (uint32_t)node_hash(&d->nodes[i]) & (n - 1);
            while (s[h])
                h = (h + 1) & (n - 1);
            s[h] = i;
        }
        free(m->nslots);
        m->nslots = s;
        m->n_nslots = n;
    }
    return 0;
}

int rp_merge_init(struct rp_merge *m, struct rp_profile *dst)
{
    memset(m, 0, sizeof(*m));
    m->dst = dst;
    if (rp_grow(&dst->nodes, &dst->cap_nodes, 1, sizeof(*dst->nodes), 64) < 0)
        return RP_ENOMEM;
    dst->nodes[0] = (struct rp_node){.kind = RP_KIND_FUNC};
    dst->n_nodes = 1;
    return rehash(m);
}

void rp_merge_free(struct rp_merge *m)
{
    free(m->nslots);
    free(m->edges.vals); /* (its edges are the merged profile's) */
    memset(m, 0, sizeof(*m));
}

/* strdup of s, NULL for NULL; sets *fail when out of memory. */
static char *dup_or_null(const char *s, int *fail)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *fail = 1;
    return d;
}

/* s copied into p's string arena (interned: once however many ask), NULL
 * for NULL; sets *fail when out of memory. */
static char *pool_dup(struct rp_profile *p, const char *s, int intern, int *fail)
{
    if (!s)
        return NULL;
    char *d = rp_profile_strndup(p, s, strlen(s), intern);
    if (!d)
        *fail = 1;
    return d;
}

/* Pools the Welford sums of b (mean, m2) into a's (counts na, nb before
 * the sum).  Cannot fail. */
static void pool(struct rp_node_x *a, uint64_t na, const struct rp_node_x *b, uint64_t nb)
{
    if (!nb)
        return;
    if (!na) {
        a->mean = b->mean;
        a->m2 = b->m2;
        return;
    }
    double n = (double)na + (double)nb, delta = b->mean - a->mean;
    a->mean += delta * (double)nb / n;
    a->m2 += b->m2 + delta * delta * (double)na * (double)nb / n;
}

/* The merged node matching s, created as a copy of its identity when new;
 * 0 when out of memory. */
static uint32_t node_of(struct rp_merge *m, const struct rp_node *s)
{
    struct rp_profile *d = m->dst;
    uint32_t mask = m->n_nslots - 1, h = (uint32_t)node_hash(s) & mask;
    for (uint32_t i; (i = m->nslots[h]); h = (h + 1) & mask)
        if (node_eq(&d->nodes[i], s, m->one))
            return i;
    if (rp_grow(&d->nodes, &d->cap_nodes, d->n_nodes + 1, sizeof(*d->nodes), 64) < 0)
        return 0;
    int fail = 0;
    uint32_t i = d->n_nodes;
    /* (in dst's arena: a path once however many nodes have it) */
    d->nodes[i] = (struct rp_node){.id = i,
                                   .kind = s->kind,
                                   .cls = s->cls,
                                   .key = s->key,
                                   .name = pool_dup(d, s->name, 0, &fail),
                                   .file = pool_dup(d, s->file, 1, &fail),
                                   .line = s->line,
                                   .module = pool_dup(d, s->module, 1, &fail)};
    if (fail) {
        rp_profile_strfree(d, d->nodes[i].name);
        rp_profile_strfree(d, d->nodes[i].file);
        rp_profile_strfree(d, d->nodes[i].module);
        return 0;
    }
    d->n_nodes++;
    m->nslots[h] = i;
    if (rehash(m) < 0)
        return 0;
    return i;
}

static int add_flag_hists(struct rp_node *a, const struct rp_node *b);

/* Adds b's statistics to a (the same node of another process), and with
 * hists its histograms (the flags' first: add_flag_hists).  Returns 0 or
 * RP_ENOMEM. */
static int add_node(struct rp_node *a, const struct rp_node *b, int hists)
{
    struct rp_node_x x = rp_node_x_get(a), y = rp_node_x_get(b);
    int rc;
    if (hists) { /* (after the get: hist.n is in the defaults) */
        if ((rc = add_flag_hists(a, b)) < 0)
            return rc;
        if (rp_hist_merge(&x.hist, &y.hist) == 0)
            x.hist.n += y.hist.n;
    }
    if (b->calls) {
        if (!a->calls) {
            x.min = y.min;
            x.oncpu_min = y.oncpu_min;
        } else {
            x.min = y.min < x.min ? y.min : x.min;
            x.oncpu_min = y.oncpu_min < x.oncpu_min ? y.oncpu_min : x.oncpu_min;
        }
        x.max = y.max > x.max ? y.max : x.max;
        x.oncpu_max = y.oncpu_max > x.oncpu_max ? y.oncpu_max : x.oncpu_max;
        x.run_max = y.run_max > x.run_max ? y.run_max : x.run_max;
    }
    /* the mean is of the recorded activations (not the throttle's counted ones) */
    pool(&x, a->calls - x.throttled, &y, b->calls - y.throttled);
    a->calls += b->calls;
    a->incl += b->incl;
    x.dur_sum += y.dur_sum;
    a->excl += b->excl;
    if (!x.budget)
        x.budget = y.budget;
    x.overruns += y.overruns;
    x.throttled += y.throttled;
    x.cut += y.cut;
    x.below_res += y.below_res;
    x.offcpu += y.offcpu;
    x.offcpu_below += y.offcpu_below;
    return rp_node_x_set(a, &x);
}

/*
 * Adds the flags' histograms of source node b to a (before a's duration
 * histogram takes b's): own time per call, where a node has none its
 * duration histogram (every span a leaf), and the intervals between starts
 * unless either is aperiodic.  Returns 0 or RP_ENOMEM.
 */
static int add_flag_hists(struct rp_node *a, const struct rp_node *b)
{
    if (!rp_node_fh(a) && !rp_node_fh(b))
        return 0;
    struct rp_flag_hists *x = rp_node_fhw(a, 0);
    if (!x)
        return RP_ENOMEM;
    const struct rp_hist *bo = rp_node_own(b), *bi = rp_node_ivl(b);
    struct rp_hist abuf, bbuf;
    const struct rp_hist *ah = rp_node_hist(a, &abuf);
    if (bo || x->own.len) {
        if (!x->own.len && ah->len) {
            if (rp_hist_merge(&x->own, ah))
                return RP_ENOMEM;
            x->own.n = ah->n;
        }
        const struct rp_hist *src = bo ? bo : rp_node_hist(b, &bbuf);
        if (rp_hist_merge(&x->own, src))
            return RP_ENOMEM;
        x->own.n += src->n;
    }
    x->aperiodic |= rp_node_aperiodic(b);
    if (x->aperiodic) {
        rp_hist_free(&x->ivl);
    } else if (bi) {
        if (rp_hist_merge(&x->ivl, bi))
            return RP_ENOMEM;
        x->ivl.n += bi->n;
    }
    return 0;
}

static int outside_cmp(const void *a, const void *b)
{
    const struct rp_outside *x = a, *y = b;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Adds src's spans outside the program's code to d's, its ids mapped by
 * own (d->outside stays sorted by id, one entry per id).  Returns 0 or
 * RP_ENOMEM. */
static int add_outside(struct rp_profile *d, const struct rp_profile *src, const uint32_t *own)
{
    if (!src->n_outside)
        return 0;
    struct rp_outside *x =
        realloc(d->outside, (d->n_outside + (size_t)src->n_outside) * sizeof(*x));
    if (!x)
        return RP_ENOMEM;
    d->outside = x;
    uint32_t n = d->n_outside;
    for (uint32_t k = 0; k < src->n_outside; k++)
        if (src->outside[k].id < src->n_nodes && own[src->outside[k].id])
            x[n++] = (struct rp_outside){.id = own[src->outside[k].id],
                                         .calls = src->outside[k].calls,
                                         .ticks = src->outside[k].ticks};
    qsort(x, n, sizeof(*x), outside_cmp);
    uint32_t m = 0;
    for (uint32_t k = 0; k < n; k++)
        if (m && x[m - 1].id == x[k].id) {
            x[m - 1].calls += x[k].calls;
            x[m - 1].ticks += x[k].ticks;
        } else {
            x[m++] = x[k];
        }
    d->n_outside = m;
    return 0;
}

/* Adds edge e of a source, its ends mapped, to the merged profile, whose
 * edges are the index's (rp_emap).  RP_ENOMEM. */
static int add_edge(struct rp_merge *m, const struct rp_edge *e, uint32_t caller, uint32_t callee)
{
    struct rp_profile *d = m->dst;
    uint32_t n = m->edges.n;
    struct rp_edge *x = rp_emap_get(&m->edges, caller, callee);
    if (!x)
        return RP_ENOMEM;
    d->edges = m->edges.edges; /* (moved when it grew) */
    d->n_edges = m->edges.n;
    d->cap_edges = m->edges.capn;
    if (m->edges.n != n) { /* new: the source's edge as it is */
        *x = *e;
        x->caller = caller;
        x->callee = callee;
        return 0;
    }
    if (e->calls) {
        x->min = !x->calls || e->min < x->min ? e->min : x->min;
        x->max = e->max > x->max ? e->max : x->max;
    }
    x->calls += e->calls;
    x->incl += e->incl;
    x->incl_calls += e->incl_calls;
    return 0;
}

/* The run's metadata: the first file's, then sums and extremes.  RP_ENOMEM. */
static int add_meta(struct rp_profile *d, const struct rp_profile *s, const char *file)
{
    int first = d->n_procs == 0, fail = 0;
    if (first) {
        d->program = dup_or_null(s->program, &fail);
        if (s->argv && (d->argv = malloc(s->argv_len ? s->argv_len : 1))) {
            memcpy(d->argv, s->argv, s->argv_len);
            d->argv_len = s->argv_len;
        } else if (s->argv) {
            fail = 1;
        }
        d->pid = s->pid;
        d->clock_name = dup_or_null(s->clock_name, &fail);
        d->mode = dup_or_null(s->mode, &fail);
        d->ns_per_tick = s->ns_per_tick;
        d->first_tick = s->first_tick;
        d->last_tick = s->last_tick;
        d->ended = s->ended;
        d->end_ticks = s->end_ticks;
        d->end_flags = s->end_flags;
        d->end_status = s->end_status;
        d->overhead_known = s->overhead_known;
        d->overhead_pair = s->overhead_pair;
        d->overhead_self = s->overhead_self;
        d->compensated = s->compensated;
        d->overhead_spread = s->overhead_spread;
        d->clock_step = s->clock_step;
        d->overhead_late = s->overhead_late;
        d->overhead_late_pair = s->overhead_late_pair;
        d->resolution = s->resolution;
        d->hold_intervals = s->hold_intervals;
        memcpy(d->offcpu_src, s->offcpu_src, sizeof(d->offcpu_src));
        memcpy(d->offcpu_err, s->offcpu_err, sizeof(d->offcpu_err));
        d->oncpu_known = s->oncpu_known;
        d->own_known = s->own_known;
        d->outside_apart = s->outside_apart;
        d->incl_calls_known = s->incl_calls_known;
        d->rank = s->rank;
    } else {
        /* (a file without events, such as a launcher's, has no interval) */
        if (s->last_tick && (!d->last_tick || s->first_tick < d->first_tick))
            d->first_tick = s->first_tick;
        d->last_tick = s->last_tick > d->last_tick ? s->last_tick : d->last_tick;
        if (!s->ended || (s->end_flags & RP_END_SIGNAL)) { /* the run: as its worst process */
            if (d->ended && !(d->end_flags & RP_END_SIGNAL)) {
                d->ended = s->ended;
                d->end_flags = s->end_flags;
                d->end_status = s->end_status;
            }
        }
        if (s->end_ticks > d->end_ticks)
            d->end_ticks = s->end_ticks;
        d->overhead_known &= s->overhead_known;
        d->compensated &= s->compensated;
        d->resolution = s->resolution > d->resolution ? s->resolution : d->resolution;
        d->hold_intervals |= s->hold_intervals;
        d->oncpu_known &= s->oncpu_known;
        d->own_known &= s->own_known;
        d->outside_apart |= s->outside_apart;
        d->incl_calls_known &= s->incl_calls_known;
        double r = s->ns_per_tick / (d->ns_per_tick > 0 ? d->ns_per_tick : 1);
        if (r > 1.01 || r < 0.99) {
            size_t n = strlen(d->warn);
            snprintf(d->warn + n, sizeof(d->warn) - n,
                     "%s: its clock ticks are %.4f ns, the merged profile's %.4f ns: its "
                     "times are summed in ticks\n",
                     file, s->ns_per_tick, d->ns_per_tick);
        }
    }
    d->events += s->events;
    d->lost += s->lost;
    d->total += s->total;
    d->comp_clamped += s->comp_clamped;
    d->below_res += s->below_res;
    d->skipped_chunks += s->skipped_chunks;
    d->pieces_deleted += s->pieces_deleted;
    d->unmatched_exits += s->unmatched_exits;
    d->unclosed += s->unclosed;
    d->unwound += s->unwound;
    d->cut += s->cut;
    d->paused += s->paused;
    d->offcpu_lost += s->offcpu_lost;
    d->offcpu_late += s->offcpu_late;
    d->offcpu_runq_ns += s->offcpu_runq_ns;
    d->offcpu_runq_known |= s->offcpu_runq_known;
    d->lost_why_known |= s->lost_why_known;
    for (unsigned w = 0; w < RP_WHY_N; w++)
        d->lost_why[w] += s->lost_why[w];
    /* its warnings, each naming the file */
    for (const char *w = s->warn, *nl; *w; w = nl + 1) {
        if (!(nl = strchr(w, '\n')))
            break;
        size_t n = strlen(d->warn);
        if (n + 2 < sizeof(d->warn))
            snprintf(d->warn + n, sizeof(d->warn) - n, "%s: %.*s\n", file, (int)(nl - w), w);
    }
    return fail ? RP_ENOMEM : 0;
}

int rp_merge_add(struct rp_merge *m, const struct rp_profile *src, const struct rp_proc *who)
{
    struct rp_profile *d = m->dst;
    uint32_t *own;
    int rc = 0, fail = 0;

    if (!(own = calloc(src->n_nodes ? src->n_nodes : 1, sizeof(*own))))
        return RP_ENOMEM;
    if ((rc = add_meta(d, src, who->file)) < 0)
        goto out;
    if (d->n_procs && who->host && d->procs[0].host && strcmp(who->host, d->procs[0].host)) {
        size_t n = strlen(d->warn); /* another machine's clock: not on one time axis */
        snprintf(d->warn + n, sizeof(d->warn) - n,
                 "%s: recorded on %s, not %s: its clock is another machine's, its events are "
                 "not on the others' time axis\n",
                 who->file, who->host, d->procs[0].host);
    }
    own[0] = 0;
    for (uint32_t i = 1; i < src->n_nodes; i++) {
        const struct rp_node *s = &src->nodes[i];
        own[i] = 0;
        if (s->kind == 0xff)
            continue;
        if (!(own[i] = node_of(m, s))) {
            rc = RP_ENOMEM;
            goto out;
        }
        if ((rc = add_node(&d->nodes[own[i]], s, 1)) < 0)
            goto out;
    }
    if ((rc = add_node(&d->nodes[0], &src->nodes[0], 0)) < 0)
        goto out;
    if ((rc = add_outside(d, src, own)) < 0)
        goto out;
    for (uint32_t k = 0; k < src->n_edges; k++) {
        const struct rp_edge *e = &src->edges[k];
        if (e->caller >= src->n_nodes || e->callee >= src->n_nodes)
            continue;
        if ((rc = add_edge(m, e, own[e->caller], own[e->callee])) < 0)
            goto out;
    }
    if (rp_grow(&d->threads, &d->cap_threads, d->n_threads + src->n_threads + 1,
                sizeof(*d->threads), 16) < 0 ||
        rp_grow(&d->procs, &d->cap_procs, d->n_procs + 1, sizeof(*d->procs), 8) < 0) {
        rc = RP_ENOMEM;
        goto out;
    }
    for (uint32_t t = 0; t < src->n_threads; t++) {
        struct rp_thread *x = &d->threads[d->n_threads++];
        *x = src->threads[t];
        x->name = dup_or_null(src->threads[t].name, &fail);
        x->pid = src->pid;
    }
    struct rp_proc *pr = &d->procs[d->n_procs++];
    *pr = (struct rp_proc){.file = dup_or_null(who->file, &fail),
                           .run = dup_or_null(who->run, &fail),
                           .host = dup_or_null(who->host, &fail),
                           .pid = src->pid,
                           .ppid = who->ppid,
                           .start_ns = who->start_ns,
                           .rank = who->rank,
                           .has_rank = who->has_rank,
                           .events = src->events,
                           .lost = src->lost,
                           .threads = src->n_threads,
                           .ended = src->ended && !(src->end_flags & RP_END_SIGNAL),
                           .map = m->keep_maps ? own : NULL,
                           .n_map = src->n_nodes,
                           .overhead_known = src->overhead_known,
                           .end_read = src->ended,
                           .overhead_pair = src->overhead_pair,
                           .overhead_self = src->overhead_self,
                           .overhead_spread = src->overhead_spread,
                           .clock_step = src->clock_step,
                           .end_ticks = src->end_ticks};
    if (m->keep_maps)
        own = NULL;
    if (fail)
        rc = RP_ENOMEM;
out:
    free(own);
    return rc;
}

/*
 * The copies in p: function nodes with the name, file, line and module of
 * an earlier node (node_eq with `one`).  Returns their count, or RP_ENOMEM.
 */
static int64_t copies_of(const struct rp_profile *p)
{
    uint32_t n = 1024, mask;
    while (n < 2 * (uint64_t)p->n_nodes)
        n *= 2;
    uint32_t *slot = calloc(n, sizeof(*slot));
    int64_t copies = 0;
    if (!slot)
        return RP_ENOMEM;
    mask = n - 1;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const struct rp_node *a = &p->nodes[i];
        if (a->kind != RP_KIND_FUNC || !node_placed(a))
            continue;
        uint32_t h = (uint32_t)node_hash(a) & mask, j;
        while ((j = slot[h]) && !node_eq(&p->nodes[j], a, 1))
            h = (h + 1) & mask;
        if (j)
            copies++;
        else
            slot[h] = i;
    }
    free(slot);
    return copies;
}

int rp_merge_fold(struct rp_profile *p)
{
    struct rp_profile q = {0};
    struct rp_merge m;
    int64_t copies = copies_of(p);
    int rc;

    if (copies <= 0 || p->n_procs != 1)
        return copies < 0 ? (int)copies : 0;
    if ((rc = rp_merge_init(&m, &q)) < 0)
        goto out;
    m.one = m.keep_maps = 1;
    rc = rp_merge_add(&m, p, &p->procs[0]);
    rp_merge_free(&m);
    if (rc < 0)
        goto out;
    /* what a merge of processes does not carry, this file's own */
    const uint32_t *map = q.procs[0].map;
    memcpy(q.warn, p->warn, sizeof(q.warn)); /* (not prefixed with the file) */
    q.filter = p->filter;
    q.maps = p->maps;
    q.maps_len = p->maps_len;
    q.snapshot = p->snapshot;
    p->filter = p->maps = p->snapshot = NULL;
    q.windows = p->windows;
    q.recorded_ns = p->recorded_ns;
    q.window_exits = p->window_exits;
    q.ring_size = p->ring_size;
    q.ring_dropped = p->ring_dropped;
    q.ring_run_ns = p->ring_run_ns;
    q.ring_triggers = p->ring_triggers;
    q.ring_triggers_skipped = p->ring_triggers_skipped;
    q.throttle_sample = p->throttle_sample;
    q.running = p->running;
    q.checkpoint = p->checkpoint;
    q.defs_only = p->defs_only;
    q.fatal_tid = p->fatal_tid;
    q.fatal_depth = p->fatal_depth;
    q.fatal_n = p->fatal_n;
    for (uint32_t i = 0; i < p->fatal_n && i < RP_FATAL_FRAMES; i++)
        q.fatal_stack[i] = p->fatal_stack[i] < p->n_nodes ? map[p->fatal_stack[i]] : 0;
    q.folded = (uint32_t)copies;
    rp_profile_free(p);
    *p = q;
    return 0;
out:
    rp_profile_free(&q);
    return rc;
}

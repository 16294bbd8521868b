// SPDX-License-Identifier: MIT
/*
 * calltree.c - `rankprof replay` (calltree.h): the spans of spanwalk.c
 * written as a tree, one line per call.
 *
 * A call is a line "name() {" when it begins and a closing "}" line naming
 * it, with its duration, when it ends, or a single line "name();" with its
 * duration when nothing it called is shown.  So the opening line of a call
 * is written only when a line of something it called is: each thread keeps its stack of
 * open calls, each marked whether its opening line is out, and before a
 * line is written, the opening lines of the calls below it that are not
 * out yet are (bottom up).
 *
 * -t TIME hides the calls shorter than TIME with what they called: a call
 * that ends younger is dropped, and so were its callees, younger still; a
 * call with a callee shown is older than that callee's duration, so at
 * least TIME.  Nothing is held back but the marks on the stack.
 *
 * Memory: per thread the stack of open calls (24 bytes a frame); per node a
 * byte for the -F/-N matches.
 */
#include "calltree.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/error.h"
#include "names.h"
#include "analyze/spanwalk.h"
#include "util.h"

#define NAME_BUF   512
#define MAX_INDENT 100 /* levels indented; deeper lines say their depth */

enum { M_ONLY = 1, M_EXCLUDE = 2 }; /* per node: matches -F, -N */

struct frame {
    uint32_t id;
    uint32_t vdepth;  /* shown frames below it */
    uint64_t start;   /* ticks */
    uint8_t visible;  /* shown (or to be, when old enough) */
    uint8_t printed;  /* its opening line is out */
    uint8_t inside;   /* in a -F subtree */
    uint8_t excluded; /* in a -N subtree */
};

struct thr {
    uint32_t tid;
    struct frame *st;
    uint32_t depth, cap;
};

struct ct {
    FILE *out;
    const struct rp_profile *p;
    const struct rp_calltree_opts *o;
    uint8_t *match;     /* per node: M_* */
    uint64_t min_ticks; /* -t in ticks */
    struct thr *thr;
    uint32_t n_thr, cap_thr, last;
};

/* The thread's state, made on first use.  Returns NULL when out of memory. */
static struct thr *thread_of(struct ct *c, uint32_t tid)
{
    if (c->last < c->n_thr && c->thr[c->last].tid == tid)
        return &c->thr[c->last];
    for (uint32_t i = 0; i < c->n_thr; i++)
        if (c->thr[i].tid == tid)
            return &c->thr[c->last = i];
    if (rp_grow(&c->thr, &c->cap_thr, c->n_thr + 1, sizeof(*c->thr), 8) < 0)
        return NULL;
    c->thr[c->n_thr] = (struct thr){.tid = tid};
    return &c->thr[c->last = c->n_thr++];
}

static const char *name_of(const struct ct *c, uint32_t id, char *buf, size_t n)
{
    if (id >= c->p->n_nodes)
        return snprintf(buf, n, "#%" PRIu32, id), buf;
    return rp_node_name(c->p, &c->p->nodes[id], buf, n);
}

/* ns as a line's duration, to the nanosecond as uftrace prints it: "%.3f"
 * in the largest unit it is at least one of ("12.345 us", "5.585 ms"),
 * "%.0f ns" below a microsecond.  Cannot fail. */
static const char *line_dur(double ns, char *buf, size_t n)
{
    if (ns < 1e3)
        snprintf(buf, n, "%.0f ns", ns);
    else if (ns < 1e6)
        snprintf(buf, n, "%.3f us", ns / 1e3);
    else if (ns < 1e9)
        snprintf(buf, n, "%.3f ms", ns / 1e6);
    else
        snprintf(buf, n, "%.3f s", ns / 1e9);
    return buf;
}

/* The start of a line: duration (blank: none), thread, indentation. */
static void line_head(struct ct *c, uint32_t tid, double ns, int has_dur, uint32_t vdepth)
{
    char d[32] = "", t[24];
    if (has_dur)
        line_dur(ns, d, sizeof d);
    const char *col = "", *reset = "";
    if (c->o->color && has_dur && ns >= 1e6) {
        col = ns >= 1e8 ? "\033[1;31m" : "\033[33m";
        reset = "\033[0m";
    }
    fprintf(c->out, "%s%11s%s [%7s] | ", col, d, reset, rp_tid_str(tid, t, sizeof t));
    if (vdepth > MAX_INDENT)
        fprintf(c->out, "%*s[depth %" PRIu32 "] ", 2 * MAX_INDENT, "", vdepth);
    else
        fprintf(c->out, "%*s", 2 * (int)vdepth, "");
}

/* Writes the opening lines of t's frames [0, upto) old enough at now. */
static void promote(struct ct *c, struct thr *t, uint32_t upto, uint64_t now)
{
    char nb[NAME_BUF];
    for (uint32_t i = 0; i < upto; i++) {
        struct frame *f = &t->st[i];
        if (!f->visible || f->printed)
            continue;
        if (c->min_ticks && now < f->start + c->min_ticks)
            return; /* (younger still: so are those above) */
        line_head(c, t->tid, 0, 0, f->vdepth);
        fprintf(c->out, "%s%s%s() {\n", c->o->color ? "\033[1m" : "",
                name_of(c, f->id, nb, sizeof nb), c->o->color ? "\033[0m" : "");
        f->printed = 1;
    }
}

static int ct_begin(void *ctx, const struct rp_sw_span *s)
{
    struct ct *c = ctx;
    struct thr *t = thread_of(c, s->tid);
    if (!t)
        return RP_ENOMEM;
    if (t->depth > s->depth) /* (the walk closed them without telling: keep in step) */
        t->depth = s->depth;
    if (rp_grow(&t->st, &t->cap, t->depth + 1, sizeof(*t->st), 64) < 0)
        return RP_ENOMEM;
    const struct frame *up = t->depth ? &t->st[t->depth - 1] : NULL;
    uint8_t m = s->id < c->p->n_nodes ? c->match[s->id] : 0;
    struct frame f = {.id = s->id, .start = s->start};
    f.inside = !c->o->n_only || (up && up->inside) || (m & M_ONLY);
    f.excluded = (up && up->excluded) || (m & M_EXCLUDE);
    f.vdepth = up ? up->vdepth + up->visible : 0;
    f.visible = f.inside && !f.excluded && (!c->o->max_depth || f.vdepth < c->o->max_depth);
    t->st[t->depth++] = f;
    return 0;
}

/* Pops the frame of span s (and any the walk left above it). */
static struct frame *pop(struct thr *t, const struct rp_sw_span *s)
{
    if (!t || !t->depth)
        return NULL;
    t->depth = s->depth < t->depth ? s->depth : t->depth - 1;
    return &t->st[t->depth];
}

static int ct_end(void *ctx, const struct rp_sw_span *s)
{
    struct ct *c = ctx;
    struct thr *t = thread_of(c, s->tid);
    struct frame *f = pop(t, s);
    char nb[NAME_BUF];
    if (!f || !f->visible)
        return 0;
    double ns = (double)s->dur * c->p->ns_per_tick;
    const char *why = s->cut == RP_SW_UNWOUND ? " (unwound)"
                      : s->cut                ? " (cut: it never returned)"
                                              : "";
    if (f->printed) {
        line_head(c, s->tid, ns, 1, f->vdepth);
        fprintf(c->out, "} /* %s%s */\n", name_of(c, f->id, nb, sizeof nb), why);
    } else if (s->dur >= c->min_ticks) {
        promote(c, t, t->depth, s->end);
        line_head(c, s->tid, ns, 1, f->vdepth);
        fprintf(c->out, "%s();%s%s%s\n", name_of(c, f->id, nb, sizeof nb), *why ? " /*" : "", why,
                *why ? " */" : "");
    }
    return ferror(c->out) ? RP_EIO : 0;
}

static int ct_drop(void *ctx, const struct rp_sw_span *s)
{
    struct ct *c = ctx;
    struct thr *t = thread_of(c, s->tid);
    struct frame *f = pop(t, s);
    char nb[NAME_BUF];
    if (f && f->visible && f->printed) {
        line_head(c, s->tid, 0, 0, f->vdepth);
        fprintf(c->out, "} /* %s: its end was lost */\n", name_of(c, f->id, nb, sizeof nb));
    }
    return ferror(c->out) ? RP_EIO : 0;
}

static int ct_lost(void *ctx, uint32_t tid, uint64_t ticks, uint64_t count)
{
    struct ct *c = ctx;
    (void)ticks;
    line_head(c, tid, 0, 0, 0);
    fprintf(c->out, "/* %" PRIu64 " events lost here */\n", count);
    return ferror(c->out) ? RP_EIO : 0;
}

static int ct_instant(void *ctx, uint32_t tid, uint32_t id, uint64_t ticks, int64_t value,
                      int counter, uint32_t parent)
{
    struct ct *c = ctx;
    struct thr *t = thread_of(c, tid);
    char nb[NAME_BUF];
    (void)parent;
    if (!t)
        return RP_ENOMEM;
    const struct frame *up = t->depth ? &t->st[t->depth - 1] : NULL;
    if ((up && (!up->visible || up->excluded)) || (!up && c->o->n_only))
        return 0;
    promote(c, t, t->depth, ticks);
    if (up && !up->printed)
        return 0; /* (inside a call too young to show yet) */
    line_head(c, tid, 0, 0, up ? up->vdepth + 1 : 0);
    if (counter)
        fprintf(c->out, "/* %s = %" PRId64 " */\n", name_of(c, id, nb, sizeof nb), value);
    else
        fprintf(c->out, "/* %s */\n", name_of(c, id, nb, sizeof nb));
    return ferror(c->out) ? RP_EIO : 0;
}

/* Per node, whether it matches -F / -N (names.h: whole or short names). */
static int match_names(struct ct *c)
{
    char nb[NAME_BUF];
    c->match = calloc(c->p->n_nodes ? c->p->n_nodes : 1, 1);
    if (!c->match)
        return RP_ENOMEM;
    for (uint32_t i = 1; i < c->p->n_nodes; i++) {
        const char *name = rp_node_name(c->p, &c->p->nodes[i], nb, sizeof nb);
        for (unsigned k = 0; k < c->o->n_only; k++)
            if (rp_name_match(name, c->o->only[k]))
                c->match[i] |= M_ONLY;
        for (unsigned k = 0; k < c->o->n_exclude; k++)
            if (rp_name_match(name, c->o->exclude[k]))
                c->match[i] |= M_EXCLUDE;
    }
    return 0;
}

int rp_calltree(FILE *out, const char *path, const struct rp_replay_opts *o,
                const struct rp_profile *p, const struct rp_calltree_opts *opt, char *err,
                size_t errsz)
{
    struct ct c = {.out = out, .p = p, .o = opt};
    static const struct rp_sw_ops ops = {
        .begin = ct_begin, .end = ct_end, .instant = ct_instant, .drop = ct_drop, .lost = ct_lost};
    int rc = match_names(&c);
    if (rc < 0)
        goto out;
    c.min_ticks = p->ns_per_tick > 0 ? (uint64_t)(opt->min_ns / p->ns_per_tick) : 0;
    fprintf(out, "#%10s  %8s   %s\n", "DURATION", "TID", "FUNCTION");
    rc = rp_sw_file(path, o, p, &ops, &c, 0, err, errsz);
    if (rc == 0 && ferror(out))
        rc = RP_EIO;
out:
    for (uint32_t i = 0; i < c.n_thr; i++)
        free(c.thr[i].st);
    free(c.thr);
    free(c.match);
    return rc;
}

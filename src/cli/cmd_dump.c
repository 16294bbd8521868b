// SPDX-License-Identifier: MIT
/*
 * cmd_dump.c - `rankprof dump`: every chunk and every event, one per line,
 * in file order:  time since the run's first event (ns on the run's one
 * time axis, report/clockmap.h: each file's ticks mapped through its CLOCK
 * chunks and clock offsets; negative for an event before it, which cannot
 * be), thread, event, name, exits named from each thread's stack of open
 * spans.  Each EVENTS chunk's line gives its base in raw ticks and on the
 * axis, and each file's first line how its clock maps.
 *
 * Filters (-F, -N, -D, -r; docs/filters.md) print the events of the kept
 * spans: an enter and its exit when the span is kept (decided when it
 * begins, from the filter state of the span below it, which each thread's
 * stack keeps), any other event when the innermost open span is kept.
 * Lost events are always printed.  Names are matched as they are first
 * needed (an id's mark is computed with its name).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/symbols.h"
#include "analyze/set.h"
#include "cli.h"
#include "common/error.h"
#include "common/span.h"
#include "report/clockmap.h"
#include "report/names.h"
#include "trace/reader.h"

/* A thread's open spans, kept across its chunks (file order is each
 * thread's order): the names of its exits, and the indentation. */
struct dstack {
    uint32_t tid;
    uint32_t *ids, n, cap;
    struct rp_sf_frame *sf; /* filtered: each open span's filter state */
};

struct dump {
    struct dstack *st;
    uint32_t nst;
    struct rp_symbolizer *sym;
    char **names; /* per id, lazily */
    uint32_t nnames;
    const char *maps; /* the file's mappings, all its MAPS chunks read (the first pass) */
    size_t maps_len;
    double ns_per_tick;
    struct rp_clockmap cm; /* the files' clocks; cm.cur is the file being dumped */
    /* filtered: flt.mark is mark[], an id's entry valid once marked[id] */
    const struct rp_filter_args *fa;
    struct rp_span_filter flt;
    uint8_t *mark, *marked;
    uint32_t nmark;
};

/* The stack of thread tid, made on first use; NULL when out of memory. */
static struct dstack *stack_of(struct dump *d, uint32_t tid)
{
    for (uint32_t i = 0; i < d->nst; i++)
        if (d->st[i].tid == tid)
            return &d->st[i];
    struct dstack *n = realloc(d->st, (d->nst + 1) * sizeof(*n));
    if (!n)
        return NULL;
    d->st = n;
    d->st[d->nst] = (struct dstack){.tid = tid};
    return &d->st[d->nst++];
}

static void push(struct dstack *s, uint32_t id, const struct rp_sf_frame *sf)
{
    if (s->n == s->cap) {
        uint32_t cap = s->cap ? 2 * s->cap : 64;
        uint32_t *n = realloc(s->ids, cap * sizeof(*n));
        struct rp_sf_frame *f = n ? realloc(s->sf, cap * sizeof(*f)) : NULL;
        if (n)
            s->ids = n;
        if (!f)
            return; /* (deeper spans go unnamed at their exits) */
        s->sf = f;
        s->cap = cap;
    }
    s->sf[s->n] = *sf;
    s->ids[s->n++] = id;
}

static const char *id_name(struct dump *d, const struct rp_profile *p, uint32_t id)
{
    if (id >= d->nnames) {
        uint32_t n = p->n_nodes > id ? p->n_nodes : id + 1;
        char **nn = realloc(d->names, n * sizeof(*nn));
        if (!nn)
            return "?";
        memset(nn + d->nnames, 0, (n - d->nnames) * sizeof(*nn));
        d->names = nn;
        d->nnames = n;
    }
    if (d->names[id])
        return d->names[id];
    const struct rp_node *n = id < p->n_nodes ? &p->nodes[id] : NULL;
    char buf[160];
    const char *s = n ? rp_node_name(p, n, buf, sizeof(buf)) : "?";
    /* named from the binaries as rp_profile_symbolize names them: functions,
     * locks, condition waits; then formatted as the report formats them */
    const char *maps = d->maps ? d->maps : p->maps;
    size_t maps_len = d->maps ? d->maps_len : p->maps_len;
    if (n && !n->name &&
        (n->kind == RP_KIND_FUNC || n->kind == RP_KIND_LOCK_WAIT || n->kind == RP_KIND_LOCK_HOLD ||
         (n->kind == RP_KIND_WAIT && n->cls == RP_CLASS_LOCK))) {
        if (!d->sym && maps)
            d->sym = rp_sym_open(maps, maps_len);
        struct rp_symbol sym = {0};
        if (d->sym && rp_sym_lookup(d->sym, n->key, &sym) == 0 && sym.name) {
            struct rp_node named = *n;
            named.name = sym.name;
            s = rp_node_name(p, &named, buf, sizeof(buf));
            if (s != buf) /* (the name itself: freed below) */
                s = (snprintf(buf, sizeof(buf), "%s", s), buf);
        }
        rp_sym_clear(&sym);
    }
    d->names[id] = strdup(s);
    return d->names[id] ? d->names[id] : "?";
}

/* Makes d->mark[id] valid: the -F or -N mark of id's name.  Out of memory
 * the id stays unmarked. */
static void mark_id(struct dump *d, const struct rp_profile *p, uint32_t id)
{
    if (id >= d->nmark) {
        uint32_t n = id + 1 > 2 * d->nmark ? id + 1 : 2 * d->nmark;
        uint8_t *m = realloc(d->mark, n), *k = m ? realloc(d->marked, n) : NULL;
        if (m)
            d->mark = m;
        if (!k)
            return;
        d->marked = k;
        memset(d->mark + d->nmark, 0, n - d->nmark);
        memset(d->marked + d->nmark, 0, n - d->nmark);
        d->nmark = n;
        d->flt.mark = d->mark;
        d->flt.n_mark = n;
    }
    if (d->marked[id])
        return;
    d->marked[id] = 1;
    const char *name = id_name(d, p, id);
    for (unsigned k = 0; k < d->fa->n_inc; k++)
        if (rp_name_match(name, d->fa->inc[k]))
            d->mark[id] = RP_SF_INCLUDE;
    for (unsigned k = 0; k < d->fa->n_exc; k++)
        if (rp_name_match(name, d->fa->exc[k]))
            d->mark[id] = RP_SF_EXCLUDE;
}

/* Filtered: whether event ev (of stack st, before it changes the stack) is
 * printed; *sf gets the state of the span an enter begins. */
static int shown(struct dump *d, const struct rp_profile *p, const struct dstack *st,
                 const struct rp_event *ev, struct rp_sf_frame *sf)
{
    const struct rp_sf_frame *top = st->n && st->sf ? &st->sf[st->n - 1] : NULL;
    switch (ev->op) {
    case RP_OP_ENTER:
        mark_id(d, p, ev->id);
        rp_sf_enter(&d->flt, top, ev->id, ev->ticks, sf);
        return sf->keep;
    case RP_OP_EXIT:
    case RP_OP_EXIT_ID: { /* the span it ends (EXIT_ID: the named one) */
        uint32_t at = st->n;
        if (ev->op == RP_OP_EXIT_ID)
            RP_SPAN_MATCH(at, st->n, st->ids[at - 1], ev->id);
        return at && st->sf ? st->sf[at - 1].keep : !d->flt.has_include;
    }
    case RP_OP_LOST:
        return 1;
    default:
        return top ? top->keep : !d->flt.has_include && rp_sf_in_window(&d->flt, ev->ticks);
    }
}

/* Whether node id is a call of librankprof-mpi (a wait site of file
 * "mpi").  Cannot fail. */
static int mpi_span(const struct rp_profile *p, uint32_t id)
{
    const struct rp_node *n = id < p->n_nodes ? &p->nodes[id] : NULL;
    return n && n->kind == RP_KIND_WAIT && n->file && !strcmp(n->file, "mpi");
}

/* An MPI span's ARG in words (format.h rp_mpi_arg): after the number.
 * Write errors are left for the caller. */
static void put_mpi_arg(uint64_t a)
{
    uint64_t v = RP_MPI_ARG_VAL(a);
    switch (RP_MPI_ARG_TYPE(a)) {
    case RP_MPI_ARG_TAG:
        printf(" (tag %" PRIu32 ")", (uint32_t)v);
        break;
    case RP_MPI_ARG_REQ:
        printf(" (request %" PRIu64 ")", v);
        break;
    case RP_MPI_ARG_SENT:
        printf(" (send request %" PRIu64 " done)", v);
        break;
    case RP_MPI_ARG_RECVD:
        printf(" (receive request %" PRIu64 " done)", v);
        break;
    case RP_MPI_ARG_STATUS:
        printf(" (from rank %" PRIu64 ", tag %" PRIu32 ")", (v >> 32) & 0xffffff, (uint32_t)v);
        break;
    case RP_MPI_ARG_BYTES:
        printf(" (%" PRIu64 " bytes)", v);
        break;
    default: /* the peer and bytes */
        if ((a >> 32 & 0xfffffff) == 0xfffffff)
            printf(" (peer none, %" PRIu64 " bytes)", a & 0xffffffff);
        else
            printf(" (peer rank %" PRIu64 ", %" PRIu64 " bytes)", a >> 32 & 0xfffffff,
                   a & 0xffffffff);
        break;
    }
}

static int dump_chunk(void *ctx, const struct rp_profile *p, const struct rp_chunk *c)
{
    struct dump *d = ctx;
    static const char *const cn[] = {"?",    "INFO",   "CLOCK", "MAPS", "THREAD",
                                     "DEFS", "EVENTS", "LOST",  "END",  "STATS"};
    static const char
        *const on[16] = {"enter", "exit",   "exit",  "instant", "counter", "arg",
                         "LOST",  "unwind", "pause", "acquire", "release", "?",
                         "?",     "?",      "?",     "?"}; /* [8] the recorder's wait (format
                                                             1.3); [9], [10]: lock holds */
    printf("# offset %" PRIu64 ": %s chunk, %u bytes\n", c->offset,
           c->type < sizeof(cn) / sizeof(cn[0]) ? cn[c->type] : "unknown", c->len);
    if (c->type == RP_CH_INFO)
        printf("# program %s, pid %u, clock %s\n", p->program ? p->program : "?", p->pid,
               p->clock_name ? p->clock_name : "?");
    if (c->type != RP_CH_EVENTS)
        return 0;
    struct rp_evdec dec;
    struct rp_event ev;
    int rc;
    if (rp_evdec_init(&dec, c->data, c->len) < 0)
        return 0; /* the replay has already reported it */
    printf("# base ticks %" PRIu64 " = %.0f ns\n", dec.now,
           rp_clockmap_abs(&d->cm, dec.now) - d->cm.origin);
    struct dstack *st = stack_of(d, dec.tid);
    if (!st)
        return RP_ENOMEM;
    while ((rc = rp_evdec_next(&dec, &ev)) > 0) {
        /* signed: from the run's first event (every file of the run, every
         * thread), the origin of the timelines and sequence diagrams */
        double ns = rp_clockmap_abs(&d->cm, ev.ticks) - d->cm.origin;
        uint32_t id = ev.id;
        struct rp_sf_frame sf = {0};
        int show = !d->fa || shown(d, p, st, &ev, &sf); /* (before the exits pop) */
        if (ev.op == RP_OP_EXIT) { /* the innermost span: named from the stack */
            id = st->n ? st->ids[st->n - 1] : 0;
            st->n -= st->n > 0;
        } else if (ev.op == RP_OP_EXIT_ID) { /* the named one, and those above it */
            uint32_t at;
            RP_SPAN_MATCH(at, st->n, st->ids[at - 1], ev.id);
            st->n = at ? at - 1 : st->n;
        }
        uint32_t depth = st->n;
        if (d->fa) /* (indented by the kept spans) */
            depth = st->n && st->sf ? st->sf[st->n - 1].kdepth : 0;
        if (show) {
            printf("%14.0f %7u %-7s %*s", ns, dec.tid, on[ev.op & 15],
                   (int)(2 * (depth < 40 ? depth : 40)), "");
            if (id)
                printf("%s", id_name(d, p, id));
            else if (ev.op == RP_OP_EXIT)
                printf("(no open span: unmatched)");
            else if (ev.op == RP_OP_UNWIND) /* format.h: id 0, the thread ends here */
                printf("(thread end: every open span ends)");
            if (ev.op == RP_OP_INSTANT || ev.op == RP_OP_ARG || ev.op == RP_OP_LOST ||
                ev.op == RP_OP_PAUSE)
                printf(" %" PRIu64, ev.arg);
            if (ev.op == RP_OP_ARG && st->n && mpi_span(p, st->ids[st->n - 1]))
                put_mpi_arg(ev.arg);
            else if (ev.op == RP_OP_COUNTER)
                printf(" %" PRId64, (int64_t)((ev.arg >> 1) ^ -(ev.arg & 1)));
            else if (ev.op == RP_OP_HOLD_END && ev.arg3) /* held for, acquired in */
                printf(" held %" PRIu64 " ticks, taken in %s", ev.arg,
                       ev.arg3 >> 2 ? id_name(d, p, (uint32_t)(ev.arg3 >> 2)) : "<root>");
            else if (ev.op == RP_OP_HOLD_END)
                printf(" (never acquired: unmatched)");
            putchar('\n');
        }
        if (ev.op == RP_OP_ENTER)
            push(st, ev.id, &sf);
        else if (ev.op == RP_OP_UNWIND && !ev.id) { /* the thread's end, a window's edge */
            st->n = 0;
        } else if (ev.op == RP_OP_UNWIND) { /* back to the named span */
            uint32_t at;
            RP_SPAN_MATCH(at, st->n, st->ids[at - 1], ev.id);
            if (at)
                st->n = at;
        } else if (ev.op == RP_OP_LOST) /* (the replay drops every open span there) */
            st->n = 0;
    }
    return 0;
}

int cmd_dump(int argc, char **argv)
{
    struct rp_load_opts o;
    rp_load_opts_default(&o);
    rp_opt_input_args("dump", rp_parse_input_opts("dump", argc, argv, &o, 1), argc, argv, &o);
    if (o.filt.min_ns > 0)
        rp_usage_die("dump", "-t/--min-duration: dump prints an enter before its span's length is "
                             "known (rankprof replay -t shows calls by their length)");
    struct rp_set s;
    rp_find_inputs(&o, &s);

    /* Times need the clock rate, which the whole file gives: a first pass.
     * A run's files share one time axis (report/clockmap.h): from the
     * earliest first event, each file's ticks mapped through its clock. */
    struct rp_profile p = {0};
    struct dump d = {0};
    char err[768];
    char *left = calloc(s.n, 1);
    uint64_t *first = calloc(s.n ? s.n : 1, sizeof(*first)); /* each file's first event */
    char **maps = calloc(s.n, sizeof(*maps));
    size_t *maps_len = calloc(s.n, sizeof(*maps_len));
    if (!left || !first || !maps || !maps_len)
        rp_die("out of memory");
    for (uint32_t i = 0; i < s.n; i++) {
        if (rp_replay_file(s.files[i].who.file, &o.replay, &p, NULL, NULL, err, sizeof(err)) < 0) {
            /* a file the set found beside the one named: left out, as rp_load does */
            if (i == 0 || o.in.n_files > 1)
                rp_die("%s", err);
            rp_warn("left out %s%s", err,
                    o.replay.force ? "" : " (--force reads the valid part of it)");
            left[i] = 1;
        }
        if (!i)
            d.ns_per_tick = p.ns_per_tick;
        if (p.events)
            first[i] = p.first_tick;
        maps[i] = p.maps; /* (names come from every MAPS of the file: one written
                             before a dlclose comes after the library's events) */
        maps_len[i] = p.maps_len;
        p.maps = NULL;
        rp_profile_free(&p);
    }
    /* the run's one time axis: from the earliest first event, each mapped */
    const char **paths = calloc(s.n ? s.n : 1, sizeof(*paths));
    if (!paths)
        rp_die("out of memory");
    for (uint32_t i = 0; i < s.n; i++)
        paths[i] = s.files[i].who.file;
    int rc = rp_clockmap_open(&d.cm, paths, s.n, d.ns_per_tick, NULL, err, sizeof(err));
    free(paths);
    if (rc < 0)
        rp_die("%s", rc == RP_ENOMEM ? rp_strerror(rc) : err);
    for (uint32_t i = 0; i < s.n; i++)
        if (!left[i] && first[i])
            rp_clockmap_origin(&d.cm, i, first[i]);
    if (o.filt.first) {
        d.fa = &o.filt;
        d.flt = (struct rp_span_filter){
            .max_depth = o.filt.depth, .has_include = o.filt.n_inc > 0, .window = o.filt.range};
    }
    for (uint32_t i = 0; i < s.n && rc == 0; i++) {
        if (left[i])
            continue;
        rp_clockmap_select(&d.cm, i);
        if (s.n > 1)
            printf("# file %s: process %u of %u of the run, pid %u\n", s.files[i].who.file, i + 1,
                   s.n, s.files[i].who.pid);
        const struct rp_clockmap_file *cf = &d.cm.f[i];
        printf("# clock: ticks to ns through %u CLOCK chunk%s%s", cf->n, cf->n == 1 ? "" : "s",
               cf->n < 2 ? " and the tick rate" : "");
        if (cf->apply && cf->n_off)
            printf(", plus the clock offset to rank 0 (%lld ns at the start)",
                   (long long)cf->off[0]);
        putchar('\n');
        if (o.filt.first) { /* (times from the run's first event, as printed: in this
                               file's ticks, at its rate near its first event) */
            double npt = d.ns_per_tick > 0 ? d.ns_per_tick : 1;
            double at = rp_clockmap_abs(&d.cm, first[i]) - d.cm.origin; /* ns */
            double from = (double)first[i] + (o.filt.from_ns - at) / npt;
            double to = (double)first[i] + (o.filt.to_ns - at) / npt;
            d.flt.from = from > 0 ? (from < 1.8e19 ? (uint64_t)from : UINT64_MAX) : 0;
            d.flt.to = to > 0 ? (to < 1.8e19 ? (uint64_t)to : UINT64_MAX) : 0;
        }
        for (uint32_t k = 0; k < d.nnames; k++)
            free(d.names[k]);
        d.nnames = 0;
        for (uint32_t k = 0; k < d.nst; k++) { /* (another process: other threads) */
            free(d.st[k].ids);
            free(d.st[k].sf);
        }
        d.nst = 0;
        if (d.marked) /* (another process: other ids) */
            memset(d.marked, 0, d.nmark);
        if (d.sym)
            rp_sym_close(d.sym);
        d.sym = NULL;
        d.maps = maps[i];
        d.maps_len = maps_len[i];
        memset(&p, 0, sizeof(p));
        rc = rp_replay_file(s.files[i].who.file, &o.replay, &p, dump_chunk, &d, err, sizeof(err));
        rp_profile_free(&p);
    }
    for (uint32_t i = 0; i < d.nnames; i++)
        free(d.names[i]);
    free(d.names);
    for (uint32_t k = 0; k < d.nst; k++) {
        free(d.st[k].ids);
        free(d.st[k].sf);
    }
    free(d.st);
    free(d.mark);
    free(d.marked);
    if (d.sym)
        rp_sym_close(d.sym);
    for (uint32_t i = 0; i < s.n; i++)
        free(maps[i]);
    rp_set_free(&s);
    free(maps);
    free(maps_len);
    free(left);
    free(first);
    rp_clockmap_free(&d.cm);
    if (rc < 0)
        rp_die("%s", err);
    return 0;
}

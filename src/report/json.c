// SPDX-License-Identifier: MIT
/*
 * json.c - `report --format json`: the stable machine interface of docs/design.md §9,
 * documented field by field in docs/report-json.md.  Version 1 fields never
 * change meaning; new fields may be added.
 *
 * Names may come from untrusted trace files, so every string is escaped
 * strictly: control characters as \u00XX, invalid UTF-8 replaced by \ufffd
 * (one per maximal invalid subpart, as Unicode recommends and Python's
 * "replace" does), and every number printed is finite.
 */
#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "common/error.h"
#include "analyze/chains.h"
#include "report/report.h"
#include "report/util.h"
#include "trace/format.h"

/* room for a name rp_node_name formats into our buffer ("<lock> [hold]") */

/* Writes s as a JSON string literal.  Write errors are left for ferror(). */
static void put_str(FILE *out, const char *str)
{
    rp_json_str(out, str);
}

/* Writes a double as a JSON number (rp_num_str). */
static void put_num(FILE *out, double v)
{
    char buf[40];
    fputs(rp_num_str(buf, v), out);
}

/* Sample standard deviation in ticks from Welford's m2; 0 for fewer than 2. */
static double node_stddev(const struct rp_node *n)
{
    if (n->calls < 2 || !(rp_node_m2(n) > 0))
        return 0;
    return sqrt(rp_node_m2(n) / (double)(n->calls - 1));
}

/* Writes `, "key": ` (keys are ours: no escaping). */
static void put_key(FILE *out, const char *key)
{
    fprintf(out, ", \"%s\": ", key);
}

/* Writes `, "key": v`, formatted here (a node has dozens: no printf). */
static void put_u64_field(FILE *out, const char *key, uint64_t v)
{
    char b[96];
    size_t k = strlen(key);
    assert(k <= sizeof b - 27); /* our own keys: short literals */
    memcpy(b, ", \"", 3);
    memcpy(b + 3, key, k);
    memcpy(b + 3 + k, "\": ", 3);
    rp_u64_dec(b + 6 + k, v);
    fputs(b, out);
}

static void put_num_field(FILE *out, const char *key, double v)
{
    put_key(out, key);
    put_num(out, v);
}

/* One element of "nodes".  Write errors are left for ferror(). */
static void put_node(FILE *out, const struct rp_profile *p, uint32_t idx,
                     const struct rp_report_opts *o, const uint64_t *wait,
                     const struct rp_chains *ch)
{
    const struct rp_node *n = &p->nodes[idx];
    double npt = p->ns_per_tick;
    char nb[RP_NAME_BUF];

    fputs("    { \"name\": ", out);
    put_str(out, rp_node_name(p, n, nb, sizeof nb));
    put_key(out, "kind");
    fputc('"', out);
    fputs(rp_kind_str(n->kind), out);
    fputc('"', out);
    put_u64_field(out, "calls", n->calls + rp_node_throttled(n));
    if (rp_node_throttled(n)) /* the recorder's throttle: counted, not recorded */
        put_u64_field(out, "throttled_calls", rp_node_throttled(n));
    if (rp_node_throttled(n) && p->throttle_sample) /* and 1 in that many still timed */
        put_u64_field(out, "sampled_every", p->throttle_sample);
    put_u64_field(out, "inclusive_ns", rp_ticks_ns(p, n->incl));
    put_u64_field(out, "exclusive_ns", rp_ticks_ns(p, n->excl));
    put_u64_field(out, "wait_ns", rp_ticks_ns(p, wait[idx]));
    put_u64_field(out, "offcpu_ns",
                  rp_ticks_ns(p, rp_node_offcpu(n))); /* off CPU in its own frame */
    put_num_field(out, "mean_ns", rp_node_mean(n) * npt);
    put_u64_field(out, "min_ns", rp_ticks_ns(p, rp_node_min(n)));
    put_u64_field(out, "max_ns", rp_ticks_ns(p, rp_node_max(n)));
    if (p->oncpu_known) { /* less the time off CPU below (format 1.3) */
        put_u64_field(out, "oncpu_min_ns", rp_ticks_ns(p, rp_node_oncpu_min(n)));
        put_u64_field(out, "oncpu_max_ns", rp_ticks_ns(p, rp_node_oncpu_max(n)));
        put_u64_field(out, "offcpu_below_ns", rp_ticks_ns(p, rp_node_offcpu_below(n)));
    }
    put_num_field(out, "stddev_ns", node_stddev(n) * npt);
    put_u64_field(out, "below_resolution", rp_node_below_res(n)); /* not in min or the pNN */
    struct rp_hist hb;
    const struct rp_hist *h = rp_node_hist(n, &hb);
    if (h->len && h->n) {
        put_u64_field(out, "p50_ns", rp_ticks_ns(p, rp_node_q(n, 0.50)));
        put_u64_field(out, "p95_ns", rp_ticks_ns(p, rp_node_q(n, 0.95)));
        put_u64_field(out, "p99_ns", rp_ticks_ns(p, rp_node_q(n, 0.99)));
    }
    if (p->own_known) { /* the flags' statistics (docs/ranking.md, "Flags") */
        struct rp_own_time own;
        rp_node_own_time(p, n, 0, &own);
        if (rp_own_time_n(&own)) {
            put_u64_field(out, "own_calls", rp_own_time_n(&own));
            put_u64_field(out, "own_p50_ns", rp_ticks_ns(p, rp_own_time_q(p, &own, 0.50)));
            put_u64_field(out, "own_p99_ns", rp_ticks_ns(p, rp_own_time_q(p, &own, 0.99)));
        }
        put_u64_field(out, "run_max_ns", rp_ticks_ns(p, rp_node_run_max(n)));
        const struct rp_hist *ivl = rp_node_ivl(n);
        if (ivl && ivl->n) {
            put_u64_field(out, "intervals", ivl->n);
            put_u64_field(out, "interval_p25_ns", rp_ticks_ns(p, rp_hist_q(ivl, 0.25)));
            put_u64_field(out, "interval_p50_ns", rp_ticks_ns(p, rp_hist_q(ivl, 0.50)));
            put_u64_field(out, "interval_p75_ns", rp_ticks_ns(p, rp_hist_q(ivl, 0.75)));
        }
    }
    /* activations not ended by their own exit (replay.c: unwound, or open at
     * the thread's or the process's end), counted in calls with their time */
    put_u64_field(out, "cut", rp_node_cut(n));
    const struct rp_outside *ou = rp_node_outside(p, idx);
    if (ou) { /* its spans with no code of the program below (util.h) */
        put_u64_field(out, "outside_calls", ou->calls);
        put_u64_field(out, "outside_ns", rp_ticks_ns(p, ou->ticks));
    }
    if (rp_node_budget(n)) { /* points with a budget (DEFS, or direct mode's stats) */
        put_u64_field(out, "budget_ns", rp_ticks_ns(p, rp_node_budget(n)));
        put_u64_field(out, "overruns", rp_node_overruns(n));
    }
    if (o->ranked) {
        put_num_field(out, "standing", rp_node_standing(p, n));
        put_num_field(out, "involvement", rp_node_involvement(p, n));
        put_u64_field(out, "rank", n->rank);
    }
    if (o->flagged) {
        int first = 1;
        fputs(", \"flags\": [", out);
        for (unsigned b = 0; b < 32; b++) {
            const char *s = rp_flag_name(b);
            if (!(n->flags & (1u << b)) || !s)
                continue;
            if (!first)
                fputs(", ", out);
            put_str(out, s);
            first = 0;
        }
        fputc(']', out);
        char why[512]; /* one line per node: why each of its flags */
        if (n->flags && rp_flags_explain(p, n, o->flag, why, sizeof why)) {
            fputs(", \"why\": ", out);
            put_str(out, why);
        }
    }
    if (rp_chain_of(ch, idx) >= 0) /* its pass-through chain, in "chains" */
        fprintf(out, ", \"chain\": %" PRId64, rp_chain_of(ch, idx));
    /* extras (allowed by the shape): where the node is, and its trace id */
    if (n->file) {
        fputs(", \"file\": ", out);
        put_str(out, n->file);
    }
    if (n->line)
        put_u64_field(out, "line", n->line);
    put_u64_field(out, "id", idx);
    fputs(" }", out);
}

/* One element of "edges".  Write errors are left for ferror(). */
static void put_edge(FILE *out, const struct rp_profile *p, const struct rp_edge *e)
{
    char nb[RP_NAME_BUF];

    fputs("    { \"caller\": ", out);
    put_str(out, e->caller ? rp_node_name(p, &p->nodes[e->caller], nb, sizeof nb) : "<root>");
    fputs(", \"callee\": ", out);
    put_str(out, e->callee ? rp_node_name(p, &p->nodes[e->callee], nb, sizeof nb) : "<root>");
    put_u64_field(out, "calls", e->calls);
    if (p->incl_calls_known) /* activations under these calls, themselves included */
        put_u64_field(out, "inclusive_calls", e->incl_calls);
    put_u64_field(out, "inclusive_ns", rp_ticks_ns(p, e->incl));
    put_u64_field(out, "min_ns", rp_ticks_ns(p, e->min));
    put_u64_field(out, "max_ns", rp_ticks_ns(p, e->max));
    put_num_field(out, "mean_ns",
                  e->calls ? (double)e->incl / (double)e->calls * p->ns_per_tick : 0);
    put_u64_field(out, "caller_id", e->caller);
    put_u64_field(out, "callee_id", e->callee);
    fputs(" }", out);
}

/* One element of "thread_list".  Write errors are left for ferror(). */
static void put_thread(FILE *out, const struct rp_profile *p, const struct rp_thread *t)
{
    /* tid: the kernel's; a tid reused by a later thread is another entry,
     * told apart by its generation and stream (format 1.3) */
    fprintf(out, "    { \"tid\": %" PRIu32 ", \"generation\": %" PRIu32 ", \"stream\": %" PRIu32,
            rp_tid_of(t->tid), rp_tid_gen(t->tid), t->tid);
    if (t->pid)
        fprintf(out, ", \"pid\": %" PRIu32, t->pid);
    if (t->name) {
        fputs(", \"name\": ", out);
        put_str(out, t->name);
    }
    put_u64_field(out, "events", t->events);
    put_u64_field(out, "lost", t->lost);
    put_u64_field(out, "unmatched_exits", t->unmatched_exits);
    put_u64_field(out, "unclosed", t->unclosed);
    put_u64_field(out, "unwound", t->unwound);
    put_u64_field(out, "cut", t->cut);
    put_u64_field(out, "recorder_wait_ns", rp_ticks_ns(p, t->paused));
    put_u64_field(out, "total_ns", rp_ticks_ns(p, t->last > t->first ? t->last - t->first : 0));
    fputs(" }", out);
}

/* The analysis warnings (p->warn, one per line) as JSON strings, comma
 * separated.  Write errors are left for ferror(). */
static void put_warnings(FILE *out, const char *warn)
{
    char line[sizeof((struct rp_profile *)0)->warn];
    int first = 1;

    for (const char *s = warn; *s;) {
        size_t n = strcspn(s, "\n");
        if (n) {
            memcpy(line, s, n);
            line[n] = '\0';
            if (!first)
                fputs(", ", out);
            put_str(out, line);
            first = 0;
        }
        s += n;
        if (*s)
            s++;
    }
}

/*
 * See report.h.  Fails with RP_EINVAL for a NULL argument, RP_ENOMEM when
 * the row order cannot be allocated, RP_EIO when writing fails.  o->limit,
 * when not 0, caps the "nodes" array (edges are always complete).
 */
/* The run: program, threads, losses, how it ended (with the stack at a
 * fatal signal), recording windows.  Write errors are left for ferror(). */
static void put_run(FILE *out, const struct rp_profile *p)
{
    uint64_t unmatched = p->unmatched_exits, unclosed = p->unclosed;
    fputs("{\n  \"version\": 1,\n  \"program\": ", out);
    put_str(out, p->program ? p->program : "");
    fprintf(out, ",\n  \"total_ns\": %" PRIu64, rp_ticks_ns(p, p->total));
    fprintf(out, ",\n  \"threads\": %" PRIu32, p->n_threads);
    fprintf(out, ",\n  \"lost_events\": %" PRIu64, p->lost);
    if (p->lost_why_known) { /* format 1.3: every reason, zeros included */
        fputs(",\n  \"lost_by_reason\": {", out);
        for (unsigned w = 0; w < RP_WHY_N; w++)
            fprintf(out, "%s\"%s\": %" PRIu64, w ? ", " : " ", rp_why_name(w), p->lost_why[w]);
        fputs(" }", out);
    }
    fprintf(out, ",\n  \"events\": %" PRIu64, p->events);
    fprintf(out, ",\n  \"unmatched_exits\": %" PRIu64 ",\n  \"unclosed\": %" PRIu64, unmatched,
            unclosed);
    fprintf(out, ",\n  \"unwound\": %" PRIu64 ",\n  \"cut\": %" PRIu64, p->unwound, p->cut);
    fprintf(out, ",\n  \"folded_copies\": %" PRIu32, p->folded);
    fprintf(out, ",\n  \"ended_normally\": %s",
            p->ended && !(p->end_flags & RP_END_SIGNAL) ? "true" : "false");
    if (rp_profile_status_known(p))
        fprintf(out, ",\n  \"exit_status\": %" PRId32, p->end_status);
    if (p->fatal_n) { /* the frames open in the thread a fatal signal hit */
        fprintf(out,
                ",\n  \"fatal_thread\": %" PRIu32 ", \"fatal_depth\": %" PRIu32
                ", \"fatal_stack\": [",
                p->fatal_tid, p->fatal_depth);
        for (uint32_t k = 0; k < p->fatal_n; k++) {
            char nb[RP_NAME_BUF];
            fputs(k ? ", " : "", out);
            put_str(out, rp_node_name(p, &p->nodes[p->fatal_stack[k]], nb, sizeof nb));
        }
        fputs("]", out);
    }
    if (p->running) /* statistics of a running process (top, ctl snapshot) */
        fputs(",\n  \"running\": true", out);
    if (p->checkpoint) /* ... written unasked (OUT.ckpt) */
        fputs(",\n  \"checkpoint\": true", out);
    if (p->ring_size) { /* a flight recorder's trace (record --ring) */
        fprintf(out,
                ",\n  \"ring\": {\"size\": %" PRIu64 ", \"dropped\": %" PRIu64
                ", \"run_ns\": %" PRIu64 ", \"triggers\": %" PRIu64
                ", \"triggers_skipped\": %" PRIu64 ", \"snapshot\": ",
                p->ring_size, p->ring_dropped, p->ring_run_ns, p->ring_triggers,
                p->ring_triggers_skipped);
        if (p->snapshot)
            put_str(out, p->snapshot);
        else
            fputs("null", out);
        fputs("}", out);
    }
    if (p->windows) /* recording switched at run time (rankprof ctl) */
        fprintf(out,
                ",\n  \"windows\": %" PRIu32 ", \"recorded_ns\": %" PRIu64
                ", \"window_exits\": %" PRIu64,
                p->windows, p->recorded_ns, p->window_exits);
}

/* The spans outside the program's code (util.h: rp_outside_nodes): whether
 * they were set apart, their totals, and per node (off CPU included).
 * Write errors are left to the caller's ferror. */
static void put_outside(FILE *out, const struct rp_profile *p)
{
    char nb[RP_NAME_BUF];
    uint64_t calls = 0, ticks = 0;
    uint32_t n;
    struct rp_outside *v = rp_outside_nodes(p, &n, NULL, NULL);
    for (uint32_t i = 0; i < n; i++) { /* (off CPU included, as in nodes) */
        calls += v[i].calls;
        ticks += v[i].ticks;
    }
    fprintf(out,
            ",\n  \"outside\": { \"apart\": %s, \"calls\": %" PRIu64 ", \"ns\": %" PRIu64
            ", \"nodes\": [",
            p->outside_apart ? "true" : "false", calls, rp_ticks_ns(p, ticks));
    for (uint32_t i = 0; i < n; i++) {
        const struct rp_node *x = &p->nodes[v[i].id];
        fputs(i ? ",\n    { \"name\": " : "\n    { \"name\": ", out);
        put_str(out, rp_node_name(p, x, nb, sizeof nb));
        fprintf(out, ", \"kind\": \"%s\"", rp_kind_str(x->kind));
        put_u64_field(out, "calls", v[i].calls);
        put_u64_field(out, "ns", rp_ticks_ns(p, v[i].ticks));
        fputs(" }", out);
    }
    fputs(n ? "\n  ] }" : "] }", out);
    free(v);
}

/* How far the times can be trusted: warnings, the recorder's cost
 * subtracted, the resolution, off-CPU time, the recorder's waits. */
static void put_measures(FILE *out, const struct rp_profile *p)
{
    fprintf(out, ",\n  \"skipped_chunks\": %" PRIu64, p->skipped_chunks);
    fprintf(out, ",\n  \"pieces_deleted\": %" PRIu64 ",\n  \"warnings\": [", p->pieces_deleted);
    put_warnings(out, p->warn);
    fputs("],\n  \"ns_per_tick\": ", out);
    put_num(out, p->ns_per_tick);
    /* the span filters (docs/filters.md): an addition to the shape */
    fputs(",\n  \"filter\": ", out);
    if (p->filter)
        put_str(out, p->filter);
    else
        fputs("null", out);
    /* overhead compensation (docs/performance.md): an addition to the shape */
    fprintf(out, ",\n  \"compensation\": { \"applied\": %s, \"measured\": %s, \"event_ns\": ",
            p->compensated ? "true" : "false", p->overhead_known ? "true" : "false");
    put_num(out, p->overhead_pair / 2 * p->ns_per_tick);
    fputs(", \"self_ns\": ", out);
    put_num(out, p->overhead_self * p->ns_per_tick);
    fprintf(out, ", \"clamped_spans\": %" PRIu64 ", \"late_event_ns\": ", p->comp_clamped);
    if (p->overhead_late)
        put_num(out, p->overhead_late_pair / 2 * p->ns_per_tick);
    else
        fputs("null", out);
    fprintf(out, ", \"measurement\": %s }",
            !p->overhead_known      ? "null"
            : p->overhead_late == 2 ? "\"late\""
                                    : "\"start-up\"");
    /* spans shorter than this are below resolution (comp.h): an addition */
    fputs(",\n  \"resolution_ns\": ", out);
    put_num(out, (double)(p->resolution ? p->resolution : 1) * p->ns_per_tick);
    fputs(",\n  \"clock_step_ns\": ", out); /* the counter's step: an addition */
    put_num(out, (p->clock_step > 1 ? p->clock_step : 1) * p->ns_per_tick);
    fprintf(out, ",\n  \"below_resolution\": %" PRIu64, p->below_res);
    /* off-CPU time (format 1.3, docs/recording.md) and the recorder's waits */
    uint64_t off = 0, out_off = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (p->nodes[i].kind == RP_KIND_OFFCPU) {
            const struct rp_outside *o = rp_node_outside(p, i);
            off += p->nodes[i].incl;
            out_off += o ? o->ticks : 0;
        }
    fputs(",\n  \"offcpu\": { \"source\": ", out);
    put_str(out, p->offcpu_src[0] ? p->offcpu_src : "none");
    if (p->offcpu_err[0]) {
        fputs(", \"error\": ", out);
        put_str(out, p->offcpu_err);
    }
    fprintf(out,
            ", \"separated_ns\": %" PRIu64 ", \"outside_ns\": %" PRIu64
            ", \"lost_records\": %" PRIu64 ", \"late_intervals\": %" PRIu64,
            rp_ticks_ns(p, off + out_off), rp_ticks_ns(p, out_off), p->offcpu_lost, p->offcpu_late);
    if (p->offcpu_runq_known)
        fprintf(out, ", \"runq_delay_ns\": %" PRIu64, p->offcpu_runq_ns);
    fputs(" }", out);
    fprintf(out, ",\n  \"recorder_wait_ns\": %" PRIu64, rp_ticks_ns(p, p->paused));
    put_outside(out, p);
}

/* The ranking's parameters and the pass-through chains, when asked for. */
static void put_rank(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o,
                     const struct rp_chains *ch)
{
    if (o->ranked) {
        fprintf(out,
                ",\n  \"rank\": { \"weight\": \"%s\", \"alpha\": ", rp_weight_str(p->rank.weight));
        put_num(out, p->rank.alpha);
        fprintf(out, ", \"iterations\": %" PRIu32 ", \"residual\": ", p->rank.iterations);
        put_num(out, p->rank.residual);
        fputs(" }", out);
    }
    if (o->chains && o->flagged) { /* pass-through chains: node ids, caller first */
        fputs(",\n  \"chains\": [", out);
        for (uint32_t c = 0; c < ch->n; c++) {
            fprintf(out, "%s\n    { \"chain\": %" PRIu32 ", \"ids\": [", c ? "," : "", c);
            for (uint32_t k = ch->start[c]; k < ch->start[c + 1]; k++)
                fprintf(out, "%s%" PRIu32, k > ch->start[c] ? ", " : "", ch->member[k]);
            fputs("] }", out);
        }
        fputs(ch->n ? "\n  ]" : "]", out);
    }
}

/* The nodes (order[0..n_rows)) and the edges; returns how many edges. */
static uint32_t put_graph(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o,
                          const uint32_t *order, uint32_t n_rows, const uint64_t *wait,
                          const struct rp_chains *ch)
{
    fputs(",\n  \"nodes\": [", out);
    for (uint32_t i = 0; i < n_rows; i++) {
        fputs(i ? ",\n" : "\n", out);
        put_node(out, p, order[i], o, wait, ch);
    }
    fputs(n_rows ? "\n  ],\n  \"edges\": [" : "],\n  \"edges\": [", out);
    uint32_t n_edges = 0;
    for (uint32_t i = 0; i < p->n_edges; i++) {
        const struct rp_edge *e = &p->edges[i];
        if (e->caller >= p->n_nodes || e->callee >= p->n_nodes)
            continue; /* cannot happen after replay; never index out of bounds */
        fputs(n_edges++ ? ",\n" : "\n", out);
        put_edge(out, p, e);
    }
    return n_edges;
}

/* The processes (a run's files merged) and the threads, and the end. */
static void put_threads(FILE *out, const struct rp_profile *p, uint32_t n_edges)
{
    /* a run's files merged: which processes (only then, so that the report of
     * one file does not depend on its name) */
    if (p->n_procs > 1)
        fputs(n_edges ? "\n  ],\n  \"processes\": [" : "],\n  \"processes\": [", out);
    for (uint32_t i = 0; i < p->n_procs && p->n_procs > 1; i++) {
        const struct rp_proc *r = &p->procs[i];
        fprintf(out,
                "%s    { \"pid\": %" PRIu32 ", \"ppid\": %" PRIu32 ", \"file\": ", i ? ",\n" : "\n",
                r->pid, r->ppid);
        put_str(out, r->file ? r->file : "");
        if (r->has_rank)
            fprintf(out, ", \"rank\": %" PRIu32, r->rank);
        if (r->run) {
            fputs(", \"run\": ", out);
            put_str(out, r->run);
        }
        if (r->host) {
            fputs(", \"host\": ", out);
            put_str(out, r->host);
        }
        put_u64_field(out, "events", r->events);
        put_u64_field(out, "lost", r->lost);
        fprintf(out, ", \"threads\": %" PRIu32 ", \"ended_normally\": %s }", r->threads,
                r->ended ? "true" : "false");
    }
    if (p->n_procs > 1)
        fputs("\n  ],\n  \"thread_list\": [", out);
    else
        fputs(n_edges ? "\n  ],\n  \"thread_list\": [" : "],\n  \"thread_list\": [", out);
    for (uint32_t i = 0; i < p->n_threads; i++) {
        fputs(i ? ",\n" : "\n", out);
        put_thread(out, p, &p->threads[i]);
    }
    fputs(p->n_threads ? "\n  ]\n}\n" : "]\n}\n", out);
}

int rp_report_json(FILE *out, const struct rp_profile *p, const struct rp_report_opts *o)
{
    uint32_t *order = NULL, n_rows;
    uint64_t *wait = NULL;
    struct rp_chains ch = {0};
    int rc = 0;

    if (!out || !p || !o || (p->n_nodes && !p->nodes))
        return RP_EINVAL;
    if (!(order = rp_report_rows(p, o, &n_rows, NULL)) ||
        (p->n_nodes && !(wait = rp_wait_ticks(p)))) {
        rc = RP_ENOMEM;
        goto out;
    }
    if (o->chains && o->flagged && (rc = rp_chains_find(p, &ch)) < 0)
        goto out;
    put_run(out, p);
    put_measures(out, p);
    put_rank(out, p, o, &ch);
    put_threads(out, p, put_graph(out, p, o, order, n_rows, wait, &ch));
    if (fflush(out) != 0 || ferror(out))
        rc = RP_EIO;
out:
    free(order);
    free(wait);
    rp_chains_free(&ch);
    return rc;
}

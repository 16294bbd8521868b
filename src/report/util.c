// SPDX-License-Identifier: MIT
/*
 * util.c - what the report formats share: number
 * formatting, tick conversion, quantiles and kind names.
 */
#define _GNU_SOURCE /* qsort_r */
#include "util.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/bytes.h"
#include "trace/format.h"

const char *rp_num_str(char *buf, double v)
{
    if (!isfinite(v)) {
        buf[0] = '0';
        buf[1] = 0;
        return buf;
    }
    /* a whole number below 10^15 is what %.15g prints, digit for digit:
     * the common case (zeros, counts) without printf and strtod */
    if (v > -1e15 && v < 1e15 && v == (double)(int64_t)v && !(v == 0 && signbit(v))) {
        buf[0] = '-';
        rp_u64_dec(buf + (v < 0), (uint64_t)(v < 0 ? -v : v));
        return buf;
    }
    snprintf(buf, 40, "%.15g", v);
    if (strtod(buf, NULL) != v)
        snprintf(buf, 40, "%.17g", v);
    for (char *c = buf; *c; c++)
        if (*c == ',')
            *c = '.';
    return buf;
}

uint64_t rp_ticks_ns(const struct rp_profile *p, uint64_t ticks)
{
    double ns = (double)ticks * p->ns_per_tick;

    if (!isfinite(ns) || ns <= 0)
        return 0;
    if (ns >= 18446744073709551615.0)
        return UINT64_MAX;
    return (uint64_t)llround(ns);
}

const char *rp_weight_str(int weight)
{
    return weight == RP_WEIGHT_CALLS ? "calls" : weight == RP_WEIGHT_CPU ? "cpu" : "time";
}

const char *rp_weight_name(int weight)
{
    return weight == RP_WEIGHT_CALLS ? "call" : rp_weight_str(weight);
}

uint64_t rp_node_share_base(const struct rp_node *n, uint64_t self_ticks)
{
    uint64_t all = rp_node_dur_sum(n);
    uint64_t base = all > self_ticks ? all - self_ticks : 0;
    return base > n->incl ? base : n->incl;
}

uint64_t rp_node_q(const struct rp_node *n, double q)
{
    struct rp_hist hb;
    uint64_t v = rp_hist_q(rp_node_hist(n, &hb), q);
    if (v > rp_node_max(n))
        v = rp_node_max(n);
    if (v < rp_node_min(n))
        v = rp_node_min(n);
    return v;
}

int rp_node_q_all(const struct rp_profile *p, const struct rp_node *n, double q, uint64_t *ticks)
{
    uint64_t below = p->resolution ? rp_node_below_res(n) : 0;
    struct rp_hist hb;
    const struct rp_hist *h = rp_node_hist(n, &hb);
    uint64_t res = h->len ? h->n : 0;
    if (below + res == 0)
        return -1;
    double k = q * (double)(below + res); /* the quantile's rank among all */
    if (k <= (double)below)
        return 1;
    *ticks = rp_node_q(n, (k - (double)below) / (double)res);
    return 0;
}

const char *rp_fmt_below_res(const struct rp_profile *p, char *buf, size_t bufsz)
{
    if (bufsz < 2)
        return bufsz ? (*buf = 0, buf) : buf;
    buf[0] = '<';
    rp_fmt_res((double)(p->resolution ? p->resolution : 1) * p->ns_per_tick, buf + 1, bufsz - 1);
    return buf;
}

void rp_report_lost_why(FILE *out, const struct rp_profile *p)
{
    static const char *const text[RP_WHY_N] = {
        [RP_WHY_FULL] = "with no free buffer (--drop)",
        [RP_WHY_STOPPED] = "after recording stopped",
        [RP_WHY_FAILED] = "not written (the trace could not be)",
        [RP_WHY_NOMEM] = "for want of memory",
        [RP_WHY_REENTERED] = "in signal handlers that interrupted the recorder",
        [RP_WHY_GONE] = "after their thread's end",
        [RP_WHY_UNENCODED] = "not encodable"};
    const char *sep = " (";
    for (unsigned w = 0; w < RP_WHY_N; w++)
        if (p->lost_why[w]) {
            fprintf(out, "%s%" PRIu64 " %s", sep, p->lost_why[w], text[w]);
            sep = ", ";
        }
    if (*sep == ',')
        fputc(')', out);
}

const char *rp_kind_str(uint8_t kind)
{
    switch (kind) {
    case RP_KIND_FUNC:
        return "func";
    case RP_KIND_POINT:
        return "point";
    case RP_KIND_LOCK_WAIT:
        return "lock-wait";
    case RP_KIND_LOCK_HOLD:
        return "lock-hold";
    case RP_KIND_IO:
        return "io";
    case RP_KIND_WAIT:
        return "wait";
    case RP_KIND_OFFCPU:
        return "offcpu";
    default:
        return "unknown"; /* rp_report_order never yields these */
    }
}

uint64_t *rp_wait_ticks(const struct rp_profile *p)
{
    uint64_t *w = p->n_nodes ? calloc(p->n_nodes, sizeof *w) : NULL;
    for (uint32_t i = 0; w && i < p->n_edges; i++) {
        const struct rp_edge *e = &p->edges[i];
        if (e->caller < p->n_nodes && e->callee < p->n_nodes && e->caller != e->callee &&
            p->nodes[e->callee].kind == RP_KIND_WAIT)
            w[e->caller] += e->incl;
    }
    return w;
}

const char *rp_fmt_dur(double ns, const char *sep, char *buf, size_t bufsz)
{
    if (ns < 1e3)
        snprintf(buf, bufsz, "%.0f%sns", ns, sep);
    else if (ns < 1e6)
        snprintf(buf, bufsz, "%.2f%sus", ns / 1e3, sep);
    else if (ns < 1e9)
        snprintf(buf, bufsz, "%.2f%sms", ns / 1e6, sep);
    else
        snprintf(buf, bufsz, "%.3f%ss", ns / 1e9, sep);
    return buf;
}

const char *rp_fmt_ns(double ns, char *buf, size_t bufsz)
{
    return rp_fmt_dur(ns, "", buf, bufsz);
}

const char *rp_fmt_res(double ns, char *buf, size_t bufsz)
{
    if (ns < 9.95)
        return snprintf(buf, bufsz, "%.1fns", ns), buf;
    return rp_fmt_dur(ns, "", buf, bufsz);
}

static int outside_cmp(const void *a, const void *b)
{
    const struct rp_outside *x = a, *y = b;
    if (x->ticks != y->ticks)
        return x->ticks > y->ticks ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

struct rp_outside *rp_outside_nodes(const struct rp_profile *p, uint32_t *n, uint64_t *calls,
                                    uint64_t *ticks)
{
    struct rp_outside *v = NULL;
    uint64_t c = 0, t = 0;
    *n = 0;
    if (p->n_outside && (v = malloc(p->n_outside * sizeof(*v)))) {
        for (uint32_t i = 0; i < p->n_outside; i++)
            if (p->outside[i].id < p->n_nodes) {
                v[(*n)++] = p->outside[i];
                if (p->nodes[p->outside[i].id].kind != RP_KIND_OFFCPU) {
                    c += p->outside[i].calls;
                    t += p->outside[i].ticks;
                }
            }
        qsort(v, *n, sizeof(*v), outside_cmp);
    }
    if (calls)
        *calls = c;
    if (ticks)
        *ticks = t;
    return v;
}

void rp_report_outside_line(FILE *out, const struct rp_profile *p)
{
    char b[32], nb[RP_NAME_BUF];
    uint64_t calls, ticks;
    uint32_t n, shown = 0;
    struct rp_outside *v = rp_outside_nodes(p, &n, &calls, &ticks);
    if (calls) {
        fprintf(out,
                "outside: %s in %" PRIu64 " waits, lock waits and holds with no code of the "
                "program below them (a library's own threads, start-up and exit, inside a "
                "blocking call), not in the table",
                rp_fmt_ns((double)ticks * p->ns_per_tick, b, sizeof b), calls);
        for (uint32_t i = 0; i < n && shown < 3; i++) {
            const struct rp_node *x = &p->nodes[v[i].id];
            if (x->kind == RP_KIND_OFFCPU)
                continue;
            fprintf(out, "%s%s %s", shown++ ? ", " : ": ", rp_node_name(p, x, nb, sizeof nb),
                    rp_fmt_ns((double)v[i].ticks * p->ns_per_tick, b, sizeof b));
        }
        /* (direct mode's statistics were made in the process, apart) */
        fputs(p->mode && !strcmp(p->mode, "direct") ? "\n"
                                                    : " (--outside counts them as the program's)\n",
              out);
    }
    free(v);
}

void rp_report_offcpu_line(FILE *out, const struct rp_profile *p)
{
    char b[32], c[32];
    uint64_t off = 0, out_off = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (p->nodes[i].kind == RP_KIND_OFFCPU) {
            const struct rp_outside *o = rp_node_outside(p, i);
            off += p->nodes[i].incl;
            out_off += o ? o->ticks : 0;
        }
    if (!strcmp(p->offcpu_src, "perf")) {
        fprintf(out,
                "off-CPU: perf context switches; %s off CPU, shown as [off-cpu] under the span "
                "it fell in",
                rp_fmt_ns((double)off * p->ns_per_tick, b, sizeof b));
        if (out_off)
            fprintf(out, " (and %s in waits or with no span of the program open)",
                    rp_fmt_ns((double)out_off * p->ns_per_tick, c, sizeof c));
        if (p->offcpu_lost || p->offcpu_late)
            fprintf(out,
                    "; %" PRIu64 " switch records lost, %" PRIu64 " intervals not placed: "
                    "the time off CPU they held is in self times",
                    p->offcpu_lost, p->offcpu_late);
        fputc('\n', out);
    } else if (!strcmp(p->offcpu_src, "irq")) { /* the bare-metal recorder (firmware.md) */
        fprintf(out,
                "off-CPU: interrupt handlers; %s in handlers, shown as [irq] under the span they "
                "interrupted\n",
                rp_fmt_ns((double)(off + out_off) * p->ns_per_tick, b, sizeof b));
    } else if (!strcmp(p->offcpu_src, "irq+tasks")) { /* the same with RTOS tasks */
        uint64_t irq = 0;
        for (uint32_t i = 1; i < p->n_nodes; i++)
            if (p->nodes[i].kind == RP_KIND_OFFCPU && p->nodes[i].name &&
                !strcmp(p->nodes[i].name, "[irq]")) {
                const struct rp_outside *o = rp_node_outside(p, i);
                irq += p->nodes[i].incl + (o ? o->ticks : 0);
            }
        fprintf(out,
                "off-CPU: interrupt handlers and task switches; %s in handlers, shown as [irq] "
                "under the span they interrupted; %s switched out, as [off-cpu] under the span "
                "the task had open\n",
                rp_fmt_ns((double)irq * p->ns_per_tick, b, sizeof b),
                rp_fmt_ns((double)(off + out_off - irq) * p->ns_per_tick, c, sizeof c));
    } else if (!strcmp(p->offcpu_src, "schedstat")) {
        fprintf(out, "off-CPU: not separated (%s); run-queue delay %s (schedstat)\n",
                p->offcpu_err[0] ? p->offcpu_err : "perf not used",
                p->offcpu_runq_known ? rp_fmt_ns((double)p->offcpu_runq_ns, c, sizeof c)
                                     : "unknown (the run did not end normally)");
    } else {
        fprintf(out, "off-CPU: not separated (%s)\n",
                p->offcpu_err[0]                        ? p->offcpu_err
                : p->mode && !strcmp(p->mode, "direct") ? "direct mode"
                                                        : "not recorded: an older recorder");
    }
    if (p->paused)
        fprintf(out,
                "recorder wait: %s switching buffers, encoding them or waiting for the writer, "
                "taken out of the spans open then\n",
                rp_fmt_ns((double)p->paused * p->ns_per_tick, b, sizeof b));
}

/* The spans of p: the activations of every node but the instants and
 * counters.  Cannot fail. */
static uint64_t spans_of(const struct rp_profile *p)
{
    uint64_t n = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (p->nodes[i].kind != RP_KIND_INSTANT && p->nodes[i].kind != RP_KIND_COUNTER)
            n += p->nodes[i].calls;
    return n;
}

/* "N spans of ALL (P%)" (or "N span of ALL ...") into buf: how many of a
 * profile's spans a header line counts.  Returns buf. */
static const char *span_share(uint64_t k, uint64_t all, char *buf, size_t bufsz)
{
    double pc = all ? 100.0 * (double)k / (double)all : 0.0;
    snprintf(buf, bufsz, "%" PRIu64 " span%s of %" PRIu64 " (%s%.*f%%)", k, k == 1 ? "" : "s", all,
             k && pc < 0.1 ? "<" : "", pc >= 10.0 || !k ? 0 : 1, k && pc < 0.1 ? 0.1 : pc);
    return buf;
}

void rp_report_comp_line(FILE *out, const struct rp_profile *p)
{
    char sh[96];
    double ev = p->overhead_pair / 2 * p->ns_per_tick, self = p->overhead_self * p->ns_per_tick;
    if (p->mode && !strcmp(p->mode, "direct"))
        fputs("compensation: none (direct mode does not subtract the recorder's cost)\n", out);
    else if (!p->overhead_known)
        fputs("compensation: none (the trace has no measurement of the recorder's cost: "
              "an older recorder or RANKPROF_CALIBRATE=0; tiny functions include it)\n",
              out);
    else if (!p->compensated)
        fprintf(out,
                "compensation: off (measured times; the recorder's cost is %.1fns per event, "
                "%.1fns of it inside a span's own)\n",
                ev, self);
    else
        fprintf(out,
                "compensation: subtracted %.1fns per event inside a span and %.1fns of its "
                "own; %s clamped at their callees' time less the resolution, or 0 "
                "(--no-compensate: measured times)\n",
                ev, self, span_share(p->comp_clamped, spans_of(p), sh, sizeof sh));
    rp_report_res_line(out, p);
}

const char *rp_tid_str(uint32_t stream, char *buf, size_t bufsz)
{
    if (rp_tid_gen(stream))
        snprintf(buf, bufsz, "%" PRIu32 "#%" PRIu32, rp_tid_of(stream), rp_tid_gen(stream));
    else
        snprintf(buf, bufsz, "%" PRIu32, stream);
    return buf;
}

void rp_report_res_line(FILE *out, const struct rp_profile *p)
{
    char b[32], sh[96];
    if (p->mode && !strcmp(p->mode, "direct"))
        return; /* direct mode's statistics set nothing aside */
    fprintf(out,
            "resolution: %s (%s%s); %s below it: counted, in totals and means, not in min or "
            "percentiles\n",
            rp_fmt_res((double)p->resolution * p->ns_per_tick, b, sizeof(b)),
            p->clock_step > 1 ? "the clock's step" : "1 tick",
            p->compensated ? " + the spread of the measured overhead" : "",
            span_share(p->below_res, spans_of(p), sh, sizeof sh));
}

void rp_json_str(FILE *out, const char *str)
{
    const unsigned char *s = (const unsigned char *)(str ? str : "");
    size_t len = strlen((const char *)s);

    fputc('"', out);
    for (size_t i = 0; i < len;) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') {
            fputc('\\', out);
            fputc(c, out);
            i++;
        } else if (c < 0x20 || c == 0x7f) {
            fprintf(out, "\\u%04x", c);
            i++;
        } else {
            int k = rp_utf8_seq(s + i, len - i);
            if (k < 0) {
                fputs("\\ufffd", out);
                i += (size_t)-k;
            } else {
                fwrite(s + i, 1, (size_t)k, out);
                i += (size_t)k;
            }
        }
    }
    fputc('"', out);
}

/* A flight recorder's trace (record --ring): the part of the run it kept,
 * and why it was written. */
static void ring_lines(FILE *out, const struct rp_profile *p)
{
    char b[32], c[32] = "";
    double kept =
        p->last_tick > p->first_tick ? (double)(p->last_tick - p->first_tick) * p->ns_per_tick : 0;
    if (!p->ring_dropped) {
        fprintf(out,
                "ring: every event of the run kept (flight recorder of %" PRIu64
                " KiB, rankprof record --ring), none dropped\n",
                p->ring_size >> 10);
    } else {
        if (p->ring_run_ns) {
            memcpy(c, " of ", 5);
            rp_fmt_ns((double)p->ring_run_ns, c + 4, sizeof c - 4);
        }
        fprintf(out,
                "ring: the last %s%s kept (flight recorder of %" PRIu64
                " KiB, rankprof record --ring), %" PRIu64 " older events dropped by it\n",
                rp_fmt_ns(kept, b, sizeof b), c, p->ring_size >> 10, p->ring_dropped);
    }
    if (p->snapshot)
        fprintf(out, "snapshot: %s\n", p->snapshot);
    if (p->ring_triggers)
        fprintf(out,
                "triggers: %" PRIu64 " fired, %" PRIu64
                " of them too soon after a snapshot (--ring-every) to write one\n",
                p->ring_triggers, p->ring_triggers_skipped);
}

void rp_report_windows_line(FILE *out, const struct rp_profile *p)
{
    char b[32];
    if (p->ring_size)
        ring_lines(out, p);
    if (!p->windows)
        return;
    fprintf(out,
            "recording: switched on %" PRIu32 " time%s (rankprof ctl), %s recorded; frames open "
            "at a switch end there\n",
            p->windows, p->windows == 1 ? "" : "s", rp_fmt_ns((double)p->recorded_ns, b, sizeof b));
}

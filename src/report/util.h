// SPDX-License-Identifier: MIT
/*
 * util.h - small pieces every report format shares, so that the table, JSON
 * and CSV give the same numbers and the same names for the same profile.
 */
#ifndef RP_REPORT_UTIL_H
#define RP_REPORT_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "analyze/profile.h"
#include "common/utf8.h" /* rp_utf8_seq */

/*
 * Formats v as the shortest of %.15g/%.17g that reads back exactly, "0" for
 * NaN and infinities, with a '.' decimal point whatever the locale says.
 * buf must hold 40 bytes.  Returns buf.
 */
const char *rp_num_str(char *buf, double v);

/* Ticks to whole nanoseconds, rounded; 0 when not finite, saturating. */
uint64_t rp_ticks_ns(const struct rp_profile *p, uint64_t ticks);

/*
 * The time the shares of n's callers and callees are of (`graph`, the HTML
 * page's panes): its time in every activation but those it called itself
 * directly (self_ticks, its self edge's time).  That is its inclusive time
 * unless it recursed through other procedures (A -> B -> A): its
 * activations nested that way are in its edges' times but not in its
 * inclusive time (outermost activations only), and the shares of its
 * callers, and of its callees with its own work, add up to 100 % of this.
 * Cannot fail.
 */
uint64_t rp_node_share_base(const struct rp_node *n, uint64_t self_ticks);

/* The q-quantile of n's durations in ticks from its histogram, clamped to
 * [min, max] (a bucket midpoint can lie just outside them).  Cannot fail. */
uint64_t rp_node_q(const struct rp_node *n, double q);

/*
 * The q-quantile of all of n's calls, those below resolution included, as
 * the table's p95 gives it (the JSON's percentiles are of the resolved
 * calls only): 1 when it falls among the calls below resolution (shorter
 * than it, not known more closely), 0 with *ticks its value from the
 * histogram of the resolved ones, -1 when n has no durations (an instant, a
 * counter).  A profile with no resolution (p->resolution 0: not replayed
 * from a trace) has no calls below it.  Cannot fail.
 */
int rp_node_q_all(const struct rp_profile *p, const struct rp_node *n, double q, uint64_t *ticks);

/* "<" and the resolution of p (rp_fmt_res): a time below it.  Cannot
 * fail. */
const char *rp_fmt_below_res(const struct rp_profile *p, char *buf, size_t bufsz);

/*
 * A duration given in ns, in the unit that suits it: "812ns", "3.41us",
 * "12.34ms", "1.520s", with sep between number and unit.  Writes at most
 * bufsz bytes (truncating); returns buf.  Cannot fail.
 */
const char *rp_fmt_dur(double ns, const char *sep, char *buf, size_t bufsz);

/* rp_fmt_dur with no separator, the form tables and the CLI print. */
const char *rp_fmt_ns(double ns, char *buf, size_t bufsz);

/* A resolution given in ns, as rp_fmt_ns but to a tenth of a nanosecond
 * below 10 ns ("0.4ns" for one tick of a 2.6 GHz counter, not "0ns").
 * Cannot fail. */
const char *rp_fmt_res(double ns, char *buf, size_t bufsz);

/*
 * Writes one line saying whether the recorder's own cost was subtracted
 * (docs/performance.md, "Overhead compensation"): the values and the spans
 * clamped, or why not (switched off, no measurement in the trace,
 * direct mode).  Write errors are left to the caller's ferror.
 */
void rp_report_comp_line(FILE *out, const struct rp_profile *p);

/* The header lines on off-CPU time (how it was known, or why not) and the
 * recorder's waits (when there were any).  Cannot fail. */
void rp_report_offcpu_line(FILE *out, const struct rp_profile *p);

/* Bytes for a node's display name (rp_node_name). */
#define RP_NAME_BUF 512

/*
 * The nodes' spans outside the program's code (rp_profile.outside: waits,
 * lock waits, holds and off-CPU time with no code of the program below
 * them), most outside time first, in a new array the caller frees; *n gets
 * how many and *calls, *ticks (when not NULL) their sums over the nodes
 * that are not off CPU.  NULL (and *n 0) when there are none or memory is
 * out.
 */
struct rp_outside *rp_outside_nodes(const struct rp_profile *p, uint32_t *n, uint64_t *calls,
                                    uint64_t *ticks);

/* The header line on the spans outside the program's code, when there
 * are any: their time and calls, and the nodes with most of it.  Write
 * errors are left to the caller's ferror. */
void rp_report_outside_line(FILE *out, const struct rp_profile *p);

/* When recording was switched on and off while the program ran (rankprof
 * ctl), a line saying so: how many windows, the time recorded; for a flight
 * recorder's trace (record --ring), the part of the run kept and why it was
 * written.  Write errors are left to the caller's ferror. */
void rp_report_windows_line(FILE *out, const struct rp_profile *p);

/*
 * Writes one line with the profile's resolution (comp.h) and the spans
 * below it (rp_report_comp_line writes it too); nothing in direct mode.
 * Write errors are left to the caller's ferror.
 */
void rp_report_res_line(FILE *out, const struct rp_profile *p);

/*
 * A thread stream id (format.h, "Thread streams") as people read it: the
 * kernel tid, and "#G" after it for the G-th reuse of that tid ("4711",
 * "4711#1").  Writes at most bufsz bytes; returns buf.  Cannot fail.
 */
const char *rp_tid_str(uint32_t stream, char *buf, size_t bufsz);

/*
 * Why the recorder dropped events, as " (N reason, M reason)" with the
 * non-zero reasons the trace gave (nothing when it gave none).  Write
 * errors are left to the caller's ferror.
 */
void rp_report_lost_why(FILE *out, const struct rp_profile *p);

/* "func", "point", "lock-wait", "lock-hold", "io", "wait",
 * "offcpu", else "unknown". */
const char *rp_kind_str(uint8_t kind);

/* The ranking's weight (enum rp_weight) as the JSON's rank.weight spells
 * it ("time", "calls", "cpu"), and as the table's and the page's header
 * do ("time", "call", "cpu": "rank: call weights").  Cannot fail. */
const char *rp_weight_str(int weight);
const char *rp_weight_name(int weight);

/*
 * Per node index, the ticks its activations spent in wait spans they called
 * directly: the summed inclusive time of its edges to nodes of kind wait
 * (the "wait_ns" of docs/report-json.md).  A calloc'd array of p->n_nodes,
 * which the caller frees; NULL when out of memory (or no nodes).
 */
uint64_t *rp_wait_ticks(const struct rp_profile *p);

/*
 * Writes str (NULL: "") as a JSON string: quotes, backslashes and control
 * bytes escaped, invalid UTF-8 as U+FFFD.  Write errors are left to the
 * caller's ferror.
 */
void rp_json_str(FILE *out, const char *str);

#endif /* RP_REPORT_UTIL_H */

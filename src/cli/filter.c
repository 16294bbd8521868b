// SPDX-License-Identifier: MIT
/*
 * filter.c - the span filters of the commands that read a trace into a
 * profile (report, graph, locks, tui, diff, info; docs/filters.md):
 * -F/--function, -N/--exclude, -D/--depth, -t/--min-duration and
 * -r/--time-range, and what they become for one file's replay.
 *
 * Names are of functions, which the trace does not hold (the analyzer names
 * them from the binaries after a replay), so a filtered file is replayed
 * twice: once to name its nodes and read its clock, then with the filter
 * (analyze/spanfilter.h), whose marks are by the file's own ids and whose
 * times are in its own ticks.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/error.h"
#include "report/names.h"

double rp_opt_duration(const char *cmd, const char *opt, const char *val)
{
    static const struct {
        const char *unit;
        double ns;
    } units[] = {{"", 1}, {"ns", 1}, {"us", 1e3}, {"ms", 1e6}, {"s", 1e9}};
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (end != val && errno == 0 && isfinite(v) && v >= 0)
        for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++)
            if (!strcmp(end, units[i].unit))
                return v * units[i].ns;
    rp_usage_die(cmd, "%s %s: expected a duration such as 500ns, 10us, 2ms or 1s", opt, val);
    return 0;
}

/* -r FROM~TO: either side may be empty (from the start, to the end). */
static void opt_range(const char *cmd, const char *val, struct rp_filter_args *f)
{
    char buf[128];
    const char *tilde = strchr(val, '~');
    if (!tilde || strlen(val) >= sizeof(buf))
        rp_usage_die(cmd, "-r/--time-range %s: expected FROM~TO, such as 1s~2.5s, 300ms~ or ~1s",
                     val);
    memcpy(buf, val, (size_t)(tilde - val));
    buf[tilde - val] = 0;
    f->from_ns = buf[0] ? rp_opt_duration(cmd, "-r/--time-range", buf) : 0;
    f->to_ns = tilde[1] ? rp_opt_duration(cmd, "-r/--time-range", tilde + 1) : INFINITY;
    if (!(f->to_ns > f->from_ns))
        rp_usage_die(cmd, "-r/--time-range %s: the end is not after the start", val);
    f->range = 1;
}

int rp_opt_filter(const char *cmd, int c, const char *val, struct rp_filter_args *f)
{
    static const char *const names[] = {['F'] = "-F/--function",
                                        ['N'] = "-N/--exclude",
                                        ['D'] = "-D/--depth",
                                        ['t'] = "-t/--min-duration",
                                        ['r'] = "-r/--time-range"};
    if (c != 'F' && c != 'N' && c != 'D' && c != 't' && c != 'r')
        return 0;
    switch (c) {
    case 'F':
    case 'N': {
        unsigned *n = c == 'F' ? &f->n_inc : &f->n_exc;
        if (*n == RP_FILTER_MAX_NAMES)
            rp_usage_die(cmd, "%s: at most %d names", names[c], RP_FILTER_MAX_NAMES);
        (c == 'F' ? f->inc : f->exc)[(*n)++] = val;
        break;
    }
    case 'D':
        f->depth = (uint32_t)rp_opt_u64("-D/--depth", val);
        if (!f->depth)
            rp_usage_die(cmd, "-D/--depth 0: expected 1 or more");
        break;
    case 't':
        f->min_ns = rp_opt_duration(cmd, "-t/--min-duration", val);
        break;
    case 'r':
        opt_range(cmd, val, f);
        break;
    }
    if (!f->first)
        f->first = names[c];
    size_t n = strlen(f->desc);
    snprintf(f->desc + n, sizeof(f->desc) - n, "%s-%c %s", n ? " " : "", c, val);
    return 1;
}

/* Marks the nodes of p named by list[0..n) with m; sets found[k] for each
 * name that named one. */
static void mark_names(const struct rp_profile *p, const char *const *list, unsigned n, uint8_t m,
                       uint8_t *mark, uint8_t *found)
{
    char buf[512];
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const char *name = NULL;
        for (unsigned k = 0; k < n; k++) {
            if (!name)
                name = rp_node_name(p, &p->nodes[i], buf, sizeof(buf));
            if (rp_name_match(name, list[k])) {
                mark[i] = m;
                found[k] = 1;
            }
        }
    }
}

/* ns after the first event of p, in p's ticks (saturated). */
static uint64_t ticks_at(const struct rp_profile *p, double ns)
{
    double npt = p->ns_per_tick > 0 ? p->ns_per_tick : 1;
    double t = (double)p->first_tick + ceil(ns / npt);
    return !(t < 1.8e19) ? UINT64_MAX : (uint64_t)t;
}

uint8_t *rp_filter_make(struct rp_filter_args *a, const struct rp_profile *p,
                        struct rp_span_filter *f)
{
    uint8_t *mark = calloc(p->n_nodes ? p->n_nodes : 1, 1);
    if (!mark)
        rp_die("out of memory");
    mark_names(p, a->inc, a->n_inc, RP_SF_INCLUDE, mark, a->inc_found);
    mark_names(p, a->exc, a->n_exc, RP_SF_EXCLUDE, mark, a->exc_found);
    double npt = p->ns_per_tick > 0 ? p->ns_per_tick : 1;
    double mt = ceil(a->min_ns / npt);
    *f = (struct rp_span_filter){
        .max_depth = a->depth,
        .min_ticks = a->min_ns > 0 ? (mt < 1.8e19 ? (uint64_t)mt : UINT64_MAX) : 0,
        .mark = mark,
        .n_mark = p->n_nodes,
        .has_include = a->n_inc > 0,
        .window = a->range,
        .from = a->range ? ticks_at(p, a->from_ns) : 0,
        .to = a->range ? (isinf(a->to_ns) ? UINT64_MAX : ticks_at(p, a->to_ns)) : 0,
    };
    return mark;
}

void rp_filter_check(const char *cmd, const struct rp_filter_args *a)
{
    for (unsigned k = 0; k < a->n_inc; k++)
        if (!a->inc_found[k])
            rp_die("%s -F/--function %s: no span of that name in the trace", cmd, a->inc[k]);
    for (unsigned k = 0; k < a->n_exc; k++)
        if (!a->exc_found[k])
            rp_die("%s -N/--exclude %s: no span of that name in the trace", cmd, a->exc[k]);
}

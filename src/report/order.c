// SPDX-License-Identifier: MIT
/*
 * order.c - the row order shared by every report (table, JSON, CSV): which
 * nodes are rows and in what order, by rank, self, total, calls or max.
 */
#define _GNU_SOURCE /* qsort_r */
#include <stdlib.h>
#include <string.h>

#include "report/report.h"
#include "trace/format.h"

/* room for a name rp_node_name formats into our buffer ("<lock> [hold]") */
#define RP_NAME_BUF 512

struct order_ctx {
    const struct rp_profile *p;
    enum rp_sort sort;
};

/* -1 when a should come first (a larger), 1 when b should; cannot fail. */
static int desc_u64(uint64_t a, uint64_t b)
{
    return (a < b) - (a > b);
}

static int desc_double(double a, double b)
{
    return (a < b) - (a > b);
}

/*
 * qsort_r comparator: the sort key descending (for rank: rank 1 first, then
 * unranked nodes, falling back to standing and inclusive time so an unranked
 * profile still comes out in a useful order), ties by name, then by index so
 * the order is total and repeatable.  Cannot fail.
 */
static int order_cmp(const void *va, const void *vb, void *arg)
{
    const struct order_ctx *c = arg;
    uint32_t ia = *(const uint32_t *)va, ib = *(const uint32_t *)vb;
    const struct rp_node *a = &c->p->nodes[ia], *b = &c->p->nodes[ib];
    int r = 0;

    switch (c->sort) {
    case RP_SORT_SELF:
        r = desc_u64(a->excl, b->excl);
        break;
    case RP_SORT_TOTAL:
        r = desc_u64(a->incl, b->incl);
        break;
    case RP_SORT_CALLS:
        r = desc_u64(a->calls, b->calls);
        break;
    case RP_SORT_MAX:
        r = desc_u64(rp_node_max(a), rp_node_max(b));
        break;
    case RP_SORT_RANK:
    default: {
        uint32_t ra = a->rank ? a->rank : UINT32_MAX, rb = b->rank ? b->rank : UINT32_MAX;
        r = (ra > rb) - (ra < rb);
        if (!r)
            r = desc_double(rp_node_standing(c->p, a), rp_node_standing(c->p, b));
        if (!r)
            r = desc_u64(a->incl, b->incl);
        break;
    }
    }
    if (r)
        return r;

    char ba[RP_NAME_BUF], bb[RP_NAME_BUF];
    r = strcmp(rp_node_name(c->p, a, ba, sizeof ba), rp_node_name(c->p, b, bb, sizeof bb));
    if (r)
        return r;
    return (ia > ib) - (ia < ib);
}

/*
 * A node is a row when it is not ROOT, is a span (func, point, lock-wait,
 * lock-hold, io, wait, offcpu: instants and counters have no durations to report) and has
 * completed at least one activation.
 */
static int is_row(const struct rp_node *n)
{
    return n->calls > 0 &&
           (n->kind <= RP_KIND_IO || n->kind == RP_KIND_WAIT || n->kind == RP_KIND_OFFCPU);
}

/*
 * See report.h.  Besides nodes without calls, instant and counter nodes are
 * left out (the reports print spans only).  Cannot fail; an unknown sort
 * value sorts by rank.
 */
uint32_t rp_report_order(const struct rp_profile *p, enum rp_sort sort, uint32_t *order)
{
    uint32_t n = 0;

    if (!p || !p->nodes || !order)
        return 0;
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (is_row(&p->nodes[i]))
            order[n++] = i;

    struct order_ctx c = {p, sort};
    if (n > 1)
        qsort_r(order, n, sizeof *order, order_cmp, &c);
    return n;
}

uint32_t *rp_report_rows(const struct rp_profile *p, const struct rp_report_opts *o,
                         uint32_t *n_rows, uint32_t *n_all)
{
    uint32_t *order = malloc(sizeof *order * (p->n_nodes ? p->n_nodes : 1));
    if (!order)
        return NULL;
    uint32_t n = rp_report_order(p, o->sort, order);
    if (n_all)
        *n_all = n;
    *n_rows = o->limit && n > o->limit ? o->limit : n;
    return order;
}

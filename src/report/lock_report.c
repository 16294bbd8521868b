// SPDX-License-Identifier: MIT
/*
 * lock_report.c - `rankprof locks` written out: the lock profile
 * (analyze/lockprof.h) as a table and as JSON (lock_report.h).
 */
#include "lock_report.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/flags.h"
#include "common/error.h"
#include "report/export.h"
#include "report/util.h"

static double mean(uint64_t sum, uint64_t n)
{
    return n ? (double)sum / (double)n : 0.0;
}

/* A duration in ticks, as rp_fmt_ns prints it. */
static const char *dur(const struct rp_profile *p, double ticks, char *buf, size_t bufsz)
{
    return rp_fmt_ns(ticks * p->ns_per_tick, buf, bufsz);
}

static void table_row(FILE *f, const struct rp_profile *p, const struct rp_lock_stat *s,
                      const char *flags, const char *indent, const char *name)
{
    char b[6][24];
    double pct = s->acquisitions ? 100.0 * (double)s->contended / (double)s->acquisitions : 0;
    fprintf(
        f, "%10" PRIu64 " %9" PRIu64 " %6.2f%% %7" PRIu64 " %9s %9s %9s %9s %9s %9s  %-10s %s%s\n",
        s->acquisitions, s->contended, pct, s->failed, dur(p, (double)s->wait_sum, b[0], 24),
        dur(p, mean(s->wait_sum, s->waits), b[1], 24), dur(p, (double)s->wait_max, b[2], 24),
        dur(p, (double)s->hold_sum, b[3], 24), dur(p, mean(s->hold_sum, s->acquisitions), b[4], 24),
        dur(p, (double)s->hold_max, b[5], 24), flags, indent, name);
}

int rp_locks_table(FILE *f, const struct rp_locks *L, const struct rp_profile *p)
{
    char nb[512], fb[64], b[3][24];
    uint32_t nconds = 0;
    for (uint32_t i = 0; i < L->nlocks; i++)
        nconds += L->locks[i].cond != 0;
    if (!L->nlocks) {
        fprintf(f, "no lock events in this trace (record with the lock class on, and "
                   "librankprof preloaded: `rankprof record` does both)\n");
        return ferror(f) ? RP_EIO : 0;
    }
    fprintf(f, "%10s %9s %7s %7s %9s %9s %9s %9s %9s %9s  %-10s %s\n", "acquired", "contended", "%",
            "failed", "wait", "wait avg", "wait max", "hold", "hold avg", "hold max", "flags",
            "lock / <- call site");
    for (uint32_t i = 0; i < L->nlocks; i++) {
        const struct rp_lock *lk = &L->locks[i];
        if (lk->cond)
            continue;
        table_row(f, p, &lk->s, lk->flags ? rp_flags_str(lk->flags, fb, sizeof(fb)) : "", "",
                  lk->name);
        for (uint32_t k = 0; k < lk->nsites; k++) {
            const struct rp_node *c = &p->nodes[lk->sites[k].caller];
            table_row(f, p, &lk->sites[k].s, "", "  <- ", rp_node_name(p, c, nb, sizeof(nb)));
        }
    }
    fprintf(f, "\ncontended = acquisitions that waited (%% of all); failed = waits that ended "
               "without the lock (try-lock, timeout); wait avg is over all waits.\n");
    if (!nconds)
        return ferror(f) ? RP_EIO : 0;
    /* condition variables: the time threads spent blocked in pthread_cond_wait */
    fprintf(f, "\n%10s %9s %9s %9s  %s\n", "waits", "wait", "wait avg", "wait max",
            "condition / <- call site");
    for (uint32_t i = 0; i < L->nlocks; i++) {
        const struct rp_lock *lk = &L->locks[i];
        for (uint32_t k = 0; lk->cond && k <= lk->nsites; k++) {
            const struct rp_lock_stat *s = k ? &lk->sites[k - 1].s : &lk->s;
            fprintf(f, "%10" PRIu64 " %9s %9s %9s  %s%s\n", s->waits,
                    dur(p, (double)s->wait_sum, b[0], 24),
                    dur(p, mean(s->wait_sum, s->waits), b[1], 24),
                    dur(p, (double)s->wait_max, b[2], 24), k ? "  <- " : "",
                    k ? rp_node_name(p, &p->nodes[lk->sites[k - 1].caller], nb, sizeof(nb))
                      : lk->name);
        }
    }
    fprintf(f, "\nwaits = pthread_cond_wait/timedwait calls, timed from the release of the mutex "
               "to the return (the re-acquisition included).\n");
    return ferror(f) ? RP_EIO : 0;
}

static void json_stat(FILE *f, const struct rp_profile *p, const struct rp_lock_stat *s)
{
    char nb[40];
    fprintf(f,
            "\"acquisitions\": %" PRIu64 ", \"contended\": %" PRIu64 ", \"uncontended\": %" PRIu64
            ", \"failed\": %" PRIu64 ", \"waits\": %" PRIu64,
            s->acquisitions, s->contended,
            s->acquisitions >= s->contended ? s->acquisitions - s->contended : 0, s->failed,
            s->waits);
    fprintf(f, ", \"contended_pct\": %s",
            rp_num_str(nb, s->acquisitions ? 100.0 * (double)s->contended / (double)s->acquisitions
                                           : 0.0));
    fprintf(f, ", \"wait_ns\": %" PRIu64 ", \"wait_mean_ns\": %s, \"wait_max_ns\": %" PRIu64,
            rp_ticks_ns(p, s->wait_sum),
            rp_num_str(nb, mean(s->wait_sum, s->waits) * p->ns_per_tick),
            rp_ticks_ns(p, s->wait_max));
    fprintf(f, ", \"hold_ns\": %" PRIu64 ", \"hold_mean_ns\": %s, \"hold_max_ns\": %" PRIu64,
            rp_ticks_ns(p, s->hold_sum),
            rp_num_str(nb, mean(s->hold_sum, s->acquisitions) * p->ns_per_tick),
            rp_ticks_ns(p, s->hold_max));
}

/* Lock i of L as the n-th element of its JSON array.  Write errors are left
 * for ferror(). */
static void lock_json(FILE *f, const struct rp_locks *L, const struct rp_profile *p, uint32_t i,
                      uint32_t n)
{
    char nb[512];
    const struct rp_lock *lk = &L->locks[i];
    fprintf(f, "%s\n  {\"name\": ", n ? "," : "");
    rp_export_put_json(f, lk->name);
    fputs(", ", f);
    json_stat(f, p, &lk->s);
    fprintf(f, ", \"flags\": [%s], \"sites\": [",
            lk->flags & RP_FLAG_CONTENDED ? "\"CONTENDED\"" : "");
    for (uint32_t k = 0; k < lk->nsites; k++) {
        fprintf(f, "%s\n    {\"caller\": ", k ? "," : "");
        rp_export_put_json(f, rp_node_name(p, &p->nodes[lk->sites[k].caller], nb, sizeof(nb)));
        fputs(", ", f);
        json_stat(f, p, &lk->sites[k].s);
        fputc('}', f);
    }
    fputs("]}", f);
}

/* The locks, then the condition variables ("conds", with the same fields:
 * only waits and wait_* are non-zero). */
int rp_locks_json(FILE *f, const struct rp_locks *L, const struct rp_profile *p)
{
    fprintf(f, "{\"version\": 1, \"program\": ");
    rp_export_put_json(f, p->program ? p->program : "");
    for (int conds = 0; conds < 2; conds++) {
        fprintf(f, conds ? "\n], \"conds\": [" : ", \"locks\": [");
        uint32_t listed = 0;
        for (uint32_t i = 0; i < L->nlocks; i++)
            if (!L->locks[i].cond == !conds)
                lock_json(f, L, p, i, listed++);
    }
    fputs("\n]}\n", f);
    return ferror(f) ? RP_EIO : 0;
}

// SPDX-License-Identifier: MIT
/*
 * cmd_info.c - `rankprof info`: what a trace holds: the program, the clock,
 * threads, events, losses, and how the run ended.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "common/error.h"
#include "trace/reader.h"

struct counts {
    uint64_t n[16], bytes[16];
};

static int count_chunk(void *ctx, const struct rp_profile *p, const struct rp_chunk *c)
{
    (void)p;
    struct counts *k = ctx;
    unsigned t = c->type < 16 ? c->type : 0;
    k->n[t]++;
    k->bytes[t] += c->len + RP_CHUNK_HDR_SIZE;
    return 0;
}

/* The file, or the run's files: pid, parent, events, threads, losses. */
static void put_files(const struct rp_profile *p, const char *input)
{
    if (p->n_procs > 1) {
        printf("run:         %u processes (%s), merged below\n", p->n_procs,
               p->procs[0].run ? p->procs[0].run : "no run id");
        for (uint32_t i = 0; i < p->n_procs; i++) {
            const struct rp_proc *r = &p->procs[i];
            struct stat st;
            char rk[24] = "";
            for (uint32_t k = 0; k < p->n_procs && !rk[0]; k++)
                if (p->procs[k].has_rank) /* a column, when any process has a rank */
                    snprintf(rk, sizeof(rk), "%10s", "");
            if (r->has_rank)
                snprintf(rk, sizeof(rk), "rank %-4u ", r->rank);
            printf("  %spid %-8u ppid %-8u %10llu events  %3u thread%s  lost %llu  %-8s %s (%lld "
                   "bytes)%s%s\n",
                   rk, r->pid, r->ppid, (unsigned long long)r->events, r->threads,
                   r->threads == 1 ? " " : "s", (unsigned long long)r->lost,
                   r->ended ? "ended" : "ABNORMAL", r->file,
                   stat(r->file, &st) == 0 ? (long long)st.st_size : -1LL,
                   r->run && p->procs[0].run && strcmp(r->run, p->procs[0].run) ? ", run " : "",
                   r->run && p->procs[0].run && strcmp(r->run, p->procs[0].run) ? r->run : "");
        }
    } else {
        struct stat st;
        const char *in = p->n_procs ? p->procs[0].file : input;
        printf("file:        %s (%lld bytes)\n", in,
               stat(in, &st) == 0 ? (long long)st.st_size : -1LL);
    }
}

/* The program, how it was recorded, the clock and the recorder's cost. */
static void put_recording(const struct rp_profile *p)
{
    char b[32];
    printf("program:     %s\n", p->program ? p->program : "?");
    printf("arguments:  ");
    for (size_t i = 0; i < p->argv_len;) {
        printf(" %s", p->argv + i);
        i += strlen(p->argv + i) + 1;
    }
    printf("\npid:         %u", p->pid);
    if (p->n_procs == 1 && p->procs[0].run)
        printf("  (run %s)", p->procs[0].run);
    printf("\n");
    printf("mode:        %s\n", p->mode ? p->mode : "?");
    printf("clock:       %s, %.6f ns per tick (%.1f MHz)", p->clock_name ? p->clock_name : "?",
           p->ns_per_tick, 1e3 / p->ns_per_tick);
    if (p->clock_step > 1)
        printf(", moving by %.6g ticks at once (%.1fns)", p->clock_step,
               p->clock_step * p->ns_per_tick);
    printf("\n");
    if (p->overhead_known)
        printf("overhead:    %.2f ticks (%.1fns) per recorded call (enter + exit), %.2f ticks "
               "(%.1fns) of it inside a span's own; measured %s, subtracted by the "
               "analysis unless --no-compensate\n",
               p->overhead_pair, p->overhead_pair * p->ns_per_tick, p->overhead_self,
               p->overhead_self * p->ns_per_tick,
               p->overhead_late == 2   ? "while the program ran (faster than at start-up)"
               : p->overhead_late == 1 ? "at start-up (faster than while the program ran)"
                                       : "at start-up");
    else
        printf("overhead:    not measured (%s): times are not compensated\n",
               p->mode && !strcmp(p->mode, "direct") ? "direct mode"
                                                     : "older recorder or RANKPROF_CALIBRATE=0");
    if (!(p->mode && !strcmp(p->mode, "direct")))
        printf("resolution:  %s (%s%s): %llu spans shorter than that are below resolution, "
               "in totals and means, not in min or percentiles\n",
               rp_fmt_res((double)p->resolution * p->ns_per_tick, b, sizeof(b)),
               p->clock_step > 1 ? "the clock's step" : "1 tick",
               p->compensated ? " + the spread of the measured overhead, ceil" : "",
               (unsigned long long)p->below_res);
    rp_report_offcpu_line(stdout, p); /* and the recorder's waits, when there were any */
}

/* Events, ids, losses, what was cut, how the run ended. */
static void put_counts(const struct rp_profile *p)
{
    char b[32];
    printf("duration:    %s (first to last event)\n",
           rp_fmt_ns((double)(p->last_tick - p->first_tick) * p->ns_per_tick, b, sizeof(b)));
    printf("events:      %llu\n", (unsigned long long)p->events);
    uint64_t defined = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++)
        defined += p->nodes[i].kind != 0xff;
    printf("ids:         %llu defined, %u edges\n", (unsigned long long)defined, p->n_edges);
    printf("lost events: %llu", (unsigned long long)p->lost);
    rp_report_lost_why(stdout, p); /* the reasons, when the trace gives them */
    putchar('\n');
    printf("unmatched:   %llu exits without an entry, %llu spans dropped at lost events or "
           "lock holds never released\n",
           (unsigned long long)p->unmatched_exits, (unsigned long long)p->unclosed);
    printf("cut:         %llu frames unwound without their exit (longjmp, exceptions), %llu "
           "open when their thread or the run ended; ended there with their time\n",
           (unsigned long long)p->unwound, (unsigned long long)p->cut);
    rp_report_windows_line(stdout, p);
    if (p->ended && (p->end_flags & RP_END_SIGNAL))
        printf("ended:       ABNORMALLY: killed by signal %d (%s); the recorder flushed what "
               "it had\n",
               p->end_status, strsignal(p->end_status));
    else if (rp_profile_status_known(p))
        printf("ended:       normally (END record present), exit status %d\n", p->end_status);
    else
        printf("ended:       %s\n", !p->ended ? "ABNORMALLY: no END record (crash, signal or _exit)"
                                    : p->snapshot && !(p->end_flags & (RP_END_EXIT | RP_END_SIGNAL))
                                        ? "still running at this snapshot (rankprof record --ring)"
                                        : "normally (END record present)");
}

/* The threads and the chunks of the file. */
static void put_threads(const struct rp_profile *p, const struct counts *k)
{
    char b[32];
    printf("threads:     %u\n", p->n_threads);
    for (uint32_t i = 0; i < p->n_threads; i++) {
        const struct rp_thread *t = &p->threads[i];
        char tb[24];
        if (t->pid && (i == 0 || t->pid != p->threads[i - 1].pid))
            printf(" process %u:\n", t->pid);
        printf("  tid %-8s %-16s %10llu events  %s active  lost %llu\n",
               rp_tid_str(t->tid, tb, sizeof(tb)), t->name ? t->name : "",
               (unsigned long long)t->events,
               rp_fmt_ns((double)(t->last - t->first) * p->ns_per_tick, b, sizeof(b)),
               (unsigned long long)t->lost);
    }
    static const char *const names[16] = {"unknown", "INFO",   "CLOCK", "MAPS", "THREAD",
                                          "DEFS",    "EVENTS", "LOST",  "END",  "STATS"};
    printf("chunks:\n");
    for (unsigned t = 0; t < 16; t++)
        if (k->n[t])
            printf("  %-8s %8llu chunks %12llu bytes\n", names[t] ? names[t] : "?",
                   (unsigned long long)k->n[t], (unsigned long long)k->bytes[t]);
    if (p->events && k->bytes[RP_CH_EVENTS])
        printf("density:     %.2f bytes per event\n",
               (double)k->bytes[RP_CH_EVENTS] / (double)p->events);
}

int cmd_info(int argc, char **argv)
{
    struct rp_load_opts o;
    rp_load_opts_default(&o);
    rp_opt_input_args("info", rp_parse_input_opts("info", argc, argv, &o, 0), argc, argv, &o);

    struct rp_profile p = {0};
    struct counts k = {0};
    o.rank = 0;
    o.no_names = 1; /* (a run's files are named all the same: to be merged) */
    o.chunk_fn = count_chunk;
    o.chunk_ctx = &k;
    rp_load(&o, &p);
    put_files(&p, o.input);
    put_recording(&p);
    put_counts(&p);
    put_threads(&p, &k);
    if (p.warn[0])
        printf("warnings:\n%s", p.warn);
    rp_profile_free(&p);
    return 0;
}

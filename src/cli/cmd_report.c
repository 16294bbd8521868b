// SPDX-License-Identifier: MIT
/*
 * cmd_report.c - `rankprof report`: the flat profile ranked by standing
 * probability, as a table, JSON (the stable interface, docs/report-json.md)
 * or CSV.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/error.h"
#include "report/report.h"

/* --threshold KEY=VALUE: every flag threshold of docs/design.md §7. */
static void set_threshold(struct rp_flag_opts *f, const char *kv)
{
    const char *eq = strchr(kv, '=');
    if (!eq)
        rp_usage_die("report", "--threshold %s: expected KEY=VALUE", kv);
    size_t n = (size_t)(eq - kv);
    const char *v = eq + 1;
#define K(s) (n == strlen(s) && !strncmp(kv, s, n))
    if (K("dispatch-involvement"))
        f->dispatch_involvement = rp_opt_double("--threshold dispatch-involvement", v, 0, 1e9);
    else if (K("dispatch-self"))
        f->dispatch_self = rp_opt_double("--threshold dispatch-self", v, 0, 1);
    else if (K("dispatch-fanout"))
        f->dispatch_fanout = rp_opt_double("--threshold dispatch-fanout", v, 0, 1e9);
    else if (K("dispatch-margin"))
        f->dispatch_margin = rp_opt_double("--threshold dispatch-margin", v, 1, 1e9);
    else if (K("hot-self"))
        f->hot_self = rp_opt_double("--threshold hot-self", v, 0, 1);
    else if (K("hot-run"))
        f->hot_run = rp_opt_double("--threshold hot-run", v, 0, 1);
    else if (K("jitter-calls"))
        f->jitter_calls = rp_opt_u64("--threshold jitter-calls", v);
    else if (K("jitter-quantile"))
        f->jitter_quantile = rp_opt_double("--threshold jitter-quantile", v, 0.5, 1);
    else if (K("jitter-slow"))
        f->jitter_slow = rp_opt_u64("--threshold jitter-slow", v);
    else if (K("jitter-ratio"))
        f->jitter_ratio = rp_opt_double("--threshold jitter-ratio", v, 0, 1e12);
    else if (K("jitter-floor-ns"))
        f->jitter_floor_ns = rp_opt_double("--threshold jitter-floor-ns", v, 0, 1e15);
    else if (K("rate-calls"))
        f->rate_calls = rp_opt_u64("--threshold rate-calls", v);
    else if (K("rate-spread"))
        f->rate_spread = rp_opt_double("--threshold rate-spread", v, 0, 1e9);
    else if (K("rate-duty"))
        f->rate_duty = rp_opt_double("--threshold rate-duty", v, 0, 1e9);
    else if (K("rate-idle"))
        f->rate_idle = rp_opt_double("--threshold rate-idle", v, 0, 1);
    else if (K("rate-waits"))
        f->rate_waits = rp_opt_double("--threshold rate-waits", v, 0, 1e9);
    else if (K("rate-period"))
        f->rate_period = rp_opt_double("--threshold rate-period", v, 0, 1e12);
    else if (K("jitter-rare"))
        f->jitter_rare = rp_opt_double("--threshold jitter-rare", v, 0, 1);
    else if (K("jitter-run"))
        f->jitter_run = rp_opt_double("--threshold jitter-run", v, 0, 1);
    else if (K("contended-ratio"))
        f->contended_ratio = rp_opt_double("--threshold contended-ratio", v, 0, 1e12);
    else if (K("contended-waits"))
        f->contended_waits = rp_opt_u64("--threshold contended-waits", v);
    else if (K("contended-run"))
        f->contended_run = rp_opt_double("--threshold contended-run", v, 0, 1);
    else
        rp_usage_die(
            "report",
            "--threshold: unknown key '%.*s' (dispatch-involvement, dispatch-self, "
            "dispatch-fanout, dispatch-margin, hot-self, hot-run, jitter-calls, jitter-quantile, "
            "jitter-ratio, jitter-slow, jitter-rare, jitter-run, "
            "jitter-floor-ns, rate-calls, rate-spread, rate-duty, rate-idle, rate-waits, "
            "rate-period, "
            "contended-ratio, contended-waits, contended-run)",
            (int)n, kv);
#undef K
}

/* Reads report's options into lo_opts, ro and *format.  Dies (usage) on a
 * bad one. */
static void parse_args(int argc, char **argv, struct rp_load_opts *ld, struct rp_report_opts *ro,
                       const char **format)
{
    static const struct option lo[] = {RP_INPUT_LONGOPTS,
                                       {"sort", required_argument, NULL, 's'},
                                       {"weight", required_argument, NULL, 'w'},
                                       {"alpha", required_argument, NULL, 'a'},
                                       {"limit", required_argument, NULL, 'n'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"thread", required_argument, NULL, RP_OPT_THREAD},
                                       {"force", no_argument, NULL, RP_OPT_FORCE},
                                       {"no-compensate", no_argument, NULL, RP_OPT_NO_COMP},
                                       {"outside", no_argument, NULL, RP_OPT_OUTSIDE},
                                       RP_FILTER_LONGOPTS,
                                       {"compensate", required_argument, NULL, 'M'},
                                       {"threshold", required_argument, NULL, 'T'},
                                       {"color", no_argument, NULL, 'C'},
                                       {"wide", no_argument, NULL, 'W'},
                                       {"no-chains", no_argument, NULL, 'K'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    int c;

    opterr = 0;
    ld->cmd = "report";
    while ((c = getopt_long(argc, argv, "i:n:h" RP_FILTER_SHORTOPTS, lo, NULL)) != -1) {
        if (rp_opt_input("report", c, optarg, ld) || rp_opt_filter("report", c, optarg, &ld->filt))
            continue;
        switch (c) {
        case 's':
            if (!strcmp(optarg, "rank"))
                ro->sort = RP_SORT_RANK;
            else if (!strcmp(optarg, "self"))
                ro->sort = RP_SORT_SELF;
            else if (!strcmp(optarg, "total"))
                ro->sort = RP_SORT_TOTAL;
            else if (!strcmp(optarg, "calls"))
                ro->sort = RP_SORT_CALLS;
            else if (!strcmp(optarg, "max"))
                ro->sort = RP_SORT_MAX;
            else
                rp_usage_die("report", "--sort %s: expected rank, self, total, calls or max",
                             optarg);
            break;
        case 'w':
            ld->weight = rp_opt_weight("report", optarg);
            break;
        case 'a':
            ld->rank_opt.alpha = rp_opt_double("--alpha", optarg, 0, 0.999999);
            break;
        case 'n':
            ro->limit = (uint32_t)rp_opt_u64("--limit", optarg);
            break;
        case 'f':
            *format = optarg;
            if (strcmp(*format, "table") && strcmp(*format, "json") && strcmp(*format, "csv"))
                rp_usage_die("report", "--format %s: expected table, json or csv", *format);
            break;
        case RP_OPT_THREAD:
            ld->replay.tid = rp_opt_tid("--thread", optarg);
            break;
        case RP_OPT_FORCE:
            ld->replay.force = 1;
            break;
        case RP_OPT_NO_COMP:
        case 'M':
            rp_opt_compensate("report", c == 'M' ? optarg : NULL, &ld->replay);
            break;
        case RP_OPT_OUTSIDE:
            ld->replay.keep_outside = 1;
            break;
        case 'T':
            set_threshold(&ld->flag, optarg);
            break;
        case 'C':
            ro->color = 1;
            break;
        case 'W':
            ro->width = RP_WIDTH_WIDE;
            break;
        case 'K':
            ro->chains = 0;
            break;
        case 'h':
            rp_help("report");
        default:
            rp_usage_die("report", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    rp_opt_input_args("report", optind, argc, argv, ld);
}

int cmd_report(int argc, char **argv)
{
    struct rp_load_opts lo_opts;
    struct rp_report_opts ro = {.sort = RP_SORT_RANK, .chains = 1};
    const char *format = "table";

    rp_load_opts_default(&lo_opts);
    parse_args(argc, argv, &lo_opts, &ro, &format);

    struct rp_profile p = {0};
    rp_load(&lo_opts, &p);
    ro.ranked = ro.flagged = lo_opts.rank;
    ro.flag = &lo_opts.flag;
    if (!ro.color && !strcmp(format, "table") && isatty(1) && !getenv("NO_COLOR"))
        ro.color = 1;
    int rc;
    if (!strcmp(format, "json"))
        rc = rp_report_json(stdout, &p, &ro);
    else if (!strcmp(format, "csv"))
        rc = rp_report_csv(stdout, &p, &ro);
    else
        rc = rp_report_table(stdout, &p, &ro);
    if (rc == 0 && fflush(stdout) != 0)
        rc = RP_EIO;
    rp_profile_free(&p);
    if (rc < 0)
        rp_die("writing the report: %s", rp_strerror(rc));
    return 0;
}

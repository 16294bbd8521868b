// SPDX-License-Identifier: MIT
/*
 * cmd_diff.c - `rankprof diff BASE NEW`: what changed between two runs,
 * per procedure, lock and point, judged so that noise is not reported as
 * a regression (docs/diff.md).  Exit status 3 when something regressed,
 * for CI jobs.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/diff.h"
#include "cli.h"
#include "common/error.h"
#include "report/diff_report.h"

#define EXIT_REGRESSED 3

/* A share or a change: "20%" or "0.2", within [lo, hi] as a fraction. */
static double opt_frac(const char *opt, const char *val, double lo, double hi)
{
    size_t n = strlen(val);
    if (n > 1 && val[n - 1] == '%') {
        char buf[64];
        if (n >= sizeof buf)
            rp_die("option %s: '%s' is not a number", opt, val);
        memcpy(buf, val, n - 1);
        buf[n - 1] = 0;
        return rp_opt_double(opt, buf, lo * 100, hi * 100) / 100;
    }
    return rp_opt_double(opt, val, lo, hi);
}

/* Loads one side: the run's set of FILE (or FILE alone under --one-file). */
static void load_side(const struct rp_load_opts *base, const char *file, struct rp_profile *p)
{
    struct rp_load_opts o = *base;
    o.in.files[0] = file;
    o.in.n_files = 1;
    o.input = file;
    rp_load(&o, p);
}

int cmd_diff(int argc, char **argv)
{
    static const struct option lo[] = {{"one-file", no_argument, NULL, RP_OPT_ONE_FILE},
                                       {"threshold", required_argument, NULL, 'T'},
                                       {"confidence", required_argument, NULL, 'c'},
                                       {"min-share", required_argument, NULL, 's'},
                                       {"relative", no_argument, NULL, 'R'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"limit", required_argument, NULL, 'n'},
                                       {"all", no_argument, NULL, 'a'},
                                       {"force", no_argument, NULL, RP_OPT_FORCE},
                                       {"no-compensate", no_argument, NULL, RP_OPT_NO_COMP},
                                       {"outside", no_argument, NULL, RP_OPT_OUTSIDE},
                                       RP_FILTER_LONGOPTS,
                                       {"compensate", required_argument, NULL, 'M'},
                                       {"color", no_argument, NULL, 'C'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    struct rp_load_opts lo_opts;
    struct rp_diff_opts dopt;
    struct rp_diff_view v = {.limit = 20};
    const char *format = "table";
    int c;

    rp_load_opts_default(&lo_opts);
    rp_diff_opts_default(&dopt);
    opterr = 0;
    lo_opts.cmd = "diff";
    while ((c = getopt_long(argc, argv, "n:h" RP_FILTER_SHORTOPTS, lo, NULL)) != -1) {
        if (rp_opt_filter("diff", c, optarg, &lo_opts.filt))
            continue;
        switch (c) {
        case RP_OPT_ONE_FILE:
            lo_opts.in.one_file = 1;
            break;
        case 'T':
            dopt.threshold = opt_frac("--threshold", optarg, 0, 1e6);
            break;
        case 'c':
            dopt.confidence = opt_frac("--confidence", optarg, 0.5, 0.999999999);
            break;
        case 's':
            dopt.min_share = opt_frac("--min-share", optarg, 0, 1);
            break;
        case 'R':
            dopt.relative = 1;
            break;
        case 'f':
            format = optarg;
            if (strcmp(format, "table") && strcmp(format, "json"))
                rp_usage_die("diff", "--format %s: expected table or json", format);
            break;
        case 'n':
            v.limit = (uint32_t)rp_opt_u64("--limit", optarg);
            break;
        case 'a':
            v.all = 1;
            break;
        case RP_OPT_FORCE:
            lo_opts.replay.force = 1;
            break;
        case RP_OPT_NO_COMP:
        case 'M':
            rp_opt_compensate("diff", c == 'M' ? optarg : NULL, &lo_opts.replay);
            break;
        case RP_OPT_OUTSIDE:
            lo_opts.replay.keep_outside = 1;
            break;
        case 'C':
            v.color = 1;
            break;
        case 'h':
            rp_help("diff");
        default:
            rp_usage_die("diff", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (argc - optind != 2)
        rp_usage_die("diff", "expected two traces, BASE and NEW (%d given)", argc - optind);
    v.name_a = argv[optind];
    v.name_b = argv[optind + 1];

    struct rp_profile a = {0}, b = {0};
    struct rp_diff d;
    load_side(&lo_opts, v.name_a, &a);
    load_side(&lo_opts, v.name_b, &b);
    int rc = rp_diff_compute(&a, &b, &dopt, &d);
    if (rc < 0)
        rp_die("comparing %s and %s: %s", v.name_a, v.name_b, rp_strerror(rc));
    v.a = &a;
    v.b = &b;
    v.d = &d;
    v.o = &dopt;
    if (!v.color && !strcmp(format, "table") && isatty(1) && !getenv("NO_COLOR"))
        v.color = 1;
    rc = !strcmp(format, "json") ? rp_diff_json(stdout, &v) : rp_diff_table(stdout, &v);
    if (rc == 0 && fflush(stdout) != 0)
        rc = RP_EIO;
    int regressed = d.regressions > 0;
    rp_diff_free(&d);
    rp_profile_free(&a);
    rp_profile_free(&b);
    if (rc < 0)
        rp_die("writing the diff: %s", rp_strerror(rc));
    return regressed ? EXIT_REGRESSED : 0;
}

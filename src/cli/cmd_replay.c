// SPDX-License-Identifier: MIT
/*
 * cmd_replay.c - `rankprof replay`: every call as an indented tree with its
 * duration (src/report/calltree.c, docs/replay.md), through a pager on a
 * terminal.
 */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "common/error.h"
#include "report/calltree.h"

/* TIME: a number with a unit (ns, us, ms, s; ns when none).  Dies when it
 * is not one. */
static double opt_time(const char *opt, const char *val)
{
    char *end;
    double v = strtod(val, &end);
    double mul = !strcmp(end, "") || !strcmp(end, "ns") ? 1
                 : !strcmp(end, "us")                   ? 1e3
                 : !strcmp(end, "ms")                   ? 1e6
                 : !strcmp(end, "s")                    ? 1e9
                                                        : -1;
    if (end == val || mul < 0 || !(v >= 0) || v > 1e12)
        rp_die("option %s: '%s' is not a time (e.g. 10us, 2ms)", opt, val);
    return v * mul;
}

int cmd_replay(int argc, char **argv)
{
    static const struct option lo[] = {RP_INPUT_LONGOPTS,
                                       {"thread", required_argument, NULL, 'T'},
                                       {"depth", required_argument, NULL, 'D'},
                                       {"time-filter", required_argument, NULL, 't'},
                                       {"filter", required_argument, NULL, 'F'},
                                       {"notrace", required_argument, NULL, 'N'},
                                       {"force", no_argument, NULL, 'f'},
                                       {"no-compensate", no_argument, NULL, 'n'},
                                       {"compensate", required_argument, NULL, 'M'},
                                       {"color", no_argument, NULL, 'C'},
                                       {"no-pager", no_argument, NULL, 'P'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    struct rp_load_opts lo_opts;
    struct rp_calltree_opts ct = {0};
    int c, pager = 1;

    rp_load_opts_default(&lo_opts);
    lo_opts.rank = 0;
    lo_opts.keep_maps = 1; /* (a run's files are walked again) */
    opterr = 0;
    while ((c = getopt_long(argc, argv, "i:D:t:F:N:h", lo, NULL)) != -1) {
        if (rp_opt_input("replay", c, optarg, &lo_opts))
            continue;
        switch (c) {
        case 'T':
            lo_opts.replay.tid = rp_opt_tid("--thread", optarg);
            break;
        case 'D':
            ct.max_depth = (uint32_t)rp_opt_u64("-D/--depth", optarg);
            if (!ct.max_depth)
                rp_usage_die("replay", "-D/--depth 0: give 1 or more");
            break;
        case 't':
            ct.min_ns = opt_time("-t/--time-filter", optarg);
            break;
        case 'F':
        case 'N':
            if ((c == 'F' ? ct.n_only : ct.n_exclude) == RP_CT_MAX_NAMES)
                rp_usage_die("replay", "-%c: at most %d names", c, RP_CT_MAX_NAMES);
            if (c == 'F')
                ct.only[ct.n_only++] = optarg;
            else
                ct.exclude[ct.n_exclude++] = optarg;
            break;
        case 'f':
            lo_opts.replay.force = 1;
            break;
        case 'n':
        case 'M':
            rp_opt_compensate("replay", c == 'M' ? optarg : NULL, &lo_opts.replay);
            break;
        case 'C':
            ct.color = 1;
            break;
        case 'P':
            pager = 0;
            break;
        case 'h':
            rp_help("replay");
        default:
            rp_usage_die("replay", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    rp_opt_input_args("replay", optind, argc, argv, &lo_opts);

    struct rp_profile p = {0};
    rp_load(&lo_opts, &p);
    FILE *out = stdout, *pipe = NULL;
    if (isatty(1)) {
        if (!getenv("NO_COLOR"))
            ct.color = 1;
        const char *pg = getenv("PAGER");
        if (pager && (!pg || *pg) && (pipe = popen(pg ? pg : "less -FRX", "w"))) {
            out = pipe;
            signal(SIGPIPE, SIG_IGN); /* (quitting the pager early ends the writes) */
        }
    }
    char err[768] = "";
    int rc = rp_calltree(out, lo_opts.input, &lo_opts.replay, &p, &ct, err, sizeof err);
    if (rc == 0 && fflush(out) != 0)
        rc = RP_EIO;
    if (pipe)
        pclose(pipe); /* (the pager quit early: not an error) */
    rp_profile_free(&p);
    if (rc < 0 && !(pipe && rc == RP_EIO))
        rp_die("%s", err[0] ? err : rp_strerror(rc));
    return 0;
}

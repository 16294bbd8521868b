// SPDX-License-Identifier: MIT
/*
 * cmd_locks.c - `rankprof locks`: wait and hold per lock and per call site
 * and then the waits on each condition variable, as a table or JSON
 * (docs/locks.md).  Two streamed passes:
 * the replay (names, the CONTENDED flag), then the spans (src/report/locks.c).
 */
#include <getopt.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "common/error.h"
#include "report/lock_report.h"

int cmd_locks(int argc, char **argv)
{
    static const struct option lo[] = {RP_INPUT_LONGOPTS,
                                       {"sort", required_argument, NULL, 's'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"thread", required_argument, NULL, RP_OPT_THREAD},
                                       {"force", no_argument, NULL, RP_OPT_FORCE},
                                       {"no-compensate", no_argument, NULL, RP_OPT_NO_COMP},
                                       {"compensate", required_argument, NULL, 'M'},
                                       {"contended-ratio", required_argument, NULL, 'R'},
                                       RP_FILTER_LONGOPTS,
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    static const char *const sorts[] = {"wait", "hold", "acquisitions", "contended", "name"};
    struct rp_load_opts lo_opts;
    enum rp_locks_sort sort = RP_LOCKS_SORT_WAIT;
    const char *format = "table";
    int c;

    rp_load_opts_default(&lo_opts);
    opterr = 0;
    lo_opts.cmd = "locks";
    while ((c = getopt_long(argc, argv, "i:h" RP_FILTER_SHORTOPTS, lo, NULL)) != -1) {
        if (rp_opt_input("locks", c, optarg, &lo_opts) ||
            rp_opt_filter("locks", c, optarg, &lo_opts.filt))
            continue;
        switch (c) {
        case 's': {
            unsigned k = 0;
            while (k < sizeof(sorts) / sizeof(sorts[0]) && strcmp(optarg, sorts[k]))
                k++;
            if (k == sizeof(sorts) / sizeof(sorts[0]))
                rp_usage_die("locks",
                             "--sort %s: expected wait, hold, acquisitions, contended or name",
                             optarg);
            sort = (enum rp_locks_sort)k;
            break;
        }
        case 'f':
            format = optarg;
            if (strcmp(format, "table") && strcmp(format, "json"))
                rp_usage_die("locks", "--format %s: expected table or json", format);
            break;
        case RP_OPT_THREAD:
            lo_opts.replay.tid = rp_opt_tid("--thread", optarg);
            break;
        case RP_OPT_FORCE:
            lo_opts.replay.force = 1;
            break;
        case RP_OPT_NO_COMP:
        case 'M':
            rp_opt_compensate("locks", c == 'M' ? optarg : NULL, &lo_opts.replay);
            break;
        case 'R':
            lo_opts.flag.contended_ratio = rp_opt_double("--contended-ratio", optarg, 0, 1e12);
            break;
        case 'h':
            rp_help("locks");
        default:
            rp_usage_die("locks", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    rp_opt_input_args("locks", optind, argc, argv, &lo_opts);

    struct rp_profile p = {0};
    struct rp_locks L = {0};
    char err[768];
    lo_opts.keep_maps = 1; /* rp_locks_build reads the files again */
    rp_load(&lo_opts, &p);
    struct rp_span_filter f;
    uint8_t *mark = NULL;
    if (lo_opts.filt.first) { /* (by the merged profile's nodes, as the walk gives them) */
        mark = rp_filter_make(&lo_opts.filt, &p, &f);
        L.filter = &f;
    }
    int rc = rp_locks_build(&L, lo_opts.input, &lo_opts.replay, &p, sort, err, sizeof(err));
    free(mark);
    if (rc < 0)
        rp_die("%s", err[0] ? err : rp_strerror(rc));
    rc = !strcmp(format, "json") ? rp_locks_json(stdout, &L, &p) : rp_locks_table(stdout, &L, &p);
    if (rc == 0 && fflush(stdout) != 0)
        rc = RP_EIO;
    rp_locks_free(&L);
    rp_profile_free(&p);
    if (rc < 0)
        rp_die("writing the lock profile: %s", rp_strerror(rc));
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * cmd_export.c - `rankprof export --format F [-o OUT]`: writes the trace in a
 * format another tool reads (src/report/export.h has the table).
 *
 * The output is written to OUT.tmp.PID and renamed to OUT only when the
 * format succeeded and every byte reached the file, so a failed export never
 * leaves a half-written file under the name a viewer would open (an OUT
 * that is not a regular file, such as /dev/null, is written directly).
 * Without -o (or with -o -) the output goes to stdout, except binary
 * formats to a terminal.
 */
#define _GNU_SOURCE /* F_SETPIPE_SZ */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "common/error.h"
#include "report/export.h"
#include "report/names.h"

#define MAX_PARAMS 32
#define MAX_NAMES  64

/* long-only options' codes, clear of the short letters and RP_OPT_* */
enum { OPT_FORCE = 0x200, OPT_NO_COMP, OPT_COMP, OPT_THREAD, OPT_TITLE, OPT_WEIGHT, OPT_ALPHA };

static void formats_help(FILE *f)
{
    fprintf(f, "formats:\n");
    for (const struct rp_export_format *e = rp_export_formats; e->name; e++)
        fprintf(f, "  %-11s .%-10s %s\n", e->name, e->ext, e->help);
}

static void die_format(const char *name)
{
    fprintf(stderr, "rankprof: export --format %s: unknown format\n", name);
    formats_help(stderr);
    exit(2);
}

struct export_args {
    struct rp_load_opts load;
    struct rp_report_opts report;
    const struct rp_export_format *fmt;
    const char *output; /* NULL: standard output */
    int dash;           /* -o - was given */
    const char *title;
    const char *params[MAX_PARAMS];
    unsigned n_params;
    struct rp_filter_args filt; /* -D, -t, -F, -N, -r: of the span walk only */
};

static void parse(int argc, char **argv, struct export_args *a)
{
    static const struct option lo[] = {RP_INPUT_LONGOPTS,
                                       {"output", required_argument, NULL, 'o'},
                                       {"format", required_argument, NULL, 'f'},
                                       {"force", no_argument, NULL, OPT_FORCE},
                                       {"no-compensate", no_argument, NULL, OPT_NO_COMP},
                                       {"compensate", required_argument, NULL, OPT_COMP},
                                       {"thread", required_argument, NULL, OPT_THREAD},
                                       {"limit", required_argument, NULL, 'n'},
                                       {"title", required_argument, NULL, OPT_TITLE},
                                       {"weight", required_argument, NULL, OPT_WEIGHT},
                                       {"alpha", required_argument, NULL, OPT_ALPHA},
                                       RP_FILTER_LONGOPTS,
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "i:o:f:n:O:h" RP_FILTER_SHORTOPTS, lo, NULL)) != -1) {
        if (rp_opt_input("export", c, optarg, &a->load) ||
            rp_opt_filter("export", c, optarg, &a->filt))
            continue;
        switch (c) {
        case 'o': /* "-": standard output, as without -o */
            a->output = strcmp(optarg, "-") ? optarg : NULL;
            a->dash = !a->output;
            break;
        case 'f':
            if (!(a->fmt = rp_export_find(optarg)))
                die_format(optarg);
            break;
        case OPT_FORCE:
            a->load.replay.force = 1;
            break;
        case OPT_NO_COMP:
        case OPT_COMP:
            rp_opt_compensate("export", c == OPT_COMP ? optarg : NULL, &a->load.replay);
            break;
        case OPT_THREAD:
            a->load.replay.tid = rp_opt_tid("--thread", optarg);
            break;
        case 'n':
            a->report.limit = (uint32_t)rp_opt_u64("--limit", optarg);
            break;
        case OPT_TITLE:
            a->title = optarg;
            break;
        case OPT_WEIGHT:
            a->load.weight = rp_opt_weight("export", optarg);
            break;
        case OPT_ALPHA:
            a->load.rank_opt.alpha = rp_opt_double("--alpha", optarg, 0, 0.999999);
            break;
        case 'O':
            if (!strchr(optarg, '='))
                rp_usage_die("export", "-O %s: expected KEY=VALUE", optarg);
            if (a->n_params == MAX_PARAMS)
                rp_usage_die("export", "-O: at most %d of them", MAX_PARAMS);
            a->params[a->n_params++] = optarg;
            break;
        case 'h':
            rp_help_print("export");
            printf("\n");
            formats_help(stdout);
            exit(fflush(stdout) == 0 ? 0 : 1);
        default:
            rp_usage_die("export", "unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    rp_opt_input_args("export", optind, argc, argv, &a->load);
    if (!a->fmt) {
        fprintf(stderr, "rankprof: export needs --format\n");
        formats_help(stderr);
        exit(2);
    }
    if (a->fmt->needs & RP_EXPORT_UNAVAILABLE)
        rp_die("export --format %s: unavailable: this rankprof was built without libotf2 "
               "(install libotf2-trace-dev, e.g. `scripts/deps.sh build`, and rebuild)",
               a->fmt->name);
    if ((a->fmt->needs & RP_EXPORT_DIR) && !a->output)
        rp_usage_die("export", "--format %s writes a directory: give -o DIR%s", a->fmt->name,
                     a->dash ? " (not -)" : "");
    if ((a->fmt->needs & RP_EXPORT_DIR) && access(a->output, F_OK) == 0)
        rp_die("export --format %s: %s exists: the archive is written to a new directory "
               "(remove it or give another -o)",
               a->fmt->name, a->output);
    if (a->filt.first && !(a->fmt->needs & RP_EXPORT_FILTER))
        rp_usage_die("export",
                     "--format %s does not take %s (chrome, perfetto, folded, flamegraph, "
                     "pprof and html do)",
                     a->fmt->name, a->filt.first);
}

/*
 * Widens f's pipe, when f is one, to the most an unprivileged process may
 * ask (fs.pipe-max-size, 1 MiB by default; 64 KiB otherwise): a timeline
 * export writes gigabytes, and through a 64 KiB pipe every 64 KiB is a
 * context switch to the reader and back.  Failing changes nothing.
 */
static void widen_pipe(FILE *f)
{
#ifdef F_SETPIPE_SZ
    struct stat st;
    int fd = fileno(f);

    if (fd >= 0 && fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode))
        (void)fcntl(fd, F_SETPIPE_SZ, 1 << 20);
#else
    (void)f;
#endif
}

/*
 * Opens the temporary file beside output, or stdout; or output itself when
 * it exists and is not a regular file (/dev/null, a fifo: never renamed
 * over), in which case tmp is left empty.  Dies on failure.
 */
static FILE *open_out(const struct export_args *a, char *tmp, size_t tmpsz)
{
    struct stat st;

    tmp[0] = 0;
    if (!a->output) {
        if ((a->fmt->needs & RP_EXPORT_BINARY) && isatty(1))
            rp_die("export --format %s writes binary data: give -o FILE or redirect stdout",
                   a->fmt->name);
        widen_pipe(stdout);
        return stdout;
    }
    if (stat(a->output, &st) == 0 && !S_ISREG(st.st_mode)) {
        FILE *f = fopen(a->output, "wb");
        if (!f)
            rp_die("%s: cannot open: %s", a->output, strerror(errno));
        widen_pipe(f);
        return f;
    }
    snprintf(tmp, tmpsz, "%s.tmp.%ld", a->output, (long)getpid());
    FILE *f = fopen(tmp, "wb");
    if (!f)
        rp_die("%s: cannot create: %s", tmp, strerror(errno));
    return f;
}

/* A Chrome JSON export larger than this gets a warning. */
#define CHROME_BIG (256ll << 20)

int cmd_export(int argc, char **argv)
{
    struct export_args a = {0};
    char tmp[4096], err[1024] = "";

    rp_load_opts_default(&a.load);
    a.report.sort = RP_SORT_RANK;
    a.report.chains = 1;
    parse(argc, argv, &a);

    struct rp_profile p = {0};
    unsigned needs = a.fmt->needs;
    /* the formats that read the files again need the id maps of a run's set */
    a.load.keep_maps = strcmp(a.fmt->name, "json") && strcmp(a.fmt->name, "csv") &&
                       strcmp(a.fmt->name, "callgrind");
    /* a timeline shows each span by its name, the copies of an inline
     * function alike: one file's ids stay the file's, and its walk parallel
     * (export_tlpar.c) */
    a.load.no_fold = !strcmp(a.fmt->name, "chrome") || !strcmp(a.fmt->name, "perfetto");
    if (needs & (RP_EXPORT_PROFILE | RP_EXPORT_RANK)) {
        a.load.rank = !!(needs & RP_EXPORT_RANK);
        a.load.replay.defs_only = !!(needs & RP_EXPORT_WALK); /* (one file: main.c) */
        rp_load(&a.load, &p);
    }
    a.report.ranked = a.report.flagged = !!(needs & RP_EXPORT_RANK);
    a.report.flag = &a.load.flag;

    struct rp_span_filter filter = {0};
    uint8_t *mark = NULL;
    if (a.filt.first) {
        mark = rp_filter_make(&a.filt, &p, &filter);
        rp_filter_check("export", &a.filt);
    }
    struct rp_export_ctx ctx = {
        .filter = a.filt.first ? &filter : NULL,
        .input = a.load.input,
        .replay = &a.load.replay,
        .p = needs & (RP_EXPORT_PROFILE | RP_EXPORT_RANK) ? &p : NULL,
        .report = &a.report,
        .title = a.title,
        .progress = isatty(2),
        .params = a.params,
        .output = a.output,
        .n_params = a.n_params,
        .err = err,
        .errsz = sizeof(err),
    };
    tmp[0] = 0;
    FILE *out = needs & RP_EXPORT_DIR ? NULL : open_out(&a, tmp, sizeof(tmp));
    int rc = a.fmt->run(out, &ctx);
    /* a write error, and why when this thread's own flush or close says
     * it (an earlier write's errno, maybe another thread's, is gone) */
    int werr = out && ferror(out), weno = 0;
    if (out && fflush(out) != 0) {
        werr = 1;
        weno = errno;
    }
    off_t size = out && rc == 0 && !werr ? ftello(out) : -1; /* (-1 on a pipe) */
    if (out && out != stdout && fclose(out) != 0) {
        werr = 1;
        weno = weno ? weno : errno;
    }
    rp_profile_free(&p);
    free(mark);
    if (rc == 0 && werr)
        rc = RP_EIO;
    if (rc < 0) {
        if (tmp[0])
            unlink(tmp);
        if (err[0])
            rp_die("export --format %s: %s", a.fmt->name, err);
        rp_die("export --format %s: writing %s: %s", a.fmt->name, a.output ? a.output : "stdout",
               rc == RP_EIO && weno ? strerror(weno) : rp_strerror(rc));
    }
    if (tmp[0] && rename(tmp, a.output) != 0) {
        int e = errno;
        unlink(tmp);
        rp_die("%s: cannot rename %s to it: %s", a.output, tmp, strerror(e));
    }
    /* Chrome's JSON takes about 90 bytes a call, perfetto's protobuf 6.5
     * (docs/performance.md, "Exports"): a viewer may not open the former */
    if (!strcmp(a.fmt->name, "chrome") && size > CHROME_BIG)
        rp_warn("export --format chrome: wrote %.0f MB of JSON; --format perfetto writes the "
                "same timeline in about a tenth of that, and -t DUR, -D N or -F NAME keep less "
                "(docs/exports.md)",
                (double)size / 1e6);
    return 0;
}

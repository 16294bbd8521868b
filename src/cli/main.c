/*
 * main.c - the `rankprof` command: picks the subcommand and holds what the
 * subcommands share (messages, option parsing helpers, loading a trace).
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "common/error.h"
#include "trace/format.h"

static const struct rp_cmd commands[] = {
    {"record", cmd_record,
     "record [-o FILE] [--mode trace|direct] [--print] [--classes LIST] [--drop]\n"
     "                [--throttle[=CALLS:NS]] [--force] -- PROGRAM [ARGS...]"},
    {"report", cmd_report,
     "report [-i FILE] [--sort rank|self|total|calls|max] [--weight time|calls] [--alpha A]\n"
     "                [--limit N] [--format table|json|csv] [--thread TID] [--force]\n"
     "                [--threshold KEY=VALUE]... [--color] [--wide] [--no-chains]\n"
     "                [--no-compensate]"},
    {"graph", cmd_graph, "graph [-i FILE] [--no-compensate] NAME"},
    {"locks", cmd_locks,
     "locks [-i FILE] [--format table|json] [--sort wait|hold|acquisitions|contended|name]\n"
     "                [--thread TID] [--contended-ratio R] [--force] [--no-compensate]"},
    {"export", cmd_export,
     "export --format FORMAT [-o OUT] [-i FILE] [--force] [--thread TID] [--limit N]\n"
     "                [--title T] [--weight time|calls] [--alpha A] [-O KEY=VALUE]...\n"
     "                [--no-compensate]\n"
     "                (`rankprof export --help` lists the formats)"},
    {"info", cmd_info, "info [-i FILE] [--force]"},
    {"dump", cmd_dump, "dump [-i FILE] [--force]"},
};

#define NCMDS (sizeof(commands) / sizeof(commands[0]))

void rp_die(const char *fmt, ...)
{
    va_list ap;
    fflush(stdout);
    fputs("rankprof: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    exit(1);
}

void rp_usage_die(const char *cmd, const char *fmt, ...)
{
    va_list ap;
    fputs("rankprof: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    for (size_t i = 0; i < NCMDS; i++)
        if (cmd && !strcmp(cmd, commands[i].name))
            fprintf(stderr, "usage: rankprof %s\n", commands[i].usage);
    exit(2);
}

void rp_warn(const char *fmt, ...)
{
    va_list ap;
    fputs("rankprof: warning: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

double rp_opt_double(const char *opt, const char *val, double lo, double hi)
{
    char *end;
    errno = 0;
    double v = strtod(val, &end);
    if (errno || end == val || *end || !isfinite(v) || v < lo || v > hi)
        rp_die("option %s: '%s' is not a number in [%g, %g]", opt, val, lo, hi);
    return v;
}

uint64_t rp_opt_u64(const char *opt, const char *val)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || end == val || *end || val[0] == '-')
        rp_die("option %s: '%s' is not a non-negative integer", opt, val);
    return v;
}

uint32_t rp_opt_tid(const char *opt, const char *val)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10), g = 0;
    if (!errno && end != val && *end == '#' && val[0] != '-') { /* TID#G */
        const char *gs = end + 1;
        g = strtoull(gs, &end, 10);
        if (errno || end == gs || *end || *gs == '-' || g > RP_GEN_MAX || !v || v > RP_TID_MASK)
            rp_die("option %s: '%s' is not a thread (TID or TID#GENERATION)", opt, val);
        return (uint32_t)v | (uint32_t)g << RP_TID_BITS;
    }
    if (errno || end == val || *end || val[0] == '-' || v > UINT32_MAX)
        rp_die("option %s: '%s' is not a thread (TID or TID#GENERATION)", opt, val);
    return (uint32_t)v;
}

int rp_parse_input_opts(const char *cmd, const char *help, int argc, char **argv,
                        const char **input, struct rp_replay_opts *o)
{
    static const struct option lo[] = {
        {"input", required_argument, NULL, 'i'},   {"force", no_argument, NULL, 'F'},
        {"no-compensate", no_argument, NULL, 'N'}, {"compensate", required_argument, NULL, 'M'},
        {"help", no_argument, NULL, 'h'},          {NULL, 0, NULL, 0}};
    int c;

    opterr = 0;
    while ((c = getopt_long(argc, argv, "i:h", lo, NULL)) != -1) {
        if (c == 'i')
            *input = optarg;
        else if (c == 'F')
            o->force = 1;
        else if (c == 'N' || c == 'M')
            rp_opt_compensate(cmd, c == 'M' ? optarg : NULL, o);
        else if (c == 'h')
            rp_usage_die(cmd, "%s", help);
        else
            rp_usage_die(cmd, "unknown or incomplete option '%s'", argv[optind - 1]);
    }
    return optind;
}

void rp_opt_compensate(const char *cmd, const char *val, struct rp_replay_opts *o)
{
    if (!val || !strcmp(val, "off") || !strcmp(val, "no") || !strcmp(val, "0"))
        o->no_compensate = 1;
    else if (!strcmp(val, "on") || !strcmp(val, "yes") || !strcmp(val, "1"))
        o->no_compensate = 0;
    else
        rp_usage_die(cmd, "--compensate %s: expected on or off", val);
}

void rp_load_opts_default(struct rp_load_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->input = RP_DEFAULT_DATA;
    o->rank = 1;
    o->rank_opt.alpha = 0.01;
    o->rank_opt.tol = 1e-12;
    o->rank_opt.max_iter = 10000;
    rp_flag_opts_default(&o->flag);
}

/*
 * Whether the executable at path calls the -finstrument-functions hooks:
 * 1 if the name __cyg_profile_func_enter is in it (its dynamic symbols),
 * 0 if not, -1 if it cannot be read (another machine's path).
 */
static int refs_cyg(const char *path)
{
    static const char name[] = "__cyg_profile_func_enter";
    enum { N = sizeof(name) - 1 };
    char buf[65536];
    size_t have = 0, got;
    int found = 0;
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    while (!found && (got = fread(buf + have, 1, sizeof(buf) - have, f)) > 0) {
        have += got;
        found = memmem(buf, have, name, N) != NULL;
        size_t k = have < N - 1 ? have : N - 1; /* a name across two reads */
        memmove(buf, buf + have - k, k);
        have = k;
    }
    fclose(f);
    return found;
}

void rp_load(const struct rp_load_opts *o, struct rp_profile *p)
{
    char err[768];
    int rc = rp_replay_file(o->input, &o->replay, p, NULL, NULL, err, sizeof(err));
    if (rc < 0)
        rp_die("%s", err);
    if (p->warn[0]) {
        char *s = p->warn, *nl;
        while ((nl = strchr(s, '\n'))) {
            *nl = 0;
            rp_warn("%s", s);
            *nl = '\n';
            s = nl + 1;
        }
    }
    if (!p->events) {
        int inst = p->program ? refs_cyg(p->program) : -1;
        if (inst == 0)
            rp_warn("%s holds no events: %s has no -finstrument-functions hooks (build it with "
                    "-finstrument-functions, or use the rankprof macros)",
                    o->input, p->program);
        else
            rp_warn("%s holds no events: the program made no recorded call before the recording "
                    "ended%s",
                    o->input, p->warn[0] ? " (see the warnings above)" : "");
    }
    if ((rc = rp_profile_symbolize(p)) < 0)
        rp_die("%s: naming functions: %s", o->input, rp_strerror(rc));
    if (o->rank) {
        p->rank.weight_calls = o->weight_calls;
        if ((rc = rp_rank_profile(p, &o->rank_opt)) < 0)
            rp_die("%s: ranking: %s", o->input, rp_strerror(rc));
        if ((rc = rp_flags_apply(p, &o->flag)) < 0)
            rp_die("%s: flags: %s", o->input, rp_strerror(rc));
    }
}

static void usage(FILE *f)
{
    fprintf(f, "usage: rankprof COMMAND [OPTIONS]\n\n"
               "rankprof records C programs and ranks their procedures, locks and devices\n"
               "by standing probability.  Commands:\n\n");
    for (size_t i = 0; i < NCMDS; i++)
        fprintf(f, "  rankprof %s\n", commands[i].usage);
    fprintf(f, "\nThe trace file is %s unless -i/-o says otherwise.  See docs/.\n",
            RP_DEFAULT_DATA);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        puts("rankprof 0.1.0");
        return 0;
    }
    for (size_t i = 0; i < NCMDS; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].run(argc - 1, argv + 1);
    fprintf(stderr, "rankprof: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}

// SPDX-License-Identifier: MIT
/*
 * cli.h - what the `rankprof` subcommands share: one signature per command
 * (cmd_*.c), the messages, and loading a trace into an analysed profile.
 */
#ifndef RP_CLI_H
#define RP_CLI_H

#include <stdint.h>
#include <stdio.h>

#include "analyze/flags.h"
#include "analyze/profile.h"
#include "analyze/rank.h"
#include "analyze/replay.h"
#include "report/util.h" /* rp_fmt_ns */

#define RP_DEFAULT_DATA "rankprof.data"

struct rp_cmd {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *usage;
};

int cmd_record(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_locks(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_dump(int argc, char **argv);
int cmd_diff(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_tui(int argc, char **argv);
int cmd_ctl(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_top(int argc, char **argv);

/* The control page of process pid (src/trace/control.h), mapped read-only;
 * dies saying why there is none (cmd_ctl.c). */
struct rp_ctl_page;
const struct rp_ctl_page *rp_ctl_page_of(long pid);
/* Asks pid for a statistics file (RP_CTL_PUBLISH, RP_CTL_SNAPSHOT) and
 * waits until it is written: 0, or -1 when the process ended first; dies
 * saying why when it cannot (cmd_ctl.c). */
int rp_ctl_stats(long pid, const struct rp_ctl_page *pg, int cmd);

/* The usage line of cmd (after "rankprof "), or NULL for no such command. */
const char *rp_cmd_usage(const char *cmd);

/* `rankprof CMD --help`: the usage line, what CMD does and what each of
 * its options means, on stdout; exits 0 (1 when stdout cannot be written). */
__attribute__((noreturn)) void rp_help(const char *cmd);
/* The same text, without exiting (a command that adds to it). */
void rp_help_print(const char *cmd);

/* cmd's man page (NULL: rankprof(1)) in roff on f.  Returns 0, or -1 for
 * an unknown command or a failed write. */
int rp_man(FILE *f, const char *cmd);

/* Writes every man page (rankprof.1, rankprof-CMD.1) into the directory
 * dir, creating it.  Returns 0, or -1 with a message on stderr. */
int rp_man_dir(const char *dir);

/* Prints "rankprof: <message>" on stderr and exits with status 1 (2 for usage). */
__attribute__((noreturn, format(printf, 1, 2))) void rp_die(const char *fmt, ...);
__attribute__((noreturn, format(printf, 2, 3))) void rp_usage_die(const char *cmd, const char *fmt,
                                                                  ...);
__attribute__((format(printf, 1, 2))) void rp_warn(const char *fmt, ...);

/* Which files a reader command reads (docs/robustness.md, "One file per
 * process"): the run's set of -i FILE (the default), the files -i names when
 * it is repeated, one of them (--process), or FILE alone (--one-file). */
#define RP_MAX_INPUTS 256
struct rp_input_opts {
    const char *files[RP_MAX_INPUTS]; /* every -i, in order */
    unsigned n_files;
    const char *process; /* --process PID|FILE, or NULL */
    const char *rank;    /* --rank R: the processes whose INFO rank is R, or NULL */
    int one_file;        /* --one-file */
};

/* The span filters (filter.c, docs/filters.md) as given. */
#define RP_FILTER_MAX_NAMES 64
struct rp_filter_args {
    const char *inc[RP_FILTER_MAX_NAMES], *exc[RP_FILTER_MAX_NAMES]; /* -F, -N */
    unsigned n_inc, n_exc;
    uint8_t inc_found[RP_FILTER_MAX_NAMES], exc_found[RP_FILTER_MAX_NAMES]; /* by the loads */
    uint32_t depth;                                                         /* -D; 0 = none */
    double min_ns;                                                          /* -t; 0 = none */
    int range;             /* -r FROM~TO given: ns after each process's first event */
    double from_ns, to_ns; /* (to_ns INFINITY: to the end) */
    const char *first;     /* the first filter option given, NULL = none */
    char desc[512];        /* the filter options as given ("-F a -t 1us"), for the report */
};

/* The short and long options of rp_opt_filter, for getopt_long. */
#define RP_FILTER_SHORTOPTS "F:N:D:t:r:"
#define RP_FILTER_LONGOPTS                                                                         \
    {"function", required_argument, NULL, 'F'}, {"filter", required_argument, NULL, 'F'},          \
        {"exclude", required_argument, NULL, 'N'}, {"notrace", required_argument, NULL, 'N'},      \
        {"depth", required_argument, NULL, 'D'}, {"min-duration", required_argument, NULL, 't'},   \
        {"time-filter", required_argument, NULL, 't'},                                             \
    {                                                                                              \
        "time-range", required_argument, NULL, 'r'                                                 \
    }

/* Reads one filter option (c from RP_FILTER_*OPTS) into f.  Returns 1 when
 * c was one, 0 otherwise.  Dies (usage) on a bad value. */
int rp_opt_filter(const char *cmd, int c, const char *val, struct rp_filter_args *f);

/* A duration: a number and a unit, ns, us, ms or s (ns when none), in ns.
 * Dies (usage) naming cmd and opt on anything else. */
double rp_opt_duration(const char *cmd, const char *opt, const char *val);

/* The filter of a for one file's replay, from p, that file's unfiltered
 * profile (named): *f, whose mark is returned (free it after the replay).
 * Records in a which names named a node.  Dies when out of memory. */
uint8_t *rp_filter_make(struct rp_filter_args *a, const struct rp_profile *p,
                        struct rp_span_filter *f);

/* Dies naming the first -F or -N name that named no node of any file. */
void rp_filter_check(const char *cmd, const struct rp_filter_args *a);

/* What loading does beyond the replay. */
struct rp_load_opts {
    const char *input; /* -i (the first), else RP_DEFAULT_DATA; after rp_load: the file read,
                          when it read one */
    struct rp_input_opts in;
    struct rp_replay_opts replay;
    int rank; /* compute the ranking */
    struct rp_rank_opts rank_opt;
    int weight;                 /* enum rp_weight */
    struct rp_flag_opts flag;   /* thresholds; flags computed when rank is */
    int no_names;               /* one file: do not name its functions (info: their names
                                   are not shown); a run's files are always named, to merge */
    int keep_maps;              /* a run's set: keep the id maps the second passes over its
                                   files need (locks, the exports that walk events) */
    int no_fold;                /* one file: keep the copies of an inline function apart
                                   (the timelines, whose spans show names, not nodes) */
    struct rp_filter_args filt; /* the spans counted: -F, -N, -D, -t, -r */
    const char *cmd;            /* the command, for messages (filters) */
    rp_chunk_fn chunk_fn;       /* when set, called for every chunk of every file read */
    void *chunk_ctx;
    int quiet; /* no warnings on stderr (a live view reading it again) */
};

void rp_load_opts_default(struct rp_load_opts *o);

/*
 * Replays, names and (if asked) ranks and flags the trace; dies with a
 * message naming the file on any error.  Warnings go to stderr.
 */
void rp_load(struct rp_load_opts *o, struct rp_profile *p);

/*
 * What rp_load does after the replay of the single file o->input, for a
 * profile p replayed elsewhere (top's live reading, src/analyze/live.h):
 * names, warnings (unless quiet), the process of the set's file f (given
 * to p), hints, ranking and flags.  No span filters.  Dies on any error.
 */
struct rp_set_file;
void rp_load_replayed(struct rp_load_opts *o, struct rp_profile *p, struct rp_set_file *f);

/*
 * The arguments argv[first..argc) as traces, as if each were given with -i
 * (`rankprof report run.data`).  Dies (usage) past RP_MAX_INPUTS files.
 */
void rp_opt_input_args(const char *cmd, int first, int argc, char **argv, struct rp_load_opts *o);

/*
 * Reads one option of the input family into o: 'i' (-i FILE, repeatable),
 * RP_OPT_PROCESS (--process), RP_OPT_ONE_FILE (--one-file).  Returns 1
 * when c was one of them, 0 otherwise.  Dies (usage) after RP_MAX_INPUTS
 * files.
 */
int rp_opt_input(const char *cmd, int c, const char *val, struct rp_load_opts *o);

/* The long options rp_opt_input reads, for a getopt_long table (values above
 * any short option's). */
enum {
    RP_OPT_PROCESS = 0x100,
    RP_OPT_ONE_FILE,
    RP_OPT_THREAD,
    RP_OPT_FORCE,
    RP_OPT_NO_COMP,
    RP_OPT_RANK = 0x1f0,
    RP_OPT_OUTSIDE /* --outside (report, graph, tui, diff): replay keep_outside */
};
#define RP_INPUT_LONGOPTS                                                                          \
    {"input", required_argument, NULL, 'i'}, {"process", required_argument, NULL, RP_OPT_PROCESS}, \
        {"rank", required_argument, NULL, RP_OPT_RANK},                                            \
    {                                                                                              \
        "one-file", no_argument, NULL, RP_OPT_ONE_FILE                                             \
    }

/*
 * The files o asks for, into *s (free with rp_set_free): the set of
 * o->input (set.h), or only it (--one-file), the -i files when there are
 * several, narrowed by --process (every file of that pid: one per image
 * when it exec'd).  Warns about the files of NAME.PID form it leaves out.
 * Dies naming the file or the option on any error; a --process that names
 * no process of the set lists those there are.
 */
struct rp_set;
void rp_find_inputs(struct rp_load_opts *o, struct rp_set *s);

/*
 * Parses the options of the commands that only read a trace (info, dump,
 * graph, tui): -i FILE, --process, --one-file, --force and --[no-]compensate,
 * with `filters` & 1 the span filters (rp_opt_filter), with `filters` & 2
 * --outside.  Sets o->input, o->in, o->replay's force, no_compensate and
 * keep_outside and o->filt; returns optind (the first operand).  Dies on
 * anything else, naming the option.
 */
int rp_parse_input_opts(const char *cmd, int argc, char **argv, struct rp_load_opts *o,
                        int filters);

/*
 * --compensate=on|off (val) or --no-compensate (val NULL): whether the
 * analysis subtracts the recorder's own cost (on by default).  Dies on any
 * other value, naming the command.
 */
void rp_opt_compensate(const char *cmd, const char *val, struct rp_replay_opts *o);

/* --weight time|calls|cpu (val): the ranking's weight, enum rp_weight.
 * Dies on any other value, naming the command. */
int rp_opt_weight(const char *cmd, const char *val);

/* Parses a double / unsigned option value or dies naming the option. */
double rp_opt_double(const char *opt, const char *val, double lo, double hi);
uint64_t rp_opt_u64(const char *opt, const char *val);

/*
 * Parses a --thread value or dies naming the option: a kernel tid ("4711":
 * every thread that had it), "TID#G" (its G-th reuse, as `info` shows it)
 * or a stream id (docs/trace-format.md 4.4).  Returns the filter value.
 */
uint32_t rp_opt_tid(const char *opt, const char *val);

#endif /* RP_CLI_H */

/*
 * cli.h - what the `rankprof` subcommands share: one signature per command
 * (cmd_*.c), the messages, and loading a trace into an analysed profile.
 */
#ifndef RP_CLI_H
#define RP_CLI_H

#include <stdint.h>

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

/* Prints "rankprof: <message>" on stderr and exits with status 1 (2 for usage). */
__attribute__((noreturn, format(printf, 1, 2))) void rp_die(const char *fmt, ...);
__attribute__((noreturn, format(printf, 2, 3))) void rp_usage_die(const char *cmd, const char *fmt,
                                                                  ...);
__attribute__((format(printf, 1, 2))) void rp_warn(const char *fmt, ...);

/* What loading does beyond the replay. */
struct rp_load_opts {
    const char *input;
    struct rp_replay_opts replay;
    int rank; /* compute the ranking */
    struct rp_rank_opts rank_opt;
    int weight_calls;
    struct rp_flag_opts flag; /* thresholds; flags computed when rank is */
};

void rp_load_opts_default(struct rp_load_opts *o);

/*
 * Replays, names and (if asked) ranks and flags the trace; dies with a
 * message naming the file on any error.  Warnings go to stderr.
 */
void rp_load(const struct rp_load_opts *o, struct rp_profile *p);

/*
 * Parses the options of the commands that only read a trace (info, dump,
 * graph): -i FILE, --force and --[no-]compensate.  Sets *input and o->force,
 * o->no_compensate; returns optind
 * (the first operand).  Dies on anything else, naming the option.
 */
int rp_parse_input_opts(const char *cmd, const char *help, int argc, char **argv,
                        const char **input, struct rp_replay_opts *o);

/*
 * --compensate=on|off (val) or --no-compensate (val NULL): whether the
 * analysis subtracts the recorder's own cost (on by default).  Dies on any
 * other value, naming the command.
 */
void rp_opt_compensate(const char *cmd, const char *val, struct rp_replay_opts *o);

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

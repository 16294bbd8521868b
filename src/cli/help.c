// SPDX-License-Identifier: MIT
/*
 * help.c - what each subcommand does and what each of its options means:
 * `rankprof CMD --help` prints it, `rankprof --man [CMD]` writes it as a
 * man page (roff), which the build installs (one text, two forms).  The
 * synopsis is the usage line of main.c's command table.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"

struct opt_help {
    const char *opt, *meaning;
};

struct cmd_help {
    const char *name, *summary, *description;
    struct opt_help opts[32]; /* ends at a NULL opt */
    const char *exit_status;
};

#define INPUT_OPTS                                                                                 \
    {"-i, --input FILE",                                                                           \
     "the trace (default rankprof.data), read with the other files of its run (the "               \
     "processes it forked or exec'd: FILE.PID); a trace named without -i is read the same; "       \
     "given more than once, exactly those files, merged"},                                         \
        {"--process PID|FILE", "only the process PID (every image it exec'd), or that one file "   \
                               "of the run"},                                                      \
        {"--rank R", "only the processes of MPI rank R (INFO rank, from the launcher)"},           \
        {"--one-file", "only the file -i names, not the rest of its run"},                         \
    {                                                                                              \
        "--force", "analyse a damaged or cut trace up to the damage (and a file of the run that "  \
                   "is cut), with a warning"                                                       \
    }
#define COMP_OPT                                                                                   \
    {                                                                                              \
        "--no-compensate", "show the measured times, without subtracting the recorder's own "      \
                           "cost per event (--compensate=off is the same)"                         \
    }
#define OUTSIDE_OPT                                                                                \
    {                                                                                              \
        "--outside", "count the waits, lock waits, holds and off-CPU time with no code of the "    \
                     "program below them (a library's own threads, start-up and exit, inside a "   \
                     "blocking call) as the program's, as calls from the root"                     \
    }
#define TID_OPT                                                                                    \
    {                                                                                              \
        "--thread TID", "only thread TID (TID#G: the G-th thread that reused that tid)"            \
    }

/* The span filters (filter.c, docs/filters.md). */
#define FILTER_OPTS                                                                                \
    {"-F, --function NAME", "only NAME's spans and what they call (whole or short names, globs; "  \
                            "repeatable; --filter is the same)"},                                  \
        {"-N, --exclude NAME", "not NAME's spans nor what they call (repeatable; --notrace is "    \
                               "the same); a left-out span's time is its nearest kept caller's "   \
                               "own time"},                                                        \
        {"-D, --depth N", "only spans at most N deep among the kept ones (1: the outermost)"},     \
        {"-t, --min-duration DUR", "only spans lasting at least DUR (500ns, 10us, 2ms, 1s)"},      \
    {                                                                                              \
        "-r, --time-range FROM~TO", "only spans that begin between FROM and TO after the "         \
                                    "process's first event (1s~2.5s, 300ms~, ~1s)"                 \
    }

static const struct cmd_help helps[] = {
    {"record",
     "run a program under the recorder",
     "Runs PROGRAM with the recorder preloaded and writes the trace (or, in direct mode, the "
     "statistics) to FILE. The program needs -finstrument-functions for its functions, or the "
     "macros of rankprof.h; locks and blocking calls are recorded without either. Ctrl-C, "
     "SIGTERM and SIGHUP go to the program; the trace keeps everything it recorded.",
     {{"-o, --output FILE", "the trace (default rankprof.data); a child process writes FILE.PID"},
      {"--mode trace|direct", "trace: every event, analysed later (default); direct: the "
                              "statistics kept in the process, a few kilobytes whatever the run"},
      {"--print", "direct mode: print the table when the program exits"},
      {"--mpi", "also preload librankprof-mpi.so: MPI calls as waits, peers and sizes, clock "
                "offsets to rank 0 (docs/multi-process.md)"},
      {"--classes LIST", "the event classes to record, e.g. func,lock or -wait (all by default: "
                         "func, point, lock, io, timer, mark, counter, wait)"},
      {"--drop", "when the writer cannot keep up, drop events (counted, shown as lost) "
                 "instead of making the program wait"},
      {"--throttle[=CALLS:NS[:K]]", "count, and record only 1 call in K of, a function once it "
                                    "has run CALLS times with a mean under NS ns (default "
                                    "100000:10000:100; K 0: count only)"},
      {"--off", "load the recorder but record nothing until `rankprof ctl PID start`"},
      {"--max-size SIZE", "keep the trace within SIZE bytes (K, M, G: binary units; at least "
                          "64K): it is written in pieces FILE.partN and FILE, the oldest deleted, "
                          "the newest kept; every command reads them as one trace"},
      {"--ring SIZE", "flight recorder: keep only the newest SIZE bytes of events (all threads, "
                      "in memory; K, M, G; at least 64K) and write them to FILE at the end, and "
                      "to FILE.snapN on `rankprof ctl PID snapshot` or a trigger"},
      {"--ring-trigger SPEC", "with --ring: write a snapshot when a span of a function or "
                              "point lasts longer than a threshold, SPEC NAME>DURATION (a name "
                              "or glob; ns, us, ms, s; e.g. 'handle_request>5ms'), rate:NAME (a "
                              "periodic NAME runs half its period or more) or 'budget' (a point "
                              "over its budget); repeatable, or comma-separated"},
      {"--ring-every SECONDS", "with --ring-trigger: at most one trigger's snapshot in SECONDS "
                               "(default 10; the others are counted)"},
      {"--ring-keep N", "with --ring: keep the newest N snapshot files FILE.snapN, delete the "
                        "older (default 16; 0: all)"},
      {"--force", "write FILE even when it is a symbolic link"},
      {"-F, --function NAME", "record only the functions NAME names (a symbol or a glob, "
                              "repeatable) and what they call (--filter is the same)"},
      {"-N, --exclude NAME", "do not record the functions NAME names nor what they call "
                             "(repeatable; --notrace is the same); waits, locks and points are "
                             "recorded as without -F and -N"},
      {NULL, NULL}},
     "the program's exit status (128 + N when signal N ended it), or 1 when it succeeded but "
     "the trace was not written whole (cannot create, disk full, a static program)"},
    {"report",
     "the ranked profile",
     "Prints every procedure, lock, device and blocking call of the run, ranked by standing "
     "probability (the stationary distribution of the call matrix), with calls, total and own "
     "time, percentiles and flags (DISPATCH, HOT, JITTER, RATE, CONTENDED, BUDGET) and why each "
     "flag was set.",
     {INPUT_OPTS,
      {"--sort rank|self|total|calls|max", "the order of the rows (default rank)"},
      {"--weight time|calls|cpu",
       "weigh the call matrix by time (default), by calls or by time on CPU"},
      {"--alpha A", "the ranking's restart probability at <root> (default 0.01)"},
      {"-n, --limit N", "at most N rows"},
      {"--format table|json|csv", "a table (default), or JSON (docs/report-json.md) or CSV"},
      TID_OPT,
      COMP_OPT,
      OUTSIDE_OPT,
      {"--threshold KEY=VALUE", "a flag threshold, e.g. hot-self=0.2 (docs/ranking.md, Flags)"},
      {"--color", "colour the flags (the default on a terminal; NO_COLOR switches it off)"},
      {"--wide", "do not fit the table to the terminal's width"},
      {"--no-chains", "one row per frame of a pass-through chain"},
      FILTER_OPTS,
      {NULL, NULL}},
     NULL},
    {"graph",
     "callers and callees of one procedure",
     "Shows who calls NAME and whom it calls, with calls, time per edge and the share of NAME's "
     "time each callee takes. NAME is a whole name or a short one (sum_dots for "
     "int geo::sum_dots<int>(int const*)).",
     {INPUT_OPTS, COMP_OPT, OUTSIDE_OPT, FILTER_OPTS, {NULL, NULL}},
     NULL},
    {"locks",
     "wait and hold per lock",
     "Prints, per lock and per call site, acquisitions, contended ones, time waited and time "
     "held, and the waits on condition variables.",
     {INPUT_OPTS,
      {"--format table|json", "a table (default) or JSON"},
      {"--sort wait|hold|acquisitions|contended|name", "the order of the rows (default wait)"},
      TID_OPT,
      {"--contended-ratio R", "the CONTENDED flag's threshold: waited / held"},
      COMP_OPT,
      FILTER_OPTS,
      {NULL, NULL}},
     NULL},
    {"export",
     "the trace for another tool",
     "Writes the run in a format another tool reads: timelines (chrome, perfetto), call paths "
     "(folded, flamegraph, callgrind, pprof), sequence diagrams (plantuml, mermaid), the report "
     "(json, csv) or one HTML page. `rankprof export --help` lists the formats.",
     {INPUT_OPTS,
      {"--format FORMAT", "the format (`rankprof export --help` lists them)"},
      {"-o, --output OUT", "the file (default, or -: standard output, but not a binary format "
                           "to a terminal); written whole or not at all"},
      TID_OPT,
      {"-n, --limit N", "the report's rows at most (json, csv, html)"},
      {"--title T", "the title of the flame graph or the page"},
      {"--weight time|calls|cpu", "as for report"},
      {"--alpha A", "as for report"},
      {"-O KEY=VALUE", "an option of the format (docs/exports.md; perfetto: compress=0|1|small)"},
      FILTER_OPTS,
      COMP_OPT,
      {NULL, NULL}},
     NULL},
    {"info",
     "what a trace holds",
     "Prints the program, the clock, the recorder's settings and measured cost, every process "
     "of the run and its threads, events, losses (by reason) and how the run ended.",
     {INPUT_OPTS, {NULL, NULL}},
     NULL},
    {"import",
     "name a bare-metal target's trace from its ELF",
     "Copies TRACE, written by the bare-metal recorder (docs/firmware.md), with a process map "
     "of ELF's executable segments at their link addresses, so that every other command names "
     "its functions from ELF (Thumb addresses included). Fails, writing nothing, when TRACE "
     "already has a map or ELF is not a static executable.",
     {{"--elf ELF", "the firmware image the target ran (static, with its symbols)"},
      {"-o, --output OUT", "the trace to write (default rankprof.data)"},
      {NULL, NULL}},
     NULL},
    {"dump",
     "every event, one per line",
     "Prints every event of the trace in file order: time, thread, what happened, with names. "
     "With filters, the enters and exits of the kept spans and the other events inside them "
     "(lost events always).",
     {INPUT_OPTS,
      {"-F, --function NAME", "only NAME's spans and what they call (repeatable)"},
      {"-N, --exclude NAME", "not NAME's spans nor what they call (repeatable)"},
      {"-D, --depth N", "only spans at most N deep among the kept ones"},
      {"-r, --time-range FROM~TO", "only spans that begin between FROM and TO after the run's "
                                   "first event (the times dump prints)"},
      {NULL, NULL}},
     NULL},
    {"replay",
     "every call as a tree, with its duration",
     "Prints each call of the trace on a line, indented under its caller, with its duration "
     "(compensated, as in the report) and thread: `name() {` when it calls something shown, "
     "closed by `} /* name */` with the duration, or `name();` with the duration when it does "
     "not. Threads come in the order the file holds their events, each line naming its thread. "
     "On a terminal the output goes through the pager ($PAGER, else less -FRX).",
     {INPUT_OPTS,
      TID_OPT,
      {"-D, --depth DEPTH", "show calls to this depth (1: the outermost only); deeper calls' "
                            "time stays in their callers'"},
      {"-t, --time-filter TIME", "show only calls at least TIME long (e.g. 10us, 2ms), with "
                                 "what they call"},
      {"-F, --filter NAME", "only NAME and what it calls (whole or short names, repeatable); "
                            "indentation starts there"},
      {"-N, --notrace NAME", "leave NAME and what it calls out (repeatable)"},
      {"--color", "colour long calls (the default on a terminal; NO_COLOR switches it off)"},
      {"--no-pager", "write to the terminal directly"},
      COMP_OPT,
      {NULL, NULL}},
     NULL},
    {"ctl",
     "switch the recording of a running process",
     "Switches recording on (start) or off (stop) in the running process PID, which has the "
     "recorder (started by `rankprof record`, with --off to start switched off, or linked with "
     "librankprof), or says whether it records (status). It returns once the process has "
     "switched: the calls made after it are recorded, or not. The frames open at a switch end "
     "there, so every window of recording is complete. Without this command, a plain signal "
     "switches over: kill -s RTMIN+8 PID (RANKPROF_CTL_SIGNAL chooses another). In direct "
     "mode, snapshot writes the statistics so far to the trace's name with .snap added, a "
     "file every command reads, and the process goes on. With a flight recorder (record "
     "--ring SIZE), snapshot writes the events the ring holds as a trace to the trace's name "
     "with .snapN added (N counts the snapshots, triggers' included; the command prints the "
     "name), and the process goes on recording.",
     {{NULL, NULL}},
     "0 when done; 1 when the process has no recorder, no control signal, or did not answer"},
    {"top",
     "watch the ranked table of a running process",
     "Shows the ranked table, with its flags, of the running process PID, refreshed every "
     "second: in direct mode (rankprof record --mode direct) from the statistics the process "
     "writes when asked (to /dev/shm/rankprof.PID.stats), with a flight recorder (record "
     "--ring) from the events its ring holds, written there the same way, in trace mode from "
     "its trace as far as it is written, reading only what is new at each refresh. q quits. "
     "With -b, prints the table on stdout each time instead (top's batch mode).",
     {{"-b, --batch", "print the tables one after the other, no screen handling"},
      {"-n, --iterations N", "stop after N tables (default: until q, or the process ends)"},
      {"-d, --delay SECONDS", "time between two tables (default 1)"},
      {"--limit N", "rows of the table (default: those that fit the terminal; all with -b)"},
      {"--no-chains", "one row per frame of a pass-through chain"},
      {NULL, NULL}},
     "0 when done; 1 when the process has no recorder, its trace cannot be read, or it did "
     "not answer"},
    {"tui",
     "browse the profile in the terminal",
     "Shows the ranked table in the terminal; Enter opens a row: its numbers, why it carries "
     "its flags, its callers and callees (Enter opens one of them), and r its calls as a tree "
     "(rankprof replay -F NAME). s changes the order, / searches a name, ? lists the keys, q "
     "goes back and quits.",
     {INPUT_OPTS, COMP_OPT, OUTSIDE_OPT, FILTER_OPTS, {NULL, NULL}},
     NULL},
    {"diff",
     "compare two runs",
     "Compares BASE and NEW procedure by procedure: own time, total, calls, time per call and "
     "standing. A row is slower or faster when its mean own time per call moved past the "
     "threshold and the Mann-Whitney U test on the two runs' times per call is confident "
     "(docs/diff.md).",
     {{"--threshold PCT", "the smallest change per call that counts (default 20%)"},
      {"--confidence C", "the test's confidence (default 0.99)"},
      {"--min-share PCT", "rows under this share of a run's own time are not judged (default "
                          "1%)"},
      {"--relative", "judge each row against the drift of the whole run (machine noise)"},
      {"--format table|json", "a table (default) or JSON"},
      {"-n, --limit N", "table rows at most (default 20, 0: all)"},
      {"--all", "the table shows unchanged rows too"},
      {"--one-file", "each trace alone, not with the rest of its run"},
      {"--force", "as for report"},
      COMP_OPT,
      OUTSIDE_OPT,
      {"--color", "colour the verdicts (the default on a terminal)"},
      FILTER_OPTS,
      {NULL, NULL}},
     "0 when nothing regressed, 3 when a row is slower, 1 on an error, 2 on a bad command line"},
};

#define NHELPS (sizeof(helps) / sizeof(helps[0]))

static const struct cmd_help *find(const char *cmd)
{
    for (size_t i = 0; i < NHELPS; i++)
        if (!strcmp(helps[i].name, cmd))
            return &helps[i];
    return NULL;
}

/* Writes s folded at width columns, each line indented by ind. */
static void fold(FILE *f, const char *s, int ind, int width)
{
    int col = 0;
    while (*s) {
        size_t w = strcspn(s, " ");
        if (col > ind && col + 1 + (int)w > width) {
            fprintf(f, "\n%*s", ind, "");
            col = ind;
        } else if (col) {
            fputc(' ', f);
            col++;
        } else {
            fprintf(f, "%*s", ind, "");
            col = ind;
        }
        fwrite(s, 1, w, f);
        col += (int)w;
        s += w;
        s += strspn(s, " ");
    }
    fputc('\n', f);
}

void rp_help(const char *cmd)
{
    rp_help_print(cmd);
    exit(fflush(stdout) == 0 ? 0 : 1);
}

void rp_help_print(const char *cmd)
{
    const struct cmd_help *h = find(cmd);
    const char *usage = rp_cmd_usage(cmd);
    if (usage)
        printf("usage: rankprof %s\n\n", usage);
    if (h) {
        fold(stdout, h->description, 0, 78);
        printf("\noptions:\n");
        for (const struct opt_help *o = h->opts; o->opt; o++) {
            printf("  %s\n", o->opt);
            fold(stdout, o->meaning, 6, 78);
        }
        printf("  -h, --help\n      this text\n");
        if (h->exit_status) {
            printf("\nexit status:\n");
            fold(stdout, h->exit_status, 2, 78);
        }
    }
}

/* Writes s for roff: a leading '.' or '\'' escaped, backslashes and
 * hyphens escaped, a line break and the spaces after it one space (the
 * usage lines' layout is the terminal's; roff fills its own). */
static void roff(FILE *f, const char *s)
{
    if (*s == '.' || *s == '\'')
        fputs("\\&", f);
    for (; *s; s++) {
        if (*s == '\\') {
            fputs("\\e", f);
        } else if (*s == '-') {
            fputs("\\-", f);
        } else if (*s == '\n') {
            fputc(' ', f);
            s += strspn(s + 1, " ");
        } else {
            fputc(*s, f);
        }
    }
}

/* "REPORT" for "report" (man page titles are upper case). */
static void upper(FILE *f, const char *s)
{
    for (; *s; s++)
        fputc(*s >= 'a' && *s <= 'z' ? *s - 'a' + 'A' : *s, f);
}

int rp_man(FILE *f, const char *cmd)
{
    const struct cmd_help *h = cmd ? find(cmd) : NULL;
    if (cmd && !h)
        return -1;
    fputs(".TH RANKPROF", f);
    if (cmd) {
        fputs("\\-", f);
        upper(f, cmd);
    }
    fputs(" 1 \"\" \"rankprof 0.1.0\" \"rankprof manual\"\n", f);
    if (!h) {
        fprintf(f, ".SH NAME\nrankprof \\- rank the procedures of a C program by standing "
                   "probability\n.SH SYNOPSIS\n");
        for (size_t i = 0; i < NHELPS; i++) {
            fputs(".br\n.B rankprof\n", f);
            roff(f, rp_cmd_usage(helps[i].name));
            fputc('\n', f);
        }
        fputs(".SH DESCRIPTION\nrankprof records C programs (functions built with "
              "\\-finstrument\\-functions, profile points, locks, blocking calls, devices) and "
              "ranks what they run by standing probability.\n.SH COMMANDS\n",
              f);
        for (size_t i = 0; i < NHELPS; i++)
            fprintf(f, ".TP\n.B %s\n%s (rankprof\\-%s(1))\n", helps[i].name, helps[i].summary,
                    helps[i].name);
        fputs(".SH FILES\n.TP\n.I rankprof.data\nthe default trace\n"
              ".SH SEE ALSO\nThe docs/ directory of the source: docs/design.md and the guides.\n",
              f);
        return ferror(f) ? -1 : 0;
    }
    fprintf(f, ".SH NAME\nrankprof\\-%s \\- %s\n.SH SYNOPSIS\n.B rankprof\n", h->name, h->summary);
    roff(f, rp_cmd_usage(h->name));
    fputs("\n.SH DESCRIPTION\n", f);
    roff(f, h->description);
    fputs("\n.SH OPTIONS\n", f);
    for (const struct opt_help *o = h->opts; o->opt; o++) {
        fputs(".TP\n.B ", f);
        roff(f, o->opt);
        fputc('\n', f);
        roff(f, o->meaning);
        fputc('\n', f);
    }
    if (h->exit_status) {
        fputs(".SH EXIT STATUS\n", f);
        roff(f, h->exit_status);
        fputc('\n', f);
    }
    fputs(".SH SEE ALSO\nrankprof(1)\n", f);
    return ferror(f) ? -1 : 0;
}

int rp_man_dir(const char *dir)
{
    char path[4096];
    if (mkdir(dir, 0777) < 0 && errno != EEXIST) {
        fprintf(stderr, "rankprof: --man-dir: cannot create %s: %s\n", dir, strerror(errno));
        return -1;
    }
    for (size_t i = 0; i <= NHELPS; i++) {
        const char *cmd = i < NHELPS ? helps[i].name : NULL;
        snprintf(path, sizeof path, "%s/rankprof%s%s.1", dir, cmd ? "-" : "", cmd ? cmd : "");
        FILE *f = fopen(path, "w");
        if (!f) {
            fprintf(stderr, "rankprof: --man-dir: cannot create %s: %s\n", path, strerror(errno));
            return -1;
        }
        int rc = rp_man(f, cmd);
        if (fclose(f) != 0 || rc < 0) {
            fprintf(stderr, "rankprof: --man-dir: writing %s failed\n", path);
            return -1;
        }
    }
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * main.c - the `rankprof` command: picks the subcommand and holds what the
 * subcommands share (messages, option parsing helpers, loading a trace).
 */
#define _GNU_SOURCE /* memmem */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/merge.h"
#include "analyze/set.h"
#include "cli.h"
#include "common/array.h"
#include "analyze/hints.h"
#include "common/error.h"
#include "trace/format.h"

static const struct rp_cmd commands[] = {
    {"record", cmd_record,
     "record [-o FILE] [--mode trace|direct] [--print] [--classes LIST] [--drop] [--off]\n"
     "                [--throttle[=CALLS:NS[:K]]] [--max-size SIZE] [--mpi] [--force]\n"
     "                [--ring SIZE [--ring-trigger NAME>DURATION|rate:NAME|budget]... "
     "[--ring-every S]\n"
     "                 [--ring-keep N]]\n"
     "                [-F NAME]... [-N NAME]... -- PROGRAM [ARGS...]"},
    {"report", cmd_report,
     "report [-i FILE]... [--process PID|FILE] [--rank R] [--one-file]\n"
     "                [--sort rank|self|total|calls|max] [--weight time|calls|cpu] [--alpha A]\n"
     "                [--limit N] [--format table|json|csv] [--thread TID] [--force]\n"
     "                [--threshold KEY=VALUE]... [--color] [--wide] [--no-chains]\n"
     "                [--no-compensate]\n"
     "                [-F NAME]... [-N NAME]... [-D N] [-t DUR] [-r FROM~TO]\n"
     "                [FILE...]"},
    {"graph", cmd_graph,
     "graph [-i FILE]... [--process PID|FILE] [--rank R] [--one-file] [--force] [--no-compensate]\n"
     "                [-F NAME]... [-N NAME]... [-D N] [-t DUR] [-r FROM~TO]\n"
     "                NAME [FILE...]"},
    {"locks", cmd_locks,
     "locks [-i FILE]... [--process PID|FILE] [--rank R] [--one-file] [--format table|json]\n"
     "                [--sort wait|hold|acquisitions|contended|name]\n"
     "                [--thread TID] [--contended-ratio R] [--force] [--no-compensate]\n"
     "                [-F NAME]... [-N NAME]... [-D N] [-t DUR] [-r FROM~TO]\n"
     "                [FILE...]"},
    {"export", cmd_export,
     "export --format FORMAT [-o OUT] [-i FILE]... [--process PID|FILE] [--rank R] [--one-file]\n"
     "                [--force] [--thread TID] [--limit N]\n"
     "                [--title T] [--weight time|calls|cpu] [--alpha A] [-O KEY=VALUE]...\n"
     "                [--no-compensate]\n"
     "                [-F NAME]... [-N NAME]... [-D N] [-t DUR] [-r FROM~TO]\n"
     "                [FILE...]\n"
     "                (`rankprof export --help` lists the formats)"},
    {"info", cmd_info,
     "info [-i FILE]... [--process PID|FILE] [--rank R] [--one-file] [--force] [FILE...]"},
    {"dump", cmd_dump,
     "dump [-i FILE]... [--process PID|FILE] [--rank R] [--one-file] [--force]\n"
     "                [-F NAME]... [-N NAME]... [-D N] [-r FROM~TO] [FILE...]"},
    {"replay", cmd_replay,
     "replay [-i FILE]... [--process PID|FILE] [--rank R] [--one-file] [--thread TID]\n"
     "                [-D DEPTH] [-t TIME] [-F NAME]... [-N NAME]... [--color] [--no-pager]\n"
     "                [--force] [--no-compensate] [FILE...]"},
    {"ctl", cmd_ctl, "ctl PID start|stop|toggle|status|snapshot"},
    {"import", cmd_import, "import --elf ELF [-o OUT] TRACE"},
    {"top", cmd_top, "top [-b] [-n N] [-d SECONDS] [--limit N] [--no-chains] PID"},
    {"tui", cmd_tui,
     "tui [-i FILE]... [--process PID|FILE] [--rank R] [--one-file] [--force] [--no-compensate]\n"
     "                [-F NAME]... [-N NAME]... [-D N] [-t DUR] [-r FROM~TO]\n"
     "                [FILE...]"},
    {"diff", cmd_diff,
     "diff [--threshold PCT] [--confidence C] [--min-share PCT] [--relative]\n"
     "                [--format table|json] [--limit N] [--all] [--one-file] [--force]\n"
     "                [--no-compensate]\n"
     "                [-F NAME]... [-N NAME]... [-D N] [-t DUR] [-r FROM~TO]\n"
     "                BASE NEW"},
};

#define NCMDS (sizeof(commands) / sizeof(commands[0]))

const char *rp_cmd_usage(const char *cmd)
{
    for (size_t i = 0; i < NCMDS; i++)
        if (!strcmp(cmd, commands[i].name))
            return commands[i].usage;
    return NULL;
}

void rp_opt_input_args(const char *cmd, int first, int argc, char **argv, struct rp_load_opts *o)
{
    for (int k = first; k < argc; k++)
        rp_opt_input(cmd, 'i', argv[k], o);
}

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

int rp_opt_weight(const char *cmd, const char *val)
{
    if (!strcmp(val, "time"))
        return RP_WEIGHT_TIME;
    if (!strcmp(val, "calls"))
        return RP_WEIGHT_CALLS;
    if (strcmp(val, "cpu"))
        rp_usage_die(cmd, "--weight %s: expected time, calls or cpu", val);
    return RP_WEIGHT_CPU;
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

int rp_parse_input_opts(const char *cmd, int argc, char **argv, struct rp_load_opts *o, int filters)
{
    static const struct option lo[] = {RP_INPUT_LONGOPTS,
                                       {"force", no_argument, NULL, RP_OPT_FORCE},
                                       {"no-compensate", no_argument, NULL, RP_OPT_NO_COMP},
                                       {"compensate", required_argument, NULL, 'M'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"outside", no_argument, NULL, RP_OPT_OUTSIDE},
                                       RP_FILTER_LONGOPTS,
                                       {NULL, 0, NULL, 0}};
    int c;

    opterr = 0;
    o->cmd = cmd;
    while ((c = getopt_long(argc, argv, (filters & 1) ? "i:h" RP_FILTER_SHORTOPTS : "i:h", lo,
                            NULL)) != -1) {
        if (rp_opt_input(cmd, c, optarg, o) ||
            ((filters & 1) && rp_opt_filter(cmd, c, optarg, &o->filt)))
            continue;
        if (c == RP_OPT_OUTSIDE && (filters & 2))
            o->replay.keep_outside = 1;
        else if (c == RP_OPT_FORCE)
            o->replay.force = 1;
        else if (c == RP_OPT_NO_COMP || c == 'M')
            rp_opt_compensate(cmd, c == 'M' ? optarg : NULL, &o->replay);
        else if (c == 'h')
            rp_help(cmd);
        else
            rp_usage_die(cmd, "unknown or incomplete option '%s'", argv[optind - 1]);
    }
    return optind;
}

int rp_opt_input(const char *cmd, int c, const char *val, struct rp_load_opts *o)
{
    struct rp_input_opts *in = &o->in;
    if (c == 'i') {
        if (in->n_files == RP_MAX_INPUTS)
            rp_usage_die(cmd, "-i: at most %d files", RP_MAX_INPUTS);
        in->files[in->n_files++] = val;
        if (in->n_files == 1)
            o->input = val;
        return 1;
    }
    if (c == RP_OPT_PROCESS) {
        in->process = val;
        return 1;
    }
    if (c == RP_OPT_RANK) {
        char *end;
        errno = 0;
        unsigned long r = strtoul(val, &end, 10);
        if (end == val || *end || val[0] == '-' || errno || r > 999999999ul)
            rp_usage_die(cmd, "--rank %s: expected an MPI rank (0, 1, ...)", val);
        in->rank = val;
        return 1;
    }
    if (c == RP_OPT_ONE_FILE) {
        in->one_file = 1;
        return 1;
    }
    return 0;
}

/* Whether f is what --process sel names: its pid, its path or its base name. */
static int proc_matches(const struct rp_set_file *f, const char *sel)
{
    char *end;
    unsigned long v = strtoul(sel, &end, 10);
    if (end != sel && !*end && sel[0] != '-')
        return f->who.pid == v;
    const char *b = strrchr(f->who.file, '/');
    return !strcmp(f->who.file, sel) || !strcmp(b ? b + 1 : f->who.file, sel);
}

/* "PID (FILE), ..." of the set's processes, into buf. */
static const char *proc_list(const struct rp_set *s, char *buf, size_t n)
{
    size_t k = 0;
    buf[0] = 0;
    for (uint32_t i = 0; i < s->n && i < 8 && k + 1 < n; i++) {
        char rk[24] = "";
        if (s->files[i].who.has_rank)
            snprintf(rk, sizeof(rk), "rank %u, ", s->files[i].who.rank);
        int w = snprintf(buf + k, n - k, "%s%u (%s%s)", i ? ", " : "", s->files[i].who.pid, rk,
                         s->files[i].who.file);
        k += w > 0 ? (size_t)w : 0;
    }
    if (s->n > 8 && k + 1 < n)
        snprintf(buf + k, n - k, ", and %u more (rankprof info lists them)", s->n - 8);
    return buf;
}

/*
 * Keeps the files of s that --process sel names (proc_matches), or, with
 * sel NULL, those of MPI rank `rank`; frees the others.  Returns how many
 * are kept (s unchanged when none is).
 */
static uint32_t keep_files(struct rp_set *s, const char *sel, long rank)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n; i++)
        k += sel ? proc_matches(&s->files[i], sel)
                 : s->files[i].who.has_rank && s->files[i].who.rank == (uint32_t)rank;
    if (!k)
        return 0;
    k = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        if (sel ? !proc_matches(&s->files[i], sel)
                : !(s->files[i].who.has_rank && s->files[i].who.rank == (uint32_t)rank)) {
            free(s->files[i].who.file);
            free(s->files[i].who.run);
            free(s->files[i].who.host);
            continue;
        }
        s->files[k++] = s->files[i];
    }
    return s->n = k;
}

void rp_find_inputs(struct rp_load_opts *o, struct rp_set *s)
{
    char err[1024], list[2048];
    int rc = 0;

    if (o->in.n_files > 1) {
        memset(s, 0, sizeof(*s));
        for (unsigned i = 0; i < o->in.n_files && rc >= 0; i++)
            rc = rp_set_add(s, o->in.files[i], err, sizeof(err));
    } else if (o->in.one_file && !o->in.process && !o->in.rank) {
        memset(s, 0, sizeof(*s));
        rc = rp_set_add(s, o->input, err, sizeof(err));
    } else {
        rc = rp_set_find(o->input, s, err, sizeof(err));
    }
    if (rc < 0) /* (out of memory; a file that cannot be read fails when it is read) */
        rp_die("%s", err);
    for (uint32_t i = 0; i < s->n_notes; i++)
        rp_warn("%s", s->notes[i]);
    for (uint32_t i = 0; i < s->n_skipped && i < 3; i++)
        rp_warn("left out %s", s->skipped[i]);
    if (s->n_skipped > 3)
        rp_warn("left out %u more files of the form %s.PID (not of this run)", s->n_skipped - 3,
                o->input);
    if (o->in.process && !keep_files(s, o->in.process, -1)) /* (a pid that exec'd: one per image) */
        rp_die("--process %s: no such process in the run of %s; its processes: %s", o->in.process,
               o->input, proc_list(s, list, sizeof(list)));
    if (o->in.rank && !keep_files(s, NULL, (long)strtoul(o->in.rank, NULL, 10)))
        rp_die("--rank %s: no process of rank %s in the run of %s (INFO rank, set by an MPI "
               "launcher); its processes: %s",
               o->in.rank, o->in.rank, o->input, proc_list(s, list, sizeof(list)));
    o->input = s->files[0].who.file;
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

/* Prints the profile's warnings, one per line, on stderr. */
static void put_warnings(struct rp_profile *p)
{
    char *s = p->warn, *nl;
    while ((nl = strchr(s, '\n'))) {
        *nl = 0;
        rp_warn("%s", s);
        *nl = '\n';
        s = nl + 1;
    }
}

/*
 * Gives the nodes of p, a filtered profile, the names all (the same file's
 * unfiltered profile, named) has for them: a node the filter left without
 * calls is not named by rp_profile_symbolize, and later passes over the
 * file (locks, exports) still see its spans.  Dies when out of memory.
 */
static void keep_names(struct rp_profile *p, const struct rp_profile *all)
{
    for (uint32_t i = 1; i < p->n_nodes && i < all->n_nodes; i++) {
        struct rp_node *n = &p->nodes[i];
        const struct rp_node *a = &all->nodes[i];
        if (n->name || !a->name)
            continue;
        if (!(n->name = rp_profile_strndup(p, a->name, strlen(a->name), 0)) ||
            (a->file && !n->file &&
             !(n->file = rp_profile_strndup(p, a->file, strlen(a->file), 1))) ||
            (a->module && !n->module &&
             !(n->module = rp_profile_strndup(p, a->module, strlen(a->module), 1))))
            rp_die("out of memory");
        if (!n->line)
            n->line = a->line;
    }
}

/*
 * Replays file into *p, through o's filters when there are any (filter.c:
 * a first replay names the nodes the filter is made from).  Returns 0 or
 * the replay's code, with the message in err.
 */
static int replay_one(struct rp_load_opts *o, const char *file, struct rp_profile *p, char *err,
                      size_t errsz)
{
    if (!o->filt.first)
        return rp_replay_file(file, &o->replay, p, o->chunk_fn, o->chunk_ctx, err, errsz);
    struct rp_profile all = {0};
    struct rp_span_filter f;
    int rc = rp_replay_file(file, &o->replay, &all, NULL, NULL, err, errsz);
    if (rc == 0 && (rc = rp_profile_symbolize(&all)) < 0)
        snprintf(err, errsz, "%s: naming functions: %s", file, rp_strerror(rc));
    if (rc < 0) {
        rp_profile_free(&all);
        return rc;
    }
    uint8_t *mark = rp_filter_make(&o->filt, &all, &f);
    struct rp_replay_opts ro = o->replay;
    ro.filter = &f;
    rc = rp_replay_file(file, &ro, p, o->chunk_fn, o->chunk_ctx, err, errsz);
    if (rc == 0)
        keep_names(p, &all);
    rp_profile_free(&all);
    free(mark);
    return rc;
}

/* Replays the file into *p and (with name) names its functions; dies naming
 * the file on any error. */
static void load_file(struct rp_load_opts *o, const char *file, struct rp_profile *p, int name)
{
    char err[768];
    int rc = replay_one(o, file, p, err, sizeof(err));
    if (rc < 0)
        rp_die("%s", err);
    if ((name || o->filt.first) && (rc = rp_profile_symbolize(p)) < 0)
        rp_die("%s: naming functions: %s", file, rp_strerror(rc));
}

/*
 * load_file for a file the run's set found beside the one named: one that
 * cannot be read (a process killed inside a write) is left out with a
 * warning that names it and says why, so that the others are still read.
 * Returns 0, or -1 when it was left out.  Dies when out of memory.
 */
static int load_sibling(struct rp_load_opts *o, const char *file, struct rp_profile *p)
{
    char err[768];
    int rc = replay_one(o, file, p, err, sizeof(err));
    if (rc == RP_ENOMEM)
        rp_die("%s", err);
    if (rc < 0) {
        rp_warn("left out %s%s", err,
                o->replay.force ? "" : " (--force reads the valid part of it)");
        return -1;
    }
    if ((rc = rp_profile_symbolize(p)) < 0)
        rp_die("%s: naming functions: %s", file, rp_strerror(rc));
    return 0;
}

/*
 * A run's files are loaded (replayed and named) by up to LOADERS_MAX
 * threads, at most two per thread ahead of the merge, which takes them in
 * the set's order: the merged profile is the one a file at a time gives,
 * its messages are in the same order, and the memory is that of at most
 * 2 x threads files' profiles, whatever the number of files.
 */
#define LOADERS_MAX 8

struct loadq {
    struct rp_load_opts *o;
    const struct rp_set *s;
    struct loaded {
        struct rp_profile p;
        int rc;    /* the replay's */
        int named; /* rp_profile_symbolize's, after a replay that succeeded */
        int ready; /* loaded: the merge may take it */
        char err[768];
    } * f;           /* per file of s */
    uint32_t next;   /* the next file to load */
    uint32_t merged; /* files merged: next may run 2 x threads ahead */
    uint32_t window;
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

/* A loader thread: loads the next file while the window allows. */
static void *loader(void *arg)
{
    struct loadq *q = arg;
    pthread_mutex_lock(&q->mu);
    for (;;) {
        while (q->next < q->s->n && q->next >= q->merged + q->window)
            pthread_cond_wait(&q->cv, &q->mu);
        if (q->next >= q->s->n)
            break;
        struct loaded *f = &q->f[q->next++];
        const char *file = q->s->files[f - q->f].who.file;
        pthread_mutex_unlock(&q->mu);
        f->rc = replay_one(q->o, file, &f->p, f->err, sizeof(f->err));
        if (f->rc == 0)
            f->named = rp_profile_symbolize(&f->p);
        pthread_mutex_lock(&q->mu);
        f->ready = 1;
        pthread_cond_broadcast(&q->cv);
    }
    pthread_mutex_unlock(&q->mu);
    return NULL;
}

/*
 * Merges the run's files of s into m, loaded by loader threads (see
 * above); dies as load_file does on a file the user named, leaves out a
 * sibling that cannot be read as load_sibling does.
 */
static void load_parallel(struct rp_load_opts *o, const struct rp_set *s, struct rp_merge *m,
                          int threads)
{
    pthread_t tid[LOADERS_MAX];
    struct loadq q = {.o = o, .s = s, .window = 2 * (uint32_t)threads};
    int started = 0;
    if (!(q.f = calloc(s->n, sizeof(*q.f))))
        rp_die("%s: out of memory", s->files[0].who.file);
    pthread_mutex_init(&q.mu, NULL);
    pthread_cond_init(&q.cv, NULL);
    while (started < threads && pthread_create(&tid[started], NULL, loader, &q) == 0)
        started++;
    if (!started)
        rp_die("%s: cannot start a thread to read it", s->files[0].who.file);
    for (uint32_t i = 0; i < s->n; i++) {
        struct loaded *f = &q.f[i];
        const char *file = s->files[i].who.file;
        pthread_mutex_lock(&q.mu);
        while (!f->ready)
            pthread_cond_wait(&q.cv, &q.mu);
        pthread_mutex_unlock(&q.mu);
        int named_by_user = i == 0 || o->in.n_files > 1;
        if (f->rc < 0 && (named_by_user || f->rc == RP_ENOMEM))
            rp_die("%s", f->err);
        if (f->rc < 0)
            rp_warn("left out %s%s", f->err,
                    o->replay.force ? "" : " (--force reads the valid part of it)");
        else if (f->named < 0)
            rp_die("%s: naming functions: %s", file, rp_strerror(f->named));
        int rc = f->rc < 0 ? 0 : rp_merge_add(m, &f->p, &s->files[i].who);
        rp_profile_free(&f->p);
        if (rc < 0)
            rp_die("%s: merging: %s", file, rp_strerror(rc));
        pthread_mutex_lock(&q.mu);
        q.merged = i + 1;
        pthread_cond_broadcast(&q.cv);
        pthread_mutex_unlock(&q.mu);
    }
    for (int t = 0; t < started; t++)
        pthread_join(tid[t], NULL);
    pthread_mutex_destroy(&q.mu);
    pthread_cond_destroy(&q.cv);
    free(q.f);
}

/* Loader threads for n files: one per core (RANKPROF_LOAD_JOBS=N: N), at
 * most n and LOADERS_MAX; 0 or 1 loads them one at a time. */
static int loaders(uint32_t n)
{
    const char *e = getenv("RANKPROF_LOAD_JOBS");
    long t = e && *e ? atol(e) : sysconf(_SC_NPROCESSORS_ONLN);
    if (t > LOADERS_MAX)
        t = LOADERS_MAX;
    return t < 1 ? 1 : t > (long)n ? (int)n : (int)t;
}

/* A single file's profile p (o->input, the set's file f): its warnings,
 * and f's process (given to p).  Cannot fail (out of memory: no process
 * record). */
static void one_file_done(struct rp_load_opts *o, struct rp_profile *p, struct rp_set_file *f)
{
    if (!o->quiet)
        put_warnings(p);
    if (rp_grow(&p->procs, &p->cap_procs, 1, sizeof(*p->procs), 1) == 0) {
        p->procs[0] = f->who;
        p->procs[0].pid = p->pid;
        p->procs[0].events = p->events;
        p->procs[0].lost = p->lost;
        p->procs[0].threads = p->n_threads;
        p->procs[0].ended = p->ended && !(p->end_flags & RP_END_SIGNAL);
        p->n_procs = 1;
        memset(&f->who, 0, sizeof(f->who)); /* now the profile's */
    }
    for (uint32_t i = 0; i < p->n_threads; i++)
        p->threads[i].pid = p->pid;
}

/* The end of rp_load, once p holds its file or files (chosen: the file
 * named; named: its functions were named): filters, hints, the ranking and
 * the flags.  Dies on any error. */
static void load_tail(struct rp_load_opts *o, struct rp_profile *p, const char *chosen, int named)
{
    int rc;
    if (o->filt.first) {
        rp_filter_check(o->cmd ? o->cmd : "rankprof", &o->filt);
        if (!(p->filter = strdup(o->filt.desc)))
            rp_die("out of memory");
    }
    if (named && !o->quiet) { /* named: hints on what is missing (hints.h) */
        size_t before = strlen(p->warn);
        rp_profile_hints(p);
        for (char *l = p->warn + before, *nl; (nl = strchr(l, '\n')); l = nl + 1)
            rp_warn("%.*s", (int)(nl - l), l);
    }
    if (!p->events && !o->quiet) {
        int inst = p->program ? refs_cyg(p->program) : -1;
        if (inst == 0)
            rp_warn("%s holds no events: %s has no -finstrument-functions hooks (build it with "
                    "-finstrument-functions, or use the rankprof macros)",
                    chosen, p->program);
        else
            rp_warn("%s holds no events: the program made no recorded call before the recording "
                    "ended%s",
                    chosen, p->warn[0] ? " (see the warnings above)" : "");
    }
    if (o->rank) {
        p->rank.weight = o->weight;
        if ((rc = rp_rank_profile(p, &o->rank_opt)) < 0)
            rp_die("%s: ranking: %s", chosen, rp_strerror(rc));
        if ((rc = rp_flags_apply(p, &o->flag)) < 0)
            rp_die("%s: flags: %s", chosen, rp_strerror(rc));
    }
}

/* A single file's profile p, named (one_file_done done): the copies of a
 * function folded into one node (merge.h, rp_merge_fold).  Dies when out
 * of memory. */
static void fold_copies(struct rp_load_opts *o, struct rp_profile *p, const char *file)
{
    int rc;
    if (!o->no_names && !o->no_fold && (rc = rp_merge_fold(p)) < 0)
        rp_die("%s: folding copies of functions: %s", file, rp_strerror(rc));
}

void rp_load_replayed(struct rp_load_opts *o, struct rp_profile *p, struct rp_set_file *f)
{
    int rc;
    if (!o->no_names && (rc = rp_profile_symbolize(p)) < 0)
        rp_die("%s: naming functions: %s", o->input, rp_strerror(rc));
    one_file_done(o, p, f);
    fold_copies(o, p, o->input);
    load_tail(o, p, o->input, !o->no_names);
}

void rp_load(struct rp_load_opts *o, struct rp_profile *p)
{
    static char chosen[4096];
    struct rp_set s;
    int rc;

    rp_find_inputs(o, &s);
    int s_many = s.n > 1; /* (a run's files are always named, to merge) */
    snprintf(chosen, sizeof(chosen), "%s", s.files[0].who.file);
    if (s.n == 1) {
        o->input = chosen;
        load_file(o, chosen, p, !o->no_names);
        one_file_done(o, p, &s.files[0]);
        fold_copies(o, p, chosen);
    } else {
        /* a run's processes: one file at a time, merged (merge.h) from
         * replayed profiles (so defs_only serves one file only) */
        o->replay.defs_only = 0;
        struct rp_merge m;
        if (rp_merge_init(&m, p) < 0)
            rp_die("%s: out of memory", chosen);
        m.keep_maps = o->keep_maps;
        /* (a chunk callback and the filters' names are made a file at a
         * time, in order) */
        int threads = o->chunk_fn || o->filt.first ? 1 : loaders(s.n);
        if (threads > 1)
            load_parallel(o, &s, &m, threads);
        for (uint32_t i = 0; threads == 1 && i < s.n; i++) {
            struct rp_profile one = {0};
            if (i == 0 || o->in.n_files > 1) { /* a file the user named */
                load_file(o, s.files[i].who.file, &one, 1);
            } else if (load_sibling(o, s.files[i].who.file, &one) < 0) {
                rp_profile_free(&one);
                continue;
            }
            rc = rp_merge_add(&m, &one, &s.files[i].who);
            rp_profile_free(&one);
            if (rc < 0)
                rp_die("%s: merging: %s", s.files[i].who.file, rp_strerror(rc));
        }
        rp_merge_free(&m);
        if (!o->quiet)
            put_warnings(p);
    }
    rp_set_free(&s);
    load_tail(o, p, chosen, !o->no_names || s_many);
}

static void usage(FILE *f)
{
    fprintf(f, "usage: rankprof COMMAND [OPTIONS]\n\n"
               "rankprof records C programs and ranks their procedures, locks and devices\n"
               "by standing probability.  Commands:\n\n");
    for (size_t i = 0; i < NCMDS; i++)
        fprintf(f, "  rankprof %s\n", commands[i].usage);
    fprintf(f,
            "\nThe trace file is %s unless -i/-o says otherwise.  A program that forks\n"
            "or execs also writes FILE.PID, one per other process: the commands read a\n"
            "run's files together (--process PID: one process; --one-file: FILE alone).\n"
            "`rankprof COMMAND --help` says what each option does; see docs/.\n",
            RP_DEFAULT_DATA);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "help") && argc == 3 && rp_cmd_usage(argv[2]))
        rp_help(argv[2]);
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--man-dir") && argc == 3) /* the build writes them so */
        return rp_man_dir(argv[2]) < 0;
    if (!strcmp(argv[1], "--man")) {
        if (argc > 3 || rp_man(stdout, argc == 3 ? argv[2] : NULL) < 0 || fflush(stdout) != 0) {
            fprintf(stderr, "rankprof: --man [COMMAND]: no such command or a write failed\n");
            return 1;
        }
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

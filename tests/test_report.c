// SPDX-License-Identifier: MIT
/*
 * test_report.c - tests of the reports (src/report/: table, JSON, CSV, row
 * order) on a profile built by hand, with every expected number worked out
 * by hand below.  JSON and CSV are checked by an independent parser: python3's
 * json and csv modules, run on temporary files; the table is checked as text.
 * Exits non-zero on any failure.
 */
#define _GNU_SOURCE /* open_memstream, mkdtemp */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/error.h"
#include "report/report.h"
#include "report/util.h"
#include "trace/format.h"
#include "check.h"

/* The weird name: a quote, a backslash, a control character, invalid UTF-8
 * (a stray 0xff, a truncated sequence, an encoded surrogate), then a valid
 * 4-byte and a valid 2-byte character. */
#define WEIRD     "we\"ird\\x\x01y\xffz\xe2\x82!\xed\xa0\x80\xf0\x9f\x98\x80\xc3\xa9"
#define WEIRD_HEX "7765226972645c780179ff7ae28221eda080f09f9880c3a9"
/* ... and how the table shows it (every bad byte is one '?') */
#define WEIRD_TTY "we\"ird\\x?y?z\x3f\x3f!\x3f\x3f\x3f\xf0\x9f\x98\x80\xc3\xa9"

enum { ROOT, MAIN, DISPATCH, WORKER_A, WORKER_B, WEIRDN, IDLE, MTX, TICK, POOL, NNODES };

static struct rp_node nodes[NNODES];
static struct rp_edge edges[7];
static struct rp_thread threads[2];

static void set_node(int i, const char *name, int kind, uint64_t calls, uint64_t incl,
                     uint64_t excl, uint64_t min, uint64_t max, uint32_t rank, double pi,
                     uint32_t flags)
{
    struct rp_node *n = &nodes[i];
    n->id = (uint32_t)i;
    n->name = (char *)name;
    n->kind = (uint8_t)kind;
    n->calls = calls;
    if (n->x) {
        rp_hist_free(&n->x->hist);
        free(n->x);
        n->x = NULL;
    }
    n->incl = incl;
    n->excl = excl;
    n->rank = rank;
    n->pi = pi; /* (its involvement: pi_ROOT is 1; its standing is half of it) */
    n->flags = (uint8_t)flags;
    struct rp_node_x *x = rp_node_xw(n); /* (the histogram filled by build) */
    CHECK(x != NULL);
    if (!x)
        return;
    x->dur_sum = incl;
    x->min = x->oncpu_min = min;
    x->max = x->oncpu_max = x->run_max = max;
    x->hist = (struct rp_hist){0};
}

/*
 * The profile (times in ticks, 2 ticks per ns):
 *
 *   ROOT -> main (1 call, 2000) -> dispatch (3 calls: 400, 500, 1000)
 *             dispatch -> worker_a (100 calls: 95 x 8, 5 x 30 = 910)
 *             dispatch -> worker_b (7 calls: 50 60 70 80 90 102 148 = 600)
 *             dispatch -> WEIRD (2, 301)
 *   ROOT -> pool_worker (30 calls, 2100) -> mtx (lock-hold, 50, 1990)
 *   idle: never completed; tick: an instant.  Neither is a row.
 */
static void build(struct rp_profile *p)
{
    memset(p, 0, sizeof *p);
    set_node(ROOT, NULL, RP_KIND_FUNC, 0, 0, 0, 0, 0, 0, 1.0, 0);
    set_node(MAIN, "main", RP_KIND_FUNC, 1, 2000, 100, 2000, 2000, 2, 1.0, 0);
    set_node(DISPATCH, "dispatch", RP_KIND_FUNC, 3, 1900, 90, 400, 1000, 1, 0.95, RP_FLAG_DISPATCH);
    set_node(WORKER_A, "worker_a", RP_KIND_FUNC, 100, 910, 910, 8, 30, 5, 0.45, RP_FLAG_JITTER);
    set_node(WORKER_B, "worker_b", RP_KIND_FUNC, 7, 600, 600, 50, 148, 6, 0.30, 0);
    set_node(WEIRDN, WEIRD, RP_KIND_POINT, 2, 301, 301, 100, 201, 7, 0.15, 0);
    set_node(IDLE, "idle", RP_KIND_FUNC, 0, 0, 0, 0, 0, 0, 0, 0);
    set_node(MTX, "mtx", RP_KIND_LOCK_HOLD, 50, 1990, 1990, 1, 200, 4, 0.45, RP_FLAG_HOT);
    set_node(TICK, "tick", RP_KIND_INSTANT, 5, 0, 0, 0, 0, 0, 0, 0);
    set_node(POOL, "pool_worker", RP_KIND_FUNC, 30, 2100, 110, 50, 148, 3, 0.50, 0);

    nodes[MAIN].file = "/src/demo.c";
    nodes[MAIN].line = 10;
    nodes[DISPATCH].file = "/src/demo.c";
    nodes[DISPATCH].line = 20;
    rp_node_xw(&nodes[DISPATCH])->fanout = 3.0;
    /* Welford m2 of {400, 500, 1000}: sum of squared deviations from 1900/3 */
    double m = 1900.0 / 3;
    rp_node_xw(&nodes[DISPATCH])->m2 =
        (400 - m) * (400 - m) + (500 - m) * (500 - m) + (1000 - m) * (1000 - m);
    /* worker_a: mean 9.1, m2 of 95 x 8 and 5 x 30 */
    rp_node_xw(&nodes[WORKER_A])->m2 = 95 * (8 - 9.1) * (8 - 9.1) + 5 * (30 - 9.1) * (30 - 9.1);

    CHECK(rp_hist_add(&nodes[DISPATCH].x->hist, 400) == 0);
    CHECK(rp_hist_add(&nodes[DISPATCH].x->hist, 500) == 0);
    CHECK(rp_hist_add(&nodes[DISPATCH].x->hist, 1000) == 0);
    for (int i = 0; i < 100; i++)
        CHECK(rp_hist_add(&nodes[WORKER_A].x->hist, i < 95 ? 8 : 30) == 0);
    /* worker_b: 148 falls in bucket [148, 152), shown by its midpoint 150,
     * above the true max: percentiles must be clamped to 148 */
    static const uint64_t wb[7] = {50, 60, 70, 80, 90, 102, 148};
    for (int i = 0; i < 7; i++) {
        double d = (double)wb[i] - 600.0 / 7;
        rp_node_xw(&nodes[WORKER_B])->m2 += d * d;
        CHECK(rp_hist_add(&nodes[WORKER_B].x->hist, wb[i]) == 0);
    }
    for (int i = 0; i < NNODES; i++) { /* the calls not in the histograms */
        struct rp_node *n = &nodes[i];
        if (n->x && n->kind != RP_KIND_INSTANT)
            n->x->below_res = n->calls > n->x->hist.n ? n->calls - n->x->hist.n : 0;
    }

    struct rp_edge e[7] = {
        {ROOT, MAIN, 1, 2000, 2000, 2000, 0},     {ROOT, POOL, 30, 2100, 50, 148, 0},
        {MAIN, DISPATCH, 3, 1900, 400, 1000, 0},  {DISPATCH, WORKER_A, 100, 910, 8, 30, 0},
        {DISPATCH, WORKER_B, 7, 600, 50, 148, 0}, {DISPATCH, WEIRDN, 2, 301, 100, 201, 0},
        {POOL, MTX, 50, 1990, 1, 200, 0},
    };
    memcpy(edges, e, sizeof e);

    threads[0] =
        (struct rp_thread){.tid = 100, .name = "main", .first = 1000, .last = 3000, .events = 50};
    threads[1] = (struct rp_thread){.tid = 101,
                                    .first = 1500,
                                    .last = 3500,
                                    .events = 30,
                                    .lost = 3,
                                    .unmatched_exits = 1,
                                    .unclosed = 2};

    p->program = "/usr/bin/demo";
    p->pid = 4242;
    p->ns_per_tick = 0.5;
    p->ended = 1;
    p->end_flags = RP_END_EXIT | RP_END_STATUS; /* (exit(0): the status known) */
    p->end_status = 0;
    p->nodes = nodes;
    p->n_nodes = p->cap_nodes = NNODES;
    p->edges = edges;
    p->n_edges = p->cap_edges = 7;
    p->threads = threads;
    p->n_threads = p->cap_threads = 2;
    p->events = 80;
    p->lost = 3;
    p->total = 4000;
    snprintf(p->warn, sizeof p->warn, "demo.data: skipped 1 damaged chunk(s)\nno \"END\"\n");
    p->skipped_chunks = 1;
    p->unmatched_exits = 1;
    p->unclosed = 2;
    /* a node's involvement is its pi (pi_ROOT 1), its standing half of it */
    p->rank = (struct rp_rank_info){.weight = RP_WEIGHT_TIME,
                                    .alpha = 0.01,
                                    .iterations = 42,
                                    .residual = 1e-13,
                                    .rest = 2.0,
                                    .pi_root = 1.0};
}

typedef int (*report_fn)(FILE *, const struct rp_profile *, const struct rp_report_opts *);

/* Runs a report into a malloc'd string (caller frees); NULL on failure. */
static char *render(report_fn fn, const struct rp_profile *p, const struct rp_report_opts *o,
                    size_t *len)
{
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return NULL;
    int rc = fn(f, p, o);
    fclose(f);
    CHECK(rc == 0);
    if (len)
        *len = n;
    return buf;
}

static int write_file(const char *dir, const char *name, const char *data, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    size_t w = fwrite(data, 1, len, f);
    return (fclose(f) == 0 && w == len) ? 0 : -1;
}

/* Renders with fn and writes the result to dir/name; returns the text. */
static char *render_to(const char *dir, const char *name, report_fn fn, const struct rp_profile *p,
                       const struct rp_report_opts *o)
{
    size_t len = 0;
    char *s = render(fn, p, o, &len);
    CHECK(s != NULL);
    if (s)
        CHECK(write_file(dir, name, s, len) == 0);
    return s;
}

/* The independent check of the JSON and CSV files, run by python3. */
static const char check_py[] =
    "import csv, json, statistics, sys\n"
    "d = sys.argv[1]\n"
    "fails = []\n"
    "def check(c, msg):\n"
    "    if not c:\n"
    "        fails.append(msg)\n"
    "def load(name):\n"
    "    with open(d + '/' + name, 'rb') as f:\n"
    "        return json.loads(f.read().decode('utf-8'))\n"
    "MTX = sys.argv[2]\n"
    "W = bytes.fromhex('" WEIRD_HEX "').decode('utf-8', 'replace')\n"
    "RANKED = ['dispatch', 'main', 'pool_worker', MTX, 'worker_a', 'worker_b', W]\n"
    "BYTOTAL = ['pool_worker', 'main', MTX, 'dispatch', 'worker_a', 'worker_b', W]\n"
    "j = load('ranked.json')\n"
    "check(j['version'] == 1, 'version')\n"
    "check(j['program'] == '/usr/bin/demo', 'program')\n"
    "check(j['total_ns'] == 2000 and type(j['total_ns']) is int, 'total_ns %r' % j['total_ns'])\n"
    "check(j['threads'] == 2, 'threads')\n"
    "check(j['lost_events'] == 3, 'lost_events')\n"
    "check(j['ended_normally'] is True, 'ended_normally')\n"
    "check(j['warnings'] == ['demo.data: skipped 1 damaged chunk(s)', 'no \"END\"'], 'warnings')\n"
    "check(j['skipped_chunks'] == 1 and j['unmatched_exits'] == 1 and j['unclosed'] == 2, 'sums')\n"
    "check(j['rank'] == {'weight': 'time', 'alpha': 0.01, 'iterations': 42, 'residual': 1e-13},\n"
    "      'rank %r' % j.get('rank'))\n"
    "names = [n['name'] for n in j['nodes']]\n"
    "check(names == RANKED, 'node order %r' % names)\n"
    "N = {n['name']: n for n in j['nodes']}\n"
    "need = ['name', 'kind', 'calls', 'inclusive_ns', 'exclusive_ns', 'mean_ns', 'min_ns',\n"
    "        'max_ns', 'stddev_ns', 'standing', 'involvement', 'rank', 'flags']\n"
    "for n in j['nodes']:\n"
    "    check(all(k in n for k in need), 'missing keys in %r' % n)\n"
    "dp = N['dispatch']\n"
    "check((dp['kind'], dp['calls'], dp['inclusive_ns'], dp['exclusive_ns'], dp['min_ns'],\n"
    "       dp['max_ns']) == ('func', 3, 950, 45, 200, 500), 'dispatch %r' % dp)\n"
    "check(abs(dp['mean_ns'] - 1900 / 3 / 2) < 1e-9, 'dispatch mean %r' % dp['mean_ns'])\n"
    "sd = statistics.stdev([400, 500, 1000]) / 2\n"
    "check(abs(dp['stddev_ns'] - sd) < 1e-9 * sd, 'dispatch stddev %r %r' % (dp['stddev_ns'], "
    "sd))\n"
    "check((dp['p50_ns'], dp['p95_ns'], dp['p99_ns']) == (250, 500, 500), 'dispatch pct')\n"
    "check((dp['standing'], dp['involvement'], dp['rank']) == (0.95 / 2, 0.95, 1), 'dispatch "
    "rank')\n"
    "check(dp['flags'] == ['DISPATCH'], 'dispatch flags %r' % dp['flags'])\n"
    "check((dp['file'], dp['line']) == ('/src/demo.c', 20), 'dispatch file:line')\n"
    "wa = N['worker_a']\n"
    "check((wa['p50_ns'], wa['p95_ns'], wa['p99_ns']) == (4, 4, 15), 'worker_a pct %r' % wa)\n"
    "check(abs(wa['mean_ns'] - 4.55) < 1e-12, 'worker_a mean')\n"
    "sd = statistics.stdev([8] * 95 + [30] * 5) / 2\n"
    "check(abs(wa['stddev_ns'] - sd) < 1e-9 * sd, 'worker_a stddev %r %r' % (wa['stddev_ns'], "
    "sd))\n"
    "check(wa['flags'] == ['JITTER'], 'worker_a flags')\n"
    "wb = N['worker_b']\n"
    "check((wb['p50_ns'], wb['p95_ns'], wb['p99_ns'], wb['max_ns']) == (41, 74, 74, 74),\n"
    "      'worker_b pct (clamped to max) %r' % wb)\n"
    "sd = statistics.stdev([50, 60, 70, 80, 90, 102, 148]) / 2\n"
    "check(abs(wb['stddev_ns'] - sd) < 1e-9 * sd, 'worker_b stddev %r %r' % (wb['stddev_ns'], "
    "sd))\n"
    "m = N['main']\n"
    "check(m['stddev_ns'] == 0 and 'p50_ns' not in m and m['flags'] == [], 'main %r' % m)\n"
    "check((m['inclusive_ns'], m['exclusive_ns'], m['line']) == (1000, 50, 10), 'main times')\n"
    "w = N.get(W, {})\n"
    "check(w.get('kind') == 'point' and w.get('inclusive_ns') == 151, 'weird %r' % w)\n"
    "check('file' not in w and 'line' not in w and 'p95_ns' not in w, 'weird extras %r' % w)\n"
    "check(N[MTX]['kind'] == 'lock-hold' and N[MTX]['flags'] == ['HOT'], 'mtx')\n"
    "check(N['pool_worker']['rank'] == 3, 'pool rank')\n"
    "E = {(e['caller'], e['callee']): e for e in j['edges']}\n"
    "check(len(j['edges']) == 7 and len(E) == 7, 'edge count')\n"
    "rm = E.get(('<root>', 'main'), {})\n"
    "check((rm.get('calls'), rm.get('inclusive_ns'), rm.get('min_ns'), rm.get('max_ns'))\n"
    "      == (1, 1000, 1000, 1000), 'root->main %r' % rm)\n"
    "check(('<root>', 'pool_worker') in E, 'root->pool_worker')\n"
    "dw = E.get(('dispatch', W), {})\n"
    "check((dw.get('calls'), dw.get('inclusive_ns'), dw.get('min_ns'), dw.get('max_ns'))\n"
    "      == (2, 151, 50, 101), 'dispatch->weird %r' % dw)\n"
    "pm = E.get(('pool_worker', MTX), {})\n"
    "check((pm.get('calls'), pm.get('inclusive_ns')) == (50, 995), 'pool->mtx %r' % pm)\n"
    "tl = j['thread_list']\n"
    "check(len(tl) == 2 and tl[0]['tid'] == 100 and tl[0]['name'] == 'main', 'thread 0 %r' % tl)\n"
    "check(tl[0]['total_ns'] == 1000 and tl[0]['events'] == 50 and tl[0]['lost'] == 0, 't0')\n"
    "check('name' not in tl[1] and (tl[1]['lost'], tl[1]['unmatched_exits'], tl[1]['unclosed'],\n"
    "      tl[1]['total_ns']) == (3, 1, 2, 1000), 'thread 1 %r' % tl[1])\n"
    "u = load('unranked.json')\n"
    "check(u['warnings'] == [], 'no warnings %r' % u['warnings'])\n"
    "check('rank' not in u, 'unranked has rank')\n"
    "for n in u['nodes']:\n"
    "    for k in ('standing', 'involvement', 'rank', 'flags'):\n"
    "        check(k not in n, 'unranked node has %s' % k)\n"
    "check([n['name'] for n in u['nodes']] == BYTOTAL, 'total order %r' % u['nodes'])\n"
    "lim = load('limit.json')\n"
    "check([n['name'] for n in lim['nodes']] == RANKED[:2] and len(lim['edges']) == 7, 'limit')\n"
    "def rows(name):\n"
    "    with open(d + '/' + name, 'rb') as f:\n"
    "        raw = f.read()\n"
    "    check(raw.count(b'\\n') == raw.count(b'\\r\\n') > 0, name + ': not CRLF')\n"
    "    with open(d + '/' + name, newline='', encoding='utf-8') as f:\n"
    "        return list(csv.reader(f))\n"
    "HEAD = ['name', 'kind', 'calls', 'inclusive_ns', 'exclusive_ns', 'mean_ns', 'min_ns',\n"
    "        'max_ns', 'stddev_ns', 'p50_ns', 'p95_ns', 'p99_ns']\n"
    "r = rows('ranked.csv')\n"
    "check(r[0] == HEAD + ['standing', 'involvement', 'rank', 'flags', 'file', 'line', 'id'],\n"
    "      'csv header %r' % r[0])\n"
    "check([x[0] for x in r[1:]] == RANKED, 'csv order %r' % [x[0] for x in r[1:]])\n"
    "for row in r[1:]:\n"
    "    c = dict(zip(r[0], row))\n"
    "    n = N.get(c['name'], {})\n"
    "    check(len(row) == len(r[0]), 'csv row width %r' % row)\n"
    "    for k in ('calls', 'inclusive_ns', 'exclusive_ns', 'min_ns', 'max_ns', 'rank', 'id'):\n"
    "        check(int(c[k]) == n.get(k), 'csv %s %s %r' % (c['name'], k, c[k]))\n"
    "    for k in ('mean_ns', 'stddev_ns', 'standing', 'involvement'):\n"
    "        check(float(c[k]) == n.get(k), 'csv %s %s %r' % (c['name'], k, c[k]))\n"
    "    for k in ('p50_ns', 'p95_ns', 'p99_ns'):\n"
    "        check(c[k] == (str(n[k]) if k in n else ''), 'csv %s %s' % (c['name'], k))\n"
    "    check(c['kind'] == n.get('kind'), 'csv kind')\n"
    "    check((c['flags'].split('|') if c['flags'] else []) == n.get('flags'), 'csv flags')\n"
    "    check(c['file'] == n.get('file', '') and c['line'] == str(n.get('line', '')), 'csv "
    "file')\n"
    "r = rows('unranked.csv')\n"
    "check(r[0] == HEAD + ['file', 'line', 'id'], 'unranked csv header %r' % r[0])\n"
    "check([x[0] for x in r[1:]] == BYTOTAL, 'unranked csv order')\n"
    "for f in fails:\n"
    "    print('FAIL:', f)\n"
    "print('python checks:', 'failed' if fails else 'ok')\n"
    "sys.exit(1 if fails else 0)\n";

/* Writes the script, runs python3 on dir (mtx: the lock's name as
 * rp_node_name gives it), echoes its output; 0 when ok. */
static int run_python(const char *dir, const char *mtx)
{
    char cmd[1024], line[1024];
    int st;

    if (write_file(dir, "check.py", check_py, sizeof check_py - 1) != 0)
        return -1;
    snprintf(cmd, sizeof cmd, "python3 '%s/check.py' '%s' '%s' 2>&1", dir, dir, mtx);
    FILE *f = popen(cmd, "r");
    if (!f)
        return -1;
    while (fgets(line, sizeof line, f))
        fputs(line, stderr);
    st = pclose(f);
    return st;
}

/* The table rows: the lines after the column header, up to the first blank
 * line or "(N more rows not shown)".  Cuts text into lines. */
static int table_rows(char *text, char **rows, int max)
{
    int n = 0, in = 0;
    for (char *line = text, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = '\0';
        if (!in) {
            size_t l = strlen(line);
            in = strstr(line, "calls") && l >= 4 && !strcmp(line + l - 4, "name");
            continue;
        }
        if (!*line || line[0] == '(' || n >= max)
            break;
        rows[n++] = line;
    }
    return n;
}

/* Whether line (up to its end) has the same space-separated words as want. */
static int same_words(const char *line, const char *want)
{
    char got[1024];
    size_t n = 0;
    for (const char *s = line + strspn(line, " "); *s && *s != '\n' && n + 1 < sizeof got; s++)
        if (*s != ' ' || (s[1] != ' ' && s[1] != '\n' && s[1]))
            got[n++] = *s;
    got[n] = '\0';
    if (strcmp(got, want))
        fprintf(stderr, "row:  '%s'\nwant: '%s'\n", got, want);
    return !strcmp(got, want);
}

/* The line of text that starts with prefix, or NULL. */
static const char *line_starting(const char *text, const char *prefix)
{
    for (const char *s = text; s; s = strchr(s, '\n') ? strchr(s, '\n') + 1 : NULL)
        if (!strncmp(s, prefix, strlen(prefix)))
            return s;
    return NULL;
}

static void test_table(struct rp_profile *p)
{
    struct rp_report_opts o = {.sort = RP_SORT_RANK, .ranked = 1, .flagged = 1};
    char mtx[256];
    const char *const order[] = {"dispatch (demo.c:20)",
                                 "main (demo.c:10)",
                                 "pool_worker",
                                 rp_node_name(p, &nodes[MTX], mtx, sizeof mtx),
                                 "worker_a",
                                 "worker_b",
                                 WEIRD_TTY};
    char *t = render(rp_report_table, p, &o, NULL), *copy, *rows[16];

    CHECK(t != NULL);
    if (!t)
        return;
    fputs(t, stdout);
    /* header: program, run, threads' time, threads, events, the lost-events warning,
     * unmatched/unclosed, how the run ended, the ranking */
    CHECK(strstr(t, "/usr/bin/demo") && strstr(t, "pid 4242"));
    CHECK(strstr(t, "threads' time 2.00us") && strstr(t, "2 threads") && strstr(t, "80 events"));
    CHECK(strstr(t, "WARNING") && strstr(t, "dropped 3 events"));
    CHECK(strstr(t, "1 unmatched exit ") && strstr(t, "2 unclosed spans"));
    CHECK(strstr(t, "ended normally, exit status 0"));
    { /* without RP_END_STATUS (a return from main): no status said */
        p->end_flags &= ~RP_END_STATUS;
        char *t2 = render(rp_report_table, p, &o, NULL);
        CHECK(t2 && strstr(t2, "run: ended normally\n") && !strstr(t2, "exit status"));
        free(t2);
        p->end_flags |= RP_END_STATUS;
    }
    CHECK(strstr(t, "time weights, alpha 0.01, 42 iterations, residual 1e-13"));
    CHECK(!strchr(t, '\033')); /* no colour unless asked */
    CHECK(!strchr(t, '\x01') && !strstr(t, "\xff"));

    /* the why-line of the flagged dispatch row, after the table */
    const char *why = line_starting(t, "dispatch ");
    CHECK(why && strstr(why, "DISPATCH") < strchr(why, '\n'));
    CHECK(line_starting(t, order[3]) != NULL);
    CHECK(line_starting(t, "main ") == NULL); /* main carries no flags */

    copy = strdup(t);
    int n = table_rows(copy, rows, 16);
    CHECK(n == 7);
    for (int i = 0; i < n && i < 7; i++) {
        size_t ol = strlen(order[i]), rl = strlen(rows[i]);
        CHECK(rl > ol && !strcmp(rows[i] + rl - ol, order[i]));
        /* aligned: the name column starts at the same offset in every row */
        CHECK(rl - ol == strlen(rows[0]) - strlen(order[0]));
    }
    /* rank, standing, involvement, calls, total, self, avg, max, p95, flags, name */
    if (n == 7) {
        CHECK(same_words(rows[0], "1 47.5% 95.0% 3 950ns 45ns 317ns 500ns 500ns DISPATCH "
                                  "dispatch (demo.c:20)"));
        CHECK(same_words(rows[1], "2 50.0% 100.0% 1 1.00us 50ns 1.00us 1.00us - main (demo.c:10)"));
        CHECK(same_words(rows[2], "3 25.0% 50.0% 30 1.05us 55ns 35ns 74ns - pool_worker"));
        CHECK(same_words(rows[4], "5 22.5% 45.0% 100 455ns 455ns 5ns 15ns 4ns JITTER worker_a"));
        CHECK(same_words(rows[5], "6 15.0% 30.0% 7 300ns 300ns 43ns 74ns 74ns worker_b"));
    }
    free(copy);
    free(t);

    /* colour: only the flags, only when asked */
    o.color = 1;
    t = render(rp_report_table, p, &o, NULL);
    CHECK(t && strstr(t, "\033[1;36mDISPATCH\033[0m"));
    free(t);

    /* limit */
    o.color = 0;
    o.limit = 2;
    t = render(rp_report_table, p, &o, NULL);
    copy = t ? strdup(t) : NULL;
    CHECK(copy && table_rows(copy, rows, 16) == 2 && strstr(t, "(5 more rows not shown)"));
    free(copy);
    free(t);

    /* unranked, unflagged: no rank, standing, involvement or flags anywhere */
    struct rp_report_opts u = {.sort = RP_SORT_TOTAL};
    t = render(rp_report_table, p, &u, NULL);
    CHECK(t && !strstr(t, "rank:") && !strstr(t, "standing") && !strstr(t, "involved"));
    CHECK(t && line_starting(t, "calls ") != NULL); /* the column header */
    CHECK(t && !strstr(t, "flags") && !strstr(t, "DISPATCH"));
    copy = t ? strdup(t) : NULL;
    n = copy ? table_rows(copy, rows, 16) : 0;
    CHECK(n == 7);
    if (n == 7)
        CHECK(same_words(rows[0], "30 1.05us 55ns 35ns 74ns - pool_worker"));
    free(copy);
    free(t);

    /* durations: three significant digits, the unit changing at 1000 */
    static const struct {
        uint64_t ticks; /* 2 per ns */
        const char *shown;
    } durs[] = {{0, "0ns"},           {1998, "999ns"},          {1999, "1.00us"},
                {24690, "12.3us"},    {246900, "123us"},        {1999000, "1.00ms"},
                {91200000, "45.6ms"}, {5000000000ull, "2.50s"}, {2468000000000ull, "1234s"}};
    uint64_t total = p->total;
    for (size_t i = 0; i < sizeof durs / sizeof durs[0]; i++) {
        char want[64];
        p->total = durs[i].ticks;
        snprintf(want, sizeof want, "threads' time %s ", durs[i].shown);
        t = render(rp_report_table, p, &u, NULL);
        CHECK(t && strstr(t, want));
        if (t && !strstr(t, want))
            fprintf(stderr, "want '%s' in: %.*s\n", want, (int)strcspn(t, "\n"), t);
        free(t);
    }
    p->total = total;
    /* the run: first to last event (2 ticks per ns), beside the threads' time */
    uint64_t first = p->first_tick, last = p->last_tick;
    p->first_tick = 1000;
    p->last_tick = 4000;
    t = render(rp_report_table, p, &u, NULL);
    CHECK(t && strstr(t, "run 1.50us, threads' time 2.00us  2 threads"));
    free(t);
    p->first_tick = first;
    p->last_tick = last;

    /* --weight cpu named under a time ranking whose first rows are blocked
     * time: here none is a wait, and none is, until main (2nd) spends
     * 60 % of its time blocked below it; not at 40 % */
    t = render(rp_report_table, p, &o, NULL);
    CHECK(t && !strstr(t, "--weight cpu"));
    free(t);
    for (int k = 0; k < 2; k++) {
        struct rp_node_x x = rp_node_x_get(&nodes[MAIN]);
        x.blocked = (k ? 0.4 : 0.6) * (double)nodes[MAIN].incl;
        CHECK(rp_node_x_set(&nodes[MAIN], &x) == 0);
        t = render(rp_report_table, p, &o, NULL);
        CHECK(t && (strstr(t, "--weight cpu") != NULL) == (k == 0));
        free(t);
    }
    struct rp_node_x xm = rp_node_x_get(&nodes[MAIN]);
    xm.blocked = 0.0;
    CHECK(rp_node_x_set(&nodes[MAIN], &xm) == 0);

    /* off-CPU records lost: the line says where their time went */
    snprintf(p->offcpu_src, sizeof p->offcpu_src, "perf");
    p->offcpu_lost = 5;
    t = render(rp_report_table, p, &u, NULL);
    CHECK(t && strstr(t, "5 switch records lost, 0") &&
          strstr(t, "intervals not placed: the time off CPU they held is in self times"));
    free(t);
    p->offcpu_lost = 0;
    p->offcpu_src[0] = '\0';

    /* a run that did not end */
    p->ended = 0;
    t = render(rp_report_table, p, &u, NULL);
    CHECK(t && strstr(t, "did not end normally"));
    /* and that what was not flushed is not in the lost count */
    CHECK(t && strstr(t, "  what the threads recorded after the last periodic flush"));
    CHECK(t && strstr(t, "is missing, not") && strstr(t, "counted as lost"));
    free(t);
    p->ended = 1;
}

static void test_order(const struct rp_profile *p)
{
    uint32_t ord[NNODES];
    static const uint32_t by_rank[] = {DISPATCH, MAIN, POOL, MTX, WORKER_A, WORKER_B, WEIRDN};

    CHECK(rp_report_order(p, RP_SORT_RANK, ord) == 7);
    CHECK(!memcmp(ord, by_rank, sizeof by_rank));
    CHECK(rp_report_order(p, RP_SORT_SELF, ord) == 7 && ord[0] == MTX && ord[1] == WORKER_A);
    CHECK(rp_report_order(p, RP_SORT_TOTAL, ord) == 7 && ord[0] == POOL && ord[1] == MAIN);
    CHECK(rp_report_order(p, RP_SORT_CALLS, ord) == 7 && ord[0] == WORKER_A && ord[1] == MTX);
    CHECK(rp_report_order(p, RP_SORT_MAX, ord) == 7 && ord[0] == MAIN && ord[1] == DISPATCH);
    /* pool_worker and worker_b share max = 148: ties go by name */
    CHECK(ord[4] == POOL && ord[5] == WORKER_B);
}

static struct rp_profile prof;

static void test_order_prof(void)
{
    test_order(&prof);
}
static void test_table_prof(void)
{
    test_table(&prof);
}

/* JSON and CSV, read back by Python; NaN and infinities (which it leaves in
 * the profile); a write error. */
static void test_render(void)
{
    char dir[] = "/tmp/rp_test_report.XXXXXX";
    static const char *const files[] = {"ranked.json", "unranked.json", "limit.json",
                                        "ranked.csv",  "unranked.csv",  "check.py"};

    CHECK(mkdtemp(dir) != NULL);
    struct rp_report_opts r = {.sort = RP_SORT_RANK, .ranked = 1, .flagged = 1};
    struct rp_report_opts u = {.sort = RP_SORT_TOTAL};
    struct rp_report_opts l = {.sort = RP_SORT_RANK, .ranked = 1, .flagged = 1, .limit = 2};
    char *j = render_to(dir, "ranked.json", rp_report_json, &prof, &r);
    char warn[sizeof prof.warn];
    memcpy(warn, prof.warn, sizeof warn);
    prof.warn[0] = '\0';
    free(render_to(dir, "unranked.json", rp_report_json, &prof, &u));
    memcpy(prof.warn, warn, sizeof warn);
    free(render_to(dir, "limit.json", rp_report_json, &prof, &l));
    free(render_to(dir, "ranked.csv", rp_report_csv, &prof, &r));
    free(render_to(dir, "unranked.csv", rp_report_csv, &prof, &u));
    /* the raw bytes never reach the JSON text */
    CHECK(j && !strchr(j, '\x01') && !strstr(j, "\xff") && strstr(j, "\\u0001"));
    free(j);
    char mtx[256];
    const char *mtx_name = rp_node_name(&prof, &nodes[MTX], mtx, sizeof mtx);
    CHECK(strncmp(mtx_name, "mtx", 3) == 0 && !strchr(mtx_name, '\''));
    CHECK(run_python(dir, mtx_name) == 0);

    /* NaN and infinities never reach JSON */
    nodes[WORKER_B].pi = 0.0 / 0.0;
    nodes[WORKER_A].pi = 1.0 / 0.0;
    prof.rank.residual = -1.0 / 0.0;
    j = render(rp_report_json, &prof, &r, NULL);
    CHECK(j && !strstr(j, "nan") && !strstr(j, "inf") && !strstr(j, "NaN"));
    free(j);

    /* a write error is reported */
    FILE *full = fopen("/dev/full", "w");
    if (full) {
        CHECK(rp_report_json(full, &prof, &r) == RP_EIO);
        fclose(full);
    }

    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", dir, files[i]);
        unlink(path);
    }
    rmdir(dir);
}

/* JSON numbers: each the shortest of %.15g/%.17g that reads back, whole
 * numbers included (formatted without printf), checked against printf */
static void test_num_str(void)
{
    static const double v[] = {0.0,
                               -0.0,
                               1.0,
                               -1.0,
                               7.0,
                               10.0,
                               123456789.0,
                               -987654321.0,
                               999999999999999.0,
                               1e15,
                               1e15 + 2,
                               -1e15,
                               4294967296.0,
                               9007199254740993.0,
                               0.5,
                               0.1,
                               1.0 / 3,
                               2.3e-7,
                               1e300,
                               -2.5,
                               18446744073709551616.0,
                               0.434782608695652};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        char got[40], want[40];
        rp_num_str(got, v[i]);
        snprintf(want, sizeof want, "%.15g", v[i]);
        if (strtod(want, NULL) != v[i])
            snprintf(want, sizeof want, "%.17g", v[i]);
        CHECK(strcmp(got, want) == 0);
        CHECK(strtod(got, NULL) == v[i]);
    }
    char b[40];
    CHECK(strcmp(rp_num_str(b, 0.0 / 0.0), "0") == 0);
    CHECK(strcmp(rp_num_str(b, -1.0 / 0.0), "0") == 0);
    CHECK(strcmp(rp_num_str(b, 42.0), "42") == 0 && strcmp(rp_num_str(b, -0.0), "-0") == 0);
}

static const struct check_case cases[] = {
    {"num_str", test_num_str},
    {"order", test_order_prof},
    {"table", test_table_prof},
    {"render", test_render},
};

int main(int argc, char **argv)
{
    build(&prof);
    int rc = check_run("test_report", argc, argv, cases, sizeof cases / sizeof cases[0]);
    for (int i = 0; i < NNODES; i++) {
        if (nodes[i].x) {
            rp_hist_free(&nodes[i].x->hist);
            rp_flag_hists_free(&nodes[i].x->fh);
        }
        free(nodes[i].x);
    }
    return rc;
}

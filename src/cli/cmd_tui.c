// SPDX-License-Identifier: MIT
/*
 * cmd_tui.c - `rankprof tui`: a terminal browser of the profile (ncurses),
 * with the keys of perf report and uftrace tui (docs/tui.md).
 *
 * Three views on a stack, Left or q going back down it:
 *
 *   table    the ranked rows, as `rankprof report` ranks them; Enter opens
 *            the row, s changes the order, / searches a name, n again
 *   node     one row: its numbers, why it carries its flags, its callers
 *            and callees (Enter on one opens it), r its calls as a tree
 *   replay   `rankprof replay -F NAME` of the row, the first lines of it
 *
 * The replay text is made when asked for, into memory, up to REPLAY_MAX
 * bytes (the rest is said to be left out); everything else is the profile
 * rp_load built.  Memory: the profile, one row order, one replay text.
 */
#define _GNU_SOURCE /* memrchr */
#include <curses.h>
#include <inttypes.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyze/flags.h"
#include "cli.h"
#include "common/error.h"
#include "report/calltree.h"
#include "report/report.h"
#include "report/util.h"

#define NAME_BUF   512
#define MAX_VIEWS  64
#define REPLAY_MAX (4u << 20)

enum view { V_TABLE, V_NODE, V_REPLAY };

struct view_state {
    enum view kind;
    uint32_t node; /* V_NODE, V_REPLAY: the node index */
    int sel, top;  /* selected line, first line shown */
};

struct tui {
    struct rp_profile *p;
    const struct rp_flag_opts *flag;
    struct rp_load_opts *lo;
    uint32_t *rows, n_rows;
    enum rp_sort sort;
    struct view_state st[MAX_VIEWS];
    int depth;
    char search[128];
    char *replay; /* the replay text of replay_node, NUL-terminated */
    size_t replay_len;
    uint32_t replay_node;
    const char *msg; /* shown once on the status line */
};

static const char *const sort_name[] = {"rank", "self", "total", "calls", "max"};

static double ns(const struct tui *t, uint64_t ticks)
{
    return (double)ticks * t->p->ns_per_tick;
}

static const char *node_name(const struct tui *t, uint32_t i, char *buf, size_t n)
{
    return rp_node_name(t->p, &t->p->nodes[i], buf, n);
}

/* ---- lines of each view -------------------------------------------------- */

/* The callers (dir 0) or callees (dir 1) of node i: edge indices into e,
 * by time, at most max.  Returns how many. */
static uint32_t edges_of(const struct tui *t, uint32_t i, int dir, uint32_t *e, uint32_t max)
{
    uint32_t n = 0;
    for (uint32_t k = 0; k < t->p->n_edges && n < max; k++) {
        const struct rp_edge *x = &t->p->edges[k];
        if ((dir ? x->caller : x->callee) == i)
            e[n++] = k;
    }
    for (uint32_t a = 1; a < n; a++) /* insertion sort: few edges */
        for (uint32_t b = a; b > 0 && t->p->edges[e[b]].incl > t->p->edges[e[b - 1]].incl; b--) {
            uint32_t x = e[b];
            e[b] = e[b - 1];
            e[b - 1] = x;
        }
    return n;
}

#define MAX_EDGES 512

/* The node view's selectable lines: callers then callees, as node indices
 * (0: a heading or <root>, not selectable). */
struct node_lines {
    uint32_t callers[MAX_EDGES], callees[MAX_EDGES];
    uint32_t n_callers, n_callees;
};

/* ---- drawing ------------------------------------------------------------- */

static void status(const struct tui *t, const char *keys)
{
    int h = LINES - 1;
    move(h, 0);
    clrtoeol();
    attron(A_REVERSE);
    mvprintw(h, 0, " %s", t->msg ? t->msg : keys);
    for (int x = getcurx(stdscr); x < COLS; x++)
        addch(' ');
    attroff(A_REVERSE);
}

static void clamp(struct view_state *v, int n, int page)
{
    if (v->sel >= n)
        v->sel = n - 1;
    if (v->sel < 0)
        v->sel = 0;
    if (v->top > v->sel)
        v->top = v->sel;
    if (v->sel >= v->top + page)
        v->top = v->sel - page + 1;
    if (v->top < 0)
        v->top = 0;
}

static void draw_table(struct tui *t, struct view_state *v)
{
    char nb[NAME_BUF], c[6][32], fl[64];
    int page = LINES - 4;
    clamp(v, (int)t->n_rows, page);
    erase();
    attron(A_BOLD);
    mvprintw(0, 0, "rankprof: %s  %" PRIu32 " rows, sorted by %s",
             t->p->program ? t->p->program : "?", t->n_rows, sort_name[t->sort]);
    mvprintw(2, 0, "%5s %9s %9s %9s %9s %9s  %-13s %s", "rank", "standing", "calls", "total",
             "self", "p95", "flags", "name");
    attroff(A_BOLD);
    for (int r = 0; r < page && v->top + r < (int)t->n_rows; r++) {
        uint32_t i = t->rows[v->top + r];
        const struct rp_node *n = &t->p->nodes[i];
        snprintf(c[0], sizeof c[0], "%.2f%%", rp_node_standing(t->p, n) * 100);
        snprintf(c[1], sizeof c[1], "%" PRIu64, n->calls + rp_node_throttled(n));
        rp_fmt_ns(ns(t, n->incl), c[2], sizeof c[2]);
        rp_fmt_ns(ns(t, n->excl), c[3], sizeof c[3]);
        uint64_t q95 = 0;
        int below = rp_node_q_all(t->p, n, 0.95, &q95); /* as the table's p95 */
        if (below == 1)
            rp_fmt_below_res(t->p, c[4], sizeof c[4]);
        else
            rp_fmt_ns(below == 0 ? ns(t, q95) : 0, c[4], sizeof c[4]);
        rp_flags_str(n->flags, fl, sizeof fl);
        if (v->top + r == v->sel)
            attron(A_REVERSE);
        mvprintw(3 + r, 0, "%5" PRIu32 " %9s %9s %9s %9s %9s  %-13s %.*s", n->rank, c[0], c[1],
                 c[2], c[3], c[4], fl, COLS > 72 ? COLS - 72 : 0, node_name(t, i, nb, sizeof nb));
        for (int x = getcurx(stdscr); v->top + r == v->sel && x < COLS; x++)
            addch(' ');
        attroff(A_REVERSE);
    }
    status(t, "Enter: open  s: sort  /: search  n: next  ?: help  q: quit");
}

/* One line of the node view's numbers. */
static void stat_line(int *y, const char *label, const char *value)
{
    if (*y < LINES - 1)
        mvprintw((*y)++, 2, "%-12s %s", label, value);
}

static void draw_node(struct tui *t, struct view_state *v, struct node_lines *nl)
{
    const struct rp_node *n = &t->p->nodes[v->node];
    char nb[NAME_BUF], b[256], d[4][32];
    int y = 0;
    erase();
    attron(A_BOLD);
    mvprintw(y++, 0, "%.*s", COLS, node_name(t, v->node, nb, sizeof nb));
    attroff(A_BOLD);
    if (n->file)
        mvprintw(y++, 2, "%s:%" PRIu32, n->file, n->line);
    y++;
    snprintf(b, sizeof b, "%" PRIu64 "%s", n->calls + rp_node_throttled(n),
             rp_node_throttled(n) ? " (some counted only: --throttle)" : "");
    stat_line(&y, "calls", b);
    snprintf(b, sizeof b, "%s total, %s self", rp_fmt_ns(ns(t, n->incl), d[0], sizeof d[0]),
             rp_fmt_ns(ns(t, n->excl), d[1], sizeof d[1]));
    stat_line(&y, "time", b);
    struct rp_hist hb;
    if (rp_node_hist(n, &hb)->n) {
        snprintf(b, sizeof b, "p50 %s  p95 %s  p99 %s  max %s",
                 rp_fmt_ns(ns(t, rp_node_q(n, 0.5)), d[0], sizeof d[0]),
                 rp_fmt_ns(ns(t, rp_node_q(n, 0.95)), d[1], sizeof d[1]),
                 rp_fmt_ns(ns(t, rp_node_q(n, 0.99)), d[2], sizeof d[2]),
                 rp_fmt_ns(ns(t, rp_node_max(n)), d[3], sizeof d[3]));
        stat_line(&y, "per call", b);
    }
    snprintf(b, sizeof b, "rank %" PRIu32 ", standing %.2f%%, involved %.1f%%", n->rank,
             rp_node_standing(t->p, n) * 100, rp_node_involvement(t->p, n) * 100);
    stat_line(&y, "ranking", b);
    if (n->flags && rp_flags_explain(t->p, n, t->flag, b, sizeof b))
        stat_line(&y, "flags", b);
    y++;
    /* callers and callees: the selectable lines */
    nl->n_callers = edges_of(t, v->node, 0, nl->callers, MAX_EDGES);
    nl->n_callees = edges_of(t, v->node, 1, nl->callees, MAX_EDGES);
    int total = (int)(nl->n_callers + nl->n_callees), page = LINES - 1 - y - 2;
    if (page < 1)
        page = 1;
    clamp(v, total, page);
    int line = 0;
    for (int part = 0; part < 2; part++) {
        uint32_t cnt = part ? nl->n_callees : nl->n_callers;
        const uint32_t *e = part ? nl->callees : nl->callers;
        if (y < LINES - 1) {
            attron(A_BOLD);
            mvprintw(y++, 0, "%s (%" PRIu32 ")", part ? "callees" : "callers", cnt);
            attroff(A_BOLD);
        }
        for (uint32_t k = 0; k < cnt; k++, line++) {
            if (line < v->top || line >= v->top + page || y >= LINES - 1)
                continue;
            const struct rp_edge *x = &t->p->edges[e[k]];
            uint32_t other = part ? x->callee : x->caller;
            /* callers: their share of its calls; callees: of its time */
            double share = part ? (n->incl ? 100.0 * (double)x->incl / (double)n->incl : 0)
                                : (n->calls ? 100.0 * (double)x->calls / (double)n->calls : 0);
            if (line == v->sel)
                attron(A_REVERSE);
            mvprintw(y++, 2, "%10" PRIu64 " calls %9s %6.1f%%  %.*s", x->calls,
                     rp_fmt_ns(ns(t, x->incl), d[0], sizeof d[0]), share, COLS > 40 ? COLS - 40 : 0,
                     other ? node_name(t, other, nb, sizeof nb) : "<root>");
            attroff(A_REVERSE);
        }
    }
    status(t, "Enter: open caller/callee  r: its calls as a tree  Left/q: back  ?: help");
}

/* Makes the replay text of node i (rp_calltree -F NAME into memory). */
static void make_replay(struct tui *t, uint32_t i)
{
    char nb[NAME_BUF], err[512] = "";
    free(t->replay);
    t->replay = NULL;
    t->replay_len = 0;
    FILE *f = open_memstream(&t->replay, &t->replay_len);
    if (!f)
        return;
    struct rp_calltree_opts o = {.n_only = 1};
    o.only[0] = node_name(t, i, nb, sizeof nb);
    int rc = rp_calltree(f, t->lo->input, &t->lo->replay, t->p, &o, err, sizeof err);
    if (rc < 0)
        fprintf(f, "(replay stopped: %s)\n", err[0] ? err : rp_strerror(rc));
    fclose(f);
    if (t->replay_len > REPLAY_MAX) { /* (cut at a line) */
        char *nl = memrchr(t->replay, '\n', REPLAY_MAX);
        t->replay_len = nl ? (size_t)(nl - t->replay) + 1 : REPLAY_MAX;
        t->replay[t->replay_len] = 0;
        t->msg = "the replay is long: its first 4 MiB are shown";
    }
    t->replay_node = i;
}

static int replay_lines(const struct tui *t)
{
    int n = 0;
    for (size_t k = 0; k < t->replay_len; k++)
        n += t->replay[k] == '\n';
    return n;
}

static void draw_replay(struct tui *t, struct view_state *v)
{
    char nb[NAME_BUF];
    int page = LINES - 2, n = replay_lines(t);
    clamp(v, n, page);
    v->top = v->sel; /* (the selection is the first line shown) */
    if (v->top > n - page)
        v->top = n - page > 0 ? n - page : 0;
    erase();
    attron(A_BOLD);
    mvprintw(0, 0, "calls of %.*s", COLS - 10, node_name(t, v->node, nb, sizeof nb));
    attroff(A_BOLD);
    const char *s = t->replay ? t->replay : "";
    for (int line = 0; *s && line < v->top + page; line++) {
        const char *e = strchr(s, '\n');
        int len = e ? (int)(e - s) : (int)strlen(s);
        if (line >= v->top)
            mvprintw(1 + line - v->top, 0, "%.*s", len < COLS ? len : COLS, s);
        s = e ? e + 1 : s + len;
    }
    status(t, "Up/Down/PgUp/PgDn: scroll  Left/q: back");
}

static void draw_help(void)
{
    static const char *const text[] = {
        "rankprof tui: keys",
        "",
        "  Up/Down, k/j     move",
        "  PgUp/PgDn        a page",
        "  Home/End, g/G    first, last",
        "  Enter, Right     open the row (table), the caller or callee (row)",
        "  Left, q, Bksp    back; q in the table quits",
        "  s                order: rank, self, total, calls, max (table)",
        "  /                search a name (table); n: the next match",
        "  r                the row's calls as a tree (rankprof replay -F NAME)",
        "  ?, h             this help",
        "",
        "any key: back",
    };
    erase();
    for (size_t i = 0; i < sizeof text / sizeof text[0] && (int)i < LINES; i++)
        mvprintw((int)i, 0, "%s", text[i]);
    refresh();
    getch();
}

/* ---- keys ---------------------------------------------------------------- */

static void resort(struct tui *t, enum rp_sort s)
{
    t->sort = s;
    t->n_rows = rp_report_order(t->p, s, t->rows);
}

/* Moves the table's selection to the next row whose name holds t->search. */
static void search_next(struct tui *t, struct view_state *v)
{
    char nb[NAME_BUF];
    for (uint32_t k = 1; k <= t->n_rows && t->search[0]; k++) {
        uint32_t r = ((uint32_t)v->sel + k) % t->n_rows;
        if (strstr(node_name(t, t->rows[r], nb, sizeof nb), t->search)) {
            v->sel = (int)r;
            return;
        }
    }
    t->msg = "no such name";
}

static void push(struct tui *t, enum view kind, uint32_t node)
{
    if (t->depth + 1 < MAX_VIEWS)
        t->st[++t->depth] = (struct view_state){.kind = kind, .node = node};
}

/* Handles key c in the current view.  Returns 0 to quit. */
static int key(struct tui *t, int c, struct node_lines *nl)
{
    struct view_state *v = &t->st[t->depth];
    int page = LINES - 4;
    t->msg = NULL;
    switch (c) {
    case KEY_UP:
    case 'k':
        v->sel--;
        break;
    case KEY_DOWN:
    case 'j':
        v->sel++;
        break;
    case KEY_PPAGE:
        v->sel -= page;
        break;
    case KEY_NPAGE:
    case ' ':
        v->sel += page;
        break;
    case KEY_HOME:
    case 'g':
        v->sel = 0;
        break;
    case KEY_END:
    case 'G':
        v->sel = 1 << 30;
        break;
    case '?':
    case 'h':
        draw_help();
        break;
    case 'q':
    case KEY_LEFT:
    case KEY_BACKSPACE:
    case 127:
        if (!t->depth)
            return c != 'q' ? 1 : 0;
        t->depth--;
        break;
    case '\n':
    case KEY_ENTER:
    case KEY_RIGHT:
        if (v->kind == V_TABLE && t->n_rows) {
            push(t, V_NODE, t->rows[v->sel]);
        } else if (v->kind == V_NODE) {
            uint32_t k = (uint32_t)v->sel;
            uint32_t e = k < nl->n_callers                   ? nl->callers[k]
                         : k - nl->n_callers < nl->n_callees ? nl->callees[k - nl->n_callers]
                                                             : UINT32_MAX;
            if (e != UINT32_MAX) {
                uint32_t other = k < nl->n_callers ? t->p->edges[e].caller : t->p->edges[e].callee;
                if (other)
                    push(t, V_NODE, other);
            }
        }
        break;
    case 'r':
        if (v->kind == V_NODE) {
            if (!t->replay || t->replay_node != v->node) {
                status(t, "walking the trace...");
                refresh();
                make_replay(t, v->node);
            }
            push(t, V_REPLAY, v->node);
        }
        break;
    case 's':
        if (v->kind == V_TABLE) {
            resort(t, (enum rp_sort)((t->sort + 1) % 5));
            v->sel = v->top = 0;
        }
        break;
    case '/':
        if (v->kind == V_TABLE) {
            move(LINES - 1, 0);
            clrtoeol();
            mvprintw(LINES - 1, 0, "/");
            echo();
            curs_set(1);
            getnstr(t->search, sizeof t->search - 1);
            noecho();
            curs_set(0);
            search_next(t, v);
        }
        break;
    case 'n':
        if (v->kind == V_TABLE)
            search_next(t, v);
        break;
    default:
        break;
    }
    return 1;
}

static void run(struct tui *t)
{
    struct node_lines *nl = calloc(1, sizeof(*nl));
    if (!nl)
        return;
    for (;;) {
        struct view_state *v = &t->st[t->depth];
        if (v->kind == V_TABLE)
            draw_table(t, v);
        else if (v->kind == V_NODE)
            draw_node(t, v, nl);
        else
            draw_replay(t, v);
        refresh();
        int c = getch();
        if (c == ERR || !key(t, c, nl))
            break;
    }
    free(nl);
}

int cmd_tui(int argc, char **argv)
{
    struct rp_load_opts lo;
    rp_load_opts_default(&lo);
    lo.keep_maps = 1; /* (the replay view walks a run's files again) */
    rp_opt_input_args("tui", rp_parse_input_opts("tui", argc, argv, &lo, 3), argc, argv, &lo);
    if (!isatty(0) || !isatty(1))
        rp_die("tui needs a terminal (rankprof report prints the table to a pipe)");

    struct rp_profile p = {0};
    rp_load(&lo, &p);
    struct tui t = {.p = &p, .flag = &lo.flag, .lo = &lo};
    t.rows = malloc(sizeof(*t.rows) * (p.n_nodes ? p.n_nodes : 1));
    if (!t.rows)
        rp_die("out of memory");
    resort(&t, RP_SORT_RANK);

    /* the terminal's characters only: numbers, read (strtod) and printed,
     * keep their decimal point when the replay view reads the trace again */
    setlocale(LC_CTYPE, "");
    if (!initscr())
        rp_die("tui: cannot start the terminal (TERM=%s)", getenv("TERM") ? getenv("TERM") : "");
    cbreak();
    noecho();
    keypad(stdscr, TRUE);
    curs_set(0);
    run(&t);
    endwin();
    free(t.replay);
    free(t.rows);
    rp_profile_free(&p);
    return 0;
}

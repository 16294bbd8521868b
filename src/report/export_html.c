// SPDX-License-Identifier: MIT
/*
 * export_html.c - one self-contained HTML page a person can open: the
 * ranked, flagged, sortable table; callers and callees of the function
 * picked in it; the flame graph; and the sequence diagram when the build
 * has one (the "mermaid" entry of the format table).
 *
 * No network: styles and scripts are inline, the flame graph is the SVG of
 * export_flame.c inlined, and the data the script needs (names and edges)
 * is one JSON object in a <script> element.  The table rows are plain HTML
 * so the page reads without JavaScript too; the script only sorts, fills
 * the callers/callees panel and shows the selection.
 *
 * Everything from the trace is escaped: HTML text and attributes with
 * entities, JSON inside <script> with '<', '>' and '&' as \u escapes, so no
 * name can close the element.
 */
#define _GNU_SOURCE /* open_memstream */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "analyze/flags.h"
#include "common/error.h"
#include "report/export.h"
#include "report/seq.h"
#include "report/util.h"

#define SEQ_MAX_BYTES (256u << 10) /* a larger diagram is cut, saying so */

/* HTML text or attribute value; invalid UTF-8 and controls become U+FFFD. */
static void put_html(FILE *out, const char *str)
{
    rp_export_put_markup(out, str, SIZE_MAX, 1);
}

/* A duration in ns into buf (40 bytes), as rp_fmt_ns prints it. */
static const char *dur(char *buf, double ns)
{
    return rp_fmt_ns(ns, buf, 40);
}

static const char style[] =
    "body{font:14px/1.4 system-ui,sans-serif;margin:1em 2em;color:#222;background:#fff}"
    "h1{font-size:1.4em;margin:.2em 0}h2{font-size:1.15em;margin:1.4em 0 .4em}"
    ".meta{color:#555}nav a{margin-right:1em}"
    "table{border-collapse:collapse}th,td{padding:2px 8px;text-align:right;"
    "border-bottom:1px solid #eee;white-space:nowrap}"
    "th{cursor:pointer;background:#f3f3f3;position:sticky;top:0}th.sorted{background:#dde}"
    "td.name,th.name,td.kind,td.flags,td.why{text-align:left}td.why{white-space:normal}td.name{"
    "font-family:monospace}"
    "#profile tbody tr{cursor:pointer}#profile tbody tr:hover{background:#f6f6ff}"
    "#profile tr.sel{background:#ffe9b0}.flag{font-size:.8em;background:#c33;color:#fff;"
    "border-radius:3px;padding:0 4px;margin-right:2px}"
    ".seq-svg{overflow:auto;max-height:60em}.seq-note{color:#a40}"
    ".panes{display:flex;gap:3em;flex-wrap:wrap}pre{background:#f7f7f7;padding:.6em;"
    "max-height:30em;overflow:auto}";

static const char script[] =
    "(function(){\n"
    "var D=JSON.parse(document.getElementById('rp-data').textContent);\n"
    "function fmt(ns){if(ns<1e3)return ns.toFixed(0)+'ns';if(ns<1e6)return (ns/1e3)"
    ".toFixed(2)+'us';if(ns<1e9)return (ns/1e6).toFixed(2)+'ms';return (ns/1e9).toFixed(3)"
    "+'s';}\n"
    "function esc(s){return s.replace(/[&<>\"]/g,function(c){return {'&':'&amp;','<':'&lt;',"
    "'>':'&gt;','\"':'&quot;'}[c];});}\n"
    "function pane(id,title,rows,total){var h='<h3>'+title+'</h3><table><thead><tr>"
    "<th class=name>name</th><th>calls</th><th>time</th><th>share</th></tr></thead><tbody>';\n"
    " rows.sort(function(a,b){return b[3]-a[3];});\n"
    " rows.forEach(function(r){h+='<tr data-id='+r[0]+'><td class=name>'+esc(D.names[r[0]])+"
    "'</td><td>'+r[2]+'</td><td>'+fmt(r[3])+'</td><td>'+(r[0]===r[1]||r[3]>total?'recursive':"
    "(total?(100*r[3]/total).toFixed(1):'0')+'%')+'</td></tr>';});\n"
    " if(!rows.length)h+='<tr><td class=name>(none)</td></tr>';\n"
    " document.getElementById(id).innerHTML=h+'</tbody></table>';}\n"
    "function select(id){var tot=0;document.querySelectorAll('#profile tbody tr')."
    "forEach(function(tr){var s=+tr.getAttribute('data-id')===id;tr.classList.toggle('sel',s);"
    "if(s)tot=+tr.getAttribute('data-incl');});\n"
    " document.getElementById('sel').textContent=D.names[id];\n"
    " var inn=[],outs=[],sin=0;D.edges.forEach(function(e){if(e[1]===id){inn.push([e[0],e[1],"
    "e[2],e[3]]);if(e[0]!==id)sin+=e[3];}if(e[0]===id)outs.push([e[1],e[0],e[2],e[3]]);});\n"
    /* its time in every activation but those it called itself (the shares'
     * base: more than its inclusive time when it recursed through others,
     * rp_node_share_base) */
    " if(sin>tot)tot=sin;\n"
    " pane('callers','callers (share of its time)',inn,tot);"
    "pane('callees','callees (share of its time)',outs,tot);}\n"
    "var tb=document.querySelector('#profile tbody');\n"
    "tb.addEventListener('click',function(ev){var tr=ev.target.closest('tr');"
    "if(tr)select(+tr.getAttribute('data-id'));});\n"
    "['callers','callees'].forEach(function(p){document.getElementById(p).addEventListener("
    "'click',function(ev){var tr=ev.target.closest('tr[data-id]');if(tr&&tr.getAttribute("
    "'data-id')!=='0')select(+tr.getAttribute('data-id'));});});\n"
    "document.querySelectorAll('#profile th').forEach(function(th,col){var dir=1;\n"
    " th.addEventListener('click',function(){dir=-dir;var rows=Array.prototype.slice.call("
    "tb.rows);\n"
    "  rows.sort(function(a,b){var x=a.cells[col].getAttribute('data-v'),y=b.cells[col]"
    ".getAttribute('data-v');var nx=parseFloat(x),ny=parseFloat(y);\n"
    "   var c=(isNaN(nx)||isNaN(ny))?x.localeCompare(y):nx-ny;return dir*c;});\n"
    "  rows.forEach(function(r){tb.appendChild(r);});\n"
    "  document.querySelectorAll('#profile th').forEach(function(h){h.classList.remove("
    "'sorted');});th.classList.add('sorted');});});\n"
    "if(tb.rows.length)select(+tb.rows[0].getAttribute('data-id'));\n"
    "})();\n";

/*
 * The part of why (rp_flags_explain's text: one explanation per flag, each
 * starting with the flag's name and a space or a colon, separated by "; "
 * or newlines) about flag
 * name, into buf (n bytes); "" when there is none.  Cannot fail.
 */
static void flag_why(const char *why, const char *name, char *buf, size_t n)
{
    size_t len = strlen(name);

    buf[0] = '\0';
    for (const char *s = why; *s;) {
        size_t k = strcspn(s, ";\n");
        if (k > len && !strncmp(s, name, len) && (s[len] == ' ' || s[len] == ':')) {
            snprintf(buf, n, "%.*s", (int)k, s);
            return;
        }
        s += k;
        while (*s == ';' || *s == '\n' || *s == ' ')
            s++;
    }
}

/* The flags as badges, each with its why as a tooltip; put_flags_key as
 * the sort key "HOT,JITTER". */
static void put_flags(FILE *out, const struct rp_export_ctx *ctx, const struct rp_node *n)
{
    char why[1024] = "", one[512];
    struct rp_flag_opts def;
    const struct rp_flag_opts *fo = ctx->report ? ctx->report->flag : NULL;

    if (!fo) {
        rp_flag_opts_default(&def);
        fo = &def;
    }
    if (n->flags)
        rp_flags_explain(ctx->p, n, fo, why, sizeof why);
    for (unsigned b = 0; b < 32; b++)
        if (n->flags & (1u << b)) {
            const char *name = rp_flag_name(b);
            if (!name)
                continue;
            flag_why(why, name, one, sizeof one);
            fputs("<span class=flag title=\"", out);
            put_html(out, one);
            fprintf(out, "\">%s</span>", name);
        }
}

static void put_flags_key(FILE *out, uint32_t flags)
{
    int first = 1;
    for (unsigned b = 0; b < 32; b++)
        if (flags & (1u << b)) {
            const char *n = rp_flag_name(b);
            if (n)
                fprintf(out, "%s%s", first ? "" : ",", n), first = 0;
        }
}

/* One table row; every cell carries its sort key in data-v. */
static void put_row(FILE *out, const struct rp_export_ctx *ctx, char **names, uint32_t i)
{
    const struct rp_profile *p = ctx->p;
    const struct rp_node *n = &p->nodes[i];
    char b[40], v[40];
    uint64_t incl = rp_ticks_ns(p, n->incl), excl = rp_ticks_ns(p, n->excl);
    double mean = rp_node_mean(n) * p->ns_per_tick;
    uint64_t mx = rp_ticks_ns(p, rp_node_max(n)), q95 = 0;
    int below = rp_node_q_all(p, n, 0.95, &q95); /* as the table's p95 */
    uint64_t p95 = below == 0 ? rp_ticks_ns(p, q95) : 0;

    fprintf(out, "<tr data-id=\"%u\" data-incl=\"%" PRIu64 "\">", i, incl);
    fprintf(out, "<td data-v=\"%u\">%u</td>", n->rank, n->rank);
    fprintf(out, "<td data-v=\"%s\">%.2f%%</td>", rp_num_str(v, rp_node_standing(p, n)),
            100 * rp_node_standing(p, n));
    fprintf(out, "<td data-v=\"%s\">%.2f%%</td>", rp_num_str(v, rp_node_involvement(p, n)),
            100 * rp_node_involvement(p, n));
    fprintf(out, "<td data-v=\"%" PRIu64 "\">%" PRIu64 "</td>", n->calls, n->calls);
    fprintf(out, "<td data-v=\"%" PRIu64 "\">%s</td>", incl, dur(b, (double)incl));
    fprintf(out, "<td data-v=\"%" PRIu64 "\">%s</td>", excl, dur(b, (double)excl));
    fprintf(out, "<td data-v=\"%s\">%s</td>", rp_num_str(v, mean), dur(b, mean));
    fprintf(out, "<td data-v=\"%" PRIu64 "\">%s</td>", mx, dur(b, (double)mx));
    if (below == 1)
        fprintf(out, "<td data-v=\"0\">&lt;%s</td>", rp_fmt_below_res(p, b, sizeof b) + 1);
    else
        fprintf(out, "<td data-v=\"%" PRIu64 "\">%s</td>", p95, dur(b, (double)p95));
    fputs("<td class=flags data-v=\"", out);
    put_flags_key(out, n->flags);
    fputs("\">", out);
    put_flags(out, ctx, n);
    fprintf(out, "</td><td class=kind data-v=\"%s\">%s</td><td class=name data-v=\"",
            rp_kind_str(n->kind), rp_kind_str(n->kind));
    put_html(out, names[i]);
    fputs("\">", out);
    put_html(out, names[i]);
    if (n->file && n->line) {
        const char *base = strrchr(n->file, '/');
        fputs(" <small>(", out);
        put_html(out, base ? base + 1 : n->file);
        fprintf(out, ":%u)</small>", n->line);
    }
    fputs("</td></tr>\n", out);
}

/*
 * Why each flagged row is flagged: a table of name and explanation, one
 * line per flag, as the analysis words it (rp_flags_explain).  Write errors
 * are left for ferror().
 */
static void put_whys(FILE *out, const struct rp_export_ctx *ctx, char **names, const uint32_t *rows,
                     uint32_t nrows)
{
    struct rp_flag_opts def;
    const struct rp_flag_opts *fo = ctx->report ? ctx->report->flag : NULL;
    int any = 0;

    if (!fo) {
        rp_flag_opts_default(&def);
        fo = &def;
    }
    for (uint32_t r = 0; r < nrows; r++) {
        const struct rp_node *n = &ctx->p->nodes[rows[r]];
        char why[1024];
        if (!n->flags || !rp_flags_explain(ctx->p, n, fo, why, sizeof why))
            continue;
        if (!any++)
            fputs("<h3>Why the flags</h3>\n<table id=\"why\"><thead><tr><th class=name>name"
                  "</th><th class=name>why</th></tr></thead><tbody>\n",
                  out);
        fputs("<tr><td class=name>", out);
        put_html(out, names[rows[r]]);
        fputs("</td><td class=why>", out);
        for (char *s = why, *e; *s; s = e) {
            size_t k = strcspn(s, ";\n");
            e = s + k;
            char keep = *e;
            *e = '\0';
            put_html(out, s);
            *e = keep;
            while (*e == ';' || *e == '\n' || *e == ' ')
                e++;
            if (*e)
                fputs("<br>", out);
        }
        fputs("</td></tr>\n", out);
    }
    if (any)
        fputs("</tbody></table>\n", out);
    else if (ctx->report && ctx->report->flagged)
        fputs("<p class=meta>No row carries a flag.</p>\n", out);
}

/* The ranked table in report order.  Returns 0 or RP_ENOMEM. */
static int put_table(FILE *out, const struct rp_export_ctx *ctx, char **names)
{
    uint32_t nrows, nall;
    uint32_t *rows = rp_report_rows(ctx->p, ctx->report, &nrows, &nall);
    if (!rows)
        return RP_ENOMEM;
    fputs("<section id=\"table\"><h2>Ranked profile</h2>\n<p class=meta>Ranked by standing "
          "probability (docs/ranking.md). Click a column to sort, a row to see its callers "
          "and callees.",
          out);
    if (nrows < nall)
        fprintf(out, " The first %u of %u rows (--limit).", nrows, nall);
    fputs("</p>\n<table id=\"profile\"><thead><tr><th>rank</th><th>standing</th>"
          "<th>involved</th><th>calls</th><th>total</th><th>self</th><th>avg</th><th>max</th>"
          "<th>p95</th><th>flags</th><th>kind</th><th class=name>name</th></tr></thead>\n"
          "<tbody>\n",
          out);
    for (uint32_t r = 0; r < nrows; r++)
        put_row(out, ctx, names, rows[r]);
    fputs("</tbody></table>\n", out);
    put_whys(out, ctx, names, rows, nrows);
    fputs("</section>\n", out);
    free(rows);
    return 0;
}

/* The data of the callers/callees panel: names by id and every edge. */
static void put_data(FILE *out, const struct rp_profile *p, char **names)
{
    fputs("<script type=\"application/json\" id=\"rp-data\">{\"names\":[", out);
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        if (i)
            fputc(',', out);
        rp_export_put_js(out, names[i]);
    }
    fputs("],\n\"edges\":[", out);
    for (uint32_t e = 0; e < p->n_edges; e++) {
        const struct rp_edge *x = &p->edges[e];
        fprintf(out, "%s[%u,%u,%" PRIu64 ",%" PRIu64 "]", e ? "," : "", x->caller, x->callee,
                x->calls, rp_ticks_ns(p, x->incl));
    }
    fputs("]}</script>\n", out);
}

/*
 * The full path of the executable `name` on $PATH into buf (n bytes), as
 * `command -v` finds it; NULL when there is none (or its path holds a
 * quote, which the shell command below could not carry).  Cannot fail.
 */
static const char *find_tool(const char *name, char *buf, size_t n)
{
    const char *path = getenv("PATH");

    for (const char *s = path ? path : ""; *s;) {
        size_t k = strcspn(s, ":");
        if (k && (size_t)snprintf(buf, n, "%.*s/%s", (int)k, s, name) < n && !strchr(buf, '\'') &&
            access(buf, X_OK) == 0)
            return buf;
        s += k;
        if (*s)
            s++;
    }
    return NULL;
}

/* A renderer's wait status as it is told: its exit status, or 128 + the
 * signal that ended it.  Cannot fail. */
static int status_of(int st)
{
    return WIFEXITED(st) ? WEXITSTATUS(st) : WIFSIGNALED(st) ? 128 + WTERMSIG(st) : st;
}

/* The output of format f (a sequence diagram source) in a malloc'd string
 * *text.  Returns 0, or f's code with its message in err. */
static int seq_source(const struct rp_export_ctx *ctx, const struct rp_export_format *f,
                      char **text, size_t *len, char *err, size_t errsz)
{
    FILE *m = open_memstream(text, len);
    if (!m)
        return RP_ENOMEM;
    struct rp_export_ctx sub = *ctx;
    sub.err = err;
    sub.errsz = errsz;
    int rc = f->run(m, &sub);
    if (fclose(m) != 0 && rc == 0)
        rc = RP_ENOMEM;
    return rc;
}

/* The SVG at start (in svg) moved to svg: from "<svg", without comments
 * (plantuml puts its source in one) and control bytes (CR line ends).
 * Cannot fail. */
static void svg_clean(char *svg, const char *start)
{
    char *w = svg;
    for (const char *r = start; *r;) {
        if (!strncmp(r, "<!--", 4)) {
            const char *e = strstr(r + 4, "-->");
            r = e ? e + 3 : r + strlen(r);
            continue;
        }
        unsigned char c = (unsigned char)*r++;
        if (c >= 0x20 || c == '\n' || c == '\t')
            *w++ = (char)c;
        else if (c != '\r')
            *w++ = ' ';
    }
    *w = '\0';
}

/*
 * The renderer started as the page begins (prestart):
 * plantuml reading the diagram from the pipe `in`, writing its SVG to the
 * file `out` (unlinked at once: nothing is left behind if the export
 * stops early).  pid 0: none.
 */
static struct {
    pid_t pid;
    int in, out;
} pre;

extern char **environ;

/*
 * The tool that draws the page's sequence diagram, its path in path
 * (pathsz bytes): "plantuml" (this build writes its source too) or else
 * "mmdc", found on PATH; NULL when neither is, with RANKPROF_RENDER=none,
 * or when the diagram has nothing to draw (rp_seq_export_drawable: no tool
 * is run for it).  Cannot fail.
 */
static const char *render_tool(const struct rp_export_ctx *ctx, char *path, size_t pathsz)
{
    const char *render = getenv("RANKPROF_RENDER");
    if ((render && !strcmp(render, "none")) || !rp_seq_export_drawable(ctx))
        return NULL;
    if (rp_export_find("plantuml") && find_tool("plantuml", path, pathsz))
        return "plantuml";
    return find_tool("mmdc", path, pathsz) ? "mmdc" : NULL;
}

/*
 * Starts plantuml at path reading its diagram from a pipe (pre): its JVM
 * starts while the page is made, and render_pre gives it the diagram.
 * Nothing is started when it cannot be (pre.pid stays 0).  Cannot fail.
 */
static void pre_spawn(const char *path)
{
    const char *tmpdir = getenv("TMPDIR");
    char tmp[1024];
    int fds[2] = {-1, -1}, out = -1;
    posix_spawn_file_actions_t fa;

    if (pre.pid)
        return;
    if (!tmpdir || !*tmpdir || strlen(tmpdir) > 900)
        tmpdir = "/tmp";
    snprintf(tmp, sizeof tmp, "%s/rankprof-svg.XXXXXX", tmpdir);
    if ((out = mkostemp(tmp, O_CLOEXEC)) < 0)
        return;
    unlink(tmp);
    if (pipe2(fds, O_CLOEXEC) < 0 || posix_spawn_file_actions_init(&fa) != 0)
        goto fail;
    char *argv[] = {(char *)path, "-tsvg", "-pipe", NULL};
    int ok = posix_spawn_file_actions_adddup2(&fa, fds[0], 0) == 0 &&
             posix_spawn_file_actions_adddup2(&fa, out, 1) == 0 &&
             posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) == 0 &&
             posix_spawn(&pre.pid, path, &fa, NULL, argv, environ) == 0;
    posix_spawn_file_actions_destroy(&fa);
    if (!ok)
        goto fail;
    close(fds[0]);
    pre.in = fds[1];
    pre.out = out;
    return;
fail:
    pre.pid = 0;
    if (fds[0] >= 0)
        close(fds[0]), close(fds[1]);
    close(out);
}

/* Starts the page's renderer as the page begins, when it is plantuml
 * (pre_spawn): its JVM then starts while the call paths are read.  A
 * renderer left unused ends when the process does.  Cannot fail. */
static void prestart(const struct rp_export_ctx *ctx)
{
    char path[4096];
    const char *tool = render_tool(ctx, path, sizeof path);
    if (tool && !strcmp(tool, "plantuml"))
        pre_spawn(path);
}

/*
 * Renders text with the prestarted plantuml: writes it to the pipe, waits
 * for the tool, reads its SVG.  Returns the malloc'd SVG from its "<svg",
 * or NULL with the reason in why (the tool failed or ended early, out of
 * memory).
 */
static char *render_pre(const char *text, size_t len, char *why, size_t whysz)
{
    char *svg = NULL, *start;
    int st = -1, wok = 1;
    void (*old)(int) = signal(SIGPIPE, SIG_IGN); /* a tool that ended: EPIPE, not death */
    for (size_t off = 0; off < len && wok;) {
        ssize_t k = write(pre.in, text + off, len - off);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            wok = 0;
        else
            off += (size_t)k;
    }
    signal(SIGPIPE, old);
    close(pre.in);
    while (waitpid(pre.pid, &st, 0) < 0 && errno == EINTR)
        ;
    pre.pid = 0;
    off_t n = lseek(pre.out, 0, SEEK_END);
    if (!wok || st != 0 || n <= 0) {
        snprintf(why, whysz, "plantuml failed (exit status %d)", status_of(st));
        goto out;
    }
    if (!(svg = malloc((size_t)n + 1))) {
        snprintf(why, whysz, "out of memory");
        goto out;
    }
    ssize_t got = pread(pre.out, svg, (size_t)n, 0);
    svg[got > 0 ? got : 0] = 0;
    if (got != n || !(start = strstr(svg, "<svg"))) {
        snprintf(why, whysz, "plantuml failed (exit status %d)", status_of(st));
        free(svg);
        svg = NULL;
        goto out;
    }
    svg_clean(svg, start);
out:
    close(pre.out);
    return svg;
}

/*
 * Renders the Mermaid source text to SVG with mermaid-cli (mmdc at path):
 * writes it to a temporary file, runs the tool, reads the SVG.  Returns
 * the malloc'd SVG text from its "<svg", or NULL with the reason in why
 * (the tool failed, no temporary file, out of memory).
 */
static char *render_mmdc(const char *path, const char *text, size_t len, char *why, size_t whysz)
{
    const char *tmpdir = getenv("TMPDIR");
    char in[1024], outp[1100], cfg[1100], cmd[8192];
    char *svg = NULL, *start;
    size_t svglen = 0;
    int fd;
    FILE *p = NULL, *m = NULL;

    if (!tmpdir || !*tmpdir || strchr(tmpdir, '\'') || strlen(tmpdir) > 900)
        tmpdir = "/tmp";
    snprintf(in, sizeof in, "%s/rankprof-seq.XXXXXX", tmpdir);
    if ((fd = mkstemp(in)) < 0) {
        snprintf(why, whysz, "no temporary file in %s", tmpdir);
        return NULL;
    }
    snprintf(outp, sizeof outp, "%s.svg", in);
    snprintf(cfg, sizeof cfg, "%s.json", in);
    FILE *f = fdopen(fd, "w");
    if (!f || fwrite(text, 1, len, f) != len || fclose(f) != 0) {
        if (!f)
            close(fd);
        snprintf(why, whysz, "cannot write %.300s", in);
        goto out;
    }
    /* mermaid-cli drives a headless browser; no sandbox when run as root */
    FILE *c = fopen(cfg, "w");
    if (!c || fputs("{\"args\": [\"--no-sandbox\", \"--disable-gpu\"]}\n", c) < 0 ||
        fclose(c) != 0) {
        snprintf(why, whysz, "cannot write %.300s", cfg);
        goto out;
    }
    if (snprintf(cmd, sizeof cmd, "'%s' -q -p '%s' -i '%s' -o '%s' >/dev/null 2>&1 && cat '%s'",
                 path, cfg, in, outp, outp) >= (int)sizeof cmd) {
        snprintf(why, whysz, "the path of mmdc is too long");
        goto out;
    }
    fflush(NULL);
    if (!(p = popen(cmd, "r")) || !(m = open_memstream(&svg, &svglen))) {
        snprintf(why, whysz, "cannot run mmdc");
        goto out;
    }
    char buf[8192];
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, p)) > 0)
        fwrite(buf, 1, got, m);
    int st = pclose(p);
    p = NULL;
    if (fclose(m) != 0) {
        m = NULL;
        snprintf(why, whysz, "out of memory");
        goto fail;
    }
    m = NULL;
    if (st != 0 || !svg || !(start = strstr(svg, "<svg"))) {
        snprintf(why, whysz, "mmdc failed (exit status %d)", status_of(st));
        goto fail;
    }
    svg_clean(svg, start);
    goto out;
fail:
    free(svg);
    svg = NULL;
out:
    if (p)
        pclose(p);
    if (m)
        fclose(m);
    unlink(in);
    unlink(outp);
    unlink(cfg);
    return svg;
}

/*
 * The sequence diagram as a picture: rendered to SVG at export time by
 * plantuml, else mermaid-cli (mmdc), whichever is installed (not looked for
 * when RANKPROF_RENDER=none), and inlined; where neither is, a note says so.
 * The Mermaid source follows in a <details> element (cut at SEQ_MAX_BYTES).
 * A format or tool error is shown in the page rather than failing the whole
 * report.  Returns 0 or RP_ENOMEM.
 */
static int put_sequence(FILE *out, const struct rp_export_ctx *ctx)
{
    const struct rp_export_format *f = rp_export_find("mermaid");
    char *text = NULL, *svg = NULL, path[4096], why[600] = "";
    const char *tool = NULL;
    size_t len = 0;

    fputs("<section id=\"seq\"><h2>Sequence diagram</h2>\n", out);
    if (!f) {
        fputs("<p class=meta>This build has no sequence diagram generator.</p></section>\n", out);
        return 0;
    }
    char err[512] = "";
    int rc = seq_source(ctx, f, &text, &len, err, sizeof err);
    if (rc < 0) {
        fputs("<p class=meta>No sequence diagram: ", out);
        put_html(out, err[0] ? err : rp_strerror(rc));
        fputs("</p>", out);
        goto out;
    }
    int empty = !rp_seq_export_drawable(ctx); /* no message: no renderer is run for it */
    tool = render_tool(ctx, path, sizeof path);
    if (tool && !strcmp(tool, "plantuml")) {
        char *src = NULL, perr[512] = "";
        size_t slen = 0;
        pre_spawn(path); /* (started as the page began, unless that failed) */
        if (seq_source(ctx, rp_export_find("plantuml"), &src, &slen, perr, sizeof perr) < 0)
            snprintf(why, sizeof why, "%s", perr[0] ? perr : "no PlantUML source");
        else if (pre.pid)
            svg = render_pre(src, slen, why, sizeof why);
        else
            snprintf(why, sizeof why, "cannot run plantuml");
        free(src);
    } else if (tool) {
        svg = render_mmdc(path, text, len, why, sizeof why);
    }
    if (svg) {
        fprintf(out,
                "<p class=meta>Rendered by %s when the page was written.</p>\n<div "
                "class=\"seq-svg\">",
                tool);
        fputs(svg, out);
        fputs("</div>\n", out);
    } else if (tool) {
        fprintf(out, "<p class=\"meta seq-note\">The diagram could not be drawn: ");
        put_html(out, why);
        fputs(". Its source is below.</p>\n", out);
    } else if (empty) {
        fputs("<p class=meta>Nothing to draw: the run has no lock, io span, timer, mark or MPI "
              "call.</p>\n",
              out);
    } else {
        fputs("<p class=\"meta seq-note\">Neither plantuml nor mermaid-cli (mmdc) is installed "
              "where this page was written, so the diagram is not drawn: install one (Debian: "
              "<code>apt-get install plantuml</code>) and export again, or render the source "
              "below with <code>rankprof export --format plantuml</code> or "
              "<code>--format mermaid</code>.</p>\n",
              out);
    }
    fprintf(out, "<details%s><summary>Mermaid source</summary><pre class=\"mermaid-src\">",
            svg ? "" : " open");
    if (len > SEQ_MAX_BYTES) {
        text[SEQ_MAX_BYTES] = 0;
        put_html(out, text);
        fprintf(out, "\n... cut at %u KiB of %zu bytes", SEQ_MAX_BYTES >> 10, len);
    } else {
        put_html(out, text);
    }
    fputs("</pre></details>", out);
out:
    free(svg);
    free(text);
    fputs("</section>\n", out);
    return rc == RP_ENOMEM ? rc : 0;
}

/* The document head, the title and the run's one-line summary. */
static void put_head(FILE *out, const struct rp_export_ctx *ctx)
{
    const struct rp_profile *p = ctx->p;
    char b[40];

    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>rankprof: ",
          out);
    put_html(out, rp_export_title(ctx));
    fprintf(out, "</title>\n<style>%s</style></head>\n<body>\n<h1>", style);
    put_html(out, rp_export_title(ctx));
    fputs("</h1>\n<p class=meta>", out);
    put_html(out, p->program ? p->program : "?");
    fprintf(out,
            " (pid %u): %s of thread time, %u threads, %" PRIu64 " events, %" PRIu64
            " lost; %s weights, alpha %g, %u iterations%s</p>\n",
            p->pid, dur(b, (double)rp_ticks_ns(p, p->total)), p->n_threads, p->events, p->lost,
            rp_weight_name(p->rank.weight), p->rank.alpha, p->rank.iterations,
            p->ended ? "" : "; the run did not end normally");
    fputs("<nav><a href=\"#table\">profile</a><a href=\"#graph\">callers and callees</a>"
          "<a href=\"#flame\">flame graph</a><a href=\"#seq\">sequence diagram</a></nav>\n",
          out);
}

int rp_export_html(FILE *out, const struct rp_export_ctx *ctx)
{
    char **names = rp_export_names(ctx->p);
    int rc;

    if (!names)
        return RP_ENOMEM;
    prestart(ctx);
    put_head(out, ctx);
    if ((rc = put_table(out, ctx, names)) < 0)
        goto out;
    fputs("<section id=\"graph\"><h2>Callers and callees of <span id=\"sel\"></span></h2>\n"
          "<div class=panes><div id=\"callers\"></div><div id=\"callees\"></div></div>"
          "</section>\n<section id=\"flame\"><h2>Flame graph</h2>\n<p class=meta>Click a frame "
          "to zoom, Search to highlight by regular expression.</p>\n",
          out);
    if ((rc = rp_export_flame_svg(out, ctx, 1)) < 0)
        goto out;
    fputs("</section>\n", out);
    if ((rc = put_sequence(out, ctx)) < 0)
        goto out;
    put_data(out, ctx->p, names);
    fprintf(out, "<script>\n%s</script>\n</body></html>\n", script);
out:
    rp_export_names_free(ctx->p, names);
    return rc;
}

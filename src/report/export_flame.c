// SPDX-License-Identifier: MIT
/*
 * export_flame.c - call paths as Brendan Gregg's folded stacks and as an
 * interactive SVG flame graph drawn by rankprof itself.
 *
 * Both walk the calling-context tree (analyze/cct.h) depth first, without
 * recursion (stacks can be thousands of frames deep):
 *
 *   folded:  one line "main;a;b;leaf 1234" per path with exclusive time,
 *            value = exclusive nanoseconds of the spans on that path, so the
 *            lines of one function add up to its exclusive_ns in the report.
 *   flame:   one box per path, x by the inclusive time of the paths to its
 *            left under the same caller, width by its own inclusive time,
 *            y by depth; children sorted by name (as flamegraph.pl does);
 *            boxes narrower than MIN_PX are left out (and counted in the
 *            caller's box, which is what the eye sees anyway).
 *
 * The SVG has no external references: the script (hover details, click to
 * zoom, search with a regular expression, reset) is inline, so it works
 * from a file, inlined in the HTML report, and offline.  A link can open
 * it zoomed and searched: FILE.svg#zoom=NAME&search=REGEX.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "analyze/cct.h"
#include "analyze/merge.h"
#include "common/error.h"
#include "report/export.h"
#include "report/util.h"
#include "trace/format.h"

#define SVG_W      1200 /* px */
#define FRAME_H    16   /* px */
#define FONT_PX    12
#define PAD_TOP    34 /* title and search/reset line */
#define PAD_BOTTOM 24 /* details line */
#define PAD_SIDE   10
#define MIN_PX     0.1 /* narrower boxes are not drawn */
#define CHAR_PX    (FONT_PX * 0.59)

/*
 * Builds the tree for ctx's trace, a subtree per thread with -O threads=1.
 * Fails like rp_cct_build.
 */
static int build(struct rp_cct *t, const struct rp_export_ctx *ctx)
{
    const char *th = rp_export_param(ctx, "threads");
    t->filter = ctx->filter;
    if (rp_profile_merged(ctx->p)) /* a run's files */
        return rp_cct_build_set(t, ctx->replay, ctx->p, th && !strcmp(th, "1"), ctx->progress,
                                ctx->err, ctx->errsz);
    return rp_cct_build(t, ctx->input, ctx->replay, ctx->p, th && !strcmp(th, "1"), ctx->progress,
                        ctx->err, ctx->errsz);
}

/* Writes a name for folded stacks: ';' separates frames and a line ends at
 * '\n', so both become '_'.  Errors are left for ferror(). */
static void put_folded_name(FILE *out, const char *s)
{
    for (; *s; s++)
        fputc(*s == ';' || *s == '\n' || *s == '\r' ? '_' : *s, out);
}

/* The display name of span id (rp_node_name).  Cannot fail. */
static const char *node_name(const struct rp_export_ctx *ctx, uint32_t id, char *buf, size_t bufsz)
{
    return rp_node_name(ctx->p, &ctx->p->nodes[id], buf, bufsz);
}

/* A frame's label: its span's name, or for a thread node "NAME TID". */
static const char *frame_name(const struct rp_export_ctx *ctx, const struct rp_cct_node *n,
                              char *buf, size_t bufsz)
{
    if (n->id)
        return node_name(ctx, n->id, buf, bufsz);
    const char *name = NULL;
    for (uint32_t i = 0; i < ctx->p->n_threads && !name; i++)
        if (ctx->p->threads[i].tid == n->tid)
            name = ctx->p->threads[i].name;
    char tb[24];
    snprintf(buf, bufsz, "%s %s", name && name[0] ? name : "thread",
             rp_tid_str(n->tid, tb, sizeof(tb)));
    return buf;
}

/*
 * Pre-order walk over t: the body runs with i = every node but the root,
 * parents before children, children in sibling order.  Cannot fail.
 */
#define CCT_FOREACH(t, i) for (uint32_t i = (t)->nodes[0].child; i; i = cct_next(t, i))

/* The node after i in pre-order, 0 at the end. */
static uint32_t cct_next(const struct rp_cct *t, uint32_t i)
{
    if (t->nodes[i].child)
        return t->nodes[i].child;
    while (i && !t->nodes[i].sibling)
        i = t->nodes[i].parent;
    return i ? t->nodes[i].sibling : 0;
}

int rp_export_folded(FILE *out, const struct rp_export_ctx *ctx)
{
    struct rp_cct t = {0};
    uint32_t *path = NULL;
    char buf[512];
    int rc = build(&t, ctx);

    if (rc < 0 || (rc = rp_cct_frames_check(&t, "folded", ctx->err, ctx->errsz)) < 0)
        goto out;
    uint32_t maxd = 0;
    for (uint32_t i = 1; i < t.n; i++)
        maxd = t.nodes[i].depth > maxd ? t.nodes[i].depth : maxd;
    if (!(path = malloc((maxd + 1) * sizeof(*path)))) {
        rc = RP_ENOMEM;
        goto out;
    }
    CCT_FOREACH(&t, i)
    {
        const struct rp_cct_node *n = &t.nodes[i];
        uint64_t ns = rp_ticks_ns(ctx->p, n->excl);
        if (!ns)
            continue;
        uint32_t d = n->depth;
        for (uint32_t j = i; j; j = t.nodes[j].parent)
            path[--d] = j;
        for (d = 0; d < n->depth; d++) {
            if (d)
                fputc(';', out);
            put_folded_name(out, frame_name(ctx, &t.nodes[path[d]], buf, sizeof(buf)));
        }
        fprintf(out, " %" PRIu64 "\n", ns);
    }
out:
    free(path);
    rp_cct_free(&t);
    return rc;
}

/* ---- the SVG ------------------------------------------------------------ */

/* A stable warm colour from the name, blue for locks, green for io and
 * points, grey for waits (blocking calls), as flamegraph.pl's palettes do
 * per frame type. */
static void put_color(FILE *out, const char *name, uint8_t kind)
{
    uint32_t h = 2166136261u;
    for (const unsigned char *s = (const unsigned char *)name; *s; s++)
        h = (h ^ *s) * 16777619u;
    unsigned a = h % 55, b = (h >> 8) % 80, c = (h >> 16) % 55;
    if (kind == RP_KIND_LOCK_WAIT || kind == RP_KIND_LOCK_HOLD)
        fprintf(out, "rgb(%u,%u,%u)", 80 + a, 140 + b / 2, 200 + c);
    else if (kind == RP_KIND_WAIT)
        fprintf(out, "rgb(%u,%u,%u)", 150 + a / 2, 150 + a / 2, 160 + c / 2);
    else if (kind == RP_KIND_IO || kind == RP_KIND_POINT)
        fprintf(out, "rgb(%u,%u,%u)", 60 + a, 180 + c, 60 + b / 2);
    else
        fprintf(out, "rgb(%u,%u,%u)", 205 + c, (unsigned)(b * 2.3), a);
}

static const char flame_script[] =
    "(function(){\n"
    "var svg=document.currentScript?document.currentScript.closest('svg'):null;\n"
    "if(!svg){var all=document.getElementsByTagName('svg');svg=all[all.length-1];}\n"
    "var W=+svg.getAttribute('data-w'),X0=+svg.getAttribute('data-x0'),CH=+svg.getAttribute("
    "'data-ch');\n"
    "var frames=svg.querySelectorAll('g.f'),det=svg.querySelector('.details'),"
    "mat=svg.querySelector('.matched');\n"
    "var unz=svg.querySelector('.unzoom'),zoomed=null;\n"
    "function fit(g){var r=g.querySelector('rect'),t=g.querySelector('text'),"
    "w=+r.getAttribute('width'),n=g.getAttribute('data-n');\n"
    " t.setAttribute('x',+r.getAttribute('x')+3);var m=Math.floor((w-6)/CH);\n"
    " t.textContent=m<3?'':(n.length>m?n.substring(0,m-2)+'..':n);}\n"
    "function place(g,x,w){var r=g.querySelector('rect');r.setAttribute('x',x);"
    "r.setAttribute('width',Math.max(w,0));fit(g);}\n"
    "function reset(){zoomed=null;unz.style.opacity=0;frames.forEach(function(g){"
    "g.style.display='';place(g,+g.getAttribute('data-x'),+g.getAttribute('data-w'));});}\n"
    "function zoom(z){zoomed=z;unz.style.opacity=1;var zx=+z.getAttribute('data-x'),"
    "zw=+z.getAttribute('data-w'),zd=+z.getAttribute('data-d'),k=W/zw;\n"
    " frames.forEach(function(g){var x=+g.getAttribute('data-x'),w=+g.getAttribute('data-w'),"
    "d=+g.getAttribute('data-d');\n"
    "  var inside=x>=zx-1e-6&&x+w<=zx+zw+1e-6;\n"
    "  if(d<zd){if(x<=zx+1e-6&&x+w>=zx+zw-1e-6){g.style.display='';place(g,X0,W);}"
    "else g.style.display='none';}\n"
    "  else if(inside){g.style.display='';place(g,X0+(x-zx)*k,w*k);}"
    "else g.style.display='none';});}\n"
    "frames.forEach(function(g){\n"
    " g.addEventListener('click',function(){zoom(g);});\n"
    " g.addEventListener('mouseover',function(){det.textContent=g.querySelector('title')."
    "textContent;});\n"
    " g.addEventListener('mouseout',function(){det.textContent=' ';});});\n"
    "unz.addEventListener('click',reset);\n"
    "function search(q){var re;try{re=new RegExp(q);}catch(e){alert(e);return;}\n"
    " var total=+svg.getAttribute('data-total'),hit=0,seen=[];\n"
    " frames.forEach(function(g){var r=g.querySelector('rect');\n"
    "  if(!r.hasAttribute('data-fill'))r.setAttribute('data-fill',r.getAttribute('fill'));\n"
    "  var m=q!==''&&re.test(g.getAttribute('data-n'));\n"
    "  r.setAttribute('fill',m?'rgb(230,0,230)':r.getAttribute('data-fill'));\n"
    "  if(m){var x=+g.getAttribute('data-x'),w=+g.getAttribute('data-w');\n"
    "   if(!seen.some(function(s){return x>=s[0]-1e-6&&x+w<=s[0]+s[1]+1e-6;}))"
    "{seen.push([x,w]);hit+=+g.getAttribute('data-v');}}});\n"
    " mat.textContent=q===''?' ':'Matched: '+(100*hit/total).toFixed(2)+'%';}\n"
    "svg.querySelector('.search').addEventListener('click',function(){\n"
    " var q=prompt('Search for (a regular expression):','');if(q!==null)search(q);});\n"
    "var h=decodeURIComponent((location.hash||'').slice(1)),m;\n"
    "if((m=/(?:^|&)zoom=([^&]*)/.exec(h)))for(var i=0;i<frames.length;i++)"
    "if(frames[i].getAttribute('data-n')===m[1]){zoom(frames[i]);break;}\n"
    "if((m=/(?:^|&)search=([^&]*)/.exec(h)))search(m[1]);\n"
    "})();\n";

/* Writes one frame's <g>.  x and w in px; v is its inclusive time in ticks. */
static void put_frame(FILE *out, const struct rp_export_ctx *ctx, const char *name, uint8_t kind,
                      uint32_t depth, uint32_t maxd, double x, double w, uint64_t v, uint64_t calls,
                      uint64_t excl, uint64_t total)
{
    double y = PAD_TOP + (double)(maxd - depth) * FRAME_H;
    char b1[40];

    fprintf(out, "<g class=\"f\" data-n=\"");
    rp_export_put_markup(out, name, SIZE_MAX, 0);
    fprintf(out, "\" data-x=\"%.3f\" data-w=\"%.3f\" data-d=\"%u\" data-v=\"%" PRIu64 "\">", x, w,
            depth, v);
    fputs("<title>", out);
    rp_export_put_markup(out, name, SIZE_MAX, 0);
    fprintf(out, " (%s%% of the run",
            rp_num_str(b1, total ? 100.0 * (double)v / (double)total : 0));
    if (depth)
        fprintf(out, ", %" PRIu64 " calls, %" PRIu64 " ns inclusive, %" PRIu64 " ns exclusive",
                calls, rp_ticks_ns(ctx->p, v), rp_ticks_ns(ctx->p, excl));
    fputs(")</title>", out);
    fprintf(out, "<rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" height=\"%d\" fill=\"", x, y, w,
            FRAME_H - 1);
    put_color(out, name, kind);
    fprintf(out, "\" rx=\"2\"/><text x=\"%.3f\" y=\"%.1f\">", x + 3, y + FRAME_H - 4.5);
    int m = (int)((w - 6) / CHAR_PX);
    if (m >= 3)
        rp_export_put_markup(out, name, (size_t)m - 2 < strlen(name) ? (size_t)m - 2 : SIZE_MAX, 0);
    fputs("</text></g>\n", out);
}

/* A child to sort: its name, then its index (ties keep first-seen order). */
struct kid {
    const char *name;
    uint32_t i;
};

/* qsort: children by name, then by index. */
static int by_name(const void *a, const void *b)
{
    const struct kid *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

/*
 * Re-links every node's children in name order, so the pre-order walk
 * draws them left to right as flamegraph.pl does.  names[] is indexed by
 * span id.  Returns 0 or RP_ENOMEM.
 */
static int sort_children(struct rp_cct *t, char **names)
{
    uint32_t cap = 64;
    struct kid *kids = malloc(cap * sizeof(*kids));

    if (!kids)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < t->n; i++) {
        uint32_t k = 0;
        for (uint32_t c = t->nodes[i].child; c; c = t->nodes[c].sibling) {
            if (k == cap) {
                struct kid *nk = realloc(kids, 2 * cap * sizeof(*kids));
                if (!nk) {
                    free(kids);
                    return RP_ENOMEM;
                }
                kids = nk;
                cap *= 2;
            }
            kids[k++] = (struct kid){names[t->nodes[c].id], c};
        }
        if (k < 2)
            continue;
        qsort(kids, k, sizeof(*kids), by_name);
        t->nodes[i].child = kids[0].i;
        for (uint32_t j = 0; j < k; j++)
            t->nodes[kids[j].i].sibling = j + 1 < k ? kids[j + 1].i : 0;
    }
    free(kids);
    return 0;
}

/*
 * Draws t.  x of a node = x of its parent + the widths of its earlier
 * siblings, kept in xs[] per node index (one double per path).
 */
static int draw(FILE *out, const struct rp_export_ctx *ctx, struct rp_cct *t, int embedded)
{
    double *xs = NULL;
    char buf[512];
    int rc;

    char **names = rp_export_names(ctx->p);
    if (!names)
        return RP_ENOMEM;
    rc = sort_children(t, names);
    rp_export_names_free(ctx->p, names);
    if (rc < 0)
        return rc;
    uint64_t total = 0;
    for (uint32_t c = t->nodes[0].child; c; c = t->nodes[c].sibling)
        total += t->nodes[c].incl;
    t->nodes[0].incl = total;
    double k = total ? (SVG_W - 2.0 * PAD_SIDE) / (double)total : 0;
    uint32_t maxd = 0;
    for (uint32_t i = 1; i < t->n; i++)
        if (t->nodes[i].depth > maxd && (double)t->nodes[i].incl * k >= MIN_PX)
            maxd = t->nodes[i].depth;
    if (!(xs = calloc(t->n, sizeof(*xs))))
        return RP_ENOMEM;
    unsigned h = PAD_TOP + (maxd + 1) * FRAME_H + PAD_BOTTOM;
    if (!embedded)
        fputs("<?xml version=\"1.0\" standalone=\"no\"?>\n", out);
    fprintf(out,
            "<svg class=\"flamegraph\" version=\"1.1\" width=\"%d\" height=\"%u\" "
            "viewBox=\"0 0 %d %u\" xmlns=\"http://www.w3.org/2000/svg\" data-w=\"%d\" "
            "data-x0=\"%d\" data-ch=\"%.3f\" data-total=\"%" PRIu64 "\">\n",
            SVG_W, h, SVG_W, h, SVG_W - 2 * PAD_SIDE, PAD_SIDE, CHAR_PX, total);
    fprintf(out,
            "<style>.flamegraph text{font:%dpx Verdana,sans-serif;fill:#000;"
            "pointer-events:none}.flamegraph g.f:hover rect{stroke:#000;stroke-width:0.5}"
            ".flamegraph .ui{cursor:pointer}.flamegraph .unzoom{opacity:0}</style>\n",
            FONT_PX);
    fprintf(out, "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%u\" fill=\"#f8f4ec\"/>\n", SVG_W, h);
    fprintf(out, "<text x=\"%d\" y=\"20\" text-anchor=\"middle\" style=\"font-size:16px\">",
            SVG_W / 2);
    rp_export_put_markup(out, rp_export_title(ctx), 200, 0);
    fputs(" - flame graph (inclusive time)</text>\n", out);
    fprintf(out, "<text class=\"ui unzoom\" x=\"%d\" y=\"20\">Reset zoom</text>\n", PAD_SIDE);
    fprintf(out, "<text class=\"ui search\" x=\"%d\" y=\"20\" text-anchor=\"end\">Search</text>\n",
            SVG_W - PAD_SIDE);
    fprintf(out, "<text class=\"details\" x=\"%d\" y=\"%u\"> </text>\n", PAD_SIDE, h - 8);
    fprintf(out, "<text class=\"matched\" x=\"%d\" y=\"%u\" text-anchor=\"end\"> </text>\n",
            SVG_W - PAD_SIDE, h - 8);
    put_frame(out, ctx, "all", RP_KIND_FUNC, 0, maxd, PAD_SIDE, (double)total * k, total, 0, 0,
              total);
    xs[0] = PAD_SIDE;
    for (uint32_t i = 0; i < t->n; i++) { /* children's x from their parent's */
        double x = xs[i];
        for (uint32_t c = t->nodes[i].child; c; c = t->nodes[c].sibling) {
            xs[c] = x;
            x += (double)t->nodes[c].incl * k;
        }
    }
    CCT_FOREACH(t, i)
    {
        const struct rp_cct_node *n = &t->nodes[i];
        double w = (double)n->incl * k;
        if (w < MIN_PX)
            continue;
        put_frame(out, ctx, frame_name(ctx, n, buf, sizeof(buf)), ctx->p->nodes[n->id].kind,
                  n->depth, maxd, xs[i], w, n->incl, n->calls, n->excl, total);
    }
    fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n</svg>\n",
            flame_script);
    free(xs);
    return 0;
}

int rp_export_flame_svg(FILE *out, const struct rp_export_ctx *ctx, int embedded)
{
    struct rp_cct t = {0};
    int rc = build(&t, ctx);
    if (rc == 0)
        rc = draw(out, ctx, &t, embedded);
    rp_cct_free(&t);
    return rc;
}

int rp_export_flamegraph(FILE *out, const struct rp_export_ctx *ctx)
{
    return rp_export_flame_svg(out, ctx, 0);
}

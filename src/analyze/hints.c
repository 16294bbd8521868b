// SPDX-License-Identifier: MIT
/*
 * hints.c - the hints of hints.h.  Each looks at the profile once (and at
 * most a few binaries' section headers), so it costs nothing next to the
 * replay.
 */
#include "hints.h"

#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "symbols.h"
#include "trace/format.h"

#define MAX_MODULES 8 /* modules named in the hint on unnamed functions */

/* The hint on inline functions hooked out of line: functions of at least
 * INL_CALLS calls and at most INL_NS of own time a call (short: the call
 * is much of it), together at least INL_SHARE of the time on CPU. */
#define INL_CALLS 100
#define INL_NS    250.0
#define INL_SHARE 0.10
#define INL_NAMES 3

/* Whether the ELF file at path has a symbol table: 1, 0 (stripped), or -1
 * when it cannot be read (not on this machine, not ELF). */
static int has_symtab(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC), found = -1;
    if (fd < 0)
        return -1;
    elf_version(EV_CURRENT);
    Elf *e = elf_begin(fd, ELF_C_READ, NULL);
    if (e && elf_kind(e) == ELF_K_ELF) {
        found = 0;
        for (Elf_Scn *s = elf_nextscn(e, NULL); s && !found; s = elf_nextscn(e, s)) {
            GElf_Shdr sh;
            found = gelf_getshdr(s, &sh) && sh.sh_type == SHT_SYMTAB;
        }
    }
    elf_end(e);
    close(fd);
    return found;
}

/* A program that recorded no function: it was not built with the hooks. */
static void hint_no_functions(struct rp_profile *p)
{
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (p->nodes[i].kind == RP_KIND_FUNC && p->nodes[i].calls)
            return;
    if (!p->events)
        return; /* (the caller says that one) */
    rp_profile_warn(p,
                    "no function was recorded, only locks, blocking calls and points: build "
                    "%s with -finstrument-functions to see its functions",
                    p->program ? p->program : "the program");
}

/* Whether n has no symbol: no name, or the binary+0xOFFSET that naming
 * gives it then (load.c). */
static int unnamed(const struct rp_node *n)
{
    if (!n->name)
        return 1;
    if (!n->module)
        return 0;
    const char *b = strrchr(n->module, '/');
    b = b ? b + 1 : n->module;
    size_t l = strlen(b);
    return !strncmp(n->name, b, l) && !strncmp(n->name + l, "+0x", 3);
}

/* Functions with calls and no name, per module: stripped binaries. */
static void hint_unnamed(struct rp_profile *p)
{
    const char *mod[MAX_MODULES];
    uint32_t count[MAX_MODULES], nmod = 0, none = 0, total = 0;
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const struct rp_node *n = &p->nodes[i];
        if (n->kind != RP_KIND_FUNC || !n->calls)
            continue;
        total++;
        if (!unnamed(n))
            continue;
        if (!n->module) {
            none++;
            continue;
        }
        uint32_t k = 0;
        while (k < nmod && strcmp(mod[k], n->module))
            k++;
        if (k == nmod && nmod < MAX_MODULES) {
            mod[nmod] = n->module;
            count[nmod++] = 0;
        }
        if (k < nmod)
            count[k]++;
    }
    for (uint32_t k = 0; k < nmod; k++) {
        int st = has_symtab(mod[k]);
        rp_profile_warn(p, "%u of %u functions have no name (shown as BINARY+0xOFFSET): %s %s",
                        count[k], total, mod[k],
                        st == 0  ? "is stripped (no symbol table): profile a build that keeps "
                                   "its symbols (not stripped; -g gives file:line too)"
                        : st > 0 ? "has no symbol for them (local symbols removed, or code "
                                   "generated at run time)"
                                 : "cannot be read here (another machine's file?): analyse "
                                   "the trace where the program is");
    }
    if (none)
        rp_profile_warn(p,
                        "%u of %u functions have no name: their code is in no file the "
                        "program had mapped when the trace ended (a library unloaded with "
                        "dlclose, or code generated at run time)",
                        none, total);
}

/* The n largest values seen so far, largest first: top[k] the index whose
 * value is val[k], *m of them set.  Puts index i of value v among them
 * when it is one of the n largest.  Cannot fail. */
static void top_put(uint32_t *top, double *val, uint32_t n, uint32_t *m, uint32_t i, double v)
{
    uint32_t k = *m, last = *m < n ? *m : n - 1; /* (the last set slot moves out when full) */
    while (k > 0 && val[k - 1] < v)
        k--;
    if (k >= n)
        return;
    memmove(&top[k + 1], &top[k], (last - k) * sizeof *top);
    memmove(&val[k + 1], &val[k], (last - k) * sizeof *val);
    top[k] = i;
    val[k] = v;
    *m += *m < n;
}

/* Whether n is a short function called often (the hint below).  Cannot fail. */
static int short_fn(const struct rp_profile *p, const struct rp_node *n)
{
    return n->kind == RP_KIND_FUNC && n->calls >= INL_CALLS &&
           (double)n->excl * p->ns_per_tick <= INL_NS * (double)n->calls;
}

/*
 * Functions declared inline that ran out of line, with the hooks: GCC's
 * -finstrument-functions (and clang's) instruments an inline function, so
 * it keeps a copy out of line to call, and the build spends more in a short
 * helper than the program does without the hooks (QuickJS: 74 helpers,
 * 46.5 % of the time on CPU, its run 3 times the plain build's).  Said
 * when such functions, short and called often, take INL_SHARE of the time
 * on CPU; whether one was declared inline is read from its DWARF, opened
 * only then.  The report is true of the binary: the hint says why it
 * differs from the program built without the hooks.
 */
static void hint_inline_hooked(struct rp_profile *p)
{
    double cpu = rp_oncpu_total(p), cand = 0.0;
    for (uint32_t i = 1; i < p->n_nodes; i++)
        if (short_fn(p, &p->nodes[i]))
            cand += (double)p->nodes[i].excl;
    if (cpu <= 0.0 || cand < INL_SHARE * cpu || !p->maps || !p->maps_len)
        return;
    struct rp_symbolizer *s = rp_sym_open(p->maps, p->maps_len);
    if (!s)
        return;
    uint32_t count = 0, top[INL_NAMES], ntop = 0;
    uint64_t calls = 0, all_calls = 0;
    double own = 0.0, topv[INL_NAMES];
    for (uint32_t i = 1; i < p->n_nodes; i++) {
        const struct rp_node *n = &p->nodes[i];
        if (n->kind == RP_KIND_FUNC)
            all_calls += n->calls;
        if (!short_fn(p, n) || rp_sym_declared_inline(s, n->key) != 1)
            continue;
        count++;
        calls += n->calls;
        own += (double)n->excl;
        top_put(top, topv, INL_NAMES, &ntop, i, (double)n->excl); /* (by own time) */
    }
    rp_sym_close(s);
    if (!count || own < INL_SHARE * cpu)
        return;
    char names[256];
    size_t len = 0;
    names[0] = '\0';
    for (uint32_t k = 0; k < ntop && len < sizeof names; k++) {
        const char *nm = p->nodes[top[k]].name ? p->nodes[top[k]].name : "?";
        int w = snprintf(names + len, sizeof names - len, "%s%s", k ? ", " : "", nm);
        len += w > 0 ? (size_t)w : 0;
    }
    rp_profile_warn(p,
                    "%u function%s declared inline ran out of line with the hooks (%s%s): "
                    "%.0f%% of the calls and %.0f%% of the time on CPU, %.0f ns a call; "
                    "-finstrument-functions instruments inline functions, so this build "
                    "spends more in them than the program built without it: leave them out "
                    "(-finstrument-functions-exclude-function-list or -exclude-file-list) or "
                    "build with clang "
                    "-finstrument-functions-after-inlining (docs/instrumenting.md)",
                    count, count == 1 ? "" : "s", names, count > INL_NAMES ? ", ..." : "",
                    all_calls ? 100.0 * (double)calls / (double)all_calls : 0.0, 100.0 * own / cpu,
                    own * p->ns_per_tick / (double)calls);
}

/* The hint on loops of calls the compensation took out: a caller that made
 * at least POLL_PER calls of one function per activation, each below the
 * resolution (POLL_BELOW of them at least), its own time after the
 * compensation at most POLL_OWN of the hooks' cost it took out for them,
 * that cost at least POLL_SHARE of the time on CPU. */
#define POLL_PER   100000.0
#define POLL_BELOW 0.9
#define POLL_OWN   0.25
#define POLL_SHARE 0.05
#define POLL_NAMES 3

/*
 * Compensation subtracts the hooks' cost of every call (docs/performance.md):
 * right for a loop that does a fixed amount of work, which runs that much
 * faster without the hooks.  A loop that polls until something happens (a
 * spin on a flag another thread sets: Redis's I/O threads) runs as long
 * without them, only with more calls: there the compensated time
 * understates what it burns.  The trace cannot tell the two apart, so
 * where such loops took much of the time the report says so and points at
 * --no-compensate.  Judged from the edges: the caller's own time left is
 * the loop's own work between its calls, nearly none in a poll.
 */
static void hint_poll(struct rp_profile *p)
{
    double cpu = rp_oncpu_total(p), took = 0.0, top_took[POLL_NAMES];
    uint32_t count = 0, top[POLL_NAMES], ntop = 0;
    if (!p->compensated || !p->overhead_known || p->overhead_pair <= 0.0 || cpu <= 0.0)
        return;
    for (uint32_t k = 0; k < p->n_edges; k++) {
        const struct rp_edge *e = &p->edges[k];
        if (!e->caller || e->caller >= p->n_nodes || e->callee >= p->n_nodes ||
            e->caller == e->callee)
            continue;
        const struct rp_node *x = &p->nodes[e->caller], *y = &p->nodes[e->callee];
        double t = (double)e->calls * p->overhead_pair; /* (ticks) */
        if (y->kind != RP_KIND_FUNC || !x->calls ||
            (double)e->calls < POLL_PER * (double)x->calls ||
            (double)rp_node_below_res(y) < POLL_BELOW * (double)y->calls ||
            (double)x->excl > POLL_OWN * t || t < POLL_SHARE * cpu)
            continue;
        count++;
        took += t;
        top_put(top, top_took, POLL_NAMES, &ntop, k, t);
    }
    if (!count)
        return;
    char names[384];
    size_t len = 0;
    names[0] = '\0';
    for (uint32_t j = 0; j < ntop && len < sizeof names; j++) {
        const struct rp_edge *e = &p->edges[top[j]];
        const char *a = p->nodes[e->caller].name, *b = p->nodes[e->callee].name;
        int w = snprintf(names + len, sizeof names - len, "%s%s -> %s %.0f a call", j ? ", " : "",
                         a ? a : "?", b ? b : "?",
                         (double)e->calls / (double)p->nodes[e->caller].calls);
        len += w > 0 ? (size_t)w : 0;
    }
    char tb[32], cb[32];
    snprintf(tb, sizeof tb, "%.3f s", took * p->ns_per_tick / 1e9);
    snprintf(cb, sizeof cb, "%.3f s", cpu * p->ns_per_tick / 1e9);
    rp_profile_warn(p,
                    "%u loop%s of calls below the resolution (%s%s): compensation took the "
                    "hooks' cost of them, %s, out of the callers' time (%s on CPU left in "
                    "all); right for a loop of fixed work, but one that polls until something "
                    "happens (a spin) runs as long without the recorder: --no-compensate "
                    "shows its time (docs/performance.md)",
                    count, count == 1 ? "" : "s", names, count > POLL_NAMES ? ", ..." : "", tb, cb);
}

void rp_profile_hints(struct rp_profile *p)
{
    if (p->defs_only)
        return; /* (no statistics to judge) */
    hint_no_functions(p);
    hint_unnamed(p);
    hint_inline_hooked(p);
    hint_poll(p);
}

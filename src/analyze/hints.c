// SPDX-License-Identifier: MIT
/*
 * hints.c - the hints of hints.h.  Each looks at the profile once (and at
 * most a few binaries' section headers), so it costs nothing next to the
 * replay.
 */
#include "hints.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#include "trace/format.h"

#define MAX_MODULES 8 /* modules named in the hint on unnamed functions */

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

void rp_profile_hints(struct rp_profile *p)
{
    if (p->defs_only)
        return; /* (no statistics to judge) */
    hint_no_functions(p);
    hint_unnamed(p);
}

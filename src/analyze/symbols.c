// SPDX-License-Identifier: MIT
/*
 * symbols.c - names code addresses of a recorded process (symbols.h).
 *
 * The MAPS chunk (text of /proc/PID/maps) says which file is mapped where
 * (symbols_maps.c reports each file to libdwfl at its load bias); libdwfl
 * then gives the symbol containing an address (symtab or dynsym, of the
 * file or of its separate debug file, symbols_debug.c) and its source line
 * (DWARF, symbols_names.c).  Here: the symbolizer's life, and the answer
 * for one address, cached per address.  A symbolizer is not thread-safe.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/profile.h"
#include "analyze/symbols_int.h"
#include "common/array.h"
#include "common/error.h"

/*
 * Parses the maps text and reports every usable file to dwfl.  Returns NULL
 * only when out of memory; unusable lines and files are skipped.
 */
struct rp_symbolizer *rp_sym_open(const char *maps, size_t maps_len)
{
    struct rp_symbolizer *s = calloc(1, sizeof *s);
    bool ok = false;

    if (s == NULL)
        return NULL;
    elf_version(EV_CURRENT);
    s->dwfl = dwfl_begin(&rp_sym_callbacks);
    if (s->dwfl == NULL)
        goto out;
    if (rp_sym_report(s, maps, maps_len) < 0)
        goto out;
    ok = true;
out:
    if (!ok) {
        rp_sym_close(s);
        return NULL;
    }
    return s;
}

/* Frees everything, closing the files; cannot fail (NULL is ignored). */
void rp_sym_close(struct rp_symbolizer *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->cache_cap; i++) {
        free(s->cache[i].name);
        free(s->cache[i].file);
    }
    free(s->cache);
    for (size_t k = 0; k < s->nmodules; k++) {
        free(s->modules[k].path);
        free(s->modules[k].cus);
        free(s->modules[k].fns);
    }
    free(s->modules);
    free(s->maps);
    if (s->dwfl != NULL)
        dwfl_end(s->dwfl);
    if (s->cxx_handle != NULL)
        dlclose(s->cxx_handle);
    free(s);
}

/* Frees the strings of *sym and zeroes it; cannot fail (NULL is ignored). */
void rp_sym_clear(struct rp_symbol *sym)
{
    if (sym == NULL)
        return;
    free(sym->name);
    free(sym->file);
    free(sym->module);
    memset(sym, 0, sizeof *sym);
}

/* Returns the module index of the executable mapping holding addr, or SYM_NO_MODULE. */
static uint32_t find_module(const struct rp_symbolizer *s, uint64_t addr)
{
    size_t lo = 0, hi = s->nmaps;

    /* the last mapping starting at or below addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->maps[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= s->maps[lo - 1].end)
        return SYM_NO_MODULE;
    return s->maps[lo - 1].module;
}

/*
 * Names a data address (a lock in a static variable): outside every
 * executable mapping, but inside the address range libdwfl gave the module
 * (all its PT_LOAD segments), whose symbol table has the variable.  Leaves
 * e unnamed when there is no such object symbol; fails with RP_ENOMEM only.
 */
static int resolve_data(struct rp_symbolizer *s, uint64_t addr, struct sym_entry *e)
{
    GElf_Sym sym;
    GElf_Off off = 0;
    Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
    const char *name = mod ? dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL) : NULL;
    char buf[512];

    if (name == NULL || name[0] == '\0' || GELF_ST_TYPE(sym.st_info) != STT_OBJECT)
        return 0;
    if (off) { /* a member: "bus+0x40" */
        snprintf(buf, sizeof(buf), "%s+0x%llx", name, (unsigned long long)off);
        name = buf;
    }
    e->name = rp_sym_name_dup(s, name);
    return e->name ? 0 : RP_ENOMEM;
}

/* Computes the answer for addr into *e; fails with RP_ENOMEM only. */
static int resolve(struct rp_symbolizer *s, uint64_t addr, struct sym_entry *e)
{
    Dwfl_Module *mod;
    const char *name, *src;
    Dwarf_Addr laddr;
    Dwfl_Line *line;
    int lineno = 0, col, rc;

    memset(e, 0, sizeof *e);
    e->addr = addr;
    e->module = find_module(s, addr);
    if (e->module == SYM_NO_MODULE)
        return resolve_data(s, addr, e);
    if ((mod = s->modules[e->module].mod) == NULL)
        return 0;
    name = rp_sym_name_by_fn(&s->modules[e->module], addr, &rc);
    if (rc < 0)
        return rc;
    if (name != NULL) {
        e->name = rp_sym_name_dup(s, name);
        if (e->name == NULL)
            return RP_ENOMEM;
    }
    line = dwfl_module_getsrc(mod, addr);
    src = line ? dwfl_lineinfo(line, &laddr, &lineno, &col, NULL, NULL) : NULL;
    if (src == NULL) {
        Dwarf_Line *dl = rp_sym_line_by_cu(&s->modules[e->module], addr, &rc);
        if (rc < 0) {
            free(e->name);
            e->name = NULL;
            return rc;
        }
        if (dl != NULL && (src = dwarf_linesrc(dl, NULL, NULL)) != NULL &&
            dwarf_lineno(dl, &lineno) != 0)
            lineno = 0;
    }
    if (src != NULL && src[0] != '\0') {
        e->file = strdup(src);
        if (e->file == NULL) {
            free(e->name);
            e->name = NULL;
            return RP_ENOMEM;
        }
        e->line = lineno > 0 ? (uint32_t)lineno : 0;
    }
    return 0;
}

int rp_sym_declared_inline(struct rp_symbolizer *s, uint64_t addr)
{
    uint32_t m = s ? find_module(s, addr) : SYM_NO_MODULE;
    if (m == SYM_NO_MODULE || !s->modules[m].mod)
        return RP_ENOENT;
    Dwarf_Addr bias;
    Dwarf_Die *cu = dwfl_module_addrdie(s->modules[m].mod, addr, &bias), *scopes = NULL;
    int n = cu ? dwarf_getscopes(cu, addr - bias, &scopes) : -1, rc = RP_ENOENT;
    /* innermost first: a copy of an inlined callee at the entry comes
     * before the function's own subprogram */
    for (int i = 0; i < n; i++) {
        Dwarf_Attribute a;
        Dwarf_Word v;
        if (dwarf_tag(&scopes[i]) != DW_TAG_subprogram)
            continue;
        rc = dwarf_attr_integrate(&scopes[i], DW_AT_inline, &a) && dwarf_formudata(&a, &v) == 0 &&
             (v == DW_INL_declared_inlined || v == DW_INL_declared_not_inlined);
        break;
    }
    free(scopes);
    return rc;
}

/* Doubles the cache table (or creates it); fails with RP_ENOMEM. */
static int cache_grow(struct rp_symbolizer *s)
{
    size_t ncap = s->cache_cap ? 2 * s->cache_cap : 1024;
    struct sym_entry *nc = calloc(ncap, sizeof *nc);

    if (nc == NULL)
        return RP_ENOMEM;
    for (size_t i = 0; i < s->cache_cap; i++) {
        size_t h;
        if (!s->cache[i].used)
            continue;
        for (h = (size_t)rp_mix64(s->cache[i].addr) & (ncap - 1); nc[h].used;
             h = (h + 1) & (ncap - 1))
            ;
        nc[h] = s->cache[i];
    }
    free(s->cache);
    s->cache = nc;
    s->cache_cap = ncap;
    return 0;
}

/* Fills *out with copies of e; fails with RP_ENOMEM (then *out is all NULL). */
static int copy_out(const struct rp_symbolizer *s, const struct sym_entry *e, struct rp_symbol *out)
{
    memset(out, 0, sizeof *out);
    /* names from a binary are text to show: no control bytes (rp_text_dup) */
    if (e->name != NULL && (out->name = rp_text_dup(e->name, strlen(e->name), 0, NULL)) == NULL)
        goto fail;
    if (e->file != NULL && (out->file = rp_text_dup(e->file, strlen(e->file), 0, NULL)) == NULL)
        goto fail;
    out->line = e->line;
    if (e->module != SYM_NO_MODULE && s->modules[e->module].mod) {
        out->offset = e->addr - s->modules[e->module].bias;
        out->has_offset = 1;
    }
    if (e->module != SYM_NO_MODULE &&
        (out->module = rp_text_dup(s->modules[e->module].path, strlen(s->modules[e->module].path),
                                   0, NULL)) == NULL)
        goto fail;
    return 0;
fail:
    rp_sym_clear(out);
    return RP_ENOMEM;
}

/*
 * Answers from the cache, or resolves and caches.  Fails with RP_ENOMEM, or
 * RP_EINVAL when s or out is NULL; *out is all NULL on failure.
 */
int rp_sym_lookup(struct rp_symbolizer *s, uint64_t addr, struct rp_symbol *out)
{
    struct sym_entry e;
    size_t h;
    int rc;

    if (out == NULL)
        return RP_EINVAL;
    memset(out, 0, sizeof *out);
    if (s == NULL)
        return RP_EINVAL;
    if (s->cache_cap != 0) {
        for (h = (size_t)rp_mix64(addr) & (s->cache_cap - 1); s->cache[h].used;
             h = (h + 1) & (s->cache_cap - 1))
            if (s->cache[h].addr == addr)
                return copy_out(s, &s->cache[h], out);
    }
    if (2 * (s->cache_used + 1) > s->cache_cap) {
        rc = cache_grow(s);
        if (rc < 0)
            return rc;
    }
    rc = resolve(s, addr, &e);
    if (rc < 0)
        return rc;
    for (h = (size_t)rp_mix64(addr) & (s->cache_cap - 1); s->cache[h].used;
         h = (h + 1) & (s->cache_cap - 1))
        ;
    e.used = true;
    s->cache[h] = e;
    s->cache_used++;
    return copy_out(s, &s->cache[h], out);
}

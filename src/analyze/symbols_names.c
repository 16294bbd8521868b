// SPDX-License-Identifier: MIT
/*
 * symbols_names.c - names and lines inside one module: the module's symbol
 * table sorted once (one best symbol per address, so a lookup is a binary
 * search where libdwfl searches linearly), its compile units' ranges for
 * files without .debug_aranges, and symbol names cleaned (no version) and
 * demangled with the __cxa_demangle the process has or can load.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
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

#include "analyze/symbols_int.h"
#include "common/error.h"

/*
 * Returns __cxa_demangle if this process has it or can load libstdc++ at
 * run time (nothing links it in); NULL when it is not available.
 */
static sym_demangle_fn get_demangler(struct rp_symbolizer *s)
{
    void *f;

    if (s->demangle_state != 0)
        return s->demangle;
    s->demangle_state = -1;
    f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (f == NULL) {
        s->cxx_handle = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (s->cxx_handle != NULL)
            f = dlsym(s->cxx_handle, "__cxa_demangle");
    }
    if (f != NULL) {
        /* POSIX guarantees object and function pointers convert */
        memcpy(&s->demangle, &f, sizeof f);
        s->demangle_state = 1;
    }
    return s->demangle;
}

/*
 * Copies a symbol name without its symbol version (fopen@@GLIBC_2.2.5 in a
 * debug file's symtab), demangling C++ names when possible; NULL on ENOMEM.
 */
char *rp_sym_name_dup(struct rp_symbolizer *s, const char *name)
{
    const char *at = strchr(name, '@');

    if (at != NULL && at != name)
        return strndup(name, (size_t)(at - name));
    if (name[0] == '_' && name[1] == 'Z') {
        sym_demangle_fn dm = get_demangler(s);
        int status = -1;
        char *d = dm ? dm(name, NULL, NULL, &status) : NULL;
        if (d != NULL && status == 0)
            return d;
        free(d);
    }
    return strdup(name);
}

static int cmp_fn(const void *a, const void *b)
{
    const struct sym_fn *x = a, *y = b;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->rank > y->rank ? -1 : x->rank < y->rank; /* best first */
}

/* Whether elf is 32-bit ARM code (Thumb functions' symbols are odd). */
static bool elf_is_arm(Elf *elf)
{
    GElf_Ehdr eh;
    return elf != NULL && gelf_getehdr(elf, &eh) != NULL && eh.e_machine == EM_ARM;
}

/*
 * Builds the sorted symbol table of sm from its symtab (or dynsym, or that
 * of its debug file), keeping per address the symbol dwfl would prefer:
 * global over weak over local, functions over untyped labels, sized over
 * sizeless; then names without leading underscores.  dwfl_module_addrinfo searches linearly; this
 * makes lookups O(log n).  Fails with RP_ENOMEM; a module without symbols gets an empty table.
 */
static int build_fns(struct sym_module *sm)
{
    int n = dwfl_module_getsymtab(sm->mod);
    size_t k = 0;

    sm->fns_done = true;
    if (n <= 1)
        return 0;
    sm->fns = calloc((size_t)n, sizeof *sm->fns);
    if (sm->fns == NULL)
        return RP_ENOMEM;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf;
        Dwarf_Addr bias;
        const char *name = dwfl_module_getsym_info(sm->mod, i, &sym, &addr, &shndx, &elf, &bias);
        unsigned type, bind, rank;

        if (name == NULL || name[0] == '\0' || sym.st_shndx == SHN_UNDEF || addr == 0)
            continue;
        type = GELF_ST_TYPE(sym.st_info);
        bind = GELF_ST_BIND(sym.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
            continue;
        rank = bind == STB_GLOBAL || bind == STB_GNU_UNIQUE ? 3 : bind == STB_WEAK ? 2 : 1;
        rank = rank * 4 + (type != STT_NOTYPE ? 2 : 0) + (sym.st_size != 0 ? 1 : 0);
        /* then the public spelling: malloc before __libc_malloc */
        rank = rank * 4 + (name[0] != '_') + (name[0] != '_' || name[1] != '_') * 2;
        if (type == STT_FUNC && (addr & 1) && elf_is_arm(elf))
            addr &= ~(GElf_Addr)1; /* a Thumb function: bit 0 is the mode, not the address */
        sm->fns[k].addr = addr;
        sm->fns[k].size = sym.st_size;
        sm->fns[k].name = name;
        sm->fns[k].rank = rank;
        k++;
    }
    if (k > 1)
        qsort(sm->fns, k, sizeof *sm->fns, cmp_fn);
    sm->nfns = 0;
    for (size_t i = 0; i < k; i++) /* keep the first (best) per address */
        if (sm->nfns == 0 || sm->fns[sm->nfns - 1].addr != sm->fns[i].addr)
            sm->fns[sm->nfns++] = sm->fns[i];
    return 0;
}

/*
 * Returns the name of the symbol containing addr: the nearest sized symbol
 * below it that covers it, else a sizeless label right below it; NULL when
 * none (or RP_ENOMEM through *rc).
 */
const char *rp_sym_name_by_fn(struct sym_module *sm, uint64_t addr, int *rc)
{
    size_t lo = 0, hi;

    *rc = 0;
    if (!sm->fns_done && (*rc = build_fns(sm)) < 0)
        return NULL;
    hi = sm->nfns;
    while (lo < hi) { /* first symbol above addr */
        size_t mid = lo + (hi - lo) / 2;
        if (sm->fns[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    /* a short look back finds a function around nested labels */
    for (size_t i = lo, tries = 0; i > 0 && tries < 64; i--, tries++) {
        const struct sym_fn *f = &sm->fns[i - 1];
        if (f->size != 0 && addr - f->addr < f->size)
            return f->name;
    }
    return sm->fns[lo - 1].size == 0 ? sm->fns[lo - 1].name : NULL;
}

static int cmp_cu(const void *a, const void *b)
{
    const struct sym_cu *x = a, *y = b;

    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/*
 * Builds the sorted CU range table of sm from the CU DIEs (DW_AT_low_pc,
 * high_pc, ranges).  Fails with RP_ENOMEM; a module without DWARF gets an
 * empty table.
 */
static int build_cus(struct sym_module *sm)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(sm->mod, &bias);
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    Dwarf_Half version;
    uint8_t unit_type;
    size_t cap = 0;

    sm->cus_done = true;
    if (dw == NULL)
        return 0;
    while (dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL) == 0) {
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
            if (lo >= hi)
                continue;
            if (sm->ncus == cap) {
                size_t ncap = cap ? 2 * cap : 64;
                struct sym_cu *v = realloc(sm->cus, ncap * sizeof *v);
                if (v == NULL)
                    return RP_ENOMEM;
                sm->cus = v;
                cap = ncap;
            }
            sm->cus[sm->ncus].lo = lo + bias;
            sm->cus[sm->ncus].hi = hi + bias;
            sm->cus[sm->ncus].die = dwarf_dieoffset(&cudie);
            sm->ncus++;
        }
    }
    if (sm->ncus > 1)
        qsort(sm->cus, sm->ncus, sizeof *sm->cus, cmp_cu);
    return 0;
}

/*
 * Finds the line row for addr from the CU ranges, for files without
 * .debug_aranges (clang does not emit them; libdwfl needs them).  Returns
 * NULL when nothing covers addr, or RP_ENOMEM through *rc.
 */
Dwarf_Line *rp_sym_line_by_cu(struct sym_module *sm, uint64_t addr, int *rc)
{
    Dwarf_Addr bias;
    Dwarf *dw;
    size_t lo = 0, hi;

    *rc = 0;
    if (!sm->cus_done && (*rc = build_cus(sm)) < 0)
        return NULL;
    hi = sm->ncus;
    while (lo < hi) { /* first range starting above addr */
        size_t mid = lo + (hi - lo) / 2;
        if (sm->cus[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    dw = dwfl_module_getdwarf(sm->mod, &bias);
    /* ranges may nest or overlap: look back over the few that could hold addr */
    for (size_t i = lo, tries = 0; i > 0 && dw != NULL && tries < 16; i--, tries++) {
        const struct sym_cu *c = &sm->cus[i - 1];
        Dwarf_Die die;
        Dwarf_Line *line;
        if (addr >= c->hi || dwarf_offdie(dw, c->die, &die) == NULL)
            continue;
        line = dwarf_getsrc_die(&die, addr - bias);
        if (line != NULL)
            return line;
    }
    return NULL;
}

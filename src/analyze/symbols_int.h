// SPDX-License-Identifier: MIT
/*
 * symbols_int.h - what the files of the symbolizer share (symbols.c the
 * symbolizer and its cache, symbols_maps.c the maps text and the files it
 * reports to libdwfl, symbols_debug.c finding ELF and separate debug
 * files, symbols_names.c names and lines inside one module).
 *
 * Invariants: maps are sorted by start once rp_sym_open returns, each
 * pointing at its module or SYM_NO_MODULE; a module's Dwfl_Module is one
 * dwfl still holds, or NULL; a module's symbol and CU tables are built on
 * first need and then sorted; the cache is open addressing at most half
 * full, keyed by address.  Everything here reads untrusted files and text:
 * a file that cannot be used leaves its addresses unnamed, and only
 * running out of memory is an error (RP_ENOMEM).
 */
#ifndef RP_ANALYZE_SYMBOLS_INT_H
#define RP_ANALYZE_SYMBOLS_INT_H

#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "analyze/symbols.h"

#include "common/compiler.h"

#define SYM_MAX_PATH    4096 /* longer paths in maps are skipped */
#define SYM_MAX_MODULES 512  /* ELF files reported at most (each holds an fd) */
#define SYM_NO_MODULE   UINT32_MAX

typedef char *(*sym_demangle_fn)(const char *, char *, size_t *, int *);

/* One executable file mapping from the maps text. */
struct sym_map {
    uint64_t start, end, offset;
    const char *path; /* into the maps text, not NUL-terminated */
    size_t path_len;
    size_t order;    /* line number: keeps the sort stable */
    uint32_t module; /* index into modules, SYM_NO_MODULE if none */
};

/* The address range of one DWARF compile unit (run-time addresses). */
struct sym_cu {
    uint64_t lo, hi;
    Dwarf_Off die; /* offset of the CU DIE */
};

/* One symbol that can name code (run-time address). */
struct sym_fn {
    uint64_t addr, size;
    const char *name; /* in the ELF string table, lives as long as the dwfl */
    unsigned rank;    /* higher wins among symbols at one address */
};

/* One mapped file at one load bias. */
struct sym_module {
    char *path;
    Dwfl_Module *mod; /* NULL: the file is missing or not a usable ELF */
    uint64_t bias;
    struct sym_cu *cus; /* CU ranges, sorted; built on first need */
    size_t ncus;
    bool cus_done;
    struct sym_fn *fns; /* one best symbol per address, sorted; built on first need */
    size_t nfns;
    bool fns_done;
};

/* A cached answer for one address. */
struct sym_entry {
    uint64_t addr;
    char *name;
    char *file;
    uint32_t line;
    uint32_t module; /* SYM_NO_MODULE: unmapped */
    bool used;
};

struct rp_symbolizer {
    Dwfl *dwfl;
    struct sym_map *maps; /* sorted by start */
    size_t nmaps;
    struct sym_module *modules;
    size_t nmodules;
    struct sym_entry *cache; /* open addressing, capacity a power of two */
    size_t cache_cap, cache_used;
    int demangle_state; /* 0 not tried, 1 available, -1 unavailable */
    void *cxx_handle;
    sym_demangle_fn demangle;
};

/* Parses maps (untrusted text, not NUL-terminated), reports every usable
 * file to s->dwfl and keeps the modules dwfl still holds; s->maps end
 * sorted by start.  Fails with RP_ENOMEM or when dwfl fails (symbols_maps.c). */
RP_HIDDEN int rp_sym_report(struct rp_symbolizer *s, const char *maps, size_t maps_len);

/* Opens path read-only if it is a regular file outside /proc, /sys and /dev;
 * returns the fd or -1 (symbols_maps.c). */
RP_HIDDEN int rp_sym_open_regular(const char *path);

/* libdwfl's callbacks: the mapped files by path, their debug files by
 * build-id or .gnu_debuglink, never over the network (symbols_debug.c). */
RP_HIDDEN extern const Dwfl_Callbacks rp_sym_callbacks;

/* A symbol name without its version, demangled when possible; NULL when out
 * of memory (symbols_names.c). */
RP_HIDDEN char *rp_sym_name_dup(struct rp_symbolizer *s, const char *name);

/* The name of the symbol of sm containing addr, or NULL (none; RP_ENOMEM
 * through *rc) (symbols_names.c). */
RP_HIDDEN const char *rp_sym_name_by_fn(struct sym_module *sm, uint64_t addr, int *rc);

/* The line row of addr from sm's CU ranges, or NULL (none; RP_ENOMEM
 * through *rc) (symbols_names.c). */
RP_HIDDEN Dwarf_Line *rp_sym_line_by_cu(struct sym_module *sm, uint64_t addr, int *rc);

#endif /* RP_ANALYZE_SYMBOLS_INT_H */

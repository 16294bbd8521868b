// SPDX-License-Identifier: MIT
/*
 * symbols.h - names code addresses of a recorded process: the MAPS chunk
 * says which file is mapped where, elfutils (libdwfl) reads each file's
 * symbol tables and DWARF line info.
 */
#ifndef RP_ANALYZE_SYMBOLS_H
#define RP_ANALYZE_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

struct rp_symbolizer;

struct rp_symbol {
    char *name; /* malloc'd, demangled where needed; NULL if unknown */
    char *file; /* malloc'd source file, NULL if no DWARF line info */
    uint32_t line;
    char *module;    /* malloc'd path of the binary, NULL if unmapped */
    uint64_t offset; /* the address in the binary (less its load bias), when has_offset */
    int has_offset;  /* the binary could be read (its load bias is known) */
};

/*
 * Creates a symbolizer from the text of /proc/PID/maps (maps_len bytes, not
 * NUL-terminated necessarily).  Files that no longer exist or cannot be read
 * are skipped (their addresses stay unnamed).  Returns NULL only when out of
 * memory.
 */
struct rp_symbolizer *rp_sym_open(const char *maps, size_t maps_len);

/*
 * Names addr (a runtime address).  Returns 0 and fills *out (all fields may
 * be NULL when nothing is known), or RP_ENOMEM.  Free with rp_sym_clear().
 */
int rp_sym_lookup(struct rp_symbolizer *s, uint64_t addr, struct rp_symbol *out);

/*
 * Whether the function whose code starts at addr (a runtime address) was
 * declared inline in its source: its DWARF subprogram, or the abstract one
 * it is an out-of-line copy of, has DW_AT_inline "declared".  Returns 1 or
 * 0, or RP_ENOENT when it cannot be told (no module, no DWARF there).
 */
int rp_sym_declared_inline(struct rp_symbolizer *s, uint64_t addr);
void rp_sym_clear(struct rp_symbol *sym);
void rp_sym_close(struct rp_symbolizer *s);

#endif /* RP_ANALYZE_SYMBOLS_H */

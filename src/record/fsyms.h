// SPDX-License-Identifier: MIT
/*
 * fsyms.h - names of code addresses, from the loaded modules' ELF symbol
 * tables (fsyms.c), for the function switches (funcs.c) and the writer's
 * unwinding records.  The caller holds funcs.c's table lock for every call.
 */
#ifndef RP_RECORD_FSYMS_H
#define RP_RECORD_FSYMS_H

#include <stddef.h>
#include <stdint.h>

#include "common/compiler.h"

/* One function symbol: its loaded address, size (0: unknown) and name
 * (pointing into the module's mapping, which stays). */
struct fsym {
    uint64_t addr, size;
    const char *name;
};

/* Scans the loaded modules the first time it is called; later calls do
 * nothing.  A module that cannot be read has no names (never an error). */
RP_HIDDEN void rp_fsyms_load(void);

/* The function symbol holding address a, or NULL.  Rescans the loaded
 * modules once when no known module holds a (a later dlopen). */
RP_HIDDEN const struct fsym *rp_fsyms_find(uint64_t a);

/* Its name, or NULL. */
RP_HIDDEN const char *rp_fsyms_name(uint64_t a);

/* As rp_fsyms_find in the modules scanned so far only, with *held whether
 * one holds a: needs no lock, reads memory only, async-signal-safe. */
RP_HIDDEN const struct fsym *rp_fsyms_find_loaded(uint64_t a, int *held);

/* The symbols of the scanned modules whose names match the glob pattern. */
RP_HIDDEN int rp_fsyms_count(const char *pattern);

/* funcs.c's warning (nothing when the recorder is quiet). */
RP_HIDDEN void rp_funcs_warn(const char *msg);

#endif

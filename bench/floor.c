// SPDX-License-Identifier: MIT
/*
 * floor.c - the floor of `make bench`: the least a tracing hook can do.
 * Preloaded into workload_instr, its __cyg_profile_func_enter/exit read the
 * TSC and store 16 bytes (time, function address) into a thread-local ring
 * of 64 KiB that is never written out: memory only, no writer.  Every
 * recorder row is compared with it.  Cannot fail.
 */
#include <stdint.h>
#include <x86intrin.h>

#define RING (1u << 12) /* entries of 16 bytes */

struct ev {
    uint64_t t;
    uintptr_t fn;
};

static __thread struct ev ring[RING];
static __thread unsigned pos;

__attribute__((no_instrument_function)) static inline void put(void *fn, uint64_t tag)
{
    struct ev *e = &ring[pos++ & (RING - 1)];
    e->t = __rdtsc() | tag;
    e->fn = (uintptr_t)fn;
}

__attribute__((visibility("default"), no_instrument_function)) void
__cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    put(fn, 0);
}

__attribute__((visibility("default"), no_instrument_function)) void
__cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    put(fn, 1);
}

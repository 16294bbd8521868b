// SPDX-License-Identifier: MIT
/*
 * floor.c - the floor of `make bench`: the least a tracing hook can do.
 * Preloaded into workload_instr, its __cyg_profile_func_enter/exit read the
 * TSC and store 16 bytes (time, function address) into a thread-local ring
 * of 64 KiB that is never written out: memory only, no writer.  Every
 * recorder row is compared with it.  Cannot fail.
 *
 * The ring is visible outside this file, so that the compiler cannot drop
 * stores nobody here reads (a static ring lost them: the hook was a
 * counter increment and the TSC read), and its thread-local storage is
 * initial-exec, as librankprof's is: one load through %fs, no call to
 * __tls_get_addr.
 */
#include <stdint.h>
#include <x86intrin.h>

#define RING (1u << 12) /* entries of 16 bytes */

struct ev {
    uint64_t t;
    uintptr_t fn;
};

#define FLOOR_TLS __attribute__((tls_model("initial-exec"))) __thread

__attribute__((visibility("default"))) FLOOR_TLS struct ev rp_floor_ring[RING];
static FLOOR_TLS unsigned pos;

__attribute__((no_instrument_function)) static inline void put(void *fn, uint64_t tag)
{
    struct ev *e = &rp_floor_ring[pos++ & (RING - 1)];
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

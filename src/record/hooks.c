// SPDX-License-Identifier: MIT
/*
 * hooks.c - the entry points that -finstrument-functions calls.  GCC and
 * clang emit a call to __cyg_profile_func_enter at the start of every
 * instrumented function and to __cyg_profile_func_exit before each return,
 * passing the function's address and its call site.  Each becomes one raw
 * record; the call site is not kept (the caller is known from the stack).
 *
 * These functions themselves must not be instrumented (the whole recorder is
 * built with -fno-instrument-functions and the attribute says it again), or
 * they would call themselves.
 *
 * When a function filter or the throttle is active (rp_funcs_gate, one
 * predictable test of a global byte otherwise) every function event goes to
 * funcs.c instead, which decides and appends.
 */
#include "funcs.h"
#include "rt.h"

#define RP_HOOK __attribute__((visibility("default"), no_instrument_function, hot))

RP_HOOK void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    if (unlikely(rp_funcs_gated())) {
        rp_funcs_enter((uintptr_t)fn);
        return;
    }
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_ENTER, (uintptr_t)fn));
}

RP_HOOK void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    if (unlikely(rp_funcs_gated())) {
        rp_funcs_exit((uintptr_t)fn);
        return;
    }
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_EXIT, (uintptr_t)fn));
}

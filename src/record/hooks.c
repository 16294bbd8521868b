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
 */
#include "rt.h"

#define RP_HOOK __attribute__((visibility("default"), no_instrument_function, hot))

RP_HOOK void __cyg_profile_func_enter(void *fn, void *site)
{
    (void)site;
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_ENTER, (uintptr_t)fn));
}

RP_HOOK void __cyg_profile_func_exit(void *fn, void *site)
{
    (void)site;
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_EXIT, (uintptr_t)fn));
}

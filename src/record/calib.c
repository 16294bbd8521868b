// SPDX-License-Identifier: MIT
/*
 * calib.c - the two empty functions the start-up measurement of the
 * recorder's own cost calls (calib.h; the measurement is in rt.c).
 *
 * This file, unlike the rest of the recorder, is compiled with
 * -finstrument-functions (CMakeLists.txt), so rp_calib_leaf calls
 * __cyg_profile_func_enter and __cyg_profile_func_exit exactly as a
 * function of the profiled program does; rp_calib_bare says
 * no_instrument_function and is otherwise identical.  Nothing else may live
 * here: every function of this file, inline helpers from headers included,
 * would call the hooks.  Neither function can fail.
 */
#include "calib.h"

__attribute__((noinline)) void rp_calib_leaf(void)
{
    __asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline, no_instrument_function)) void rp_calib_bare(void)
{
    __asm__ __volatile__("" ::: "memory");
}

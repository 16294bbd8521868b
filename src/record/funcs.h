// SPDX-License-Identifier: MIT
/*
 * funcs.h - per-function control in the recorder (funcs.c): the function
 * name filter (RANKPROF_FILTER, rp_func_enable) and the auto-throttle
 * (RANKPROF_THROTTLE).
 *
 * The hooks test one global byte, rp_funcs_gate, before their usual append;
 * it stays 0 (and the hooks compile to what they were, plus that test) until
 * a function rule or the throttle exists, and once set it stays set: every
 * later function event goes through rp_funcs_enter / rp_funcs_exit, which
 * decide per code address and call rp_append themselves.
 */
#ifndef RP_RECORD_FUNCS_H
#define RP_RECORD_FUNCS_H

#include <stddef.h>
#include <stdint.h>

#include "rt.h"

RP_HIDDEN extern uint8_t rp_funcs_gate;

/* The throttle's sample by default: after a function is throttled, 1 call
 * in this many is still recorded, timed (RANKPROF_THROTTLE=CALLS:NS:K). */
#define RP_THROTTLE_SAMPLE 100

/* Whether function events must go through funcs.c (one load and a test). */
static inline int rp_funcs_gated(void)
{
    return __atomic_load_n(&rp_funcs_gate, __ATOMIC_RELAXED) != 0;
}

/*
 * The gated enter and exit of the function at address fn: decide, keep the
 * thread's shadow stack of decisions, count throttled calls, append.  Never
 * fail visibly: when the thread's state cannot be allocated the decision is
 * the table's at each event (a function toggled while it runs may then
 * leave an unmatched exit or an unclosed span, both counted by the
 * analyzer).
 */
RP_HIDDEN RP_NOINLINE void rp_funcs_enter(uintptr_t fn);
RP_HIDDEN RP_NOINLINE void rp_funcs_exit(uintptr_t fn);

/*
 * Reads RANKPROF_FILTER and RANKPROF_THROTTLE and sets the gate if either
 * asks for it.  Called once by the recorder's start-up, after the clock is
 * calibrated (the throttle's time limit is kept in ticks).  A malformed
 * RANKPROF_THROTTLE is warned about and ignored.
 */
RP_HIDDEN void rp_funcs_start(int quiet);

/*
 * Writes the throttled-call counts of every thread, one RP_CH_FCOUNT chunk
 * per thread that has any, through out.  Called by the final flush after
 * the writer has stopped, and by a fatal signal's (fatal: nothing is
 * written when the table's lock cannot be had within 100 ms, its holder
 * stopped by the signal), before the END chunk.
 * Allocates nothing from the heap.  Threads still running are read as
 * they are (relaxed loads of counters only they write).
 */
RP_HIDDEN void rp_funcs_write(void (*out)(uint32_t type, const void *payload, size_t len),
                              int fatal);

/*
 * The start of the function holding code address a, from the loaded
 * modules' ELF symbol tables, or 0 if unknown (or the table lock stays
 * taken).  Used by the writer for RP_RAW_UNWIND records (unwind.c).
 */
RP_HIDDEN uint64_t rp_funcs_start_of(uint64_t a);

/* As rp_funcs_start_of, from the symbol tables already loaded only (no
 * loading, no rescan of the modules), without the lock: async-signal-safe
 * (direct mode's engine may run in a signal handler).  0 when unknown or
 * not loaded. */
RP_HIDDEN uint64_t rp_funcs_start_of_loaded(uint64_t a);

/* The name of the function that starts at code address a, from the loaded
 * modules' ELF symbol tables (.symtab where the file has one: static
 * functions too), into buf; NULL when none starts there.  Not in a signal
 * handler (it may load the tables). */
RP_HIDDEN const char *rp_funcs_name_of(uint64_t a, char *buf, size_t n);

/*
 * A longjmp or a caught exception lands in the function holding pc
 * (unwind.c): the frames of the gate's shadow stack above that function's
 * innermost frame were left without their exits.  Pops them, and their
 * subtree rules' counts (a jump out of a `-F` subtree leaves it), and
 * returns the address for the landing record: pc when the landing frame
 * was recorded, the function of the innermost recorded frame below it
 * when it was not (the records keep that one open).  When the jump left
 * every recorded frame (out of a -F subtree), the function of the
 * outermost of them, also in *end: the caller ends it after the landing
 * record, with an exit; 0 when no recorded frame was open.  *end is 0
 * otherwise.  pc itself, nothing popped, when no frame of that function
 * is on the stack (an uninstrumented landing) or the stack is deeper than
 * it keeps.  Reads the symbol tables without a lock: async-signal-safe.
 */
RP_HIDDEN uint64_t rp_funcs_landing(uint64_t pc, uint64_t *end);

/* Loads the loaded modules' symbol tables now, where that is safe (direct
 * mode's start-up), for rp_funcs_start_of_loaded.  What cannot be read
 * leaves its functions unknown; cannot fail otherwise. */
RP_HIDDEN void rp_funcs_preload(void);

#endif /* RP_RECORD_FUNCS_H */

// SPDX-License-Identifier: MIT
/*
 * unwind.c - where the stack unwinds without exits: longjmp and friends, and
 * C++ exceptions caught.
 *
 * -finstrument-functions calls the exit hook before each return; a longjmp,
 * a siglongjmp or a C++ exception unwinding through clang++-built frames
 * leaves functions without it.  (g++ calls the exit hook while an exception
 * unwinds, so its frames end by their own exits.)  The replay ends such
 * frames where the stack is seen to leave them: at the next exit of a frame
 * below them, or at the thread's end.  That is too late when the function
 * that goes on calls other functions first: they would be taken for callees
 * of the stale frames.  So the recorder says where the stack landed: these
 * interposers append one raw RP_RAW_UNWIND record (src/trace/writer.h) with
 * a code address inside the function that goes on, and the writer (on its
 * own thread) maps it to that function's start (funcs.c, the ELF symbol
 * tables) and ends every frame above the function's innermost open
 * activation (RP_OP_UNWIND in the trace).
 *
 *   longjmp, _longjmp, siglongjmp, __longjmp_chk   the target PC in the
 *                                                   jmp_buf (glibc x86-64)
 *   __cxa_begin_catch                               its return address: the
 *                                                   catching function's
 *
 * glibc x86-64 dependency: struct __jmp_buf_tag starts with long[8] = rbx,
 * rbp, r12, r13, r14, r15, rsp, pc, with rbp, rsp and pc mangled by
 * PTR_MANGLE (xor with the pointer guard at %fs:0x30, then rol 0x11).  The
 * PC is demangled here (ror 0x11, xor).  Fail safe: an address that is not
 * inside a function open on the thread's stack (another libc, another
 * mangling, a jump into uninstrumented code) makes the writer ignore the
 * record, and the frames end at the next exit below them as before.  On
 * other systems only __cxa_begin_catch is interposed.
 *
 * The real functions are found with dlsym(RTLD_NEXT) by a constructor, so
 * that a siglongjmp out of a signal handler never calls dlsym.  Recursion
 * with the target: frames of an outer activation of the landing function
 * above its innermost one are not told apart (the innermost is kept).
 * swapcontext is not interposed: a coroutine switch looks like calls that
 * do not nest; the replay ends what an exit of a lower frame skips, counts
 * exits it cannot match, and never crashes on it (docs/robustness.md).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>

#include "rt.h"

/* Appends the landing record for code address pc (0 is never sent: it
 * means the thread's end).  Cheap: one rare record per unwinding. */
static inline void unwind_mark(uintptr_t pc)
{
    if (pc)
        rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_UNWIND, pc));
}

/* ---- C++ exceptions ----------------------------------------------------- */

typedef void *(*begin_catch_fn)(void *);
static begin_catch_fn real_begin_catch;

/*
 * Called by the landing pad of a catch clause in the catching function
 * (libstdc++ and libc++abi alike).  When no next definition exists (no C++
 * runtime: nothing can throw), returns the exception object's pointer as
 * the Itanium ABI's begin_catch of a foreign exception would not: that
 * cannot happen, as only a C++ runtime's throw reaches a landing pad.
 */
RP_API void *__cxa_begin_catch(void *exc)
{
    unwind_mark((uintptr_t)__builtin_return_address(0));
    begin_catch_fn f = __atomic_load_n(&real_begin_catch, __ATOMIC_ACQUIRE);
    if (!f) {
        f = (begin_catch_fn)dlsym(RTLD_NEXT, "__cxa_begin_catch");
        __atomic_store_n(&real_begin_catch, f, __ATOMIC_RELEASE);
    }
    return f ? f(exc) : exc;
}

/* ---- longjmp (glibc, x86-64) -------------------------------------------- */

#if defined(__x86_64__) && defined(__GLIBC__)

struct rp_jmp_tag; /* glibc's struct __jmp_buf_tag: long __jmpbuf[8], ... */
typedef void (*jmp_fn)(struct rp_jmp_tag *, int);

enum { J_LONGJMP, J__LONGJMP, J_SIGLONGJMP, J_LONGJMP_CHK, J_N };
static const char *const jmp_names[J_N] = {"longjmp", "_longjmp", "siglongjmp", "__longjmp_chk"};
static jmp_fn jmp_real[J_N]; /* set by the constructor, or at first use */

__attribute__((constructor)) static void unwind_ctor(void)
{
    for (int i = 0; i < J_N; i++)
        __atomic_store_n(&jmp_real[i], (jmp_fn)dlsym(RTLD_NEXT, jmp_names[i]), __ATOMIC_RELEASE);
    real_begin_catch = (begin_catch_fn)dlsym(RTLD_NEXT, "__cxa_begin_catch");
}

/* The PC a glibc x86-64 jmp_buf returns to (header comment). */
static inline uintptr_t jmp_pc(const struct rp_jmp_tag *env)
{
    uintptr_t guard, pc = ((const uintptr_t *)env)[7];
    __asm__("mov %%fs:0x30, %0" : "=r"(guard));
    pc = (pc >> 0x11 | pc << (64 - 0x11)) ^ guard;
    return pc;
}

/* Marks the landing and jumps.  If the real function cannot be had (a
 * libc without it: not glibc), the program is ended as a jump to nowhere
 * would end it. */
static __attribute__((noreturn)) void jump(int i, struct rp_jmp_tag *env, int val)
{
    /* A signal handler that interrupted an append (rt.h) and jumps out
     * leaves that append for good: its guard must not stay set, or every
     * later event of the thread would be dropped as re-entered.  The
     * recorder itself never jumps, and its locked sections block signals
     * (rt.c, section_enter), so a guard set here belongs to an append the
     * jump abandons, whose record was not yet published (pos moves last).
     * Limit: a handler that jumps to a jmp_buf of its own, inside itself,
     * returns to the interrupted append with the guard clear; its records
     * may then be overwritten by that append (lost, never a crash). */
    struct rp_tbuf *t = rp_self;
    if (t && t->guard) {
        atomic_signal_fence(memory_order_seq_cst);
        t->guard = 0;
    }
    unwind_mark(jmp_pc(env));
    jmp_fn f = __atomic_load_n(&jmp_real[i], __ATOMIC_ACQUIRE);
    if (!f)
        f = (jmp_fn)dlsym(RTLD_NEXT, jmp_names[i]);
    if (f)
        f(env, val);
    __builtin_trap();
}

RP_API __attribute__((noreturn)) void longjmp(struct rp_jmp_tag *env, int val)
{
    jump(J_LONGJMP, env, val);
}

RP_API __attribute__((noreturn)) void _longjmp(struct rp_jmp_tag *env, int val)
{
    jump(J__LONGJMP, env, val);
}

RP_API __attribute__((noreturn)) void siglongjmp(struct rp_jmp_tag *env, int val)
{
    jump(J_SIGLONGJMP, env, val);
}

/* what _FORTIFY_SOURCE turns longjmp and siglongjmp into */
RP_API __attribute__((noreturn)) void __longjmp_chk(struct rp_jmp_tag *env, int val)
{
    jump(J_LONGJMP_CHK, env, val);
}

#endif

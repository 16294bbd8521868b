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
 *                                                   catching function's (not
 *                                                   when g++ ended the unwound
 *                                                   frames: __cxa_throw and
 *                                                   __cxa_rethrow note where
 *                                                   the records stood, below)
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

#include "funcs.h"
#include "rt.h"

/* Appends the landing record for code address pc (0 is never sent: it
 * means the thread's end).  With the function gate on (filters, the
 * throttle, subtree rules) the gate's own stack is unwound first, and the
 * record names the innermost recorded frame that goes on; when the jump
 * left every recorded one (out of a -F subtree), it names the outermost of
 * them, which an exit then ends: the frames above it end unwound, it ends
 * there.  Cheap: one rare record per unwinding. */
static inline void unwind_mark(uintptr_t pc)
{
    uint64_t end = 0;
    if (pc && rp_funcs_gated())
        pc = (uintptr_t)rp_funcs_landing(pc, &end);
    if (!pc)
        return;
    rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_UNWIND, pc));
    if (end)
        rp_append(RP_CLASS_BIT_FUNC, rp_raw_word(RP_RAW_FUNC_EXIT, end));
}

/* ---- C++ exceptions ----------------------------------------------------- */

/*
 * g++ calls the exit hook of every frame an exception unwinds (its
 * cleanups do), clang++ does not.  The landing record is needed only in
 * the second case, and does harm in the first when the catch is in a
 * function inlined into another: the catching address is then the outer
 * function's, and the record ends the inlined frames, whose exits come
 * later (a std::thread lambda with a try block: five unmatched exits per
 * catch).  So a throw notes where the thread's records stand, and the
 * catch sends the record unless the records since then close frames that
 * were open at the throw (more exits than enters: a destructor the
 * unwinding runs is a whole call).  A throw not seen here
 * (std::rethrow_exception), or one whose records are no longer in the
 * buffer the thread is filling, sends it as before.  Trace mode only
 * (direct mode applies its records in batches: it sends it).
 */
static __thread struct {
    const struct rp_raw *at;   /* the thread's next record at its last throw, NULL: none */
    const struct rp_raw *base; /* the buffer it was in, ... */
    uint64_t buf;              /* ... the buffer's number (rp_tbuf.produced then) */
} thrown;

static void throw_note(void)
{
    struct rp_tbuf *t = rp_self;
    thrown.at = t && t->base ? t->pos : NULL;
    thrown.base = t ? t->base : NULL;
    thrown.buf = t ? atomic_load_explicit(&t->produced, memory_order_relaxed) : 0;
}

/* Exits less enters among the records [a, e).  Cannot fail. */
static long net_exits(const struct rp_raw *a, const struct rp_raw *e)
{
    long net = 0;
    for (; a < e; a++) {
        uint64_t op = a->word >> RP_RAW_SHIFT;
        net += op == RP_RAW_FUNC_EXIT ? 1 : op == RP_RAW_FUNC_ENTER ? -1 : 0;
    }
    return net;
}

/* Whether the records since the thread's last throw close frames open at
 * the throw: the compiler ends them itself.  They are read in the buffer
 * the thread is filling and, when the throw was in the one before (still
 * the thread's until it goes round its ring), in that one's published
 * part.  Forgets the throw.  Cannot fail: 0 when it cannot tell. */
static int throw_closed(void)
{
    const struct rp_raw *a = thrown.at, *p;
    struct rp_tbuf *t = rp_self;
    thrown.at = NULL;
    if (!a || !t || !t->base || rp_rt.nbuf < 2)
        return 0;
    uint64_t now = atomic_load_explicit(&t->produced, memory_order_relaxed);
    p = t->pos;
    if (now == thrown.buf)
        return a >= t->base && a <= p && net_exits(a, p) > 0;
    if (now != thrown.buf + 1 || a < thrown.base)
        return 0;
    const struct rp_raw *e = thrown.base + t->lens[thrown.buf % rp_rt.nbuf];
    return a <= e && net_exits(a, e) + net_exits(t->base, p) > 0;
}

/* The C++ runtime's definitions of what is interposed here, found by the
 * constructor (or at first use: cxa_next). */
enum { C_THROW, C_RETHROW, C_BEGIN_CATCH, C_N };
static const char *const cxa_names[C_N] = {"__cxa_throw", "__cxa_rethrow", "__cxa_begin_catch"};
static void *cxa_real[C_N];

/* The next definition of cxa_names[i], NULL when there is none (no C++
 * runtime).  Cannot fail. */
static void *cxa_next(int i)
{
    void *f = __atomic_load_n(&cxa_real[i], __ATOMIC_ACQUIRE);
    if (!f) {
        f = dlsym(RTLD_NEXT, cxa_names[i]);
        __atomic_store_n(&cxa_real[i], f, __ATOMIC_RELEASE);
    }
    return f;
}

typedef void (*throw_fn)(void *, void *, void (*)(void *));
typedef void (*rethrow_fn)(void);
typedef void *(*begin_catch_fn)(void *);

/* A throw expression (libstdc++ and libc++abi): notes where the records
 * stand, then throws.  Without a C++ runtime nothing calls it. */
RP_API __attribute__((noreturn)) void __cxa_throw(void *obj, void *tinfo, void (*dest)(void *))
{
    throw_note();
    throw_fn f = (throw_fn)cxa_next(C_THROW);
    if (f)
        f(obj, tinfo, dest);
    __builtin_trap();
}

/* `throw;` in a handler: the same. */
RP_API __attribute__((noreturn)) void __cxa_rethrow(void)
{
    throw_note();
    rethrow_fn f = (rethrow_fn)cxa_next(C_RETHROW);
    if (f)
        f();
    __builtin_trap();
}

/*
 * Called by the landing pad of a catch clause in the catching function
 * (libstdc++ and libc++abi alike).  When no next definition exists (no C++
 * runtime: nothing can throw), returns the exception object's pointer as
 * the Itanium ABI's begin_catch of a foreign exception would not: that
 * cannot happen, as only a C++ runtime's throw reaches a landing pad.
 */
RP_API void *__cxa_begin_catch(void *exc)
{
    if (!throw_closed())
        unwind_mark((uintptr_t)__builtin_return_address(0));
    begin_catch_fn f = (begin_catch_fn)cxa_next(C_BEGIN_CATCH);
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
    for (int i = 0; i < C_N; i++)
        (void)cxa_next(i);
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

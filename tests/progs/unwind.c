// SPDX-License-Identifier: MIT
/*
 * unwind.c - frames left without their exit, for tests/e2e_unwind.sh.
 * usage: prog_unwind MODE [N]   (N default 100)
 *
 *   longjmp     N times: main -> landing, which setjmp()s and calls deep1 ->
 *               deep2 -> deep3 -> longjmp back; landing then calls after()
 *               (a call from the function the jump landed in) and returns.
 *   longjmp N T the same on T threads at once (jumper), N times each
 *               (landing -> after T*N)
 *   siglongjmp  the same with sigsetjmp, deep3 raising SIGUSR1 and the
 *               handler on_usr1 (instrumented) jumping with siglongjmp.
 *   threadexit  N threads: tstart -> deep1 -> deep2 -> deep3, which calls
 *               pthread_exit; main joins them, then calls after() once.
 *   exit        main -> deep1 -> deep2 -> deep3, which calls leaf() N times
 *               and then exit(0) from deep down.
 *   segv        as exit, but deep3 writes through NULL after the leaves.
 *   context     a coroutine (makecontext/swapcontext): N times main calls
 *               co_step, which switches to co_body; co_body calls leaf and
 *               switches back (co_body never returns).
 *
 * Expected calls (every one recorded, whatever the mode):
 *   longjmp, siglongjmp   main 1, landing N, deep1..3 N, after N, leaf 3N
 *                         (one per deep; 4N with the handler's), on_usr1 N
 *                         (siglongjmp); the deeps
 *                         (and on_usr1) are cut N times each; edges
 *                         landing -> after N and landing -> deep1 N
 *   threadexit            main 1, tstart N, deep1..3 N, after 1, leaf 3N;
 *                         tstart and the deeps cut N times each
 *   exit, segv            main 1, deep1..3 1, leaf N + 3, every frame but
 *                         leaf cut once
 *   context               main 1, co_step N, leaf N, co_body 1 (ended,
 *                         unwound, by the first exit of co_step: switches
 *                         are not followed), nothing unmatched
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

static __thread volatile unsigned sink; /* (per thread: longjmp N T) */
static long n = 100;
static int mode;
static __thread jmp_buf env; /* (per thread: longjmp N T) */
static __thread sigjmp_buf senv;

enum { M_LONGJMP, M_SIGLONGJMP, M_THREADEXIT, M_EXIT, M_SEGV, M_CONTEXT };

static ucontext_t uc_main, uc_co;
static char co_stack[64 * 1024];

void leaf(unsigned x)
{
    sink += x;
}

/* The fault, hidden from UBSan (which would end the program first). */
static __attribute__((no_sanitize("undefined"), noinline, no_instrument_function)) void
store_null(volatile int *p)
{
    *p = 1;
}

void on_usr1(int sig)
{
    leaf((unsigned)sig);
    siglongjmp(senv, 1);
}

void deep3(void)
{
    leaf(3);
    switch (mode) {
    case M_LONGJMP:
        longjmp(env, 1);
    case M_SIGLONGJMP:
        raise(SIGUSR1);
        break;
    case M_THREADEXIT:
        pthread_exit(NULL);
    case M_EXIT:
    case M_SEGV:
        for (long i = 0; i < n; i++)
            leaf((unsigned)i);
        fflush(stdout);
        if (mode == M_SEGV)
            store_null(NULL);
        exit(0);
    }
    abort(); /* not reached */
}

void deep2(void)
{
    leaf(2);
    deep3();
}

void deep1(void)
{
    leaf(1);
    deep2();
}

void after(void)
{
    sink++;
}

void landing(void)
{
    if (mode == M_LONGJMP ? setjmp(env) == 0 : sigsetjmp(senv, 1) == 0)
        deep1();
    after();
}

void co_body(void)
{
    for (unsigned i = 0;; i++) {
        leaf(i);
        swapcontext(&uc_co, &uc_main);
    }
}

void co_step(void)
{
    swapcontext(&uc_main, &uc_co);
}

void *tstart(void *arg)
{
    (void)arg;
    deep1();
    return NULL;
}

void *jumper(void *arg)
{
    for (long i = 0; i < n; i++)
        landing();
    return arg;
}

int main(int argc, char **argv)
{
    static const char *const modes[] = {"longjmp", "siglongjmp", "threadexit",
                                        "exit",    "segv",       "context"};
    if (argc < 2)
        goto usage;
    for (mode = 0; mode < 6 && strcmp(argv[1], modes[mode]); mode++)
        ;
    if (mode == 6)
        goto usage;
    if (argc > 2)
        n = atol(argv[2]);
    if (mode == M_SIGLONGJMP) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_usr1;
        sigaction(SIGUSR1, &sa, NULL);
    }
    if (mode == M_LONGJMP && argc > 3) { /* T threads at once, each N times */
        long t = atol(argv[3]);
        pthread_t th[64];
        if (t < 1 || t > 64)
            goto usage;
        for (long i = 0; i < t; i++)
            if (pthread_create(&th[i], NULL, jumper, NULL) != 0)
                return 2;
        for (long i = 0; i < t; i++)
            pthread_join(th[i], NULL);
    } else if (mode == M_LONGJMP || mode == M_SIGLONGJMP) {
        for (long i = 0; i < n; i++)
            landing();
    } else if (mode == M_THREADEXIT) {
        for (long i = 0; i < n; i++) {
            pthread_t t;
            if (pthread_create(&t, NULL, tstart, NULL) != 0 || pthread_join(t, NULL) != 0)
                return 2;
        }
        after();
    } else if (mode == M_CONTEXT) {
        getcontext(&uc_co);
        uc_co.uc_stack.ss_sp = co_stack;
        uc_co.uc_stack.ss_size = sizeof(co_stack);
        uc_co.uc_link = NULL;
        makecontext(&uc_co, co_body, 0);
        for (long i = 0; i < n; i++)
            co_step();
    } else {
        deep1();
    }
    return 0;
usage:
    fprintf(stderr, "usage: prog_unwind longjmp|siglongjmp|threadexit|exit|segv|context [N]\n"
                    "       prog_unwind longjmp N T\n");
    return 2;
}

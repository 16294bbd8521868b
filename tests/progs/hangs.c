// SPDX-License-Identifier: MIT
/*
 * hangs.c - programs that used to hang or crash the recorder, for
 * tests/e2e_hangs.sh (docs/robustness.md, "Never hang, never crash").
 *
 * Usage: hangs MODE N
 *   cancel N   N rounds: 4 threads call work() in a loop (a cancellation
 *              point every 64 calls), main cancels and joins them; prints
 *              "cancel: N rounds"
 *   asynccancel N  N rounds: 4 threads in asynchronous cancellation call
 *              work() in a loop for 2 ms, main cancels and joins them;
 *              prints "asynccancel: N rounds"
 *   asyncjoin N  the same, each thread with a cleanup handler, joined with
 *              its result: prints "asyncjoin: N rounds, X not cancelled,
 *              Y cleanups" (X 0 and Y 4 N without the recorder)
 *   pexit N    a thread calls leaf() N times after main has called
 *              pthread_exit; the process must end with the thread, whose
 *              end runs exit(0) there: an atexit handler calls at_exit()
 *              500 times and a destructor calls in_dtor() 300 times
 *   pexitalone N  main calls leaf() N times and pthread_exit, the only
 *              thread of the program's; the same handler and destructor
 *   sigjmp N   SIGALRM every 100 us while work() runs; its handler calls
 *              tick() and siglongjmps out, 2000 times; then after() is
 *              called N times and the program exits 0
 *   term N     prints "ready", calls work() until SIGTERM, SIGUSR1 or
 *              SIGQUIT (or 20 s), then prints "got signal S", calls after()
 *              N times and exits 3
 *   fork N     (prog_hangs_static) calls leaf() N times and forks; parent
 *              and child call it N times more, the parent waits and prints
 *              the child's status
 *   points N   (prog_hangs_static, the recorder linked statically) 4
 *              threads each enter RP_POINT "pt" N times around a mutex of
 *              their own; a destructor of the program calls ending() 1000
 *              times after main returned
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#ifdef HANGS_POINTS
#include "rankprof.h"
#endif

static __thread volatile unsigned long sink; /* per thread: no race between workers */

void leaf(void)
{
    sink++;
}

void work(void)
{
    leaf();
}

void after(void)
{
    sink++;
}

void tick(void)
{
    sink++;
}

static void *canceled(void *arg)
{
    (void)arg;
    for (unsigned long i = 0;; i++) {
        work();
        if (i % 64 == 0)
            pthread_testcancel();
    }
    return NULL;
}

/* n rounds: 4 threads run fn, are cancelled after us microseconds and
 * joined. */
static void rounds(int n, void *(*fn)(void *), unsigned us)
{
    for (int r = 0; r < n; r++) {
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, fn, NULL);
        usleep(us);
        for (int i = 0; i < 4; i++)
            pthread_cancel(th[i]);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
    }
}

static int run_cancel(int n)
{
    rounds(n, canceled, 20000);
    printf("cancel: %d rounds\n", n);
    return 0;
}

static void *canceled_async(void *arg)
{
    int old;
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
    for (;;)
        work();
    return arg;
}

static int run_asynccancel(int n)
{
    rounds(n, canceled_async, 2000);
    printf("asynccancel: %d rounds\n", n);
    return 0;
}

/* pexit, pexitalone: calls made when the process's exit runs on its
 * last thread */
static int ending_calls;

void at_exit(void)
{
    sink++;
}

void in_dtor(void)
{
    sink++;
}

static void exit_handler(void)
{
    for (int i = 0; i < 500; i++)
        at_exit();
}

__attribute__((destructor)) static void dtor(void)
{
    for (int i = 0; ending_calls && i < 300; i++)
        in_dtor();
}

static atomic_int cleanups;

static void cleanup(void *arg)
{
    (void)arg;
    atomic_fetch_add(&cleanups, 1);
}

static void *canceled_async_cleanup(void *arg)
{
    int old;
    pthread_cleanup_push(cleanup, NULL);
    pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, &old);
    for (;;)
        work();
    pthread_cleanup_pop(0);
    return arg;
}

/* asyncjoin: rounds of asynccancel, each join's result checked. */
static int run_asyncjoin(int n)
{
    int bad = 0;
    for (int r = 0; r < n; r++) {
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, canceled_async_cleanup, NULL);
        usleep(1000);
        for (int i = 0; i < 4; i++)
            pthread_cancel(th[i]);
        for (int i = 0; i < 4; i++) {
            void *rv = NULL;
            pthread_join(th[i], &rv);
            bad += rv != PTHREAD_CANCELED;
        }
    }
    printf("asyncjoin: %d rounds, %d not cancelled, %d cleanups\n", n, bad, atomic_load(&cleanups));
    return 0;
}

static void *late(void *arg)
{
    int n = *(int *)arg;
    usleep(200000); /* main has called pthread_exit by now */
    for (int i = 0; i < n; i++)
        leaf();
    return NULL;
}

static sigjmp_buf jb;
static volatile sig_atomic_t jumps;

static void on_alarm(int sig)
{
    (void)sig;
    tick();
    jumps++;
    siglongjmp(jb, 1);
}

static int run_sigjmp(int n)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 100}, {0, 100}};
    /* jb first: a process descheduled for 100 us right after setitimer
     * would otherwise take the first alarm before jb is set */
    if (sigsetjmp(jb, 1) == 0)
        setitimer(ITIMER_REAL, &it, NULL);
    while (jumps < 2000)
        work();
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    for (int i = 0; i < n; i++)
        after();
    printf("sigjmp: %d jumps\n", (int)jumps);
    return 0;
}

static volatile sig_atomic_t got;

static void on_term(int sig)
{
    got = sig;
}

static int run_term(int n)
{
    signal(SIGTERM, on_term);
    signal(SIGUSR1, on_term);
    signal(SIGQUIT, on_term);
    printf("ready\n");
    fflush(stdout);
    for (int i = 0; i < 2000 && !got; i++) { /* 20 s at most: never an orphan for long */
        for (int j = 0; j < 1000; j++)
            work();
        usleep(10000);
    }
    printf("got signal %d\n", (int)got);
    for (int i = 0; i < n; i++)
        after();
    return 3;
}

#ifdef HANGS_POINTS
void ending(void)
{
    sink++;
}

/* After main returns: the recorder linked with the program must end after
 * this, so that ending()'s 1000 calls are in its trace. */
__attribute__((destructor)) static void at_end(void)
{
    for (int i = 0; i < 1000; i++)
        ending();
}

static void *pointer(void *arg)
{
    int n = *(int *)arg;
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    for (int i = 0; i < n; i++) {
        RP_POINT("pt");
        pthread_mutex_lock(&m);
        sink++;
        pthread_mutex_unlock(&m);
    }
    return NULL;
}
#endif

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "cancel";
    static int n;
    n = argc > 2 ? atoi(argv[2]) : 10;
    if (!strcmp(mode, "cancel"))
        return run_cancel(n);
    if (!strcmp(mode, "asynccancel"))
        return run_asynccancel(n);
    if (!strcmp(mode, "asyncjoin"))
        return run_asyncjoin(n);
    if (!strcmp(mode, "sigjmp"))
        return run_sigjmp(n);
    if (!strcmp(mode, "term"))
        return run_term(n);
    if (!strcmp(mode, "pexit") || !strcmp(mode, "pexitalone")) {
        pthread_t th;
        ending_calls = 1;
        atexit(exit_handler);
        if (!strcmp(mode, "pexit"))
            pthread_create(&th, NULL, late, &n);
        else
            for (int i = 0; i < n; i++)
                leaf();
        pthread_exit(NULL);
    }
#ifdef HANGS_POINTS
    if (!strcmp(mode, "points")) {
        pthread_t th[4];
        for (int i = 0; i < 4; i++)
            pthread_create(&th[i], NULL, pointer, &n);
        for (int i = 0; i < 4; i++)
            pthread_join(th[i], NULL);
        printf("points: %d\n", 4 * n);
        return 0;
    }
    if (!strcmp(mode, "fork")) { /* a child makes N calls of leaf and exits */
        for (int i = 0; i < n; i++)
            leaf();
        fflush(stdout);
        pid_t c = fork();
        for (int i = 0; i < n; i++)
            leaf();
        if (c == 0)
            return 0;
        int st = -1;
        if (c < 0 || waitpid(c, &st, 0) != c)
            return 2;
        printf("fork: child status %d\n", st);
        return 0;
    }
#endif
    fprintf(stderr, "hangs: unknown mode %s\n", mode);
    return 2;
}

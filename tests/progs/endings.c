// SPDX-License-Identifier: MIT
/*
 * endings.c - a program that makes exactly N calls of work() and then ends
 * in a chosen ordinary way, for tests/e2e_endings.sh.
 * usage: prog_endings MODE [N]
 *
 *   raise-SIG   raises SIG (TERM, INT, HUP, PIPE, XCPU, USR1, ALRM, RTMIN+N) itself
 *   pexit-HOW   makes the N calls, starts a thread and calls pthread_exit;
 *               the thread, 100 ms later (the recorder's writer has
 *               retired by then), ends the process: SEGV (a fault), ABRT
 *               (abort) or TERM (raise)
 *   wait        prints "done PID", then sleeps until killed from outside
 *   wait2       the same with two more threads, asleep: a signal sent to
 *               the process while main's handler runs lands on one of them
 *   own2        wait2 with a handler of its own for SIGINT and SIGTERM that
 *               calls _exit(9) (as pigz's does): a second signal runs it
 *               on another thread, whose _exit comes while the first
 *               one's final flush runs
 *   ownexit2    the same with a handler that calls exit(9)
 *   count       prints "done PID", then counts the SIGINTs and SIGTERMs it
 *               gets (its own handler) until 0.5 s after the first, prints
 *               "signals=K" and returns 0
 *   exitterm    returns 0 from main; a thread, once an atexit handler has
 *               run, waits 2 ms and then sends itself SIGTERM every 1 ms:
 *               the signals come while the final flush of the exit runs
 *               (status 0, or 143 if one ends the process after it)
 *   termrace    main blocks SIGTERM, starts a thread that waits, makes N
 *               calls, sends SIGTERM to its process (the other thread takes
 *               it) and goes on calling for 200 ms, then returns 0; an
 *               atexit handler prints "atexit ran".  Without the recorder
 *               the signal ends the process at once (status 143, no such
 *               line); with it too, however long its flush takes
 *   _exit       _exit(5)
 *   _Exit       _Exit(6)
 *   quick_exit  quick_exit(7), with an at_quick_exit handler that calls
 *               at_quick() 40 times (expected in the trace too)
 *   daemon      daemon(1, 1): the parent ends there (its trace holds the N
 *               calls); the daemon prints "daemon" and returns 0
 *   forkwait    a child makes the N calls, prints "done PID" and sleeps
 *               until killed (SIGKILL from outside); the parent waits for it
 *   fork        a child makes the N calls and _exit(0)s; the parent, which
 *               makes none, waits for it and returns the child's status
 *   forksegv    the same with a child that then faults (SIGSEGV: 139)
 *   torn        a thread calls look() in a loop; main makes the N calls,
 *               marks a state torn down and calls _exit(5); look() prints
 *               "torn" whenever it finds it so (unrecorded: at most a line
 *               or two before the process ends)
 *   keydtor     two threads, one after the other, make the N calls each; a
 *               key of the program's own, made after the recorder's, has a
 *               destructor that makes 5 more (calls(5)) at each thread's end:
 *               work 2N + 10.  keydtorK: the destructor sets its key again
 *               for K rounds in all (glibc runs 4 at most); the recorder's
 *               thread end comes in the second: the later rounds' calls are
 *               counted lost ("gone"), 68 events a round for the two
 *               threads' calls(5) and key_dtor
 *   callfork    the same after two threads of the parent made the N calls
 *               each and ended
 *   blocked     two threads each enter serve(), make one call of work and
 *               sleep there for good; main,
 *               once both wait, makes the N calls, sleeps 50 ms and
 *               returns 0: the two serve() frames are open at the exit,
 *               about 50 ms long each (work N + 2)
 *   threads-HOW a child (its pid printed as "child PID") runs work() in a
 *               loop on main and two more threads; a fourth, after 20 ms,
 *               stops them (they stay, asleep), prints "snapshot K" (K: the
 *               calls of work made) and ends the child, HOW being exit
 *               (exit(3)), term (raise(SIGTERM)) or _exit (_exit(4)); the
 *               parent waits for it and returns its status (as 128 + N for
 *               a signal).  Expected: the child's trace holds exactly K
 *               calls of work: the partial buffers of the threads still
 *               alive are written too.
 *
 * Expected: work N calls, leaf 2N, in the trace of the process that made them.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/calls.h"

static void own_exit(int sig)
{
    (void)sig;
    _exit(9);
}

static void own_exit_std(int sig)
{
    (void)sig;
    exit(9);
}

static volatile sig_atomic_t nsignals;
static atomic_int exiting; /* (atomic: the poker thread reads it) */

static void count_signal(int sig)
{
    (void)sig;
    nsignals++;
}

static void note_exit(void)
{
    exiting = 1;
}

static void nap_us(long us)
{
    struct timespec s = {0, us * 1000};
    nanosleep(&s, NULL);
}

static void *poker(void *arg)
{
    while (!exiting)
        nap_us(100);
    nap_us(2000);
    for (int i = 0; i < 100; i++) {
        pthread_kill(pthread_self(), SIGTERM);
        nap_us(1000);
    }
    return arg;
}

/* threads-HOW: calls of work made; loopers told to stop and stopped */
static atomic_long returned;
static atomic_int stop, stopped;
static const char *ending;

static void *looper(void *arg)
{
    for (unsigned i = 0; !atomic_load(&stop); i++) {
        work(i);
        atomic_fetch_add(&returned, 1);
    }
    atomic_fetch_add(&stopped, 1);
    for (;;) /* alive, its last buffer partly filled */
        nap_us(1000);
    return arg;
}

static void *ender(void *arg)
{
    nap_us(20000);
    atomic_store(&stop, 1);
    while (atomic_load(&stopped) < 3)
        nap_us(100);
    printf("snapshot %ld\n", atomic_load(&returned));
    fflush(stdout);
    if (!strcmp(ending, "term"))
        raise(SIGTERM);
    if (!strcmp(ending, "_exit"))
        _exit(4);
    exit(3);
    return arg;
}

void at_quick(void)
{
    sink++;
}

static void quick_handler(void)
{
    for (int i = 0; i < 40; i++)
        at_quick();
}

static void atexit_ran(void)
{
    printf("atexit ran\n");
    fflush(stdout);
}

static void *idler(void *arg)
{
    for (;;)
        pause();
    return arg;
}

static int termrace(long n)
{
    pthread_t t;
    sigset_t term;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    if (atexit(atexit_ran) != 0 || pthread_create(&t, NULL, idler, NULL) != 0 ||
        pthread_sigmask(SIG_BLOCK, &term, NULL) != 0)
        return 2;
    calls(n);
    kill(getpid(), SIGTERM);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    do {
        calls(10);
        clock_gettime(CLOCK_MONOTONIC, &t1);
    } while ((t1.tv_sec - t0.tv_sec) * 1000000000L + t1.tv_nsec - t0.tv_nsec < 200000000L);
    return 0;
}

static void *caller(void *arg)
{
    calls(*(long *)arg);
    return arg;
}

/* keydtor[K]: a key whose destructor makes 5 more calls of work in each of
 * K rounds (default 1), setting its key again for the next */
static pthread_key_t prog_key;
static int key_rounds;

static void key_dtor(void *v)
{
    calls(5);
    if ((long)v < key_rounds)
        pthread_setspecific(prog_key, (void *)((long)v + 1));
}

static void *key_thread(void *arg)
{
    pthread_setspecific(prog_key, (void *)1L);
    calls(*(long *)arg);
    return arg;
}

/* torn: a thread calls look() in a loop; main makes the N calls, marks the
 * program's state torn down (as pigz's SIGINT handler closes its output)
 * and calls _exit(5).  look() prints "torn" each time it finds it so:
 * without the recorder the process ends at once (at most a line or two);
 * with it, as long as the flush ran, the thread went on (many lines) */
static atomic_int torn;

void look(void)
{
    if (atomic_load(&torn))
        (void)!write(1, "torn\n", 5);
}

static void *looker(void *arg)
{
    for (;;)
        look();
    return arg;
}

/* blocked: two servers that wait in serve() until the process ends */
static pthread_mutex_t serve_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t serve_cv = PTHREAD_COND_INITIALIZER;
static int serving;

void serve(void)
{
    pthread_mutex_lock(&serve_mu);
    work(0); /* (under the mutex: the two servers share leaf's sum) */
    serving++;
    pthread_cond_broadcast(&serve_cv);
    pthread_mutex_unlock(&serve_mu);
    for (;;) /* (asleep: ThreadSanitizer's condition waits pass no interposer) */
        nap_us(100000);
}

static void *server(void *arg)
{
    serve();
    return arg;
}

static int blocked(long n)
{
    pthread_t t;
    for (int i = 0; i < 2; i++)
        if (pthread_create(&t, NULL, server, NULL) != 0)
            return 2;
    pthread_mutex_lock(&serve_mu);
    while (serving < 2)
        pthread_cond_wait(&serve_cv, &serve_mu);
    pthread_mutex_unlock(&serve_mu);
    calls(n);
    nap_us(50000);
    return 0;
}

static const char *pexit_how;

static int *volatile nowhere; /* NULL, which the compiler cannot know */

/* The fault, hidden from UBSan (which would end the program first). */
static __attribute__((no_sanitize("undefined"), noinline)) void crash(void)
{
    *nowhere = 1;
}

static void *pexit_ender(void *arg)
{
    nap_us(100000);
    if (!strcmp(pexit_how, "SEGV"))
        crash();
    else if (!strcmp(pexit_how, "ABRT"))
        abort();
    else
        raise(SIGTERM);
    return arg;
}

static void *sleeper(void *arg)
{
    struct timespec s = {1, 0};
    for (int i = 0; i < 600; i++)
        nanosleep(&s, NULL);
    return arg;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "wait";
    long n = argc > 2 ? atol(argv[2]) : 100000;
    static const struct {
        const char *name;
        int sig;
    } sigs[] = {{"TERM", SIGTERM}, {"INT", SIGINT},   {"HUP", SIGHUP},  {"PIPE", SIGPIPE},
                {"XCPU", SIGXCPU}, {"USR1", SIGUSR1}, {"ALRM", SIGALRM}};
    if (!strcmp(mode, "fork") || !strcmp(mode, "forkwait") || !strcmp(mode, "forksegv") ||
        !strcmp(mode, "callfork")) {
        int w = !strcmp(mode, "forkwait");
        if (!strcmp(mode, "callfork")) { /* two threads make the calls and end first */
            pthread_t t;
            for (int i = 0; i < 2; i++) /* (one after the other: calls.h's sink is shared) */
                if (pthread_create(&t, NULL, caller, &n) != 0 || pthread_join(t, NULL) != 0)
                    return 2;
        }
        fflush(stdout);
        pid_t c = fork();
        if (c == 0) {
            calls(n);
            if (w) {
                printf("done %d\n", (int)getpid());
                fflush(stdout);
                struct timespec s = {1, 0}; /* nanosleep: sanitizers' sleep() may
                                               bypass the recorder */
                for (int i = 0; i < 600; i++)
                    nanosleep(&s, NULL);
            }
            if (!strcmp(mode, "forksegv"))
                crash();
            _exit(0);
        }
        int st = 0;
        if (c < 0 || waitpid(c, &st, 0) != c)
            return 2;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (!strncmp(mode, "threads-", 8)) {
        ending = mode + 8;
        fflush(stdout);
        pid_t c = fork();
        if (c == 0) {
            pthread_t t;
            printf("child %d\n", (int)getpid());
            for (int i = 0; i < 2; i++)
                if (pthread_create(&t, NULL, looper, NULL) != 0)
                    _exit(2);
            if (pthread_create(&t, NULL, ender, NULL) != 0)
                _exit(2);
            looper(NULL);
        }
        int st = 0;
        if (c < 0 || waitpid(c, &st, 0) != c)
            return 2;
        return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
    if (!strcmp(mode, "torn")) {
        pthread_t t;
        if (pthread_create(&t, NULL, looker, NULL) != 0)
            return 2;
        calls(n);
        atomic_store(&torn, 1);
        _exit(5);
    }
    if (!strncmp(mode, "keydtor", 7)) { /* two threads, one after the other */
        pthread_t t;
        key_rounds = mode[7] ? atoi(mode + 7) : 1;
        if (pthread_key_create(&prog_key, key_dtor) != 0)
            return 2;
        for (int i = 0; i < 2; i++)
            if (pthread_create(&t, NULL, key_thread, &n) != 0 || pthread_join(t, NULL) != 0)
                return 2;
        return 0;
    }
    if (!strcmp(mode, "termrace"))
        return termrace(n);
    if (!strcmp(mode, "blocked"))
        return blocked(n);
    if (!strcmp(mode, "exitterm")) {
        pthread_t t;
        if (atexit(note_exit) != 0 || pthread_create(&t, NULL, poker, NULL) != 0)
            return 2;
        calls(n);
        return 0;
    }
    calls(n);
    if (!strncmp(mode, "pexit-", 6)) {
        pthread_t t;
        pexit_how = mode + 6;
        if (pthread_create(&t, NULL, pexit_ender, NULL) != 0)
            return 2;
        pthread_exit(NULL);
    }
    if (!strcmp(mode, "count")) {
        signal(SIGINT, count_signal);
        signal(SIGTERM, count_signal);
        printf("done %d\n", (int)getpid());
        fflush(stdout);
        for (int i = 0; i < 6000 && !nsignals; i++)
            nap_us(10000);
        nap_us(500000);
        printf("signals=%d\n", (int)nsignals);
        return 0;
    }
    if (!strncmp(mode, "raise-", 6)) {
        for (unsigned i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
            if (!strcmp(mode + 6, sigs[i].name))
                raise(sigs[i].sig);
        if (!strncmp(mode + 6, "RTMIN+", 6)) /* a real-time signal */
            raise(SIGRTMIN + atoi(mode + 12));
        return 3; /* not reached when the signal ends the process */
    }
    if (!strcmp(mode, "wait") || !strcmp(mode, "wait2") || !strncmp(mode, "own", 3)) {
        pthread_t t;
        int sleepers = strcmp(mode, "wait") ? 2 : 0;
        if (!strncmp(mode, "own", 3)) {
            void (*h)(int) = !strcmp(mode, "ownexit2") ? own_exit_std : own_exit;
            signal(SIGINT, h);
            signal(SIGTERM, h);
        }
        for (int i = 0; i < sleepers; i++)
            if (pthread_create(&t, NULL, sleeper, NULL) != 0)
                return 2;
        printf("done %d\n", (int)getpid());
        fflush(stdout);
        for (int i = 0; i < 600; i++)
            sleep(1);
        return 4;
    }
    if (!strcmp(mode, "daemon")) {
        fflush(stdout);
        if (daemon(1, 1) < 0)
            return 2;
        printf("daemon\n");
        return 0;
    }
    if (!strcmp(mode, "_exit"))
        _exit(5);
    if (!strcmp(mode, "_Exit"))
        _Exit(6);
    if (!strcmp(mode, "quick_exit")) {
        at_quick_exit(quick_handler);
        quick_exit(7);
    }
    fprintf(stderr, "endings: unknown mode %s\n", mode);
    return 2;
}

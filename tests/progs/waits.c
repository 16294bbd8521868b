// SPDX-License-Identifier: MIT
/*
 * waits.c - a program that mostly waits, beside one function that computes,
 * for the wait-span tests (tests/e2e_waits.sh).
 *
 * Usage: prog_waits [N [nocancel]]   (N defaults to 20)
 *
 * main starts four threads and joins them (pthread_join x 4):
 *
 *   waiter   takes `ready_lock` and waits on the condition `ready_cv`
 *            (pthread_cond_wait) until the producer has posted N items;
 *            the producer posts only while the waiter waits, so it waits
 *            once per item: exactly N waits (a spurious wake-up would make
 *            more, so the loop counts its waits and the program prints
 *            them as wakeups).
 *   sleeper  sleeps 2 ms, N times (nanosleep x N).
 *   reader   reads N bytes from a pipe, one per read() after a poll() and
 *            a select() on it: poll x N, select x N, read x N.
 *            The writer of the pipe is the producer.  Each time it also
 *            makes calls that cannot block, none of them a wait: a poll()
 *            and a select() with a zero timeout, a read() of an empty pipe
 *            in non-blocking mode and a recv() with MSG_DONTWAIT of an
 *            empty socket (both EAGAIN); at the end it puts that pipe back
 *            in blocking mode (fcntl F_SETFL) with a byte in it and reads
 *            it: a wait, read x N + 1 in all.
 *   producer N times: computes (crunch, a computing leaf, ~3 ms), writes
 *            one byte to the pipe, posts an item to the waiter.
 *
 * and, unless "nocancel" is given, two more that are cancelled
 * (pthread_cancel) in their wait once the four are joined, then joined too
 * (pthread_join x 6 in all):
 *
 *   dozer    nanosleep of 10 s (nanosleep x N + 1 in all)
 *   stuck    pthread_cond_wait on `never_cv` (under `stuck_lock`), never
 *            signalled; its cleanup handler unlocks the mutex.
 *
 * Besides, before the threads start, main reads a regular file (the
 * program's own executable) once: a read() that is not a wait.
 *
 * The program prints "items=N wakeups=W bytes=N" and exits 0.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static int n_items = 20;
static pthread_mutex_t ready_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t ready_cv = PTHREAD_COND_INITIALIZER;
static int posted, taken, wakeups, waiting;
static int pipefd[2];
static pthread_mutex_t stuck_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t never_cv = PTHREAD_COND_INITIALIZER;
static volatile double sink;

/* 3 ms of arithmetic by the thread's CPU time, not the clock's: on a busy
 * machine it runs longer, not less, so its share of the on-CPU time stays
 * what the tests expect. */
static void crunch(void)
{
    struct timespec a, b;
    double x = 1.0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    do {
        for (int i = 0; i < 1000; i++)
            x = x * 1.0000001 + 0.5 / (x + i);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    } while ((b.tv_sec - a.tv_sec) * 1000000000L + (b.tv_nsec - a.tv_nsec) < 3000000L);
    sink = x;
}

static void *waiter(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ready_lock);
    while (taken < n_items) {
        while (posted == taken) {
            waiting = 1;
            pthread_cond_wait(&ready_cv, &ready_lock);
            wakeups++;
        }
        taken = posted;
    }
    pthread_mutex_unlock(&ready_lock);
    return NULL;
}

static void *sleeper(void *arg)
{
    (void)arg;
    struct timespec ts = {0, 2000000};
    for (int i = 0; i < n_items; i++)
        nanosleep(&ts, NULL);
    return NULL;
}

static int nbpipe[2], sockets[2];

static void *reader(void *arg)
{
    long *got = arg;
    char c;
    for (int i = 0; i < n_items; i++) {
        struct pollfd pf = {pipefd[0], POLLIN, 0};
        if (poll(&pf, 1, -1) != 1)
            exit(2);
        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(pipefd[0], &rs);
        if (select(pipefd[0] + 1, &rs, NULL, NULL, NULL) != 1)
            exit(3);
        if (read(pipefd[0], &c, 1) != 1)
            exit(4);
        (*got)++;
        /* calls that cannot block: not waits */
        struct timeval zero = {0, 0};
        if (poll(&pf, 1, 0) < 0 || select(pipefd[0] + 1, &rs, NULL, NULL, &zero) < 0 ||
            read(nbpipe[0], &c, 1) != -1 || recv(sockets[0], &c, 1, MSG_DONTWAIT) != -1)
            exit(8);
    }
    /* blocking again (forgotten by the recorder's fcntl): a wait */
    int fl = fcntl(nbpipe[0], F_GETFL);
    if (write(nbpipe[1], "y", 1) != 1 || fl < 0 ||
        fcntl(nbpipe[0], F_SETFL, fl & ~O_NONBLOCK) != 0 || read(nbpipe[0], &c, 1) != 1)
        exit(9);
    return NULL;
}

static void *dozer(void *arg)
{
    struct timespec ts = {10, 0};
    nanosleep(&ts, NULL); /* cancelled in here */
    return arg;
}

static void unlock(void *m)
{
    pthread_mutex_unlock(m);
}

static void *stuck(void *arg)
{
    pthread_mutex_lock(&stuck_lock);
    pthread_cleanup_push(unlock, &stuck_lock);
    for (;;)
        pthread_cond_wait(&never_cv, &stuck_lock); /* cancelled in here */
    pthread_cleanup_pop(1);
    return arg;
}

static void *producer(void *arg)
{
    (void)arg;
    for (int i = 0; i < n_items; i++) {
        crunch();
        if (write(pipefd[1], "x", 1) != 1)
            exit(5);
        pthread_mutex_lock(&ready_lock);
        /* an item is posted only while the waiter waits for it: one
         * wake-up per item, however the threads are scheduled */
        while (!waiting) {
            pthread_mutex_unlock(&ready_lock);
            sched_yield();
            pthread_mutex_lock(&ready_lock);
        }
        posted++;
        waiting = 0;
        pthread_cond_signal(&ready_cv);
        pthread_mutex_unlock(&ready_lock);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        n_items = atoi(argv[1]);
    int cancel = !(argc > 2 && !strcmp(argv[2], "nocancel"));
    /* a regular file: this read is not a wait */
    int fd = open("/proc/self/exe", O_RDONLY);
    char buf[64];
    if (fd < 0 || read(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
        return 6;
    close(fd);
    if (pipe(pipefd) != 0 || pipe2(nbpipe, O_NONBLOCK) != 0 ||
        socketpair(AF_UNIX, SOCK_STREAM, 0, sockets) != 0)
        return 7;
    pthread_t t[6];
    long got = 0;
    pthread_create(&t[0], NULL, waiter, NULL);
    pthread_create(&t[1], NULL, sleeper, NULL);
    pthread_create(&t[2], NULL, reader, &got);
    pthread_create(&t[3], NULL, producer, NULL);
    if (cancel) {
        pthread_create(&t[4], NULL, dozer, NULL);
        pthread_create(&t[5], NULL, stuck, NULL);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    if (cancel) {
        pthread_cancel(t[4]);
        pthread_cancel(t[5]);
        pthread_join(t[4], NULL);
        pthread_join(t[5], NULL);
    }
    printf("items=%d wakeups=%d bytes=%ld\n", posted, wakeups, got);
    return 0;
}

// SPDX-License-Identifier: MIT
/*
 * test_rec_waits.c - unit test of the blocking-call interposers
 * (src/record/waits.c, and the condition waits of src/record/locks.c)
 * linked statically: the test's own calls of read, nanosleep, poll ... land
 * in the recorder's definitions, which the constructor has started recording
 * with the inherited environment (all classes).  Each step reads the raw
 * records the calling thread appended to its buffer (rp_self) and checks,
 * exactly:
 *
 *   - read() of a regular file records nothing; of a pipe, SITE_BEGIN and
 *     SITE_END of the "read" wait site, in time order;
 *   - the descriptor's cached type is forgotten when its number is reused
 *     through dup2() and close(): a pipe's number made a regular file
 *     records nothing, a regular file's number made a pipe records;
 *   - a read of a descriptor in non-blocking mode records nothing, and
 *     fcntl(F_SETFL) makes the cache forget the mode: O_NONBLOCK set, no
 *     wait; cleared, a wait;
 *   - nanosleep and poll are one wait span each, the sleep at least as long
 *     as asked; errno is what the real call left (EAGAIN of an empty
 *     non-blocking pipe, EBADF);
 *   - every other interposed call but pause (made so that it returns at
 *     once) is one wait span of its own site, and leaves errno as the real
 *     call did; the _FORTIFY_SOURCE variants record the plain call's site;
 *   - calls that cannot block record nothing: poll, ppoll, select,
 *     pselect and the epoll waits with a zero timeout, recv with
 *     MSG_DONTWAIT, accept and the recv family on non-blocking sockets;
 *   - a thread inside the recorder (t->guard) and a switched-off wait class
 *     record nothing (and the guard counts no dropped event);
 *   - pthread_cond_timedwait with the lock class on is REL m, the wait on
 *     the condition (LOCK_WAIT, LOCK_FAIL with RP_RAW_COND_BIT), ACQ m;
 *     with the lock class off it is a span of the pthread_cond_timedwait
 *     wait site.
 *
 * Fails (exit 1) on any failed check; the run's trace file is removed.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "record/rt.h"
#include "rec_raw.h"
#include "record/waits.h"

/* glibc's _FORTIFY_SOURCE entry points (declared only under it) */
int __poll_chk(struct pollfd *fds, nfds_t n, int timeout, size_t len);
ssize_t __read_chk(int fd, void *buf, size_t n, size_t buflen);
ssize_t __recv_chk(int fd, void *buf, size_t n, size_t buflen, int flags);

static void *nothing(void *arg)
{
    return arg;
}

/* Checks that r[0..2) is one wait span of site w. */
static void check_span(const struct rp_raw *r, enum rp_wait_fn w)
{
    CHECK_EQ(op_of(&r[0]), RP_RAW_SITE_BEGIN);
    CHECK_EQ(op_of(&r[1]), RP_RAW_SITE_END);
    CHECK_EQ(pl_of(&r[0]), (uint64_t)(uintptr_t)&rp_wait_sites[w]);
    CHECK_EQ(pl_of(&r[1]), (uint64_t)(uintptr_t)&rp_wait_sites[w]);
    CHECK(r[1].ticks >= r[0].ticks);
}

int main(void)
{
    alarm(60);
    uint32_t mask = atomic_load(&rp_rt.mask);
    if (!(mask & RP_CLASS_BIT_WAIT) || !(mask & RP_CLASS_BIT_LOCK)) {
        printf("test_rec_waits: skipped (wait or lock class off)\n");
        return 0;
    }
    struct timespec zero = {0, 0};
    nanosleep(&zero, NULL); /* the thread's first event sets up its buffer */
    if (!rp_self) {
        fprintf(stderr, "test_rec_waits: the recorder gave this thread no buffer\n");
        return 1;
    }
    struct rp_raw *at = rp_self->pos, *r;
    char c;

    /* read: a regular file is no wait, a pipe is */
    int f = open("/proc/self/exe", O_RDONLY);
    CHECK(f >= 0);
    CHECK_EQ(read(f, &c, 1), 1);
    CHECK_EQ(since(&at, &r), 0);
    int p[2];
    CHECK_EQ(pipe(p), 0);
    CHECK_EQ(write(p[1], "ab", 2), 2);
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(since(&at, &r), 2);
    check_span(r, RP_W_READ);
    CHECK_EQ(read(f, &c, 1), 1); /* the cached type of f */
    CHECK_EQ(since(&at, &r), 0);

    /* the pipe's number becomes a regular file (dup2): no wait */
    CHECK_EQ(dup2(f, p[0]), p[0]);
    CHECK_EQ(read(p[0], &c, 1), 1);
    CHECK_EQ(since(&at, &r), 0);
    /* a regular file's number becomes a pipe (close, then pipe): a wait */
    CHECK_EQ(close(p[0]), 0);
    CHECK_EQ(close(p[1]), 0);
    CHECK_EQ(close(f), 0);
    int q[2];
    CHECK_EQ(pipe(q), 0);
    CHECK(q[0] == f || q[0] == p[0] || q[0] == p[1]); /* a number seen before */
    CHECK_EQ(write(q[1], "abcdefgh", 8), 8);          /* (so that no call below blocks) */
    CHECK_EQ(read(q[0], &c, 1), 1);
    CHECK_EQ(since(&at, &r), 2);
    check_span(r, RP_W_READ);
    /* non-blocking (fcntl F_SETFL forgets the cached mode): no wait, even
     * empty; blocking again: a wait */
    CHECK_EQ(fcntl(q[0], F_SETFL, O_NONBLOCK), 0);
    CHECK_EQ(read(q[0], &c, 1), 1);
    CHECK_EQ(since(&at, &r), 0);
    int e2[2];
    CHECK_EQ(pipe2(e2, O_NONBLOCK), 0);
    errno = 0;
    CHECK_EQ(read(e2[0], &c, 1), -1); /* empty: EAGAIN, kept */
    CHECK_EQ(errno, EAGAIN);
    CHECK_EQ(since(&at, &r), 0);
    CHECK_EQ(fcntl(q[0], F_SETFL, 0), 0);
    CHECK_EQ(read(q[0], &c, 1), 1);
    CHECK_EQ(since(&at, &r), 2);
    check_span(r, RP_W_READ);
    errno = 0;
    CHECK_EQ(read(-1, &c, 1), -1); /* fstat fails: not a wait, errno EBADF */
    CHECK_EQ(errno, EBADF);
    CHECK_EQ(since(&at, &r), 0);

    /* nanosleep and poll (q is readable: it returns at once) */
    struct timespec ms = {0, 2000000}, onesec = {1, 0};
    uint64_t c0 = rp_counter();
    CHECK_EQ(nanosleep(&ms, NULL), 0);
    CHECK_EQ(since(&at, &r), 2);
    check_span(r, RP_W_NANOSLEEP);
    CHECK(r[0].ticks >= c0);
    if (rp_rt.freq > 0)
        CHECK((double)(r[1].ticks - r[0].ticks) * 1e9 / rp_rt.freq >= 2e6 * 0.99);
    struct pollfd pf = {q[0], POLLIN, 0};
    CHECK_EQ(poll(&pf, 1, 1000), 1);
    CHECK_EQ(since(&at, &r), 2);
    check_span(r, RP_W_POLL);

    /* every other blocking call: one span of its site, errno kept (each
     * made so that it returns at once: a readable descriptor, a pending
     * connection, data in the socket) */
    {
        int sv[2], ep = epoll_create1(0), ls = socket(AF_UNIX, SOCK_STREAM, 0), cl[2];
        CHECK_EQ(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
        CHECK_EQ(write(sv[1], "12345", 5), 5);
        CHECK(ep >= 0 && ls >= 0);
        struct sockaddr_un sa = {.sun_family = AF_UNIX};
        socklen_t sl = sizeof(sa_family_t);
        CHECK_EQ(bind(ls, (struct sockaddr *)&sa, sl), 0); /* autobind */
        CHECK_EQ(listen(ls, 4), 0);
        sl = sizeof(sa);
        CHECK_EQ(getsockname(ls, (struct sockaddr *)&sa, &sl), 0);
        for (int i = 0; i < 2; i++) { /* two pending connections */
            cl[i] = socket(AF_UNIX, SOCK_STREAM, 0);
            CHECK_EQ(connect(cl[i], (struct sockaddr *)&sa, sl), 0);
        }
        struct epoll_event ev = {.events = EPOLLIN};
        CHECK_EQ(epoll_ctl(ep, EPOLL_CTL_ADD, q[0], &ev), 0);
        sem_t sem;
        CHECK_EQ(sem_init(&sem, 0, 1), 0);
        sigset_t none, usr;
        sigemptyset(&none);
        sigemptyset(&usr);
        sigaddset(&usr, SIGUSR1);
        pthread_sigmask(SIG_BLOCK, &usr, NULL);
        struct timeval tv0 = {0, 0}, tv1 = {1, 0};
        struct msghdr msg = {0};
        struct iovec iov = {&c, 1};
        msg.msg_iov = &iov;
        msg.msg_iovlen = 1;
        siginfo_t si;
        pthread_t th;
        long res;
        int e;
#define TRY(W, CALL, WANT, ERR)                                                                    \
    do {                                                                                           \
        errno = 0;                                                                                 \
        res = (long)(CALL);                                                                        \
        e = errno;                                                                                 \
        CHECK_EQ(res, (long)(WANT));                                                               \
        if (ERR)                                                                                   \
            CHECK_EQ(e, ERR);                                                                      \
        CHECK_EQ(since(&at, &r), 2);                                                               \
        check_span(r, W);                                                                          \
    } while (0)
/* a call that cannot block: no span */
#define NOWAIT(CALL)                                                                               \
    do {                                                                                           \
        (void)(CALL);                                                                              \
        CHECK_EQ(since(&at, &r), 0);                                                               \
    } while (0)
        TRY(RP_W_CLOCK_NANOSLEEP, clock_nanosleep(CLOCK_MONOTONIC, 0, &zero, NULL), 0, 0);
        TRY(RP_W_USLEEP, usleep(0), 0, 0);
        TRY(RP_W_SLEEP, sleep(0), 0, 0);
        TRY(RP_W_PPOLL, ppoll(&pf, 1, &onesec, NULL), 1, 0);
        fd_set rs;
        FD_ZERO(&rs);
        FD_SET(q[0], &rs);
        TRY(RP_W_SELECT, select(q[0] + 1, &rs, NULL, NULL, &tv1), 1, 0);
        FD_SET(q[0], &rs);
        TRY(RP_W_PSELECT, pselect(q[0] + 1, &rs, NULL, NULL, &onesec, NULL), 1, 0);
        TRY(RP_W_EPOLL_WAIT, epoll_wait(ep, &ev, 1, 1000), 1, 0);
        TRY(RP_W_EPOLL_PWAIT, epoll_pwait(ep, &ev, 1, 1000, &none), 1, 0);
        CHECK_EQ(pthread_create(&th, NULL, nothing, NULL), 0);
        TRY(RP_W_PTHREAD_JOIN, pthread_join(th, NULL), 0, 0);
        TRY(RP_W_SEM_WAIT, sem_wait(&sem), 0, 0);
        struct timespec past = {1, 0};
        TRY(RP_W_SEM_TIMEDWAIT, sem_timedwait(&sem, &past), -1, ETIMEDOUT);
        TRY(RP_W_SEM_CLOCKWAIT, sem_clockwait(&sem, CLOCK_MONOTONIC, &past), -1, ETIMEDOUT);
        /* epoll_pwait2 needs Linux 5.11: a span either way */
        errno = 0;
        res = epoll_pwait2(ep, &ev, 1, &onesec, &none);
        CHECK(res == 1 || errno == ENOSYS);
        CHECK_EQ(since(&at, &r), 2);
        check_span(r, RP_W_EPOLL_PWAIT2);
        TRY(RP_W_WAITPID, waitpid(-1, NULL, WNOHANG), -1, ECHILD);
        TRY(RP_W_WAIT, wait(NULL), -1, ECHILD);
        TRY(RP_W_WAITID, waitid(P_ALL, 0, &si, WEXITED | WNOHANG), -1, ECHILD);
        TRY(RP_W_SIGTIMEDWAIT, sigtimedwait(&usr, &si, &zero), -1, EAGAIN);
        int a1, a2;
        TRY(RP_W_ACCEPT, a1 = accept(ls, NULL, NULL), a1, 0);
        TRY(RP_W_ACCEPT4, a2 = accept4(ls, NULL, NULL, 0), a2, 0);
        CHECK(a1 >= 0 && a2 >= 0);
        TRY(RP_W_RECV, recv(sv[0], &c, 1, 0), 1, 0);
        TRY(RP_W_RECVFROM, recvfrom(sv[0], &c, 1, 0, NULL, NULL), 1, 0);
        TRY(RP_W_RECVMSG, recvmsg(sv[0], &msg, 0), 1, 0);
        TRY(RP_W_READV, readv(q[0], &iov, 1), 1, 0);
        raise(SIGUSR1); /* blocked: pending, so the waits return at once */
        TRY(RP_W_SIGWAITINFO, sigwaitinfo(&usr, &si), SIGUSR1, 0);
        int sig = 0;
        raise(SIGUSR1);
        TRY(RP_W_SIGWAIT, sigwait(&usr, &sig), 0, 0);
        CHECK_EQ(sig, SIGUSR1);
        /* what _FORTIFY_SOURCE calls: the plain call's site */
        TRY(RP_W_POLL, __poll_chk(&pf, 1, 1000, sizeof(pf)), 1, 0);
        TRY(RP_W_READ, __read_chk(q[0], &c, 1, 1), 1, 0);
        TRY(RP_W_RECV, __recv_chk(sv[0], &c, 1, 1, 0), 1, 0);
        /* calls that cannot block: a zero timeout, MSG_DONTWAIT, a
         * non-blocking descriptor; not waits */
        NOWAIT(poll(&pf, 1, 0));
        NOWAIT(__poll_chk(&pf, 1, 0, sizeof(pf)));
        NOWAIT(ppoll(&pf, 1, &zero, NULL));
        FD_SET(q[0], &rs);
        NOWAIT(select(q[0] + 1, &rs, NULL, NULL, &tv0));
        FD_SET(q[0], &rs);
        NOWAIT(pselect(q[0] + 1, &rs, NULL, NULL, &zero, NULL));
        NOWAIT(epoll_wait(ep, &ev, 1, 0));
        NOWAIT(epoll_pwait(ep, &ev, 1, 0, &none));
        NOWAIT(epoll_pwait2(ep, &ev, 1, &zero, &none));
        NOWAIT(recv(sv[0], &c, 1, MSG_DONTWAIT));
        CHECK_EQ(fcntl(ls, F_SETFL, O_NONBLOCK), 0);
        CHECK_EQ(fcntl(sv[0], F_SETFL, O_NONBLOCK), 0);
        errno = 0;
        NOWAIT(res = accept(ls, NULL, NULL));
        CHECK(res == -1 && errno == EAGAIN);
        NOWAIT(accept4(ls, NULL, NULL, 0));
        NOWAIT(recv(sv[0], &c, 1, 0));
        NOWAIT(recvfrom(sv[0], &c, 1, 0, NULL, NULL));
        NOWAIT(recvmsg(sv[0], &msg, 0));
        NOWAIT(__recv_chk(sv[0], &c, 1, 1, 0));
#undef NOWAIT
#undef TRY
        pthread_sigmask(SIG_UNBLOCK, &usr, NULL);
        sem_destroy(&sem);
        close(sv[0]);
        close(sv[1]);
        close(ep);
        close(ls);
        close(a1);
        close(a2);
        close(cl[0]);
        close(cl[1]);
        close(e2[0]);
        close(e2[1]);
        (void)since(&at, &r);
    }

    /* inside the recorder: straight through */
    uint64_t reentered = rp_self->reentered;
    rp_self->guard = 1;
    CHECK_EQ(poll(&pf, 1, 1000), 1);
    rp_self->guard = 0;
    CHECK_EQ(since(&at, &r), 0);
    CHECK_EQ(rp_self->reentered, reentered); /* not even tried (no drop counted) */

    /* a condition wait: REL m, the wait on c, ACQ m */
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    struct timespec past = {1, 0}; /* long gone: the wait times out at once */
    CHECK_EQ(pthread_mutex_lock(&m), 0);
    (void)since(&at, &r);
    CHECK_EQ(pthread_cond_timedwait(&cv, &m, &past), ETIMEDOUT);
    CHECK_EQ(since(&at, &r), 4);
    CHECK_EQ(op_of(&r[0]), RP_RAW_LOCK_REL);
    CHECK_EQ(pl_of(&r[0]), (uint64_t)(uintptr_t)&m);
    CHECK_EQ(op_of(&r[1]), RP_RAW_LOCK_WAIT);
    CHECK_EQ(pl_of(&r[1]), (uint64_t)(uintptr_t)&cv | RP_RAW_COND_BIT);
    CHECK_EQ(op_of(&r[2]), RP_RAW_LOCK_FAIL);
    CHECK_EQ(pl_of(&r[2]), (uint64_t)(uintptr_t)&cv | RP_RAW_COND_BIT);
    CHECK_EQ(op_of(&r[3]), RP_RAW_LOCK_ACQ);
    CHECK_EQ(pl_of(&r[3]), (uint64_t)(uintptr_t)&m);
    for (int i = 1; i < 4; i++)
        CHECK(r[i].ticks >= r[i - 1].ticks);
    /* C++'s wait_for/wait_until: the same records */
    CHECK_EQ(pthread_cond_clockwait(&cv, &m, CLOCK_MONOTONIC, &past), ETIMEDOUT);
    CHECK_EQ(since(&at, &r), 4);
    CHECK_EQ(op_of(&r[1]), RP_RAW_LOCK_WAIT);
    CHECK_EQ(pl_of(&r[1]), (uint64_t)(uintptr_t)&cv | RP_RAW_COND_BIT);
    CHECK_EQ(op_of(&r[3]), RP_RAW_LOCK_ACQ);
    /* the lock class off: a plain wait of its own site */
    rp_classes_set(0, RP_CLASS_BIT_LOCK);
    CHECK_EQ(pthread_cond_timedwait(&cv, &m, &past), ETIMEDOUT);
    CHECK_EQ(since(&at, &r), 2);
    check_span(r, RP_W_COND_TIMEDWAIT);
    CHECK_EQ(pthread_cond_clockwait(&cv, &m, CLOCK_MONOTONIC, &past), ETIMEDOUT);
    CHECK_EQ(since(&at, &r), 2);
    check_span(r, RP_W_COND_CLOCKWAIT);
    rp_classes_set(RP_CLASS_BIT_LOCK, 0);
    CHECK_EQ(pthread_mutex_unlock(&m), 0);
    (void)since(&at, &r);

    /* the wait class off: nothing */
    rp_classes_set(0, RP_CLASS_BIT_WAIT);
    CHECK_EQ(nanosleep(&zero, NULL), 0);
    CHECK_EQ(poll(&pf, 1, 1000), 1);
    CHECK_EQ(read(q[0], &c, 1), 1);
    CHECK_EQ(since(&at, &r), 0);
    rp_classes_set(RP_CLASS_BIT_WAIT, 0);
    close(q[0]);
    close(q[1]);

    char path[sizeof(rp_rt.path)];
    snprintf(path, sizeof(path), "%s", rp_rt.path);
    int had_file = rp_rt.fd >= 0;
    rp_rt_shutdown();
    if (had_file)
        unlink(path);
    if (failures) {
        fprintf(stderr, "test_rec_waits: %d check(s) failed\n", failures);
        return 1;
    }
    printf("test_rec_waits: all checks passed\n");
    return 0;
}

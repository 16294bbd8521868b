// SPDX-License-Identifier: MIT
/*
 * server.c - a small service for tests/e2e_ctl.sh (docs/services.md): an
 * epoll loop on 127.0.0.1 hands each request line to a pool of worker
 * threads, which answer it.
 *
 *   prog_server [WORKERS]   listens on an ephemeral port of 127.0.0.1 and
 *                           prints "pid P port N"; a line "req" gets "ok"
 *                           (each through handle_request, which calls
 *                           parse_request and compute once), a line "quit"
 *                           ends the server, which prints "served N"
 *
 * A client that waits for each answer knows that the request was handled
 * when it reads "ok": so the calls made between two points of its own are
 * exactly the requests it sent between them.  Exits 1 on a socket error.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#define QMAX 256

struct job {
    int fd;
};

static struct job queue[QMAX];
static unsigned q_head, q_tail;
static int done;
static pthread_mutex_t q_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t q_cond = PTHREAD_COND_INITIALIZER;
static unsigned long served;
static volatile unsigned long sink;

__attribute__((noinline)) int parse_request(const char *line)
{
    return strncmp(line, "req", 3) == 0;
}

/* about 1 ms: enough work per request that the handler is HOT in a
 * server that otherwise waits (HOT needs 0.5 % of the run's length; 100
 * requests keep it so for a run of 20 s) */
__attribute__((noinline)) unsigned long compute(unsigned long x)
{
    for (int i = 0; i < 1000000; i++)
        x = x * 6364136223846793005ul + 1442695040888963407ul;
    return x;
}

__attribute__((noinline)) void handle_request(int fd)
{
    if (parse_request("req"))
        sink += compute(sink);
    pthread_mutex_lock(&q_lock);
    served++;
    pthread_mutex_unlock(&q_lock);
    if (write(fd, "ok\n", 3) != 3)
        perror("write");
}

static void *worker(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&q_lock);
        while (q_head == q_tail && !done)
            pthread_cond_wait(&q_cond, &q_lock);
        if (q_head == q_tail) {
            pthread_mutex_unlock(&q_lock);
            return NULL;
        }
        struct job j = queue[q_head++ % QMAX];
        pthread_mutex_unlock(&q_lock);
        handle_request(j.fd);
    }
}

/* Reads what is there on fd: each "req" line a job, "quit" the end.
 * Returns 1 to go on, 0 to end, -1 when the client went. */
__attribute__((noinline)) int serve_client(int fd)
{
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf);
    if (n <= 0)
        return -1;
    for (ssize_t i = 0; i + 2 < n; i++) {
        if (!strncmp(buf + i, "quit", 4) && (i == 0 || buf[i - 1] == '\n'))
            return 0;
        if (!strncmp(buf + i, "req", 3) && (i == 0 || buf[i - 1] == '\n')) {
            pthread_mutex_lock(&q_lock);
            queue[q_tail++ % QMAX] = (struct job){fd};
            pthread_cond_signal(&q_cond);
            pthread_mutex_unlock(&q_lock);
        }
    }
    return 1;
}

int main(int argc, char **argv)
{
    int nworkers = argc > 1 ? atoi(argv[1]) : 2;
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) < 0 || listen(ls, 8) < 0 ||
        getsockname(ls, (struct sockaddr *)&a, &alen) < 0)
        return perror("socket"), 1;
    pthread_t w[16];
    nworkers = nworkers < 1 ? 1 : nworkers > 16 ? 16 : nworkers;
    for (int i = 0; i < nworkers; i++)
        pthread_create(&w[i], NULL, worker, NULL);
    int ep = epoll_create1(0);
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = ls};
    epoll_ctl(ep, EPOLL_CTL_ADD, ls, &ev);
    printf("pid %d port %d\n", (int)getpid(), ntohs(a.sin_port));
    fflush(stdout);
    for (int run = 1; run;) {
        struct epoll_event evs[8];
        int n = epoll_wait(ep, evs, 8, -1);
        for (int i = 0; i < n && run; i++) {
            int fd = evs[i].data.fd;
            if (fd == ls) {
                int c = accept(ls, NULL, NULL);
                struct epoll_event ce = {.events = EPOLLIN, .data.fd = c};
                if (c >= 0)
                    epoll_ctl(ep, EPOLL_CTL_ADD, c, &ce);
            } else {
                int r = serve_client(fd);
                if (r < 0) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, fd, NULL);
                    close(fd);
                }
                run = r != 0;
            }
        }
    }
    pthread_mutex_lock(&q_lock);
    done = 1;
    pthread_cond_broadcast(&q_cond);
    pthread_mutex_unlock(&q_lock);
    for (int i = 0; i < nworkers; i++)
        pthread_join(w[i], NULL);
    printf("served %lu\n", served);
    return 0;
}

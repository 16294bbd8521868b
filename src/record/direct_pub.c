// SPDX-License-Identifier: MIT
/*
 * direct_pub.c - direct mode's statistics while the program runs
 * (docs/services.md, "Watch it live"): on request, a thread of the
 * recorder writes the statistics so far as a complete direct-mode trace
 * file, the one the program would leave at its exit (INFO, THREAD, DEFS,
 * STATS, FCOUNT, MAPS, CLOCK, END), which every reader command reads.
 *
 * Requests come through the control signal (ctl.c): RP_CTL_PUBLISH for
 * RP_CTL_DIR/rankprof.PID.stats, read by `rankprof top`, RP_CTL_SNAPSHOT
 * for the trace's name with RP_CTL_SNAP_SUFFIX (`rankprof ctl PID
 * snapshot`).  The handler only sets a bit and posts a semaphore (both
 * async-signal-safe); the publisher thread, blocked on it otherwise, takes
 * the merged snapshot (rp_direct_write, under direct_lock as at exit),
 * builds the file in memory through rp_out_sink (rt_out.c), writes it to
 * NAME.tmp and renames it into place, so a reader sees a whole file or the
 * previous one, then counts it in the control page (rp_ctl_snap_done).
 *
 * Memory: the snapshot's merged table (bounded as a thread's, direct_int.h)
 * and the file image, both freed after each request; nothing is kept
 * between requests, and nothing runs when nobody asks.  The publisher is
 * not recorded (no table of its own, no waits).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ctl.h"
#include "direct.h"
#include "direct_int.h"
#include "funcs.h"
#include "rt_int.h"
#include "trace/control.h"

#define REQ_PUBLISH  1u
#define REQ_SNAPSHOT 2u

static sem_t pub_sem;
static _Atomic uint32_t pub_req;
static _Atomic int pub_ok; /* the thread runs (0 again: it ends) */
/* A request is being answered.  The shutdown stores rp_rt.stopped, then
 * waits for this to be 0; the thread stores 1, then loads stopped: with
 * both sequentially consistent, one of them sees the other's store, so
 * the shutdown never unmaps the control page under an answer. */
static _Atomic int pub_busy;
static char stats_path[64];

/* Writes len bytes of p to path through path.tmp and a rename.  Returns 0
 * or -1 (errno set; the old file, if any, stays). */
static int file_put(const char *path, const uint8_t *p, size_t len)
{
    char tmp[RP_CTL_PATH + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return -1;
    if (rp_own_write_all(fd, p, len) < 0) {
        close(fd);
        unlink(tmp);
        return -1;
    }
    if (close(fd) < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return -1;
    }
    return 0;
}

/* Builds the statistics file in memory and writes it to path.  Returns 0
 * or a negative RP_E* code (nothing written). */
static int publish(const char *path)
{
    struct rp_out_sink k = {0};
    uint8_t hdr[RP_FILE_HDR_SIZE];
    rp_file_header(hdr);
    rp_out_sink = &k;
    struct iovec iov = {hdr, sizeof hdr};
    rp_out_writev(&iov, 1);
    rp_out_info();
    uint8_t info[32];
    size_t ilen = 0;
    rp_info_put(info, sizeof info, &ilen, "running", "1", 1);
    rp_out_chunk(RP_CH_INFO, info, ilen);
    int64_t n = rp_direct_write(rp_out_chunk);
    rp_funcs_write(rp_out_chunk, 0);
    rp_out_maps();
    rp_out_clock();
    rp_out_end(0, 0, rp_ticks()); /* no exit flag: the process goes on */
    rp_out_sink = NULL;
    int rc = n < 0 ? (int)n : k.failed ? RP_ENOMEM : 0;
    if (rc == 0 && file_put(path, k.p, k.len) < 0)
        rc = RP_EIO;
    free(k.p);
    return rc;
}

static void *pub_main(void *arg)
{
    (void)arg;              /* (every signal blocked: rp_rt_thread_start) */
    rp_is_writer = 1;       /* its waits are not the program's */
    rp_direct_unrecorded(); /* nor its events */
    rp_dsnap_open = 1;      /* the blocked threads' open frames end now */
    for (;;) {
        while (sem_wait(&pub_sem) < 0 && errno == EINTR)
            ;
        if (!atomic_load(&pub_ok)) /* (rp_direct_pub_retire) */
            break;
        uint32_t req = atomic_exchange(&pub_req, 0);
        if (!req)
            continue;
        atomic_store(&pub_busy, 1);
        if (atomic_load(&rp_rt.stopped)) {
            atomic_store(&pub_busy, 0);
            break;
        }
        if (req & REQ_PUBLISH)
            publish(stats_path);
        if (req & REQ_SNAPSHOT) {
            char path[RP_CTL_PATH + 8];
            snprintf(path, sizeof path, "%s%s", rp_rt.path, RP_CTL_SNAP_SUFFIX);
            if (publish(path) < 0)
                rp_rt_warn("cannot write the snapshot %s", path, errno);
        }
        rp_ctl_snap_done();
        atomic_store(&pub_busy, 0);
    }
    return NULL;
}

RP_HIDDEN void rp_direct_pub_start(void)
{
    snprintf(stats_path, sizeof stats_path, "%s/rankprof.%d.stats", RP_CTL_DIR, (int)getpid());
    if (sem_init(&pub_sem, 0, 0) < 0)
        return;
    pthread_attr_t a;
    pthread_t th;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&a, 256 * 1024);
    if (rp_rt_thread_start(&th, &a, pub_main) == 0)
        atomic_store(&pub_ok, 1);
    pthread_attr_destroy(&a);
}

/*
 * Main has called pthread_exit: from then on the process ends when its
 * last thread does (glibc's exit(0) there), and the publisher, blocked on
 * its semaphore, would be that thread for ever.  So it ends now; requests
 * from then on are not answered (`top` and `ctl snapshot` say the process
 * did not answer).  Cannot fail.
 */
RP_HIDDEN void rp_direct_pub_retire(void)
{
    if (atomic_exchange(&pub_ok, 0))
        sem_post(&pub_sem);
}

RP_HIDDEN void rp_direct_pub_request(int snapshot)
{
    if (!atomic_load(&pub_ok))
        return;
    atomic_fetch_or(&pub_req, snapshot ? REQ_SNAPSHOT : REQ_PUBLISH);
    sem_post(&pub_sem);
}

RP_HIDDEN void rp_direct_pub_shutdown(void)
{
    if (!stats_path[0])
        return;
    /* an answer under way ends first (at most 2 s: a thread that cannot
     * finish is left to the process's end) */
    struct timespec ms = {0, 1000000};
    for (int i = 0; i < 2000 && atomic_load(&pub_busy); i++)
        nanosleep(&ms, NULL);
    unlink(stats_path);
}

RP_HIDDEN void rp_direct_pub_atfork_child(void)
{
    /* the thread is the parent's: the child answers no request (ctl and
     * top say the process did not answer) */
    atomic_store(&pub_ok, 0);
    stats_path[0] = 0;
}

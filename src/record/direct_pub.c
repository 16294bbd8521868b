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
 * Checkpoints: unasked, every RANKPROF_CHECKPOINT_MS (1 s by default; 0:
 * none) the thread writes the same file to the trace's name with
 * RP_CTL_CKPT_SUFFIX, so that a process killed by SIGKILL (the OOM killer,
 * a supervisor's timeout), which leaves its trace without statistics,
 * leaves them as of its last checkpoint; the recorder removes it once the
 * trace holds the final statistics (rp_direct_pub_saved,
 * rp_direct_pub_shutdown).
 *
 * Memory: the snapshot's merged table (bounded as a thread's, direct_int.h)
 * and the file image, both freed after each file; nothing is kept between
 * them.  The publisher is not recorded (no table of its own, no waits).
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
#define REQ_CKPT     4u /* (the period's, not a request) */

static sem_t pub_sem;
static _Atomic uint32_t pub_req;
static _Atomic int pub_ok; /* the thread runs (0 again: it ends) */
/* A request is being answered.  The shutdown stores rp_rt.stopped, then
 * waits for this to be 0; the thread stores 1, then loads stopped: with
 * both sequentially consistent, one of them sees the other's store, so
 * the shutdown never unmaps the control page under an answer. */
static _Atomic int pub_busy;
static char stats_path[64];
static unsigned ckpt_ms;         /* RANKPROF_CHECKPOINT_MS; 0: none */
static _Atomic int ckpt_written; /* a checkpoint file exists */
static _Atomic int final_saved;  /* the trace holds the final statistics */

/* Writes len bytes of p to path through path.tmp and a rename, created
 * with mode (less the umask).  Returns 0 or -1 (errno set; the old file,
 * if any, stays). */
static int file_put(const char *path, const uint8_t *p, size_t len, mode_t mode)
{
    char tmp[RP_CTL_PATH + 8];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, mode);
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

/* Builds the statistics file in memory and writes it to path (a
 * checkpoint's: INFO checkpoint too).  Returns 0 or a negative RP_E* code
 * (nothing written). */
static int publish(const char *path, mode_t mode, int ckpt)
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
    if (ckpt)
        rp_info_put(info, sizeof info, &ilen, "checkpoint", "1", 1);
    rp_out_chunk(RP_CH_INFO, info, ilen);
    int64_t n = rp_direct_write(rp_out_chunk);
    rp_funcs_write(rp_out_chunk, 0);
    rp_out_maps();
    rp_out_clock();
    rp_out_end(0, 0, rp_ticks()); /* no exit flag: the process goes on */
    rp_out_sink = NULL;
    int rc = n < 0 ? (int)n : k.failed ? RP_ENOMEM : 0;
    if (rc == 0 && file_put(path, k.p, k.len, mode) < 0)
        rc = RP_EIO;
    free(k.p);
    return rc;
}

/* The checkpoint's name: the trace's with RP_CTL_CKPT_SUFFIX. */
static void ckpt_name(char *path, size_t n)
{
    snprintf(path, n, "%s%s", rp_rt.path, RP_CTL_CKPT_SUFFIX);
}

/* Moves t on by ms milliseconds.  Cannot fail. */
static void ts_add_ms(struct timespec *t, unsigned ms)
{
    t->tv_sec += ms / 1000;
    t->tv_nsec += (long)(ms % 1000) * 1000000;
    if (t->tv_nsec >= 1000000000) {
        t->tv_sec++;
        t->tv_nsec -= 1000000000;
    }
}

/* Waits for a request or until *next (CLOCK_REALTIME), then moves *next on
 * by the period when it has come.  Returns REQ_CKPT then, else 0. */
static uint32_t pub_wait(struct timespec *next)
{
    if (!ckpt_ms) {
        while (sem_wait(&pub_sem) < 0 && errno == EINTR)
            ;
        return 0;
    }
    while (sem_timedwait(&pub_sem, next) < 0)
        if (errno != EINTR) { /* ETIMEDOUT (or a deadline it refuses) */
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            do /* (the next one to come: none is made up for) */
                ts_add_ms(next, ckpt_ms);
            while (next->tv_sec < now.tv_sec ||
                   (next->tv_sec == now.tv_sec && next->tv_nsec <= now.tv_nsec));
            return REQ_CKPT;
        }
    return 0;
}

static void *pub_main(void *arg)
{
    (void)arg;              /* (every signal blocked: rp_rt_thread_start) */
    rp_is_writer = 1;       /* its waits are not the program's */
    rp_direct_unrecorded(); /* nor its events */
    rp_dsnap_open = 1;      /* the blocked threads' open frames end now */
    struct timespec next;
    clock_gettime(CLOCK_REALTIME, &next);
    ts_add_ms(&next, ckpt_ms);
    int ckpt_warned = 0;
    for (;;) {
        uint32_t tick = pub_wait(&next);
        if (!atomic_load(&pub_ok)) /* (rp_direct_pub_retire) */
            break;
        uint32_t req = atomic_exchange(&pub_req, 0) | tick;
        if (!req)
            continue;
        atomic_store(&pub_busy, 1);
        if (atomic_load(&rp_rt.stopped)) {
            atomic_store(&pub_busy, 0);
            break;
        }
        if (req & REQ_PUBLISH)
            publish(stats_path, 0600, 0);
        if (req & REQ_SNAPSHOT) {
            char path[RP_CTL_PATH + 8];
            snprintf(path, sizeof path, "%s%s", rp_rt.path, RP_CTL_SNAP_SUFFIX);
            if (publish(path, 0600, 0) < 0)
                rp_rt_warn("cannot write the snapshot %s", path, errno);
        }
        if (req & REQ_CKPT) {
            char path[RP_CTL_PATH + 8];
            ckpt_name(path, sizeof path);
            atomic_store(&ckpt_written, 1); /* (before the file: the end removes it) */
            if (publish(path, 0666, 1) < 0 && !ckpt_warned++) /* (as the trace) */
                rp_rt_warn("cannot write the checkpoint %s", path, errno);
        }
        if (req & (REQ_PUBLISH | REQ_SNAPSHOT))
            rp_ctl_snap_done();
        atomic_store(&pub_busy, 0);
    }
    return NULL;
}

RP_HIDDEN void rp_direct_pub_start(void)
{
    snprintf(stats_path, sizeof stats_path, "%s/rankprof.%d.stats", RP_CTL_DIR, (int)getpid());
    const char *e = getenv("RANKPROF_CHECKPOINT_MS");
    char *end = NULL;
    unsigned long ms = e && *e ? strtoul(e, &end, 10) : 1000;
    if (end && (*end || ms > 3600000)) {
        rp_rt_warn("RANKPROF_CHECKPOINT_MS=%s is not a number of ms up to 3600000; using 1000", e,
                   0);
        ms = 1000;
    }
    ckpt_ms = rp_rt.out_file ? (unsigned)ms : 0; /* (beside a file, not a pipe or device) */
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
    if (atomic_load(&ckpt_written) && atomic_load(&final_saved) && !atomic_load(&rp_rt.failed)) {
        char path[RP_CTL_PATH + 8];
        ckpt_name(path, sizeof path);
        unlink(path); /* the trace holds them now */
    }
}

RP_HIDDEN void rp_direct_pub_saved(void)
{
    atomic_store(&final_saved, 1);
}

RP_HIDDEN void rp_direct_pub_atfork_child(void)
{
    /* the thread is the parent's: the child answers no request (ctl and
     * top say the process did not answer) */
    atomic_store(&pub_ok, 0);
    stats_path[0] = 0;
}

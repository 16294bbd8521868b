// SPDX-License-Identifier: MIT
/*
 * rotate.c - bounded disk (`rankprof record --max-size SIZE`,
 * RANKPROF_MAX_SIZE, docs/services.md): the trace is written in pieces and
 * the oldest are deleted, so the files of the trace never hold more than
 * SIZE bytes together, and the newest events are kept.
 *
 * The trace NAME is always the newest piece; when writing a chunk would
 * take it past PIECE = SIZE / 4 bytes, NAME is renamed NAME.partK (K = 1,
 * 2, ...), the oldest pieces are deleted while the pieces left and a full
 * new one would exceed SIZE (so at most three stay), and a new NAME is
 * started.  Every piece is a whole trace on its own: it begins with the
 * file header and the chunks a reader needs before events (the first INFO
 * and CLOCK, every MAPS, DEFS and THREAD chunk written so far, kept here
 * in memory), and the EVENTS chunks carry each thread's open spans
 * (format.h, the snapshot), so the events of a piece replay without the
 * pieces before it.  The reader (src/trace/reader.c) reads NAME.part* then
 * NAME as one trace, and the analyzer accepts a definition repeated
 * unchanged.
 *
 * Bounds: the kept chunks grow with the ids and threads defined, not with
 * the events (a warning says so when they no longer fit a piece, which then
 * grows past it).  Every chunk written goes through rp_rot_chunk under a
 * spin lock of its own (the recorder's mutexes would be recorded) taken
 * before fd_lock; nothing here runs in a fatal signal's handler (the
 * chunks written then go to the current piece as they are).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "locks.h"
#include "rt_int.h"

#define ROT_KEEP 8 /* pieces remembered (at most 3 stay with PIECE = SIZE / 4) */

static struct {
    atomic_flag lock;
    int init;
    pid_t pid;                       /* the process the state is of (a child starts afresh) */
    uint64_t max, piece;             /* SIZE and PIECE; max 0: no rotation */
    uint64_t cur;                    /* bytes in NAME */
    uint32_t k;                      /* pieces made so far */
    uint32_t first;                  /* the oldest piece still on disk (k + 1: none) */
    uint64_t size[ROT_KEEP];         /* size of piece i at [i % ROT_KEEP] */
    struct rp_kept info, clock, pre; /* pre: MAPS, DEFS and THREAD chunks, in order */
    int warned;
} rot = {.lock = ATOMIC_FLAG_INIT};

RP_HIDDEN atomic_int rp_rot_on = 1; /* until the first chunk says otherwise */

static void rot_lock(void)
{
    while (atomic_flag_test_and_set_explicit(&rot.lock, memory_order_acquire))
        sched_yield();
}

static void rot_unlock(void)
{
    atomic_flag_clear_explicit(&rot.lock, memory_order_release);
}

/* Deletes NAME.partK files an older run left beside this process's trace
 * (the reader would take them for pieces of this one).  Best effort. */
static void parts_clear(void)
{
    const char *path = rp_rt.path, *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    size_t blen = strlen(base);
    char dir[sizeof rp_rt.path], f[sizeof rp_rt.path + 256];
    if (!blen)
        return;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else
        snprintf(dir, sizeof dir, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name, *k = nm + blen + 5;
        if (strncmp(nm, base, blen) || strncmp(nm + blen, ".part", 5) || !*k ||
            strspn(k, "0123456789") != strlen(k))
            continue;
        snprintf(f, sizeof f, "%s%s", path, nm + blen);
        unlink(f);
    }
    closedir(d);
}

/* Reads RANKPROF_MAX_SIZE (bytes) once per process.  A value that is not a
 * number of at least 64 KiB is warned about and ignored. */
static void rot_init(void)
{
    pid_t pid = getpid();
    if (rot.init && rot.pid == pid)
        return;
    free(rot.info.p);
    free(rot.clock.p);
    free(rot.pre.p);
    memset(&rot.info, 0, sizeof rot.info);
    memset(&rot.clock, 0, sizeof rot.clock);
    memset(&rot.pre, 0, sizeof rot.pre);
    rot.init = 1;
    rot.pid = pid;
    rot.cur = RP_FILE_HDR_SIZE;
    rot.k = 0;
    rot.first = 1;
    rot.max = 0;
    parts_clear();
    const char *s = getenv("RANKPROF_MAX_SIZE");
    if (!s || !*s || rp_rt.direct)
        return;
    char *e;
    errno = 0;
    unsigned long long v = strtoull(s, &e, 10);
    if (errno || *e || v < 65536) {
        rp_rt_warn("RANKPROF_MAX_SIZE=%s is not a size in bytes of at least 65536; the trace "
                   "is not rotated",
                   s, 0);
        return;
    }
    rot.max = v;
    rot.piece = v / 4;
}

/* Why rotation stops when the program lowered its descriptor limit. */
#define NO_ROOM                                                                                    \
    "no descriptor for a new piece of %s above the program's (its limit was lowered); the "        \
    "trace is no longer rotated"

/* Rotation stops for good, the trace going on in the file it writes: lets
 * go of fd_lock (held) and says why (fmt names the trace).  Cannot fail. */
static void rot_stop(const char *fmt, int err)
{
    rp_own_unlock(&rp_rt.fd_lock);
    rp_rt_warn(fmt, rp_rt.path, err);
    rot.max = 0;
}

/* Ends NAME as piece k + 1, deletes the oldest pieces beyond the bound and
 * starts NAME again with the kept chunks.  On failure the trace goes on in
 * the old file (a warning says why, rotation stops). */
static void rotate(void)
{
    char part[sizeof rp_rt.path + 24];
    uint8_t hdr[RP_FILE_HDR_SIZE];
    uint32_t k = rot.k + 1;
    uint64_t pre = RP_FILE_HDR_SIZE + rot.info.len + rot.clock.len + rot.pre.len;
    if (pre >= rot.piece && !rot.warned) {
        rot.warned = 1;
        rp_rt_warn("--max-size: the definitions alone fill a piece of %s; the trace may exceed "
                   "its size",
                   rp_rt.path, 0);
    }
    snprintf(part, sizeof part, "%s.part%u", rp_rt.path, k);
    rp_own_lock(&rp_rt.fd_lock);
    int old = rp_rt.fd;
    if (!rp_rt_fd_room(old)) { /* a new piece would take one of the program's numbers */
        rot_stop(NO_ROOM, 0);
        return;
    }
    if (rename(rp_rt.path, part) < 0) {
        rot_stop("cannot rename %s; the trace is no longer rotated", errno);
        return;
    }
    rot.size[k % ROT_KEEP] = rot.cur;
    rot.k = k;
    /* the pieces left and a full new one within SIZE: delete the oldest */
    uint64_t sum = 0;
    for (uint32_t i = rot.first; i <= k; i++)
        sum += rot.size[i % ROT_KEEP];
    while (rot.first <= k && (sum + rot.piece > rot.max || k - rot.first + 1 >= ROT_KEEP)) {
        snprintf(part, sizeof part, "%s.part%u", rp_rt.path, rot.first);
        unlink(part);
        sum -= rot.size[rot.first % ROT_KEEP];
        rot.first++;
    }
    int fd = open(rp_rt.path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0) {
        rot_stop("cannot create %s again; the trace goes on in its last piece", errno);
        return;
    }
    flock(fd, LOCK_EX | LOCK_NB); /* the name is this process's (rt_start.c) */
    fd = rp_rt_fd_high(fd);
    if (rp_rt_fd_low(fd)) { /* (taken since rp_rt_fd_room: the old file goes on) */
        syscall(SYS_close, fd);
        snprintf(part, sizeof part, "%s.part%u", rp_rt.path, k);
        rename(part, rp_rt.path);
        rot_stop(NO_ROOM, 0);
        return;
    }
    rp_file_header(hdr);
    /* (raw: the trace's descriptor) */
    int bad = rp_own_write_all(fd, hdr, sizeof hdr) < 0 ||
              rp_own_write_all(fd, rot.info.p, rot.info.len) < 0 ||
              rp_own_write_all(fd, rot.clock.p, rot.clock.len) < 0 ||
              rp_own_write_all(fd, rot.pre.p, rot.pre.len) < 0;
    struct stat st;
    if (fstat(fd, &st) == 0) {
        rp_out_dev = st.st_dev;
        rp_out_ino = st.st_ino;
    }
    __atomic_store_n(&rp_rt.fd, fd, __ATOMIC_RELAXED);
    rp_own_unlock(&rp_rt.fd_lock);
    syscall(SYS_close, old); /* not close(): the interposer would move it */
    rot.cur = pre;
    if (bad)
        rp_rt_warn("writing the start of %s failed", rp_rt.path, errno);
}

RP_HIDDEN void rp_rot_atfork_child(void)
{
    atomic_flag_clear_explicit(&rot.lock, memory_order_relaxed);
}

RP_HIDDEN void rp_rot_chunk(uint32_t type, const void *payload, size_t len)
{
    uint8_t hdr[RP_CHUNK_HDR_SIZE];
    rp_chunk_header(hdr, type, payload, (uint32_t)len);
    struct iovec iov[2] = {{hdr, sizeof(hdr)}, {(void *)payload, len}};
    if (atomic_load(&rp_rt.fatal)) { /* a signal handler: as it is */
        rp_out_writev(iov, 2);
        return;
    }
    rot_lock();
    rot_init();
    uint64_t need = RP_CHUNK_HDR_SIZE + len;
    if (rot.max && rot.cur + need > rot.piece &&
        rot.cur > RP_FILE_HDR_SIZE + rot.info.len + rot.clock.len + rot.pre.len)
        rotate();
    rp_out_writev(iov, 2);
    rot.cur += need;
    struct rp_kept *k = type == RP_CH_INFO && !rot.info.len     ? &rot.info
                        : type == RP_CH_CLOCK && !rot.clock.len ? &rot.clock
                        : type == RP_CH_MAPS || type == RP_CH_DEFS || type == RP_CH_THREAD
                            ? &rot.pre
                            : NULL;
    if (rot.max && k && rp_kept_add(k, hdr, payload, len, 0) < 0) {
        rp_rt_warn("out of memory for the definitions; %s is no longer rotated", rp_rt.path, 0);
        rot.max = 0;
    }
    if (!rot.max && !rot.k) /* never rotated: no more detour (a child inherits that) */
        atomic_store_explicit(&rp_rot_on, 0, memory_order_relaxed);
    rot_unlock();
}

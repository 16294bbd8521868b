// SPDX-License-Identifier: MIT
/*
 * live.c - a trace read while it is written (live.h): `rankprof top` on a
 * process that records a trace reads only what is new at each refresh.
 *
 * A live reading is the replay of rp_replay_file cut in steps: its state
 * (p->priv: the replayers' accumulators, each thread's open spans, the
 * edges) and the reader stay between updates, each update reads the whole
 * chunks written since the last (the reader stops before a chunk still
 * being written, and goes on from its header the next time), with the
 * workers started for the update and stopped after it.  The replay is the
 * same chunk for chunk as that of the whole file, so its sums are too.
 *
 * Finishing a replay is destructive: the accumulators are summed into the
 * nodes and freed, open spans are ended, the nodes are then named, ranked
 * and flagged.  A snapshot therefore finishes a copy: fork() gives one,
 * copy on write, exact whatever the structures hold, and the child
 * finishes it (rp_replay_complete: the same code as the end of
 * rp_replay_file), calls the caller's function on it and exits; the
 * parent's state is untouched.  The child gets its result and any error
 * message back to the parent through a pipe.  A copy made field by field
 * would have to know every allocation of the profile and of the replay,
 * and follow their changes.
 *
 * Memory: the reading keeps what a replay holds in the middle of a file
 * (per node its statistics and histograms, per edge a record, per thread
 * its open spans; nothing grows with the file's length, docs/robustness.md
 * "Memory"), one chunk's buffer, and during a snapshot the child's copies
 * of the pages finishing writes (at most that state again) and what
 * ranking allocates.
 *
 * A rotated set (pieces NAME.partK, record --max-size) and a file replaced
 * under its name are read again whole at each snapshot: the reading falls
 * back to what rp_replay_file does.
 */
#define _GNU_SOURCE
#include "live.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/error.h"
#include "replay_int.h"
#include "trace/reader.h"

struct rp_live {
    char *path;
    struct rp_replay_opts o;
    struct rp_profile p; /* p.priv: the replay's state between updates */
    struct rp_reader r;
    int open;    /* r is open */
    int rd;      /* the reader's last result (0: the end so far; RP_ETRUNC: a chunk not
                    whole yet; any other error: the reading stops there, as a whole read) */
    int rereads; /* fell back: each snapshot reads the file whole */
};

/* Drops the reading's state: from now on each snapshot reads the file
 * whole.  Cannot fail. */
static void fall_back(struct rp_live *l)
{
    if (l->open)
        rp_reader_close(&l->r);
    l->open = 0;
    rp_replay_priv_free(&l->p);
    rp_profile_free(&l->p);
    memset(&l->p, 0, sizeof(l->p));
    l->rereads = 1;
}

/* Whether the file at l's path is no longer the one being read (replaced,
 * or shorter than what was read).  A name that cannot be looked at keeps
 * the open file.  Cannot fail. */
static int replaced(const struct rp_live *l)
{
    struct stat a, b;
    if (stat(l->path, &a) != 0 || fstat(fileno(l->r.f), &b) != 0)
        return 0;
    return a.st_dev != b.st_dev || a.st_ino != b.st_ino || (uint64_t)b.st_size < l->r.off;
}

int rp_live_update(struct rp_live *l, char *err, size_t errsz)
{
    char sub[256];
    int rc;

    err[0] = 0;
    if (l->rereads || (l->rd != 0 && l->rd != RP_ETRUNC))
        return 0; /* (a damaged chunk: a whole read stops there too) */
    if (replaced(l)) {
        fall_back(l);
        return 0;
    }
    if ((rc = rp_reader_resume(&l->r)) < 0) {
        snprintf(err, errsz, "%s", l->r.err);
        return rc;
    }
    struct priv *v = l->p.priv;
    int had = v->nworkers;
    rp_workers_start(v, rp_workers_count());
    if (v->nworkers < had) { /* every replayer's accumulators are summed: none lost */
        rp_workers_stop(v);
        v->nworkers = had;
    }
    sub[0] = 0;
    rc = rp_replay_chunks(&l->p, &l->r, l->o.tid, NULL, NULL, &l->rd, sub, sizeof(sub));
    if (rc < 0) {
        rp_jobs_drain(&l->p, sub + strlen(sub), 0); /* release the jobs; the first error stands */
        if (rc == RP_ENOMEM && !sub[0])
            snprintf(sub, sizeof(sub), "out of memory");
        snprintf(err, errsz, "%s: %s", l->path, sub);
    }
    rp_workers_stop(v);
    return rc;
}

int rp_live_open(struct rp_live **out, const char *path, const struct rp_replay_opts *o, char *err,
                 size_t errsz)
{
    struct rp_live *l = calloc(1, sizeof(*l));
    int rc = RP_ENOMEM;

    *out = NULL;
    err[0] = 0;
    if (!l || !(l->path = strdup(path)))
        goto fail;
    if (o)
        l->o = *o;
    if ((rc = rp_replay_start(&l->p, &l->o)) < 0)
        goto fail;
    if ((rc = rp_reader_open(&l->r, l->path)) < 0) {
        snprintf(err, errsz, "%s", l->r.err);
        goto fail;
    }
    l->open = 1;
    l->r.force = l->o.force;
    if (l->r.npieces) /* a rotated set: pieces come and go */
        fall_back(l);
    else if ((rc = rp_live_update(l, err, errsz)) < 0)
        goto fail;
    *out = l;
    return 0;
fail:
    if (rc == RP_ENOMEM && !err[0])
        snprintf(err, errsz, "%s: out of memory", path);
    rp_live_close(l);
    return rc;
}

/* The child of rp_live_snapshot: finishes its copy of the reading, calls
 * fn, and writes the result and any message to fd.  Does not return. */
static void __attribute__((noreturn))
snapshot_child(struct rp_live *l, int (*fn)(void *ctx, struct rp_profile *p), void *ctx, int fd)
{
    char msg[4 + 1024], sub[256];
    struct rp_profile fresh = {0}, *p = &l->p;
    int rc;

    msg[4] = 0;
    if (l->rereads) {
        p = &fresh;
        rc = rp_replay_file(l->path, &l->o, p, NULL, NULL, msg + 4, sizeof(msg) - 4);
    } else {
        rc = rp_replay_complete(p, &l->r, l->rd, l->path, l->o.force, msg + 4, sizeof(msg) - 4, sub,
                                sizeof(sub));
        rp_replay_priv_free(p);
    }
    if (rc == 0)
        rc = fn(ctx, p);
    fflush(NULL);
    memcpy(msg, &rc, 4);
    size_t n = 4 + strlen(msg + 4), done = 0;
    while (done < n) {
        ssize_t w = write(fd, msg + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        done += (size_t)w;
    }
    _exit(rc < 0 ? 1 : 0);
}

int rp_live_snapshot(struct rp_live *l, int (*fn)(void *ctx, struct rp_profile *p), void *ctx,
                     char *err, size_t errsz)
{
    int fds[2], rc;

    err[0] = 0;
    if (pipe(fds) < 0) {
        snprintf(err, errsz, "%s: snapshot: cannot make a pipe: %s", l->path, strerror(errno));
        return RP_ENOMEM;
    }
    fflush(NULL); /* nothing buffered is written twice */
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errsz, "%s: snapshot: cannot make a process: %s", l->path, strerror(errno));
        close(fds[0]);
        close(fds[1]);
        return RP_ENOMEM;
    }
    if (pid == 0) {
        close(fds[0]);
        snapshot_child(l, fn, ctx, fds[1]);
    }
    close(fds[1]);
    char msg[4 + 1024];
    size_t got = 0;
    for (;;) {
        ssize_t n = read(fds[0], msg + got, sizeof(msg) - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(fds[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (got >= 4) {
        memcpy(&rc, msg, 4);
        msg[got] = 0;
        snprintf(err, errsz, "%s", msg + 4);
        return rc;
    }
    if (WIFSIGNALED(st))
        snprintf(err, errsz, "%s: snapshot: its process was killed by signal %d", l->path,
                 WTERMSIG(st));
    else
        snprintf(err, errsz, "%s: snapshot: its process exited with status %d", l->path,
                 WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    return RP_EIO;
}

int rp_live_rereads(const struct rp_live *l)
{
    return l->rereads;
}

void rp_live_close(struct rp_live *l)
{
    if (!l)
        return;
    if (l->open)
        rp_reader_close(&l->r);
    rp_replay_priv_free(&l->p);
    rp_profile_free(&l->p);
    free(l->path);
    free(l);
}

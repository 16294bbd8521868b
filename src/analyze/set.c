// SPDX-License-Identifier: MIT
/*
 * set.c - finding the trace files of one run (set.h): NAME and the
 * NAME.PID[.N] files beside it that carry NAME's run id or were written
 * while NAME was.
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include "set.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"
#include "trace/control.h"
#include "trace/reader.h"

/* A malloc'd printable copy of an INFO value; NULL when out of memory. */
static char *value_dup(const uint8_t *v, uint32_t n)
{
    return rp_text_dup(v, n, 0, NULL);
}

/* The decimal number at v (n bytes), 0 if none or too large.  Cannot fail. */
static uint32_t value_u32(const uint8_t *v, uint32_t n)
{
    uint64_t x = 0;
    for (uint32_t i = 0; i < n && i < 10 && v[i] >= '0' && v[i] <= '9'; i++)
        x = x * 10 + (uint64_t)(v[i] - '0');
    return x > UINT32_MAX ? 0 : (uint32_t)x;
}

/* Reads an INFO payload's pid, ppid, rank, run and host into w.  RP_ENOMEM. */
static int read_info(const struct rp_chunk *c, struct rp_proc *w)
{
    const uint8_t *p = c->data, *end = c->data + c->len, *key, *v;
    uint32_t k, n;
    while (rp_info_next(&p, end, &key, &k, &v, &n) > 0) {
        char **dst = NULL;
        if (k == 3 && !memcmp(key, "pid", 3))
            w->pid = value_u32(v, n);
        else if (k == 4 && !memcmp(key, "ppid", 4))
            w->ppid = value_u32(v, n);
        else if (k == 4 && !memcmp(key, "rank", 4) && n && n <= 9)
            w->rank = value_u32(v, n), w->has_rank = 1;
        else if (k == 3 && !memcmp(key, "run", 3))
            dst = &w->run;
        else if (k == 4 && !memcmp(key, "host", 4))
            dst = &w->host;
        if (dst) {
            free(*dst);
            if (!(*dst = value_dup(v, n)))
                return RP_ENOMEM;
        }
    }
    return 0;
}

/*
 * The wall-clock time of the last CLOCK chunk at or after off (the one a
 * process writes at its exit), found by reading only the chunk headers
 * (checked) and the CLOCK payloads (checked): one read per chunk.  0 when
 * there is none, or at the first damaged header.
 */
static int last_clock_of(void *ctx, const struct rp_skimmed *k)
{
    if (rp_get32(k->hdr) != RP_CH_CLOCK || rp_get32(k->hdr + 4) != 24)
        return 0;
    if (k->npay != 24)
        return 1;
    if (rp_crc32(0, k->pay, 24) == rp_get32(k->hdr + 8))
        *(uint64_t *)ctx = rp_get64(k->pay + 16);
    return 0;
}

static uint64_t last_clock(FILE *f, uint64_t off)
{
    uint64_t last = 0;
    rp_chunks_skim(f, off, last_clock_of, &last);
    return last;
}

/* rp_set_probe; the end only from the file's modification time unless
 * skim (reading every chunk header of a big trace costs a read per chunk:
 * not worth it for a file that has no sibling to be told apart from). */
static int probe(const char *path, struct rp_set_file *f, char *err, size_t errsz, int skim)
{
    struct rp_reader r;
    struct rp_chunk c;
    struct stat st;
    int rc;

    memset(f, 0, sizeof(*f));
    if (!(f->who.file = strdup(path))) {
        snprintf(err, errsz, "%s: out of memory", path);
        return RP_ENOMEM;
    }
    if ((rc = rp_reader_open(&r, path)) < 0) {
        snprintf(err, errsz, "%s", r.err);
        return rc;
    }
    /* best effort: a damaged chunk ends the probe, and the replay says what
     * is wrong with the file */
    while ((rc = rp_reader_next(&r, &c)) == 1) {
        if (c.type == RP_CH_THREAD || c.type == RP_CH_EVENTS)
            break;
        if (c.type == RP_CH_INFO && (rc = read_info(&c, &f->who)) < 0) {
            snprintf(err, errsz, "%s: out of memory", path);
            break;
        }
        if (c.type == RP_CH_CLOCK && c.len >= 24 && !f->who.start_ns) {
            f->who.start_ns = rp_get64(c.data + 16);
            break; /* the prologue's last chunk (trace-format.md 3.2) */
        }
    }
    if (fstat(fileno(r.f), &st) == 0)
        f->end_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
    if (rc >= 0 && f->who.start_ns && skim) {
        uint64_t last = last_clock(r.f, r.off);
        if (last >= f->who.start_ns)
            f->end_ns = last;
    }
    rp_reader_close(&r);
    return rc == RP_ENOMEM ? rc : 0;
}

int rp_set_probe(const char *path, struct rp_set_file *f, char *err, size_t errsz)
{
    return probe(path, f, err, errsz, 1);
}

/* Frees what f owns and zeroes it.  Cannot fail. */
static void file_free(struct rp_set_file *f)
{
    free(f->who.file);
    free(f->who.run);
    free(f->who.host);
    memset(f, 0, sizeof(*f));
}

void rp_set_free(struct rp_set *s)
{
    for (uint32_t i = 0; i < s->n; i++)
        file_free(&s->files[i]);
    for (uint32_t i = 0; i < s->n_skipped; i++)
        free(s->skipped[i]);
    for (uint32_t i = 0; i < s->n_notes; i++)
        free(s->notes[i]);
    free(s->files);
    free(s->skipped);
    free(s->notes);
    memset(s, 0, sizeof(*s));
}

static int end_of(void *ctx, const struct rp_skimmed *k)
{
    (void)ctx;
    return rp_get32(k->hdr) == RP_CH_END;
}

/* Whether the trace at path has an END chunk (its chunk headers skimmed).
 * Cannot fail: a file that cannot be read has none. */
static int has_end(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    int end = rp_chunks_skim(f, RP_FILE_HDR_SIZE, end_of, NULL) == 1;
    fclose(f);
    return end;
}

/*
 * A direct-mode process writes its statistics into its trace at its end;
 * until then its recorder keeps a checkpoint of them beside it
 * (RP_CTL_CKPT_SUFFIX, trace/control.h), which it removes once the trace
 * holds them.  So a trace with no END and such a checkpoint of the same
 * process (pid and run) beside it is one whose process was killed
 * (SIGKILL) or still runs: f becomes the checkpoint, and s->notes says so.
 * Returns 0 (also when f stays), or RP_ENOMEM.
 */
static int ckpt_take(struct rp_set *s, struct rp_set_file *f)
{
    struct rp_set_file c = {0};
    char *ck = NULL, e[512], *m = NULL;
    size_t n = strlen(f->who.file), k = strlen(RP_CTL_CKPT_SUFFIX);
    int rc = 0;
    if (!f->who.start_ns || (n > k && !strcmp(f->who.file + n - k, RP_CTL_CKPT_SUFFIX)))
        return 0;
    if (asprintf(&ck, "%s%s", f->who.file, RP_CTL_CKPT_SUFFIX) < 0)
        return RP_ENOMEM;
    if (access(ck, R_OK) != 0 || has_end(f->who.file))
        goto out;
    if ((rc = probe(ck, &c, e, sizeof(e), 0)) < 0 || c.who.pid != f->who.pid ||
        !c.who.run != !f->who.run || (c.who.run && strcmp(c.who.run, f->who.run)))
        goto out; /* (not its checkpoint) */
    double at = c.end_ns > f->who.start_ns ? (double)(c.end_ns - f->who.start_ns) / 1e9 : 0;
    if (rp_grow(&s->notes, &s->cap_notes, s->n_notes + 1, sizeof(*s->notes), 4) < 0 ||
        asprintf(&m,
                 "%s holds no statistics (its process was killed, or still runs): read its "
                 "recorder's checkpoint %s, written %.1f s into the run, in its place",
                 f->who.file, ck, at) < 0) {
        rc = RP_ENOMEM;
        goto out;
    }
    s->notes[s->n_notes++] = m;
    file_free(f);
    *f = c;
    memset(&c, 0, sizeof(c));
out:
    file_free(&c);
    free(ck);
    return rc == RP_ENOMEM ? rc : 0;
}

/* rp_set_add, skimming the file for its end only if skim (probe). */
static int add(struct rp_set *s, const char *path, char *err, size_t errsz, int skim)
{
    if (rp_grow(&s->files, &s->cap, s->n + 1, sizeof(*s->files), 8) < 0) {
        snprintf(err, errsz, "%s: out of memory", path);
        return RP_ENOMEM;
    }
    int rc = probe(path, &s->files[s->n], err, errsz, skim);
    if (rc == RP_ENOMEM) {
        file_free(&s->files[s->n]);
        return rc;
    }
    if (rc == 0 && ckpt_take(s, &s->files[s->n]) < 0) {
        snprintf(err, errsz, "%s: out of memory", path);
        file_free(&s->files[s->n]);
        return RP_ENOMEM;
    }
    s->n++; /* (one that cannot be read: the replay says why) */
    return rc < 0 ? 1 : 0;
}

int rp_set_add(struct rp_set *s, const char *path, char *err, size_t errsz)
{
    return add(s, path, err, errsz, 1);
}

/* Whether name (a directory entry) is base.PID or base.PID.N. */
static int sibling_name(const char *name, const char *base, size_t blen)
{
    if (strncmp(name, base, blen) || name[blen] != '.')
        return 0;
    const char *p = name + blen + 1;
    for (int part = 0; part < 2; part++) {
        const char *d = p;
        while (*p >= '0' && *p <= '9')
            p++;
        if (p == d || *d == '0')
            return 0;
        if (!*p)
            return 1;
        if (*p++ != '.')
            return 0;
    }
    return 0;
}

/* The interval [start, end] of a file, its start being the end when unknown. */
static uint64_t start_of(const struct rp_set_file *f)
{
    return f->who.start_ns && f->who.start_ns <= f->end_ns ? f->who.start_ns : f->end_ns;
}

/* Why f is not of the run of n (a static string), or NULL when it is. */
static const char *not_of_run(const struct rp_set_file *n, const struct rp_set_file *f)
{
    if (n->who.run && f->who.run && !strcmp(n->who.run, f->who.run))
        return NULL;
    if (f->end_ns < start_of(n))
        return "another run's: it ended before this run began";
    if (start_of(f) > n->end_ns)
        return "another run's: it began after this run ended";
    return NULL;
}

/* Notes "PATH: why" among the files left out.  Returns 0 or RP_ENOMEM. */
static int skip(struct rp_set *s, const char *path, const char *why)
{
    char *m;
    if (rp_grow(&s->skipped, &s->cap_skipped, s->n_skipped + 1, sizeof(*s->skipped), 8) < 0 ||
        asprintf(&m, "%s%s%s", path, *path ? ": " : "", why) < 0)
        return RP_ENOMEM;
    s->skipped[s->n_skipped++] = m;
    return 0;
}

/* qsort order: by start, then by name.  Cannot fail. */
static int by_start(const void *a, const void *b)
{
    const struct rp_set_file *x = a, *y = b;
    uint64_t sx = start_of(x), sy = start_of(y);
    if (sx != sy)
        return sx < sy ? -1 : 1;
    return strcmp(x->who.file, y->who.file);
}

int rp_set_find(const char *name, struct rp_set *s, char *err, size_t errsz)
{
    char *dir = NULL, *path = NULL, e2[768];
    DIR *d = NULL;
    int rc;

    memset(s, 0, sizeof(*s));
    const char *slash = strrchr(name, '/');
    const char *base = slash ? slash + 1 : name;
    size_t blen = strlen(base);
    if (!(dir = slash ? strndup(name, (size_t)(slash - name) + 1) : strdup("./")))
        goto nomem;
    struct dirent *de;
    int siblings = 0; /* NAME's end is needed only to tell siblings apart */
    if ((d = opendir(dir))) {
        while (!siblings && (de = readdir(d)))
            siblings = sibling_name(de->d_name, base, blen);
        rewinddir(d);
    }
    if ((rc = add(s, name, err, errsz, siblings)) != 0) {
        rc = rc < 0 ? rc : 0; /* not a trace: no run to find */
        goto out;
    }
    if (!d || !siblings) /* (NAME was read, so its directory exists: unreadable) */
        goto out;
    while ((de = readdir(d))) {
        if (!sibling_name(de->d_name, base, blen))
            continue;
        free(path);
        if (asprintf(&path, "%s%s", slash ? dir : "", de->d_name) < 0) {
            path = NULL;
            goto nomem;
        }
        struct rp_set_file f;
        rc = rp_set_probe(path, &f, e2, sizeof(e2));
        const char *why = rc == RP_ENOMEM ? NULL : rc < 0 ? e2 : not_of_run(&s->files[0], &f);
        if (rc == RP_ENOMEM) {
            file_free(&f);
            goto nomem;
        }
        if (why) {
            rc = rc < 0 ? skip(s, "", why) : skip(s, path, why);
            file_free(&f);
            if (rc < 0)
                goto nomem;
            continue;
        }
        if (rp_grow(&s->files, &s->cap, s->n + 1, sizeof(*s->files), 8) < 0 ||
            ckpt_take(s, &f) < 0) {
            file_free(&f);
            goto nomem;
        }
        s->files[s->n++] = f;
    }
    if (s->n > 2)
        qsort(s->files + 1, s->n - 1, sizeof(*s->files), by_start);
    rc = 0;
    goto out;
nomem:
    snprintf(err, errsz, "%s: finding the files of its run: out of memory", name);
    rc = RP_ENOMEM;
out:
    if (d)
        closedir(d);
    free(dir);
    free(path);
    return rc;
}

// SPDX-License-Identifier: MIT
/*
 * reader.c - chunk-by-chunk reading of a trace with every length and
 * checksum verified before use.
 *
 * Invariant: a chunk handed out has a header whose own crc matched (so its
 * type and length are what the writer wrote), a length <= RP_CHUNK_MAX (so
 * the buffer it is read into is bounded), and a payload whose crc matched.
 * Nothing is allocated from a length that has not passed the header crc.
 * The one exception is asked for: a skimmed chunk (rp_reader.skim) is its
 * payload's first bytes, unchecked, for a pass that a later one checks.
 */
#include "reader.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/bytes.h"
#include "common/error.h"

static int rd_fail(struct rp_reader *r, int code, const char *fmt, ...)
{
    va_list ap;
    int n = snprintf(r->err, sizeof(r->err), "%s: ", r->path);
    if (n < 0 || n >= (int)sizeof(r->err))
        n = 0;
    va_start(ap, fmt);
    vsnprintf(r->err + n, sizeof(r->err) - (size_t)n, fmt, ap);
    va_end(ap);
    return code;
}

/* Opens one file of the trace (path: kept until the reader is closed) and
 * checks its header; r's buffer, counts and pieces stay.  Returns as
 * rp_reader_open. */
static int open_file(struct rp_reader *r, const char *path)
{
    uint8_t h[RP_FILE_HDR_SIZE];
    struct stat st = {0};

    r->path = path;
    r->off = 0;
    /* O_NONBLOCK: opening a FIFO must not wait for a writer; only regular
     * files are read (a FIFO, socket or device is refused, never waited on) */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return rd_fail(r, errno == ENOENT ? RP_ENOENT : RP_EIO, "cannot open: %s", strerror(errno));
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        int dir = S_ISDIR(st.st_mode), fifo = S_ISFIFO(st.st_mode);
        close(fd);
        return rd_fail(r, RP_EIO, "%s",
                       dir    ? "is a directory"
                       : fifo ? "is a FIFO, not a trace file (copy it to a file first)"
                              : "is not a regular file");
    }
    r->size = (uint64_t)st.st_size;
    if (fcntl(fd, F_SETFL, 0) != 0 || !(r->f = fdopen(fd, "rb"))) {
        close(fd);
        return rd_fail(r, RP_EIO, "cannot open: %s", strerror(errno));
    }
    size_t got = fread(h, 1, sizeof(h), r->f);
    int rc = 0;
    if (got == 0)
        rc = rd_fail(r, RP_ETRUNC, "empty file (offset 0): not a rankprof trace");
    else if (memcmp(h, RP_MAGIC, got < RP_MAGIC_LEN ? got : RP_MAGIC_LEN) != 0)
        rc = rd_fail(r, RP_EFORMAT, "not a rankprof trace (bad magic at offset 0)");
    else if (got < sizeof(h))
        rc = rd_fail(r, RP_ETRUNC, "truncated file header: %zu of %d bytes at offset 0", got,
                     RP_FILE_HDR_SIZE);
    if (rc)
        goto fail;
    r->major = rp_get16(h + 8);
    r->minor = rp_get16(h + 10);
    uint32_t hsz = rp_get32(h + 12);
    if (r->major != RP_VERSION_MAJOR) {
        rc = rd_fail(r, RP_EVERSION,
                     "trace format version %u.%u (offset 8), this rankprof reads %d.x", r->major,
                     r->minor, RP_VERSION_MAJOR);
        goto fail;
    }
    if (hsz < RP_FILE_HDR_SIZE || hsz > 4096) {
        rc = rd_fail(r, RP_EFORMAT, "bad file header size %u at offset 12", hsz);
        goto fail;
    }
    if (hsz > RP_FILE_HDR_SIZE && fseek(r->f, hsz, SEEK_SET) != 0) {
        rc = rd_fail(r, RP_ETRUNC, "truncated file header at offset %d", RP_FILE_HDR_SIZE);
        goto fail;
    }
    r->off = hsz;
    return 0;
fail:
    fclose(r->f);
    r->f = NULL;
    return rc;
}

static int piece_cmp(const void *a, const void *b)
{
    const char *x = *(char *const *)a, *y = *(char *const *)b;
    const char *px = strrchr(x, '.') + 5, *py = strrchr(y, '.') + 5; /* after ".part" */
    size_t lx = strlen(px), ly = strlen(py);
    return lx != ly ? (lx < ly ? -1 : 1) : strcmp(px, py);
}

/* The pieces of a rotated trace: path.partK beside path, K ascending, then
 * path.  None (npieces 0) when there is no path.partK.  Best effort: out of
 * memory or an unreadable directory reads path alone. */
static void find_pieces(struct rp_reader *r, const char *path)
{
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    size_t blen = strlen(base), dlen = slash ? (size_t)(slash - path) : 0;
    char dir[4096];
    if (!blen || dlen >= sizeof dir)
        return;
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (!dlen)
        snprintf(dir, sizeof dir, "/");
    else
        snprintf(dir, sizeof dir, "%.*s", (int)dlen, path);
    DIR *d = opendir(dir);
    if (!d)
        return;
    char **v = NULL;
    uint32_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        const char *nm = e->d_name, *k = nm + blen + 5;
        if (strncmp(nm, base, blen) || strncmp(nm + blen, ".part", 5) || !*k ||
            strspn(k, "0123456789") != strlen(k) || strlen(k) > 9)
            continue;
        if (n + 1 >= cap) {
            char **nv = realloc(v, (cap = cap ? cap * 2 : 8) * sizeof(*v));
            if (!nv)
                goto fail;
            v = nv;
        }
        size_t l = strlen(path) + strlen(nm + blen) + 1;
        if (!(v[n] = malloc(l)))
            goto fail;
        snprintf(v[n++], l, "%s%s", path, nm + blen);
    }
    closedir(d);
    if (!n) {
        free(v);
        return;
    }
    qsort(v, n, sizeof(*v), piece_cmp);
    r->first_part = (uint32_t)strtoul(v[0] + strlen(path) + 5, NULL, 10);
    if (!(v[n] = strdup(path))) {
        d = NULL;
        goto fail;
    }
    r->pieces = v;
    r->npieces = n + 1;
    return;
fail:
    if (d)
        closedir(d);
    for (uint32_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void pieces_free(struct rp_reader *r)
{
    for (uint32_t i = 0; i < r->npieces; i++)
        free(r->pieces[i]);
    free(r->pieces);
    r->pieces = NULL;
    r->npieces = 0;
}

int rp_reader_open(struct rp_reader *r, const char *path)
{
    memset(r, 0, sizeof(*r));
    r->path = path;
    find_pieces(r, path);
    int rc;
    do /* the oldest piece may be deleted meanwhile: the next */
        rc = open_file(r, r->npieces ? r->pieces[r->ipiece] : path);
    while (rc == RP_ENOENT && r->ipiece + 1 < r->npieces && ++r->ipiece);
    if (rc < 0) {
        char err[sizeof r->err];
        memcpy(err, r->err, sizeof err);
        pieces_free(r);
        memcpy(r->err, err, sizeof err);
        r->path = path;
    }
    return rc;
}

/* The end of one piece of a rotated trace: the next is opened.  Returns 1
 * (go on), 0 (it was the last) or the error of opening it. */
static int next_piece(struct rp_reader *r)
{
    while (r->ipiece + 1 < r->npieces) {
        fclose(r->f);
        r->f = NULL;
        r->ipiece++;
        int rc = open_file(r, r->pieces[r->ipiece]);
        if (rc == 0)
            return 1;
        if (rc != RP_ENOENT)
            return rc;
    }
    return 0;
}

int rp_info_next(const uint8_t **p, const uint8_t *end, const uint8_t **key, uint32_t *klen,
                 const uint8_t **val, uint32_t *vlen)
{
    const uint8_t *q = *p;
    if (q >= end)
        return 0;
    if ((size_t)(end - q) < 6)
        return -1;
    uint32_t k = rp_get16(q);
    if ((size_t)(end - q) < 6u + k)
        return -1;
    uint32_t n = rp_get32(q + 2 + k);
    if ((size_t)(end - q) - 6u - k < n) /* (no sum that wraps) */
        return -1;
    *key = q + 2;
    *klen = k;
    *val = q + 6 + k;
    *vlen = n;
    *p = q + 6 + k + n;
    return 1;
}

/* Checks the header h (got bytes of it) of the chunk at r->off: complete,
 * its checksum, its length within RP_CHUNK_MAX and within the file, and
 * r->buf large enough for the payload.  Returns 0 with its type and
 * length, or RP_ETRUNC, RP_ECRC, RP_EFORMAT, RP_ENOMEM with r->err set. */
static int chunk_header(struct rp_reader *r, const uint8_t *h, size_t got, uint32_t *type,
                        uint32_t *len)
{
    if (got < RP_CHUNK_HDR_SIZE)
        return rd_fail(r, RP_ETRUNC,
                       "truncated: the file ends inside a chunk header at offset %llu "
                       "(%zu of %d bytes)",
                       (unsigned long long)r->off, got, RP_CHUNK_HDR_SIZE);
    if (rp_crc32(0, h, 12) != rp_get32(h + 12))
        return rd_fail(r, RP_ECRC, "corrupted chunk header at offset %llu (checksum mismatch)",
                       (unsigned long long)r->off);
    *type = rp_get32(h);
    *len = rp_get32(h + 4);
    if (*len > RP_CHUNK_MAX)
        return rd_fail(r, RP_EFORMAT, "chunk at offset %llu claims %u bytes (limit %u)",
                       (unsigned long long)r->off, *len, RP_CHUNK_MAX);
    /* A claim past the end of the file is a truncation: say so before
     * allocating for it (the file may have grown since open: look again). */
    if (r->size && r->off + RP_CHUNK_HDR_SIZE + *len > r->size) {
        struct stat st;
        if (fstat(fileno(r->f), &st) == 0 && S_ISREG(st.st_mode))
            r->size = (uint64_t)st.st_size;
        uint64_t have =
            r->size > r->off + RP_CHUNK_HDR_SIZE ? r->size - r->off - RP_CHUNK_HDR_SIZE : 0;
        if (*len > have)
            return rd_fail(r, RP_ETRUNC,
                           "truncated: chunk at offset %llu needs %u bytes, the file has %llu",
                           (unsigned long long)r->off, *len, (unsigned long long)have);
    }
    size_t want = *len > RP_READER_SKIM ? *len : RP_READER_SKIM;
    if (want > r->cap) {
        size_t ncap = r->cap ? r->cap : 65536;
        while (ncap < want)
            ncap *= 2;
        uint8_t *nb = realloc(r->buf, ncap);
        if (!nb)
            return rd_fail(r, RP_ENOMEM, "out of memory reading chunk at offset %llu",
                           (unsigned long long)r->off);
        r->buf = nb;
        r->cap = ncap;
    }
    return 0;
}

/* pread of n bytes at off, whole unless the file ends: the bytes read, or
 * -1 with errno set. */
static ssize_t pread_all(int fd, uint8_t *b, size_t n, uint64_t off)
{
    size_t got = 0;
    while (got < n) {
        ssize_t k = pread(fd, b + got, n - got, (off_t)(off + got));
        if (k < 0 && errno == EINTR)
            continue;
        if (k < 0)
            return -1;
        if (k == 0)
            break;
        got += (size_t)k;
    }
    return (ssize_t)got;
}

/* Checks the payload checksum of the chunk whose header h was read at
 * `at` (its payload in r->buf): 0, 1 when it fails under force (skipped
 * and counted), or RP_ECRC. */
static int payload_check(struct rp_reader *r, const uint8_t *h, uint64_t at, uint32_t type,
                         uint32_t len)
{
    if (rp_crc32(0, r->buf, len) == rp_get32(h + 8))
        return 0;
    if (r->force) {
        if (!r->skipped++)
            r->skipped_off = at;
        return 1;
    }
    return rd_fail(r, RP_ECRC,
                   "corrupted chunk at offset %llu (type %u, %u bytes): checksum mismatch",
                   (unsigned long long)at, type, len);
}

/* rp_reader_next when r->skim is set: one pread per chunk of its header
 * and the RP_READER_SKIM bytes after it, a second for the rest of the
 * payload of a chunk not skimmed.  Returns as rp_reader_next. */
static int next_skimming(struct rp_reader *r, struct rp_chunk *c)
{
    uint8_t h[RP_CHUNK_HDR_SIZE + RP_READER_SKIM];
    for (;;) {
        ssize_t got = pread_all(fileno(r->f), h, sizeof(h), r->off);
        if (got < 0)
            return rd_fail(r, RP_EIO, "read error at offset %llu: %s", (unsigned long long)r->off,
                           strerror(errno));
        if (got == 0) {
            int more = r->npieces ? next_piece(r) : 0;
            if (more == 1)
                continue;
            return more;
        }
        uint32_t type, len;
        int rc = chunk_header(r, h, (size_t)got, &type, &len);
        if (rc < 0)
            return rc;
        uint64_t at = r->off;
        size_t have = (size_t)got - RP_CHUNK_HDR_SIZE;
        have = have < len ? have : len;
        memcpy(r->buf, h + RP_CHUNK_HDR_SIZE, have);
        r->off += RP_CHUNK_HDR_SIZE + (uint64_t)len;
        *c = (struct rp_chunk){.type = type, .len = len, .data = r->buf, .offset = at};
        if (type < 32 && (r->skim >> type & 1)) {
            c->len = (uint32_t)have;
            c->skimmed = have < len;
            return 1;
        }
        if (have < len) {
            ssize_t k =
                pread_all(fileno(r->f), r->buf + have, len - have, at + RP_CHUNK_HDR_SIZE + have);
            if (k < 0)
                return rd_fail(r, RP_EIO, "read error in chunk at offset %llu: %s",
                               (unsigned long long)at, strerror(errno));
            if ((size_t)k < len - have)
                return rd_fail(r, RP_ETRUNC,
                               "truncated: chunk at offset %llu needs %u bytes, the file has %zu",
                               (unsigned long long)at, len, have + (size_t)k);
        }
        if ((rc = payload_check(r, h, at, type, len)) < 0)
            return rc;
        if (rc == 0)
            return 1;
    }
}

int rp_reader_whole(struct rp_reader *r, struct rp_chunk *c)
{
    uint8_t h[RP_CHUNK_HDR_SIZE];
    uint64_t keep = r->off;
    r->off = c->offset; /* (chunk_header names it) */
    ssize_t got = pread_all(fileno(r->f), h, sizeof(h), c->offset);
    uint32_t type, len;
    int rc = got < 0 ? rd_fail(r, RP_EIO, "read error at offset %llu: %s",
                               (unsigned long long)c->offset, strerror(errno))
                     : chunk_header(r, h, (size_t)got, &type, &len);
    r->off = keep;
    if (rc < 0)
        return rc;
    got = pread_all(fileno(r->f), r->buf, len, c->offset + RP_CHUNK_HDR_SIZE);
    if (got < 0)
        return rd_fail(r, RP_EIO, "read error in chunk at offset %llu: %s",
                       (unsigned long long)c->offset, strerror(errno));
    if ((size_t)got < len)
        return rd_fail(r, RP_ETRUNC,
                       "truncated: chunk at offset %llu needs %u bytes, the file has %zd",
                       (unsigned long long)c->offset, len, got);
    int force = r->force;
    r->force = 0; /* (a chunk handed out is never skipped afterwards) */
    rc = payload_check(r, h, c->offset, type, len);
    r->force = force;
    if (rc < 0)
        return rc;
    *c = (struct rp_chunk){.type = type, .len = len, .data = r->buf, .offset = c->offset};
    return 0;
}

int rp_reader_next(struct rp_reader *r, struct rp_chunk *c)
{
    uint8_t h[RP_CHUNK_HDR_SIZE];

    if (!r->f)
        return r->err[0] ? RP_EIO : 0;
    if (r->skim)
        return next_skimming(r, c);
    for (;;) {
        size_t got = fread(h, 1, sizeof(h), r->f);
        if (got == 0 && feof(r->f)) {
            int more = r->npieces ? next_piece(r) : 0;
            if (more == 1)
                continue;
            return more;
        }
        if (got < sizeof(h) && ferror(r->f))
            return rd_fail(r, RP_EIO, "read error at offset %llu", (unsigned long long)r->off);
        uint32_t type, len;
        int rc = chunk_header(r, h, got, &type, &len);
        if (rc < 0)
            return rc;
        got = len ? fread(r->buf, 1, len, r->f) : 0;
        if (got < len) {
            if (ferror(r->f))
                return rd_fail(r, RP_EIO, "read error in chunk at offset %llu",
                               (unsigned long long)r->off);
            return rd_fail(r, RP_ETRUNC,
                           "truncated: chunk at offset %llu needs %u bytes, the file has %zu",
                           (unsigned long long)r->off, len, got);
        }
        uint64_t at = r->off;
        r->off += RP_CHUNK_HDR_SIZE + (uint64_t)len;
        if ((rc = payload_check(r, h, at, type, len)) < 0)
            return rc;
        if (rc == 0) {
            *c = (struct rp_chunk){.type = type, .len = len, .data = r->buf, .offset = at};
            return 1;
        }
    }
}

void rp_reader_close(struct rp_reader *r)
{
    if (r->f)
        fclose(r->f);
    pieces_free(r);
    free(r->buf);
    r->f = NULL;
    r->buf = NULL;
}

int rp_reader_resume(struct rp_reader *r)
{
    if (!r->f)
        return RP_EIO;
    clearerr(r->f);
    if (fseeko(r->f, (off_t)r->off, SEEK_SET) != 0)
        return rd_fail(r, RP_EIO, "cannot seek to offset %llu: %s", (unsigned long long)r->off,
                       strerror(errno));
    r->err[0] = 0;
    return 0;
}

int rp_evdec_init(struct rp_evdec *d, const uint8_t *payload, uint32_t len)
{
    if (len < 16)
        return RP_EFORMAT;
    uint32_t word = rp_get32(payload + 4);
    d->start = payload;
    d->tid = rp_get32(payload);
    d->count = word & RP_EV_COUNT_MASK;
    d->now = rp_get64(payload + 8);
    d->p = payload + 16;
    d->end = payload + len;
    d->n = 0;
    d->snap = NULL;
    d->snap_depth = 0;
    d->snap_counts = (word & RP_EV_SNAPSHOT) && (word & RP_EV_SNAPCOUNT);
    d->snap_pauses = (word & RP_EV_SNAPSHOT) && (word & RP_EV_SNAPPAUSE);
    d->compact = (word & RP_EV_COMPACT) != 0;
    d->pred = d->compact && (word & RP_EV_PREDICT);
    d->pr_x = d->pr_y = 0;
    if (d->pred)
        memset(d->pr_tab, 0, sizeof(d->pr_tab));
    if (word & RP_EV_SNAPSHOT) {
        uint64_t depth, id, z;
        const uint8_t *q = d->p;
        if (!(q = rp_get_varint(q, d->end, &depth)) || depth > RP_SNAP_MAX)
            return RP_EFORMAT;
        for (uint64_t i = 0; i < depth; i++) {
            if (!(q = rp_get_varint(q, d->end, &id)) || id == 0 || id > UINT32_MAX ||
                !(q = rp_get_varint(q, d->end, &z)) ||
                (d->snap_counts && !(q = rp_get_varint(q, d->end, &z))) ||
                (d->snap_pauses && !(q = rp_get_varint(q, d->end, &z))))
                return RP_EFORMAT;
        }
        d->snap = d->p;
        d->snap_depth = (uint32_t)depth;
        d->p = q;
    }
    return 0;
}

int rp_evdec_next(struct rp_evdec *d, struct rp_event *ev)
{
    uint64_t h, v;
    const uint8_t *p = d->p;

    if (p == d->end) /* the stream must hold exactly the events its header says */
        return d->n == d->count ? 0 : RP_EFORMAT;
    if (!(p = rp_get_varint(p, d->end, &h)))
        return RP_EFORMAT;
    ev->id = 0;
    ev->arg = ev->arg2 = ev->arg3 = 0;
    if (d->compact && (h & 1)) { /* format.h: EXIT, ENTER (predicted or id), or 0 and an op */
        d->now += h >> 1;
        ev->op = RP_OP_EXIT;
        d->pr_x += d->pred;
    } else if (d->compact) {
        uint32_t *slot = d->pred ? &d->pr_tab[rp_pred_slot(d->pr_x, d->pr_y)] : NULL;
        d->now += h >> (1 + d->pred);
        if (slot && !(h & 2)) { /* the predicted id */
            if (!(v = *slot))
                return RP_EFORMAT;
        } else if (!(p = rp_get_varint(p, d->end, &v)) || v > UINT32_MAX) {
            return RP_EFORMAT;
        }
        if (!v) { /* (an id 0: an op follows) */
            if (!(p = rp_get_varint(p, d->end, &v)) || v < RP_OP_EXIT_ID || v > RP_OP_LAST)
                return RP_EFORMAT;
            ev->op = (uint8_t)v;
        } else {
            ev->op = RP_OP_ENTER;
            ev->id = (uint32_t)v;
            if (slot) {
                *slot = (uint32_t)v;
                rp_pred_enter(&d->pr_x, &d->pr_y, (uint32_t)v);
            }
        }
    } else {
        ev->op = (uint8_t)(h & RP_OP_MASK);
        d->now += h >> RP_OP_BITS;
    }
    ev->ticks = d->now;
    if (ev->op == RP_OP_ENTER && ev->id) {
        d->p = p;
        d->n++;
        return 1;
    }
    switch (ev->op) {
    case RP_OP_ENTER:
    case RP_OP_EXIT_ID:
    case RP_OP_INSTANT:
    case RP_OP_COUNTER:
    case RP_OP_HOLD_BEGIN:
    case RP_OP_HOLD_END:
        if (!(p = rp_get_varint(p, d->end, &v)) || v == 0 || v > UINT32_MAX)
            return RP_EFORMAT;
        ev->id = (uint32_t)v;
        if (ev->op == RP_OP_INSTANT || ev->op == RP_OP_COUNTER || ev->op == RP_OP_HOLD_END)
            if (!(p = rp_get_varint(p, d->end, &ev->arg)))
                return RP_EFORMAT;
        if (ev->op == RP_OP_HOLD_END && /* the events inside and how (format.h) */
            (!(p = rp_get_varint(p, d->end, &ev->arg2)) ||
             !(p = rp_get_varint(p, d->end, &ev->arg3)) || (ev->arg3 >> 2) > UINT32_MAX))
            return RP_EFORMAT;
        break;
    case RP_OP_UNWIND: /* id 0 (the thread ends) is allowed; compact stream only */
        if (!d->compact || !(p = rp_get_varint(p, d->end, &v)) || v > UINT32_MAX)
            return RP_EFORMAT;
        ev->id = (uint32_t)v;
        break;
    case RP_OP_ARG:
    case RP_OP_LOST:
    case RP_OP_PAUSE: /* arg: the ticks of the thread's buffer switch (its wait, its encoding) */
        if (!(p = rp_get_varint(p, d->end, &ev->arg)))
            return RP_EFORMAT;
        break;
    case RP_OP_EXIT:
        break;
    default:
        return RP_EFORMAT;
    }
    d->p = p;
    d->n++;
    return 1;
}

int rp_skimmed_read(const struct rp_skimmed *k, uint8_t *buf)
{
    uint32_t len = rp_get32(k->hdr + 4);
    return pread_all(fileno(k->f), buf, len, k->at) == (ssize_t)len &&
                   rp_crc32(0, buf, len) == rp_get32(k->hdr + 8)
               ? 0
               : -1;
}

int rp_chunks_skim(FILE *f, uint64_t off, int (*fn)(void *ctx, const struct rp_skimmed *k),
                   void *ctx)
{
    uint8_t h[RP_CHUNK_HDR_SIZE + RP_SKIM_PEEK];
    ssize_t got;
    while ((got = pread_all(fileno(f), h, sizeof(h), off)) >= RP_CHUNK_HDR_SIZE) {
        uint32_t len = rp_get32(h + 4);
        if (rp_crc32(0, h, 12) != rp_get32(h + 12) || len > RP_CHUNK_MAX)
            break;
        uint32_t npay = (uint32_t)got - RP_CHUNK_HDR_SIZE;
        struct rp_skimmed k = {.hdr = h,
                               .pay = h + RP_CHUNK_HDR_SIZE,
                               .npay = npay < len ? npay : len,
                               .at = off + RP_CHUNK_HDR_SIZE,
                               .f = f};
        int rc = fn(ctx, &k);
        if (rc)
            return rc;
        off += RP_CHUNK_HDR_SIZE + (uint64_t)len;
    }
    return 0;
}

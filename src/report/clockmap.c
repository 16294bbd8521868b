// SPDX-License-Identifier: MIT
/*
 * clockmap.c - one time axis for the files of a run (clockmap.h): each
 * file's CLOCK chunks and librankprof-mpi's clock offsets, read with one
 * seek per chunk, and the mapping of its ticks through them.
 */
#define _GNU_SOURCE
#define _FILE_OFFSET_BITS 64
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"
#include "report/clockmap.h"
#include "trace/format.h"
#include "trace/reader.h"

/* Adds a (ticks, ns) sample to f.  RP_ENOMEM. */
static int sample_add(struct rp_clockmap_file *f, uint64_t tk, uint64_t ns)
{
    if (rp_grow(&f->tk, &f->cap, f->n + 1, sizeof(*f->tk), 8) < 0)
        return RP_ENOMEM;
    uint64_t *nns = realloc(f->ns, f->cap * sizeof(*f->ns));
    if (!nns)
        return RP_ENOMEM;
    f->ns = nns;
    double *s = realloc(f->slope, f->cap * sizeof(*f->slope));
    if (!s)
        return RP_ENOMEM;
    f->slope = s;
    f->tk[f->n] = tk;
    f->ns[f->n++] = ns;
    return 0;
}

/* One INFO chunk's keys of interest into f (and the file's offsets).
 * Cannot fail: a malformed value is ignored. */
static void read_info(struct rp_clockmap_file *f, const uint8_t *b, uint32_t len)
{
    const uint8_t *q = b, *key, *val;
    uint32_t k, n;
    char v[64];
    while (rp_info_next(&q, b + len, &key, &k, &val, &n) > 0) {
        if (n >= sizeof(v))
            continue;
        memcpy(v, val, n);
        v[n] = 0;
        if (k == 4 && !memcmp(key, "host", 4) && !f->host[0]) { /* (the first) */
            memcpy(f->host, v, n + 1);
        } else if (k == 4 && !memcmp(key, "rank", 4) && n) {
            char *end;
            unsigned long r = strtoul(v, &end, 10);
            if (!*end && r < UINT32_MAX)
                f->has_rank = 1, f->rank = (uint32_t)r;
        } else if (k == 17 &&
                   (!memcmp(key, "clock_offset_init", 17) ||
                    !memcmp(key, "clock_offset_fini", 17)) &&
                   n && f->n_off < 2) {
            char *end;
            long long at = strtoll(v, &end, 10), d = strtoll(end, &end, 10);
            if (*end == ' ')
                strtoll(end, &end, 10); /* the round trip: not used */
            if (!*end) {
                f->off_at[f->n_off] = at;
                f->off[f->n_off++] = d;
            }
        }
    }
}

struct skim {
    struct rp_clockmap *m;
    struct rp_clockmap_file *f;
};

/* rp_chunks_skim's callback for read_file: CLOCK, EVENTS' bases, INFO.
 * Returns 0 to go on, 1 at a short read, RP_ENOMEM. */
static int skim_chunk(void *ctx, const struct rp_skimmed *sk)
{
    struct skim *k = ctx;
    struct rp_clockmap *m = k->m;
    struct rp_clockmap_file *f = k->f;
    uint32_t type = rp_get32(sk->hdr), len = rp_get32(sk->hdr + 4);
    const uint8_t *c = sk->pay;

    if (type == RP_CH_CLOCK && len == 24) {
        if (sk->npay != 24)
            return 1;
        if (rp_crc32(0, c, 24) != rp_get32(sk->hdr + 8))
            return 0;
        if (!m->have_real) {
            m->real_minus_mono = (int64_t)(rp_get64(c + 16) - rp_get64(c + 8));
            m->have_real = 1;
        }
        return sample_add(f, rp_get64(c), rp_get64(c + 8));
    }
    if (type == RP_CH_EVENTS && len >= 16) {
        if (sk->npay < 16)
            return 1;
        uint64_t base = rp_get64(c + 8); /* (the payload's crc: not checked here) */
        if (base && (!f->first || base < f->first))
            f->first = base;
    } else if (type == RP_CH_INFO && len < (1u << 20)) {
        uint8_t *b = malloc(len ? len : 1);
        if (!b)
            return RP_ENOMEM;
        if (rp_skimmed_read(sk, b) == 0)
            read_info(f, b, len);
        free(b);
    }
    return 0;
}

/*
 * Reads the clock of the trace at path into f (rp_chunks_skim: chunk
 * headers checked, one read per chunk).  The first file's first CLOCK
 * chunk also gives the realtime - monotonic difference.  A damaged chunk ends it with
 * what was read.  Returns 0 or RP_ENOMEM.
 */
static int read_file(struct rp_clockmap *m, struct rp_clockmap_file *f, const char *path)
{
    struct rp_reader r;
    if (!path || rp_reader_open(&r, path) < 0)
        return 0;
    struct skim k = {m, f};
    int rc = rp_chunks_skim(r.f, r.off, skim_chunk, &k);
    rp_reader_close(&r);
    return rc < 0 ? rc : 0;
}

/* Sorts f's samples by ticks (insertion sort: a file has a few CLOCK
 * chunks) and computes the segments' slopes.  Cannot fail. */
static void samples_sort(struct rp_clockmap_file *f, double ns_per_tick)
{
    for (uint32_t i = 1; i < f->n; i++)
        for (uint32_t j = i; j > 0 && f->tk[j - 1] > f->tk[j]; j--) {
            uint64_t t = f->tk[j], n = f->ns[j];
            f->tk[j] = f->tk[j - 1], f->ns[j] = f->ns[j - 1];
            f->tk[j - 1] = t, f->ns[j - 1] = n;
        }
    for (uint32_t i = 0; i + 1 < f->n; i++) { /* (a segment under 10 ms: the profile's
                                                  rate, as the analyzer's, accum.c) */
        double dt = (double)f->tk[i + 1] - (double)f->tk[i];
        double dn = (double)f->ns[i + 1] - (double)f->ns[i];
        f->slope[i] = dt > 0 && dn >= 1e7 ? dn / dt : ns_per_tick;
    }
}

/* ticks of file f as monotonic ns (plus its offset).  Cannot fail. */
static double map_file(const struct rp_clockmap *m, const struct rp_clockmap_file *f, uint64_t t)
{
    double v;
    if (!f->n) {
        v = (double)t * m->ns_per_tick;
    } else if (f->n == 1) {
        v = (double)f->ns[0] + ((double)t - (double)f->tk[0]) * m->ns_per_tick;
    } else {
        uint32_t lo = rp_clockmap_seg(f, t);
        v = (double)f->ns[lo] + ((double)t - (double)f->tk[lo]) * f->slope[lo];
    }
    if (f->apply && f->n_off == 1) {
        v += (double)f->off[0];
    } else if (f->apply && f->n_off == 2) { /* linear between the two measurements */
        double span = (double)(f->off_at[1] - f->off_at[0]);
        double x = span > 0 ? (v - (double)f->off_at[0]) / span : 0;
        v += (double)f->off[0] + x * (double)(f->off[1] - f->off[0]);
    }
    return v;
}

double rp_clockmap_map(const struct rp_clockmap *m, uint64_t ticks)
{
    if (!m->n)
        return (double)ticks * m->ns_per_tick;
    return map_file(m, &m->f[m->cur], ticks);
}

void rp_clockmap_origin(struct rp_clockmap *m, uint32_t k, uint64_t ticks)
{
    if (k < m->n)
        m->f[k].first = ticks;
    m->origin = 0;
    int any = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        if (!m->f[i].first)
            continue;
        double v = map_file(m, &m->f[i], m->f[i].first);
        if (!any || v < m->origin)
            m->origin = v;
        any = 1;
    }
}

int rp_clockmap_open(struct rp_clockmap *m, const char *const *paths, uint32_t n,
                     double ns_per_tick, const char *offsets, char *err, size_t errsz)
{
    memset(m, 0, sizeof(*m));
    m->ns_per_tick = ns_per_tick > 0 ? ns_per_tick : 1;
    if (offsets && strcmp(offsets, "auto") && strcmp(offsets, "on") && strcmp(offsets, "off")) {
        snprintf(err, errsz, "-O offsets=%s: expected auto, on or off", offsets);
        return RP_EINVAL;
    }
    if (n && !(m->f = calloc(n, sizeof(*m->f))))
        return RP_ENOMEM;
    m->n = n;
    for (uint32_t i = 0; i < n; i++) {
        int rc = read_file(m, &m->f[i], paths[i]);
        if (rc < 0) {
            rp_clockmap_free(m);
            return rc;
        }
        samples_sort(&m->f[i], m->ns_per_tick);
    }
    /* auto: the files of another host than rank 0's (else the first file's):
     * one host's monotonic clock is one clock */
    const char *ref = NULL;
    for (uint32_t i = 0; i < n; i++)
        if (!ref || (m->f[i].has_rank && m->f[i].rank == 0))
            ref = m->f[i].host;
    for (uint32_t i = 0; i < n; i++)
        m->f[i].apply = offsets && !strcmp(offsets, "on")    ? 1
                        : offsets && !strcmp(offsets, "off") ? 0
                                                             : strcmp(m->f[i].host, ref) != 0;
    rp_clockmap_origin(m, n, 0);
    return 0;
}

int rp_clockmap_profile(struct rp_clockmap *m, const struct rp_profile *p, const char *input,
                        const char *offsets, char *err, size_t errsz)
{
    uint32_t n = p->n_procs ? p->n_procs : 1;
    const char **paths = calloc(n, sizeof(*paths));
    if (!paths)
        return RP_ENOMEM;
    for (uint32_t i = 0; i < n; i++)
        paths[i] = p->n_procs && p->procs[i].file ? p->procs[i].file : input;
    int rc = rp_clockmap_open(m, paths, n, p->ns_per_tick, offsets, err, errsz);
    free(paths);
    if (rc == 0 && !p->n_procs) /* one file: from its first event, as the replay found it */
        rp_clockmap_origin(m, 0, p->first_tick);
    for (uint32_t k = 0; rc == 0 && k < p->n_procs; k++) { /* a run: its threads' first events */
        uint64_t first = 0;
        for (uint32_t i = 0; i < p->n_threads; i++)
            if (p->threads[i].pid == p->procs[k].pid && p->threads[i].first &&
                (!first || p->threads[i].first < first))
                first = p->threads[i].first;
        if (!first && p->n_procs == 1) /* read without a replay (defs_only): no thread's */
            first = p->first_tick;
        if (first)
            m->f[k].first = first;
    }
    if (rc == 0 && p->n_procs)
        rp_clockmap_origin(m, m->n, 0);
    return rc;
}

void rp_clockmap_free(struct rp_clockmap *m)
{
    for (uint32_t i = 0; i < m->n; i++) {
        free(m->f[i].tk);
        free(m->f[i].ns);
        free(m->f[i].slope);
    }
    free(m->f);
    memset(m, 0, sizeof(*m));
}

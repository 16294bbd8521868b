// SPDX-License-Identifier: MIT
/*
 * profile.c - the profile data structure's own functions (profile.h):
 * warnings, display copies of trace text, node names, freeing.
 */
#include "profile.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/utf8.h"
#include "trace/format.h"

void rp_profile_warn(struct rp_profile *p, const char *fmt, ...)
{
    size_t n = strlen(p->warn);
    if (n + 2 >= sizeof(p->warn))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->warn + n, sizeof(p->warn) - n - 1, fmt, ap);
    va_end(ap);
    n = strlen(p->warn);
    p->warn[n] = '\n';
    p->warn[n + 1] = 0;
}

void rp_flag_hists_free(struct rp_flag_hists **fh)
{
    if (!*fh)
        return;
    rp_hist_free(&(*fh)->own);
    rp_hist_free(&(*fh)->ivl);
    free(*fh);
    *fh = NULL;
}

char *rp_text_dup(const void *s, size_t n, int keep_nul, size_t *outlen)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *b = s;
    char *d = malloc(4 * n + 1), *o = d; /* at most 4 bytes out per byte in */
    if (!d)
        return NULL;
    for (size_t i = 0; i < n;) {
        int k = rp_utf8_seq(b + i, n - i);
        /* a control byte, a C1 control (0xc2 0x80-0x9f) or invalid UTF-8 */
        int bad = k < 0 || (k == 1 && (b[i] < 0x20 || b[i] == 0x7f) && !(keep_nul && !b[i])) ||
                  (k == 2 && b[i] == 0xc2 && b[i + 1] < 0xa0);
        size_t m = k < 0 ? (size_t)-k : (size_t)k;
        for (size_t j = 0; j < m; j++) {
            if (bad) {
                *o++ = '\\';
                *o++ = 'x';
                *o++ = hex[b[i + j] >> 4];
                *o++ = hex[b[i + j] & 15];
            } else {
                *o++ = (char)b[i + j];
            }
        }
        i += m;
    }
    *o = 0;
    if (outlen)
        *outlen = (size_t)(o - d);
    char *r = realloc(d, (size_t)(o - d) + 1);
    return r ? r : d;
}

void rp_profile_free(struct rp_profile *p)
{
    for (uint32_t i = 0; i < p->n_nodes; i++) {
        free(p->nodes[i].name);
        free(p->nodes[i].file);
        free(p->nodes[i].module);
        rp_hist_free(&p->nodes[i].hist);
        rp_flag_hists_free(&p->nodes[i].fh);
    }
    for (uint32_t i = 0; i < p->n_threads; i++)
        free(p->threads[i].name);
    for (uint32_t i = 0; i < p->n_procs; i++) {
        free(p->procs[i].file);
        free(p->procs[i].run);
        free(p->procs[i].host);
        free(p->procs[i].map);
    }
    free(p->procs);
    free(p->nodes);
    free(p->edges);
    free(p->threads);
    free(p->program);
    free(p->argv);
    free(p->clock_name);
    free(p->mode);
    free(p->maps);
    memset(p, 0, sizeof(*p));
}

const char *rp_node_name(const struct rp_profile *p, const struct rp_node *n, char *buf,
                         size_t bufsz)
{
    (void)p;
    if (n->id == 0)
        return "<root>";
    int cond = n->kind == RP_KIND_WAIT && n->cls == RP_CLASS_LOCK; /* a condition wait */
    if (n->name && n->name[0]) {
        if (n->kind == RP_KIND_WAIT) {
            snprintf(buf, bufsz, "%s%s [wait]", cond ? "cond " : "", n->name);
            return buf;
        }
        if (n->kind == RP_KIND_LOCK_WAIT || n->kind == RP_KIND_LOCK_HOLD) {
            snprintf(buf, bufsz, "%s [%s]", n->name,
                     n->kind == RP_KIND_LOCK_WAIT ? "wait" : "hold");
            return buf;
        }
        return n->name;
    }
    switch (n->kind) {
    case RP_KIND_LOCK_WAIT:
        snprintf(buf, bufsz, "lock@0x%llx [wait]", (unsigned long long)n->key);
        break;
    case RP_KIND_LOCK_HOLD:
        snprintf(buf, bufsz, "lock@0x%llx [hold]", (unsigned long long)n->key);
        break;
    case RP_KIND_WAIT:
        snprintf(buf, bufsz, "%s@0x%llx [wait]", cond ? "cond" : "wait",
                 (unsigned long long)n->key);
        break;
    default:
        snprintf(buf, bufsz, "0x%llx", (unsigned long long)n->key);
    }
    return buf;
}

const char *rp_why_name(unsigned why)
{
    static const char *const name[RP_WHY_N] = {
        [RP_WHY_FULL] = "full",           [RP_WHY_STOPPED] = "stopped",
        [RP_WHY_FAILED] = "failed",       [RP_WHY_NOMEM] = "nomem",
        [RP_WHY_REENTERED] = "reentered", [RP_WHY_GONE] = "gone",
        [RP_WHY_UNENCODED] = "unencoded"};
    return why < RP_WHY_N ? name[why] : NULL;
}

// SPDX-License-Identifier: MIT
/*
 * symbols_maps.c - from the MAPS chunk (the text of /proc/PID/maps) to
 * modules reported to libdwfl: each executable file mapping turned into a
 * load bias from the file's PT_LOAD program headers.
 *
 * The maps text is untrusted: lines are parsed without assuming a NUL, bad
 * lines are skipped, only regular files are opened (read-only), and files
 * that are missing or not ELF leave their addresses unnamed.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "analyze/symbols_int.h"
#include "common/array.h"
#include "common/error.h"

/* --- parsing the maps text ------------------------------------------------ */

/* Parses hex digits at *p (< end) into *v; fails (false) on none or overflow. */
static bool parse_hex(const char **p, const char *end, uint64_t *v)
{
    const char *s = *p;
    uint64_t x = 0;
    int n = 0;

    while (s < end) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            break;
        if (x >> 60)
            return false;
        x = (x << 4) | (uint64_t)d;
        s++;
        n++;
    }
    if (n == 0)
        return false;
    *p = s;
    *v = x;
    return true;
}

/* Skips one run of non-blanks then the blanks after it; fails on no field. */
static bool skip_field(const char **p, const char *end)
{
    const char *s = *p;

    if (s >= end || *s == ' ' || *s == '\t')
        return false;
    while (s < end && *s != ' ' && *s != '\t')
        s++;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    *p = s;
    return true;
}

/*
 * Parses one maps line [s, end) into *m.  Returns false for lines that do
 * not describe an executable mapping of a file by absolute path.
 */
static bool parse_line(const char *s, const char *end, struct sym_map *m)
{
    static const char deleted[] = " (deleted)";
    const char *perms;

    if (memchr(s, '\0', (size_t)(end - s)) != NULL)
        return false;
    if (!parse_hex(&s, end, &m->start) || s >= end || *s++ != '-')
        return false;
    if (!parse_hex(&s, end, &m->end) || m->start >= m->end)
        return false;
    if (s >= end || (*s != ' ' && *s != '\t'))
        return false;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    perms = s;
    if (!skip_field(&s, end) || s - perms < 4 || perms[2] != 'x')
        return false;
    if (!parse_hex(&s, end, &m->offset) || s >= end || (*s != ' ' && *s != '\t'))
        return false;
    while (s < end && (*s == ' ' || *s == '\t'))
        s++;
    if (!skip_field(&s, end) || !skip_field(&s, end)) /* device, inode */
        return false;
    while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
        end--;
    if (s >= end || *s != '/' || (size_t)(end - s) >= SYM_MAX_PATH)
        return false;
    if ((size_t)(end - s) >= sizeof deleted - 1 &&
        memcmp(end - (sizeof deleted - 1), deleted, sizeof deleted - 1) == 0)
        return false;
    m->path = s;
    m->path_len = (size_t)(end - s);
    m->module = SYM_NO_MODULE;
    return true;
}

/* Collects the executable file mappings; fails with RP_ENOMEM only. */
static int parse_maps(const char *maps, size_t len, struct sym_map **out, size_t *nout)
{
    const char *p = maps, *end = maps ? maps + len : NULL;
    struct sym_map *v = NULL, m;
    size_t n = 0, cap = 0;
    int rc = 0;

    while (p != NULL && p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *eol = nl ? nl : end;

        if (parse_line(p, eol, &m)) {
            if (n == cap) {
                size_t ncap = cap ? 2 * cap : 64;
                struct sym_map *nv = realloc(v, ncap * sizeof *nv);
                if (nv == NULL) {
                    rc = RP_ENOMEM;
                    goto out;
                }
                v = nv;
                cap = ncap;
            }
            m.order = n;
            v[n++] = m;
        }
        p = nl ? nl + 1 : end;
    }
out:
    if (rc < 0) {
        free(v);
        v = NULL;
        n = 0;
    }
    *out = v;
    *nout = n;
    return rc;
}

static int cmp_path(const void *a, const void *b)
{
    const struct sym_map *x = a, *y = b;
    size_t n = x->path_len < y->path_len ? x->path_len : y->path_len;
    int c = memcmp(x->path, y->path, n);

    if (c != 0)
        return c;
    if (x->path_len != y->path_len)
        return x->path_len < y->path_len ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

static bool same_path(const struct sym_map *x, const struct sym_map *y)
{
    return x->path_len == y->path_len && memcmp(x->path, y->path, x->path_len) == 0;
}

static int cmp_start(const void *a, const void *b)
{
    const struct sym_map *x = a, *y = b;

    if (x->start != y->start)
        return x->start < y->start ? -1 : 1;
    return x->order < y->order ? -1 : x->order > y->order;
}

/* --- opening files ---------------------------------------------------------- */

/*
 * Opens path read-only if it is a regular file outside /proc, /sys and /dev
 * (pseudo-files there can block or have side effects on read); returns the
 * fd or -1.
 */
int rp_sym_open_regular(const char *path)
{
    struct stat st;
    int fd;

    if (strncmp(path, "/proc/", 6) == 0 || strncmp(path, "/sys/", 5) == 0 ||
        strncmp(path, "/dev/", 5) == 0)
        return -1;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return -1;
    }
    return fd;
}

/* The program headers of one ELF file, enough to compute load biases. */
struct sym_elf {
    GElf_Phdr *phdr;
    size_t nphdr;
    int type; /* ET_EXEC or ET_DYN */
};

/* Reads the PT_LOAD headers of fd; fails (-1) if it is not an ELF we can use. */
static int read_phdrs(int fd, struct sym_elf *e)
{
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    GElf_Ehdr eh;
    size_t n = 0;
    int rc = -1;

    e->phdr = NULL;
    e->nphdr = 0;
    if (elf == NULL || elf_kind(elf) != ELF_K_ELF || gelf_getehdr(elf, &eh) == NULL)
        goto out;
    if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
        goto out;
    if (elf_getphdrnum(elf, &n) != 0 || n == 0 || n > 65535)
        goto out;
    e->phdr = calloc(n, sizeof *e->phdr);
    if (e->phdr == NULL)
        goto out;
    for (size_t i = 0; i < n; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) != NULL && ph.p_type == PT_LOAD)
            e->phdr[e->nphdr++] = ph;
    }
    e->type = eh.e_type;
    rc = e->nphdr > 0 ? 0 : -1;
out:
    if (rc < 0) {
        free(e->phdr);
        e->phdr = NULL;
        e->nphdr = 0;
    }
    if (elf != NULL)
        elf_end(elf);
    return rc;
}

/*
 * Computes the load bias of mapping m of the file described by e: the
 * mapping's first byte is file offset m->offset, which belongs to the
 * PT_LOAD segment that covers it (preferring an executable one), and a
 * segment's bytes sit at p_vaddr - p_offset + file offset + bias.  Fails
 * (false) when no segment covers the offset, or for a non-PIE executable
 * mapped away from its link address.
 */
static bool map_bias(const struct sym_elf *e, const struct sym_map *m, uint64_t *bias)
{
    const GElf_Phdr *best = NULL;

    for (size_t i = 0; i < e->nphdr; i++) {
        const GElf_Phdr *ph = &e->phdr[i];
        uint64_t lo = ph->p_offset & ~(uint64_t)0xfff; /* 4 KiB: the smallest page */
        uint64_t hi;

        if (__builtin_add_overflow(ph->p_offset, ph->p_filesz, &hi))
            continue;
        if (m->offset < lo || m->offset >= hi)
            continue;
        if (best == NULL || ((ph->p_flags & PF_X) && !(best->p_flags & PF_X)) ||
            ((ph->p_flags & PF_X) == (best->p_flags & PF_X) && ph->p_offset > best->p_offset))
            best = ph;
    }
    if (best == NULL)
        return false;
    *bias = m->start - m->offset + best->p_offset - best->p_vaddr;
    if (e->type == ET_EXEC && *bias != 0)
        return false;
    return true;
}

/*
 * Reports every distinct load bias of the file maps[0..n) (all of one path)
 * to dwfl, and points the mappings at their modules.  Files that cannot be
 * used are remembered without a Dwfl_Module.  Fails with RP_ENOMEM only.
 */
static int report_file(struct rp_symbolizer *s, struct sym_map *maps, size_t n)
{
    struct sym_elf e = {NULL, 0, 0};
    char *path = NULL;
    int fd = -1, rc = 0;
    size_t first = s->nmodules;

    path = strndup(maps[0].path, maps[0].path_len);
    if (path == NULL)
        return RP_ENOMEM;
    fd = rp_sym_open_regular(path);
    if (fd >= 0 && read_phdrs(fd, &e) != 0) {
        close(fd);
        fd = -1;
    }
    for (size_t i = 0; i < n; i++) {
        uint64_t bias = 0;
        size_t k;
        struct sym_module *sm;

        if (fd >= 0 && !map_bias(&e, &maps[i], &bias))
            continue;
        for (k = first; k < s->nmodules; k++)
            if (s->modules[k].bias == bias)
                break;
        if (k < s->nmodules) {
            maps[i].module = (uint32_t)k;
            continue;
        }
        if (s->nmodules >= SYM_MAX_MODULES)
            continue;
        sm = &s->modules[s->nmodules];
        sm->path = strdup(path);
        if (sm->path == NULL) {
            rc = RP_ENOMEM;
            goto out;
        }
        sm->bias = bias;
        sm->mod = NULL;
        if (fd >= 0) {
            int mfd = dup(fd);
            if (mfd >= 0) {
                sm->mod = dwfl_report_elf(s->dwfl, path, path, mfd, bias, true);
                if (sm->mod == NULL)
                    close(mfd);
            }
        }
        maps[i].module = (uint32_t)s->nmodules++;
    }
out:
    if (fd >= 0)
        close(fd);
    free(e.phdr);
    free(path);
    return rc;
}

struct live_set {
    Dwfl_Module **v;
    size_t n, cap;
};

/* dwfl_getmodules callback: collects module pointers; aborts on ENOMEM. */
static int collect_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
                          void *arg)
{
    struct live_set *ls = arg;

    (void)userdata;
    (void)name;
    (void)start;
    if (ls->n == ls->cap)
        return DWARF_CB_ABORT;
    ls->v[ls->n++] = mod;
    return DWARF_CB_OK;
}

static int cmp_ptr(const void *a, const void *b)
{
    uintptr_t x = (uintptr_t) * (Dwfl_Module *const *)a, y = (uintptr_t) * (Dwfl_Module *const *)b;

    return x < y ? -1 : x > y;
}

/*
 * Forgets Dwfl_Module pointers that dwfl no longer holds after
 * dwfl_report_end (a report that overlapped an earlier one makes dwfl drop
 * both).  Fails with RP_ENOMEM only.
 */
static int prune_modules(struct rp_symbolizer *s)
{
    struct live_set ls = {NULL, 0, s->nmodules};

    ls.v = calloc(ls.cap ? ls.cap : 1, sizeof *ls.v);
    if (ls.v == NULL)
        return RP_ENOMEM;
    if (dwfl_getmodules(s->dwfl, collect_module, &ls, 0) != 0)
        ls.n = 0; /* more modules than reported: trust none */
    if (ls.n > 1)
        qsort(ls.v, ls.n, sizeof *ls.v, cmp_ptr);
    for (size_t k = 0; k < s->nmodules; k++) {
        Dwfl_Module *m = s->modules[k].mod;
        if (m != NULL && bsearch(&m, ls.v, ls.n, sizeof *ls.v, cmp_ptr) == NULL)
            s->modules[k].mod = NULL;
    }
    free(ls.v);
    return 0;
}

int rp_sym_report(struct rp_symbolizer *s, const char *maps, size_t maps_len)
{
    if (parse_maps(maps, maps_len, &s->maps, &s->nmaps) < 0)
        return RP_ENOMEM;
    s->modules = calloc(SYM_MAX_MODULES, sizeof *s->modules);
    if (s->modules == NULL)
        return RP_ENOMEM;
    dwfl_report_begin(s->dwfl);
    if (s->nmaps > 1)
        qsort(s->maps, s->nmaps, sizeof *s->maps, cmp_path);
    for (size_t i = 0, j; i < s->nmaps; i = j) {
        for (j = i + 1; j < s->nmaps && same_path(&s->maps[i], &s->maps[j]); j++)
            ;
        if (report_file(s, &s->maps[i], j - i) < 0)
            return RP_ENOMEM;
    }
    if (dwfl_report_end(s->dwfl, NULL, NULL) != 0)
        return RP_ENOMEM;
    if (s->nmaps > 1)
        qsort(s->maps, s->nmaps, sizeof *s->maps, cmp_start);

    /* Keep only the modules dwfl still has (it drops overlapping reports). */
    return prune_modules(s);
}

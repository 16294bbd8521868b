// SPDX-License-Identifier: MIT
/*
 * symbols.c - names code addresses of a recorded process (symbols.h).
 *
 * The MAPS chunk (text of /proc/PID/maps) says which file is mapped where.
 * Each executable file mapping is turned into a load bias from the file's
 * PT_LOAD program headers and reported to libdwfl, which then gives the
 * symbol containing an address (symtab or dynsym, of the file or of its
 * separate debug file) and its source line (DWARF).  Results are cached per
 * address.
 *
 * The maps text is untrusted: lines are parsed without assuming a NUL, bad
 * lines are skipped, only regular files are opened (read-only), and files
 * that are missing or not ELF leave their addresses unnamed.  Separate debug
 * files are found by build-id or .gnu_debuglink under the usual local paths;
 * debuginfod is never asked (no network).  A symbolizer is not thread-safe.
 */
#define _GNU_SOURCE
#include "analyze/symbols.h"
#include "analyze/profile.h"
#include "common/array.h"
#include "common/bytes.h"
#include "common/error.h"

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

#define SYM_MAX_PATH    4096 /* longer paths in maps are skipped */
#define SYM_MAX_MODULES 512  /* ELF files reported at most (each holds an fd) */
#define SYM_NO_MODULE   UINT32_MAX

typedef char *(*sym_demangle_fn)(const char *, char *, size_t *, int *);

/* One executable file mapping from the maps text. */
struct sym_map {
    uint64_t start, end, offset;
    const char *path; /* into the maps text, not NUL-terminated */
    size_t path_len;
    size_t order;    /* line number: keeps the sort stable */
    uint32_t module; /* index into modules, SYM_NO_MODULE if none */
};

/* The address range of one DWARF compile unit (run-time addresses). */
struct sym_cu {
    uint64_t lo, hi;
    Dwarf_Off die; /* offset of the CU DIE */
};

/* One symbol that can name code (run-time address). */
struct sym_fn {
    uint64_t addr, size;
    const char *name; /* in the ELF string table, lives as long as the dwfl */
    unsigned rank;    /* higher wins among symbols at one address */
};

/* One mapped file at one load bias. */
struct sym_module {
    char *path;
    Dwfl_Module *mod; /* NULL: the file is missing or not a usable ELF */
    uint64_t bias;
    struct sym_cu *cus; /* CU ranges, sorted; built on first need */
    size_t ncus;
    bool cus_done;
    struct sym_fn *fns; /* one best symbol per address, sorted; built on first need */
    size_t nfns;
    bool fns_done;
};

/* A cached answer for one address. */
struct sym_entry {
    uint64_t addr;
    char *name;
    char *file;
    uint32_t line;
    uint32_t module; /* SYM_NO_MODULE: unmapped */
    bool used;
};

struct rp_symbolizer {
    Dwfl *dwfl;
    struct sym_map *maps; /* sorted by start */
    size_t nmaps;
    struct sym_module *modules;
    size_t nmodules;
    struct sym_entry *cache; /* open addressing, capacity a power of two */
    size_t cache_cap, cache_used;
    int demangle_state; /* 0 not tried, 1 available, -1 unavailable */
    void *cxx_handle;
    sym_demangle_fn demangle;
};

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
static int open_regular(const char *path)
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
    fd = open_regular(path);
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

/* --- finding separate debug files ------------------------------------------ */

/* Returns the zlib CRC-32 of the whole file fd, or false on a read error. */
static bool file_crc(int fd, uint32_t *crc)
{
    unsigned char buf[65536];
    uint32_t c = 0;
    off_t pos = 0;

    for (;;) {
        ssize_t r = pread(fd, buf, sizeof buf, pos);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return false;
        if (r == 0)
            break;
        c = rp_crc32(c, buf, (size_t)r);
        pos += r;
    }
    *crc = c;
    return true;
}

/*
 * find_debuginfo callback: by build-id under /usr/lib/debug/.build-id, else
 * by .gnu_debuglink next to the file, in its .debug/ and under
 * /usr/lib/debug (checked by CRC).  Never uses debuginfod.  Returns an fd
 * or -1 when nothing is found.
 */
static int sym_find_debuginfo(Dwfl_Module *mod, void **userdata, const char *modname,
                              Dwarf_Addr base, const char *file_name, const char *debuglink_file,
                              GElf_Word debuglink_crc, char **debuginfo_file_name)
{
    static const char *const fmt[] = {"%.*s/%s", "%.*s/.debug/%s", "/usr/lib/debug%.*s/%s"};
    const char *slash;
    char path[SYM_MAX_PATH];
    int fd;

    fd = dwfl_build_id_find_debuginfo(mod, userdata, modname, base, file_name, debuglink_file,
                                      debuglink_crc, debuginfo_file_name);
    if (fd >= 0)
        return fd;
    if (file_name == NULL || debuglink_file == NULL || debuglink_crc == 0 ||
        strchr(debuglink_file, '/') != NULL || (slash = strrchr(file_name, '/')) == NULL)
        return -1;
    for (size_t i = 0; i < sizeof fmt / sizeof fmt[0]; i++) {
        int len = snprintf(path, sizeof path, fmt[i], (int)(slash - file_name), file_name,
                           debuglink_file);
        uint32_t crc;

        if (len < 0 || (size_t)len >= sizeof path || strcmp(path, file_name) == 0)
            continue;
        fd = open_regular(path);
        if (fd < 0)
            continue;
        if (file_crc(fd, &crc) && crc == debuglink_crc) {
            *debuginfo_file_name = strdup(path);
            return fd;
        }
        close(fd);
    }
    return -1;
}

/*
 * find_elf callback: never needed, every module is reported with its open
 * file; refuses (-1) so that no other lookup (such as debuginfod) happens.
 */
static int sym_find_elf(Dwfl_Module *mod, void **userdata, const char *modname, Dwarf_Addr base,
                        char **file_name, Elf **elfp)
{
    (void)mod;
    (void)userdata;
    (void)modname;
    (void)base;
    (void)file_name;
    *elfp = NULL;
    return -1;
}

static const Dwfl_Callbacks sym_callbacks = {
    .find_elf = sym_find_elf,
    .find_debuginfo = sym_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

/* --- the symbolizer --------------------------------------------------------- */

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

/*
 * Parses the maps text and reports every usable file to dwfl.  Returns NULL
 * only when out of memory; unusable lines and files are skipped.
 */
struct rp_symbolizer *rp_sym_open(const char *maps, size_t maps_len)
{
    struct rp_symbolizer *s = calloc(1, sizeof *s);
    bool ok = false;

    if (s == NULL)
        return NULL;
    elf_version(EV_CURRENT);
    s->dwfl = dwfl_begin(&sym_callbacks);
    if (s->dwfl == NULL)
        goto out;
    if (parse_maps(maps, maps_len, &s->maps, &s->nmaps) < 0)
        goto out;
    s->modules = calloc(SYM_MAX_MODULES, sizeof *s->modules);
    if (s->modules == NULL)
        goto out;
    dwfl_report_begin(s->dwfl);
    if (s->nmaps > 1)
        qsort(s->maps, s->nmaps, sizeof *s->maps, cmp_path);
    for (size_t i = 0, j; i < s->nmaps; i = j) {
        for (j = i + 1; j < s->nmaps && same_path(&s->maps[i], &s->maps[j]); j++)
            ;
        if (report_file(s, &s->maps[i], j - i) < 0)
            goto out;
    }
    if (dwfl_report_end(s->dwfl, NULL, NULL) != 0)
        goto out;
    if (s->nmaps > 1)
        qsort(s->maps, s->nmaps, sizeof *s->maps, cmp_start);

    /* Keep only the modules dwfl still has (it drops overlapping reports). */
    if (prune_modules(s) < 0)
        goto out;
    ok = true;
out:
    if (!ok) {
        rp_sym_close(s);
        return NULL;
    }
    return s;
}

/* Frees everything, closing the files; cannot fail (NULL is ignored). */
void rp_sym_close(struct rp_symbolizer *s)
{
    if (s == NULL)
        return;
    for (size_t i = 0; i < s->cache_cap; i++) {
        free(s->cache[i].name);
        free(s->cache[i].file);
    }
    free(s->cache);
    for (size_t k = 0; k < s->nmodules; k++) {
        free(s->modules[k].path);
        free(s->modules[k].cus);
        free(s->modules[k].fns);
    }
    free(s->modules);
    free(s->maps);
    if (s->dwfl != NULL)
        dwfl_end(s->dwfl);
    if (s->cxx_handle != NULL)
        dlclose(s->cxx_handle);
    free(s);
}

/* Frees the strings of *sym and zeroes it; cannot fail (NULL is ignored). */
void rp_sym_clear(struct rp_symbol *sym)
{
    if (sym == NULL)
        return;
    free(sym->name);
    free(sym->file);
    free(sym->module);
    memset(sym, 0, sizeof *sym);
}

/* Returns the module index of the executable mapping holding addr, or SYM_NO_MODULE. */
static uint32_t find_module(const struct rp_symbolizer *s, uint64_t addr)
{
    size_t lo = 0, hi = s->nmaps;

    /* the last mapping starting at or below addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (s->maps[mid].start <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0 || addr >= s->maps[lo - 1].end)
        return SYM_NO_MODULE;
    return s->maps[lo - 1].module;
}

/*
 * Returns __cxa_demangle if this process has it or can load libstdc++ at
 * run time (nothing links it in); NULL when it is not available.
 */
static sym_demangle_fn get_demangler(struct rp_symbolizer *s)
{
    void *f;

    if (s->demangle_state != 0)
        return s->demangle;
    s->demangle_state = -1;
    f = dlsym(RTLD_DEFAULT, "__cxa_demangle");
    if (f == NULL) {
        s->cxx_handle = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        if (s->cxx_handle != NULL)
            f = dlsym(s->cxx_handle, "__cxa_demangle");
    }
    if (f != NULL) {
        /* POSIX guarantees object and function pointers convert */
        memcpy(&s->demangle, &f, sizeof f);
        s->demangle_state = 1;
    }
    return s->demangle;
}

/*
 * Copies a symbol name without its symbol version (fopen@@GLIBC_2.2.5 in a
 * debug file's symtab), demangling C++ names when possible; NULL on ENOMEM.
 */
static char *name_dup(struct rp_symbolizer *s, const char *name)
{
    const char *at = strchr(name, '@');

    if (at != NULL && at != name)
        return strndup(name, (size_t)(at - name));
    if (name[0] == '_' && name[1] == 'Z') {
        sym_demangle_fn dm = get_demangler(s);
        int status = -1;
        char *d = dm ? dm(name, NULL, NULL, &status) : NULL;
        if (d != NULL && status == 0)
            return d;
        free(d);
    }
    return strdup(name);
}

static int cmp_fn(const void *a, const void *b)
{
    const struct sym_fn *x = a, *y = b;

    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return x->rank > y->rank ? -1 : x->rank < y->rank; /* best first */
}

/*
 * Builds the sorted symbol table of sm from its symtab (or dynsym, or that
 * of its debug file), keeping per address the symbol dwfl would prefer:
 * global over weak over local, functions over untyped labels, sized over
 * sizeless; then names without leading underscores.  dwfl_module_addrinfo searches linearly; this
 * makes lookups O(log n).  Fails with RP_ENOMEM; a module without symbols gets an empty table.
 */
static int build_fns(struct sym_module *sm)
{
    int n = dwfl_module_getsymtab(sm->mod);
    size_t k = 0;

    sm->fns_done = true;
    if (n <= 1)
        return 0;
    sm->fns = calloc((size_t)n, sizeof *sm->fns);
    if (sm->fns == NULL)
        return RP_ENOMEM;
    for (int i = 1; i < n; i++) {
        GElf_Sym sym;
        GElf_Addr addr;
        GElf_Word shndx;
        Elf *elf;
        Dwarf_Addr bias;
        const char *name = dwfl_module_getsym_info(sm->mod, i, &sym, &addr, &shndx, &elf, &bias);
        unsigned type, bind, rank;

        if (name == NULL || name[0] == '\0' || sym.st_shndx == SHN_UNDEF || addr == 0)
            continue;
        type = GELF_ST_TYPE(sym.st_info);
        bind = GELF_ST_BIND(sym.st_info);
        if (type != STT_FUNC && type != STT_GNU_IFUNC && type != STT_NOTYPE)
            continue;
        rank = bind == STB_GLOBAL || bind == STB_GNU_UNIQUE ? 3 : bind == STB_WEAK ? 2 : 1;
        rank = rank * 4 + (type != STT_NOTYPE ? 2 : 0) + (sym.st_size != 0 ? 1 : 0);
        /* then the public spelling: malloc before __libc_malloc */
        rank = rank * 4 + (name[0] != '_') + (name[0] != '_' || name[1] != '_') * 2;
        sm->fns[k].addr = addr;
        sm->fns[k].size = sym.st_size;
        sm->fns[k].name = name;
        sm->fns[k].rank = rank;
        k++;
    }
    if (k > 1)
        qsort(sm->fns, k, sizeof *sm->fns, cmp_fn);
    sm->nfns = 0;
    for (size_t i = 0; i < k; i++) /* keep the first (best) per address */
        if (sm->nfns == 0 || sm->fns[sm->nfns - 1].addr != sm->fns[i].addr)
            sm->fns[sm->nfns++] = sm->fns[i];
    return 0;
}

/*
 * Returns the name of the symbol containing addr: the nearest sized symbol
 * below it that covers it, else a sizeless label right below it; NULL when
 * none (or RP_ENOMEM through *rc).
 */
static const char *name_by_fn(struct sym_module *sm, uint64_t addr, int *rc)
{
    size_t lo = 0, hi;

    *rc = 0;
    if (!sm->fns_done && (*rc = build_fns(sm)) < 0)
        return NULL;
    hi = sm->nfns;
    while (lo < hi) { /* first symbol above addr */
        size_t mid = lo + (hi - lo) / 2;
        if (sm->fns[mid].addr <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    /* a short look back finds a function around nested labels */
    for (size_t i = lo, tries = 0; i > 0 && tries < 64; i--, tries++) {
        const struct sym_fn *f = &sm->fns[i - 1];
        if (f->size != 0 && addr - f->addr < f->size)
            return f->name;
    }
    return sm->fns[lo - 1].size == 0 ? sm->fns[lo - 1].name : NULL;
}

static int cmp_cu(const void *a, const void *b)
{
    const struct sym_cu *x = a, *y = b;

    if (x->lo != y->lo)
        return x->lo < y->lo ? -1 : 1;
    return x->hi < y->hi ? -1 : x->hi > y->hi;
}

/*
 * Builds the sorted CU range table of sm from the CU DIEs (DW_AT_low_pc,
 * high_pc, ranges).  Fails with RP_ENOMEM; a module without DWARF gets an
 * empty table.
 */
static int build_cus(struct sym_module *sm)
{
    Dwarf_Addr bias;
    Dwarf *dw = dwfl_module_getdwarf(sm->mod, &bias);
    Dwarf_CU *cu = NULL;
    Dwarf_Die cudie;
    Dwarf_Half version;
    uint8_t unit_type;
    size_t cap = 0;

    sm->cus_done = true;
    if (dw == NULL)
        return 0;
    while (dwarf_get_units(dw, cu, &cu, &version, &unit_type, &cudie, NULL) == 0) {
        Dwarf_Addr base, lo, hi;
        ptrdiff_t off = 0;
        while ((off = dwarf_ranges(&cudie, off, &base, &lo, &hi)) > 0) {
            if (lo >= hi)
                continue;
            if (sm->ncus == cap) {
                size_t ncap = cap ? 2 * cap : 64;
                struct sym_cu *v = realloc(sm->cus, ncap * sizeof *v);
                if (v == NULL)
                    return RP_ENOMEM;
                sm->cus = v;
                cap = ncap;
            }
            sm->cus[sm->ncus].lo = lo + bias;
            sm->cus[sm->ncus].hi = hi + bias;
            sm->cus[sm->ncus].die = dwarf_dieoffset(&cudie);
            sm->ncus++;
        }
    }
    if (sm->ncus > 1)
        qsort(sm->cus, sm->ncus, sizeof *sm->cus, cmp_cu);
    return 0;
}

/*
 * Finds the line row for addr from the CU ranges, for files without
 * .debug_aranges (clang does not emit them; libdwfl needs them).  Returns
 * NULL when nothing covers addr, or RP_ENOMEM through *rc.
 */
static Dwarf_Line *line_by_cu(struct sym_module *sm, uint64_t addr, int *rc)
{
    Dwarf_Addr bias;
    Dwarf *dw;
    size_t lo = 0, hi;

    *rc = 0;
    if (!sm->cus_done && (*rc = build_cus(sm)) < 0)
        return NULL;
    hi = sm->ncus;
    while (lo < hi) { /* first range starting above addr */
        size_t mid = lo + (hi - lo) / 2;
        if (sm->cus[mid].lo <= addr)
            lo = mid + 1;
        else
            hi = mid;
    }
    dw = dwfl_module_getdwarf(sm->mod, &bias);
    /* ranges may nest or overlap: look back over the few that could hold addr */
    for (size_t i = lo, tries = 0; i > 0 && dw != NULL && tries < 16; i--, tries++) {
        const struct sym_cu *c = &sm->cus[i - 1];
        Dwarf_Die die;
        Dwarf_Line *line;
        if (addr >= c->hi || dwarf_offdie(dw, c->die, &die) == NULL)
            continue;
        line = dwarf_getsrc_die(&die, addr - bias);
        if (line != NULL)
            return line;
    }
    return NULL;
}

/*
 * Names a data address (a lock in a static variable): outside every
 * executable mapping, but inside the address range libdwfl gave the module
 * (all its PT_LOAD segments), whose symbol table has the variable.  Leaves
 * e unnamed when there is no such object symbol; fails with RP_ENOMEM only.
 */
static int resolve_data(struct rp_symbolizer *s, uint64_t addr, struct sym_entry *e)
{
    GElf_Sym sym;
    GElf_Off off = 0;
    Dwfl_Module *mod = dwfl_addrmodule(s->dwfl, addr);
    const char *name = mod ? dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL) : NULL;
    char buf[512];

    if (name == NULL || name[0] == '\0' || GELF_ST_TYPE(sym.st_info) != STT_OBJECT)
        return 0;
    if (off) { /* a member: "bus+0x40" */
        snprintf(buf, sizeof(buf), "%s+0x%llx", name, (unsigned long long)off);
        name = buf;
    }
    e->name = name_dup(s, name);
    return e->name ? 0 : RP_ENOMEM;
}

/* Computes the answer for addr into *e; fails with RP_ENOMEM only. */
static int resolve(struct rp_symbolizer *s, uint64_t addr, struct sym_entry *e)
{
    Dwfl_Module *mod;
    const char *name, *src;
    Dwarf_Addr laddr;
    Dwfl_Line *line;
    int lineno = 0, col, rc;

    memset(e, 0, sizeof *e);
    e->addr = addr;
    e->module = find_module(s, addr);
    if (e->module == SYM_NO_MODULE)
        return resolve_data(s, addr, e);
    if ((mod = s->modules[e->module].mod) == NULL)
        return 0;
    name = name_by_fn(&s->modules[e->module], addr, &rc);
    if (rc < 0)
        return rc;
    if (name != NULL) {
        e->name = name_dup(s, name);
        if (e->name == NULL)
            return RP_ENOMEM;
    }
    line = dwfl_module_getsrc(mod, addr);
    src = line ? dwfl_lineinfo(line, &laddr, &lineno, &col, NULL, NULL) : NULL;
    if (src == NULL) {
        Dwarf_Line *dl = line_by_cu(&s->modules[e->module], addr, &rc);
        if (rc < 0) {
            free(e->name);
            e->name = NULL;
            return rc;
        }
        if (dl != NULL && (src = dwarf_linesrc(dl, NULL, NULL)) != NULL &&
            dwarf_lineno(dl, &lineno) != 0)
            lineno = 0;
    }
    if (src != NULL && src[0] != '\0') {
        e->file = strdup(src);
        if (e->file == NULL) {
            free(e->name);
            e->name = NULL;
            return RP_ENOMEM;
        }
        e->line = lineno > 0 ? (uint32_t)lineno : 0;
    }
    return 0;
}

/* Doubles the cache table (or creates it); fails with RP_ENOMEM. */
static int cache_grow(struct rp_symbolizer *s)
{
    size_t ncap = s->cache_cap ? 2 * s->cache_cap : 1024;
    struct sym_entry *nc = calloc(ncap, sizeof *nc);

    if (nc == NULL)
        return RP_ENOMEM;
    for (size_t i = 0; i < s->cache_cap; i++) {
        size_t h;
        if (!s->cache[i].used)
            continue;
        for (h = (size_t)rp_mix64(s->cache[i].addr) & (ncap - 1); nc[h].used;
             h = (h + 1) & (ncap - 1))
            ;
        nc[h] = s->cache[i];
    }
    free(s->cache);
    s->cache = nc;
    s->cache_cap = ncap;
    return 0;
}

/* Fills *out with copies of e; fails with RP_ENOMEM (then *out is all NULL). */
static int copy_out(const struct rp_symbolizer *s, const struct sym_entry *e, struct rp_symbol *out)
{
    memset(out, 0, sizeof *out);
    /* names from a binary are text to show: no control bytes (rp_text_dup) */
    if (e->name != NULL && (out->name = rp_text_dup(e->name, strlen(e->name), 0, NULL)) == NULL)
        goto fail;
    if (e->file != NULL && (out->file = rp_text_dup(e->file, strlen(e->file), 0, NULL)) == NULL)
        goto fail;
    out->line = e->line;
    if (e->module != SYM_NO_MODULE &&
        (out->module = rp_text_dup(s->modules[e->module].path, strlen(s->modules[e->module].path),
                                   0, NULL)) == NULL)
        goto fail;
    return 0;
fail:
    rp_sym_clear(out);
    return RP_ENOMEM;
}

/*
 * Answers from the cache, or resolves and caches.  Fails with RP_ENOMEM, or
 * RP_EINVAL when s or out is NULL; *out is all NULL on failure.
 */
int rp_sym_lookup(struct rp_symbolizer *s, uint64_t addr, struct rp_symbol *out)
{
    struct sym_entry e;
    size_t h;
    int rc;

    if (out == NULL)
        return RP_EINVAL;
    memset(out, 0, sizeof *out);
    if (s == NULL)
        return RP_EINVAL;
    if (s->cache_cap != 0) {
        for (h = (size_t)rp_mix64(addr) & (s->cache_cap - 1); s->cache[h].used;
             h = (h + 1) & (s->cache_cap - 1))
            if (s->cache[h].addr == addr)
                return copy_out(s, &s->cache[h], out);
    }
    if (2 * (s->cache_used + 1) > s->cache_cap) {
        rc = cache_grow(s);
        if (rc < 0)
            return rc;
    }
    rc = resolve(s, addr, &e);
    if (rc < 0)
        return rc;
    for (h = (size_t)rp_mix64(addr) & (s->cache_cap - 1); s->cache[h].used;
         h = (h + 1) & (s->cache_cap - 1))
        ;
    e.used = true;
    s->cache[h] = e;
    s->cache_used++;
    return copy_out(s, &s->cache[h], out);
}

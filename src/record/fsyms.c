// SPDX-License-Identifier: MIT
/*
 * fsyms.c - names of code addresses for the recorder, from the loaded
 * modules' own ELF symbol tables (fsyms.h).
 *
 * dl_iterate_phdr lists the modules; each file (the main program through
 * /proc/self/exe) is mapped read-only and its .symtab (else .dynsym)
 * function symbols are sorted by address, so a lookup is a search of the
 * module holding the address, then a binary search.  The mappings stay:
 * symbol names point into them.  A module list of RP_FMODS_MAX entries,
 * filled once per module: a miss rescans dl_iterate_phdr, which is how
 * modules dlopen'ed later are found.
 *
 * Invariant: every function here that changes fm runs with funcs.c's
 * table lock held.  A module's entry is filled before fm.n counts it
 * (release) and never changes after, and the array never moves: so
 * rp_fsyms_find_loaded reads without the lock (acquire on fm.n), and
 * threads landing at once never wait for each other's lookups.
 */
#define _GNU_SOURCE
#include "fsyms.h"

#include <elf.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "funcs.h"

#define RP_FMODS_MAX 256

struct fmod {
    uint64_t lo, hi; /* the module's loaded address range */
    uint64_t bias;
    struct fsym *syms; /* sorted by addr, NULL if none */
    size_t nsyms;
};

static struct {
    struct fmod mods[RP_FMODS_MAX];
    unsigned n;
    int loaded, warned;
} fm;

static int fsym_cmp(const void *a, const void *b)
{
    const struct fsym *x = a, *y = b;
    if (x->addr != y->addr)
        return x->addr < y->addr ? -1 : 1;
    return (x->size == 0) - (y->size == 0); /* a sized symbol first */
}

/*
 * The function symbols of the ELF file at path, loaded at bias: a malloc'd
 * array sorted by address (names point into the file's mapping, which stays
 * mapped), *n its length.  NULL with *n = 0 when the file cannot be read,
 * is not a 64-bit ELF of this machine's byte order, or has no symbols; every
 * offset and size is checked against the file.
 */
static struct fsym *elf_syms(const char *path, uint64_t bias, size_t *n)
{
    *n = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    struct stat sb;
    uint8_t *m = MAP_FAILED;
    if (fstat(fd, &sb) == 0 && sb.st_size >= (off_t)sizeof(Elf64_Ehdr))
        m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED)
        return NULL;
    size_t len = (size_t)sb.st_size;
    const Elf64_Ehdr *eh = (const void *)m;
    const Elf64_Shdr *sh = NULL;
    struct fsym *out = NULL;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shoff > len ||
        (len - eh->e_shoff) / sizeof(Elf64_Shdr) < eh->e_shnum)
        goto done;
    sh = (const void *)(m + eh->e_shoff);
    for (int pass = 0; pass < 2 && !out; pass++) {
        uint32_t want = pass == 0 ? SHT_SYMTAB : SHT_DYNSYM;
        for (unsigned i = 0; i < eh->e_shnum && !out; i++) {
            const Elf64_Shdr *s = &sh[i];
            if (s->sh_type != want || s->sh_link >= eh->e_shnum || s->sh_offset > len ||
                s->sh_size > len - s->sh_offset || s->sh_entsize != sizeof(Elf64_Sym))
                continue;
            const Elf64_Shdr *st = &sh[s->sh_link];
            if (st->sh_offset > len || st->sh_size > len - st->sh_offset || !st->sh_size)
                continue;
            const Elf64_Sym *sym = (const void *)(m + s->sh_offset);
            const char *str = (const char *)m + st->sh_offset;
            size_t nsym = s->sh_size / sizeof(Elf64_Sym), k = 0;
            if (str[st->sh_size - 1] != 0 || !(out = malloc((nsym ? nsym : 1) * sizeof(*out))))
                continue;
            for (size_t j = 0; j < nsym; j++) {
                unsigned type = ELF64_ST_TYPE(sym[j].st_info);
                if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym[j].st_shndx == SHN_UNDEF ||
                    !sym[j].st_value || sym[j].st_name >= st->sh_size)
                    continue;
                out[k++] =
                    (struct fsym){bias + sym[j].st_value, sym[j].st_size, str + sym[j].st_name};
            }
            if (!k) {
                free(out);
                out = NULL;
                continue;
            }
            qsort(out, k, sizeof(*out), fsym_cmp);
            *n = k;
        }
    }
done:
    if (!out)
        munmap(m, len);
    return out;
}

/* dl_iterate_phdr callback: adds the modules not known yet (lock held). */
static int mod_add(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    (void)arg;
    uint64_t lo = UINT64_MAX, hi = 0;
    for (unsigned i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD)
            continue;
        uint64_t a = info->dlpi_addr + ph->p_vaddr;
        lo = a < lo ? a : lo;
        hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
    }
    if (lo >= hi)
        return 0;
    for (unsigned i = 0; i < fm.n; i++)
        if (fm.mods[i].lo == lo && fm.mods[i].hi == hi && fm.mods[i].bias == info->dlpi_addr)
            return 0;
    if (fm.n == RP_FMODS_MAX) {
        if (!fm.warned++)
            rp_funcs_warn("rankprof: too many modules; functions of later ones have no names\n");
        return 0;
    }
    const char *path = info->dlpi_name;
    if (!path || !*path)
        path = "/proc/self/exe"; /* the main program */
    struct fmod *m = &fm.mods[fm.n];
    *m = (struct fmod){lo, hi, info->dlpi_addr, NULL, 0};
    if (path[0] == '/') /* not the vdso */
        m->syms = elf_syms(path, info->dlpi_addr, &m->nsyms);
    __atomic_store_n(&fm.n, fm.n + 1, __ATOMIC_RELEASE); /* (filled: readers may see it) */
    return 0;
}

/* The function symbol holding address a in the modules scanned so far, or
 * NULL; *held: a scanned module holds a.  Without the lock (the invariant
 * above); reads memory only: async-signal-safe. */
RP_HIDDEN const struct fsym *rp_fsyms_find_loaded(uint64_t a, int *held)
{
    *held = 0;
    unsigned n = __atomic_load_n(&fm.n, __ATOMIC_ACQUIRE);
    for (unsigned i = 0; i < n; i++) {
        const struct fmod *m = &fm.mods[i];
        if (a < m->lo || a >= m->hi)
            continue;
        *held = 1;
        size_t lo = 0, hi = m->nsyms; /* the last symbol at or below a */
        while (lo < hi) {
            size_t mid = lo + (hi - lo) / 2;
            if (m->syms[mid].addr <= a)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo && a - m->syms[lo - 1].addr < (m->syms[lo - 1].size ? m->syms[lo - 1].size : 1))
            return &m->syms[lo - 1];
        return NULL;
    }
    return NULL;
}

/* The function symbol holding address a, or NULL (lock held).  Rescans
 * the loaded modules once when no known module holds a. */
RP_HIDDEN const struct fsym *rp_fsyms_find(uint64_t a)
{
    int held;
    const struct fsym *s = rp_fsyms_find_loaded(a, &held);
    if (!held) {
        dl_iterate_phdr(mod_add, NULL);
        s = rp_fsyms_find_loaded(a, &held);
    }
    return s;
}

/* The symbol holding address a, or NULL (lock held). */
RP_HIDDEN const char *rp_fsyms_name(uint64_t a)
{
    const struct fsym *s = rp_fsyms_find(a);
    return s ? s->name : NULL;
}

/* Loads the modules' symbols the first time (lock held). */
RP_HIDDEN void rp_fsyms_load(void)
{
    if (!fm.loaded) {
        fm.loaded = 1;
        dl_iterate_phdr(mod_add, NULL);
    }
}

RP_HIDDEN int rp_fsyms_count(const char *pattern)
{
    int n = 0;
    for (unsigned i = 0; i < fm.n; i++)
        for (size_t j = 0; j < fm.mods[i].nsyms; j++)
            n += fnmatch(pattern, fm.mods[i].syms[j].name, 0) == 0;
    return n;
}

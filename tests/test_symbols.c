// SPDX-License-Identifier: MIT
/*
 * test_symbols.c - tests the symbolizer (src/analyze/symbols.c) on this very
 * process: names of its own global and static functions with file:line (when
 * built with -g), libc and libdw functions (shared libraries), a mapping
 * moved to another address, holes, a C++-mangled name, and garbage maps text
 * that must give a working symbolizer answering NULL, never a crash.
 */
#define _GNU_SOURCE
#include "analyze/symbols.h"
#include "common/error.h"

#include <dlfcn.h>
#include <elfutils/libdwfl.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "check.h"

/* CHECK with a printf message (check.h's counts in the same `failures`) */
#undef CHECK
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            fprintf(stderr, "%s:%d: FAIL %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* --- functions to be named (different bodies: no identical-code folding) --- */

volatile int sink;

#ifdef __clang__
#define NOINLINE __attribute__((noinline, used))
#else
#define NOINLINE __attribute__((noinline, noclone, used))
#endif

enum { ALPHA_FIRST = __LINE__ };
NOINLINE int rp_test_alpha(int x)
{
    sink += x * 3;
    return sink ^ 0x55;
}
enum { ALPHA_LAST = __LINE__ };

enum { BETA_FIRST = __LINE__ };
NOINLINE static long rp_test_beta(long a, long b)
{
    long r = 0;
    for (long i = 0; i < a; i++)
        r += (i ^ b) + sink;
    return r;
}
enum { BETA_LAST = __LINE__ };

/* A function whose symbol is a C++ mangled name: cxx_like(int). */
int cxx_like(int v) __asm__("_Z8cxx_likei");
NOINLINE int cxx_like(int v)
{
    sink -= v;
    return sink + 7;
}

/* Taking the addresses keeps the functions and their symbols. */
int (*volatile alpha_ptr)(int) = rp_test_alpha;
long (*volatile beta_ptr)(long, long) = rp_test_beta;
int (*volatile cxx_ptr)(int) = cxx_like;

/* --- helpers ---------------------------------------------------------------- */

/* Reads a whole /proc file (size unknown up front) into a malloc'd buffer. */
static char *read_proc(const char *path, size_t *len)
{
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    int fd = open(path, O_RDONLY);

    if (buf == NULL || fd < 0) {
        perror(path);
        exit(2);
    }
    for (;;) {
        ssize_t r;
        if (n == cap) {
            cap *= 2;
            buf = realloc(buf, cap);
            if (buf == NULL)
                exit(2);
        }
        r = read(fd, buf + n, cap - n);
        if (r < 0) {
            perror("read");
            exit(2);
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    *len = n;
    return buf;
}

/* Copies text into a buffer of exactly its length (no NUL): ASan sees over-reads. */
static char *exact_copy(const char *text, size_t len)
{
    char *b = malloc(len ? len : 1);

    if (b == NULL)
        exit(2);
    memcpy(b, text, len);
    return b;
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;

    return s ? s + 1 : p;
}

static uint64_t fn_addr(void *p)
{
    return (uint64_t)(uintptr_t)p;
}

/*
 * True when this executable carries DWARF line info (it was built with -g);
 * *is_pie says whether it is position-independent (ET_DYN).
 */
static int self_has_debug_line(int *is_pie)
{
    int fd = open("/proc/self/exe", O_RDONLY), found = 0;
    Elf *elf;
    Elf_Scn *scn = NULL;
    size_t shstrndx;

    if (fd < 0)
        return 0;
    elf_version(EV_CURRENT);
    elf = elf_begin(fd, ELF_C_READ, NULL);
    if (elf != NULL) {
        GElf_Ehdr eh;
        *is_pie = gelf_getehdr(elf, &eh) != NULL && eh.e_type == ET_DYN;
    }
    if (elf != NULL && elf_getshdrstrndx(elf, &shstrndx) == 0) {
        while ((scn = elf_nextscn(elf, scn)) != NULL) {
            GElf_Shdr sh;
            const char *name;
            if (gelf_getshdr(scn, &sh) == NULL)
                continue;
            name = elf_strptr(elf, shstrndx, sh.sh_name);
            if (name != NULL && strcmp(name, ".debug_line") == 0)
                found = 1;
        }
    }
    if (elf != NULL)
        elf_end(elf);
    close(fd);
    return found;
}

/* Looks addr up, expecting success; the caller clears *out. */
static void lookup(struct rp_symbolizer *s, uint64_t addr, struct rp_symbol *out)
{
    int rc = rp_sym_lookup(s, addr, out);

    CHECK(rc == 0, "rp_sym_lookup(%#llx) = %d", (unsigned long long)addr, rc);
}

/* Expects addr to be named want, in this executable, with file:line in [first, last]. */
static void expect_own(struct rp_symbolizer *s, uint64_t addr, const char *want, int first,
                       int last, int with_lines, const char *self_path)
{
    struct rp_symbol sym;

    lookup(s, addr, &sym);
    CHECK(sym.name && strcmp(sym.name, want) == 0, "name %s, want %s",
          sym.name ? sym.name : "(null)", want);
    CHECK(sym.module && strcmp(sym.module, self_path) == 0, "module %s, want %s",
          sym.module ? sym.module : "(null)", self_path);
    if (with_lines) {
        CHECK(sym.file && strcmp(base_name(sym.file), "test_symbols.c") == 0, "file %s",
              sym.file ? sym.file : "(null)");
        CHECK(sym.line > (uint32_t)first && sym.line < (uint32_t)last, "line %u not in (%d, %d)",
              sym.line, first, last);
    }
    rp_sym_clear(&sym);
}

/* Expects addr to have no name (and no file). */
static void expect_unnamed(struct rp_symbolizer *s, uint64_t addr, const char *what)
{
    struct rp_symbol sym;

    lookup(s, addr, &sym);
    CHECK(sym.name == NULL && sym.file == NULL, "%s: %#llx named %s (%s)", what,
          (unsigned long long)addr, sym.name, sym.file ? sym.file : "");
    rp_sym_clear(&sym);
}

/* Returns the line of maps (malloc'd, with newline) mapping addr, or exits. */
static char *line_of(const char *maps, size_t len, uint64_t addr)
{
    const char *p = maps, *end = maps + len;

    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        unsigned long long lo, hi;
        if (nl == NULL)
            nl = end;
        if (sscanf(p, "%llx-%llx", &lo, &hi) == 2 && addr >= lo && addr < hi) {
            char *l = strndup(p, (size_t)(nl - p) + 1);
            l[nl - p] = '\n';
            return l;
        }
        p = nl + 1;
    }
    fprintf(stderr, "no mapping for %#llx\n", (unsigned long long)addr);
    exit(2);
}

/* --- tests ------------------------------------------------------------------ */

static void test_self(const char *maps, size_t len, const char *self_path, int with_lines)
{
    struct rp_symbolizer *s = rp_sym_open(maps, len);
    struct rp_symbol sym;
    void *libc, *libdw, *qs, *db;
    void *hole;

    CHECK(s != NULL, "rp_sym_open");
    if (s == NULL)
        return;
    expect_own(s, fn_addr((void *)alpha_ptr), "rp_test_alpha", ALPHA_FIRST, ALPHA_LAST, with_lines,
               self_path);
    expect_own(s, fn_addr((void *)beta_ptr), "rp_test_beta", BETA_FIRST, BETA_LAST, with_lines,
               self_path);
    /* an address inside the function names the function containing it */
    expect_own(s, fn_addr((void *)alpha_ptr) + 1, "rp_test_alpha", ALPHA_FIRST, ALPHA_LAST, 0,
               self_path);
    /* repeated lookups (cached) give the same answer */
    for (int i = 0; i < 3; i++)
        expect_own(s, fn_addr((void *)beta_ptr), "rp_test_beta", BETA_FIRST, BETA_LAST, with_lines,
                   self_path);

    /* demangled when libstdc++ can be loaded, else the mangled name */
    lookup(s, fn_addr((void *)cxx_ptr), &sym);
    {
        void *h = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
        const char *want = h ? "cxx_like(int)" : "_Z8cxx_likei";
        CHECK(sym.name && strcmp(sym.name, want) == 0, "name %s, want %s",
              sym.name ? sym.name : "(null)", want);
        if (h)
            dlclose(h);
    }
    rp_sym_clear(&sym);

    /* libc (a shared library): qsort as libc defines it, not an interposer */
    libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
    qs = libc ? dlsym(libc, "qsort") : NULL;
    CHECK(qs != NULL, "dlsym qsort");
    if (qs != NULL) {
        lookup(s, fn_addr(qs), &sym);
        CHECK(sym.name && strcmp(sym.name, "qsort") == 0, "libc qsort named %s",
              sym.name ? sym.name : "(null)");
        CHECK(sym.module && strstr(base_name(sym.module), "libc") != NULL, "qsort module %s",
              sym.module ? sym.module : "(null)");
        rp_sym_clear(&sym);
    }
    /* malloc and __libc_malloc share an address: the public spelling wins */
    qs = libc ? dlsym(libc, "malloc") : NULL;
    CHECK(qs != NULL, "dlsym malloc");
    if (qs != NULL) {
        lookup(s, fn_addr(qs), &sym);
        CHECK(sym.name && strcmp(sym.name, "malloc") == 0, "libc malloc named %s",
              sym.name ? sym.name : "(null)");
        rp_sym_clear(&sym);
    }
    if (libc)
        dlclose(libc);

    /* libdw (another shared library) */
    libdw = dlopen("libdw.so.1", RTLD_LAZY | RTLD_NOLOAD);
    db = libdw ? dlsym(libdw, "dwfl_begin") : NULL;
    CHECK(db != NULL, "dlsym dwfl_begin");
    if (db != NULL) {
        lookup(s, fn_addr(db), &sym);
        CHECK(sym.name && strcmp(sym.name, "dwfl_begin") == 0, "dwfl_begin named %s",
              sym.name ? sym.name : "(null)");
        CHECK(sym.module && strstr(base_name(sym.module), "libdw") != NULL, "module %s",
              sym.module ? sym.module : "(null)");
        rp_sym_clear(&sym);
    }
    if (libdw)
        dlclose(libdw);

    /* holes: an anonymous mapping, address 0, the top of the address space */
    hole = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    CHECK(hole != MAP_FAILED, "mmap");
    if (hole != MAP_FAILED) {
        lookup(s, fn_addr(hole) + 16, &sym);
        CHECK(sym.name == NULL && sym.file == NULL && sym.module == NULL, "hole named %s in %s",
              sym.name ? sym.name : "(null)", sym.module ? sym.module : "(null)");
        rp_sym_clear(&sym);
        munmap(hole, 4096);
    }
    expect_unnamed(s, 0, "address 0");
    expect_unnamed(s, UINT64_MAX, "address max");
    rp_sym_close(s);
}

/*
 * The executable's code mapping moved by a constant (as if recorded in a run
 * with other ASLR): names follow the load bias from the maps text.  The line
 * is the last one and has no newline.  A non-PIE executable cannot move: its
 * moved mapping is inconsistent and stays unnamed.
 */
static void test_moved(const char *maps, size_t len, const char *self_path, int with_lines,
                       int is_pie)
{
    const uint64_t shift = 0x100000000ull;
    uint64_t a = fn_addr((void *)alpha_ptr);
    char *line = line_of(maps, len, a);
    unsigned long long lo, hi, off;
    char text[8192], *buf;
    int n, pos = 0;
    struct rp_symbolizer *s;

    CHECK(sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off, &pos) == 3 && pos > 0,
          "parse %s", line);
    line[strcspn(line, "\n")] = '\0';
    n = snprintf(text, sizeof text, "%llx-%llx r-xp %08llx 00:00 0 %s", lo + shift, hi + shift, off,
                 line + pos);
    buf = exact_copy(text, (size_t)n);
    s = rp_sym_open(buf, (size_t)n);
    CHECK(s != NULL, "rp_sym_open moved");
    if (s != NULL && is_pie) {
        expect_own(s, a + shift, "rp_test_alpha", ALPHA_FIRST, ALPHA_LAST, with_lines, self_path);
        expect_own(s, fn_addr((void *)beta_ptr) + shift, "rp_test_beta", BETA_FIRST, BETA_LAST,
                   with_lines, self_path);
    } else if (s != NULL) {
        expect_unnamed(s, a + shift, "moved non-PIE");
    }
    if (s != NULL) {
        expect_unnamed(s, a, "the unmoved address");
        rp_sym_close(s);
    }
    free(buf);
    free(line);
}

/* Opens a symbolizer on garbage and checks it answers NULL for every probe. */
static void expect_garbage(const char *text, size_t len, const char *what)
{
    static const uint64_t probes[] = {
        0, 0x1000, 0x400000, 0x7f0000001000ull, 0xffffffffull, UINT64_MAX - 1};
    char *buf = exact_copy(text, len);
    struct rp_symbolizer *s = rp_sym_open(buf, len);

    CHECK(s != NULL, "%s: rp_sym_open", what);
    if (s != NULL) {
        for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
            expect_unnamed(s, probes[i], what);
        expect_unnamed(s, fn_addr((void *)alpha_ptr), what);
        rp_sym_close(s);
    }
    free(buf);
}

/*
 * Garbage maps texts; "%s" in them stands for this executable's path, so
 * that a line that gets past the parser would name real code.
 */
static void test_garbage(const char *self_path)
{
    static const char *const texts[] = {
        "",
        "\n\n\n",
        "ffffffffffffffffffffffff-1 r-xp 00000000 00:00 0 %s\n",
        "1000-2000 r-xp 1000000000000000000000000 08:01 1 %s\n",
        "2000-1000 r-xp 00000000 08:01 1 %s\n",
        "1000-2000 r-xp 00000000 08:01 1\n",
        "1000-2000 r-xp 00000000 08:01 1 \n",
        "1000-2000 r-xp\n",
        "1000-\n",
        "-2000 r-xp 00000000 08:01 1 %s\n",
        "1000-2000 r-xp 00000000 08:01 1 [vdso]\n",
        "1000-2000 r-xp 00000000 08:01 1 %s (deleted)\n",
        "1000-2000 r-xp 00000000 00:05 5 /dev/zero\n",
        "1000-2000 r-xp 00000000 00:05 5 /dev/null\n",
        "1000-2000 r-xp 00000000 08:01 2 /\n",
        "1000-2000 r-xp 00000000 08:01 2 /usr/lib\n",
        "1000-2000 r-xp 00000000 08:01 2 /etc/hostname\n",
        "1000-2000 r-xp 00000000 08:01 2 /nonexistent/libgone.so\n",
        "400000-401000 r-xp 7fffffffffff0000 08:01 2 %s\n",
        "400000-401000 r-xp 000",
        "7f0000000000-7f0000002000 r-xp 00001000 08:01 2 /proc/self/ex",
    };
    static const char with_nul[] = "1000-2000 r-xp 00000000 08:01 2 %s\0 hidden\n";
    char big[20000];
    unsigned seed = 12345;

    struct rp_symbolizer *empty = rp_sym_open(NULL, 0);

    CHECK(empty != NULL, "rp_sym_open(NULL, 0)");
    if (empty != NULL) {
        expect_unnamed(empty, fn_addr((void *)alpha_ptr), "empty maps");
        rp_sym_close(empty);
    }
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        int len = snprintf(big, sizeof big, texts[i], self_path);
        expect_garbage(big, (size_t)len, big);
    }
    {
        /* the line holds a NUL inside the path: snprintf cannot build it */
        size_t pre = strlen(with_nul), plen = strlen(self_path);
        size_t tail = sizeof with_nul - 1 - pre - 1; /* after the NUL */
        memcpy(big, with_nul, pre - 2);              /* up to "%s" */
        memcpy(big + pre - 2, self_path, plen);
        memcpy(big + pre - 2 + plen, with_nul + pre, tail + 1);
        expect_garbage(big, pre - 2 + plen + tail + 1, "embedded NUL");
    }
    /* a very long line */
    memset(big, 'a', sizeof big);
    memcpy(big, "1000-2000 r-xp 00000000 08:01 2 /", 34);
    expect_garbage(big, sizeof big, "long path");
    /* random bytes, and random bytes from the maps alphabet */
    for (int round = 0; round < 200; round++) {
        static const char alpha[] = "0123456789abcdef- rwxp:/\n";
        size_t len = (size_t)(rand_r(&seed) % sizeof big);
        for (size_t i = 0; i < len; i++)
            big[i] =
                round & 1 ? (char)rand_r(&seed) : alpha[(size_t)rand_r(&seed) % (sizeof alpha - 1)];
        expect_garbage(big, len, round & 1 ? "random bytes" : "random maps alphabet");
    }
}

/*
 * The executable's real code line, spoiled: marked deleted, cut by a NUL,
 * without the execute bit, with a wrong offset.  None may name the code.
 */
static void test_spoiled(const char *maps, size_t len)
{
    uint64_t a = fn_addr((void *)alpha_ptr);
    char *line = line_of(maps, len, a);
    size_t n = strcspn(line, "\n");
    char buf[8192];
    unsigned long long lo, hi, off;
    int pos = 0, m;

    line[n] = '\0';
    m = snprintf(buf, sizeof buf, "%s (deleted)\n", line);
    expect_garbage(buf, (size_t)m, "deleted");
    m = snprintf(buf, sizeof buf, "%s\n", line);
    buf[n] = '\0'; /* the NUL where the newline was, then the next line */
    m += snprintf(buf + m, sizeof buf - (size_t)m, "00-10 r-xp 0 0:0 0 /x\n");
    expect_garbage(buf, (size_t)m, "NUL-ended line");
    m = snprintf(buf, sizeof buf, "%s", line);
    buf[strcspn(buf, " ") + 3] = '-'; /* r-xp -> r--p */
    expect_garbage(buf, (size_t)m, "not executable");
    if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off, &pos) == 3 && pos > 0) {
        m = snprintf(buf, sizeof buf, "%llx-%llx r-xp %llx 00:00 0 %s", lo, hi,
                     off + 0x100000000000ull, line + pos);
        expect_garbage(buf, (size_t)m, "offset beyond the file");
    }
    free(line);
}

/* Garbage lines around the real ones, and repeated ones, do not disturb the real names. */
static void test_mixed(const char *maps, size_t len, const char *self_path, int with_lines)
{
    static const char junk[] = "zzzz\n1000-2000 r-xp 0 08:01 2 /dev/zero\n"
                               "1000-2000 r-xp 00000000 08:01 2 /usr/lib\n"
                               "ffffffffffffffffff-0 r-xp\n";
    size_t n = sizeof junk - 1;
    char *buf = malloc(2 * n + 2 * len);
    struct rp_symbolizer *s;

    if (buf == NULL)
        exit(2);
    memcpy(buf, junk, n);
    memcpy(buf + n, maps, len);
    memcpy(buf + n + len, junk, n);
    memcpy(buf + 2 * n + len, maps, len); /* every mapping twice */
    s = rp_sym_open(buf, 2 * n + 2 * len);
    CHECK(s != NULL, "rp_sym_open mixed");
    if (s != NULL) {
        expect_own(s, fn_addr((void *)alpha_ptr), "rp_test_alpha", ALPHA_FIRST, ALPHA_LAST,
                   with_lines, self_path);
        expect_unnamed(s, 0x1800, "/dev/zero mapping");
        rp_sym_close(s);
    }
    free(buf);
}

/* What every case looks at: this process's maps (exactly as read), its
 * executable, whether it has line tables and is PIE. */
static char *self_maps;
static size_t self_maps_len;
static char self_exe[PATH_MAX];
static int self_lines, self_pie;

static void test_self_now(void)
{
    test_self(self_maps, self_maps_len, self_exe, self_lines);
}
static void test_moved_now(void)
{
    test_moved(self_maps, self_maps_len, self_exe, self_lines, self_pie);
}
static void test_mixed_now(void)
{
    test_mixed(self_maps, self_maps_len, self_exe, self_lines);
}
static void test_spoiled_now(void)
{
    test_spoiled(self_maps, self_maps_len);
}
static void test_garbage_now(void)
{
    test_garbage(self_exe);
}

static const struct check_case cases[] = {
    {"self", test_self_now},       {"moved", test_moved_now},     {"mixed", test_mixed_now},
    {"spoiled", test_spoiled_now}, {"garbage", test_garbage_now},
};

int main(int argc, char **argv)
{
    size_t len;
    char *text = read_proc("/proc/self/maps", &len);
    self_maps = exact_copy(text, len);
    self_maps_len = len;
    ssize_t n = readlink("/proc/self/exe", self_exe, sizeof self_exe - 1);
    self_lines = self_has_debug_line(&self_pie);

    free(text);
    if (n <= 0) {
        perror("readlink");
        return 2;
    }
    self_exe[n] = '\0';
    if (!self_lines)
        printf("note: built without -g, file:line not checked\n");

    int rc = check_run("test_symbols", argc, argv, cases, sizeof cases / sizeof cases[0]);
    rp_sym_clear(NULL);
    rp_sym_close(NULL);
    free(self_maps);
    return rc;
}

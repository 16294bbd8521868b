// SPDX-License-Identifier: MIT
/*
 * cmd_import.c - `rankprof import --elf ELF TRACE`: makes a trace written by
 * a target with no process map (the bare-metal recorder, docs/firmware.md)
 * readable with names: copies it with a MAPS chunk after the file header
 * that maps the ELF's executable segments at their link addresses, so the
 * analyzer names the functions from that ELF (the Thumb bit of ARM symbols
 * is cleared by libdwfl, and by the target in its keys).
 *
 * Dies, naming the file, when the trace is not a rankprof trace, already
 * has a MAPS chunk, or the ELF is not a static executable with an
 * executable segment; the output is then not written.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <gelf.h>
#include <getopt.h>
#include <libelf.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "common/bytes.h"
#include "trace/format.h"

/* Reads all of path into *buf (malloc'd); dies naming the file. */
static size_t slurp(const char *path, uint8_t **buf)
{
    FILE *f = fopen(path, "rb");
    size_t n = 0, cap = 1 << 16;
    uint8_t *b = malloc(cap);

    if (!f || !b)
        rp_die("import: cannot read %s: %m", path);
    for (;;) {
        size_t r = fread(b + n, 1, cap - n, f);
        n += r;
        if (n < cap)
            break;
        cap *= 2;
        if (!(b = realloc(b, cap)))
            rp_die("import: %s: out of memory", path);
    }
    if (ferror(f))
        rp_die("import: cannot read %s: %m", path);
    fclose(f);
    *buf = b;
    return n;
}

/* The MAPS text for the executable PT_LOAD segments of elf (absolute path
 * abs), appended to out; dies naming the file. */
static size_t elf_maps(const char *elf, const char *abs, char *out, size_t cap)
{
    int fd = open(elf, O_RDONLY);
    Elf *e;
    GElf_Ehdr eh;
    size_t nph, len = 0;

    if (fd < 0)
        rp_die("import: cannot open %s: %m", elf);
    elf_version(EV_CURRENT);
    if (!(e = elf_begin(fd, ELF_C_READ, NULL)) || elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
        rp_die("import: %s is not an ELF file", elf);
    if (eh.e_type != ET_EXEC)
        rp_die("import: %s is not a static executable (ELF type %u): link the firmware at "
               "fixed addresses",
               elf, (unsigned)eh.e_type);
    if (elf_getphdrnum(e, &nph) != 0)
        rp_die("import: %s: no program headers", elf);
    for (size_t i = 0; i < nph; i++) {
        GElf_Phdr ph;
        if (!gelf_getphdr(e, (int)i, &ph) || ph.p_type != PT_LOAD || !(ph.p_flags & PF_X) ||
            !ph.p_memsz)
            continue;
        int w =
            snprintf(out + len, cap - len, "%08llx-%08llx r-xp %08llx 00:00 0 %s\n",
                     (unsigned long long)ph.p_vaddr, (unsigned long long)(ph.p_vaddr + ph.p_memsz),
                     (unsigned long long)ph.p_offset, abs);
        if (w < 0 || (size_t)w >= cap - len)
            rp_die("import: %s: too many segments", elf);
        len += (size_t)w;
    }
    if (!len)
        rp_die("import: %s has no executable segment", elf);
    elf_end(e);
    close(fd);
    return len;
}

int cmd_import(int argc, char **argv)
{
    static const struct option lo[] = {{"elf", required_argument, NULL, 'e'},
                                       {"output", required_argument, NULL, 'o'},
                                       {"help", no_argument, NULL, 'h'},
                                       {NULL, 0, NULL, 0}};
    const char *elf = NULL, *out = RP_DEFAULT_DATA, *in;
    char abs[PATH_MAX], maps[4096], hdr[RP_CHUNK_HDR_SIZE];
    uint8_t *b;
    size_t n, off, mlen;
    int c;

    while ((c = getopt_long(argc, argv, "e:o:h", lo, NULL)) != -1) {
        if (c == 'e')
            elf = optarg;
        else if (c == 'o')
            out = optarg;
        else if (c == 'h')
            rp_help("import");
        else
            rp_die("import: bad option; usage: rankprof %s", rp_cmd_usage("import"));
    }
    if (!elf || optind != argc - 1)
        rp_die("import: give --elf ELF and one trace; usage: rankprof %s", rp_cmd_usage("import"));
    in = argv[optind];
    if (!realpath(elf, abs))
        rp_die("import: cannot open %s: %m", elf);
    mlen = elf_maps(elf, abs, maps, sizeof maps);

    n = slurp(in, &b);
    if (n < RP_FILE_HDR_SIZE || memcmp(b, RP_MAGIC, RP_MAGIC_LEN) != 0)
        rp_die("import: %s is not a rankprof trace (no RANKPROF header at offset 0)", in);
    for (off = RP_FILE_HDR_SIZE; off + RP_CHUNK_HDR_SIZE <= n;) {
        uint32_t type = rp_get32(b + off), len = rp_get32(b + off + 4);
        if (rp_crc32(0, b + off, 12) != rp_get32(b + off + 12) || len > n - off - 16)
            break; /* the analyzer reports damage itself */
        if (type == RP_CH_MAPS)
            rp_die("import: %s already has a MAPS chunk (offset %zu): nothing to import", in, off);
        off += RP_CHUNK_HDR_SIZE + len;
    }

    rp_put32((uint8_t *)hdr, RP_CH_MAPS);
    rp_put32((uint8_t *)hdr + 4, (uint32_t)mlen);
    rp_put32((uint8_t *)hdr + 8, rp_crc32(0, maps, mlen));
    rp_put32((uint8_t *)hdr + 12, rp_crc32(0, hdr, 12));
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s.import.tmp", out) >= (int)sizeof tmp)
        rp_die("import: output name too long: %s", out);
    FILE *f = fopen(tmp, "wb");
    if (!f)
        rp_die("import: cannot write %s: %m", tmp);
    if (fwrite(b, 1, RP_FILE_HDR_SIZE, f) != RP_FILE_HDR_SIZE ||
        fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr || fwrite(maps, 1, mlen, f) != mlen ||
        fwrite(b + RP_FILE_HDR_SIZE, 1, n - RP_FILE_HDR_SIZE, f) != n - RP_FILE_HDR_SIZE ||
        fclose(f) != 0) {
        unlink(tmp);
        rp_die("import: cannot write %s: %m", tmp);
    }
    if (rename(tmp, out) != 0) {
        unlink(tmp);
        rp_die("import: cannot write %s: %m", out);
    }
    free(b);
    return 0;
}

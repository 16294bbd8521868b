// SPDX-License-Identifier: MIT
/*
 * symbols_debug.c - libdwfl's callbacks for the symbolizer: a mapped file
 * is opened by its path, and its separate debug file is found by build-id
 * or .gnu_debuglink (with its CRC checked) under the usual local paths;
 * debuginfod is never asked (no network).
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
#include "common/bytes.h"

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
        fd = rp_sym_open_regular(path);
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

const Dwfl_Callbacks rp_sym_callbacks = {
    .find_elf = sym_find_elf,
    .find_debuginfo = sym_find_debuginfo,
    .section_address = dwfl_offline_section_address,
};

// SPDX-License-Identifier: MIT
/*
 * dl.c - the recorder's dlclose: before a library is unmapped, the
 * process's mappings go into the trace (a MAPS chunk), so that the
 * analyzer can still name the library's functions, which the maps read at
 * the end no longer hold (docs/symbols.md).  The analyzer keeps every
 * mapping of every MAPS chunk that a later one does not replace.
 *
 * One read of /proc/self/maps and one write per dlclose: libraries are
 * closed rarely.  A dlclose that does not unload (the library is still
 * referenced) writes the maps all the same.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>

#include "rt.h"

typedef int (*dlclose_fn)(void *);

RP_API int dlclose(void *handle)
{
    dlclose_fn f = (dlclose_fn)dlsym(RTLD_NEXT, "dlclose");
    if (!f) {
        errno = ENOSYS;
        return -1;
    }
    int saved = errno;
    rp_rt_maps_now();
    errno = saved;
    return f(handle);
}

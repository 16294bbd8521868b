// SPDX-License-Identifier: MIT
/*
 * memstat.h - the peak resident memory a call takes (Linux), for
 * test_rank's memory bounds and bench_rank's `mem` column: reset the peak
 * to the current size (rp_mem_start), call, read VmHWM (rp_mem_kb).
 */
#ifndef RP_TESTS_MEMSTAT_H
#define RP_TESTS_MEMSTAT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A line "key: N kB" of /proc/self/status, in kB; -1 where there is none. */
static inline long rp_mem_kb(const char *key)
{
    char line[256];
    size_t k = strlen(key);
    long v = -1;
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, key, k) && line[k] == ':')
            v = atol(line + k + 1);
    if (f)
        fclose(f);
    return v;
}

/* Starts measuring the memory the next call takes at its peak: resets the
 * peak resident size to the current one (clear_refs 5).  Returns the
 * resident size in kB, or -1 where it cannot be measured. */
static inline long rp_mem_start(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    int ok = f && fputs("5", f) >= 0;
    if (f && fclose(f))
        ok = 0;
    return ok ? rp_mem_kb("VmRSS") : -1;
}

#endif

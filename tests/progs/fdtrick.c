// SPDX-License-Identifier: MIT
/*
 * fdtrick.c - a program that takes every descriptor from 3 up, for
 * tests/e2e_fdtrick.sh.  usage: prog_fdtrick MODE N DATAFILE
 *
 * It writes "data\n" to DATAFILE, makes N calls of work(), then, by MODE:
 *
 *   dup2     dup2()s /dev/null (even numbers) and DATAFILE (odd numbers)
 *            over every descriptor from 3 to 1023 (or the descriptor limit)
 *   sysdup   the same with the dup3 system call, past any interposer
 *   close    closes every descriptor from 3 to 1023
 *
 * then makes N more calls and returns 0.  Expected: work 2N calls, leaf 4N,
 * DATAFILE still exactly "data\n".
 *
 *   stdclosed  run with descriptors 0 and 2 closed: opens DATAFILE and
 *            DATAFILE.2, which take 0 and 2 as they would without the
 *            recorder (it prints "fds A B"), makes N calls, closes every
 *            descriptor from 3 to 1023 by the raw system call (the
 *            recorder reopens its trace, and must not say so on the 2 that
 *            is now the program's file), makes N more calls and writes
 *            "data\n" to both.
 *
 *   limit    makes N calls, lowers its descriptor limit to 16, closes every
 *            descriptor from 0 to 1023 through libc, opens DATAFILE (append)
 *            17 times and writes the numbers it got through the first
 *            ("fds 0 1 ... 15 -1\n" without the recorder: the 17th fails
 *            with EMFILE), then makes N more calls.
 *
 *   limitrot lowers its descriptor limit to 16 first, makes N calls (under
 *            `record --max-size`, the trace rotates meanwhile), opens
 *            DATAFILE 14 times and writes the numbers it got through the
 *            first ("fds 3 4 ... 15 -1\n" without the recorder, when it
 *            inherited nothing but 0, 1 and 2).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "lib/calls.h"

static int std_closed(long n, const char *path)
{
    char path2[4096];
    snprintf(path2, sizeof path2, "%s.2", path);
    int a = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int b = open(path2, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    printf("fds %d %d\n", a, b);
    fflush(stdout);
    calls(n);
    for (int fd = 3; fd < 1024; fd++)
        syscall(SYS_close, fd);
    calls(n);
    if (a < 0 || b < 0 || write(a, "data\n", 5) != 5 || write(b, "data\n", 5) != 5)
        return 2;
    return 0;
}

/* Lowers the soft descriptor limit to 16.  Returns 0, or -1. */
static int limit16(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_max < 16)
        return -1;
    rl.rlim_cur = 16;
    return setrlimit(RLIMIT_NOFILE, &rl);
}

/* Opens path (append) k times (k <= 17) and writes "fds N1 N2 ...\n", the
 * numbers it got (-1: failed), through the first.  Returns 0, or 2. */
static int open_list(const char *path, int k)
{
    int fds[17];
    char got[256];
    size_t len = (size_t)snprintf(got, sizeof got, "fds");
    for (int i = 0; i < k; i++) {
        fds[i] = open(path, O_WRONLY | O_CREAT | O_APPEND, 0644);
        len += (size_t)snprintf(got + len, sizeof got - len, " %d", fds[i]);
    }
    got[len++] = '\n';
    return fds[0] >= 0 && write(fds[0], got, len) == (ssize_t)len ? 0 : 2;
}

static int limit(long n, const char *path)
{
    calls(n);
    if (limit16() != 0)
        return 2;
    for (int fd = 0; fd < 1024; fd++)
        close(fd);
    int rc = open_list(path, 17);
    calls(n);
    return rc;
}

static int limit_rot(long n, const char *path)
{
    if (limit16() != 0)
        return 2;
    calls(n);
    return open_list(path, 14);
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr,
                "usage: prog_fdtrick dup2|sysdup|close|stdclosed|limit|limitrot N DATAFILE\n");
        return 2;
    }
    const char *mode = argv[1];
    long n = atol(argv[2]);
    if (!strcmp(mode, "stdclosed"))
        return std_closed(n, argv[3]);
    if (!strcmp(mode, "limit"))
        return limit(n, argv[3]);
    if (!strcmp(mode, "limitrot"))
        return limit_rot(n, argv[3]);
    int data = open(argv[3], O_WRONLY | O_CREAT | O_TRUNC, 0644);
    int null = open("/dev/null", O_WRONLY);
    if (data < 0 || null < 0 || write(data, "data\n", 5) != 5)
        return 2;
    calls(n);
    struct rlimit rl;
    int top = 1024;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (rlim_t)top)
        top = (int)rl.rlim_cur;
    /* the two sources move to the top first, out of the loop's way */
    int hi_null = dup2(null, top - 1), hi_data = dup2(data, top - 2);
    if (hi_null < 0 || hi_data < 0)
        return 2;
    for (int fd = 3; fd < top - 2; fd++) {
        int src = fd % 2 ? hi_data : hi_null;
        if (!strcmp(mode, "dup2"))
            dup2(src, fd);
        else if (!strcmp(mode, "sysdup"))
            syscall(SYS_dup3, src, fd, 0);
        else if (!strcmp(mode, "close"))
            close(fd);
    }
    calls(n);
    printf("fdtrick: %s done\n", mode);
    return 0;
}

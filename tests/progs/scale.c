// SPDX-License-Identifier: MIT
/*
 * scale.c - traces whose size is in the number of ids or in the depth of
 * the stack, for the analyzer's memory bound and its time against
 * recursion depth (tests/e2e_scale.sh, docs/performance.md).
 *
 *   prog_scale ids N    N distinct profile points (named "p<i>" at run
 *                       time; N <= 1048576), each begun and ended once,
 *                       one after the other under main
 *   prog_scale deep N [T [W]]  rec() recurses N deep (deep_main -> rec ->
 *                       rec ...) W times in a row (default 1) on each of T
 *                       threads at once (default 1), whose stacks are sized
 *                       for it; T * W * N calls of rec, T * W from deep_main
 *
 * Prints "ids N" or "deep N" (once per thread and wave) when done.  Exits 2 on bad arguments, 1
 * when memory or the thread cannot be had.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rankprof.h"

static unsigned long depth_left, waves;
static pthread_barrier_t together; /* the T threads recurse at the same time */

unsigned long rec(unsigned long n)
{
    if (n <= 1)
        return 1;
    return rec(n - 1) + 1; /* not a tail call: every frame stays */
}

void *deep_main(void *arg)
{
    unsigned long *got = arg;
    pthread_barrier_wait(&together);
    for (unsigned long w = 0; w < waves; w++)
        got[w] = rec(depth_left);
    return NULL;
}

static int deep(unsigned long n, unsigned nt, unsigned nw)
{
    pthread_attr_t a;
    pthread_t t[16];
    static unsigned long got[16][16];
    int rc = 0;

    depth_left = n;
    waves = nw;
    pthread_barrier_init(&together, NULL, nt);
    pthread_attr_init(&a);
    /* -O1 -finstrument-functions frames are 32 bytes; room for 4x that */
    if (pthread_attr_setstacksize(&a, (size_t)n * 128 + (1u << 20)))
        return 1;
    for (unsigned i = 0; i < nt; i++)
        if (pthread_create(&t[i], &a, deep_main, &got[i]))
            return 1;
    for (unsigned i = 0; i < nt; i++) {
        pthread_join(t[i], NULL);
        for (unsigned w = 0; w < nw; w++) {
            printf("deep %lu\n", got[i][w]);
            rc |= got[i][w] != n;
        }
    }
    return rc;
}

/*
 * The sites must lie in the module's "rp_sites" section (the recorder
 * describes only those): a zero-filled array there, SBITS of them, as
 * NOBITS (the "#" ends the assembler's section line) so the binary does
 * not carry 64 MiB of zeros; no other site is in this program.
 */
#define SBITS (1ul << 20)
static struct rp_site sites[SBITS]
    __attribute__((section("rp_sites,\"aw\",@nobits#"), used, aligned(64)));

static int ids(unsigned long n)
{
    struct rp_site *s = sites;
    char *names = malloc(n * 12);
    if (n > SBITS || !names)
        return 1;
    for (unsigned long i = 0; i < n; i++) {
        snprintf(names + i * 12, 12, "p%u", (unsigned)i);
        s[i].name = names + i * 12;
        s[i].file = "scale.c";
        s[i].line = 1;
        s[i].kind = RP_SITE_POINT;
        s[i].cls = RP_CLASS_IDX_POINT;
        rp_site_end(&s[i], rp_site_begin(&s[i]));
    }
    printf("ids %lu\n", n);
    return 0; /* names stay: the recorder's writer may still read them */
}

int main(int argc, char **argv)
{
    char *end = "", *end2 = "", *end3 = "";
    unsigned long n = argc >= 3 ? strtoul(argv[2], &end, 10) : 0;
    unsigned long nt = argc >= 4 ? strtoul(argv[3], &end2, 10) : 1;
    unsigned long nw = argc >= 5 ? strtoul(argv[4], &end3, 10) : 1;

    if (argc < 3 || argc > 5 || *end || *end2 || *end3 || !n || n > 100000000ul || !nt || nt > 16 ||
        !nw || nw > 16) {
        fprintf(stderr, "usage: prog_scale ids N | deep N [THREADS [WAVES]] (N 1 .. 100000000, "
                        "THREADS and WAVES 1 .. 16)\n");
        return 2;
    }
    if (!strcmp(argv[1], "ids") && argc == 3)
        return ids(n);
    if (!strcmp(argv[1], "deep"))
        return deep(n, (unsigned)nt, (unsigned)nw);
    fprintf(stderr, "prog_scale: unknown mode '%s'\n", argv[1]);
    return 2;
}

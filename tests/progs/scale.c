/*
 * scale.c - traces whose size is in the number of ids or in the depth of
 * the stack, for the analyzer's memory bound and its time against
 * recursion depth (tests/e2e_scale.sh, docs/performance.md).
 *
 *   prog_scale ids N    N distinct profile points (named "p<i>" at run
 *                       time; N <= 1048576), each begun and ended once,
 *                       one after the other under main
 *   prog_scale deep N   rec() recurses N deep (main -> rec -> rec ...), on
 *                       a thread whose stack is sized for it; N calls of rec
 *
 * Prints "ids N" or "deep N" when done.  Exits 2 on bad arguments, 1 when
 * memory or the thread cannot be had.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rankprof.h"

static unsigned long depth_left;

unsigned long rec(unsigned long n)
{
    if (n <= 1)
        return 1;
    return rec(n - 1) + 1; /* not a tail call: every frame stays */
}

static void *deep_main(void *arg)
{
    *(unsigned long *)arg = rec(depth_left);
    return NULL;
}

static int deep(unsigned long n)
{
    pthread_attr_t a;
    pthread_t t;
    unsigned long got = 0;

    depth_left = n;
    pthread_attr_init(&a);
    /* -O1 -finstrument-functions frames are 32 bytes; room for 4x that */
    if (pthread_attr_setstacksize(&a, (size_t)n * 128 + (1u << 20)) ||
        pthread_create(&t, &a, deep_main, &got))
        return 1;
    pthread_join(t, NULL);
    printf("deep %lu\n", got);
    return got == n ? 0 : 1;
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
    char *end;
    unsigned long n = argc == 3 ? strtoul(argv[2], &end, 10) : 0;

    if (argc != 3 || *end || !n || n > 100000000ul) {
        fprintf(stderr, "usage: prog_scale ids|deep N (1 .. 100000000)\n");
        return 2;
    }
    if (!strcmp(argv[1], "ids"))
        return ids(n);
    if (!strcmp(argv[1], "deep"))
        return deep(n);
    fprintf(stderr, "prog_scale: unknown mode '%s'\n", argv[1]);
    return 2;
}

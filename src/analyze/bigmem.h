// SPDX-License-Identifier: MIT
/*
 * bigmem.h - allocation of the analyzer's large arrays (the ranking's
 * per-node and per-edge arrays: tens to hundreds of megabytes, read in
 * random order).  Blocks of 4 MiB or more are aligned to 2 MiB and, where
 * the kernel offers transparent huge pages on request (Linux, THP mode
 * "madvise" or "always"), marked for them: one page fault per 2 MiB instead
 * of 512, and one TLB entry covering what took 512: random reads over
 * arrays far larger than the TLB's reach miss it on nearly every access
 * otherwise.  Elsewhere, and for smaller blocks, it is plain malloc.
 * Blocks are freed with free() and may be shrunk with realloc();
 * rp_big_trim gives freed memory back to the system once a phase ends.
 */
#ifndef RP_ANALYZE_BIGMEM_H
#define RP_ANALYZE_BIGMEM_H

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif

#define RP_BIG_MIN   ((size_t)4 << 20) /* smaller blocks: plain malloc */
#define RP_BIG_ALIGN ((size_t)2 << 20) /* a huge page */

/* size bytes, uninitialized.  Returns the block, or NULL if out of memory
 * (or size 0 on some libcs). */
static inline void *rp_big_malloc(size_t size)
{
    void *p;
    if (size < RP_BIG_MIN)
        return malloc(size);
    if (posix_memalign(&p, RP_BIG_ALIGN, size))
        return NULL;
#ifdef MADV_HUGEPAGE
    /* only advice: the block works the same if the kernel declines */
    (void)madvise(p, size & ~(RP_BIG_ALIGN - 1), MADV_HUGEPAGE);
#endif
    return p;
}

/* n elements of size bytes, zeroed.  Returns the block, or NULL if out of
 * memory or n * size overflows. */
static inline void *rp_big_calloc(size_t n, size_t size)
{
    if (size && n > (size_t)-1 / size)
        return NULL;
    if (n * size < RP_BIG_MIN)
        return calloc(n, size);
    void *p = rp_big_malloc(n * size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

/*
 * Gives the memory freed so far back to the system (glibc: malloc_trim):
 * otherwise blocks freed by other threads stay in their malloc arenas, and
 * blocks below glibc's trim threshold (which grows to twice the largest
 * block freed) stay mapped, memory under whatever runs next until the
 * process ends.  Only when the arenas hold RP_BIG_MIN or more free
 * (mallinfo2): the trim walks every arena and advises the kernel of each
 * free range, about 20 system calls after a small profile, more than its
 * replay costs.  Nothing under a sanitizer: its allocator replaces
 * glibc's, whose arenas would first be set up here, racing between
 * threads that call this at once.  Cannot fail.
 */
static inline void rp_big_trim(void)
{
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
#if __GLIBC_PREREQ(2, 33)
    if (mallinfo2().fordblks < RP_BIG_MIN)
        return;
#endif
    malloc_trim(0);
#endif
}

#endif

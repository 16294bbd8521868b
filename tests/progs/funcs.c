// SPDX-License-Identifier: MIT
/*
 * funcs.c - a program with exactly known call counts for the function
 * filter and the throttle (tests/e2e_funcs.sh).
 *
 *   prog_funcs MODE N [DLPATH]
 *
 * Per iteration i < N (main's loop):
 *   mid(i)         calls leaf_a and leaf_b
 *   skip_me(i)     calls leaf_c (re-parented under main when skip_me is off)
 *   keep_static(i) a static function
 *   lib_work(i)    in libfuncs_lib.so, calls lib_inner
 *   dl_work(i)     in DLPATH, dlopen'ed before the loop, calls dl_inner
 *   slow(i)        only when i % 10 == 0: busy for about 200 us
 * so N calls of every function but slow (N / 10).
 *
 * MODE "api": after N / 2 iterations the program calls
 * rp_func_enable("leaf_*", 0), and toggle() switches itself off while it
 * runs (rp_func_enable_addr): its exit must still be recorded.  Prints
 * "matched K" (the count rp_func_enable returned) and "done".
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rankprof.h"

int lib_work(int x);

static volatile int sink;

__attribute__((noinline)) int leaf_a(int x)
{
    sink += x;
    return x;
}

__attribute__((noinline)) int leaf_b(int x)
{
    sink -= x;
    return x;
}

__attribute__((noinline)) int leaf_c(int x)
{
    sink ^= x;
    return x;
}

__attribute__((noinline)) int mid(int x)
{
    return leaf_a(x) + leaf_b(x);
}

__attribute__((noinline)) int skip_me(int x)
{
    return leaf_c(x) + 1;
}

__attribute__((noinline)) static int keep_static(int x)
{
    sink += 2 * x;
    return x;
}

__attribute__((no_instrument_function)) static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

__attribute__((noinline)) int slow(int x)
{
    double t0 = now_us();
    while (now_us() - t0 < 200)
        sink ^= x; /* (a sum would overflow in 200 us) */
    return x;
}

__attribute__((noinline)) void toggle(void)
{
    rp_func_enable_addr((void (*)(void))toggle, 0);
    sink++;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    int api = !strcmp(argv[1], "api");
    int n = atoi(argv[2]);
    int (*dl_work)(int) = NULL;
    if (argc > 3) {
        void *h = dlopen(argv[3], RTLD_NOW);
        if (!h || !(dl_work = (int (*)(int))dlsym(h, "dl_work"))) {
            fprintf(stderr, "dlopen %s: %s\n", argv[3], dlerror());
            return 1;
        }
    }
    for (int i = 0; i < n; i++) {
        if (api && i == n / 2) {
            printf("matched %d\n", rp_func_enable("leaf_*", 0));
            toggle();
        }
        mid(i);
        skip_me(i);
        keep_static(i);
        lib_work(i);
        if (dl_work)
            dl_work(i);
        if (i % 10 == 0)
            slow(i);
    }
    printf("done\n");
    return 0;
}

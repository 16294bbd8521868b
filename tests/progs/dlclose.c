// SPDX-License-Identifier: MIT
/*
 * dlclose.c - a program that loads a library, calls into it and unloads it
 * before it ends (tests/e2e_funcs.sh, docs/symbols.md): the library's
 * functions must still be named, though the maps read at the end no longer
 * hold it.
 *
 *   prog_dlclose DLPATH N   dlopen DLPATH (libfuncs_dl.so), call its
 *                           dl_work() N times (each calls dl_inner once),
 *                           dlclose it, print "closed N"
 *
 * Exits 1 if the library or dl_work cannot be had.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    int n = atoi(argv[2]);
    void *h = dlopen(argv[1], RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen %s: %s\n", argv[1], dlerror());
        return 1;
    }
    int (*work)(int) = (int (*)(int))dlsym(h, "dl_work");
    if (!work)
        return 1;
    int s = 0;
    for (int i = 0; i < n; i++)
        s += work(i);
    if (dlclose(h) != 0)
        return 1;
    printf("closed %d\n", n);
    return s == 0; /* (never: keeps the calls) */
}

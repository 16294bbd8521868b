// SPDX-License-Identifier: MIT
/*
 * funcs_lib.c - the shared libraries of tests/progs/funcs.c: built twice,
 * as libfuncs_lib.so (linked with prog_funcs) and, with -DDL, as
 * libfuncs_dl.so (dlopen'ed by it), so that function rules are tested on a
 * function of a library loaded at start and of one loaded later.
 */
#ifdef DL
#define WORK  dl_work
#define INNER dl_inner
#define SINK  dl_sink
#else
#define WORK  lib_work
#define INNER lib_inner
#define SINK  lib_sink
#endif

volatile int SINK;

int INNER(int x);

int INNER(int x)
{
    SINK += x;
    return x + 1;
}

int WORK(int x);

int WORK(int x)
{
    return INNER(x) + 1;
}

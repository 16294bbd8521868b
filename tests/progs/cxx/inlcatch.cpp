// SPDX-License-Identifier: MIT
// inlcatch.cpp - a catch in a function inlined into its caller, on threads,
// for tests/e2e_unwind.sh (built by g++: prog_inlcatch_gxx).
// usage: prog_inlcatch_gxx N T
//
// T threads, each N times: run -> outer -> catcher (always inlined into
// outer, its hooks still called) -> thrower, which throws; catcher catches
// and calls after().  g++ calls the exit hook of thrower as the exception
// unwinds it, so every frame ends by its own exit; the catch's return
// address is outer's (catcher is inlined), and a landing record there
// would end catcher early: its exit unmatched, after() under outer.
// Expected: catcher -> after T*N, outer -> after none, no unmatched exit.
#include <cstdlib>
#include <pthread.h>

static __thread volatile long sink;

extern "C" {
__attribute__((noinline)) void thrower(long i)
{
    sink += i;
    throw 1;
}

__attribute__((noinline)) void after(long i)
{
    sink += i;
}

static inline __attribute__((always_inline)) void catcher(long i)
{
    try {
        thrower(i);
    } catch (int) {
        after(i);
    }
}

__attribute__((noinline)) void outer(long i)
{
    catcher(i);
}
}

static long n = 100;

static void *run(void *)
{
    for (long i = 0; i < n; i++)
        outer(i);
    return nullptr;
}

int main(int argc, char **argv)
{
    n = argc > 1 ? std::atol(argv[1]) : 100;
    long t = argc > 2 ? std::atol(argv[2]) : 1;
    pthread_t th[64];
    if (t < 1 || t > 64)
        return 2;
    for (long i = 0; i < t; i++)
        if (pthread_create(&th[i], nullptr, run, nullptr) != 0)
            return 1;
    for (long i = 0; i < t; i++)
        pthread_join(th[i], nullptr);
    return 0;
}

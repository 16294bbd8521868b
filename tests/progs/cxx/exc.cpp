// SPDX-License-Identifier: MIT
// exc.cpp - C++ exceptions out of deep frames, for tests/e2e_unwind.sh;
// built twice, with g++ (prog_exc_gxx) and with clang++ (prog_exc_clangxx).
// usage: prog_exc_* [N [T]]   (N default 100; T threads at once, each the N
// times, default none: main does it)
//
// N times: main -> landing, which calls deep1 -> deep2 -> deep3 in a try
// block; deep3 throws an int, landing catches it and then calls after().
// Functions are extern "C" so that their names do not depend on the
// compiler's mangling.
//
// Expected calls: main 1, landing N, deep1..3 N, after N, leaf 3N; edges
// landing -> deep1 N, landing -> after N, deepK -> leaf N.  g++ calls the
// exit hook of every frame an exception unwinds, clang++ does not: the
// deeps are cut N times each with clang++ (the recorder's __cxa_begin_catch
// says where the stack landed), 0 with g++.
#include <cstdlib>
#include <pthread.h>

static volatile unsigned sink;

extern "C" {
void leaf(unsigned x)
{
    sink += x;
}

void deep3(void)
{
    leaf(3);
    throw 3;
}

void deep2(void)
{
    leaf(2);
    deep3();
}

void deep1(void)
{
    leaf(1);
    deep2();
}

void after(void)
{
    sink++;
}

void landing(void)
{
    try {
        deep1();
    } catch (int x) {
        sink += (unsigned)x;
    }
    after();
}
}

static long n = 100;

static void *run(void *)
{
    for (long i = 0; i < n; i++)
        landing();
    return nullptr;
}

int main(int argc, char **argv)
{
    if (argc > 1)
        n = std::atol(argv[1]);
    long t = argc > 2 ? std::atol(argv[2]) : 0;
    if (t <= 0) { /* (main -> landing, as the expected edges say) */
        for (long i = 0; i < n; i++)
            landing();
        return 0;
    }
    pthread_t th[64];
    if (t > 64)
        return 2;
    for (long i = 0; i < t; i++)
        if (pthread_create(&th[i], nullptr, run, nullptr) != 0)
            return 1;
    for (long i = 0; i < t; i++)
        pthread_join(th[i], nullptr);
    return 0;
}

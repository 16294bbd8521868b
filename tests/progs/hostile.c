// SPDX-License-Identifier: MIT
/*
 * hostile.c - a program whose profile point, lock, io and thread names hold
 * control bytes: an OSC-52 clipboard sequence (ESC ] 52 ; c ; ... BEL), a
 * CSI colour, C0 bytes, DEL, a C1 CSI (U+009B) and a backslash, for
 * tests/e2e_escape.sh, which checks that no output of rankprof passes them
 * on.  Each span runs 3 times on the main thread, named "t\x1b[31mred",
 * and once on a second thread.
 */
#include <pthread.h>
#include <sys/prctl.h>

#include "rankprof.h"

#define OSC52 "\x1b]52;c;aGVsbG8K\x07"

static volatile unsigned sink;

static void work(void)
{
    RP_POINT("pt" OSC52 "\x01\x7f\xc2\x9b[2J\\x;end");
    {
        RP_LOCK_WAIT("lk\x1b[31m\x08");
    }
    {
        RP_LOCK_HOLD("lk\x1b[31m\x08");
        sink++;
    }
    {
        RP_IO("io\r\n" OSC52, 0x48, 6);
        sink++;
    }
    RP_MARK("mk\x1b"
            "c",
            1);
}

static void *thread_main(void *arg)
{
    (void)arg;
    work();
    return NULL;
}

int main(void)
{
    pthread_t t;
    /* the main thread's name: it is alive when the recorder reads it */
    prctl(PR_SET_NAME, "t\x1b[31mred", 0, 0, 0);
    for (int i = 0; i < 3; i++)
        work();
    if (pthread_create(&t, NULL, thread_main, NULL) == 0)
        pthread_join(t, NULL);
    return 0;
}

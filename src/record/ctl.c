// SPDX-License-Identifier: MIT
/*
 * ctl.c - recording switched on and off in a running program (ctl.h,
 * docs/services.md).
 *
 * `rankprof record --off` starts the program with the recorder loaded and
 * nothing recorded (the class mask is 0: every hook returns after one load
 * and test).  `rankprof ctl PID start|stop` sends a queued signal; its
 * handler, here, switches the mask and appends an edge (ticks, on/off) to
 * a list the writer reads.  The writer cuts each thread's stream at each
 * edge (rt.c, write_buffer): the frames open at an edge end there, as a
 * thread's frames end at its end (an UNWIND record), and the exits of
 * frames entered before a window are left out (the encoder's windowed
 * threads).  Direct mode's engine applies the same edges to each thread's
 * statistics (direct.c, win_apply).  So every window is complete, and the
 * analysis needs nothing new: the time outside the windows is in no span.
 *
 * The handler is async-signal-safe: atomic stores, an edge written before
 * the release store of the count that publishes it.  Signals of one kind
 * are not nested (the handler runs with its own signal blocked), so one
 * writer appends edges at a time.  At most WIN_MAX edges: after that,
 * recording stays as it is (a warning at the end says so).
 */
#define _GNU_SOURCE
#include "ctl.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "direct.h"
#include "rt_int.h"
#include "trace/control.h"

#define WIN_MAX 4096

static struct rp_win_edge edges[WIN_MAX];
static _Atomic uint32_t n_edges;
static _Atomic int edges_full; /* an edge was refused */
static uint32_t armed;         /* the classes recorded while switched on */
static int started_on;
static struct rp_ctl_page *page; /* NULL: none */
static char page_path[64];
static int ctl_signo;

static void ctl_warn(const char *msg)
{
    if (!rp_rt.quiet) {
        rp_rt_say(msg, strlen(msg));
    }
}

/* Makes the control page of this process.  Leaves page NULL when it
 * cannot (no RP_CTL_DIR: the program is then switched by a plain signal
 * only). */
static void page_make(void)
{
    snprintf(page_path, sizeof page_path, "%s/rankprof.%d", RP_CTL_DIR, (int)getpid());
    int fd = open(page_path, O_RDWR | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    void *m = MAP_FAILED;
    struct rp_xfsz x;
    rp_xfsz_hold(&x);
    int sized = ftruncate(fd, sizeof(struct rp_ctl_page));
    rp_xfsz_release(&x, sized < 0 && errno == EFBIG);
    if (sized == 0)
        m = mmap(NULL, sizeof(struct rp_ctl_page), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        unlink(page_path);
        return;
    }
    page = m;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    page->magic = RP_CTL_MAGIC;
    page->version = RP_CTL_VERSION;
    page->pid = (uint32_t)getpid();
    page->signo = ctl_signo;
    page->recording = atomic_load(&rp_rt.mask) != 0 || started_on;
    page->windows = started_on;
    page->start_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    page->direct = (uint32_t)rp_rt.direct;
    page->ring = rp_ring_size();
    /* absolute, for a reader elsewhere (rankprof top reads the trace) */
    char cwd[RP_CTL_PATH / 2];
    if (rp_rt.path[0] != '/' && getcwd(cwd, sizeof cwd))
        snprintf(page->path, sizeof page->path, "%s/%.*s", cwd, RP_CTL_PATH / 2 - 1, rp_rt.path);
    else
        snprintf(page->path, sizeof page->path, "%s", rp_rt.path);
}

/* The control signal: a queued one carries RP_CTL_START or RP_CTL_STOP, a
 * plain one switches over. */
static void ctl_handler(int sig, siginfo_t *si, void *uc)
{
    int saved = errno;
    (void)sig;
    (void)uc;
    int cmd = si && si->si_code == SI_QUEUE ? si->si_value.sival_int : RP_CTL_TOGGLE;
    if (cmd == RP_CTL_PUBLISH || cmd == RP_CTL_SNAPSHOT) { /* direct_pub.c writes it */
        if (rp_rt.direct)
            rp_direct_pub_request(cmd == RP_CTL_SNAPSHOT);
        else /* --ring: the writer writes it (ring.c) */
            rp_ring_request(cmd == RP_CTL_PUBLISH);
        errno = saved;
        return;
    }
    uint32_t cur = atomic_load(&rp_rt.mask);
    int on = cmd == RP_CTL_START ? 1 : cmd == RP_CTL_STOP ? 0 : !cur;
    if (!atomic_load(&rp_rt.stopped) && on != (cur != 0)) {
        uint32_t n = atomic_load_explicit(&n_edges, memory_order_relaxed);
        if (n == WIN_MAX) {
            atomic_store(&edges_full, 1);
        } else if (on) { /* the edge first: what is recorded after it is inside */
            edges[n] = (struct rp_win_edge){rp_ticks(), 1};
            atomic_store_explicit(&n_edges, n + 1, memory_order_release);
            atomic_store(&rp_rt.mask, armed);
        } else { /* off first: an event in flight now falls before the edge, or
                    after it (then the writer leaves it out, or cuts it) */
            atomic_store(&rp_rt.mask, 0);
            edges[n] = (struct rp_win_edge){rp_ticks(), 0};
            atomic_store_explicit(&n_edges, n + 1, memory_order_release);
        }
        if (page && n < WIN_MAX)
            page->windows += (uint32_t)on;
    }
    if (page) {
        page->recording = atomic_load(&rp_rt.mask) != 0;
        __atomic_add_fetch(&page->seq, 1, __ATOMIC_RELEASE);
    }
    errno = saved;
}

/* The control signal: RANKPROF_CTL_SIGNAL (a number, 0 for none), else
 * SIGRTMIN+8.  Taken only if the program leaves it at its default. */
static void signal_take(void)
{
    const char *s = getenv("RANKPROF_CTL_SIGNAL");
    int sig = s && *s ? atoi(s) : SIGRTMIN + 8;
    if (sig <= 0 || sig >= NSIG)
        return;
    struct sigaction old, sa;
    if (sigaction(sig, NULL, &old) != 0)
        return;
    if ((old.sa_flags & SA_SIGINFO) || old.sa_handler != SIG_DFL) {
        ctl_warn("rankprof: the control signal is the program's: rankprof ctl cannot switch "
                 "recording (set RANKPROF_CTL_SIGNAL to a free one)\n");
        return;
    }
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = ctl_handler;
    sa.sa_flags = SA_SIGINFO | SA_RESTART;
    sigemptyset(&sa.sa_mask);
    if (sigaction(sig, &sa, NULL) == 0)
        ctl_signo = sig;
}

int rp_ctl_owns(void (*h)(int, siginfo_t *, void *))
{
    return h == ctl_handler;
}

uint32_t rp_ctl_start(uint32_t mask)
{
    const char *st = getenv("RANKPROF_START");
    armed = mask;
    started_on = !(st && !strcmp(st, "off"));
    signal_take();
    page_make();
    if (rp_rt.direct && page && ctl_signo)
        rp_direct_pub_start(); /* statistics on request: top, ctl snapshot */
    if (!started_on && !ctl_signo)
        ctl_warn("rankprof: started off, and no control signal to switch recording on\n");
    return started_on ? mask : 0;
}

uint32_t rp_ctl_edges(const struct rp_win_edge **e)
{
    *e = edges;
    return atomic_load_explicit(&n_edges, memory_order_acquire);
}

void rp_ctl_info(void (*put)(void *ctx, const char *key, const char *val), void *ctx,
                 uint64_t end_ticks)
{
    const struct rp_win_edge *e;
    uint32_t n = rp_ctl_edges(&e), windows = (uint32_t)started_on;
    uint64_t on_since = started_on ? rp_rt.start_ticks : 0, total = 0;
    int on = started_on;
    for (uint32_t i = 0; i < n; i++) {
        if (e[i].on && !on)
            on_since = e[i].ticks, windows++;
        else if (!e[i].on && on && e[i].ticks > on_since)
            total += e[i].ticks - on_since;
        on = e[i].on;
    }
    if (on && end_ticks > on_since)
        total += end_ticks - on_since;
    if (started_on && !n)
        return; /* one window, the whole run: nothing to say */
    char v[32];
    snprintf(v, sizeof v, "%u", windows);
    put(ctx, "windows", v);
    snprintf(v, sizeof v, "%.0f", (double)total * 1e9 / (rp_rt.freq > 0 ? rp_rt.freq : 1e9));
    put(ctx, "recorded_ns", v);
    if (atomic_load(&edges_full))
        put(ctx, "windows_full", "1");
}

void rp_ctl_snap_done(void)
{
    if (page)
        __atomic_add_fetch(&page->snaps, 1, __ATOMIC_RELEASE);
}

void rp_ctl_atfork_child(void)
{
    atomic_store(&n_edges, 0);
    started_on = atomic_load(&rp_rt.mask) != 0;
    page = NULL; /* the parent's stays the parent's (it is shared) */
    if (rp_rt.direct)
        rp_direct_pub_atfork_child();
    page_make();
}

void rp_ctl_shutdown(void)
{
    if (rp_rt.direct)
        rp_direct_pub_shutdown();
    if (!page)
        return;
    page->recording = 0;
    munmap(page, sizeof(*page));
    page = NULL;
    unlink(page_path);
}

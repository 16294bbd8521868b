// SPDX-License-Identifier: MIT
/*
 * test_rec_points.c - unit tests of the profile-point runtime (record/
 * sites.c), linked with the static recorder: the registry found through the
 * rp_sites section, DEFS descriptions (and their refusal of addresses that
 * are no site), name rules and their counts, the off byte's two bits (name
 * and class), hooks called with durations, budgets counted exactly, and
 * four threads ending hooked points at the same time.
 *
 * The recorder's constructor starts recording before main() with the
 * process's environment, so the test runs itself as a child with
 * RANKPROF_OUTPUT in a temporary directory (as test_rec_runtime does); the
 * parent waits for it and removes the file.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "rankprof.h"
#include "record/rt.h"
#include "record/sites.h"
#include "record/waits.h"

extern char **environ;

#define NT     4          /* threads ending hooked points together */
#define NITER  1000       /* points per thread */
#define NSLOW  9          /* budgeted calls; every 3rd sleeps past the budget */
#define BUDGET 2000000ull /* ns */

static void nap_ns(long ns)
{
    struct timespec ts = {ns / 1000000000L, ns % 1000000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* The site of this module named name (the first), found in the section. */
static struct rp_site *site_named(const char *name)
{
    for (struct rp_site *s = __start_rp_sites; s < __stop_rp_sites; s++)
        if (!strcmp(s->name, name))
            return s;
    return NULL;
}

/* ---- the sites under test ------------------------------------------------ */

static int budget_calls;

static void budgeted(void)
{
    RP_POINT_BUDGET("t.budget", BUDGET);
    if (++budget_calls % 3 == 0)
        nap_ns(5000000);
}

static void plain(void)
{
    RP_POINT("t.plain");
}

static void other_class(void)
{
    RP_IO("t.io", 0x10, 4);
}

static void switched(void)
{
    RP_POINT("t.off");
}

/* ---- hooks --------------------------------------------------------------- */

static atomic_ulong hook_calls, hook_slow, hook_tid_calls;
static const struct rp_site *hook_site;

static void on_budget(const struct rp_site *s, uint64_t ns, void *arg)
{
    CHECK(arg == &hook_calls);
    hook_site = s;
    hook_calls++;
    if (ns >= 4500000) /* the 5 ms sleeps, with room for calibration error */
        hook_slow++;
}

static void on_thread(const struct rp_site *s, uint64_t ns, void *arg)
{
    (void)s;
    (void)ns;
    (void)arg;
    hook_tid_calls++;
}

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < NITER; i++) {
        RP_POINT("t.thread");
    }
    return NULL;
}

/* ---- the tests ------------------------------------------------------------- */

static void test_registry(void)
{
    struct rp_site *b = site_named("t.budget"), *p = site_named("t.plain");
    CHECK(b && p);
    if (!b || !p)
        return;
    struct rp_def d;
    memset(&d, 0, sizeof d);
    CHECK_EQ(rp_sites_describe((uintptr_t)b, &d), 0);
    CHECK_EQ(d.kind, RP_KIND_POINT);
    CHECK_EQ(d.cls, RP_CLASS_POINT);
    CHECK(d.name && !strcmp(d.name, "t.budget"));
    CHECK(d.file && strstr(d.file, "test_rec_points.c"));
    CHECK(d.line > 0);
    /* the budget in ticks: ns * freq / 1e9 */
    CHECK_NEAR((double)d.budget, BUDGET * rp_rt.freq / 1e9, 1.0);
    memset(&d, 0, sizeof d);
    CHECK_EQ(rp_sites_describe((uintptr_t)p, &d), 0);
    CHECK_EQ(d.budget, 0);
    struct rp_site *io = site_named("t.io");
    CHECK(io && rp_sites_describe((uintptr_t)io, &d) == 0 && d.kind == RP_KIND_IO &&
          d.cls == RP_CLASS_IO);
    /* not a site: inside one, before the section, a stack address */
    CHECK_EQ(rp_sites_describe((uintptr_t)b + 8, &d), -1);
    uintptr_t before = (uintptr_t)__start_rp_sites - sizeof(struct rp_site);
    /* (the linker may put the recorder's wait sites there) */
    if (before - (uintptr_t)rp_wait_sites >= sizeof(rp_wait_sites))
        CHECK_EQ(rp_sites_describe(before, &d), -1);
    CHECK_EQ(rp_sites_describe((uintptr_t)&d, &d), -1);
}

static void test_switches(void)
{
    struct rp_site *off = site_named("t.off"), *p = site_named("t.plain");
    struct rp_site *io = site_named("t.io");
    CHECK(off && p && io);
    if (!off || !p || !io)
        return;
    /* counts: exactly the sites whose name matches */
    CHECK_EQ(rp_site_enable("t.off", 0), 1);
    CHECK_EQ(rp_site_enable("t.nothing*", 0), 0);
    CHECK_EQ(rp_site_enable("t.[bp]*", 1), 2); /* t.budget, t.plain */
    CHECK(off->off != 0);
    CHECK_EQ(p->off, 0);
    switched(); /* must not record: rp_site_begin is never reached */
    /* a class off sets the class bit on its sites only */
    uint32_t was = rp_classes_set(0, RP_CLASS_BIT_POINT);
    CHECK(was & RP_CLASS_BIT_POINT);
    CHECK(p->off != 0);
    CHECK_EQ(io->off, 0);
    CHECK_EQ(rp_site_begin(p), 0); /* the runtime says no too */
    rp_classes_set(RP_CLASS_BIT_POINT, 0);
    CHECK_EQ(p->off, 0);
    CHECK(off->off != 0); /* the name bit stays */
    CHECK_EQ(rp_site_enable("t.off", 1), 1);
    CHECK_EQ(off->off, 0);
    /* a recorded begin returns ticks and its end consumes them */
    uint64_t t0 = rp_site_begin(p);
    CHECK(t0 != 0);
    rp_site_end(p, t0);
    rp_site_end(p, 0); /* a no-op */
    plain();
    other_class();
}

static void test_hooks_budgets(void)
{
    CHECK_EQ(rp_site_hook("t.budget", on_budget, &hook_calls), 1);
    CHECK_EQ(rp_site_hook("t.level", on_budget, NULL), 0); /* no such span */
    for (int i = 0; i < NSLOW; i++)
        budgeted();
    CHECK_EQ(hook_calls, NSLOW);
    CHECK_EQ(hook_slow, NSLOW / 3);
    CHECK(hook_site == site_named("t.budget"));
    CHECK_EQ(rp_site_overruns("t.budget"), NSLOW / 3);
    CHECK_EQ(rp_site_overruns("t.plain"), 0);
    CHECK_EQ(rp_site_overruns("t.none"), 0);
    CHECK_EQ(rp_site_hook("t.budget", NULL, NULL), 1);
    budgeted();
    CHECK_EQ(hook_calls, NSLOW); /* removed */
}

static void test_threads(void)
{
    CHECK_EQ(rp_site_hook("t.thread", on_thread, NULL), 1);
    pthread_t t[NT];
    for (int i = 0; i < NT; i++)
        CHECK_EQ(pthread_create(&t[i], NULL, worker, NULL), 0);
    for (int i = 0; i < NT; i++)
        pthread_join(t[i], NULL);
    CHECK_EQ(hook_tid_calls, NT * NITER);
}

static const struct check_case cases[] = {
    {"registry", test_registry},
    {"switches", test_switches},
    {"hooks_budgets", test_hooks_budgets},
    {"threads", test_threads},
};

/* The child, recording: the cases named in argv (all without). */
static int child(int argc, char **argv)
{
    CHECK(atomic_load(&rp_rt.mask) != 0); /* recording */
    CHECK((uintptr_t)__stop_rp_sites > (uintptr_t)__start_rp_sites);
    return check_run("test_rec_points", argc, argv, cases, sizeof cases / sizeof cases[0]);
}

int main(int argc, char **argv)
{
    if (getenv("RP_TEST_CHILD"))
        return child(argc, argv);
    /* the parent: stop what our own constructor started, run the child */
    rp_rt_shutdown();
    if (rp_rt.path[0])
        unlink(rp_rt.path);
    char dir[] = "/tmp/rp_points_XXXXXX", out[64], env_out[128];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(out, sizeof out, "%s/t.data", dir);
    snprintf(env_out, sizeof env_out, "RANKPROF_OUTPUT=%s", out);
    char *envp[] = {env_out, "RP_TEST_CHILD=1", "RANKPROF_QUIET=1", NULL};
    pid_t pid;
    int st = -1;
    CHECK_EQ(posix_spawn(&pid, "/proc/self/exe", NULL, NULL, argv, envp), 0);
    CHECK(waitpid(pid, &st, 0) == pid);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    unlink(out);
    rmdir(dir);
    if (failures)
        fprintf(stderr, "test_rec_points: %d failures\n", (int)failures);
    return failures ? 1 : 0;
}

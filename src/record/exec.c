// SPDX-License-Identifier: MIT
/*
 * exec.c - the exec family, interposed, so that a program that execs
 * leaves a complete trace of the image it replaces; and the ends of a
 * process that skip the destructors (_exit, _Exit, quick_exit, daemon's
 * parent) or race them (exit from a second thread).
 *
 * exec replaces the process image without running atexit handlers or
 * destructors, so the recorder's final flush would never run and the
 * events since the last periodic flush would be lost.  Each wrapper below
 * runs that flush (rp_rt_shutdown: everything written, an END record, the
 * file closed) and then calls the real function, found with
 * dlsym(RTLD_NEXT).  The new image, if it is recorded too, writes its own
 * trace (NAME.PID: see rt_start.c's open_output); a forked child that
 * execs before recording anything leaves no file of its own (rp_rt_shutdown
 * drops it).
 *
 * Recording stops for good before the exec: if the exec fails, the
 * program goes on unrecorded (docs/robustness.md).  A vfork child, which
 * shares the parent's memory and so the parent's recorder, must not touch
 * it: it is told apart by its pid (vfork runs no atfork handler, so
 * rec_pid still holds the parent's).  posix_spawn, system and popen call
 * the kernel without going through these functions, and leave the parent
 * recording.
 *
 * The l-variants build their argument vector on the stack (they are
 * bounded by the kernel's limit anyway) and go through the v-variants.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "rt.h"

static pid_t rec_pid; /* the process the recorder belongs to */

static void exec_atfork_child(void)
{
    rec_pid = getpid();
}

static void exec_flush(void);

/* quick_exit's flush runs as its last at_quick_exit handler: registered
 * first, it runs after the program's, whose calls are then recorded. */
static int quick_last;

__attribute__((constructor)) static void exec_ctor(void)
{
    rec_pid = getpid();
    pthread_atfork(NULL, NULL, exec_atfork_child);
    quick_last = at_quick_exit(exec_flush) == 0;
}

/* An exec returned r (it failed): the process goes on, unrecorded; not a
 * vfork child's, which shares the parent's memory.  Returns r. */
static int exec_returned(int r)
{
    if (getpid() == rec_pid)
        rp_rt_exec_failed();
    return r;
}

/* The final flush, unless this is a vfork child of the recorded process or
 * a signal handler (execve is async-signal-safe) that interrupted the
 * recorder on this thread, which may hold its lock. */
static void exec_flush(void)
{
    int saved = errno, cs;
    pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cs); /* as rt_dtor */
    if (getpid() == rec_pid && !(rp_self && rp_self->guard)) {
        rp_rt_ending(); /* the other threads stop at their next hook */
        rp_rt_shutdown();
    }
    rp_rt_cancel_on(cs);
    errno = saved;
}

/* The next definition of name (libc's).  NULL (and ENOSYS) if none. */
static void *real(const char *name)
{
    void *f = dlsym(RTLD_NEXT, name);
    if (!f)
        errno = ENOSYS;
    return f;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*execvp_fn)(const char *, char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

RP_API int execve(const char *path, char *const argv[], char *const envp[])
{
    execve_fn f = (execve_fn)real("execve");
    exec_flush();
    return exec_returned(f ? f(path, argv, envp) : -1);
}

RP_API int execv(const char *path, char *const argv[])
{
    execvp_fn f = (execvp_fn)real("execv");
    exec_flush();
    return exec_returned(f ? f(path, argv) : -1);
}

RP_API int execvp(const char *file, char *const argv[])
{
    execvp_fn f = (execvp_fn)real("execvp");
    exec_flush();
    return exec_returned(f ? f(file, argv) : -1);
}

RP_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
    execve_fn f = (execve_fn)real("execvpe");
    exec_flush();
    return exec_returned(f ? f(file, argv, envp) : -1);
}

RP_API int fexecve(int fd, char *const argv[], char *const envp[])
{
    fexecve_fn f = (fexecve_fn)real("fexecve");
    exec_flush();
    return exec_returned(f ? f(fd, argv, envp) : -1);
}

/* Counts the arguments of an l-variant from arg0 (declared nonnull by libc)
 * to the NULL, not it. */
#define COUNT_ARGS(ap, arg0, n)                                                                    \
    do {                                                                                           \
        va_start(ap, arg0);                                                                        \
        for (n = 1; va_arg(ap, const char *); n++)                                                 \
            ;                                                                                      \
        va_end(ap);                                                                                \
    } while (0)

/*
 * Declares char *argv[] with the arguments of an l-variant, arg0 to the
 * NULL included, and leaves ap started after them (execle reads envp
 * there; the caller ends it).
 */
#define L_ARGV(ap, arg0, argv)                                                                     \
    size_t argc_;                                                                                  \
    COUNT_ARGS(ap, arg0, argc_);                                                                   \
    char *argv[argc_ + 1];                                                                         \
    va_start(ap, arg0);                                                                            \
    argv[0] = (char *)arg0;                                                                        \
    for (size_t i_ = 1; i_ <= argc_; i_++) /* argv[argc_] gets the NULL */                         \
    argv[i_] = va_arg(ap, char *)

RP_API int execl(const char *path, const char *arg0, ...)
{
    va_list ap;
    L_ARGV(ap, arg0, argv);
    va_end(ap);
    return execv(path, argv);
}

RP_API int execlp(const char *file, const char *arg0, ...)
{
    va_list ap;
    L_ARGV(ap, arg0, argv);
    va_end(ap);
    return execvp(file, argv);
}

RP_API int execle(const char *path, const char *arg0, ...)
{
    va_list ap;
    L_ARGV(ap, arg0, argv);
    char *const *envp = va_arg(ap, char *const *);
    va_end(ap);
    return execve(path, argv, envp);
}

/*
 * _exit, _Exit and quick_exit end the process without the destructors
 * that run the final flush (quick_exit runs only at_quick_exit handlers),
 * so a program ending by them, or a forked child that _exits, would lose
 * what it recorded since the last periodic flush.  Each wrapper runs the
 * same bounded final flush as exec (END says the run ended normally; the
 * status is the process's own), then the real function; quick_exit's runs
 * as the last at_quick_exit handler instead (exec_flush), after the
 * program's.  Not in a vfork
 * child (exec_flush): it shares the parent's recorder.  Never fails; with
 * no real function to call (dlsym cannot see one) the process ends by the
 * exit_group system call.
 */
typedef void (*exit_fn)(int);

static __attribute__((noreturn)) void end_by(const char *name, int status)
{
    if (getpid() == rec_pid)
        rp_rt_exit_status(status);
    exec_flush(); /* (first: the other threads stop at once, ending_wait) */
    exit_fn f = (exit_fn)dlsym(RTLD_NEXT, name);
    if (f)
        f(status);
    syscall(SYS_exit_group, status);
    for (;;) /* not reached */
        ;
}

/* Ends the process by f (the real exit or quick_exit), whose handlers run
 * the final flush at their end, after waiting for another thread's ending
 * under way (rp_rt_exit_begin).  Never fails, as end_by. */
static __attribute__((noreturn)) void end_after(exit_fn f, int status)
{
    if (getpid() == rec_pid) {
        rp_rt_exit_status(status);
        rp_rt_exit_begin();
    }
    if (f)
        f(status);
    syscall(SYS_exit_group, status);
    for (;;) /* not reached */
        ;
}

#ifdef RP_RT_SHARED
/*
 * exit: the first call goes on as it is (the recorder's destructor runs the
 * final flush at its end); one from another thread while that is under way
 * waits for the flush first (rp_rt_exit_begin).  In librankprof.so only:
 * linked into the program from librankprof.a, a definition of exit would
 * clash with a static libc's.
 */
RP_API void exit(int status)
{
    end_after((exit_fn)dlsym(RTLD_NEXT, "exit"), status);
}
#endif

RP_API void _exit(int status)
{
    end_by("_exit", status);
}

RP_API void _Exit(int status)
{
    end_by("_Exit", status);
}

RP_API void quick_exit(int status)
{
    exit_fn f = (exit_fn)dlsym(RTLD_NEXT, "quick_exit");
    if (!f || !quick_last) /* (no handler of ours: flush first) */
        end_by("quick_exit", status);
    end_after(f, status); /* the program's handlers, then exec_flush */
}

/*
 * daemon(): libc's forks and ends the parent with its internal _exit, past
 * the wrapper above, so the parent's trace would lose its end.  This one
 * does what glibc's does (fork; the parent ends by _exit(0), flushed; the
 * child calls setsid, chdir("/") unless nochdir, and puts /dev/null on
 * 0, 1 and 2 unless noclose).  Returns 0 in the child, -1 with errno when
 * fork or setsid fails.
 */
RP_API int daemon(int nochdir, int noclose)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid > 0)
        _exit(0);
    if (setsid() < 0)
        return -1;
    if (!nochdir && chdir("/") < 0)
        return -1;
    if (!noclose) {
        int fd = open("/dev/null", O_RDWR);
        if (fd < 0)
            return -1;
        dup2(fd, 0);
        dup2(fd, 1);
        dup2(fd, 2);
        if (fd > 2)
            close(fd);
    }
    return 0;
}

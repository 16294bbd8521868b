// SPDX-License-Identifier: MIT
/*
 * mpi.c - what the recorder knows of an MPI job without linking MPI
 * (docs/multi-process.md): the process's rank, from the launcher's
 * environment, for INFO "rank"; and whether the program is itself a
 * launcher (mpirun, mpiexec, orted, ...), whose own locks and waits are
 * not the job's: it records nothing, and writes only its file's prologue
 * and end, so that its ranks, started by it, find the run's name taken.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rt.h"

RP_HIDDEN int rp_mpi_rank(char *buf, size_t n)
{
    static const char *const vars[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK",
                                       "SLURM_PROCID"};
    for (size_t i = 0; i < sizeof(vars) / sizeof(vars[0]); i++) {
        const char *v = getenv(vars[i]);
        size_t k = v ? strspn(v, "0123456789") : 0;
        if (k && !v[k] && k < n && k <= 9) {
            memcpy(buf, v, k + 1);
            return 1;
        }
    }
    return 0;
}

RP_API int rp_info_add(const char *key, const char *value)
{
    if (!key || !value || !*key)
        return RP_EINVAL;
    return rp_rt_info_now(key, value);
}

RP_HIDDEN int rp_mpi_launcher(void)
{
    static const char *const names[] = {
        "mpirun",         "mpiexec",       "orterun",         "orted", "prterun",
        "prted",          "mpiexec.hydra", "hydra_pmi_proxy", "srun",  "mpiexec.openmpi",
        "mpirun.openmpi", "mpiexec.mpich", "mpirun.mpich"};
    const char *keep = getenv("RANKPROF_LAUNCHER");
    if (keep && !strcmp(keep, "record"))
        return 0;
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n <= 0)
        return 0;
    exe[n] = 0;
    const char *b = strrchr(exe, '/');
    b = b ? b + 1 : exe;
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (!strcmp(b, names[i]))
            return 1;
    return 0;
}

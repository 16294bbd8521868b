// SPDX-License-Identifier: MIT
/*
 * locks.h - what the lock recorder (locks.c) offers the rest of the
 * recorder: the names given to locks through rp_lock_name(), for the
 * encoder's DEFS entries, and the calls that take its own mutexes.
 */
#ifndef RP_RECORD_LOCKS_H
#define RP_RECORD_LOCKS_H

#include <pthread.h>
#include <stdint.h>

#include "clock.h"    /* RP_HIDDEN */
#include "rankprof.h" /* RP_LOCK_NAME_MAX */

/*
 * The name rp_lock_name() gave the lock at address key, or NULL if it has
 * none.  Lock-free and safe from any thread; the returned string lives as
 * long as the process.  Matches the encoder's rp_enc.lock_name hook.
 */
RP_HIDDEN const char *rp_lock_name_of(uint64_t key);

/*
 * The recorder's own mutexes are taken through these (locks.c says why):
 * the real pthread functions, never an interposer.  Same results as those.
 */
RP_HIDDEN int rp_own_lock(pthread_mutex_t *m);
RP_HIDDEN int rp_own_trylock(pthread_mutex_t *m);
RP_HIDDEN int rp_own_unlock(pthread_mutex_t *m);
RP_HIDDEN int rp_own_cond_wait(pthread_cond_t *c, pthread_mutex_t *m);
RP_HIDDEN int rp_own_cond_timedwait(pthread_cond_t *c, pthread_mutex_t *m,
                                    const struct timespec *ts);

#endif /* RP_RECORD_LOCKS_H */

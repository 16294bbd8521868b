/*
 * locks.h - what the lock recorder (locks.c) offers the rest of the
 * recorder: the names given to locks through rp_lock_name(), for the
 * encoder's DEFS entries.
 */
#ifndef RP_RECORD_LOCKS_H
#define RP_RECORD_LOCKS_H

#include <stdint.h>

#include "clock.h"    /* RP_HIDDEN */
#include "rankprof.h" /* RP_LOCK_NAME_MAX */

/*
 * The name rp_lock_name() gave the lock at address key, or NULL if it has
 * none.  Lock-free and safe from any thread; the returned string lives as
 * long as the process.  Matches the encoder's rp_enc.lock_name hook.
 */
RP_HIDDEN const char *rp_lock_name_of(uint64_t key);

#endif /* RP_RECORD_LOCKS_H */

// SPDX-License-Identifier: MIT
/*
 * hints.h - what a profile lacks and how to get it: no function recorded
 * (a program built without -finstrument-functions), functions without a
 * name (a stripped binary, code outside any mapped file), inline functions
 * the hooks kept out of line taking much of the time, loops of calls whose
 * hooks' cost the compensation took out (right unless they poll).
 */
#ifndef RP_ANALYZE_HINTS_H
#define RP_ANALYZE_HINTS_H

#include "profile.h"

/*
 * Adds to p's warnings (rp_profile_warn) one line per thing the user
 * should know and can fix, for a named profile (rp_profile_symbolize has
 * run).  Cannot fail: a hint that cannot be worked out is left out.
 */
void rp_profile_hints(struct rp_profile *p);

#endif /* RP_ANALYZE_HINTS_H */

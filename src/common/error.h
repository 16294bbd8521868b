// SPDX-License-Identifier: MIT
/*
 * error.h - result codes, for the sources that do not otherwise include the
 * public header.  The codes themselves are public: include/rankprof.h.
 */
#ifndef RP_COMMON_ERROR_H
#define RP_COMMON_ERROR_H

#include "rankprof.h"

#endif /* RP_COMMON_ERROR_H */

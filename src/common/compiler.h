// SPDX-License-Identifier: MIT
/*
 * compiler.h - the compiler hints the analyzer's internal headers share:
 * symbols shared between its files but hidden from the library's users,
 * and the branch weights of hot loops.
 */
#ifndef RP_COMMON_COMPILER_H
#define RP_COMMON_COMPILER_H

#ifndef RP_HIDDEN
#define RP_HIDDEN __attribute__((visibility("hidden")))
#endif
#ifndef likely
#define likely(x)   __builtin_expect(!!(x), 1)
#define unlikely(x) __builtin_expect(!!(x), 0)
#endif

#endif /* RP_COMMON_COMPILER_H */

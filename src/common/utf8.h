// SPDX-License-Identifier: MIT
/*
 * utf8.h - the UTF-8 validity rule every layer that prints names shares:
 * the profile's name checks (analyze/) and the report writers (report/).
 */
#ifndef RP_COMMON_UTF8_H
#define RP_COMMON_UTF8_H

#include <stddef.h>

/*
 * Length of the valid UTF-8 sequence at s[0..len) (len >= 1), or minus the
 * length of the maximal invalid subpart there, which one U+FFFD replaces
 * (the Unicode "substitution of maximal subparts" rule).  Cannot fail.
 */
static inline int rp_utf8_seq(const unsigned char *s, size_t len)
{
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    int need;

    if (c < 0x80)
        return 1;
    if (c < 0xC2)
        return -1;
    if (c < 0xE0) {
        need = 1;
    } else if (c < 0xF0) {
        need = 2;
        if (c == 0xE0)
            lo = 0xA0;
        else if (c == 0xED)
            hi = 0x9F;
    } else if (c < 0xF5) {
        need = 3;
        if (c == 0xF0)
            lo = 0x90;
        else if (c == 0xF4)
            hi = 0x8F;
    } else {
        return -1;
    }
    for (int k = 1; k <= need; k++) {
        if ((size_t)k >= len || s[k] < lo || s[k] > hi)
            return -k;
        lo = 0x80;
        hi = 0xBF;
    }
    return need + 1;
}

#endif /* RP_COMMON_UTF8_H */

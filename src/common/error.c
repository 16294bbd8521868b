// SPDX-License-Identifier: MIT
/*
 * error.c - messages for the RP_E* result codes.
 */
#include "rankprof.h"

const char *rp_strerror(int code)
{
    /* clang-format off: one line per code */
    switch (code) {
    case RP_OK:
        return "success";
    case RP_ENOMEM:
        return "out of memory";
    case RP_EIO:
        return "input/output error";
    case RP_EFORMAT:
        return "not a rankprof trace or malformed record";
    case RP_ETRUNC:
        return "file is truncated";
    case RP_ECRC:
        return "checksum mismatch (file is corrupted)";
    case RP_EVERSION:
        return "unsupported trace version";
    case RP_EINVAL:
        return "invalid argument";
    case RP_ENOENT:
        return "not found";
    case RP_EBUSY:
        return "recorder is busy or not running";
    default:
        return "unknown error";
    }
    /* clang-format on */
}

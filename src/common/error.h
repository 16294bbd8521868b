/*
 * error.h - result codes.  Library functions return 0 or one of these
 * negative codes; rp_strerror() (error.c) gives the message.  Kept in step
 * with the public copy in include/rankprof.h.
 */
#ifndef RP_COMMON_ERROR_H
#define RP_COMMON_ERROR_H

#define RP_OK        0
#define RP_ENOMEM    (-1) /* out of memory */
#define RP_EIO       (-2) /* read or write failed (errno has more) */
#define RP_EFORMAT   (-3) /* not a rankprof trace, or a malformed record */
#define RP_ETRUNC    (-4) /* the file ends inside a header or chunk */
#define RP_ECRC      (-5) /* a checksum does not match */
#define RP_EVERSION  (-6) /* a trace version this build cannot read */
#define RP_EINVAL    (-7) /* a bad argument */
#define RP_ENOENT    (-8) /* no such file, name or entry */
#define RP_EBUSY     (-9) /* the recorder is not in a state to do that */

#endif /* RP_COMMON_ERROR_H */

/*
 * rankprof.h - the public API of the rankprof recorder.
 *
 * A program built with -finstrument-functions needs none of this: running it
 * under `rankprof record` (or with librankprof.so preloaded) records every
 * function.  This header is for controlling the recorder from the program
 * and, as the API grows, for naming regions, locks and devices.
 *
 * Every function returns 0 or a negative RP_E* code; rp_strerror() says what
 * the code means.  None of them ever terminates the program.
 *
 * Define RANKPROF_DISABLE before including this header to compile every
 * rankprof call away.
 */
#ifndef RANKPROF_H
#define RANKPROF_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Result codes. */
#define RP_OK       0
#define RP_ENOMEM   (-1) /* out of memory */
#define RP_EIO      (-2) /* read or write failed (errno has more) */
#define RP_EFORMAT  (-3) /* not a rankprof trace, or a malformed record */
#define RP_ETRUNC   (-4) /* the file ends inside a header or chunk */
#define RP_ECRC     (-5) /* a checksum does not match */
#define RP_EVERSION (-6) /* a trace version this build cannot read */
#define RP_EINVAL   (-7) /* a bad argument */
#define RP_ENOENT   (-8) /* no such file, name or entry */
#define RP_EBUSY    (-9) /* the recorder is not in a state to do that */

/* Event classes, a bit each in the masks of rp_classes_set(). */
#define RP_CLASS_BIT_FUNC  (1u << 0)
#define RP_CLASS_BIT_POINT (1u << 1)
#define RP_CLASS_BIT_LOCK  (1u << 2)
#define RP_CLASS_BIT_IO    (1u << 3)
#define RP_CLASS_BIT_TIMER (1u << 4)
#define RP_CLASS_BIT_USER  (1u << 5)
#define RP_CLASS_BIT_ALL   0x3fu

#if defined(RP_BUILDING_RUNTIME)
#define RP_API __attribute__((visibility("default")))
#else
#define RP_API
#endif

#ifndef RANKPROF_DISABLE

/* The message for a result code; never NULL. */
RP_API const char *rp_strerror(int code);

/*
 * Switches event classes on (bits in `on`) and off (bits in `off`) at run
 * time; a switched-off class costs one predictable branch per event.
 * Returns the previous mask.
 */
RP_API uint32_t rp_classes_set(uint32_t on, uint32_t off);

/*
 * Hands the calling thread's buffered events to the writer and waits until
 * everything published so far is in the trace file.  Returns 0, RP_EBUSY when
 * the recorder is not recording, or RP_EIO when the writer has failed.
 */
RP_API int rp_flush(void);

#else /* RANKPROF_DISABLE: everything compiles to nothing */

#define rp_strerror(code)       ((void)(code), "rankprof disabled")
#define rp_classes_set(on, off) ((void)(on), (void)(off), 0u)
#define rp_flush()              (0)

#endif /* RANKPROF_DISABLE */

#ifdef __cplusplus
}
#endif

#endif /* RANKPROF_H */

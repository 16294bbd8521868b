#!/bin/sh
# SPDX-License-Identifier: MIT
# firmware/build.sh OUTDIR [CFLAGS...] - builds the bundled firmware example
# (examples/firmware.c) for QEMU's mps2-an385 (Cortex-M3) with the bare-metal
# recorder: OUTDIR/firmware.elf, and OUTDIR/rp_bare.o, rp_bare_cm.o (whose
# size is the recorder's footprint).  CFLAGS go to the example and its
# start-up code, $RP_BARE_CFLAGS to the recorder (-DRP_BARE_FUNC_STATS: the
# functions' statistics on the target).  Exits 77 when arm-none-eabi-gcc is
# missing, 1 when a build step fails.
set -e
here=$(cd "$(dirname "$0")/.." && pwd)
out=${1:?usage: firmware/build.sh OUTDIR [CFLAGS...]}
shift
CC=${ARM_CC:-arm-none-eabi-gcc}
command -v "$CC" >/dev/null 2>&1 || { echo "firmware/build.sh: $CC not found" >&2; exit 77; }
mkdir -p "$out"
ARCH="-mcpu=cortex-m3 -mthumb"
COMMON="$ARCH -g -ffreestanding -fno-tree-loop-distribute-patterns -ffunction-sections -fdata-sections -Wall -Wextra -I$here/include -I$here/src"
# the recorder: optimised for size, never instrumented
$CC $COMMON -Os ${RP_BARE_CFLAGS:-} -c "$here/src/bare/rp_bare.c" -o "$out/rp_bare.o"
$CC $COMMON -Os -c "$here/src/bare/rp_bare_cm.c" -o "$out/rp_bare_cm.o"
$CC $COMMON -O1 "$@" -c "$here/firmware/startup.c" -o "$out/startup.o"
# the application: as on Linux, -O1 -fno-inline -finstrument-functions
$CC $COMMON -O1 -fno-inline -finstrument-functions -DRP_BARE "$@" \
    -c "$here/examples/firmware.c" -o "$out/firmware.o"
$CC $ARCH -nostartfiles -T "$here/firmware/mps2_an385.ld" -Wl,--gc-sections -Wl,-Map="$out/firmware.map" \
    -o "$out/firmware.elf" "$out/startup.o" "$out/firmware.o" "$out/rp_bare.o" \
    "$out/rp_bare_cm.o" -lc -lgcc

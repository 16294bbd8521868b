#!/bin/sh
# SPDX-License-Identifier: MIT
# firmware-demo.sh BUILD - `make firmware-demo`: builds examples/firmware.c
# for Cortex-M3 with the bare-metal recorder (firmware/build.sh) in
# BUILD/firmware, runs it under QEMU (mps2-an385, -icount shift=0), names the
# trace from the ELF (rankprof import) and shows the ranked report.  Fails,
# saying what to install, without arm-none-eabi-gcc or qemu-system-arm.
set -e
build=${1:-build}
here=$(cd "$(dirname "$0")/.." && pwd)
for t in arm-none-eabi-gcc qemu-system-arm; do
    command -v $t >/dev/null 2>&1 || {
        echo "firmware-demo: $t is missing: apt-get install gcc-arm-none-eabi" \
            "libnewlib-arm-none-eabi qemu-system-arm (or scripts/deps.sh ci)" >&2
        exit 1
    }
done
out=$build/firmware
"$here/firmware/build.sh" "$out"
(cd "$out" && qemu-system-arm -M mps2-an385 -nographic -monitor none \
    -semihosting-config enable=on,target=native -icount shift=0 -kernel firmware.elf)
"$build/rankprof" import --elf "$out/firmware.elf" -o "$out/firmware.data" "$out/firmware.rpt"
"$here/firmware/footprint.sh" "$out"
echo "\$ rankprof report -i $out/firmware.data"
"$build/rankprof" report -i "$out/firmware.data"

#!/bin/sh
# SPDX-License-Identifier: MIT
# firmware/footprint.sh OUTDIR - the flash and RAM the bare-metal recorder
# takes in OUTDIR/firmware.elf as linked (--gc-sections: what the example
# uses), from the link map OUTDIR/firmware.map: one line
#   recorder flash=N ram=M
# counting rp_bare.o and rp_bare_cm.o (the clock and sink used), and the
# libgcc helpers they pull in.  Exits 1 when the map is missing.
map=${1:?usage: firmware/footprint.sh OUTDIR}/firmware.map
test -f "$map" || { echo "footprint.sh: no $map" >&2; exit 1; }
awk '
/^Linker script and memory map/ { on = 1 }
/^ \.[a-zA-Z_.]+[ \t]*$/ { sec = $1; next }
/^ \.[a-zA-Z_.]+[ \t]+0x/ { sec = $1; addr = $2; size = $3; file = $4; take(); next }
/^[ \t]+0x[0-9a-f]+[ \t]+0x[0-9a-f]+[ \t]+[^ ]/ { if (sec != "") { addr = $1; size = $2; file = $3; take() } }
{ sec = "" }
function hex(s,  i, v, c) {
    v = 0
    s = tolower(substr(s, 3))
    for (i = 1; i <= length(s); i++) {
        c = index("0123456789abcdef", substr(s, i, 1)) - 1
        v = v * 16 + c
    }
    return v
}
function take() {
    if (!on || file !~ /rp_bare(_cm)?\.o$/) return
    n = hex(size)
    if (sec ~ /^\.(text|rodata)/) flash += n
    else if (sec ~ /^\.(data|bss)/) ram += n
    if (sec ~ /^\.data/) flash += n
}
END { printf "recorder flash=%d ram=%d\n", flash, ram }' "$map"

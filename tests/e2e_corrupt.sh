#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_corrupt.sh - the corruption sweep (docs/robustness.md): damaged copies
# of real traces never crash or hang `rankprof report` / `info`, and never
# give silently wrong numbers.
#
#  1. corrupt_sweep (tests/fuzz/sweep.c) cuts two fresh traces at EVERY
#     offset and flips bits and bytes at many offsets, reading each copy
#     strictly and with --force in process, with the rules stated there.
#  2. The real command on a sample of the same damage (the first bytes of
#     every chunk header and payload, and a stride through the file; under
#     ASan every other chunk's, not under TSan): each run
#     exits 0 or 1 within 20 s (never a signal, never a hang); a failure
#     names the offset; a success on a damaged copy warns, or prints exactly
#     the report of the intact trace.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_corrupt RANKPROF PROGS RP_LIB
sweep="$PROGS/fuzz/corrupt_sweep"
[[ -x "$sweep" ]] || fail "$sweep is missing"
export RANKPROF_LIB="$RP_LIB"

# A one-thread trace (calltree), and a three-thread one cut into many small
# EVENTS chunks (4 KiB buffers), with a LOST record (drop mode, tiny ring).
"$RANKPROF" record -o "$tmp/one.data" -- "$PROGS/prog_calltree" >/dev/null 2>&1 ||
    fail "recording prog_calltree"
RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=2 RANKPROF_TEST_WRITER_DELAY_US=2000 \
    "$RANKPROF" record --drop -o "$tmp/three.data" -- "$PROGS/prog_stress" threads 3 300 \
    >/dev/null 2>&1 || fail "recording prog_stress"
"$RANKPROF" info -i "$tmp/three.data" | grep -q "^threads: *4" || fail "three.data: not 4 threads"

# 1. in process: every truncation; flips at every byte of the small trace,
#    every 5th of the larger one.  Under ASan+UBSan (ten times slower), whose
#    fuzzing stage explores the same reader (scripts/fuzz.sh), a sample:
#    every 8th / 50th flip offset, every 8th cut of the larger one; under
#    TSan, whose subject is the replay's workers rather than each offset,
#    fewer (every 12th / 75th, every 12th cut).
sweep() { # NAME ARGS...
    local name=$1
    shift
    "$sweep" "$tmp/$name.data" "$@" || fail "sweep of $name.data"
}
if under_tsan; then
    scenario sweep_one sweep one 12
    scenario sweep_three sweep three 75 12
elif sanitized; then
    scenario sweep_one sweep one 8
    scenario sweep_three sweep three 50 8
else
    scenario sweep_one sweep one 1
    scenario sweep_three sweep three 5
fi

# 2. the command line on a sample
cli() {
    local n off
    python3 - "$tmp/three.data" "$tmp" >"$tmp/offsets" <<'PY'
import os, struct, sys
b = open(sys.argv[1], "rb").read()
san = os.environ.get("RP_SANITIZE", "")  # ten times slower: fewer runs
offs, off, k = {0, 8, 12, 31, 32, len(b) - 1}, 32, 0
while off + 16 <= len(b):
    ln = struct.unpack_from("<I", b, off + 4)[0]
    if not san or k % 2 == 0:  # (sanitized: every other chunk)
        for d in ((0, 16) if san else (0, 4, 16)):
            offs.add(off + d)
    off, k = off + 16 + ln, k + 1
offs.update(range(0, len(b), 1409 if san else 211))
offs = sorted(x for x in offs if x < len(b))
for o in offs:  # the flipped copies, made here at once
    c = bytearray(b); c[o] ^= 0x5a
    open(f"{sys.argv[2]}/flip.{o}", "wb").write(c)
print(" ".join(str(o) for o in offs))
PY
    "$RANKPROF" report -i "$tmp/three.data" --format json >"$tmp/orig.json" 2>/dev/null
    n=0
    run() { # what offset cmd...: exit 0/1 within 20 s; an error names an offset
        local what=$1 off=$2 rc=0
        shift 2
        timeout 20 "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
        ((rc == 124)) && fail "$what at $off: '$*' hung"
        ((rc <= 1)) || fail "$what at $off: '$*' exited $rc (a signal?): $(head -3 "$tmp/err")"
        if ((rc == 1)); then
            grep -q "offset" "$tmp/err" || fail "$what at $off: error names no offset: $(cat "$tmp/err")"
        fi
        n=$((n + 1))
        return $rc
}
for off in $(cat "$tmp/offsets"); do
    head -c "$off" "$tmp/three.data" >"$tmp/cut.data"
    run "cut" "$off" "$RANKPROF" info -i "$tmp/cut.data" || true
    run "cut" "$off" "$RANKPROF" report -i "$tmp/cut.data" || true
    if ((off >= 32)); then
        run "cut" "$off" "$RANKPROF" report --force -i "$tmp/cut.data" ||
            fail "cut at $off: report --force failed on a sound header"
        grep -q "warning" "$tmp/err" || fail "cut at $off: report --force gave no warning"
    fi
    mv "$tmp/flip.$off" "$tmp/flip.data"
    run "flip" "$off" "$RANKPROF" info -i "$tmp/flip.data" || true
    if run "flip" "$off" "$RANKPROF" report --format json -i "$tmp/flip.data"; then
        grep -q "warning" "$tmp/err" || cmp -s "$tmp/out" "$tmp/orig.json" ||
            fail "flip at $off: a different report without a warning"
    fi
    run "flip" "$off" "$RANKPROF" report --force -i "$tmp/flip.data" || true
done
echo "e2e_corrupt: $n runs of the command on damaged copies: no signal, no hang, errors name the offset: ok"
}
# (not under TSan: one small file's replays on the command line give its
# race detection nothing the in-process sweep above does not, at 300 runs
# of an instrumented process)
under_tsan || scenario cli cli
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_inlined.sh - end-to-end test of the compiler options that keep the
# instrumentation's own cost down (docs/instrumenting.md): tests/progs/inlined.c
# built here with GCC -finstrument-functions (inlined copies are instrumented),
# GCC with -finstrument-functions-exclude-function-list=mix, and clang
# -finstrument-functions-after-inlining, each recorded in trace mode; the
# exact call counts and functions of the program's header are checked.
# A compiler that is absent is a noted skip (exit 77 when nothing failed);
# under sanitizers the test is skipped: these programs are built without
# the sanitizer runtime the preloaded recorder needs.
#
# Run by ctest with RANKPROF and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_inlined RANKPROF RP_LIB

if sanitized; then
    note "skipped under sanitizers ($RP_SANITIZE): the programs built here lack the sanitizer runtime"
    exit 77
fi
src="$srcdir/tests/progs/inlined.c"
export RANKPROF_LIB="$RP_LIB"
N=1000

# run_case NAME COMPILER WANT FLAGS...: build, record, and compare the
# "name=calls" list of the functions (sorted) with WANT
run_case() {
    local name=$1 cc=$2 want=$3
    shift 3
    "$cc" -O2 -g "$@" -o "$tmp/$name" "$src" || fail "$name: $cc $* did not build"
    $TMO "$RANKPROF" record -o "$tmp/$name.data" -- "$tmp/$name" $N >"$tmp/$name.out" 2>&1 ||
        fail "$name: record failed: $(cat "$tmp/$name.out")"
    "$RANKPROF" report -i "$tmp/$name.data" --format csv >"$tmp/$name.csv" || fail "$name: report failed"
    local got
    got=$(awk -F, 'NR > 1 && $2 == "func" { print $1 "=" $3 }' "$tmp/$name.csv" | sort | tr '\n' ' ')
    [[ "$got" == "$want" ]] || fail "$name: functions '$got', want '$want'"
    # the hint on inline functions hooked out of line: mix, declared inline,
    # in the GCC build that instruments it (its DWARF says so), and nothing
    # on outer (as short, not declared inline) in the others; measured
    # times, so that mix's share of the CPU is its calls' cost
    "$RANKPROF" report -i "$tmp/$name.data" --no-compensate --format json >"$tmp/$name.json" ||
        fail "$name: report --format json failed"
    python3 - "$tmp/$name.json" "$name" <<'PY' || fail "$name: the hint on inline functions"
import json, sys
r, name = json.load(open(sys.argv[1])), sys.argv[2]
hint = [w for w in r["warnings"] if "declared inline" in w]
if name == "gcc_all":
    if len(hint) != 1 or "ran out of line with the hooks (mix)" not in hint[0] \
            or "docs/instrumenting.md" not in hint[0]:
        sys.exit(f"{name}: warnings {r['warnings']}, want one naming mix")
elif hint:
    sys.exit(f"{name}: the hint on inline functions where none is: {hint}")
PY
}

if command -v gcc >/dev/null; then
    scenario gcc_all run_case gcc_all gcc "main=1 mix=$((2 * N)) outer=$N " -finstrument-functions
    scenario gcc_exclude run_case gcc_exclude gcc "main=1 outer=$N " \
        -finstrument-functions -finstrument-functions-exclude-function-list=mix
else
    missing gcc "the GCC cases need gcc"
fi
if command -v clang >/dev/null; then
    scenario clang_after_inlining run_case clang_after_inlining clang "main=1 outer=$N " \
        -finstrument-functions-after-inlining
else
    missing clang "the clang case needs clang (scripts/deps.sh bench installs it)"
fi
finish

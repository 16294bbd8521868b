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

# copies NAME FOLDED FLAGS...: tests/progs/copies, whose header's static
# inline sq each of its two files puts out of line (GCC, -O1): with debug
# information its two copies (one name, file and line) are one node, sq
# 3N calls, from part_a N and part_b 2N, in the report, the table and the
# call paths, and the two static helpers of a.c and b.c stay two; without
# it (FOLDED 0) nothing tells the copies from two functions of one name,
# and none is folded
copies() {
    local name=$1 folded=$2
    shift 2
    gcc -O1 "$@" -finstrument-functions -o "$tmp/$name" "$srcdir/tests/progs/copies/a.c" \
        "$srcdir/tests/progs/copies/b.c" || fail "$name: gcc $* did not build"
    $TMO "$RANKPROF" record -o "$tmp/$name.data" -- "$tmp/$name" $N >"$tmp/$name.out" 2>&1 ||
        fail "$name: record failed: $(cat "$tmp/$name.out")"
    "$RANKPROF" report -i "$tmp/$name.data" --format json >"$tmp/$name.json" 2>/dev/null &&
        COLUMNS=200 "$RANKPROF" report -i "$tmp/$name.data" >"$tmp/$name.txt" 2>/dev/null &&
        "$RANKPROF" export --format folded -i "$tmp/$name.data" -o "$tmp/$name.folded" \
            2>/dev/null || fail "$name: report or export failed"
    python3 - "$tmp/$name" $N "$folded" <<'PY' || fail "$name: (above)"
import json, sys
base, n, folded = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
r = json.load(open(base + ".json"))
def die(m):
    sys.exit(f"e2e_inlined: FAIL: {m}")
sq = [x for x in r["nodes"] if x["name"] == "sq"]
helpers = sorted((x.get("file", "").rsplit("/", 1)[-1], x["calls"]) for x in r["nodes"]
                 if x["name"] == "helper")
edges = {(e["caller"], e["callee"]): e["calls"] for e in r["edges"]}
if not folded:
    if r["folded_copies"] != 0 or sorted(x["calls"] for x in sq) != [n, 2 * n]:
        die(f"without debug information: {r['folded_copies']} folded, sq nodes {sq}")
    print(f"copies: {len(sq)} sq nodes without debug information, none folded")
    sys.exit(0)
if r["folded_copies"] != 1 or len(sq) != 1 or sq[0]["calls"] != 3 * n:
    die(f"{r['folded_copies']} folded, sq nodes {[(x['calls'], x['file'], x['line']) for x in sq]}, "
        f"want one of {3 * n} calls")
if edges.get(("part_a", "sq")) != n or edges.get(("part_b", "sq")) != 2 * n:
    die(f"edges to sq: {[(k, v) for k, v in edges.items() if k[1] == 'sq']}")
if helpers != [("a.c", 1), ("b.c", 2)]:
    die(f"the two static helpers: {helpers}, want a.c's 1 call and b.c's 2 apart")
table = [l.split() for l in open(base + ".txt")]
if sum(1 for w in table if w and w[0].isdigit() and "sq" in w) != 1:
    die("the table has not one row of sq:\n" + open(base + ".txt").read())
paths = sorted(l.rsplit(" ", 1)[0] for l in open(base + ".folded") if l.split(" ")[0].endswith(";sq"))
if paths != ["main;part_a;sq", "main;part_b;sq"]:
    die(f"sq's call paths {paths}")
total = sum(int(l.rsplit(" ", 1)[1]) for l in open(base + ".folded") if l.split(" ")[0].endswith(";sq"))
if abs(total - sq[0]["exclusive_ns"]) > len(paths) + 1:
    die(f"sq's call paths add up to {total} ns, the report says {sq[0]['exclusive_ns']}")
print(f"copies: sq one node of {sq[0]['calls']} calls, {sq[0]['standing']:.3f} standing")
PY
}

if command -v gcc >/dev/null; then
    scenario gcc_all run_case gcc_all gcc "main=1 mix=$((2 * N)) outer=$N " -finstrument-functions
    scenario gcc_exclude run_case gcc_exclude gcc "main=1 outer=$N " \
        -finstrument-functions -finstrument-functions-exclude-function-list=mix
    scenario copies copies copies 1 -g
    scenario copies_nodebug copies copies_nodebug 0
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

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_filters.sh - end-to-end test of the export filters (--depth,
# --min-duration, --function, --exclude; docs/exports.md) on
# tests/progs/calltree, whose call tree is exact (its header): the folded
# paths and their time, the timelines' spans counted per name in the Chrome
# JSON, and, where installed, the slices and depths trace_processor reads
# from chrome and perfetto output; and the compact perfetto encoding (at
# most 8 bytes per call, 12 under sanitizers; -O compress=small at most 3,
# 4 under sanitizers; the same slices as plain).  A missing consumer skips its part
# (exit 77) unless RP_REQUIRE_CONSUMERS=1.
#
# Run by ctest with RANKPROF, PROGS, RP_LIB, EXAMPLES in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_filters RANKPROF PROGS RP_LIB EXAMPLES
need_tools python3
export RANKPROF_LIB="$RP_LIB"
export RANKPROF_CALIBRATE=0 # measured times: the folded totals are compared

cd "$tmp"
"$RANKPROF" record -o ct.data -- "$PROGS/prog_calltree" >/dev/null 2>&1 ||
    fail "recording prog_calltree"
"$RANKPROF" report -i ct.data --format json >report.json || fail "report --format json"

# The threshold for --min-duration: between leaf's longest span (1 unit) and
# the shortest of b and c (5 and 6 units), from the report, so that exactly
# the leaf spans are shorter; empty when preemption made them overlap.
min_dur=$(python3 - <<'EOF'
import json
n = {x["name"]: x for x in json.load(open("report.json"))["nodes"]}
lo, hi = n["leaf"]["max_ns"], min(n["b"]["min_ns"], n["c"]["min_ns"])
print(f"{(lo + hi) // 2}ns" if hi - lo > 4 else "")
EOF
)

# check_folded FILE WANT_PATHS TOTAL: the paths (off-CPU ones aside) are
# exactly WANT_PATHS (space-separated) and the values add up to TOTAL ns,
# within 1 ns per line (each line is rounded on its own)
check_folded() {
    python3 - "$@" <<'EOF' || fail "folded $1: $(cat folded_err.txt)"
import re, sys
path, want, total = sys.argv[1], set(sys.argv[2].split()), int(sys.argv[3])
paths = {}
for line in open(path):
    m = re.fullmatch(r"(.+) (\d+)\n", line)
    paths[m.group(1)] = int(m.group(2))
got = {p for p in paths if not p.endswith("[off-cpu]")}
err = []
if got != want:
    err.append(f"paths {sorted(got)} != {sorted(want)}")
if abs(sum(paths.values()) - total) > len(paths):
    err.append(f"total {sum(paths.values())} ns != {total}")
open("folded_err.txt", "w").write("; ".join(err))
sys.exit(1 if err else 0)
EOF
}

# The filters' expected spans, as "name:count" and as folded paths.
declare -A want_spans want_paths
want_spans[none]="a:3 b:6 c:4 leaf:38 main:1"
want_paths[none]="main main;a main;a;b main;a;b;leaf main;a;c main;a;c;leaf main;c main;c;leaf"
want_spans[depth]="a:3 c:1 main:1"
want_paths[depth]="main main;a main;c"
want_spans[function]="b:6 leaf:30"
want_paths[function]="b b;leaf"
want_spans[exclude]="c:1 leaf:2 main:1"
want_paths[exclude]="main main;c main;c;leaf"
want_spans[both]="a:3 b:6"
want_paths[both]="a a;b"
want_spans[short]="a:3 b:6 c:4 main:1"
want_paths[short]="main main;a main;a;b main;a;c main;c"
declare -A opts=([none]="" [depth]="--depth 2" [function]="-F b" [exclude]="--exclude a"
    [both]="--function a -N c -D 2" [short]="--min-duration $min_dur")
cases="none depth function exclude both"
if [[ -n "$min_dur" ]]; then
    cases+=" short"
else
    note "leaf and b/c durations overlap (a preempted run): --min-duration's counts not checked"
fi

# --- folded: the kept paths; a left-out span's time stays its caller's -------
folded() {
    "$RANKPROF" export -i ct.data --format folded -o all.folded || fail "export folded"
    total=$(awk '{ s += $NF } END { print s }' all.folded)
    b_incl=$(python3 -c 'import json; print(next(n["inclusive_ns"] for n in
        json.load(open("report.json"))["nodes"] if n["name"] == "b"))')
    for c in $cases; do
        # shellcheck disable=SC2086
        "$RANKPROF" export -i ct.data --format folded ${opts[$c]} -o $c.folded ||
            fail "export folded ${opts[$c]}"
        t=$total
        [[ $c == function ]] && t=$b_incl # only b's subtrees: b's inclusive time
        [[ $c == both ]] && t=$(python3 -c 'import json; print(next(n["inclusive_ns"] for n in
            json.load(open("report.json"))["nodes"] if n["name"] == "a"))')
        check_folded $c.folded "${want_paths[$c]}" "$t"
    done
    # --min-duration with a threshold above every span: nothing is left
    "$RANKPROF" export -i ct.data --format folded -t 1000s -o none.folded ||
        fail "export folded -t 1000s"
    [[ ! -s none.folded ]] || fail "folded -t 1000s kept spans: $(head -3 none.folded)"
    # flame graph and pprof take the filters too
    "$RANKPROF" export -i ct.data --format flamegraph -F b -o b.svg || fail "export flamegraph -F b"
    grep -q ">main<" b.svg && fail "flamegraph -F b still draws main"
    grep -q "leaf" b.svg || fail "flamegraph -F b lost leaf"
    "$RANKPROF" export -i ct.data --format pprof -N a -o na.pb.gz || fail "export pprof -N a"
    "$RANKPROF" export -i ct.data --format html -D 1 -o d1.html || fail "export html -D 1"
}

# --- timelines: spans per name in the Chrome JSON, nesting by trace_processor
timelines() {
    for c in $cases; do
        # shellcheck disable=SC2086
        "$RANKPROF" export -i ct.data --format chrome ${opts[$c]} -o $c.json ||
            fail "export chrome ${opts[$c]}"
        # shellcheck disable=SC2086
        "$RANKPROF" export -i ct.data --format perfetto ${opts[$c]} -o $c.pftrace ||
            fail "export perfetto ${opts[$c]}"
        got=$(python3 - $c.json <<'EOF'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
b = collections.Counter(e["name"] for e in ev if e["ph"] == "X")
# every span one complete event: its end is its dur (no B/E pairs)
e = sum(1 for x in ev if x["ph"] == "X" and x["dur"] >= 0 and "ts" in x)
print(" ".join(f"{k}:{b[k]}" for k in sorted(b) if k != "[off-cpu]"),
      "ends" if e == sum(b.values()) and not any(x["ph"] in "BE" for x in ev)
      else f"ends {e} of {sum(b.values())}")
EOF
)
        [[ "$got" == "${want_spans[$c]} ends" ]] ||
            fail "chrome ${opts[$c]}: spans '$got', want '${want_spans[$c]} ends'"
    done
    if tp_query_build tp_query; then
        declare -A depths=([none]="a@1:3 b@2:6 c@1:1 c@2:3 leaf@2:2 leaf@3:36 main@0:1"
            [depth]="a@1:3 c@1:1 main@0:1" [function]="b@0:6 leaf@1:30"
            [exclude]="c@1:1 leaf@2:2 main@0:1" [both]="a@0:3 b@1:6"
            [short]="a@1:3 b@2:6 c@1:1 c@2:3 main@0:1")
        for c in $cases; do
            for f in $c.json $c.pftrace; do
                got=$(./tp_query $f "select group_concat(name || '@' || depth || ':' || n, ' ')
                      from (select name, depth, count(*) n from slice where name != '[off-cpu]'
                            group by name, depth order by name, depth)") ||
                    fail "trace_processor rejected $f"
                [[ "$got" == "${depths[$c]}" ]] ||
                    fail "$f (${opts[$c]}): trace_processor's slices '$got', want '${depths[$c]}'"
            done
        done
        note "trace_processor reads the filtered chrome and perfetto exports"
    else
        missing trace_processor "Debian packages chromium-shell (its $TP_LIB), clang, libc++-dev"
    fi
}

# --- bad filters: a clear error naming the option, no output ---------------
errors() {
    bad() { # WHAT ARGS...: the export must fail, naming WHAT
        if "$RANKPROF" export -i ct.data -o bad.out "${@:2}" 2>err.txt; then
            fail "export ${*:2} was accepted"
        fi
        grep -q -- "$1" err.txt || fail "export ${*:2}: the error does not name $1: $(cat err.txt)"
        [[ ! -e bad.out ]] || fail "export ${*:2} left its output"
    }
    bad --depth --format folded --depth 0
    bad --depth --format folded --depth x
    bad --min-duration --format chrome -t 10parsecs
    bad --min-duration --format chrome --min-duration -1us
    bad nosuch --format perfetto -F nosuch
    bad nosuch --format folded --exclude nosuch
    bad --depth --format json -D 2
    bad --function --format callgrind -F main
}

# --- compact perfetto: compressed batches, delta timestamps: <= 8 bytes a call
# (12 sanitized); -O compress=small (libdeflate): <= 3 (4 sanitized)
compact() {
    "$RANKPROF" record -o tiny.data -- "$PROGS/prog_tiny" 20 5000 16 >/dev/null 2>&1 ||
        fail "recording prog_tiny"
    "$RANKPROF" report -i tiny.data --format json >tiny.json || fail "report prog_tiny"
    "$RANKPROF" export -i tiny.data --format perfetto -o tiny.pftrace || fail "export perfetto"
    "$RANKPROF" export -i tiny.data --format perfetto -O compress=0 -o plain.pftrace ||
        fail "export perfetto -O compress=0"
    "$RANKPROF" export -i tiny.data --format perfetto -O compress=small -o small.pftrace ||
        fail "export perfetto -O compress=small"
    # (a sanitized program runs slower: its deltas are longer, 3.1 bytes a
    # call under TSan against 1.5 with libdeflate, and each byte more of a
    # delta is 9 bits more by default; without delta timestamps it is over
    # 5 with libdeflate, over 11 by default)
    local limit=8 slimit=3
    sanitized && limit=12 slimit=4
    LIMIT=$limit SLIMIT=$slimit python3 - <<'EOF2' || fail "perfetto size: $(cat size_err.txt)"
import json, os
calls = sum(n["calls"] for n in json.load(open("tiny.json"))["nodes"])
z, plain = os.path.getsize("tiny.pftrace"), os.path.getsize("plain.pftrace")
small = os.path.getsize("small.pftrace")
err = []
if calls < 100000:
    err.append(f"prog_tiny made only {calls} calls")
# 10 is the promise; delta timestamps make it about 6 (11 without them), 1.7
# with libdeflate (5 without them)
limit, slimit = int(os.environ["LIMIT"]), int(os.environ["SLIMIT"])
if z > limit * calls:
    err.append(f"{z} bytes for {calls} calls: {z / calls:.2f} per call, more than {limit}")
if small > slimit * calls:
    err.append(f"compress=small: {small} bytes for {calls} calls: {small / calls:.2f} per call, "
               f"more than {slimit}")
if plain < 20 * calls:
    err.append(f"-O compress=0 is {plain / calls:.2f} bytes per call: not plain")
open("size_err.txt", "w").write("; ".join(err))
print(f"perfetto: {z / calls:.2f} bytes per call, {small / calls:.2f} small, "
      f"{plain / calls:.2f} plain")
exit(1 if err else 0)
EOF2
    if "$RANKPROF" export -i tiny.data --format perfetto -O compress=2 -o bad.pftrace 2>err.txt; then
        fail "-O compress=2 was accepted"
    fi
    grep -q "compress=2" err.txt || fail "-O compress=2: the error does not name it: $(cat err.txt)"
    if [[ -x ./tp_query ]]; then
        q="select name, count(*), sum(dur) from slice group by name order by name"
        ./tp_query tiny.pftrace "$q" >z.tsv || fail "trace_processor rejected tiny.pftrace"
        ./tp_query plain.pftrace "$q" >plain.tsv || fail "trace_processor rejected plain.pftrace"
        ./tp_query small.pftrace "$q" >small.tsv || fail "trace_processor rejected small.pftrace"
        cmp -s z.tsv plain.tsv || fail "compressed and plain perfetto differ: $(diff z.tsv plain.tsv | head -5)"
        cmp -s small.tsv plain.tsv || fail "small and plain perfetto differ: $(diff small.tsv plain.tsv | head -5)"
        want=$(python3 -c 'import json; print(next(n["calls"] for n in
            json.load(open("tiny.json"))["nodes"] if n["name"] == "leaf"))')
        got=$(awk -F'\t' '$1 == "leaf" { print $2 }' z.tsv)
        [[ "$got" == "$want" ]] || fail "trace_processor counts $got leaf slices, the report $want calls"
    else
        missing trace_processor "Debian packages chromium-shell, clang, libc++-dev"
    fi
}

for s in folded timelines errors compact; do
    scenario $s $s
done
finish

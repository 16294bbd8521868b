#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_spanfilters.sh - the span filters of the commands that make a profile
# (report, graph, diff, tui; -F, -N, -D, -t, -r: docs/filters.md,
# src/analyze/spanfilter.h), counted in the parallel replay.
#
#   exact     prog_calltree (tests/progs/calltree.c, a known tree): the
#             calls and edges of -F a, -N b, -D 2, -r ~1ns (only main, the
#             first event), -r 1ns~ (all but main: its callees hang from
#             <root>), a glob; -N b moves b's time into a's own: a's
#             exclusive is a's without the filter plus b's inclusive (both
#             with -N '[off-cpu]': off-CPU time would stay off CPU)
#   folded    prog_threads (many chunks, replayed in parallel) under eight
#             filters: every function's exclusive time in the report equals
#             the sum of its self time in `export --format folded` with the
#             same filter (the sequential call-path tree, cct.c), calls
#             exact where known (-F work, -N leaf)
#   pausewin  prog_threads with 4-KiB buffers (each thread encodes its own
#             hundreds of times: every worker's span is open across PAUSEs,
#             and the later chunks' snapshots carry its start moved by
#             them): -r from 1 ns after the first worker's ENTER keeps
#             exactly the workers that began since (as `dump` shows them),
#             in order and in parallel, and `export --format folded` (in
#             parallel and sequential) agrees with the report
#   nosched   -N '[off-cpu]' (when there is any): no off-CPU row, its time
#             its callers' own (the functions' exclusive times, measured,
#             add up to the threads' time)
#   min       -t T: every function row kept has a minimum of at least T
#   mutual    prog_mutual (x -> y -> x ...): -F y keeps x's inner calls under
#             a left-out outer x; x's inclusive time is of its outermost kept
#             calls (at least its longest call, not 0)
#   deep      prog_scale deep 10000 (a stack resident across chunks):
#             -D 5 keeps deep_main and 4 rec, -F rec every rec, -N rec none
#   graph     `graph a -N b` lists no b; `diff A A -F work` finds nothing
#   locks     prog_contend 200: `locks -F mutex_worker` is counter_lock's
#             800 acquisitions of the workers alone (not main's); `locks -N
#             rw_worker` has every lock but the rwlock, named, with the
#             acquisitions `locks` counts without a filter
#   dump      dump -F a: the 48 enters and 48 exits of a's subtree; -D 1:
#             main's enter and exit alone; -t: refused (an enter is printed
#             before its length is known)
#   bad       -D 0, -t x, -r 5ms~1ms, -r 1s, -F nosuch: errors naming them
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_spanfilters RANKPROF PROGS RP_LIB
need_progs calltree threads scale mutual contend
need_tools python3
export RANKPROF_LIB="$RP_LIB"

# json TRACE ARGS... : report --format json into $tmp/r.json
json() {
    local trace=$1
    shift
    "$RANKPROF" report --format json "$@" "$trace" >"$tmp/r.json" 2>"$tmp/r.err" ||
        fail "report $*: $(cat "$tmp/r.err")"
}

# shape: "name:calls ..." sorted, then "caller>callee:calls ..." sorted
shape() {
    python3 - "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
n = sorted("%s:%d" % (x["name"], x["calls"]) for x in r["nodes"]
           if x["kind"] == "func" and x["calls"])
e = sorted("%s>%s:%d" % (x["caller"], x["callee"], x["calls"]) for x in r["edges"]
           if x["calls"] and "[off-cpu]" not in (x["caller"], x["callee"]))
print(" ".join(n) + " | " + " ".join(e))
PY
}

expect_shape() { # what want args...
    local what=$1 want=$2
    shift 2
    json "$tmp/ct.rp" "$@"
    got=$(shape)
    [[ $got == "$want" ]] || fail "$what: got
  $got
expected
  $want"
}

exact() {
    "$RANKPROF" record -o "$tmp/ct.rp" -- "$PROGS/prog_calltree" >/dev/null 2>&1 ||
        fail "record prog_calltree"
    expect_shape "-F a" "a:3 b:6 c:3 leaf:36 | <root>>a:3 a>b:6 a>c:3 b>leaf:30 c>leaf:6" -F a
    expect_shape "-N b" "a:3 c:4 leaf:8 main:1 | <root>>main:1 a>c:3 c>leaf:8 main>a:3 main>c:1" -N b
    expect_shape "-D 2" "a:3 c:1 main:1 | <root>>main:1 main>a:3 main>c:1" -D 2
    expect_shape "-r ~1ns" "main:1 | <root>>main:1" -r '~1ns'
    expect_shape "-r 1ns~" \
        "a:3 b:6 c:4 leaf:38 | <root>>a:3 <root>>c:1 a>b:6 a>c:3 b>leaf:30 c>leaf:8" -r '1ns~'
    expect_shape "--exclude 'l?af' --depth 3" \
        "a:3 b:6 c:4 main:1 | <root>>main:1 a>b:6 a>c:3 main>a:3 main>c:1" --exclude 'l?af' --depth 3
    # (without [off-cpu] in both: time off CPU inside b would stay off CPU,
    # not become a's own, on a loaded machine)
    local nosched=()
    json "$tmp/ct.rp"
    ! grep -qF '"[off-cpu]"' "$tmp/r.json" || nosched=(-N '[off-cpu]')
    json "$tmp/ct.rp" "${nosched[@]}"
    cp "$tmp/r.json" "$tmp/all.json"
    json "$tmp/ct.rp" -N b "${nosched[@]}"
    python3 - "$tmp/all.json" "$tmp/r.json" <<'PY' || fail "-N b: a's own time"
import json, sys
a = {n["name"]: n for n in json.load(open(sys.argv[1]))["nodes"]}
f = {n["name"]: n for n in json.load(open(sys.argv[2]))["nodes"]}
want = a["a"]["exclusive_ns"] + a["b"]["inclusive_ns"]
got = f["a"]["exclusive_ns"]
assert abs(got - want) <= 3, (got, want)
assert f["main"]["exclusive_ns"] == a["main"]["exclusive_ns"], "main's own time moved"
PY
}

# the report's exclusive per function against the folded export's self time
folded() {
    "$RANKPROF" record -o "$tmp/th.rp" -- "$PROGS/prog_threads" >/dev/null 2>&1 ||
        fail "record prog_threads"
    folded_check "$tmp/th.rp" "" "-F work" "-N leaf" "-D 2" "-D 1" "-t 1us" "-r 1ms~3ms" \
        "-F worker -D 2 -r 1ms~"
}

# folded_check TRACE FILTERS...: for each filter (words), the report's
# exclusive time per function against the folded export's self time
folded_check() {
    local trace=$1 f
    shift
    for f in "$@"; do
        # shellcheck disable=SC2086 # (the filters are words)
        "$RANKPROF" report --format json $f "$trace" >"$tmp/f.json" 2>"$tmp/f.err" ||
            fail "report $f: $(cat "$tmp/f.err")"
        # shellcheck disable=SC2086
        "$RANKPROF" export --format folded $f "$trace" >"$tmp/f.folded" 2>"$tmp/f.err" ||
            fail "export $f: $(cat "$tmp/f.err")"
        # (the export reads names, not statistics, before its own pass: no
        # warning that the trace holds no events or no function)
        [[ ! -s "$tmp/f.err" ]] || fail "export $f warned: $(cat "$tmp/f.err")"
        python3 - "$tmp/f.json" "$tmp/f.folded" "$f" <<'PY' || fail "folded: $f"
import collections, json, sys
r = json.load(open(sys.argv[1]))
self_f, paths = collections.Counter(), collections.Counter()
for line in open(sys.argv[2]):
    stack, v = line.rsplit(" ", 1)
    leaf = stack.split(";")[-1]
    self_f[leaf] += int(v)
    paths[leaf] += 1
calls = {}
for n in r["nodes"]:
    if n["kind"] != "func":
        continue
    calls[n["name"]] = n["calls"]
    a, b = n["exclusive_ns"], self_f.get(n["name"], 0)
    assert abs(a - b) <= 2 * paths.get(n["name"], 1) + 2, (sys.argv[3], n["name"], a, b)
want = {"-F work": {"work": 40000, "leaf": 80000}, "-N leaf": {"work": 40000, "worker": 4}}
for k, v in want.get(sys.argv[3], {}).items():
    assert calls.get(k) == v, (sys.argv[3], k, calls.get(k), v)
if sys.argv[3] == "-N leaf":
    assert "leaf" not in calls or calls["leaf"] == 0, calls
PY
    done
}

# a span open across the recorder's pauses, begun just before -r's start:
# left out by the report (in order and in parallel) and the exports alike
pausewin() {
    RANKPROF_BUFSIZE=4096 "$RANKPROF" record -o "$tmp/pw.rp" -- "$PROGS/prog_threads" \
        >/dev/null 2>&1 || fail "record prog_threads"
    "$RANKPROF" dump "$tmp/pw.rp" >"$tmp/pw.txt" 2>"$tmp/pw.err" || fail "dump: $(cat "$tmp/pw.err")"
    # the first worker's ENTER (ns after the first event), the workers
    # entered after it, and whether its thread paused while it was open
    local w
    w=$(python3 - "$tmp/pw.txt" <<'PY'
import sys
enters, paused = [], set()
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 4 and f[2] == "enter" and f[3] == "worker":
        enters.append((int(f[0]), f[1]))
    elif len(f) >= 4 and f[2] == "pause":
        paused.add(f[1])
enters.sort()
t0, tid = enters[0]
print(t0, sum(1 for t, _ in enters if t > t0), int(tid in paused))
PY
) || fail "no worker in the dump"
    read -r t0 after pz <<<"$w"
    ((pz)) || fail "the first worker's thread never paused (RANKPROF_BUFSIZE=4096)"
    local r="-r $((t0 + 1))ns~" jobs
    for jobs in 0 4; do
        # shellcheck disable=SC2086
        RANKPROF_REPLAY_JOBS=$jobs json "$tmp/pw.rp" $r
        python3 - "$tmp/r.json" "$after" "$jobs" <<'PY' || fail "$r: the workers kept"
import json, sys
r = json.load(open(sys.argv[1]))
got = sum(n["calls"] for n in r["nodes"] if n["name"] == "worker")
assert got == int(sys.argv[2]), f"RANKPROF_REPLAY_JOBS={sys.argv[3]}: {got} workers, {sys.argv[2]} began in the window"
PY
        RANKPROF_REPLAY_JOBS=$jobs folded_check "$tmp/pw.rp" "$r"
    done
}

# -N '[off-cpu]' (when the run was descheduled at all): no off-CPU row, and
# its time is its callers' own: the exclusive times add up to the threads'
nosched() {
    [[ -f "$tmp/th.rp" ]] || fail "no trace (scenario folded failed)"
    json "$tmp/th.rp"
    grep -qF '"[off-cpu]"' "$tmp/r.json" || return 0
    # (measured times: with the recorder's cost subtracted, a node whose
    # own time is about that cost, as worker's loop, may sum below 0 and
    # show 0, and the sum then exceeds the threads' time)
    json "$tmp/th.rp" -N '[off-cpu]' --no-compensate
    python3 - "$tmp/r.json" <<'PY' || fail "-N '[off-cpu]'"
import json, sys
r = json.load(open(sys.argv[1]))
names = {n["name"]: n for n in r["nodes"] if n["calls"]}
assert "[off-cpu]" not in names, names["[off-cpu]"]
own = sum(n["exclusive_ns"] for n in r["nodes"])
tot = sum(e["inclusive_ns"] for e in r["edges"] if e["caller"] == "<root>")
assert abs(own - tot) <= 0.001 * tot + 1000, (own, tot)
PY
}

min() {
    [[ -f "$tmp/th.rp" ]] || fail "no trace (scenario folded failed)"
    json "$tmp/th.rp" -t 2us
    python3 - "$tmp/r.json" <<'PY' || fail "-t 2us: a row shorter"
import json, sys
r = json.load(open(sys.argv[1]))
rows = [n for n in r["nodes"] if n["kind"] == "func" and n["calls"]]
assert rows, "no rows"
for n in rows:
    assert n["min_ns"] >= 2000 - 1, (n["name"], n["min_ns"])
assert {n["name"] for n in rows} >= {"main", "worker"}, rows
PY
}

deep() {
    "$RANKPROF" record -o "$tmp/deep.rp" -- "$PROGS/prog_scale" deep 10000 >/dev/null 2>&1 ||
        fail "record prog_scale deep"
    local f want
    for f in "-D 5|deep_main:1 rec:4" "-F rec|rec:10000" "-N rec|deep_main:1"; do
        want=${f#*|}
        # shellcheck disable=SC2086
        json "$tmp/deep.rp" ${f%|*}
        got=$(python3 - "$tmp/r.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(sorted("%s:%d" % (n["name"], n["calls"]) for n in r["nodes"]
                      if n["name"] in ("deep_main", "rec") and n["calls"])))
PY
)
        [[ $got == "$want" ]] || fail "deep ${f%|*}: $got, expected $want"
    done
}

mutual() {
    "$RANKPROF" record -o "$tmp/mu.rp" -- "$PROGS/prog_mutual" >/dev/null 2>&1 ||
        fail "record prog_mutual"
    json "$tmp/mu.rp" -F y
    python3 - "$tmp/r.json" <<'PY' || fail "-F y: x's calls or inclusive time"
import json, sys
n = {x["name"]: x for x in json.load(open(sys.argv[1]))["nodes"]}
assert n["x"]["calls"] == 30 and n["y"]["calls"] == 30, (n["x"]["calls"], n["y"]["calls"])
assert n["x"]["inclusive_ns"] >= n["x"]["max_ns"] > 0, (n["x"]["inclusive_ns"], n["x"]["max_ns"])
assert n["y"]["inclusive_ns"] >= n["y"]["max_ns"] > 0, n["y"]
PY
}

graph() {
    [[ -f "$tmp/ct.rp" ]] || fail "no trace (scenario exact failed)"
    "$RANKPROF" graph a -N b "$tmp/ct.rp" >"$tmp/g.txt" 2>"$tmp/g.err" ||
        fail "graph a -N b: $(cat "$tmp/g.err")"
    grep -q -- '-> c ' "$tmp/g.txt" || fail "graph a -N b: no callee c: $(cat "$tmp/g.txt")"
    ! grep -q -- '-> b ' "$tmp/g.txt" || fail "graph a -N b lists b: $(cat "$tmp/g.txt")"
    "$RANKPROF" diff -F work "$tmp/th.rp" "$tmp/th.rp" >"$tmp/d.txt" 2>"$tmp/d.err" ||
        fail "diff -F work of a trace with itself: exit $?: $(cat "$tmp/d.err" "$tmp/d.txt")"
}

locks() {
    "$RANKPROF" record -o "$tmp/lk.rp" -- "$PROGS/prog_contend" 200 >/dev/null 2>&1 ||
        fail "record prog_contend"
    local f want got all
    "$RANKPROF" locks --format json "$tmp/lk.rp" >"$tmp/lk.json" 2>"$tmp/lk.err" ||
        fail "locks: $(cat "$tmp/lk.err")"
    all=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(sorted("%s:%d" % (l["name"], l["acquisitions"]) for l in r["locks"]
                      if l["name"] != "table_lock")))
' "$tmp/lk.json")
    for f in "-F mutex_worker|counter_lock:800" "-N rw_worker|$all"; do
        want=${f#*|}
        # shellcheck disable=SC2086
        "$RANKPROF" locks --format json ${f%|*} "$tmp/lk.rp" >"$tmp/lk.json" 2>"$tmp/lk.err" ||
            fail "locks ${f%|*}: $(cat "$tmp/lk.err")"
        got=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
print(" ".join(sorted("%s:%d" % (l["name"], l["acquisitions"]) for l in r["locks"])))
' "$tmp/lk.json")
        [[ $got == "$want" ]] || fail "locks ${f%|*}: $got, expected $want"
    done
}

dump() {
    [[ -f "$tmp/ct.rp" ]] || fail "no trace (scenario exact failed)"
    "$RANKPROF" dump -F a "$tmp/ct.rp" >"$tmp/d.txt" 2>"$tmp/d.err" || fail "dump -F a: $(cat "$tmp/d.err")"
    local n x
    # (not [off-cpu]: the scheduler's, inside the subtree on a loaded machine)
    n=$(grep ' enter ' "$tmp/d.txt" | grep -vc 'off-cpu') x=$(grep ' exit ' "$tmp/d.txt" | grep -vc 'off-cpu')
    [[ $n == 48 && $x == 48 ]] || fail "dump -F a: $n enters, $x exits, expected 48 and 48"
    grep -q ' main$' "$tmp/d.txt" && fail "dump -F a prints main"
    "$RANKPROF" dump -D 1 "$tmp/ct.rp" >"$tmp/d.txt" 2>"$tmp/d.err" || fail "dump -D 1: $(cat "$tmp/d.err")"
    got=$(grep -E ' (enter|exit) ' "$tmp/d.txt" | grep -v 'off-cpu' | awk '{print $3, $4}' | tr '\n' ' ')
    [[ $got == "enter main exit main " ]] || fail "dump -D 1: $got"
    if "$RANKPROF" dump -t 1us "$tmp/ct.rp" >/dev/null 2>"$tmp/d.err"; then
        fail "dump -t succeeded"
    fi
    grep -qF -- "-t/--min-duration" "$tmp/d.err" || fail "dump -t: $(cat "$tmp/d.err")"
}

bad() {
    local a want
    for a in "-D 0|-D/--depth" "-t x|-t/--min-duration" "-r 5ms~1ms|-r/--time-range" \
        "-r 1s|-r/--time-range" "-F nosuch|-F/--function nosuch"; do
        want=${a#*|}
        # shellcheck disable=SC2086
        if "$RANKPROF" report ${a%|*} "$tmp/ct.rp" >/dev/null 2>"$tmp/b.err"; then
            fail "report ${a%|*} succeeded"
        fi
        grep -qF -- "$want" "$tmp/b.err" || fail "report ${a%|*}: $(cat "$tmp/b.err")"
    done
}

scenario exact exact
scenario folded folded
scenario pausewin pausewin
scenario nosched nosched
scenario min min
scenario mutual mutual
scenario deep deep
scenario graph graph
scenario locks locks
scenario dump dump
scenario bad bad
finish

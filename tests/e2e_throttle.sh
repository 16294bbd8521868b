#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_throttle.sh - the throttle that keeps timing a sample
# (src/record/funcs.c, record --throttle=CALLS:NS:K, docs/recording.md) on
# prog_sampled (tests/progs/sampled.c): work() is called N times, short
# for the first half, at least 20 us each for the second.
#
#   sampled.MODE   --throttle=1000:15000:100, trace and direct mode: work()
#                  has exactly N calls; its recorded and counted calls are
#                  those of a throttle after P >= 1001 recorded calls and 1
#                  in 100 of the rest timed (recorded P + (N-P)/100, counted
#                  the rest, exactly); more than 5% of its timed calls are
#                  from the slow half (p95 >= 15 us), which it reached long
#                  after the throttle; JSON sampled_every 100; the table's
#                  note says 1 call in 100 is still timed
#   count.trace    --throttle=1000:15000:0: count only, as before: no timed
#                  call after the throttle, no sampled_every
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_throttle RANKPROF PROGS RP_LIB
need_progs sampled
need_tools python3
export RANKPROF_LIB="$RP_LIB"

N=20000

run() { # NAME MODE K
    "$RANKPROF" record --mode "$2" --throttle=1000:15000:$3 -o "$tmp/$1.rp" -- \
        "$PROGS/prog_sampled" $N >"$tmp/$1.out" 2>&1 || fail "$1: record: $(cat "$tmp/$1.out")"
    "$RANKPROF" report --format json "$tmp/$1.rp" >"$tmp/$1.json" 2>"$tmp/$1.err" ||
        fail "$1: report: $(cat "$tmp/$1.err")"
    "$RANKPROF" report "$tmp/$1.rp" >"$tmp/$1.table" 2>&1 || fail "$1: report (table)"
    python3 - "$tmp/$1.json" $N "$3" <<'PY' || fail "$1: above"
import json, sys
d, n, k = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
w = next((x for x in d["nodes"] if x["name"] == "work"), None)
if not w:
    sys.exit("no work() row")
calls, thr = w["calls"], w.get("throttled_calls", 0)
rec = calls - thr
bad = []
if calls != n:
    bad.append(f"work: {calls} calls, expected {n}")
# a throttle after p recorded calls, then 1 in k timed (none when k is 0)
fits = [p for p in range(1001, n + 1)
        if (p + ((n - p) // k if k else 0)) == rec]
if not fits:
    bad.append(f"work: {rec} recorded, {thr} counted: no throttle point after 1001 calls fits")
if k:
    if w.get("sampled_every") != k:
        bad.append(f"sampled_every {w.get('sampled_every')}, expected {k}")
    if w["p95_ns"] < 15000:  # (trace mode subtracts the recorder's cost)
        bad.append(f"p95 {w['p95_ns']} ns: the slow half is not in the timed calls")
else:
    if "sampled_every" in w:
        bad.append("sampled_every without sampling")
    if fits and fits[0] >= n // 2:
        bad.append(f"throttled only after {fits[0]} calls")
if bad:
    sys.exit("\n".join(bad))
PY
}

sampled() { # MODE
    run "s.$1" "$1" 100
    grep -q "1 call in 100 still timed" "$tmp/s.$1.table" ||
        fail "the table does not say the throttle samples: $(grep -A3 '^~' "$tmp/s.$1.table")"
    grep -E -q "^ +[0-9]+ .* $N~ .* work" "$tmp/s.$1.table" ||
        fail "work's row does not mark its calls: $(grep work "$tmp/s.$1.table")"
}

count() {
    run c trace 0
    grep -q "counted, not recorded, after they proved busy" "$tmp/c.table" ||
        fail "the table's note: $(grep -A3 '^~' "$tmp/c.table")"
}

scenario sampled.trace sampled trace
scenario sampled.direct sampled direct
scenario count.trace count
finish

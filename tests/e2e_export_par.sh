#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_export_par.sh - the exports read through the parallel replay of the
# chunks (src/analyze/cct.c, "The parallel build") agree with the report
# and with the same export built in order, on multi-chunk traces.
#
#   threads   prog_stress threads 3 N (three threads, hundreds of chunks,
#             body's span open across all of them): `export --format
#             folded` with 2 workers (RANKPROF_REPLAY_JOBS=2) is the same
#             bytes as with none (the tree built in file order), plain and
#             under -O threads=1, -F outer, -N inner, -D 2, -t 200ns; and
#             per function the folded self times add up to the report's
#             exclusive_ns (to the ns each path's rounding may take)
#   recursion prog_fib (fib's spans open across chunks at every depth):
#             the same, with -F fib and -D 5
#   deep      prog_scale deep 3000 4 16 (stacks deeper than a snapshot
#             holds, replayed in order where they stay, in parallel again
#             when they return): the same, plain, -D 50 and -F rec -D 40
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_export_par RANKPROF PROGS RP_LIB
need_progs stress fib scale
need_tools python3
export RANKPROF_LIB="$RP_LIB"
export RANKPROF_CALIBRATE=0

# same TRACE ARGS...: folded with 2 workers and with none, byte for byte
same() {
    local trace=$1
    shift
    RANKPROF_REPLAY_JOBS=0 "$RANKPROF" export --format folded "$@" "$trace" >"$tmp/seq.folded" ||
        fail "export folded $* (in order)"
    RANKPROF_REPLAY_JOBS=2 "$RANKPROF" export --format folded "$@" "$trace" >"$tmp/par.folded" ||
        fail "export folded $* (2 workers)"
    [[ -s $tmp/par.folded ]] || fail "export folded $*: empty"
    cmp -s "$tmp/seq.folded" "$tmp/par.folded" ||
        fail "folded $* differs with 2 workers: $(diff "$tmp/seq.folded" "$tmp/par.folded" | head -5)"
}

# sums TRACE ARGS...: per function, the folded self times (2 workers) add up
# to the report's exclusive_ns with the same filter
sums() {
    local trace=$1
    shift
    "$RANKPROF" report --format json "$@" "$trace" >"$tmp/r.json" || fail "report $*"
    RANKPROF_REPLAY_JOBS=2 "$RANKPROF" export --format folded "$@" "$trace" >"$tmp/f.folded" ||
        fail "export folded $*"
    python3 - "$tmp/r.json" "$tmp/f.folded" "$*" <<'PY' || fail "folded sums $*"
import collections, json, sys
r = json.load(open(sys.argv[1]))
want = {n["name"]: n["exclusive_ns"] for n in r["nodes"] if n["calls"] and n["kind"] == "func"}
got, paths = collections.Counter(), collections.Counter()
for line in open(sys.argv[2]):
    path, ns = line.rsplit(" ", 1)
    got[path.split(";")[-1]] += int(ns)
    paths[path.split(";")[-1]] += 1
# each path's ticks are rounded to ns on their own: 1 ns per path and 2
bad = [(k, want[k], got.get(k, 0)) for k in want
       if abs(got.get(k, 0) - want[k]) > 2 * paths.get(k, 1) + 2]
if bad:
    sys.exit("%s: report exclusive_ns vs folded: %s" % (sys.argv[3], bad))
PY
}

threads() {
    "$RANKPROF" record -o "$tmp/st.rp" -- "$PROGS/prog_stress" threads 3 60000 >/dev/null 2>&1 ||
        fail "recording prog_stress"
    local chunks
    chunks=$("$RANKPROF" info "$tmp/st.rp" | awk '$1 == "EVENTS" { print $2 }')
    ((chunks >= 20)) || fail "only $chunks EVENTS chunks: not a multi-chunk trace"
    same "$tmp/st.rp"
    same "$tmp/st.rp" -O threads=1
    same "$tmp/st.rp" -F outer
    same "$tmp/st.rp" -N inner
    same "$tmp/st.rp" -D 2
    same "$tmp/st.rp" -t 200ns
    sums "$tmp/st.rp"
    sums "$tmp/st.rp" -N inner
    sums "$tmp/st.rp" -D 2
}

recursion() {
    "$RANKPROF" record -o "$tmp/fib.rp" -- "$PROGS/prog_fib" >/dev/null 2>&1 ||
        fail "recording prog_fib"
    same "$tmp/fib.rp"
    same "$tmp/fib.rp" -F fib
    same "$tmp/fib.rp" -D 5
    sums "$tmp/fib.rp"
    sums "$tmp/fib.rp" -D 5
}

deep() {
    "$RANKPROF" record -o "$tmp/deep.rp" -- "$PROGS/prog_scale" deep 3000 4 16 >/dev/null 2>&1 ||
        fail "recording prog_scale deep"
    same "$tmp/deep.rp"
    sums "$tmp/deep.rp"
    same "$tmp/deep.rp" -D 50
    same "$tmp/deep.rp" -F rec -D 40
    sums "$tmp/deep.rp" -D 50
}

scenario threads threads
scenario recursion recursion
scenario deep deep
finish

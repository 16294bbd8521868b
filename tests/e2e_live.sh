#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_live.sh - the live reading of a trace being written
# (src/analyze/live.c: what `rankprof top` on a process that records a
# trace uses, docs/services.md): after every update, a snapshot is exactly
# `rankprof report` of the bytes written so far.
#
# `rankprof top --replay-steps N TRACE OUT` (a hidden debug path,
# src/cli/cmd_top.c) writes TRACE to OUT in N steps cut anywhere (inside
# chunks too: a chunk still being written is read by the next update),
# reads OUT live and after step k writes the snapshot's JSON report to
# OUT-k.json and the bytes so far to OUT-k.rp.  Every OUT-k.json must be
# `report --format json --force OUT-k.rp` (the warnings name OUT), the
# last one the report of TRACE itself, and one before must hold some
# calls (over all nodes) but fewer than the last (the steps cut the run).
#
#   threads   prog_threads, 4 threads, 11 steps; the replay with workers
#             (one, two) and in order (RANKPROF_REPLAY_JOBS=0)
#   deep      prog_scale deep: 2 threads x 3 recursions 20,000 deep, whose
#             stacks stay in the replayer between chunks (resident) and
#             stay open across the steps
#   waits     prog_waits: waits, locks and time off CPU, 7 steps
#   refused   --replay-steps on a file that is not there: exit 1, naming it
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_live RANKPROF PROGS RP_LIB
need_progs threads scale waits
need_tools python3
export RANKPROF_LIB="$RP_LIB"
# (a live reading keeps the measurement of the recorder's cost it began
# with; the second one, written 10 ms into the run, would make the reports
# of the later steps, which look ahead for it, differ: start-up only)
export RANKPROF_CALIBRATE_LATE=0

# STEPS TRACE: the live reading of TRACE in STEPS steps against the
# reports of the same bytes
steps() {
    local n=$1 trace=$2 out="$tmp/live.rp" k
    rm -f "$out" "$out"-*
    "$RANKPROF" top --replay-steps "$n" "$trace" "$out" >"$tmp/steps.out" 2>"$tmp/steps.err" ||
        fail "top --replay-steps $n $trace: $(cat "$tmp/steps.err")"
    for k in $(seq "$n"); do
        "$RANKPROF" report --format json --force --one-file "$out-$k.rp" >"$tmp/full-$k.json" \
            2>"$tmp/full.err" || fail "report $out-$k.rp: $(cat "$tmp/full.err")"
    done
    "$RANKPROF" report --format json "$trace" >"$tmp/whole.json" 2>"$tmp/full.err" ||
        fail "report $trace: $(cat "$tmp/full.err")"
    python3 - "$out" "$n" "$tmp" "$trace" <<'PY' || fail "$trace: the live reading differs"
import json, sys
out, n, tmp, trace = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
def load(path, name):  # the warnings name the file read: name it OUT
    return json.loads(open(path).read().replace(json.dumps(name)[1:-1], out))
def diff(a, b, where):
    if a == b:
        return
    for key in a:
        if a.get(key) != b.get(key):
            x, y = a.get(key), b.get(key)
            if isinstance(x, list) and isinstance(y, list) and len(x) == len(y):
                i = next(i for i in range(len(x)) if x[i] != y[i])
                x, y, key = x[i], y[i], f"{key}[{i}]"
            sys.exit(f"{where}: {key}: live {str(x)[:400]}\n   report {str(y)[:400]}")
    sys.exit(f"{where}: differ")
calls = []
for k in range(1, n + 1):
    live = load(f"{out}-{k}.json", out)
    full = load(f"{tmp}/full-{k}.json", f"{out}-{k}.rp")
    diff(live, full, f"step {k} of {n}")
    calls.append(sum(x["calls"] for x in live["nodes"]))
diff(live, load(f"{tmp}/whole.json", trace), "the last step against the whole trace")
if not any(0 < c < calls[-1] for c in calls):
    sys.exit(f"calls at each step {calls}: the steps cut nothing")
PY
}

threads() {
    "$RANKPROF" record -o "$tmp/t.rp" -- "$PROGS/prog_threads" >"$tmp/rec.out" 2>&1 ||
        fail "record prog_threads: $(cat "$tmp/rec.out")"
    steps 11 "$tmp/t.rp"
    RANKPROF_REPLAY_JOBS=2 steps 11 "$tmp/t.rp"
    RANKPROF_REPLAY_JOBS=0 steps 5 "$tmp/t.rp"
}

deep() {
    "$RANKPROF" record -o "$tmp/d.rp" -- "$PROGS/prog_scale" deep 20000 2 3 >"$tmp/rec.out" 2>&1 ||
        fail "record prog_scale deep: $(cat "$tmp/rec.out")"
    steps 9 "$tmp/d.rp"
}

waits() {
    "$RANKPROF" record -o "$tmp/w.rp" -- "$PROGS/prog_waits" >"$tmp/rec.out" 2>&1 ||
        fail "record prog_waits: $(cat "$tmp/rec.out")"
    steps 7 "$tmp/w.rp"
}

refused() {
    local rc
    set +e
    "$RANKPROF" top --replay-steps 3 "$tmp/none.rp" "$tmp/o.rp" >"$tmp/o" 2>&1
    rc=$?
    set -e
    [[ $rc == 1 ]] && grep -q "none.rp" "$tmp/o" || fail "a missing trace: rc $rc, $(cat "$tmp/o")"
}

scenario threads threads
scenario deep deep
scenario waits waits
scenario refused refused
finish

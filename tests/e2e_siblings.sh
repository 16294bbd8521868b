#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_siblings.sh - one file per process, also for processes that are not
# parent and child (docs/robustness.md, "One file per process").  A shell
# recorded with RANKPROF_OUTPUT=NAME starts two prog_endings at once (a
# worker pool: the shell does not pass the recorder's mark on, so each
# thinks it is the first); each makes N calls, says it is done, and is
# ended by SIGTERM.  No file may be shared: every file of the run reads
# without error, and exactly two of them hold the workers' calls, N each.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_siblings RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB"
N=30000

# the shell and its two workers, recorded
record() {
    rc=0
    $TMO "$RANKPROF" record -o "$tmp/rp.data" -- bash -c '
        unset RANKPROF_CLAIMED
        "$1" wait "$2" >"$3/a.out" & a=$!
        "$1" wait "$2" >"$3/b.out" & b=$!
        for f in a b; do
            for _ in $(seq 600); do grep -q done "$3/$f.out" && break; sleep 0.1; done
        done
        kill -TERM $a $b
        wait' sh "$PROGS/prog_endings" $N "$tmp" >"$tmp/rec.out" 2>"$tmp/rec.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "record: exit $rc: $(cat "$tmp/rec.err")"
    grep -q done "$tmp/a.out" && grep -q done "$tmp/b.out" || fail "the workers did not both run"
}

# every file readable, two of them the workers' with N calls each
one_file_each() {
    workers=0
    for f in "$tmp"/rp.data*; do
        $TMO "$RANKPROF" report -i "$f" --one-file --format json >"$tmp/r.json" 2>"$tmp/r.err" ||
            fail "$(basename "$f"): report failed: $(cat "$tmp/r.err")"
        w=$(python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
calls = {x["name"]: x["calls"] for x in r["nodes"]}
print(calls.get("work", 0))' "$tmp/r.json")
        if [[ $w -ne 0 ]]; then
            [[ $w -eq $N ]] || fail "$(basename "$f"): work $w calls, expected $N"
            workers=$((workers + 1))
        fi
    done
    [[ $workers -eq 2 ]] || fail "$workers files hold a worker's calls, expected 2: $(ls "$tmp")"
}

scenario record record
scenario one_file_each one_file_each
finish

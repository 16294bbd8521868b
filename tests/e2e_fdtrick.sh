#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_fdtrick.sh - the trace descriptor belongs to the recorder
# (docs/robustness.md, "The trace's descriptor").  prog_fdtrick MODE N DATA makes N
# calls, then takes every descriptor from 3 to 1023 (dup2 of /dev/null and
# of its data file over them; the same by the raw dup3 system call; close),
# then N more calls.  The data file must hold exactly what the program
# wrote, and the trace every call (2N work, 4N leaf), nothing lost, an END.
# The interposers move the trace before dup2/close take its number (no
# message); the raw system call is noticed before the next write, and the
# file reopened (a message says so).  With 0 and 2 closed at the start, the
# program's opens take them as without the recorder, and the recorder's
# messages never go to a 2 that has become the program's file.  A program
# that lowers its descriptor limit below the trace's number and closes
# everything keeps its numbers: the recorder stops instead of reopening low.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_fdtrick RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB" RANKPROF_FLUSH_MS=20 RANKPROF_BUFSIZE=65536
N=50000
printf 'data\n' >"$tmp/want.txt"

# (not "close" under ThreadSanitizer: its close interceptor, which runs
# before the recorder's, records the close of the trace's descriptor before
# the recorder has moved the trace away, and reports the writer's fstat of
# that number as a race)
modes="dup2 sysdup close"
under_tsan && modes="dup2 sysdup"
fdtrick() { # MODE
    local mode=$1 rc=0
    $TMO "$RANKPROF" record -o "$tmp/$mode.data" -- "$PROGS/prog_fdtrick" $mode $N "$tmp/$mode.txt" \
        >"$tmp/$mode.out" 2>"$tmp/$mode.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "$mode: exit $rc: $(cat "$tmp/$mode.err")"
    cmp -s "$tmp/$mode.txt" "$tmp/want.txt" ||
        fail "$mode: the program's data file was written to: $(od -c "$tmp/$mode.txt" | head -3)"
    # through libc the interposers move the trace out of the way before the
    # program takes its number; past them, the check before a write reopens
    if [[ $mode == sysdup ]]; then
        grep -q "replaced the descriptor of .*; reopened it" "$tmp/$mode.err" ||
            fail "$mode: the recorder did not say it reopened the trace: $(cat "$tmp/$mode.err")"
    elif grep -q "descriptor of" "$tmp/$mode.err"; then
        fail "$mode: the interposers did not move the trace: $(cat "$tmp/$mode.err")"
    fi
    $TMO "$RANKPROF" report -i "$tmp/$mode.data" --format json >"$tmp/$mode.json" 2>"$tmp/$mode.rerr" ||
        fail "$mode: report failed: $(cat "$tmp/$mode.rerr")"
    $TMO "$RANKPROF" info -i "$tmp/$mode.data" >"$tmp/$mode.info" 2>&1 || fail "$mode: info failed"
    grep -q "^ended: *normally" "$tmp/$mode.info" || fail "$mode: info: $(grep ended "$tmp/$mode.info")"
    python3 - "$tmp/$mode.json" "$N" <<'PY' || fail "$mode: wrong report"
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
calls = {x["name"]: x["calls"] for x in r["nodes"]}
bad = [f"{k}: {calls.get(k, 0)} calls, expected {v}"
       for k, v in {"work": 2 * n, "leaf": 4 * n}.items() if calls.get(k, 0) != v]
if r["lost_events"] != 0:
    bad.append(f"lost {r['lost_events']}")
for b in bad:
    print(f"e2e_fdtrick: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    echo "e2e_fdtrick: $mode: data file untouched, all calls in the trace: ok"
}
for mode in $modes; do
    scenario "$mode" fdtrick "$mode"
done

# descriptors 0 and 2 closed when the program starts: its first opens
# take 0 and 2 as without the recorder (which holds no low descriptor),
# and the recorder's message about reopening its trace, after the
# program closed everything from 3 by the raw system call, does not go
# to the 2 that is now the program's data file
stdclosed() {
    local rc=0
    $TMO "$RANKPROF" record -o "$tmp/std.data" -- "$PROGS/prog_fdtrick" stdclosed $N "$tmp/std.txt" \
        <&- 2>&- >"$tmp/std.out" || rc=$?
    [[ $rc -eq 0 ]] || fail "exit $rc: $(cat "$tmp/std.out")"
    grep -qx "fds 0 2" "$tmp/std.out" || fail "the program's descriptors moved: $(cat "$tmp/std.out")"
    local f
    for f in std.txt std.txt.2; do
        cmp -s "$tmp/$f" "$tmp/want.txt" ||
            fail "$f is not what the program wrote: $(od -c "$tmp/$f" | head -3)"
    done
    $TMO "$RANKPROF" report -i "$tmp/std.data" --format json >"$tmp/std.json" 2>/dev/null ||
        fail "report of std.data failed"
    python3 - "$tmp/std.json" "$N" <<'PY' || fail "wrong report"
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
calls = {x["name"]: x["calls"] for x in r["nodes"]}
if calls.get("work") != 2 * n or calls.get("leaf") != 4 * n or r["lost_events"]:
    print(f"e2e_fdtrick: work {calls.get('work')}, leaf {calls.get('leaf')}, lost {r['lost_events']}",
          file=sys.stderr)
    sys.exit(1)
PY
}
scenario stdclosed stdclosed

# the program lowers its descriptor limit to 16 (below the trace's 1000),
# closes every descriptor through libc and opens its data file 17 times:
# it gets 0..15 and EMFILE as without the recorder, which cannot place its
# trace out of the program's way any more and stops (the trace then ends
# without END: record exits 1), never taking one of the program's numbers
limit() {
    local rc=0 asan_opts=${ASAN_OPTIONS:-}
    # (LeakSanitizer needs a descriptor at exit for /proc/PID/task, which
    # the program has used up: it would fail, on the program's stderr)
    under_asan && asan_opts="${asan_opts:+$asan_opts:}detect_leaks=0"
    ASAN_OPTIONS=$asan_opts $TMO "$RANKPROF" record -o "$tmp/lim.data" -- \
        "$PROGS/prog_fdtrick" limit $N "$tmp/lim.txt" >"$tmp/lim.out" 2>"$tmp/lim.err" || rc=$?
    local want="fds 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 -1"
    [[ "$(cat "$tmp/lim.txt")" == "$want" ]] ||
        fail "the program's descriptors moved: $(cat "$tmp/lim.txt"), not $want"
    [[ $rc -eq 1 ]] || fail "exit $rc (1: the program's 0, the trace stopped): $(cat "$tmp/lim.err")"
    grep -q "is incomplete" "$tmp/lim.err" || fail "record did not say the trace stopped: $(cat "$tmp/lim.err")"
}
scenario limit limit

# the limit lowered to 16 before the trace rotates (--max-size): a new
# piece has no number above the program's, so rotation stops (the trace
# goes on in its file, whole; record says so) rather than keep one of the
# program's numbers (before: the program's opens got one fewer)
limitrot() {
    local rc=0 want asan_opts=${ASAN_OPTIONS:-}
    under_asan && asan_opts="${asan_opts:+$asan_opts:}detect_leaks=0" # (as limit's)
    ASAN_OPTIONS=$asan_opts "$PROGS/prog_fdtrick" limitrot 10 "$tmp/bare.txt" ||
        fail "the program alone failed"
    want=$(head -1 "$tmp/bare.txt") # (the numbers left by what it inherited)
    ASAN_OPTIONS=$asan_opts $TMO "$RANKPROF" record --max-size 64K -o "$tmp/lr.data" -- \
        "$PROGS/prog_fdtrick" limitrot 200000 "$tmp/lr.txt" >"$tmp/lr.out" 2>"$tmp/lr.err" || rc=$?
    [[ "$(head -1 "$tmp/lr.txt")" == "$want" ]] ||
        fail "the program's descriptors moved: $(head -1 "$tmp/lr.txt"), not $want"
    [[ $rc -eq 0 ]] || fail "exit $rc: $(cat "$tmp/lr.err")"
    grep -q "no descriptor for a new piece of .* above the program's" "$tmp/lr.err" ||
        fail "record did not say rotation stopped: $(cat "$tmp/lr.err")"
}
scenario limitrot limitrot
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_threads.sh - a thread is a thread: reused kernel thread ids
# (docs/trace-format.md, "4.4 THREAD (4)": thread streams, format 1.3).
#
# prog_shortthreads starts N short threads one after another (each joined
# before the next; 40,000 by default, more than this machine's pid_max of
# 32768, so the kernel hands out tids again) and each calls step() K times.
# It prints how many distinct tids its threads had (D).  Checked, exactly:
#   - the trace has N + 1 threads (main and every worker), the JSON
#     thread_list N + 1 entries, and N - D of them have generation > 0 (a
#     tid seen before); entries with the same tid have distinct
#     generations; `rankprof info` lists N + 1 threads;
#   - worker has N calls, step N * K, no unmatched exit, nothing unclosed;
#   - time: the workers ran one after another inside the run's wall time
#     W, so the sum of their thread totals is at most W (a merged tid
#     spans the time between its threads: the sum was 58559 s for an
#     8.3 s run), and the report's total is the sum of its threads';
#   - `report --thread TID` on a reused tid selects all of its threads,
#     `--thread TID#1` (as `info` lists it) only the second.
# Under sanitizers N is 4000 (a thread costs much more there): no tid is
# reused then, and the counts are checked the same way; test_replay checks
# the replay of two threads sharing a tid in a synthesised trace.
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_threads RANKPROF PROGS RP_LIB
need_tools python3
export RANKPROF_LIB="$RP_LIB"
N=40000 K=3
sanitized && N=4000
echo "e2e_threads: pid_max $(cat /proc/sys/kernel/pid_max 2>/dev/null || echo ?), $N threads"

# the run, its JSON report and `info`
record() {
    "$RANKPROF" record -o "$tmp/t.data" -- "$PROGS/prog_shortthreads" $N $K >"$tmp/out" 2>"$tmp/err" ||
        fail "record failed: $(cat "$tmp/err")"
    "$RANKPROF" report -i "$tmp/t.data" --format json --no-compensate >"$tmp/t.json" ||
        fail "report failed"
    "$RANKPROF" info -i "$tmp/t.data" >"$tmp/info" || fail "info failed"
}

# threads, calls, generations and times, exactly
counts() {
    grep -q "^threads: *$((N + 1))\$" "$tmp/info" || fail "info: $(grep '^threads' "$tmp/info")"
    python3 - "$tmp" $N $K <<'PY' || fail "counts (above)"
import collections, json, sys
d, n, k = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def die(msg):
    sys.exit(f"e2e_threads: FAIL: {msg}")
words = open(f"{d}/out").read().split()
made, distinct, wall = int(words[1]), int(words[3]), int(words[5])
if made != n:
    die(f"the program made {made} threads, not {n}")
j = json.load(open(f"{d}/t.json"))
tl = j["thread_list"]
if j["threads"] != n + 1 or len(tl) != n + 1:
    die(f"{j['threads']} threads, {len(tl)} in thread_list; want {n + 1}")
calls = {x["name"]: x["calls"] for x in j["nodes"]}
if calls.get("worker") != n or calls.get("step") != n * k or calls.get("main") != 1:
    die(f"calls {calls}")
if j["unmatched_exits"] or j["unclosed"]:
    die(f"unmatched {j['unmatched_exits']}, unclosed {j['unclosed']}")
reused = sum(1 for t in tl if t["generation"] > 0)
if reused != n - distinct:
    die(f"{reused} threads with generation > 0, but {n - distinct} reused tids")
by = collections.defaultdict(list)
for t in tl:
    by[t["tid"]].append(t["generation"])
    if t["stream"] != t["tid"] | t["generation"] << 22:
        die(f"stream id {t}")
for tid, gens in by.items():
    if sorted(gens) != list(range(len(gens))):
        die(f"tid {tid}: generations {gens}")
if sum(t["total_ns"] for t in tl) != j["total_ns"] and \
   abs(sum(t["total_ns"] for t in tl) - j["total_ns"]) > len(tl):
    die(f"total {j['total_ns']} is not the sum of the threads'")
workers = sum(t["total_ns"] for t in tl) - max(t["total_ns"] for t in tl)
# (the clock's calibration against CLOCK_MONOTONIC: 1 % and 1 us of slack)
if workers > wall * 1.01 + 1000:
    die(f"the workers' totals add up to {workers} ns, more than the run's wall time {wall} ns")
again = [tid for tid, g in by.items() if len(g) > 1]
print(f"e2e_threads: {n + 1} threads, {distinct} distinct worker tids, {reused} reused; "
      f"total {j['total_ns'] / 1e9:.3f} s, workers {workers / 1e9:.3f} s, wall {wall / 1e9:.3f} s")
open(f"{d}/again", "w").write(f"{again[0]} {len(by[again[0]])}" if again else "")
PY
}

# --thread TID selects every thread of a reused tid, TID#1 the second
thread_filter() {
    [[ -f "$tmp/again" ]] || fail "no result of the counts scenario"
    if [[ -s "$tmp/again" ]]; then
        read -r tid cnt <"$tmp/again" || true # (no newline at its end)
        "$RANKPROF" report -i "$tmp/t.data" --format json --thread "$tid" >"$tmp/one.json" ||
            fail "report --thread $tid failed"
        python3 -c "
import json, sys
j = json.load(open('$tmp/one.json'))
tl = j['thread_list']
if len(tl) != $cnt or {t['tid'] for t in tl} != {$tid} or j['threads'] != $cnt:
    sys.exit('e2e_threads: FAIL: --thread $tid: %d threads %s, want $cnt' % (j['threads'], tl))
" || fail "--thread (above)"
        "$RANKPROF" report -i "$tmp/t.data" --format json --thread "$tid#1" >"$tmp/one.json" ||
            fail "report --thread $tid#1 failed"
        python3 -c "
import json, sys
j = json.load(open('$tmp/one.json'))
tl = j['thread_list']
if j['threads'] != 1 or [(t['tid'], t['generation']) for t in tl] != [($tid, 1)]:
    sys.exit('e2e_threads: FAIL: --thread $tid#1: %s' % tl)
" || fail "--thread (above)"
        echo "e2e_threads: --thread $tid selects its $cnt threads, --thread $tid#1 the second"
    else
        echo "e2e_threads: no tid was reused (pid_max above $N): the counts were checked without reuse"
    fi
}

scenario record record
scenario counts counts
scenario thread_filter thread_filter
finish

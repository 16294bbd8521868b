#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_fork.sh - a process that forks from a multi-threaded state: the parent
# keeps the trace file, the child writes its own NAME.PID, both exact, the
# child's beginning with the calls open at the fork (main; storm's main and
# storm), so that its calls are theirs and no exit goes unmatched, also
# after a periodic flush and in direct mode; and
# forks among threads that encode their own buffers (storm).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_fork RANKPROF PROGS RP_LIB

# One run, given 60 s.  A run that hangs prints the stacks of the program's
# processes (gdb, when there is one) and fails - except under
# ThreadSanitizer, where a rare hang of this fork from a multi-threaded
# process is an open finding: there the run is tried once more, and the
# stacks stay in the log.
attempt() {
    rm -f "$tmp"/f.data*
    "$RANKPROF" record -o "$tmp/f.data" -- "$PROGS/prog_forker" >"$tmp/out" 2>/dev/null &
    local rec=$! i
    for i in $(seq 600); do
        kill -0 $rec 2>/dev/null || { wait $rec; return $?; }
        sleep 0.1
    done
    echo "e2e_fork: the run hung; the program's stacks:" >&2
    for p in $(pgrep -f "$PROGS/prog_forker"); do
        command -v gdb >/dev/null &&
            timeout 30 gdb -p "$p" -batch -ex "thread apply all bt" 2>/dev/null >&2 || true
        kill -9 "$p" 2>/dev/null || true
    done
    kill -9 $rec 2>/dev/null || true
    wait $rec 2>/dev/null || true
    return 124
}
# the run: the parent's file and the child's NAME.PID
record() {
    rc=0
    attempt || rc=$?
    if [[ $rc -eq 124 && ${RP_SANITIZE:-} == *thread* ]]; then
        echo "e2e_fork: hung under ThreadSanitizer (open finding); trying once more" >&2
        rc=0
        attempt || rc=$?
    fi
    [[ $rc -eq 0 ]] || fail "record exited $rc (124: hung)"
    out=$(cat "$tmp/out")
    child=$(echo "$out" | sed -n 's/^child \([0-9]*\)$/\1/p')
    [ -n "$child" ] || fail "no child pid printed: $out"
    [ -f "$tmp/f.data.$child" ] || fail "no child trace $tmp/f.data.$child: $(ls "$tmp")"
    echo "$child" >"$tmp/child"
}

# each file by itself: exact counts
parent_and_child() {
    child=$(cat "$tmp/child") || fail "no child pid (scenario record failed)"
    "$RANKPROF" report -i "$tmp/f.data" --one-file --format json > "$tmp/p.json"
    "$RANKPROF" report -i "$tmp/f.data.$child" --format json > "$tmp/c.json"
    python3 - "$tmp/p.json" "$tmp/c.json" <<'PY' || fail "counts differ"
import json, sys
p = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
calls = lambda r, n: sum(x["calls"] for x in r["nodes"] if x["name"] == n)
ok = True
for r, name, want in ((p, "work", 170), (p, "child_work", 0), (c, "child_work", 30), (c, "work", 30)):
    got = calls(r, name)
    if got != want:
        print(f"{name}: {got} calls, expected {want}", file=sys.stderr); ok = False
if p["threads"] != 2:
    print(f"parent threads {p['threads']}, expected 2", file=sys.stderr); ok = False
# the child's trace begins with main open (the call that forked): its
# child_work calls are main's, and main's return is no unmatched exit
edges = {(e["caller"], e["callee"]): e["calls"] for e in c["edges"]}
if edges.get(("main", "child_work")) != 30 or c["unmatched_exits"] or calls(c, "main") != 1:
    print(f"child: edges {edges}, {c['unmatched_exits']} unmatched exits, main "
          f"{calls(c, 'main')} calls: main not open at the fork", file=sys.stderr); ok = False
sys.exit(0 if ok else 1)
PY
}

# child_seed NAME ARGS...: `record ARGS -o NAME.data prog_forker`; the
# child's file begins inside main, open at the fork: main once, its 30
# child_work calls main's, no exit unmatched (time off CPU aside)
child_seed() {
    local name=$1 c
    shift
    rm -f "$tmp/$name".data*
    timeout 60 "$RANKPROF" record "$@" -o "$tmp/$name.data" -- "$PROGS/prog_forker" \
        >"$tmp/$name.out" 2>/dev/null || fail "$name: record $* exited $?"
    c=$(sed -n 's/^child \([0-9]*\)$/\1/p' "$tmp/$name.out")
    "$RANKPROF" report -i "$tmp/$name.data.$c" --one-file --format json >"$tmp/$name.json" ||
        fail "$name: report of the child's file"
    python3 - "$tmp/$name.json" "$name" <<'PY' || fail "$name: the child's seed (above)"
import json, sys
r = json.load(open(sys.argv[1]))
e = {(x["caller"], x["callee"]): x["calls"] for x in r["edges"] if x["callee"] != "[off-cpu]"}
want = {("<root>", "main"): 1, ("main", "child_work"): 30, ("child_work", "work"): 30}
if e != want or r["unmatched_exits"]:
    sys.exit(f"e2e_fork: FAIL: {sys.argv[2]}: edges {e}, want {want}; {r['unmatched_exits']} unmatched")
PY
}

# the child's seed when the writer has written part of the buffer the
# forking thread fills (a periodic flush every ms, three runs): the calls
# open at the fork come from the records not yet written only, so the
# child's main is open once (not main -> main)
flushed() {
    local i
    for i in 1 2 3; do
        RANKPROF_FLUSH_MS=1 child_seed flushed
    done
}

# direct mode: the child's statistics begin inside the calls open at the
# fork too (the engine applies the forking thread's batch first)
direct() {
    child_seed direct --mode direct
}

# the run's set, merged (docs/robustness.md, "One file per process")
merged() {
    "$RANKPROF" report -i "$tmp/f.data" --format json > "$tmp/m.json"
    python3 - "$tmp/m.json" <<'PY' || fail "merged counts differ"
import json, sys
m = json.load(open(sys.argv[1]))
calls = lambda n: sum(x["calls"] for x in m["nodes"] if x["name"] == n)
assert (calls("work"), calls("child_work"), m["threads"], len(m["processes"])) == (200, 30, 3, 2), \
    (calls("work"), calls("child_work"), m["threads"], len(m["processes"]))
PY
}

# threads encoding their own buffers (RANKPROF_BUFSIZE=4096: one every 128
# calls) while main forks 12 children one after another: each fork waits
# for them (a child that finds a thread's encoding under way says
# "internal error"), the parent's calls are exact, so is every child's file
storm() { # 12 forks; 4 under the sanitizers, where each fork takes seconds
    local forks=12
    sanitized && forks=4
    rm -f "$tmp"/s.data*
    RANKPROF_SELF_ENCODE=1 RANKPROF_BUFSIZE=4096 timeout -k 5 120 "$RANKPROF" record -o "$tmp/s.data" -- \
        "$PROGS/prog_forker" 3 $forks >"$tmp/s.out" 2>"$tmp/s.err" ||
        fail "record exited $? (124: hung): $(tail -3 "$tmp/s.err")"
    ! grep -q "internal error" "$tmp/s.err" || fail "$(grep "internal error" "$tmp/s.err" | head -3)"
    local children calls
    read -r _ children _ calls <"$tmp/s.out"
    [[ $children == "$forks" && $calls -gt 0 ]] || fail "the program says: $(cat "$tmp/s.out")"
    local self
    self=$(python3 - "$tmp/s.data" <<'PY'
import struct, sys
data = open(sys.argv[1], "rb").read()
k = struct.pack("<H", 12) + b"buffers_self"  # INFO: u16 len, key, u32 len, value
i = data.rfind(k)
(n,) = struct.unpack_from("<I", data, i + len(k)) if i >= 0 else (0,)
print(int(data[i + len(k) + 4 : i + len(k) + 4 + n] or 0) if i >= 0 else 0)
PY
    )
    [[ ${self:-0} -gt 0 ]] || fail "no buffer encoded by its own thread (INFO buffers_self)"
    "$RANKPROF" report -i "$tmp/s.data" --one-file --format json >"$tmp/s.json" || fail "report"
    python3 - "$tmp/s.json" "$calls" <<'PY' || fail "the parent's counts differ"
import json, sys
r, calls = json.load(open(sys.argv[1])), int(sys.argv[2])
got = sum(x["calls"] for x in r["nodes"] if x["name"] == "work_small")
if got != calls or r["threads"] != 4:
    sys.exit(f"work_small {got} calls, expected {calls}; threads {r['threads']}, expected 4")
PY
    local f n=0
    for f in "$tmp"/s.data.*; do
        "$RANKPROF" report -i "$f" --one-file --format json >"$tmp/c.json" || fail "report $f"
        python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
c = lambda n: sum(x["calls"] for x in r["nodes"] if x["name"] == n)
got = (c("child_work"), c("work"), c("work_small"))
e = {(x["caller"], x["callee"]): x["calls"] for x in r["edges"]}
u = r["unmatched_exits"]
if got != (1, 1, 0) or e.get(("storm", "child_work")) != 1 or u:
    sys.exit(f"child_work, work, work_small: {got}; edges {e}, {u} unmatched exits")' "$tmp/c.json" ||
            fail "a child's counts differ"
        n=$((n + 1))
    done
    [[ $n == "$forks" ]] || fail "$n child files, expected $forks"
    note "$calls calls, $self buffers encoded by their own threads, $forks forks"
}

scenario record record
scenario parent_and_child parent_and_child
scenario merged merged
scenario flushed flushed
scenario direct direct
scenario storm storm
finish

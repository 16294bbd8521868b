#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_top.sh - the statistics of a running service in direct mode
# (src/record/direct_pub.c, src/cli/cmd_top.c, docs/services.md) on
# prog_server (tests/progs/server.c): each request the client sends is
# handle_request -> parse_request, compute once, and the client waits for
# each answer.
#
#   batch     top -b -n 1 after 123 requests: handle_request, parse_request
#             and compute have exactly 123 calls in the table, main 1 and
#             worker 2 (the waiting threads' open frames end at the
#             snapshot), the header says it still runs; after 77 more,
#             top -b -n 2 -d 0.2 prints two tables, both with 200
#   snapshot  ctl PID snapshot: NAME.snap holds 200 calls (report --format
#             json), the server goes on; its final file has 230
#   live      top in a terminal (tmux): the table with 40 calls, refreshed
#             to 65 after 25 more requests, q quits
#   trace     top on a process recording a trace (it reads the file as far
#             as written): after 50 requests the table shows 50 calls of the
#             request path, the header says it still runs; after 30 more,
#             80; the final trace has 81
#   refused   top on no process, with bad options: exit status 1 or 2 and
#             a message saying why
#   running   top on a thread that never blocks (prog_busy): its open
#             frame counts, so its tree has standing (below)
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_top RANKPROF PROGS RP_LIB
need_progs server busy
need_tools python3
export RANKPROF_LIB="$RP_LIB"

source "$(dirname "${BASH_SOURCE[0]}")/server.sh"
finish_server() { # NAME
    wait "$rec" || fail "$1: record exited $?: $(cat "$tmp/$1.out")"
    grep -q "^served" "$tmp/$1.out" || fail "$1: the server did not end: $(cat "$tmp/$1.out")"
}
# TABLES N [TABLES]: every table (a "rankprof top" header starts one) has
# the request path at N calls, and there are TABLES of them (default 1)
table_calls() { check_tables "$@" || fail "$1: wrong counts: $(cat "$1")"; }
check_tables() {
    python3 - "$@" <<'PY'
import re, sys
text, n = open(sys.argv[1]).read(), int(sys.argv[2])
want = int(sys.argv[3]) if len(sys.argv) > 3 else 1
tables = [t for t in re.split(r"^rankprof top - ", text, flags=re.M)[1:]]
if len(tables) != want:
    sys.exit(f"{len(tables)} tables, expected {want}")
for t in tables:
    c = {}
    for l in t.splitlines():
        m = re.match(r"^\s*\d+\s+\S+%\s+\S+%\s+(\d+)\S*\s+.*\s(\w+) \(server\.c:\d+\)$", l)
        if m:
            c[m.group(2)] = int(m.group(1))
    bad = [f"{f}: {c.get(f)} calls, expected {n}" for f in ("handle_request", "parse_request", "compute")
           if c.get(f) != n]
    if bad:
        sys.exit("\n".join(bad))
PY
}
# N: waits until top shows the request path at N calls (5 s at most): a
# worker that has answered may not be waiting yet, its last calls counted
# when it is
settled() {
    local i
    for i in $(seq 50); do
        "$RANKPROF" top -b -n 1 --no-chains "$pid" >"$tmp/settle" 2>&1 && check_tables "$tmp/settle" "$1" 2>/dev/null &&
            return 0
        sleep 0.1
    done
}
# FILE: the open frames of the waiting threads end at the snapshot: main
# has 1 call, worker 2 (one per worker), each marked as still open (*)
open_frames() {
    grep -E -q "^ +[0-9]+ +\S+% +\S+% +1\* .* main \(server\.c:[0-9]+\)$" "$1" &&
        grep -E -q "^ +[0-9]+ +\S+% +\S+% +2\* .* worker \(server\.c:[0-9]+\)$" "$1"
}
json_calls() { # FILE N: the request path has N calls in FILE's report
    "$RANKPROF" report --format json "$1" >"$1.json" 2>"$1.err" || fail "report $1: $(cat "$1.err")"
    python3 - "$1.json" "$2" <<'PY' || fail "$1: wrong counts"
import json, sys
d, n = json.load(open(sys.argv[1])), int(sys.argv[2])
c = {x["name"]: x["calls"] for x in d["nodes"]}
bad = [f"{f}: {c.get(f, 0)} calls, expected {n}" for f in ("handle_request", "parse_request", "compute")
       if c.get(f, 0) != n]
if bad:
    sys.exit("\n".join(bad))
PY
}

batch() {
    start_server b --mode direct
    req 123
    # (a worker that has answered may not be waiting yet: its last calls
    # are counted when it is, so ask again, 5 s at most)
    local i
    for i in $(seq 50); do
        "$RANKPROF" top -b -n 1 "$pid" >"$tmp/top1" 2>"$tmp/top1.err" ||
            fail "top -b -n 1: $(cat "$tmp/top1.err")"
        check_tables "$tmp/top1" 123 2>/dev/null && open_frames "$tmp/top1" && break
        sleep 0.1
    done
    table_calls "$tmp/top1" 123
    open_frames "$tmp/top1" || fail "main and the workers are not in the table: $(cat "$tmp/top1")"
    grep -q "HOT" "$tmp/top1" || fail "the table has no flags: $(cat "$tmp/top1")"
    grep -q "^run: still running" "$tmp/top1" || fail "the header: $(cat "$tmp/top1")"
    req 77
    settled 200
    "$RANKPROF" top -b -n 2 -d 0.2 "$pid" >"$tmp/top2" 2>"$tmp/top2.err" || fail "top -n 2: $(cat "$tmp/top2.err")"
    table_calls "$tmp/top2" 200 2
    "$RANKPROF" ctl "$pid" snapshot >"$tmp/snap.out" 2>&1 || fail "ctl snapshot: $(cat "$tmp/snap.out")"
    grep -q "statistics written to $tmp/b.rp.snap" "$tmp/snap.out" || fail "snapshot: $(cat "$tmp/snap.out")"
    json_calls "$tmp/b.rp.snap" 200
    req 30 quit
    finish_server b
    json_calls "$tmp/b.rp" 230
    [[ ! -e /dev/shm/rankprof.$pid.stats ]] || fail "the statistics file is left after the end"
}

live() {
    command -v tmux >/dev/null || { missing tmux "top's screen is driven through tmux"; return 0; }
    start_server l --mode direct
    req 40
    local sock="$tmp/tmux.sock"
    at_exit "tmux -S '$sock' kill-server 2>/dev/null"
    T() { tmux -S "$sock" "$@"; }
    T new -d -s top -x 140 -y 40 "'$RANKPROF' top -d 0.3 $pid; echo EXITED \$?; sleep 30"
    screen_calls() { # N: the screen shows the request path at N calls (10 s at most)
        local i
        for i in $(seq 100); do
            T capture-pane -p -t top >"$tmp/screen" 2>/dev/null || true
            grep -q "(q quits)" "$tmp/screen" && grep -q "^\[wait\] rows" "$tmp/screen" &&
                check_tables "$tmp/screen" "$1" 2>/dev/null && return 0
            sleep 0.1
        done
        table_calls "$tmp/screen" "$1"
    }
    ( screen_calls 40 ) || fail "live: the first screen"
    req 25
    ( screen_calls 65 ) || fail "live: the refreshed screen"
    T send-keys -t top q
    local i
    for i in $(seq 100); do
        T capture-pane -p -t top >"$tmp/screen" 2>/dev/null || true
        grep -q "^EXITED 0" "$tmp/screen" && break
        sleep 0.1
    done
    grep -q "^EXITED 0" "$tmp/screen" || fail "q did not quit: $(cat "$tmp/screen")"
    req 1 quit
    finish_server l
}

trace() {
    start_server t
    req 50
    settled 50 # (the recorder writes its buffers every 200 ms)
    "$RANKPROF" top -b -n 1 --no-chains "$pid" >"$tmp/t1" 2>"$tmp/t1.err" ||
        fail "top -b -n 1: $(cat "$tmp/t1.err")"
    table_calls "$tmp/t1" 50
    grep -q "^run: still running" "$tmp/t1" || fail "the header: $(cat "$tmp/t1")"
    req 30
    settled 80
    "$RANKPROF" top -b -n 2 -d 0.1 --no-chains "$pid" >"$tmp/t2" 2>"$tmp/t2.err" ||
        fail "top -n 2: $(cat "$tmp/t2.err")"
    table_calls "$tmp/t2" 80 2
    req 1 quit
    finish_server t
    json_calls "$tmp/t.rp" 81
}

refused() {
    local rc
    set +e
    "$RANKPROF" top -b -n 1 999999999 >"$tmp/o" 2>&1
    rc=$?
    [[ $rc == 2 ]] || { "$RANKPROF" top -b -n 1 4194000 >"$tmp/o" 2>&1; rc=$?; }
    set -e
    [[ $rc == 1 || $rc == 2 ]] || fail "no process: rc $rc, $(cat "$tmp/o")"
    set +e
    "$RANKPROF" top -b -n 0 1 >"$tmp/o" 2>&1
    rc=$?
    set -e
    [[ $rc == 2 ]] && grep -q "at least 1" "$tmp/o" || fail "-n 0: rc $rc, $(cat "$tmp/o")"
}

if under_tsan; then
    # (under TSan the workers' last requests were not yet in the published
    # statistics when the table was read: 102 of 123; open, docs/services.md)
    note "batch, live: skipped under TSan"
else
    scenario batch batch
    scenario live live
fi
# A thread that never blocks: prog_busy's worker calls step() (then tiny())
# in a loop that does not end while top reads the table, and main waits in
# pthread_join.  Its open frame, worker, counts as ending at the snapshot as
# a blocked thread's do (published at each run of its engine), so worker
# has 1 call and the walk from <root> reaches its tree: worker, step and
# tiny have standing above 0.00 % (without it: no worker row, and step and
# tiny at 0.00 %).
running() {
    "$RANKPROF" record --mode direct -o "$tmp/busy.rp" -- "$PROGS/prog_busy" 1 100000000000 100 \
        >"$tmp/busy.out" 2>&1 &
    rec=$!
    local i p=
    for i in $(seq 100); do
        p=$(pgrep -P "$rec" prog_busy || true)
        [[ -n $p ]] && break
        sleep 0.1
    done
    [[ -n $p ]] || fail "prog_busy did not start: $(cat "$tmp/busy.out")"
    at_exit "kill $p 2>/dev/null"
    sleep 0.5
    "$RANKPROF" top -b -n 1 --no-chains "$p" >"$tmp/busy.top" 2>&1 || fail "top: $(cat "$tmp/busy.top")"
    kill "$p"
    wait "$rec" || true
    python3 - "$tmp/busy.top" <<'PY2' || fail "the running thread's tree: $(cat "$tmp/busy.top")"
import re, sys
rows = {}
for l in open(sys.argv[1]):
    m = re.match(r"^\s*\d+\s+(\S+)%\s+\S+%\s+(\d+)\S*\s+.*\s(\w+) \(busy\.c:\d+\)$", l)
    if m:
        rows[m.group(3)] = (float(m.group(1)), int(m.group(2)))
bad = []
if rows.get("worker", (0, 0))[1] != 1:
    bad.append(f"worker: {rows.get('worker')}, expected 1 call (its open frame)")
for f in ("worker", "step", "tiny"):
    if rows.get(f, (0, 0))[0] <= 0:
        bad.append(f"{f}: standing {rows.get(f)}, expected above 0")
if bad:
    sys.exit("\n".join(bad))
PY2
}

scenario trace trace
scenario refused refused
scenario running running
finish

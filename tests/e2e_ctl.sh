#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_ctl.sh - recording switched on and off in a running service
# (src/record/ctl.c, src/cli/cmd_ctl.c, docs/services.md), on prog_server
# (tests/progs/server.c): an epoll loop on 127.0.0.1 and two worker threads;
# each request the client sends is handle_request -> parse_request, compute
# once, and the client waits for each answer.
#
#   windows   started --off: 100 requests (not recorded), ctl start, 250,
#             ctl stop, 70, ctl start, 30, 40 and quit: handle_request,
#             parse_request and compute have exactly 320 calls; no unmatched
#             exit, no unclosed span (frames and lock holds open at a switch
#             end there); the JSON says 2 windows and their time; ctl status
#             says what is going on; the control page is gone after the end;
#             dump starts each thread's calls again at depth 0 after an edge
#   direct    windows in direct mode: the same counts, no unmatched exit
#             (the engine ends the frames and holds open at a switch there,
#             leaves out what the thread records while off and the exits of
#             what began before a window), the file says 2 windows
#   signal    a plain signal (kill -s RTMIN+8) switches over: 60 requests
#             recorded between two of them, 25 after not
#   on        started on (no --off): ctl stop, 45 requests not recorded, the
#             first 35 are
#   refused   a process without the recorder, one that does not exist, one
#             holding the pid of a killed recorded process whose control
#             page is left, bad command lines: exit status 1 or 2 and a
#             message saying why
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_ctl RANKPROF PROGS RP_LIB
need_progs server
need_tools python3
export RANKPROF_LIB="$RP_LIB"

source "$(dirname "${BASH_SOURCE[0]}")/server.sh"
ctl() { "$RANKPROF" ctl "$pid" "$1" >>"$tmp/ctl.out" 2>&1 || fail "ctl $1: $(tail -1 "$tmp/ctl.out")"; }
finish_server() { # NAME
    wait "$rec" || fail "$1: record exited $?: $(cat "$tmp/$1.out")"
    grep -q "^served" "$tmp/$1.out" || fail "$1: the server did not end: $(cat "$tmp/$1.out")"
    "$RANKPROF" report --format json "$tmp/$1.rp" >"$tmp/$1.json" 2>"$tmp/$1.err" ||
        fail "$1: report: $(cat "$tmp/$1.err")"
}
calls() { # JSON N WINDOWS: the request path has N calls, the trace WINDOWS windows
    python3 - "$@" <<'PY' || fail "$1: wrong counts"
import json, sys
d, n, w = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
c = {x["name"]: x["calls"] for x in d["nodes"]}
bad = [f"{f}: {c.get(f, 0)} calls, expected {n}" for f in ("handle_request", "parse_request", "compute")
       if c.get(f, 0) != n]
if d["unmatched_exits"] or d["unclosed"]:
    bad.append(f"unmatched {d['unmatched_exits']}, unclosed {d['unclosed']}")
if d.get("windows", 0) != w:
    bad.append(f"{d.get('windows')} windows, expected {w}")
if w and not 0 < d["recorded_ns"] < 60e9:
    bad.append(f"recorded_ns {d['recorded_ns']}")
if bad:
    sys.exit("\n".join(bad))
PY
}

windows() {
    start_server win --off
    "$RANKPROF" ctl "$pid" status >"$tmp/st0" || fail "ctl status"
    grep -q "not recording (0 windows)" "$tmp/st0" || fail "status before: $(cat "$tmp/st0")"
    [[ -f /dev/shm/rankprof.$pid ]] || fail "no control page /dev/shm/rankprof.$pid"
    req 100
    ctl start
    req 250
    "$RANKPROF" ctl "$pid" status | grep -q "recording (1 window)" || fail "status in the window"
    ctl stop
    req 70
    ctl start
    req 30
    req 40 quit
    finish_server win
    calls "$tmp/win.json" 320 2
    [[ ! -e /dev/shm/rankprof.$pid ]] || fail "the control page is left after the end"
    "$RANKPROF" report "$tmp/win.rp" 2>/dev/null | grep -q "^recording: switched on 2 times" ||
        fail "the table does not say recording was switched"
    # dump follows the edges: after a thread's unwind at a switch, its calls
    # start again at depth 0, and every exit is of the call it names
    "$RANKPROF" dump "$tmp/win.rp" >"$tmp/win.dump" || fail "dump"
    python3 - "$tmp/win.dump" <<'PY' || fail "dump across the windows' edges"
import re, sys
stacks, bad, edges = {}, [], 0
for l in open(sys.argv[1]):
    if l.startswith("#") or len(l) < 32:
        continue
    # time (14), thread (7), event (7), then the indentation and the name
    tid, op, rest = l[15:22].strip(), l[23:30].strip(), l[31:].rstrip("\n")
    name = rest.lstrip(" ")
    ind = len(rest) - len(name)
    st = stacks.setdefault(tid, [])
    if op == "unwind" and name.startswith("(thread end"):
        st.clear()
        edges += 1
    elif op == "enter":
        if ind != 2 * len(st):
            bad.append(f"{tid}: enter {name} indented {ind}, depth {len(st)}")
        st.append(name)
    elif op == "exit":
        want = st.pop() if st else None
        if name != want:
            bad.append(f"{tid}: exit {name!r}, open {want!r}")
if not edges or bad:
    sys.exit(f"{edges} edges; " + "; ".join(bad[:4]))
PY
}

direct() {
    start_server dwin --off --mode direct
    req 100
    ctl start
    req 250
    ctl stop
    req 70
    ctl start
    req 30
    req 40 quit
    finish_server dwin
    calls "$tmp/dwin.json" 320 2
    "$RANKPROF" report "$tmp/dwin.rp" 2>/dev/null | grep -q "^recording: switched on 2 times" ||
        fail "direct: the table does not say recording was switched"
}

signal() {
    start_server sig --off
    local i
    kill -s RTMIN+8 "$pid"
    for i in $(seq 50); do # (a plain signal has no answer: ask)
        "$RANKPROF" ctl "$pid" status | grep -q "^process $pid: recording" && break
        sleep 0.1
    done
    req 60
    kill -s RTMIN+8 "$pid"
    for i in $(seq 50); do
        "$RANKPROF" ctl "$pid" status | grep -q "not recording" && break
        sleep 0.1
    done
    req 25 quit
    finish_server sig
    calls "$tmp/sig.json" 60 1
}

on() {
    start_server on
    req 35
    ctl stop
    req 45 quit
    finish_server on
    calls "$tmp/on.json" 35 1
}

refused() {
    local rc
    set +e
    "$RANKPROF" ctl $$ status >"$tmp/r1" 2>&1
    rc=$?
    set -e
    [[ $rc == 1 ]] && grep -q "has no rankprof recorder" "$tmp/r1" || fail "no recorder: rc $rc, $(cat "$tmp/r1")"
    # a page left by a killed process whose pid a later process holds: a
    # live server's page, its pid and start time made those of an earlier
    # process numbered as a fresh `sleep`
    start_server stale --off
    sleep 30 &
    local spid=$!
    at_exit "kill $spid 2>/dev/null; rm -f /dev/shm/rankprof.$spid"
    python3 - "/dev/shm/rankprof.$pid" "/dev/shm/rankprof.$spid" "$spid" <<'PY'
import struct, sys, time
b = bytearray(open(sys.argv[1], "rb").read())
struct.pack_into("<I", b, 8, int(sys.argv[3]))                        # pid
struct.pack_into("<Q", b, 32, int((time.time() - 3600) * 1e9))        # start_ns
open(sys.argv[2], "wb").write(b)
PY
    set +e
    "$RANKPROF" ctl "$spid" status >"$tmp/r4" 2>&1
    rc=$?
    set -e
    [[ $rc == 1 ]] && grep -q "left by an earlier process" "$tmp/r4" ||
        fail "a dead process's page: rc $rc, $(cat "$tmp/r4")"
    kill "$spid" 2>/dev/null || true
    req 1 quit
    wait "$rec" || true
    set +e
    "$RANKPROF" ctl 999999999 start >"$tmp/r2" 2>&1
    rc=$?
    set -e
    [[ $rc == 1 ]] && grep -q "no process" "$tmp/r2" || fail "no process: rc $rc, $(cat "$tmp/r2")"
    for args in "" "12" "12 jump" "x start"; do
        set +e
        "$RANKPROF" ctl $args >"$tmp/r3" 2>&1
        rc=$?
        set -e
        [[ $rc == 2 ]] || fail "ctl $args: rc $rc, $(cat "$tmp/r3")"
    done
}

scenario windows windows
scenario direct direct
scenario signal signal
scenario on on
scenario refused refused
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_ring.sh - the flight recorder: `rankprof record --ring SIZE`
# (src/record/ring.c, docs/services.md) on prog_ringreq
# (tests/progs/ringreq.c): warm() WARM times, then requests numbered 0, 1,
# ..., each a point "request" (budget 10 ms) around a mark "seq" with its
# number and handle_request -> parse, compute; one planted slow request.
#
#   tail      a ring of 256K on a run of 20000 requests (several times
#             SIZE): the trace holds exactly the last requests, their seq
#             marks K..19999 with none missing and K > 0, handle_request K
#             or K+1 fewer than 20000 (the first kept may have begun before
#             the kept window), no warm(); the kept EVENTS chunks and their
#             bookkeeping fit SIZE, the rest of the file (definitions,
#             INFO, END) is under 16K; no unmatched exit; the report says
#             what was kept and that it was written at exit
#   ctl       `rankprof ctl PID snapshot` on a running process (500
#             requests, snapshot, 500 more, snapshot): FILE.snap1 holds
#             exactly 500 requests, FILE.snap2 1000, both read by report,
#             info, dump and export, say "still running" and "ctl"; `top -b
#             -n 1` in between shows the 500 (and takes no snapshot
#             number); with --ring-keep 2 a third snapshot deletes the
#             first; the process served every request and its trace at exit
#             holds 1000; top's file in /dev/shm is gone after the end
#   trigger   --ring-trigger 'handle_request>10ms' with request 700 of
#             1000 sleeping 20 ms: exactly one snapshot, holding request
#             700 whole (max >= 20 ms, every seq mark 0..700) and naming
#             the trigger; 'budget' names the point over its budget;
#             'rate:control' on prog_periodic (a 50 ms period, run 6 busy
#             40 ms) fires once, with runs 0..6 whole in the snapshot;
#             'compute>0ns' with --ring-every 3600 fires on many calls and
#             writes one snapshot: the others are counted as skipped
#   server    prog_server (tests/progs/server.c: an epoll loop on
#             127.0.0.1, two worker threads) under --ring 4M: 200 requests,
#             ctl snapshot, 100 more and quit: the snapshot has exactly 200
#             calls of handle_request, parse_request and compute, on the
#             worker threads, the trace at exit 300
#   ending    SIGTERM to a process holding 500 requests: the trace is the
#             ring, "signal 15", and holds the 500
#   refused   --ring below 64K, with --mode direct or --max-size, a
#             malformed --ring-trigger, --ring-trigger without --ring, and
#             ctl snapshot of a trace without a ring: usage or a message
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_ring RANKPROF PROGS RP_LIB
need_progs ringreq server periodic
need_tools python3
export RANKPROF_LIB="$RP_LIB"
source "$(dirname "${BASH_SOURCE[0]}")/server.sh"

SIZE=262144

# json FILE: the report's JSON of FILE into FILE.json (fails on an error)
json() {
    "$RANKPROF" report --format json "$1" >"$1.json" 2>"$1.err" || fail "report $1: $(cat "$1.err")"
}

# check FILE PYTHON: runs PYTHON with d (the JSON of FILE), c (calls by
# name), mx (max_ns by name), seq (the seq marks' arguments in dump order)
check() {
    json "$1"
    "$RANKPROF" dump "$1" >"$1.dump" 2>"$1.derr" || fail "dump $1: $(cat "$1.derr")"
    python3 - "$1" "$2" <<'PY' || fail "$1: $(cat "$1.msg" 2>/dev/null)"
import json, re, sys
f, code = sys.argv[1], sys.argv[2]
d = json.load(open(f + ".json"))
c = {x["name"]: x["calls"] for x in d["nodes"]}
mx = {x["name"]: x["max_ns"] for x in d["nodes"]}
r = d.get("ring") or {}
seq = [int(m.group(1)) for m in re.finditer(r"instant\s+seq (\d+)", open(f + ".dump").read())]
bad = []
def want(ok, msg):
    if not ok:
        bad.append(msg)
exec(code)
if bad:
    open(f + ".msg", "w").write("; ".join(bad))
    sys.exit(1)
PY
}

# start NAME [RECORD OPTIONS...] -- N: prog_ringreq 0 N (no slow request) in
# hold mode under record --ring 1M, its stdin a fifo; sets pid, rec
start() {
    local name=$1
    shift
    mkfifo "$tmp/$name.in"
    $TMO "$RANKPROF" record --ring 1M "$@" -o "$tmp/$name.rp" -- "$PROGS/prog_ringreq" 0 500 \
        999999 0 hold <"$tmp/$name.in" >"$tmp/$name.out" 2>&1 &
    rec=$!
    exec 3>"$tmp/$name.in"
    wait_ready "$name" 500
    pid=$(sed -n 's/^pid //p' "$tmp/$name.out")
    [[ -n $pid ]] || fail "$name: no pid: $(cat "$tmp/$name.out")"
}

# wait_ready NAME R: until the program says it served R requests (60 s)
wait_ready() {
    for _ in $(seq 600); do
        grep -q "^ready $2\$" "$tmp/$1.out" && return 0
        kill -0 "$rec" 2>/dev/null || break
        sleep 0.1
    done
    fail "$1: not ready $2: $(cat "$tmp/$1.out")"
}

tail_() {
    "$RANKPROF" record --ring 256K -o "$tmp/t.rp" -- "$PROGS/prog_ringreq" 1000 20000 999999 0 \
        >"$tmp/t.out" 2>&1 || fail "record exited $?: $(cat "$tmp/t.out")"
    check "$tmp/t.rp" '
k = seq[0] if seq else -1
want(seq == list(range(k, 20000)), f"seq marks not a tail K..19999: {len(seq)} from {k} to {seq[-1] if seq else None}")
want(k > 0, "the ring kept every request: it was not smaller than the run")
want(c.get("handle_request", 0) in (20000 - k, 20001 - k), f"calls {c}, kept marks from {k}")
want("warm" not in c, f"warm() kept: {c}")
want(d["unmatched_exits"] == 0, f"unmatched exits: {d}")
want(r.get("size") == 262144 and r.get("dropped", 0) > 0 and r.get("snapshot") == "exit", f"ring {r}")
'
    # the bound: EVENTS chunks (16-byte header, 16 bytes of bookkeeping each)
    python3 - "$tmp/t.rp.dump" "$(stat -c %s "$tmp/t.rp")" $SIZE <<'PY' >"$tmp/bound" ||
import re, sys
dump, size, limit = open(sys.argv[1]).read(), int(sys.argv[2]), int(sys.argv[3])
ev = [int(n) for n in re.findall(r"EVENTS chunk, (\d+) bytes", dump)]
kept = sum(32 + n for n in ev)
rest = size - sum(16 + n for n in ev)
print(f"{len(ev)} EVENTS chunks, {kept} bytes kept of {limit}; file {size} bytes, {rest} not EVENTS")
if kept > limit or rest > 16384 or kept < limit // 2:
    sys.exit(1)
PY
        fail "bound: $(cat "$tmp/bound")"
    note "$(cat "$tmp/bound")"
    "$RANKPROF" report "$tmp/t.rp" >"$tmp/t.txt" 2>&1 || fail "report: $(cat "$tmp/t.txt")"
    grep -q "^ring: the last .* kept (flight recorder of 256 KiB" "$tmp/t.txt" ||
        fail "report: $(grep -i ring "$tmp/t.txt")"
    grep -q "^snapshot: exit" "$tmp/t.txt" || fail "report: no 'snapshot: exit'"
    grep -q "^unmatched: *0 " <("$RANKPROF" info "$tmp/t.rp") || fail "info: unmatched exits"
}

ctl_() {
    start c --ring-keep 2
    "$RANKPROF" ctl "$pid" snapshot >"$tmp/c.ctl1" 2>&1 || fail "ctl snapshot: $(cat "$tmp/c.ctl1")"
    grep -q "written to $tmp/c.rp.snap1\$" "$tmp/c.ctl1" || fail "ctl said: $(cat "$tmp/c.ctl1")"
    check "$tmp/c.rp.snap1" '
want(seq == list(range(500)), f"{len(seq)} seq marks")
want(c.get("handle_request") == 500 and c.get("compute") == 500, f"calls {c}")
want(r["snapshot"] == "ctl", f"ring {r}")
'
    "$RANKPROF" report "$tmp/c.rp.snap1" >"$tmp/c.txt" 2>&1 || fail "report: $(cat "$tmp/c.txt")"
    grep -q "^run: still running at this snapshot" "$tmp/c.txt" || fail "report: $(grep ^run "$tmp/c.txt")"
    grep -q "^snapshot: ctl" "$tmp/c.txt" || fail "report: no 'snapshot: ctl'"
    "$RANKPROF" export --format chrome -o "$tmp/c.json" "$tmp/c.rp.snap1" >/dev/null 2>&1 ||
        fail "export chrome of a snapshot"
    # top reads the ring through the same request (a file of its own)
    $TMO "$RANKPROF" top -b -n 1 "$pid" >"$tmp/c.top" 2>&1 || fail "top: $(cat "$tmp/c.top")"
    grep -Eq "^ +[0-9]+ .* 500 .* handle_request " "$tmp/c.top" || fail "top: $(cat "$tmp/c.top")"
    grep -q "^run: still running" "$tmp/c.top" || fail "top: $(grep ^run "$tmp/c.top")"
    echo more >&3
    wait_ready c 1000
    "$RANKPROF" ctl "$pid" snapshot >"$tmp/c.ctl2" 2>&1 || fail "ctl snapshot: $(cat "$tmp/c.ctl2")"
    grep -q "written to $tmp/c.rp.snap2\$" "$tmp/c.ctl2" || fail "ctl said: $(cat "$tmp/c.ctl2")"
    check "$tmp/c.rp.snap2" '
want(seq == list(range(1000)), f"{len(seq)} seq marks")
want(c.get("handle_request") == 1000 and c.get("parse") == 1000, f"calls {c}")
'
    "$RANKPROF" info "$tmp/c.rp.snap2" >"$tmp/c.info" 2>&1 || fail "info: $(cat "$tmp/c.info")"
    grep -q "still running at this snapshot" "$tmp/c.info" || fail "info: $(cat "$tmp/c.info")"
    # --ring-keep 2: the third snapshot deletes the first
    "$RANKPROF" ctl "$pid" snapshot >"$tmp/c.ctl3" 2>&1 || fail "ctl snapshot: $(cat "$tmp/c.ctl3")"
    grep -q "written to $tmp/c.rp.snap3\$" "$tmp/c.ctl3" || fail "ctl said: $(cat "$tmp/c.ctl3")"
    [[ ! -e $tmp/c.rp.snap1 && -f $tmp/c.rp.snap2 && -f $tmp/c.rp.snap3 ]] ||
        fail "--ring-keep 2: $(ls "$tmp" | grep snap)"
    exec 3>&-
    wait "$rec" || fail "record exited $?: $(cat "$tmp/c.out")"
    grep -q "and 2 snapshots" "$tmp/c.out" || fail "record's message: $(cat "$tmp/c.out")"
    [[ ! -e /dev/shm/rankprof.$pid.stats ]] || fail "top's file is left: /dev/shm/rankprof.$pid.stats"
    check "$tmp/c.rp" 'want(c.get("handle_request") == 1000, f"calls {c}")'
}

trigger() {
    "$RANKPROF" record --ring 4M --ring-trigger 'handle_request>10ms' -o "$tmp/g.rp" -- \
        "$PROGS/prog_ringreq" 0 1000 700 20 >"$tmp/g.out" 2>&1 ||
        fail "record exited $?: $(cat "$tmp/g.out")"
    [[ -f $tmp/g.rp.snap1 && ! -e $tmp/g.rp.snap2 ]] || fail "snapshots: $(ls "$tmp")"
    check "$tmp/g.rp.snap1" '
want(seq[:701] == list(range(701)) and seq == list(range(len(seq))), f"seq marks: {len(seq)}")
want(mx.get("handle_request", 0) >= 20e6 and c.get("handle_request", 0) >= 701, f"calls {c}, max {mx}")
s = d["ring"]["snapshot"] or ""
want(re.fullmatch(r"trigger handle_request \d+\.\d{3} ms > 10ms at \d+\.\d{3} s", s) and float(s.split()[2]) >= 20, f"snapshot {s!r}")
'
    check "$tmp/g.rp" 'want(d["ring"]["triggers"] == 1 and d["ring"]["triggers_skipped"] == 0, f"ring {r}")'
    "$RANKPROF" report "$tmp/g.rp.snap1" >"$tmp/g.txt" 2>&1 || fail "report: $(cat "$tmp/g.txt")"
    grep -q "^snapshot: trigger handle_request .* ms > 10ms at " "$tmp/g.txt" ||
        fail "report: $(grep -i snapshot "$tmp/g.txt")"

    "$RANKPROF" record --ring 4M --ring-trigger budget -o "$tmp/b.rp" -- \
        "$PROGS/prog_ringreq" 0 1000 700 20 >"$tmp/b.out" 2>&1 ||
        fail "record exited $?: $(cat "$tmp/b.out")"
    check "$tmp/b.rp.snap1" '
s = d["ring"]["snapshot"] or ""
want(re.fullmatch(r"trigger request \d+\.\d{3} ms over its budget 10\.000 ms at \d+\.\d{3} s", s), f"snapshot {s!r}")
want(mx.get("request", 0) >= 20e6 and seq[:701] == list(range(701)), f"max {mx}")
'
    # (--ring-every 0: a run preempted for half a period on a loaded
    # machine may fire too, with a snapshot of its own)
    "$RANKPROF" record --ring 1M --ring-trigger rate:control --ring-every 0 -o "$tmp/p.rp" -- \
        "$PROGS/prog_periodic" >"$tmp/p.out" 2>&1 || fail "record exited $?: $(cat "$tmp/p.out")"
    local f found=
    for f in "$tmp"/p.rp.snap[0-9] "$tmp"/p.rp.snap[0-9][0-9]; do
        [[ -f $f ]] || continue
        (check "$f" '
s = r["snapshot"] or ""
m = re.fullmatch(r"trigger rate control (\d+\.\d{3}) ms, (\d+)% of its period (\d+\.\d{3}) ms at \d+\.\d{3} s", s)
want(m and float(m.group(1)) >= 40 and int(m.group(2)) >= 50, f"snapshot {s!r}")
want(c.get("control", 0) >= 7 and mx.get("control", 0) >= 40e6, f"calls {c}, max {mx}")
') 2>>"$tmp/p.err" && found=$f
    done
    [[ -n $found ]] || fail "rate: no snapshot of the slow run: $(ls "$tmp" | grep p.rp): $(cat "$tmp/p.err")"
    "$RANKPROF" record --ring 4M --ring-trigger 'compute>0ns' --ring-every 3600 -o "$tmp/e.rp" -- \
        "$PROGS/prog_ringreq" 0 1000 999999 0 >"$tmp/e.out" 2>&1 ||
        fail "record exited $?: $(cat "$tmp/e.out")"
    [[ -f $tmp/e.rp.snap1 && ! -e $tmp/e.rp.snap2 ]] || fail "snapshots: $(ls "$tmp")"
    check "$tmp/e.rp" '
r = d["ring"]
want(r["triggers"] > 100 and r["triggers_skipped"] == r["triggers"] - 1, f"ring {r}")
'
}

server() {
    start_server srv --ring 4M
    req 200
    "$RANKPROF" ctl "$pid" snapshot >"$tmp/srv.ctl" 2>&1 || fail "ctl snapshot: $(cat "$tmp/srv.ctl")"
    req 100 quit
    wait "$rec" || fail "record exited $?: $(cat "$tmp/srv.out")"
    check "$tmp/srv.rp.snap1" '
want(all(c.get(f) == 200 for f in ("handle_request", "parse_request", "compute")), f"calls {c}")
t, u = len(d["thread_list"]), d["unmatched_exits"]
want(u == 0 and t >= 3, f"{u} unmatched exits, {t} threads")
'
    check "$tmp/srv.rp" 'want(all(c.get(f) == 300 for f in ("handle_request", "parse_request", "compute")), f"calls {c}")'
}

ending() {
    start s
    kill -TERM "$pid"
    exec 3>&-
    wait "$rec" && fail "record exited 0 after SIGTERM"
    check "$tmp/s.rp" '
want(seq == list(range(500)) and c.get("handle_request") == 500, f"{len(seq)} seq marks, calls {c}")
want(d["ring"]["snapshot"] == "signal 15", f"ring {r}")
'
}

refused() {
    local out=$tmp/refused.out
    for args in "--ring 1K" "--ring 1M --mode direct" "--ring 1M --max-size 1M" \
        "--ring 1M --ring-trigger handle_request" "--ring 1M --ring-trigger f>5parsecs" \
        "--ring-trigger f>5ms" "--ring 1M --ring-trigger rate:" "--ring-every 3" "--ring 1M --ring-keep -1" "--ring-keep 2"; do
        # shellcheck disable=SC2086
        local st=0
        "$RANKPROF" record $args -o "$tmp/x.rp" -- "$PROGS/prog_ringreq" 0 1 9 0 >"$out" 2>&1 || st=$?
        [[ $st == 2 ]] || fail "record $args: not refused: $(cat "$out")"
        grep -q -- "--ring" "$out" || fail "record $args: $(cat "$out")"
    done
    # a trace without a ring: no snapshot, said why
    mkfifo "$tmp/n.in"
    $TMO "$RANKPROF" record -o "$tmp/n.rp" -- "$PROGS/prog_ringreq" 0 5 9 0 hold \
        <"$tmp/n.in" >"$tmp/n.out" 2>&1 &
    rec=$!
    exec 3>"$tmp/n.in"
    wait_ready n 5
    pid=$(sed -n 's/^pid //p' "$tmp/n.out")
    "$RANKPROF" ctl "$pid" snapshot >"$out" 2>&1 && fail "ctl snapshot without a ring succeeded"
    grep -q "needs a flight recorder (rankprof record --ring SIZE)" "$out" || fail "ctl: $(cat "$out")"
    exec 3>&-
    wait "$rec" || fail "record exited $?"
}

scenario tail tail_
scenario ctl ctl_
scenario trigger trigger
scenario server server
scenario ending ending
scenario refused refused
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_waits.sh - end-to-end test of wait spans (docs/waits.md): records
# tests/progs/waits (main joins 6 threads; a thread in a pthread_cond_wait
# loop, one in a nanosleep loop, one in poll/select/read on a pipe, a
# producer that computes in crunch(), and two cancelled in a nanosleep and
# a pthread_cond_wait; exact counts at the top of waits.c)
# with the preloaded recorder, then checks `report --format json` and
# `locks --format json`:
#   - exact calls of every wait node and of the edges to them: pthread_join
#     6 (from main), nanosleep N + 1, poll N, select N, read N + 1 (the
#     pipe's and one of a pipe put back in blocking mode by fcntl; main's
#     read of a regular file, the reader's polls and selects with a zero
#     timeout, its reads of a non-blocking pipe and its recvs with
#     MSG_DONTWAIT are not waits), the condition ready_cv as
#     many waits as the program counted, never_cv 1; the cancelled waits
#     ended at the cancellation;
#   - main, waiter, sleeper and reader: own time <= 10 % of their total, not
#     HOT; crunch is HOT; no wait node is ever HOT, JITTER or RATE;
#   - wait_ns of a node = the summed inclusive time of its edges to waits;
#   - `rankprof locks` lists ready_cv under "conds" (waits, the waiter as its
#     call site) and not among the locks;
#   - the classes: without "wait" no blocking call is a node but the
#     condition wait (lock class); without "lock" the condition wait is a
#     plain "pthread_cond_wait [wait]";
#   - direct mode gives the same wait nodes and counts;
#   - exports: a folded stack ends in the wait, callgrind's own costs add
#     up to its summary, and every pprof sample's location is defined.
# Under TSan the condition checks are skipped: TSan intercepts
# pthread_cond_wait by symbol version and calls libc's without passing
# through the recorder (docs/locks.md, limits), so the waiter's wait is
# its own time there; and no thread is cancelled: a thread cancelled inside
# one of TSan's blocking-call interceptors ends in a state where TSan does
# not model the recorder's locks, and reports races that are not.
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_waits RANKPROF PROGS RP_LIB

need_tools python3
export RANKPROF_LIB="$RP_LIB"

cd "$tmp"

# 100 items: 300 ms of crunch (3 ms of CPU each), long enough that main's
# own time (creating the threads, a few ms when the machine is busy; in
# direct mode, which cannot tell a preemption from work, also the time it
# was preempted outside its waits: 7.5 to 16 ms seen on a loaded machine)
# stays well under its 10 % and HOT's 5 %; 100 under sanitizers too, whose
# pthread_create is slower still, 500 under ThreadSanitizer (its
# pthread_create and join take 6 to 10 ms of CPU each: 27 to 39 ms of
# main's own time for 4 threads, 2 to 3 % of 1.5 s of crunch)
N=100
under_tsan && N=500
tsan=0 cancel=cancel
under_tsan && tsan=1 cancel=nocancel &&
    note "TSan: the condition and cancellation checks are skipped"
# record DATA MODE [CLASSES]: records prog_waits, checks what it printed
# and writes DATA.json (report) and DATA.locks.json; prints the wake-ups.
record() {
    local data=$1 mode=$2 classes=${3:-all} out
    out=$("$RANKPROF" record -o "$data" --mode "$mode" --classes "$classes" -- \
        "$PROGS/prog_waits" $N $cancel 2>"$data.err") || fail "recording ($mode, $classes): $(cat "$data.err")"
    [[ "$out" =~ ^items=$N\ wakeups=([0-9]+)\ bytes=$N$ ]] || fail "prog_waits printed '$out'"
    "$RANKPROF" report -i "$data" --format json >"$data.json" || fail "report --format json ($data)"
    "$RANKPROF" locks -i "$data" --format json >"$data.locks.json" || fail "locks --format json ($data)"
    echo "${BASH_REMATCH[1]}"
}

w=$(record t.data trace)
wd=$(record d.data direct)
wn=$(record nowait.data trace -wait)
wl=$(record nolock.data trace func,wait)

# the tables
tables() {
    "$RANKPROF" locks -i t.data >locks.txt || fail "locks (table)"
    ((tsan)) || grep -q "cond ready_cv" locks.txt ||
        fail "the locks table does not show the condition ready_cv"
    "$RANKPROF" report -i t.data >report.txt || fail "report (table)"
    grep -q "nanosleep \[wait\]" report.txt || fail "the table has no 'nanosleep [wait]' row"
    # the naps or the joins are among the first three rows by time (not
    # always under ThreadSanitizer, whose cost per event makes crunch's
    # part larger); the table says so and names --weight cpu, which ranks the
    # work first: producer and its crunch (the line is also given for a
    # row whose time is mostly blocked below it, which the table does not
    # show: its absence is test_report's)
    if awk '$1 ~ /^[0-9]+$/ && $2 ~ /%$/ && ++n <= 3 && /\[(wait|off-cpu)\]/ { found = 1 }
            END { exit !found }' report.txt; then
        grep -q -- "--weight cpu" report.txt || fail "the table does not point at --weight cpu"
    else
        under_tsan || fail "no wait among the first three rows by time: test premise"
    fi
    "$RANKPROF" report -i t.data --weight cpu >cpu.txt || fail "report --weight cpu (table)"
    grep -q "^rank: cpu weights" cpu.txt || fail "report --weight cpu does not say its weights"
    ! grep -q -- "--weight cpu" cpu.txt || fail "report --weight cpu points at itself"
    grep -Eq '^ +1 .*(producer|crunch) \(' cpu.txt ||
        fail "by time on CPU the first row is not the work: $(grep -m1 '^ *1 ' cpu.txt)"
}
scenario tables tables

# exports: waits are frames; every cost is in some function's own cost
exports() {
    for f in callgrind pprof folded; do
        "$RANKPROF" export -i t.data --format $f -o t.$f || fail "export $f"
    done
    grep -q "^sleeper;nanosleep \[wait\] [0-9]" t.folded || fail "folded: no sleeper;nanosleep [wait] stack"
    python3 - <<'PYEOF' || exit 1
import gzip, sys
def die(msg):
    print("e2e_waits: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)
# callgrind: the functions' own costs add up to the summary (a wait left out
# as a function would leave its time only in its callers' call costs)
tot, own, call = None, 0, False
for ln in open("t.callgrind"):
    ln = ln.strip()
    if ln.startswith("summary:"):
        tot = int(ln.split()[1])
    elif ln.startswith("calls="):
        call = True
    elif ln[:1].isdigit():
        if not call:
            own += int(ln.split()[1])
        call = False
if tot is None or abs(own - tot) > 1000:
    die("callgrind: own costs sum to %d, the summary is %s" % (own, tot))
# pprof: every location a sample names is defined, and so is its function
b = gzip.open("t.pprof").read()
from protobuf import varint
def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, t = k >> 3, k & 7
        if t == 0:
            v, i = varint(b, i)
        elif t == 2:
            n, i = varint(b, i); v = b[i:i + n]; i += n
        elif t == 1:
            v = b[i:i + 8]; i += 8
        else:
            v = b[i:i + 4]; i += 4
        yield f, t, v
locs, funcs, loc_fn, used = set(), set(), {}, set()
for f, t, v in fields(b):
    if f == 4:  # Location: id, line { function_id }
        lid = None
        for g, _, w in fields(v):
            if g == 1:
                lid = w
            elif g == 4:
                loc_fn[lid] = [z for h, _, z in fields(w) if h == 1]
        locs.add(lid)
    elif f == 5:  # Function: id
        funcs |= {w for g, _, w in fields(v) if g == 1}
    elif f == 2:  # Sample: location_id (packed or not)
        for g, t2, w in fields(v):
            if g == 1 and t2 == 2:
                i = 0
                while i < len(w):
                    x, i = varint(w, i)
                    used.add(x)
            elif g == 1:
                used.add(w)
if used - locs or any(fn not in funcs for l in loc_fn.values() for fn in l):
    die("pprof: samples name undefined locations %s or functions" % sorted(used - locs))
PYEOF
}
scenario exports exports

# the report and the locks of the four runs
runs() {
    python3 - "$N" "$tsan" "$w" "$wd" "$wn" "$wl" <<'PYEOF' || exit 1
import json, os, sys

N, tsan, san = int(sys.argv[1]), sys.argv[2] == "1", bool(os.environ.get("RP_SANITIZE"))
wake = dict(zip(["t", "d", "nowait", "nolock"], map(int, sys.argv[3:])))
def die(msg):
    print("e2e_waits: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

def load(name):
    r = json.load(open(name + ".data.json"))
    nodes = {n["name"]: n for n in r["nodes"]}
    if len(nodes) != len(r["nodes"]):
        die("%s: two nodes have the same name" % name)
    return r, nodes

def edge(r, caller, callee):
    es = [e for e in r["edges"] if e["caller"] == caller and e["callee"] == callee]
    return es[0] if es else None

def names_of(nodes):
    return sorted(nodes)

def check_waits(name, cond):
    r, nodes = load(name)
    expect = {("main", "pthread_join [wait]"): 4 if tsan else 6,
              ("sleeper", "nanosleep [wait]"): N,
              ("reader", "poll [wait]"): N,
              ("reader", "select [wait]"): N,
              ("reader", "read [wait]"): N + 1}
    if not tsan:
        expect[("waiter", cond)] = wake[name]
        expect[("dozer", "nanosleep [wait]")] = 1
        expect[("stuck", "cond never_cv [wait]")] = 1
    for (caller, w), calls in expect.items():
        n = nodes.get(w)
        if n is None:
            die("%s: no node %r (nodes: %s)" % (name, w, names_of(nodes)))
        if n["kind"] != "wait":
            die("%s: %s has kind %r, not 'wait'" % (name, w, n["kind"]))
        want = sum(c for (_, x), c in expect.items() if x == w)
        if n["calls"] != want:
            die("%s: %s has %d calls, expected %d" % (name, w, n["calls"], want))
        if caller in ("dozer", "stuck"):
            continue  # cancelled: their own frames never end (named or not)
        e = edge(r, caller, w)
        if e is None or e["calls"] != calls:
            die("%s: the edge %s -> %s has %s calls, expected %d"
                % (name, caller, w, e and e["calls"], calls))
    waits = [n for n in r["nodes"] if n["kind"] == "wait"]
    if sorted(n["name"] for n in waits) != sorted({w for _, w in expect}):
        die("%s: wait nodes %s, expected exactly %s"
            % (name, sorted(n["name"] for n in waits), sorted({w for _, w in expect})))
    # the cancelled waits ended at the cancellation, well before their 10 s
    for w in ["nanosleep [wait]", "cond never_cv [wait]"]:
        if w in nodes and nodes[w]["max_ns"] > 5e9:
            die("%s: %s lasted %d ns: the cancelled wait did not end" % (name, w, nodes[w]["max_ns"]))
    for n in waits:
        bad = set(n["flags"]) & {"HOT", "JITTER", "RATE"}
        if bad:
            die("%s: the wait node %s is flagged %s" % (name, n["name"], sorted(bad)))
    for f in ["main", "sleeper", "reader"] + ([] if tsan else ["waiter"]):
        n = nodes[f]
        # direct mode does not subtract the recorder's cost (docs/direct-mode.md):
        # its own times hold it, a lot of it under sanitizers
        if (name == "t" or not san) and n["exclusive_ns"] > 0.10 * n["inclusive_ns"]:
            die("%s: %s's own time %d ns is over 10%% of its total %d ns"
                % (name, f, n["exclusive_ns"], n["inclusive_ns"]))
        if "HOT" in n["flags"]:
            die("%s: %s is HOT, it only waits" % (name, f))
    if "HOT" not in nodes["crunch"]["flags"]:
        die("%s: crunch, the computing leaf, is not HOT (flags %s)"
            % (name, nodes["crunch"]["flags"]))
    # wait_ns: the inclusive time of the node's edges to waits
    kind = {n["name"]: n["kind"] for n in r["nodes"]}
    for n in r["nodes"]:
        want = sum(e["inclusive_ns"] for e in r["edges"]
                   if e["caller"] == n["name"] and kind.get(e["callee"]) == "wait"
                   and e["callee"] != n["name"])
        if "wait_ns" not in n or abs(n["wait_ns"] - want) > 2:
            die("%s: %s has wait_ns %s, its edges to waits sum to %d"
                % (name, n["name"], n.get("wait_ns"), want))
    if nodes["main"]["wait_ns"] < 0.9 * nodes["main"]["inclusive_ns"]:
        die("%s: main's wait_ns %d is not most of its total %d"
            % (name, nodes["main"]["wait_ns"], nodes["main"]["inclusive_ns"]))
    return r, nodes

for name in ["t", "d"]:
    check_waits(name, "cond ready_cv [wait]")

if tsan:
    print("e2e_waits: report checked (TSan: without the condition)")
    sys.exit(0)
# the condition in `rankprof locks`: a cond, not a lock
L = json.load(open("t.data.locks.json"))
if sorted(c["name"] for c in L.get("conds", [])) != ["cond never_cv", "cond ready_cv"]:
    die("locks: conds are %s, expected never_cv and ready_cv" % L.get("conds"))
c = [c for c in L["conds"] if c["name"] == "cond ready_cv"][0]
if c["waits"] != wake["t"] or [s["caller"] for s in c["sites"]] != ["waiter"]:
    die("locks: cond ready_cv has %d waits from %s, expected %d from waiter"
        % (c["waits"], [s["caller"] for s in c["sites"]], wake["t"]))
r, nodes = load("t")
if abs(c["wait_ns"] - nodes["cond ready_cv [wait]"]["inclusive_ns"]) > 2:
    die("locks: cond ready_cv waited %d ns, the report's node %d ns"
        % (c["wait_ns"], nodes["cond ready_cv [wait]"]["inclusive_ns"]))
if sorted(l["name"] for l in L["locks"]) != ["ready_lock", "stuck_lock"]:
    die("locks: locks are %s, expected ready_lock and stuck_lock" % [l["name"] for l in L["locks"]])

# classes: without wait, only the condition's wait (lock class) remains
r, nodes = load("nowait")
waits = sorted(n["name"] for n in r["nodes"] if n["kind"] == "wait")
if waits != ["cond never_cv [wait]", "cond ready_cv [wait]"]:
    die("without the wait class the wait nodes are %s" % waits)
# without lock, the condition wait is a plain wait of the wait class
r, nodes = load("nolock")
n = nodes.get("pthread_cond_wait [wait]")
if not n or n["calls"] != wake["nolock"] + 1:
    die("without the lock class pthread_cond_wait [wait] is %s, expected %d calls"
        % (n, wake["nolock"] + 1))
if any(x["kind"] in ("lock-wait", "lock-hold") or x["name"].startswith("cond ")
       for x in r["nodes"]):
    die("without the lock class there are lock or condition nodes")
print("e2e_waits: report and locks checked")
PYEOF
}
scenario runs runs
finish

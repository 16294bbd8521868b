#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_unwind.sh - no frame vanishes (docs/robustness.md): functions left by
# longjmp, siglongjmp (out of a signal handler), C++ exceptions (g++ and
# clang++), pthread_exit from deep frames, exit() from deep frames and a
# crash keep every call (and a swapcontext coroutine loses nothing), with their time, counted as cut; calls made after
# the landing are the landing function's (edges from the right caller).
#
# tests/progs/unwind.c and tests/progs/cxx/exc.cpp document the exact
# counts checked here.  Run by ctest with RANKPROF, PROGS and RP_LIB set.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_unwind RANKPROF PROGS RP_LIB
need_tools python3
export RANKPROF_LIB="$RP_LIB"
san=${RP_SANITIZE:-}
N=200

# run NAME PROGRAM ARGS...: records, then writes NAME.json
run() {
    local name=$1 rc=0
    shift
    "$RANKPROF" record -o "$tmp/$name.data" -- "$@" >"$tmp/$name.out" 2>"$tmp/$name.err" || rc=$?
    echo "$rc" >"$tmp/$name.rc"
    "$RANKPROF" report -i "$tmp/$name.data" --format json >"$tmp/$name.json" 2>"$tmp/$name.rerr" ||
        fail "$name: report failed: $(cat "$tmp/$name.rerr")"
}

# check NAME KIND [CXX]: the JSON of NAME against the expectations of KIND
check() {
    python3 - "$tmp/$1.json" "$2" "$N" "${3:-}" <<'PY' || fail "$1: wrong report"
import json, sys
path, kind, n, cxx = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
r = json.load(open(path))
node = {x["name"]: x for x in r["nodes"]}
# (edges to [off-cpu], time a thread was preempted, are not calls)
edge = {(e["caller"], e["callee"]): e["calls"] for e in r["edges"] if e["callee"] != "[off-cpu]"}
bad = []

def want_calls(name, calls, cut=None):
    x = node.get(name)
    if x is None:
        bad.append(f"{name}: missing")
        return
    if x["calls"] != calls:
        bad.append(f"{name}: {x['calls']} calls, expected {calls}")
    if cut is not None and x["cut"] != cut:
        bad.append(f"{name}: cut {x['cut']}, expected {cut}")

def want_edge(a, b, calls):
    if edge.get((a, b), 0) != calls:
        bad.append(f"edge {a} -> {b}: {edge.get((a, b), 0)} calls, expected {calls}")

if kind in ("longjmp", "siglongjmp", "exc"):
    cut = n if kind != "exc" or cxx == "clangxx" else 0
    want_calls("main", 1, 0)
    want_calls("landing", n, 0)
    for d in ("deep1", "deep2", "deep3"):
        want_calls(d, n, cut)
    want_calls("after", n, 0)
    want_calls("leaf", 3 * n + (n if kind == "siglongjmp" else 0), 0)
    want_edge("main", "landing", n)
    want_edge("landing", "deep1", n)
    want_edge("landing", "after", n)  # the landing's own call, not deep3's
    want_edge("deep1", "deep2", n)
    want_edge("deep2", "deep3", n)
    if kind == "siglongjmp":
        want_calls("on_usr1", n, n)
        want_edge("deep3", "on_usr1", n)
    if len(edge) != 9 + 2 * (kind == "siglongjmp"):
        bad.append(f"{len(r['edges'])} edges: {sorted(edge)}")
    if r["unwound"] != 3 * cut + (n if kind == "siglongjmp" else 0) or r["cut"] != 0:
        bad.append(f"unwound {r['unwound']}, cut {r['cut']}")
    if node.get("main", {}).get("involvement", 0) < 0.9:
        bad.append(f"main: involvement {node.get('main', {}).get('involvement')}")
elif kind == "threadexit":
    want_calls("main", 1, 0)
    for f in ("tstart", "deep1", "deep2", "deep3"):
        want_calls(f, n, n)
    want_calls("after", 1, 0)
    want_edge("main", "after", 1)
    want_edge("<root>", "tstart", n)
    if r["cut"] != 4 * n or r["unwound"] != 0:
        bad.append(f"cut {r['cut']}, unwound {r['unwound']}, expected {4 * n}, 0")
    if sum(t["cut"] for t in r["thread_list"]) != 4 * n:
        bad.append("the threads' cut counts do not add up")
    # each thread's frames end where the thread ended (its UNWIND 0), not
    # at the end of the run: the threads ran one at a time inside main
    if node["tstart"]["inclusive_ns"] > node["main"]["inclusive_ns"]:
        bad.append(f"tstart: {node['tstart']['inclusive_ns']} ns in all, more than main's "
                   f"{node['main']['inclusive_ns']}: its frames ended too late")
elif kind == "context":
    want_calls("main", 1, 0)
    want_calls("co_step", n, 0)
    want_calls("leaf", n, 0)
    want_calls("co_body", 1, 1)
elif kind in ("exit", "segv"):
    for f in ("main", "deep1", "deep2", "deep3"):
        want_calls(f, 1, 1)
    want_calls("leaf", n + 3, 0)
    if r["cut"] != 4 or r["unwound"] != 0:
        bad.append(f"cut {r['cut']}, unwound {r['unwound']}, expected 4, 0")
    if node.get("main", {}).get("involvement", 0) < 0.9:
        bad.append(f"main: involvement {node.get('main', {}).get('involvement')}, expected >= 0.9")
    # (main may be up to the resolution shorter than its callees when the
    # recorder's cost came out high for the run: docs/performance.md)
    if node["deep3"]["inclusive_ns"] > node["main"]["inclusive_ns"] + r.get("resolution_ns", 0) + 1:
        bad.append("deep3 lasted longer than main")
if r["unmatched_exits"] != 0 or r["unclosed"] != 0 or r["lost_events"] != 0:
    bad.append(f"unmatched {r['unmatched_exits']}, unclosed {r['unclosed']}, lost {r['lost_events']}")
for b in bad:
    print(f"e2e_unwind: {path.split('/')[-1]}: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    echo "e2e_unwind: $1: ok"
}

need_progs unwind unwind_fortify
# run_check NAME KIND PROGRAM ARGS...: run, then check as KIND
run_check() {
    local name=$1 kind=$2
    shift 2
    run "$name" "$@"
    check "$name" "$kind"
}
for prog in unwind unwind_fortify; do
    for mode in longjmp siglongjmp; do
        scenario "$prog.$mode" run_check "$prog.$mode" $mode "$PROGS/prog_$prog" $mode $N
    done
done
if [[ $(nm -D "$PROGS/prog_unwind_fortify" 2>/dev/null | grep -c __longjmp_chk) -eq 0 ]]; then
    echo "e2e_unwind: note: prog_unwind_fortify does not call __longjmp_chk here"
fi

scenario threadexit run_check threadexit threadexit "$PROGS/prog_unwind" threadexit $N
exit_frames() {
    run_check exit exit "$PROGS/prog_unwind" exit $N
    [[ $(cat "$tmp/exit.rc") -eq 0 ]] || fail "exit: record exited $(cat "$tmp/exit.rc")"
}
scenario exit exit_frames

# a crash from deep frames: every frame open at the crash is cut (under a
# sanitizer its own SIGSEGV report comes first: only the counts are checked)
segv() {
    run segv "$PROGS/prog_unwind" segv $N
    check segv segv
    if [[ -z "$san" ]]; then
        [[ $(cat "$tmp/segv.rc") -eq 139 ]] || fail "segv: record exited $(cat "$tmp/segv.rc")"
        grep -q "killed by signal 11" "$tmp/segv.rerr" || fail "segv: the report does not say so"
    fi
    "$RANKPROF" report -i "$tmp/segv.data" >"$tmp/segv.txt" 2>/dev/null
    grep -q "1 of 1 calls cut" "$tmp/segv.txt" || fail "segv: the table does not list the cut frames"
    "$RANKPROF" info -i "$tmp/segv.data" | grep -q "^cut: *0 frames unwound .*, 4 open" ||
        fail "segv: info does not count the cut frames"
}
scenario segv segv

# the same in direct mode: the fatal signal's handler writes the
# statistics, its four open frames cut, and where the signal hit the
# thread (STATS FATAL), as trace mode's report says it
direct_segv() {
    local rc=0
    "$RANKPROF" record --mode direct -o "$tmp/dsegv.data" -- "$PROGS/prog_unwind" segv $N \
        >/dev/null 2>"$tmp/dsegv.err" || rc=$?
    [[ -n "$san" || $rc -eq 139 ]] || fail "direct segv: record exited $rc"
    "$RANKPROF" report -i "$tmp/dsegv.data" --format json >"$tmp/dsegv.json" 2>/dev/null ||
        fail "direct segv: report failed"
    python3 - "$tmp/dsegv.json" "$N" <<'PY' || fail "direct segv: wrong report"
import json, sys
r, n = json.load(open(sys.argv[1])), int(sys.argv[2])
frames = ["main", "deep1", "deep2", "deep3"]
bad = []
if r.get("fatal_stack") != frames or r.get("fatal_depth") != 4:
    bad.append(f"fatal_stack {r.get('fatal_stack')} of depth {r.get('fatal_depth')}: "
               f"expected {frames} of 4")
cut = {x["name"]: x["cut"] for x in r["nodes"] if x["cut"]}
if cut != {f: 1 for f in frames} or r["cut"] != 4:
    bad.append(f"cut {cut}, in all {r['cut']}: expected 1 for each of {frames}, 4")
leaf = sum(x["calls"] for x in r["nodes"] if x["name"] == "leaf")
if leaf != n + 3:
    bad.append(f"leaf {leaf} calls, expected {n + 3}")
for b in bad:
    print(f"e2e_unwind: direct segv: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    "$RANKPROF" report -i "$tmp/dsegv.data" 2>/dev/null |
        grep -q "at the signal, thread .* was in: main -> deep1 -> deep2 -> deep3" ||
        fail "direct segv: the table does not say where the signal hit"
}
scenario direct_segv direct_segv

# direct mode ends the frames open at a thread's end and on the thread that
# calls exit() the same way, and the frames a longjmp or siglongjmp leaves
# where it lands: the calls after the landing are the landing function's
# (src/common/span.h), and each such frame is counted, as in trace mode:
# per node (`cut`) and per run (`cut` at an end, `unwound` at a landing;
# STATS CUT and ENDS records)
direct() { # MODE
    local mode=$1
    "$RANKPROF" record --mode direct -o "$tmp/direct.$mode.data" -- "$PROGS/prog_unwind" $mode $N \
        >/dev/null 2>"$tmp/direct.$mode.err" || fail "direct $mode: $(cat "$tmp/direct.$mode.err")"
    "$RANKPROF" report -i "$tmp/direct.$mode.data" --format json >"$tmp/direct.$mode.json" ||
        fail "direct $mode: report failed"
    python3 - "$tmp/direct.$mode.json" $mode $N <<'PY' || fail "direct $mode: wrong report"
import json, sys
r = json.load(open(sys.argv[1]))
mode, n = sys.argv[2], int(sys.argv[3])
calls = {x["name"]: x["calls"] for x in r["nodes"]}
edge = {(e["caller"], e["callee"]): e["calls"] for e in r["edges"] if e["callee"] != "[off-cpu]"}
sig = mode == "siglongjmp"
want = {"main": 1, "deep1": 1, "deep2": 1, "deep3": 1, "leaf": n + 3} if mode == "exit" else \
       {"main": 1, "tstart": n, "deep1": n, "deep2": n, "deep3": n, "leaf": 3 * n, "after": 1} \
       if mode == "threadexit" else \
       {"main": 1, "landing": n, "deep1": n, "deep2": n, "deep3": n, "after": n,
        "leaf": 3 * n + n * sig}
bad = [f"{k}: {calls.get(k, 0)} calls, expected {v}" for k, v in want.items() if calls.get(k, 0) != v]
if mode in ("longjmp", "siglongjmp"):
    wedge = {("main", "landing"): n, ("landing", "deep1"): n, ("landing", "after"): n,
             ("deep1", "deep2"): n, ("deep2", "deep3"): n}
    if sig:
        wedge[("deep3", "on_usr1")] = n
    bad += [f"edge {k}: {edge.get(k, 0)} calls, expected {v}" for k, v in wedge.items()
            if edge.get(k, 0) != v]
    bad += [f"edge {k}: {v} calls, expected none (a stale frame as the caller)"
            for k, v in edge.items() if k[1] == "after" and k[0] != "landing"]
if r["unclosed"] or r["unmatched_exits"]:
    bad.append(f"unclosed {r['unclosed']}, unmatched {r['unmatched_exits']}")
# the frames left without their exit: main and deep1..3 at exit(); a
# thread's four at its pthread_exit; deep1..3 (and the handler on_usr1)
# at each landing
k = 1 if mode == "exit" else n
frames = ["main", "deep1", "deep2", "deep3"] if mode == "exit" else \
         ["tstart", "deep1", "deep2", "deep3"] if mode == "threadexit" else \
         ["deep1", "deep2", "deep3"] + ["on_usr1"] * sig
cut = {x["name"]: x["cut"] for x in r["nodes"] if x["cut"]}
if cut != {f: k for f in frames}:
    bad.append(f"cut per node {cut}, expected {k} for each of {frames}")
ends = (len(frames) * k, 0) if mode in ("exit", "threadexit") else (0, len(frames) * k)
if (r["cut"], r["unwound"]) != ends:
    bad.append(f"cut, unwound {r['cut']}, {r['unwound']}: expected {ends}")
for b in bad:
    print(f"e2e_unwind: direct {mode}: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    echo "e2e_unwind: direct $mode: ok"
}
for mode in exit threadexit longjmp siglongjmp; do
    scenario "direct_$mode" direct $mode
done

# coroutines: switches are not followed, but nothing is lost or corrupt
scenario context run_check context context "$PROGS/prog_unwind" context $N

run_exc() { # CXX
    run "exc_$1" "$PROGS/prog_exc_$1" $N
    check "exc_$1" exc "$1"
}
# landings RUNS times, each recording PROG ARGS (record's options: $RECOPT)
# and checking that after() is called only from landing, TOTAL times: no
# stale frame left open as its caller
landings() { # WHAT RUNS TOTAL PROG ARGS...
    local what=$1 runs=$2 total=$3 k
    shift 3
    for k in $(seq "$runs"); do
        # shellcheck disable=SC2086 # (options, split)
        "$RANKPROF" record ${RECOPT:-} -o "$tmp/land.data" -- "$@" >/dev/null 2>"$tmp/land.err" ||
            fail "$what: $(cat "$tmp/land.err")"
        "$RANKPROF" report -i "$tmp/land.data" --format json >"$tmp/land.json" ||
            fail "$what: report failed"
        python3 - "$tmp/land.json" "$total" "$what, run $k" <<'PY' || fail "$what: wrong report"
import json, sys
r, n, what = json.load(open(sys.argv[1])), int(sys.argv[2]), sys.argv[3]
edge = {(e["caller"], e["callee"]): e["calls"] for e in r["edges"] if e["callee"] != "[off-cpu]"}
bad = [f"edge {c} -> after: {v} calls (a stale frame as the caller)"
       for (c, d), v in edge.items() if d == "after" and c != "landing"]
if edge.get(("landing", "after"), 0) != n:
    bad.append(f"landing -> after: {edge.get(('landing', 'after'), 0)} calls, expected {n}")
for b in bad:
    print(f"e2e_unwind: {what}: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    done
    echo "e2e_unwind: $what: every landing, $runs runs: ok"
}

# eight threads jumping at once (trace mode, each thread encoding its own
# buffers): every landing found (the lookups waited for each other on the
# symbol tables' lock, and one that gave up, during the tables' load or
# behind the others, left the frames open: after() under a stale deep3 in
# about one run in four)
longjmp_threads() {
    local runs=10
    sanitized && runs=3
    landings "longjmp on 8 threads" $runs 16000 "$PROGS/prog_unwind" longjmp 2000 8
}
scenario longjmp_threads longjmp_threads

# four threads catching at once, in direct mode: every landing is found
# (the symbol table's lock, taken by another thread's lookup a moment, made
# the direct-mode engine give up on the landing: after() shown under a
# stale deep3 in 5 of 5 runs built by clang++)
direct_exc() { # CXX
    RECOPT="--mode direct" landings "direct exc $1, 4 threads" 3 $((100 * N)) \
        "$PROGS/prog_exc_$1" $((25 * N)) 4
}
# a catch in a function inlined into its caller, built by g++ (which ends
# every frame the exception unwinds by its exit hook): the landing record
# is not sent when the records since the throw closed frames, so the
# inlined catcher is not ended early (before: its exit unmatched and
# after() under outer, once per catch)
inlcatch() {
    "$RANKPROF" record -o "$tmp/ic.data" -- "$PROGS/prog_inlcatch_gxx" $((10 * N)) 4 \
        >/dev/null 2>"$tmp/ic.err" || fail "inlcatch: $(cat "$tmp/ic.err")"
    "$RANKPROF" report -i "$tmp/ic.data" --format json >"$tmp/ic.json" || fail "inlcatch: report failed"
    python3 - "$tmp/ic.json" $((40 * N)) <<'PY' || fail "inlcatch: wrong report"
import json, sys
r, n = json.load(open(sys.argv[1])), int(sys.argv[2])
edge = {(e["caller"], e["callee"]): e["calls"] for e in r["edges"] if e["callee"] != "[off-cpu]"}
bad = []
if edge.get(("catcher", "after"), 0) != n or edge.get(("outer", "after"), 0):
    bad.append(f"catcher -> after {edge.get(('catcher', 'after'), 0)}, outer -> after "
               f"{edge.get(('outer', 'after'), 0)}: expected {n} and none")
if r["unmatched_exits"]:
    bad.append(f"{r['unmatched_exits']} unmatched exits, expected none")
for b in bad:
    print(f"e2e_unwind: inlcatch: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    echo "e2e_unwind: inlcatch (g++): every frame ends by its own exit: ok"
}
if [[ -x "$PROGS/prog_inlcatch_gxx" ]]; then
    scenario inlcatch_gxx inlcatch
else
    echo "e2e_unwind: prog_inlcatch_gxx not built (no g++ found): skipped"
fi
for cxx in gxx clangxx; do
    if [[ ! -x "$PROGS/prog_exc_$cxx" ]]; then
        echo "e2e_unwind: prog_exc_$cxx not built (no ${cxx//x/+} found): skipped"
        continue
    fi
    scenario "exc_$cxx" run_exc "$cxx"
    scenario "direct_exc_$cxx" direct_exc "$cxx"
done
finish

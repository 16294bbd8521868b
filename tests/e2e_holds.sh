#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_holds.sh - lock holds are intervals, not call frames (docs/locks.md,
# "Holds are intervals"; format 1.3 HOLD_BEGIN/HOLD_END).
#
# prog_wrapped (exact counts at the top of wrapped.c): a mutex taken in
# lock_jobs() and released in unlock_jobs() by 3 threads, 147 times in all;
# hand-over-hand locking (a, b, release a, c, release b, ...) in walk(); a
# lock taken in take_then_return() and released by its caller.  Checked:
#   - every hold is counted: `locks --format json` has jobs_mutex 147
#     acquisitions, all at lock_jobs (the innermost function at the
#     acquisition), hoh_a 50 (walk 25, take_then_return 25), hoh_b, hoh_c,
#     hoh_d 25 at walk; the report's hold nodes have the same calls and
#     the same hold time as `locks`; edges lock_jobs -> jobs_mutex [hold]
#     147 and none from unlock_jobs to a hold;
#   - no unmatched exit, no unclosed span; every function's calls exact;
#   - the time model: a hold takes no time from its acquirer (exclusive =
#     own time less the time of its calls, hold edges not among them), a
#     hold's own (exclusive) time is 0, and each jobs hold lasts at least
#     the crunch() run inside it;
#   - the ranking gives hold edges no time weight: no walk reaches a hold
#     node, whose standing is then the same for all (0);
#   - `dump` shows acquire/release events; the chrome export has every
#     hold as an async slice of its own;
#   - direct mode (record --mode direct) has the same holds per acquirer,
#     no unmatched exit or unclosed span, and the same time model.
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_holds RANKPROF PROGS RP_LIB
need_tools python3
export RANKPROF_LIB="$RP_LIB"

# The checks of the JSON outputs, one part each (trace, direct, chrome):
# python3 "$tmp/check.py" "$tmp" PART
cat >"$tmp/check.py" <<'PY'
import json, sys
d = sys.argv[1]
def die(msg):
    sys.exit(f"e2e_holds: FAIL: {msg}")
want_locks = {"jobs_mutex": {"lock_jobs": 147}, "hoh_a": {"walk": 25, "take_then_return": 25},
              "hoh_b": {"walk": 25}, "hoh_c": {"walk": 25}, "hoh_d": {"walk": 25}}
want_calls = {"main": 1, "worker": 3, "lock_jobs": 147, "unlock_jobs": 147, "crunch": 222,
              "walk": 25, "walk_tail": 25, "take_then_return": 25}
part = sys.argv[2]
if part == "trace":
    for c in ("", "--no-compensate"):
        L = json.load(open(f"{d}/locks{c}.json"))
        R = json.load(open(f"{d}/report{c}.json"))
        got = {l["name"]: {s["caller"]: s["acquisitions"] for s in l["sites"]} for l in L["locks"]}
        if got != want_locks:
            die(f"locks {c}: acquisitions per site {got}, want {want_locks}")
        for l in L["locks"]:
            if l["acquisitions"] != sum(want_locks[l["name"]].values()) or l["failed"]:
                die(f"locks {c}: {l['name']}: {l}")
        if R["unmatched_exits"] or R["unclosed"]:
            die(f"report {c}: {R['unmatched_exits']} unmatched exits, {R['unclosed']} unclosed")
        N = {n["name"]: n for n in R["nodes"]}
        calls = {k: N[k]["calls"] for k in want_calls if k in N}
        if calls != want_calls:
            die(f"report {c}: calls {calls}, want {want_calls}")
        holds = {n["id"]: n for n in R["nodes"] if n["kind"] == "lock-hold"}
        byid = {n["id"]: n for n in R["nodes"]}
        for l in L["locks"]:
            h = N.get(l["name"] + " [hold]")
            if not h or h["calls"] != l["acquisitions"]:
                die(f"report {c}: {l['name']} [hold] {h}, locks says {l['acquisitions']}")
            if abs(h["inclusive_ns"] - l["hold_ns"]) > h["calls"] + 1:
                die(f"report {c}: {l['name']}: hold {h['inclusive_ns']} ns, locks {l['hold_ns']} ns")
            if h["exclusive_ns"] != 0:
                die(f"report {c}: {l['name']} [hold] has own time {h['exclusive_ns']} ns")
        E = {(e["caller"], e["callee"]): e for e in R["edges"]}
        if E.get(("lock_jobs", "jobs_mutex [hold]"), {}).get("calls") != 147:
            die(f"report {c}: no edge lock_jobs -> jobs_mutex [hold] of 147 calls")
        # (a preemption inside unlock_jobs is an [off-cpu] callee, not a hold)
        bad = [k for k, e in E.items() if e["caller"] == "unlock_jobs" and e["callee"] != "[off-cpu]"]
        if bad:
            die(f"report {c}: unlock_jobs has edges {bad}")
        # exclusive = own time less the calls made; a hold is no call
        for nm, n in N.items():
            if n["kind"] != "func":
                continue
            dur = n["calls"] * n["mean_ns"]
            eout = sum(e["inclusive_ns"] for e in R["edges"]
                       if e["caller_id"] == n["id"] and e["callee_id"] not in holds)
            # (over-compensated - a sanitizer's cost per event moving - each
            # span may be up to the resolution shorter than its callees: an
            # exclusive total below 0 shows 0)
            if n["exclusive_ns"] == 0 and -n["calls"] * R["resolution_ns"] - 2 <= dur - eout < 0:
                continue
            if abs(n["exclusive_ns"] - (dur - eout)) > 2 * n["calls"] + 2 + 1e-3 * dur:
                die(f"report {c}: {nm}: exclusive {n['exclusive_ns']} != {dur:.0f} - {eout}")
        # each jobs hold contains one crunch() run (1 ns of rounding per span;
        # a compensated hold, like any span, may come out up to the resolution
        # shorter than what ran inside it when a sanitizer's cost per event moves)
        inside = E[("worker", "crunch")]["inclusive_ns"]
        if N["jobs_mutex [hold]"]["inclusive_ns"] < inside - 147 * (2 + R["resolution_ns"]):
            die(f"report {c}: jobs holds {N['jobs_mutex [hold]']['inclusive_ns']} ns < the "
                f"crunch runs inside them {inside} ns")
        # the ranking: hold edges weigh no time, so no walk reaches a hold (standing 0)
        st = sorted(h["standing"] for h in holds.values())
        if len(st) != 5 or st[-1] - st[0] > 1e-12 * max(st[-1], 1e-300) or \
           st[-1] >= N["take_then_return"]["standing"]:
            die(f"report {c}: hold standings {st} (take_then_return "
                f"{N['take_then_return']['standing']})")
if part == "direct":
    # direct mode: the same holds, acquirers and time model
    D = json.load(open(f"{d}/direct.json"))
    N = {n["name"]: n for n in D["nodes"]}
    holds = {n["id"] for n in D["nodes"] if n["kind"] == "lock-hold"}
    got = {}
    for e in D["edges"]:
        if e["callee_id"] in holds:
            got.setdefault(e["callee"][:-len(" [hold]")], {})[e["caller"]] = e["calls"]
    if got != want_locks or D["unmatched_exits"] or D["unclosed"]:
        die(f"direct mode: holds per acquirer {got}, unmatched {D['unmatched_exits']}, "
            f"unclosed {D['unclosed']}")
    if any(N[n]["exclusive_ns"] for n in N if n.endswith("[hold]")) or \
       N["lock_jobs"]["exclusive_ns"] > N["lock_jobs"]["inclusive_ns"] or \
       len({round(N[n]["standing"], 15) for n in N if n.endswith("[hold]")}) != 1:
        die(f"direct mode: hold nodes {[N[n] for n in N if n.endswith('[hold]')]}")
if part == "chrome":
    # the chrome export: every hold is one event of its own (on the lock track)
    C = json.load(open(f"{d}/w.chrome.json"))
    ev = C["traceEvents"] if isinstance(C, dict) else C
    n = sum(1 for e in ev if str(e.get("name", "")).endswith("[hold]") and e.get("ph") == "b")
    if n != 272:
        die(f"chrome export: {n} hold events, want 272")
    # intervals (async b/e), not slices of the thread's stack
    x = sum(1 for e in ev if str(e.get("name", "")).endswith("[hold]") and e.get("ph") not in "be")
    if x:
        die(f"chrome export: {x} holds are not async b/e events")
PY

# the trace, and what each reader command makes of it
record() {
    out=$("$RANKPROF" record -o "$tmp/w.data" -- "$PROGS/prog_wrapped" 2>"$tmp/err") ||
        fail "record failed: $(cat "$tmp/err")"
    [[ "$out" == "jobs 147 walks 25 "* ]] || fail "prog_wrapped printed '$out'"
    for c in "" --no-compensate; do
        "$RANKPROF" locks -i "$tmp/w.data" --format json $c >"$tmp/locks$c.json" || fail "locks $c"
        "$RANKPROF" report -i "$tmp/w.data" --format json $c >"$tmp/report$c.json" || fail "report $c"
    done
    "$RANKPROF" dump -i "$tmp/w.data" >"$tmp/dump" || fail "dump"
    "$RANKPROF" export --format chrome -i "$tmp/w.data" -o "$tmp/w.chrome.json" || fail "export chrome"
}

# direct mode (statistics in the process) counts holds the same way
record_direct() {
    out=$("$RANKPROF" record --mode direct -o "$tmp/d.data" -- "$PROGS/prog_wrapped" 2>"$tmp/err") ||
        fail "record --mode direct failed: $(cat "$tmp/err")"
    "$RANKPROF" report -i "$tmp/d.data" --format json >"$tmp/direct.json" || fail "report (direct)"
}

# holds per site, calls, the time model and the ranking, with and without
# compensation
trace_model() {
    python3 "$tmp/check.py" "$tmp" trace || fail "(above)"
}

# direct mode: the same holds, acquirers and time model
direct_model() {
    python3 "$tmp/check.py" "$tmp" direct || fail "(above)"
}

# the chrome export and dump: every hold an event of its own
chrome_and_dump() {
    python3 "$tmp/check.py" "$tmp" chrome || fail "(above)"
    [[ $(grep -c ' acquire ' "$tmp/dump") -eq 272 && $(grep -c ' release ' "$tmp/dump") -eq 272 ]] ||
        fail "dump: $(grep -c ' acquire ' "$tmp/dump") acquire, $(grep -c ' release ' "$tmp/dump") release events, want 272 each"
}

# graph: the hold is listed apart from the callees, whose shares and the
# own work make up the node's time (100 %, within rounding)
graph() {
    "$RANKPROF" graph -i "$tmp/w.data" lock_jobs >"$tmp/graph" || fail "graph lock_jobs"
    python3 - "$tmp/graph" <<'PY' || fail "graph lock_jobs: $(cat "$tmp/graph")"
import re, sys
lines = open(sys.argv[1]).read().splitlines()
i = lines.index("callees (share of lock_jobs's time):")
j = next(k for k in range(i, len(lines)) if lines[k].startswith("locks taken"))
split = sum(float(re.search(r"([0-9.]+)%$", l).group(1)) for l in lines[i + 1:j])
held = [l for l in lines[j + 1:] if l.lstrip().startswith("=> jobs_mutex [hold]")]
if not 99.0 <= split <= 101.0 or len(held) != 1 or " 147 calls" not in held[0]:
    sys.exit(1)
PY
}

scenario record record
scenario record_direct record_direct
scenario trace_model trace_model
scenario direct_model direct_model
scenario chrome_and_dump chrome_and_dump
scenario graph graph
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_outside.sh - waits that no code of the program makes are set apart
# (docs/waits.md, "Outside the program's code").  prog_outside N K
# (tests/progs/outside.c): a constructor sleeps once before main, a thread
# running no instrumented code makes K usleep and K poll calls, main's
# work() makes N usleep calls.  Checks `report --format json`:
#   - default: usleep [wait] has N calls, every one from work, and K
#     outside calls; poll and nanosleep are no rows, with K and 1 outside
#     calls; outside.apart, outside.calls = 2K + 1 and outside.ns is the
#     sum of its nodes'; no edge from the root to a wait;
#   - --outside: usleep N + K calls (K from the root), poll K, nanosleep 1,
#     nothing outside;
#   - the table's header names the outside time and its first nodes;
#   - direct mode (the statistics made in the process) sets the same
#     spans apart, with the same counts.
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_outside RANKPROF PROGS RP_LIB
need_tools python3
export RANKPROF_LIB="$RP_LIB"
N=20 K=30

"$RANKPROF" record -o "$tmp/o.data" -- "$PROGS/prog_outside" $N $K >"$tmp/o.out" 2>"$tmp/o.err" ||
    fail "record: $(cat "$tmp/o.err")"
grep -qx "outside: n=$N k=$K" "$tmp/o.out" || fail "prog_outside printed '$(cat "$tmp/o.out")'"
"$RANKPROF" report -i "$tmp/o.data" --format json >"$tmp/apart.json" || fail "report --format json"
"$RANKPROF" report -i "$tmp/o.data" --format json --outside >"$tmp/kept.json" ||
    fail "report --format json --outside"
"$RANKPROF" report -i "$tmp/o.data" >"$tmp/apart.table" || fail "report"

python3 - "$tmp/apart.json" "$tmp/kept.json" $N $K <<'PY' || fail "wrong accounting"
import json, sys
apart, kept = (json.load(open(f)) for f in sys.argv[1:3])
n, k = int(sys.argv[3]), int(sys.argv[4])
bad = []
def nodes(r):
    return {x["name"]: x for x in r["nodes"]}
def edges_to(r, name):
    return {e["caller"]: e["calls"] for e in r["edges"] if e["callee"] == name}
a, b = nodes(apart), nodes(kept)
u = a.get("usleep [wait]", {})
if u.get("calls") != n or u.get("outside_calls") != k:
    bad.append(f"usleep: {u.get('calls')} calls, {u.get('outside_calls')} outside; want {n}, {k}")
if edges_to(apart, "usleep [wait]") != {"work": n}:
    bad.append(f"usleep's callers {edges_to(apart, 'usleep [wait]')}, want work {n}")
for name in ("poll [wait]", "nanosleep [wait]"):
    if name in a:
        bad.append(f"{name} is a row: {a[name]['calls']} calls")
o = apart["outside"]
on = {x["name"]: x for x in o["nodes"]}
want = {"usleep [wait]": k, "poll [wait]": k, "nanosleep [wait]": 1}
got = {m: on.get(m, {}).get("calls") for m in want}
if got != want:
    bad.append(f"outside nodes {got}, want {want}")
if not o["apart"] or o["calls"] != 2 * k + 1 + sum(x["calls"] for x in o["nodes"]
                                                     if x["name"] not in want):
    bad.append(f"outside: apart {o['apart']}, calls {o['calls']}")
# (each ns is rounded from its ticks: the sum within one per node)
if abs(o["ns"] - sum(x["ns"] for x in o["nodes"])) > len(o["nodes"]) or \
        on["nanosleep [wait]"]["ns"] < 900000:
    bad.append(f"outside ns {o['ns']}, nanosleep {on['nanosleep [wait]']['ns']} (slept 1 ms)")
if any(e["caller"] == "<root>" and e["callee"].endswith("[wait]") for e in apart["edges"]):
    bad.append("an edge from the root to a wait")
# --outside: the former accounting
got = {m: b.get(m, {}).get("calls") for m in want}
if got != {"usleep [wait]": n + k, "poll [wait]": k, "nanosleep [wait]": 1}:
    bad.append(f"--outside: calls {got}")
if kept["outside"]["apart"] or kept["outside"]["calls"]:
    bad.append(f"--outside: outside {kept['outside']}")
for x in bad:
    print("e2e_outside:", x, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
grep -q "^outside: .* in $((2 * K + 1)) waits" "$tmp/apart.table" ||
    fail "the table's header: $(grep -A2 '^outside' "$tmp/apart.table")"
# it names the three nodes with the most time outside (off-CPU aside), as
# the JSON has them (which three depends on the run's timing: under a
# sanitizer the waits of exit can pass usleep's 30 x 100 us)
sed -n '/^outside:/,/^rank:/p' "$tmp/apart.table" >"$tmp/header"
python3 - "$tmp/apart.json" "$tmp/header" <<'PY' || fail "the header: $(cat "$tmp/header")"
import json, sys
r = json.load(open(sys.argv[1]))
head = " ".join(open(sys.argv[2]).read().split())
top = [x for x in r["outside"]["nodes"] if x["kind"] != "offcpu"][:3]  # (largest first)
missing = [x["name"] for x in top if x["name"] not in head]
if not top or missing:
    print(f"e2e_outside: the header does not name {missing or 'any node'}", file=sys.stderr)
    sys.exit(1)
PY
echo "e2e_outside: usleep $N from work + $K outside, poll $K and nanosleep 1 outside: ok"

"$RANKPROF" record --mode direct -o "$tmp/d.data" -- "$PROGS/prog_outside" $N $K >"$tmp/d.out" \
    2>"$tmp/d.err" || fail "record --mode direct: $(cat "$tmp/d.err")"
"$RANKPROF" report -i "$tmp/d.data" --format json >"$tmp/direct.json" || fail "report (direct)"
python3 - "$tmp/direct.json" $N $K <<'PY' || fail "direct mode: wrong accounting"
import json, sys
r = json.load(open(sys.argv[1]))
n, k = int(sys.argv[2]), int(sys.argv[3])
a = {x["name"]: x for x in r["nodes"]}
o = {x["name"]: x["calls"] for x in r["outside"]["nodes"]}
u = a.get("usleep [wait]", {})
bad = []
if (u.get("calls"), u.get("outside_calls")) != (n, k):
    bad.append(f"usleep {u.get('calls')} calls, {u.get('outside_calls')} outside")
if o != {"usleep [wait]": k, "poll [wait]": k, "nanosleep [wait]": 1} or not r["outside"]["apart"]:
    bad.append(f"outside {r['outside']}")
if "poll [wait]" in a or "nanosleep [wait]" in a:
    bad.append("poll or nanosleep is a row")
for x in bad:
    print("e2e_outside: direct:", x, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
echo "e2e_outside: direct mode: the same: ok"
finish

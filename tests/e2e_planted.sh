#!/usr/bin/env bash
# e2e_planted.sh - the flags on a program with planted behaviour
# (tests/progs/planted.c, docs/ranking.md "Flags"), recorded beside a CPU
# hog (one busy loop per processor), so that preemption and late wake-ups
# are part of the run:
#   - every planted flag is found: hot_leaf HOT, dispatch DISPATCH,
#     overrun_task RATE, lookup JITTER, counter_lock's wait and hold nodes
#     CONTENDED;
#   - no other row carries a flag: the traps (a ~2-ns leaf called a million
#     times, a steady periodic task, a thread that sleeps and is joined, 25
#     ops of ~2 % each, the thread functions) are not flagged;
#   - every flagged row has its why line in the table and in the JSON;
#   - the rules' own switches: --threshold jitter-floor-ns, rate-idle and
#     rate-spread set high / low take exactly their flag away.
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.  Exits 1
# with a "FAIL:" line on the first mismatch.
set -euo pipefail

fail() {
    echo "e2e_planted: FAIL: $*" >&2
    exit 1
}

for v in RANKPROF PROGS RP_LIB; do
    [[ -n "${!v:-}" ]] || fail "environment variable $v is not set (run through ctest)"
done
[[ -x "$PROGS/prog_planted" ]] || fail "$PROGS/prog_planted is missing"
command -v python3 >/dev/null || fail "python3 is needed"
export RANKPROF_LIB="$RP_LIB"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/rp_planted.XXXXXX")
hogs=()
cleanup() {
    for h in "${hogs[@]}"; do kill "$h" 2>/dev/null || true; done
    rm -rf "$tmp"
}
trap cleanup EXIT

# the CPU hog: one busy loop per processor
ncpu=$(nproc 2>/dev/null || echo 2)
for ((k = 0; k < ncpu; k++)); do
    (while :; do :; done) &
    hogs+=($!)
done

rc=0
"$RANKPROF" record -o "$tmp/pl.data" -- "$PROGS/prog_planted" >"$tmp/out" 2>"$tmp/err" || rc=$?
for h in "${hogs[@]}"; do kill "$h" 2>/dev/null || true; done
hogs=()
((rc == 0)) || fail "record exited $rc: $(head -c 800 "$tmp/err")"
grep -q "planted: done" "$tmp/out" || fail "prog_planted did not finish: $(cat "$tmp/out")"

"$RANKPROF" report -i "$tmp/pl.data" --format json >"$tmp/r.json" || fail "report --format json failed"
"$RANKPROF" report -i "$tmp/pl.data" --limit 0 >"$tmp/r.txt" || fail "report failed"

cat >"$tmp/check.py" <<'PYEOF'
import json, re, sys

js, table, what = sys.argv[1], sys.argv[2], sys.argv[3]

def die(msg):
    print(f"e2e_planted: FAIL: {what}: {msg}", file=sys.stderr)
    sys.exit(1)

want = {
    "hot_leaf": ["HOT"],
    "dispatch": ["DISPATCH"],
    "overrun_task": ["RATE"],
    "lookup": ["JITTER"],
    "counter_lock [wait]": ["CONTENDED"],
    "counter_lock [hold]": ["CONTENDED"],
}
for k, v in zip(sys.argv[4::2], sys.argv[5::2]):  # NAME FLAGS overrides
    want[k] = [f for f in v.split(",") if f]
    if not want[k]:
        del want[k]

r = json.load(open(js))
nodes = {n["name"]: n for n in r["nodes"]}
for nm in ["tiny", "steady_task", "nap", "sleeper", "main", "critical", "op_0", "op_24"]:
    if nm not in nodes:
        die(f"no node {nm} (nodes: {sorted(nodes)})")
got = {n["name"]: sorted(n["flags"]) for n in r["nodes"] if n["flags"]}
if got != {k: sorted(v) for k, v in want.items()}:
    die(f"flagged rows {got}, expected exactly {want}; why: "
        + "; ".join(f"{n['name']}: {n.get('why')}" for n in r["nodes"] if n["flags"]))
text = open(table).read()
for nm, fl in want.items():
    why = nodes[nm].get("why", "")
    for f in fl:
        if not why.startswith(f) and f"; {f} " not in why:
            die(f"{nm}: the JSON why {why!r} does not explain {f}")
    if not re.search(r"^" + re.escape(nm) + r"\s+" + re.escape(why) + r"$", text, re.M):
        die(f"{nm}: the table has no why line {why!r}")
print(f"e2e_planted: {what}: flags as planted: {got}")
PYEOF

python3 "$tmp/check.py" "$tmp/r.json" "$tmp/r.txt" "defaults"

# each rule's switch takes its flag, and only it, away
t() {
    local key=$1 name=$2
    shift 2
    "$RANKPROF" report -i "$tmp/pl.data" --format json --threshold "$key" >"$tmp/t.json" ||
        fail "report --threshold $key failed"
    "$RANKPROF" report -i "$tmp/pl.data" --limit 0 --threshold "$key" >"$tmp/t.txt" ||
        fail "report --threshold $key failed"
    python3 "$tmp/check.py" "$tmp/t.json" "$tmp/t.txt" "--threshold $key" "$name" "$@"
}
t jitter-floor-ns=1000000 lookup ""
t rate-idle=1 overrun_task ""
t rate-spread=0 overrun_task ""
t hot-self=0.9 hot_leaf ""
t dispatch-fanout=30 dispatch ""
echo "e2e_planted: ok"

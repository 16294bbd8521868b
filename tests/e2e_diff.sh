#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_diff.sh - `rankprof diff BASE NEW` (docs/diff.md) on prog_regress
# (tests/progs/regress.c): run_round() calls parse, lookup twice, render
# and target, each with a fixed amount of work of its own; FACTOR 4 makes
# target's four times longer and changes nothing else.
#
#   planted    base FACTOR 1 against new FACTOR 4: target is the first row,
#              slower, a regression, its ratio per call about 4; no other
#              row regressed; exit status 3; with --relative the same; the
#              other way round target is faster and the exit status 0; the
#              calls and own times are exactly `report --format json`'s of
#              each trace
#   noise      two runs of FACTOR 1: no regression, exit status 0 (judged
#              --relative: the drift a loaded machine puts on every
#              procedure alike is taken out; up to 3 pairs of recordings,
#              one must pass)
#   itself     a trace against itself: every row the same, z 0, drift 1
#   table      the table names the regression and the rule it was judged by
#   bad        one trace, a missing file, a bad option: usage or error exit
#              naming it
# base and slow are recorded again (up to 4 pairs) when no base and slow
# recorded so far run the procedures FACTOR does not touch within 10 % of
# each other per call; the fairest pair is the one judged.
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_diff RANKPROF PROGS RP_LIB
need_progs regress
need_tools python3
export RANKPROF_LIB="$RP_LIB"

rec() { # OUT FACTOR
    "$RANKPROF" record -o "$1" -- "$PROGS/prog_regress" "$2" >"$tmp/rec.out" 2>&1 ||
        fail "record $1 (factor $2): $(cat "$tmp/rec.out")"
    grep -q "^rounds 400 factor $2\$" "$tmp/rec.out" || fail "prog_regress said $(cat "$tmp/rec.out")"
}
# The premise of planted and table: FACTOR changes target's time alone.
# A load spike during one of the two recordings slows every procedure of
# that run alike (25 % seen on a busy machine, for the length of a
# recording), and the rows then differ for the machine's sake.  So pairs
# are recorded until some base and some slow recorded so far (not only
# the last two) run parse, lookup and render at the same own time per call
# (within 10 %); up to 4 pairs.
fair() { # N: copies the fairest base_i and slow_j to base.rp and slow.rp; 0 when fair
    local i
    for ((i = 1; i <= $1; i++)); do
        [[ -s $tmp/fa$i.json ]] || "$RANKPROF" report --format json -i "$tmp/base$i.rp" >"$tmp/fa$i.json" || return 2
        [[ -s $tmp/fb$i.json ]] || "$RANKPROF" report --format json -i "$tmp/slow$i.rp" >"$tmp/fb$i.json" || return 2
    done
    python3 - "$tmp" "$1" <<'PY'
import json, shutil, sys
tmp, n = sys.argv[1], int(sys.argv[2])
load = lambda f: {x["name"]: x for x in json.load(open(f))["nodes"]}
A = [load(f"{tmp}/fa{i}.json") for i in range(1, n + 1)]
B = [load(f"{tmp}/fb{i}.json") for i in range(1, n + 1)]
per = lambda x: x["exclusive_ns"] / max(x["calls"], 1)
best = None
for i, a in enumerate(A):
    for j, b in enumerate(B):
        off = {k: per(b[k]) / per(a[k]) for k in ("parse", "lookup", "render")}
        worst = max(abs(r - 1) for r in off.values())
        if best is None or worst < best[0]:
            best = (worst, i + 1, j + 1, off)
worst, i, j, off = best
shutil.copy(f"{tmp}/base{i}.rp", f"{tmp}/base.rp")
shutil.copy(f"{tmp}/slow{j}.rp", f"{tmp}/slow.rp")
if worst > 0.1:
    sys.exit(f"the fairest pair, base {i} and slow {j}: own time per call, slow/base: "
             + ", ".join(f"{k} {r:.2f}" for k, r in off.items()))
PY
}
for a in 1 2 3 4; do
    rec "$tmp/base$a.rp" 1
    rec "$tmp/slow$a.rp" 4
    fair $a 2>"$tmp/fair.err" && break
    note "pair $a recorded under uneven load: $(cat "$tmp/fair.err")"
done

planted() {
    local rc
    for rel in "" --relative; do
        set +e
        "$RANKPROF" diff $rel --format json "$tmp/base.rp" "$tmp/slow.rp" >"$tmp/d.json" 2>"$tmp/d.err"
        rc=$?
        set -e
        [[ $rc == 3 ]] || fail "diff $rel base slow: exit status $rc, expected 3: $(cat "$tmp/d.err")"
        "$RANKPROF" report --format json -i "$tmp/base.rp" >"$tmp/base.json"
        "$RANKPROF" report --format json -i "$tmp/slow.rp" >"$tmp/slow.json"
        python3 - "$tmp/d.json" "$tmp/base.json" "$tmp/slow.json" <<'PY' || fail "diff $rel: wrong rows"
import json, sys
d, a, b = (json.load(open(f)) for f in sys.argv[1:4])
A = {n["name"]: n for n in a["nodes"]}
B = {n["name"]: n for n in b["nodes"]}
rows = d["rows"]
bad = []
first = rows[0]
if first["name"] != "target" or first["verdict"] != "slower" or not first["regression"]:
    bad.append(f"first row {first['name']} {first['verdict']} regression={first['regression']}")
if not 2.5 <= first.get("ratio", 0) <= 6:
    bad.append(f"target's ratio per call {first.get('ratio')}, expected about 4")
if d["regressions"] != 1:
    bad.append(f"{d['regressions']} regressions, expected 1")
for r in rows:
    if r["regression"] and r["name"] != "target":
        bad.append(f"{r['name']} reported as a regression: {r}")
    if r["name"] in ("parse", "lookup", "render", "target", "run_round", "main"):
        for side, P in (("base", A), ("new", B)):
            n = P[r["name"]]
            if r[f"calls_{side}"] != n["calls"]:
                bad.append(f"{r['name']}: calls_{side} {r[f'calls_{side}']} != report's {n['calls']}")
            if abs(r[f"self_ns_{side}"] - n["exclusive_ns"]) > 1:
                bad.append(f"{r['name']}: self_ns_{side} {r[f'self_ns_{side}']} != report's {n['exclusive_ns']}")
            if abs(r[f"total_ns_{side}"] - n["inclusive_ns"]) > 1:
                bad.append(f"{r['name']}: total_ns_{side} != report's inclusive_ns")
want = {"target": 400, "parse": 400, "lookup": 800, "render": 400, "run_round": 400}
got = {r["name"]: r.get("calls_new") for r in rows}
if any(got.get(k) != v for k, v in want.items()):
    bad.append(f"calls {got}, expected {want}")
if bad:
    sys.exit("\n".join(bad))
PY
    done
    set +e
    "$RANKPROF" diff --format json "$tmp/slow.rp" "$tmp/base.rp" >"$tmp/r.json"
    rc=$?
    set -e
    [[ $rc == 0 ]] || fail "diff slow base: exit status $rc, expected 0 (an improvement)"
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
r = d['rows'][0]
sys.exit(0 if r['name'] == 'target' and r['verdict'] == 'faster' and d['regressions'] == 0 else 1)" \
        "$tmp/r.json" || fail "diff slow base: target is not the first row, faster"
    note "planted: target 4x slower found first, the only regression (exit 3)"
}

noise() {
    local rc a
    for a in 1 2 3; do
        rec "$tmp/n1.rp" 1
        rec "$tmp/n2.rp" 1
        set +e
        "$RANKPROF" diff --relative --format json "$tmp/n1.rp" "$tmp/n2.rp" >"$tmp/n.json" 2>&1
        rc=$?
        set -e
        if [[ $rc == 0 ]]; then
            note "noise: two runs of the same program: no regression (attempt $a)"
            return 0
        fi
        note "noise: attempt $a: exit status $rc: $(python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
print([(r['name'], r['verdict'], r['ratio']) for r in d['rows'] if r['regression']], 'drift', d['drift'])" "$tmp/n.json" 2>&1)"
    done
    fail "two runs of the same program: a regression reported in 3 attempts"
}

itself() {
    "$RANKPROF" diff --format json "$tmp/base.rp" "$tmp/base.rp" >"$tmp/s.json" ||
        fail "a trace against itself: exit status $?"
    python3 - "$tmp/s.json" <<'PY' || fail "a trace against itself: something changed"
import json, sys
d = json.load(open(sys.argv[1]))
bad = [r for r in d["rows"] if r["verdict"] not in ("same", "few-calls", "small", "off-cpu") or abs(r["z"]) > 1e-6
       or r["self_ns_base"] != r["self_ns_new"]]
if bad or d["drift"] != 1 or d["regressions"] or d["improvements"]:
    sys.exit(f"drift {d['drift']}, rows {bad}")
PY
}

table() {
    set +e
    "$RANKPROF" diff "$tmp/base.rp" "$tmp/slow.rp" >"$tmp/t.txt" 2>&1
    set -e
    grep -q '^regressions: 1, improvements: 0' "$tmp/t.txt" || fail "no regression count: $(cat "$tmp/t.txt")"
    grep -q 'Mann-Whitney' "$tmp/t.txt" || fail "the rule is not stated"
    grep -E -q '^slower .* target$' "$tmp/t.txt" || fail "no slower target row: $(cat "$tmp/t.txt")"
    [[ $(grep -c -E '^(slower|faster) ' "$tmp/t.txt") == 1 ]] ||
        fail "rows other than target's shown as changed: $(cat "$tmp/t.txt")"
}

bad() {
    local rc
    set +e
    "$RANKPROF" diff "$tmp/base.rp" >/dev/null 2>"$tmp/e1"
    rc=$?
    set -e
    [[ $rc == 2 ]] && grep -q "expected two traces" "$tmp/e1" || fail "one trace: rc $rc, $(cat "$tmp/e1")"
    set +e
    "$RANKPROF" diff "$tmp/base.rp" "$tmp/nosuch.rp" >/dev/null 2>"$tmp/e2"
    rc=$?
    set -e
    [[ $rc == 1 ]] && grep -q "nosuch.rp" "$tmp/e2" || fail "missing file: rc $rc, $(cat "$tmp/e2")"
    set +e
    "$RANKPROF" diff --threshold x "$tmp/base.rp" "$tmp/slow.rp" >/dev/null 2>"$tmp/e3"
    rc=$?
    set -e
    [[ $rc != 0 && $rc != 3 ]] && grep -q -- "--threshold" "$tmp/e3" ||
        fail "bad --threshold: rc $rc, $(cat "$tmp/e3")"
}

scenario planted planted
scenario noise noise
scenario itself itself
scenario table table
scenario bad bad
finish

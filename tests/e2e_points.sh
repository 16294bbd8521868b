#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_points.sh - end-to-end test of profile points (include/rankprof.h):
# records tests/progs/points.c with the real recorder and checks, against
# the exact counts in its header comment, the spans in `report --format json`
# (points nested in functions and in each other, scoped ends on return and
# break, lock and io spans, 4 threads), the instants and counters in `dump`,
# the io span's ARG packing, budgets (the recorder's overrun count, the
# analyzer's recount from the budget in DEFS, the BUDGET flag) and hooks;
# then the run-time switches: a site switched off by rp_site_enable, a class
# switched off around an instant, RANKPROF_CLASSES and RANKPROF_FILTER.
# Finally, that the same program built with -DRANKPROF_DISABLE references no
# rankprof symbol and has no rp_sites section.
#
# Then examples/firmware's points, io spans and timer ticks (its header).
#
# Run by ctest with RANKPROF, PROGS, RP_LIB and EXAMPLES in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_points RANKPROF PROGS RP_LIB

prog="$PROGS/prog_points"
off="$PROGS/prog_points_off"
[[ -x "$prog" && -x "$off" ]] || fail "$prog or $off is missing"
need_tools python3
export RANKPROF_LIB="$RP_LIB"

N=36

# check.py JSON DUMP MODE: MODE is "all" ("small": the same with small
# buffers), "classes" (func,point only) or "filter" (RANKPROF_FILTER=-inner,-i2c*)
cat >"$tmp/check.py" <<'PYEOF'
import json, re, sys
js, dump, mode, n = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
name = mode
mode = "all" if mode == "small" else mode
def die(m):
    print("e2e_points: FAIL: " + mode + ": " + m, file=sys.stderr); sys.exit(1)
d = json.load(open(js))
nodes = {}
for x in d["nodes"]:
    if x["kind"] not in ("func", "wait", "offcpu"):  # blocking calls: e2e_waits; [off-cpu]
        if (x["name"], x["kind"]) in nodes:
            die("two nodes named %s (%s)" % (x["name"], x["kind"]))
        nodes[(x["name"], x["kind"])] = x
want = {("outer", "point"): n // 3, ("inner", "point"): n, ("early", "point"): n,
        ("manual", "point"): n // 2, ("budgeted", "point"): n // 3,
        ("bus [wait]", "lock-wait"): n // 2, ("bus [hold]", "lock-hold"): n // 2,
        ("i2c0", "io"): n, ("worker", "point"): 4 * n}
if mode == "classes":
    want = {k: v for k, v in want.items() if k[1] == "point"}
if mode == "filter":
    del want[("inner", "point")], want[("i2c0", "io")]
if set(nodes) != set(want):
    die("span nodes %s, want %s" % (sorted(nodes), sorted(want)))
for k, v in want.items():
    if nodes[k]["calls"] != v:
        die("%s: %d calls, want %d" % (k, nodes[k]["calls"], v))
if d["unmatched_exits"] if "unmatched_exits" in d else 0:
    die("unmatched exits")
if d["lost_events"]:
    die("lost events")
b = nodes[("budgeted", "point")]
if b.get("overruns") != n // 9 or not (2.9e6 < b.get("budget_ns", 0) < 3.1e6):
    die("budgeted: overruns %s budget_ns %s, want %d and ~3e6" % (b.get("overruns"), b.get("budget_ns"), n // 9))
if "BUDGET" not in b["flags"] or b["max_ns"] < 7.5e6:
    die("budgeted: flags %s max_ns %s" % (b["flags"], b["max_ns"]))
if any("budget_ns" in x for k, x in nodes.items() if k[0] != "budgeted"):
    die("budget_ns on a point without a budget")
# edges: inner under outer, outer under nested(), early under early_exit()
edges = {(e["caller"], e["callee"]): e["calls"] for e in d["edges"]}
chk = [("nested", "outer", n // 3), ("early_exit", "early", n)]
if mode != "filter":
    chk.append(("outer", "inner", n))
for c, e, v in chk:
    if edges.get((c, e)) != v:
        die("edge %s -> %s: %s calls, want %d" % (c, e, edges.get((c, e)), v))
# instants, counters and the io ARG in the dump
ticks = marks = levels = args = 0
muted = hidden = 0
vals = []
for line in open(dump):
    f = line.split()
    if len(f) < 3 or line.startswith("#"):
        continue
    if f[2] == "instant" and f[3] == "tick": ticks += 1
    if f[2] == "instant" and f[3] == "mark": marks += 1; vals.append(int(f[4]))
    if f[2] == "instant" and f[3] == "muted": muted += 1
    if f[2] == "counter" and f[3] == "level":
        levels += 1
        if int(f[4]) > 0: die("counter level %s > 0" % f[4])
    if f[2] == "arg":
        args += 1
        if int(f[3]) != (0x48 << 32 | 6): die("io ARG %s, want 0x48 << 32 | 6" % f[3])
    if "hidden" in line: hidden += 1
wt = {"all": (n, n // 2, n, n), "classes": (0, 0, 0, 0), "filter": (n, n // 2, n, 0)}[mode]
if (ticks, marks, levels, args) != wt:
    die("dump: tick %d mark %d level %d arg %d, want %s" % (ticks, marks, levels, args, wt))
if mode != "classes" and vals != list(range(0, n, 2)):
    die("mark arguments %s" % vals)
if muted or hidden:
    die("switched-off sites recorded: muted %d hidden %d" % (muted, hidden))
print("e2e_points: %s ok" % name)
PYEOF

run() { # run MODE [env...]
    local mode=$1
    shift
    env "$@" "$RANKPROF" record -o "$tmp/$mode.data" -- "$prog" $N >"$tmp/$mode.out" 2>"$tmp/$mode.err" ||
        fail "$mode: record failed: $(cat "$tmp/$mode.err")"
    "$RANKPROF" report -i "$tmp/$mode.data" --format json >"$tmp/$mode.json" ||
        fail "$mode: report failed"
    "$RANKPROF" dump -i "$tmp/$mode.data" >"$tmp/$mode.dump" || fail "$mode: dump failed"
    python3 "$tmp/check.py" "$tmp/$mode.json" "$tmp/$mode.dump" "$mode" $N
}

all_points() {
    run all
    grep -qx "points $N hooked 1 hidden 1 hooks $((N / 3)) overruns $((N / 9)) slow_ge_8ms 1" \
        "$tmp/all.out" || fail "program summary: $(cat "$tmp/all.out")"
    "$RANKPROF" report -i "$tmp/all.data" >"$tmp/all.table"
    grep -q "BUDGET $((N / 9)) of $((N / 3)) runs over" "$tmp/all.table" ||
        fail "the table does not explain the BUDGET flag"
}
scenario all all_points

# 256-record buffers: instants and counters (two records each) meet buffer
# ends, and must still arrive whole (nothing skipped, nothing lost)
scenario small run small RANKPROF_BUFSIZE=4096
scenario classes run classes RANKPROF_CLASSES=func,point
scenario filter run filter RANKPROF_FILTER=-inner,-i2c*

# record --classes sets the same variable
classes_option() {
    "$RANKPROF" record --classes func,point -o "$tmp/c2.data" -- "$prog" $N >/dev/null 2>&1 ||
        fail "record --classes failed"
    "$RANKPROF" report -i "$tmp/c2.data" --format json >"$tmp/c2.json"
    "$RANKPROF" dump -i "$tmp/c2.data" >"$tmp/c2.dump"
    python3 "$tmp/check.py" "$tmp/c2.json" "$tmp/c2.dump" classes $N
}
scenario classes_option classes_option

# include rules: only names matching one are recorded
include() {
    RANKPROF_FILTER='w*,b*' "$RANKPROF" record -o "$tmp/inc.data" -- "$prog" $N >/dev/null 2>&1
    "$RANKPROF" report -i "$tmp/inc.data" --format json | python3 -c '
import json, sys
names = sorted({x["name"] for x in json.load(sys.stdin)["nodes"]
                if x["kind"] not in ("func", "wait", "offcpu")})
want = ["budgeted", "bus [hold]", "bus [wait]", "worker"]
sys.exit(0 if names == want else "e2e_points: FAIL: include filter gave %s, want %s" % (names, want))'
}
scenario include include

# RANKPROF_DISABLE: no rankprof symbol, no section, same output
# (outputs are captured first: `cmd | grep -q` fails under pipefail when
# grep exits early)
disabled() {
    if command -v nm >/dev/null && command -v readelf >/dev/null; then
        nm -D --undefined-only "$off" >"$tmp/off.dyn"
        nm "$off" >"$tmp/off.sym"
        readelf -S "$off" >"$tmp/off.sec"
        nm "$prog" >"$tmp/on.sym"
        readelf -S "$prog" >"$tmp/on.sec"
        if grep -E ' (rp_|__cyg_)' "$tmp/off.dyn"; then
            fail "the RANKPROF_DISABLE build references rankprof symbols (above)"
        fi
        if grep -E ' (rp_|rp__|__start_rp_sites)' "$tmp/off.sym"; then
            fail "the RANKPROF_DISABLE build has rankprof symbols (above)"
        fi
        grep -q rp_sites "$tmp/off.sec" && fail "the RANKPROF_DISABLE build has an rp_sites section"
        grep -q rp_sites "$tmp/on.sec" || fail "the normal build has no rp_sites section (test broken?)"
        grep -q ' U rp_site_begin' "$tmp/on.sym" || fail "the normal build does not call rp_site_begin (test broken?)"
    else
        note "nm/readelf missing: symbol check skipped"
    fi
    "$off" $N >"$tmp/off.out"
    grep -qx "points $N hooked 0 hidden 0 hooks 0 overruns 0 slow_ge_8ms 0" "$tmp/off.out" ||
        fail "the RANKPROF_DISABLE build printed: $("$off" $N)"
}
scenario disabled disabled

# examples/firmware: points, an io span per I2C transfer, a timer instant
# per tick (its header comment's table), built with RANKPROF_WEAK and not
# linked with the recorder
firmware() {
    fw="${EXAMPLES:-}/firmware"
    if [[ -x "$fw" ]]; then
        "$fw" 2000 >"$tmp/fw0.out" || fail "firmware without the recorder failed"
        "$RANKPROF" record -o "$tmp/fw.data" -- "$fw" 2000 >"$tmp/fw.out" 2>&1 ||
            fail "firmware: record failed: $(cat "$tmp/fw.out")"
        cmp -s <(grep '^firmware:' "$tmp/fw0.out") <(grep '^firmware:' "$tmp/fw.out") ||
            fail "firmware prints differently under the recorder"
        "$RANKPROF" report -i "$tmp/fw.data" --format json >"$tmp/fw.json"
        "$RANKPROF" dump -i "$tmp/fw.data" >"$tmp/fw.dump"
        python3 - "$tmp/fw.json" "$tmp/fw.dump" <<'PYEOF'
import json, sys
def die(m):
    print("e2e_points: FAIL: firmware: " + m, file=sys.stderr); sys.exit(1)
d = json.load(open(sys.argv[1]))
got = {(x["name"], x["kind"]): x for x in d["nodes"] if x["kind"] in ("point", "io")}
want = {("sensor.convert", "point"): 2000, ("telemetry.pack", "point"): 200,
        ("flash.erase", "point"): 2, ("i2c0", "io"): 3384}
if {k: x["calls"] for k, x in got.items()} != want:
    die("points %s, want %s" % ({k: x["calls"] for k, x in got.items()}, want))
e = got[("flash.erase", "point")]
if e.get("overruns") != 2 or "BUDGET" not in e["flags"]:
    die("flash.erase: overruns %s flags %s, want 2 and BUDGET" % (e.get("overruns"), e["flags"]))
edges = {(x["caller"], x["callee"]): x["calls"] for x in d["edges"]}
for c, p, n in [("task_sensor", "sensor.convert", 2000), ("task_telemetry", "telemetry.pack", 200),
                ("telemetry_flush", "flash.erase", 2)]:
    if edges.get((c, p)) != n:
        die("edge %s -> %s: %s, want %d" % (c, p, edges.get((c, p)), n))
ticks = status = 0
args = {}
for line in open(sys.argv[2]):
    f = line.split()
    if line.startswith("#") or len(f) < 4:
        continue
    ticks += f[2] == "instant" and f[3] == "tick"
    status += f[2] == "counter" and f[3] == "monitor.status"
    if f[2] == "arg":
        a = int(f[3])
        args[a] = args.get(a, 0) + 1
# bytes on the wire: 1 + ntx + (1 + nrx if reading)
byn = {}
for a, n in args.items():
    if a >> 32 != 0x6b:
        die("io ARG 0x%x: device is not 0x6b" % a)
    byn[a & 0xffffffff] = n
# reads: 1 + 1 + 1 + nrx (WHO_AM_I 1, DATA 6, TEMP 2, STATUS 1); writes 3; flush 130
want_byn = {4: 1 + 40 + 100, 9: 2000, 5: 200, 3: 1041, 130: 2}
if (ticks, status, byn) != (2000, 100, want_byn):
    die("tick %d monitor.status %d io bytes %s, want 2000, 100, %s" % (ticks, status, byn, want_byn))
print("e2e_points: firmware ok")
PYEOF
    else
        note "EXAMPLES/firmware not built: firmware checks skipped"
    fi
}
scenario firmware firmware
finish

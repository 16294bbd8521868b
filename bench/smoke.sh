#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# smoke.sh - ctest's bench_quick: runs scripts/bench.sh in quick mode with a
# tiny workload (Tracy left out: building it takes minutes) and checks that
# the table and results.json have every row, that each row that ran has
# sane numbers for the right number of calls, and that the rows measured
# what they claim (the function class switched off writes far less).
#
#   bench/smoke.sh BUILD
set -euo pipefail
build=$(realpath "$1")
here=$(dirname "$0")
out=$build/bench/quick
iters=2000
mkdir -p "$out"
rm -f "$out/results.json"
BENCH_QUICK=1 ITERS=$iters RANK_MAX=10000 BENCH_SKIP="tracy" BENCH_OUT="$out" \
  bash "$here/../scripts/bench.sh" "$build" >"$out/stdout.txt"
cat "$out/stdout.txt"
for want in "uninstrumented" "floor: rdtsc" "rankprof record (trace mode)" "rankprof, function class off" \
  "rankprof record --off (armed)" "rankprof record --ring 64M" \
  "rankprof direct mode" "gprof" "rankprof report" "ranking" "report time" "recorder memory" \
  "a service watched by top" "micro benchmarks" "lock_func_ratio" "func_off_by_name" "point_site_off"; do
  grep -qF "$want" "$out/stdout.txt" || { echo "smoke: no '$want' in the table" >&2; exit 1; }
done
python3 - "$out/results.json" "$iters" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
calls = int(sys.argv[2]) * 24 + 1
assert r["workload"]["calls"] == calls, r["workload"]
rows = {x["name"]: x for x in r["rows"]}
for name in ("baseline", "instr_noop", "rankprof", "rankprof_nofunc", "rankprof_off", "rankprof_ring", "gprof"):
    x = rows[name]
    assert x["status"] == "ok", x
    assert x["calls"] == calls and x["runs"] == 1, x
    assert 0 < x["min_s"] <= x["median_s"] <= x["max_s"] < 120, x
for name in ("rankprof_direct", "uftrace", "callgrind", "tracy"):
    if name == "tracy":
        assert name not in rows, "BENCH_SKIP=tracy was not honoured"
        continue
    x = rows[name]
    assert x["status"] in ("ok", "skipped"), x
    if x["status"] == "skipped":
        assert x.get("note"), x
    else:
        assert x["median_s"] > 0 and x["calls"] > 0, x
import platform
if platform.machine() in ("x86_64", "AMD64"):
    f = rows["floor"]
    assert f["status"] == "ok" and f["calls"] == calls and f["x_floor"] == 1, f
    # x floor is the row's overhead over the floor's (a few ms runs here:
    # either may be negative by noise; the arithmetic is what is checked)
    fo, x = f["overhead_ns_per_call"], rows["rankprof"]
    if abs(fo) > 0.05:
        assert abs(x["x_floor"] - x["overhead_ns_per_call"] / fo) < 0.01 * max(1, abs(x["x_floor"])), x
sv = {x["mode"]: x for x in r["scaling"]["service"]}
assert sorted(sv) == ["alone", "top1", "top10"], sv
for x in sv.values():
    assert x["requests"] == 100 and x["requests_per_s"] > 0, x
assert sv["top10"]["refreshes"] > 0 and sv["top10"]["top_cpu_s"] >= 0, sv
th = r["scaling"]["threads"]
assert [x["threads"] for x in th] == [1, 2, 4, 8], th
for x in th:
    assert x["trace_cpu_ns_per_call"] > 0 and 0 <= x["drop_lost_percent"] <= 100, x
b = rows["baseline"]
assert b["x_baseline"] == 1 and b["overhead_ns_per_call"] == 0, b
for x in rows.values():
    if x["status"] != "ok":
        continue
    assert abs(x["ns_per_call"] - x["median_s"] * 1e9 / x["calls"]) < 0.01, x
    assert abs(x["overhead_ns_per_call"] - (x["ns_per_call"] - b["ns_per_call"])) < 0.01, x
    if "bytes" in x:
        assert abs(x["bytes_per_call"] - x["bytes"] / x["calls"]) < 0.001, x
    if rows["uftrace"]["status"] == "ok" and x["name"] == "uftrace":
        assert x["x_uftrace"] == 1, x
if rows["callgrind"]["status"] == "ok":
    assert rows["callgrind"]["calls"] < calls, "callgrind should run fewer iterations"
# every call is two events of at least a byte; switched off, almost nothing
assert rows["rankprof"]["bytes"] > calls, rows["rankprof"]
assert rows["rankprof_nofunc"]["bytes"] * 10 < rows["rankprof"]["bytes"], rows
ana = {x["name"]: x for x in r["analysis"]}
assert ana["report_rankprof"]["status"] == "ok" and ana["report_rankprof"]["calls"] == calls, ana
s = r["scaling"]
assert [x["nodes"] for x in s["rank"]] == [1000, 10000], s["rank"]
assert all(x["residual"] < 1e-9 and 0 < x["seconds"] <= x["first_seconds"] for x in s["rank"]), s["rank"]
lens = [x["calls"] for x in s["report"]]
assert len(lens) == 3 and lens == sorted(lens) and lens[-1] == calls, lens
assert [x["bytes"] for x in s["report"]] == sorted(x["bytes"] for x in s["report"]), s["report"]
m = s["memory"]
assert len(m) >= 2 and all(x["rss_kb_idle"] < x["rss_kb_recording"] for x in m), m
# a recording thread's 100,000 calls (3.2 MB of raw records) go through
# its buffers (4 x 256 KiB by default): well over 128 KiB per thread
assert s["memory_kb_per_recording_thread"] >= 128, s
assert (m[-1]["rss_kb_recording"] - m[0]["rss_kb_recording"]) >= 128 * (m[-1]["threads"] - m[0]["threads"]), m
u = s["micro"]
for k in ("lock_event", "func_event", "lock_func_ratio", "func_plain_call", "func_class_off",
          "func_off_by_name", "point_empty_loop", "point_site_off", "point_class_off"):
    assert k in u, (k, u)
assert u["func_plain_call"] > 0 and u["func_class_off"] > 0 and u["func_off_by_name"] > 0, u
# the host's steal, where /proc/stat tells it: a share of CPU time, given
# for every measurement long enough to span a clock tick
steals = [x["steal_percent"] for x in list(rows.values()) + list(ana.values()) + s["rank"] + s["report"]
          if "steal_percent" in x]
assert all(0 <= v <= 100 for v in steals), steals
import os
if os.path.exists("/proc/stat"):
    assert len(steals) >= 5, steals
print("smoke: results.json has", len(rows), "rows,", len(ana), "analyses, scaling ok")
PY

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench_exports.sh - what each export format costs against `rankprof report`
# on one large trace (docs/performance.md, "Exports").
#
#   scripts/bench_exports.sh BUILD [TRACE]
#
# Records bench/workload_instr ITERS iterations (default 2,000,000: 48 M
# calls) into a temporary trace unless TRACE is given, then runs `report`
# and every format RUNS times (default 3), interleaved (one run of each in
# turn, so that a machine's load falls on all alike), each written with
# `-o /dev/null` (the export's own cost; its size counted by one more run
# through wc, not timed), and prints per format the median wall
# time with its range, the median CPU time (user + system), the ratios of
# the median wall and CPU times to the report's, the output's bytes and
# bytes per call, and the peak RSS.  With OLD=/path/to/another/rankprof each run is
# made by both binaries in turn and both are printed ("old" and "new").
# Needs GNU time (/usr/bin/time).  html runs with RANKPROF_RENDER=none as
# well as with the renderer found on PATH, perfetto with -O compress=small
# as well (perfetto-small); perfetto-pipe and chrome-pipe time perfetto
# and chrome through a pipe to wc, the pipe's and wc's costs included.
set -euo pipefail
build=${1:?usage: bench_exports.sh BUILD [TRACE]}
trace=${2:-}
RUNS=${RUNS:-3}
ITERS=${ITERS:-2000000}
FORMATS=${FORMATS:-"folded flamegraph pprof callgrind perfetto perfetto-small perfetto-pipe chrome chrome-pipe html html-norender"}
new=$build/rankprof
[[ -x $new ]] || { echo "bench_exports.sh: no $new (build first)" >&2; exit 1; }
[[ -x /usr/bin/time ]] || { echo "bench_exports.sh: needs GNU time (/usr/bin/time)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -z $trace ]]; then
    trace=$work/exports.rpt
    RANKPROF_LIB=$build/librankprof.so "$new" record -o "$trace" -- \
        "$build/bench/workload_instr" "$ITERS" >/dev/null 2>&1
fi
calls=$("$new" report --format json "$trace" |
    python3 -c 'import json,sys; print(sum(n["calls"] for n in json.load(sys.stdin)["nodes"] if n["kind"] == "func"))')
bins=(new)
[[ -n ${OLD:-} ]] && bins=(old new)
declare -A size # a format's output bytes, counted once
for ((r = 0; r < RUNS; r++)); do
    for what in report $FORMATS; do
        for b in "${bins[@]}"; do
            bin=$new
            [[ $b == old ]] && bin=$OLD
            env=() pipe=
            case $what in
            report) cmd=("$bin" report "$trace") ;;
            html-norender) env=(RANKPROF_RENDER=none) cmd=("$bin" export --format html "$trace") ;;
            perfetto-small) cmd=("$bin" export --format perfetto -O compress=small "$trace") ;;
            *-pipe) pipe=1 cmd=("$bin" export --format "${what%-pipe}" "$trace") ;;
            *) cmd=("$bin" export --format "$what" "$trace") ;;
            esac
            if [[ $what == report || -n $pipe ]]; then
                bytes=$(env "${env[@]}" /usr/bin/time -f "%e %U %S %M" -o "$work/t" "${cmd[@]}" 2>/dev/null | wc -c)
            else
                key="$what $b"
                [[ -n ${size[$key]:-} ]] || size[$key]=$(env "${env[@]}" "${cmd[@]}" 2>/dev/null | wc -c)
                bytes=${size[$key]}
                env "${env[@]}" /usr/bin/time -f "%e %U %S %M" -o "$work/t" "${cmd[@]}" -o /dev/null >/dev/null 2>&1
            fi
            echo "$what $b $(cat "$work/t") $bytes"
        done
    done
done >"$work/runs"
python3 - "$work/runs" "$calls" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    w, b, wall, u, s, rss, size = line.split()
    runs[(w, b)].append((float(wall), float(u) + float(s), int(rss), int(size)))
calls = int(sys.argv[2])
rep = {b: statistics.median(x[0] for x in v) for (w, b), v in runs.items() if w == "report"}
repc = {b: statistics.median(x[1] for x in v) for (w, b), v in runs.items() if w == "report"}
print("%d calls; wall s: median [min .. max]; cpu s: median user + system" % calls)
print("%-14s %-3s %6s %16s %6s %8s %8s %14s %9s %8s" %
      ("what", "bin", "wall", "[min .. max]", "cpu", "x report", "cpu x", "bytes", "B/call",
       "RSS MB"))
for (w, b), v in runs.items():
    walls = sorted(x[0] for x in v)
    m = statistics.median(walls)
    c = statistics.median(x[1] for x in v)
    print("%-14s %-3s %6.2f %16s %6.2f %8.1f %8.1f %14d %9.2f %8.1f" %
          (w, b, m, "[%.2f .. %.2f]" % (walls[0], walls[-1]), c, m / rep[b], c / repc[b],
           v[0][3], v[0][3] / calls, max(x[2] for x in v) / 1024))
PY

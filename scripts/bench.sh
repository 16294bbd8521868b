#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# bench.sh - what `make bench` runs: one workload (bench/workload.c: a
# dispatcher, 8 leaves and fib(5), 24 calls per iteration, 48M calls at the
# default 2M iterations) measured side by side under every profiler at hand,
# then the analysis time, then how rankprof scales.
#
#   scripts/bench.sh [BUILD]            BUILD defaults to build
#
# Rows (one function each, row_*; a row that cannot run here says why and is
# marked skipped, it never fails the run):
#   baseline        workload_plain, -O2, no instrumentation
#   instr_noop      workload_instr: -finstrument-functions, glibc's empty hooks
#   floor           workload_instr with bench/floor.c preloaded: rdtsc + a 16-byte
#                   store into a thread-local ring, the least a hook can do
#   rankprof        `rankprof record` in trace mode (lossless)
#   rankprof_nofunc the same with the function class switched off
#   rankprof_off    `rankprof record --off`: armed, recording switched off
#                   (a service started to be switched on by rankprof ctl)
#   rankprof_ring   `rankprof record --ring 64M`: the flight recorder, the
#                   newest 64 MiB of events kept in memory, written at exit
#   rankprof_throttle the same with --throttle (TAU's 100000 calls / 10 us):
#                   the busy tiny functions become count-only
#   rankprof_direct RANKPROF_MODE=direct, when this build supports it
#   uftrace         `uftrace record` of workload_instr
#   gprof           workload_pg (-pg): call counts and samples, gmon.out
#   callgrind       valgrind --tool=callgrind on workload_plain, with
#                   ITERS/CG_DIV iterations (scaled per call)
#   tracy           Tracy's C API, explicit zones (workload.c, TRACY_ENABLE)
#                   and its capture tool, built in TRACY_DIR from TRACY_SRC
# Each row checks that its profiler counted every call (verify); a row that
# fails says why in the table (run_row), which is always printed.
# Analysis: `rankprof report` against `uftrace report` and Tracy's csvexport
# on those traces.  Scaling: ranking 1K..1M nodes (bench_rank --scale),
# report time and peak RSS at three trace lengths, recorder RSS per thread
# (bench_threads); micro benchmarks (bench_locks, bench_funcs,
# bench_points).  Threads: workload_mt with 1, 2, 4, 8 threads, hooks only
# vs floor vs trace mode vs --drop (wall and CPU per call, events lost).
# Real program: Lua built from source at bench time (scale_real).
# Sections for BENCH_SKIP: threads, real, rank, report, memory, service, micro.
#
# Every time is the whole process (start-up, recording, final flush to disk;
# for Tracy until the capture tool has written its file), the median of RUNS
# runs with min and max.  Output: a table on stdout and BENCH_OUT/results.json.
# docs/performance.md explains the rows, the columns and the JSON.
#
# Environment:
#   RUNS (5; also rankprof's report row), ANA_RUNS (3: the other analysis
#   rows, uftrace's report alone takes 20 s), ITERS (2000000), CG_DIV (20)
#   RANK_RUNS (3)   bench_rank processes: each size's times are the medians
#                   over them (its first run is one sample per process)
#   BENCH_QUICK=1   smoke run: RUNS 1, ITERS 20000, ranking up to 10K nodes
#                   (RANK_MAX) in one process, Tracy only if already built
#   BENCH_SKIP      rows/sections to leave out, e.g. "tracy callgrind memory"
#   BENCH_OUT       where results.json goes (BUILD/bench)
#   TRACY_SRC       a checkout of Tracy (wolfpld/tracy, tag v0.10)
#                   (TRACY_DIR/src);  TRACY_DIR  Tracy's build place
#                   (/tmp/rankprof-tracy)
# Exits 0 when every row that ran succeeded; 1 (naming the row) otherwise.
set -euo pipefail
export LC_ALL=C # a decimal point in $EPOCHREALTIME and printf

build=$(realpath "${1:-build}")
quick=${BENCH_QUICK:-0}
if [ "$quick" = 1 ]; then
  runs=${RUNS:-1} ana_runs=${ANA_RUNS:-1} iters=${ITERS:-20000} rank_max=${RANK_MAX:-10000} micro_runs=${MICRO_RUNS:-1} micro_iters=200000
  rank_runs=${RANK_RUNS:-1}
else
  runs=${RUNS:-5} ana_runs=${ANA_RUNS:-3} iters=${ITERS:-2000000} rank_max=${RANK_MAX:-1000000} micro_runs=${MICRO_RUNS:-5} micro_iters=20000000
  rank_runs=${RANK_RUNS:-3}
fi
cg_div=${CG_DIV:-20}
out=${BENCH_OUT:-$build/bench}
skips=" ${BENCH_SKIP:-} "
tracy_dir=${TRACY_DIR:-/tmp/rankprof-tracy}
tracy_src=${TRACY_SRC:-$tracy_dir/src}
src=$(realpath "$(dirname "$0")/..")
rp=$build/rankprof
bin=$build/bench
calls=$((iters * 24 + 1))
work=$(mktemp -d /tmp/rankprof-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

# die MSG: ends the bench; inside a row (run_row) it ends only the row,
# whose reason is then printed in the table.
die() {
  echo "bench: $*" >&2
  [ -n "${in_row:-}" ] && printf '%s' "$*" >"$work/row.why"
  exit 1
}
# calc EXPR [FORMAT]: floating-point arithmetic (awk: always there, unlike bc)
calc() { awk "BEGIN { printf \"${2:-%.6f}\", $1 }"; }
skipped() { case $skips in *" $1 "*) return 0 ;; esac; return 1; }

for f in "$rp" "$bin/workload_plain" "$bin/workload_instr" "$bin/workload_pg"; do
  [ -x "$f" ] || die "$f is missing: build first (make, or cmake --build $build)"
done
mkdir -p "$out"

# ---- measuring ---------------------------------------------------------------

# Per row: label, status (ok | skipped), note, calls, median/min/max seconds,
# bytes on disk, number of runs, the host's steal while it ran.  rows keeps
# the order of the table.
rows=() thr_json=() real_json=()
declare -A label status note ncalls med mn mx bytes nruns stl

# steal_sample: "STEAL TOTAL", the jiffies all CPUs of this (virtual)
# machine waited for the host while runnable, and all their jiffies, from
# /proc/stat; "0 0" where there is none.
steal_sample() {
  awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print $9 + 0, t; f = 1 } END { if (!f) print "0 0" }' \
    /proc/stat 2>/dev/null || echo "0 0"
}
# steal_pct BEFORE AFTER: the percentage of CPU time the host took between
# two steal_samples (empty when no time passed or there is no /proc/stat).
steal_pct() {
  awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); t = y[2] - x[2]
    if (t > 0) printf "%.1f", 100 * (y[1] - x[1]) / t }'
}

# measure NAME CALLS CMD...: runs CMD $runs times, or $mruns if set
# (stdout and stderr to $work/NAME.log); fails the bench, naming the row,
# if a run fails.
measure() {
  local name=$1 n=$2; shift 2
  local ts=() t0 t1 i k=${mruns:-$runs} s0
  s0=$(steal_sample)
  for ((i = 0; i < k; i++)); do
    t0=$EPOCHREALTIME
    if ! "$@" >"$work/$name.log" 2>&1; then
      tail -5 "$work/$name.log" >&2
      die "$name: '$*' failed"
    fi
    t1=$EPOCHREALTIME
    ts+=("$(calc "$t1 - $t0")")
  done
  local sorted
  sorted=$(printf '%s\n' "${ts[@]}" | sort -g)
  med[$name]=$(echo "$sorted" | sed -n "$(((k + 1) / 2))p")
  mn[$name]=$(echo "$sorted" | sed -n 1p) # (head could exit before echo's last write: SIGPIPE under pipefail)
  mx[$name]=$(echo "$sorted" | tail -1)
  ncalls[$name]=$n
  nruns[$name]=$k
  stl[$name]=$(steal_pct "$s0" "$(steal_sample)")
  status[$name]=ok
}

# run_row NAME FUNC: runs the row function FUNC in a subshell and keeps the
# table's state it left; when it fails (die, or a command failing), the row
# NAME is marked failed with the reason and the bench goes on, so that the
# table is always printed.
run_row() {
  local r=$1 f=$2 why
  rm -f "$work/row.state" "$work/row.why"
  (
    in_row=1
    "$f"
    declare -p rows ana label status note ncalls med mn mx bytes nruns stl thr_json real_json svc_json >"$work/row.state"
  ) && [ -s "$work/row.state" ] && {
    source <(sed 's/^declare -\([aA]\)/declare -g\1/' "$work/row.state")
    return 0
  }
  why=$(cat "$work/row.why" 2>/dev/null || true)
  case " ${rows[*]} " in *" $r "*) ;; *) add "$r" "$r" ;; esac
  status[$r]=failed
  row_failed=1
  note[$r]=${why:-"$f failed, see $work/$r.log"}
  echo "  $r: failed: ${note[$r]}" >&2
}

# add NAME LABEL: appends a row to the table.
add() { rows+=("$1"); label[$1]=$2; note[$1]=${note[$1]:-}; status[$1]=${status[$1]:-}; }

# skip NAME LABEL REASON: a row that cannot run here.
skip() {
  add "$1" "$2"
  status[$1]=skipped
  note[$1]=$3
  echo "  $2: skipped: $3" >&2
}

# verify NAME FUNC GOT: fails the bench unless the row's profiler counted
# every call of FUNC: dispatch once per iteration, fib 15 times (a
# profiler that loses events would look fast).
verify() {
  local it=$(((${ncalls[$1]} - 1) / 24)) want
  [ "$2" = fib ] && want=$((it * 15)) || want=$it
  [ "$3" = "$want" ] || die "$1: counted ${3:-no} calls of $2, not $want"
}

# ---- rows --------------------------------------------------------------------

row_baseline() {
  add baseline "uninstrumented (-O2)"
  measure baseline "$calls" "$bin/workload_plain" "$iters"
  grep -q "calls $calls " "$work/baseline.log" || die "baseline: workload printed $(cat "$work/baseline.log")"
}

row_instr_noop() {
  add instr_noop "-finstrument-functions, empty hooks"
  measure instr_noop "$calls" "$bin/workload_instr" "$iters"
}

row_floor() {
  add floor "floor: rdtsc + 16-byte TLS ring store"
  local lib=$bin/libbench_floor.so
  [ -f "$lib" ] || die "floor: $lib is missing (x86 only)"
  measure floor "$calls" env LD_PRELOAD="$lib" "$bin/workload_instr" "$iters"
}

row_rankprof() {
  add rankprof "rankprof record (trace mode)"
  measure rankprof "$calls" "$rp" record -o "$work/rp.data" -- "$bin/workload_instr" "$iters"
  bytes[rankprof]=$(stat -c %s "$work/rp.data")
  verify rankprof fib "$("$rp" report -i "$work/rp.data" --format csv | awk -F, '$1 == "fib" { print $3 }')"
}

row_rankprof_nofunc() {
  add rankprof_nofunc "rankprof, function class off"
  measure rankprof_nofunc "$calls" "$rp" record --classes point -o "$work/nofunc.data" \
    -- "$bin/workload_instr" "$iters"
  bytes[rankprof_nofunc]=$(stat -c %s "$work/nofunc.data")
}

row_rankprof_off() {
  add rankprof_off "rankprof record --off (armed)"
  measure rankprof_off "$calls" "$rp" record --off -o "$work/off.data" \
    -- "$bin/workload_instr" "$iters"
  bytes[rankprof_off]=$(stat -c %s "$work/off.data")
}

row_rankprof_ring() {
  add rankprof_ring "rankprof record --ring 64M (flight recorder)"
  measure rankprof_ring "$calls" "$rp" record --ring 64M -o "$work/ring.data" \
    -- "$bin/workload_instr" "$iters"
  bytes[rankprof_ring]=$(stat -c %s "$work/ring.data")
}

row_rankprof_throttle() {
  add rankprof_throttle "rankprof record --throttle"
  measure rankprof_throttle "$calls" "$rp" record --throttle -o "$work/thr.data" \
    -- "$bin/workload_instr" "$iters"
  bytes[rankprof_throttle]=$(stat -c %s "$work/thr.data")
  # the counts stay exact: recorded + counted
  verify rankprof_throttle fib "$("$rp" report -i "$work/thr.data" --format csv | awk -F, '$1 == "fib" { print $3 }')"
}

# Direct mode is detected with a one-iteration run: a build without it
# refuses --mode direct or warns that the mode is not supported.
row_rankprof_direct() {
  local l="rankprof direct mode"
  if ! "$rp" record --mode direct -o "$work/probe.data" -- "$bin/workload_instr" 1 \
      >/dev/null 2>"$work/probe.err" || grep -qi "not supported\|only 'trace'" "$work/probe.err"; then
    skip rankprof_direct "$l" "not supported by this build"
    return
  fi
  add rankprof_direct "$l"
  rm -f "$work/direct.data"
  # --print: the in-process table at exit, where fib's count is checked
  measure rankprof_direct "$calls" "$rp" record --mode direct --print -o "$work/direct.data" \
    -- "$bin/workload_instr" "$iters"
  bytes[rankprof_direct]=$(stat -c %s "$work/direct.data" 2>/dev/null || echo 0)
  verify rankprof_direct fib "$(awk -v w=$((iters * 15)) '$2 == w { print $2; exit }' "$work/rankprof_direct.log")"
}

row_uftrace() {
  command -v uftrace >/dev/null || { skip uftrace "uftrace record" "uftrace is not installed"; return; }
  local l
  l="uftrace $(uftrace --version | awk '{print $2}') record"
  add uftrace "$l"
  measure uftrace "$calls" uftrace record -d "$work/uftrace.data" "$bin/workload_instr" "$iters"
  bytes[uftrace]=$(du -sb "$work/uftrace.data" | cut -f1)
}

row_gprof() {
  add gprof "gprof (-pg; counts and samples)"
  measure gprof "$calls" bash -c "cd '$work' && exec '$bin/workload_pg' $iters"
  bytes[gprof]=$(stat -c %s "$work/gmon.out")
  # the flat profile counts only fib's calls from outside fib
  verify gprof dispatch "$(cd "$work" && gprof -b -p "$bin/workload_pg" gmon.out | awk '$NF == "dispatch" { print $(NF - 3) }')"
}

row_callgrind() {
  local it=$((iters / cg_div > 0 ? iters / cg_div : 1))
  local l="valgrind --tool=callgrind"
  command -v valgrind >/dev/null || { skip callgrind "$l" "valgrind is not installed"; return; }
  add callgrind "$l"
  note[callgrind]="$it iterations (1/$cg_div), scaled per call"
  measure callgrind $((it * 24 + 1)) valgrind --tool=callgrind \
    --callgrind-out-file="$work/callgrind.out" "$bin/workload_plain" "$it"
  bytes[callgrind]=$(stat -c %s "$work/callgrind.out")
}

# tracy_build: the capture tool and the workload with Tracy's client, in
# $tracy_dir; prints why not on stdout and returns 1 when that cannot be done.
tracy_build() {
  local cap=$tracy_src/capture/build/unix/capture-release
  [ -f "$tracy_src/public/TracyClient.cpp" ] || {
    echo "no Tracy source in $tracy_src (set TRACY_SRC to a checkout of wolfpld/tracy, tag v0.10)"
    return 1
  }
  if [ ! -x "$cap" ]; then
    [ "$quick" = 1 ] && { echo "capture tool not built, and quick mode does not build it"; return 1; }
    echo "  building Tracy's capture tool (minutes; log: $tracy_dir/capture.log)" >&2
    make -C "$tracy_src/capture/build/unix" -j "$(nproc)" release TRACY_NO_LTO=1 >"$tracy_dir/capture.log" 2>&1 || {
      echo "the capture tool did not build (libcapstone-dev missing?), see $tracy_dir/capture.log"
      return 1
    }
  fi
  local csv=$tracy_src/csvexport/build/unix/csvexport-release
  if [ ! -x "$csv" ] && [ "$quick" != 1 ]; then # only the analysis row needs it
    echo "  building Tracy's csvexport (minutes; log: $tracy_dir/csvexport.log)" >&2
    make -C "$tracy_src/csvexport/build/unix" -j "$(nproc)" release TRACY_NO_LTO=1 >"$tracy_dir/csvexport.log" 2>&1 || true
  fi
  local defs=(-DTRACY_ENABLE -DTRACY_NO_SAMPLING -DTRACY_NO_SYSTEM_TRACING
    -DTRACY_NO_CONTEXT_SWITCH -DTRACY_NO_BROADCAST -DTRACY_ONLY_LOCALHOST
    -DTRACY_NO_VSYNC_CAPTURE -DTRACY_NO_FRAME_IMAGE -DTRACY_NO_CODE_TRANSFER)
  local cli=$tracy_dir/TracyClient.o wl=$tracy_dir/workload_tracy
  if [ "$tracy_src/public/TracyClient.cpp" -nt "$cli" ]; then
    g++ -O2 -g "${defs[@]}" -c "$tracy_src/public/TracyClient.cpp" -o "$cli" 2>"$tracy_dir/client.log" || {
      echo "TracyClient.cpp did not compile, see $tracy_dir/client.log"
      return 1
    }
  fi
  if [ "$src/bench/workload.c" -nt "$wl" ] || [ "$cli" -nt "$wl" ]; then
    if ! { gcc -O2 -g "${defs[@]}" -I"$tracy_src/public" -c "$src/bench/workload.c" -o "$tracy_dir/workload.o" &&
      g++ -o "$wl" "$tracy_dir/workload.o" "$cli" -pthread -ldl; } 2>"$tracy_dir/link.log"; then
      echo "the workload did not build with Tracy's client, see $tracy_dir/link.log"
      return 1
    fi
  fi
}

# One Tracy run: the capture tool waits for the client, the client
# (TRACY_NO_EXIT=1) waits at exit until the capture has everything, and the
# capture writes its file.  Timed from both starting to both done.
# Both under a timeout: each waits for the other forever otherwise.
tracy_once() {
  local port=$1 file=$2 it=$3
  timeout 600 "$tracy_src/capture/build/unix/capture-release" -a 127.0.0.1 -p "$port" -o "$file" -f \
    >"$work/capture.log" 2>&1 &
  local cap=$!
  TRACY_NO_EXIT=1 TRACY_PORT=$port timeout 600 "$tracy_dir/workload_tracy" "$it" || {
    kill "$cap" 2>/dev/null
    return 1
  }
  wait "$cap"
}

row_tracy() {
  local l="Tracy C API zones + capture" why
  mkdir -p "$tracy_dir"
  if ! why=$(tracy_build); then
    skip tracy "$l" "$why"
    return
  fi
  add tracy "$l"
  note[tracy]="explicit zones; client and capture on one machine"
  measure tracy "$calls" tracy_once $((20000 + RANDOM % 20000)) "$work/trace.tracy" "$iters"
  bytes[tracy]=$(stat -c %s "$work/trace.tracy")
  local zones
  zones=$(tr '\r' '\n' <"$work/capture.log" | awk '/^Zones:/ { gsub(",", "", $2); print $2 }' | tail -1)
  [ "$zones" = "$calls" ] || die "tracy: the capture has ${zones:-no} zones, not $calls"
}

# ---- analysis ----------------------------------------------------------------

ana=()
ana_rankprof() {
  [ "${status[rankprof]:-}" = ok ] || return 0
  add report_rankprof "rankprof report"
  ana+=(report_rankprof)
  mruns=$runs measure report_rankprof "$calls" "$rp" report -i "$work/rp.data" --limit 5
}

ana_uftrace() {
  [ "${status[uftrace]:-}" = ok ] || return 0
  add report_uftrace "uftrace report"
  ana+=(report_uftrace)
  mruns=$ana_runs measure report_uftrace "$calls" uftrace report -d "$work/uftrace.data"
  verify uftrace fib "$(awk '$NF == "fib" { print $(NF - 1) }' "$work/report_uftrace.log")"
}

# Tracy's nearest to a report: csvexport's per-zone statistics.
ana_tracy() {
  local csv=$tracy_src/csvexport/build/unix/csvexport-release
  [ "${status[tracy]:-}" = ok ] || return 0
  [ -x "$csv" ] || { echo "  Tracy csvexport: skipped: not built" >&2; return 0; }
  add report_tracy "Tracy csvexport"
  ana+=(report_tracy)
  mruns=$ana_runs measure report_tracy "$calls" "$csv" "$work/trace.tracy"
  # the capture's zone count was checked (row_tracy); csvexport's own
  # statistics may count fewer zones: said, not fatal
  local got want=$((iters * 15))
  got=$(awk -F, '$1 == "fib" { print $6 }' "$work/report_tracy.log")
  [ "$got" = "$want" ] || note[report_tracy]="csvexport counts ${got:-no} calls of fib, the capture all $want"
}

# ---- scaling -----------------------------------------------------------------

# scale_rank: bench_rank --scale in $rank_runs processes (the first
# shown whole), then per graph size the medians over the processes of the
# best and CPU seconds, and of the first run (on fresh memory: what
# `rankprof report` pays) with its range; one JSON object per size.
rank_json=()
scale_rank() {
  [ -x "$bin/bench_rank" ] || { echo "  ranking: skipped: bench_rank is not built" >&2; return; }
  local i
  echo
  echo "ranking (bench_rank --scale --max $rank_max, $rank_runs processes): call-graph shaped, 10 edges per node"
  : >"$work/rank.txt"
  for ((i = 0; i < rank_runs; i++)); do
    if [ "$i" = 0 ]; then
      "$bin/bench_rank" --scale --max "$rank_max" | tee -a "$work/rank.txt"
    else
      "$bin/bench_rank" --scale --max "$rank_max" >>"$work/rank.txt"
    fi
  done
  # "callgraph N nodes M edges S sweeps residual R T s [cpu C s] [first F s]
  #  [steal P% [(first run Q%)]] (...)"
  awk '/^callgraph/ {
      t = ""; c = ""; f = ""; st = ""
      for (i = 2; i < NF; i++) {
        if ($(i + 1) == "nodes") n = $i
        if ($(i + 1) == "edges") m = $i
        if ($(i + 1) == "sweeps") sw = $i
        if ($i == "residual") r = $(i + 1)
        if ($(i + 1) == "s" && t == "") t = $i
        if ($i == "cpu") c = $(i + 1)
        if ($i == "first") f = $(i + 1)
        if ($i == "steal") st = $(i + 1) + 0
      }
      print n, m, sw, r, t, c == "" ? "-" : c, f == "" ? "-" : f, st == "" ? "-" : st
    }' "$work/rank.txt" >"$work/rank.rows"
  if [ "$rank_runs" -gt 1 ]; then
    printf '  over %d processes (medians): %9s %9s %9s %9s %20s %6s\n' "$rank_runs" nodes best cpu first \
      "[min .. max]" steal
  fi
  awk -v runs="$rank_runs" -v sum="$work/rank.sum" '
      function med(a, k,    i, j, x) { # a[1..k], sorted in place; "-" when one is missing
        for (i = 1; i <= k; i++) if (a[i] == "-") return "-"
        for (i = 2; i <= k; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] + 0 > x + 0; j--) a[j + 1] = a[j]; a[j + 1] = x }
        return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
      }
      { if (!($1 in cnt)) size[++nsz] = $1
        k = ++cnt[$1]; m[$1] = $2; sw[$1] = $3; r[$1] = $4; T[$1, k] = $5; C[$1, k] = $6; F[$1, k] = $7; S[$1, k] = $8 }
      END {
        for (z = 1; z <= nsz; z++) {
          n = size[z]; k = cnt[n]
          for (i = 1; i <= k; i++) { t[i] = T[n, i]; c[i] = C[n, i]; f[i] = F[n, i]; s[i] = S[n, i] }
          mt = med(t, k); mc = med(c, k); mf = med(f, k); ms = med(s, k)
          if (runs > 1)
            printf "  %27s %9d %9.4f %9s %9s [%7s .. %7s] %6s\n", "", n, mt, mc, mf, f[1], f[k],
                   ms == "-" ? "" : sprintf("%.1f%%", ms) > sum
          printf "{\"nodes\": %s, \"edges\": %s, \"sweeps\": %s, \"residual\": %s, \"processes\": %d, \"seconds\": %s%s%s%s}\n",
                 n, m[n], sw[n], r[n], k, mt, mc == "-" ? "" : ", \"cpu_seconds\": " mc,
                 mf == "-" ? "" : sprintf(", \"first_seconds\": %s, \"first_seconds_min\": %s, \"first_seconds_max\": %s", mf, f[1], f[k]),
                 ms == "-" ? "" : ", \"steal_percent\": " ms
        }
      }' "$work/rank.rows" >"$work/rank.json"
  if [ -f "$work/rank.sum" ]; then cat "$work/rank.sum"; fi
  while read -r line; do
    rank_json+=("$line")
  done <"$work/rank.json"
}

# scale_report: report time at a quarter, half and all of ITERS.
report_json=()
scale_report() {
  echo
  echo "report time against trace length"
  local q
  for q in 4 2 1; do
    local it=$((iters / q)) f=$work/len$q.data
    local n=$((it * 24 + 1))
    "$rp" record -o "$f" -- "$bin/workload_instr" "$it" >/dev/null 2>&1 || die "record of $it iterations failed"
    mruns=$ana_runs measure "len$q" "$n" "$rp" report -i "$f" --limit 5
    local ns kb=0
    ns=$(calc "${med[len$q]} * 1000000000 / $n" %.2f)
    # the analyzer's peak RSS, which must not grow with the trace
    [ -x /usr/bin/time ] && kb=$(/usr/bin/time -f %M "$rp" report -i "$f" --limit 5 2>&1 >/dev/null | tail -1)
    printf '  %10d calls  %10d bytes  report %8.3f s  %6.2f ns per call  max RSS %6d KiB%s\n' "$n" \
      "$(stat -c %s "$f")" "${med[len$q]}" "$ns" "$kb" "${stl[len$q]:+  steal ${stl[len$q]}%}"
    report_json+=("{\"calls\": $n, \"bytes\": $(stat -c %s "$f"), \"median_s\": ${med[len$q]}, \"ns_per_call\": $ns, \"max_rss_kb\": $kb${stl[len$q]:+, \"steal_percent\": ${stl[len$q]}}}")
  done
}

# scale_memory: VmRSS of bench_threads with N threads, without the recorder,
# under rankprof with idle threads and with recording threads.
mem_json=()
# rss CMD...: the rss_kb that bench_threads printed; fails the bench if none.
rss() {
  local line
  line=$("$@" 2>"$work/rss.err") || { cat "$work/rss.err" >&2; die "memory: '$*' failed"; }
  [[ $line =~ rss_kb\ ([0-9]+) ]] || die "memory: '$*' printed '$line'"
  echo "${BASH_REMATCH[1]}"
}
scale_memory() {
  [ -x "$bin/bench_threads" ] || { echo "  memory: skipped: bench_threads is not built" >&2; return; }
  local k=100000 n first=1 last
  echo
  echo "recorder memory: VmRSS (KiB) with N threads alive, $k calls each when recording"
  printf '  %8s %12s %14s %14s\n' threads "no recorder" "rankprof idle" "rankprof busy"
  local ns=(1 4 16)
  [ "$quick" = 1 ] && ns=(1 4)
  declare -A r0 r1 r2
  for n in "${ns[@]}"; do
    r0[$n]=$(rss "$bin/bench_threads" "$n" "$k")
    r1[$n]=$(rss "$rp" record -o "$work/mem.data" -- "$bin/bench_threads" "$n" 0)
    r2[$n]=$(rss "$rp" record -o "$work/mem.data" -- "$bin/bench_threads" "$n" "$k")
    printf '  %8d %12d %14d %14d\n' "$n" "${r0[$n]}" "${r1[$n]}" "${r2[$n]}"
    mem_json+=("{\"threads\": $n, \"rss_kb_none\": ${r0[$n]}, \"rss_kb_idle\": ${r1[$n]}, \"rss_kb_recording\": ${r2[$n]}}")
    last=$n
  done
  first=${ns[0]}
  # per thread: the growth from the first to the last N, less the program's own
  mem_per_thread=$(calc "((${r2[$last]} - ${r2[$first]}) - (${r0[$last]} - ${r0[$first]})) / ($last - $first)" %.1f)
  mem_idle=$((r1[$first] - r0[$first]))
  echo "  recorder: $mem_per_thread KiB per recording thread; $mem_idle KiB loaded with ${first} idle thread"
}

# ---- a service under top -------------------------------------------------------

# svc_once MODE N: one run of tests/progs/server.c in direct mode answering N
# requests of a client that waits for each answer, MODE alone, or top1 /
# top10: `rankprof top -b` refreshing every 1 s / 0.1 s meanwhile; prints
# "REQUESTS_PER_S TOP_CPU_S REFRESHES".
svc_once() {
  local mode=$1 n=$2 pid port i t0 t1 topp=
  "$rp" record --mode direct -o "$work/svc.data" -- "$build/tests/prog_server" >"$work/svc.out" 2>&1 &
  local rec=$!
  for i in $(seq 100); do grep -q '^pid' "$work/svc.out" 2>/dev/null && break; sleep 0.05; done
  pid=$(awk '/^pid/ {print $2}' "$work/svc.out")
  port=$(awk '/^pid/ {print $4}' "$work/svc.out")
  [ -n "$pid" ] || die "service: the server did not start: $(cat "$work/svc.out")"
  if [ "$mode" != alone ]; then
    local d=1
    [ "$mode" = top10 ] && d=0.1
    (TIMEFORMAT='%U %S'; { time "$rp" top -b -d "$d" "$pid" >"$work/top.out" 2>&1; } 2>"$work/top.time") &
    topp=$!
    for i in $(seq 100); do # (its first table: top is running before the client starts)
      grep -q '^rankprof:' "$work/top.out" 2>/dev/null && break
      sleep 0.05
    done
  fi
  t0=$EPOCHREALTIME
  python3 "$src/tests/progs/client.py" "$port" "$n" || die "service: the client failed"
  t1=$EPOCHREALTIME
  python3 "$src/tests/progs/client.py" "$port" 0 quit || die "service: quit failed"
  wait "$rec" || die "service: record failed: $(tail -2 "$work/svc.out")"
  if [ -n "$topp" ]; then
    wait "$topp" || true # (top's status when the process it watches ends is not the point)
    printf '%s %s %s\n' "$(calc "$n / ($t1 - $t0)" %.1f)" \
      "$(awk '{ printf "%.4f", $1 + $2 }' "$work/top.time")" "$(grep -c '^rankprof:' "$work/top.out" || true)"
  else
    printf '%s 0 0\n' "$(calc "$n / ($t1 - $t0)" %.1f)"
  fi
}

# scale_service: what watching a service costs it, on tests/progs/server.c
# (about 1 ms of work per request, two workers): requests per second alone
# and with `rankprof top -b` at one and at ten refreshes a second, runs
# interleaved; top's own CPU per refresh.
svc_json=()
scale_service() {
  [ -x "$build/tests/prog_server" ] || { echo "service: skipped: tests/progs/server.c is not built" >&2; return 0; }
  command -v python3 >/dev/null || { echo "service: skipped: no python3 for the client" >&2; return 0; }
  local n=1500 rep m r c k
  [ "$quick" = 1 ] && n=100
  local -A R C K
  for ((rep = 0; rep < runs; rep++)); do
    for m in alone top1 top10; do
      read -r r c k < <(svc_once "$m" "$n") || true
      [ -n "$r" ] || die "service: the $m run gave no numbers (see $work/svc.out, $work/top.out)"
      R[$m]+="$r " C[$m]+="$c " K[$m]+="$k "
    done
  done
  echo
  echo "a service watched by top: tests/progs/server.c in direct mode, $n requests one at a time; median of $runs runs, interleaved"
  printf '  %-22s %12s %18s %10s %16s\n' "" "requests/s" "[min .. max]" "x alone" "top CPU/refresh"
  local base
  base=$(printf '%s\n' ${R[alone]} | median)
  for m in alone top1 top10; do
    local rm cm km per="-" lab
    rm=$(printf '%s\n' ${R[$m]} | median)
    cm=$(printf '%s\n' ${C[$m]} | median)
    km=$(printf '%s\n' ${K[$m]} | median)
    case $m in alone) lab="alone" ;; top1) lab="top -b -d 1" ;; top10) lab="top -b -d 0.1" ;; esac
    [ "$m" != alone ] && [ "${km%.*}" -gt 0 ] && per="$(calc "$cm * 1000 / $km" %.2f) ms"
    printf '  %-22s %12.1f %18s %10s %16s\n' "$lab" "$rm" \
      "[$(printf '%s\n' ${R[$m]} | sort -g | sed -n 1p) .. $(printf '%s\n' ${R[$m]} | sort -g | tail -1)]" \
      "$(calc "$rm / $base" %.3f)" "$per"
    svc_json+=("{\"mode\": \"$m\", \"requests\": $n, \"requests_per_s\": $rm, \"x_alone\": $(calc "$rm / $base" %.4f), \"top_cpu_s\": $cm, \"refreshes\": $km}")
  done
}

# scale_micro: the per-event micro benchmarks, each the best of $micro_runs
# runs: bench_locks (a recorded lock event against a recorded function
# event, issue 5), bench_funcs (a function switched off by name) and
# bench_points (a switched-off profile point; both with a budget of 3 ns).
micro_json=()
# best FILE KEY: the smallest value that follows KEY on FILE's lines
best() { awk -v k="$2" '{ for (i = 1; i < NF; i++) if ($i == k) { v = $(i + 1) + 0; if (b == "" || v < b) b = v } }
  END { if (b == "") exit 1; print b }' "$1"; }
# ---- threads -----------------------------------------------------------------

# mt_once KIND T IT: one run of workload_mt with T threads of IT iterations,
# KIND plain | floor | trace | drop; prints "WALL_S CPU_S LOST" (CPU: user +
# system of every thread and process of the run, the writer included;
# LOST: the events record says it lost).  Fails if the run fails.
mt_once() {
  local kind=$1 t=$2 it=$3 cmd=() tf=$work/mt.time lost=0
  case $kind in
  plain) cmd=("$bin/workload_mt" "$t" "$it") ;;
  floor) cmd=(env LD_PRELOAD="$bin/libbench_floor.so" "$bin/workload_mt" "$t" "$it") ;;
  trace) cmd=("$rp" record -o "$work/mt.data" -- "$bin/workload_mt" "$t" "$it") ;;
  drop) cmd=("$rp" record --drop -o "$work/mt.data" -- "$bin/workload_mt" "$t" "$it") ;;
  esac
  local TIMEFORMAT='%R %U %S'
  { time "${cmd[@]}" >"$work/mt.log" 2>&1; } 2>"$tf" || die "threads: $kind, $t threads: '${cmd[*]}' failed: $(tail -2 "$work/mt.log")"
  grep -q "calls $((t * it * 24)) " "$work/mt.log" || die "threads: $kind, $t threads: $(head -1 "$work/mt.log")"
  [ "$kind" = drop ] && lost=$(sed -n 's/.*, \([0-9]*\) events lost.*/\1/p' "$work/mt.log" | tail -1)
  awk -v l="${lost:-0}" '{ printf "%s %.6f %s\n", $1, $2 + $3, l }' "$tf"
}

# median of the numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }

# scale_threads: trace mode with 1, 2, 4 and 8 threads sharing the same
# total work (ITERS iterations of 24 calls), against the plain program and
# the floor, runs interleaved; wall overhead and total CPU per call, and
# the events lost with --drop.
scale_threads() {
  [ -x "$bin/workload_mt" ] || { echo "threads: skipped: $bin/workload_mt is missing" >&2; return 0; }
  local ts=(1 2 4 8) kinds=(plain trace drop) k t rep it r w c l
  [ -f "$bin/libbench_floor.so" ] && kinds=(plain floor trace drop)
  local -A W C L
  for ((rep = 0; rep < runs; rep++)); do
    for t in "${ts[@]}"; do
      it=$((iters / t))
      for k in "${kinds[@]}"; do
        read -r w c l < <(mt_once "$k" "$t" "$it")
        W[$k.$t]+="$w " C[$k.$t]+="$c " L[$k.$t]+="$l "
      done
    done
  done
  echo
  echo "threads (workload_mt: T threads, $iters iterations of 24 calls in all; median of $runs, runs interleaved; load $(cut -d' ' -f1 /proc/loadavg), $(nproc) cpus)"
  echo "  hooks: the instrumented program, not recorded (glibc's empty hooks); +ns: added wall time per call;"
  echo "  cpu: user + system time per call of the whole run, every thread (the writer's included)"
  printf '  %-3s %10s %10s %10s %8s %10s %10s %10s %8s %12s\n' T "hooks ns" "floor +ns" "trace +ns" "x floor" \
    "hooks cpu" "floor cpu" "trace cpu" "x floor" "--drop lost"
  for t in "${ts[@]}"; do
    local n=$((t * (iters / t) * 24)) m=()
    for k in "${kinds[@]}"; do
      m+=("$(tr ' ' '\n' <<<"${W[$k.$t]}" | grep . | median)" "$(tr ' ' '\n' <<<"${C[$k.$t]}" | grep . | median)")
    done
    local pw pc fw="" fc="" tw tc lost
    pw=$(calc "${m[0]} * 1e9 / $n" %.2f) pc=$(calc "${m[1]} * 1e9 / $n" %.2f)
    if [ "${kinds[1]}" = floor ]; then
      fw=$(calc "(${m[2]} - ${m[0]}) * 1e9 / $n" %.2f) fc=$(calc "${m[3]} * 1e9 / $n" %.2f)
      tw=$(calc "(${m[4]} - ${m[0]}) * 1e9 / $n" %.2f) tc=$(calc "${m[5]} * 1e9 / $n" %.2f)
    else
      tw=$(calc "(${m[2]} - ${m[0]}) * 1e9 / $n" %.2f) tc=$(calc "${m[3]} * 1e9 / $n" %.2f)
    fi
    lost=$(tr ' ' '\n' <<<"${L[drop.$t]}" | grep . | median)
    local xw="" xc="" lp
    lp=$(calc "100 * $lost / (2 * $n)" %.2f)
    if [ -n "$fw" ]; then
      xw=$(calc "$tw / $fw" %.2f)
      xc=$(calc "($tc - $pc) / ($fc - $pc)" %.2f)
    fi
    printf '  %-3s %10s %10s %10s %8s %10s %10s %10s %8s %11s%%\n' "$t" "$pw" "$fw" "$tw" "$xw" "$pc" "$fc" "$tc" "$xc" "$lp"
    thr_json+=("$(printf '{"threads": %s, "calls": %s, "hooks_ns_per_call": %s, "floor_added_ns_per_call": %s, "trace_added_ns_per_call": %s, "hooks_cpu_ns_per_call": %s, "floor_cpu_ns_per_call": %s, "trace_cpu_ns_per_call": %s, "drop_lost_percent": %s}' \
      "$t" "$n" "$pw" "${fw:-null}" "$tw" "$pc" "${fc:-null}" "$tc" "$lp")")
  done
  echo "  x floor: trace's added wall time / the floor's; cpu: trace's added CPU / the floor's (added: minus hooks)"
}

# ---- a real program ------------------------------------------------------------

# scale_real: the Lua interpreter (github.com/lua/lua, onelua.c: one
# compiler run) built at bench time in REAL_DIR, never committed, four ways:
# GCC and clang plain, GCC -finstrument-functions and clang
# -finstrument-functions-after-inlining; runs a script of recursive calls
# and a table sort: plain, instrumented not recorded, recorded (trace
# mode), runs interleaved.  ns added per call = (recorded - not recorded) /
# the calls the report counts.  Source: REAL_SRC (a Lua checkout), else a
# shallow git clone; when neither works, it says why.
scale_real() {
  local dir=${REAL_DIR:-/tmp/rankprof-real} src=${REAL_SRC:-} v k rep
  echo
  if [ -z "$src" ]; then
    src=$dir/src
    if [ ! -f "$src/onelua.c" ]; then
      if [ "$quick" = 1 ]; then
        echo "real program (Lua): skipped: quick mode does not download (set REAL_SRC to a Lua checkout)"
        return 0
      fi
      rm -rf "$src"
      git clone -q --depth 1 https://github.com/lua/lua "$src" >"$dir.clone.log" 2>&1 || {
        echo "real program (Lua): skipped: no REAL_SRC and 'git clone https://github.com/lua/lua' failed ($(tail -1 "$dir.clone.log"))"
        return 0
      }
    fi
  fi
  [ -f "$src/onelua.c" ] || die "real: $src/onelua.c is missing (REAL_SRC must be a checkout of github.com/lua/lua)"
  mkdir -p "$dir"
  local -A cc=([gcc_plain]="gcc" [gcc_instr]="gcc -finstrument-functions" [clang_plain]="clang"
    [clang_instr]="clang -finstrument-functions-after-inlining")
  for v in gcc_plain gcc_instr clang_plain clang_instr; do
    command -v "${cc[$v]%% *}" >/dev/null || continue
    [ "$dir/lua_$v" -nt "$src/onelua.c" ] && continue
    ${cc[$v]} -O2 -g -DLUA_USE_LINUX -o "$dir/lua_$v" "$src/onelua.c" -lm 2>"$dir/$v.log" ||
      die "real: '${cc[$v]}' did not build Lua, see $dir/$v.log"
  done
  local n=$((quick == 1 ? 18 : 27))
  cat >"$dir/work.lua" <<LUA
local function fib(n) if n < 2 then return n end return fib(n - 1) + fib(n - 2) end
local t = {}
for i = 1, 20000 * $n do t[i] = tostring(i * 7919 % 1000003) end
table.sort(t)
print(fib($n), #t)
LUA
  local -A T
  for ((rep = 0; rep < runs; rep++)); do
    for v in gcc_plain gcc_instr clang_plain clang_instr; do
      [ -x "$dir/lua_$v" ] || continue
      for k in run rec; do
        [ "$k" = rec ] && [[ $v == *plain ]] && continue
        local t0=$EPOCHREALTIME
        if [ "$k" = rec ]; then
          "$rp" record -o "$work/lua_$v.data" -- "$dir/lua_$v" "$dir/work.lua" >"$work/lua.log" 2>&1
        else
          "$dir/lua_$v" "$dir/work.lua" >"$work/lua.log" 2>&1
        fi || die "real: lua_$v ($k) failed: $(tail -1 "$work/lua.log")"
        T[$v.$k]+="$(calc "$EPOCHREALTIME - $t0") "
      done
    done
  done
  echo "real program: Lua ($src), fib($n) + sort of $((20000 * n)) strings; median of $runs, interleaved; load $(cut -d' ' -f1 /proc/loadavg)"
  printf '  %-48s %9s %9s %9s %12s %12s\n' build "plain s" "hooks s" "recorded s" calls "rec +ns/call"
  local c
  for c in gcc clang; do
    [ -x "$dir/lua_${c}_instr" ] || { echo "  $c: skipped: not installed (scripts/deps.sh bench installs clang)"; continue; }
    local p i r calls
    p=$(tr ' ' '\n' <<<"${T[${c}_plain.run]}" | grep . | median)
    i=$(tr ' ' '\n' <<<"${T[${c}_instr.run]}" | grep . | median)
    r=$(tr ' ' '\n' <<<"${T[${c}_instr.rec]}" | grep . | median)
    calls=$("$rp" report -i "$work/lua_${c}_instr.data" --format csv | awk -F, 'NR > 1 && $2 == "func" { s += $3 } END { print s + 0 }')
    [ "$calls" -gt 0 ] || die "real: the $c build recorded no calls"
    printf '  %-48s %9.3f %9.3f %9.3f %12s %12.2f\n' "${cc[${c}_instr]} -O2" "$p" "$i" "$r" "$calls" \
      "$(calc "($r - $i) * 1e9 / $calls")"
    real_json+=("$(printf '{"build": "%s -O2", "plain_s": %s, "instrumented_s": %s, "recorded_s": %s, "calls": %s, "recorded_added_ns_per_call": %s}' \
      "${cc[${c}_instr]}" "$p" "$i" "$r" "$calls" "$(calc "($r - $i) * 1e9 / $calls" %.3f)")")
  done
  echo "  hooks: built with the hooks, not recorded; rec +ns/call: (recorded - hooks) / the calls the report counts"
}

scale_micro() {
  local b f i k v
  for b in bench_locks bench_funcs bench_points; do
    [ -x "$bin/$b" ] || { echo "  micro: skipped: $b is not built" >&2; return; }
  done
  echo
  echo "micro benchmarks (best of $micro_runs runs; ns)"
  : >"$work/locks.txt"; : >"$work/funcs.txt"; : >"$work/points.txt"
  for ((i = 0; i < micro_runs; i++)); do
    RANKPROF_BUFSIZE=67108864 RANKPROF_FLUSH_MS=0 "$rp" record -o "$work/locks.data" -- \
      "$bin/bench_locks" 2>/dev/null | grep '^lock_pair_ns' >>"$work/locks.txt" || die "micro: bench_locks failed"
    RANKPROF_OUTPUT=/dev/null "$bin/bench_funcs" "$micro_iters" >>"$work/funcs.txt" 2>/dev/null || die "micro: bench_funcs failed"
    RANKPROF_OUTPUT=/dev/null "$bin/bench_points" "$micro_iters" >>"$work/points.txt" 2>/dev/null || die "micro: bench_points failed"
  done
  local items=("locks lock_event_ns lock_event" "locks func_event_ns func_event" "locks ratio lock_func_ratio"
    "funcs plain_call func_plain_call" "funcs class_off func_class_off" "funcs func_off func_off_by_name"
    "funcs recorded_filtered func_recorded_filter_active" "points empty_loop point_empty_loop"
    "points site_off point_site_off" "points class_off point_class_off")
  for f in "${items[@]}"; do
    set -- $f
    v=$(best "$work/$1.txt" "$2") || die "micro: no '$2' in the output of bench_$1"
    printf '  %-30s %8s\n' "$3" "$v"
    micro_json+=("\"$3\": $v")
  done
  echo "  (lock_event and func_event: ns added per recorded event, same run; func_off_by_name against"
  echo "   func_class_off and func_plain_call; point_site_off against point_empty_loop)"
}

# ---- output ------------------------------------------------------------------

ns() { calc "$1 * 1000000000 / $2" %.4f; }

# derive: per measured row, ns per call, overhead over the baseline, the
# ratios to the baseline and to uftrace's overhead, bytes per call.
declare -A per over xbase xuf xfl bpc
derive() {
  local base_ns uf_over="" fl_over="" r c
  base_ns=$(ns "${med[baseline]}" "${ncalls[baseline]}")
  [ "${status[floor]:-}" = ok ] && fl_over=$(calc "$(ns "${med[floor]}" "${ncalls[floor]}") - $base_ns")
  [ "${status[uftrace]:-}" = ok ] && uf_over=$(calc "$(ns "${med[uftrace]}" "${ncalls[uftrace]}") - $base_ns")
  for r in "${rows[@]}"; do
    [ "${status[$r]}" = ok ] || continue
    c=${ncalls[$r]}
    per[$r]=$(ns "${med[$r]}" "$c")
    case " ${ana[*]} " in *" $r "*) continue ;; esac
    over[$r]=$(calc "${per[$r]} - $base_ns" %.4f)
    xbase[$r]=$(calc "${per[$r]} / $base_ns" %.3f)
    [ -n "$uf_over" ] && [ "$r" != baseline ] && xuf[$r]=$(calc "${over[$r]} / $uf_over" %.3f)
    [ -n "$fl_over" ] && [ "$r" != baseline ] && xfl[$r]=$(calc "${over[$r]} / $fl_over" %.3f)
    [ -n "${bytes[$r]:-}" ] && bpc[$r]=$(calc "${bytes[$r]} / $c" %.3f)
  done
  return 0
}

print_table() {
  echo
  printf '%-36s %9s %20s %9s %9s %8s %8s %8s %9s %6s\n' what "median" "[min .. max]" "ns/call" "overhead" \
    "x base" "x floor" "x uftr" "B/call" "steal"
  local r
  for r in "${rows[@]}"; do
    case " ${ana[*]} " in *" $r "*) continue ;; esac
    if [ "${status[$r]}" != ok ]; then
      printf '%-36s %s: %s\n' "${label[$r]}" "${status[$r]}" "${note[$r]}"
      continue
    fi
    local xu="" b="" xf=""
    [ -n "${xuf[$r]:-}" ] && xu=$(printf '%.2f' "${xuf[$r]}")
    [ -n "${xfl[$r]:-}" ] && xf=$(printf '%.2f' "${xfl[$r]}")
    [ -n "${bpc[$r]:-}" ] && b=$(printf '%.2f' "${bpc[$r]}")
    printf '%-36s %7.3f s [%7.3f .. %7.3f] %9.2f %9.2f %8.1f %8s %8s %9s %6s%s\n' "${label[$r]}" "${med[$r]}" \
      "${mn[$r]}" "${mx[$r]}" "${per[$r]}" "${over[$r]}" "${xbase[$r]}" "$xf" "$xu" "$b" "${stl[$r]:+${stl[$r]}%}" \
      "${note[$r]:+  (${note[$r]})}"
  done
  echo
  echo "analysis of the trace above (per recorded call), median of $runs (rankprof) or $ana_runs (the others):"
  for r in "${ana[@]}"; do
    printf '  %-22s %7.3f s [%7.3f .. %7.3f] %9.2f ns/call%s%s\n' "${label[$r]}" "${med[$r]}" "${mn[$r]}" \
      "${mx[$r]}" "${per[$r]}" "${stl[$r]:+  steal ${stl[$r]}%}" \
      "$([ "$r" != report_rankprof ] && [ -n "${per[report_rankprof]:-}" ] &&
        printf '  (rankprof takes %.3f x this)' "$(calc "${per[report_rankprof]} / ${per[$r]}")")"
  done
}

# json_row NAME: one row as a JSON object (numbers bare, text quoted).
json_row() {
  local r=$1 k
  printf '{"name": "%s", "label": "%s", "status": "%s"' "$r" "${label[$r]}" "${status[$r]}"
  [ -n "${note[$r]}" ] && printf ', "note": "%s"' "${note[$r]//\"/\'}"
  if [ "${status[$r]}" = ok ]; then
    printf ', "calls": %s, "runs": %s, "median_s": %s, "min_s": %s, "max_s": %s, "ns_per_call": %s' \
      "${ncalls[$r]}" "${nruns[$r]}" "${med[$r]}" "${mn[$r]}" "${mx[$r]}" "${per[$r]}"
    [ -n "${bytes[$r]:-}" ] && printf ', "bytes": %s' "${bytes[$r]}"
    [ -n "${stl[$r]:-}" ] && printf ', "steal_percent": %s' "${stl[$r]}"
    for k in over:overhead_ns_per_call xbase:x_baseline xfl:x_floor xuf:x_uftrace bpc:bytes_per_call; do
      local -n v=${k%%:*}
      [ -n "${v[$r]:-}" ] && printf ', "%s": %s' "${k#*:}" "${v[$r]}"
      unset -n v
    done
  fi
  printf '}'
}

# join SEP ITEMS...
join() {
  local s=$1
  shift
  [ $# -gt 0 ] || return 0
  local first=$1
  shift
  printf '%s' "$first" "${@/#/$s}"
}

write_json() {
  local r list=() alist=()
  for r in "${rows[@]}"; do
    case " ${ana[*]} " in *" $r "*) alist+=("$(json_row "$r")") ;; *) list+=("$(json_row "$r")") ;; esac
  done
  {
    printf '{\n"machine": {"cpu": "%s", "cpus": %s, "load_average": %s, "kernel": "%s", "cc": "%s"},\n' \
      "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//; s/"/'"'"'/g')" "$(nproc)" \
      "$(cut -d' ' -f1 /proc/loadavg)" "$(uname -r)" "$(cc --version | sed -n 1p | sed 's/"/'"'"'/g')"
    printf '"workload": {"iterations": %s, "calls": %s, "runs": %s, "analysis_runs": %s, "quick": %s},\n' \
      "$iters" "$calls" "$runs" "$ana_runs" \
      "$([ "$quick" = 1 ] && echo true || echo false)"
    printf '"rows": [\n  %s\n],\n' "$(join $',\n  ' "${list[@]}")"
    printf '"analysis": [\n  %s\n],\n' "$(join $',\n  ' "${alist[@]}")"
    printf '"scaling": {\n'
    printf '  "rank": [%s],\n' "$(join ', ' "${rank_json[@]}")"
    printf '  "report": [%s],\n' "$(join ', ' "${report_json[@]}")"
    printf '  "memory": [%s],\n' "$(join ', ' "${mem_json[@]}")"
    printf '  "threads": [%s],\n' "$(join ', ' "${thr_json[@]}")"
    printf '  "real": [%s],\n' "$(join ', ' "${real_json[@]}")"
    printf '  "service": [%s],\n' "$(join ', ' "${svc_json[@]}")"
    printf '  "micro": {%s}' "$(join ', ' "${micro_json[@]}")"
    [ -n "${mem_per_thread:-}" ] && printf ',\n  "memory_kb_per_recording_thread": %s' "$mem_per_thread"
    printf '\n}\n}\n'
  } >"$out/results.json"
}

# ---- main --------------------------------------------------------------------

load=$(cut -d' ' -f1 /proc/loadavg)
[ "${load%%.*}" -ge 1 ] && echo "warning: load average $load: numbers will be noisy" >&2
echo "workload: dispatch + 8 leaves + fib(5), $iters iterations, $calls calls; median of $runs runs"
row_baseline
for r in instr_noop floor rankprof rankprof_nofunc rankprof_off rankprof_ring rankprof_throttle rankprof_direct uftrace gprof callgrind tracy; do
  skipped "$r" || run_row "$r" "row_$r"
done
# the traces just recorded are on disk before anything reads them: a
# writeback of 145 MB in the background made the first analysis row slower
sync
run_row report_rankprof ana_rankprof
run_row report_uftrace ana_uftrace
run_row report_tracy ana_tracy
derive
print_table
skipped threads || run_row threads scale_threads
[ "${status[threads]:-}" = failed ] && echo "threads: failed: ${note[threads]}"
skipped real || run_row real scale_real
[ "${status[real]:-}" = failed ] && echo "real program: failed: ${note[real]}"
skipped rank || scale_rank
skipped report || scale_report
skipped memory || scale_memory
skipped service || run_row service scale_service
[ "${status[service]:-}" = failed ] && echo "service: failed: ${note[service]}"
skipped micro || scale_micro
write_json
echo
echo "machine-readable: $out/results.json"
exit "${row_failed:-0}"

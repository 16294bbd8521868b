#!/usr/bin/env bash
# bench.sh - what `make bench` runs: the 48M-call workload (bench/workload.c)
# uninstrumented, under rankprof (trace mode; function class switched off),
# under uftrace when it is installed, and with gprof; then the analysis time
# of `rankprof report` against `uftrace report`, and the ranking benchmark.
#
# Every timing is the whole process (start-up, recording, final flush), the
# median of RUNS runs (default 5) with min and max.  Results: a table on
# stdout and $build/bench/results.json.
#
#   RUNS=5 ITERS=2000000 scripts/bench.sh build
set -euo pipefail
build=${1:-build}
runs=${RUNS:-5}
iters=${ITERS:-2000000}
calls=$((iters * 24 + 1))
work=$(mktemp -d /tmp/rankprof-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
rp=$(realpath "$build/rankprof")
wl=$(realpath "$build/bench")

if [ "$(cat /proc/loadavg | cut -d' ' -f1 | cut -d. -f1)" -ge 1 ]; then
  echo "warning: load average $(cut -d' ' -f1 /proc/loadavg): numbers will be noisy" >&2
fi

# time_runs NAME CMD...: runs CMD $runs times, records median/min/max seconds.
declare -A med mn mx
time_runs() {
  local name=$1; shift
  local ts=()
  for _ in $(seq "$runs"); do
    local t0 t1
    t0=$(date +%s.%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s.%N)
    ts+=("$(echo "$t1 - $t0" | bc -l)")
  done
  local sorted
  sorted=$(printf '%s\n' "${ts[@]}" | sort -g)
  med[$name]=$(echo "$sorted" | sed -n "$(((runs + 1) / 2))p")
  mn[$name]=$(echo "$sorted" | head -1)
  mx[$name]=$(echo "$sorted" | tail -1)
}

ns_per_call() { echo "scale=2; $1 * 1000000000 / $calls" | bc -l; }

echo "workload: dispatch + 8 leaves + fib(5), $iters iterations, $calls calls; $runs runs each"
time_runs baseline "$wl/workload_plain" "$iters"
time_runs instr_noop "$wl/workload_instr" "$iters"
time_runs rankprof "$rp" record -o "$work/rp.data" -- "$wl/workload_instr" "$iters"
rp_bytes=$(stat -c %s "$work/rp.data")
time_runs rankprof_off env RANKPROF_CLASSES=point "$rp" record -o "$work/off.data" -- "$wl/workload_instr" "$iters"
time_runs report "$rp" report -i "$work/rp.data" --limit 5
have_uftrace=0
if command -v uftrace >/dev/null; then
  have_uftrace=1
  time_runs uftrace uftrace record -d "$work/uftrace.data" "$wl/workload_instr" "$iters"
  uf_bytes=$(du -sb "$work/uftrace.data" | cut -f1)
  time_runs uftrace_report uftrace report -d "$work/uftrace.data"
fi
time_runs gprof bash -c "cd '$work' && exec '$wl/workload_pg' $iters"  # gmon.out lands in $work

base=${med[baseline]}
row() { # name label
  local n=$1 label=$2 t=${med[$1]}
  local over
  over=$(echo "$t - $base" | bc -l)
  printf '%-34s %8.3f s  [%6.3f .. %6.3f]  %7.2f ns/call  overhead %7.2f ns/call\n' \
    "$label" "$t" "${mn[$n]}" "${mx[$n]}" "$(ns_per_call "$t")" "$(ns_per_call "$over")"
}
echo
row baseline "uninstrumented (-O2)"
row instr_noop "-finstrument-functions, no recorder"
row rankprof "rankprof record (trace mode)"
row rankprof_off "rankprof, function class off"
[ $have_uftrace = 1 ] && row uftrace "uftrace record"
row gprof "gprof (-pg)"
echo
printf 'bytes on disk per call: rankprof %.2f' "$(echo "$rp_bytes / $calls" | bc -l)"
[ $have_uftrace = 1 ] && printf ', uftrace %.2f' "$(echo "$uf_bytes / $calls" | bc -l)"
echo
printf 'analysis: rankprof report %.3f s = %.2f ns/call' "${med[report]}" "$(ns_per_call "${med[report]}")"
[ $have_uftrace = 1 ] && printf ', uftrace report %.3f s = %.2f ns/call' "${med[uftrace_report]}" "$(ns_per_call "${med[uftrace_report]}")"
echo
if [ $have_uftrace = 1 ]; then
  printf 'ratios: rankprof/uftrace recording overhead %.2f, report %.3f\n' \
    "$(echo "(${med[rankprof]} - $base) / (${med[uftrace]} - $base)" | bc -l)" \
    "$(echo "${med[report]} / ${med[uftrace_report]}" | bc -l)"
fi
if [ -x "$wl/bench_rank" ]; then
  echo
  "$wl/bench_rank"
fi

{
  printf '{"calls": %s, "runs": %s' "$calls" "$runs"
  for k in "${!med[@]}"; do
    printf ', "%s": {"median_s": %s, "min_s": %s, "max_s": %s}' "$k" "${med[$k]}" "${mn[$k]}" "${mx[$k]}"
  done
  printf ', "rankprof_bytes": %s' "$rp_bytes"
  [ $have_uftrace = 1 ] && printf ', "uftrace_bytes": %s' "$uf_bytes"
  printf '}\n'
} > "$build/bench/results.json"
echo "machine-readable: $build/bench/results.json"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# fuzz.sh [SECONDS] - fuzzes the trace reader and the report pipeline
# (tests/fuzz/fuzz_trace.c) with libFuzzer for SECONDS (default 60).
#
# Builds only the fuzz target, with clang and -fsanitize=fuzzer,address,
# undefined, in $FUZZ_BUILD (default build-fuzz), and runs it on a copy of
# tests/fuzz/corpus, so the committed corpus is never modified.  Exits 0 if
# nothing was found; otherwise libFuzzer's report is above and the input
# that failed is in $FUZZ_BUILD/fuzz-work/artifacts: fix the bug, then add
# the input to tests/fuzz/corpus/ (fuzz_corpus replays it under ctest).
set -euo pipefail
cd "$(dirname "$0")/.."
secs=${1:-60}
build=${FUZZ_BUILD:-build-fuzz}
command -v clang >/dev/null || { echo "fuzz.sh: clang is needed (scripts/deps.sh ci)" >&2; exit 1; }
gen=$(command -v ninja >/dev/null && echo "-G Ninja" || true)
CC=clang cmake -S . -B "$build" $gen -DCMAKE_BUILD_TYPE=RelWithDebInfo -DRP_FUZZ=ON >/dev/null
cmake --build "$build" --target fuzz_trace
work=$build/fuzz-work
rm -rf "$work"
mkdir -p "$work/corpus" "$work/artifacts"
cp tests/fuzz/corpus/* "$work/corpus/"
echo "fuzz.sh: fuzzing for ${secs}s from $(ls "$work/corpus" | wc -l) inputs"
"$build/tests/fuzz/fuzz_trace" -max_total_time="$secs" -timeout=20 -rss_limit_mb=2048 \
    -max_len=65536 -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" \
    2>"$work/log" || {
    tail -60 "$work/log" >&2
    echo "fuzz.sh: FAILED: the input is in $work/artifacts/ (add it to tests/fuzz/corpus/" \
        "once fixed)" >&2
    exit 1
}
grep -E "^stat::number_of_executed_units|^Done" "$work/log" || true
echo "fuzz.sh: no crash, hang or leak in ${secs}s"

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# demo.sh - what `make demo` shows: the firmware example recorded and ranked.
set -euo pipefail
build=${1:-build}
out=$build/demo
mkdir -p "$out"
echo "== rankprof record -- examples/firmware  (a scheduler, an I2C driver, a timer)"
"$build/rankprof" record -o "$out/firmware.data" -- "$build/examples/firmware"
echo
echo "== rankprof report  (ranked by standing probability)"
"$build/rankprof" report -i "$out/firmware.data" --limit 20
echo
echo "== rankprof graph sched_run  (how the dispatcher hands out its time)"
"$build/rankprof" graph -i "$out/firmware.data" sched_run || true
echo
echo "The trace is $out/firmware.data; try: $build/rankprof report -i $out/firmware.data --format json"

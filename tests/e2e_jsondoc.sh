#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_jsondoc.sh - every field `report --format json` writes is documented
# in docs/report-json.md (the JSON is a contract users' scripts rely on).
# Reports of programs that make the optional fields appear: prog_points
# (points, budgets and overruns, io, locks, instants, counters),
# prog_outside (waits outside the program's code, trace and direct mode),
# prog_runset (a run's set of files: processes), prog_waits; every key
# name, at any depth, must appear in the document as `name`.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_jsondoc RANKPROF PROGS RP_LIB
need_tools python3
export RANKPROF_LIB="$RP_LIB"
doc="$srcdir/docs/report-json.md"
[[ -f $doc ]] || fail "no $doc"

rec() { # NAME [record options] -- PROGRAM ARGS
    local name=$1
    shift
    "$RANKPROF" record -o "$tmp/$name.data" "$@" >"$tmp/$name.out" 2>&1 ||
        fail "record $name: $(cat "$tmp/$name.out")"
    "$RANKPROF" report -i "$tmp/$name.data" --format json >"$tmp/$name.json" 2>"$tmp/$name.err" ||
        fail "report $name: $(cat "$tmp/$name.err")"
}
rec points -- "$PROGS/prog_points" 36
rec outside -- "$PROGS/prog_outside" 5 5
rec outside_direct --mode direct -- "$PROGS/prog_outside" 5 5
rec runset -- "$PROGS/prog_runset"
rec waits -- "$PROGS/prog_waits" 10 nocancel

python3 - "$doc" "$tmp"/*.json <<'PY' || fail "fields not in docs/report-json.md"
import json, sys
doc = open(sys.argv[1]).read()
keys = {}
def walk(x, where):
    if isinstance(x, dict):
        for k, v in x.items():
            keys.setdefault(k, where)
            walk(v, where)
    elif isinstance(x, list):
        for v in x:
            walk(v, where)
for f in sys.argv[2:]:
    walk(json.load(open(f)), f)
missing = sorted(k for k in keys if f"`{k}`" not in doc)
for k in missing:
    print(f"e2e_jsondoc: `{k}` (in {keys[k]}) is not in docs/report-json.md", file=sys.stderr)
if len(keys) < 60:
    print(f"e2e_jsondoc: only {len(keys)} keys seen", file=sys.stderr)
sys.exit(1 if missing or len(keys) < 60 else 0)
PY
echo "e2e_jsondoc: every field documented: ok"
finish

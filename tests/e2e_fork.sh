#!/usr/bin/env bash
# e2e_fork.sh - a process that forks from a multi-threaded state: the parent
# keeps the trace file, the child writes its own NAME.PID, both exact.
set -euo pipefail
tmp=$(mktemp -d /tmp/rp_fork.XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "e2e_fork: FAIL: $*" >&2; exit 1; }

out=$("$RANKPROF" record -o "$tmp/f.data" -- "$PROGS/prog_forker" 2>/dev/null)
child=$(echo "$out" | sed -n 's/^child \([0-9]*\)$/\1/p')
[ -n "$child" ] || fail "no child pid printed: $out"
[ -f "$tmp/f.data.$child" ] || fail "no child trace $tmp/f.data.$child: $(ls "$tmp")"
"$RANKPROF" report -i "$tmp/f.data" --format json > "$tmp/p.json"
"$RANKPROF" report -i "$tmp/f.data.$child" --format json > "$tmp/c.json"
python3 - "$tmp/p.json" "$tmp/c.json" <<'PY' || fail "counts differ"
import json, sys
p = json.load(open(sys.argv[1])); c = json.load(open(sys.argv[2]))
calls = lambda r, n: sum(x["calls"] for x in r["nodes"] if x["name"] == n)
ok = True
for r, name, want in ((p, "work", 170), (p, "child_work", 0), (c, "child_work", 30), (c, "work", 30)):
    got = calls(r, name)
    if got != want:
        print(f"{name}: {got} calls, expected {want}", file=sys.stderr); ok = False
if p["threads"] != 2:
    print(f"parent threads {p['threads']}, expected 2", file=sys.stderr); ok = False
sys.exit(0 if ok else 1)
PY
echo "e2e_fork: parent and child ($child) traces exact: ok"

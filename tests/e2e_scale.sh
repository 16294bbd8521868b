#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_scale.sh - the analyzer at scale (docs/robustness.md, "Memory";
# docs/performance.md): traces of prog_scale (tests/progs/scale.c).
#
#   deep    rec() recursing 2,500,000 deep on one thread (deeper than the
#           recorder's 1 Mi-frame shadow stack, so the exits beyond carry
#           ids, and than the analyzer's former 2 Mi-frame limit): the
#           report has exactly N calls of rec, N - 1 of rec -> rec, none cut,
#           and rec's inclusive time is its outermost activation's, the edge
#           deep_main -> rec (the recursion test across the many chunks of
#           a stack too deep for snapshots); folded and pprof, whose paths
#           would hold over 2^30 frames, refuse and name --depth, and
#           folded -D 1000 writes paths of at most 1000 frames.  Its time, linear in the depth,
#           is a benchmark number (docs/performance.md), not tested here.
#   waves   2 threads at once, each recursing 100,000 deep 16 times: deep
#           stacks of several threads whose chunks alternate, going deep
#           and coming back (their stacks kept by the analyzer between
#           chunks, and given back: replay.c, "Deep stacks"): the same exact
#           counts and inclusive time; in both, every activation counted
#           once in the inclusive calls of each edge above it.
#   memory  200,000 distinct profile points, each called once: the peak RSS
#           of `report --format json` and of the table (`report`, every row
#           printed) (GNU time) stays within the documented bound, RPT_BOUND
#           bytes per id + 16 MiB, and that of the replay alone (`info`: no
#           ranking, no table) within REPLAY_BOUND bytes per id + 16 MiB
#           (docs/robustness.md, "Memory": an 88-byte node whose durations
#           are defaults when it was called once, a 48-byte edge, the
#           edges' index and the names; the ranking's arrays at the peak of
#           `report`).
#   memory_1m  1,000,000 such points, `report --format json` within
#           RPT_BOUND_1M and `info` within REPLAY_BOUND.  At 1 M ids every
#           page of the replay's arrays is written, and the ranking's
#           arrays in transparent huge pages move one run in several by 8
#           bytes per id: the bounds leave about 5 % for that.
#           Neither under the sanitizers, whose allocators keep freed memory
#           and add their own.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_scale RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB"
prog="$PROGS/prog_scale"

# --- deep, waves -----------------------------------------------------------
deep() { # N THREADS WAVES
    local n=$1 t=$2 w=$3
    "$RANKPROF" record -o "$tmp/deep.rp" -- "$prog" deep $n $t $w >"$tmp/deep.out" \
        2>"$tmp/deep.err" || fail "record deep $n $t $w: $(cat "$tmp/deep.err")"
    [[ $(grep -cx "deep $n" "$tmp/deep.out") == $((t * w)) ]] ||
        fail "prog_scale deep $n $t $w printed '$(cat "$tmp/deep.out")'"
    "$RANKPROF" report --format json -i "$tmp/deep.rp" >"$tmp/deep.json" 2>"$tmp/r.err" ||
        fail "report of a $n-deep recursion: $(cat "$tmp/r.err")"
    python3 - "$tmp/deep.json" $n $t $w <<'PY' || fail "deep $n $t $w: wrong report"
import json, sys
r, depth, t, w = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
n, outer = t * w * depth, t * w
node = {x["name"]: x for x in r["nodes"]}
edge = {(e["caller"], e["callee"]): e for e in r["edges"]}
bad = []
rec = node.get("rec")
if not rec:
    sys.exit("no node rec")
if rec["calls"] != n:
    bad.append(f"rec: {rec['calls']} calls, expected {n}")
if rec["cut"] or r["cut"] or r["unwound"] or r["unmatched_exits"] or r["lost_events"]:
    bad.append(f"cut {rec['cut']}/{r['cut']}, unwound {r['unwound']}, unmatched "
               f"{r['unmatched_exits']}, lost {r['lost_events']}: expected 0")
rr, dr = edge.get(("rec", "rec")), edge.get(("deep_main", "rec"))
if not rr or rr["calls"] != n - outer:
    bad.append(f"rec -> rec: {rr and rr['calls']} calls, expected {n - outer}")
if not dr or dr["calls"] != outer:
    bad.append(f"deep_main -> rec: {dr and dr['calls']} calls, expected {outer}")
elif rec["inclusive_ns"] != dr["inclusive_ns"]:
    bad.append(f"rec's inclusive {rec['inclusive_ns']} ns is not its outermost "
               f"activations' {dr['inclusive_ns']} ns")
# --weight calls' inclusive calls across stacks kept between chunks: every
# activation counted once under each edge above it
inn, out = {}, {}
for e in r["edges"]:
    inn[e["callee_id"]] = inn.get(e["callee_id"], 0) + e["inclusive_calls"]
    out[e["caller_id"]] = out.get(e["caller_id"], 0) + e["inclusive_calls"]
for x in r["nodes"]:
    if x["kind"] not in ("offcpu", "lock-hold") and \
            inn.get(x["id"], 0) != x["calls"] + out.get(x["id"], 0):
        bad.append(f"{x['name']}: inclusive calls in {inn.get(x['id'], 0)} != calls "
                   f"{x['calls']} + out {out.get(x['id'], 0)}")
if bad:
    sys.exit("\n".join(bad))
PY
    echo "e2e_scale: deep $n, $t thread(s), $w wave(s): exact"
    # folded and pprof write each path with its whole stack, n^2/2 frames:
    # over 2^30 they refuse at once, naming --depth, which then serves
    if ((n * n / 2 > 1 << 30)); then
        local f
        rm -f "$tmp/deep.folded" "$tmp/deep.pprof"
        for f in folded pprof; do
            ! timeout 60 "$RANKPROF" export --format $f -o "$tmp/deep.$f" -i "$tmp/deep.rp" \
                2>"$tmp/x.err" && grep -q "limit the depth with --depth N" "$tmp/x.err" &&
                [[ ! -e "$tmp/deep.$f" ]] ||
                fail "export --format $f of a $n-deep recursion did not refuse: $(cat "$tmp/x.err")"
        done
        "$RANKPROF" export --format folded -D 1000 -o "$tmp/deep.folded" -i "$tmp/deep.rp" ||
            fail "export --format folded -D 1000"
        # (a kept span's time off CPU is a frame [off-cpu] under it)
        awk -F';' 'NF - ($NF ~ /^\[off-cpu\] /) > 1000 { bad = 1 } END { exit bad || !NR }' \
            "$tmp/deep.folded" ||
            fail "export --format folded -D 1000: paths deeper than 1000 frames, or none"
        echo "e2e_scale: deep $n: folded and pprof refuse, -D 1000 serves"
    fi
}
if under_tsan; then # (ThreadSanitizer's own stack of calls is bounded)
    scenario deep_one deep 30000 1 1
    scenario deep_waves deep 20000 2 8
elif sanitized; then # (ten times slower, and bigger frames)
    scenario deep_one deep 300000 1 1
    scenario deep_waves deep 20000 2 8
else
    scenario deep_one deep 2500000 1 1
    scenario deep_waves deep 100000 2 16
fi

# --- memory -------------------------------------------------------------
RPT_BOUND=196    # bytes per id + 16 MiB (docs/robustness.md, "Memory")
RPT_BOUND_1M=182 # the same at 1 M ids, ranked by the whole graph in id order
REPLAY_BOUND=176 # the same, for the replay alone

# The peak RSS (KiB) of WHAT within PER bytes per id of IDS + 16 MiB.
within() { # WHAT RSS_KIB PER IDS
    python3 - "$@" <<'PY' || fail "memory"
import sys
what, rss_kb, per, ids = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
bound = per * ids + (16 << 20)
print(f"e2e_scale: {ids} ids: {what} peak RSS {rss_kb} KiB, "
      f"{(rss_kb * 1024 - (16 << 20)) / ids:.0f} bytes per id beyond 16 MiB; "
      f"bound {bound >> 10} KiB")
if rss_kb * 1024 > bound:
    sys.exit(f"{what}: peak RSS {rss_kb} KiB is over the bound of {per} bytes per id + "
             f"16 MiB ({bound >> 10} KiB)")
PY
}

memory() {
    local ids
    [[ -x /usr/bin/time ]] || fail "/usr/bin/time (GNU time) is needed: scripts/deps.sh test installs it"
    ids=200000
    "$RANKPROF" record -o "$tmp/ids.rp" -- "$prog" ids $ids >"$tmp/ids.out" 2>"$tmp/ids.err" ||
        fail "record ids $ids: $(cat "$tmp/ids.err")"
    /usr/bin/time -f %M -o "$tmp/rss.info" "$RANKPROF" info -i "$tmp/ids.rp" \
        >"$tmp/ids.info" 2>"$tmp/r.err" || fail "info of $ids ids: $(cat "$tmp/r.err")"
    /usr/bin/time -f %M -o "$tmp/rss" "$RANKPROF" report --format json -i "$tmp/ids.rp" \
        >"$tmp/ids.json" 2>"$tmp/r.err" || fail "report of $ids ids: $(cat "$tmp/r.err")"
    # the table at its full width: every row's cells and name formatted
    COLUMNS=200 /usr/bin/time -f %M -o "$tmp/rss.table" "$RANKPROF" report -i "$tmp/ids.rp" \
        >"$tmp/ids.table" 2>"$tmp/r.err" || fail "report (table) of $ids ids: $(cat "$tmp/r.err")"
    python3 - "$tmp/ids.json" $ids "$tmp/ids.table" <<'PY' || fail "memory"
import json, sys
r, ids = json.load(open(sys.argv[1])), int(sys.argv[2])
pts = [x for x in r["nodes"] if x["name"].startswith("p") and x["calls"] == 1]
if len(pts) != ids:
    sys.exit(f"{len(pts)} points called once, expected {ids}")
rows = [l for l in open(sys.argv[3]) if l.split()[:1] and l.split()[0].isdigit()
        and any(w[:1] == "p" and w[1:].isdigit() for w in l.split()[1:])]
if len(rows) != ids:
    sys.exit(f"{len(rows)} rows of points in the table, expected {ids}")
PY
    within "report --format json" "$(tail -1 "$tmp/rss")" $RPT_BOUND $ids
    within "report" "$(tail -1 "$tmp/rss.table")" $RPT_BOUND $ids
    within "info" "$(tail -1 "$tmp/rss.info")" $REPLAY_BOUND $ids
    rm -f "$tmp/ids.rp" "$tmp/ids.json" "$tmp/ids.table"
}

# 1 M ids, `report --format json` (600 MB of JSON: its points are counted
# as it is written, not kept) and `info`.
memory_1m() {
    local ids=1000000 n
    [[ -x /usr/bin/time ]] || fail "/usr/bin/time (GNU time) is needed: scripts/deps.sh test installs it"
    "$RANKPROF" record -o "$tmp/ids1m.rp" -- "$prog" ids $ids >"$tmp/ids1m.out" \
        2>"$tmp/ids1m.err" || fail "record ids $ids: $(cat "$tmp/ids1m.err")"
    n=$( (
        /usr/bin/time -f %M -o "$tmp/rss1m" "$RANKPROF" report --format json -i "$tmp/ids1m.rp" \
            2>"$tmp/r.err"
        echo $? >"$tmp/rc1m"
    ) | grep -Ec '^ *\{ "name": "p[0-9]+", "kind": "point", "calls": 1,')
    [[ $(cat "$tmp/rc1m") == 0 ]] || fail "report of $ids ids: $(cat "$tmp/r.err")"
    [[ $n == "$ids" ]] || fail "report of $ids ids: $n points called once, expected $ids"
    within "report --format json" "$(tail -1 "$tmp/rss1m")" $RPT_BOUND_1M $ids
    /usr/bin/time -f %M -o "$tmp/rss1m.info" "$RANKPROF" info -i "$tmp/ids1m.rp" \
        >/dev/null 2>"$tmp/r.err" || fail "info of $ids ids: $(cat "$tmp/r.err")"
    within "info" "$(tail -1 "$tmp/rss1m.info")" $REPLAY_BOUND $ids
    rm -f "$tmp/ids1m.rp"
}
if sanitized; then
    note "memory part skipped under sanitizers ($RP_SANITIZE)"
else
    scenario memory memory
    scenario memory_1m memory_1m
fi
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_export_par.sh - the exports read through the parallel replay of the
# chunks (src/analyze/cct.c, "The parallel build") agree with the report
# and with the same export built in order, on multi-chunk traces.
#
#   threads   prog_stress threads 3 N (three threads, hundreds of chunks,
#             body's span open across all of them): `export --format
#             folded` with 2 workers (RANKPROF_REPLAY_JOBS=2) is the same
#             bytes as with none (the tree built in file order), plain and
#             under -O threads=1, -F outer, -N inner, -D 2, -t 200ns; and
#             per function the folded self times add up to the report's
#             exclusive_ns (to the ns each path's rounding may take)
#   recursion prog_fib (fib's spans open across chunks at every depth):
#             the same, with -F fib and -D 5
#   deep      prog_scale deep 3000 4 16 (stacks deeper than a snapshot
#             holds, replayed in order where they stay, in parallel again
#             when they return): the same, plain, -D 50 and -F rec -D 40
#   timelines prog_stress threads 3 N again (each output many jobs of the
#             parallel timelines, src/report/export_tlpar.c):
#             chrome and perfetto with 2 threads are the same bytes as with
#             none; per thread, the chrome JSON's spans (parsed by Python)
#             nest, come in the order they end, and per name count and
#             last (less the [recorder] slices inside them) exactly what
#             `report --thread TID` says, the first from 0 (the run's first
#             event: the origin without a replay); trace_processor reads the same
#             per thread from the perfetto file (when it is installed); the
#             perfetto file's compressed packets (3 batches or more: one
#             per chunk) inflate
#             to exactly the -O compress=0 file, in half its size or less
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_export_par RANKPROF PROGS RP_LIB
need_progs stress fib scale
need_tools python3
export RANKPROF_LIB="$RP_LIB"
export RANKPROF_CALIBRATE=0

# same TRACE ARGS...: folded with 2 workers and with none, byte for byte
same() {
    local trace=$1
    shift
    RANKPROF_REPLAY_JOBS=0 "$RANKPROF" export --format folded "$@" "$trace" >"$tmp/seq.folded" ||
        fail "export folded $* (in order)"
    RANKPROF_REPLAY_JOBS=2 "$RANKPROF" export --format folded "$@" "$trace" >"$tmp/par.folded" ||
        fail "export folded $* (2 workers)"
    [[ -s $tmp/par.folded ]] || fail "export folded $*: empty"
    cmp -s "$tmp/seq.folded" "$tmp/par.folded" ||
        fail "folded $* differs with 2 workers: $(diff "$tmp/seq.folded" "$tmp/par.folded" | head -5)"
}

# sums TRACE ARGS...: per function, the folded self times (2 workers) add up
# to the report's exclusive_ns with the same filter
sums() {
    local trace=$1
    shift
    "$RANKPROF" report --format json "$@" "$trace" >"$tmp/r.json" || fail "report $*"
    RANKPROF_REPLAY_JOBS=2 "$RANKPROF" export --format folded "$@" "$trace" >"$tmp/f.folded" ||
        fail "export folded $*"
    python3 - "$tmp/r.json" "$tmp/f.folded" "$*" <<'PY' || fail "folded sums $*"
import collections, json, sys
r = json.load(open(sys.argv[1]))
want = {n["name"]: n["exclusive_ns"] for n in r["nodes"] if n["calls"] and n["kind"] == "func"}
got, paths = collections.Counter(), collections.Counter()
for line in open(sys.argv[2]):
    path, ns = line.rsplit(" ", 1)
    got[path.split(";")[-1]] += int(ns)
    paths[path.split(";")[-1]] += 1
# each path's ticks are rounded to ns on their own: 1 ns per path and 2
bad = [(k, want[k], got.get(k, 0)) for k in want
       if abs(got.get(k, 0) - want[k]) > 2 * paths.get(k, 1) + 2]
if bad:
    sys.exit("%s: report exclusive_ns vs folded: %s" % (sys.argv[3], bad))
PY
}

threads() {
    "$RANKPROF" record -o "$tmp/st.rp" -- "$PROGS/prog_stress" threads 3 60000 >/dev/null 2>&1 ||
        fail "recording prog_stress"
    local chunks
    chunks=$("$RANKPROF" info "$tmp/st.rp" | awk '$1 == "EVENTS" { print $2 }')
    ((chunks >= 20)) || fail "only $chunks EVENTS chunks: not a multi-chunk trace"
    same "$tmp/st.rp"
    same "$tmp/st.rp" -O threads=1
    same "$tmp/st.rp" -F outer
    same "$tmp/st.rp" -N inner
    same "$tmp/st.rp" -D 2
    same "$tmp/st.rp" -t 200ns
    sums "$tmp/st.rp"
    sums "$tmp/st.rp" -N inner
    sums "$tmp/st.rp" -D 2
}

recursion() {
    "$RANKPROF" record -o "$tmp/fib.rp" -- "$PROGS/prog_fib" >/dev/null 2>&1 ||
        fail "recording prog_fib"
    same "$tmp/fib.rp"
    same "$tmp/fib.rp" -F fib
    same "$tmp/fib.rp" -D 5
    sums "$tmp/fib.rp"
    sums "$tmp/fib.rp" -D 5
}

deep() {
    "$RANKPROF" record -o "$tmp/deep.rp" -- "$PROGS/prog_scale" deep 3000 4 16 >/dev/null 2>&1 ||
        fail "recording prog_scale deep"
    same "$tmp/deep.rp"
    sums "$tmp/deep.rp"
    same "$tmp/deep.rp" -D 50
    same "$tmp/deep.rp" -F rec -D 40
    sums "$tmp/deep.rp" -D 50
}

# the slices of every thread in a chrome JSON, as check_export.py's
# "slices" wants them after the thread's tid (tid, name, count, summed
# duration less the [recorder] slices inside), parsed by Python, checking
# that each thread's spans nest and come in the order they end, and that
# some span begins at 0 (times are since the run's first event)
chrome_slices() {
    python3 - "$1" <<'PY'
import collections, json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
count, total = collections.Counter(), collections.Counter()
done = collections.defaultdict(list)  # per tid: ended spans not yet inside an ended caller
last = collections.Counter()
for e in ev:
    if e["ph"] in "BE":
        sys.exit("a B/E event: spans are X events")
    if e["ph"] != "X":
        continue
    tid, name = e["tid"], e["name"]
    start, dur = round(e["ts"] * 1000), round(e["dur"] * 1000)
    end = start + dur
    if end < last[tid]:
        sys.exit(f"{tid}: {name} ends at {end} ns, after a span that ended at {last[tid]} ns")
    last[tid] = end
    d, inside = done[tid], 0
    while d and d[-1][0] >= start:  # its callees, ended before it
        s, t, r = d.pop()
        if t > end:
            sys.exit(f"{tid}: {name} [{start}, {end}] does not hold a span [{s}, {t}]")
        inside += r
    if d and start < d[-1][1]:
        sys.exit(f"{tid}: {name} [{start}, {end}] overlaps [{d[-1][0]}, {d[-1][1]}]")
    if name == "[recorder]":
        inside = dur
    count[tid, name] += 1
    total[tid, name] += dur - (0 if name == "[recorder]" else inside)
    d.append((start, end, inside))
for tid, name in sorted(count):
    print(f"{tid}\t{name}\t{count[tid, name]}\t{total[tid, name]}")
if min(e["ts"] for e in ev if e["ph"] == "X") != 0:
    sys.exit(f"no span begins at 0: the first at {min(e['ts'] for e in ev if e['ph'] == 'X')} us")
PY
}

timelines() {
    "$RANKPROF" record -o "$tmp/tl.rp" -- "$PROGS/prog_stress" threads 3 20000 >/dev/null 2>&1 ||
        fail "recording prog_stress"
    local f tid tids tp=
    for f in chrome perfetto; do
        RANKPROF_REPLAY_JOBS=0 "$RANKPROF" export --format $f -o "$tmp/seq.$f" "$tmp/tl.rp" ||
            fail "export $f (in order)"
        RANKPROF_REPLAY_JOBS=2 "$RANKPROF" export --format $f -o "$tmp/par.$f" "$tmp/tl.rp" ||
            fail "export $f (2 threads)"
        cmp -s "$tmp/seq.$f" "$tmp/par.$f" || fail "$f differs with 2 threads"
    done
    # several batches of the pool (1 MB of records or packets each)
    RANKPROF_REPLAY_JOBS=2 "$RANKPROF" export --format perfetto -O compress=0 -o "$tmp/plain.pf" \
        "$tmp/tl.rp" || fail "export perfetto -O compress=0"
    stat -c %s "$tmp/plain.pf" >"$tmp/plain.n"
    # the compressed packets (export_zpkt.c) inflate to the plain file, each
    # batch in one packet of compressed_packets
    python3 - "$tmp/par.perfetto" "$tmp/plain.pf" <<'PY' || fail "perfetto's compressed packets (above)"
import sys, zlib
from protobuf import varint
z, plain = open(sys.argv[1], "rb").read(), open(sys.argv[2], "rb").read()
out, i, n = bytearray(), 0, 0
while i < len(z):
    if z[i] != 0x0a:
        sys.exit(f"offset {i}: not a packet")
    ln, j = varint(z, i + 1)
    start, body, i = i, z[j:j + ln], j + ln
    if body[:2] == b"\x92\x03":  # compressed_packets (50)
        zn, k = varint(body, 2)
        out += zlib.decompress(body[k:k + zn])
        n += 1
    else:
        out += z[start:i]
if bytes(out) != plain:
    sys.exit(f"{n} batches inflate to {len(out)} B, not the plain file's {len(plain)} B")
if n < 3 or len(z) * 2 > len(plain):
    sys.exit(f"{n} batches, {len(z)} B of {len(plain)} B plain: want 3 or more, a half or less")
PY
    (($(stat -c %s "$tmp/par.chrome") > 8 << 20 && $(cat "$tmp/plain.n") > 3 << 20)) ||
        fail "chrome $(stat -c %s "$tmp/par.chrome") B, perfetto $(cat "$tmp/plain.n") B plain: one batch"
    if tp_query_build "$tmp/tp_query"; then
        tp=$tmp/tp_query
    else
        missing trace_processor "no $TP_LIB (chromium-shell) or clang++: perfetto not read back"
    fi
    # per thread and name: slices, their time less the [recorder] slices inside
    [[ -n $tp ]] && { "$tp" "$tmp/par.perfetto" "with rec as (select a.id as id, sum(r.dur) as d
        from slice r join ancestor_slice(r.id) a where r.name = '[recorder]' group by a.id)
        select t.tid, s.name, count(*), sum(s.dur) - coalesce(sum(rec.d), 0) from slice s
        join thread_track tt on s.track_id = tt.id join thread t using (utid)
        left join rec on rec.id = s.id group by t.tid, s.name order by t.tid, s.name" \
        >"$tmp/p.tsv" || fail "trace_processor rejected the perfetto file"; }
    chrome_slices "$tmp/par.chrome" >"$tmp/c.tsv" || fail "the chrome JSON's spans (above)"
    tids=$("$RANKPROF" info "$tmp/tl.rp" | awk '$1 == "tid" && $4 > 1000 { print $2 }')
    [[ $(wc -w <<<"$tids") == 3 ]] || fail "threads '$tids': want 3 busy ones"
    for tid in $tids; do
        "$RANKPROF" report --format json --thread "$tid" "$tmp/tl.rp" >"$tmp/r.$tid.json" ||
            fail "report --thread $tid"
        awk -F'\t' -v t="$tid" '$1 == t { print $2 "\t" $3 "\t" $4 }' "$tmp/c.tsv" >"$tmp/c.$tid.tsv"
        python3 "$here/consumers/check_export.py" slices "$tmp/r.$tid.json" "$tmp/c.$tid.tsv" ||
            fail "chrome's slices of thread $tid are not the report's"
        [[ -z $tp ]] && continue
        awk -F'\t' -v t="$tid" '$1 == t { print $2 "\t" $3 "\t" $4 }' "$tmp/p.tsv" >"$tmp/p.$tid.tsv"
        python3 "$here/consumers/check_export.py" slices "$tmp/r.$tid.json" "$tmp/p.$tid.tsv" ||
            fail "perfetto's slices of thread $tid (trace_processor) are not the report's"
    done
}

scenario threads threads
scenario recursion recursion
scenario deep deep
scenario timelines timelines
finish

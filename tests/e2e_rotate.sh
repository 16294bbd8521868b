#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_rotate.sh - bounded disk: `rankprof record --max-size SIZE`
# (src/record/rotate.c, src/trace/reader.c, docs/services.md) on
# prog_phases (tests/progs/phases.c): main calls early() N1 times, then
# late() N2 times, each calling leaf() once.
#
#   bounded   --max-size 256K on a run that writes several megabytes (in
#             150 bursts, 1 ms apart): the
#             trace and its pieces never hold more than 256 KiB together,
#             sampled while it runs and at the end; there are older pieces
#             (FILE.partN, N far above 4: the run wrote far more than SIZE)
#   newest    the set reads back as one trace: late() and its leaf() calls
#             exactly N2, main once, early() cut (fewer than N1); report,
#             dump and info read it; the oldest piece reads alone too; the
#             report warns once that the first pieces were deleted, and its
#             JSON's pieces_deleted says how many
#   stale     a later run without --max-size leaves no piece of the older
#             run, which would be read as its own
#   refused   --max-size below 64K, not a size, or with --mode direct: usage
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_rotate RANKPROF PROGS RP_LIB
need_progs phases stress
need_tools python3
export RANKPROF_LIB="$RP_LIB"

N1=3000000
N2=10000
SIZE=262144

# sample_bound PID OUT: the bytes of the trace r.rp and its pieces, every
# millisecond until PID ends, at most SIZE (a summary in OUT)
sample_bound() {
    python3 - "$tmp" "$1" $SIZE <<'PY' >"$2"
import os, sys, time
d, pid, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def total():
    seen, t = set(), 0
    for n in os.listdir(d):
        if n == "r.rp" or n.startswith("r.rp.part"):
            try:
                st = os.stat(os.path.join(d, n))
            except FileNotFoundError:
                continue
            if st.st_ino not in seen:
                seen.add(st.st_ino)
                t += st.st_size
    return t
worst, samples = 0, 0
while True:
    try:  # (the process may end between the two)
        alive = open(f"/proc/{pid}/stat").read().split()[2] != "Z"
    except OSError:
        alive = False
    t = total()
    worst, samples = max(worst, t), samples + 1
    if not alive:
        break
    time.sleep(0.001)
print(f"{samples} samples, at most {worst} bytes, {total()} at the end")
if worst > limit:
    sys.exit(f"the trace held {worst} bytes, more than {limit}")
PY
}

bounded() {
    "$RANKPROF" record --max-size 256K -o "$tmp/r.rp" -- "$PROGS/prog_phases" $N1 $N2 20000 \
        >"$tmp/rec.out" 2>&1 &
    local rec=$!
    sample_bound $rec "$tmp/sizes" || fail "bounded: $(cat "$tmp/sizes")"
    wait $rec || fail "record exited $?: $(cat "$tmp/rec.out")"
    note "$(cat "$tmp/sizes")"
    grep -q "older pieces $tmp/r.rp.partN" "$tmp/rec.out" || fail "record's message: $(cat "$tmp/rec.out")"
    local last
    last=$(ls "$tmp" | sed -n 's/^r\.rp\.part\([0-9]*\)$/\1/p' | sort -n | tail -1)
    [[ -n $last && $last -ge 12 ]] || fail "only ${last:-no} pieces: the run did not write 3 x SIZE"
    # (how many older pieces depends on where chunks fell: a piece rotates
    # early rather than pass SIZE/4; the bound is the bytes, sampled above)
}

newest() {
    "$RANKPROF" report --format json "$tmp/r.rp" >"$tmp/r.json" 2>"$tmp/r.err" ||
        fail "report: $(cat "$tmp/r.err")"
    python3 - "$tmp/r.json" $N1 $N2 <<'PY' || fail "newest: wrong counts"
import json, sys
d, n1, n2 = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
c = {x["name"]: x["calls"] for x in d["nodes"]}
bad = []
if c.get("late") != n2:
    bad.append(f"late: {c.get('late')} calls, expected {n2}")
if c.get("main") != 1:
    bad.append(f"main: {c.get('main')} calls, expected 1")
if not 0 <= c.get("early", 0) < n1:
    bad.append(f"early: {c.get('early')} calls, expected fewer than {n1}")
# (the oldest piece may begin inside an early() call, after its leaf())
if not c.get("early", 0) + n2 - 1 <= c.get("leaf", 0) <= c.get("early", 0) + n2:
    bad.append(f"leaf: {c.get('leaf')} calls, expected early + late")
if d["unmatched_exits"]:
    bad.append(f"{d['unmatched_exits']} unmatched exits")
if bad:
    sys.exit("\n".join(bad))
PY
    # the one warning: the deleted pieces, also in the JSON (the report said
    # nothing of them, its counts reading as the whole run's)
    local oldest
    oldest=$(ls "$tmp" | sed -n 's/^r\.rp\.part\([0-9]*\)$/\1/p' | sort -n | head -1)
    [[ $(wc -l <"$tmp/r.err") == 1 ]] &&
        grep -q "the run's first $((oldest - 1)) pieces were deleted (record --max-size)" "$tmp/r.err" ||
        fail "report's warnings: $(cat "$tmp/r.err")"
    python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["pieces_deleted"] != int(sys.argv[2]))' \
        "$tmp/r.json" $((oldest - 1)) || fail "the JSON's pieces_deleted is not $((oldest - 1))"
    "$RANKPROF" dump "$tmp/r.rp" >"$tmp/r.dump" 2>&1 || fail "dump: $(tail -3 "$tmp/r.dump")"
    [[ $(grep -c "late" "$tmp/r.dump") -ge $((2 * N2)) ]] || fail "dump: the late calls are not all there"
    "$RANKPROF" info "$tmp/r.rp" >"$tmp/r.info" 2>&1 || fail "info: $(cat "$tmp/r.info")"
    "$RANKPROF" report "$tmp/r.rp.part$oldest" >"$tmp/p.out" 2>&1 || fail "the oldest piece alone: $(cat "$tmp/p.out")"
    grep -q "early" "$tmp/p.out" || fail "the oldest piece has no early(): $(cat "$tmp/p.out")"
}

stale() {
    "$RANKPROF" record -o "$tmp/r.rp" -- "$PROGS/prog_phases" 3 5 >"$tmp/rec2.out" 2>&1 ||
        fail "record: $(cat "$tmp/rec2.out")"
    ! ls "$tmp" | grep -q '^r\.rp\.part' || fail "pieces of the older run are left: $(ls "$tmp")"
    "$RANKPROF" report --format json "$tmp/r.rp" >"$tmp/r2.json" || fail "report"
    python3 -c '
import json, sys
c = {x["name"]: x["calls"] for x in json.load(open(sys.argv[1]))["nodes"]}
sys.exit(0 if c.get("early") == 3 and c.get("late") == 5 else f"counts {c}")' "$tmp/r2.json" ||
        fail "stale: the second run read with the first"
}

# 4 threads that encode their own full buffers (16 KiB) write the trace:
# pieces switch while any of them may be writing, the bound holds, and
# the pieces left read back clean (every id defined before its use, no
# exit without its entry)
threaded() {
    local a rc
    for a in 1 2; do
        rm -f "$tmp"/r.rp*
        threaded_run && return 0
        rc=$?
        # a loaded machine may leave every buffer to the writer (its claim
        # on a thread taken each time the thread publishes): once again,
        # and then it must not
        ((rc != 3)) || ((a == 1)) || fail "threaded: no buffer encoded by its own thread, twice"
        ((rc == 3)) || fail "threaded: the pieces do not read back"
        note "attempt 1: no buffer encoded by its own thread; recording again"
    done
}

threaded_run() {
    RANKPROF_SELF_ENCODE=1 RANKPROF_BUFSIZE=16384 "$RANKPROF" record --max-size 256K -o "$tmp/r.rp" -- \
        "$PROGS/prog_stress" threads 4 300000 >"$tmp/rec3.out" 2>&1 &
    local rec=$!
    sample_bound $rec "$tmp/sizes3" || fail "threaded: $(cat "$tmp/sizes3")"
    wait $rec || fail "record exited $?: $(cat "$tmp/rec3.out")"
    note "$(cat "$tmp/sizes3")"
    local last
    last=$(ls "$tmp" | sed -n 's/^r\.rp\.part\([0-9]*\)$/\1/p' | sort -n | tail -1)
    [[ -n $last && $last -ge 12 ]] || fail "only ${last:-no} pieces: the run did not write 3 x SIZE"
    "$RANKPROF" report --format json "$tmp/r.rp" >"$tmp/r3.json" 2>"$tmp/r3.err" ||
        fail "report: $(cat "$tmp/r3.err")"
    # (the one warning: the deleted pieces)
    [[ $(grep -vc "pieces were deleted (record --max-size)" "$tmp/r3.err") == 0 ]] ||
        fail "report warns: $(cat "$tmp/r3.err")"
    # exits 3 when the only fault is that no thread encoded its own buffer
    python3 - "$tmp/r3.json" "$tmp/r.rp" <<'PY'
import json, struct, sys
d = json.load(open(sys.argv[1]))
c = {x["name"]: x["calls"] for x in d["nodes"]}
data = open(sys.argv[2], "rb").read()
k = struct.pack("<H", 12) + b"buffers_self"  # INFO: u16 len, key, u32 len, value
i = data.rfind(k)
own = int(data[i + len(k) + 4 : i + len(k) + 4 + struct.unpack_from("<I", data, i + len(k))[0]]) if i >= 0 else 0
bad = []
if d["unmatched_exits"]:
    bad.append(f"{d['unmatched_exits']} unmatched exits")
if not 0 < c.get("outer", 0) < 1200000 or c.get("body", 0) > 4:
    bad.append(f"calls {c}")
print(f"e2e_rotate: threaded: {own} buffers encoded by their threads, outer {c.get('outer')}")
if bad:
    sys.exit("\n".join(bad))
if not own:
    print("no buffer encoded by its own thread (INFO buffers_self)")
    sys.exit(3)
PY
}

refused() {
    local rc a
    for a in 1000 64k1 abc; do
        set +e
        "$RANKPROF" record --max-size $a -o "$tmp/x.rp" -- /bin/true >"$tmp/o" 2>&1
        rc=$?
        set -e
        [[ $rc == 2 ]] && grep -q -- "--max-size $a" "$tmp/o" || fail "--max-size $a: rc $rc, $(cat "$tmp/o")"
    done
    set +e
    "$RANKPROF" record --mode direct --max-size 1M -o "$tmp/x.rp" -- /bin/true >"$tmp/o" 2>&1
    rc=$?
    set -e
    [[ $rc == 2 ]] && grep -q "is for a trace" "$tmp/o" || fail "direct: rc $rc, $(cat "$tmp/o")"
}

scenario bounded bounded
scenario newest newest
scenario stale stale
scenario threaded threaded
scenario refused refused
finish

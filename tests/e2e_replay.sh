#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_replay.sh - the parallel replay gives exactly what the replay in order
# gives.  Programs are recorded with 4 KiB buffers, so spans (main, the
# recursion of fib, the threads' loops) cross hundreds of chunk boundaries;
# `rankprof report --format json` must be byte-identical with no workers
# (RANKPROF_REPLAY_JOBS=0: in order, stacks handed from chunk to chunk) and
# with 1, 2 and 5 workers (each chunk from its stack snapshot), with overhead
# compensation (the default: each span needs its event count, from the
# snapshots or carried in order) and without, and the known call counts must
# hold.  A file whose snapshots are removed (old recorders)
# must replay in order to the same result.  The same with the recorder's
# cost measured 4 times too high (over): no span shorter than its callees.
# A span's time off CPU below it counts from every chunk it crosses
# (offchunks_below).
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_replay RANKPROF PROGS RP_LIB
set +e # (each status is checked where it matters)
need_tools python3
export RANKPROF_LIB="$RP_LIB"

# program and the least number of chunks its trace must have
replay_prog() { # PROG:MINCHUNKS
    local spec=$1 prog minchunks j
    prog=${spec%:*} minchunks=${spec#*:}
    RANKPROF_BUFSIZE=4096 "$RANKPROF" record -o "$tmp/$prog.data" -- "$PROGS/prog_$prog" \
        >"$tmp/$prog.out" 2>"$tmp/$prog.err" || fail "$prog: record failed: $(cat "$tmp/$prog.err")"
    RANKPROF_REPLAY_JOBS=0 "$RANKPROF" report -i "$tmp/$prog.data" --format json \
        >"$tmp/$prog.0.json" || fail "$prog: report (in order) failed"
    RANKPROF_REPLAY_JOBS=0 "$RANKPROF" report -i "$tmp/$prog.data" --format json --no-compensate \
        >"$tmp/$prog.0.raw.json" || fail "$prog: report --no-compensate (in order) failed"
    "$RANKPROF" dump -i "$tmp/$prog.data" >"$tmp/$prog.dump" || fail "$prog: dump failed"
    for j in 1 2 5; do
        RANKPROF_REPLAY_JOBS=$j "$RANKPROF" report -i "$tmp/$prog.data" --format json \
            >"$tmp/$prog.$j.json" || fail "$prog: report with $j workers failed"
        cmp -s "$tmp/$prog.0.json" "$tmp/$prog.$j.json" ||
            fail "$prog: $j workers differ from the replay in order: $(diff "$tmp/$prog.0.json" "$tmp/$prog.$j.json" | head -4)"
        # measured times too (overhead compensation off)
        RANKPROF_REPLAY_JOBS=$j "$RANKPROF" report -i "$tmp/$prog.data" --format json \
            --no-compensate >"$tmp/$prog.$j.raw.json" || fail "$prog: --no-compensate with $j workers failed"
        cmp -s "$tmp/$prog.0.raw.json" "$tmp/$prog.$j.raw.json" ||
            fail "$prog: --no-compensate: $j workers differ from the replay in order"
    done
    # compensation is on by default and changes the times: the equality above
    # covers the snapshots' event counts (in order the counts are carried
    # from chunk to chunk, in parallel they come from the snapshots)
    grep -q '"applied": true' "$tmp/$prog.0.json" || fail "$prog: compensation not applied"
    cmp -s "$tmp/$prog.0.json" "$tmp/$prog.0.raw.json" && fail "$prog: compensation changed nothing"
    # the same file without snapshots (flag cleared, snapshot bytes removed)
    python3 - "$tmp/$prog.data" "$tmp/$prog.nosnap.data" "$minchunks" <<'PY' || fail "$prog: rewriting failed"
import struct, sys, zlib
b = open(sys.argv[1], 'rb').read()
out = bytearray(b[:32]); off = 32; n = 0
def varint(buf, i):
    v = s = 0
    while True:
        c = buf[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80: return v, i
while off + 16 <= len(b):
    typ, ln = struct.unpack_from('<II', b, off)
    pl = bytearray(b[off + 16:off + 16 + ln])
    if typ == 6 and struct.unpack_from('<I', pl, 4)[0] >> 31:
        word = struct.unpack_from('<I', pl, 4)[0]
        depth, i = varint(pl, 16)
        per = 2 + (word >> 29 & 1) + (word >> 28 & 1)  # id, start[, events][, paused]
        for _ in range(per * depth):
            _, i = varint(pl, i)
        cnt = word & 0x4fffffff  # the snapshot, its event counts and pauses go
        pl = pl[:4] + struct.pack('<I', cnt) + pl[8:16] + pl[i:]
        n += 1
    hdr = struct.pack('<III', typ, len(pl), zlib.crc32(pl))
    out += hdr + struct.pack('<I', zlib.crc32(hdr)) + pl
    off += 16 + ln
open(sys.argv[2], 'wb').write(out)
if n < int(sys.argv[3]):
    sys.exit(f"only {n} EVENTS chunks had snapshots: the test needs spans across many chunks")
PY
    RANKPROF_REPLAY_JOBS=2 "$RANKPROF" report -i "$tmp/$prog.nosnap.data" --format json \
        >"$tmp/$prog.nosnap.json" || fail "$prog: report of the file without snapshots failed"
    cmp -s "$tmp/$prog.0.json" "$tmp/$prog.nosnap.json" ||
        fail "$prog: without snapshots the result differs: $(diff "$tmp/$prog.0.json" "$tmp/$prog.nosnap.json" | head -4)"
}
for spec in fib:20 calltree:1 threads:20 contend:20 offchunks:10; do
    scenario "${spec%:*}" replay_prog "$spec"
done

# known counts (see the programs' header comments)
counts() {
    python3 - "$tmp" <<'PY' || exit 1
import json, sys
d = sys.argv[1]
def nodes(p):
    j = json.load(open(f"{d}/{p}.2.json"))
    if j["warnings"]:
        sys.exit(f"e2e_replay: FAIL: {p}: warnings {j['warnings']}")
    return {n["name"]: n for n in j["nodes"]}
# every snapshot continues its thread's stack (lock waits and holds too:
# their spans begin at ticks the encoder derives, not at a record's own)
for prog in ("fib", "calltree", "threads", "contend"):
    nodes(prog)
ct = nodes("calltree")
want = {"main": 1, "a": 3, "b": 6, "c": 4, "leaf": 38}
for k, c in want.items():
    if ct[k]["calls"] != c:
        sys.exit(f"e2e_replay: FAIL: calltree {k}: {ct[k]['calls']} calls, expected {c}")
# One thread: the exclusive times add up to main's inclusive time, also when
# main and the recursion of fib span hundreds of chunks (the callee time a
# span collected in earlier chunks is subtracted when it ends in a later one).
# (A node whose exclusive total came out below 0, each span at most the
# resolution shorter than its callees - over-compensated, a sanitizer's
# cost per event moving - shows 0: the sum may exceed main's by that.)
for prog in ("calltree", "fib"):
    ns = nodes(prog)
    excl = sum(n["exclusive_ns"] for n in ns.values())
    total = ns["main"]["inclusive_ns"]
    res = json.load(open(f"{d}/{prog}.2.json"))["resolution_ns"]
    slack = sum(n["calls"] * res for n in ns.values() if n["exclusive_ns"] == 0)
    if not -1e-6 * total - 10 <= excl - total <= 1e-6 * total + 10 + slack:
        sys.exit(f"e2e_replay: FAIL: {prog}: exclusive sum {excl} != main inclusive {total}")
# ...and main's own time is what the events say it is: computed here from
# `rankprof dump` (the time main is the innermost open span, less the
# recorder's pauses then: a PAUSE ends at its timestamp and lasts its value
# in ticks), against the replay's measured times.  Callee time lost across
# chunks would be main's.  (Not a fraction of the run: main's own time is
# mostly its printf, 40 us on a quiet machine, 300 on a loaded one.)
for prog in ("calltree", "fib"):
    raw = {n["name"]: n for n in json.load(open(f"{d}/{prog}.0.raw.json"))["nodes"]}
    tick = json.load(open(f"{d}/{prog}.0.raw.json"))["ns_per_tick"]
    stack, own, last = [], 0.0, None
    for line in open(f"{d}/{prog}.dump"):
        f = line.split()
        if line.startswith("#") or len(f) < 4:
            continue
        t, op = int(f[0]), f[2]
        if stack and stack[-1] == "main" and last is not None:
            own += t - last
        last = t
        if op == "enter":
            stack.append(f[3])
        elif op == "exit":
            stack.pop()
        elif op == "pause" and stack and stack[-1] == "main":
            own -= int(f[3]) * tick
    got = raw["main"]["exclusive_ns"]
    if abs(got - own) > 1e-4 * raw["main"]["inclusive_ns"] + 100:
        sys.exit(f"e2e_replay: FAIL: {prog}: main's exclusive {got} ns, its events say "
                 f"{own:.0f}: callee time was lost across chunks")
print("e2e_replay: ok")
PY
}
scenario counts counts

# The time off CPU or waiting below a span across chunks is of all of
# them, not of the last one only: napper's 300 naps (waits) lie in some 30
# chunks, and its on-CPU statistics leave all of them out.
# The same under a stack 5000 deep, which the replay keeps between chunks
# (src/analyze/replay_int.h, "Deep stacks"): main at its bottom.
offchunks_below() { # JSON [deep]
    python3 - "$1" "${2:-}" <<'PY' || exit 1
import json, sys
j, deep = json.load(open(sys.argv[1])), sys.argv[2]
def die(msg):
    sys.exit(f"e2e_replay: FAIL: offchunks {deep}: {msg}")
N = {n["name"]: n for n in j["nodes"]}
want = {"main": 1, "napper": 1, "work": 300, "leaf": 3000, "nanosleep [wait]": 300}
if deep:
    want["dive"] = 5000
got = {k: N[k]["calls"] for k in want if k in N}
if got != want:
    die(f"calls {got}, expected {want}")
waits = sum(e["inclusive_ns"] for e in j["edges"]
            if e["caller_id"] == N["napper"]["id"] and e["callee"] == "nanosleep [wait]")
if not waits >= 300 * 300_000:
    die(f"the waits took {waits} ns, less than 300 naps of 300 us: test premise")
for name in ("napper", "main"):
    n = N[name]
    below, dur, on = n["offcpu_below_ns"], n["max_ns"], n["oncpu_max_ns"]
    if not below >= waits - 2:
        die(f"off CPU or waiting below {name}: {below} ns, less than the waits' {waits} ns")
    if not abs(dur - below - on) <= 2 or not on < dur - waits + 2:
        die(f"{name}'s on-CPU maximum {on} ns is not its duration {dur} less the {below} "
            f"ns below it")
PY
}
offchunks_deep() {
    local j
    RANKPROF_BUFSIZE=4096 "$RANKPROF" record -o "$tmp/ocdeep.data" -- "$PROGS/prog_offchunks" deep \
        >/dev/null 2>"$tmp/ocdeep.err" || fail "record failed: $(cat "$tmp/ocdeep.err")"
    for j in 0 2; do
        RANKPROF_REPLAY_JOBS=$j "$RANKPROF" report -i "$tmp/ocdeep.data" --format json \
            >"$tmp/ocdeep.$j.json" || fail "report with $j workers failed"
    done
    cmp -s "$tmp/ocdeep.0.json" "$tmp/ocdeep.2.json" || fail "2 workers differ from the replay in order"
    offchunks_below "$tmp/ocdeep.0.json" deep
}
scenario offchunks_below offchunks_below "$tmp/offchunks.0.json"
scenario offchunks_deep offchunks_deep

# A start-up measurement 4 times too high and no later one: spans are
# compensated down to their callees' time (comp.h), which for a span across
# chunks the join decides (struct uspan): the same report with 0, 1, 2 and
# 5 workers, and every node that does not recurse has its inclusive time
# equal to its exclusive time plus its callees' (lock holds apart: an
# interval inside its acquirer's own time), or where its exclusive time
# shows 0 (below 0), at most the resolution per call less.
over() {
    local prog j
    for prog in fib threads contend; do
        RANKPROF_TEST_CALIB_SLOW=4 RANKPROF_CALIBRATE_LATE=0 RANKPROF_BUFSIZE=4096 \
            "$RANKPROF" record -o "$tmp/over.$prog.data" -- "$PROGS/prog_$prog" >/dev/null \
            2>"$tmp/over.err" || fail "$prog: record failed: $(cat "$tmp/over.err")"
        for j in 0 1 2 5; do
            RANKPROF_REPLAY_JOBS=$j "$RANKPROF" report -i "$tmp/over.$prog.data" --format json \
                >"$tmp/over.$prog.$j.json" || fail "$prog: report with $j workers failed"
            [[ $j == 0 ]] || cmp -s "$tmp/over.$prog.0.json" "$tmp/over.$prog.$j.json" ||
                fail "$prog over-compensated: $j workers differ from the replay in order"
        done
        python3 - "$tmp/over.$prog.0.json" "$prog" <<'PY' || fail "(above)"
import json, sys
j, prog = json.load(open(sys.argv[1])), sys.argv[2]
if not j["compensation"]["clamped_spans"]:
    sys.exit(f"e2e_replay: FAIL: {prog}: nothing over-compensated: {j['compensation']}")
kind, res = {n["id"]: n["kind"] for n in j["nodes"]}, j["resolution_ns"]
for n in j["nodes"]:
    out = [e for e in j["edges"] if e["caller_id"] == n["id"]]
    if n["kind"] == "lock-hold" or any(e["callee_id"] == n["id"] for e in out):
        continue  # (recursive: its inclusive is of the outermost calls; a hold: no own time)
    callees = sum(e["inclusive_ns"] for e in out if kind[e["callee_id"]] != "lock-hold")
    diff, tol = n["inclusive_ns"] - n["exclusive_ns"] - callees, 2 + len(out) + n["calls"] // 1000
    # (an exclusive total below 0 shows 0: each span at most the resolution
    # shorter than its callees)
    if abs(diff) > tol if n["exclusive_ns"] else not -n["calls"] * res - tol <= diff <= tol:
        sys.exit(f"e2e_replay: FAIL: {prog}: {n['name']}: inclusive {n['inclusive_ns']} != "
                 f"exclusive {n['exclusive_ns']} + its callees' {callees}")
PY
    done
}
scenario over over
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_mpi.sh - an MPI job recorded both ways docs/multi-process.md gives:
# `mpirun -np N rankprof record -- prog` (each rank's rankprof: one file per
# rank, NAME taken by the first and NAME.PID by the others) and `rankprof
# record -- mpirun -np N prog` (the launcher's file holds no events; its
# forks that exec leave no empty file).  Exact calls (tests/progs/mpi_ring.c)
# over N ranks: rank_work 3N(N+1)/2, ring_step 10N, wait_token 10N; rank R
# alone (--rank R): rank_work 3(R+1), ring_step 10, wait_token 10.  Each
# rank's file says its rank (JSON processes[].rank), its pid and host.
# Needs mpirun and prog_mpi_ring (built when CMake finds mpicc): skipped
# (77) without them.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_mpi RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
under_asan && export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
# (Open MPI's own races, in the launcher: tests/tsan-mpi.supp)
under_tsan && export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}suppressions=$here/tsan-mpi.supp"
R() { $TMO "$RANKPROF" "$@"; }
MPIRUN=(mpirun --oversubscribe)

# many: 12 synthetic processes (bench/gen_procs: one thread each, all with
# tid 1, as ranks on different hosts may have) merged: exact counts, and
# their OTF2 archive has 12 locations, one per process, with exact events
many() {
    local gen=$PROGS/../bench/gen_procs
    [[ -x $gen ]] || fail "no $gen"
    mkdir -p "$tmp/many"
    "$gen" "$tmp/many" 12 1000 20 || fail "gen_procs"
    R report -i "$tmp/many/rp.data" --format json >"$tmp/many.json" 2>/dev/null || fail "report"
    python3 - "$tmp/many.json" <<'PY' || fail "merged counts"
import json, sys
r = json.load(open(sys.argv[1]))
c = {}
for n in r["nodes"]: c[n["name"]] = c.get(n["name"], 0) + n["calls"]
assert len(r["processes"]) == 12 and sorted(p["rank"] for p in r["processes"]) == list(range(12))
assert c["outer"] == 12 * 100 and all(c["fn_%d" % k] == 12 * 50 for k in range(20)), c
PY
    command -v otf2-print >/dev/null || return 0
    R export --format otf2 -i "$tmp/many/rp.data" -o "$tmp/many.otf2" 2>/dev/null || return 0
    otf2-print -G "$tmp/many.otf2/traces.otf2" | grep -c "^LOCATION " >"$tmp/many.n"
    [[ $(cat "$tmp/many.n") == 12 ]] || fail "locations: $(cat "$tmp/many.n"), expected 12"
    n=$(otf2-print "$tmp/many.otf2/traces.otf2" | grep -c "^ENTER")
    [[ $n == $((12 * 1100)) ]] || fail "enters: $n, expected $((12 * 1100))"
}
scenario many many
if ! command -v mpirun >/dev/null || [[ ! -x $PROGS/prog_mpi_ring ]]; then
    missing mpirun "no mpirun or no prog_mpi_ring (mpicc): scripts/deps.sh test installs openmpi"
    finish
fi

# check FILE N [--rank R] : the calls of the run recorded to FILE over N
# ranks (or rank R's), and processes[] names ranks 0..N-1 once each with
# this host and the pids the program printed ($tmp/FILE.out)
check() {
    local f=$1 n=$2
    shift 2
    R report -i "$tmp/$f" --format json "$@" >"$tmp/$f.json" 2>"$tmp/$f.rerr" ||
        fail "report $f $*: $(cat "$tmp/$f.rerr")"
    python3 - "$tmp/$f.json" "$n" "$tmp/$f.out" "$(hostname)" "$@" <<'PY' || fail "$f $*: wrong counts or processes"
import json, sys
r = json.load(open(sys.argv[1])); n = int(sys.argv[2]); host = sys.argv[4]
c = {}
for x in r["nodes"]:
    c[x["name"]] = c.get(x["name"], 0) + x["calls"]
got = [c.get(k, 0) for k in ("rank_work", "ring_step", "wait_token")]
pids = {}
for l in open(sys.argv[3]):
    w = l.split()
    pids[int(w[1])] = int(w[5])
if len(sys.argv) > 6:  # --rank R
    k = int(sys.argv[6])
    want = [3 * (k + 1), 10, 10]
else:
    want = [3 * n * (n + 1) // 2, 10 * n, 10 * n]
if got != want:
    sys.exit("calls rank_work ring_step wait_token = %s, expected %s" % (got, want))
if len(sys.argv) > 6:
    sys.exit(0)
ranks = {}
for p in r["processes"]:
    if "rank" in p:
        if p["rank"] in ranks: sys.exit("rank %d twice" % p["rank"])
        ranks[p["rank"]] = p
        if p["pid"] != pids[p["rank"]]: sys.exit("rank %d: pid %d, printed %d" % (p["rank"], p["pid"], pids[p["rank"]]))
        if p.get("host") != host: sys.exit("rank %d: host %s" % (p["rank"], p.get("host")))
        if not p["events"] or not p["ended_normally"]: sys.exit("rank %d: %s" % (p["rank"], p))
    elif p["events"]:
        sys.exit("a process without a rank has events: %s" % p)
if sorted(ranks) != list(range(n)):
    sys.exit("ranks %s, expected 0..%d" % (sorted(ranks), n - 1))
PY
}

inside() { # inside N: mpirun -np N rankprof record -- prog
    local n=$1 f=in$1.data
    $TMO "${MPIRUN[@]}" -np "$n" "$RANKPROF" record -o "$tmp/$f" -- "$PROGS/prog_mpi_ring" \
        >"$tmp/$f.out" 2>"$tmp/$f.err" || fail "mpirun -np $n rankprof record: $(cat "$tmp/$f.err")"
    # one file per rank, each complete (the "one corrupted file" of a shared name)
    [[ $(ls "$tmp" | grep -c "^$f\(\.[0-9]*\)\?$") == "$n" ]] || fail "files: $(ls "$tmp")"
    check "$f" "$n"
    for ((k = 0; k < n; k++)); do check "$f" "$n" --rank "$k"; done
}

outside() { # outside N: rankprof record -- mpirun -np N prog
    local n=$1 f=out$1.data
    R record -o "$tmp/$f" -- "${MPIRUN[@]}" -np "$n" "$PROGS/prog_mpi_ring" \
        >"$tmp/$f.out" 2>"$tmp/$f.err" || fail "rankprof record -- mpirun: $(cat "$tmp/$f.err")"
    # the launcher's file and one per rank: no empty file of a fork that exec'd
    [[ $(ls "$tmp" | grep -c "^$f\(\.[0-9]*\)\?$") == $((n + 1)) ]] || fail "files: $(ls "$tmp")"
    check "$f" "$n"
    check "$f" "$n" --rank $((n - 1))
}

# export --format otf2 of the 3-rank run, read back by otf2-print: one
# location group per process (the launcher's and ranks 0..2), one location
# per thread with its exact event count, Enter/Leave of each function as
# many as its calls, timestamps never backwards per location, and the
# processes on one axis: every rank > 0 leaves its first wait_token after
# rank 0 has left its 100 ms nanosleep (the token is sent after it).
otf2() {
    [[ -f $tmp/out3.data ]] || fail "no out3.data (scenario outside3 failed)"
    if ! command -v otf2-print >/dev/null; then
        missing otf2-print "no otf2-print: scripts/deps.sh test installs otf2-tools"
        return 0
    fi
    if ! R export --format otf2 -i "$tmp/out3.data" -o "$tmp/arch" 2>"$tmp/otf2.err"; then
        grep -q "unavailable" "$tmp/otf2.err" || fail "export otf2: $(cat "$tmp/otf2.err")"
        missing libotf2 "this build has no libotf2 (libotf2-trace-dev)"
        return 0
    fi
    ! R export --format otf2 -i "$tmp/out3.data" -o "$tmp/arch" 2>"$tmp/otf2.err" ||
        fail "export over an existing archive passed"
    grep -q "exists" "$tmp/otf2.err" || fail "message: $(cat "$tmp/otf2.err")"
    otf2-print -G "$tmp/arch/traces.otf2" >"$tmp/defs.txt" 2>"$tmp/print.err" || fail "otf2-print -G"
    otf2-print "$tmp/arch/traces.otf2" >"$tmp/evts.txt" 2>>"$tmp/print.err" || fail "otf2-print"
    [[ ! -s $tmp/print.err ]] || fail "otf2-print warns: $(head -3 "$tmp/print.err")"
    R report -i "$tmp/out3.data" --format json >"$tmp/all.json" 2>/dev/null || fail "report"
    python3 - "$tmp/defs.txt" "$tmp/evts.txt" "$tmp/all.json" <<'PY' || fail "otf2 archive"
import json, re, sys
defs = open(sys.argv[1]).read().splitlines()
groups = [l for l in defs if l.startswith("LOCATION_GROUP ")]
names = sorted(re.search(r'Name: "([^"]*)"', l).group(1).split(" (")[0] for l in groups)
assert len(groups) == 4 and names[1:] == ["rank 0", "rank 1", "rank 2"] and names[0].startswith("pid "), groups
locs = {}
for l in defs:
    if l.startswith("LOCATION "):
        m = re.match(r'LOCATION\s+(\d+)\s.*# Events: (\d+), Group: "([^"]*)"', l)
        locs[m.group(1)] = [int(m.group(2)), m.group(3), 0, -1]
# one location per thread of the ranks (the launcher records none)
r = json.load(open(sys.argv[3]))
assert len(locs) == len(r["thread_list"]), (len(locs), len(r["thread_list"]))
enter = {}; leave = {}; first_wait = {}; sleep_end = None
for l in open(sys.argv[2]):
    w = l.split()
    if not w or w[0] not in ("ENTER", "LEAVE"):
        continue
    loc, ts = w[1], int(w[2])
    name = re.search(r'Region: "([^"]*)"', l).group(1)
    x = locs[loc]
    x[2] += 1
    assert ts >= x[3], "location %s goes backwards at %d" % (loc, ts)
    x[3] = ts
    d = enter if w[0] == "ENTER" else leave
    d[name] = d.get(name, 0) + 1
    grp = x[1].split(" (")[0]
    if w[0] == "LEAVE" and name == "nanosleep [wait]" and grp == "rank 0":
        sleep_end = ts
    if w[0] == "LEAVE" and name == "wait_token" and grp != "rank 0" and grp not in first_wait:
        first_wait[grp] = ts
for k, x in locs.items():
    assert x[0] == x[2], "location %s: %d events defined, %d read" % (k, x[0], x[2])
want = {"rank_work": 18, "ring_step": 30, "wait_token": 30}
for k, v in want.items():
    assert enter.get(k) == v and leave.get(k) == v, (k, enter.get(k), leave.get(k), v)
assert sleep_end is not None and len(first_wait) == 2, (sleep_end, first_wait)
for g, ts in first_wait.items():
    assert ts > sleep_end, "%s leaves wait_token at %d, before rank 0's sleep ends at %d" % (g, ts, sleep_end)
PY
}

# librankprof-mpi (record --mpi), 2 ranks: MPI calls are wait spans with
# exact counts (MPI_Send 20, MPI_Recv 20, MPI_Barrier 2), wait_token's
# time is its MPI_Recv's (its self time under 10% of its total, not HOT),
# MPI_Init and MPI_Finalize are spans too (2 each) and main's self time is
# under 10% of its total (the library's start-up is not main's work); no
# row is an interposed wait or lock of the MPI library's own (file-less
# kinds wait, lock-wait, lock-hold other than the program's nanosleep):
# those are outside the program's code, in outside.nodes; each rank's file has its clock offsets, and in the OTF2 archive with the
# offsets applied (-O offsets=on) the k-th send of a rank begins before
# the k-th receive of its peer ends, and each send and receive carries its
# message (MPI_SEND to, MPI_RECV from the other rank: 20 each, tag 7).
# The error bound of the clock offsets the files of run F measured (half
# the longest round trip of their clock_offset_init and _fini, in ns): with
# the offsets applied, two ranks' times agree within it (multi-process.md).
offset_err() { # F
    python3 - "$tmp/$1" "$tmp/$1".*[0-9] <<'PY'
import re, sys
rtt = [float(m.group(1)) for f in sys.argv[1:] for m in
       re.finditer(rb"clock_offset_(?:init|fini).{4}-?[0-9.]+ -?[0-9.]+ ([0-9.]+)", open(f, "rb").read(), re.S)]
if len(rtt) < 2 * (len(sys.argv) - 1):
    sys.exit("e2e_mpi: FAIL: clock offsets without a round trip")
print(int(max(rtt) / 2) + 1)
PY
}

pmpi() {
    local f=mpi.data lib err
    lib=$(dirname "$RP_LIB")/librankprof-mpi.so
    if [[ ! -f $lib ]]; then
        missing librankprof-mpi "no $lib (built when mpicc is found)"
        return 0
    fi
    $TMO "${MPIRUN[@]}" -np 2 "$RANKPROF" record --mpi -o "$tmp/$f" -- "$PROGS/prog_mpi_ring" \
        >"$tmp/$f.out" 2>"$tmp/$f.err" || fail "mpirun rankprof record --mpi: $(cat "$tmp/$f.err")"
    check "$f" 2
    for x in "$tmp/$f" "$tmp/$f".*[0-9]; do
        grep -aq clock_offset_init "$x" && grep -aq clock_offset_fini "$x" ||
            fail "$x: no clock offsets"
    done
    python3 - "$tmp/$f.json" <<'PY' || fail "MPI spans"
import json, sys
r = json.load(open(sys.argv[1]))
n = {}
for x in r["nodes"]:
    k = n.setdefault(x["name"], {"calls": 0, "self": 0, "total": 0, "kind": x["kind"], "flags": set()})
    k["calls"] += x["calls"]; k["self"] += x["exclusive_ns"]; k["total"] += x["inclusive_ns"]
    k["flags"] |= set(x.get("flags", []))
for name, calls in (("MPI_Send [wait]", 20), ("MPI_Recv [wait]", 20), ("MPI_Barrier [wait]", 2)):
    assert name in n and n[name]["calls"] == calls and n[name]["kind"] == "wait", (name, n.get(name))
for name in ("MPI_Init [wait]", "MPI_Finalize [wait]"):
    assert name in n and n[name]["calls"] == 2, (name, n.get(name))
for name in ("wait_token", "main"):
    w = n[name]
    assert w["self"] * 10 < w["total"], "%s: self %d of %d ns" % (name, w["self"], w["total"])
    assert "HOT" not in w["flags"], (name, w)
lib = [x["name"] for x in r["nodes"] if x["kind"] in ("wait", "lock-wait", "lock-hold")
       and not x.get("file") and x["name"] != "nanosleep [wait]"]
assert not lib, "the MPI library's own waits as rows: %s" % lib[:8]
assert r["outside"]["apart"] and r["outside"]["calls"] > 0, r["outside"]
PY
    R export --format otf2 -O offsets=on -i "$tmp/$f" -o "$tmp/march" 2>"$tmp/march.err" ||
        fail "export: $(cat "$tmp/march.err")"
    otf2-print -G "$tmp/march/traces.otf2" >"$tmp/mdefs.txt" 2>/dev/null || fail "otf2-print -G"
    otf2-print "$tmp/march/traces.otf2" >"$tmp/mevts.txt" 2>/dev/null || fail "otf2-print"
    err=$(offset_err "$f") || fail "(above)"
    python3 - "$tmp/mdefs.txt" "$tmp/mevts.txt" "$err" <<'PY' || fail "send/receive order"
import re, sys
grp = {}
for l in open(sys.argv[1]):
    m = re.match(r'LOCATION\s+(\d+)\s.*Group: "rank (\d+)', l)
    if m: grp[m.group(1)] = int(m.group(2))
send = {0: [], 1: []}; recv = {0: [], 1: []}
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) < 3 or w[1] not in grp: continue
    if w[0] == "ENTER" and '"MPI_Send' in l: send[grp[w[1]]].append(int(w[2]))
    if w[0] == "LEAVE" and '"MPI_Recv' in l: recv[grp[w[1]]].append(int(w[2]))
assert all(len(v) == 10 for v in send.values()) and all(len(v) == 10 for v in recv.values()), (send, recv)
# the messages: an MPI_SEND to the other rank in each send, an MPI_RECV from it in each receive
msgs = {"MPI_SEND": [], "MPI_RECV": []}
for l in open(sys.argv[2]):
    w = l.split()
    if w and w[0] in msgs:
        peer = int(re.search(r'(Receiver|Sender): (\d+)', l).group(2))
        assert peer == 1 - grp[w[1]], l
        assert ", Tag: 7," in l, "not the ring's tag 7: " + l
        msgs[w[0]].append(l)
assert len(msgs["MPI_SEND"]) == 20 and len(msgs["MPI_RECV"]) == 20, {k: len(v) for k, v in msgs.items()}
for a, b in ((0, 1), (1, 0)):
    for k in range(10):
        # (offsets applied: the ranks' clocks agree within err ns)
        assert send[a][k] < recv[b][k] + int(sys.argv[3]), "rank %d's send %d at %d, rank %d's receive ends at %d (offsets within %s ns)" % (a, k, send[a][k], b, recv[b][k], sys.argv[3])
PY
}

# inject DIR INIT FINI: rank 1's file of the run copied into DIR says it ran
# on another host ("skewhost") with clock offsets INIT and FINI ("LOCAL_NS
# OFFSET_NS RTT_NS"): an INFO chunk inserted before its own
inject() {
    mkdir -p "$1"
    cp "$tmp/mpi.data" "$tmp"/mpi.data.[0-9]* "$1/"
    python3 - "$2" "$3" "$1"/mpi.data* <<'PY' || fail "inserting the offset"
import struct, sys, zlib
init, fini = sys.argv[1].encode(), sys.argv[2].encode(); done = 0
def info(b):
    out = {}; q = 0
    while q + 2 <= len(b):
        k = struct.unpack_from("<H", b, q)[0]; key = b[q + 2:q + 2 + k]; q += 2 + k
        v = struct.unpack_from("<I", b, q)[0]; out[key] = b[q + 4:q + 4 + v]; q += 4 + v
    return out
for path in sys.argv[3:]:
    b = open(path, "rb").read(); off = 32; rank = None
    while off + 16 <= len(b):
        t, n = struct.unpack_from("<II", b, off)
        if t == 1: rank = info(b[off + 16:off + 16 + n]).get(b"rank", rank)
        off += 16 + n
    if rank != b"1": continue
    kv = b""
    for k, v in ((b"host", b"skewhost"), (b"clock_offset_init", init), (b"clock_offset_fini", fini)):
        kv += struct.pack("<H", len(k)) + k + struct.pack("<I", len(v)) + v
    h = struct.pack("<III", 1, len(kv), zlib.crc32(kv))
    h += struct.pack("<I", zlib.crc32(h))
    open(path, "wb").write(b[:32] + h + kv + b[32:]); done += 1
assert done == 1, done
PY
}

# axis (not under TSan): every timeline on one axis (src/report/clockmap.c),
# on the 2-rank --mpi ring of pmpi.  In chrome and perfetto (read back by
# trace_processor when tests/consumers/tp_query.cc builds; chrome also by
# python), with the measured offsets applied (-O offsets=on) and without,
# the k-th MPI_Send of a rank begins before the k-th MPI_Recv of its peer
# ends (20 messages).  A copy of the run whose rank 1 says it ran on
# another host with a clock offset of D = 1234567 ns (an INFO chunk
# inserted before its own) has every event of rank 1 exactly D later
# relative to rank 0's events than with -O offsets=off, in chrome,
# perfetto and OTF2, and than in the original run in rankprof dump; and
# with an offset drifting from 1 ms at the run's first event to 3 ms at
# its last, OTF2's rank 1 moves by the linear interpolation, within 2 ns.
axis() {
    [[ -f $tmp/mpi.data ]] || fail "no mpi.data (scenario pmpi failed or was skipped)"
    local D=1234567 f tp= err
    inject "$tmp/skew" "0 $D 0" "1 $D 0"
    R report -i "$tmp/mpi.data" --format json >"$tmp/axis.json" 2>/dev/null || fail "report"
    if tp_query_build "$tmp/tp_query"; then
        tp=$tmp/tp_query
    else
        missing trace_processor "no $TP_LIB (chromium-shell) or clang++: perfetto not read back"
    fi
    local q="select p.pid, s.name, s.ts, s.dur from slice s join thread_track tt on s.track_id = tt.id
             join thread using (utid) join process p using (upid) order by p.pid, s.ts, s.depth, s.name"
    for o in on off; do
        for f in chrome perfetto; do
            R export --format $f -O offsets=$o -i "$tmp/mpi.data" -o "$tmp/ax.$o.$f" 2>"$tmp/ax.err" ||
                fail "export $f -O offsets=$o: $(cat "$tmp/ax.err")"
            R export --format $f -O offsets=${o/on/auto} -i "$tmp/skew/mpi.data" -o "$tmp/sk.$o.$f" \
                2>"$tmp/ax.err" || fail "export $f -O offsets=$o of the skewed copy: $(cat "$tmp/ax.err")"
            [[ -z $tp ]] && continue
            "$tp" "$tmp/ax.$o.$f" "$q" >"$tmp/ax.$o.$f.tsv" || fail "trace_processor rejected ax.$o.$f"
            "$tp" "$tmp/sk.$o.$f" "$q" >"$tmp/sk.$o.$f.tsv" || fail "trace_processor rejected sk.$o.$f"
        done
    done
    err=$(offset_err mpi.data) || fail "(above)"
    python3 - "$tmp" "$D" "$tp" "$err" <<'PY' || fail "one time axis"
import json, os, sys
tmp, D, tp, err = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
rank = {p["pid"]: p["rank"] for p in json.load(open(tmp + "/axis.json"))["processes"] if "rank" in p}
assert sorted(rank.values()) == [0, 1], rank
def chrome(path):  # [(pid, name, ts ns, dur ns)] from the X events, in file order
    ev = json.load(open(path))["traceEvents"]
    return [(e["pid"], e["name"], round(e["ts"] * 1000), round(e["dur"] * 1000))
            for e in ev if e["ph"] == "X"]
def tsv(path):
    return [(int(w[0]), w[1], int(w[2]), int(w[3])) for w in (l.rstrip("\n").split("\t") for l in open(path))]
readers = [("chrome", chrome, "chrome")] + ([("perfetto", tsv, "perfetto.tsv"), ("chrome/tp", tsv, "chrome.tsv")] if tp else [])
for what, read, suf in readers:
    for o in ("on", "off"):
        s = read("%s/ax.%s.%s" % (tmp, o, suf))
        send = {0: [], 1: []}; recv = {0: [], 1: []}
        for pid, name, ts, dur in s:
            if pid not in rank: continue
            if name == "MPI_Send [wait]": send[rank[pid]].append(ts)
            if name == "MPI_Recv [wait]": recv[rank[pid]].append(ts + dur)
        assert all(len(v) == 10 for v in list(send.values()) + list(recv.values())), (what, o, send, recv)
        for a in (0, 1):
            send[a].sort(); recv[1 - a].sort()
            for k in range(10):
                # (offsets on: the ranks' clocks agree within err ns; off:
                # one host, one clock)
                assert send[a][k] < recv[1 - a][k] + (err if o == "on" else 0), "%s offsets=%s: rank %d's send %d begins at %d, rank %d's receive ends at %d (offsets within %d ns)" % (what, o, a, k, send[a][k], 1 - a, recv[1 - a][k], err)
    on, off = read("%s/sk.on.%s" % (tmp, suf)), read("%s/sk.off.%s" % (tmp, suf))
    assert len(on) == len(off) > 100, (what, len(on), len(off))
    shift = {}
    for x, y in zip(on, off):
        assert x[0] == y[0] and x[1] == y[1], (what, x, y)
        shift.setdefault(rank.get(x[0]), set()).add(x[2] - y[2])
    s0, s1 = shift[0], shift[1]
    assert max(s0) - min(s0) <= 2 and max(s1) - min(s1) <= 2, (what, sorted(s0)[:3], sorted(s1)[:3])
    d = min(s1) - min(s0)
    assert abs(d - D) <= 2, "%s: rank 1 moved %d ns against rank 0, the offset is %d ns" % (what, d, D)
    print("%s: rank 1's events move %d ns against rank 0's (offset %d ns)" % (what, d, D))
PY
    R dump -i "$tmp/mpi.data" >"$tmp/ax.dump" 2>/dev/null || fail "dump"
    R dump -i "$tmp/skew/mpi.data" >"$tmp/sk.dump" 2>/dev/null || fail "dump of the skewed copy"
    local otf=
    if command -v otf2-print >/dev/null; then
        for o in auto off; do
            R export --format otf2 -O offsets=$o -i "$tmp/skew/mpi.data" -o "$tmp/sk.$o.otf2" \
                2>"$tmp/ax.err" || fail "export otf2: $(cat "$tmp/ax.err")"
            otf2-print -G "$tmp/sk.$o.otf2/traces.otf2" >"$tmp/sk.$o.defs" || fail "otf2-print -G"
            otf2-print "$tmp/sk.$o.otf2/traces.otf2" >"$tmp/sk.$o.evts" || fail "otf2-print"
        done
        otf=1
    fi
    python3 - "$tmp" "$D" "$otf" <<'PY' || fail "one time axis (dump, otf2)"
import json, re, sys
tmp, D, otf = sys.argv[1], int(sys.argv[2]), sys.argv[3]
rank = {p["pid"]: p["rank"] for p in json.load(open(tmp + "/axis.json"))["processes"] if "rank" in p}
def dump(path):
    out = []; pid = None
    for l in open(path):
        m = re.match(r"# file .*, pid (\d+)$", l)
        if m: pid = int(m.group(1))
        if l.startswith("#"): continue
        out.append((rank.get(pid), l[16:].rstrip(), int(l[:14])))
    return out
def otf2(o):
    grp = {}
    for l in open("%s/sk.%s.defs" % (tmp, o)):
        m = re.match(r'LOCATION\s+(\d+)\s.*Group: "rank (\d+)', l)
        if m: grp[m.group(1)] = int(m.group(2))
    out = {}  # (otf2-print merges the locations in time order: each apart)
    for l in open("%s/sk.%s.evts" % (tmp, o)):
        w = l.split()
        if len(w) > 2 and w[0] in ("ENTER", "LEAVE") and w[1] in grp:
            out.setdefault(int(w[1]), []).append((grp[w[1]], w[0] + " " + " ".join(w[3:]), int(w[2])))
    return [x for k in sorted(out) for x in out[k]]
pairs = [("dump", dump(tmp + "/sk.dump"), dump(tmp + "/ax.dump"))]
if otf: pairs.append(("otf2", otf2("auto"), otf2("off")))
for what, a, b in pairs:
    assert len(a) == len(b) > 100, (what, len(a), len(b))
    shift = {}
    for x, y in zip(a, b):
        assert x[:2] == y[:2], (what, x, y)
        shift.setdefault(x[0], set()).add(x[2] - y[2])
    s0, s1 = shift[0], shift[1]
    assert max(s0) - min(s0) <= 2 and max(s1) - min(s1) <= 2, (what, sorted(s0)[:3], sorted(s1)[:3])
    d = min(s1) - min(s0)
    assert abs(d - D) <= 2, "%s: rank 1 moved %d ns against rank 0, the offset is %d ns" % (what, d, D)
    print("%s: rank 1's events move %d ns against rank 0's (offset %d ns)" % (what, d, D))
PY
    [[ -n $otf ]] || return 0
    # a drifting offset, 1 ms at the first event's time, 3 ms at the last's:
    # applied linearly in time, exactly (OTF2's times are absolute)
    local t0 t1
    read -r t0 t1 < <(awk '($1 == "ENTER" || $1 == "LEAVE") { if (!a || $3 < a) a = $3; if ($3 > b) b = $3 }
                           END { print a, b }' "$tmp/sk.off.evts")
    inject "$tmp/drift" "$t0 1000000 0" "$t1 3000000 0"
    R export --format otf2 -i "$tmp/drift/mpi.data" -o "$tmp/dr.otf2" 2>"$tmp/ax.err" ||
        fail "export otf2 (drift): $(cat "$tmp/ax.err")"
    otf2-print "$tmp/dr.otf2/traces.otf2" >"$tmp/dr.evts" || fail "otf2-print"
    python3 - "$tmp/sk.off.defs" "$tmp/sk.off.evts" "$tmp/dr.evts" "$t0" "$t1" <<'PY' || fail "drifting offset"
import re, sys
t0, t1 = int(sys.argv[4]), int(sys.argv[5])
grp = {}
for l in open(sys.argv[1]):
    m = re.match(r'LOCATION\s+(\d+)\s.*Group: "rank (\d+)', l)
    if m: grp[m.group(1)] = int(m.group(2))
def ev(path):
    out = {}
    for l in open(path):
        w = l.split()
        if len(w) > 2 and w[0] in ("ENTER", "LEAVE") and w[1] in grp:
            out.setdefault(w[1], []).append(int(w[2]))
    return out
a, b = ev(sys.argv[2]), ev(sys.argv[3])
worst, n = 0, 0
for loc in a:
    assert len(a[loc]) == len(b[loc]), loc
    for x, y in zip(a[loc], b[loc]):
        want = 0 if grp[loc] == 0 else 1000000 + (x - t0) * 2000000 / (t1 - t0)
        worst = max(worst, abs(y - x - want)); n += grp[loc] == 1
assert n > 100 and worst <= 2, "rank 1's shift is off the linear drift by up to %d ns" % worst
print("otf2: a drifting offset is applied linearly (within %d ns, %d events)" % (worst, n))
PY
}

bad_rank() {
    [[ -f $tmp/in2.data ]] || fail "no in2.data (scenario inside2 failed)"
    ! R report -i "$tmp/in2.data" --rank 5 >/dev/null 2>"$tmp/bad.err" || fail "--rank 5 passed"
    grep -q "rank 5.*rank 0" "$tmp/bad.err" || fail "message: $(cat "$tmp/bad.err")"
    ! R report -i "$tmp/in2.data" --rank x >/dev/null 2>"$tmp/bad.err" || fail "--rank x passed"
    grep -q -- "--rank x" "$tmp/bad.err" || fail "message: $(cat "$tmp/bad.err")"
}

scenario inside2 inside 2
# (4 ranks: not under the sanitizers, where 2 ranks take the same paths and
# every rank starts slowly)
sanitized || scenario inside4 inside 4
scenario outside3 outside 3
scenario bad_rank bad_rank
# librankprof-mpi on non-blocking calls: prog_mpi_halo (3 ranks, 10
# rounds of MPI_Irecv x 2, MPI_Isend x 2, MPI_Waitall, MPI_Allgatherv):
# exact counts of each MPI span and of the program's functions, merged;
# in its OTF2 archive (otf2-print) 60 each of MPI_ISEND, MPI_ISEND_COMPLETE,
# MPI_IRECV_REQUEST and MPI_IRECV, each request id of a location started
# and completed once, inside MPI_Isend/MPI_Irecv and MPI_Waitall, every
# message to or from a neighbour with its tag (1 to the right, 2 to the
# left); dump names the ARGs (120 requests started, 60 sends and 60
# receives completed, 60 tags 1 and 60 tags 2); and the sequence diagram
# (-O classes=mpi) draws each send and each receive Waitall completed
# between two ranks' threads with its tag
halo() {
    local lib=$(dirname "$RP_LIB")/librankprof-mpi.so
    if [[ ! -f $lib || ! -x $PROGS/prog_mpi_halo ]]; then
        missing librankprof-mpi "no $lib or prog_mpi_halo (built when mpicc is found)"
        return 0
    fi
    $TMO "${MPIRUN[@]}" -np 3 "$RANKPROF" record --mpi -o "$tmp/halo.data" -- \
        "$PROGS/prog_mpi_halo" 10 >"$tmp/halo.out" 2>"$tmp/halo.err" ||
        fail "mpirun rankprof record --mpi prog_mpi_halo: $(cat "$tmp/halo.err")"
    [[ $(grep -c "^halo rank [0-2] of 3: 21 19$" "$tmp/halo.out") == 3 ]] ||
        fail "prog_mpi_halo printed: $(cat "$tmp/halo.out")"
    R report -i "$tmp/halo.data" --format json >"$tmp/halo.json" 2>/dev/null || fail "report"
    python3 - "$tmp/halo.json" <<'PY' || fail "halo: wrong counts"
import json, sys
r = json.load(open(sys.argv[1]))
c = {}
for x in r["nodes"]:
    c[x["name"]] = c.get(x["name"], 0) + x["calls"]
want = {"exchange": 30, "stencil": 30, "MPI_Irecv [wait]": 60, "MPI_Isend [wait]": 60,
        "MPI_Waitall [wait]": 30, "MPI_Allgatherv [wait]": 30, "MPI_Init [wait]": 3,
        "MPI_Finalize [wait]": 3}
got = {k: c.get(k, 0) for k in want}
assert got == want, got
PY
    command -v otf2-print >/dev/null || return 0
    R export --format otf2 -i "$tmp/halo.data" -o "$tmp/halo.otf2" 2>"$tmp/halo.err" ||
        fail "export otf2: $(cat "$tmp/halo.err")"
    otf2-print -G "$tmp/halo.otf2/traces.otf2" >"$tmp/halo.defs" || fail "otf2-print -G"
    otf2-print "$tmp/halo.otf2/traces.otf2" >"$tmp/halo.evts" 2>"$tmp/halo.perr" || fail "otf2-print"
    [[ ! -s $tmp/halo.perr ]] || fail "otf2-print warns: $(head -3 "$tmp/halo.perr")"
    python3 - "$tmp/halo.defs" "$tmp/halo.evts" <<'PY' || fail "halo: OTF2 messages"
import re, sys
grp = {}
for l in open(sys.argv[1]):
    m = re.match(r'LOCATION\s+(\d+)\s.*Group: "rank (\d+)', l)
    if m: grp[m.group(1)] = int(m.group(2))
kinds = ("MPI_ISEND", "MPI_ISEND_COMPLETE", "MPI_IRECV_REQUEST", "MPI_IRECV")
n = {k: 0 for k in kinds}; ids = {}; region = {}
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) < 3 or w[1] not in grp: continue
    st = region.setdefault(w[1], [])  # (the MPI library's own waits may nest)
    if w[0] == "ENTER": st.append(re.search(r'Region: "([^"]*)"', l).group(1))
    if w[0] == "LEAVE": st.pop()
    if w[0] not in kinds: continue
    n[w[0]] += 1
    r = grp[w[1]]; left, right = (r + 2) % 3, (r + 1) % 3
    want = {"MPI_ISEND": "MPI_Isend [wait]", "MPI_IRECV_REQUEST": "MPI_Irecv [wait]"}.get(w[0], "MPI_Waitall [wait]")
    assert region[w[1]] and region[w[1]][-1] == want, (l, region[w[1]])
    req = int(re.search(r"Request: (\d+)", l).group(1))
    ids.setdefault((w[1], w[0]), []).append(req)
    if w[0] in ("MPI_ISEND", "MPI_IRECV"):
        peer = int(re.search(r"(Receiver|Sender): (\d+)", l).group(2))
        tag = int(re.search(r"Tag: (\d+)", l).group(1))
        send = w[0] == "MPI_ISEND"
        assert peer in (left, right), l
        assert tag == (1 if (peer == right) == send else 2), "rank %d: %s" % (r, l)
        assert int(re.search(r"Length: (\d+)", l).group(1)) == 8, l
assert n == {k: 60 for k in kinds}, n
for loc in set(k[0] for k in ids):
    for a, b in (("MPI_ISEND", "MPI_ISEND_COMPLETE"), ("MPI_IRECV_REQUEST", "MPI_IRECV")):
        x, y = ids[(loc, a)], ids[(loc, b)]
        assert len(set(x)) == len(x) == 20 and sorted(x) == sorted(y), (loc, a, x, y)
PY
    R dump -i "$tmp/halo.data" >"$tmp/halo.dump" || fail "dump"
    local k want
    for k in "request [0-9]*)" "send request [0-9]* done)" "receive request [0-9]* done)" "tag 1)" "tag 2)"; do
        want=60
        [[ $k == request* ]] && want=120
        [[ $(grep -c " arg .*($k\$" "$tmp/halo.dump") == "$want" ]] ||
            fail "dump: $(grep -c " arg .*($k\$" "$tmp/halo.dump") ARGs '($k', expected $want"
    done
    R export --format plantuml -O classes=mpi -i "$tmp/halo.data" -o "$tmp/halo.puml" ||
        fail "export plantuml"
    python3 - "$tmp/halo.puml" <<'PY' || fail "halo: sequence diagram"
import collections, re, sys
c = collections.Counter(); parts = set()
for l in open(sys.argv[1]):
    m = re.match(r'participant "T\d+ prog_mpi_halo" as (P\d+)', l)
    if m: parts.add(m.group(1))
    m = re.match(r"(P\d+) (->|-->) (P\d+) : .* (MPI_\w+) tag (\d+), 8 B$", l)
    if m:
        assert m.group(1) != m.group(3) and {m.group(1), m.group(3)} <= parts, l
        c[(m.group(2), m.group(4), int(m.group(5)))] += 1
want = {(a, n, t): 30 for a, n in (("->", "MPI_Isend"), ("-->", "MPI_Waitall")) for t in (1, 2)}
assert len(parts) == 3 and c == want, (parts, c)
PY
}

# the halo with MPI_Sendrecv (prog_mpi_halo 10 sendrecv, 3 ranks): 60
# MPI_Sendrecv spans; in OTF2 each holds an MPI_SEND to its destination
# and an MPI_RECV from its source, with the tags (1 to the right, 2 to the
# left), 60 of each; the sequence diagram draws each send and receive
sendrecv() {
    local lib=$(dirname "$RP_LIB")/librankprof-mpi.so
    if [[ ! -f $lib || ! -x $PROGS/prog_mpi_halo ]]; then
        missing librankprof-mpi "no $lib or prog_mpi_halo (built when mpicc is found)"
        return 0
    fi
    $TMO "${MPIRUN[@]}" -np 3 "$RANKPROF" record --mpi -o "$tmp/sr.data" -- \
        "$PROGS/prog_mpi_halo" 10 sendrecv >"$tmp/sr.out" 2>"$tmp/sr.err" ||
        fail "mpirun rankprof record --mpi prog_mpi_halo sendrecv: $(cat "$tmp/sr.err")"
    R report -i "$tmp/sr.data" --format json >"$tmp/sr.json" 2>/dev/null || fail "report"
    python3 -c "
import json, sys
c = sum(x['calls'] for x in json.load(open(sys.argv[1]))['nodes'] if x['name'] == 'MPI_Sendrecv [wait]')
assert c == 60, c" "$tmp/sr.json" || fail "MPI_Sendrecv calls"
    R export --format plantuml -O classes=mpi -i "$tmp/sr.data" -o "$tmp/sr.puml" || fail "plantuml"
    local n
    n=$(grep -Ec '^P[0-9]+ -> P[0-9]+ : .* MPI_Sendrecv tag [12], 8 B$' "$tmp/sr.puml")
    [[ $n == 60 ]] || fail "sequence diagram: $n sends, expected 60"
    n=$(grep -Ec '^P[0-9]+ --> P[0-9]+ : .* MPI_Sendrecv tag [12], 8 B$' "$tmp/sr.puml")
    [[ $n == 60 ]] || fail "sequence diagram: $n receives, expected 60"
    command -v otf2-print >/dev/null || return 0
    R export --format otf2 -i "$tmp/sr.data" -o "$tmp/sr.otf2" 2>"$tmp/sr.err" ||
        fail "export otf2: $(cat "$tmp/sr.err")"
    otf2-print -G "$tmp/sr.otf2/traces.otf2" >"$tmp/sr.defs" || fail "otf2-print -G"
    otf2-print "$tmp/sr.otf2/traces.otf2" >"$tmp/sr.evts" || fail "otf2-print"
    python3 - "$tmp/sr.defs" "$tmp/sr.evts" <<'PY' || fail "sendrecv: OTF2 messages"
import collections, re, sys
grp = {}
for l in open(sys.argv[1]):
    m = re.match(r'LOCATION\s+(\d+)\s.*Group: "rank (\d+)', l)
    if m: grp[m.group(1)] = int(m.group(2))
c = collections.Counter()
for l in open(sys.argv[2]):
    w = l.split()
    if len(w) < 3 or w[0] not in ("MPI_SEND", "MPI_RECV"): continue
    r = grp[w[1]]; right, left = (r + 1) % 3, (r + 2) % 3
    peer = int(re.search(r"(Receiver|Sender): (\d+)", l).group(2))
    tag = int(re.search(r"Tag: (\d+)", l).group(1))
    want = {("MPI_SEND", right): 1, ("MPI_SEND", left): 2, ("MPI_RECV", left): 1, ("MPI_RECV", right): 2}
    assert want[(w[0], peer)] == tag and ", Length: 8" in l, "rank %d: %s" % (r, l)
    c[w[0]] += 1
assert c == {"MPI_SEND": 60, "MPI_RECV": 60}, c
PY
}

scenario otf2 otf2
scenario pmpi pmpi
# (not under TSan: one thread's clock arithmetic; the exports' parallel
# paths are TSan's subject in e2e_export_par and e2e_timeline_par)
under_tsan || scenario axis axis
scenario halo halo
scenario sendrecv sendrecv
finish

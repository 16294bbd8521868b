#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_stress.sh - concurrency, overload and memory (docs/robustness.md).
#
#   lossless  32 threads at once, with buffers so small (2 x 16 KiB) that
#             threads wait for the writer all the time, and the periodic
#             flush every 1 ms writing the buffers they are filling: nothing
#             lost, exact call counts (run under TSan by CI: no race either)
#   churn     160 threads that start and exit in 20 waves: exact counts
#   exec      a recorded program that execs itself: the old image's trace is
#             complete (flushed at the exec, and not by the vfork child it
#             ran before), the new image writes NAME.PID; both exact
#   overload  drop mode with tiny buffers and a writer slowed down by
#             RANKPROF_TEST_WRITER_DELAY_US: losses counted, and recorded
#             events + lost events = 2 x the calls the program made, exactly
#   selfenc   8 threads with small buffers and a 1 ms flush: the threads
#             encode their own full buffers (INFO buffers_self), exact counts
#   memory    the analyzer's peak RSS on a 10x longer trace of the same
#             program stays within 4 MiB of the shorter one's, and so does
#             the recorded program's (ring buffers, nothing per event)
#
# prog_stress prints "calls C", the function calls it made (docs at its top).
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_stress RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB"

# report --format json of $1, checked against the expected counts
expect() { # file threads n_per_thread nthreads_with_events lost(0|any)
    "$RANKPROF" report -i "$1" --one-file --format json >"$tmp/r.json" 2>"$tmp/r.err" ||
        fail "$1: report failed: $(cat "$tmp/r.err")"
    python3 - "$tmp/r.json" "$2" "$3" "$4" "$5" <<'PY' || fail "$1: wrong counts"
import json, sys
r = json.load(open(sys.argv[1]))
t, n, nthreads, lost = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
calls = {x["name"]: x["calls"] for x in r["nodes"]}
want = {"main": 1, "body": t, "outer": t * n, "inner": 2 * t * n}
bad = [f"{k}: {calls.get(k, 0)} calls, expected {v}" for k, v in want.items() if calls.get(k, 0) != v]
if r["threads"] != nthreads:
    bad.append(f"{r['threads']} threads, expected {nthreads}")
for k in ("lost_events", "unmatched_exits", "unclosed"):
    if lost == "0" and r[k]:
        bad.append(f"{k} = {r[k]}")
if not r["ended_normally"]:
    bad.append("did not end normally")
for b in bad:
    print("e2e_stress:", b, file=sys.stderr)
sys.exit(1 if bad else 0)
PY
}

# --- lossless: 32 threads, tiny rings --------------------------------------
stress_lossless() {
    RANKPROF_BUFSIZE=16384 RANKPROF_NBUF=2 RANKPROF_FLUSH_MS=1 "$RANKPROF" record -o "$tmp/t32.data" -- \
        "$PROGS/prog_stress" threads 32 2000 >"$tmp/out" 2>&1 || fail "threads 32: $(cat "$tmp/out")"
    expect "$tmp/t32.data" 32 2000 33 0
    chunks=$("$RANKPROF" info -i "$tmp/t32.data" | sed -n 's/^ *EVENTS *\([0-9]*\) chunks.*/\1/p')
    echo "e2e_stress: 32 threads x 6000 calls, 2 x 16 KiB buffers, flush every 1 ms" \
        "($chunks EVENTS chunks), lossless: exact: ok"
}

# the default 256 KiB buffers, which these threads (pausing 1 ms every 100
# calls) hardly fill: almost every chunk is a periodic flush of a buffer
# still being filled
stress_paced() {
    RANKPROF_FLUSH_MS=1 "$RANKPROF" record -o "$tmp/t8.data" -- "$PROGS/prog_stress" paced 8 3000 \
        >"$tmp/out" 2>&1 || fail "threads 8: $(cat "$tmp/out")"
    expect "$tmp/t8.data" 8 3000 9 0
    chunks=$("$RANKPROF" info -i "$tmp/t8.data" | sed -n 's/^ *EVENTS *\([0-9]*\) chunks.*/\1/p')
    echo "e2e_stress: 8 threads x 9000 calls, flush every 1 ms ($chunks EVENTS chunks): exact: ok"
}

# --- churn: threads come and go ----------------------------------------------
stress_churn() {
    "$RANKPROF" record -o "$tmp/churn.data" -- "$PROGS/prog_stress" churn 20 8 200 \
        >"$tmp/out" 2>&1 || fail "churn: $(cat "$tmp/out")"
    expect "$tmp/churn.data" 160 200 161 0
    echo "e2e_stress: 160 short-lived threads in 20 waves: exact: ok"
}

# --- exec: the new image writes NAME.PID -------------------------------------
stress_exec() {
    "$RANKPROF" record -o "$tmp/ex.data" -- "$PROGS/prog_execer" >"$tmp/out" 2>&1 ||
        fail "execer: $(cat "$tmp/out")"
    pid=$(sed -n 's/^pid \([0-9]*\)$/\1/p' "$tmp/out")
    [[ -n $pid && -f "$tmp/ex.data.$pid" ]] || fail "exec: no $tmp/ex.data.PID: $(ls "$tmp")"
    # /bin/true, run by the vfork child, recorded nothing: it leaves no file
    files=("$tmp"/ex.data*)
    [[ ${#files[@]} == 2 ]] || fail "exec: files of the run: ${files[*]##*/} (not ex.data, ex.data.$pid)"
    "$RANKPROF" report -i "$tmp/ex.data.$pid" --format json >"$tmp/ex.json" 2>/dev/null ||
        fail "exec: the new image's trace does not read"
    python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
c = {x['name']: x['calls'] for x in r['nodes']}
sys.exit(0 if c.get('step') == 25 and c.get('main') == 1 and r['ended_normally'] else 1)" \
        "$tmp/ex.json" || fail "exec: the new image's trace is not exact: $(cat "$tmp/ex.json")"
    "$RANKPROF" report -i "$tmp/ex.data" --one-file --format json >"$tmp/ex0.json" 2>/dev/null ||
        fail "exec: the old image's trace does not read"
    python3 -c "
import json, sys
r = json.load(open(sys.argv[1]))
c = {x['name']: x['calls'] for x in r['nodes']}
sys.exit(0 if c.get('step') == 10 and r['ended_normally'] and r['unclosed'] == 0 and r['cut'] == 1 else 1)" \
        "$tmp/ex0.json" || fail "exec: the old image's trace is not complete: $(cat "$tmp/ex0.json")"
    echo "e2e_stress: exec: the old image flushed at exec (a vfork child left it alone), the new" \
        "one wrote ex.data.$pid, both exact; /bin/true left no file: ok"
}

# --- overload: drop mode, a writer that cannot keep up -----------------------
# (the counts are of function events: the joins' wait spans are left out)
stress_drop() {
    RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=2 RANKPROF_TEST_WRITER_DELAY_US=500 \
        "$RANKPROF" record --drop --classes=-wait -o "$tmp/drop.data" -- \
        "$PROGS/prog_stress" threads 4 5000 \
        >"$tmp/out" 2>&1 || fail "drop: $(cat "$tmp/out")"
    made=$(sed -n 's/^calls \([0-9]*\)$/\1/p' "$tmp/out")
    "$RANKPROF" dump -i "$tmp/drop.data" >"$tmp/drop.dump" 2>/dev/null || fail "drop: dump failed"
    "$RANKPROF" info -i "$tmp/drop.data" >"$tmp/drop.info" 2>&1 || fail "drop: info failed"
    "$RANKPROF" report -i "$tmp/drop.data" --format json >"$tmp/drop.json" 2>/dev/null ||
        fail "drop: report failed"
    python3 - "$tmp/drop.dump" "$tmp/drop.info" "$tmp/drop.json" "$made" <<'PY' || fail "drop: losses do not add up"
import json, re, sys
dump, info, rep, made = sys.argv[1], open(sys.argv[2]).read(), json.load(open(sys.argv[3])), int(sys.argv[4])
spans = lost = 0
for line in open(dump):
    f = line.split()
    if line.startswith("#") or len(f) < 3:
        continue
    if f[2] == "enter" and f[3:] == ["[off-cpu]"]:
        spans -= 1  # an off-CPU span (the writer's): its enter and exit are no events
    elif f[2] in ("enter", "exit"):
        spans += 1
    elif f[2] == "LOST":
        lost += int(f[3])
m = re.search(r"^lost events: *(\d+)", info, re.M)
bad = []
if not lost:
    bad.append("nothing was dropped: the writer kept up, the test proves nothing")
if spans + lost != 2 * made:
    bad.append(f"recorded {spans} + lost {lost} = {spans + lost} events, the program made {2 * made}")
if not m or int(m.group(1)) != lost:
    bad.append(f"info says lost {m.group(1) if m else '?'}, the trace holds {lost}")
if rep["lost_events"] != lost:
    bad.append(f"report says lost {rep['lost_events']}, the trace holds {lost}")
# every drop here is for want of a free buffer, and says so
why = rep.get("lost_by_reason", {})
if why.get("full") != lost or sum(why.values()) != lost:
    bad.append(f"lost_by_reason {why}, expected all {lost} as full")
if f"({lost} with no free buffer (--drop))" not in info:
    bad.append("info does not give the reason: " + (m.group(0) if m else "?"))
for b in bad:
    print("e2e_stress: drop:", b, file=sys.stderr)
print(f"e2e_stress: drop: {spans} recorded + {lost} lost = 2 x {made} calls")
sys.exit(1 if bad else 0)
PY
}

# --- memory: 10x longer run, same peak RSS -----------------------------------
stress_memory() {
    [[ -x /usr/bin/time ]] || fail "/usr/bin/time (GNU time) is needed: scripts/deps.sh test installs it"
    python3 - "$RANKPROF" "$PROGS/prog_stress" "$tmp" <<'PY' || fail "memory grows with the trace"
import os, subprocess, sys
rankprof, prog, tmp = sys.argv[1:4]

def maxrss_kb(argv):
    """Peak RSS of argv and its descendants, by GNU time (a child of python
    would inherit python's own peak across exec)."""
    r = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", f"{tmp}/rss", *argv],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if r.returncode != 0:
        sys.exit(f"e2e_stress: {' '.join(argv)} failed")
    return int(open(f"{tmp}/rss").read().split()[-1])

rec, ana = {}, {}
for n in (20000, 200000):
    out = f"{tmp}/mem{n}.data"
    rec[n] = maxrss_kb([rankprof, "record", "-o", out, "--", prog, "serial", str(n)])
    ana[n] = maxrss_kb([rankprof, "report", "-i", out])
    print(f"e2e_stress: memory: {3 * n} calls, {os.path.getsize(out)} bytes: "
          f"recorded program {rec[n]} KiB, report {ana[n]} KiB")
# a replay that kept anything per event (>= 8 bytes each) would grow by
# 10+ MiB here; the sanitizers' own allocator (quarantine) needs more room
slack = (64 if os.environ.get("RP_SANITIZE") else 4) * 1024
ok = ana[200000] <= ana[20000] + slack and rec[200000] <= rec[20000] + slack
sys.exit(0 if ok else 1)
PY
    echo "e2e_stress: ok"
}

# --- selfenc: threads encode their own buffers ------------------------------
# 8 threads fill small buffers (16 KiB) while the writer flushes the one
# each is filling every 1 ms: the threads encode and write their full
# buffers themselves (INFO buffers_self) by default and with
# RANKPROF_SELF_ENCODE=1, not with RANKPROF_SELF_ENCODE=0; also when they
# block signals left at their default, not when a blocked signal has the
# program's handler; new ids are made
# by several threads at once, and the trace is exact (every id defined
# before use)
selfenc_run() { # selfenc_run VALUE (- for unset) SELF (1: buffers_self > 0, 0: none) [MODE]
    local v=$1 want=$2 mode=${3:-threads}
    (if [[ $v != - ]]; then export RANKPROF_SELF_ENCODE=$v; else unset RANKPROF_SELF_ENCODE; fi
        RANKPROF_BUFSIZE=16384 RANKPROF_FLUSH_MS=1 "$RANKPROF" record -o "$tmp/self.data" -- \
            "$PROGS/prog_stress" "$mode" 8 20000) >"$tmp/out" 2>&1 ||
        fail "selfenc ($v, $mode): $(cat "$tmp/out")"
    expect "$tmp/self.data" 8 20000 9 0
    python3 - "$tmp/self.data" "$want" "$v, $mode" <<'PY' || fail "selfenc ($v, $mode): buffers_self is not as expected"
import struct, sys
data = open(sys.argv[1], "rb").read()
def info(key):  # the last value of an INFO key (format: u16 len, key, u32 len, value)
    k = struct.pack("<H", len(key)) + key.encode()
    i = data.rfind(k)
    if i < 0:
        return None
    (n,) = struct.unpack_from("<I", data, i + len(k))
    return int(data[i + len(k) + 4 : i + len(k) + 4 + n])
own, wr = info("buffers_self"), info("buffers_writer")
print(f"e2e_stress: selfenc ({sys.argv[3]}): {own} buffers encoded by their threads, {wr} by the writer")
if sys.argv[2] == "1":
    sys.exit(0 if own and wr is not None else 1)
sys.exit(0 if own == 0 and wr else 1)
PY
}
stress_selfenc() {
    selfenc_run 1 1
    selfenc_run - 1
    selfenc_run 0 0
    # threads that block signals left at their default (or taken by the
    # recorder's own flush: SIGINT, SIGTERM, SIGHUP) still encode their own;
    # with a blocked signal that has the program's handler they may be in
    # it, and leave their buffers to the writer
    selfenc_run - 1 masked
    selfenc_run - 0 handled
    echo "e2e_stress: selfenc: ok"
}

for s in lossless paced churn exec drop memory selfenc; do
    scenario "$s" "stress_$s"
done
finish

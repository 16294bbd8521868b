#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_offcpu.sh - time off CPU and time waiting for the recorder are not the
# program's (docs/recording.md, "Off-CPU time" and "When the writer cannot
# keep up").
#
# 1. perf context switches (where perf_event_open is allowed: the test
#    requires it when kernel.perf_event_paranoid <= 2 and no seccomp filter
#    is in the way).  prog_busy runs threads spinning in small functions
#    (worker -> step -> tiny), twice as many as CPUs, so the scheduler
#    preempts them.  Checked:
#      - the report says "off-CPU: perf context switches", the JSON's
#        offcpu.source is "perf", and an [off-cpu] node (kind offcpu) has
#        spans, never a flag, and its inclusive is offcpu.separated_ns;
#      - per node: exclusive + callees' inclusive (the [off-cpu] spans
#        among them) = inclusive, and offcpu_ns = its edge to [off-cpu];
#      - every call is counted (calls exact: threads * CALLS);
#      - tiny's on-CPU maximum is under 4 ms (not checked under a
#        sanitizer, nor when the host stole CPU time during the run, by
#        /proc/stat: a stolen virtual CPU stalls a call on CPU with no
#        context switch; a preempted call without the off-CPU spans is a
#        time slice long: several ms on a busy machine), and tiny has
#        off-CPU time of its own;
#      - sum over nodes of offcpu_ns = separated_ns.
# 2. The fallback, forced (RANKPROF_TEST_OFFCPU_REFUSE=1): no [off-cpu]
#    node, offcpu.source "schedstat" with error "perf_event_open: EACCES"
#    and a run-queue delay, the header says "not separated"; and
#    RANKPROF_OFFCPU=0: source "none", "switched off"; direct mode: "none",
#    and no on-CPU fields (its maxima are wall maxima).
# 3. Recorder waits: one thread, 1 KiB buffers, the writer slowed down
#    (RANKPROF_TEST_WRITER_DELAY_US=30000 per buffer) so that the thread
#    waits for a free buffer about every 64 events.  Checked: the JSON's
#    recorder_wait_ns (and the thread's) is over 300 ms, `info` shows it,
#    worker's inclusive + the thread's wait = the thread's span of time
#    (within 2 % + 2 ms: the wait is taken out once, not twice), and tiny's
#    on-CPU maximum stays under 15 ms although each wait is about 30 ms
#    (a sanitizer's stalls stay under that).
# 4. Buffer switches: with RANKPROF_SELF_ENCODE=0 (the writer encodes),
#    every move to the next buffer is a PAUSE all the same (the hand-off
#    and a buffer's first use are the recorder's time): a pause per 256
#    events in 4 KiB buffers, but a thread's first buffer.
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_offcpu RANKPROF PROGS RP_LIB
need_tools python3
export RANKPROF_LIB="$RP_LIB"
prog="$PROGS/prog_busy"
# twice as many spinning threads as CPUs (at least 4): they must be preempted
THREADS=$((2 * $(nproc 2>/dev/null || echo 2)))
((THREADS < 4)) && THREADS=4
((THREADS > 64)) && THREADS=64
CALLS=60000 SPIN=400

# perf must work where the kernel allows it to an unprivileged process and
# no seccomp filter is in the way (a container's default filter refuses it)
paranoid=$(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo 3)
seccomp=$(sed -n 's/^Seccomp:[[:space:]]*//p' /proc/self/status 2>/dev/null)
want_perf=0
[[ "$paranoid" -le 2 && "${seccomp:-0}" == 0 ]] && want_perf=1

# 1. perf: off-CPU spans under the frames they fell in
# the machine's stolen time so far (a virtual machine's CPUs taken by the
# host: a stall on CPU that no context switch reports), in USER_HZ ticks
steal() { awk '$1 == "cpu" { print $9 + 0; exit }' /proc/stat 2>/dev/null || echo 0; }

perf() {
    local steal0
    steal0=$(steal)
    "$RANKPROF" record -o "$tmp/busy.data" -- "$prog" $THREADS $CALLS $SPIN \
        >"$tmp/busy.out" 2>"$tmp/busy.err" || fail "record failed: $(cat "$tmp/busy.err")"
    stolen=$(($(steal) - steal0))
    # measured times: the arithmetic below is exact without overhead compensation
    # (with it, a span shorter than its correction is clamped: under a
    # sanitizer the measured cost per event varies, and step's own time is small)
    "$RANKPROF" report -i "$tmp/busy.data" --format json --no-compensate >"$tmp/busy.json" ||
        fail "report failed"
    "$RANKPROF" report -i "$tmp/busy.data" >"$tmp/busy.txt" || fail "report (table) failed"
    "$RANKPROF" info -i "$tmp/busy.data" >"$tmp/busy.info" || fail "info failed"
    src=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["offcpu"]["source"])' \
        "$tmp/busy.json")
    if [[ "$src" != perf ]]; then
        [[ $want_perf == 1 ]] &&
            fail "perf_event_paranoid is $paranoid, no seccomp, yet the source is $src: $(grep off-CPU "$tmp/busy.info")"
        # a refusal, not a malformed request
        grep -Eq '^off-CPU: not separated \(perf_event_open: (EACCES|EPERM|ENOSYS|ENOENT|ENODEV)\)' \
            "$tmp/busy.info" || fail "perf refused for a reason that is no refusal: $(grep off-CPU "$tmp/busy.info")"
        echo "e2e_offcpu: perf not available here (source $src): part 1 skipped"
    else
        grep -q '^off-CPU: perf context switches' "$tmp/busy.txt" ||
            fail "the report's header does not say perf: $(grep off-CPU "$tmp/busy.txt")"
        grep -q '^off-CPU: perf context switches' "$tmp/busy.info" || fail "info does not say perf"
        # the bound on tiny's on-CPU maximum: 4 ms; none under a sanitizer, where
        # a call of tiny was seen to stall 10 ms on CPU without a context switch
        # (the stall of a virtual CPU is no context switch the kernel reports)
        # (not when the host stole CPU time during the run: a stolen vCPU
        # stalls tiny on CPU as long, and the kernel reports no switch)
        bound=4000000
        sanitized && bound=0
        python3 - "$tmp/busy.json" $THREADS $CALLS $bound "$stolen" <<'PY' || fail "(above)"
import json, sys
j = json.load(open(sys.argv[1]))
threads, calls, bound = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
stolen = int(sys.argv[5])
def die(m):
    sys.exit("e2e_offcpu: FAIL: perf: " + m)
N = {n["name"]: n for n in j["nodes"]}
off = [n for n in j["nodes"] if n["kind"] == "offcpu"]
if len(off) != 1 or off[0]["name"] != "[off-cpu]" or off[0]["calls"] < 1:
    die(f"no [off-cpu] node with spans: {off}")
o = off[0]
if o["flags"]:
    die(f"[off-cpu] is flagged {o['flags']}")
if o["inclusive_ns"] != j["offcpu"]["separated_ns"]:
    die(f"[off-cpu] inclusive {o['inclusive_ns']} != offcpu.separated_ns {j['offcpu']['separated_ns']}")
for nm, want in (("worker", threads), ("step", threads * calls), ("tiny", threads * calls)):
    if N[nm]["calls"] != want:
        die(f"{nm}: {N[nm]['calls']} calls, want {want}")
total_off = 0
for nm, n in N.items():
    out = [e for e in j["edges"] if e["caller"] == nm and e["callee"] != nm]
    to_off = sum(e["inclusive_ns"] for e in out if e["callee"] == "[off-cpu]")
    callees = sum(e["inclusive_ns"] for e in out)
    total_off += n["offcpu_ns"]
    if abs(n["offcpu_ns"] - to_off) > 1:
        die(f"{nm}: offcpu_ns {n['offcpu_ns']} != its edge to [off-cpu] {to_off}")
    if nm in ("worker", "step", "tiny"):
        got = n["exclusive_ns"] + callees
        if abs(got - n["inclusive_ns"]) > 2 * len(out) + 2:
            die(f"{nm}: exclusive {n['exclusive_ns']} + callees {callees} (off-CPU {to_off}) "
                f"!= inclusive {n['inclusive_ns']}")
if abs(total_off - o["inclusive_ns"]) > len(N):  # 1 ns of rounding per node
    die(f"sum of offcpu_ns {total_off} != [off-cpu] inclusive {o['inclusive_ns']}")
t = N["tiny"]
if not t["oncpu_max_ns"] <= t["max_ns"]:
    die(f"tiny: on-CPU max {t['oncpu_max_ns']} > wall max {t['max_ns']}")
if bound and t["oncpu_max_ns"] >= bound:
    if stolen <= 0:
        die(f"tiny (a few us) has an on-CPU maximum of {t['oncpu_max_ns']} ns: preemption not separated")
    print(f"e2e_offcpu: tiny's on-CPU maximum {t['oncpu_max_ns']} ns, not judged: "
          f"the host stole {stolen} ticks of CPU during the run")
if not t["offcpu_ns"] > 0 or not t["offcpu_below_ns"] >= t["offcpu_ns"]:
    die(f"tiny, most of the threads' time, was never off CPU: offcpu_ns {t['offcpu_ns']}, "
        f"below {t['offcpu_below_ns']}")
if "JITTER" in t["flags"] and t["oncpu_max_ns"] < 10 * t["p50_ns"]:
    die("tiny is JITTER by its wall maximum")
print(f"e2e_offcpu: perf: {o['calls']} off-CPU spans, {o['inclusive_ns'] / 1e6:.1f} ms; "
      f"tiny max {t['max_ns']} ns wall, {t['oncpu_max_ns']} ns on CPU: ok")
PY
    fi
}

# 2. the fallback, forced: no perf, the run-queue delay instead
fallback() {
    RANKPROF_TEST_OFFCPU_REFUSE=1 "$RANKPROF" record -o "$tmp/fb.data" -- "$prog" $THREADS 20000 $SPIN \
        >/dev/null 2>"$tmp/fb.err" || fail "record (fallback) failed: $(cat "$tmp/fb.err")"
    "$RANKPROF" report -i "$tmp/fb.data" --format json >"$tmp/fb.json" || fail "report failed"
    "$RANKPROF" report -i "$tmp/fb.data" >"$tmp/fb.txt" || fail "report (table) failed"
    "$RANKPROF" info -i "$tmp/fb.data" >"$tmp/fb.info" || fail "info failed"
    python3 - "$tmp/fb.json" <<'PY' || fail "(above)"
import json, os, sys
j = json.load(open(sys.argv[1]))
def die(m):
    sys.exit("e2e_offcpu: FAIL: fallback: " + m)
o = j["offcpu"]
if any(n["kind"] == "offcpu" for n in j["nodes"]):
    die("an [off-cpu] node without perf")
if o.get("error") != "perf_event_open: EACCES":
    die(f"error {o.get('error')!r}")
want = "schedstat" if os.access("/proc/self/schedstat", os.R_OK) else "none"
if o["source"] != want:
    die(f"source {o['source']}, want {want}")
if want == "schedstat" and not o.get("runq_delay_ns", 0) > 0:
    die(f"twice as many spinning threads as CPUs, yet no run-queue delay: {o}")
if o["separated_ns"] != 0:
    die(f"separated_ns {o['separated_ns']}")
PY
    grep -q '^off-CPU: not separated (perf_event_open: EACCES)' "$tmp/fb.txt" ||
        fail "the report's header does not say off-CPU time is not separated: $(grep off-CPU "$tmp/fb.txt")"
    grep -q '^off-CPU: not separated (perf_event_open: EACCES)' "$tmp/fb.info" ||
        fail "info does not say off-CPU time is not separated"
}

# off-CPU time switched off: the header says so
switched_off() {
    RANKPROF_OFFCPU=0 "$RANKPROF" record -o "$tmp/none.data" -- "$prog" 1 10 1 >/dev/null 2>&1 ||
        fail "record (switched off) failed"
    "$RANKPROF" report -i "$tmp/none.data" | grep -q '^off-CPU: not separated (switched off' ||
        fail "RANKPROF_OFFCPU=0: the header does not say so"
}

# direct mode separates nothing and keeps its wall maxima (JITTER judges them)
direct_mode() {
    "$RANKPROF" record --mode direct -o "$tmp/direct.data" -- "$prog" 2 2000 $SPIN >/dev/null 2>&1 ||
        fail "record (direct mode) failed"
    "$RANKPROF" report -i "$tmp/direct.data" | grep -q '^off-CPU: not separated (direct mode)' ||
        fail "direct mode: the header does not say off-CPU time is not separated"
    "$RANKPROF" report -i "$tmp/direct.data" --format json | python3 -c '
import json, sys
j = json.load(sys.stdin)
t = {n["name"]: n for n in j["nodes"]}["tiny"]
sys.exit("oncpu_max_ns" in t or j["offcpu"]["source"] != "none" or t["max_ns"] <= 0)' ||
        fail "direct mode: on-CPU fields, or a source, or no maximum"
}

# 3. recorder waits: taken out of the spans
recorder_waits() {
    RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=2 RANKPROF_TEST_WRITER_DELAY_US=30000 \
        "$RANKPROF" record -o "$tmp/wait.data" -- "$prog" 1 4000 $SPIN >/dev/null 2>"$tmp/wait.err" ||
        fail "record (slow writer) failed: $(cat "$tmp/wait.err")"
    "$RANKPROF" report -i "$tmp/wait.data" --format json >"$tmp/wait.json" || fail "report failed"
    "$RANKPROF" info -i "$tmp/wait.data" | grep -Eq '^recorder wait: [0-9.]+(ms|s) ' ||
        fail "info does not show the recorder wait: $("$RANKPROF" info -i "$tmp/wait.data" | grep wait)"
    python3 - "$tmp/wait.json" <<'PY' || fail "(above)"
import json, sys
j = json.load(open(sys.argv[1]))
def die(m):
    sys.exit("e2e_offcpu: FAIL: recorder wait: " + m)
N = {n["name"]: n for n in j["nodes"]}
w = j["recorder_wait_ns"]
if w < 300_000_000:
    die(f"the writer sleeps 30 ms per buffer, yet the threads waited {w} ns")
# the total is the threads' sum, nearly all of it the one recording thread's
th = [t for t in j["thread_list"] if t["events"] > 100]
if (len(th) != 1 or sum(t["recorder_wait_ns"] for t in j["thread_list"]) != w
        or th[0]["recorder_wait_ns"] < 0.99 * w):
    die(f"per thread: {j['thread_list']}, total {w}")
if N["tiny"]["calls"] != 4000:
    die(f"tiny: {N['tiny']['calls']} calls")
span, w = th[0]["total_ns"], th[0]["recorder_wait_ns"]
got = N["worker"]["inclusive_ns"] + w
if abs(got - span) > 0.02 * span + 2_000_000:
    die(f"worker's inclusive {N['worker']['inclusive_ns']} + wait {w} = {got}, "
        f"the thread's time is {span}")
m = N["tiny"].get("oncpu_max_ns", N["tiny"]["max_ns"])
if m >= 15_000_000:
    die(f"tiny's maximum is {m} ns: it holds a wait for the writer (30 ms)")
print(f"e2e_offcpu: recorder wait {w / 1e6:.1f} ms taken out; tiny max {m} ns: ok")
PY
}

# 4. every buffer switch is a PAUSE, also when the thread hands its full
#    buffer to the writer (a lock and a wake-up, and the first use of each
#    ring buffer, which maps it): one per 256 events of 4 KiB buffers
#    but a thread's first; 16 of them and a writer at full speed seldom
#    make a thread wait, so the pauses are not the waits
switches() {
    RANKPROF_SELF_ENCODE=0 RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=16 \
        "$RANKPROF" record -o "$tmp/sw.data" -- "$prog" 1 4000 $SPIN >/dev/null 2>"$tmp/sw.err" ||
        fail "record (writer encodes) failed: $(cat "$tmp/sw.err")"
    local ev np
    ev=$("$RANKPROF" info -i "$tmp/sw.data" | sed -n 's/^events: *\([0-9]*\).*/\1/p')
    np=$("$RANKPROF" dump -i "$tmp/sw.data" | grep -c ' pause ' || true)
    ((ev > 4000 && (np + 2) * 256 >= ev)) || # (+2: each thread's first buffer)
        fail "$np pauses for $ev events in 4 KiB buffers: a buffer switch without its PAUSE"
    note "switches: $np pauses for $ev events"
}

scenario perf perf
scenario fallback fallback
scenario switched_off switched_off
scenario direct_mode direct_mode
scenario recorder_waits recorder_waits
scenario switches switches
finish

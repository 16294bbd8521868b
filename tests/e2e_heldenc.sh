#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_heldenc.sh - a thread that holds one of the program's locks leaves its
# full buffers to the writer thread (docs/design.md §3, "Encoding on the
# thread that recorded"): encoding them itself would hold the lock for the
# time of the encoding, and every thread waiting for it would wait too.
#
# prog_heldenc (exact counts at the top of heldenc.c) records with 4 KiB
# buffers (256 records), so its holder thread fills CALLS * 2 / 256 of them:
#   - held: every leaf() call is made inside a hold of a mutex (with
#     condition waits inside it, and a second thread blocked on it), an
#     rwlock (write, then read), a spinlock, a try-locked and a time-locked
#     mutex and a lock of the address-based API, and the holder's failed
#     unlock of a mutex it does not hold comes inside the first hold.  The buffers are
#     encoded by the writer (INFO buffers_writer), at most one per thread
#     by the thread that filled it (INFO buffers_self: the one it may
#     publish at an append outside every hold, its own enter or exit);
#   - after: the same holds empty, the failed unlock and a release never
#     acquired (the address-based API's), then all calls
#     holding nothing: the holder encodes its own buffers again
#     (buffers_self > 0), so the count of locks held came back to 0 after
#     every kind of release and did not go below it;
#   - both: the calls exact (the buffers the writer took are all there),
#     nothing lost, each lock's acquisitions exact (big's: the holder's
#     first, one after each condition wait, the waiter's).
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_heldenc RANKPROF PROGS RP_LIB
need_tools python3
need_progs heldenc
export RANKPROF_LIB="$RP_LIB"
# the program unlocks a mutex it does not hold on purpose (EPERM)
under_tsan && export TSAN_OPTIONS="${TSAN_OPTIONS:+$TSAN_OPTIONS:}report_mutex_bugs=0"

CALLS=20000

# check MODE: records prog_heldenc MODE and checks the trace
check() {
    local mode=$1 out
    out=$(RANKPROF_BUFSIZE=4096 $TMO "$RANKPROF" record -o "$tmp/$mode.data" -- \
        "$PROGS/prog_heldenc" "$mode" $CALLS 2>"$tmp/$mode.err") ||
        fail "recording prog_heldenc $mode: $(cat "$tmp/$mode.err")"
    [[ "$out" == "leaf $CALLS" ]] || fail "prog_heldenc $mode printed '$out'"
    "$RANKPROF" report -i "$tmp/$mode.data" --format json >"$tmp/$mode.report.json" ||
        fail "report of the $mode trace"
    "$RANKPROF" locks -i "$tmp/$mode.data" --format json >"$tmp/$mode.locks.json" ||
        fail "locks of the $mode trace"
    # (TSan intercepts pthread_cond_timedwait by symbol version and may reach
    # libc without the interposer: there big's hold includes the waits,
    # docs/locks.md, and is one acquisition, not one per wait)
    local big=6
    under_tsan && big=2
    python3 - "$tmp" "$mode" $CALLS $big <<'PY' || fail "$mode: see above"
import json, struct, sys
d, mode, calls, big = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
def die(msg):
    sys.exit(f"e2e_heldenc: FAIL: {mode}: {msg}")
data = open(f"{d}/{mode}.data", "rb").read()
def info(key):  # the last value of an INFO key (format: u16 len, key, u32 len, value)
    k = struct.pack("<H", len(key)) + key.encode()
    i = data.rfind(k)
    if i < 0:
        die(f"no INFO {key}")
    (n,) = struct.unpack_from("<I", data, i + len(k))
    return int(data[i + len(k) + 4 : i + len(k) + 4 + n])
own, wr = info("buffers_self"), info("buffers_writer")
full = calls * 2 // 256  # the holder's full buffers, at least
print(f"e2e_heldenc: {mode}: {own} buffers encoded by their threads, {wr} by the writer")
if mode == "held":
    if own > 3:  # holder, waiter, main: one each at most
        die(f"{own} buffers encoded by their own thread while it held a lock (want at most 3)")
    if own + wr < full:
        die(f"{own} + {wr} buffers encoded, want at least {full}")
elif own == 0:
    die("the holder encoded none of its buffers once it held nothing")

R = json.load(open(f"{d}/{mode}.report.json"))
N = {n["name"]: n["calls"] for n in R["nodes"]}
want = {"leaf": calls, "work": 8 if mode == "held" else 9, "holder": 1, "waiter": 1}
got = {k: N.get(k) for k in want}
if got != want:
    die(f"calls {got}, want {want}")
if R["lost_events"] or R["unclosed"] or not R["ended_normally"]:
    die(f"lost {R['lost_events']}, unclosed {R['unclosed']}, ended normally {R['ended_normally']}")
L = json.load(open(f"{d}/{mode}.locks.json"))["locks"]
acq = {l["name"]: l["acquisitions"] for l in L if l["acquisitions"]}
want = {"big": big, "rw": 2, "spin": 1, "try": 1, "timed": 1, "api": 1}
if acq != want:
    die(f"acquisitions {acq}, want {want}")
PY
}

scenario held check held
scenario after check after
finish

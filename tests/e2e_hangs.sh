#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_hangs.sh - the recorder never hangs or crashes the program
# (docs/robustness.md, "Never hang, never crash").  Each case runs under
# `timeout`, so a hang fails instead of blocking ctest:
#
#   cancel   prog_hangs cancel 20: 4 threads in a call loop, cancelled and
#            joined 20 times, with tiny buffers and a writer slowed to 2 ms
#            per buffer, so threads are cancelled while they wait for a
#            free buffer (lossless policy).  Must finish, trace complete.
#   asynccancel  prog_hangs asynccancel 600 (300 under ASan): 4 threads in
#            asynchronous cancellation, in a call loop, cancelled and joined
#            (default buffers: threads encode their own, take the
#            recorder's locks and allocate); a cancellation sent while a
#            thread is inside the recorder must wait for it to leave.  Must
#            finish with the trace complete (not under TSan: the program
#            hangs there without the recorder too, in TSan's own code).
#   asyncjoin  prog_hangs asyncjoin 50: the same with tiny buffers and a
#            writer slowed to 1 ms per buffer, each thread with a cleanup
#            handler: every join must give PTHREAD_CANCELED and every
#            cleanup handler run (a cancellation acting as the recorder
#            turned cancellation back on gave NULL); not under TSan either.
#   pexit    prog_hangs pexit 100000: main calls pthread_exit while a
#            thread runs; the process must exit (status 0) when the thread
#            ends, with all 100000 calls of leaf(), the 500 calls of its
#            atexit handler and the 300 of its destructor (they run on the
#            last thread, after its own end), and an END chunk; pexitalone
#            the same with main the program's only thread (the writer's
#            end must not be the one that ends the process).
#   static   prog_hangs_static points 20000: the recorder linked statically,
#            4 threads using RP_POINT around their own mutex: no lock
#            interposer may record a recorder's own mutex.  Direct and trace
#            mode, run directly and under `rankprof record` (whose preloaded
#            recorder then runs beside the program's own: each copy's
#            interposer would record the other's locks).  A destructor of
#            the program calls ending() 1000 times after main returned: the
#            static recorder's own destructor must run after it.
#   sigjmp   prog_hangs sigjmp 100000, 20 runs: a 10 kHz SIGALRM handler
#            that calls tick() and siglongjmps out, 2000 times; every run
#            exits 0 and records all 100000 calls of after(); the handler
#            runs that interrupted the recorder are counted as lost (3
#            events each: on_alarm, tick's enter and exit), so
#            tick calls + lost / 3 = the handler runs exactly (2000, or
#            one more when the timer fires again before it is stopped).
#   term     SIGTERM sent to `rankprof record` running prog_hangs term: the
#            program gets it (prints "got signal 15", calls after() 1000
#            times, exits 3), and record waits for it: exits 3 after it,
#            with the whole trace written; termusr1, termquit: the same
#            with SIGUSR1 and SIGQUIT.
# Each case is a scenario: every failure is reported.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_hangs RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB"
T=${RP_HANGS_TIMEOUT:-60} # generous: a hang is forever, a slow sanitizer run is not

calls() { # file name... -> "name=calls ... lost=N ended=0|1[ reentered=N when lost]"
    local f=$1
    shift
    "$RANKPROF" report -i "$f" --one-file --format json 2>/dev/null | python3 -c '
import json, sys
r = json.load(sys.stdin)
c = {x["name"]: x["calls"] for x in r["nodes"]}
print(" ".join("%s=%d" % (n, c.get(n, 0)) for n in sys.argv[1:]),
      "lost=%d ended=%d" % (r["lost_events"], int(r["ended_normally"])),
      *(["reentered=%d" % r.get("lost_by_reason", {}).get("reentered", -1)]
        if r["lost_events"] else []))' "$@"
}

# ---- cancel -----------------------------------------------------------------
cancel() {
    local rc=0 got
    RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=2 RANKPROF_TEST_WRITER_DELAY_US=2000 \
        timeout -k 5 "$T" "$RANKPROF" record -o "$tmp/cancel.data" -- "$PROGS/prog_hangs" cancel 20 \
        >"$tmp/cancel.out" 2>"$tmp/cancel.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "cancel: record exited $rc (124: hung): $(cat "$tmp/cancel.err")"
    grep -q "cancel: 20 rounds" "$tmp/cancel.out" || fail "cancel: the program did not finish"
    got=$(calls "$tmp/cancel.data" main run_cancel)
    [[ $got == "main=1 run_cancel=1 lost=0 ended=1" ]] || fail "cancel: $got"
    note "20 rounds of 4 cancelled threads, no hang: ok"
}
scenario cancel cancel

# ---- asynccancel --------------------------------------------------------------
asynccancel() {
    local rc=0 got n=600
    sanitized && n=300 # (each round several times slower)
    timeout -k 5 "$T" "$RANKPROF" record -o "$tmp/acancel.data" -- \
        "$PROGS/prog_hangs" asynccancel $n >"$tmp/acancel.out" 2>"$tmp/acancel.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "asynccancel: record exited $rc (124: hung): $(cat "$tmp/acancel.err")"
    grep -q "asynccancel: $n rounds" "$tmp/acancel.out" || fail "asynccancel: the program did not finish"
    got=$(calls "$tmp/acancel.data" main run_asynccancel)
    [[ $got == "main=1 run_asynccancel=1 lost=0 ended=1" ]] || fail "asynccancel: $got"
    note "$n rounds of 4 threads cancelled asynchronously, no hang: ok"
}
under_tsan || scenario asynccancel asynccancel

# ---- asyncjoin ----------------------------------------------------------------
asyncjoin() {
    local rc=0 n=50
    RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=2 RANKPROF_TEST_WRITER_DELAY_US=1000 \
        timeout -k 5 "$T" "$RANKPROF" record -o "$tmp/ajoin.data" -- \
        "$PROGS/prog_hangs" asyncjoin $n >"$tmp/ajoin.out" 2>"$tmp/ajoin.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "asyncjoin: record exited $rc (124: hung): $(cat "$tmp/ajoin.err")"
    grep -qx "asyncjoin: $n rounds, 0 not cancelled, $((4 * n)) cleanups" "$tmp/ajoin.out" ||
        fail "asyncjoin: $(cat "$tmp/ajoin.out")"
    note "$n rounds of 4 threads cancelled asynchronously, every join PTHREAD_CANCELED: ok"
}
under_tsan || scenario asyncjoin asyncjoin

# ---- pexit ------------------------------------------------------------------
# (not under ThreadSanitizer: its own background thread keeps a process
# whose main called pthread_exit alive, with or without the recorder)
pexit() { # MODE "NAME=CALLS..." [RECORD-OPTION...]
    local rc=0 got m=$1 want=$2
    shift 2
    timeout -k 5 "$T" "$RANKPROF" record "$@" -o "$tmp/$m.data" -- "$PROGS/prog_hangs" "$m" 100000 \
        >"$tmp/$m.out" 2>"$tmp/$m.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "$m: record exited $rc (124: the process never ended): $(cat "$tmp/$m.err")"
    got=$(calls "$tmp/$m.data" main late leaf at_exit in_dtor)
    [[ $got == "$want lost=0 ended=1" ]] || fail "$m: $got"
    note "$m $*: the process ended with its last thread, all calls recorded: ok"
}
under_tsan || scenario pexit pexit pexit "main=1 late=1 leaf=100000 at_exit=500 in_dtor=300"
under_tsan || scenario pexitalone pexit pexitalone "main=1 late=0 leaf=100000 at_exit=500 in_dtor=300"
# direct mode: its publisher thread must not keep the process alive
# (before: it never ended), and the exit's calls are counted there too
under_tsan || scenario pexitdirect pexit pexit "main=1 late=1 leaf=100000 at_exit=500 in_dtor=300" \
    --mode direct
under_tsan || scenario pexitalonedirect pexit pexitalone \
    "main=1 late=0 leaf=100000 at_exit=500 in_dtor=300" --mode direct

# ---- static -----------------------------------------------------------------
# (two recorders in one process, the static copy and the preloaded one, are
# not supported under ThreadSanitizer: their own locks go through TSan there)
static() { # HOW
    local how=$1 rc=0 got ok f
    case $how in
    direct | trace)
        RANKPROF_MODE=$how RANKPROF_OUTPUT="$tmp/static.data" \
            timeout -k 5 "$T" "$PROGS/prog_hangs_static" points 20000 \
            >"$tmp/static.out" 2>"$tmp/static.err" || rc=$? ;;
    *)
        timeout -k 5 "$T" "$RANKPROF" record --mode "${how#record-}" -o "$tmp/static.data" -- \
            "$PROGS/prog_hangs_static" points 20000 >"$tmp/static.out" 2>"$tmp/static.err" || rc=$? ;;
    esac
    [[ $rc -eq 0 ]] || fail "static ($how): exited $rc (124: deadlock): $(cat "$tmp/static.err")"
    grep -q "points: 80000" "$tmp/static.out" || fail "static ($how): the program did not finish"
    # under record two recorders run (the preloaded one and the program's
    # own, which writes static.data.PID): one of the files has the points
    ok=
    for f in "$tmp"/static.data*; do
        got=$(calls "$f" pt pointer ending)
        [[ $got == "pt=80000 pointer=4 ending=1000 lost=0 ended=1" ]] && ok=1
    done
    [[ -n $ok ]] || fail "static ($how): no trace with all points: $got"
    rm -f "$tmp"/static.data*
    note "4 threads, 80000 points, no deadlock: ok"
}
hows="direct trace record-direct record-trace"
if under_tsan; then hows="direct trace"; fi
for how in $hows; do
    scenario "static_$how" static "$how"
done

# the static recorder under record forks: in the child, the static copy's
# own lock went through the preloaded copy's interposer (the "real"
# function it found next), which recorded it and faulted in the atfork
# handler, and the child hung for good (3 of 3); each copy now takes its
# locks past the other (two copies: librankprof.so preloaded by hand), and
# `record` preloads no second copy into a program that has one
static_fork() { # MODE
    local rc=0
    timeout -k 5 "$T" "$RANKPROF" record --mode "$1" -o "$tmp/sfork.data" -- \
        "$PROGS/prog_hangs_static" fork 20000 >"$tmp/sfork.out" 2>"$tmp/sfork.err" </dev/null || rc=$?
    [[ $rc -eq 0 ]] || fail "static fork ($1): exited $rc (124: hung): $(cat "$tmp/sfork.err")"
    grep -qx "fork: child status 0" "$tmp/sfork.out" || fail "static fork ($1): $(cat "$tmp/sfork.out")"
    rm -f "$tmp"/sfork.data*
}
# (`record` sees the recorder linked in and preloads no second copy: with
# two, the child faulted under the sanitizers)
scenario static_fork_trace static_fork trace
scenario static_fork_direct static_fork direct

# ---- sigjmp -----------------------------------------------------------------
# 20 runs (the crash this guards against came in 6 of 20); 6 under the
# sanitizers, where one run takes seconds.
sigjmp() {
    local runs=${RP_HANGS_SIGJMP_RUNS:-20} i rc got tick lost jumps
    sanitized && runs=${RP_HANGS_SIGJMP_RUNS:-6}
    for i in $(seq 1 "$runs"); do
        rc=0
        timeout -k 5 "$T" "$RANKPROF" record -o "$tmp/sigjmp.data" -- "$PROGS/prog_hangs" sigjmp 100000 \
            >"$tmp/sigjmp.out" 2>"$tmp/sigjmp.err" || rc=$?
        [[ $rc -eq 0 ]] || fail "sigjmp run $i: exited $rc: $(cat "$tmp/sigjmp.err")"
        got=$(calls "$tmp/sigjmp.data" after tick)
        [[ $got =~ ^after=100000\ tick=([0-9]+)\ lost=([0-9]+)\ ended=1(\ reentered=([0-9]+))?$ ]] ||
            fail "sigjmp run $i: $got"
        # every drop is a handler's that interrupted the recorder, and says so
        [[ ${BASH_REMATCH[2]} == 0 || ${BASH_REMATCH[2]} == "${BASH_REMATCH[4]}" ]] ||
            fail "sigjmp run $i: not all drops re-entered: $got"
        tick=${BASH_REMATCH[1]} lost=${BASH_REMATCH[2]}
        jumps=$(sed -n 's/^sigjmp: \([0-9]*\) jumps$/\1/p' "$tmp/sigjmp.out")
        ((lost % 3 == 0 && tick + lost / 3 == jumps)) ||
            fail "sigjmp run $i: tick $tick + lost $lost / 3 is not the $jumps handler runs"
    done
    note "$runs runs exit 0, after() complete, handler drops counted: ok"
}
scenario sigjmp sigjmp

# the same in direct mode: every drop has its reason (lost_by_reason: the
# handler's events, re-entered; direct mode gave the total alone)
sigjmp_direct() {
    local rc=0
    timeout -k 5 "$T" "$RANKPROF" record --mode direct -o "$tmp/sjd.data" -- \
        "$PROGS/prog_hangs" sigjmp 100000 >"$tmp/sjd.out" 2>"$tmp/sjd.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "sigjmp direct: exited $rc: $(cat "$tmp/sjd.err")"
    "$RANKPROF" report --format json -i "$tmp/sjd.data" >"$tmp/sjd.json" 2>/dev/null ||
        fail "sigjmp direct: report"
    python3 - "$tmp/sjd.json" <<'PY' || fail "sigjmp direct: losses without their reason"
import json, sys
r = json.load(open(sys.argv[1]))
lost, why = r["lost_events"], r.get("lost_by_reason") or {}
if lost != sum(why.values()):
    sys.exit(f"e2e_hangs: sigjmp direct: lost {lost}, by reason {why}")
PY
    note "sigjmp, direct mode: every drop has its reason"
}
scenario sigjmp_direct sigjmp_direct

# ---- term -------------------------------------------------------------------
# (not under ThreadSanitizer: there the program does not receive the
# SIGTERM that record forwards - record and the program both run under
# TSan's own signal handling; the cause is not yet known)
term() { # SIGNAL NUMBER
    local rec rc got
    "$RANKPROF" record -o "$tmp/term.data" -- "$PROGS/prog_hangs" term 1000 \
        >"$tmp/term.out" 2>"$tmp/term.err" &
    rec=$!
    for _ in $(seq 1 600); do
        grep -q ready "$tmp/term.out" 2>/dev/null && break
        sleep 0.05
    done
    grep -q ready "$tmp/term.out" || fail "term: the program did not start"
    kill -"$1" $rec
    rc=0
    wait $rec || rc=$?
    [[ $rc -eq 3 ]] || fail "term: record exited $rc, expected the program's 3 ($((128 + $2)): record was killed first)"
    grep -q "got signal $2" "$tmp/term.out" || fail "term: the program did not get SIG$1: $(cat "$tmp/term.out")"
    got=$(calls "$tmp/term.data" main after)
    # on_term is instrumented: when SIGTERM lands inside an append, its enter
    # and exit are dropped by the recursion guard and counted (lost=2)
    [[ $got == "main=1 after=1000 lost=0 ended=1" || $got == "main=1 after=1000 lost=2 ended=1 reentered=2" ]] ||
        fail "term: $got"
    note "record passed SIG$1 on, waited, exited with the program's status: ok"
}
under_tsan || scenario term term TERM 15
# (before, SIGUSR1 ended record and the program with it, by SIGKILL, and
# SIGQUIT was ignored)
under_tsan || scenario termusr1 term USR1 10
under_tsan || scenario termquit term QUIT 3
finish

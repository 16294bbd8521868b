#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_endings.sh - every ordinary way a program ends keeps every event it
# recorded (docs/robustness.md, "How a run can end, and what the file
# holds").  prog_endings MODE N makes exactly N calls of work() (2N of
# leaf()) and then ends by MODE; the trace
# must hold all of them, with no loss, an END chunk saying how it ended,
# and the program's exit status must be what it would be unrecorded.
#
#   mode          status    END
#   raise-SIG     128+SIG   killed by signal SIG  (TERM INT HUP PIPE XCPU USR1 ALRM RTMIN+3)
#   wait + kill   128+SIG   killed by signal SIG  (TERM INT HUP, from outside)
#   own2 + kills  9         normally (its own handler's _exit, signalled
#                           again while the first _exit's flush runs)
#   ownexit2 + kills 9      the same with exit() in the handler
#   exitterm      0 or 143  normally (SIGTERMs while exit's flush runs)
#   count         0         normally (timeout -s INT: one SIGINT, not two)
#   _exit         5         normally
#   _Exit         6         normally
#   quick_exit    7         normally
#   daemon        0         normally (the parent's trace; libc's daemon()
#                           ends the parent past the _exit wrapper)
#   fork          0         normally (the child's trace, NAME.PID: _exit(0))
#   forkwait      137       none (the child, SIGKILLed while it waits: its
#                           periodic flush at the wait, RANKPROF_FLUSH_MS=50)
#
# Direct mode too: direct_raise-TERM, direct_raise-INT, direct_pexit-SEGV,
# direct_killtwice, direct_forksegv (the statistics and END written by the
# handler of the first fatal signal); direct_kill9 (SIGKILL: the checkpoint
# read in the trace's place), direct_ckpt_gone (an ordinary end removes it).
#
# The same with the recorder linked into the program (prog_endings_static,
# librankprof.a), which `rankprof record` then does not preload a second
# time: static_raise-TERM, static_raise-INT (stripped), static__exit,
# static_fork (a
# preloaded copy owned the signals, and the linked one, which records the
# program's calls, lost its last buffers: 98,298 of 100,000 calls, lost 0).
#
# The periodic flush is off (RANKPROF_FLUSH_MS=0) and buffers are small, so
# the last partial buffer is only written if the ending writes it.
# Each ending is a scenario: every failure is reported.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_endings RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB" RANKPROF_FLUSH_MS=0 RANKPROF_BUFSIZE=65536
N=100000
sanitized && N=30000 # still 20 buffers' worth: the last one partial

check_trace() { # name data-file want-end(exit|N)
    local name=$1 data=$2 end=$3
    $TMO "$RANKPROF" report -i "$data" --one-file --format json >"$tmp/$name.json" 2>"$tmp/$name.rerr" ||
        fail "$name: report failed: $(cat "$tmp/$name.rerr")"
    $TMO "$RANKPROF" info -i "$data" --one-file >"$tmp/$name.info" 2>&1 || fail "$name: info failed"
    python3 - "$tmp/$name.json" "$N" <<'PY' || fail "$name: wrong report"
import json, sys
r = json.load(open(sys.argv[1]))
n = int(sys.argv[2])
calls = {x["name"]: x["calls"] for x in r["nodes"]}
bad = [f"{k}: {calls.get(k, 0)} calls, expected {v}"
       for k, v in {"work": n, "leaf": 2 * n}.items() if calls.get(k, 0) != v]
if r["lost_events"] != 0:
    bad.append(f"lost {r['lost_events']}")
for b in bad:
    print(f"e2e_endings: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    # the table's header: exactly one "run:" line, saying how it ended
    $TMO "$RANKPROF" report -i "$data" --one-file >"$tmp/$name.table" 2>/dev/null ||
        fail "$name: report (table) failed"
    local runline want
    runline=$(grep "^run:" "$tmp/$name.table")
    if [[ $end == none ]]; then
        grep -q "^ended: *ABNORMALLY: no END" "$tmp/$name.info" || fail "$name: info: $(grep ended "$tmp/$name.info")"
        want="run: did not end normally"
    elif [[ $end == exit ]]; then
        grep -q "^ended: *normally" "$tmp/$name.info" || fail "$name: info: $(grep ended "$tmp/$name.info")"
        want="run: ended normally"
    else
        grep -q "^ended: *ABNORMALLY: killed by signal $end\b" "$tmp/$name.info" ||
            fail "$name: info: $(grep ended "$tmp/$name.info")"
        want="run: killed by signal $end"
    fi
    [[ $(grep -c "^run:" "$tmp/$name.table") == 1 && $runline == "$want"* ]] ||
        fail "$name: the table's run line(s): $runline; want one, '$want...'"
    note "all $N calls, END $end: ok"
}

run() { # mode want-status want-end [program]   (record's options: $RECOPTS)
    local mode=$1 want=$2 end=$3 prog=${4:-prog_endings} rc=0
    [[ $prog == */* ]] || prog=$PROGS/$prog
    # shellcheck disable=SC2086 # (options, split)
    $TMO "$RANKPROF" record ${RECOPTS:-} -o "$tmp/$mode.data" -- "$prog" "$mode" $N \
        >"$tmp/$mode.out" 2>"$tmp/$mode.err" || rc=$?
    # (under a sanitizer its own SIGSEGV handler comes after the recorder's
    # and exits 1 or 66: only the trace is checked then)
    [[ $rc -eq $want ]] || { sanitized && [[ $want == 139 ]]; } ||
        fail "$mode ($prog): exit $rc, expected $want: $(cat "$tmp/$mode.err")"
    check_trace "$mode" "$tmp/$mode.data" "$end"
}

ending() { scenario "$1" run "$@"; }

# The pid the program printed in its "done PID" line in FILE, once it has
# (up to 60 s); empty if it never did.
done_pid() { # FILE
    local pid=
    for _ in $(seq 600); do
        pid=$(sed -n 's/^done \([0-9]*\)$/\1/p' "$1" 2>/dev/null || true)
        [[ -n $pid ]] && break
        sleep 0.1
    done
    echo "$pid"
}
ending raise-TERM 143 15
ending raise-INT 130 2
ending raise-HUP 129 1
ending raise-PIPE 141 13
ending raise-XCPU 152 24
ending raise-USR1 138 10
ending raise-ALRM 142 14
rt=$(kill -l RTMIN+3) # a real-time signal: glibc's SIGRTMIN moves with its own use
ending raise-RTMIN+3 $((128 + rt)) $rt
ending _exit 5 exit
# a fatal signal after main's pthread_exit, when the writer thread has
# retired (no END before, and with --ring nothing at all: the handler
# waited for a writer that was gone); the flush is the handler's own
ending pexit-SEGV 139 11
ending pexit-ABRT 134 6
ending pexit-TERM 143 15
ring_pexit() { RECOPTS="--ring 4M" run pexit-SEGV 139 11; }
scenario ring_pexit-SEGV ring_pexit
# direct mode: the handler of the first fatal signal writes the statistics
# and END itself, on the thread it hit (they were not written: the file
# kept its prologue alone)
direct_run() { RECOPTS="--mode direct" run "$@"; }
scenario direct_raise-TERM direct_run raise-TERM 143 15
scenario direct_raise-INT direct_run raise-INT 130 2
scenario direct_pexit-SEGV direct_run pexit-SEGV 139 11
# _exit while another thread runs: the other thread stops at its next
# hook while the flush runs, as without the recorder the process ends at
# once (it went on for the flush's time: about 2,000 "torn" lines, where
# pigz's write thread wrote to the descriptor its handler had closed and
# printed an error); the trace still holds every call
torn() {
    local rc=0 lines
    $TMO "$RANKPROF" record -o "$tmp/torn.data" -- "$PROGS/prog_endings" torn $N \
        >"$tmp/torn.out" 2>"$tmp/torn.err" || rc=$?
    [[ $rc -eq 5 ]] || fail "torn: exit $rc, expected 5: $(cat "$tmp/torn.err")"
    # (between main's mark and its _exit the thread prints on: a few lines,
    # 13 once under ASan on a loaded machine; while a flush ran, thousands)
    lines=$(grep -c '^torn$' "$tmp/torn.out" || true)
    ((lines <= 100)) || fail "torn: the other thread went on while the flush ran: $lines lines"
    check_trace torn "$tmp/torn.data" exit
}
if under_tsan; then # (ThreadSanitizer's own _exit lets the thread run on: ~900,000 lines unrecorded)
    note "torn: skipped under TSan"
else
    scenario torn torn
fi
# the exit status, where the process ended by exit, _exit, _Exit or
# quick_exit (interposed): END holds it, the JSON's exit_status and the
# table's run line say it (they said 0 whatever it was); a return from
# main, whose exit is libc's own, says none
exit_status() {
    local mode want got
    for mode in _exit:5 _Exit:6 quick_exit:7 calltree:none; do
        want=${mode#*:} mode=${mode%:*}
        if [[ $mode == calltree ]]; then # (returns 0 from main)
            $TMO "$RANKPROF" record -o "$tmp/es.data" -- "$PROGS/prog_calltree" >/dev/null 2>&1 ||
                fail "record prog_calltree"
        else
            $TMO "$RANKPROF" record -o "$tmp/es.data" -- "$PROGS/prog_endings" "$mode" 100 \
                >/dev/null 2>&1 </dev/null || true
        fi
        got=$($TMO "$RANKPROF" report --format json -i "$tmp/es.data" 2>/dev/null |
            python3 -c 'import json, sys; print(json.load(sys.stdin).get("exit_status", "none"))')
        [[ $got == "$want" ]] || fail "exit status of $mode: the JSON says $got, expected $want"
        if [[ $want != none ]]; then
            $TMO "$RANKPROF" report -i "$tmp/es.data" 2>/dev/null |
                grep -qx "run: ended normally, exit status $want" ||
                fail "exit status of $mode: the table's run line: $(
                    $TMO "$RANKPROF" report -i "$tmp/es.data" 2>/dev/null | grep '^run:')"
        fi
    done
    note "exit statuses in END, the JSON and the table: ok"
}
scenario exit_status exit_status
# a fatal signal under --throttle: the throttled calls' counts are written
# too (they were lost: 307,414 of 1,200,000 calls shown, without a mark)
throttle_raise() { RECOPTS="--throttle=1000:100000" run raise-TERM 143 15; }
scenario throttle_raise-TERM throttle_raise
# recording never switched on (--off): END still says how the run ended
off_term() {
    local rc=0
    $TMO "$RANKPROF" record --off -o "$tmp/off.data" -- "$PROGS/prog_endings" raise-TERM 1000 \
        >"$tmp/off.out" 2>"$tmp/off.err" || rc=$?
    [[ $rc -eq 143 ]] || fail "off: exit $rc, expected 143: $(cat "$tmp/off.err")"
    $TMO "$RANKPROF" info -i "$tmp/off.data" --one-file >"$tmp/off.info" 2>&1 || fail "off: info failed"
    grep -q "^ended: *ABNORMALLY: killed by signal 15\b" "$tmp/off.info" ||
        fail "off: info: $(grep ended "$tmp/off.info")"
    note "--off, SIGTERM: END says signal 15: ok"
}
scenario off_raise-TERM off_term
scenario static_raise-TERM run raise-TERM 143 15 prog_endings_static
# (the note that tells record so is kept by strip, which here keeps only
# the two symbols the check names)
strip -K work -K leaf -o "$tmp/prog_endings_stripped" "$PROGS/prog_endings_static" ||
    fail "strip"
scenario static_raise-INT run raise-INT 130 2 "$tmp/prog_endings_stripped"
scenario static__exit run _exit 5 exit prog_endings_static
ending _Exit 6 exit
ending quick_exit 7 exit
# quick_exit's flush comes after the program's at_quick_exit handlers: their
# 40 calls of at_quick are in the trace (before: dropped, not counted)
quick_handlers() {
    local got rc=0
    $TMO "$RANKPROF" record -o "$tmp/qh.data" -- "$PROGS/prog_endings" quick_exit 1000 \
        >"$tmp/qh.out" 2>"$tmp/qh.err" || rc=$?
    [[ $rc -eq 7 ]] || fail "quick_exit: exit $rc, expected 7: $(cat "$tmp/qh.err")"
    got=$("$RANKPROF" report -i "$tmp/qh.data" --one-file --format json | python3 -c '
import json, sys
r = json.load(sys.stdin)
print(sum(x["calls"] for x in r["nodes"] if x["name"] == "at_quick"), r["lost_events"])')
    [[ $got == "40 0" ]] || fail "quick_exit: at_quick calls, lost: $got, expected 40 0"
}
scenario quick_handlers quick_handlers
ending daemon 0 exit

# killed from outside once it has made its calls and says so; twice: the
# signal again and again for 40 ms (as `timeout` sends it twice: to
# `rankprof record`, which passes it on, and to the process group), to a
# program with threads that take the next ones while main's handler waits
# for the flush (with SA_RESETHAND the second one ended the process then)
killed() { # SIG [twice]
    local sig=$1 twice=${2:-} rc=0 rec pid want name
    name=kill$sig$twice
    # shellcheck disable=SC2086 # (options, split)
    $TMO "$RANKPROF" record ${RECOPTS:-} -o "$tmp/$name.data" -- "$PROGS/prog_endings" wait${twice:+2} $N \
        >"$tmp/$name.out" 2>"$tmp/$name.err" &
    rec=$!
    pid=$(done_pid "$tmp/$name.out")
    [[ -n $pid ]] || { kill $rec 2>/dev/null; fail "kill $sig: the program never said done"; }
    kill -$sig "$pid"
    [[ -z $twice ]] || for _ in 1 2 3 4 5 6 7 8; do kill -$sig "$pid" 2>/dev/null || break; sleep 0.005; done
    wait $rec || rc=$?
    want=$((128 + $(kill -l $sig)))
    [[ $rc -eq $want ]] || fail "kill $sig: exit $rc, expected $want: $(cat "$tmp/$name.err")"
    check_trace "$name" "$tmp/$name.data" "$(kill -l $sig)"
}
for sig in TERM INT HUP; do
    scenario "kill$sig" killed $sig
done
scenario killtwice killed TERM twice
direct_killed() { RECOPTS="--mode direct" killed "$@"; }
scenario direct_killtwice direct_killed TERM twice

# direct mode, SIGKILL: the trace has no statistics (they are written at the
# end), but the recorder's checkpoint beside it, every 100 ms here, has them
# as of the last one, after the calls: the reader commands read it in the
# trace's place, saying so; an ordinary end (SIGTERM here) removes it
direct_checkpoint() { # SIG
    local sig=$1 rc=0 rec pid name=ckpt$1
    rm -f "$tmp/$name.data"*
    RANKPROF_CHECKPOINT_MS=100 $TMO "$RANKPROF" record --mode direct -o "$tmp/$name.data" -- \
        "$PROGS/prog_endings" wait2 $N >"$tmp/$name.out" 2>"$tmp/$name.err" &
    rec=$!
    pid=$(done_pid "$tmp/$name.out")
    [[ -n $pid ]] || { kill $rec 2>/dev/null; fail "$name: the program never said done"; }
    sleep 0.5 # (a checkpoint after the calls, at most 100 ms after them)
    kill -$sig "$pid"
    wait $rec || rc=$?
    [[ $rc -eq $((128 + $(kill -l $sig))) ]] || fail "$name: exit $rc: $(cat "$tmp/$name.err")"
    if [[ $sig == KILL ]]; then
        [[ -f $tmp/$name.data.ckpt ]] || fail "$name: no checkpoint: $(ls "$tmp")"
        grep -q "last checkpoint, .*$name.data.ckpt" "$tmp/$name.err" ||
            fail "$name: record did not name the checkpoint: $(cat "$tmp/$name.err")"
        $TMO "$RANKPROF" report --format json -i "$tmp/$name.data" >"$tmp/$name.json" \
            2>"$tmp/$name.rerr" || fail "$name: report: $(cat "$tmp/$name.rerr")"
        grep -q "holds no statistics .*read its recorder's checkpoint" "$tmp/$name.rerr" ||
            fail "$name: report did not say it read the checkpoint: $(cat "$tmp/$name.rerr")"
        python3 - "$tmp/$name.json" $N <<'PY' || fail "$name: wrong report"
import json, sys
r, n = json.load(open(sys.argv[1])), int(sys.argv[2])
c = {x["name"]: x["calls"] for x in r["nodes"]}
if c.get("work") != n or c.get("leaf") != 2 * n or r["lost_events"]:
    sys.exit(f"e2e_endings: checkpoint: work {c.get('work')}, leaf {c.get('leaf')}, "
             f"lost {r['lost_events']}: expected {n}, {2 * n}, 0")
if not r.get("checkpoint") or not r.get("running"):
    sys.exit(f"e2e_endings: checkpoint: the JSON's checkpoint {r.get('checkpoint')}, running "
             f"{r.get('running')}: expected true, true")
PY
        $TMO "$RANKPROF" report -i "$tmp/$name.data" 2>/dev/null |
            grep -q "^run: killed, or still running (its recorder's last checkpoint" ||
            fail "$name: the table's run line does not say it is a checkpoint"
        note "direct mode, SIGKILL: all $N calls from the checkpoint: ok"
    else
        [[ ! -e $tmp/$name.data.ckpt ]] || fail "$name: the checkpoint stayed after the end"
        check_trace "$name" "$tmp/$name.data" "$(kill -l $sig)"
    fi
}
scenario direct_kill9 direct_checkpoint KILL
scenario direct_ckpt_gone direct_checkpoint TERM

# the program's own handler that _exits (as pigz's does) or exits,
# signalled again and again for about 20 ms: each later signal runs that
# handler on another thread, whose _exit or exit comes while the first
# one's final flush runs (one buffer of 64 MiB holds all the calls, so the
# flush takes milliseconds) and must wait for it, not end the process in
# the middle (glibc's exit() from a second thread would: it finds no
# handler left and calls _exit)
ownkilled() { # NAME MODE [RECORD-OPTION...]
    local N=1000000 rc=0 rec pid name=$1 mode=$2
    shift 2
    sanitized && N=300000
    RANKPROF_BUFSIZE=67108864 $TMO "$RANKPROF" record "$@" -o "$tmp/$name.data" -- \
        "$PROGS/prog_endings" "$mode" $N >"$tmp/$name.out" 2>"$tmp/$name.err" &
    rec=$!
    pid=$(done_pid "$tmp/$name.out")
    [[ -n $pid ]] || { kill $rec 2>/dev/null; fail "$name: the program never said done"; }
    # ten 2 ms apart, then one every 0.1 s while it runs (ThreadSanitizer,
    # which runs a program's handlers itself, has been seen to drop a burst)
    for i in $(seq 110); do
        kill -INT "$pid" 2>/dev/null || break
        ((i <= 10)) && sleep 0.002 || sleep 0.1
    done
    wait $rec || rc=$?
    [[ $rc -eq 9 ]] || fail "$name: exit $rc, expected 9 (its handler's): $(cat "$tmp/$name.err")"
    # (the flush runs in the program's handler: a sanitizer's report there,
    # such as ThreadSanitizer's "signal-unsafe call", fails it)
    ! grep -q "Sanitizer" "$tmp/$name.err" ||
        fail "$name: $(grep -m1 -A40 "Sanitizer" "$tmp/$name.err")"
    check_trace "$name" "$tmp/$name.data" exit
}
scenario killown ownkilled killown own2
scenario killownexit ownkilled killownexit ownexit2
# direct mode's flush builds the statistics there, with mmap only
scenario killowndirect ownkilled killowndirect own2 --mode direct

# a forked child (no writer thread: it writes itself) ended by one thread
# while two others and main are alive, asleep after their calls: the
# final flush writes the filled part of every thread's buffer too, so the
# child's trace holds exactly the calls they made (before, only whole
# buffers: thousands of calls short, none counted lost)
child_threads() { # HOW STATUS END
    local how=$1 want=$2 end=$3 rc=0 child
    rm -f "$tmp"/th.data*
    $TMO "$RANKPROF" record -o "$tmp/th.data" -- "$PROGS/prog_endings" "threads-$how" \
        >"$tmp/th.out" 2>"$tmp/th.err" || rc=$?
    [[ $rc -eq $want ]] || fail "threads-$how: exit $rc, expected $want: $(cat "$tmp/th.err")"
    child=$(sed -n 's/^child //p' "$tmp/th.out")
    [[ -f $tmp/th.data.$child ]] || fail "threads-$how: no child trace: $(ls "$tmp")"
    "$RANKPROF" report -i "$tmp/th.data.$child" --one-file --format json >"$tmp/th.json"
    "$RANKPROF" info -i "$tmp/th.data.$child" --one-file >"$tmp/th.info" 2>&1
    grep -q "^ended: *$end" "$tmp/th.info" || fail "threads-$how: info: $(grep ended "$tmp/th.info")"
    python3 - "$tmp/th.json" "$(sed -n 's/^snapshot //p' "$tmp/th.out")" "$how" <<'PY' ||
import json, sys
r = json.load(open(sys.argv[1]))
k, how = int(sys.argv[2]), sys.argv[3]
w = sum(x["calls"] for x in r["nodes"] if x["name"] == "work")
print(f"e2e_endings: threads-{how}: {w} calls of work in the child's trace, "
      f"{k} made, {r['lost_events']} lost", file=sys.stderr)
sys.exit(0 if w == k and r["lost_events"] == 0 else 1)
PY
        fail "threads-$how: calls missing"
}
# (not under ThreadSanitizer, which refuses threads started after a fork
# from a multi-threaded process: the parent has the writer)
under_tsan || scenario childthreads_exit child_threads exit 3 normally
under_tsan || scenario childthreads_term child_threads term 143 "ABNORMALLY: killed by signal 15"
under_tsan || scenario childthreads__exit child_threads _exit 4 normally

# a SIGTERM taken by an idle thread while main goes on calling for 200 ms
# and would return 0 (prog_endings termrace), with a flush made slow (the
# writer sleeps 0.3 s a buffer): the process ends by the signal, as without
# the recorder, and main does not go on to its exit meanwhile (before: main
# returned, the atexit handler's line, status 0 or 143, END signal 15)
termrace() {
    local rc=0
    RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=2 RANKPROF_TEST_WRITER_DELAY_US=300000 \
        $TMO "$RANKPROF" record -o "$tmp/termrace.data" -- "$PROGS/prog_endings" termrace 100 \
        >"$tmp/termrace.out" 2>"$tmp/termrace.err" || rc=$?
    [[ $rc -eq 143 ]] || fail "termrace: exit $rc, expected 143: $(cat "$tmp/termrace.out")"
    ! grep -q "atexit ran" "$tmp/termrace.out" || fail "termrace: the program went on to its exit"
    "$RANKPROF" info -i "$tmp/termrace.data" --one-file >"$tmp/termrace.info" 2>&1
    grep -q "^ended: *ABNORMALLY: killed by signal 15" "$tmp/termrace.info" ||
        fail "termrace: info: $(grep ended "$tmp/termrace.info")"
}
scenario termrace termrace

# a signal while the final flush of an exit runs: prog_endings exitterm
# returns from main with 1 M calls in one 64 MiB buffer, and a thread sends
# itself SIGTERM every 1 ms from 2 ms after its atexit handler ran; the
# signal's handler must wait for that flush before the signal ends the
# process (status 143 then, or 0 when the exit comes first): END says the
# run ended normally, with every call (on a loaded machine the first
# signal may come before the flush begins: then the signal's own flush
# writes every call and END says SIGTERM; either way nothing is lost)
exitterm() {
    local N=1000000 rc=0 end=exit
    sanitized && N=300000
    RANKPROF_BUFSIZE=67108864 $TMO "$RANKPROF" record -o "$tmp/exitterm.data" -- \
        "$PROGS/prog_endings" exitterm $N >"$tmp/exitterm.out" 2>"$tmp/exitterm.err" || rc=$?
    [[ $rc -eq 0 || $rc -eq 143 ]] || fail "exitterm: exit $rc, expected 0 or 143: $(cat "$tmp/exitterm.err")"
    "$RANKPROF" info -i "$tmp/exitterm.data" --one-file 2>&1 | grep -q "^ended: *ABNORMALLY: killed by signal 15" &&
        end=15
    check_trace exitterm "$tmp/exitterm.data" $end
}
scenario exitterm exitterm

# `timeout -s INT` sends SIGINT to `rankprof record` and to its process
# group; the program, in a group of its own outside a terminal's
# foreground, gets it once, from record (twice, it would quit at once where
# a first one asks for a graceful end, as Redis does): prog_endings count
# counts its SIGINTs for 0.5 s after the first and says 1; the trace has
# every call and its END
group_once() {
    local rc=0
    timeout -s INT 1 "$RANKPROF" record -o "$tmp/count.data" -- "$PROGS/prog_endings" count $N \
        >"$tmp/count.out" 2>"$tmp/count.err" || rc=$?
    [[ $rc -eq 124 ]] || fail "group: timeout exited $rc, expected 124: $(cat "$tmp/count.err")"
    grep -qx "signals=1" "$tmp/count.out" || fail "group: the program got $(grep signals "$tmp/count.out") SIGINTs, expected 1"
    check_trace count "$tmp/count.data" exit
}
# (not under ThreadSanitizer: there the program does not receive what record
# passes on, as e2e_hangs' term says)
if under_tsan; then
    note "group: skipped under TSan"
else
    scenario group group_once
fi

# a forked child that makes the calls and _exits: its own trace, complete
fork() { # [program]
    local rc=0 child prog=${1:-prog_endings}
    rm -f "$tmp"/fork.data*
    $TMO "$RANKPROF" record -o "$tmp/fork.data" -- "$PROGS/$prog" fork $N \
        >"$tmp/fork.out" 2>"$tmp/fork.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "fork ($prog): exit $rc: $(cat "$tmp/fork.err")"
    child=$(ls "$tmp"/fork.data.* 2>/dev/null | head -1)
    [[ -n $child ]] || fail "fork: no trace for the child: $(ls "$tmp")"
    check_trace fork "$child" exit
}

# a forked child killed (SIGKILL) while it waits: it has no writer thread,
# so its own flush at the start of the wait is what keeps its calls
forkwait() {
    local rc=0 rec pid
    RANKPROF_FLUSH_MS=50 $TMO "$RANKPROF" record -o "$tmp/fw.data" -- "$PROGS/prog_endings" forkwait $N \
        >"$tmp/fw.out" 2>"$tmp/fw.err" &
    rec=$!
    pid=$(done_pid "$tmp/fw.out")
    [[ -n $pid ]] || { kill $rec 2>/dev/null; fail "forkwait: the child never said done"; }
    sleep 0.5 # the child is in its wait by now
    kill -KILL "$pid"
    wait $rec || rc=$?
    [[ $rc -eq 137 ]] || fail "forkwait: exit $rc, expected 137: $(cat "$tmp/fw.err")"
    [[ -f "$tmp/fw.data.$pid" ]] || fail "forkwait: no trace for the child: $(ls "$tmp")"
    check_trace forkwait "$tmp/fw.data.$pid" none
}
scenario fork fork
scenario static_fork fork prog_endings_static

# --drop, then a fork: the child's file counts the child's losses only (its
# breakdown by reason had the parent's ended threads' drops, a breakdown
# larger than its total of 0); a slow writer makes the parent lose
drop_callfork() {
    local rc=0 child
    rm -f "$tmp"/dcf.data*
    RANKPROF_OFFCPU=0 RANKPROF_SELF_ENCODE=1 RANKPROF_TEST_WRITER_DELAY_US=3000 RANKPROF_BUFSIZE=16384 \
        $TMO "$RANKPROF" record --drop -o "$tmp/dcf.data" -- "$PROGS/prog_endings" callfork $N \
        >"$tmp/dcf.out" 2>"$tmp/dcf.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "drop callfork: exit $rc: $(cat "$tmp/dcf.err")"
    child=$(ls "$tmp"/dcf.data.* 2>/dev/null | head -1)
    [[ -n $child ]] || fail "drop callfork: no file for the child: $(ls "$tmp")"
    for f in "$tmp/dcf.data" "$child"; do
        $TMO "$RANKPROF" report --format json --one-file -i "$f" >"$f.json" 2>/dev/null ||
            fail "drop callfork: report of $f"
    done
    python3 - "$tmp/dcf.data.json" "$child.json" "$N" <<'PY' || fail "drop callfork: wrong losses"
import json, sys
par, ch, n = json.load(open(sys.argv[1])), json.load(open(sys.argv[2])), int(sys.argv[3])
def by_reason(r):
    return sum((r.get("lost_by_reason") or {}).values())
bad = []
if par["lost_events"] == 0:
    bad.append("the parent lost nothing: the test's slow writer did not work")
if by_reason(par) != par["lost_events"]:
    bad.append(f"parent: by reason {by_reason(par)}, total {par['lost_events']}")
if ch["lost_events"] != 0 or by_reason(ch) != 0:
    bad.append(f"child: lost {ch['lost_events']}, by reason {ch.get('lost_by_reason')}")
work = sum(x["calls"] for x in ch["nodes"] if x["name"] == "work")
if work != n:
    bad.append(f"child: {work} calls of work, expected {n}")
for b in bad:
    print(f"e2e_endings: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    note "--drop, fork: the child counts its own losses (0): ok"
}
scenario drop_callfork drop_callfork

# the program's own key destructors run after the recorder's (its key is
# made first): their calls are recorded, in both modes (they were lost,
# and in direct mode not even counted); a destructor that sets its key
# again runs a second round after the thread's end: its calls are counted
# lost, "gone" (34 events a thread)
keydtor() { # MODE ROUNDS WANT_EXTRA_WORK WANT_GONE
    local m=$1 k=$2 extra=$3 gone=$4 rc=0
    $TMO "$RANKPROF" record --mode "$m" -o "$tmp/kd.$m.$k.data" -- "$PROGS/prog_endings" \
        "keydtor$k" 1000 >/dev/null 2>"$tmp/kd.err" || rc=$?
    [[ $rc -eq 0 ]] || fail "keydtor $m $k: exit $rc: $(cat "$tmp/kd.err")"
    $TMO "$RANKPROF" report --format json -i "$tmp/kd.$m.$k.data" >"$tmp/kd.json" 2>/dev/null ||
        fail "keydtor $m $k: report"
    python3 - "$tmp/kd.json" $((2000 + extra)) "$gone" <<'PY' || fail "keydtor $m $k: wrong report"
import json, sys
r, work, gone = json.load(open(sys.argv[1])), int(sys.argv[2]), int(sys.argv[3])
c = {x["name"]: x["calls"] for x in r["nodes"]}
bad = []
if c.get("work") != work or c.get("leaf") != 2 * work:
    bad.append(f"work {c.get('work')}, leaf {c.get('leaf')}: expected {work}, {2 * work}")
got = (r.get("lost_by_reason") or {}).get("gone", 0)
if got != gone:
    bad.append(f"lost gone {got}, expected {gone}")
for b in bad:
    print(f"e2e_endings: {b}", file=sys.stderr)
sys.exit(1 if bad else 0)
PY
    note "key destructors, $m, $k rounds: every call recorded or counted: ok"
}
for m in trace direct; do
    scenario "keydtor_$m" keydtor $m 1 10 0
    scenario "keydtor2_$m" keydtor $m 2 10 68
done

# direct mode, a forked child that faults: its file has its statistics,
# every call, and END saying signal 11 (before, no statistics: first an
# END claiming "events recorded until then are all here" with none, then
# no END)
direct_forksegv() {
    local rc=0 child
    rm -f "$tmp"/dfs.data*
    $TMO "$RANKPROF" record --mode direct -o "$tmp/dfs.data" -- "$PROGS/prog_endings" forksegv 1000 \
        >"$tmp/dfs.out" 2>"$tmp/dfs.err" || rc=$?
    [[ $rc -eq 139 ]] || sanitized || fail "direct forksegv: exit $rc, expected 139: $(cat "$tmp/dfs.err")"
    child=$(ls "$tmp"/dfs.data.* 2>/dev/null | head -1)
    [[ -n $child ]] || fail "direct forksegv: no file for the child: $(ls "$tmp")"
    N=1000 check_trace dfs "$child" 11
}
scenario direct_forksegv direct_forksegv
scenario forkwait forkwait
finish

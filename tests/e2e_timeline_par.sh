#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_timeline_par.sh - the perfetto and chrome timelines walked in
# parallel from the chunks' snapshots (src/report/export_tlpar.c) mean
# what the walk in file order (RANKPROF_TIMELINE_SEQ=1,
# src/analyze/spanwalk.c) means.
#
# For each trace: the parallel output is the same bytes with 0 and 3
# worker threads, the perfetto file holds a packet sequence per EVENTS
# chunk or more (the parallel walk ran), and trace_processor reads from
# it exactly the sequential output's slices (thread, track, ts, dur,
# depth, name, the "arg", "rankprof" and "events" annotations, one row
# each) and counter samples; from the chrome JSON, exactly the sequential
# JSON's slices.  The traces (small buffers: many chunks):
#   threads    prog_stress threads 3: three threads, spans open across chunks
#   recursion  prog_fib (recursion open across every chunk boundary) and
#              prog_scale deep (stacks deeper than a snapshot holds: those
#              chunks are walked in order from the joined state)
#   unwind     prog_unwind longjmp: spans left by longjmp ("unwound")
#   lost       prog_stress under --drop with a slow writer: LOST events,
#              spans dropped ("unclosed"), snapshots after a loss
#   args       prog_points (io spans with ARGs, an ARG in one chunk and the
#              span's end in a later one: walked again from the joined
#              state; counters, instants, lock spans)
#   full       the parallel timelines (and folded) written to /dev/full: exit
#              1 and the reason, "No space left on device", not the code's
#              meaning (the failed write is the writer thread's)
#   holds      prog_wrapped (lock holds that are intervals, released in a
#              later chunk than their acquisition), and under --drop with
#              a slow writer (holds open at a LOST)
#
# With no worker (RANKPROF_REPLAY_JOBS=0) every chunk is walked in order
# from the joined state, so the byte comparison of 0 and 3 workers sets
# the walk from snapshots against the walk in order; it runs even where
# trace_processor cannot be built.
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_timeline_par RANKPROF PROGS RP_LIB
need_progs stress fib scale unwind points wrapped
need_tools python3
export RANKPROF_LIB="$RP_LIB"
export RANKPROF_CALIBRATE=0

have_tp=1
tp_query_build "$tmp/tp_query" || have_tp=

# same TRACE [WANT...]: the parallel and sequential perfetto outputs of
# TRACE agree (above); each WANT must be in some slice row.  MINCHUNKS
# (20) and MINROWS (1000): the least chunks and slices the trace must have.
same() {
    local t=$1 w minchunks=${MINCHUNKS:-20} minrows=${MINROWS:-1000}
    shift
    RANKPROF_TIMELINE_SEQ=1 "$RANKPROF" export --format perfetto -o "$t.seq.pf" "$t" ||
        fail "export perfetto $t (in order)"
    RANKPROF_REPLAY_JOBS=0 "$RANKPROF" export --format perfetto -o "$t.p0.pf" "$t" ||
        fail "export perfetto $t (parallel, no worker)"
    RANKPROF_REPLAY_JOBS=3 "$RANKPROF" export --format perfetto -o "$t.p3.pf" "$t" ||
        fail "export perfetto $t (parallel, 3 workers)"
    cmp -s "$t.p0.pf" "$t.p3.pf" || fail "$t: the parallel output differs with 0 and 3 workers"
    local chunks
    chunks=$("$RANKPROF" info "$t" | awk '$1 == "EVENTS" { print $2 }')
    ((chunks >= minchunks)) || fail "$t: only $chunks EVENTS chunks"
    python3 - "$t.p3.pf" "$chunks" <<'PY' || fail "$t: sequences (above)"
import sys, zlib
sys.path.insert(0, __import__("os").environ["RP_CONSUMERS"])
from protobuf import varint
def packets(b):
    i = 0
    while i < len(b):
        ln, j = varint(b, i + 1)
        yield b[j:j + ln]
        i = j + ln
seqs = set()
def scan(b):
    for p in packets(b):
        if p[:2] == b"\x92\x03":
            zn, k = varint(p, 2)
            scan(zlib.decompress(p[k:k + zn]))
        elif p[:1] == b"\x50":
            seqs.add(varint(p, 1)[0])
scan(open(sys.argv[1], "rb").read())
if len(seqs) < int(sys.argv[2]):
    sys.exit(f"{len(seqs)} packet sequences for {sys.argv[2]} chunks: not walked per chunk")
PY
    RANKPROF_TIMELINE_SEQ=1 "$RANKPROF" export --format chrome -o "$t.seq.json" "$t" ||
        fail "export chrome $t (in order)"
    RANKPROF_REPLAY_JOBS=0 "$RANKPROF" export --format chrome -o "$t.p0.json" "$t" ||
        fail "export chrome $t (parallel, no worker)"
    RANKPROF_REPLAY_JOBS=3 "$RANKPROF" export --format chrome -o "$t.p3.json" "$t" ||
        fail "export chrome $t (parallel, 3 workers)"
    cmp -s "$t.p0.json" "$t.p3.json" || fail "$t: the parallel chrome differs with 0 and 3 workers"
    [[ -n $have_tp ]] || return 0
    local q="select coalesce(t.tid, -1), tr.name, s.ts, s.dur, s.depth, s.name,
        coalesce(extract_arg(s.arg_set_id, 'debug.arg'), ''),
        coalesce(extract_arg(s.arg_set_id, 'debug.rankprof'), ''),
        coalesce(extract_arg(s.arg_set_id, 'debug.events'), '')
        from slice s join track tr on s.track_id = tr.id
        left join thread_track tt on s.track_id = tt.id left join thread t using (utid)
        order by 1, 2, 3, 5, 6, 7, 8"
    local c="select tr.name, c.ts, c.value from counter c join track tr on c.track_id = tr.id
        order by 1, 2, 3"
    "$tmp/tp_query" "$t.seq.pf" "$q" >"$t.seq.tsv" || fail "trace_processor rejected $t.seq.pf"
    "$tmp/tp_query" "$t.p3.pf" "$q" >"$t.par.tsv" || fail "trace_processor rejected $t.p3.pf"
    "$tmp/tp_query" "$t.seq.pf" "$c" >>"$t.seq.tsv" || fail "trace_processor: counters of $t"
    "$tmp/tp_query" "$t.p3.pf" "$c" >>"$t.par.tsv" || fail "trace_processor: counters of $t"
    (($(wc -l <"$t.seq.tsv") > minrows)) || fail "$t: only $(wc -l <"$t.seq.tsv") slices"
    cmp -s "$t.seq.tsv" "$t.par.tsv" ||
        fail "$t: trace_processor reads other slices in parallel: $(diff "$t.seq.tsv" "$t.par.tsv" | head -6)"
    for w in "$@"; do
        grep -q -- "$w" "$t.seq.tsv" || fail "$t: no slice row with '$w'"
    done
    # chrome: the same (a lock hold's async id aside: numbered per job)
    "$tmp/tp_query" "$t.seq.json" "$q" >"$t.cseq.tsv" || fail "trace_processor rejected $t.seq.json"
    "$tmp/tp_query" "$t.p3.json" "$q" >"$t.cpar.tsv" || fail "trace_processor rejected $t.p3.json"
    (($(wc -l <"$t.cseq.tsv") > minrows)) || fail "$t: only $(wc -l <"$t.cseq.tsv") chrome slices"
    cmp -s "$t.cseq.tsv" "$t.cpar.tsv" ||
        fail "$t: trace_processor reads other chrome slices in parallel: $(diff "$t.cseq.tsv" "$t.cpar.tsv" | head -6)"
    note "$(basename "$t"): $chunks chunks, $(wc -l <"$t.seq.tsv") rows: the same (perfetto, chrome)"
}

threads() {
    RANKPROF_BUFSIZE=16384 "$RANKPROF" record -o "$tmp/st.rp" -- "$PROGS/prog_stress" threads 3 8000 \
        >/dev/null 2>&1 || fail "recording prog_stress"
    same "$tmp/st.rp"
}

recursion() {
    RANKPROF_BUFSIZE=16384 "$RANKPROF" record -o "$tmp/fib.rp" -- "$PROGS/prog_fib" >/dev/null 2>&1 ||
        fail "recording prog_fib"
    same "$tmp/fib.rp"
    "$RANKPROF" record -o "$tmp/deep.rp" -- "$PROGS/prog_scale" deep 3000 4 16 >/dev/null 2>&1 ||
        fail "recording prog_scale deep"
    same "$tmp/deep.rp"
}

unwind() {
    RANKPROF_BUFSIZE=16384 "$RANKPROF" record -o "$tmp/uw.rp" -- "$PROGS/prog_unwind" longjmp 3000 \
        >/dev/null 2>&1 || fail "recording prog_unwind"
    same "$tmp/uw.rp" unwound
}

lost() {
    RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=2 RANKPROF_TEST_WRITER_DELAY_US=500 \
        "$RANKPROF" record --drop -o "$tmp/drop.rp" -- "$PROGS/prog_stress" threads 4 5000 \
        >/dev/null 2>&1 || fail "recording prog_stress --drop"
    same "$tmp/drop.rp" unclosed LOST
}

args() {
    RANKPROF_BUFSIZE=4096 "$RANKPROF" record -o "$tmp/pts.rp" -- "$PROGS/prog_points" 1800 \
        >/dev/null 2>&1 || fail "recording prog_points"
    same "$tmp/pts.rp" i2c0 bus
}

holds() {
    RANKPROF_BUFSIZE=4096 "$RANKPROF" record -o "$tmp/wr.rp" -- "$PROGS/prog_wrapped" \
        >/dev/null 2>&1 || fail "recording prog_wrapped"
    MINCHUNKS=5 MINROWS=100 same "$tmp/wr.rp" jobs_mutex
    RANKPROF_BUFSIZE=4096 RANKPROF_NBUF=2 RANKPROF_TEST_WRITER_DELAY_US=500 \
        "$RANKPROF" record --drop -o "$tmp/wrd.rp" -- "$PROGS/prog_wrapped" \
        >/dev/null 2>&1 || fail "recording prog_wrapped --drop"
    MINCHUNKS=5 MINROWS=10 same "$tmp/wrd.rp"
}

full() {
    [[ -w /dev/full ]] || { note "no /dev/full: skipped"; return 0; }
    [[ -f "$tmp/st.rp" ]] || fail "no trace (scenario threads failed)"
    local f rc
    for f in perfetto chrome folded; do
        rc=0
        RANKPROF_REPLAY_JOBS=2 "$RANKPROF" export --format $f -o /dev/full "$tmp/st.rp" \
            2>"$tmp/full.err" || rc=$?
        ((rc == 1)) || fail "$f to /dev/full: exit $rc"
        grep -q "writing /dev/full: No space left on device" "$tmp/full.err" ||
            fail "$f to /dev/full: $(cat "$tmp/full.err")"
    done
}

export RP_CONSUMERS="$here/consumers"
scenario threads threads
scenario recursion recursion
scenario unwind unwind
scenario lost lost
scenario args args
scenario holds holds
scenario full full
[[ -n $have_tp ]] || missing trace_processor "no $TP_LIB (chromium-shell) or clang++: the slices not compared"
finish

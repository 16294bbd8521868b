#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_export.sh - end-to-end test of `rankprof export`: records
# tests/progs/calltree (exact call tree documented in its header) and checks
# every format's output, with numbers compared against `report --format
# json` and, where installed, read back by the real consumer of the format;
# and that a Chrome JSON export over 256 MiB warns (big_chrome).
#
# Consumers (installed in CI by scripts/deps.sh ci): when one is missing the
# test skips that part with a message, and at the end exits 77 (ctest SKIP)
# if anything was skipped, unless RP_REQUIRE_CONSUMERS=1, which makes a
# missing consumer a failure.
#
# Run by ctest with RANKPROF, PROGS, RP_LIB, EXAMPLES in the environment.
# Each format is a scenario: every failure is reported, not just the first.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_export RANKPROF PROGS RP_LIB EXAMPLES
need_tools python3
export RANKPROF_LIB="$RP_LIB"
# The exports that replay spans themselves (folded, flame graphs, timelines)
# show measured times; the report subtracts the recorder's cost when the
# trace has its measurement (docs/performance.md).  Their numbers are
# compared here, so the traces are recorded without the measurement.
export RANKPROF_CALIBRATE=0

cd "$tmp"

"$RANKPROF" record -o ct.data -- "$PROGS/prog_calltree" >/dev/null 2>&1 ||
    fail "recording prog_calltree"
"$RANKPROF" report -i ct.data --format json >report.json || fail "report --format json"
# the firmware's main thread fills buffers of 4096 events and encodes them
# itself: the time it takes is the recorder's (PAUSE), a "[recorder]" slice
# in the timelines, taken out of the report's spans
RANKPROF_SELF_ENCODE=1 RANKPROF_BUFSIZE=65536 "$RANKPROF" record -o fw.data -- "$EXAMPLES/firmware" \
    >/dev/null 2>&1 || fail "recording firmware"
"$RANKPROF" report -i fw.data --format json >fw_report.json || fail "report firmware"
# fib recurses 20 deep (the pprof scenario)
"$RANKPROF" record -o fib.data -- "$PROGS/prog_fib" >/dev/null 2>&1 || fail "recording prog_fib"
"$RANKPROF" report -i fib.data --format json >fib_report.json || fail "report fib"
check="python3 $here/consumers/check_export.py"


# --- the skeleton: unknown format, json and csv are the report's bytes, -o - --
skeleton() {
    if "$RANKPROF" export -i ct.data --format nosuch >/dev/null 2>err.txt; then
        fail "an unknown format was accepted"
    fi
    grep -q "nosuch" err.txt || fail "the error does not name the unknown format"
    "$RANKPROF" export -i ct.data --format json -o ct.json || fail "export json"
    cmp -s ct.json report.json || fail "export json differs from report --format json"
    "$RANKPROF" report -i ct.data --format csv >report.csv
    "$RANKPROF" export -i ct.data --format csv >ct.csv || fail "export csv"
    cmp -s ct.csv report.csv || fail "export csv differs from report --format csv"
    if "$RANKPROF" export -i nonexistent.data --format json -o x.json 2>err.txt; then
        fail "a missing input was accepted"
    fi
    [[ ! -e x.json ]] || fail "a failed export left its output file"
    # -o - is standard output, as without -o; a directory format refuses it
    "$RANKPROF" export -i ct.data --format json -o - >dash.json || fail "export json -o -"
    cmp -s dash.json report.json || fail "export json -o - differs from report --format json"
    [[ ! -e ./- ]] || fail "export -o - wrote a file named -"
    local rc=0
    "$RANKPROF" export -i ct.data --format otf2 -o - >/dev/null 2>err.txt || rc=$?
    grep -q "unavailable" err.txt ||
        { [[ $rc == 2 ]] && grep -q -- "-o DIR" err.txt; } || fail "otf2 -o -: exit $rc, $(cat err.txt)"
}
# a trace cut inside its last chunk: an error naming the file, no output;
# with --force the sound part is exported, as report --force analyses it
truncated() {
    head -c $(($(stat -c %s ct.data) - 10)) ct.data >cut.data
    for f in chrome perfetto folded pprof; do
        if "$RANKPROF" export -i cut.data --format $f -o cut.$f 2>err.txt; then
            fail "export $f accepted a truncated trace"
        fi
        grep -q "cut.data.*offset" err.txt || fail "export $f: the error does not name file and offset: $(cat err.txt)"
        [[ ! -e cut.$f ]] || fail "export $f left a file after failing"
        "$RANKPROF" export -i cut.data --format $f --force -o cut.$f 2>/dev/null ||
            fail "export $f --force failed on a truncated trace"
    done
    if ls ./*.tmp.* >/dev/null 2>&1; then fail "a failed export left a temporary file"; fi
}
# an output that is not a regular file is written, never renamed over
fifo() {
    mkfifo out.fifo
    timeout 30 cat out.fifo >fifo.json &
    "$RANKPROF" export -i ct.data --format json -o out.fifo || fail "export to a fifo"
    wait
    [[ -p out.fifo ]] || fail "export replaced the fifo it was given with a file"
    cmp -s fifo.json report.json || fail "export through a fifo differs from the report"
    # a pipe, on stdout or named by -o, is widened to fs.pipe-max-size (at
    # most 1 MiB): a timeline's gigabytes through a 64 KiB pipe cost a
    # context switch every 64 KiB; its reader sees the size after a byte
    local want
    want=$(($(cat /proc/sys/fs/pipe-max-size) < 1048576 ? $(cat /proc/sys/fs/pipe-max-size) : 1048576))
    pipesz='import fcntl, sys; sys.stdin.buffer.read(1); print(fcntl.fcntl(0, 1032)); sys.stdin.buffer.read()'
    got=$("$RANKPROF" export -i ct.data --format chrome | python3 -c "$pipesz")
    [[ $got == "$want" ]] || fail "stdout's pipe is $got bytes, expected $want"
    (timeout 30 python3 -c "$pipesz" <out.fifo >fifo.size) &
    "$RANKPROF" export -i ct.data --format chrome -o out.fifo || fail "chrome to a fifo"
    wait
    [[ $(cat fifo.size) == "$want" ]] || fail "the fifo's pipe is $(cat fifo.size) bytes, expected $want"
}

# --- folded stacks and flame graphs -----------------------------------------
folded() {
    "$RANKPROF" export -i ct.data --format folded -o ct.folded || fail "export folded"
    $check folded report.json ct.folded
    "$RANKPROF" export -i ct.data --format flamegraph -o ct.svg || fail "export flamegraph"
    $check svg report.json ct.svg
    flamegraph_pl=""
    for f in "$(command -v flamegraph.pl || true)" /usr/share/perl5/Devel/NYTProf/flamegraph.pl; do
        [[ -n "$f" && -f "$f" ]] && flamegraph_pl=$f && break
    done
    if [[ -n "$flamegraph_pl" ]]; then
        perl "$flamegraph_pl" ct.folded >ct_pl.svg 2>fg_err.txt || fail "flamegraph.pl failed on our folded output"
        [[ ! -s fg_err.txt ]] || fail "flamegraph.pl complained: $(cat fg_err.txt)"
        $check flamegraph-pl report.json ct_pl.svg
    else
        missing flamegraph.pl "Debian package libdevel-nytprof-perl"
    fi
}

# --- timelines: chrome JSON and perfetto protobuf, read by trace_processor --
timelines() {
    for t in ct fw; do
        "$RANKPROF" export -i $t.data --format chrome -o $t.chrome.json || fail "export chrome ($t)"
        python3 -c "import json,sys; json.load(open(sys.argv[1]))" $t.chrome.json ||
            fail "$t.chrome.json is not valid JSON"
        "$RANKPROF" export -i $t.data --format perfetto -o $t.pftrace || fail "export perfetto ($t)"
    done
    if tp_query_build tp_query; then
        # a slice's time in the report: its duration less the recorder's
        # pauses inside it ("[recorder]" slices)
        q="select s.name, count(*), sum(s.dur - coalesce((select sum(d.dur) from
           descendant_slice(s.id) d where d.name = '[recorder]'), 0)) from slice s
           where s.category != 'instant' group by s.name order by s.name"
        for t in ct fw; do
            r=report.json
            [[ $t == fw ]] && r=fw_report.json
            for f in $t.chrome.json $t.pftrace; do
                ./tp_query $f "$q" >slices.tsv || fail "trace_processor rejected $f"
                $check slices $r slices.tsv || fail "trace_processor's slices of $f"
            done
        done
        # thread and process names, and the nesting (depth) of the call tree
        for f in ct.chrome.json ct.pftrace; do
            got=$(./tp_query $f "select name from process where name is not null")
            [[ "$got" == *prog_calltree* ]] || fail "$f: process name '$got'"
            got=$(./tp_query $f "select group_concat(name || '@' || depth, ' ') from
                  (select distinct name, depth from slice where name not in
                   ('[off-cpu]', '[recorder]') order by name, depth)")
            # ([off-cpu]: when the thread was preempted; [recorder]: its own encoding)
            [[ "$got" == "a@1 b@2 c@1 c@2 leaf@2 leaf@3 main@0" ]] ||
                fail "$f: slice depths '$got' are not calltree's"
        done
        # firmware's instants (timer ticks) and counter samples, as `dump` lists them
        "$RANKPROF" dump -i fw.data | awk '$3 == "instant" { n[$4]++ }
            END { for (k in n) print k "\t" n[k] }' | sort >want_inst.tsv
        "$RANKPROF" dump -i fw.data | awk '$3 == "counter" { n[$4]++; s[$4] += $5 }
            END { for (k in n) print k "\t" n[k] "\t" s[k] }' | sort >want_ctr.tsv
        [[ -s want_inst.tsv && -s want_ctr.tsv ]] || fail "firmware recorded no instants or counters"
        for f in fw.chrome.json fw.pftrace; do
            ./tp_query $f "select name, count(*) from slice where category = 'instant'
                           group by name order by name" >got_inst.tsv
            cmp -s want_inst.tsv got_inst.tsv || fail "$f: instants $(cat got_inst.tsv), dump says $(cat want_inst.tsv)"
            # Chrome JSON names a counter track "NAME ARGKEY": strip the " value"
            ./tp_query $f "select replace(t.name, ' value', ''), count(*), cast(sum(c.value) as int)
                           from counter c join counter_track t on c.track_id = t.id
                           group by t.name order by 1" >got_ctr.tsv
            cmp -s want_ctr.tsv got_ctr.tsv || fail "$f: counters $(cat got_ctr.tsv), dump says $(cat want_ctr.tsv)"
        done
        got=$(./tp_query fw.pftrace "select count(distinct utid) from thread_track
              join slice on slice.track_id = thread_track.id")
        [[ "$got" == 2 ]] || fail "fw.pftrace: slices on $got threads, firmware has 2"
        note "trace_processor agrees with the report (chrome and perfetto, calltree and firmware)"
        note "sizes: firmware chrome $(stat -c %s fw.chrome.json) B, perfetto $(stat -c %s fw.pftrace) B"
    else
        missing trace_processor "Debian packages chromium-shell (its $TP_LIB), clang, libc++-dev"
    fi
}

# folded stacks by thread (-O threads=1): firmware's two threads
folded_threads() {
    "$RANKPROF" export -i fw.data --format folded -O threads=1 -o fw_threads.folded || fail "folded by thread"
    $check folded-threads fw_report.json fw_threads.folded 2
}

# --- callgrind, read by valgrind's callgrind_annotate ------------------------
callgrind() {
    for t in ct fw; do
        "$RANKPROF" export -i $t.data --format callgrind -o callgrind.out.$t || fail "export callgrind"
        grep -q "^fn=(1) " callgrind.out.$t || fail "callgrind: no compressed fn=(id) name line"
    done
    grep -q "^fl=(1) .*calltree.c$" callgrind.out.ct || fail "callgrind: no fl= line naming calltree.c"
    if command -v callgrind_annotate >/dev/null; then
        for t in ct fw; do
            r=report.json
            [[ $t == fw ]] && r=fw_report.json
            callgrind_annotate --threshold=100 --auto=no callgrind.out.$t >cg_self.txt 2>cg_err.txt ||
                fail "callgrind_annotate failed on callgrind.out.$t"
            [[ ! -s cg_err.txt ]] || fail "callgrind_annotate complained: $(head -3 cg_err.txt)"
            callgrind_annotate --threshold=100 --auto=no --inclusive=yes callgrind.out.$t >cg_incl.txt 2>cg_err.txt ||
                fail "callgrind_annotate --inclusive=yes failed"
            [[ ! -s cg_err.txt ]] || fail "callgrind_annotate complained: $(head -3 cg_err.txt)"
            $check callgrind $r cg_self.txt cg_incl.txt
        done
        # with sources: the per-line annotation finds calltree.c's lines
        callgrind_annotate --auto=yes callgrind.out.ct >cg_src.txt 2>cg_err.txt
        grep -q "=> .*calltree.c:leaf (30x)" cg_src.txt || fail "callgrind_annotate: no 'b => leaf (30x)'"
    else
        missing callgrind_annotate "Debian package valgrind"
    fi
}

# --- pprof, read by go tool pprof --------------------------------------------
# fib recurses 20 deep: pprof counts a function once per sample, so its cum
# must be the report's inclusive time, which counts only the outermost call
pprof() {
    for t in ct fw fib; do
        "$RANKPROF" export -i $t.data --format pprof -o $t.pb.gz || fail "export pprof ($t)"
        gzip -t $t.pb.gz || fail "$t.pb.gz is not gzip"
    done
    if command -v go >/dev/null; then
        export GOCACHE=${GOCACHE:-$tmp/gocache} # go may not write to $HOME in CI
        for t in ct fw fib; do
            r=report.json
            [[ $t != ct ]] && r=${t}_report.json
            go tool pprof -top -nodecount=1000 -nodefraction=0 -unit=ns $t.pb.gz >pp_time.txt 2>pp_err.txt ||
                fail "go tool pprof failed on $t.pb.gz: $(cat pp_err.txt)"
            [[ ! -s pp_err.txt ]] || fail "go tool pprof complained: $(head -3 pp_err.txt)"
            go tool pprof -top -nodecount=1000 -nodefraction=0 -sample_index=calls $t.pb.gz >pp_calls.txt 2>pp_err.txt ||
                fail "go tool pprof -sample_index=calls failed"
            $check pprof $r pp_time.txt pp_calls.txt
        done
        go tool pprof -traces ct.pb.gz 2>/dev/null | tr -s ' \n' '  ' |
            grep -q "leaf b a main" || fail "pprof -traces: no leaf<-b<-a<-main stack"
    else
        missing "go tool pprof" "Debian package golang-go"
    fi
}

# --- html, opened in headless chromium ---------------------------------------
html() {
    "$RANKPROF" export -i ct.data --format html -o ct.html || fail "export html"
    python3 -c "import html.parser,sys; html.parser.HTMLParser().feed(open(sys.argv[1]).read())" ct.html
    if grep -Eq "(src|href)=[\"']?(https?:)?//|url\([\"']?(https?:)?//|@import" ct.html; then
        fail "the html report loads something from the network"
    fi
    chromium=$(command -v chromium || command -v chromium-browser || true)
    if [[ -n "$chromium" ]]; then
        run_chromium() { # ARGS...: headless, no sandbox (CI runs as root), a profile of its own
            timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
                --user-data-dir="$tmp/chromium" "$@" 2>>chromium.log
        }
        run_chromium --dump-dom "file://$tmp/ct.html" >ct.dom || fail "chromium --dump-dom: $(tail -3 chromium.log)"
        run_chromium --screenshot="$tmp/ct.png" --window-size=1280,1400 "file://$tmp/ct.html" \
            >/dev/null || fail "chromium --screenshot: $(tail -3 chromium.log)"
        $check html report.json ct.dom ct.png
        # the flame graph's own script: a link that zooms into b and searches leaf
        run_chromium --dump-dom "file://$tmp/ct.svg#zoom=b&search=leaf" >ct_svg.dom ||
            fail "chromium --dump-dom of the svg: $(tail -3 chromium.log)"
        $check svg-zoom report.json ct_svg.dom
    else
        missing chromium "Debian package chromium"
    fi

}

# a Chrome JSON export over 256 MiB (prog_poll work: 4 M calls, about 360
# MB) warns and points at perfetto; the small ones above do not (not under
# sanitizers: the recording alone takes a minute there)
big_chrome() {
    if sanitized; then
        note "big_chrome skipped under sanitizers ($RP_SANITIZE)"
        return 0
    fi
    "$RANKPROF" record -o big.data -- "$PROGS/prog_poll" work 4000000 >/dev/null 2>&1 ||
        fail "recording prog_poll work"
    "$RANKPROF" export --format chrome -o big.json -i big.data 2>big.err || fail "export chrome"
    local mb=$(($(stat -c %s big.json) >> 20))
    rm -f big.json big.data
    ((mb > 256)) || fail "big_chrome: only $mb MiB of JSON: not big enough to test"
    grep -q "warning: export --format chrome: wrote .* MB of JSON; --format perfetto" big.err ||
        fail "big_chrome: no warning on $mb MiB of JSON: $(cat big.err)"
    "$RANKPROF" export --format chrome -o small.json -i ct.data 2>small.err ||
        fail "export chrome of prog_calltree"
    ! grep -q "MB of JSON" small.err || fail "big_chrome: a warning on a small export: $(cat small.err)"
    echo "e2e_export: big_chrome: $mb MiB of JSON warned of"
}

for s in skeleton truncated fifo folded timelines folded_threads callgrind pprof html big_chrome; do
    scenario $s $s
done
finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_escape.sh - no output of rankprof passes on a control byte from a
# trace.  Records tests/progs/hostile.c, whose point, lock, io, mark and
# thread names hold an OSC-52 clipboard sequence, CSI sequences, C0 bytes,
# DEL and a C1 CSI, then checks every text output (report table, JSON,
# CSV, graph, locks, info, dump) and every export byte for byte: no byte
# below 0x20 but newline and tab (and CR before LF in CSV), no 0x7f, no C1
# control (0xc2 0x80-0x9f); the binary exports (perfetto, pprof gunzipped)
# must not hold the raw sequences and must hold their escaped form.  The
# table direct mode prints itself (--print) and record's own messages about
# a program with a hostile name are checked the same way.
#
# Run by ctest with RANKPROF, PROGS, RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_escape RANKPROF PROGS RP_LIB

need_tools python3
export RANKPROF_LIB="$RP_LIB"

cd "$tmp"

# every text output, then the text exports (their names in text.list)
outputs() {
    "$RANKPROF" record -o h.data -- "$PROGS/prog_hostile" >/dev/null 2>rec.err ||
        fail "recording prog_hostile: $(cat rec.err)"

    "$RANKPROF" report -i h.data >report.txt || fail "report"
    "$RANKPROF" report -i h.data --format json >report.json || fail "report json"
    "$RANKPROF" report -i h.data --format csv >report.csv || fail "report csv"
    "$RANKPROF" graph -i h.data work >graph.txt || fail "graph"
    "$RANKPROF" locks -i h.data >locks.txt || fail "locks"
    "$RANKPROF" locks -i h.data --format json >locks.json || fail "locks json"
    "$RANKPROF" info -i h.data >info.txt || fail "info"
    "$RANKPROF" dump -i h.data >dump.txt || fail "dump"
    for f in json csv chrome folded flamegraph callgrind plantuml mermaid html; do
        "$RANKPROF" export -i h.data --format "$f" -o "x.$f" || fail "export $f"
    done
    # plain packets, not deflated ones, so that the bytes can be searched
    "$RANKPROF" export -i h.data --format perfetto -O compress=0 -o x.pftrace ||
        fail "export perfetto"
    "$RANKPROF" export -i h.data --format pprof -o x.pb.gz || fail "export pprof"
    gunzip -c x.pb.gz >x.pb || fail "pprof output is not gzip"
    printf '%s\n' report.txt report.json report.csv graph.txt locks.txt locks.json info.txt \
        dump.txt x.{json,csv,chrome,folded,flamegraph,callgrind,plantuml,mermaid,html} >text.list
}

# no control byte in any text output
text_bytes() {
    [[ -s text.list ]] || fail "no outputs (scenario outputs failed)"
    mapfile -t text <text.list
    python3 - "${text[@]}" <<'PY' || fail "control bytes in the output (above)"
import re, sys
bad = 0
for path in sys.argv[1:]:
    b = open(path, 'rb').read()
    for m in re.finditer(rb'[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]', b):
        if m.group() == b'\r' and path.endswith('csv') and b[m.end():m.end() + 1] == b'\n':
            continue  # CSV's CRLF line ends
        print(f"{path}: byte {m.group()!r} at offset {m.start()}: {b[max(0, m.start() - 30):m.end() + 10]!r}")
        bad += 1
        break
sys.exit(1 if bad else 0)
PY
}

# the binary exports hold the escaped names, not the raw sequences
binary_exports() {
    python3 - x.pftrace x.pb <<'PY' || fail "raw control sequences in a binary export (above)"
import sys
bad = 0
for path in sys.argv[1:]:
    b = open(path, 'rb').read()
    # (runs of four bytes or more: two bytes, C1's CSI or DEL after ^A,
    # turn up by chance in the varints of a run's times)
    for raw in (b'\x1b]52;c;', b'\x1b[31m', b'\x01\x7f\xc2\x9b', b'\xc2\x9b[2J'):
        if raw in b:
            print(f"{path}: holds the raw {raw!r}")
            bad = 1
    if b'pt\\x1b]52;c;aGVsbG8K\\x07' not in b:
        print(f"{path}: the escaped point name is missing")
        bad = 1
sys.exit(bad)
PY
}

# the escaped names are there, once per form (a name lost is no escape)
escaped_names() {
    grep -qF 'pt\x1b]52;c;aGVsbG8K\x07\x01\x7f\xc2\x9b[2J\x;end' graph.txt || fail "graph: point name"
    grep -qF 'lk\x1b[31m\x08' locks.txt || fail "locks: lock name"
    grep -qF 't\x1b[31mred' info.txt || fail "info: thread name"
    grep -qF 'io\x0d\x0a\x1b]52' x.csv || fail "csv: io name"
    grep -qF 'mk\x1bc' dump.txt || fail "dump: mark name"
}

# no control byte in the named files, which exist (python's check, as text_bytes)
no_controls() {
    python3 - "$@" <<'PY'
import re, sys
bad = 0
for path in sys.argv[1:]:
    b = open(path, 'rb').read()
    m = re.search(rb'[\x00-\x08\x0b-\x1f\x7f]|\xc2[\x80-\x9f]', b)
    if m:
        print(f"{path}: byte {m.group()!r} at offset {m.start()}: {b[max(0, m.start() - 30):m.end() + 10]!r}")
        bad = 1
sys.exit(bad)
PY
}

# the table direct mode prints itself (--print, to the program's stderr)
# shows the names escaped as the report's table does
direct_print() {
    "$RANKPROF" record --mode direct --print -o d.data -- "$PROGS/prog_hostile" \
        >/dev/null 2>direct.err || fail "direct record of prog_hostile: $(cat -v direct.err)"
    no_controls direct.err || fail "control bytes in direct mode's printed table (above)"
    # (the name column holds 40 characters)
    local n
    for n in 'pt\x1b]52;c;aGVsbG8K\x07\x01\x7f\xc2\x9b ' 'lk\x1b[31m\x08 [wait] ' \
        'lk\x1b[31m\x08 [hold] ' 'io\x0d\x0a\x1b]52;c;aGVsbG8K\x07 ' 'mk\x1bc '; do
        grep -qF -- "$n" direct.err || fail "direct print: no $n in: $(cat -v direct.err)"
    done
}

# record's own messages show a hostile program name escaped: killed by a
# signal, and a program that cannot be run
record_messages() {
    local osc=$'\x1b]52;c;aGk=\x07\x1b[2J' shown='\x1b]52;c;aGk=\x07\x1b[2J'
    ln -sf "$PROGS/prog_endings" "./p$osc" || fail "cannot make the hostile name"
    local rc=0
    "$RANKPROF" record -o k.data -- "./p$osc" raise-TERM 2 >/dev/null 2>killed.err || rc=$?
    [[ $rc -eq 143 ]] || fail "killed: exit status $rc, not 143: $(cat -v killed.err)"
    grep -qF -- "./p$shown was killed by signal 15" killed.err ||
        fail "killed: no escaped name in: $(cat -v killed.err)"
    "$RANKPROF" record -o n.data -- "./q$osc" >/dev/null 2>norun.err &&
        fail "a missing program ran"
    grep -qF -- "cannot run ./q$shown: " norun.err ||
        fail "cannot run: no escaped name in: $(cat -v norun.err)"
    no_controls killed.err norun.err || fail "control bytes in record's messages (above)"
}

scenario outputs outputs
scenario text_bytes text_bytes
scenario binary_exports binary_exports
scenario escaped_names escaped_names
scenario direct_print direct_print
scenario record_messages record_messages
finish

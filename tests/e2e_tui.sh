#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_tui.sh - `rankprof tui` (src/cli/cmd_tui.c) driven through tmux on a
# trace of prog_calltree (tests/progs/calltree.c, an exactly known tree):
#
#   table     the rows in the report's rank order, with their calls
#   node      / leaf Enter, Enter: leaf's view names its callers b (30
#             calls) and c (8 calls) and no callee (but [off-cpu], when a
#             preemption fell inside a leaf); Enter on the caller b
#             opens b, whose callees are leaf (30 calls)
#   replay    r: leaf's calls as a tree, "leaf();" lines
#   sort      s: the table sorted by self time
#   quit      q back to the table, q quits: the program ends
#   no tty    without a terminal: exit status 1, and a message saying so
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_tui RANKPROF PROGS RP_LIB
need_progs calltree
need_tools python3
export RANKPROF_LIB="$RP_LIB"
command -v tmux >/dev/null || { missing tmux "the terminal browser is driven through tmux"; finish; }

"$RANKPROF" record -o "$tmp/ct.rp" -- "$PROGS/prog_calltree" >/dev/null 2>&1 || fail "record"
"$RANKPROF" report --format json "$tmp/ct.rp" >"$tmp/ct.json" || fail "report"
sock="$tmp/tmux.sock"
at_exit "tmux -S '$sock' kill-server 2>/dev/null"
T() { tmux -S "$sock" "$@"; }

# waits until the screen holds $1 (a grep -E pattern), at most 10 s
screen_has() {
    local i
    for i in $(seq 100); do
        T capture-pane -p -t tui >"$tmp/screen" 2>/dev/null || true
        grep -E -q "$1" "$tmp/screen" && return 0
        sleep 0.1
    done
    fail "the screen never showed /$1/: $(cat "$tmp/screen")"
}

browse() {
    T new -d -s tui -x 120 -y 32 \
        "RANKPROF_LIB='$RP_LIB' '$RANKPROF' tui '$tmp/ct.rp'; echo EXITED \$?; sleep 30"
    screen_has "sorted by rank"
    screen_has "q: quit" # (the status line, drawn last)
    python3 - "$tmp/screen" "$tmp/ct.json" <<'PY' || fail "table"
import json, re, sys
rows = [l.split() for l in open(sys.argv[1]) if re.match(r"^\s+\d+\s+[\d.]+%", l)]
want = sorted((n for n in json.load(open(sys.argv[2]))["nodes"] if "rank" in n), key=lambda n: n["rank"])
got = [(r[-1], int(r[2])) for r in rows]
exp = [(n["name"], n["calls"]) for n in want]
if got != exp:
    sys.exit(f"rows {got}, the report ranks {exp}")
PY
    T send-keys -t tui / leaf Enter
    sleep 0.3
    T send-keys -t tui Enter
    # (a screen is checked once its last line is drawn: tmux may show one
    # half drawn)
    # (callees: none but [off-cpu] when a preemption fell inside one)
    screen_has "^callees \("
    grep -q "^callers (2)" "$tmp/screen" && grep -E -q "^ +30 calls .* b$" "$tmp/screen" &&
        grep -E -q "^ +8 calls .* c$" "$tmp/screen" || fail "leaf's callers: $(cat "$tmp/screen")"
    grep -A3 "^callees (" "$tmp/screen" | grep -E "calls" | grep -v -q "\[off-cpu\]$" &&
        fail "leaf has a callee: $(cat "$tmp/screen")"
    # the first caller (b, 30 calls, or c, 8: the callers are in order of
    # time, which a busy machine can swap) opens with its calls of leaf
    local first
    first=$(grep -A1 "^callers (2)" "$tmp/screen" | tail -1 | awk '{print $1}')
    [[ $first == 30 || $first == 8 ]] || fail "leaf's first caller: $(cat "$tmp/screen")"
    T send-keys -t tui Enter
    screen_has "^ +$first calls .* leaf$"
    T send-keys -t tui Left r # back to leaf, its replay
    screen_has "^calls of leaf"
    screen_has "Left/q: back" # (the status line, drawn last)
    [[ $(grep -c "| leaf();" "$tmp/screen") -ge 10 ]] || fail "leaf's replay: $(cat "$tmp/screen")"
    T send-keys -t tui q q s
    screen_has "sorted by self"
    T send-keys -t tui q
    screen_has "^EXITED 0"
}

no_tty() {
    local rc
    set +e
    "$RANKPROF" tui "$tmp/ct.rp" </dev/null >"$tmp/o" 2>&1
    rc=$?
    set -e
    [[ $rc == 1 ]] && grep -q "needs a terminal" "$tmp/o" || fail "without a terminal: rc $rc, $(cat "$tmp/o")"
}

scenario browse browse
scenario no_tty no_tty
finish

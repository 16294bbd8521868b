#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_help.sh - the command line explains itself (src/cli/help.c):
#
#   help       `rankprof CMD --help` and `rankprof help CMD` for every
#              command `rankprof --help` lists: exit status 0, the usage line
#              on stdout, and every option of the usage line explained in
#              the options list (an option added to the usage but not
#              explained fails)
#   man        `rankprof --man [CMD]` is a man page that man renders without
#              a warning, for rankprof and each command; the build wrote
#              them all (build/man); not under sanitizers
#   positional a trace named without -i is read as with -i: report, info,
#              dump, locks, export, graph NAME FILE
#   bad        an unknown command or option: exit 2 and the usage
#   hints      a program built without -finstrument-functions (only its lock
#              waits recorded) gets a hint saying so; a stripped one, that
#              its functions have no name because it is stripped (and both
#              are in the JSON's warnings); an instrumented one with
#              symbols, neither; and functions are named alike in the report
#              and in direct mode's printed table (BINARY+0xOFFSET without a
#              symbol, static functions by name)
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_help RANKPROF PROGS RP_LIB
need_tools python3
export RANKPROF_LIB="$RP_LIB"

"$RANKPROF" --help >"$tmp/top" || fail "rankprof --help: exit status $?"
mapfile -t cmds < <(sed -n 's/^  rankprof \([a-z]*\) .*/\1/p' "$tmp/top")
((${#cmds[@]} >= 8)) || fail "rankprof --help lists ${#cmds[@]} commands: ${cmds[*]}"

help_all() {
    local c
    for c in "${cmds[@]}"; do
        "$RANKPROF" "$c" --help >"$tmp/h.$c" 2>"$tmp/e.$c" || fail "$c --help: exit status $?"
        [[ ! -s $tmp/e.$c ]] || fail "$c --help wrote to stderr: $(cat "$tmp/e.$c")"
        "$RANKPROF" help "$c" | cmp -s - "$tmp/h.$c" || [[ $c == export ]] ||
            fail "rankprof help $c differs from rankprof $c --help"
        python3 - "$c" "$tmp/h.$c" <<'PY' || fail "$c --help"
import re, sys
cmd, text = sys.argv[1], open(sys.argv[2]).read()
if not text.startswith(f"usage: rankprof {cmd}"):
    sys.exit(f"does not begin with its usage line: {text[:80]!r}")
usage, _, rest = text.partition("\n\n")
if "options:" not in rest:
    sys.exit("no options list")
opts = rest.split("options:", 1)[1]
listed = {}
for m in re.finditer(r"^  (\S[^\n]*)\n((?:      [^\n]*\n)+)", opts, re.M):
    for name in re.findall(r"--[a-z][a-z-]*|-[a-zA-Z]\b", m.group(1)):
        listed[name] = m.group(2).strip()
used = set(re.findall(r"(?<![\w-])(--[a-z][a-z-]*|-[a-zA-Z])\b", usage))
missing = sorted(u for u in used if u not in listed)
if missing:
    sys.exit(f"options in the usage line without an explanation: {missing}")
empty = sorted(k for k, v in listed.items() if len(v) < 8)
if empty:
    sys.exit(f"options explained by almost nothing: {empty}")
PY
    done
}

man_pages() {
    local c page
    need_tools man groff
    for c in "" "${cmds[@]}"; do
        page=rankprof${c:+-$c}.1
        "$RANKPROF" --man $c >"$tmp/$page" || fail "--man $c: exit status $?"
        cmp -s "$tmp/$page" "$(dirname "$RANKPROF")/man/$page" ||
            fail "the build's man/$page is not what --man $c writes"
        groff -man -ww -z "$tmp/$page" 2>"$tmp/groff.err"
        [[ ! -s $tmp/groff.err ]] || fail "groff warns on $page: $(cat "$tmp/groff.err")"
        MANWIDTH=80 man -l "$tmp/$page" 2>/dev/null | grep -q "^NAME" || fail "man -l $page shows no NAME"
    done
    "$RANKPROF" --man nosuch >/dev/null 2>&1 && fail "--man nosuch succeeded"
    return 0
}

positional() {
    "$RANKPROF" record -o "$tmp/p.rp" -- "$PROGS/prog_calltree" >/dev/null 2>&1 ||
        fail "record prog_calltree"
    local c
    for c in "report --format json" "info" "dump" "locks --format json" "export --format folded" \
        "graph main"; do
        "$RANKPROF" $c -i "$tmp/p.rp" >"$tmp/a.out" 2>&1 || fail "$c -i: exit status $?"
        "$RANKPROF" $c "$tmp/p.rp" >"$tmp/b.out" 2>&1 || fail "$c FILE: exit status $?"
        cmp -s "$tmp/a.out" "$tmp/b.out" || fail "$c FILE differs from $c -i FILE"
    done
}

bad() {
    local rc
    set +e
    "$RANKPROF" nosuch >/dev/null 2>"$tmp/e1"
    rc=$?
    set -e
    [[ $rc == 2 ]] && grep -q "unknown command 'nosuch'" "$tmp/e1" || fail "unknown command: rc $rc"
    set +e
    "$RANKPROF" report --nosuch >/dev/null 2>"$tmp/e2"
    rc=$?
    set -e
    [[ $rc == 2 ]] && grep -q "usage: rankprof report" "$tmp/e2" || fail "unknown option: rc $rc"
}

hints() {
    need_tools cc strip
    cat >"$tmp/h.c" <<'C'
#include <pthread.h>
#include <stdio.h>
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static volatile long s;
__attribute__((noinline)) void work(int i) { pthread_mutex_lock(&m); s += i; pthread_mutex_unlock(&m); }
static void *th(void *a) { for (int i = 0; i < 1000; i++) work(i); return a; }
int main(void) { pthread_t t; pthread_create(&t, 0, th, 0); for (int i = 0; i < 1000; i++) work(i);
                 pthread_join(t, 0); printf("%ld\n", s); return 0; }
C
    cc -O1 -pthread -fno-sanitize=all -o "$tmp/plain" "$tmp/h.c" || fail "cc plain"
    cc -O1 -g -finstrument-functions -pthread -fno-sanitize=all -o "$tmp/inst" "$tmp/h.c" ||
        fail "cc instrumented"
    cp "$tmp/inst" "$tmp/stripped" && strip "$tmp/stripped" || fail "strip"
    local b
    for b in plain stripped inst; do
        "$RANKPROF" record -o "$tmp/$b.rp" -- "$tmp/$b" >/dev/null 2>&1 || fail "record $b"
        "$RANKPROF" report --format json "$tmp/$b.rp" >"$tmp/$b.json" 2>"$tmp/$b.err" ||
            fail "report $b: $(cat "$tmp/$b.err")"
    done
    grep -q "no function was recorded.*build .*plain with -finstrument-functions" "$tmp/plain.err" ||
        fail "no hint for a program without -finstrument-functions: $(cat "$tmp/plain.err")"
    grep -q "3 of 3 functions have no name .*stripped is stripped" "$tmp/stripped.err" ||
        fail "no hint for a stripped program: $(cat "$tmp/stripped.err")"
    # one naming in every mode: BINARY+0xOFFSET without a symbol, the symbol
    # (static functions too) with one, in the report and in direct mode's
    # printed table
    for b in stripped inst; do
        "$RANKPROF" record --mode direct --print -o "$tmp/$b.d" -- "$tmp/$b" >/dev/null \
            2>"$tmp/$b.print" || fail "record --mode direct $b"
    done
    python3 - "$tmp" <<'PY' || fail "names differ between the report and direct mode"
import json, re, sys
d = sys.argv[1]
for b, want in (("stripped", None), ("inst", {"main", "work", "th"})):
    rep = {n["name"] for n in json.load(open(f"{d}/{b}.json"))["nodes"] if n["kind"] == "func"}
    printed = {l.split()[0] for l in open(f"{d}/{b}.print") if l[:1].isalpha() or l.startswith("stripped+")}
    if want is None:
        if not rep or not all(re.fullmatch(r"stripped\+0x[0-9a-f]+", x) for x in rep):
            sys.exit(f"stripped: report names {rep}")
    elif rep != want:
        sys.exit(f"{b}: report names {rep}, expected {want}")
    if not rep <= printed:
        sys.exit(f"{b}: report names {sorted(rep)}, direct mode printed {sorted(printed)}")
PY
    python3 - "$tmp" <<'PY' || fail "the hints in the JSON"
import json, sys
d = sys.argv[1]
w = {b: json.load(open(f"{d}/{b}.json"))["warnings"] for b in ("plain", "stripped", "inst")}
ok = any("no function was recorded" in x for x in w["plain"]) and \
     any("is stripped" in x for x in w["stripped"]) and \
     not any("no function" in x or "no name" in x for x in w["inst"])
sys.exit(0 if ok else f"warnings: {w}")
PY
}

scenario help help_all
# (not under sanitizers: generated text that man renders, checked in the
# plain stage; the sanitizers would watch man, not rankprof)
sanitized || scenario man man_pages
scenario positional positional
scenario bad bad
scenario hints hints
finish

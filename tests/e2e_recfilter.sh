#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_recfilter.sh - `rankprof record -F NAME / -N NAME` (RANKPROF_SUBTREE,
# src/record/funcs.c): the recorder keeps only NAME and what it calls, or
# leaves NAME and what it calls out, in trace and in direct mode.
#
#   same      on prog_calltree (tests/progs/calltree.c, a known tree),
#             record -F a, -N b, -F a -N b and a glob give exactly the calls
#             and edges that `report` gives with the same filters on an
#             unfiltered trace (docs/filters.md), in trace and direct mode
#   threads   prog_threads, record -F work: work 40000, leaf 80000, no
#             worker or main (each thread follows its own stack)
#   jump      prog_unwind longjmp, record -F deep1: a longjmp out of the
#             subtree leaves it (the same as report -F deep1), both modes
#   bad       -F '', -N -x, -F a,b: usage errors naming the option
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_recfilter RANKPROF PROGS RP_LIB
need_progs calltree threads unwind
need_tools python3
export RANKPROF_LIB="$RP_LIB"

# shape JSON: "name:calls ..." | "caller>callee:calls ...", sorted, of the
# functions only (the recorder's -F and -N are of functions: waits, locks
# and points are recorded as without them)
shape() {
    python3 - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
func = {x["name"] for x in r["nodes"] if x["kind"] == "func"} | {"<root>"}
n = sorted("%s:%d" % (x["name"], x["calls"]) for x in r["nodes"]
           if x["kind"] == "func" and x["calls"])
e = sorted("%s>%s:%d" % (x["caller"], x["callee"], x["calls"]) for x in r["edges"]
           if x["calls"] and x["caller"] in func and x["callee"] in func)
print(" ".join(n) + " | " + " ".join(e))
PY
}

same() {
    "$RANKPROF" record -o "$tmp/all.rp" -- "$PROGS/prog_calltree" >/dev/null 2>&1 ||
        fail "record prog_calltree"
    local f mode want got
    for f in "-F a" "-N b" "-F a -N b" "-F l?af"; do
        # shellcheck disable=SC2086 # (the filters are words)
        "$RANKPROF" report --format json $f "$tmp/all.rp" >"$tmp/want.json" 2>"$tmp/e" ||
            fail "report $f: $(cat "$tmp/e")"
        want=$(shape "$tmp/want.json")
        for mode in trace direct; do
            rm -f "$tmp/f.rp"
            # shellcheck disable=SC2086
            "$RANKPROF" record --mode $mode -o "$tmp/f.rp" $f -- "$PROGS/prog_calltree" \
                >/dev/null 2>"$tmp/e" || fail "record --mode $mode $f: $(cat "$tmp/e")"
            "$RANKPROF" report --format json "$tmp/f.rp" >"$tmp/got.json" 2>"$tmp/e" ||
                fail "report of record $mode $f: $(cat "$tmp/e")"
            got=$(shape "$tmp/got.json")
            [[ $got == "$want" ]] || fail "record --mode $mode $f:
  $got
report $f of the whole trace:
  $want"
        done
    done
}

threads() {
    "$RANKPROF" record -o "$tmp/th.rp" -F work -- "$PROGS/prog_threads" >/dev/null 2>"$tmp/e" ||
        fail "record -F work: $(cat "$tmp/e")"
    "$RANKPROF" report --format json "$tmp/th.rp" >"$tmp/th.json" 2>"$tmp/e" ||
        fail "report: $(cat "$tmp/e")"
    got=$(shape "$tmp/th.json")
    [[ $got == "leaf:80000 work:40000 | <root>>work:40000 work>leaf:80000" ]] ||
        fail "record -F work on prog_threads: $got"
}

# a longjmp out of the subtree (prog_unwind longjmp: deep3 jumps back to
# landing, which then calls after()): record -F deep1 equals report -F
# deep1 of the whole trace, in both modes (the jump left the gate's frames
# open: trace mode went on recording after() and the frames above, direct
# mode's stack grew until it dropped most events)
jump() {
    local mode want got n=3000
    "$RANKPROF" record -o "$tmp/jall.rp" -- "$PROGS/prog_unwind" longjmp $n >/dev/null 2>&1 ||
        fail "record prog_unwind longjmp"
    "$RANKPROF" report --format json -F deep1 "$tmp/jall.rp" >"$tmp/jwant.json" 2>"$tmp/e" ||
        fail "report -F deep1: $(cat "$tmp/e")"
    want=$(shape "$tmp/jwant.json")
    [[ $want == "deep1:$n deep2:$n deep3:$n leaf:$((3 * n)) | "* ]] ||
        fail "report -F deep1 of the whole trace: $want"
    for mode in trace direct; do
        rm -f "$tmp/jf.rp"
        "$RANKPROF" record --mode $mode -o "$tmp/jf.rp" -F deep1 -- "$PROGS/prog_unwind" longjmp $n \
            >/dev/null 2>"$tmp/e" || fail "record --mode $mode -F deep1: $(cat "$tmp/e")"
        "$RANKPROF" report --format json "$tmp/jf.rp" >"$tmp/jgot.json" 2>"$tmp/e" ||
            fail "report of record $mode -F deep1: $(cat "$tmp/e")"
        got=$(shape "$tmp/jgot.json")
        [[ $got == "$want" ]] || fail "record --mode $mode -F deep1, a longjmp out of it:
  $got
report -F deep1 of the whole trace:
  $want"
        python3 -c 'import json, sys; sys.exit(json.load(open(sys.argv[1]))["lost_events"] != 0)' \
            "$tmp/jgot.json" || fail "record --mode $mode -F deep1: events lost"
    done
}

bad() {
    local a
    for a in "-F|-F" "-N -x|-N -x" "-F a,b|-F a,b"; do
        # shellcheck disable=SC2086
        if "$RANKPROF" record -o "$tmp/b.rp" ${a%|*} -- "$PROGS/prog_calltree" \
            >/dev/null 2>"$tmp/b.err"; then
            fail "record ${a%|*} succeeded"
        fi
        grep -qF -- "${a#*|}" "$tmp/b.err" || fail "record ${a%|*}: $(cat "$tmp/b.err")"
    done
}

scenario same same
scenario threads threads
scenario jump jump
scenario bad bad
finish

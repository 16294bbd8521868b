#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_set.sh - the reader commands read the set of files a run produced
# (docs/robustness.md, "One file per process"): NAME and the NAME.PID[.N]
# files of its other processes, merged into one profile.
#
# prog_runset forks child A and child B; B execs itself (a second file of
# the same pid, NAME.B.1).  Exact calls (tests/progs/runset.c):
#
#   file         parent_work  child_work  exec_work  shared
#   NAME              7            0          0         2
#   NAME.A            0           10          0         3
#   NAME.B            0           20          0         3
#   NAME.B.1          0            0          5         4
#   merged            7           30          5        12
#
# The run is recorded twice to the same NAME: the first run's NAME.PID
# files stay beside the second's and must be left out (and named).  A
# launcher's siblings (a recorded shell starts two workers without the
# recorder's mark: their own run ids) must be read with it.  A --process
# that names no process of the run fails with a message; a file of the run
# that cannot be read is named and left out, the others are read.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_set RANKPROF PROGS RP_LIB
export RANKPROF_LIB="$RP_LIB"
R() { $TMO "$RANKPROF" "$@"; }

# calls FILE.json NAME... : the calls of each NAME, space separated
calls() {
    python3 - "$@" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
c = {}
for n in r["nodes"]:
    c[n["name"]] = c.get(n["name"], 0) + n["calls"]
print(" ".join(str(c.get(n, 0)) for n in sys.argv[2:]))
PY
}
F="parent_work child_work exec_work shared"

# check WHAT WANT ARGS...: `report --format json ARGS` gives the calls WANT
# of $F (the JSON in $tmp/s.json, the messages in $tmp/s.err)
check() { # what want args...
    local what=$1 want=$2
    shift 2
    R report --format json "$@" >"$tmp/s.json" 2>"$tmp/s.err" ||
        fail "$what: report failed: $(cat "$tmp/s.err")"
    got=$(calls "$tmp/s.json" $F)
    [[ $got == "$want" ]] || fail "$what: $F = $got, expected $want"
}

# the first run: its NAME.PID files become an older run's
record() {
    R record -o "$tmp/rp.data" -- "$PROGS/prog_runset" >"$tmp/old.out" 2>"$tmp/old.err" ||
        fail "first record: $(cat "$tmp/old.err")"
    olda=$(sed -n 's/^a //p' "$tmp/old.out")
    [[ -f "$tmp/rp.data.$olda" ]] || fail "first run: no $tmp/rp.data.$olda: $(ls "$tmp")"
    # the second run, the one NAME now holds
    R record -o "$tmp/rp.data" -- "$PROGS/prog_runset" >"$tmp/new.out" 2>"$tmp/new.err" ||
        fail "second record: $(cat "$tmp/new.err")"
    a=$(sed -n 's/^a //p' "$tmp/new.out")
    b=$(sed -n 's/^b //p' "$tmp/new.out")
    for f in rp.data.$a rp.data.$b rp.data.$b.1; do
        [[ -f "$tmp/$f" ]] || fail "no $f: $(ls "$tmp")"
    done
    echo "$olda $a $b" >"$tmp/pids"
}

# the merged set: exact, the older run's files left out and named
merged() {
    read -r olda a b <"$tmp/pids" || fail "no pids (scenario record failed)"
    R report -i "$tmp/rp.data" --format json >"$tmp/m.json" 2>"$tmp/m.err" ||
        fail "report: $(cat "$tmp/m.err")"
    got=$(calls "$tmp/m.json" $F)
    [[ $got == "7 30 5 12" ]] || fail "merged: $F = $got, expected 7 30 5 12"
    grep -q "left out .*rp.data.$olda: another run's" "$tmp/m.err" ||
        fail "the older run's rp.data.$olda is not named as left out: $(cat "$tmp/m.err")"
    python3 - "$tmp/m.json" "$tmp" "$a" "$b" <<'PY' || fail "processes list"
import json, sys
r = json.load(open(sys.argv[1])); d, a, b = sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
ps = r["processes"]
files = sorted(p["file"] for p in ps)
want = sorted([d + "/rp.data", f"{d}/rp.data.{a}", f"{d}/rp.data.{b}", f"{d}/rp.data.{b}.1"])
assert files == want, (files, want)
assert sum(p["events"] for p in ps) == r["events"], "events do not add up"
assert len({p["run"] for p in ps}) == 1, "one run id expected"
assert sum(p["threads"] for p in ps) == r["threads"] == len(r["thread_list"])
assert {t["pid"] for t in r["thread_list"]} == {p["pid"] for p in ps}
PY
    R report --wide -i "$tmp/rp.data" >"$tmp/m.txt" 2>/dev/null
    grep -q "^processes: 4, merged:.* $a (.*rp.data.$a)" "$tmp/m.txt" ||
        fail "the table does not list the processes: $(head -3 "$tmp/m.txt")"
    R info -i "$tmp/rp.data" >"$tmp/info.txt" 2>/dev/null
    grep -q "^run: *4 processes" "$tmp/info.txt" || fail "info: $(head -3 "$tmp/info.txt")"
    grep -q "pid $b .*rp.data.$b.1" "$tmp/info.txt" || fail "info does not list rp.data.$b.1"
    R graph -i "$tmp/rp.data" shared 2>/dev/null | grep -Eq "^shared( \([^)]*\))?: 12 calls" ||
        fail "graph: shared is not 12 calls merged"
    R locks -i "$tmp/rp.data" --format json >"$tmp/l.json" 2>/dev/null || fail "locks"
    R locks -i "$tmp/rp.data" --process "$b" --format json >"$tmp/lb.json" 2>/dev/null ||
        fail "locks --process"
    python3 - "$tmp/l.json" "$tmp/lb.json" <<'PY' || fail "locks: mu is not acquired 12 times merged, 7 in B"
import json, sys
acq = lambda f: sum(l["acquisitions"] for l in json.load(open(f))["locks"] if l["name"] == "mu")
assert (acq(sys.argv[1]), acq(sys.argv[2])) == (12, 7), (acq(sys.argv[1]), acq(sys.argv[2]))
PY
    R export --format csv -i "$tmp/rp.data" -o "$tmp/m.csv" 2>/dev/null
    grep -q "^child_work,func,30," "$tmp/m.csv" || fail "csv export: child_work is not 30 calls"
    # loaded by 1 and by 3 threads: the same report, the same messages in
    # the same order (the merge takes the files in the set's order)
    local j
    for j in 1 3; do
        RANKPROF_LOAD_JOBS=$j R report -i "$tmp/rp.data" --format json >"$tmp/j$j.json" \
            2>"$tmp/j$j.err" || fail "report with RANKPROF_LOAD_JOBS=$j"
    done
    cmp -s "$tmp/j1.json" "$tmp/j3.json" && cmp -s "$tmp/j1.err" "$tmp/j3.err" ||
        fail "the report differs when 3 threads load the files"
}

# one process: --process PID (every image of the pid), --process FILE,
# --one-file, and -i repeated
one_process() {
    read -r olda a b <"$tmp/pids" || fail "no pids (scenario record failed)"
    check "--process A" "0 10 0 3" -i "$tmp/rp.data" --process "$a"
    check "--process B" "0 20 5 7" -i "$tmp/rp.data" --process "$b"
    check "--process FILE" "0 0 5 4" -i "$tmp/rp.data" --process "rp.data.$b.1"
    check "--one-file" "7 0 0 2" -i "$tmp/rp.data" --one-file
    check "-i -i" "7 10 0 5" -i "$tmp/rp.data" -i "$tmp/rp.data.$a"
    check "-i child" "0 10 0 3" -i "$tmp/rp.data.$a"
}

# a --process that is not in the run: a clear error, non-zero exit
bad_process() {
    read -r olda a b <"$tmp/pids" || fail "no pids (scenario record failed)"
    rc=0
    R report -i "$tmp/rp.data" --process 1 >/dev/null 2>"$tmp/bad.err" || rc=$?
    [[ $rc -ne 0 ]] || fail "--process 1 exited 0"
    grep -q -- "--process 1: no such process in the run of .*rp.data; its processes: .*$a" \
        "$tmp/bad.err" || fail "--process 1: $(cat "$tmp/bad.err")"
    rc=0
    R report -i "$tmp/rp.data" --process nosuch.file >/dev/null 2>"$tmp/bad.err" || rc=$?
    [[ $rc -ne 0 ]] && grep -q "no such process" "$tmp/bad.err" ||
        fail "--process nosuch.file: exit $rc: $(cat "$tmp/bad.err")"
}

# the commands that walk events in time read every file of the run: one
# track per process, one time axis
time_walkers() {
    read -r olda a b <"$tmp/pids" || fail "no pids (scenario record failed)"
    R dump -i "$tmp/rp.data" >"$tmp/d.txt" 2>/dev/null
    [[ $(grep -c "^# file .*: process [1-4] of 4 of the run, pid " "$tmp/d.txt") -eq 4 ]] ||
        fail "dump does not read the run's 4 files: $(grep '^# file' "$tmp/d.txt")"
    [[ $(grep -c " enter *child_work$" "$tmp/d.txt") -eq 30 ]] ||
        fail "dump: $(grep -c " enter *child_work$" "$tmp/d.txt") child_work entries, expected 30"
    R dump -i "$tmp/rp.data" --process "$a" 2>/dev/null | grep -q "pid $a" ||
        fail "dump --process $a does not read rp.data.$a"
    R export --format chrome -i "$tmp/rp.data" -o "$tmp/c.json" 2>/dev/null || fail "chrome export"
    python3 - "$tmp/c.json" "$a" "$b" <<'PY' || fail "chrome export: spans per process"
import json, sys
ev = json.load(open(sys.argv[1]))["traceEvents"]
a, b = int(sys.argv[2]), int(sys.argv[3])
n = {}
for e in ev:
    if e.get("ph") in ("B", "X") and e.get("name") in ("child_work", "exec_work"):
        n[(e["pid"], e["name"])] = n.get((e["pid"], e["name"]), 0) + 1
want = {(a, "child_work"): 10, (b, "child_work"): 20, (b, "exec_work"): 5}
assert n == want, (n, want)
names = {e["pid"] for e in ev if e.get("ph") == "M" and e.get("name") == "process_name"}
assert {a, b} <= names, names
PY
    R export --format folded -i "$tmp/rp.data" -o "$tmp/f.folded" 2>/dev/null || fail "folded export"
    # (the children's traces begin inside the calls open at the fork:
    # main;calls, as the parent's)
    grep -q "^main;calls;exec_work " "$tmp/f.folded" && grep -q "^main;calls;child_work " "$tmp/f.folded" &&
        grep -q "^main;calls;parent_work " "$tmp/f.folded" ||
        fail "folded export: not every process's paths: $(cat "$tmp/f.folded")"
}

# a file of the run that cannot be read (its end cut off, as a kill inside a
# write leaves it) is left out with a warning, the others are read; --force
# reads its valid part
cut_file() {
    read -r olda a b <"$tmp/pids" || fail "no pids (scenario record failed)"
    sz=$(stat -c %s "$tmp/rp.data.$a")
    truncate -s $((sz - 5)) "$tmp/rp.data.$a"
    touch -r "$tmp/rp.data.$b" "$tmp/rp.data.$a"
    check "cut file" "7 20 5 9" -i "$tmp/rp.data"
    grep -q "left out .*rp.data.$a.*truncated.*(--force reads the valid part of it)" "$tmp/s.err" ||
        fail "the cut rp.data.$a is not named as left out: $(cat "$tmp/s.err")"
    check "cut file, --force" "7 30 5 12" -i "$tmp/rp.data" --force
    RANKPROF_LOAD_JOBS=3 check "cut file, 3 loaders" "7 20 5 9" -i "$tmp/rp.data"
    grep -q "left out .*rp.data.$a.*truncated" "$tmp/s.err" ||
        fail "3 loaders: the cut rp.data.$a is not named as left out: $(cat "$tmp/s.err")"
    R dump -i "$tmp/rp.data" >"$tmp/d.txt" 2>"$tmp/d.err" || fail "dump with a cut file failed"
    grep -q "left out .*rp.data.$a" "$tmp/d.err" && [[ $(grep -c "^# file" "$tmp/d.txt") -eq 3 ]] ||
        fail "dump does not leave the cut rp.data.$a out with a warning: $(cat "$tmp/d.err")"
}

# a launcher's siblings: no mark, their own run ids, written while NAME was
siblings() {
    R record -o "$tmp/sib.data" -- bash -c '
        unset RANKPROF_CLAIMED
        "$1" image & "$1" image & wait' sh "$PROGS/prog_runset" >"$tmp/sib.out" 2>"$tmp/sib.err" ||
        fail "sibling record: $(cat "$tmp/sib.err")"
    # (each worker: bash's forked child, which execs before recording
    # anything and so leaves no file, then the exec'd image, sib.data.P)
    check "siblings" "0 0 10 8" -i "$tmp/sib.data"
    python3 - "$tmp/s.json" <<'PY' || fail "siblings: processes"
import json, sys
ps = json.load(open(sys.argv[1]))["processes"]
assert len(ps) == 3, ps
assert len({p["run"] for p in ps}) == 3, "the exec'd workers should have their own run ids"
PY
}

scenario record record
scenario merged merged
scenario one_process one_process
scenario bad_process bad_process
scenario time_walkers time_walkers
scenario cut_file cut_file # (cuts rp.data.A: after the others)
scenario siblings siblings
finish

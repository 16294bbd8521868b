#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_calltree.sh - `rankprof replay` (src/report/calltree.c): every call of
# prog_calltree (tests/progs/calltree.c, an exactly known tree) and
# prog_threads as an indented tree with durations.
#
#   tree      the lines are exactly the known tree (main { a { b { leaf x5 }
#             x2, c { leaf x2 } } x3, c { leaf x2 } }), leaves as single
#             lines; per function the lines add up to the report's calls,
#             and the leaves' durations to leaf's inclusive time (each line
#             to the nanosecond: 3 decimals in us, ms or s)
#   depth     -D 2: main { a(); a(); a(); c(); }
#   filter    -F c: the four c subtrees, indented from c; -N leaf: no leaf,
#             b and c as single lines; -F a -N b: a { c { leaf x2 } }; a
#             glob (-N 'le?f*') as the name
#   time      -t T: exactly the calls of the whole tree at least T long,
#             with their callers, and the ones that show nothing as single
#             lines (T between c's and a's durations)
#   threads   prog_threads: 5 threads in the TID column; --thread TID only
#             that thread's lines
#   bad       -D 0, -t x: usage errors naming the option
#   dump      `rankprof dump` of the same traces: every exit named, the name
#             of the span its enter opened (each thread's stack across
#             chunks); times from the run's first event, so one event at
#             0 and none before, in prog_threads' five threads too
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_calltree RANKPROF PROGS RP_LIB
need_progs calltree threads
need_tools python3
export RANKPROF_LIB="$RP_LIB"

"$RANKPROF" record -o "$tmp/ct.rp" -- "$PROGS/prog_calltree" >/dev/null 2>&1 ||
    fail "record prog_calltree"
# (-N '[off-cpu]': a preemption inside a call, on a loaded machine, would
# give it a callee the known tree does not have)
NOSCHED=(-N '[off-cpu]')
"$RANKPROF" replay "${NOSCHED[@]}" "$tmp/ct.rp" >"$tmp/all.txt" 2>"$tmp/all.err" ||
    fail "replay: $(cat "$tmp/all.err")"
"$RANKPROF" report --format json "$tmp/ct.rp" >"$tmp/ct.json" || fail "report"

# the tree as "depth name kind" lines: kind open, close or leaf
cat >"$tmp/tree.py" <<'PY'
import re, sys
LINE = re.compile(r"^\s*(?:([0-9.]+) (ns|us|ms|s))?\s+\[\s*(\S+)\] \| ( *)(.*)$")
def parse(path):
    out = []
    for l in open(path):
        if l.startswith("#"):
            continue
        m = LINE.match(l.rstrip("\n"))
        if not m:
            sys.exit(f"not a tree line: {l!r}")
        v, unit, tid, ind, rest = m.groups()
        ns = float(v) * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[unit] if v else None
        d = len(ind) // 2
        if rest.endswith("() {"):
            out.append((d, rest[:-4], "open", ns, tid))
        elif rest.endswith("();"):
            out.append((d, rest[:-3], "leaf", ns, tid))
        elif rest.startswith("} /* ") and rest.endswith(" */"):
            out.append((d, rest[5:-3], "close", ns, tid))
        else:
            sys.exit(f"not a call: {rest!r}")
    return out
def rounding(path, name):
    """The most the lines of name's calls in path are off by rounding: half
    a unit of each one's last digit (and 1 ns of ticks)."""
    out = 0.0
    for l in open(path):
        m = LINE.match(l.rstrip("\n"))
        if m and m.group(1) and m.group(5) in (name + "();", "} /* " + name + " */"):
            dec = len(m.group(1).partition(".")[2])
            out += 0.5 * 10 ** -dec * {"ns": 1, "us": 1e3, "ms": 1e6, "s": 1e9}[m.group(2)] + 1
    return out
def shape(t):
    return [(d, n, k) for d, n, k, _, _ in t]
def known(depth_limit=None, only=None, exclude=()):
    """The tree of calltree.c, as replay must print it."""
    def node(name, kids, d):
        if name in exclude:
            return []
        if depth_limit is not None and d >= depth_limit:
            return []
        inner = [x for k in kids for x in node(k[0], k[1], d + 1)]
        if not inner:
            return [(d, name, "leaf")]
        return [(d, name, "open")] + inner + [(d, name, "close")]
    leaf = ("leaf", [])
    b = ("b", [leaf] * 5)
    c = ("c", [leaf] * 2)
    a = ("a", [b, b, c])
    main = ("main", [a, a, a, c])
    if only:
        def find(n, kids):
            if n == only:
                return [(n, kids)]
            return [x for k in kids for x in find(k[0], k[1])]
        return [x for n, k in find(*main) for x in node(n, k, 0)]
    return node(main[0], main[1], 0)
PY
export PYTHONPATH="$tmp${PYTHONPATH:+:$PYTHONPATH}"

tree() {
    python3 - "$tmp/all.txt" "$tmp/ct.json" <<'PY' || fail "the whole tree"
import json, re, sys
from tree import parse, shape, known, rounding
t = parse(sys.argv[1])
r = {n["name"]: n for n in json.load(open(sys.argv[2]))["nodes"]}
if shape(t) != known():
    sys.exit(f"not the known tree: {shape(t)[:12]}...")
for name in ("main", "a", "b", "c", "leaf"):
    n = sum(1 for d, nm, k, _, _ in t if nm == name and k in ("open", "leaf"))
    if n != r[name]["calls"]:
        sys.exit(f"{name}: {n} lines, the report has {r[name]['calls']} calls")
leaves = [ns for d, nm, k, ns, _ in t if nm == "leaf"]
# (a line is rounded to its last digit: a leaf preempted for milliseconds,
# on a loaded machine, is printed to 10 us)
if abs(sum(leaves) - r["leaf"]["inclusive_ns"]) > rounding(sys.argv[1], "leaf") + 1:
    sys.exit(f"leaf lines add up to {sum(leaves):.0f} ns, the report says {r['leaf']['inclusive_ns']}")
# to the nanosecond, as uftrace prints them: "12.345 us", "5.585 ms"
for l in open(sys.argv[1]):
    m = re.match(r"^\s*([0-9]+)(?:\.([0-9]+))? (ns|us|ms|s) ", l)
    if m and (m.group(3) == "ns") != (m.group(2) is None) or m and m.group(2) and len(m.group(2)) != 3:
        sys.exit(f"not to the nanosecond: {l!r}")
if any(ns is not None for d, nm, k, ns, _ in t if k == "open") or \
   any(ns is None for d, nm, k, ns, _ in t if k != "open"):
    sys.exit("a duration on an opening line, or none on a closing one")
PY
}

variant() { # NAME ARGS... : replay with ARGS against known(...) given in $want
    local name=$1
    shift
    "$RANKPROF" replay "${NOSCHED[@]}" "$@" "$tmp/ct.rp" >"$tmp/$name.txt" 2>"$tmp/$name.err" ||
        fail "replay $*: $(cat "$tmp/$name.err")"
    python3 - "$tmp/$name.txt" "$want" <<'PY' || fail "replay $*"
import sys
from tree import parse, shape, known
got, want = shape(parse(sys.argv[1])), eval(sys.argv[2])
if got != want:
    sys.exit(f"got {got[:10]}..., expected {want[:10]}...")
PY
}

depth() { want="known(depth_limit=2)" variant depth -D 2; }
filter() {
    want="known(only='c')" variant only_c -F c
    want="known(exclude=('leaf',))" variant no_leaf -N leaf
    want="[x for x in known(only='a', exclude=('b',))]" variant a_not_b -F a -N b
    want="known(exclude=('leaf',))" variant no_leaf_glob -N 'le?f*' # (a glob)
}

time_filter() {
    local t
    t=$(python3 - "$tmp/all.txt" <<'PY'
import sys
from tree import parse
t = parse(sys.argv[1])
a = min(ns for d, n, k, ns, _ in t if n == "a" and ns)
c = max(ns for d, n, k, ns, _ in t if n in ("b", "c") and ns)
print(f"{(a + c) / 2 / 1000:.3f}us" if c < a else "")
PY
)
    [[ -n $t ]] || { note "time: a b or c call outlasted an a call (a loaded machine): skipped"; return 0; }
    "$RANKPROF" replay "${NOSCHED[@]}" -t "$t" "$tmp/ct.rp" >"$tmp/t.txt" || fail "replay -t $t"
    python3 - "$tmp/all.txt" "$tmp/t.txt" "$t" <<'PY' || fail "replay -t $t"
import sys
from tree import parse, shape
full, got, lim = parse(sys.argv[1]), parse(sys.argv[2]), float(sys.argv[3][:-2]) * 1000
# from the whole tree: keep calls at least lim long (and what encloses them)
keep, stack = [], []
for d, n, k, ns, tid in full:
    if k == "open":
        stack.append(len(keep)); keep.append([d, n, "open", None])
    elif k == "close":
        i = stack.pop()
        if ns < lim - 5:
            del keep[i:]
        elif len(keep) == i + 1:  # nothing of it shown: one line
            keep[i] = [d, n, "leaf", ns]
        else:
            keep.append([d, n, "close", ns])
    elif ns >= lim - 5:
        keep.append([d, n, "leaf", ns])
want = [(d, n, k) for d, n, k, _ in keep]
if shape(got) != want:
    sys.exit(f"got {shape(got)}, expected {want}")
PY
}

threads() {
    "$RANKPROF" record -o "$tmp/th.rp" -- "$PROGS/prog_threads" >/dev/null 2>&1 || fail "record prog_threads"
    "$RANKPROF" replay -D 2 "$tmp/th.rp" >"$tmp/th.txt" || fail "replay prog_threads"
    python3 - "$tmp/th.txt" <<'PY' >"$tmp/tid" || fail "threads"
import sys
from tree import parse
t = parse(sys.argv[1])
tids = sorted({x[4] for x in t})
if len(tids) != 5:
    sys.exit(f"{len(tids)} threads: {tids}")
workers = [x for x in t if x[1] == "worker" and x[2] != "close"]
if len(workers) != 4:
    sys.exit(f"{len(workers)} worker lines")
print(workers[0][4])
PY
    local tid
    tid=$(cat "$tmp/tid")
    "$RANKPROF" replay --thread "$tid" "$tmp/th.rp" >"$tmp/one.txt" || fail "replay --thread $tid"
    python3 - "$tmp/one.txt" "$tid" <<'PY' || fail "--thread $tid"
import sys
from tree import parse
t = parse(sys.argv[1])
if not t or {x[4] for x in t} != {sys.argv[2]}:
    sys.exit(f"threads {sorted({x[4] for x in t})}, expected only {sys.argv[2]}")
if sum(1 for x in t if x[1] == "work" and x[2] != "close") != 10000:
    sys.exit("not the 10000 work calls of one worker")
PY
}

bad() {
    local rc
    for args in "-D 0" "-t x" "--depth"; do
        set +e
        "$RANKPROF" replay $args "$tmp/ct.rp" >/dev/null 2>"$tmp/e"
        rc=$?
        set -e
        [[ $rc != 0 ]] && grep -q -- "${args%% *}\|depth\|time" "$tmp/e" ||
            fail "replay $args: rc $rc, $(cat "$tmp/e")"
    done
}

scenario tree tree
scenario depth depth
scenario filter filter
scenario time time_filter
scenario threads threads
dump() {
    "$RANKPROF" record -o "$tmp/th.rp" -- "$PROGS/prog_threads" >/dev/null 2>&1 || fail "record prog_threads"
    local f
    for f in ct th; do
        "$RANKPROF" dump "$tmp/$f.rp" >"$tmp/$f.dump" || fail "dump $f"
        python3 - "$tmp/$f.dump" <<'PY' || fail "dump of $f.rp"
import sys
stacks, zero, bad, n = {}, 0, [], 0
for l in open(sys.argv[1]):
    if l.startswith("#"):
        continue
    f = l.split()
    t, tid, op = float(f[0]), f[1], f[2]
    name = " ".join(f[3:])
    n += 1
    zero += t == 0
    if t < 0:
        bad.append(f"negative time: {l!r}")
    st = stacks.setdefault(tid, [])
    if op == "enter":
        st.append(name)
    elif op == "exit":
        want = st.pop() if st else None
        if name != want:
            bad.append(f"exit named {name!r}, the open span is {want!r}")
if zero != 1:
    bad.append(f"{zero} events at time 0, expected 1 (the run's first)")
if bad or not n:
    sys.exit("\n".join(bad[:5]) or "no events")
PY
    done
}

scenario bad bad
scenario dump dump
finish

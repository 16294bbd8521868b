#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_direct.sh - end-to-end test of direct mode (docs/direct-mode.md): the
# same programs recorded with `record --mode direct` and in trace mode must
# give the same call counts and edges exactly, and times that agree within
# noise; the direct-mode file must work with report/info/graph; --print and
# the environment variables alone must work; a damaged STATS chunk must give
# a clear error naming its offset.
#
#   twomode   4 threads, a recursive function, exact counts (tests/progs/twomode.c)
#   points    profile points, lock/io spans, instants, counters, a budget
#             (tests/progs/points.c)
#   forker    fork from a threaded process: the child's own file, exact counts
#   blocked_at_exit  two threads wait in serve() for good while main returns
#             (prog_endings blocked): their open frames end at the exit, with
#             their time, in direct mode as in trace mode, and rank
#
# Run by ctest with RANKPROF, PROGS and RP_LIB in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_direct RANKPROF PROGS RP_LIB

need_progs twomode points forker
need_tools python3
export RANKPROF_LIB="$RP_LIB"

cat >"$tmp/check.py" <<'PYEOF'
import json, os, struct, sys, zlib

def die(msg):
    print("e2e_direct: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)

def load(path):
    with open(path) as f:
        return json.load(f)

def key(n):
    return (n["name"], n["kind"])

def compare(trace_path, direct_path, spec):
    t, d = load(trace_path), load(direct_path)
    tn = {}
    for n in t["nodes"]:  # off-CPU spans: trace mode only (docs/recording.md)
        if n["kind"] != "offcpu":
            tn.setdefault(key(n), []).append(n)
    dn = {}
    for n in d["nodes"]:
        dn.setdefault(key(n), []).append(n)
    # every node: the same calls in both modes (names may repeat: compare sorted lists)
    tc = {k: sorted(n["calls"] for n in v) for k, v in tn.items() if any(n["calls"] for n in v)}
    dc = {k: sorted(n["calls"] for n in v) for k, v in dn.items() if any(n["calls"] for n in v)}
    if tc != dc:
        diff = {k: (tc.get(k), dc.get(k)) for k in set(tc) | set(dc) if tc.get(k) != dc.get(k)}
        die("%s: call counts differ between trace and direct mode: %s" % (spec, diff))
    te = sorted((e["caller"], e["callee"], e["calls"]) for e in t["edges"]
                if e["callee"] != "[off-cpu]")
    de = sorted((e["caller"], e["callee"], e["calls"]) for e in d["edges"])
    if te != de:
        die("%s: edges differ:\n trace  %s\n direct %s" % (spec, te, de))
    for doc, mode in ((t, "trace"), (d, "direct")):
        for n in doc["nodes"]:
            if n["calls"] and n["kind"] not in ("instant", "counter"):
                if n["exclusive_ns"] > n["inclusive_ns"] * 1.000001 + 1:
                    die("%s/%s: %s exclusive %s > inclusive %s" % (spec, mode, n["name"],
                        n["exclusive_ns"], n["inclusive_ns"]))
                if not (n["min_ns"] <= n["p50_ns"] * 1.04 + 1 and n["p50_ns"] <= n["p95_ns"] <= n["p99_ns"] <= n["max_ns"] * 1.04 + 1):
                    die("%s/%s: %s percentiles out of order: %s" % (spec, mode, n["name"], n))
    if spec == "twomode":
        want = {"main": 1, "worker": 4, "step": 8000, "leaf": 24000, "rec": 3200}
        got = {n["name"]: n["calls"] for n in d["nodes"] if n["name"] in want}
        if got != want:
            die("twomode: direct-mode calls %s, expected %s" % (got, want))
        wante = {("<root>", "main"): 1, ("<root>", "worker"): 4, ("worker", "step"): 8000,
                 ("step", "leaf"): 24000, ("step", "rec"): 800, ("rec", "rec"): 2400,
                 ("main", "pthread_join [wait]"): 4}
        gote = {(e["caller"], e["callee"]): e["calls"] for e in d["edges"]}
        if gote != wante:
            die("twomode: direct-mode edges %s, expected %s" % (gote, wante))
        if d["threads"] != 5:
            die("twomode: %s threads in direct mode, expected 5" % d["threads"])
        for doc, mode in ((t, "trace"), (d, "direct")):
            node = {n["name"]: n for n in doc["nodes"]}
            edge = {(e["caller"], e["callee"]): e for e in doc["edges"]}
            # recursion is not double counted: incl(rec) is its outermost
            # activations, which are exactly the calls from step
            r, sr, rr = node["rec"], edge[("step", "rec")], edge[("rec", "rec")]
            if abs(r["inclusive_ns"] - sr["inclusive_ns"]) > 1 + 1e-6 * r["inclusive_ns"]:
                die("%s: incl(rec) %s != incl(step->rec) %s" % (mode, r["inclusive_ns"], sr["inclusive_ns"]))
            if not rr["inclusive_ns"] > 0:
                die("%s: rec->rec has no time" % mode)
            l, sl = node["leaf"], edge[("step", "leaf")]
            if abs(l["inclusive_ns"] - sl["inclusive_ns"]) > 1 + 1e-6 * l["inclusive_ns"]:
                die("%s: incl(leaf) %s != incl(step->leaf) %s" % (mode, l["inclusive_ns"], sl["inclusive_ns"]))
            # (its time off CPU, when preempted, is the [off-cpu] node's: trace mode)
            if abs(l["exclusive_ns"] + l.get("offcpu_ns", 0) - l["inclusive_ns"]) > 1 + 1e-6 * l["inclusive_ns"]:
                die("%s: leaf calls nothing, yet exclusive %s + off-CPU %s != inclusive %s"
                    % (mode, l["exclusive_ns"], l.get("offcpu_ns", 0), l["inclusive_ns"]))
        if not os.environ.get("RP_SANITIZE"):
            # typical times within noise: medians (a trace-mode buffer
            # hand-off makes a few calls slow), generous bounds
            tn1 = {n["name"]: n for n in t["nodes"]}
            dn1 = {n["name"]: n for n in d["nodes"]}
            for name in ("leaf", "step", "rec"):
                a, b = tn1[name]["p50_ns"], dn1[name]["p50_ns"]
                if not (a / 4 <= b <= a * 4):
                    die("twomode: median of %s %.0f ns in direct mode vs %.0f ns in trace mode" % (name, b, a))
    if spec == "points":
        node = {key(n): n for n in d["nodes"]}
        b = [n for n in d["nodes"] if n["name"] == "budgeted" and "BUDGET" in n["flags"]]
        if len(b) != 1:
            die("points: direct mode should flag the budgeted point once: %s" % [n for n in d["nodes"] if n["name"] == "budgeted"])
        for name, kind, calls in (("inner", "point", 36), ("i2c0", "io", 36),
                                  ("bus [wait]", "lock-wait", 18), ("bus [hold]", "lock-hold", 18)):
            n = node.get((name, kind))
            if not n or n["calls"] != calls:
                die("points: %s (%s) has %s calls in direct mode, expected %d" % (name, kind, n and n["calls"], calls))
    print("ok %s: %d nodes, %d edges agree" % (spec, len(dc), len(de)))

def corrupt(path, out):
    """Copies the file with the first NODE record's first bucket index set
    out of range and the chunk's CRCs fixed, so only the STATS check can
    catch it.  Prints the offset of that record."""
    b = bytearray(open(path, "rb").read())
    off = 32
    while off + 16 <= len(b):
        typ, ln = struct.unpack_from("<II", b, off)
        if typ == 9:
            p = off + 16
            while p < off + 16 + ln:
                tag, rl = struct.unpack_from("<II", b, p)
                if tag == 2 and struct.unpack_from("<I", b, p + 12)[0] > 0:
                    struct.pack_into("<H", b, p + 8 + 96, 60000)
                    struct.pack_into("<I", b, off + 8, zlib.crc32(bytes(b[off + 16:off + 16 + ln])))
                    struct.pack_into("<I", b, off + 12, zlib.crc32(bytes(b[off:off + 12])))
                    open(out, "wb").write(b)
                    print(p)
                    return
                p += 8 + rl
        off += 16 + ln
    die("no STATS NODE record with buckets in " + path)

if sys.argv[1] == "compare":
    compare(sys.argv[2], sys.argv[3], sys.argv[4])
elif sys.argv[1] == "corrupt":
    corrupt(sys.argv[2], sys.argv[3])
PYEOF

rp() { "$RANKPROF" "$@"; }

# ---- the same programs in both modes ------------------------------------
both_modes() { # P
    local p=$1 out
    rp record -o "$tmp/$p.trace" -- "$PROGS/prog_$p" >/dev/null 2>"$tmp/$p.trace.err" ||
        fail "record $p (trace): $(cat "$tmp/$p.trace.err")"
    rp record --mode direct -o "$tmp/$p.direct" -- "$PROGS/prog_$p" >/dev/null \
        2>"$tmp/$p.direct.err" || fail "record --mode direct $p: $(cat "$tmp/$p.direct.err")"
    # measured times: direct mode does not subtract the recorder's cost
    rp report -i "$tmp/$p.trace" --format json --no-compensate >"$tmp/$p.trace.json" ||
        fail "report on the $p trace"
    rp report -i "$tmp/$p.direct" --format json >"$tmp/$p.direct.json" ||
        fail "report on the $p direct-mode file"
    out=$(python3 "$tmp/check.py" compare "$tmp/$p.trace.json" "$tmp/$p.direct.json" "$p") || exit 1
    note "$out"
}
for p in twomode points; do
    scenario "modes_$p" both_modes "$p"
done

# ---- the other commands read a direct-mode file -------------------------
commands() {
    [[ -s "$tmp/twomode.direct" ]] || fail "no direct-mode file from the modes_twomode scenario"
    rp info -i "$tmp/twomode.direct" >"$tmp/info.txt" || fail "info on a direct-mode file"
    grep -q "^mode: *direct" "$tmp/info.txt" || fail "info does not say mode direct: $(cat "$tmp/info.txt")"
    rp graph -i "$tmp/twomode.direct" step >"$tmp/graph.txt" || fail "graph on a direct-mode file"
    grep -q "leaf" "$tmp/graph.txt" || fail "graph step does not show its callee leaf"
    rp report -i "$tmp/twomode.direct" --format csv >"$tmp/r.csv" || fail "csv report on a direct-mode file"
    grep -q "leaf" "$tmp/r.csv" || fail "csv report lacks leaf"
}
scenario commands commands

# ---- --print, and the environment alone ---------------------------------
print_table() {
    local row
    rp record --mode direct --print -o "$tmp/pr.data" -- "$PROGS/prog_twomode" >/dev/null 2>"$tmp/pr.err" ||
        fail "record --print"
    grep -Eq "^name +calls +total +avg +max +status" "$tmp/pr.err" || fail "--print: no table header: $(cat "$tmp/pr.err")"
    grep -Eq " 24000 .* ok$" "$tmp/pr.err" || fail "--print: no row for leaf's 24000 calls: $(cat "$tmp/pr.err")"
    # rp_report(stdout) from a worker thread while the others run
    rp record --mode direct -o "$tmp/rr.data" -- "$PROGS/prog_twomode" report >"$tmp/rr.out" 2>/dev/null ||
        fail "record twomode report"
    grep -q "^rp_report: 0$" "$tmp/rr.out" || fail "rp_report did not return 0: $(cat "$tmp/rr.out")"
    grep -Eq "^name +calls +total +avg +max +status" "$tmp/rr.out" || fail "rp_report printed no table"
    grep -Eq " (2000|[0-9]{4,}) .* ok$" "$tmp/rr.out" || fail "rp_report: no row for worker 0's steps: $(cat "$tmp/rr.out")"

    # instants and counters are in the printed table (the reports list spans)
    rp record --mode direct --print -o "$tmp/pp.data" -- "$PROGS/prog_points" >/dev/null 2>"$tmp/pp.err" ||
        fail "record --print points"
    for row in "tick +36 " "mark +18 " "level +36 " "budgeted .*OVER BUDGET"; do
        grep -Eq "^$row" "$tmp/pp.err" || fail "--print points: no row '$row': $(cat "$tmp/pp.err")"
    done
    if rp record --print -o "$tmp/x.data" -- true 2>/dev/null; then fail "--print without --mode direct was accepted"; fi
    if rp record --mode sample -o "$tmp/x.data" -- true 2>/dev/null; then fail "--mode sample was accepted"; fi
}
scenario print print_table

env_only() {
        env LD_PRELOAD="$RP_LIB" RANKPROF_MODE=direct RANKPROF_OUTPUT="$tmp/env.data" RANKPROF_PRINT=1 \
            "$PROGS/prog_twomode" >/dev/null 2>"$tmp/env.err" || fail "preloaded direct mode run failed"
        grep -Eq " 8000 " "$tmp/env.err" || fail "RANKPROF_PRINT=1: no table: $(cat "$tmp/env.err")"
        rp report -i "$tmp/env.data" --format json >"$tmp/env.json" || fail "report on the env-only file"
        python3 "$tmp/check.py" compare "$tmp/twomode.trace.json" "$tmp/env.json" twomode >/dev/null || exit 1
}
# (not sanitized: a sanitized recorder needs its runtime preloaded first)
sanitized || scenario env_only env_only

# ---- fork: the child starts with empty tables and writes NAME.PID ---------
# Not under TSan: its allocator is not fork-safe when other threads run at
# the fork (the child can hang in its first malloc, here while writing its
# statistics at exit); glibc's malloc, what users run, is.  Under ASan the
# child's LeakSanitizer check at exit can wait forever for a lock of ASan's
# allocator that another thread of the parent held at the fork (GCC 12's
# libasan has no fork handlers for it), so the leak check is off for this
# run; the parent and the child are still checked by ASan itself.
fork_child() {
    local asan_opts child
    mkdir "$tmp/fork"
    asan_opts=${ASAN_OPTIONS:-}
    under_asan && asan_opts="${asan_opts:+$asan_opts:}detect_leaks=0"
    ASAN_OPTIONS=$asan_opts timeout 120 "$RANKPROF" record --mode direct -o "$tmp/fork/f.data" -- "$PROGS/prog_forker" >/dev/null 2>&1 ||
        fail "record --mode direct forker (exit status $?)"
    child=$(ls "$tmp/fork" | grep -v '^f.data$' || true)
    [[ $(echo "$child" | wc -w) -eq 1 ]] || fail "fork: expected one child file, got: $(ls "$tmp/fork")"
    counts() {
        rp report -i "$1" --one-file --format json | python3 -c '
import json, sys
d = json.load(sys.stdin)
print(" ".join("%s=%d" % (n["name"], n["calls"]) for n in sorted(d["nodes"], key=lambda n: n["name"])
               if n["name"] in ("work", "child_work")))'
    }
    [[ "$(counts "$tmp/fork/f.data")" == "work=170" ]] ||
        fail "fork: parent has $(counts "$tmp/fork/f.data"), expected work=170"
    [[ "$(counts "$tmp/fork/$child")" == "child_work=30 work=30" ]] ||
        fail "fork: child has $(counts "$tmp/fork/$child"), expected child_work=30 work=30"
    # the run's two files together (docs/robustness.md, "One file per process")
    rp report -i "$tmp/fork/f.data" --format json >"$tmp/fork.json" || fail "fork: merged report"
    python3 - "$tmp/fork.json" <<'PY' || fail "fork: the run's files merged are not child_work=30 work=200"
import json, sys
d = json.load(open(sys.argv[1]))
c = {n["name"]: n["calls"] for n in d["nodes"]}
assert (c.get("work"), c.get("child_work"), len(d["processes"])) == (200, 30, 2), c
PY
}
if under_tsan; then
    note "fork: skipped under TSan (its allocator is not fork-safe in a threaded parent)"
else
    scenario fork fork_child
fi

# ---- a damaged STATS chunk ------------------------------------------------
damaged_stats() {
    local at rc
    at=$(python3 "$tmp/check.py" corrupt "$tmp/twomode.direct" "$tmp/bad.data") || exit 1
    set +e
    rp report -i "$tmp/bad.data" >/dev/null 2>"$tmp/bad.err"
    rc=$?
    set -e
    [[ $rc -ne 0 && $rc -lt 128 ]] || fail "a damaged STATS chunk gave exit status $rc"
    grep -q "STATS record at offset $at " "$tmp/bad.err" ||
        fail "the error does not name the record's offset $at: $(cat "$tmp/bad.err")"
    note "damaged STATS: $(cat "$tmp/bad.err")"
}
scenario damaged_stats damaged_stats
# a thread still running at the end (prog_endings torn: looker calls look()
# in a loop while main _exits): its open frame has no calls, only edges
# out, and is named like any function (it was shown as a raw address)
running_caller() {
    local rc=0
    "$RANKPROF" record --mode direct -o "$tmp/rc.data" -- "$PROGS/prog_endings" torn 300000 \
        >/dev/null 2>"$tmp/rc.err" || rc=$?
    [[ $rc -eq 5 ]] || fail "running caller: exit $rc: $(cat "$tmp/rc.err")"
    "$RANKPROF" report --format json -i "$tmp/rc.data" >"$tmp/rc.json" 2>/dev/null ||
        fail "running caller: report"
    python3 - "$tmp/rc.json" <<'PY' || fail "running caller: unnamed"
import json, sys
r = json.load(open(sys.argv[1]))
callers = {e["caller"] for e in r["edges"] if e["callee"] == "look"}
if callers != {"looker"}:
    sys.exit(f"e2e_direct: the callers of look: {sorted(callers)}, expected looker")
PY
}
scenario running_caller running_caller

# Frames open on threads still alive at the exit (a server's worker waiting
# for work) end there in both modes: the ranking is not cut off above them.
blocked_at_exit() {
    local m
    for m in trace direct; do
        "$RANKPROF" record --mode $m -o "$tmp/blk.$m" -- "$PROGS/prog_endings" blocked 1000 \
            >/dev/null 2>"$tmp/blk.err" || fail "blocked, $m mode: $(cat "$tmp/blk.err")"
        "$RANKPROF" report --format json -i "$tmp/blk.$m" >"$tmp/blk.$m.json" 2>/dev/null ||
            fail "blocked, $m mode: report"
        python3 - "$tmp/blk.$m.json" $m <<'PY' || fail "blocked, $m mode: open frames"
import json, sys
r, m = json.load(open(sys.argv[1])), sys.argv[2]
N = {n["name"]: n for n in r["nodes"]}
E = {(e["caller"], e["callee"]): e["calls"] for e in r["edges"]}
bad = []
for f in ("server", "serve"):
    n = N.get(f)
    # each waited from before main's calls until after its 50 ms nap
    if not n or n["calls"] != 2 or n["inclusive_ns"] < 2 * 50e6:
        bad.append(f"{f}: {n and (n['calls'], n['inclusive_ns'])}, expected 2 calls, >= 100 ms")
    elif not n["standing"] > N["work"]["standing"]:
        bad.append(f"{f}: standing {n['standing']} not above work's {N['work']['standing']}")
want = {("<root>", "server"): 2, ("server", "serve"): 2, ("serve", "work"): 2}
got = {k: E.get(k) for k in want}
if got != want:
    bad.append(f"edges {got}, expected {want}")
if N["work"]["calls"] != 1002:
    bad.append(f"work: {N['work']['calls']} calls, expected 1002")
if bad:
    sys.exit(f"e2e_direct: {m} mode: " + "; ".join(bad))
PY
    done
}
scenario blocked_at_exit blocked_at_exit

finish

#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# e2e_table.sh - end-to-end test of the terminal table's rows and names,
# `graph NAME` and the HTML page's flags and sequence diagram:
#   - pass-through chains (tests/progs/chain.c): main -> app_main -> run_all
#     -> run_once -> engine is one row "main → app_main → run_all →
#     run_once → engine (chain.c:N), 5 frames" with engine's numbers, no
#     row of its own for any of the five; step, leaf_a and leaf_b keep
#     theirs; --no-chains shows all eight; the JSON keeps every node, marks
#     the five with "chain": 0 and lists their ids caller first in "chains";
#   - width: with COLUMNS=80 every line of the table is at most 80
#     columns, on a terminal (a pty of 70 columns, COLUMNS unset) at most
#     70; --wide prints every C++ name whole on its row;
#   - unique names (tests/progs/cxx/names_*.cpp, when a C++ compiler built
#     it): at 80 columns no two rows read the same, every row keeps its
#     file:line, sum_dots<int> and sum_dots<double> are told apart, and
#     the two out-of-line copies of the header's static scale_copy are one
#     row of 200 calls, without an address, also in the why lines;
#   - graph: `sum_dots` is ambiguous (exit 1, both candidates on stderr),
#     `sum_dots<int>` and `detail::sum_dots<double>` find one, `scale_copy`
#     shows its copies as one, callees sorted by time; on tests/progs/fib no share
#     is above 100 %, fib -> fib says "recursive", main -> fib is 100.0 %;
#     on tests/progs/mutual (x -> y -> x) the shares of x and of y, of
#     their time in all their activations, add up to 100 %: the callers',
#     and the callees' with the own work;
#   - html: every flag badge has its why as a tooltip and the "Why the
#     flags" table the table's reasons; the sequence diagram is an inline
#     SVG drawn by plantuml (when installed; a fake plantuml on PATH shows
#     the one started as the page begins drew it, reading a pipe, a failing
#     one a note with its exit status, and a run with nothing to draw runs
#     none), and with RANKPROF_RENDER=none the page says neither tool is
#     there; the callers/callees panel of fib
#     (headless chromium, when installed) shows "recursive", no share > 100 %,
#     and mutual's x its callers' shares adding up to 100 %.
#
# Run by ctest with RANKPROF and PROGS in the environment.
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
rp_init e2e_table RANKPROF PROGS RP_LIB

need_tools python3
export RANKPROF_LIB="$RP_LIB"
cd "$tmp"

# widest line of a file, in characters (UTF-8), ANSI colours taking none
widest() {
    python3 -c '
import re, sys
w = 0
for l in open(sys.argv[1], encoding="utf-8"):
    w = max(w, len(re.sub(r"\x1b\[[0-9;]*m", "", l.rstrip("\r\n"))))
print(w)' "$1"
}

# the programs every scenario reads
"$RANKPROF" record -o chain.data -- "$PROGS/prog_chain" >/dev/null 2>&1 || fail "recording prog_chain"
"$RANKPROF" record -o fib.data -- "$PROGS/prog_fib" >/dev/null 2>&1 || fail "recording prog_fib"
"$RANKPROF" record -o mutual.data -- "$PROGS/prog_mutual" >/dev/null 2>&1 ||
    fail "recording prog_mutual"

# --- pass-through chains -------------------------------------------------
chains() {
    COLUMNS=200 "$RANKPROF" report -i chain.data >chain.txt || fail "report of chain.data"
    COLUMNS=200 "$RANKPROF" report -i chain.data --no-chains >all.txt || fail "report --no-chains"
    "$RANKPROF" report -i chain.data --format json >chain.json || fail "report --format json"
    python3 - chain.txt all.txt chain.json <<'EOF' || fail "chains (see above)"
import json, re, sys
from table_rows import rows
chain, every = rows(sys.argv[1]), rows(sys.argv[2])
r = json.load(open(sys.argv[3]))
ids = {n["name"]: n["id"] for n in r["nodes"]}
five = ["main", "app_main", "run_all", "run_once", "engine"]
want = re.compile(r"main → app_main → run_all → run_once → engine \(chain\.c:\d+\), 5 frames$")
hits = [x for x in chain if want.search(x[1])]
if len(hits) != 1:
    # what made a frame stand apart: the header (off-CPU, compensation) and
    # the eight nodes' times, flags and edges
    print("".join(open(sys.argv[1]).readlines()[:6]), end="")
    keys = ("rank", "flags", "why", "calls", "inclusive_ns", "exclusive_ns", "offcpu_ns")
    for n in r["nodes"]:
        print(n["name"], {k: n[k] for k in keys if k in n})
    for e in r["edges"]:
        print("edge", e["caller"], "->", e["callee"], e["calls"], e["inclusive_ns"])
    sys.exit(f"no single chain row in {chain}")
if "(1 pass-through chain shown as one row, with the numbers of its last frame; the ranks " \
        "of its other frames are skipped" not in open(sys.argv[1]).read():
    sys.exit("the line under the table does not say the chain's other ranks are skipped")
eng = next(n for n in r["nodes"] if n["name"] == "engine")
if hits[0][0] != eng["rank"]:
    sys.exit(f"the chain row has rank {hits[0][0]}, engine's is {eng['rank']}")
for name in five:
    if any(re.match(re.escape(name) + r" \(", x[1]) for x in chain):
        sys.exit(f"{name} has a row of its own beside its chain: {chain}")
for name in ["step", "leaf_a", "leaf_b"]:
    if not any(x[1].startswith(name + " (") for x in chain):
        sys.exit(f"{name} lost its row: {chain}")
    if "chain" in next(n for n in r["nodes"] if n["name"] == name):
        sys.exit(f"{name} is marked as in a chain")
for name in five + ["step", "leaf_a", "leaf_b"]:
    if not any(x[1].startswith(name + " (") for x in every):
        sys.exit(f"--no-chains shows no row for {name}: {every}")
if len(chain) != len(every) - 4:
    sys.exit(f"{len(chain)} rows with chains, {len(every)} without: expected 4 fewer")
if r["chains"] != [{"chain": 0, "ids": [ids[n] for n in five]}]:
    sys.exit(f"chains {r['chains']}, expected the ids of {five}")
for name in five:
    if next(n for n in r["nodes"] if n["name"] == name).get("chain") != 0:
        sys.exit(f"{name} is not marked \"chain\": 0")
if len(r["nodes"]) != len(every):
    sys.exit("the JSON does not keep every node")
print("e2e_table: chain row", hits[0])
EOF
}

# --- width -----------------------------------------------------------------
width() {
    local d w
    for d in chain fib; do
        COLUMNS=80 "$RANKPROF" report -i $d.data >$d.80 || fail "report of $d.data"
        w=$(widest $d.80)
        ((w <= 80)) || fail "COLUMNS=80: the $d table has a line of $w columns: $(cat $d.80)"
    done
    if command -v script >/dev/null; then
        # a terminal of 70 columns: its width wins over COLUMNS and the 120 default
        env -u COLUMNS script -qec "stty cols 70 rows 40; '$RANKPROF' report -i chain.data" /dev/null \
            >pty.txt || fail "report on a pty"
        w=$(widest pty.txt)
        ((w <= 70)) || fail "a 70-column terminal got a line of $w columns: $(cat pty.txt)"
        ((w >= 60)) || fail "a 70-column terminal got lines of at most $w columns"
    else
        note "no script(1): the terminal's width is not checked"
    fi

}

# --- unique C++ names, and graph NAME on them --------------------------------
names() {
    local names w
    names="$PROGS/prog_names_gxx"
    [[ -x "$names" ]] || names="$PROGS/prog_names_clangxx"
    if [[ -x "$names" ]]; then
        "$RANKPROF" record -o names.data -- "$names" >/dev/null 2>&1 || fail "recording $names"
        COLUMNS=80 "$RANKPROF" report -i names.data >names.80 || fail "report of names.data"
        COLUMNS=80 "$RANKPROF" report -i names.data --wide >names.wide || fail "report --wide"
        w=$(widest names.80)
        ((w <= 80)) || fail "COLUMNS=80: the names table has a line of $w columns: $(cat names.80)"
        "$RANKPROF" report -i names.data --format json >names.json
        python3 - names.80 names.wide names.json <<'EOF' || fail "unique names (see above)"
import json, re, sys
from table_rows import rows, why_block
r = json.load(open(sys.argv[3]))
narrow, wide = rows(sys.argv[1]), rows(sys.argv[2])
cells = [c for _, c in narrow]
if len(set(cells)) != len(cells):
    sys.exit(f"two rows read the same at 80 columns: {cells}")
for n in r["nodes"]:
    if n.get("file") and n.get("line"):
        loc = f"({n['file'].rsplit('/', 1)[-1]}:{n['line']})"
        cell = next(c for k, c in narrow if k == n["rank"])
        if loc not in cell:
            sys.exit(f"row {n['rank']} ({n['name']}) lost its {loc}: {cell!r}")
        wcell = next(c for k, c in wide if k == n["rank"])
        if not wcell.startswith(n["name"] + " " + loc):
            sys.exit(f"--wide cut {n['name']}: {wcell!r}")
si = [c for c in cells if "sum_dots<int>" in c]
sd = [c for c in cells if "sum_dots<double>" in c]
if len(si) != 1 or len(sd) != 1:
    sys.exit(f"sum_dots<int> and sum_dots<double> not told apart: {cells}")
# (each file's out-of-line copy of the header's scale_copy: one function,
# one row without an address, its 100 calls from each, merge.h)
sc = [c for c in cells if c.startswith("scale_copy")]
scn = [n for n in r["nodes"] if n["name"].startswith("scale_copy")]
if len(sc) != 1 or "@0x" in sc[0] or len(scn) != 1 or scn[0]["calls"] != 200 or \
        r["folded_copies"] != 1:
    sys.exit(f"the two copies of scale_copy are not one row of 200 calls: {sc}, {scn}")
print("e2e_table: names", cells)
# the why lines under the table: one per flagged row, no two under one name
# (the notes after them, e.g. on blocked time among the first rows, which a
# busy machine's [off-cpu] can be, are not why lines)
why = why_block(open(sys.argv[1], encoding="utf-8").read())
whyn = [l.split("  ")[0] for l in why.split("\n") if l and not l.startswith(" ")]
flagged = [n["name"] for n in r["nodes"] if n["flags"]]
if len(set(whyn)) != len(whyn) or len(whyn) != len(flagged):
    sys.exit(f"why lines under {whyn}, flagged rows {flagged}")
EOF

        # --- graph NAME ----------------------------------------------------------
        if "$RANKPROF" graph -i names.data sum_dots >g.out 2>g.err; then
            fail "graph sum_dots (two templates) was not refused as ambiguous"
        fi
        grep -q "sum_dots<int>(int const\*" g.err && grep -q "sum_dots<double>(double const\*" g.err ||
            fail "graph sum_dots does not list both candidates: $(cat g.err)"
        "$RANKPROF" graph -i names.data 'sum_dots<int>' >g.out || fail "graph 'sum_dots<int>'"
        head -1 g.out | grep -q '^int geo::detail::sum_dots<int>(int const\*, int const\*, unsigned long) (names.h:' ||
            fail "graph 'sum_dots<int>' found $(head -1 g.out)"
        "$RANKPROF" graph -i names.data 'detail::sum_dots<double>' >g.out ||
            fail "graph 'detail::sum_dots<double>'"
        head -1 g.out | grep -q '^double geo::detail::sum_dots<double>' || fail "found $(head -1 g.out)"
        "$RANKPROF" graph -i names.data scale_copy >g.out || fail "graph scale_copy (two copies)"
        [[ $(grep -c '^scale_copy(long) (names.h:[0-9]*)' g.out) == 1 ]] ||
            fail "graph scale_copy does not show its copies as one: $(cat g.out)"
    else
        note "no C++ test program (no g++ or clang++): names and graph NAME not checked"
    fi
}

# --- graph ------------------------------------------------------------------
graph() {
    if "$RANKPROF" graph -i chain.data no_such_fn >/dev/null 2>g.err; then
        fail "graph of an unknown name succeeded"
    fi
    grep -q "no_such_fn" g.err || fail "the error does not name the unknown name"
    "$RANKPROF" graph -i chain.data step >g.out || fail "graph step"
    python3 - g.out <<'EOF' || fail "graph step: callees not sorted by time"
import sys
def ns(v):
    for u, k in (("ns", 1), ("us", 1e3), ("ms", 1e6), ("s", 1e9)):
        if v.endswith(u) and v[: -len(u)].replace(".", "").isdigit():
            return float(v[: -len(u)]) * k
    raise ValueError(v)
lines = open(sys.argv[1]).read().split("\n")
i = next(k for k, l in enumerate(lines) if l.startswith("callees"))
t = [ns(l.split("total")[1].split()[0]) for l in lines[i + 1:] if l.startswith("  ->")]
names = [l.split()[1] for l in lines[i + 1:] if l.startswith("  ->")]
# leaf_b is called first (the edges' order) and leaf_a does 4 times its
# work: sorted, leaf_a comes first unless the machine's load turns that
if "leaf_a" not in names or "leaf_b" not in names or t != sorted(t, reverse=True):
    sys.exit(f"callees {names} with totals {t}")
EOF
    "$RANKPROF" graph -i fib.data fib >fib.graph || fail "graph fib"
    python3 - fib.graph <<'EOF' || fail "graph fib shares (see above)"
import re, sys
text = open(sys.argv[1]).read()
for l in text.split("\n"):
    for v in re.findall(r"([0-9.]+)%$", l):
        if float(v) > 100.0 and "involvement" not in l:
            sys.exit(f"a share above 100 %: {l}")
fibs = [l for l in text.split("\n") if re.match(r"  (<-|->) fib\s", l)]
if len(fibs) != 2 or not all(l.endswith("recursive") for l in fibs):
    sys.exit(f"fib -> fib is not marked recursive: {fibs}")
if not re.search(r"  <- main\s.*100\.0%$", text, re.M):
    sys.exit("main -> fib is not 100.0 % of fib's time")
EOF
    for f in x y; do
        "$RANKPROF" graph -i mutual.data $f >mutual.$f.graph || fail "graph $f"
        python3 - mutual.$f.graph $f <<'EOF' || fail "graph $f shares (see above)"
import re, sys
lines, f = open(sys.argv[1]).read().split("\n"), sys.argv[2]
head = [l for l in lines if l.startswith(("callers", "callees"))]
if len(head) != 2 or not all("in all its activations" in l for l in head):
    sys.exit(f"{f} recursed through the other: the headings should say so: {head}")
i = next(k for k, l in enumerate(lines) if l.startswith("callees"))
def shares(ls):
    return [float(m.group(1)) for l in ls for m in [re.search(r"([0-9.]+)%$", l)] if m]
callers, callees = shares(lines[1:i]), shares(lines[i + 1:])
for what, s in (("callers", callers), ("callees and own work", callees)):
    if not s or abs(sum(s) - 100.0) > 0.3:
        sys.exit(f"{f}: the shares of its {what} add up to {sum(s):.1f} %: {s}")
EOF
    done

}

# --- html: flags' why, the sequence diagram ----------------------------------
html() {
    # (--wide: a why line longer than the width would be wrapped, and its
    # continuation read as another why)
    "$RANKPROF" report --wide -i chain.data >why.txt
    "$RANKPROF" export -i chain.data --format html -o chain.html || fail "export html"
    python3 - why.txt chain.html <<'EOF' || fail "html flags' why (see above)"
import html, re, sys
from table_rows import why_block
table = open(sys.argv[1], encoding="utf-8").read()
page = open(sys.argv[2], encoding="utf-8").read()
# the table's why lines: "name  FLAG reason; FLAG reason"
whys = []
for l in why_block(table).split("\n"):
    m = re.match(r"(\S+)\s{2,}(.*)$", l)
    if m:
        whys += [w.strip() for w in m.group(2).split(";")]
if not whys:
    sys.exit("the table has no why lines to compare with")
titles = [html.unescape(t) for t in re.findall(r'<span class=flag title="([^"]*)"', page)]
for w in whys:
    if w not in titles:
        sys.exit(f"no badge has the why {w!r}: {titles}")
    if html.escape(w, quote=False) not in page.split('id="why"', 1)[-1]:
        sys.exit(f"the why table lacks {w!r}")
print("e2e_table: html whys", whys)
EOF
    "$RANKPROF" record -o contend.data -- "$PROGS/prog_contend" >/dev/null 2>&1 || fail "recording prog_contend"
    RANKPROF_RENDER=none "$RANKPROF" export -i contend.data --format html -o none.html ||
        fail "export html without a renderer"
    grep -q 'class="meta seq-note">Neither plantuml nor mermaid-cli (mmdc) is installed' none.html ||
        fail "no note where no renderer is used"
    grep -q '<div class="seq-svg">' none.html && fail "a diagram drawn with RANKPROF_RENDER=none"
    # the renderer started as the page begins (export_html.c, prestart): a
    # plantuml reading its diagram from a pipe; one that fails is a note
    mkdir -p fake
    printf '%s\n' '#!/bin/sh' 'kind=file' '[ -p /dev/stdin ] && kind=pipe' 'src=$(cat)' \
        'case $src in *wakes*) ;; *) exit 3 ;; esac' '[ -n "$FAKE_FAIL" ] && exit 2' \
        'echo "<svg><text>from a $kind, $* <!-- source --></text></svg>"' >fake/plantuml
    chmod +x fake/plantuml
    PATH=$tmp/fake:$PATH "$RANKPROF" export -i contend.data --format html -o fake.html ||
        fail "export html with a fake plantuml"
    grep -q '<div class="seq-svg"><svg><text>from a pipe, -tsvg -pipe </text></svg>' fake.html ||
        fail "not drawn by a plantuml started on a pipe: $(grep -o 'seq-svg.\{60\}' fake.html)"
    # a run with nothing to draw (no lock, io, timer, mark or MPI call): no
    # renderer (the fake one fails on a diagram without a wake-up), a note;
    # but with -O funcs its procedures are messages: drawn (the fake fails)
    PATH=$tmp/fake:$PATH "$RANKPROF" export -i fib.data --format html -o empty.html ||
        fail "export html of a run with nothing to draw"
    grep -q '<p class=meta>Nothing to draw: the run has no lock' empty.html ||
        fail "no note for a run with nothing to draw: $(grep -o 'id="seq".\{200\}' empty.html)"
    grep -q 'could not be drawn\|class="seq-svg"' empty.html &&
        fail "a renderer was run for a diagram with nothing to draw"
    fibtid=$("$RANKPROF" info -i fib.data | awk '$1 == "tid" { print $2; exit }')
    PATH=$tmp/fake:$PATH "$RANKPROF" export -i fib.data --format html -O "funcs=$fibtid" \
        -o funcs.html || fail "export html -O funcs=$fibtid"
    grep -q 'The diagram could not be drawn: plantuml failed (exit status 3)' funcs.html ||
        fail "-O funcs: the procedures' diagram not given to the renderer: $(grep -o 'id="seq".\{200\}' funcs.html)"
    FAKE_FAIL=1 PATH=$tmp/fake:$PATH "$RANKPROF" export -i contend.data --format html -o fail.html ||
        fail "export html with a failing plantuml"
    grep -q 'The diagram could not be drawn: plantuml failed (exit status 2)' fail.html ||
        fail "no note for a failing renderer: $(grep -o 'seq-note.\{60\}' fail.html)"
    if command -v plantuml >/dev/null; then
        "$RANKPROF" export -i contend.data --format html -o seq.html || fail "export html"
        python3 - seq.html <<'EOF' || fail "html sequence diagram (see above)"
import re, sys
page = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<div class="seq-svg">(<svg.*?</svg>)</div>', page, re.S)
if not m:
    sys.exit("no inline SVG sequence diagram")
svg = m.group(1)
for word in ("wakes via", "grant after"):
    if word not in svg:
        sys.exit(f"the diagram lacks {word!r}")
if "seq-note" in page.split('id="seq"', 1)[1].split("</p>", 2)[0]:
    sys.exit("the note is shown beside a drawn diagram")
print(f"e2e_table: sequence diagram drawn, {len(svg)} bytes of SVG")
EOF
    else
        note "plantuml is not installed: the drawn diagram is not checked (the note is)"
    fi
    chromium=$(command -v chromium || command -v chromium-browser || true)
    if [[ -n "$chromium" ]]; then
        "$RANKPROF" export -i fib.data --format html -o fib.html || fail "export html of fib"
        timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
            --user-data-dir="$tmp/chromium" --dump-dom "file://$tmp/fib.html" >fib.dom 2>chromium.log ||
            fail "chromium --dump-dom: $(tail -3 chromium.log)"
        python3 - fib.dom <<'EOF' || fail "html panel shares of fib (see above)"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
panes = re.search(r'id="callers">(.*?)</div><div id="callees">(.*?)</div>', dom, re.S)
if not panes:
    sys.exit("no callers/callees panel in the DOM")
cells = re.findall(r"<td>([^<]*)</td></tr>", panes.group(1) + panes.group(2))
shares = [c for c in cells if c.endswith("%")]
if "recursive" not in cells or not shares:
    sys.exit(f"fib's panel: {cells}")
if any(float(c[:-1]) > 100 for c in shares):
    sys.exit(f"a share above 100 % in fib's panel: {cells}")
print("e2e_table: fib's panel", cells)
EOF
        "$RANKPROF" export -i mutual.data --format html -o mutual.html || fail "export html of mutual"
        timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --no-first-run \
            --user-data-dir="$tmp/chromium" --dump-dom "file://$tmp/mutual.html" >mutual.dom \
            2>chromium.log || fail "chromium --dump-dom: $(tail -3 chromium.log)"
        python3 - mutual.dom <<'EOF' || fail "html panel shares of mutual (see above)"
import re, sys
dom = open(sys.argv[1], encoding="utf-8").read()
sel = re.search(r'id="sel">([^<]*)<', dom)
panes = re.search(r'id="callers">(.*?)</div>', dom, re.S)
if not sel or not panes:
    sys.exit("no selection or callers panel in the DOM")
shares = [float(c[:-1]) for c in re.findall(r"<td>([0-9.]+%)</td></tr>", panes.group(1))]
# (two callers, y and main, each a share: no "recursive" for an edge to another)
if sel.group(1) not in ("x", "y") or len(shares) != 2 or abs(sum(shares) - 100.0) > 0.3:
    sys.exit(f"{sel.group(1)}'s callers' shares add up to {sum(shares):.1f} %: {shares}")
print(f"e2e_table: mutual's panel ({sel.group(1)})", shares)
EOF
    else
        note "no chromium: the HTML panel's shares are not checked"
    fi
}

for s in chains width names graph html; do
    scenario $s $s
done
finish

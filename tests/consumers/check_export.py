#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""check_export.py - checks rankprof's exports against `report --format json`
(docs/design.md §8) and against the exact call tree of tests/progs/calltree.c.

    check_export.py folded REPORT.json FOLDED          paths and exclusive ns
    check_export.py folded-threads REPORT.json FOLDED N   -O threads=1: N thread frames first
    check_export.py svg REPORT.json SVG               our flame graph
    check_export.py flamegraph-pl REPORT.json SVG     flamegraph.pl's rendering of FOLDED
    check_export.py callgrind REPORT.json SELF INCL    callgrind_annotate's outputs
                                                      (--inclusive=no and =yes)
    check_export.py pprof REPORT.json TIME CALLS       `go tool pprof -top` outputs
                                                      (-unit=ns, -sample_index=calls)
    check_export.py svg-zoom REPORT.json DOM            chromium's DOM of our SVG opened
                                                      at #zoom=b&search=leaf
    check_export.py html REPORT.json DOM PNG           chromium's --dump-dom and --screenshot
                                                      of the HTML report
    check_export.py slices REPORT.json TSV            trace_processor's "name, count(*),
                                                      sum(dur)" over the slice table (less
                                                      the [recorder] slices inside each)

Exits 1 with a "FAIL:" line on the first mismatch.
"""
import json
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib
from html.parser import HTMLParser

# tests/progs/calltree.c: every call path and its activation count
CALLTREE_PATHS = {
    "main": 1, "main;a": 3, "main;a;b": 6, "main;a;b;leaf": 30, "main;a;c": 3,
    "main;a;c;leaf": 6, "main;c": 1, "main;c;leaf": 2,
}


def die(msg):
    print("check_export: FAIL: " + msg, file=sys.stderr)
    sys.exit(1)


def load_report(path):
    with open(path) as f:
        r = json.load(f)
    return r, {n["name"]: n for n in r["nodes"]}


def check_folded(report, folded):
    _, nodes = load_report(report)
    paths = {}
    with open(folded) as f:
        for ln, line in enumerate(f, 1):
            m = re.fullmatch(r"(.+) (\d+)\n", line)
            if not m:
                die(f"{folded}:{ln}: not 'frame;frame value': {line!r}")
            if m.group(1) in paths:
                die(f"{folded}:{ln}: path {m.group(1)} appears twice")
            paths[m.group(1)] = int(m.group(2))
    # time off CPU (a preempted thread) is a path of its own, ending in [off-cpu]
    paths = {p: v for p, v in paths.items() if not p.endswith(";[off-cpu]")}
    # every path of the call tree that has exclusive time, and no other
    want = set(CALLTREE_PATHS)
    if set(paths) != want:
        die(f"folded paths {sorted(paths)} != calltree's {sorted(want)}")
    # per function, the paths' exclusive ns add up to the report's exclusive_ns
    # (each line is rounded to whole ns on its own: allow 1 ns per line)
    per = {}
    for p, v in paths.items():
        leaf = p.split(";")[-1]
        per.setdefault(leaf, []).append(v)
    for name, vs in per.items():
        want_ns = nodes[name]["exclusive_ns"]
        if abs(sum(vs) - want_ns) > len(vs):
            die(f"folded: {name} exclusive {sum(vs)} ns != report's {want_ns}")
    return paths


def check_folded_threads(report, folded, nthreads):
    """Every line starts with one of N thread frames; below them the
    functions' exclusive time is the report's."""
    _, nodes = load_report(report)
    threads, per = set(), {}
    with open(folded) as f:
        for line in f:
            path, v = line.rsplit(" ", 1)
            frames = path.split(";")
            threads.add(frames[0])
            if len(frames) < 2:
                die(f"folded-threads: a line with only a thread frame: {line!r}")
            per[frames[-1]] = per.get(frames[-1], 0) + int(v)
    if len(threads) != int(nthreads):
        die(f"folded-threads: thread frames {sorted(threads)}, expected {nthreads}")
    for name, v in per.items():
        if abs(v - nodes[name]["exclusive_ns"]) > 3 * len(nodes):
            die(f"folded-threads: {name} {v} ns, report's exclusive_ns {nodes[name]['exclusive_ns']}")
    print(f"check_export: folded by thread ok ({sorted(threads)})")


def svg_frames(path):
    ns = {"s": "http://www.w3.org/2000/svg"}
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        die(f"{path} is not well-formed XML: {e}")
    return root, ns


def check_svg(report, svg):
    r, nodes = load_report(report)
    root, ns = svg_frames(svg)
    if root.find(".//s:script", ns) is None:
        die("the flame graph has no script (zoom/search)")
    frames = root.findall(".//s:g[@class='f']", ns)
    total = int(root.get("data-total"))
    width = float(root.get("data-w"))
    seen = {}
    for g in frames:
        name, d = g.get("data-n"), int(g.get("data-d"))
        v, x, w = int(g.get("data-v")), float(g.get("data-x")), float(g.get("data-w"))
        rect = g.find("s:rect", ns)
        if abs(float(rect.get("width")) - w) > 1e-3 or abs(float(rect.get("x")) - x) > 1e-3:
            die(f"svg: frame {name} rect disagrees with its data attributes")
        if abs(w - v * width / total) > 0.01:
            die(f"svg: frame {name} is {w} px wide, its time says {v * width / total}")
        if g.find("s:title", ns) is None or name not in g.find("s:title", ns).text:
            die(f"svg: frame {name} has no title naming it")
        seen.setdefault(name, []).append((d, x, w, v))
    for name in ("all", "main", "a", "b", "c", "leaf"):
        if name not in seen:
            die(f"svg: no frame for {name}")
    # frames per function: one per distinct path (all wide enough to draw here)
    for name, count in (("main", 1), ("a", 1), ("b", 1), ("c", 2), ("leaf", 3)):
        if len(seen[name]) != count:
            die(f"svg: {len(seen[name])} frames for {name}, the call tree has {count} paths")
    # a function's outermost frames add up to its inclusive time in the report
    k = width / total
    for name in ("main", "a", "b", "c", "leaf"):
        got = sum(v for _, _, _, v in seen[name])
        want = nodes[name]["inclusive_ns"]
        # data-v is in ticks: compare the drawn widths with the report's share
        share = got / total
        want_share = want / r["total_ns"] if r["total_ns"] else 0
        # inclusive_ns and total_ns are each rounded to 1 ns
        if abs(share - want_share) > 2.0 / max(r["total_ns"], 1) + 1e-9:
            die(f"svg: {name} covers {share:.4f} of the width, report says {want_share:.4f}")
    # children sit inside their parent
    main = seen["main"][0]
    for d, x, w, _ in seen["a"] + seen["b"]:
        if x < main[1] - 1e-3 or x + w > main[1] + main[2] + 1e-3:
            die("svg: a callee's frame sticks out of main's")
    print(f"check_export: svg ok ({len(frames)} frames)")


def check_flamegraph_pl(report, svg):
    _, nodes = load_report(report)
    root, ns = svg_frames(svg)
    titles = [t.text for t in root.iter("{http://www.w3.org/2000/svg}title")]
    got = {}
    for t in titles:
        m = re.fullmatch(r"(.+) \(([\d,]+) samples?, [\d.]+%\)", t or "")
        if m:
            got.setdefault(m.group(1), []).append(int(m.group(2).replace(",", "")))
    if "all" not in got or "main" not in got:
        die(f"flamegraph.pl output has no 'all'/'main' frame: {titles[:5]}")
    main = got["main"][0]
    want = nodes["main"]["inclusive_ns"]
    # main's frame = the sum of every exclusive time under it
    if abs(main - want) > len(CALLTREE_PATHS):  # one rounding per folded line
        die(f"flamegraph.pl: main {main} ns, report's inclusive {want}")
    if len(got.get("leaf", [])) != 3 or len(got.get("c", [])) != 2:
        die(f"flamegraph.pl: expected 3 leaf and 2 c frames: {got}")
    print(f"check_export: flamegraph.pl ok (main {main} ns)")


def check_slices(report, tsv):
    """Every span of the report is a slice in trace_processor, as many times
    as it was called, and the slices' durations (less the "[recorder]"
    slices inside them) add up to its time; the "[recorder]" slices add up
    to the report's recorder_wait_ns."""
    r, nodes = load_report(report)
    got = {}
    with open(tsv) as f:
        for line in f:
            name, count, dur = line.rstrip("\n").split("\t")
            got[name] = (int(count), int(dur))
    # a span's time less the [recorder] slices inside it: each of those
    # rounded on its own too (at most all of them inside one span)
    nrec = got.get("[recorder]", (0, 0))[0]
    for name, n in nodes.items():
        if name not in got:
            die(f"slices: no slice named {name} (report: {n['calls']} calls)")
        count, dur = got[name]
        if count != n["calls"]:
            die(f"slices: {name} has {count} slices, report says {n['calls']} calls")
        # sum(dur) counts every activation, as mean_ns * calls does (the
        # report's inclusive_ns counts only the outermost of a recursion);
        # each slice end is rounded to 1 ns on its own.
        want = n["mean_ns"] * n["calls"]
        if abs(dur - want) > 2 * (count + nrec) + 1 + 1e-9 * want:
            die(f"slices: {name} slices last {dur} ns, report's calls * mean = {want:.0f}")
    count, dur = got.pop("[recorder]", (0, 0))
    want = r["recorder_wait_ns"]
    if abs(dur - want) > 2 * count + 1 or (want > 0) != (count > 0):
        die(f"slices: {count} [recorder] slices last {dur} ns, report's recorder_wait_ns {want}")
    extra = set(got) - set(nodes)
    if extra:
        die(f"slices: names the report does not have: {sorted(extra)}")
    print(f"check_export: slices ok ({len(got)} names, {sum(c for c, _ in got.values())} slices)")


def annotate_rows(path):
    """callgrind_annotate's "cost (pct)  file:function" rows."""
    rows, total = {}, None
    with open(path) as f:
        for line in f:
            m = re.fullmatch(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(.+)\n", line)
            if not m:
                continue
            cost, what = int(m.group(1).replace(",", "")), m.group(2)
            if what == "PROGRAM TOTALS":
                total = cost
            elif ":" in what and not what.startswith("=>"):
                rows[what.split(":", 1)[1]] = cost
    if total is None:
        die(f"{path}: no PROGRAM TOTALS line")
    return total, rows


def check_callgrind(report, self_out, incl_out):
    r, nodes = load_report(report)
    total, self_rows = annotate_rows(self_out)
    _, incl_rows = annotate_rows(incl_out)
    want_total = sum(n["exclusive_ns"] for n in r["nodes"])
    if total != want_total:
        die(f"callgrind_annotate total {total} != sum of the report's exclusive_ns {want_total}")
    for name, n in nodes.items():
        if n["exclusive_ns"] and self_rows.get(name) != n["exclusive_ns"]:
            die(f"callgrind: {name} self {self_rows.get(name)}, report {n['exclusive_ns']}")
        # inclusive = self + the inclusive time of its calls, or for a callee
        # the sum of the calls into it: one rounding per edge either way;
        # under recursion callgrind_annotate adds the calls up again
        edges = sum(1 for e in r["edges"] if name in (e["caller"], e["callee"]))
        recursive = any(e["caller"] == name == e["callee"] for e in r["edges"])
        got = incl_rows.get(name)
        if not recursive and n["inclusive_ns"] and (got is None or abs(got - n["inclusive_ns"]) > edges + 1):
            die(f"callgrind: {name} inclusive {got}, report {n['inclusive_ns']}")
    print(f"check_export: callgrind ok (total {total} ns, {len(self_rows)} functions)")


def pprof_rows(path, unit):
    rows = {}
    with open(path) as f:
        for line in f:
            m = re.fullmatch(r"\s*(\d+)%s\s+[\d.e+-]+%%\s+[\d.e+-]+%%\s+(\d+)%s\s+[\d.e+-]+%%\s+(.+)\n"
                             % (unit, unit), line)
            if m:
                rows[m.group(3)] = (int(m.group(1)), int(m.group(2)))
    return rows


def check_pprof(report, time_out, calls_out):
    r, nodes = load_report(report)
    times, calls = pprof_rows(time_out, "ns"), pprof_rows(calls_out, "")
    if not times or not calls:
        die(f"pprof: no rows in {time_out} or {calls_out}")
    paths = 3 * len(nodes)  # one rounding per sample (path); generous for recursion
    for name, n in nodes.items():
        if n["kind"] == "lock-hold":
            continue  # an interval, not a frame of the call paths (docs/locks.md)
        if n["exclusive_ns"]:
            flat, cum = times.get(name, (None, None))
            if flat is None or abs(flat - n["exclusive_ns"]) > paths:
                die(f"pprof: {name} flat {flat} ns, report exclusive_ns {n['exclusive_ns']}")
            if abs(cum - n["inclusive_ns"]) > paths:
                die(f"pprof: {name} cum {cum} ns, report inclusive_ns {n['inclusive_ns']}")
        if calls.get(name, (None,))[0] != n["calls"]:
            die(f"pprof: {name} flat calls {calls.get(name)}, report {n['calls']}")
    print(f"check_export: pprof ok ({len(times)} functions)")


def check_svg_zoom(report, dom):
    """The flame graph's script ran in a browser: zoomed into b (b spans the
    whole width, its callee leaf is scaled with it, c is hidden) and searched
    for leaf (the share matched is leaf's inclusive share of the run)."""
    _, nodes = load_report(report)
    with open(dom) as f:
        text = f.read()
    frames = re.findall(r'<g class="f" data-n="([^"]*)" data-x="([\d.]+)" data-w="([\d.]+)"'
                        r' data-d="(\d+)" data-v="\d+"( style="display: none;")?>.*?'
                        r'<rect x="([\d.]+)" y="[\d.]+" width="([\d.]+)"[^>]* fill="([^"]+)"',
                        text)
    if len(frames) < 9:
        die(f"svg-zoom: {len(frames)} frames in the DOM")
    full = float(re.search(r'data-w="([\d.]+)" data-x0', text).group(1))
    b = [f for f in frames if f[0] == "b"][0]
    bw = float(b[2])
    if abs(float(b[6]) - full) > 0.01:
        die(f"svg-zoom: b is {b[6]} px wide after the zoom, not {full}")
    for n, x, w, d, hidden, rx, rw, fill in frames:
        inside = float(x) >= float(b[1]) - 1e-3 and float(x) + float(w) <= float(b[1]) + bw + 1e-3
        if n == "leaf" and int(d) == 4 and inside:
            if abs(float(rw) - float(w) * full / bw) > 0.01:
                die(f"svg-zoom: b's leaf is {rw} px, expected {float(w) * full / bw}")
        if n == "c" and not hidden:
            die("svg-zoom: c is still shown when zoomed into b")
        if n == "leaf" and fill != "rgb(230,0,230)":
            die("svg-zoom: a leaf frame is not highlighted by the search")
    m = re.search(r"Matched: ([\d.]+)%", text)
    want = 100 * nodes["leaf"]["inclusive_ns"] / nodes["main"]["inclusive_ns"]
    if not m or abs(float(m.group(1)) - want) > 0.01:
        die(f"svg-zoom: search says {m and m.group(0)}, leaf is {want:.2f}% of the run")
    print(f"check_export: svg zoom and search ok (matched {m.group(1)}%)")


class Tables(HTMLParser):
    """Collects the rows (cell texts) of the tables under elements with ids."""

    def __init__(self):
        super().__init__()
        self.stack, self.rows, self.cell, self.row = [], {}, None, None
        self.svg_frames = 0

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "g" and a.get("class") == "f":
            self.svg_frames += 1
        if a.get("id"):
            self.stack.append((tag, a["id"]))
        if tag == "tr" and self.stack:
            self.row = []
        elif tag == "td" and self.row is not None:
            self.cell = ""

    def handle_endtag(self, tag):
        if tag == "td" and self.cell is not None:
            self.row.append(self.cell.strip())
            self.cell = None
        elif tag == "tr" and self.row is not None:
            if self.row:
                self.rows.setdefault(self.stack[-1][1], []).append(self.row)
            self.row = None
        if self.stack and self.stack[-1][0] == tag:
            self.stack.pop()

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def png_colors(path):
    """Distinct byte values in the decoded image data (a blank page has few)."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        die(f"{path} is not a PNG")
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        if kind == b"IDAT":
            idat += data[pos + 8:pos + 8 + n]
        pos += 12 + n
    return len(set(zlib.decompress(idat)))


def check_html(report, dom, png):
    r, nodes = load_report(report)
    t = Tables()
    with open(dom) as f:
        t.feed(f.read())
    rows = t.rows.get("profile", [])
    if len(rows) != len(r["nodes"]):
        die(f"html: {len(rows)} table rows, report has {len(r['nodes'])} nodes")
    for row, n in zip(rows, r["nodes"]):
        # rank | standing | involved | calls | ... | name (file:line)
        if row[0] != str(n["rank"]) or row[3] != str(n["calls"]) or \
                not row[-1].startswith(n["name"]):
            die(f"html: row {row} is not the report's {n['name']} (rank {n['rank']})")
    # the script ran: the first row (rank 1) is selected, its callees listed
    top = r["nodes"][0]["name"]
    want = sorted((e["callee"], str(e["calls"])) for e in r["edges"] if e["caller"] == top)
    got = sorted((c[0], c[1]) for c in t.rows.get("callees", []) if c[0] != "(none)")
    if got != want:
        die(f"html: callees of {top} shown {got}, report's edges {want}")
    if t.svg_frames < len(r["nodes"]):
        die(f"html: the flame graph has {t.svg_frames} frames")
    colors = png_colors(png)
    if colors < 16:
        die(f"html: the screenshot looks blank ({colors} distinct byte values)")
    print(f"check_export: html ok ({len(rows)} rows, callees of {top}: {got}, "
          f"{t.svg_frames} flame frames, screenshot {colors} byte values)")


def main():
    if len(sys.argv) < 2:
        die(__doc__)
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "folded":
        check_folded(*args)
        print("check_export: folded ok")
    elif cmd == "folded-threads":
        check_folded_threads(*args)
    elif cmd == "svg":
        check_svg(*args)
    elif cmd == "callgrind":
        check_callgrind(*args)
    elif cmd == "pprof":
        check_pprof(*args)
    elif cmd == "svg-zoom":
        check_svg_zoom(*args)
    elif cmd == "html":
        check_html(*args)
    elif cmd == "slices":
        check_slices(*args)
    elif cmd == "flamegraph-pl":
        check_flamegraph_pl(*args)
    else:
        die(f"unknown check {cmd}")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: MIT
"""table_rows.py - the rows of `rankprof report`'s text table, for the e2e
tests: the name cell of a row whose name wraps is joined with its
continuation lines."""


def rows(path):
    """[rank, name cell] per row of the table in the file at path."""
    lines = open(path, encoding="utf-8").read().split("\n")
    head = next(i for i, l in enumerate(lines) if l.startswith("rank  "))
    col = lines[head].index("name")
    out = []
    for l in lines[head + 1:]:
        if not l.strip() or l.startswith("("):
            break
        if l[:col].strip():
            out.append([int(l.split()[0]), l[col:]])
        else:
            out[-1][1] += " " + l.strip()
    return out

# SPDX-License-Identifier: MIT
"""table_rows.py - the rows of `rankprof report`'s text table, for the e2e
tests: the name cell of a row whose name wraps is joined with its
continuation lines; and the why lines under it."""


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


# the paragraphs under the table that are notes, not why lines
NOTES = ("[wait] rows", "Time spent blocked", "~ throttled")


def why_block(text):
    """The why lines under the table in text (one per flagged row): the
    paragraph after the table's that is not a note (on waits, on blocked
    time among the first rows, on throttled functions), or ""."""
    paras = text.split("\n\n")
    after = next(i for i, x in enumerate(paras)
                 if any(l.startswith("rank ") for l in x.split("\n"))) + 1
    return next((x for x in paras[after:] if not x.startswith(NOTES)), "")

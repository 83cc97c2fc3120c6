"""The measured tables of a markdown file (README.md), each between

    <!-- mmlat table: KIND ARG... SUMMARY.json... -->
    <!-- mmlat table end -->

rendered from the committed summaries it names (render_readme.TABLES;
paths relative to the file's directory).  check() lists the tables that
differ from what their summaries render, so that a stale figure fails the
unit tests; update() writes them."""
import os
import re

from . import render_readme

START = re.compile(r"^<!-- mmlat table: (.+?) -->$")
END = "<!-- mmlat table end -->"


class TableError(ValueError):
    pass


def tables(lines):
    """(first line, end line, spec) of every marked table."""
    out, start = [], None
    for i, line in enumerate(lines):
        m = START.match(line)
        if m:
            if start is not None:
                raise TableError("line %d: a table starts inside the one of line %d"
                                 % (i + 1, start[0] + 1))
            start = (i, m.group(1))
        elif line == END:
            if start is None:
                raise TableError("line %d: a table end without its start" % (i + 1))
            out.append((start[0], i, start[1]))
            start = None
    if start is not None:
        raise TableError("line %d: a table without its end (%s)" % (start[0] + 1, END))
    return out


def render(spec, base_dir):
    """The lines of the table a marker's spec names."""
    words = spec.split()
    kind, args = words[0], words[1:]
    if kind not in render_readme.TABLES:
        raise TableError("%s: no table kind %s (of: %s)"
                         % (spec, kind, ", ".join(render_readme.TABLES)))
    renderer, n_summaries, read = render_readme.TABLES[kind]
    paths = [a for a in args if a.endswith(".json")]
    others = [a for a in args if not a.endswith(".json")]
    if not paths or (n_summaries and len(paths) != n_summaries):
        raise TableError("%s: %s takes %s summary" % (spec, kind, n_summaries or "any"))
    summaries = [read(os.path.join(base_dir, p)) for p in paths]
    if n_summaries == 1:
        return renderer(summaries[0], *others)
    return renderer(summaries, *others)


def _rendered(path):
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    base_dir = os.path.dirname(os.path.abspath(path))
    return lines, [(start, end, spec, render(spec, base_dir))
                   for start, end, spec in tables(lines)]


def check(path):
    """[(spec, rendered lines, lines found)] of every table of the file
    that differs from what its summaries render."""
    lines, found = _rendered(path)
    return [(spec, want, lines[start + 1:end]) for start, end, spec, want in found
            if lines[start + 1:end] != want]


def update(path):
    """Every marked table of the file rendered anew; returns how many
    changed."""
    lines, found = _rendered(path)
    changed = 0
    for start, end, spec, want in reversed(found):
        if lines[start + 1:end] != want:
            lines[start + 1:end] = want
            changed += 1
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return changed

"""Unified diffs of a file's old and new text (WriteFile, Edit, the front ends' diff views),
bounded for large files, and their added/removed line counts."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field

from etcode.tools.summary import count_lines
from etcode.util.fs import format_size

__all__ = [
    "DIFF_LIMIT",
    "REGION_LIMIT",
    "DiffLine",
    "Hunk",
    "changed_region",
    "diff_hunks",
    "diff_stats",
    "first_changed_line",
    "unified_diff",
]


#: Texts larger than this (characters, both sides) are diffed only around the change: the
#: common head and tail are skipped first.
DIFF_LIMIT = 2 * 1024 * 1024
#: A changed region larger than this gets no line diff (difflib over millions of lines
#: takes gigabytes and minutes), only a header saying so.
REGION_LIMIT = 2 * 1024 * 1024
_HUNK = re.compile(r"^@@ -(\d+)(,\d+)? \+(\d+)(,\d+)? @@")


def unified_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A unified diff of ``old`` → ``new`` with ``a/path`` / ``b/path`` headers."""
    if len(old) + len(new) <= DIFF_LIMIT:
        return _diff(path, old, new, context)
    start, old_end, new_end = changed_region(old, new, context)
    old_mid, new_mid = old[start:old_end], new[start:new_end]
    if len(old_mid) + len(new_mid) > REGION_LIMIT:
        return (
            f"--- a/{path}\n+++ b/{path}\n@@ -1,{count_lines(old)} +1,{count_lines(new)} @@ "
            f"too large to show line by line ({format_size(len(old))} -> {format_size(len(new))})\n"
        )
    shift = old.count("\n", 0, start)
    out = []
    for line in _diff(path, old_mid, new_mid, context).splitlines(keepends=True):
        match = _HUNK.match(line)
        if match:
            a, b, c, d = match.groups()
            line = f"@@ -{int(a) + shift}{b or ''} +{int(c) + shift}{d or ''} @@" + line[match.end() :]
        out.append(line)
    return "".join(out)


def _diff(path: str, old: str, new: str, context: int) -> str:
    old_lines = old.replace("\r\n", "\n").splitlines(keepends=True)
    new_lines = new.replace("\r\n", "\n").splitlines(keepends=True)
    out: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, f"a/{path}", f"b/{path}", n=context):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def changed_region(old: str, new: str, context: int, step: int = 65536) -> tuple[int, int, int]:
    """``(start, old_end, new_end)``: the lines that differ plus ``context`` lines around
    them; ``old[:start] == new[:start]`` and the tails after the ends are equal. Compared
    in slices of ``step`` characters, never copying a whole text."""
    limit = min(len(old), len(new))
    head = 0
    while head < limit:
        end = min(head + step, limit)
        if old[head:end] != new[head:end]:
            while old[head] == new[head]:
                head += 1
            break
        head = end
    tail = 0
    room = limit - head
    while tail < room:
        size = min(step, room - tail)
        if old[len(old) - tail - size : len(old) - tail] != new[len(new) - tail - size : len(new) - tail]:
            while old[len(old) - tail - 1] == new[len(new) - tail - 1]:
                tail += 1
            break
        tail += size
    start = old.rfind("\n", 0, head) + 1  # the start of the first changed line
    for _ in range(context):
        if start == 0:
            break
        start = old.rfind("\n", 0, start - 1) + 1
    old_end = len(old) - tail
    found = old.find("\n", old_end)  # the end of the last changed line
    cut = len(old) if found < 0 else found + 1
    for _ in range(context):
        if cut >= len(old):
            break
        found = old.find("\n", cut)
        cut = len(old) if found < 0 else found + 1
    tail = min(tail, len(old) - cut)
    return start, len(old) - tail, len(new) - tail


def diff_stats(diff: str) -> tuple[int, int]:
    """(added, removed) line counts of a unified diff."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


@dataclass(frozen=True)
class DiffLine:
    """One line of a hunk: ``kind`` is ``" "`` (context), ``"-"`` or ``"+"``; ``old``/``new``
    its line number in the old/new file (None on the side it is not in)."""

    kind: str
    text: str
    old: int | None
    new: int | None

    @property
    def number(self) -> int:
        """The number a single gutter shows: the old file's for a removed line, else the new's."""
        return (self.old if self.kind == "-" else self.new) or 0


@dataclass
class Hunk:
    """One ``@@ -a,b +c,d @@`` hunk of a unified diff, its lines numbered."""

    old_start: int
    new_start: int
    lines: list[DiffLine] = field(default_factory=list)


def diff_hunks(diff: str) -> list[Hunk]:
    """The hunks of a unified diff (``unified_diff``'s), each line with its real line
    numbers; headers, ``\\ No newline`` markers and a hunk without lines are left out."""
    hunks: list[Hunk] = []
    old = new = 0
    for line in diff.splitlines():
        match = _HUNK.match(line)
        if match:
            old, new = int(match.group(1)), int(match.group(3))
            # an empty side (",0") names the line before the hunk
            old += 1 if match.group(2) == ",0" else 0
            new += 1 if match.group(4) == ",0" else 0
            hunks.append(Hunk(old, new))
            continue
        if not hunks or not line or line[0] not in " -+":
            continue
        kind, text = line[0], line[1:]
        hunk = hunks[-1]
        if kind == "-":
            hunk.lines.append(DiffLine(kind, text, old, None))
            old += 1
        elif kind == "+":
            hunk.lines.append(DiffLine(kind, text, None, new))
            new += 1
        else:
            hunk.lines.append(DiffLine(kind, text, old, new))
            old += 1
            new += 1
    return [hunk for hunk in hunks if hunk.lines]


def first_changed_line(diff: str) -> int | None:
    """The new file's number of the first changed line (for a removal, the line now in its
    place), for an editor's location; None when the diff shows no line."""
    for hunk in diff_hunks(diff):
        new = hunk.new_start
        for line in hunk.lines:
            if line.kind != " ":
                return max(1, line.new if line.new is not None else new)
            new += 1
    match = next((m for m in map(_HUNK.match, diff.splitlines()) if m), None)
    return max(1, int(match.group(3))) if match else None

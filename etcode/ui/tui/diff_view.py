"""An edit's diff as a reviewer reads it: numbered hunks with their context lines.

    22   def total(items):
    23 -     return 1
    23 +     return sum(items)
    24

The gutter holds the real line number (the old file's for a removed line, the new file's
otherwise: ``tools/diff.diff_hunks`` reads them from the hunk headers), removed and added
lines are tinted, hunks apart are joined by ``⋮``. The permission dialog, the transcript's
tool block and a resumed session's replay all show an edit this way.
"""

from __future__ import annotations

import os

from rich.console import RenderableType
from rich.table import Table
from rich.text import Text

from etcode.tools.diff import DiffLine, diff_hunks

__all__ = ["DiffRow", "diff_rows", "numbered_diff", "rows_text"]

#: A row: the gutter (its number, or ``""``), the sign (``" "``, ``-``, ``+``, ``⋮``, ``…``), the text.
DiffRow = tuple[str, str, str]


def diff_rows(diff: str, context: int | None = None) -> list[DiffRow]:
    """Every row of the numbered view of ``diff`` (empty when it has no hunk); with
    ``context``, only that many unchanged lines around each change (a gap is a ``⋮``)."""
    rows: list[DiffRow] = []
    for hunk in diff_hunks(diff):
        kept = _near_changes(hunk.lines, context)
        for position, i in enumerate(kept):
            if rows and (position == 0 or i != kept[position - 1] + 1):  # a hunk apart, or a gap
                rows.append(("", "⋮", ""))
            line = hunk.lines[i]
            rows.append((str(line.number), line.kind, line.text))
    return rows


def _near_changes(lines: list[DiffLine], context: int | None) -> list[int]:
    """Indexes of ``lines`` within ``context`` lines of a change (all with None or no
    change); one pass each way, so a long diff costs no more than its length."""
    if context is None or all(line.kind == " " for line in lines):
        return list(range(len(lines)))
    near = [False] * len(lines)
    for order in (range(len(lines)), range(len(lines) - 1, -1, -1)):
        distance = context + 1
        for i in order:
            distance = 0 if lines[i].kind != " " else distance + 1
            near[i] = near[i] or distance <= context
    return [i for i, keep in enumerate(near) if keep]


def rows_text(rows: list[DiffRow]) -> str:
    """The rows as plain text (what a test or a copy sees)."""
    width = max((len(number) for number, _, _ in rows), default=0)
    return "\n".join(f"{number:>{width}} {sign} {text}".rstrip() for number, sign, text in rows)


def numbered_diff(
    diff: str, limit: int | None = None, hint: str = "", context: int | None = None
) -> RenderableType | None:
    """The numbered view of ``diff``: at most ``limit`` rows, then ``… N more lines`` and
    ``hint``; None when the diff has no hunk. ``context``: see :func:`diff_rows`."""
    rows = diff_rows(diff, context)
    if not rows:
        return None
    rest = 0
    if limit is not None and len(rows) > limit + 1:  # a hint never takes the one line it hides
        rest = len(rows) - limit
        rows = rows[:limit]
    width = max(len(number) for number, _, _ in rows)
    table = Table.grid(padding=(0, 1), expand=True)
    table.add_column(justify="right", width=width, no_wrap=True)
    table.add_column(width=1, no_wrap=True)
    table.add_column(ratio=1, overflow="fold")
    tints = _tints()
    for number, sign, text in rows:
        colour = {"-": "red", "+": "green"}.get(sign)
        table.add_row(
            Text(number, style="dim"),
            Text(sign, style=f"bold {colour}" if colour else "dim"),
            Text(text.expandtabs(4)),
            style=tints.get(sign, ""),
        )
    if rest:
        more = Text(f"… {rest} more line{'s' if rest != 1 else ''}", style="dim")
        if hint:
            more.append(f" ({hint})", style="dim")
        table.add_row("", "", more)
    return table


def _tints() -> dict[str, str]:
    """The backgrounds of removed and added lines for the running app's theme (none with
    ``NO_COLOR``: the signs and the colours of the signs say it)."""
    if os.environ.get("NO_COLOR"):
        return {}
    from textual._context import active_app

    try:
        dark = active_app.get().current_theme.dark
    except LookupError:
        dark = True
    if dark:
        return {"-": "on #3d1a1d", "+": "on #17361f"}
    return {"-": "on #fbe3e4", "+": "on #dff3e2"}

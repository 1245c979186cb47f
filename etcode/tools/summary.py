"""Helpers shared by the tools' display summaries and results: sizes, counts, diffs."""

from __future__ import annotations

import difflib

from etcode.util.fs import format_size
from etcode.util.redact import redact

__all__ = ["format_size", "plural", "count_lines", "unified_diff", "diff_stats", "shorten"]


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 file`` / ``3 files``."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def count_lines(text: str) -> int:
    """Lines in ``text`` as an editor counts them (a trailing newline ends the last line)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def unified_diff(path: str, old: str, new: str, context: int = 3) -> str:
    """A unified diff of ``old`` → ``new`` with ``a/path`` / ``b/path`` headers."""
    old_lines = old.replace("\r\n", "\n").splitlines(keepends=True)
    new_lines = new.replace("\r\n", "\n").splitlines(keepends=True)
    out: list[str] = []
    for line in difflib.unified_diff(old_lines, new_lines, f"a/{path}", f"b/{path}", n=context):
        out.append(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n")
    return "".join(out)


def diff_stats(diff: str) -> tuple[int, int]:
    """(added, removed) line counts of a unified diff."""
    added = removed = 0
    for line in diff.splitlines():
        if line.startswith("+") and not line.startswith("+++"):
            added += 1
        elif line.startswith("-") and not line.startswith("---"):
            removed += 1
    return added, removed


def shorten(text: str, width: int = 80) -> str:
    """First line of ``text``, cut to ``width`` characters with an ellipsis. Secrets are
    redacted first: a key cut in half is no longer recognised, and its start would show."""
    stripped = redact(text).strip()
    first = stripped.splitlines()[0] if stripped else ""
    if len(first) > width or (stripped and "\n" in stripped):
        return first[: width - 1].rstrip() + "…"
    return first

"""Helpers of the tools' one-line summaries: plurals, line counts, a first line cut short."""

from __future__ import annotations

from etcode.security.redact import redact

__all__ = ["count_lines", "plural", "shorten"]


def plural(count: int, word: str, many: str | None = None) -> str:
    """``1 file`` / ``3 files``."""
    return f"{count} {word if count == 1 else (many or word + 's')}"


def count_lines(text: str) -> int:
    """Lines in ``text`` as an editor counts them (a trailing newline ends the last line)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def shorten(text: str, width: int = 80) -> str:
    """First line of ``text``, cut to ``width`` characters with an ellipsis. Secrets are
    redacted first: a key cut in half is no longer recognised, and its start would show."""
    stripped = redact(text).strip()
    first = stripped.splitlines()[0] if stripped else ""
    if len(first) > width or (stripped and "\n" in stripped):
        return first[: width - 1].rstrip() + "…"
    return first

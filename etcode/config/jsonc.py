"""JSON with comments: ``//`` and ``/* */`` comments and trailing commas.

Comments and trailing commas are replaced by spaces (newlines kept), so the error
positions ``json`` reports are the real line and column in the original text.
"""

from __future__ import annotations

import json
import re
import sys

from etcode.util.errors import ConfigError
from etcode.util.json_types import JsonValue

#: Deeper nesting is refused with a positioned error (the loader and the schema recurse).
MAX_DEPTH = 128


class _ScanError(Exception):
    def __init__(self, pos: int, reason: str) -> None:
        super().__init__(reason)
        self.pos = pos
        self.reason = reason


def _blank(out: list[str], start: int, end: int) -> None:
    for k in range(start, end):
        if out[k] not in "\r\n":
            out[k] = " "


def _line_end(text: str, start: int) -> int:
    ends = [pos for pos in (text.find("\n", start), text.find("\r", start)) if pos != -1]
    return min(ends) if ends else len(text)


def strip_jsonc(text: str) -> str:
    """Plain JSON text of the same length: comments and trailing commas become spaces."""
    out = list(text)
    if text.startswith("\ufeff"):
        out[0] = " "
    n = len(text)
    i = 0
    in_string = False
    prev = ""  # previous significant character outside strings and comments
    trailing: int | None = None  # a comma that is trailing if a } or ] comes next
    depth = 0
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                i += 2
                continue
            if c == '"':
                in_string = False
            i += 1
            continue
        if c == "/" and text.startswith("//", i):
            end = _line_end(text, i)
            _blank(out, i, end)
            i = end
            continue
        if c == "/" and text.startswith("/*", i):
            close = text.find("*/", i + 2)
            if close == -1:
                raise _ScanError(i, "unterminated /* comment")
            _blank(out, i, close + 2)
            i = close + 2
            continue
        if c.isspace() or c == "\ufeff":
            i += 1
            continue
        if c in "}]":
            depth -= 1
            if trailing is not None:
                out[trailing] = " "
        elif c in "{[":
            depth += 1
            if depth > MAX_DEPTH:
                raise _ScanError(i, f"nested more than {MAX_DEPTH} levels deep")
        trailing = i if c == "," and prev not in ("", "[", "{", ",", ":") else None
        in_string = c == '"'
        prev = c
        i += 1
    return "".join(out)


def _position(text: str, pos: int) -> tuple[int, int]:
    line = text.count("\n", 0, pos) + 1
    return line, pos - text.rfind("\n", 0, pos)


_STRING_OR_BRACKET = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _deepest(cleaned: str) -> int:
    """Offset of the bracket that first reaches the greatest nesting depth."""
    depth = best = where = 0
    for match in _STRING_OR_BRACKET.finditer(cleaned):
        token = match.group()
        if token in "[{":
            depth += 1
            if depth > best:
                best, where = depth, match.start()
        elif token in "]}":
            depth -= 1
    return where


def _long_number(cleaned: str) -> int:
    """Offset of the first integer too long for ``int()`` (outside strings), else 0."""
    limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
    pattern = re.compile(r'"(?:[^"\\]|\\.)*"|(\d{' + str(limit + 1) + ",})")
    return next((m.start(1) for m in pattern.finditer(cleaned) if m.group(1)), 0)


def parse_jsonc(text: str, source: str) -> JsonValue:
    """Parse JSONC text; an empty (or comment-only) document is ``{}``.

    Raises ``ConfigError("<source>:<line>:<col>: invalid JSON: <reason>")``.
    """
    try:
        cleaned = strip_jsonc(text)
    except _ScanError as err:
        line, col = _position(text, err.pos)
        raise ConfigError(f"{source}:{line}:{col}: invalid JSON: {err.reason}") from None
    if not cleaned.strip():
        return {}
    try:
        return json.loads(cleaned)
    except json.JSONDecodeError as err:
        raise ConfigError(f"{source}:{err.lineno}:{err.colno}: invalid JSON: {err.msg}") from None
    except RecursionError:
        line, col = _position(text, _deepest(cleaned))
        raise ConfigError(f"{source}:{line}:{col}: invalid JSON: nested too deeply") from None
    except ValueError as err:  # an integer beyond Python's int-digits limit
        line, col = _position(text, _long_number(cleaned))
        reason = str(err).split(":")[0] or "invalid number"
        raise ConfigError(f"{source}:{line}:{col}: invalid JSON: {reason}") from None

"""The one wildcard engine for names and command lines: permission rules (``"git *"``,
``"mcp_*"``), agents' tool switches, secret file names, environment variable names.
``*`` matches any text (``/`` included), ``?`` one character. Paths are matched by
globs instead (``etcode.util.ignore.glob_match``: ``*`` stays in one folder)."""

from __future__ import annotations

import re
from functools import lru_cache


def regex_source(pattern: str) -> str:
    """The regex (without anchors) of a wildcard pattern, for joining many into one."""
    out = []
    for char in pattern:
        if char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        else:
            out.append(re.escape(char))
    regex = "".join(out)
    # "git *" also matches plain "git" (a command without arguments).
    if pattern.endswith(" *"):
        regex = regex[: -len(re.escape(" ") + ".*")] + r"(?: .*)?"
    return regex


@lru_cache(maxsize=1024)
def _compile(pattern: str, ignore_case: bool) -> re.Pattern[str]:
    return re.compile(regex_source(pattern) + r"\Z", re.DOTALL | (re.IGNORECASE if ignore_case else 0))


def wildcard_match(text: str, pattern: str, ignore_case: bool = False) -> bool:
    """``*`` matches any text (``/`` included), ``?`` one character; a trailing ``" *"``
    also matches the text without it (``"git *"`` matches ``"git"``)."""
    return _compile(pattern, ignore_case).match(text) is not None

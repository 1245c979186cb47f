"""``etcode doctor``: one line per check (``✓``/``!``/``✗``) with its fix; exit code 1 when
any check failed. The checks live in ``etcode/doctor/``; this module only renders them."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from etcode.doctor import Check

SYMBOLS = {"ok": "✓", "warn": "!", "fail": "✗", "skip": "-"}
ASCII_SYMBOLS = {"ok": "+", "warn": "!", "fail": "x", "skip": "-"}
COLOURS = {"ok": "\x1b[32m", "warn": "\x1b[33m", "fail": "\x1b[31m", "skip": "\x1b[2m"}
RESET = "\x1b[0m"


def doctor_command(model: str | None, as_json: bool, offline: bool) -> int:
    """Run the checks for the current directory and print them; the exit code."""
    import asyncio
    from pathlib import Path

    from etcode.doctor import run_checks
    from etcode.instance import Instance

    with Instance.provide(Path.cwd()) as info:
        checks = asyncio.run(
            run_checks(info.directory, info.worktree, model=model, offline=offline, stream=sys.stdout)
        )
    if as_json:
        _print_json(checks)
    else:
        sys.stdout.write("".join(f"{line}\n" for line in render(checks, sys.stdout)))
        sys.stdout.flush()
    return 1 if any(check.status == "fail" for check in checks) else 0


def render(checks: Sequence[Check], stream: TextIO) -> list[str]:
    """``✓ config     /p/etcode.json (project, ...)``: the fix after `` — ``; keys redacted."""
    from etcode.security.redact import redact

    symbols = SYMBOLS if _can_encode(stream, "✓✗") else ASCII_SYMBOLS
    colour = _wants_colour(stream)
    width = max((len(c.name) for c in checks), default=0)
    lines = []
    for check in checks:
        mark = symbols[check.status]
        if colour:
            mark = f"{COLOURS[check.status]}{mark}{RESET}"
        text = f"{mark} {check.name.ljust(width)}  {check.detail}"
        if check.fix:
            text += f" — {check.fix}"
        lines.append(redact(text))
    failed = sum(c.status == "fail" for c in checks)
    warned = sum(c.status == "warn" for c in checks)
    lines.append(f"{failed} failed, {warned} warning{'s' if warned != 1 else ''}")
    return lines


def _print_json(checks: Sequence[Check]) -> None:
    import json

    from etcode.security.redact import redact_data

    data = {"ok": not any(c.status == "fail" for c in checks), "checks": [c.to_dict() for c in checks]}
    sys.stdout.write(json.dumps(redact_data(data), ensure_ascii=False) + "\n")


def _can_encode(stream: TextIO, text: str) -> bool:
    try:
        text.encode(getattr(stream, "encoding", None) or "ascii")
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def _wants_colour(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False

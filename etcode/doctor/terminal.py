"""The terminal the chat would run in: a TTY, ``TERM``, colours, size, and inside tmux its
``extended-keys`` (without it Shift+Enter arrives as a plain Enter). Only warnings: the
chat still works, with less."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import TextIO

from etcode.doctor.check import Check, ok, warn

MIN_COLUMNS = 60
MIN_LINES = 15
TMUX_TIMEOUT = 5.0
TMUX_FIX = (
    "add `set -s extended-keys on` and `set -as terminal-features 'xterm*:extkeys'` to "
    "~/.tmux.conf, then `tmux source-file ~/.tmux.conf` (Ctrl+J adds a line meanwhile)"
)


def check_terminal(stream: TextIO, env: Mapping[str, str]) -> list[Check]:
    checks = [_terminal(stream, env)]
    if env.get("TMUX"):
        checks.append(_tmux(env))
    return checks


def _terminal(stream: TextIO, env: Mapping[str, str]) -> Check:
    term = env.get("TERM", "")
    colours = _colours(env)
    try:
        tty = stream.isatty()
    except (AttributeError, ValueError):
        tty = False
    if not tty:
        return warn(
            "terminal",
            f"stdout is not a terminal (TERM={term or 'unset'}, {colours}): `etcode` here acts as `etcode run`",
            "run `etcode doctor` in the terminal you chat in to check it",
        )
    if not term or term == "dumb":
        return warn(
            "terminal",
            f"TERM={term or 'unset'}: the chat needs a full-screen terminal",
            "export TERM=xterm-256color (or your terminal's own name)",
        )
    try:
        size = os.get_terminal_size(stream.fileno())
    except (OSError, ValueError, AttributeError):
        size = None
    detail = f"TERM={term}, {colours}" + (f", {size.columns}x{size.lines}" if size else "")
    if size is not None and (size.columns < MIN_COLUMNS or size.lines < MIN_LINES):
        return warn(
            "terminal",
            f"{detail}: smaller than {MIN_COLUMNS}x{MIN_LINES}, the chat's panels will be cramped",
            "enlarge the window",
        )
    return ok("terminal", detail)


def _colours(env: Mapping[str, str]) -> str:
    if env.get("NO_COLOR"):
        return "no colours (NO_COLOR is set)"
    if env.get("COLORTERM", "").lower() in ("truecolor", "24bit"):
        return "24-bit colour"
    if "256color" in env.get("TERM", ""):
        return "256 colours"
    return "basic colours"


def _tmux(env: Mapping[str, str]) -> Check:
    """``tmux show-options -sv extended-keys`` of the server ``$TMUX`` names."""
    tmux = shutil.which("tmux", path=env.get("PATH"))
    if tmux is None:
        return warn("tmux", "TMUX is set but tmux is not on PATH: extended-keys not checked")
    try:
        proc = subprocess.run(
            [tmux, "show-options", "-sv", "extended-keys"],
            capture_output=True,
            text=True,
            timeout=TMUX_TIMEOUT,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as err:
        return warn("tmux", f"could not ask tmux for extended-keys: {err}")
    value = proc.stdout.strip()
    if proc.returncode != 0:
        reason = (proc.stderr.strip().splitlines() or ["no answer"])[-1]
        return warn("tmux", f"extended-keys unknown ({reason}; tmux 3.2 and later have it)", TMUX_FIX)
    if value in ("on", "always"):
        return ok("tmux", f"extended-keys {value}: Shift+Enter reaches the chat")
    return warn("tmux", f"extended-keys {value or 'off'}: Shift+Enter arrives as Enter", TMUX_FIX)

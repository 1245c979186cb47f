"""Process hardening for the front ends that run a model (as Codex's process hardening does).

On Linux :func:`harden_process` makes this process non-dumpable (``prctl(PR_SET_DUMPABLE,
0)``): its ``/proc/PID/environ``, ``mem``, ``fd`` and the like then belong to root, and other
processes of the same user — the model's Bash commands and the MCP servers etcode starts
included — can neither read them nor attach a debugger (``ptrace``), so the API keys in
etcode's environment and memory stay out of their reach (``cat /proc/$PPID/environ``). No core
file is written for it either. Programs etcode starts are dumpable again (``execve`` resets
the flag), and root (``CAP_SYS_PTRACE``) is not kept out. Elsewhere it does nothing.

``ETCODE_DUMPABLE=1`` leaves the process as it is (to attach ``py-spy`` or ``gdb`` without
root).
"""

from __future__ import annotations

import os
import sys

_PR_SET_DUMPABLE = 4
_PR_GET_DUMPABLE = 3
#: The environment variable that keeps the process dumpable.
OPT_OUT = "ETCODE_DUMPABLE"
_applied = False


def harden_process() -> bool:
    """Make this process non-dumpable (Linux); True when it is. Cheap and idempotent: the
    commands call it first, the ``Agent`` before it builds its runtime."""
    global _applied
    if not _applied and os.environ.get(OPT_OUT, "").lower() not in ("1", "true", "yes"):
        _applied = _prctl(_PR_SET_DUMPABLE) == 0
    return _applied


def is_dumpable() -> bool | None:
    """Whether other processes of this user may read this one (None: not known here)."""
    value = _prctl(_PR_GET_DUMPABLE)
    return None if value is None or value < 0 else value == 1


def _prctl(option: int) -> int | None:
    """``prctl(option, 0, 0, 0, 0)``; None where there is no ``prctl`` (not Linux)."""
    if not sys.platform.startswith("linux"):
        return None
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.restype = ctypes.c_int
    zero = ctypes.c_ulong(0)
    return int(prctl(ctypes.c_int(option), zero, zero, zero, zero))

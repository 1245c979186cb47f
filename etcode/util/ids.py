"""Sortable unique ids (time first, then randomness), e.g. ``ses_0194f3a2b1c4d5e6f7a8``."""

from __future__ import annotations

import secrets
import time


def new_id(prefix: str) -> str:
    """``prefix_`` + 12 hex digits of milliseconds + 8 random hex digits: sorts by creation."""
    return f"{prefix}_{time.time_ns() // 1_000_000:012x}{secrets.token_hex(4)}"

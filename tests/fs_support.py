"""File-system fixtures shared by the fault tests."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.require import missing


@contextmanager
def small_tmpfs(mount_point: Path, size: str = "64k") -> Iterator[Path]:
    """A tiny tmpfs at ``mount_point`` (created): a real ENOSPC. Skips the test where
    mounting is not allowed (it needs root)."""
    mount_point.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount_point)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        missing("tmpfs", f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)

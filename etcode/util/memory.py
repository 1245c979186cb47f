"""Process memory policy for the agent commands (``etcode run`` and the chat).

glibc's malloc hands freed heap back to the kernel as soon as more than 128 KB is free at
the top, so every large tool result (ReadManyFiles over a tree keeps every file's text)
page-faults its memory in afresh: about 5,000 faults, 10-20 ms, per 20 MB on a VM.
Keeping up to :data:`KEEP_FREED_BYTES` of freed heap lets the next result reuse it.
Only the commands call :func:`keep_freed_memory`; the library leaves the allocator alone.
"""

from __future__ import annotations

import os
import sys

#: Freed heap glibc may keep for reuse instead of returning it to the kernel.
KEEP_FREED_BYTES = 64 * 1024 * 1024
#: Allocations up to this size come from the (reusable) heap instead of fresh mmaps.
HEAP_ALLOCATION_LIMIT = 4 * 1024 * 1024
_M_TRIM_THRESHOLD = -1
_M_MMAP_THRESHOLD = -3
_applied = False


def keep_freed_memory() -> bool:
    """Tune glibc malloc (Linux only) to keep freed memory for reuse; True when applied.
    A user's own ``MALLOC_TRIM_THRESHOLD_`` / ``MALLOC_MMAP_THRESHOLD_`` wins."""
    global _applied
    if _applied:
        return True
    if not sys.platform.startswith("linux"):
        return False
    if "MALLOC_TRIM_THRESHOLD_" in os.environ or "MALLOC_MMAP_THRESHOLD_" in os.environ:
        return False
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # musl and others: no mallopt
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    _applied = bool(mallopt(_M_TRIM_THRESHOLD, KEEP_FREED_BYTES)) and bool(
        mallopt(_M_MMAP_THRESHOLD, HEAP_ALLOCATION_LIMIT)
    )
    return _applied

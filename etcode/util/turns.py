"""``Turn``: held by one task at a time, across threads and event loops.

An ``asyncio.Lock`` belongs to one loop, but the sync forms of the Python API run each call on
an event loop of its own thread. A ``Turn`` is a thread lock waited for without blocking the
loop: one permission question at a time to an asker its agent's conversations share, one send
at a time in a conversation.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

#: How often a task waiting for the turn looks whether the one before it is done.
TURN_POLL = 0.02


class Turn:
    """Held while one task does its part: the others wait for it, on any thread or loop."""

    def __init__(self) -> None:
        self._lock = threading.Lock()

    @contextlib.asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        while not self._lock.acquire(blocking=False):
            await asyncio.sleep(TURN_POLL)
        try:
            yield
        finally:
            self._lock.release()

"""``QuestionTurn``: one permission question at a time to one asker, across event loops.

The conversations of an ``Agent`` share its asker but each has a runtime (and a
``PermissionService``) of its own, and the sync forms run each send on an event loop of its
own thread; an ``asyncio.Lock`` belongs to one loop, so the turn is a thread lock waited for
without blocking the loop.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import AsyncIterator

#: How often a question waiting for its turn looks whether the one before it is answered.
TURN_POLL = 0.02


class QuestionTurn:
    """Held while a question is asked: the others wait for it, on any thread or loop."""

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

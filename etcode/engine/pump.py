"""The producer/consumer shape shared by every run (the ReAct loop, the workflow).

A run's ``_produce()`` coroutine does the work and ``emit``s events onto a queue; the
front end iterates ``events()``. Leaving the iteration early interrupts the producer and
waits for it (up to 5 s) so a run never keeps working unobserved.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from etcode.contract import events as ev


class _End:
    """Put on the queue as the last item: ``events()`` ends there."""


_END = _End()


class EventPump:
    def __init__(self) -> None:
        self._queue: asyncio.Queue[ev.Event | _End] = asyncio.Queue()

    def emit(self, event: ev.Event) -> None:
        self._queue.put_nowait(event)

    def _finish(self) -> None:
        """Called by ``_produce`` as its last act: ends ``events()``."""
        self._queue.put_nowait(_END)

    def interrupt(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def _produce(self) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    async def events(self) -> AsyncIterator[ev.Event]:
        producer = asyncio.create_task(self._produce())
        # however the producer ends (even by a bug before its last act), the stream ends:
        # a consumer never waits for events that will not come
        producer.add_done_callback(lambda _task: self._queue.put_nowait(_END))
        try:
            while True:
                item = await self._queue.get()
                if isinstance(item, _End):
                    break
                yield item
            await producer  # re-raises a bug in the run itself
        finally:
            if not producer.done():
                self.interrupt()
                try:
                    await asyncio.wait_for(asyncio.shield(producer), timeout=5)
                except (TimeoutError, asyncio.CancelledError):
                    producer.cancel()

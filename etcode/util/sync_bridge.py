"""Async work driven from synchronous code: on this thread when no event loop runs here,
else on a worker thread with its own loop (a notebook, a sync callback inside an async app)."""

from __future__ import annotations

import asyncio
import contextlib
import queue
import threading
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass
from typing import TypeVar, cast

T = TypeVar("T")

#: How long a stopped stream's worker may take to wind down before it is left behind.
STOP_GRACE = 30.0


def loop_running() -> bool:
    """Whether an asyncio event loop is running in this thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def run_blocking(make: Callable[[], Coroutine[object, None, T]]) -> T:
    """Run the coroutine ``make()`` to the end and return its value."""
    if not loop_running():
        return asyncio.run(make())
    outcome: list[T] = []
    failure: list[BaseException] = []

    def work() -> None:
        try:
            outcome.append(asyncio.run(make()))
        except BaseException as error:  # handed to the caller's thread
            failure.append(error)

    thread = threading.Thread(target=work, name="etcode-sync", daemon=True)
    thread.start()
    thread.join()
    if failure:
        raise failure[0]
    return outcome[0]


@dataclass
class _Failed:
    error: BaseException


_DONE = object()


def iterate_blocking(make: Callable[[], AsyncIterator[T]], stop: Callable[[], None]) -> Iterator[T]:
    """The items of the async iterator ``make()`` as they come, from a worker thread.

    When the caller stops early (``break``, an exception, Ctrl+C), ``stop`` is called on the
    worker's loop and the worker is given :data:`STOP_GRACE` seconds to finish.
    """
    items: queue.Queue[object] = queue.Queue()
    started = threading.Event()
    loops: list[asyncio.AbstractEventLoop] = []

    async def pump() -> None:
        loops.append(asyncio.get_running_loop())
        started.set()
        async for item in make():
            items.put(item)

    def work() -> None:
        try:
            asyncio.run(pump())
        except BaseException as error:  # handed to the caller's thread
            items.put(_Failed(error))
        finally:
            started.set()
            items.put(_DONE)

    thread = threading.Thread(target=work, name="etcode-stream", daemon=True)
    thread.start()
    finished = False
    try:
        while True:
            item = items.get()
            if item is _DONE:
                finished = True
                return
            if isinstance(item, _Failed):
                finished = True
                raise item.error
            yield cast(T, item)
    finally:
        if not finished:
            started.wait()
            if loops:
                with contextlib.suppress(RuntimeError):  # the loop may have closed meanwhile
                    loops[0].call_soon_threadsafe(stop)
        thread.join(STOP_GRACE)

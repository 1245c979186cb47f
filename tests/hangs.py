"""A hung asyncio test says where it waits.

pytest-timeout's signal method fails a test with the main thread's traceback; for an async
test that is the event loop's ``select``, which says nothing. Before failing it, this prints
the stack of every task of the running loop (it lands in the test's captured stderr).
``tests/conftest.py`` imports the hook; ``python -m pytest -p tests.hangs`` loads it alone.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Iterator
from types import FrameType
from typing import Any

import pytest


def print_tasks() -> None:
    """The stacks of the running loop's tasks (none when no loop runs in this thread)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return
    for task in asyncio.all_tasks(loop):
        task.print_stack(file=sys.stderr)


@pytest.hookimpl(hookwrapper=True, optionalhook=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> Iterator[None]:
    yield
    timed_out = signal.getsignal(signal.SIGALRM)
    if settings.method != "signal" or not callable(timed_out):
        return

    def on_timeout(signum: int, frame: FrameType | None) -> None:
        __tracebackhide__ = True
        print_tasks()
        timed_out(signum, frame)

    signal.signal(signal.SIGALRM, on_timeout)

"""``asyncio.run`` for the commands, except that a thread stuck in a system call (a read of
a hung network mount, a resolver that never answers) cannot keep etcode alive after the run
has ended: ``asyncio.run`` would wait for it for ever, and so would the interpreter's exit.

The run's own threads (``asyncio.to_thread``) come from a pool this module owns. When the
coroutine has finished, the pool is given :data:`EXIT_WAIT_SECONDS` to empty; if a thread is
still busy then, the output is flushed and the process ends at once with the run's exit code.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
import threading
import time
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor

#: How long finished runs wait for their worker threads before leaving without them.
EXIT_WAIT_SECONDS = 5.0
WORKER_PREFIX = "etcode-worker"


def run_to_end(main: Coroutine[object, None, int], exit_wait: float = EXIT_WAIT_SECONDS) -> int:
    """Run ``main`` (which returns an exit code) on a fresh event loop and return its code."""
    loop = asyncio.new_event_loop()
    executor = ThreadPoolExecutor(thread_name_prefix=WORKER_PREFIX)
    loop.set_default_executor(executor)
    asyncio.set_event_loop(loop)
    code = 1
    try:
        code = loop.run_until_complete(main)
        return code
    finally:
        try:
            _cancel_remaining(loop)
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            asyncio.set_event_loop(None)
            loop.close()
            if not _drained(executor, exit_wait):
                _leave_now(code if sys.exc_info()[0] is None else 1)


def _cancel_remaining(loop: asyncio.AbstractEventLoop) -> None:
    pending = asyncio.all_tasks(loop)
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def _workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith(WORKER_PREFIX) and t.is_alive()]


def _drained(executor: ThreadPoolExecutor, wait: float) -> bool:
    """Shut the pool down; True when every worker thread ended within ``wait`` seconds."""
    executor.shutdown(wait=False, cancel_futures=True)
    deadline = time.monotonic() + wait
    for thread in _workers():
        thread.join(max(0.0, deadline - time.monotonic()))
    return not _workers()


def _leave_now(code: int) -> None:
    stuck = len(_workers())
    with contextlib.suppress(Exception):
        sys.stderr.write(f"etcode: {stuck} worker thread(s) still stuck at exit; leaving without them\n")
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    from etcode.util.process_group import kill_all_now

    with contextlib.suppress(Exception):
        kill_all_now()  # os._exit skips the atexit hook that would
    os._exit(code)

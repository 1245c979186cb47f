"""Agents left open close with their event loop.

A program may never close its ``Agent`` or its conversations (the agent-loop design's
examples do not). Their background processes and subprocess pipes would then outlive the
loop, and the interpreter's exit would print asyncio's "Event loop is closed" tracebacks.
``asyncio.run`` (and etcode's own runner) end by closing the loop's async generators while
the loop still runs: each loop an agent prepared on gets one, whose ``finally`` closes the
agents still open there.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from collections.abc import AsyncIterator
from typing import Protocol

from etcode.util.sync_bridge import STOP_GRACE


class LeftOpen(Protocol):
    """What is closed at the loop's end (``etcode.Agent``)."""

    async def close_left_open(self) -> None: ...


class _LoopEnd:
    """The agents of one loop, closed when the loop closes its async generators."""

    def __init__(self) -> None:
        self.agents: weakref.WeakSet[LeftOpen] = weakref.WeakSet()
        self.waiting = self._wait()

    async def _wait(self) -> AsyncIterator[None]:
        try:
            yield
        finally:
            with contextlib.suppress(RuntimeError):
                _ends.pop(asyncio.get_running_loop(), None)
            for agent in list(self.agents):  # each in bounded time: the program is exiting
                with contextlib.suppress(Exception, asyncio.CancelledError):
                    async with asyncio.timeout(STOP_GRACE):
                        await agent.close_left_open()


#: The loops with agents to close (an entry leaves as its loop closes its async generators,
#: or with the loop itself when a loop of the program's own never does: nothing holds it).
_ends: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopEnd] = weakref.WeakKeyDictionary()


async def close_at_loop_end(agent: LeftOpen) -> None:
    """Close ``agent`` when the running loop shuts its async generators down, unless it
    was closed by then (``close_left_open`` does nothing for a closed agent)."""
    loop = asyncio.get_running_loop()
    end = _ends.get(loop)
    if end is None:
        end = _ends[loop] = _LoopEnd()
        await anext(end.waiting)  # started: the loop knows it from now on
    end.agents.add(agent)

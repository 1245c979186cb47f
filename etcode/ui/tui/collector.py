"""Keep Python's full garbage collections short while the chat streams.

A streaming answer churns through Textual widgets, styles and render caches, most of them
in reference cycles, so CPython runs a full (generation 2) collection every half second
or so. A full collection walks every tracked object: imports, the conversation, all of
it, holding the GIL for 50-200 ms, and a key pressed meanwhile waits that long.

The policy: everything that exists when a turn starts (start-up state, the conversation
so far) is moved out of the collector's walk with :func:`gc.freeze`, after a collection;
after each automatic full collection during the turn, the survivors are frozen too. A
full collection then walks only what was made since the last one (10-30 ms). Frozen
objects that die later (pruned widgets, replaced blocks) are not reclaimed until the
frozen set has grown by half since the last real sweep: then, at the start of a turn
(while the request is in flight), everything is unfrozen and collected once.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc

#: A full sweep of the frozen set once it has grown this much since the last sweep.
RECLAIM_GROWTH = 1.5


class CollectorPolicy:
    """``start()`` on mount, ``turn_started()`` as each turn begins, ``stop()`` on unmount."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._swept_size = 0
        self.sweeps = 0  # full reclaims done (for tests and benchmarks)

    def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        gc.callbacks.append(self._after_collection)

    def stop(self) -> None:
        with contextlib.suppress(ValueError):
            gc.callbacks.remove(self._after_collection)
        self._loop = None
        gc.unfreeze()  # the process goes on without us: let the collector see everything

    def turn_started(self) -> None:
        """Fold what the last turn left into the frozen set (a collection of what is not
        frozen: short), or sweep everything when the frozen set has grown a lot."""
        frozen = gc.get_freeze_count()
        if frozen > max(self._swept_size, 1) * RECLAIM_GROWTH:
            gc.unfreeze()
            gc.collect()
            self.sweeps += 1
            gc.freeze()
            self._swept_size = gc.get_freeze_count()
        else:
            gc.collect()
            gc.freeze()
            if not self._swept_size:
                self._swept_size = gc.get_freeze_count()

    def _after_collection(self, phase: str, info: dict[str, int]) -> None:
        """After an automatic full collection: freeze its survivors (soon, on the loop)."""
        if phase != "stop" or info.get("generation") != 2 or self._loop is None:
            return
        with contextlib.suppress(RuntimeError):  # the loop has closed
            self._loop.call_soon_threadsafe(gc.freeze)

"""Flag a model that repeats the same tool call: three identical consecutive calls that got
the same answer (a call whose answer changes, like ``BashOutput`` polling a process that
prints, is no loop)."""

from __future__ import annotations

import json

from etcode.util.json_types import JsonValue

LOOP_THRESHOLD = 3


def _key(name: str, args: JsonValue, result: str | None) -> tuple[int, int, int | None]:
    """A fingerprint of the call and its answer (their text is not kept: a WriteFile may
    carry 200 MB)."""
    try:
        text = name + "\x00" + json.dumps(args, sort_keys=True, ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        text = name + "\x00" + repr(args)
    return len(text), hash(text), None if result is None else hash(result)


class LoopDetector:
    """Per session: :meth:`record` each call in order; on the ``threshold``-th identical
    consecutive call (and every one after) it returns a warning to append to that result."""

    def __init__(self, threshold: int = LOOP_THRESHOLD) -> None:
        self.threshold = threshold
        self._last: tuple[int, int, int | None] | None = None
        self._count = 0

    def record(self, name: str, args: JsonValue, result: str | None = None) -> str | None:
        """Note a call (with its answer, when known); the warning text when it repeats the
        previous ones, else None."""
        key = _key(name, args, result)
        if key == self._last:
            self._count += 1
        else:
            self._last, self._count = key, 1
        if self._count < self.threshold:
            return None
        return (
            f"<system-reminder>You have called {name} with identical arguments {self._count} times in a "
            "row and got the same result. You appear to be stuck in a loop: do not repeat this call. "
            "Try a different approach, use the information you already have, or explain the "
            "blocker to the user.</system-reminder>"
        )

    def reset(self) -> None:
        self._last, self._count = None, 0

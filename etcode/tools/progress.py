"""Live output of a running tool as :class:`~etcode.contract.events.ToolProgress` events.

A command may print megabytes a second; front ends want a few lines now and then. So the
output is decoded, cleaned (ANSI escapes and control characters removed, progress-bar
redraws collapsed) and sent at most once per ``interval`` per call, each event carrying
everything printed since the previous one (its tail when that is long).
"""

from __future__ import annotations

import asyncio
import codecs
import re
import time
from collections.abc import Callable

from etcode.contract.events import Event, ToolProgress

INTERVAL = 0.1  # seconds: at most ~10 events a second per call
MAX_CHARS = 4000  # characters of output one event carries (the tail)

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
_REDRAWN = re.compile(r"[^\n]*\r(?=[^\n])")  # "a\rb\rc" -> "\rc": only the last redraw counts


def clean_output(text: str) -> str:
    """Output as a front end can show it: no escapes, ``\\n`` line ends, redraws collapsed."""
    text = _ANSI.sub("", text).replace("\r\n", "\n")
    return _REDRAWN.sub("\r", _CONTROL.sub("", text))


class OutputProgress:
    """Feed it a call's output bytes (:meth:`feed`); it emits :class:`ToolProgress` events,
    rate-limited and coalesced. :meth:`close` sends what is left. Needs a running loop
    (a trailing flush is scheduled with ``call_later``)."""

    def __init__(
        self,
        emit: Callable[[Event], None],
        call_id: str,
        name: str,
        *,
        interval: float = INTERVAL,
        max_chars: int = MAX_CHARS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._emit = emit
        self.call_id = call_id
        self.name = name
        self.interval = interval
        self.max_chars = max_chars
        self._clock = clock
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._started = clock()
        self._last = float("-inf")
        self._pending = ""
        self._skipped = 0
        self._handle: asyncio.TimerHandle | None = None
        self.sent = 0  # events emitted

    def feed(self, data: bytes) -> None:
        """Output the command just printed."""
        self._add(self._decoder.decode(data))

    def close(self) -> None:
        """The command ended: send what is still pending."""
        self._add(self._decoder.decode(b"", final=True), final=True)
        self.flush(final=True)

    def _add(self, text: str, final: bool = False) -> None:
        if text:
            self._pending += text
            excess = len(self._pending) - 2 * self.max_chars
            if excess > 0:  # a flood: keep only the tail in memory
                self._pending = self._pending[excess:]
                self._skipped += excess
        if final or not self._pending:
            return
        now = self._clock()
        if now - self._last >= self.interval:
            self.flush()
        elif self._handle is None:
            loop = asyncio.get_running_loop()
            self._handle = loop.call_later(self._last + self.interval - now, self.flush)

    def flush(self, final: bool = False) -> None:
        """Emit what is pending now (an unfinished escape or ``\\r`` waits for more)."""
        if self._handle is not None:
            self._handle.cancel()
            self._handle = None
        pending, held = self._pending, ""
        if not final:
            pending, held = _hold_back(pending)
        text = clean_output(pending)
        self._pending = held
        if not text:
            return
        if len(text) > self.max_chars:
            self._skipped += len(text) - self.max_chars
            text = text[-self.max_chars :]
        elapsed = round(self._clock() - self._started, 1)
        self._emit(ToolProgress(self.call_id, self.name, text, elapsed, self._skipped))
        self._skipped = 0
        self._last = self._clock()
        self.sent += 1


def _hold_back(text: str) -> tuple[str, str]:
    """Split off an unfinished tail: a ``\\r`` (maybe the start of ``\\r\\n``) or an
    escape sequence cut between two reads."""
    if text.endswith("\r"):
        return text[:-1], "\r"
    start = text.rfind("\x1b", max(0, len(text) - 64))
    if start >= 0 and not _ANSI.match(text, start):
        return text[:start], text[start:]
    return text, ""

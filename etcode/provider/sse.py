"""Incremental Server-Sent Events parser (the WHATWG ``text/event-stream`` rules).

Feed it bytes (or text) as they arrive, split anywhere; it hands back complete events.
Handles ``event:``/``id:``/``retry:`` fields, multi-line ``data:``, ``:`` comments, a
leading BOM and every line ending (LF, CRLF, lone CR — also a CRLF split across chunks).
Pure: no I/O, no httpx.
"""

from __future__ import annotations

from collections.abc import AsyncIterable, AsyncIterator
from dataclasses import dataclass

__all__ = ["SSEDecoder", "SSEEvent", "aiter_sse"]


@dataclass
class SSEEvent:
    """One dispatched event. ``event`` defaults to ``"message"`` as in browsers."""

    data: str
    event: str = "message"
    id: str | None = None
    retry: int | None = None


class SSEDecoder:
    """Turns a byte stream into :class:`SSEEvent` objects, one ``feed`` at a time."""

    def __init__(self) -> None:
        self._buf = b""
        #: Chunks of a long line after ``_buf`` (joined once, when the line ends: a 50 MB
        #: ``data:`` line arriving in 64 KB pieces must not be re-copied per piece).
        self._held: list[bytes] = []
        self._started = False  # BOM check done
        self._skip_lf = False  # the previous chunk ended in CR: a leading LF belongs to it
        self._data: list[str] = []
        self._event = ""
        self._id: str | None = None  # last event id persists across events, per spec
        self._retry: int | None = None

    def feed(self, chunk: bytes | str) -> list[SSEEvent]:
        """Add raw stream bytes; return the events completed by them."""
        if isinstance(chunk, str):
            chunk = chunk.encode("utf-8")
        if not chunk:
            return []
        buf = self._unparsed(chunk)
        if buf is None:
            return []
        events: list[SSEEvent] = []
        for raw in self._complete_lines(buf):
            event = self._line(raw.rstrip(b"\r\n").decode("utf-8", errors="replace"))
            if event is not None:
                events.append(event)
        return events

    def _unparsed(self, chunk: bytes) -> bytes | None:
        """The bytes still to parse, ``chunk`` last; None while the line is still open
        (a long line's pieces are held and joined once it ends) or the BOM check waits."""
        if self._skip_lf:
            self._skip_lf = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if self._started and self._buf and b"\n" not in chunk and b"\r" not in chunk:
            self._held.append(chunk)  # still inside one long line: join once it ends
            return None
        if self._held:
            self._held.append(chunk)
            chunk = b"".join(self._held)
            self._held = []
        buf = self._buf + chunk if self._buf else chunk
        return buf if self._started else self._without_bom(buf)

    def _without_bom(self, buf: bytes) -> bytes | None:
        """The stream's first bytes without a UTF-8 BOM; None while they could still be one."""
        if len(buf) < 3 and b"\xef\xbb\xbf".startswith(buf):
            self._buf = buf
            return None
        self._started = True
        return buf[3:] if buf.startswith(b"\xef\xbb\xbf") else buf

    def _complete_lines(self, buf: bytes) -> list[bytes]:
        """The complete lines of ``buf``; an unfinished last one waits for the next chunk."""
        lines = buf.splitlines(keepends=True)
        if lines and not lines[-1].endswith((b"\n", b"\r")):
            self._buf = lines.pop()
        else:
            self._buf = b""
        if buf.endswith(b"\r"):
            self._skip_lf = True  # a CRLF may be split: drop the LF if it comes next
        return lines

    def flush(self) -> list[SSEEvent]:
        """End of stream. A half-received last line is dropped (it may be cut anywhere);
        complete ``data:`` lines still waiting for their blank line are dispatched, since
        some servers omit the final blank line."""
        self._buf = b""
        self._held = []
        event = self._dispatch()
        return [event] if event is not None else []

    def _line(self, line: str) -> SSEEvent | None:
        if not line:
            return self._dispatch()
        if line[0] == ":":
            return None  # comment / keep-alive
        name, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if name == "data":
            self._data.append(value)
        elif name == "event":
            self._event = value
        elif name == "id":
            if "\0" not in value:
                self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None

    def _dispatch(self) -> SSEEvent | None:
        if not self._data:
            self._event = ""
            return None
        event = SSEEvent("\n".join(self._data), self._event or "message", self._id, self._retry)
        self._data = []
        self._event = ""
        return event


async def aiter_sse(chunks: AsyncIterable[bytes]) -> AsyncIterator[SSEEvent]:
    """Decode an async byte stream (e.g. ``response.aiter_bytes()``) into events."""
    decoder = SSEDecoder()
    async for chunk in chunks:
        for event in decoder.feed(chunk):
            yield event
    for event in decoder.flush():
        yield event

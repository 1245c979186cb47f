"""Newline-delimited JSON-RPC over stdin/stdout, for the ACP SDK's ``Connection``.

The SDK's own stdio framing drops a line that is not JSON without a word, and a line that is
JSON but not an object (``[1]``, ``"x"``) ends its receive loop. Here every such line gets
the JSON-RPC error the spec names (parse error, invalid request) and the connection goes on.
stdout carries protocol messages only: ``etcode acp`` points ``sys.stdout`` at stderr, and
this transport writes to a duplicate of the original descriptor.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import threading

from etcode.acp import legacy_models
from etcode.acp.errors import readable
from etcode.util.json_types import JsonObject, JsonValue

log = logging.getLogger("etcode.acp")

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
#: One message may be this large (prompts with embedded files, images).
MAX_LINE_BYTES = 50 * 1024 * 1024


def error_response(code: int, message: str, request_id: JsonValue = None) -> JsonObject:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


def check_message(message: JsonValue) -> JsonObject | None:
    """The error response a decoded line earns, or None when it is a request,
    notification or response the connection can handle."""
    if not isinstance(message, dict):
        what = "a batch (array)" if isinstance(message, list) else f"a JSON {type(message).__name__}"
        return error_response(INVALID_REQUEST, f"Invalid Request: expected a JSON object, got {what}")
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int, type(None))):
        return error_response(INVALID_REQUEST, "Invalid Request: id must be a string, a number or null")
    if "method" in message:
        if not isinstance(message["method"], str):
            return error_response(INVALID_REQUEST, "Invalid Request: method must be a string", request_id)
        params = message.get("params")
        if params is not None and not isinstance(params, (dict, list)):
            return error_response(INVALID_REQUEST, "Invalid Request: params must be an object", request_id)
        return None
    if "id" in message and ("result" in message or "error" in message):
        return None  # a response to one of our requests
    return error_response(INVALID_REQUEST, "Invalid Request: no method", request_id)


class StdioTransport:
    """The ACP SDK's ``Transport`` (send/receive/close of decoded messages) over a byte
    reader and a byte sink."""

    def __init__(self, reader: asyncio.StreamReader, sink: ByteSink) -> None:
        self._reader = reader
        self._sink = sink
        self._send_lock = asyncio.Lock()
        self._closed = False

    async def send(self, message: JsonObject) -> None:
        message = legacy_models.outgoing(readable(message))  # readable: a message naming what is wrong
        data = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"
        async with self._send_lock:
            if self._closed:
                raise ConnectionError("the connection to the client is closed")
            await self._sink.write(data)

    async def _reply(self, response: JsonObject) -> None:
        try:
            await self.send(response)
        except (ConnectionError, OSError) as err:
            log.debug("could not send an error response: %s", err)

    async def receive(self) -> JsonObject | None:
        """The next message that makes sense; None at the end of input."""
        while True:
            line = await self._read_line()
            if line is None:
                return None
            line = line.strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except (ValueError, UnicodeDecodeError) as err:
                log.warning("acp: a line that is not JSON: %s", err)
                await self._reply(error_response(PARSE_ERROR, f"Parse error: {err}"))
                continue
            problem = check_message(message)
            if problem is None and isinstance(message, dict):
                return legacy_models.incoming(message)  # session/set_model, as older editors send it
            if problem is not None:
                log.warning("acp: %s", problem["error"]["message"])
                await self._reply(problem)

    async def _read_line(self) -> bytes | None:
        """One line (None at EOF). A line over :data:`MAX_LINE_BYTES` is skipped whole and
        answered with a parse error."""
        skipping = False
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as err:
                if skipping or not err.partial:
                    return None
                return err.partial
            except asyncio.LimitOverrunError as err:
                await self._reader.readexactly(err.consumed)
                skipping = True
                continue
            if skipping:
                await self._reply(
                    error_response(PARSE_ERROR, f"Parse error: message over {MAX_LINE_BYTES} bytes")
                )
                skipping = False
                continue
            return line

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._sink.close()


class ByteSink:
    """Where messages go: a pipe written without blocking the loop, or (stdout redirected
    to a file) plain writes, which do not block for long."""

    def __init__(self, fd: int, writer: asyncio.StreamWriter | None) -> None:
        self._fd = fd
        self._writer = writer

    async def write(self, data: bytes) -> None:
        if self._writer is None:
            view = memoryview(data)
            while view:
                view = view[os.write(self._fd, view) :]
            return
        if self._writer.is_closing():
            raise ConnectionError("the client closed its input")
        self._writer.write(data)
        await self._writer.drain()

    def close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(OSError, RuntimeError):
                self._writer.close()


def _feed_from_thread(loop: asyncio.AbstractEventLoop, reader: asyncio.StreamReader, fd: int) -> None:
    """Read a regular file (``etcode acp < requests.jsonl``) or ``/dev/null`` in a thread:
    the loop watches pipes, sockets and terminals only."""

    def pump() -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                chunk = b""
            if not chunk:
                loop.call_soon_threadsafe(reader.feed_eof)
                return
            loop.call_soon_threadsafe(reader.feed_data, chunk)

    threading.Thread(target=pump, name="etcode-acp-stdin", daemon=True).start()


def _watchable(fd: int) -> bool:
    """Whether the loop can watch ``fd`` (a pipe, a socket, a terminal); not a regular file
    or ``/dev/null``, whose reads and writes never wait."""
    mode = os.fstat(fd).st_mode
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or (stat.S_ISCHR(mode) and os.isatty(fd))


async def open_stdio(stdin_fd: int, stdout_fd: int, pending: bytes = b"") -> StdioTransport:
    """A transport reading ``stdin_fd`` (after ``pending``, bytes already read from it) and
    writing ``stdout_fd``."""
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=MAX_LINE_BYTES)
    if pending:
        reader.feed_data(pending)
    if not _watchable(stdin_fd):
        _feed_from_thread(loop, reader, stdin_fd)
    else:
        await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(stdin_fd, "rb", 0, closefd=False)
        )
    writer: asyncio.StreamWriter | None = None
    if _watchable(stdout_fd):
        transport, protocol = await loop.connect_write_pipe(
            asyncio.streams.FlowControlMixin, os.fdopen(stdout_fd, "wb", 0, closefd=False)
        )
        writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return StdioTransport(reader, ByteSink(stdout_fd, writer))

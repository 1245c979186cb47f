"""One MCP server connection, run by the official ``mcp`` SDK.

The SDK is anyio-based and its context managers must be entered and left in the same
task, so each server has an *owner task* that opens the transport and the
``ClientSession``, lists the tools, reports ready, and then waits to be closed. Calls
are made from any task through the session. A start that fails or takes too long is
reported, never raised into the run; the owner is cancelled through an anyio cancel
scope and cleans up (the child process is stopped) in the background.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import logging
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from types import ModuleType
from typing import IO, TYPE_CHECKING, Literal

from etcode.mcp.config import McpServerSpec
from etcode.mcp.results import wire
from etcode.util.json_types import JsonObject
from etcode.util.process_group import group_alive, kill_group, wait_despite_cancels

if TYPE_CHECKING:
    from contextlib import AbstractAsyncContextManager

    import anyio
    from mcp import ClientSession
    from mcp.client._transport import TransportStreams
    from mcp.types import CallToolResult

log = logging.getLogger("etcode.mcp")

Status = Literal["disabled", "starting", "connected", "failed", "closed"]

#: JSON-RPC error code the SDK uses when the connection is gone.
CONNECTION_CLOSED = -32000

#: How long closing waits for a server's owner task before giving up on it.
CLOSE_TIMEOUT = 5.0


class McpCallError(Exception):
    """A call could not be made or got no answer (the message is for the model)."""


def _import_sdk() -> None:
    """Import the SDK modules used below (slow: run in a worker thread)."""
    import mcp  # noqa: F401
    import mcp.client.stdio  # noqa: F401
    import mcp.client.streamable_http  # noqa: F401


_sdk_lock: asyncio.Lock | None = None
_sdk_ready = False


async def import_sdk() -> None:
    """Import the ``mcp`` SDK once per process, off the event loop."""
    global _sdk_lock, _sdk_ready
    if _sdk_ready:
        return
    if _sdk_lock is None:
        _sdk_lock = asyncio.Lock()
    async with _sdk_lock:
        if not _sdk_ready:
            await asyncio.to_thread(_import_sdk)
            _sdk_ready = True


def _spawned_pid(client: object) -> int | None:
    """The pid (and process group, the SDK starts it in a new session) of the server an
    entered ``stdio_client`` spawned, read from the SDK's suspended generator; None if a
    later SDK keeps it elsewhere (``test_mcp`` fails then)."""
    frame = getattr(getattr(client, "gen", None), "ag_frame", None)
    process = frame.f_locals.get("process") if frame is not None else None
    pid = getattr(process, "pid", None)
    return pid if isinstance(pid, int) else None


def describe_error(err: BaseException) -> str:
    """One readable line for an exception, unwrapping anyio/SDK exception groups."""
    while isinstance(err, BaseExceptionGroup) and err.exceptions:
        err = err.exceptions[0]
    if isinstance(err, FileNotFoundError):
        return f"command not found: {err.filename or err}"
    text = str(err).strip() or type(err).__name__
    return " ".join(text.split())


def _connection_closed(err: BaseException) -> bool:
    """Whether ``err`` says the transport is gone (JSON-RPC -32000 or a closed stream)."""
    code = getattr(getattr(err, "error", None), "code", None)
    names = {cls.__name__ for cls in type(err).__mro__}
    return code == CONNECTION_CLOSED or bool(names & {"ClosedResourceError", "BrokenResourceError"})


class McpServer:
    """A configured server: ``start()`` (bounded by ``spec.timeout``), ``tools``,
    ``call()``, ``aclose()``. ``status`` and ``error`` say how it went."""

    def __init__(self, spec: McpServerSpec, directory: Path | None = None) -> None:
        self.spec = spec
        self.directory = directory
        self.status: Status = "starting" if spec.enabled else "disabled"
        self.error: str | None = None
        self.tools: list[JsonObject] = []
        self.started_in: float | None = None
        self._session: ClientSession | None = None
        self._scope: anyio.CancelScope | None = None
        self._owner: asyncio.Task[None] | None = None
        self._ready = asyncio.Event()
        self._closing = asyncio.Event()
        self._errlog: IO[str] | None = None

    @property
    def name(self) -> str:
        return self.spec.name

    # ---- lifecycle ----------------------------------------------------------------
    async def start(self, deadline: float | None = None) -> bool:
        """Connect, initialise and list tools before ``deadline`` (``time.monotonic()``;
        default: now + ``spec.timeout``). True when connected; never raises."""
        if not self.spec.enabled:
            return False
        began = time.monotonic()
        deadline = deadline if deadline is not None else began + self.spec.timeout
        try:
            await asyncio.wait_for(import_sdk(), timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            self._fail(f"did not answer within {self.spec.timeout:g}s (the MCP SDK was still loading)")
            return False
        except Exception as err:  # the SDK is missing or broken
            self._fail(f"the mcp package could not be imported: {describe_error(err)}")
            return False
        self._owner = owner = asyncio.create_task(self._own(), name=f"mcp:{self.name}")
        try:
            await asyncio.wait_for(self._ready.wait(), timeout=max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            self._fail(f"did not answer within {self.spec.timeout:g}s")
            self._cancel_owner()
            return False
        except asyncio.CancelledError:  # the start was given up: stop the server before re-raising
            self._cancel_owner()
            await wait_despite_cancels(owner, CLOSE_TIMEOUT)
            raise
        self.started_in = time.monotonic() - began
        return self.status == "connected"

    async def _own(self) -> None:
        import anyio
        from mcp import ClientSession

        try:
            with anyio.CancelScope() as scope:
                self._scope = scope
                async with contextlib.AsyncExitStack() as stack:
                    # The spawn of a local server is shielded: a cancel in the middle would
                    # make asyncio kill the leader only and leave its children running; once
                    # the transport is up, a cancel goes through its exit, which stops the
                    # server's whole process group.
                    spawning = stack.enter_context(anyio.CancelScope(shield=self.spec.type == "local"))
                    read, write = await stack.enter_async_context(self._transport())
                    spawning.shield = False  # a cancel that came meanwhile is delivered now
                    session = await stack.enter_async_context(ClientSession(read, write))
                    await session.initialize()
                    self.tools = await self._list_tools(session)
                    self._session = session
                    self.status = "connected"
                    self._ready.set()
                    await self._wait_closing()
        except Exception as err:
            self._fail(describe_error(err))
            log.debug("mcp server %s failed", self.name, exc_info=True)
        finally:
            self._session = None
            if self.status == "connected":
                self.status = "closed" if self._closing.is_set() else "failed"
                if self.status == "failed" and self.error is None:
                    self.error = "the server closed the connection"
            elif self.status == "starting":
                self._fail("the connection ended during start-up")
            self._ready.set()

    async def _wait_closing(self) -> None:
        await self._closing.wait()

    async def _list_tools(self, session: ClientSession) -> list[JsonObject]:
        tools: list[JsonObject] = []
        cursor: str | None = None
        for _ in range(100):  # pages
            if cursor is None:
                page = wire(await session.list_tools())
            else:
                from mcp import types

                page = wire(await session.list_tools(params=types.PaginatedRequestParams(cursor=cursor)))
            tools.extend(page.get("tools") or [])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        return tools

    @contextlib.asynccontextmanager
    async def _transport(self) -> AsyncIterator[TransportStreams]:
        if self.spec.type == "local":
            client = self._stdio()
            group: int | None = None
            try:
                async with client as streams:
                    group = _spawned_pid(client)
                    yield streams[0], streams[1]
            finally:
                # The SDK kills the server's group only when the server outlives its stdin;
                # children of a server that exited (``sleep 99 &``) are ended here.
                if group is not None and group_alive(group):
                    kill_group(group)
        else:
            async with self._http() as streams:
                yield streams[0], streams[1]

    def _stdio(self) -> AbstractAsyncContextManager[TransportStreams]:
        from mcp.client.stdio import StdioServerParameters, stdio_client

        command, *args = self.spec.command
        params = StdioServerParameters(
            command=command,
            args=list(args),
            env=dict(self.spec.environment) or None,
            cwd=str(self.directory) if self.directory else None,
        )
        self._errlog = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - closed in aclose()
        return stdio_client(params, errlog=self._errlog)

    @contextlib.asynccontextmanager
    async def _http(self) -> AsyncIterator[TransportStreams]:
        from mcp.client import streamable_http

        url = str(self.spec.url)
        headers = dict(self.spec.headers)
        modern = getattr(streamable_http, "streamable_http_client", None)
        if modern is None:  # mcp 1.x before streamable_http_client existed
            legacy = getattr(streamable_http, "streamablehttp_client")  # noqa: B009 - absent from mcp 2
            async with legacy(url, headers=headers) as streams:
                yield streams
            return
        http: ModuleType
        try:
            http = importlib.import_module("httpx2")  # the SDK's HTTP client from mcp 2 on
        except ImportError:
            http = importlib.import_module("httpx")
        client = http.AsyncClient(headers=headers, timeout=http.Timeout(30, read=300), follow_redirects=True)
        async with client, modern(url, http_client=client) as streams:
            yield streams

    def _fail(self, message: str) -> None:
        if self.status in ("starting", "connected"):
            self.status = "failed"
            tail = self.stderr_tail()
            self.error = f"{message} (stderr: {tail})" if tail and tail not in message else message

    def _cancel_owner(self) -> None:
        self._closing.set()
        if self._scope is not None:
            self._scope.cancel()
        elif self._owner is not None:
            self._owner.cancel()

    def stderr_tail(self, lines: int = 1) -> str:
        """The last line(s) the server wrote to stderr (for error messages)."""
        if self._errlog is None:
            return ""
        try:
            self._errlog.flush()
            self._errlog.seek(0)
            text = self._errlog.read()[-4000:]
        except (OSError, ValueError):
            return ""
        found = [line.strip() for line in text.splitlines() if line.strip()]
        return " | ".join(found[-lines:])[:300]

    async def aclose(self) -> None:
        """Close the session and stop the server (bounded; never raises)."""
        self._closing.set()
        owner = self._owner
        if owner is not None and not owner.done():
            done, _ = await asyncio.wait({owner}, timeout=CLOSE_TIMEOUT)
            if not done:
                self._cancel_owner()
                await asyncio.wait({owner}, timeout=1.0)
        if self.status == "connected":
            self.status = "closed"
        if self._errlog is not None:
            with contextlib.suppress(OSError, ValueError):
                self._errlog.close()
            self._errlog = None

    # ---- calls --------------------------------------------------------------------
    async def call(self, tool: str, arguments: JsonObject) -> JsonObject:
        """Call ``tool``; the ``CallToolResult`` as a protocol dict. Raises
        :class:`McpCallError` when the server is gone or dies during the call."""
        session = self._session
        if session is None or self.status != "connected":
            reason = f": {self.error}" if self.error else ""
            raise McpCallError(f"MCP server '{self.name}' is not connected{reason}")
        call = asyncio.ensure_future(session.call_tool(tool, arguments))
        owner = self._owner
        waiters: set[asyncio.Future[CallToolResult] | asyncio.Future[None]] = {call}
        if owner is not None:
            waiters.add(owner)
        try:
            done, _ = await asyncio.wait(waiters, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:
            call.cancel()
            raise
        if call not in done:
            call.cancel()
            await asyncio.gather(call, return_exceptions=True)
            raise McpCallError(
                f"MCP server '{self.name}' stopped during the call to {tool}"
                + (f": {self.error}" if self.error else "")
            )
        try:
            return wire(call.result())
        except Exception as err:
            if _connection_closed(err):
                self._fail("the server closed the connection")
                self._closing.set()  # let the owner task clean up
            if self.status != "connected":
                raise McpCallError(
                    f"MCP server '{self.name}' stopped during the call to {tool}: {describe_error(err)}"
                ) from None
            raise McpCallError(f"{tool} failed on MCP server '{self.name}': {describe_error(err)}") from None

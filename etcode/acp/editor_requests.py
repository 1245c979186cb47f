"""The ACP requests behind the tools' front-end seam (``tools/client_io.py``):
:class:`EditorFiles` implements its ``ClientFiles`` with ``fs/read_text_file`` and
``fs/write_text_file``, :class:`EditorTerminal` its ``ClientTerminal`` with ``terminal/create``,
``terminal/output``, ``terminal/wait_for_exit``, ``terminal/kill`` and ``terminal/release``.
Offered when the editor states the ``fs`` and ``terminal`` capabilities: reads see unsaved
buffers, writes land in the editor's buffers, commands run in a terminal the editor shows.
Every request has a time limit."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TypeVar

from acp import Client, helpers
from acp.schema import CreateTerminalResponse, EnvVariable

from etcode.tools.client_io import ClientFileError, ClientTerminalError, TerminalRun
from etcode.util.process_group import wait_despite_cancels

log = logging.getLogger("etcode.acp")
T = TypeVar("T")

#: How long one file request or terminal control request to the editor may take.
REQUEST_SECONDS = 30.0
#: Output the editor keeps of a command (the tail; etcode cuts it further for the model).
OUTPUT_BYTE_LIMIT = 1024 * 1024


class EditorFiles:
    """``fs/read_text_file`` and ``fs/write_text_file`` of one session."""

    def __init__(self, conn: Client, session_id: str, *, read: bool, write: bool) -> None:
        self.conn = conn
        self.session_id = session_id
        self.can_read = read
        self.can_write = write

    async def read_text(self, path: Path) -> str:
        if not self.can_read:
            raise ClientFileError("the editor does not read files")
        try:
            response = await asyncio.wait_for(
                self.conn.read_text_file(session_id=self.session_id, path=str(path)), REQUEST_SECONDS
            )
        except Exception as err:
            raise ClientFileError(f"the editor could not read it ({_reason(err)})") from None
        return str(response.content)

    async def write_text(self, path: Path, text: str) -> None:
        if not self.can_write:
            raise ClientFileError("the editor does not write files")
        try:
            await asyncio.wait_for(
                self.conn.write_text_file(session_id=self.session_id, path=str(path), content=text),
                REQUEST_SECONDS,
            )
        except Exception as err:
            raise ClientFileError(f"the editor could not write it ({_reason(err)})") from None


def _reason(err: BaseException) -> str:
    if isinstance(err, TimeoutError):
        return f"no answer in {REQUEST_SECONDS:g} s"
    return str(err) or type(err).__name__


class EditorTerminal:
    """Runs a command with ``terminal/create`` and shows the terminal on the tool call.
    ``on_cut(call_id, terminal_id, output)`` is told what a command cancelled midway
    printed (its card keeps the terminal and that output)."""

    def __init__(
        self, conn: Client, session_id: str, on_cut: Callable[[str, str, str], None] | None = None
    ) -> None:
        self.conn = conn
        self.session_id = session_id
        self.on_cut = on_cut

    async def _call(self, request: Awaitable[T]) -> T:
        return await asyncio.wait_for(request, REQUEST_SECONDS)

    async def run(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        timeout_s: float,
        abort: asyncio.Event,
        call_id: str,
    ) -> TerminalRun:
        # The editor goes on creating the terminal whatever happens here, so a cancel
        # while it does waits for its answer and then kills and releases that terminal.
        creating = asyncio.ensure_future(
            self._call(
                self.conn.create_terminal(
                    session_id=self.session_id,
                    command=argv[0],
                    args=argv[1:],
                    env=[EnvVariable(name=key, value=value) for key, value in env.items()],
                    cwd=str(cwd),
                    output_byte_limit=OUTPUT_BYTE_LIMIT,
                )
            )
        )
        try:
            created = await asyncio.shield(creating)
        except asyncio.CancelledError:
            await wait_despite_cancels(asyncio.ensure_future(self._end_created(creating)))
            raise
        except Exception as err:
            raise ClientTerminalError(_reason(err)) from None
        terminal_id = str(created.terminal_id)  # no await between the answer and the try
        try:
            await self.conn.session_update(
                self.session_id,
                helpers.update_tool_call(call_id, content=[helpers.tool_terminal_ref(terminal_id)]),
            )
            return await self._wait(terminal_id, timeout_s, abort)
        except asyncio.CancelledError:  # the turn was stopped: the command must not run on
            await wait_despite_cancels(asyncio.ensure_future(self._cut(call_id, terminal_id)))
            raise
        finally:
            await self._release(terminal_id)

    async def _end_created(self, creating: asyncio.Future[CreateTerminalResponse]) -> None:
        """Kill and release the terminal ``creating`` gives (its request is bounded)."""
        await asyncio.wait({creating})
        if creating.cancelled() or creating.exception() is not None:
            return
        terminal_id = str(creating.result().terminal_id)
        await self._kill(terminal_id)
        await self._release(terminal_id)

    async def _cut(self, call_id: str, terminal_id: str) -> None:
        """Kill a cancelled command and keep what it printed (``on_cut``), before release."""
        await self._kill(terminal_id)
        if self.on_cut is None:
            return
        try:
            output = await self._call(
                self.conn.terminal_output(session_id=self.session_id, terminal_id=terminal_id)
            )
        except Exception as err:
            log.debug("no output of cancelled terminal %s: %s", terminal_id, err)
            return
        self.on_cut(call_id, terminal_id, str(output.output))

    async def _release(self, terminal_id: str) -> None:
        with contextlib.suppress(Exception):
            await self._call(self.conn.release_terminal(session_id=self.session_id, terminal_id=terminal_id))

    async def _kill(self, terminal_id: str) -> None:
        with contextlib.suppress(Exception):
            await self._call(self.conn.kill_terminal(session_id=self.session_id, terminal_id=terminal_id))

    async def _wait(self, terminal_id: str, timeout_s: float, abort: asyncio.Event) -> TerminalRun:
        waiting = asyncio.ensure_future(
            self.conn.wait_for_terminal_exit(session_id=self.session_id, terminal_id=terminal_id)
        )
        aborted = asyncio.ensure_future(abort.wait())
        timed_out = interrupted = False
        try:
            done, _ = await asyncio.wait(
                {waiting, aborted}, timeout=timeout_s, return_when=asyncio.FIRST_COMPLETED
            )
            if waiting not in done:
                interrupted = aborted in done
                timed_out = not interrupted
                await self._kill(terminal_id)
        finally:
            aborted.cancel()
            if not waiting.done():
                waiting.cancel()
        output = await self._call(
            self.conn.terminal_output(session_id=self.session_id, terminal_id=terminal_id)
        )
        status = output.exit_status
        code = status.exit_code if status is not None and status.exit_code is not None else None
        if code is None and waiting.done() and not waiting.cancelled() and waiting.exception() is None:
            code = waiting.result().exit_code
        return TerminalRun(
            output=str(output.output),
            exit_code=code if code is not None else -1,
            timed_out=timed_out,
            interrupted=interrupted,
            truncated=bool(output.truncated),
            terminal_id=terminal_id,
        )

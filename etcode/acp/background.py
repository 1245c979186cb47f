"""Background ``Bash`` calls (``run_in_background``) as ACP ``execute`` tool calls whose
status follows the process: ``in_progress`` with the first output when the call returns,
then, when the process exits or is killed, a ``tool_call_update`` ``completed`` (exit code
0, or ended on request: KillBash) or ``failed`` (any other exit code). That last update is
a ``session/update`` of its own, sent whenever the process ends, during a turn or after it
(ACP: an agent may send session updates at any point while the session exists).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from acp import helpers
from acp.schema import ToolCallProgress, ToolCallStatus

from etcode.acp.updates import ToolContent, result_content
from etcode.contract import events as ev
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.tools.background import BackgroundInfo, BackgroundProcesses

log = logging.getLogger("etcode.acp")


def background_id(event: ev.Event) -> str | None:
    """The process id a finished Bash call started in the background, else None."""
    if not isinstance(event, ev.ToolResultEvent) or event.is_error or event.name != "Bash":
        return None
    found = (event.data or {}).get("background")
    return found if isinstance(found, str) and found else None


def started_update(event: ev.ToolResultEvent) -> ToolCallProgress:
    """The call returned, its process runs on: ``in_progress`` with what it printed first."""
    raw: JsonObject = {"summary": event.summary}
    if event.data:
        raw["data"] = dict(event.data)
    return helpers.update_tool_call(
        event.call_id,
        status="in_progress",
        content=result_content(event.name, event.output, event.data),
        raw_output=raw,
    )


def ended_update(call_id: str, info: BackgroundInfo, shown: list[ToolContent]) -> ToolCallProgress:
    """The process ended: the call's final status, a line saying how after what was shown."""
    status: ToolCallStatus
    if info.status == "killed":
        status, line = "completed", f"{info.id} was killed"
    elif info.exit_code == 0:
        status, line = "completed", f"{info.id} exited with code 0"
    else:
        status, line = "failed", f"{info.id} exited with code {info.exit_code}"
    raw: JsonObject = {"background": info.id, "status": info.status, "exit_code": info.exit_code}
    return helpers.update_tool_call(
        call_id,
        status=status,
        content=[*shown, helpers.tool_content(helpers.text_block(line))],
        raw_output=raw,
    )


@dataclass
class _Call:
    call_id: str
    shown: list[ToolContent]
    done: bool = False


class BackgroundCalls:
    """One ACP session's background calls: which call started which process, and the final
    update sent once when each ends. ``send`` sends one update to the editor."""

    def __init__(self, send: Callable[[ToolCallProgress], Awaitable[None]]) -> None:
        self.send = send
        self.calls: dict[str, _Call] = {}
        self.sending: set[asyncio.Future[None]] = set()
        self._processes: BackgroundProcesses | None = None
        self._unsubscribe: Callable[[], None] | None = None

    async def started(self, event: ev.ToolResultEvent, processes: BackgroundProcesses) -> None:
        """After the ``in_progress`` update of ``event`` was sent: follow its process (one
        that has ended already gets its final update now)."""
        process_id = background_id(event)
        if process_id is None:
            return
        self._watch(processes)
        call = _Call(event.call_id, result_content(event.name, event.output, event.data))
        self.calls[process_id] = call
        info = next((i for i in processes.list() if i.id == process_id), None)
        if info is not None and info.status != "running":
            await self._finish(call, info)

    def _watch(self, processes: BackgroundProcesses) -> None:
        if processes is self._processes:
            return
        self.close()
        self._processes = processes
        self._unsubscribe = processes.subscribe(self._changed)

    def _changed(self, info: BackgroundInfo) -> None:
        """On the event loop, when a process starts or ends: never blocks, sends in a task."""
        call = self.calls.get(info.id)
        if call is None or call.done or info.status == "running":
            return
        task = asyncio.ensure_future(self._finish(call, info))
        self.sending.add(task)
        task.add_done_callback(self.sending.discard)

    async def _finish(self, call: _Call, info: BackgroundInfo) -> None:
        if call.done:
            return
        call.done = True
        try:
            await self.send(ended_update(call.call_id, info, call.shown))
        except Exception as err:  # the editor went away: nothing to tell
            log.debug("background call %s: final update not sent: %s", call.call_id, err)

    def close(self) -> None:
        """Stop following (the session closes: the editor is not told of the ends)."""
        if self._unsubscribe is not None:
            unsubscribe, self._unsubscribe = self._unsubscribe, None
            unsubscribe()
        self._processes = None
        for task in list(self.sending):
            task.cancel()

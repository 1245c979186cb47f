"""A session's running calls as the editor sees them: the state behind ``updates.py``'s pure
functions.

- Live output: ACP ``content`` replaces a card's content, so each ``tool_call_update`` of a
  running command carries all it printed so far — a bounded tail, with a ``… N earlier
  lines`` line when cut — not just the newest chunk.
- Started calls: the permission question about a call (``permission.py``) shows the call's
  own title, kind and input; it waits until the card was sent, so the editor knows the call
  it is asked about.
- A command cancelled in the editor's terminal (``editor_requests.py``): its last update
  keeps the terminal on the card, and its output so far goes in ``rawOutput``; one run by
  etcode that failed without its output (interrupted) keeps the output shown live.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.contract import events as ev
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:  # the SDK's models load with the first update, not with the server
    from etcode.acp.updates import ToolContent, Update

#: Live output shown on a running call: at most this many of its last lines and characters.
LIVE_LINES = 200
LIVE_CHARS = 16_000


@dataclass
class StartedCall:
    """A call the editor was told of (or a subagent's, which it was not shown)."""

    name: str
    params: JsonObject
    summary: str


@dataclass
class _Output:
    """A running call's output so far: its kept tail and the lines cut before it."""

    text: str = ""
    cut_lines: int = 0
    cut_chars: int = 0  # left out upstream (a flood): not counted in lines

    returned: bool = False  # the last chunk ended with \r: the next text starts the line again

    def add(self, chunk: str, skipped: int) -> None:
        self.cut_chars += skipped
        if not chunk:
            return
        if self.returned:
            chunk, self.returned = "\r" + chunk, False
        if chunk.endswith("\r"):  # the line stays shown until something replaces it
            chunk, self.returned = chunk[:-1], True
        parts = chunk.split("\r")  # a lone \r starts the current line again (ToolProgress)
        text = self.text + parts[0]
        for part in parts[1:]:
            text = text[: text.rfind("\n") + 1] + part
        lines = text.split("\n")
        if len(lines) > LIVE_LINES + 1:  # the last item is the unfinished line
            self.cut_lines += len(lines) - LIVE_LINES - 1
            text = "\n".join(lines[-LIVE_LINES - 1 :])
        if len(text) > LIVE_CHARS:
            start = text.find("\n", len(text) - LIVE_CHARS)
            start = len(text) - LIVE_CHARS if start < 0 else start + 1
            self.cut_lines += text.count("\n", 0, start)
            self.cut_chars += start - (text.rfind("\n", 0, start) + 1)  # of a line cut in two
            text = text[start:]
        self.text = text

    def shown(self) -> str:
        from etcode.acp.updates import cut_marker

        marker = cut_marker(self.cut_lines, self.cut_chars)
        return f"{marker}\n{self.text}" if marker else self.text


@dataclass
class _CutTerminal:
    terminal_id: str
    output: str


@dataclass
class LiveCalls:
    """The running calls of one session (see the module's doc)."""

    started: dict[str, StartedCall] = field(default_factory=dict)
    _outputs: dict[str, _Output] = field(default_factory=dict)
    _cut: dict[str, _CutTerminal] = field(default_factory=dict)
    _shown: dict[str, asyncio.Event] = field(default_factory=dict)

    def updates_of(self, event: ev.Event, directory: Path) -> list[Update]:
        """``updates.updates_of``, with a running call's output so far in each update."""
        from acp import helpers

        from etcode.acp import updates as up

        if isinstance(event, ev.ToolProgress):
            if not event.text and not event.skipped:
                return []
            output = self._outputs.setdefault(event.call_id, _Output())
            output.add(event.text, event.skipped)
            text = output.shown()
            if not text.strip():
                return []
            block = helpers.text_block(up.fenced(text) if event.name == "Bash" else text)
            return [helpers.update_tool_call(event.call_id, content=[helpers.tool_content(block)])]
        if isinstance(event, ev.ToolResultEvent):
            live = self._outputs.pop(event.call_id, None)
            self._shown.pop(event.call_id, None)
            started = self.started.pop(event.call_id, None)
            cut = self._cut.pop(event.call_id, None)
            if cut is not None and not (event.data or {}).get("terminalId"):
                return [_cut_end(event, cut)]
            if event.name == up.PLAN_TOOL and event.is_error:
                params = started.params if started is not None else {}
                return [up.todo_failed(event.call_id, event.name, params, event.output)]
            if live is not None and event.is_error and not (event.data or {}).get("terminalId"):
                kept = _kept_output(event, live)
                if kept is not None:
                    return [kept]
        return up.updates_of(event, directory)

    def shown(self, event: ev.Event) -> None:
        """``event``'s updates were sent: a call it starts may now be asked about."""
        if isinstance(event, ev.ToolResultEvent):  # also a background call's (not seen above)
            self._outputs.pop(event.call_id, None)
        start: ev.ToolCallStart | None = event if isinstance(event, ev.ToolCallStart) else None
        if isinstance(event, ev.SubagentEvent) and (event.event or {}).get("type") == "tool_call_start":
            child = event.event or {}
            params = child.get("params")
            start = ev.ToolCallStart(
                str(child.get("call_id", "")),
                str(child.get("name", "")),
                params if isinstance(params, dict) else {},
                str(child.get("summary", "")),
            )
        if isinstance(event, ev.SubagentEvent) and (event.event or {}).get("type") == "tool_result":
            child_id = str((event.event or {}).get("call_id", ""))
            self.started.pop(child_id, None)
            self._shown.pop(child_id, None)
        if start is None or not start.call_id:
            return
        self.started[start.call_id] = StartedCall(start.name, start.params, start.summary)
        self._shown.setdefault(start.call_id, asyncio.Event()).set()

    async def call(self, call_id: str, seconds: float, cancelled: asyncio.Event) -> StartedCall | None:
        """The call ``call_id`` once the editor was told of it; None after ``seconds`` or
        when ``cancelled`` is set first (the turn's events tell of every call before it
        asks, so this is a step of the event stream, not a guess)."""
        if call_id not in self.started:
            waits = [
                asyncio.ensure_future(self._shown.setdefault(call_id, asyncio.Event()).wait()),
                asyncio.ensure_future(cancelled.wait()),
            ]
            try:
                await asyncio.wait(waits, timeout=seconds, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for waiting in waits:
                    waiting.cancel()
            if call_id not in self.started:
                self._shown.pop(call_id, None)
        return self.started.get(call_id)

    def terminal_cut(self, call_id: str, terminal_id: str, output: str) -> None:
        """A command in the editor's terminal was cancelled after printing ``output``."""
        self._cut[call_id] = _CutTerminal(terminal_id, output)


def _kept_output(event: ev.ToolResultEvent, live: _Output) -> Update | None:
    """The last update of a call that failed without its output (interrupted, cancelled):
    the output shown live stays on the card (its content is replaced), the failure under it.
    None when the result holds that output anyway (a command that exited non-zero)."""
    from acp import helpers

    from etcode.acp import updates as up

    text = live.shown()
    last = text.rstrip().rpartition("\n")[2]
    if not last.strip() or last in event.output:
        return None
    shown = up.fenced(text) if event.name == "Bash" else text
    content: list[ToolContent] = [helpers.tool_content(helpers.text_block(shown))]
    if event.output:
        content.append(helpers.tool_content(helpers.text_block(event.output[: up.MAX_SHOWN_OUTPUT])))
    raw: JsonObject = {"summary": event.summary, "output": text}
    if event.data:
        raw["data"] = {key: value for key, value in event.data.items() if key != "diff"}
    return helpers.update_tool_call(event.call_id, status="failed", content=content, raw_output=raw)


def _cut_end(event: ev.ToolResultEvent, cut: _CutTerminal) -> Update:
    """The last update of a command cancelled in the editor's terminal: failed, the terminal
    still on the card (an editor shows a released terminal's output), the notice under it,
    the output so far (its tail) in ``rawOutput``."""
    from acp import helpers

    output = _Output()
    output.add(cut.output, 0)
    content: list[ToolContent] = [helpers.tool_terminal_ref(cut.terminal_id)]
    if event.output:
        content.append(helpers.tool_content(helpers.text_block(event.output)))
    raw: JsonObject = {"summary": event.summary, "terminalId": cut.terminal_id, "output": output.shown()}
    return helpers.update_tool_call(event.call_id, status="failed", content=content, raw_output=raw)

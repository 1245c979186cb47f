"""The plain renderer of ``etcode run``: the answer streams to stdout, progress to stderr.

Tool calls render as ``● Name (params summary)`` and ``  └ result summary``. On a
terminal the head line appears at once with ``  └ executing...`` under it, rewritten in
place when the result arrives; in a pipe or log each call is written as one finished
pair, so parallel calls never interleave.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from typing import TextIO

from etcode.contract import events as ev
from etcode.security.redact import RedactingStream
from etcode.ui.live_tail import LiveTail, cut_to_cells, elapsed_text
from etcode.util.json_types import JsonObject

RESET = "\x1b[0m"
DIM = "\x1b[2m"
BOLD = "\x1b[1m"
RED = "\x1b[31m"
GREEN = "\x1b[32m"
YELLOW = "\x1b[33m"


def _wants_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty()


PROGRESS_EVERY = 0.25  # seconds between rewrites of a running call's "executing" line


@dataclass
class _Pending:
    head: str
    lines_after: int = 0  # lines written to stderr below this call's "executing" line
    tail: LiveTail | None = None  # its output so far (tool_progress events)
    shown_at: float = float("-inf")  # when its line was last rewritten


class PlainRenderer:
    def __init__(
        self, out: TextIO, err: TextIO, *, live: bool | None = None, color: bool | None = None
    ) -> None:
        self.out = RedactingStream(out)  # API keys never reach the terminal
        self.err = RedactingStream(err)
        self.live = err.isatty() if live is None else live
        self.color = _wants_color(err) if color is None else color
        self._out_mid_line = False
        self._err_mid_line = False
        self._in_reasoning = False
        self._pending: dict[str, _Pending] = {}
        self._todos: list[JsonObject] = []  # the last todo update (the workflow's plan)

    # ---- helpers -----------------------------------------------------------------
    def _style(self, text: str, *codes: str) -> str:
        return f"{''.join(codes)}{text}{RESET}" if self.color and codes else text

    def _end_out_line(self) -> None:
        if self._out_mid_line:
            self.out.write("\n")
            self.out.flush()
            self._out_mid_line = False
            self._forget_positions()

    def _end_reasoning(self) -> None:
        if self._in_reasoning:
            self._in_reasoning = False
            if self._err_mid_line:
                self._err_line("")

    def _err_line(self, text: str) -> None:
        self.err.write(text + "\n")
        self.err.flush()
        self._err_mid_line = False
        for pending in self._pending.values():
            pending.lines_after += 1

    def _forget_positions(self) -> None:
        """Something else was written to the terminal: in-place rewrites are unsafe now."""
        for pending in self._pending.values():
            pending.lines_after = -1

    # ---- events ------------------------------------------------------------------
    def handle(self, event: ev.Event) -> None:
        if isinstance(event, ev.TextDeltaEvent):
            self._end_reasoning()
            if event.text:
                self.out.write(event.text)
                self.out.flush()
                self._out_mid_line = not event.text.endswith("\n")
                if self.live and self._pending:
                    self._forget_positions()
        elif isinstance(event, ev.ReasoningDeltaEvent):
            if self.live and event.text:
                self._end_out_line()
                self._in_reasoning = True
                self.err.write(self._style(event.text, DIM))
                self.err.flush()
                self._err_mid_line = not event.text.endswith("\n")
        elif isinstance(event, ev.ToolCallStart):
            self._tool_start(event)
        elif isinstance(event, ev.ToolResultEvent):
            self._tool_result(event)
        elif isinstance(event, ev.ToolProgress):
            self._tool_progress(event)
        elif isinstance(event, ev.RetryEvent):
            self._notice(f"⟳ retrying in {event.delay:.1f}s (attempt {event.attempt}): {event.reason}", DIM)
        elif isinstance(event, ev.WarningEvent):
            self._notice(f"warning: {event.message}", YELLOW)
        elif isinstance(event, ev.ErrorEvent):
            self._notice(f"error: {event.message}", RED)
        elif isinstance(event, ev.SoftLimitEvent):
            self._notice(f"warning: {event.message}", YELLOW)
        elif isinstance(event, ev.StoppedEvent):
            self._notice(event.message, YELLOW)
        elif isinstance(event, ev.CompactionEvent):
            self._compaction(event)
        elif isinstance(event, ev.HookRun):
            self._hook(event)
        elif isinstance(event, ev.SubagentEvent):
            notice = ev.subagent_notice(event)
            if notice is not None:
                self.handle(notice)
        elif isinstance(event, ev.TodoUpdate):
            self._todos = list(event.todos)
        elif isinstance(event, ev.WorkflowPhase):
            self._workflow_phase(event)
        elif isinstance(event, ev.DoneEvent):
            self._end_reasoning()
            self._end_out_line()

    def _workflow_phase(self, event: ev.WorkflowPhase) -> None:
        """The workflow's phases on stderr: ``◆ Planning``, the plan, each todo, the verdict."""
        phase, message = event.phase, event.message
        if phase == "planning":
            self._notice(f"◆ Planning ({message})" if message else "◆ Planning", BOLD)
        elif phase == "planned":
            self._notice(f"◆ Plan: {message}", BOLD)
            for todo in self._todos:
                mark = "[x]" if todo.get("status") == "completed" else "[ ]"
                text = todo.get("description") or todo.get("content", "")
                self._err_line(f"  {mark} {todo.get('id', '')}. {text}")
        elif phase == "executing":
            self._notice(f"◆ Executing [{event.todo_id}]: {message}", BOLD)
        elif phase == "executed":
            failed = not message.startswith("completed")
            self._err_line(f"  └ {self._style(message, RED) if failed else message}")
        elif phase == "verifying":
            self._notice("◆ Verifying", BOLD)
        elif phase == "verified":
            self._notice(f"◆ Verdict: {message}", GREEN if message.startswith("satisfied") else YELLOW)

    def _compaction(self, event: ev.CompactionEvent) -> None:
        if event.phase == "done" and event.tokens_before:
            why = f" ({event.message})" if event.message else ""
            self._notice(
                f"⟳ context compacted ({event.reason}): ~{event.tokens_before:,} → ~{event.tokens_after:,} tokens{why}",
                DIM,
            )
        elif event.phase == "failed":
            self._notice(f"warning: context compaction failed: {event.message}", YELLOW)

    def _hook(self, event: ev.HookRun) -> None:
        """``● PostToolUse hook (ruff format)`` and ``  └ `` what came of it."""
        self._notice(f"{self._style('●', GREEN)} {self._style(ev.hook_title(event), BOLD)}")
        line = ev.hook_result(event)
        self._err_line(f"  └ {self._style(line, YELLOW) if event.outcome != 'ok' else line}")

    def _notice(self, text: str, *codes: str) -> None:
        self._end_reasoning()
        self._end_out_line()
        self._err_line(self._style(text, *codes))

    def _head(self, event: ev.ToolCallStart | ev.ToolResultEvent, summary: str = "") -> str:
        title = f"{event.name} ({summary})" if summary else event.name
        return f"{self._style('●', GREEN)} {self._style(title, BOLD)}"

    def _tool_start(self, event: ev.ToolCallStart) -> None:
        self._end_reasoning()
        self._end_out_line()
        head = self._head(event, event.summary)
        if self.live:
            self._err_line(head)
            self._err_line(self._style("  └ executing...", DIM))
            self._pending[event.call_id] = _Pending(head, 0)
        else:
            self._pending[event.call_id] = _Pending(head, -1)

    def _tool_progress(self, event: ev.ToolProgress) -> None:
        """On a terminal, the call's ``executing`` line becomes ``running 3s · <last line>``
        (rewritten in place, at most 4 times a second); elsewhere progress is not shown."""
        pending = self._pending.get(event.call_id)
        if not self.live or pending is None:
            return
        if pending.tail is None:
            pending.tail = LiveTail(keep=1)
        pending.tail.feed(event.text)
        now = time.monotonic()
        if pending.lines_after < 0 or self._err_mid_line or now - pending.shown_at < PROGRESS_EVERY:
            return
        pending.shown_at = now
        width = shutil.get_terminal_size((80, 24)).columns
        line = f"  └ running {elapsed_text(event.elapsed)}"
        last = pending.tail.last_line().replace("\t", " ").strip()
        room = width - len(line) - 4
        if last and room > 8:
            line += " · " + cut_to_cells(last, room)
        up = pending.lines_after + 1
        self.err.write(f"\x1b[{up}A\r\x1b[2K{self._style(line, DIM)}\x1b[{up}B\r")
        self.err.flush()

    def _tool_result(self, event: ev.ToolResultEvent) -> None:
        self._end_reasoning()
        self._end_out_line()
        pending = self._pending.pop(event.call_id, None)
        head = pending.head if pending else self._head(event)
        if event.is_error:
            text = self._style(f"⚠ {event.summary}", RED)
        elif event.summary.endswith("⚠"):  # done, with some failures (``2 errors ⚠``)
            text = self._style(event.summary, YELLOW)
        else:
            text = event.summary
        line = f"  └ {text}"
        if pending is not None and pending.lines_after >= 0 and self.live:
            up = pending.lines_after + 1
            self.err.write(f"\x1b[{up}A\r\x1b[2K{line}")
            self.err.write(f"\x1b[{up}B\r" if up > 0 else "\n")
            self.err.flush()
            return
        self._err_line(head)
        self._err_line(line)

"""Maps the agent's events onto the widgets. This is the TUI's whole view of a run: it
reads the events' fields (``summary``, ``usage``, ``todos``...) and computes nothing."""

from __future__ import annotations

from etcode.contract import events as ev
from etcode.ui.tui.widgets.conversation import Conversation
from etcode.ui.tui.widgets.status import StatusBar
from etcode.ui.tui.widgets.todo import TodoPanel
from etcode.ui.tui.widgets.tool import ToolMessage
from etcode.ui.tui.widgets.working import WorkingLine
from etcode.util.json_types import JsonObject


def context_of_usage(usage: dict[str, int]) -> int:
    """Tokens in the context after a step (used until a ``usage`` event says better)."""
    keys = ("input_tokens", "cache_read_tokens", "cache_write_tokens", "output_tokens")
    return sum(int(usage.get(key) or 0) for key in keys)


class EventFeed:
    """``await feed.handle(event)`` for each event of ``agent.stream(task)``."""

    def __init__(self, conversation: Conversation, status: StatusBar, todos: TodoPanel) -> None:
        self.conversation = conversation
        self.status = status
        self.todos = todos
        self.last_result: JsonObject | None = None
        #: True once the core sends ``usage`` events (context %, cost): StepFinish is then ignored.
        self.has_usage_events = False
        #: ``✻ Working…`` above the input (set by the app); None: not shown.
        self.working: WorkingLine | None = None
        self._running: dict[str, ToolMessage] = {}  # tool calls not finished yet

    def tick(self, frame: int) -> None:
        """A spinner frame (the status bar's timer, only while busy): elapsed times."""
        if self.working is not None:
            self.working.tick(frame)
        for widget in list(self._running.values()):
            if widget.running:
                widget.tick()
            else:
                self._running.pop(widget.call_id, None)

    def busy_changed(self, busy: bool) -> None:
        """A turn started or ended: the working line (only with the spinner: a still
        screen, e.g. a snapshot, has no elapsed times)."""
        if self.working is None:
            return
        if busy and self.status.spinner:
            self.working.start()
        elif not busy:
            self.working.stop()
            self._running.clear()

    async def handle(self, event: ev.Event) -> None:
        c = self.conversation
        if isinstance(event, ev.TextDeltaEvent):
            self._count(event.text)
            await c.append_text(event.text)
        elif isinstance(event, ev.ReasoningDeltaEvent):
            self._count(event.text)
            await c.append_reasoning(event.text)
        elif isinstance(event, ev.ToolCallStart):
            self._count(event.params)
            widget = await c.tool_started(event.call_id, event.name, event.summary, event.params)
            self._running[event.call_id] = widget
        elif isinstance(event, ev.ToolProgress):
            running = self._running.get(event.call_id) or c.tools.get(event.call_id)
            if running is not None:
                running.add_output(event.text)
        elif isinstance(event, ev.ToolResultEvent):
            await c.tool_finished(
                event.call_id,
                event.name,
                event.summary,
                event.output,
                is_error=event.is_error,
                data=event.data,
            )
        elif isinstance(event, ev.TodoUpdate):
            self.todos.set_todos(event.todos)
        elif isinstance(event, ev.SessionStart):
            self.status.update_info(model=event.model, agent=event.agent)
        elif isinstance(event, ev.StepFinish):
            if self.working is not None:
                self.working.step_finished(int(event.usage.get("output_tokens") or 0))
            if not self.has_usage_events:
                self.status.update_info(context_tokens=context_of_usage(event.usage))
        elif isinstance(event, ev.RetryEvent):
            await c.add_notice(
                f"⟳ retrying in {event.delay:.1f}s (attempt {event.attempt}): {event.reason}", "info"
            )
        elif isinstance(event, ev.WarningEvent):
            await c.add_notice(f"warning: {event.message}", "warning")
        elif isinstance(event, ev.ErrorEvent):
            await c.add_notice(f"error: {event.message}", "error")
        elif isinstance(event, ev.StoppedEvent):
            await c.add_notice(event.message, "stopped")
        elif isinstance(event, ev.DoneEvent):
            self.last_result = event.result
            await c.end_blocks()
        elif isinstance(event, ev.UsageUpdate):
            self._usage(event)
        elif isinstance(event, ev.CompactionEvent):
            await self._compaction(event)
        elif isinstance(event, ev.SubagentEvent):
            self._subagent(event)
        elif isinstance(event, ev.WorkflowPhase):
            label = {"executing": f"Executing [{event.todo_id}]", "verified": "Verdict"}.get(
                event.phase, event.phase.capitalize()
            )
            await c.add_notice(f"◆ {label}: {event.message}" if event.message else f"◆ {label}")
        elif isinstance(event, ev.VerificationResult):
            verdict = "✔ verified" if event.all_completed and event.user_needs_satisfied else "✘ not yet"
            await c.add_notice(f"{verdict}: {event.overall_feedback}", "info")

    def _count(self, streamed: str | JsonObject) -> None:
        """Model output streamed (text, reasoning, a call's arguments): the working line's tokens."""
        if self.working is not None and self.working.active:
            self.working.add_chars(len(streamed) if isinstance(streamed, str) else len(str(streamed)))

    def _usage(self, event: ev.UsageUpdate) -> None:
        self.has_usage_events = True
        changes: dict[str, object] = {"context_tokens": event.context_tokens, "cost": event.cost}
        if event.context_window:
            changes["context_limit"] = event.context_window
        self.status.update_info(**changes)

    async def _compaction(self, event: ev.CompactionEvent) -> None:
        notice = self.conversation.add_notice
        if event.phase == "done" and event.tokens_before:
            await notice(
                f"⟳ context compacted ({event.reason}): ~{event.tokens_before:,} → ~{event.tokens_after:,} tokens"
            )
        elif event.phase == "done" and event.message:
            await notice(event.message)
        elif event.phase == "failed":
            await notice(f"warning: context compaction failed: {event.message}", "warning")

    def _subagent(self, event: ev.SubagentEvent) -> None:
        """A subagent's tool call shows under its parent's ``Task`` block."""
        child = event.event or {}
        widget = self.conversation.tools.get(event.call_id)
        if widget is not None and child.get("type") == "tool_call_start":
            name, summary = child.get("name", ""), child.get("summary", "")
            widget.set_progress(f"{name} ({summary})" if summary else name)

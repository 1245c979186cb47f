"""Showing a resumed session's history: the stored messages rendered as finished entries.

A tool result stored with its ``summary`` and ``data`` (what the live run showed) is shown
the same way; one stored by an older etcode falls back to the tools' own summary
generators. etcode's internal messages (compaction summaries, undo notes, tool
announcements) become notices, as in the live chat; with the stored transcript, the turns
of earlier batches (before a compaction or a clear) are shown too.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.widget import Widget

from etcode.provider.types import (
    ImagePart,
    Message,
    Part,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    image_label,
)
from etcode.ui.tui.widgets.conversation import Conversation
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.session.store import StoredMessage
    from etcode.tools.base import Tool
    from etcode.ui.tui.widgets.tool import ToolMessage

ATTACHMENT_MARK = '\n\n<file path="'
#: The notice where a batch began with a clear (the live chat says the same).
CLEARED = "Context cleared."
COMPACTED = "⟳ context compacted: the model sees a summary of the turns above"
UNDONE = "Restored the last changed turn — "


@dataclass
class Entry:
    """One message to show, with its place among the session's batches."""

    message: Message
    batch: int = 0
    kind: str = "message"  # as in the store: message, summary, note


def user_text(text: str) -> tuple[str, list[str]]:
    """Split a sent message into what the user typed and the attached paths."""
    head, sep, rest = text.partition(ATTACHMENT_MARK)
    if not sep:
        return text, []
    paths = [chunk.split('"', 1)[0] for chunk in (sep + rest).split(ATTACHMENT_MARK) if chunk]
    return head, paths


def entries_of(messages: Sequence[Message]) -> list[Entry]:
    """Entries for one batch's messages (kinds told from the text)."""
    from etcode.engine.compaction import NOTE_HEADER, is_summary

    def kind(m: Message) -> str:
        if is_summary(m):
            return "summary"
        if m.role == "user" and m.text.startswith(NOTE_HEADER):
            return "note"
        return "message"

    return [Entry(m, 0, kind(m)) for m in messages]


def entries_of_transcript(stored: Sequence[StoredMessage]) -> list[Entry]:
    """Entries for a stored transcript (``StoredMessage``s of every batch); the copies a
    new batch keeps of earlier messages are shown once, where they first were."""
    return [Entry(s.message, s.batch, s.kind) for s in stored if s.kind != "copy"]


def notice_of(entry: Entry) -> str | None:
    """The notice that shows an internal message (None: an ordinary message)."""
    from etcode.engine.compaction import ANNOUNCE_HEADER, NOTE_HEADER
    from etcode.session.snapshots import UNDO_HEADER
    from etcode.tools.background import EXIT_NOTE_START

    message = entry.message
    if entry.kind == "summary":
        return COMPACTED
    if message.role != "user" or not message.text.startswith(NOTE_HEADER):
        return None
    text = message.text
    lines = [line[2:].strip() for line in text.splitlines() if line.startswith("- ")]
    if text.startswith(UNDO_HEADER):
        return UNDONE + "; ".join(lines) if lines else UNDONE.rstrip(" —")
    if text.startswith(EXIT_NOTE_START):  # background processes that exited
        return "\n".join(line.removeprefix(NOTE_HEADER).strip() for line in text.splitlines())
    if text.startswith(ANNOUNCE_HEADER):
        names = [line.split(":", 1)[0] for line in lines]
        return "New tools available: " + ", ".join(names) if names else "New tools available"
    return None  # typed by the user (only etcode's own messages are notices)


def _summaries() -> dict[str, Tool]:
    from etcode.tools.registry import builtin_tools

    return {tool.name: tool for tool in builtin_tools()}


def _safe(fn: Callable[[], object], default: str) -> str:
    try:
        return str(fn())
    except Exception:
        return default


async def replay_history(
    conversation: Conversation, messages: Sequence[Message], transcript: Sequence[StoredMessage] | None = None
) -> None:
    """Append ``messages`` (``provider.types.Message``, the current batch) to the
    conversation, in one mount; with ``transcript`` (the store's ``StoredMessage``s of
    every batch) the whole session is shown instead."""
    entries = entries_of_transcript(transcript) if transcript else entries_of(messages)
    await conversation.add_many(entry_widgets(conversation, entries))


def entry_widgets(conversation: Conversation, entries: Sequence[Entry]) -> list[Widget]:
    """The finished entries showing ``entries``; the newest answers stay live Markdown."""
    from etcode.ui.tui.widgets.messages import Notice

    replay = _Replay(conversation, answers=_answer_count(entries))
    batch = entries[0].batch if entries else 0
    for entry in entries:
        message = entry.message
        if entry.batch != batch:
            batch = entry.batch
            # a new batch: a compaction (its summary says so), a clear, or a repair
            # (a rewritten tool message: nothing to say)
            if entry.kind != "summary" and message.role != "tool":
                replay.widgets.append(Notice(CLEARED, "info"))
        notice = notice_of(entry)
        if notice is not None:
            replay.widgets.append(Notice(notice, "info"))
            continue
        for part in message.parts:
            replay.add_part(message.role, part)
    return replay.finish()


def _answer_count(entries: Sequence[Entry]) -> int:
    """The assistant's texts among ``entries`` (the answers shown)."""
    return sum(
        1
        for e in entries
        if e.message.role == "assistant"
        for p in e.message.parts
        if isinstance(p, TextPart) and p.text
    )


class _Replay:
    """The widgets of a replay, added part by part; a tool call's block waits for its
    result."""

    def __init__(self, conversation: Conversation, answers: int) -> None:
        self.conversation = conversation
        self.answers = answers  # in all: the last LIVE_ANSWERS stay live Markdown
        self.seen = 0  # answers added so far
        self.tools = _summaries()
        self.widgets: list[Widget] = []
        self.calls: dict[str, ToolMessage] = {}
        self.params: dict[str, JsonObject] = {}

    def add_part(self, role: str, part: Part) -> None:
        from etcode.ui.tui.widgets.messages import ReasoningMessage, UserMessage

        if isinstance(part, TextPart) and role == "user":
            text, attached = user_text(part.text)
            self.widgets.append(UserMessage(text, attached))
        elif isinstance(part, TextPart) and part.text:
            self._answer(part.text)
        elif isinstance(part, ReasoningPart) and part.text:
            reasoning = ReasoningMessage()
            reasoning.write(part.text)
            reasoning.finish()
            self.widgets.append(reasoning)
        elif isinstance(part, ToolCallPart):
            self._tool_call(part)
        elif isinstance(part, ToolResultPart):
            self._tool_result(part)
        elif isinstance(part, ImagePart):
            self.widgets.append(UserMessage(image_label(part), []))

    def _answer(self, text: str) -> None:
        from etcode.ui.tui.widgets.conversation import LIVE_ANSWERS

        self.seen += 1
        self.widgets.append(
            self.conversation.answer_widget(text, live=self.answers - self.seen < LIVE_ANSWERS)
        )

    def _tool_call(self, part: ToolCallPart) -> None:
        from etcode.ui.tui.widgets.tool import ToolMessage

        args = _safe_args(part)
        self.params[part.id] = args
        self.calls[part.id] = ToolMessage(part.id, part.name, _head(self.tools.get(part.name), args), args)
        self.widgets.append(self.calls[part.id])

    def _tool_result(self, part: ToolResultPart) -> None:
        from etcode.ui.tui.widgets.tool import ToolMessage

        widget = self.calls.get(part.call_id)
        if widget is None:
            widget = ToolMessage(part.call_id, part.name, "", {})
            self.calls[part.call_id] = widget
            self.widgets.append(widget)
        said = part.summary
        if said is None:  # stored by an older etcode
            said = _fallback_summary(self.tools.get(part.name), self.params.get(part.call_id, {}), part)
        labels = [image_label(image) for image in part.images or []]
        output = "\n".join([part.output, *labels]) if part.output else "\n".join(labels)
        widget.set_result(said, output, is_error=part.is_error, data=part.data)

    def finish(self) -> list[Widget]:
        """The widgets, each call still without a result shown as interrupted."""
        for widget in self.calls.values():
            if widget.result_summary is None:  # the process ended while it ran
                widget.set_result("Interrupted", "", is_error=True)
        return self.widgets


def _head(tool: Tool | None, args: JsonObject) -> str:
    """The ``● Name (…)`` text of a stored call: its tool's summary of the arguments."""
    if tool is None:
        return ""
    return _safe(lambda: tool.params_summary(args), "")


def _fallback_summary(tool: Tool | None, args: JsonObject, part: ToolResultPart) -> str:
    """The ``└`` line for a result stored without one: the tool's generator on what is left."""
    from etcode.tools.base import ToolResult

    fallback = "Error" if part.is_error else "Done"
    if tool is None:
        return fallback
    result = ToolResult(part.output, part.is_error)
    return _safe(lambda: tool.result_summary(args, result), fallback)


def _safe_args(part: ToolCallPart) -> JsonObject:
    try:
        args: JsonObject = part.parsed_arguments()
        return args
    except ValueError:
        return {}

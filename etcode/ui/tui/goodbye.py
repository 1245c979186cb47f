"""What the chat leaves in the terminal when it quits.

``--inline``: Textual clears its inline frame on exit (no input box, no toast left), then the
conversation is printed with Rich as the plain renderer would show it (``> message``, the
answer as Markdown, ``● Tool (summary)`` / ``└ result``), so it stays in the terminal's own
scrollback. Both modes end with a hint how to resume the session, when one was stored.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from etcode.contract import events as ev
from etcode.provider.types import Message, TextPart, ToolCallPart, ToolResultPart
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from rich.console import Console, RenderableType
    from rich.text import Text

    from etcode.tools.base import Tool
    from etcode.ui.tui.controller import AgentHost

#: Messages etcode adds to the history itself (undo notes, compaction summaries).
INTERNAL_PREFIX = "[etcode]"


@dataclass
class ToolLines:
    """The summaries the live events gave each tool call (``● Name (…)`` and ``└ …``), so
    the transcript says what the screen said; calls of a resumed session fall back to the
    tools' own summary functions."""

    heads: dict[str, str] = field(default_factory=dict)
    results: dict[str, str] = field(default_factory=dict)

    def note(self, event: ev.Event) -> None:
        if isinstance(event, ev.ToolCallStart):
            self.heads[event.call_id] = event.summary
        elif isinstance(event, ev.ToolResultEvent):
            self.results[event.call_id] = event.summary


@dataclass
class ExitState:
    """What the app knew when it quit: the session and its messages (taken before closing)."""

    session_id: str | None = None
    stored: bool = False
    messages: list[Message] = field(default_factory=list)
    tool_lines: ToolLines = field(default_factory=ToolLines)


def transcript(messages: Sequence[Message], lines: ToolLines | None = None) -> Iterator[RenderableType]:
    """The conversation in ``messages`` (``provider.types.Message``) as Rich renderables."""
    from rich.markdown import Markdown
    from rich.text import Text

    from etcode.ui.tui.replay import user_text

    lines = lines or ToolLines()
    tools = _tools()
    calls: dict[str, tuple[str, JsonObject]] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and message.role == "user":
                if part.text.startswith(INTERNAL_PREFIX):
                    continue
                text, attached = user_text(part.text)
                line = Text("> ", style="bold cyan")
                line.append(text.strip(), style="bold")
                for path in attached:
                    line.append(f"\n  @{path}", style="dim")
                yield Text("")
                yield line
                yield Text("")
            elif isinstance(part, TextPart) and part.text.strip():
                yield Markdown(part.text.strip())
            elif isinstance(part, ToolCallPart):
                args = _arguments(part.arguments)
                calls[part.id] = (part.name, args)
            elif isinstance(part, ToolResultPart):
                name, args = calls.pop(part.call_id, (part.name, {}))
                yield from _tool_lines(tools.get(name), name, args, part, lines)


def _tool_lines(
    tool: Tool | None, name: str, args: JsonObject, part: ToolResultPart, lines: ToolLines
) -> Iterator[Text]:
    from rich.text import Text

    from etcode.tools.base import ToolResult

    summary = lines.heads.get(part.call_id)
    if summary is None:
        summary = _safe(lambda: tool.params_summary(args), "") if tool is not None else ""
    head = Text("● ", style="green")
    head.append(f"{name} ({summary})" if summary else name, style="bold")
    fallback = "Error" if part.is_error else "Done"
    result = ToolResult(part.output, part.is_error)
    said = lines.results.get(part.call_id) or (
        _safe(lambda: tool.result_summary(args, result), fallback) if tool is not None else fallback
    )
    tail = Text("  └ ")
    tail.append(f"⚠ {said}" if part.is_error else said, style="red" if part.is_error else "")
    yield head
    yield tail


def _tools() -> dict[str, Tool]:
    try:
        from etcode.tools.registry import builtin_tools

        return {tool.name: tool for tool in builtin_tools()}
    except Exception:  # a transcript without summaries is still a transcript
        return {}


def _safe(fn: Callable[[], object], default: str) -> str:
    try:
        return str(fn()) or default
    except Exception:
        return default


def _arguments(raw: str) -> JsonObject:
    try:
        value = json.loads(raw or "{}")
    except (ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def resume_hint(state: ExitState) -> str | None:
    """``Resume this session: …`` when the session is stored with at least one turn."""
    if not state.stored or not state.session_id:
        return None
    try:
        from etcode.session.store import SessionStore

        store = SessionStore.open()
        try:
            info = store.get_session(state.session_id)
        finally:
            store.close()
    except Exception:  # a hint is a courtesy: never fail the exit over it
        return None
    if info is None or not (info.turn or info.message_count):
        return None
    return f"Resume this session: etcode -c  (or: etcode --session {state.session_id})"


def print_goodbye(state: ExitState | None, *, inline: bool, console: Console | None = None) -> None:
    """After the app has left the screen: the inline transcript, then the resume hint."""
    from rich.console import Console
    from rich.text import Text

    if state is None:
        return
    console = console or Console()
    if inline and state.messages:
        for renderable in transcript(state.messages, state.tool_lines):
            console.print(renderable)
        console.print()
    hint = resume_hint(state)
    if hint:
        console.print(Text(hint, style="dim"))


def exit_state_of(host: AgentHost, tool_lines: ToolLines | None = None) -> ExitState:
    """The session of ``host`` as it is when the app quits."""
    agent = host.agent
    return ExitState(
        session_id=agent.session_id,
        stored=host.store is not None,
        messages=list(agent.history),
        tool_lines=tool_lines or ToolLines(),
    )

"""Showing a resumed session's history: the stored messages rendered as finished entries.

Tool lines use the tools' own summary generators (the same source as the live events).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from textual.widget import Widget

from etcode.ui.tui.widgets.conversation import Conversation

ATTACHMENT_MARK = '\n\n<file path="'


def user_text(text: str) -> tuple[str, list[str]]:
    """Split a sent message into what the user typed and the attached paths."""
    head, sep, rest = text.partition(ATTACHMENT_MARK)
    if not sep:
        return text, []
    paths = [chunk.split('"', 1)[0] for chunk in (sep + rest).split(ATTACHMENT_MARK) if chunk]
    return head, paths


def _summaries() -> dict[str, Any]:
    from etcode.tools.registry import builtin_tools

    return {tool.name: tool for tool in builtin_tools()}


def _safe(fn: Any, default: str) -> str:
    try:
        return str(fn())
    except Exception:
        return default


async def replay_history(conversation: Conversation, messages: Sequence[Any]) -> None:
    """Append ``messages`` (``provider.types.Message``) to the conversation, in one mount."""
    await conversation.add_many(history_widgets(conversation, messages))


def history_widgets(conversation: Conversation, messages: Sequence[Any]) -> list[Widget]:
    """The finished entries showing ``messages``; the newest answers stay live Markdown."""
    from etcode.tools.base import ToolResult
    from etcode.ui.tui.widgets.conversation import LIVE_ANSWERS
    from etcode.ui.tui.widgets.messages import ReasoningMessage, UserMessage
    from etcode.ui.tui.widgets.tool import ToolMessage

    tools = _summaries()
    widgets: list[Widget] = []
    calls: dict[str, ToolMessage] = {}
    params: dict[str, dict[str, Any]] = {}
    answers = sum(
        1 for m in messages if m.role == "assistant" for p in m.parts if p.type == "text" and p.text
    )
    seen = 0
    for message in messages:
        for part in message.parts:
            kind = part.type
            if kind == "text" and message.role == "user":
                text, attached = user_text(part.text)
                widgets.append(UserMessage(text, attached))
            elif kind == "text" and part.text:
                seen += 1
                widgets.append(conversation.answer_widget(part.text, live=answers - seen < LIVE_ANSWERS))
            elif kind == "reasoning" and part.text:
                reasoning = ReasoningMessage()
                reasoning.write(part.text)
                reasoning.finish()
                widgets.append(reasoning)
            elif kind == "tool_call":
                args = _safe_args(part)
                params[part.id] = args
                tool = tools.get(part.name)
                summary = _safe(lambda t=tool, a=args: t.params_summary(a), "") if tool else ""
                calls[part.id] = ToolMessage(part.id, part.name, summary, args)
                widgets.append(calls[part.id])
            elif kind == "tool_result":
                widget = calls.get(part.call_id)
                if widget is None:
                    widget = ToolMessage(part.call_id, part.name, "", {})
                    widgets.append(widget)
                tool = tools.get(part.name)
                args = params.get(part.call_id, {})
                result = ToolResult(part.output, part.is_error)
                fallback = "Error" if part.is_error else "Done"
                summary = (
                    _safe(lambda t=tool, a=args, r=result: t.result_summary(a, r), fallback)
                    if tool
                    else fallback
                )
                widget.set_result(summary, part.output, is_error=part.is_error)
    return widgets


def _safe_args(part: Any) -> dict[str, Any]:
    try:
        return part.parsed_arguments()
    except ValueError:
        return {}

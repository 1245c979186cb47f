"""``/export``: a session transcript as Markdown, from the agent's message history."""

from __future__ import annotations

import json
from collections.abc import Iterable

from etcode.provider.types import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart


def transcript_markdown(messages: Iterable[Message], title: str = "etcode session") -> str:
    """Render messages (``etcode.provider.types.Message``) as a readable Markdown document."""
    out = [f"# {title}", ""]
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and part.text.strip():
                who = "User" if message.role == "user" else "Assistant"
                out += [f"## {who}", "", part.text.rstrip(), ""]
            elif isinstance(part, ReasoningPart) and part.text.strip():
                quoted = "\n".join(f"> {line}" for line in part.text.rstrip().splitlines())
                out += ["*Reasoning*", "", quoted, ""]
            elif isinstance(part, ToolCallPart):
                out += [f"**● {part.name}**", "", "```json", _pretty(part.arguments), "```", ""]
            elif isinstance(part, ToolResultPart):
                mark = "⚠ " if part.is_error else ""
                out += [f"**└ {mark}{part.name} result**", "", "```", part.output.rstrip(), "```", ""]
    return "\n".join(out).rstrip() + "\n"


def _pretty(arguments: str) -> str:
    try:
        return json.dumps(json.loads(arguments or "{}"), indent=2, ensure_ascii=False)
    except (ValueError, RecursionError):
        return arguments

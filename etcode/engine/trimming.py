"""The compactor's fallback when the model's summary is rejected: the older history trimmed,
no model text written for it. The user's messages stay word for word; tool outputs and the
assistant's text are cut to a short head with a note; long string arguments of tool calls
too (the arguments stay valid JSON, as servers parse them); reasoning is dropped."""

from __future__ import annotations

import json
from dataclasses import replace

from etcode.provider.types import Message, Part, ReasoningPart, TextPart, ToolCallPart, ToolResultPart

OUTPUT_CHARS = 200
TEXT_CHARS = 300
ARGUMENT_CHARS = 200
TRIMMED = "[... trimmed by compaction]"
EMPTY = "[an earlier answer, trimmed by compaction]"


def _cut(text: str, keep: int) -> str:
    return text if len(text) <= keep + len(TRIMMED) else f"{text[:keep].rstrip()} {TRIMMED}"


def _arguments(raw: str) -> str:
    """``raw`` with string values longer than ``ARGUMENT_CHARS`` cut (still valid JSON);
    unchanged when it is not JSON."""
    try:
        value = json.loads(raw)
    except ValueError:
        return raw
    if not isinstance(value, dict):
        return raw
    changed = {k: _cut(v, ARGUMENT_CHARS) if isinstance(v, str) else v for k, v in value.items()}
    return raw if changed == value else json.dumps(changed, ensure_ascii=False)


def trim_message(message: Message) -> Message:
    """``message`` with its tool outputs, answer text and long arguments cut (a user's
    message is returned as it is)."""
    if message.role == "user":
        return message
    parts: list[Part] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            continue
        if isinstance(part, TextPart):
            parts.append(replace(part, text=_cut(part.text, TEXT_CHARS)))
        elif isinstance(part, ToolResultPart):
            parts.append(replace(part, output=_cut(part.output, OUTPUT_CHARS)))
        elif isinstance(part, ToolCallPart):
            parts.append(replace(part, arguments=_arguments(part.arguments)))
        else:
            parts.append(part)
    if not parts:
        parts.append(TextPart(EMPTY))
    return Message(message.role, parts)


def trim_messages(messages: list[Message]) -> list[Message]:
    return [trim_message(m) for m in messages]

"""Pure helpers on a message history: repairing what a crash left behind."""

from __future__ import annotations

from etcode.provider.types import Message, Part, ToolResultPart

INTERRUPTED_RESULT = (
    "Tool call interrupted: etcode stopped before it finished (the process ended). "
    "Its effects, if any, are unknown; check before relying on them."
)


def repair_dangling(messages: list[Message]) -> tuple[list[Message], str]:
    """Give every tool call a result. Returns (messages, how): ``"none"`` when nothing was
    missing, ``"tail"`` when only results after the last message were added (so storing the
    new tail is enough), ``"rewrite"`` when an earlier message had to change."""
    out: list[Message] = []
    how = "none"
    i = 0
    while i < len(messages):
        message = messages[i]
        out.append(message)
        calls = message.tool_calls if message.role == "assistant" else []
        if not calls:
            i += 1
            continue
        following = messages[i + 1] if i + 1 < len(messages) else None
        answered = (
            {r.call_id for r in following.tool_results} if following and following.role == "tool" else set()
        )
        missing = [c for c in calls if c.id not in answered]
        if not missing:
            i += 1
            continue
        filler: list[Part] = [
            ToolResultPart(c.id, c.name, INTERRUPTED_RESULT, is_error=True) for c in missing
        ]
        if following is not None and following.role == "tool":
            out.append(Message("tool", [*following.parts, *filler]))
            how = "rewrite"
            i += 2
            continue
        out.append(Message("tool", filler))
        if i + 1 < len(messages):
            how = "rewrite"
        elif how == "none":
            how = "tail"
        i += 1
    return out, how

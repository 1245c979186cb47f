"""``session/load``: a stored session's transcript replayed as ``session/update``s — what the
user typed, the answers, the thinking, every tool call with its result — so the editor shows
the conversation as it was."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from acp import helpers

from etcode.acp.updates import PLAN_TOOL, Update, plan_of, todo_failed, tool_end, tool_start
from etcode.provider.types import (
    ImagePart,
    Message,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    image_label,
)
from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.tools.base import Tool


def _tools() -> dict[str, Tool]:
    from etcode.tools.registry import builtin_tools

    return {tool.name: tool for tool in builtin_tools()}


def _summary(tools: dict[str, Tool], name: str, params: JsonObject) -> str:
    tool = tools.get(name)
    if tool is None:
        return ""
    try:
        return str(tool.params_summary(params))
    except Exception:  # a stored call an older tool would not summarise: no summary
        return ""


def _params(call: ToolCallPart) -> JsonObject:
    try:
        return call.parsed_arguments()
    except ValueError:
        return {}


def replay_updates(
    messages: Sequence[Message], directory: Path, todos: list[JsonObject] | None = None
) -> list[Update]:
    """The updates that show ``messages`` (a transcript's, oldest first), then the plan."""
    tools = _tools()
    names: dict[str, str] = {}
    plans: dict[str, JsonObject] = {}
    out: list[Update] = []
    for message in messages:
        for part in message.parts:
            if isinstance(part, TextPart) and part.text:
                if message.role == "user":
                    out.append(helpers.update_user_message_text(part.text))
                else:
                    out.append(helpers.update_agent_message_text(part.text))
            elif isinstance(part, ImagePart) and message.role == "user":
                out.append(helpers.update_user_message_text(image_label(part)))
            elif isinstance(part, ReasoningPart) and part.text:
                out.append(helpers.update_agent_thought_text(part.text))
            elif isinstance(part, ToolCallPart):
                params = _params(part)
                names[part.id] = part.name
                if part.name == PLAN_TOOL:  # the plan shows it; a failed one is shown with its result
                    plans[part.id] = params
                    continue
                out.append(
                    tool_start(part.id, part.name, params, _summary(tools, part.name, params), directory)
                )
            elif isinstance(part, ToolResultPart):
                name = names.get(part.call_id, part.name)
                summary = part.summary or ("failed" if part.is_error else "done")
                labels = [image_label(image) for image in part.images or []]
                output = "\n".join([part.output, *labels]) if part.output else "\n".join(labels)
                if part.call_id in plans:
                    if part.is_error:
                        out.append(todo_failed(part.call_id, name, plans[part.call_id], output))
                    continue
                out.append(tool_end(part.call_id, name, part.is_error, summary, output, part.data, directory))
            elif isinstance(part, ImagePart) and message.role == "user":
                out.append(helpers.update_user_message_text(image_label(part)))
    if todos:
        out.append(plan_of(todos))
    return out

"""etcode messages to and from OpenAI Chat Completions message dicts (no HTTP here).

The OpenAI adapter sends what :func:`messages_to_openai` builds; a user's own client
(:mod:`etcode.provider.chat_client`) receives the same; :func:`messages_from_openai` reads a
history in that format back (system messages skipped, reasoning is never sent).
"""

from __future__ import annotations

import json
from collections.abc import Iterable

from etcode.provider.shapes import field_of
from etcode.provider.types import (
    ImagePart,
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSchema,
    image_label,
)
from etcode.util.json_types import JsonObject, JsonValue

__all__ = [
    "TOOL_IMAGES_LEAD",
    "TOOL_ONLY_OPTIONS",
    "image_url_part",
    "messages_from_openai",
    "messages_to_openai",
    "system_message",
    "tool_call_fields",
    "tools_to_openai",
]


#: The text before a tool call's images in the user message that carries them (the call's
#: id and the tool's name follow): how :func:`messages_from_openai` gives them back to it.
TOOL_IMAGES_LEAD = "Images from tool call"
#: Request options the API refuses when no tools are sent (a hard step limit's last call).
TOOL_ONLY_OPTIONS = ("tool_choice", "parallel_tool_calls")


def system_message(system: Iterable[str]) -> list[JsonObject]:
    """One system message of the non-blank texts joined by blank lines ([] when none)."""
    text = "\n\n".join(s for s in system if s and s.strip())
    return [{"role": "system", "content": text}] if text else []


def messages_to_openai(messages: Iterable[Message]) -> list[JsonObject]:
    """The history as Chat Completions messages (user, assistant with ``tool_calls``, tool)."""
    out: list[JsonObject] = []
    for message in messages:
        text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
        if message.role == "assistant":
            calls = [
                {
                    "id": c.id,
                    "type": "function",
                    "function": {"name": c.name, "arguments": c.arguments or "{}"},
                }
                for c in message.tool_calls
            ]
            if calls:
                out.append({"role": "assistant", "content": text or None, "tool_calls": calls})
            elif text:
                out.append({"role": "assistant", "content": text})
            continue
        results = message.tool_results
        for result in results:
            out.append({"role": "tool", "tool_call_id": result.call_id, "content": result.output})
        shown = _tool_images(results)
        if shown:  # a tool message carries no images: they follow in a user message
            out.append({"role": "user", "content": shown})
        if any(isinstance(p, ImagePart) for p in message.parts):
            out.append({"role": "user", "content": _user_content(message.parts)})
        elif text or not results:
            out.append({"role": "user", "content": text})
    return out


def image_url_part(image: ImagePart) -> JsonObject:
    """An image as an ``image_url`` content part (a ``data:`` URL); one whose bytes are not
    loaded (``data`` empty) as a text part of its ``[image: NAME W×H]`` label."""
    if not image.data:
        return {"type": "text", "text": image_label(image)}
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def _user_content(parts: list[Part]) -> list[JsonObject]:
    """A user message's text and images as content parts, in their order."""
    content: list[JsonObject] = []
    for part in parts:
        if isinstance(part, TextPart) and part.text:
            content.append({"type": "text", "text": part.text})
        elif isinstance(part, ImagePart):
            content.append(image_url_part(part))
    return content


def _tool_images(results: list[ToolResultPart]) -> list[JsonObject]:
    """The images of tool ``results`` as user content parts, each call's after a line
    naming it ([] when none has images)."""
    content: list[JsonObject] = []
    for result in results:
        if result.images:
            content.append({"type": "text", "text": f"{TOOL_IMAGES_LEAD} {result.call_id} ({result.name}):"})
            content.extend(image_url_part(image) for image in result.images)
    return content


def tools_to_openai(tools: Iterable[ToolSchema]) -> list[JsonObject]:
    """Tool schemas as ``{"type": "function", "function": {...}}``."""
    return [
        {
            "type": "function",
            "function": {"name": t.name, "description": t.description, "parameters": t.parameters},
        }
        for t in tools
    ]


def _content_text(content: JsonValue) -> str:
    """A message's ``content``: a string, None, or a list of ``{"type": "text"}`` parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("type") == "text"
        )
    return str(content)


def _arguments_text(arguments: object) -> str:
    if arguments is None:
        return ""
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def tool_call_fields(raw: object) -> tuple[object, object, object]:
    """``(id, name, arguments)`` of one tool call in OpenAI's shape (``{"id", "function":
    {"name", "arguments"}}``) or flat (``{"id", "name", "arguments"}``), from a dict or an
    object with those fields (a :class:`~etcode.provider.chat_client.ToolCall`). The one
    reader of such calls: a history (:func:`messages_from_openai`) and a client's answer
    (``ChatClientProvider``); each checks the values its own way."""
    function = field_of(raw, "function")
    source = function if isinstance(function, dict) else raw
    return field_of(raw, "id"), field_of(source, "name"), field_of(source, "arguments")


def _call_part(raw: JsonValue, index: int) -> ToolCallPart:
    if not isinstance(raw, dict):
        raise ValueError(f"tool call {index}: expected a dict, got {type(raw).__name__}")
    call_id, name, arguments = tool_call_fields(raw)
    if not isinstance(name, str) or not name:
        raise ValueError(f"tool call {index}: no function name")
    return ToolCallPart(
        call_id if isinstance(call_id, str) and call_id else f"call_{index}",
        name,
        _arguments_text(arguments),
    )


def messages_from_openai(items: Iterable[JsonObject]) -> list[Message]:
    """OpenAI Chat message dicts as etcode messages: ``system``/``developer`` are skipped
    (etcode sends its own), consecutive ``tool`` messages become one tool-result message.
    Raises ``ValueError`` naming the item at fault."""
    out: list[Message] = []
    names: dict[str, str] = {}  # call id -> tool name, for the results
    calls = 0
    for position, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"message {position}: expected a dict, got {type(item).__name__}")
        role = item.get("role")
        text = _content_text(item.get("content"))
        if role in ("system", "developer"):
            continue
        if role == "user":
            content = item.get("content")
            if not isinstance(content, list) or not _has_image(content):
                out.append(Message("user", [TextPart(text)]))
            elif not (out and out[-1].role == "tool" and _give_back(content, out[-1])):
                out.append(Message("user", _user_parts(content)))
        elif role == "assistant":
            parts: list[Part] = [TextPart(text)] if text else []
            for raw in item.get("tool_calls") or []:
                call = _call_part(raw, calls)
                calls += 1
                names[call.id] = call.name
                parts.append(call)
            out.append(Message("assistant", parts))
        elif role == "tool":
            call_id = item.get("tool_call_id")
            if not isinstance(call_id, str) or not call_id:
                raise ValueError(f"message {position}: a tool message needs its tool_call_id")
            name = item.get("name")
            result = ToolResultPart(call_id, name if isinstance(name, str) else names.get(call_id, ""), text)
            if out and out[-1].role == "tool":
                out[-1].parts.append(result)
            else:
                out.append(Message("tool", [result]))
        else:
            raise ValueError(f"message {position}: unknown role {role!r}")
    return out


def _has_image(content: list[JsonValue]) -> bool:
    return any(isinstance(p, dict) and p.get("type") == "image_url" for p in content)


def _image_of(raw: JsonObject) -> Part:
    """An ``image_url`` part as an :class:`ImagePart` (a base64 ``data:`` URL), else as a
    text part naming the URL (etcode sends only the bytes it holds)."""
    field = raw.get("image_url")
    url = field.get("url") if isinstance(field, dict) else field
    url = url if isinstance(url, str) else ""
    head, sep, data = url.partition(",")
    if url.startswith("data:") and sep and head.endswith(";base64"):
        return ImagePart(head.removeprefix("data:").removesuffix(";base64"), data)
    return TextPart(f"[image: {url[:200]}]")


def _user_parts(content: list[JsonValue]) -> list[Part]:
    """A user message's content parts: text and images in their order."""
    parts: list[Part] = []
    for raw in content:
        if not isinstance(raw, dict):
            continue
        if raw.get("type") == "text":
            parts.append(TextPart(str(raw.get("text", ""))))
        elif raw.get("type") == "image_url":
            parts.append(_image_of(raw))
    return parts


def _give_back(content: list[JsonValue], tools: Message) -> bool:
    """When ``content`` is the user message :func:`messages_to_openai` writes after tool
    messages (a line naming each call, then its images), put the images back on those
    calls' results in ``tools`` and return True; leave everything as it was otherwise."""
    results = {r.call_id: r for r in tools.tool_results}
    found: dict[str, list[ImagePart]] = {}
    current: list[ImagePart] | None = None
    for raw in content:
        if not isinstance(raw, dict):
            return False
        if raw.get("type") == "text":
            words = str(raw.get("text", "")).removeprefix(TOOL_IMAGES_LEAD + " ").split(" ", 1)
            if not str(raw.get("text", "")).startswith(TOOL_IMAGES_LEAD) or words[0] not in results:
                return False
            current = found.setdefault(words[0], [])
        elif raw.get("type") == "image_url" and current is not None:
            image = _image_of(raw)
            if not isinstance(image, ImagePart):
                return False
            current.append(image)
        else:
            return False
    for call_id, images in found.items():
        results[call_id].images = [*(results[call_id].images or []), *images]
    return bool(found)

"""Tool calls a model wrote as text, recovered as tool calls.

Small models often write their call into the answer when the server's chat template did not
parse it: Hermes, Qwen and SmolLM2 ``<tool_call>{"name": …, "arguments": …}</tool_call>``,
Llama 3 a bare ``{"name": …, "parameters": …}`` (maybe after ``<|python_tag|>``), Mistral
``[TOOL_CALLS][{…}]`` or ``[TOOL_CALLS]name[ARGS]{…}``. One recogniser per model family
(the ``<tool_call>`` tags for every family: fine-tunes of any base use them), applied only
when tools were offered and no structured call came. A call in explicit markup is always
recovered: one that cannot be read (bad JSON, no name) or names a tool not offered becomes a
call the scheduler answers with an error, so the model is told and can try again. A bare
JSON object counts only when it names an offered tool (else it is an answer). The markup is
taken out of the stored answer's text.
"""

from __future__ import annotations

import json
import re
import secrets
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Literal

from etcode.provider.types import Message, Part, StreamChunk, StreamEnd, TextPart, ToolCallPart

Family = Literal["hermes", "llama", "mistral"]

#: The name of a recovered call that had none: the scheduler answers it "unknown tool",
#: listing the tools (a plain identifier: servers check the names sent back).
NO_NAME = "tool_call_without_name"

_TAG = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|\Z)", re.DOTALL)
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]{1,200})"')
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_NAMED = re.compile(r"\s*([A-Za-z_][\w.-]*)(?:\[CALL_ID\][\w-]*)?\[ARGS\]")
_PYTHON_TAG = "<|python_tag|>"
_MISTRAL_NAMES = ("mistral", "mixtral", "devstral", "codestral", "ministral", "magistral")

#: A recogniser: (text, offered names) -> (text left, calls), or None when it found none.
Recogniser = Callable[[str, Sequence[str]], "tuple[str, list[ToolCallPart]] | None"]


def family(model: str) -> Family:
    """Which text format ``model`` (an id, with or without a provider prefix) writes."""
    name = model.lower()
    if any(word in name for word in _MISTRAL_NAMES):
        return "mistral"
    if "llama" in name and "hermes" not in name:
        return "llama"
    return "hermes"


def _new_id() -> str:
    return "call_" + secrets.token_hex(6)


def _unfenced(text: str) -> str:
    match = _FENCE.match(text.strip())
    return match.group(1) if match else text.strip()


def _call_of(obj: object, raw: str) -> ToolCallPart:
    """A call from a decoded JSON value (``raw`` its text): one the scheduler refuses,
    telling the model why, when it is not a usable call."""
    if not isinstance(obj, dict):
        return ToolCallPart(_new_id(), NO_NAME, raw)
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip():
        return ToolCallPart(_new_id(), NO_NAME, json.dumps(obj))
    args = obj.get("arguments", obj.get("parameters", {}))
    if isinstance(args, str):  # some write the arguments as a JSON string
        return ToolCallPart(_new_id(), name.strip(), args)
    return ToolCallPart(_new_id(), name.strip(), json.dumps(args if args is not None else {}))


def _decode(raw: str) -> ToolCallPart:
    """A call from the text of one JSON object; bad JSON keeps its text as the arguments
    (the scheduler says they are not valid JSON) under the name it seems to give."""
    text = _unfenced(raw)
    try:
        return _call_of(json.loads(text), text)
    except (ValueError, RecursionError):
        match = _NAME.search(text)
        return ToolCallPart(_new_id(), match.group(1) if match else NO_NAME, text or "{")


def tagged(text: str, names: Sequence[str]) -> tuple[str, list[ToolCallPart]] | None:
    """``<tool_call>…</tool_call>`` blocks (the last may be unclosed: a stop word ate it)."""
    found = list(_TAG.finditer(text))
    if not found:
        return None
    return _TAG.sub("", text).strip(), [_decode(match.group(1)) for match in found]


def mistral(text: str, names: Sequence[str]) -> tuple[str, list[ToolCallPart]] | None:
    """``[TOOL_CALLS][{…}, …]`` (v3) or ``[TOOL_CALLS]name[ARGS]{…}`` (v11 on), repeated."""
    at = text.find(_MISTRAL)
    if at < 0:
        return None
    before, rest = text[:at], text[at:]
    decoder = json.JSONDecoder()
    calls: list[ToolCallPart] = []
    for piece in rest.split(_MISTRAL)[1:]:
        named = _MISTRAL_NAMED.match(piece)
        body = piece[named.end() :].strip() if named else piece.strip()
        try:
            value, _ = decoder.raw_decode(body)
        except (ValueError, RecursionError):
            calls.append(ToolCallPart(_new_id(), named.group(1), body or "{") if named else _decode(body))
            continue
        if named:
            calls.append(_call_of({"name": named.group(1), "arguments": value}, body))
        elif isinstance(value, list):
            calls.extend(_call_of(item, json.dumps(item)) for item in value)
        else:
            calls.append(_call_of(value, body))
    return before.strip(), calls or [ToolCallPart(_new_id(), NO_NAME, "{")]


def bare_json(text: str, names: Sequence[str]) -> tuple[str, list[ToolCallPart]] | None:
    """The whole answer one JSON object naming an offered tool (Llama 3's form)."""
    body = text.strip()
    if body.startswith(_PYTHON_TAG):
        body = body[len(_PYTHON_TAG) :]
    body = _unfenced(body)
    if not body.startswith("{"):
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    if not isinstance(value.get("parameters", value.get("arguments", {})), (dict, str)):
        return None
    return "", [_call_of(value, body)]


_RECOGNISERS: dict[Family, tuple[Recogniser, ...]] = {
    "hermes": (tagged,),
    "llama": (tagged, bare_json),
    "mistral": (mistral, tagged),
}


def recover(end: StreamEnd, names: Sequence[str], model: str) -> StreamEnd:
    """``end`` with the calls its text holds as tool calls (the markup out of its text),
    or ``end`` itself when it has a structured call, no tools were offered, or none is found."""
    message = end.message
    if not names or message.tool_calls or end.stop_reason == "max_tokens":
        return end
    text = message.text
    if not text.strip():
        return end
    for recogniser in _RECOGNISERS[family(model)]:
        found = recogniser(text, names)
        if found is None:
            continue
        left, calls = found
        parts: list[Part] = [p for p in message.parts if not isinstance(p, TextPart)]
        if left:
            parts.append(TextPart(left))
        return StreamEnd(Message("assistant", [*parts, *calls]), end.usage, "tool_use")
    return end


async def recovering(
    chunks: AsyncIterator[StreamChunk], names: Sequence[str], model: str
) -> AsyncIterator[StreamChunk]:
    """``chunks`` as they come, the final message with the calls its text holds."""
    try:
        async for chunk in chunks:
            yield recover(chunk, names, model) if isinstance(chunk, StreamEnd) else chunk
    finally:
        aclose = getattr(chunks, "aclose", None)
        if aclose is not None:
            await aclose()

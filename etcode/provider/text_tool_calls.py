"""Tool calls a model wrote as text, recovered as tool calls.

Small models often write their call into the answer when the server's chat template did not
parse it: Hermes, Qwen and SmolLM2 ``<tool_call>{"name": …, "arguments": …}</tool_call>``,
Llama 3 a bare ``{"name": …, "parameters": …}`` (maybe after ``<|python_tag|>``), Mistral
``[TOOL_CALLS][{…}]`` or ``[TOOL_CALLS]name[ARGS]{…}``. One recogniser per model family
(the ``<tool_call>`` tags for every family: fine-tunes of any base use them), applied only
when tools were offered and no structured call came (and only for a local or self-hosted
server: ``OpenAIProvider.stream``). The markup counts only as the answer's call block, never
as prose or an example about it: a tag starts a line outside any code fence, the blocks run
to the end of the answer (only whitespace or an end token after them; prose before them is
fine, as Hermes models write "I'll check.\n<tool_call>…"), an unclosed tag only as the last
block and before a JSON object. Such a block is always recovered: one that cannot be read
(bad JSON, no name) or names a tool not offered becomes a call the scheduler answers with an
error, so the model is told and can try again. A bare JSON object counts only when it is the
whole answer, names an offered tool and holds its ``parameters``/``arguments`` object (else
it is an answer). The markup is taken out of the stored answer's text.
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

_OPEN, _CLOSE = "<tool_call>", "</tool_call>"
#: A tag that starts a line (only spaces before it on that line).
_LINE_TAG = re.compile(r"^[ \t]*<tool_call>", re.MULTILINE)
#: A code fence's opening or closing line.
_FENCE_LINE = re.compile(r"^[ \t]*(?:```|~~~)", re.MULTILINE)
#: What a server may leave after the last block: end-of-turn tokens.
_END_TOKENS = re.compile(r"(?:<\|[a-z_]+\|>|</s>|\s)*\Z")
_FENCE = re.compile(r"\A```(?:json)?\s*(.*?)\s*```\Z", re.DOTALL)
_NAME = re.compile(r'"name"\s*:\s*"([^"\\]{1,200})"')
_MISTRAL = "[TOOL_CALLS]"
_MISTRAL_LINE = re.compile(r"^[ \t]*\[TOOL_CALLS\]", re.MULTILINE)
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


def _in_fence(text: str, at: int) -> bool:
    """Whether position ``at`` lies inside a code fence (an odd number of fence lines before)."""
    return len(_FENCE_LINE.findall(text, 0, at)) % 2 == 1


def _blocks(text: str, at: int) -> list[str] | None:
    """The bodies of the ``<tool_call>`` blocks from ``at`` to the end of ``text`` (the last
    may be unclosed: a stop word ate it), or None when anything but whitespace or an end
    token stands between or after them."""
    bodies: list[str] = []
    rest = text[at:]
    while True:
        rest = rest.lstrip()
        if not rest.startswith(_OPEN):
            return bodies if bodies and _END_TOKENS.match(rest) else None
        rest = rest[len(_OPEN) :]
        end = rest.find(_CLOSE)
        if end < 0:  # the last block, unclosed: a call only when a JSON object follows
            body = _END_TOKENS.sub("", rest).strip()
            if body and not body.startswith(("{", "```")):
                return None
            bodies.append(body)
            return bodies
        bodies.append(rest[:end].strip())
        rest = rest[end + len(_CLOSE) :]


def tagged(text: str, names: Sequence[str]) -> tuple[str, list[ToolCallPart]] | None:
    """The ``<tool_call>…</tool_call>`` blocks that end the answer, each starting a line
    outside a code fence; the text before them is kept."""
    for match in _LINE_TAG.finditer(text):
        if _in_fence(text, match.start()):
            continue
        bodies = _blocks(text, match.start())
        if bodies is not None:
            return text[: match.start()].strip(), [_decode(body) for body in bodies]
    return None


def mistral(text: str, names: Sequence[str]) -> tuple[str, list[ToolCallPart]] | None:
    """``[TOOL_CALLS][{…}, …]`` (v3) or ``[TOOL_CALLS]name[ARGS]{…}`` (v11 on), repeated."""
    at = next(
        (m.start() for m in _MISTRAL_LINE.finditer(text) if not _in_fence(text, m.start())),
        -1,
    )
    if at < 0:
        return None
    at = text.index(_MISTRAL, at)
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
    """The whole answer one JSON object naming an offered tool with its ``parameters`` (or
    ``arguments``) object (Llama 3's form, maybe after ``<|python_tag|>``)."""
    body = text.strip()
    if body.startswith(_PYTHON_TAG):
        body = body[len(_PYTHON_TAG) :].strip()
    if not body.startswith("{"):
        return None
    try:
        value = json.loads(body)
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict) or value.get("name") not in names:
        return None
    args = value.get("parameters", value.get("arguments"))
    if not isinstance(args, dict):
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

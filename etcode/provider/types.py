"""Wire-neutral chat types shared by every provider adapter and the session loop.

A conversation is a list of :class:`Message`. Each message holds ordered parts. The
adapters translate these to and from the OpenAI Chat Completions and Anthropic
Messages formats; nothing here knows about either.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from typing import Literal

from etcode.util.json_types import JsonObject

Role = Literal["user", "assistant", "tool"]


@dataclass
class TextPart:
    text: str
    type: Literal["text"] = "text"


@dataclass
class ReasoningPart:
    """Model thinking. ``signature`` (Anthropic) must be sent back unchanged;
    ``redacted_data`` holds an Anthropic ``redacted_thinking`` block's data."""

    text: str = ""
    signature: str | None = None
    redacted_data: str | None = None
    type: Literal["reasoning"] = "reasoning"


@dataclass
class ToolCallPart:
    """A call the model made. ``arguments`` is the raw JSON text as streamed."""

    id: str
    name: str
    arguments: str = ""
    type: Literal["tool_call"] = "tool_call"

    def parsed_arguments(self) -> JsonObject:
        """The arguments as a dict. Raises ``ValueError`` when they are not a JSON object."""
        text = self.arguments.strip() or "{}"
        try:
            value = json.loads(text)
        except RecursionError:
            raise ValueError("the arguments are nested too deeply to read") from None
        if not isinstance(value, dict):
            raise ValueError("tool arguments must be a JSON object")
        return value


@dataclass
class ToolResultPart:
    """A tool's answer to a call. ``output`` is what the model sees. ``summary`` (the
    ``└`` line) and ``data`` (small structured facts, e.g. an Edit's diff) are what the
    chat showed; they are stored for replay and never sent to a model (None: not kept,
    e.g. a result stored by an older etcode)."""

    call_id: str
    name: str
    output: str
    is_error: bool = False
    type: Literal["tool_result"] = "tool_result"
    summary: str | None = None
    data: JsonObject | None = None
    #: Images the tool returned (ReadFile of a PNG); None: none. Anthropic carries them
    #: inside the ``tool_result`` block, OpenAI-compatible servers in a user message after it.
    images: list[ImagePart] | None = None


@dataclass
class ImagePart:
    """An image the model sees: ``data`` is the encoded file (PNG, JPEG, GIF or WebP) in
    base64, already within the providers' limits (``etcode/util/images.py`` makes one).
    ``name`` is what a person calls it (a file name; replay shows ``[image: NAME W×H]``).
    In a user message it sits among the text parts; a tool's images ride on its
    :class:`ToolResultPart` (``images``). ``sha256`` (of the decoded bytes) names the
    stored copy: the session keeps images outside SQLite, ``data`` empty until loaded."""

    media_type: str
    data: str
    width: int = 0
    height: int = 0
    name: str = ""
    sha256: str = ""
    type: Literal["image"] = "image"


def image_label(image: ImagePart) -> str:
    """``[image: NAME W×H]``: an image in replay and in text-only places (here, not in
    ``provider/images.py``, so that a run without images never imports that module)."""
    return f"[image: {image.name or 'image'} {image.width}×{image.height}]"


Part = TextPart | ReasoningPart | ToolCallPart | ToolResultPart | ImagePart

_PART_TYPES: dict[str, type] = {
    "text": TextPart,
    "reasoning": ReasoningPart,
    "tool_call": ToolCallPart,
    "tool_result": ToolResultPart,
    "image": ImagePart,
}


@dataclass
class Message:
    """One chat message. Roles: ``user`` (text), ``assistant`` (text, reasoning,
    tool calls) and ``tool`` (tool results answering the previous assistant message)."""

    role: Role
    parts: list[Part] = field(default_factory=list)

    @classmethod
    def user(cls, text: str) -> Message:
        from etcode.util.text import clean_text

        return cls("user", [TextPart(clean_text(text))])

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    def to_dict(self) -> JsonObject:
        return {"role": self.role, "parts": [_part_dict(p) for p in self.parts]}

    @classmethod
    def from_dict(cls, data: JsonObject) -> Message:
        parts: list[Part] = []
        for raw in data.get("parts", []):
            kind = _PART_TYPES[raw["type"]]
            known = _FIELDS[kind]  # keys a newer etcode added are skipped, not fatal
            values = {k: v for k, v in raw.items() if k != "type" and k in known}
            if kind is ToolResultPart and values.get("images") is not None:
                values["images"] = [_image_of(image) for image in values["images"]]
            parts.append(kind(**values))
        return cls(data["role"], parts)

    @property
    def images(self) -> list[ImagePart]:
        """Every image of the message: its own, then those of its tool results."""
        own = [p for p in self.parts if isinstance(p, ImagePart)]
        return own + [i for r in self.tool_results for i in r.images or []]


_FIELDS: dict[type, frozenset[str]] = {
    kind: frozenset(f.name for f in fields(kind)) for kind in _PART_TYPES.values()
}
#: Optional fields left out of the JSON when unset (old rows stay as they were).
_OPTIONAL = ("summary", "data", "images")


def _image_of(raw: JsonObject) -> ImagePart:
    known = _FIELDS[ImagePart]
    return ImagePart(**{k: v for k, v in raw.items() if k != "type" and k in known})


def _part_dict(part: Part) -> JsonObject:
    raw = asdict(part)
    if isinstance(part, ToolResultPart):
        for key in _OPTIONAL:
            if raw.get(key) is None:
                raw.pop(key, None)
    return raw


@dataclass
class ToolSchema:
    """What the model is told about one tool."""

    name: str
    description: str
    parameters: JsonObject


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens
        self.reasoning_tokens += other.reasoning_tokens

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class ModelRequest:
    """Everything one model call needs, independent of the wire format."""

    model: str
    system: list[str]
    messages: list[Message]
    tools: list[ToolSchema] = field(default_factory=list)
    max_tokens: int | None = None
    temperature: float | None = None
    extra: JsonObject = field(default_factory=dict)
    #: The model must answer in text (a hard step limit's last step): the tools stay only
    #: where the wire needs them for the history's calls (Anthropic, with ``tool_choice``
    #: ``none``); elsewhere none are sent.
    tools_off: bool = False


# ---- stream chunks yielded by ``Provider.stream`` ---------------------------------


@dataclass
class TextDelta:
    text: str
    kind: Literal["text_delta"] = "text_delta"


@dataclass
class ReasoningDelta:
    text: str
    kind: Literal["reasoning_delta"] = "reasoning_delta"


@dataclass
class ToolCallStarted:
    """The model began a tool call (its name is known, arguments follow)."""

    index: int
    id: str
    name: str
    kind: Literal["tool_call_started"] = "tool_call_started"


@dataclass
class ToolCallArgsDelta:
    index: int
    fragment: str
    kind: Literal["tool_call_args_delta"] = "tool_call_args_delta"


@dataclass
class RetryNotice:
    """The provider is about to retry a failed request after ``delay`` seconds."""

    attempt: int
    delay: float
    reason: str
    kind: Literal["retry"] = "retry"
    #: The failed request's HTTP status (None: no answer, e.g. a cut connection).
    status: int | None = None
    #: How many attempts there are in all (the first and its retries).
    attempts: int | None = None


@dataclass
class StreamEnd:
    """Always the last chunk of a successful stream: the assembled assistant message."""

    message: Message
    usage: Usage
    stop_reason: str  # "end_turn" | "tool_use" | "max_tokens" | provider-specific
    kind: Literal["stream_end"] = "stream_end"


StreamChunk = TextDelta | ReasoningDelta | ToolCallStarted | ToolCallArgsDelta | RetryNotice | StreamEnd

"""Tolerant JSON for model answers: code fences, prose around the object, trailing
commas — and partial JSON while the answer is still streaming.

``parse_object(text)`` returns the first JSON object found or raises
:class:`JsonAnswerError` with a message fit to send back to the model.
``parse_partial(text)`` returns the best object a truncated answer allows (open
strings closed, the unfinished last member dropped; pydantic-core reads it), or None.
"""

from __future__ import annotations

import json
import re

from etcode.util.json_types import JsonObject, JsonValue

_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_-]*)[ \t]*\n(.*?)(?:```|\Z)", re.DOTALL)
_TRAILING_COMMA = re.compile(r",(\s*[}\]])")
_MAX_STARTS = 20

_decoder = json.JSONDecoder()


class JsonAnswerError(ValueError):
    """The answer holds no usable JSON object; ``str()`` says why."""


def _candidates(text: str) -> list[str]:
    """Fenced blocks first (``json`` ones before others), then the whole text."""
    fenced = [(lang.lower(), body) for lang, body in _FENCE.findall(text)]
    ordered = [body for lang, body in fenced if lang in ("json", "jsonc")]
    ordered += [body for lang, body in fenced if lang not in ("json", "jsonc")]
    return [*ordered, text]


def _decode_at(text: str, start: int) -> JsonValue:
    try:
        return _decoder.raw_decode(text, start)[0]
    except json.JSONDecodeError:
        fixed = _TRAILING_COMMA.sub(r"\1", text[start:])
        return _decoder.raw_decode(fixed)[0]


def parse_object(text: str) -> JsonObject:
    """The first JSON object in ``text`` (a model's answer). Raises :class:`JsonAnswerError`."""
    first_error: json.JSONDecodeError | None = None
    for candidate in _candidates(text):
        starts = [m.start() for m in re.finditer(r"\{", candidate)][:_MAX_STARTS]
        for start in starts:
            try:
                value = _decode_at(candidate, start)
            except json.JSONDecodeError as err:
                first_error = first_error or err
                continue
            except RecursionError:
                raise JsonAnswerError("the JSON object is nested too deeply to read") from None
            if isinstance(value, dict):
                return value
    if first_error is not None:
        raise JsonAnswerError(
            f"the JSON object is not valid: {first_error.msg} (line {first_error.lineno}, column {first_error.colno})"
        )
    raise JsonAnswerError("the answer contains no JSON object")


# ---- partial JSON (streaming) ---------------------------------------------------------


def _partial_start(text: str) -> int:
    fence = _FENCE.search(text)
    if fence is not None:
        inner = text.find("{", fence.start(2))
        if inner >= 0:
            return inner
    return text.find("{")


def parse_partial(text: str) -> JsonObject | None:
    """The object a streaming (possibly cut) answer holds so far, or None: pydantic-core's
    partial JSON reader (an open string kept as far as it goes, an unfinished member
    dropped), after the fence and trailing commas are taken off."""
    from pydantic_core import from_json

    start = _partial_start(text)
    if start < 0:
        return None
    body = text[start:]
    fence_end = body.find("```")
    if fence_end >= 0:
        body = body[:fence_end]
    try:
        value = from_json(_TRAILING_COMMA.sub(r"\1", body), allow_partial="trailing-strings")
    except ValueError:  # not JSON, or nested too deeply
        return None
    return value if isinstance(value, dict) else None

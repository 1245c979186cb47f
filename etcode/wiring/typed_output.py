"""An ``Agent``'s ``output_type``: the JSON schema told to the model after the task
(``prompts/output/schema.txt``), the final answer read as JSON and validated with pydantic,
and the message that sends a validation error back for the one repair round
(``prompts/output/repair.txt``)."""

from __future__ import annotations

import json
import re
from typing import Generic, TypeVar

from pydantic import TypeAdapter, ValidationError

from etcode.prompt.templates import load, render

T = TypeVar("T")

#: A fenced block (```json … ```), whose inside is the answer.
_FENCE = re.compile(r"```[A-Za-z0-9_-]*[ \t]*\n(.*?)\n?```", re.DOTALL)


class TypedOutput(Generic[T]):
    """The validation of final answers as ``output_type`` (a pydantic model, a dataclass, a
    ``TypedDict``: anything pydantic's ``TypeAdapter`` takes)."""

    def __init__(self, output_type: type[T]) -> None:
        self.output_type = output_type
        self.adapter: TypeAdapter[T] = TypeAdapter(output_type)
        self.name = getattr(output_type, "__name__", repr(output_type))

    def instructions(self) -> str:
        """What the model is told after the task: answer with JSON of this schema."""
        schema = json.dumps(self.adapter.json_schema(), ensure_ascii=False)
        return render(load("output/schema.txt"), {"schema": schema}).strip()

    def validate(self, text: str) -> tuple[T | None, ValidationError | None]:
        """The answer as ``output_type`` and None, or None and pydantic's errors: the first
        JSON value in it that validates (:func:`json_candidates`), else the first one's errors."""
        first: ValidationError | None = None
        for candidate in json_candidates(text):
            try:
                return self.adapter.validate_json(candidate), None
            except ValidationError as err:
                first = first or err
        assert first is not None  # the last candidate is the whole text
        return None, first

    def repair(self, errors: str) -> str:
        """The message that asks the model to correct its answer."""
        return render(load("output/repair.txt"), {"errors": errors}).strip()


def summary(errors: ValidationError) -> str:
    """pydantic's errors in one line: where and what, for the first three."""
    found = errors.errors(include_url=False)
    items = [f"{'.'.join(str(part) for part in e['loc']) or 'value'}: {e['msg']}" for e in found[:3]]
    more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
    return "; ".join(items) + more


def json_candidates(text: str) -> list[str]:
    """The JSON values an answer may be, in order: those of its fenced block, then those
    of the whole text, each a complete value from a ``{`` or ``[`` (text around it, a
    trailing ``[1]`` citation included, is left out), and last the whole text stripped."""
    fenced = _FENCE.search(text)
    found: list[str] = []
    for part in (fenced.group(1), text) if fenced else (text,):
        for value in _values(part):
            if value not in found:
                found.append(value)
    found.append(text.strip())
    return found


def _values(text: str) -> list[str]:
    """Each complete JSON object or array starting at a ``{`` or ``[`` of ``text`` (one
    inside another found already is skipped)."""
    decoder = json.JSONDecoder()
    values: list[str] = []
    covered = 0
    for match in re.finditer(r"[{\[]", text):
        start = match.start()
        if start < covered:
            continue
        try:
            _, end = decoder.raw_decode(text, start)
        except ValueError:
            continue
        values.append(text[start:end])
        covered = end
    return values

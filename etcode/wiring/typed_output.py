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
        """The answer as ``output_type`` and None, or None and pydantic's errors."""
        try:
            return self.adapter.validate_json(json_part(text)), None
        except ValidationError as err:
            return None, err

    def repair(self, errors: str) -> str:
        """The message that asks the model to correct its answer."""
        return render(load("output/repair.txt"), {"errors": errors}).strip()


def summary(errors: ValidationError) -> str:
    """pydantic's errors in one line: where and what, for the first three."""
    found = errors.errors(include_url=False)
    items = [f"{'.'.join(str(part) for part in e['loc']) or 'value'}: {e['msg']}" for e in found[:3]]
    more = f" (and {len(found) - 3} more)" if len(found) > 3 else ""
    return "; ".join(items) + more


def json_part(text: str) -> str:
    """The JSON of an answer: the inside of its fenced block, else from its first ``{`` or
    ``[`` to its last ``}`` or ``]`` (text around it is left out), else the whole text."""
    fenced = _FENCE.search(text)
    if fenced:
        text = fenced.group(1)
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    end = max(text.rfind("}"), text.rfind("]"))
    if starts and end > min(starts):
        return text[min(starts) : end + 1]
    return text.strip()

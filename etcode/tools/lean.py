"""Lean tool schemas for small context windows: the same tools, shorter words.

:func:`lean_schema` keeps everything that decides which arguments are valid (types,
enums, required, defaults, items, ``$defs``/``$ref``, bounds) and shortens only what the
model reads: the tool's description comes from ``prompts/lean/tools/<name>.txt`` when
that file exists (else the first sentence of the full one), each parameter description
is cut to its first sentence and pydantic's ``title`` annotations are dropped. The full
schema is never changed; the lean one is built once per schema object.
"""

from __future__ import annotations

import functools
import re
import threading
import weakref
from collections.abc import Iterable
from copy import deepcopy

from etcode.prompt import templates
from etcode.provider.types import ToolSchema
from etcode.util.json_types import JsonObject, JsonValue

__all__ = ["first_sentence", "lean_schema", "lean_schemas", "lean_tool_text", "short_param"]

#: A tool description without a lean text file is cut to about this many characters.
DESCRIPTION_CHARS = 200
#: A parameter description is cut to about this many characters.
PARAM_CHARS = 100
#: Built-in tools a small window is not offered, and parameters its tools go without:
#: background processes (a model with a small window polls badly and fills it with logs).
LEFT_OUT_TOOLS = frozenset({"BashOutput", "KillBash"})
LEFT_OUT_PARAMS: dict[str, tuple[str, ...]] = {"Bash": ("run_in_background",)}

# Keywords whose value is one subschema, a list of subschemas, or a name → subschema map.
_ONE = frozenset(
    {
        "items",
        "additionalProperties",
        "additionalItems",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "unevaluatedItems",
        "unevaluatedProperties",
    }
)
_MANY = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_NAMED = frozenset({"properties", "patternProperties", "$defs", "definitions", "dependentSchemas"})

# The end of a sentence: ., ! or ? before white space or the end, not after "e.g"/"i.e"/"etc".
_SENTENCE_END = re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)[.!?](?=\s|$)")

# Asides a parameter can do without: "(default 1)", "(e.g. 'x')", ", e.g. "*.py" or "*.ts"".
_ASIDE = re.compile(r"\s*\((?:e\.g\.|i\.e\.|default\b|for example\b)[^()]*\)|,? e\.g\. .*$", re.IGNORECASE)

_lock = threading.Lock()
_cache: dict[int, tuple[weakref.ref[ToolSchema], ToolSchema]] = {}


def first_sentence(text: str, limit: int) -> str:
    """The first sentence of ``text``'s first paragraph line, cut at a word to ``limit`` chars."""
    line = text.strip().split("\n", 1)[0].strip()
    end = _SENTENCE_END.search(line)
    sentence = line[: end.end()] if end else line
    if len(sentence) <= limit:
        return sentence
    cut = sentence[: limit - 1]
    space = cut.rfind(" ")
    if space > limit // 2:
        cut = cut[:space]
    return cut.rstrip(" ,;:-") + "…"


def short_param(text: str) -> str:
    """A parameter description for the lean schema: its first sentence without examples or
    stated defaults (the schema keeps ``default``), at most :data:`PARAM_CHARS` characters."""
    sentence = first_sentence(text, len(text))
    bare = _ASIDE.sub("", sentence).strip()
    if len(bare) >= 8 and bare != sentence:
        sentence = bare if bare.endswith((".", "!", "?")) else bare + "."
    return first_sentence(sentence, PARAM_CHARS)


def lean_tool_text(name: str) -> str | None:
    """The text of ``prompts/lean/tools/<name>.txt``, or None when there is none."""
    if not re.fullmatch(r"[A-Za-z0-9_\-]+", name):
        return None
    path = f"lean/tools/{name}.txt"
    return templates.load(path).strip() if templates.exists(path) else None


def _lean_description(schema: ToolSchema) -> str:
    text = lean_tool_text(schema.name)
    if text is None:
        return first_sentence(schema.description, DESCRIPTION_CHARS)
    if "{{catalog}}" in text:  # Task: keep the list of subagents of the full description
        from etcode.tools.task import CATALOG_HEADING

        _, found, catalog = schema.description.partition(CATALOG_HEADING)
        text = templates.render(text, {"catalog": catalog.strip() if found else "- general"})
    return text


def _lean_node(node: JsonValue) -> JsonValue:
    """A copy of one JSON Schema node with titles dropped and descriptions shortened."""
    if not isinstance(node, dict):
        return deepcopy(node)  # booleans (``additionalProperties: false``) and odd values
    out: JsonObject = {}
    for key, value in node.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "description" and isinstance(value, str):
            out[key] = short_param(value)
        elif key in _NAMED and isinstance(value, dict):
            out[key] = {name: _lean_node(sub) for name, sub in value.items()}
        elif key in _MANY and isinstance(value, list):
            out[key] = [_lean_node(sub) for sub in value]
        elif key in _ONE or (key == "items" and isinstance(value, list)):
            out[key] = [_lean_node(sub) for sub in value] if isinstance(value, list) else _lean_node(value)
        else:
            out[key] = deepcopy(value)  # enum, default, required, const, examples...: data
    return out


def _without(schema: ToolSchema) -> JsonObject:
    """The parameters of ``schema`` without those a small window goes without."""
    dropped = LEFT_OUT_PARAMS.get(schema.name)
    properties = schema.parameters.get("properties")
    if not dropped or not isinstance(properties, dict):
        return schema.parameters
    kept: JsonObject = dict(schema.parameters)
    kept["properties"] = {name: value for name, value in properties.items() if name not in dropped}
    required = schema.parameters.get("required")
    if isinstance(required, list):
        kept["required"] = [name for name in required if name not in dropped]
    return kept


def _forget_collected(key: int, _ref: weakref.ref[ToolSchema]) -> None:
    with _lock:
        _cache.pop(key, None)


def lean_schema(schema: ToolSchema) -> ToolSchema:
    """The lean form of ``schema`` (a new object; ``schema`` itself is left as it is).

    Built once per schema object: schemas are not changed once built.
    """
    key = id(schema)
    with _lock:
        hit = _cache.get(key)
        if hit is not None and hit[0]() is schema:
            return hit[1]
    lean = ToolSchema(schema.name, _lean_description(schema), _lean_node(_without(schema)))
    with _lock:
        _cache[key] = (weakref.ref(schema, functools.partial(_forget_collected, key)), lean)
    return lean


def lean_schemas(schemas: Iterable[ToolSchema]) -> list[ToolSchema]:
    """:func:`lean_schema` of each schema, in order, without :data:`LEFT_OUT_TOOLS`."""
    return [lean_schema(schema) for schema in schemas if schema.name not in LEFT_OUT_TOOLS]

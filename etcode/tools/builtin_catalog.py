"""The built-in tools as the model sees them, without importing them.

``builtin_catalog.json`` (next to this file) holds each built-in tool's name, description,
flags and parameter schema, in the order the model sees them. A session offers the tools
from it (:class:`etcode.tools.lazy.LazyTool`) and imports a tool's module on its first
call: importing the ten tool modules and generating their schemas cost ~30 ms of every
``etcode run``, most of which never calls most tools.

The file is generated from the tools themselves; ``tests/test_tool_catalog.py`` fails
when it is stale. Regenerate it with ``python -m etcode.tools.builtin_catalog``.
"""

from __future__ import annotations

import importlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from etcode.util.json_types import JsonObject

if TYPE_CHECKING:
    from etcode.tools.base import Tool

CATALOG_FILE = Path(__file__).with_name("builtin_catalog.json")

#: Every built-in tool's class, in the order the model sees them.
BUILTIN_CLASSES: tuple[str, ...] = (
    "etcode.tools.read_file:ReadFileTool",
    "etcode.tools.read_many_files:ReadManyFilesTool",
    "etcode.tools.list_files:ListFilesTool",
    "etcode.tools.glob_tool:GlobTool",
    "etcode.tools.grep:GrepTool",
    "etcode.tools.write_file:WriteFileTool",
    "etcode.tools.edit:EditTool",
    "etcode.tools.bash:BashTool",
    "etcode.tools.bash_output:BashOutputTool",
    "etcode.tools.bash_output:KillBashTool",
    "etcode.tools.web_fetch:WebFetchTool",
    "etcode.tools.todo:TodoWriteTool",
)


@dataclass(frozen=True)
class CatalogEntry:
    """One built-in tool: where its class is and what the model is told about it."""

    cls: str  # "module:Class"
    name: str
    description: str
    is_read_only: bool
    checks_permission: bool
    parameters: JsonObject


def load_class(path: str) -> type[Tool]:
    """The tool class at ``"module:Class"``."""
    module_name, _, class_name = path.partition(":")
    tool_class: type[Tool] = getattr(importlib.import_module(module_name), class_name)
    return tool_class


def entry_of(path: str) -> CatalogEntry:
    """The catalog entry of the tool class at ``path``, from the class itself."""
    tool = load_class(path)()
    schema = tool.schema()
    return CatalogEntry(
        cls=path,
        name=schema.name,
        description=schema.description,
        is_read_only=bool(tool.is_read_only),
        checks_permission=bool(tool.checks_permission),
        parameters=schema.parameters,
    )


def generate() -> list[JsonObject]:
    """The catalog as it should be: every built-in tool imported and asked."""
    return [vars(entry_of(path)) for path in BUILTIN_CLASSES]


def builtin_catalog() -> tuple[CatalogEntry, ...]:
    """The built-in tools, from the generated file (fresh objects each call: a session may
    not share a schema dict with another)."""
    raw = json.loads(CATALOG_FILE.read_text(encoding="utf-8"))
    return tuple(CatalogEntry(**item) for item in raw)


def render(entries: list[JsonObject]) -> str:
    """The file's text for ``entries`` (stable: the staleness test compares it)."""
    return json.dumps(entries, indent=1, ensure_ascii=False) + "\n"


def main() -> int:
    """Write ``builtin_catalog.json`` from the tools (``python -m etcode.tools.builtin_catalog``)."""
    CATALOG_FILE.write_text(render(generate()), encoding="utf-8")
    sys.stdout.write(f"wrote {CATALOG_FILE}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

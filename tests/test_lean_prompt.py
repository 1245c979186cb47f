"""The lean prompt for small windows (issue 14): the same tools with shorter words, a short
provider prompt, and a first request of at most 2,500 tokens; the default prompt unchanged."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from etcode.agent import get_agent
from etcode.prompt import templates
from etcode.prompt.instruction import InstructionPrompt
from etcode.prompt.system import SystemPrompt
from etcode.provider.types import ToolSchema
from etcode.tools.base import Tool, ToolContext, ToolResult, tool
from etcode.tools.lean import (
    LEFT_OUT_PARAMS,
    LEFT_OUT_TOOLS,
    PARAM_CHARS,
    first_sentence,
    lean_schema,
    lean_schemas,
    short_param,
)
from etcode.tools.registry import builtin_tools
from etcode.tools.task import TaskTool
from etcode.util.tokens import count_tokens, tokenizer_for
from tests.require import missing

ANNOTATIONS = ("title", "description")
# Keywords whose value holds subschemas (a schema, a list of them, or a name → schema map).
ONE = {"items", "additionalProperties", "not", "if", "then", "else", "contains", "propertyNames"}
MANY = {"anyOf", "oneOf", "allOf", "prefixItems"}
NAMED = {"properties", "patternProperties", "$defs", "definitions"}


class Subagents:
    """A ``Task`` runner with the two built-in subagents (only its catalog is used)."""

    def catalog(self) -> dict[str, str]:
        return {"general": "General-purpose sub-agent.", "explore": "Fast read-only sub-agent."}

    def is_read_only(self, name: str) -> bool:
        return name == "explore"

    async def run(self, name: str, description: str, prompt: str, ctx: ToolContext) -> ToolResult:
        raise AssertionError("not run here")


def all_tools() -> list[Tool]:
    """The tools a small window is offered (not the background processes' own)."""
    return [t for t in (*builtin_tools(), TaskTool(Subagents())) if t.name not in LEFT_OUT_TOOLS]


def offered(full: ToolSchema) -> dict[str, Any]:
    """``full``'s parameters without those a small window goes without."""
    parameters = copy.deepcopy(full.parameters)
    for name in LEFT_OUT_PARAMS.get(full.name, ()):
        del parameters["properties"][name]
    return parameters


def validation_only(node: Any) -> Any:
    """A schema without its annotations (title, description): what decides validity."""
    if not isinstance(node, dict):
        return node
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ANNOTATIONS and isinstance(value, str):
            continue
        if key in NAMED and isinstance(value, dict):
            out[key] = {name: validation_only(sub) for name, sub in value.items()}
        elif key in MANY and isinstance(value, list):
            out[key] = [validation_only(sub) for sub in value]
        elif key in ONE:
            out[key] = validation_only(value)
        else:
            out[key] = value
    return out


def schema_nodes(node: Any) -> list[dict[str, Any]]:
    """Every subschema of ``node`` (itself included)."""
    if not isinstance(node, dict):
        return []
    found = [node]
    for key, value in node.items():
        if key in NAMED and isinstance(value, dict):
            for sub in value.values():
                found += schema_nodes(sub)
        elif key in MANY and isinstance(value, list):
            for sub in value:
                found += schema_nodes(sub)
        elif key in ONE:
            found += schema_nodes(value)
    return found


# Arguments each tool must accept (valid) and refuse (invalid), under both schemas.
SAMPLES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "ReadFile": (
        [
            {"file_path": "a.py"},
            {"file_path": "a.py", "offset": 3, "limit": 10},
            {"file_path": "a", "offset": None},
        ],
        [{}, {"file_path": "a", "offset": 0}, {"file_path": "a", "limit": "ten"}, {"file_path": "a", "x": 1}],
    ),
    "ReadManyFiles": (
        [{"paths": ["src/**/*.py"]}, {"paths": ["a"], "exclude": ["*.log"], "use_default_excludes": False}],
        [
            {"paths": []},
            {"paths": "a.py"},
            {"include": ["a"]},
            {"paths": ["a"], "use_default_excludes": "no"},
        ],
    ),
    "ListFiles": ([{}, {"path": "src", "ignore": ["*.log"]}], [{"ignore": "*.log"}, {"depth": 2}]),
    "Glob": ([{"pattern": "**/*.py"}, {"pattern": "*", "path": None}], [{}, {"pattern": 3}]),
    "Grep": (
        [{"pattern": "TODO", "output_mode": "files"}, {"pattern": "x", "include": "*.py", "path": "src"}],
        [{"pattern": "x", "output_mode": "lines"}, {"path": "src"}],
    ),
    "WriteFile": (
        [{"file_path": "a", "content": ""}],
        [{"file_path": "a"}, {"file_path": "a", "content": 1}],
    ),
    "Edit": (
        [{"file_path": "a", "old_string": "x", "new_string": "y", "replace_all": True}],
        [
            {"file_path": "a", "old_string": "x"},
            {"file_path": "a", "old_string": "x", "new_string": "y", "all": 1},
        ],
    ),
    "Bash": (
        [{"command": "ls"}, {"command": "make", "timeout": 1000, "description": "Build"}],
        [{"command": "ls", "timeout": 0}, {"description": "nothing"}],
    ),
    "WebFetch": (
        [{"url": "https://example.com", "format": "text", "timeout": 2.5}],
        [{"url": "https://example.com", "format": "pdf"}, {"url": "https://e.com", "timeout": 0}],
    ),
    "TodoWrite": (
        [
            {"todos": []},
            {"todos": [{"content": "Run tests", "status": "in_progress", "activeForm": "Running"}]},
        ],
        [{"todos": [{"content": "", "status": "pending"}]}, {"todos": [{"content": "x", "status": "done"}]}],
    ),
    "Task": (
        [{"description": "Find it", "prompt": "Find the parser", "subagent_type": "explore"}],
        [
            {"description": "x", "prompt": "", "subagent_type": "explore"},
            {"prompt": "x", "subagent_type": "y"},
        ],
    ),
}


def test_every_builtin_tool_has_a_lean_text_file() -> None:
    for item in all_tools():
        assert templates.exists(f"lean/tools/{item.name}.txt"), item.name
    assert set(SAMPLES) == {item.name for item in all_tools()}


@pytest.mark.parametrize("item", all_tools(), ids=lambda item: item.name)
def test_lean_schema_keeps_what_decides_validity(item: Tool) -> None:
    full = item.schema()
    lean = lean_schema(full)
    assert lean.name == full.name
    assert lean.parameters["properties"].keys() == offered(full)["properties"].keys()
    assert lean.parameters.get("required") == full.parameters.get("required")
    # types, enums, defaults, items, bounds, additionalProperties: identical once the
    # annotations are set aside
    assert validation_only(lean.parameters) == validation_only(offered(full))
    # and the annotations got shorter: no titles, short parameter descriptions
    assert len(lean.description) < len(full.description) / 2
    for node in schema_nodes(lean.parameters):
        assert "title" not in node
        assert len(node.get("description", "")) <= PARAM_CHARS
    assert len(json.dumps(lean.parameters)) < len(json.dumps(full.parameters))


@pytest.mark.parametrize("item", all_tools(), ids=lambda item: item.name)
def test_lean_schema_accepts_and_refuses_the_same_arguments(item: Tool) -> None:
    import jsonschema

    full, lean = item.schema(), lean_schema(item.schema())
    valid, invalid = SAMPLES[item.name]
    for arguments in valid:
        item.Params.model_validate(arguments)  # the tool itself takes them
        jsonschema.validate(arguments, full.parameters)
        jsonschema.validate(arguments, lean.parameters)
    for arguments in invalid:
        for parameters in (full.parameters, lean.parameters):
            with pytest.raises(jsonschema.ValidationError):
                jsonschema.validate(arguments, parameters)


def test_a_small_window_is_not_offered_background_processes() -> None:
    """Issue 29: BashOutput, KillBash and Bash's run_in_background are not part of the lean
    tool set (the full one has them)."""
    full = [t.schema() for t in builtin_tools()]
    names = [s.name for s in full]
    assert {"BashOutput", "KillBash"} <= set(names)
    bash = next(s for s in full if s.name == "Bash")
    assert "run_in_background" in bash.parameters["properties"]
    lean = lean_schemas(full)
    assert [s.name for s in lean] == [n for n in names if n not in ("BashOutput", "KillBash")]
    lean_bash = next(s for s in lean if s.name == "Bash")
    assert "run_in_background" not in lean_bash.parameters["properties"]
    assert "run_in_background" in bash.parameters["properties"]  # the full schema is left as it is


def test_default_schemas_are_left_unchanged() -> None:
    tools = all_tools()
    before = [json.dumps([t.schema().description, t.schema().parameters], sort_keys=True) for t in tools]
    objects = [t.schema() for t in tools]
    lean = lean_schemas(objects)
    assert [t.schema() for t in tools] == objects
    assert all(t.schema() is obj for t, obj in zip(tools, objects, strict=True))
    after = [json.dumps([t.schema().description, t.schema().parameters], sort_keys=True) for t in tools]
    assert after == before
    assert "title" in json.dumps(objects[0].parameters)  # the full schema keeps pydantic's titles
    # built once per schema object, and never the full object itself
    assert lean_schemas(objects) == lean
    assert all(a is b for a, b in zip(lean_schemas(objects), lean, strict=True))
    assert not any(a is b for a, b in zip(lean, objects, strict=True))


def test_task_keeps_the_list_of_subagents() -> None:
    lean = lean_schema(TaskTool(Subagents()).schema())
    assert "- general: General-purpose sub-agent." in lean.description
    assert "- explore: Fast read-only sub-agent." in lean.description
    assert "{{catalog}}" not in lean.description


def test_edit_keeps_what_a_model_must_know() -> None:
    text = lean_schema(next(t for t in builtin_tools() if t.name == "Edit").schema()).description
    assert "Read the file first" in text
    assert "unique" in text and "replace_all" in text and "line-number prefix" in text


class Where(BaseModel):
    title: str = Field(description="The page title to look up. Case does not matter here.")
    depth: int = Field(default=2, ge=0, description="How deep to go.")


def test_user_and_mcp_tools_get_the_first_sentence() -> None:
    @tool
    def lookup_page(title: str, depth: int = 2) -> str:
        """Look up a page of the wiki by its title. It returns the page text, with links,
        and a long explanation that a small model does not need at all.

        Args:
            title: The page title to look up. Case does not matter here.
            depth: How deep to follow links.
        """
        return title

    lean = lean_schema(lookup_page.schema())
    assert lean.description == "Look up a page of the wiki by its title."
    # a property NAMED title stays; only pydantic's "title" annotations go
    assert list(lean.parameters["properties"]) == ["title", "depth"]
    assert lean.parameters["properties"]["title"] == {
        "description": "The page title to look up.",
        "type": "string",
    }
    assert lean.parameters["required"] == ["title"]
    assert lean.parameters["properties"]["depth"]["default"] == 2

    mcp = ToolSchema(
        "docs_search",
        "Search the docs, e.g. for an API name. " + "Long detail. " * 40 + "\n\n(MCP server: docs)",
        {
            "type": "object",
            "properties": {
                "query": {"$ref": "#/$defs/Query", "title": "Query"},
                "title": {"type": "string", "title": "Title", "description": "A title filter."},
            },
            "$defs": {
                "Query": {"title": "Query", "type": "string", "minLength": 1, "description": "x" * 300}
            },
            "required": ["query"],
        },
    )
    original = copy.deepcopy(mcp.parameters)
    lean = lean_schema(mcp)
    assert lean.description == "Search the docs, e.g. for an API name."
    assert lean.parameters["properties"]["query"] == {"$ref": "#/$defs/Query"}
    assert lean.parameters["properties"]["title"] == {"type": "string", "description": "A title filter."}
    assert lean.parameters["$defs"]["Query"]["minLength"] == 1
    assert len(lean.parameters["$defs"]["Query"]["description"]) <= PARAM_CHARS
    assert mcp.parameters == original


def test_first_sentence_and_short_param() -> None:
    assert first_sentence("Find files, e.g. *.py. Then more.", 200) == "Find files, e.g. *.py."
    assert first_sentence("One line\nsecond line.", 200) == "One line"
    cut = first_sentence("word " * 100, 50)
    assert len(cut) <= 50 and cut.endswith("…")
    assert (
        short_param("Maximum number of lines to read (default 2000).") == "Maximum number of lines to read."
    )
    assert short_param('Glob pattern, e.g. "**/*.py" or "src/*.ts".') == "Glob pattern."
    assert short_param("What to do (e.g. 'Run the tests').") == "What to do."
    assert short_param("pending, in_progress or completed.") == "pending, in_progress or completed."


async def test_lean_system_prompt_replaces_only_the_provider_layer(tmp_path: Path) -> None:
    instructions = InstructionPrompt(tmp_path, tmp_path, global_dir=tmp_path / "global")
    default = await SystemPrompt.build(get_agent("build"), "openai/gpt-4o", instructions)
    lean = await SystemPrompt.build(get_agent("build"), "openai/gpt-4o", instructions, lean=True)
    assert default[0].source == "provider/openai.txt"
    assert lean[0].source == "provider/lean.txt" and lean[0].text == SystemPrompt.lean_provider().text
    assert [p.text for p in lean[1:]] == [p.text for p in default[1:]]
    # an agent with a prompt of its own keeps it in lean mode
    explore = await SystemPrompt.build(get_agent("explore"), "openai/gpt-4o", instructions, lean=True)
    assert explore[0].layer == "agent"
    text = SystemPrompt.lean_provider().text
    assert "AGENTS.md" in text and "Edit" in text and "Read a file before" in text
    assert count_tokens(text, "gpt-4o") <= 300


def test_first_request_is_at_most_2500_tokens_in_lean_mode() -> None:
    if tokenizer_for("gpt-4o") != "o200k_base":
        missing("tiktoken", "tiktoken's o200k_base file is not cached (../shared/tiktoken)")
    from benchmarks.bench_first_request import measure

    figures = measure()
    assert figures["lean"] <= 2500 and figures["lean_pretty"] <= 2500, figures
    assert figures["default"] > 5000  # the default prompt is the full one, unchanged
    assert figures["lean_system"] < figures["default_system"] / 3
    assert figures["lean_tools"] < figures["default_tools"] / 2

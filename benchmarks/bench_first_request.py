"""Size of the first request, default prompt vs lean prompt (issue 14).

The first request of the build agent in a folder without AGENTS.md: its system prompt
(provider, environment layers), every built-in tool schema and the ``Task`` tool, as the
JSON body the OpenAI wire sends with one short user message. Counted with tiktoken
(``o200k_base``; the offline 4-bytes-per-token estimate when no encoding file is cached).
Target: lean ≤ 2,500 tokens (a 4k window must still hold a turn); default unchanged.

Run: ``python benchmarks/bench_first_request.py``
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import tempfile
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
SHARED_TIKTOKEN = ROOT.parent / "shared" / "tiktoken"
if SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED_TIKTOKEN))

from etcode.agent import get_agent, load_agents  # noqa: E402
from etcode.prompt.instruction import InstructionPrompt  # noqa: E402
from etcode.prompt.system import SystemPrompt  # noqa: E402
from etcode.provider.openai import OpenAIProvider  # noqa: E402
from etcode.provider.spec import ProviderSpec  # noqa: E402
from etcode.provider.types import Message, ModelRequest, TextPart, ToolSchema  # noqa: E402
from etcode.tools.base import ToolContext, ToolResult  # noqa: E402
from etcode.tools.lean import lean_schemas  # noqa: E402
from etcode.tools.registry import builtin_tools  # noqa: E402
from etcode.tools.task import TaskTool  # noqa: E402
from etcode.util.tokens import count_tokens, tokenizer_for  # noqa: E402

MODEL = "gpt-4o"  # an o200k model id: the count uses o200k_base when it is cached
TARGET = 2500
USER = "Fix the failing test in tests/test_app.py."


class BuiltinSubagents:
    """The ``Task`` runner of a session with the built-in agents (catalog only)."""

    def __init__(self) -> None:
        agents = load_agents()
        self.agents = {n: a for n, a in agents.items() if a.mode != "primary" and n != "workflow"}

    def catalog(self) -> dict[str, str]:
        return {name: info.description or "" for name, info in self.agents.items()}

    def is_read_only(self, name: str) -> bool:
        return name == "explore"

    async def run(self, name: str, description: str, prompt: str, ctx: ToolContext) -> ToolResult:
        raise NotImplementedError


def tool_schemas(lean: bool) -> list[ToolSchema]:
    """Every built-in tool's schema and Task's, full or lean."""
    schemas = [tool.schema() for tool in [*builtin_tools(), TaskTool(BuiltinSubagents())]]
    return lean_schemas(schemas) if lean else schemas


async def system_texts(directory: Path, lean: bool) -> list[str]:
    """The build agent's system prompt texts in ``directory`` (no AGENTS.md, no git)."""
    instructions = InstructionPrompt(directory, directory, global_dir=directory / "global")
    parts = await SystemPrompt.build(
        get_agent("build"), f"openai/{MODEL}", instructions, now=datetime(2026, 1, 1), lean=lean
    )
    return SystemPrompt.texts(parts)


def first_request_body(directory: Path, lean: bool, compact: bool = True) -> str:
    """The JSON body of the first Chat Completions request, as httpx sends it (``compact``)
    or pretty (``", "``/``": "`` separators: the figure issue 14 quoted, ~6,050)."""
    spec = ProviderSpec(id="openai", type="openai", base_url="http://127.0.0.1:1/v1", model=MODEL)
    request = ModelRequest(
        model=MODEL,
        system=asyncio.run(system_texts(directory, lean)),
        messages=[Message("user", [TextPart(USER)])],
        tools=tool_schemas(lean),
    )
    separators = (",", ":") if compact else (", ", ": ")
    return json.dumps(OpenAIProvider(spec).build_body(request), ensure_ascii=False, separators=separators)


def measure() -> dict[str, int]:
    """Tokens of the first request body: ``{"default": n, "lean": n, "lean_pretty": n,
    "lean_system": n, "lean_tools": n, ...}`` (``*_pretty``: with spaced JSON separators)."""
    with tempfile.TemporaryDirectory() as tmp:
        directory = Path(tmp)
        out: dict[str, int] = {}
        for mode, lean in (("default", False), ("lean", True)):
            out[mode] = count_tokens(first_request_body(directory, lean), MODEL, exact=True)
            pretty = first_request_body(directory, lean, compact=False)
            out[f"{mode}_pretty"] = count_tokens(pretty, MODEL, exact=True)
            out[f"{mode}_system"] = count_tokens(
                "\n\n".join(asyncio.run(system_texts(directory, lean))), MODEL
            )
            tools = json.dumps([[s.name, s.description, s.parameters] for s in tool_schemas(lean)])
            out[f"{mode}_tools"] = count_tokens(tools, MODEL)
        return out


def main() -> dict[str, int]:
    figures = measure()
    print(f"tokenizer: {tokenizer_for(MODEL)}")
    for mode in ("default", "lean"):
        print(
            f"  {mode:8} system ~{figures[f'{mode}_system']:,} tokens, tools ~{figures[f'{mode}_tools']:,} tokens"
        )
    verdict = "ok" if max(figures["lean"], figures["lean_pretty"]) <= TARGET else "OVER TARGET"
    print(
        f"first request: default {figures['default']:,} tokens, lean {figures['lean']:,} tokens "
        f"(pretty-printed JSON: {figures['default_pretty']:,} / {figures['lean_pretty']:,}; "
        f"target ≤ {TARGET:,}: {verdict})"
    )
    return figures


if __name__ == "__main__":
    main()

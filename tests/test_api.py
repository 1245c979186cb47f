"""The Python API (`from etcode import Agent, tool`) against the fake LLM server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from etcode import Agent, AgentResult, LoopLimits, RetryConfig, Tool, ToolResult, tool
from etcode.session import events as ev
from tests.fake_llm import Call, FakeLLM, Reply, without_environment

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def test_readme_example_runs_verbatim(llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The Python API page's first example (it was the README's)."""
    readme = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    example = next(b for b in blocks if "Agent(" in b)
    assert len(example.strip().splitlines()) <= 12
    llm.script(
        Reply(calls=[Call("word_count", {"text": "the quick brown fox"})]),
        Reply(text="There are 4 words."),
    )
    script = tmp_path / "example.py"
    script.write_text(example, encoding="utf-8")
    env = {
        **__import__("os").environ,
        "ANTHROPIC_API_KEY": "sk-ant-test",
        "ANTHROPIC_BASE_URL": llm.anthropic_base_url,
    }
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert "There are 4 words." in proc.stdout and "end_turn" in proc.stdout
    tool_result = json.dumps(llm.requests[1].body["messages"])
    results = [
        block
        for message in llm.requests[1].body["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert len(results) == 1, tool_result
    content = results[0]["content"]
    shown = content if isinstance(content, str) else "".join(b.get("text", "") for b in content)
    assert shown.strip() == "4", tool_result
    assert llm.requests[0].headers["x-api-key"] == "sk-ant-test"


async def test_unknown_provider_with_base_url_is_openai_compatible(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(Reply(text="hi from vllm"))
    agent = Agent("myvllm/qwen", base_url=llm.openai_base_url, api_key="k", directory=tmp_path)
    result = await agent.run("hello")
    await agent.aclose()
    assert isinstance(result, AgentResult)
    assert result.text == "hi from vllm"
    assert llm.requests[0].path == "/v1/chat/completions"
    assert llm.requests[0].body["model"] == "qwen"


async def test_stream_yields_typed_events_and_custom_tools(llm: FakeLLM, tmp_path: Path) -> None:
    calls: list[str] = []

    @tool(read_only=True)
    async def lookup(key: str) -> str:
        """Look a key up.

        Args:
            key: the key to find
        """
        calls.append(key)
        return f"value-of-{key}"

    class Echo(Tool):
        name = "Echo"
        description = "Echo the text back."

        async def run(self, params, ctx) -> ToolResult:
            return ToolResult("echo", summary="echoed")

    llm.script(
        Reply(calls=[Call("lookup", {"key": "k1"}), Call("Echo", {})]), Reply(text="found value-of-k1")
    )
    agent = Agent(
        "proxy/model-x",
        base_url=llm.openai_base_url,
        api_key="k",
        tools=[lookup, Echo()],
        builtin_tools=False,
        directory=tmp_path,
        limits=LoopLimits(max_steps=5),
        retry=RetryConfig(max_retries=0),
    )
    events = [e async for e in agent.stream("find k1")]
    await agent.aclose()
    assert calls == ["k1"]
    names = [t["function"]["name"] for t in llm.requests[0].body["tools"]]
    assert names == ["lookup", "Echo", "TodoWrite"]  # TodoWrite comes even without the built-in set
    schema = llm.requests[0].body["tools"][0]["function"]["parameters"]
    assert schema["properties"]["key"]["description"] == "the key to find"
    assert isinstance(events[0], ev.SessionStart) and isinstance(events[-1], ev.DoneEvent)
    summaries = [e.summary for e in events if isinstance(e, ev.ToolResultEvent)]
    assert summaries == ["value-of-k1", "echoed"]


async def test_successive_runs_continue_the_conversation(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(Reply(text="first"), Reply(text="second"))
    agent = Agent("p/m", base_url=llm.openai_base_url, api_key="k", builtin_tools=False, directory=tmp_path)
    await agent.run("one")
    result = await agent.run("two")
    await agent.aclose()
    assert result.text == "second"
    contents = [
        without_environment(m.get("content"))
        for m in llm.requests[1].body["messages"]
        if m["role"] != "system"
    ]
    assert contents[:3] == ["one", "first", "two"]


def test_run_sync(llm: FakeLLM, tmp_path: Path) -> None:
    llm.script(Reply(text="sync works"))
    agent = Agent("p/m", base_url=llm.openai_base_url, api_key="k", directory=tmp_path)
    assert agent.run_sync("go").text == "sync works"


async def test_config_listed_prompt_transform_edits_the_system_prompt(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "house_rules.py").write_text(
        "from etcode.prompt.parts import PromptPart\n"
        "def add_rule(parts):\n"
        "    return [*parts, PromptPart('instructions', 'house_rules', 'Always answer in French.')]\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "etcode.json").write_text('{"plugin": ["house_rules:add_rule"]}', encoding="utf-8")
    llm.script(Reply(text="Bonjour"))
    agent = Agent("p/m", base_url=llm.openai_base_url, api_key="k", directory=tmp_path, trust=True)
    await agent.run("hello")
    await agent.aclose()
    system = llm.requests[0].body["messages"][0]
    assert system["role"] == "system"
    assert system["content"].rstrip().endswith("Always answer in French.")


def test_the_documented_constructor_is_the_real_one() -> None:
    """docs/python-api.md's ``Agent(...)`` block names every parameter, once, in the
    signature's order, with its default."""
    import inspect

    from etcode import Agent

    page = (REPO / "docs" / "python-api.md").read_text(encoding="utf-8")
    block = re.search(r"```text\n(Agent\(.*?)```", page, flags=re.S)
    assert block is not None
    documented = [part.strip() for part in " ".join(block.group(1).split())[len("Agent(") : -1].split(", ")]
    real: list[str] = []
    for name, parameter in inspect.signature(Agent.__init__).parameters.items():
        if name == "self":
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            real.append(f"**{name}")
            continue
        if parameter.kind is parameter.KEYWORD_ONLY and "*" not in real:
            real.append("*")
        default = parameter.default
        real.append(f"{name}={default!r}" if isinstance(default, str) else f"{name}={default}")
    assert documented == [p.replace("'", '"') for p in real]

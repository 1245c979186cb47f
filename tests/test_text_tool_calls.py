"""Tool calls a small model wrote as text (issue 34, item 7): recovered as tool calls over
the real OpenAI-compatible wire (the fake server streams them as answer text), one format per
model family, only when no structured call came; a malformed one is answered with an error
so the model can try again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from etcode import Agent
from etcode.provider.text_tool_calls import NO_NAME, family, recover
from etcode.provider.types import Message, StreamEnd, TextPart, Usage
from tests.fake_llm import Call, FakeLLM, Reply


def configure(folder: Path, llm: FakeLLM, model: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    provider = {"id": "local", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}
    (folder / "etcode.json").write_text(json.dumps({"model": f"local/{model}", "provider": [provider]}))
    (folder / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    return folder


def tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m["role"] == "tool"]


async def run(folder: Path, prompt: str) -> Any:
    agent = Agent(directory=folder, store=False)
    try:
        return await agent.arun(prompt)
    finally:
        await agent.aclose()


async def test_a_tagged_call_in_the_text_runs_and_the_loop_goes_on(llm: FakeLLM, tmp_path: Path) -> None:
    folder = configure(tmp_path / "p", llm, "smollm2-135m")
    written = (
        'Let me read it.\n<tool_call>\n{"name": "ReadFile", "arguments": {"file_path": "notes.txt"}}\n'
        "</tool_call>"
    )
    llm.script(Reply(text=written), Reply(text="The notes say 42."))
    result = await run(folder, "what do the notes say?")
    assert result.text == "The notes say 42." and len(llm.requests) == 2
    sent = llm.requests[1].body["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert assistant["content"] == "Let me read it."  # the markup is not kept in the answer
    assert assistant["tool_calls"][0]["function"]["name"] == "ReadFile"
    [answer] = tool_messages(llm.requests[1].body)
    assert "the answer is 42" in answer["content"]


async def test_a_bare_json_call_from_a_llama_model(llm: FakeLLM, tmp_path: Path) -> None:
    folder = configure(tmp_path / "p", llm, "llama-3.2-3b-instruct")
    bare = '<|python_tag|>{"name": "ReadFile", "parameters": {"file_path": "notes.txt"}}'
    llm.script(Reply(text=bare), Reply(text="42."))
    result = await run(folder, "read notes.txt")
    assert result.text == "42."
    [answer] = tool_messages(llm.requests[1].body)
    assert "the answer is 42" in answer["content"]


async def test_a_malformed_call_is_answered_so_the_model_can_try_again(llm: FakeLLM, tmp_path: Path) -> None:
    folder = configure(tmp_path / "p", llm, "qwen2.5-0.5b-instruct")
    broken = '<tool_call>{"name": "ReadFile", "arguments": {"file_path": "notes.txt"</tool_call>'
    nameless = '<tool_call>{"arguments": {"file_path": "notes.txt"}}</tool_call>'
    unknown = '<tool_call>{"name": "OpenFile", "arguments": {}}</tool_call>'
    llm.script(Reply(text=broken), Reply(text=nameless), Reply(text=unknown), Reply(text="Gave up."))
    result = await run(folder, "read notes.txt")
    assert result.text == "Gave up." and len(llm.requests) == 4
    told = [tool_messages(llm.requests[i].body)[-1]["content"] for i in (1, 2, 3)]
    assert told[0].startswith("Invalid arguments for ReadFile: not a JSON object")
    assert told[1].startswith(f"Unknown tool '{NO_NAME}'. Available tools: ") and "ReadFile" in told[1]
    assert told[2].startswith("Unknown tool 'OpenFile'. Available tools: ")


async def test_a_structured_call_leaves_the_text_alone(llm: FakeLLM, tmp_path: Path) -> None:
    folder = configure(tmp_path / "p", llm, "qwen2.5-0.5b-instruct")
    text = 'Example: <tool_call>{"name": "Bash", "arguments": {"command": "rm -rf /"}}</tool_call>'
    llm.script(Reply(text=text, calls=[Call("ReadFile", {"file_path": "notes.txt"})]), Reply(text="done"))
    await run(folder, "read notes.txt")
    sent = llm.requests[1].body["messages"]
    assistant = next(m for m in sent if m["role"] == "assistant")
    assert assistant["content"] == text
    assert [c["function"]["name"] for c in assistant["tool_calls"]] == ["ReadFile"]


def end_of(text: str) -> StreamEnd:
    return StreamEnd(Message("assistant", [TextPart(text)]), Usage(), "end_turn")


def test_each_family_its_own_format() -> None:
    names = ["ReadFile", "Bash"]
    assert (family("mistral-small"), family("llama3.1:8b"), family("qwen2.5")) == (
        "mistral",
        "llama",
        "hermes",
    )
    # A bare JSON object is an answer for a model that does not write calls that way,
    plain = '{"name": "ReadFile", "parameters": {"file_path": "a"}}'
    assert recover(end_of(plain), names, "qwen2.5").message.tool_calls == []
    # and for a Llama model only when it names an offered tool.
    assert (
        recover(end_of('{"name": "Weather", "parameters": {}}'), names, "llama3.1").message.tool_calls == []
    )
    for text in (
        '[TOOL_CALLS][{"name": "Bash", "arguments": {"command": "ls"}}]',
        '[TOOL_CALLS]Bash[ARGS]{"command": "ls"}',
    ):
        end = recover(end_of(text), names, "mistral-small-3.1")
        [call] = end.message.tool_calls
        assert (call.name, call.parsed_arguments(), end.stop_reason) == (
            "Bash",
            {"command": "ls"},
            "tool_use",
        )
        assert end.message.text == ""
    assert recover(end_of("[TOOL_CALLS]x"), names, "qwen2.5").message.tool_calls == []
    assert (
        recover(end_of("<tool_call>{}</tool_call>"), [], "qwen2.5").message.tool_calls == []
    )  # no tools offered

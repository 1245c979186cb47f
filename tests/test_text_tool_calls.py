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


def test_prose_and_examples_about_the_markup_stay_the_answer() -> None:
    names = ["ReadFile", "Bash", "Grep"]
    answers = {
        "qwen2.5": (
            "Hermes-style models wrap each call in `<tool_call>` tags; the server parses them.",
            'To call a tool, the model writes:\n\n```\n<tool_call>\n{"name": "Bash", "arguments": '
            '{"command": "rm -rf build"}}\n</tool_call>\n```\n\nThe server then parses it.',
            'Example:\n<tool_call>{"name": "Bash", "arguments": {}}</tool_call>\nThat is the form.',
            "A line may start with the tag:\n<tool_call> opens a call, and the server reads it.\nDone.",
        ),
        "llama-3.2-1b": (
            '{"name": "Bash", "description": "runs a command"}',
            'Here is the call:\n```json\n{"name": "Grep", "parameters": {"pattern": "x"}}\n```',
            '{"name": "Bash", "parameters": "ls"}',
        ),
        "mistral-small": ("Mistral models write `[TOOL_CALLS]` first, then the JSON.",),
    }
    for model, texts in answers.items():
        for text in texts:
            end = recover(end_of(text), names, model)
            assert (end.message.tool_calls, end.message.text, end.stop_reason) == ([], text, "end_turn"), text


def test_the_call_block_that_ends_the_answer_is_recovered() -> None:
    names = ["Bash", "Grep"]
    text = (
        "I'll look first.\n<tool_call>\n"
        '{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>\n'
        '<tool_call>{"name": "Grep", "arguments": {"pattern": "x"}}</tool_call><|im_end|>\n'
    )
    end = recover(end_of(text), names, "smollm2")
    assert [(c.name, c.parsed_arguments()) for c in end.message.tool_calls] == [
        ("Bash", {"command": "ls"}),
        ("Grep", {"pattern": "x"}),
    ]
    assert end.message.text == "I'll look first." and end.stop_reason == "tool_use"
    # An unclosed tag as the last block (a stop word ate the closing one) is still a call,
    [cut] = recover(
        end_of('<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}'), names, "qwen"
    ).message.tool_calls
    assert (cut.name, cut.parsed_arguments()) == ("Bash", {"command": "ls"})
    # and a malformed block still comes back as a call the scheduler answers with an error.
    [bad] = recover(end_of("Checking.\n<tool_call>\n</tool_call>"), names, "qwen").message.tool_calls
    assert bad.name == NO_NAME


async def test_prose_about_tool_call_tags_is_the_answer(llm: FakeLLM, tmp_path: Path) -> None:
    folder = configure(tmp_path / "p", llm, "qwen2.5-0.5b-instruct")
    prose = "Hermes-style models wrap each call in `<tool_call>` tags; the server parses them."
    llm.script(Reply(text=prose), Reply(text="Sorry."))
    result = await run(folder, "how do hermes models format tool calls?")
    assert len(llm.requests) == 1 and result.text == prose


async def test_a_hosted_service_parses_its_own_calls(llm: FakeLLM, tmp_path: Path) -> None:
    folder = tmp_path / "p"
    folder.mkdir()
    provider = {"id": "groq", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}
    (folder / "etcode.json").write_text(json.dumps({"model": "groq/qwen-qwq-32b", "provider": [provider]}))
    text = '<tool_call>\n{"name": "Bash", "arguments": {"command": "ls"}}\n</tool_call>'
    llm.script(Reply(text=text), Reply(text="Sorry."))
    result = await run(folder, "show me a tool call")
    assert len(llm.requests) == 1 and result.text == text

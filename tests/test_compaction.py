"""Compaction against the fake LLM server: automatic (small configured window), on a
context-overflow error, manual, pruning only, and ``"compaction": {"auto": false}``."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from etcode import Agent, tool
from etcode.contract import events as ev
from etcode.engine.compaction import SUMMARY_HEADER, prune_outputs, split_history
from etcode.engine.context import TokenEstimator
from etcode.provider.errors import ContextOverflowError
from etcode.provider.types import Message, TextPart, ToolCallPart, ToolResultPart
from etcode.session.store import SessionStore
from tests.fake_llm import Call, FakeLLM, Fault, Reply

SYSTEM = "You are TEST-SYSTEM-MARKER, a careful assistant."
INSTRUCTION_MARK = "is about to be replaced by a summary"  # from prompts/compaction/summary.txt
SUMMARY = "## Goal\nLearn about topics.\n## Next steps\nAnswer about topic three. SUMMARY-MARKER"


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look up KEY-DESC-MARKER in the notes."""
    return f"value of {key}"


def long_text(topic: str, words: int) -> str:
    return " ".join(f"fact{i} about {topic} number {i * 7 % 13}" for i in range(words // 5))


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def configure(project: Path, llm: FakeLLM, context: int | None = None, output: int = 1000, **extra) -> None:
    entry: dict = {"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}
    if context:
        entry["models"] = {"test-model": {"limit": {"context": context, "output": output}}}
    config = {"model": "fake/test-model", "provider": [entry], **extra}
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


def make_agent(project: Path, store: SessionStore | bool = True, **kw) -> Agent:
    kw.setdefault("tools", [lookup])
    return Agent(directory=project, system_prompt=SYSTEM, builtin_tools=False, store=store, **kw)


def body_text(request) -> str:
    return json.dumps(request.body)


def assert_system_layer_once(request) -> None:
    text = body_text(request)
    assert text.count("TEST-SYSTEM-MARKER") == 1
    assert [t["function"]["name"] for t in request.body.get("tools", [])].count("lookup") == 1
    assert text.count("Look up KEY-DESC-MARKER") == 1


async def collect(agent: Agent, task: str) -> list[ev.Event]:
    return [event async for event in agent.stream(task)]


async def test_auto_compaction_with_a_small_configured_window(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm, context=6000, output=1000)  # usable 5000, compaction above 4500
    llm.script(
        Reply(text=long_text("topic one", 900), usage=(300, 1200)),
        Reply(text=long_text("topic two", 900), usage=(3400, 1200)),
        Reply(text=SUMMARY),  # the summarisation request
        Reply(text="Topic three is fine."),
    )
    agent = make_agent(tmp_path)
    await agent.run("Tell me about topic one")
    await agent.run("Tell me about topic two")
    assert len(llm.requests) == 2  # 1,500 then 4,600 tokens: no compaction yet
    events = await collect(agent, "Tell me about topic three")
    await agent.aclose()

    assert len(llm.requests) == 4
    summarize, after = llm.requests[2], llm.requests[3]
    assert INSTRUCTION_MARK in body_text(summarize) and "fact1 about topic one" in body_text(summarize)
    assert_system_layer_once(summarize)

    text = body_text(after)
    assert "SUMMARY-MARKER" in text and SUMMARY_HEADER in text
    assert "fact1 about topic one" not in text
    newest = after.body["messages"][-1]  # the summary before it is joined to it: roles alternate
    assert newest["role"] == "user" and newest["content"].endswith("\n\nTell me about topic three")
    assert_system_layer_once(after)
    assert len(after.raw) // 4 < 5000  # the next request fits the usable window

    kinds = [(e.reason, e.phase) for e in events if isinstance(e, ev.CompactionEvent)]
    assert kinds == [("auto", "start"), ("auto", "done")]
    done = [e for e in events if isinstance(e, ev.CompactionEvent)][-1]
    assert done.tokens_after < done.tokens_before and done.summarized >= 2
    assert agent.last_result.text == "Topic three is fine."

    store = SessionStore.open()
    info = store.get_session(agent.session_id)
    assert info.batch == 1
    assert store.load_messages(agent.session_id)[0].text.startswith(SUMMARY_HEADER)
    store.close()


async def test_overflow_error_compacts_and_retries_the_step_once(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm)  # no limits known: only the provider can say it is too long
    # (A window this large changes nothing in the request, so no re-plan comes first.)
    too_long = (
        "This model's maximum context length is 131072 tokens. However, your messages resulted in "
        "140000 tokens."
    )
    llm.script(
        Reply(text=long_text("topic one", 300)),  # longer than the summary that replaces it
        Fault(status=400, body=too_long),
        Reply(text=SUMMARY),
        Reply(text="answer after compaction"),
    )
    agent = make_agent(tmp_path, store=False)
    await agent.run("first question")
    events = await collect(agent, "second question")
    await agent.aclose()
    assert agent.last_result.stop_reason == "end_turn"
    assert agent.last_result.text == "answer after compaction"
    assert len(llm.requests) == 4
    assert INSTRUCTION_MARK in body_text(llm.requests[2])
    retried = llm.requests[3]
    assert "SUMMARY-MARKER" in body_text(retried)
    assert_system_layer_once(retried)
    assert [e.reason for e in events if isinstance(e, ev.CompactionEvent)] == ["overflow", "overflow"]


async def test_auto_false_is_honoured(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm, context=3000, output=500, compaction={"auto": False})
    too_long = "prompt is too long: 5000 tokens > 3000 maximum"
    llm.script(Reply(text=long_text("x", 900), usage=(2900, 900)), Fault(status=400, body=too_long))
    agent = make_agent(tmp_path, store=False)
    await agent.run("one")
    with pytest.raises(ContextOverflowError, match="too long"):  # nothing answered: raised
        await agent.run("two")
    await agent.aclose()
    assert len(llm.requests) == 2  # no summarisation request, no retry
    result = agent.last_result
    assert result is not None and result.stop_reason == "error" and "too long" in (result.error or "")


async def test_manual_compact_emits_events_and_the_next_request_uses_the_summary(
    tmp_path: Path, llm: FakeLLM
) -> None:
    configure(tmp_path, llm)
    llm.script(
        Reply(text=long_text("answer one", 300)),  # longer than the summary that replaces it
        Reply(text="answer two"),
        Reply(text=SUMMARY),
        Reply(text="three"),
    )
    seen: list[ev.Event] = []
    agent = make_agent(tmp_path, on_event=seen.append)
    await agent.run("question one")
    await agent.run("question two")
    await agent.compact()
    assert [(e.reason, e.phase) for e in seen if isinstance(e, ev.CompactionEvent)] == [
        ("manual", "start"),
        ("manual", "done"),
    ]
    assert any(isinstance(e, ev.UsageUpdate) for e in seen)
    await agent.run("question three")
    await agent.aclose()
    last = llm.requests[-1]
    assert "SUMMARY-MARKER" in body_text(last) and "fact1 about answer one" not in body_text(last)
    assert '<user_message chars=\\"12\\">\\nquestion one\\n</user_message>' in body_text(
        last
    )  # the user's words stay
    assert "question two" in body_text(last) and "answer two" in body_text(last)  # last turn kept verbatim
    assert_system_layer_once(last)


async def test_pruning_old_tool_outputs_can_be_enough(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm, context=8000, output=500)  # compaction above 6750 tokens

    @tool(read_only=True)
    def dump() -> str:
        """Dump the big log."""
        return "\n".join(f"log line {i}: everything is fine at step {i}" for i in range(300))

    llm.script(
        Reply(calls=[Call("dump", {})]),
        Reply(text="The log looks fine.", usage=(7000, 10)),
        Reply(text="Yes."),
    )
    agent = make_agent(tmp_path, store=False, tools=[lookup, dump])
    await agent.run("check the log")
    events = await collect(agent, "anything else?")
    await agent.aclose()
    assert len(llm.requests) == 3  # no summarisation request
    text = body_text(llm.requests[2])
    assert "output pruned by compaction" in text and "log line 200" not in text
    assert "The log looks fine." in text
    done = [e for e in events if isinstance(e, ev.CompactionEvent) and e.phase == "done"]
    assert done and done[0].pruned == 1


def test_split_keeps_tool_results_with_their_calls() -> None:
    est = TokenEstimator("gpt-4o")
    history = [
        Message.user("one"),
        Message("assistant", [ToolCallPart("c1", "lookup", '{"key":"a"}')]),
        Message("tool", [ToolResultPart("c1", "lookup", "x" * 4000)]),
        Message("assistant", [TextPart("done one")]),
        Message.user("two"),
        Message("assistant", [TextPart("done two")]),
    ]
    # Two turns asked for, but the older part is summarised whenever that leaves the newest
    # message and a step of its turn: the first turn goes, its call and result together.
    older, tail = split_history(history, 2, None, est)
    assert older == history[:4] and tail == history[4:]
    # A tight budget never cuts between the call and its result either.
    for budget in range(10, 1600, 50):
        older, tail = split_history(history, 2, budget, est)
        assert sorted(map(id, older + tail)) == sorted(map(id, history)), budget  # each once
        for part in (older, tail):
            for i, message in enumerate(part):
                if message.role == "tool":  # right after the call it answers, same part
                    assert i > 0 and part[i - 1].tool_calls, (budget, part)
    older, tail = split_history(history, 1, None, est)
    assert tail == history[4:] and older == history[:4]
    older, tail = split_history(history, 2, 100, est)  # the big tool result does not fit the tail
    assert tail[0].role != "tool" and older + tail == history and len(older) >= 3
    pruned, count = prune_outputs(older)
    assert count == 1 and "output pruned" in pruned[2].tool_results[0].output


def test_compaction_over_the_cli(tmp_path: Path, llm: FakeLLM) -> None:
    project = tmp_path / "project"
    project.mkdir()
    configure(project, llm, context=12000, output=1000)  # the build agent's prompt and tools: ~6k
    llm.script(
        Reply(text=long_text("topic one", 2500), usage=(9000, 1500)),
        Reply(text=SUMMARY),
        Reply(text="ok"),
    )

    def etcode(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "etcode", "run", "--format", "json", *args],
            cwd=project,
            input="",
            capture_output=True,
            text=True,
            timeout=60,
            env=os.environ.copy(),
        )

    assert etcode("topic one please").returncode == 0
    proc = etcode("-c", "and now topic two")
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    phases = [(e["reason"], e["phase"]) for e in lines if e["type"] == "compaction"]
    assert phases == [("auto", "start"), ("auto", "done")]
    usage = [e for e in lines if e["type"] == "usage"]
    assert usage and usage[-1]["context_window"] == 12000
    summarize, after = llm.requests[1], llm.requests[2]
    assert INSTRUCTION_MARK in body_text(summarize)
    system = after.body["messages"][0]
    assert (
        system["role"] == "system" and body_text(after).count(json.dumps(system["content"][:200])[1:-1]) == 1
    )
    names = [t["function"]["name"] for t in after.body["tools"]]
    assert len(names) == len(set(names)) and "ReadFile" in names and "Edit" in names
    assert names == [t["function"]["name"] for t in llm.requests[0].body["tools"]]
    assert "SUMMARY-MARKER" in body_text(after) and "fact1 about topic one" not in body_text(after)
    assert len(after.raw) // 4 < 11000


async def test_interrupt_during_compaction_keeps_the_history(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm, context=6000, output=1000)
    llm.script(
        Reply(text=long_text("topic one", 300), usage=(4600, 100)),
        Reply(text=SUMMARY, chunk_size=4, delay=0.05),  # a slow summary
    )
    agent = make_agent(tmp_path, store=False)
    await agent.run("first question")
    events = []
    async for event in agent.stream("second question"):
        events.append(event)
        if isinstance(event, ev.CompactionEvent) and event.phase == "start":
            async with asyncio.timeout(60):  # interrupt while the summary is streaming
                while len(llm.requests) < 2:
                    await asyncio.sleep(0.01)
            agent.interrupt()
    await agent.aclose()
    assert agent.last_result.stop_reason == "interrupted"
    assert [(e.phase, e.message) for e in events if isinstance(e, ev.CompactionEvent)][-1] == (
        "failed",
        "interrupted",
    )
    texts = [m.text for m in agent.history]
    assert texts == ["first question", long_text("topic one", 300), "second question"]
    # The summary request was cut off; the step it was for never went out.
    assert len(llm.requests) == 2 and INSTRUCTION_MARK in body_text(llm.requests[1])

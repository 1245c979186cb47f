"""What changes per folder and day (the ``<env>`` block) comes after what does not (issue 34,
item 6): the system text and the tools are the same in every folder and on every day, so a
server's prompt cache serves them; the environment is joined to the first user message at
request time — one message, roles alternating, kept after compaction, never stored."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

import etcode.prompt.system as system_module
from etcode import Agent
from tests.fake_llm import Call, FakeLLM, Reply, without_environment

SUMMARY = "## Goal\nTesting the environment block. SUMMARY-MARKER"


def configure(folder: Path, llm: FakeLLM, wire: str = "openai") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    base = llm.openai_base_url if wire == "openai" else llm.anthropic_base_url
    provider = {"id": "fake", "type": wire, "baseURL": base, "apiKey": "k"}
    config = {"model": "fake/test-model", "provider": [provider]}
    (folder / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    (folder / "notes.txt").write_text("the answer is 42\n", encoding="utf-8")
    return folder


def on_day(monkeypatch: pytest.MonkeyPatch, day: int) -> None:
    """The prompt's clock set to 2026-11-``day``."""

    class Clock(datetime):
        @classmethod
        def now(cls, tz: Any = None) -> Clock:
            return cls(2026, 11, day, 9, 30)

    monkeypatch.setattr(system_module, "datetime", Clock)


def system_and_tools(body: dict[str, Any], wire: str) -> tuple[Any, Any]:
    if wire == "openai":
        return [m for m in body["messages"] if m["role"] == "system"], body["tools"]
    return body["system"], body["tools"]


def first_user_text(body: dict[str, Any]) -> str:
    content = next(m for m in body["messages"] if m["role"] == "user")["content"]
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_system_and_tools_are_the_same_in_every_folder_and_day(
    llm: FakeLLM, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, wire: str
) -> None:
    llm.script(Reply(text="one"), Reply(text="two"))
    first, second = configure(tmp_path / "a", llm, wire), configure(tmp_path / "b" / "deeper", llm, wire)
    for folder, day in ((first, 25), (second, 26)):
        on_day(monkeypatch, day)
        agent = Agent(directory=folder, store=False)
        try:
            await agent.arun("what is 2+2")
        finally:
            await agent.aclose()
    a, b = (request.body for request in llm.requests)
    assert system_and_tools(a, wire) == system_and_tools(b, wire)
    assert "Working directory" not in json.dumps(system_and_tools(a, wire))
    assert f"Working directory: {first.resolve()}" in first_user_text(a)
    assert f"Working directory: {second.resolve()}" in first_user_text(b)
    assert "Wed Nov 25 2026" in first_user_text(a) and "Thu Nov 26 2026" in first_user_text(b)
    assert first_user_text(a).rstrip().endswith("what is 2+2")
    if wire == "anthropic":  # the system text keeps its cache breakpoint; the env is a block of the user's
        assert a["system"][-1]["cache_control"] == {"type": "ephemeral"}
        assert a["messages"][0]["content"][0]["text"].startswith("You are powered by the model")


def roles(body: dict[str, Any]) -> list[str]:
    return [m["role"] for m in body["messages"] if m["role"] != "system"]


def alternates(body: dict[str, Any]) -> bool:
    """No two user messages in a row (tool results answer the assistant's calls)."""
    seen = roles(body)
    return all(not (x == "user" and y == "user") for x, y in zip(seen, seen[1:], strict=False))


async def test_one_environment_block_across_a_multi_step_turn_and_after_compaction(
    llm: FakeLLM, tmp_path: Path
) -> None:
    folder = configure(tmp_path / "proj", llm)
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": str(folder / "notes.txt")})]),
        Reply(text="It says 42. " + "Here is why, at length. " * 200),  # a summary is shorter
        Reply(text="Second turn."),
        Reply(text=SUMMARY),
        Reply(text="After compaction."),
    )
    agent = Agent(directory=folder, store=True)
    try:
        await agent.arun("read notes.txt")
        await agent.arun("and again?")
        await agent.compact()
        await agent.arun("what did I ask first?")
        history = [message.to_dict() for message in agent.history]
        stored = json.dumps(history)
    finally:
        await agent.aclose()
    bodies = [request.body for request in llm.requests]
    chats = [bodies[i] for i in (0, 1, 2, 4)]  # the summary request is the compactor's own
    for body in chats:
        text = json.dumps(body)
        assert text.count("<env>") == 1, text[:400]
        assert f"Working directory: {folder.resolve()}" in first_user_text(body)
    for body in chats:  # after compaction too: the summary joins the user message next to it
        assert alternates(body), roles(body)
    assert roles(bodies[1]) == ["user", "assistant", "tool"]
    # after compaction the block adds no message either: the request holds the history's
    # (the last answer came after it; the summary is joined to the user message after it)
    assert len(roles(bodies[4])) == len(history) - 2
    assert "SUMMARY-MARKER" in json.dumps(bodies[4])
    assert without_environment(first_user_text(bodies[4])) != first_user_text(bodies[4])
    assert "<env>" not in stored  # joined at request time, never kept in the session
    # The summary request is counted with the block and sends it as every request does: in its
    # first user message, after the same system text and tools (the prefix a cache serves).
    summary = bodies[3]
    assert system_and_tools(summary, "openai") == system_and_tools(bodies[0], "openai")
    assert json.dumps(summary).count("<env>") == 1 and "<env>" in first_user_text(summary)


async def test_roles_alternate_after_a_manual_compaction(llm: FakeLLM, tmp_path: Path) -> None:
    """After ``/compact`` the summary (a user message) comes before the newest user message:
    they are sent joined, as chat templates such as Gemma's refuse two user turns in a row."""
    folder = configure(tmp_path / "proj", llm)
    llm.script(
        Reply(text="Here is a long explanation. " * 200),
        Reply(text="Second turn."),
        Reply(text=SUMMARY),
        Reply(text="After."),
    )
    agent = Agent(directory=folder, store=False)
    try:
        await agent.arun("my name is Zorblax")
        await agent.arun("and again?")
        await agent.compact()
        await agent.arun("what is my name?")
    finally:
        await agent.aclose()
    summary_request, after = llm.requests[2].body, llm.requests[3].body
    assert "SUMMARY-MARKER" in json.dumps(after)
    for body in (summary_request, after):
        assert alternates(body), roles(body)

"""The system layer is never lost: the six batch cases, checked on the wire.

The system prompt and the initial tools' descriptions are built from configuration for
every request, never stored in the history, so each request holds them exactly once —
after a clear, a compaction, several of them, with no tools at all, and with tools added
mid-session (which are announced in an ordinary message that follows the history).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etcode import Agent, tool
from etcode.engine.compaction import ANNOUNCE_HEADER
from tests.fake_llm import FakeLLM, Recorded, Reply, without_environment

SYSTEM = "You are TEST-SYSTEM-MARKER, a careful assistant."
SUMMARY = "## Goal\nTesting batches. SUMMARY-MARKER"
INSTRUCTION_MARK = "is about to be replaced by a summary"  # from prompts/compaction/summary.txt


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look up LOOKUP-DESC-MARKER in the notes."""
    return f"value of {key}"


@tool(read_only=True)
def weather(city: str) -> str:
    """Report WEATHER-DESC-MARKER for a city."""
    return f"sunny in {city}"


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, llm: FakeLLM) -> Path:
    config = {
        "model": "fake/test-model",
        "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}],
    }
    (tmp_path / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    return tmp_path


def agent_for(project: Path, tools=(lookup,)) -> Agent:
    return Agent(directory=project, system_prompt=SYSTEM, builtin_tools=False, tools=tools, store=True)


def text(request: Recorded) -> str:
    return json.dumps(request.body)


def tool_names(request: Recorded) -> list[str]:
    return [t["function"]["name"] for t in request.body.get("tools", [])]


def user_texts(request: Recorded) -> list[str]:
    """The user messages' texts; an announcement sent joined with the user message after it
    (user and assistant alternate on the wire) counts as the two messages it was."""
    texts: list[str] = []
    for message in request.body["messages"]:
        if message["role"] != "user":
            continue
        content = without_environment(message["content"])
        if content.startswith(ANNOUNCE_HEADER) and "\n\n" in content:
            texts.extend(content.split("\n\n", 1))
        else:
            texts.append(content)
    return texts


def assert_system_layer(request: Recorded, initial: tuple[str, ...] = ("lookup",)) -> None:
    """System prompt once; each initial tool (name and description) once."""
    body = text(request)
    assert body.count("TEST-SYSTEM-MARKER") == 1
    assert [m["role"] for m in request.body["messages"]].count("system") == 1
    names = tool_names(request)
    for name in initial:
        assert names.count(name) == 1
    if "lookup" in initial:
        assert body.count("LOOKUP-DESC-MARKER") == 1


async def test_normal_start(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="hi"))
    agent = agent_for(project)
    await agent.run("hello")
    await agent.aclose()
    request = llm.requests[0]
    assert_system_layer(request)
    assert request.body["messages"][0]["role"] == "system"
    assert user_texts(request) == ["hello"]
    assert ANNOUNCE_HEADER not in text(request)


async def test_clear_keeping_system_messages(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    agent = agent_for(project)
    await agent.run("first")
    agent.add_tools([weather])
    await agent.run("second")
    agent.clear()  # keep_system=True: the announcement of the added tool stays, once
    await agent.run("third")
    await agent.aclose()
    request = llm.requests[2]
    assert_system_layer(request)
    users = user_texts(request)
    assert "first" not in users and "second" not in users and users[-1] == "third"
    assert sum(u.startswith(ANNOUNCE_HEADER) for u in users) == 1
    assert tool_names(request).count("weather") == 1


async def test_clear_without_system_messages(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    agent = agent_for(project)
    await agent.run("first")
    agent.add_tools([weather])
    await agent.run("second")
    agent.clear(keep_system=False)
    await agent.run("third")
    await agent.aclose()
    request = llm.requests[2]
    assert_system_layer(request)
    assert user_texts(request) == ["third"]
    assert tool_names(request).count("weather") == 1  # still offered, no longer announced


async def test_several_batches_in_a_row_never_duplicate(project: Path, llm: FakeLLM) -> None:
    llm.script(
        Reply(text="a"),
        Reply(text="b"),
        # long enough that its summary is shorter (a summary that grows the request is not kept)
        Reply(text=" ".join(f"point {i} of the third answer" for i in range(120))),
        Reply(text="d"),
        Reply(text=SUMMARY),
        Reply(text="e"),
    )
    agent = agent_for(project)
    await agent.run("one")
    agent.add_tools([weather])
    agent.clear()
    agent.clear()
    await agent.run("two")
    agent.clear()
    await agent.run("three")
    await agent.run("three more")
    await agent.compact()  # summarises the older turn; the newest stays word for word
    agent.clear()
    await agent.run("four")
    await agent.compact()  # only the newest turn: nothing to summarise, no request
    await agent.aclose()
    assert len(llm.requests) == 6
    for request in llm.requests:
        assert_system_layer(request)
        assert text(request).count(ANNOUNCE_HEADER) <= 1
        assert text(request).count("WEATHER-DESC-MARKER") <= 2  # tools entry + one announcement
    assert INSTRUCTION_MARK in text(llm.requests[4]) and "three more" not in text(llm.requests[4])
    assert user_texts(llm.requests[5])[-1] == "four"
    assert "one" not in user_texts(llm.requests[5]) and "two" not in user_texts(llm.requests[5])

    from etcode.session.store import SessionStore

    store = SessionStore.open()
    info = store.get_session(agent.session_id)
    assert info.batch >= 4  # the last compact had nothing to do: no new batch
    store.close()


async def test_agent_without_initial_tools_has_no_description_message(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="one"), Reply(text="two"))
    agent = agent_for(project, tools=())
    await agent.run("first")
    agent.clear()
    await agent.run("second")
    await agent.aclose()
    for request in llm.requests:
        assert tool_names(request) == ["TodoWrite"]  # the one tool every agent has
        assert text(request).count("TEST-SYSTEM-MARKER") == 1
        assert ANNOUNCE_HEADER not in text(request)
    assert user_texts(llm.requests[1]) == ["second"]


async def test_dynamic_tools_leave_the_initial_descriptions_alone(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    agent = agent_for(project)
    await agent.run("first")
    agent.add_tools([weather])
    await agent.run("second")
    await agent.run("third")
    await agent.aclose()
    before, after, later = llm.requests
    initial = [t for t in before.body["tools"] if t["function"]["name"] == "lookup"]
    assert [t for t in after.body["tools"] if t["function"]["name"] == "lookup"] == initial
    assert tool_names(before) == ["lookup", "TodoWrite"]
    assert tool_names(after) == ["lookup", "TodoWrite", "weather"]
    assert_system_layer(after)
    users = user_texts(after)
    assert users[0] == "first" and users[-1] == "second"
    announcements = [u for u in users if u.startswith(ANNOUNCE_HEADER)]
    assert len(announcements) == 1 and "weather" in announcements[0] and "lookup" not in announcements[0]
    assert text(later).count(ANNOUNCE_HEADER) == 1  # follows the history, not repeated
    assert_system_layer(later)

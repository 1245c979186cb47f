"""The session side of the Python API: store defaults, resume, undo in memory, titles."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etcode import Agent
from etcode.engine.title import TITLE_PROMPT, title_from_text
from etcode.session.store import SessionStore
from etcode.util.paths import data_dir
from tests.fake_llm import Call, FakeLLM, Recorded, Reply, without_environment


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def configure(project: Path, llm: FakeLLM, **extra) -> None:
    config = {
        "model": "fake/test-model",
        "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}],
        **extra,
    }
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


async def test_library_default_writes_nothing_to_disk(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm)
    llm.script(Reply(text="one"), Reply(text="two"))
    agent = Agent(directory=tmp_path, builtin_tools=False)
    await agent.run("first")
    await agent.run("second")
    await agent.aclose()
    assert not (data_dir() / "etcode.db").exists()
    assert [
        without_environment(m["content"]) for m in llm.requests[1].body["messages"] if m["role"] == "user"
    ] == [
        "first",
        "second",
    ]


def test_store_false_cannot_continue() -> None:
    with pytest.raises(ValueError, match="store"):
        Agent(store=False, continue_last=True)


async def test_continue_last_from_python(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm)
    llm.script(Reply(text="Paris."), Reply(text="Yes, Paris."))
    first = Agent(directory=tmp_path, builtin_tools=False, store=True)
    await first.run("capital of France?")
    await first.aclose()
    again = Agent(directory=tmp_path, builtin_tools=False, continue_last=True)  # opens the default store
    assert again.session_id == first.session_id
    await again.run("sure?")
    await again.aclose()
    roles = [m["role"] for m in llm.requests[1].body["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


async def test_undo_in_memory(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm)
    (tmp_path / "keep.txt").write_text("original\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "keep.txt", "content": "changed\n"})]),
        Reply(calls=[Call("WriteFile", {"file_path": "made.txt", "content": "new\n"})]),
        Reply(text="done"),
    )
    agent = Agent(directory=tmp_path, store=False)
    await agent.run("change files")
    assert (tmp_path / "made.txt").exists()
    restored = await agent.undo()
    await agent.aclose()
    assert sorted(Path(p).name for p in restored) == ["keep.txt", "made.txt"]
    assert (tmp_path / "keep.txt").read_text(encoding="utf-8") == "original\n"
    assert not (tmp_path / "made.txt").exists()
    assert await agent.undo() == []
    assert "undid your file changes" in agent.history[-1].text


async def test_title_from_the_small_model(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm, small_model="fake/tiny-model")

    def answer(request: Recorded) -> Reply:
        if request.body["model"] == "tiny-model":
            assert TITLE_PROMPT in json.dumps(request.body)
            return Reply(text='"Fix the login redirect bug."')
        return Reply(text="On it.")

    llm.script(answer, answer)
    agent = Agent(directory=tmp_path, builtin_tools=False, store=True)
    await agent.run("the login page sends users to /404 after they sign in, please have a look")
    await agent.aclose()
    store = SessionStore.open()
    assert store.get_session(agent.session_id).title == "Fix the login redirect bug"
    store.close()
    assert sorted(r.body["model"] for r in llm.requests) == ["test-model", "tiny-model"]


async def test_title_from_the_first_message_without_a_small_model(tmp_path: Path, llm: FakeLLM) -> None:
    configure(tmp_path, llm)
    llm.script(Reply(text="ok"))
    agent = Agent(directory=tmp_path, builtin_tools=False, store=True)
    await agent.run("\n\n  Refactor   the parser\nand more details here")
    await agent.aclose()
    store = SessionStore.open()
    assert store.get_session(agent.session_id).title == "Refactor the parser"
    store.close()
    assert len(llm.requests) == 1


def test_title_truncation() -> None:
    long = "Please refactor the configuration loader so that it reads every layer lazily and caches it"
    title = title_from_text(long)
    assert len(title) <= 60 and title.endswith("…") and " " in title
    assert not title[:-1].endswith(" ")
    assert title_from_text("") == "New session"


async def test_a_dangling_call_inside_the_history_is_repaired_in_a_new_batch(
    tmp_path: Path, llm: FakeLLM
) -> None:
    from etcode.provider.types import Message, ToolCallPart

    configure(tmp_path, llm)
    store = SessionStore.open()
    store.create_session("ses_broken", project_id="p", directory=str(tmp_path))
    broken = [
        Message.user("run it"),
        Message("assistant", [ToolCallPart("call_x", "Bash", '{"command": "make"}')]),
        Message.user("are you still there?"),
    ]
    store.append_messages("ses_broken", broken, turn=1)
    llm.script(Reply(text="Yes."))
    agent = Agent(directory=tmp_path, builtin_tools=False, store=store, session_id="ses_broken")
    await agent.run("hello")
    await agent.aclose()
    messages = llm.requests[0].body["messages"]
    # The two user messages in a row are sent joined (chat templates that require user and
    # assistant to alternate refuse them apart); the store keeps them as they were.
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert "are you still there?" in str(messages[4]["content"]) and "hello" in str(messages[4]["content"])
    assert messages[3]["tool_call_id"] == "call_x" and "interrupted" in messages[3]["content"]
    info = store.get_session("ses_broken")
    assert info.batch == 1 and info.message_count == 6  # 3 + the filler + prompt + answer
    assert [m.role for m in store.load_messages("ses_broken")] == [
        "user",
        "assistant",
        "tool",
        "user",
        "user",
        "assistant",
    ]
    store.close()

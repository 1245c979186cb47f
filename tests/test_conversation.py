"""Issue 33 item 6: ``agent.conversation()`` under the agent-loop design's names.

A ``Conversation`` keeps its own history, todos and session, apart from the agent's own
``run``s and its other conversations; ``send`` is sync from ordinary code and awaitable in
async code; a stored one is an ordinary session the CLI resumes by id. Real HTTP against
the fake LLM server; the CLI as a subprocess.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from etcode import Agent, AgentResult, BaseLLMClient, Conversation, EventType, LLMResponse, TokenUsage, tool
from etcode.util.paths import data_dir
from tests.cli_helpers import etcode, result_line, write_config
from tests.fake_llm import Call, FakeLLM, Recorded, Reply, user_images, without_environment
from tests.process_support import live_with, survivors, token


def user_texts(request: Recorded) -> list[str]:
    return [without_environment(m["content"]) for m in request.body["messages"] if m["role"] == "user"]


def echo(recorded: Recorded) -> Reply:
    """Answers with the newest user message, so each reply says which conversation it is."""
    return Reply(text=f"re: {user_texts(recorded)[-1]}")


def agent_for(llm: FakeLLM, project: Path, **kwargs: Any) -> Agent:
    return Agent("openai/m", "k", llm.openai_base_url, directory=project, **kwargs)


def test_send_continues_the_conversation_from_ordinary_code(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="Paris."), Reply(text="About 2.1 million."))
    conv = agent_for(llm, project).conversation()
    assert isinstance(conv, Conversation)
    assert conv.messages == [] and conv.history == []
    first = conv.send("Capital of France?")
    assert isinstance(first, AgentResult) and first.content == "Paris."
    second = conv.send_sync("Its population?")
    assert second.content == "About 2.1 million."
    assert user_texts(llm.requests[1]) == ["Capital of France?", "Its population?"]
    assert [m["role"] for m in llm.requests[1].body["messages"]] == ["system", "user", "assistant", "user"]
    messages = conv.messages
    assert [(m["role"], without_environment(m["content"])) for m in messages] == [
        ("user", "Capital of France?"),
        ("assistant", "Paris."),
        ("user", "Its population?"),
        ("assistant", "About 2.1 million."),
    ]
    assert second.session_id == conv.session_id
    messages.clear()  # a copy: the conversation is untouched
    conv.history.clear()
    assert len(conv.messages) == 4


def test_conversations_and_runs_of_one_agent_keep_apart(llm: FakeLLM, project: Path) -> None:
    todos = [{"content": "Plan the trip", "status": "in_progress"}]
    llm.script(
        echo,  # agent.run
        Reply(calls=[Call("TodoWrite", {"todos": todos})]),  # a's first send
        Reply(text="planned"),
        echo,  # b
        echo,  # a again
        echo,  # agent.run again
    )
    agent = agent_for(llm, project, store=False)
    agent.run("own run")
    a, b = agent.conversation(), agent.conversation()
    assert len({agent.session_id, a.session_id, b.session_id}) == 3
    assert a.send("trip to Rome").content == "planned"
    assert b.send("what is 2+2").content == "re: what is 2+2"
    assert a.send("and Milan").content == "re: and Milan"
    assert agent.run("own again").content == "re: own again"
    assert user_texts(llm.requests[3]) == ["what is 2+2"]  # b sees none of a's or the agent's turns
    assert user_texts(llm.requests[4]) == ["trip to Rome", "and Milan"]
    assert user_texts(llm.requests[5]) == ["own run", "own again"]
    assert [(t["content"], t["status"]) for t in a.todos] == [("Plan the trip", "in_progress")]
    assert b.todos == [] and agent.last_result is not None and agent.last_result.todos == []
    a.todos.clear()  # a copy
    assert len(a.todos) == 1


def test_reset_forgets_the_history_and_the_todos(llm: FakeLLM, project: Path) -> None:
    todos = [{"content": "Write the tests", "status": "pending"}]
    llm.script(Reply(calls=[Call("TodoWrite", {"todos": todos})]), Reply(text="noted"), echo)
    conv = agent_for(llm, project).conversation()
    conv.send("plan it")
    assert conv.todos and conv.messages
    conv.reset()
    assert conv.todos == [] and conv.messages == []
    conv.send("fresh start")
    assert user_texts(llm.requests[2]) == ["fresh start"]


async def test_the_async_forms(llm: FakeLLM, project: Path) -> None:
    llm.script(echo, echo, echo)
    agent = agent_for(llm, project)
    async with agent.conversation() as conv:
        first = await conv.send("one")  # the design's form
        assert first.content == "re: one"
        assert (await conv.asend("two")).content == "re: two"
        kinds: list[EventType] = []
        last: dict[str, Any] = {}
        async for event in conv.send_stream("three"):
            kinds.append(event.type)
            if event.type == EventType.LOOP_END:
                last = event.data
    assert kinds[0] == EventType.LOOP_START and kinds[-1] == EventType.LOOP_END
    assert last["content"] == "re: three"
    assert [without_environment(m["content"]) for m in last["messages"] if m["role"] == "user"] == [
        "one",
        "two",
        "three",
    ]
    assert last["messages"] == conv.messages
    await agent.aclose()


def test_send_stream_sync_continues_too(llm: FakeLLM, project: Path) -> None:
    llm.script(echo, echo)
    conv = agent_for(llm, project).conversation()
    first = [event.type for event in conv.send_stream_sync("one")]
    assert first[0] == EventType.LOOP_START and first[-1] == EventType.LOOP_END
    ends = [e for e in conv.send_stream_sync("two") if e.type == EventType.LOOP_END]
    assert ends[0].data["content"] == "re: two"
    assert user_texts(llm.requests[1]) == ["one", "two"]


async def test_two_conversations_answer_at_once(llm: FakeLLM, project: Path) -> None:
    """Both requests are in the server together: neither waits for the other's answer."""
    both_asked = threading.Barrier(2, timeout=30)

    def together(recorded: Recorded) -> Reply:
        both_asked.wait()
        return echo(recorded)

    llm.script(together, together)
    agent = agent_for(llm, project)
    a, b = agent.conversation(), agent.conversation()
    first, second = await asyncio.gather(a.asend("from a"), b.asend("from b"))
    assert (first.content, second.content) == ("re: from a", "re: from b")
    assert [without_environment(m["content"]) for m in a.messages] == ["from a", "re: from a"]
    assert [without_environment(m["content"]) for m in b.messages] == ["from b", "re: from b"]
    await a.aclose()
    await b.aclose()


async def test_a_send_made_while_another_runs_waits_its_turn(llm: FakeLLM, project: Path) -> None:
    asked, release = threading.Event(), threading.Event()

    def held(recorded: Recorded) -> Reply:
        asked.set()
        release.wait(30)
        return echo(recorded)

    llm.script(held, echo)
    conv = agent_for(llm, project).conversation()
    first = asyncio.ensure_future(conv.asend("first"))
    assert await asyncio.to_thread(asked.wait, 30)
    second = asyncio.ensure_future(conv.asend("second"))
    release.set()
    assert (await first).content == "re: first"
    assert (await second).content == "re: second"
    # it was sent after the first had its answer, not beside it
    assert user_texts(llm.requests[1]) == ["first", "second"]
    assert llm.requests[1].body["messages"][2]["content"] == "re: first"
    await conv.aclose()


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


async def test_leaving_a_stream_early_stops_it_and_the_next_send_goes_on(llm: FakeLLM, project: Path) -> None:
    llm.script(Reply(text="Adding.", calls=[Call("add", {"a": 1, "b": 2})]), echo)
    conv = agent_for(llm, project, tools=[add]).conversation()
    async for event in conv.send_stream("one"):
        if event.type == EventType.ACTION:
            break
    result = await conv.asend("two")  # no wait for a stream that goes on unseen
    assert result.content == "re: two"
    assert len(llm.requests) == 2  # the first send made no request after it was left
    assert user_texts(llm.requests[1]) == ["one", "two"]
    await conv.aclose()


def test_a_library_conversation_writes_nothing(llm: FakeLLM, project: Path) -> None:
    llm.script(echo)
    agent_for(llm, project).conversation().send("hi")
    assert not (data_dir() / "etcode.db").exists()


def test_a_stored_conversation_is_a_session_the_cli_resumes(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(
        Reply(text="Noted: 42."),  # the conversation
        Reply(text="It was 42."),  # the CLI, resuming it
        echo,  # the conversation again, resumed by id
        echo,  # another conversation of the stored agent
    )
    agent = Agent(directory=project, store=True)
    conv = agent.conversation()
    assert conv.send("Remember the number 42.").content == "Noted: 42."
    proc = etcode("run", "--session", conv.session_id, "--format", "json", "Which number?", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert result_line(proc)["session_id"] == conv.session_id
    assert user_texts(llm.requests[1]) == ["Remember the number 42.", "Which number?"]
    assert llm.requests[1].body["messages"][2]["content"] == "Noted: 42."
    again = Agent(directory=project).conversation(session_id=conv.session_id)  # back in Python
    again.send("Thanks.")
    assert user_texts(llm.requests[2]) == ["Remember the number 42.", "Which number?", "Thanks."]
    other = agent.conversation()  # stored where the agent's session is, a session of its own
    other.send("unrelated")
    assert other.session_id != conv.session_id
    assert user_texts(llm.requests[3]) == ["unrelated"]
    listed = etcode("sessions", "list", "--json", cwd=project)
    assert {conv.session_id, other.session_id} <= set(listed.stdout.split('"')), listed.stderr


def test_store_true_on_the_conversation_alone(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(Reply(text="kept"), Reply(text="resumed"))
    agent = Agent(directory=project)  # in memory
    conv = agent.conversation(store=True)
    conv.send("keep this")
    proc = etcode("run", "--session", conv.session_id, "go on", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "resumed\n"
    assert user_texts(llm.requests[1]) == ["keep this", "go on"]


#: What an ``Agent`` shares with the conversations made from it, as the same object.
SHARED = {"llm", "provider", "asker", "question_turn", "config", "limits", "retry", "on_event", "directory"}


def test_every_mutable_field_of_an_agent_is_a_conversations_own(llm: FakeLLM, project: Path) -> None:
    """A field added to ``Agent.__init__`` that holds session state (a list, a dict, an
    object) but is not made in ``_begin_session`` would be shared by every conversation."""
    agent = agent_for(llm, project, store=False, tools=[lambda: None], skills=[project])
    agent.state["x"] = 1
    agent.history.append(object())  # type: ignore[arg-type]
    conv = agent.conversation()
    sibling = conv._agent  # noqa: SLF001 - the agent the conversation runs on
    assert isinstance(sibling, Agent)
    immutable = (str, int, float, bool, type(None), Path)
    for name, value in vars(agent).items():
        if name in SHARED or isinstance(value, immutable):
            continue
        assert getattr(sibling, name) is not value, f"Agent.{name} is shared by its conversations"
    assert "x" not in sibling.state and sibling.history == []
    assert (sibling.model, sibling.base_url, sibling.system_prompt) == (
        agent.model,
        agent.base_url,
        agent.system_prompt,
    )


class Replies(BaseLLMClient):
    """A client of the design's shape that answers in turn and keeps what it was sent."""

    def __init__(self, *texts: str) -> None:
        self.texts = list(texts)
        self.seen: list[list[dict[str, Any]]] = []

    async def chat(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None, **kwargs: Any
    ) -> LLMResponse:
        self.seen.append(messages)
        return LLMResponse(content=self.texts.pop(0), tool_calls=[], usage=TokenUsage(50, 20, 70), raw={})


async def test_the_designs_conversation_tests_with_a_client_of_ones_own(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The design's tests/test_conversation.py, as a ported program runs them."""
    monkeypatch.chdir(project)
    client = Replies("first answer", "second answer", "elsewhere")
    agent = Agent(llm=client)
    conv, other = agent.conversation(), agent.conversation()
    assert conv is not other and conv.messages == other.messages == []
    r1 = await conv.send("question 1")
    kinds = [event.type async for event in conv.send_stream("follow-up")]
    assert isinstance(r1, AgentResult) and r1.content == "first answer"
    assert kinds[0] == EventType.LOOP_START and kinds[-1] == EventType.LOOP_END
    assert [m["content"] for m in conv.messages][1:] == ["first answer", "follow-up", "second answer"]
    assert [m["role"] for m in client.seen[1]] == ["system", "user", "assistant", "user"]
    assert (await other.send("elsewhere?")).content == "elsewhere"
    assert [m["role"] for m in client.seen[2]] == ["system", "user"]
    conv.reset()
    assert conv.messages == [] and len(other.messages) == 2
    await conv.aclose()
    await other.aclose()


def test_images_go_with_a_send_and_stay_in_the_conversation(llm: FakeLLM, project: Path) -> None:
    from tests.image_making import gradient, write_image

    shot = write_image(project / "shot.png", gradient(32, 24))
    llm.script(Reply(text="a gradient"), echo)
    conv = Agent("myvllm/vision", "k", llm.openai_base_url, directory=project).conversation()
    assert conv.send("what is this?", images=["shot.png"]).content == "a gradient"
    assert user_images(llm.requests[0].body) == [("image/png", shot)]
    conv.send("and its colours?")
    assert user_images(llm.requests[1].body, 0) == [("image/png", shot)]  # the first message keeps it
    assert conv.history[0].images and not conv.history[2].images


async def test_an_agent_stream_left_early_ends_before_the_next_run(llm: FakeLLM, project: Path) -> None:
    """The same for a plain Agent: the run left at its first action is stopped and kept, and
    the next run answers its own task (it had received the first run's answer)."""
    llm.script(Reply(text="Adding.", calls=[Call("add", {"a": 1, "b": 2})]), echo)
    agent = agent_for(llm, project, tools=[add])
    async for event in agent.arun_stream("one"):
        if event.type == EventType.ACTION:
            break
    result = await agent.arun("two")
    assert result.content == "re: two"
    assert len(llm.requests) == 2
    assert user_texts(llm.requests[1]) == ["one", "two"]
    await agent.aclose()


async def test_a_conversation_closing_leaves_the_shared_store_to_the_others(
    llm: FakeLLM, project: Path, tmp_path: Path
) -> None:
    """Conversations of a stored agent share its store: one that closes (``send_sync``
    closes after each send) leaves the store's writer thread to one still open."""
    from etcode.session.store import SessionStore

    store = SessionStore.open(tmp_path / "db" / "etcode.db")
    llm.script(echo, echo, echo)
    agent = agent_for(llm, project, store=store)
    a, b = agent.conversation(), agent.conversation()
    assert (await a.asend("a1")).content == "re: a1"  # a stays open
    writer = await store.call(threading.current_thread)
    assert (await asyncio.to_thread(b.send_sync, "b1")).content == "re: b1"  # b opens and closes
    assert await store.call(threading.current_thread) is writer
    assert (await a.asend("a2")).content == "re: a2"
    await a.aclose()
    writer.join(30)
    assert not writer.is_alive()  # the last user's close ends it
    assert [m.text for m in store.load_messages(a.session_id)][-1] == "re: a2"


def test_two_threads_send_sync_on_conversations_of_one_stored_agent(llm: FakeLLM, project: Path) -> None:
    """Smoke test of the reported race: every send of both threads answered and saved."""
    rounds = 8
    llm.script(*([echo] * (2 * rounds)))
    agent = agent_for(llm, project, store=True)
    conversations = [agent.conversation(), agent.conversation()]
    failures: list[object] = []

    def work(conv: Conversation, tag: str) -> None:
        for i in range(rounds):
            try:
                result = conv.send_sync(f"{tag}{i}")
            except BaseException as err:  # noqa: BLE001 - the test counts them
                failures.append(err)
                continue
            if result.content != f"re: {tag}{i}" or result.error:
                failures.append((tag, i, result.content, result.error))

    threads = [threading.Thread(target=work, args=(c, t)) for c, t in zip(conversations, "ab", strict=True)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert failures == []
    for conv in conversations:
        assert len(conv.messages) == 2 * rounds


def background_sleep(mark: str) -> Reply:
    return Reply(
        calls=[Call("Bash", {"command": f"sleep {mark}", "run_in_background": True, "description": "s"})]
    )


async def test_closing_the_agent_closes_its_conversations(llm: FakeLLM, project: Path) -> None:
    """``agent.aclose()`` ends what its conversations opened too (their background processes)."""
    mark = token()
    llm.script(background_sleep(mark), Reply(text="started"))
    agent = agent_for(llm, project)
    conv = agent.conversation()
    assert (await conv.asend("start a sleeper")).content == "started"
    while not live_with(f"sleep\0{mark}"):
        await asyncio.sleep(0.01)
    await agent.aclose()
    assert await survivors(mark) == []


PROGRAM = """
import asyncio, sys
from etcode import Agent

async def main() -> None:
    agent = Agent("openai/test-model", "k", sys.argv[1], directory=sys.argv[2], store=True)
    if sys.argv[3] == "conversation":  # the design's examples/conversation.py: never closed
        print((await agent.conversation().send("start a sleeper")).content)
    else:
        print((await agent.arun("start a sleeper")).content)

asyncio.run(main())
"""


@pytest.mark.parametrize("what", ["conversation", "agent"])
def test_a_program_that_closes_nothing_exits_cleanly(
    llm: FakeLLM, project: Path, tmp_path: Path, what: str
) -> None:
    """An async program that never closes its agent or conversation: its background
    process ends with it, and nothing is printed on stderr ("Event loop is closed")."""
    mark = token()
    llm.script(background_sleep(mark), Reply(text="started"))
    program = tmp_path / "program.py"
    program.write_text(PROGRAM, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(program), llm.openai_base_url, str(project), what],
        cwd=project,
        env=os.environ,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert (proc.returncode, proc.stdout.strip(), proc.stderr) == (0, "started", "")
    assert asyncio.run(survivors(mark)) == []


def test_a_stored_agents_later_runs_hold_the_session_lock(
    llm: FakeLLM, project: Path, tmp_path: Path
) -> None:
    """``run_sync`` closes the session after each run; the next run holds its lock again, so
    another etcode process is kept out of it as during the first."""
    from etcode.session import lock
    from etcode.session.store import SessionStore

    store = SessionStore.open(tmp_path / "db" / "etcode.db")
    held: list[bool] = []

    @tool
    def locked() -> str:
        """Whether the session is locked."""
        held.append(any(path.name == f"{agent.session_id}.lock" for path in lock._HELD))
        return "checked"

    llm.script(Reply(calls=[Call("locked", {})]), echo, Reply(calls=[Call("locked", {})]), echo)
    agent = agent_for(llm, project, store=store, tools=[locked])
    agent.run_sync("first")
    agent.run_sync("second")
    assert held == [True, True]


def test_a_stream_left_on_a_loop_closed_since_does_not_fail_the_next_run(llm: FakeLLM, project: Path) -> None:
    """The stream left early ran on a loop the program closed (the agent too, not the
    loop's async generators): the next run, on a loop of its own, does not resume it."""
    llm.script(Reply(text="Adding.", calls=[Call("add", {"a": 1, "b": 2})]), echo)
    agent = agent_for(llm, project, tools=[add])

    async def leave_early() -> None:
        async for event in agent.arun_stream("one"):
            if event.type == EventType.ACTION:
                break
        await agent.aclose()

    loop = asyncio.new_event_loop()
    try:
        loop.run_until_complete(leave_early())
        tasks = asyncio.all_tasks(loop)  # ended as asyncio.run ends them; the stream stays open
        for task in tasks:
            task.cancel()
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))
    finally:
        loop.close()
    assert agent.run_sync("two").content == "re: two"


async def test_a_run_refused_for_a_busy_session_leaves_the_next_one_to_lock_it(
    llm: FakeLLM, project: Path, tmp_path: Path
) -> None:
    """Another process took the session after this agent closed it: the run is refused,
    and the next run, once it is free, holds the lock again (it had run without one)."""
    import subprocess
    import sys

    from etcode.session import lock
    from etcode.session.lock import SessionBusyError
    from etcode.session.store import SessionStore

    store = SessionStore.open(tmp_path / "db" / "etcode.db")
    llm.script(echo, echo)
    agent = agent_for(llm, project, store=store)
    await agent.arun("first")
    await agent.aclose()
    path = tmp_path / "db" / "locks" / f"{agent.session_id}.lock"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import fcntl,sys; f=open(sys.argv[1],'a'); fcntl.flock(f, fcntl.LOCK_EX); "
         "print('held', flush=True); sys.stdin.read()", str(path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(SessionBusyError):
            await agent.arun("second")
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(timeout=60)
    assert (await agent.arun("third")).content == "re: third"
    assert path in lock._HELD
    await agent.aclose()

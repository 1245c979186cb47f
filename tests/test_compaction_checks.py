"""A model's summary is checked before it replaces the history (issue 34, item 5).

Small models write summaries cut at their ``max_tokens``, longer than what they replace, or
"I'm happy to continue." over and over. Such a summary is rejected and the older history is
trimmed instead (no model text kept); the user's own messages stay word for word either way;
the summarising requests are counted in the result (``compactions``). Against the fake LLM
server over HTTP, through the library ``Agent`` and the CLI.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from etcode import Agent
from etcode.contract import events as ev
from etcode.engine import kept_users
from tests.cli_helpers import etcode
from tests.fake_llm import Call, FakeLLM, Recorded, Reply
from tests.test_compaction import INSTRUCTION_MARK, SUMMARY, SYSTEM, long_text, lookup

FACT = "My name is Zorblax and I keep bees on Mars."


@pytest.fixture
def llm():
    with FakeLLM() as server:
        yield server


def configure(project: Path, llm: FakeLLM, context: int = 6000, output: int = 1000) -> None:
    entry = {
        "id": "fake",
        "type": "openai",
        "baseURL": llm.openai_base_url,
        "apiKey": "k",
        "models": {"test-model": {"limit": {"context": context, "output": output}}},
    }
    (project / "etcode.json").write_text(json.dumps({"model": "fake/test-model", "provider": [entry]}))


def body_text(request: Recorded) -> str:
    return json.dumps(request.body)


async def third_turn_compacts(project: Path, llm: FakeLLM, summary: Reply) -> tuple[list[ev.Event], Agent]:
    """Two long turns, the first stating a fact, then a third whose request is over the limit
    of a 6,000-token window: the model is asked for a summary and answers ``summary``."""
    configure(project, llm)
    llm.script(
        Reply(text=long_text("topic one", 900), usage=(300, 1200)),
        Reply(text=long_text("topic two", 900), usage=(3400, 1200)),
        summary,
        Reply(text="Topic three is fine."),
    )
    agent = Agent(directory=project, system_prompt=SYSTEM, builtin_tools=False, store=False, tools=[lookup])
    await agent.run(FACT)
    await agent.run("Tell me about topic two")
    assert len(llm.requests) == 2  # no compaction yet
    events = [event async for event in agent.stream("Tell me about topic three")]
    await agent.aclose()
    assert len(llm.requests) == 4 and INSTRUCTION_MARK in body_text(llm.requests[2])
    assert agent.last_result.text == "Topic three is fine."
    assert agent.last_result.compactions == 1
    return events, agent


def alternates(request: Recorded) -> bool:
    """No two user messages in a row in a request (tool results answer the assistant)."""
    seen = [m["role"] for m in request.body["messages"] if m["role"] != "system"]
    return all(not (x == "user" and y == "user") for x, y in zip(seen, seen[1:], strict=False))


def done_event(events: list[ev.Event]) -> ev.CompactionEvent:
    done = [e for e in events if isinstance(e, ev.CompactionEvent) and e.phase == "done"]
    assert len(done) == 1, events
    return done[0]


def assert_trimmed_instead(events: list[ev.Event], llm: FakeLLM, why: str) -> None:
    """The summary was not kept: the next request holds no model text for the older part,
    the user's messages word for word, and fits the window."""
    after = llm.requests[3]
    text = body_text(after)
    assert FACT in text and "Tell me about topic two" in text  # the user's own words
    assert "fact100 about topic one" not in text  # the long answers were trimmed
    assert "SUMMARY-MARKER" not in text and "happy to continue" not in text
    assert after.body["messages"][-1] == {"role": "user", "content": "Tell me about topic three"}
    assert all(alternates(r) for r in llm.requests)
    done = done_event(events)
    assert why in done.message and "trimmed instead" in done.message
    assert done.tokens_after < done.tokens_before
    assert len(after.raw) // 4 < 5000 * 0.9  # under the limit: no compaction at once again


async def test_a_cut_summary_is_rejected_and_the_history_trimmed(tmp_path: Path, llm: FakeLLM) -> None:
    events, _ = await third_turn_compacts(tmp_path, llm, Reply(text=SUMMARY, stop_reason="max_tokens"))
    assert_trimmed_instead(events, llm, "cut off")
    # The trimmed history keeps its turns in order (roles valid): each long answer's head.
    roles = [m["role"] for m in llm.requests[3].body["messages"]]
    assert roles == ["system", "user", "assistant", "user", "assistant", "user"]
    assert "trimmed by compaction" in body_text(llm.requests[3])


async def test_a_summary_not_shorter_is_rejected(tmp_path: Path, llm: FakeLLM) -> None:
    events, _ = await third_turn_compacts(tmp_path, llm, Reply(text=long_text("summary", 3000)))
    assert_trimmed_instead(events, llm, "not shorter than what it replaced")
    assert "fact10 about summary" not in body_text(llm.requests[3])


async def test_a_repetitive_summary_is_rejected(tmp_path: Path, llm: FakeLLM) -> None:
    junk = " ".join(["I'm happy to continue."] * 40)
    events, _ = await third_turn_compacts(tmp_path, llm, Reply(text=junk))
    assert_trimmed_instead(events, llm, "mostly repetition")


async def test_a_tool_call_is_not_taken_for_a_summary(tmp_path: Path, llm: FakeLLM) -> None:
    """Small models call a tool when asked for the summary (the request keeps the tools, for
    the prompt cache): the answer is rejected, its text never kept as the summary."""
    call = Reply(text="Let me look that up.", calls=[Call("lookup", {"key": "topics"})])
    events, _ = await third_turn_compacts(tmp_path, llm, call)
    assert_trimmed_instead(events, llm, "called a tool instead of writing the summary")
    assert "Let me look that up." not in body_text(llm.requests[3])
    tools = [[t["function"]["name"] for t in r.body["tools"]] for r in llm.requests[1:3]]
    assert tools[0] == tools[1] and "lookup" in tools[0]  # the same tools: the prompt cache's prefix


def answers_and_summaries(answer_words: int) -> Callable[[Recorded], Reply]:
    """Answers of ``answer_words`` words; a good summary when asked for one."""

    def reply(recorded: Recorded) -> Reply:
        if INSTRUCTION_MARK in body_text(recorded):
            return Reply(text=SUMMARY)
        return Reply(text=long_text("the answer", answer_words))

    return reply


async def test_no_summary_is_asked_for_when_no_older_message_fits_its_request(
    tmp_path: Path, llm: FakeLLM
) -> None:
    """A system prompt that leaves no room for any older message in the summary request: no
    model call (it would summarise nothing but a note), the history is trimmed instead."""
    configure(tmp_path, llm, context=4096, output=1024)
    llm.script(*[answers_and_summaries(700)] * 4)
    system = "You are a careful assistant. " + long_text("the rules", 1400)
    agent = Agent(directory=tmp_path, system_prompt=system, builtin_tools=False, store=False, tools=[lookup])
    await agent.run(FACT)
    events = [event async for event in agent.stream("Question 2: and then?")]
    await agent.aclose()
    assert not [r for r in llm.requests if INSTRUCTION_MARK in body_text(r)]
    done = done_event(events)
    assert "no older message fit the summary request" in done.message
    assert done.tokens_after < done.tokens_before
    assert agent.last_result.compactions == 0
    assert FACT in body_text(llm.requests[-1]) and "trimmed by compaction" in body_text(llm.requests[-1])


async def test_a_compaction_that_would_grow_the_request_is_not_kept(tmp_path: Path, llm: FakeLLM) -> None:
    """``/compact`` of two short turns: the summary and its framing are larger than what they
    replace, so the history stays as it was (the request counted, nothing kept)."""
    configure(tmp_path, llm)
    llm.script(Reply(text="Fine."), Reply(text="Also fine."), Reply(text=SUMMARY), Reply(text="ok"))
    events: list[ev.Event] = []
    agent = Agent(directory=tmp_path, system_prompt=SYSTEM, builtin_tools=False, store=False, tools=[lookup])
    await agent.run(FACT)
    await agent.run("and then?")
    history = list(agent.history)
    await agent.compact(on_event=events.append)
    assert INSTRUCTION_MARK in body_text(llm.requests[2])
    assert agent.history == history
    done = done_event(events)
    assert done.tokens_after == done.tokens_before
    assert done.message.endswith("; the history was kept as it was"), done.message
    await agent.run("and now?")
    await agent.aclose()
    assert "SUMMARY-MARKER" not in body_text(llm.requests[-1])


async def test_a_good_summary_is_kept_with_the_users_messages(tmp_path: Path, llm: FakeLLM) -> None:
    events, agent = await third_turn_compacts(tmp_path, llm, Reply(text=SUMMARY))
    after = llm.requests[3]
    text = body_text(after)
    assert "SUMMARY-MARKER" in text and "fact1 about topic one" not in text
    first = after.body["messages"][1]["content"]  # the summary message: the user's words first
    assert first.index(f'<user_message chars="{len(FACT)}">\n{FACT}\n</user_message>') < first.index(
        "SUMMARY-MARKER"
    )
    assert done_event(events).message == ""
    # The summary request was asked for a length that fits the window, and says so.
    assert llm.requests[2].body["max_tokens"] <= 1000
    assert "under about 800 words" not in body_text(llm.requests[2])


async def test_the_users_messages_survive_a_second_compaction(tmp_path: Path, llm: FakeLLM) -> None:
    """The kept messages are read back from the earlier summary: the first turn's fact is
    still there after the next compaction."""
    configure(tmp_path, llm)
    llm.script(
        Reply(text=long_text("topic one", 900), usage=(300, 1200)),
        Reply(text=long_text("topic two", 900), usage=(3400, 1200)),
        Reply(text=SUMMARY),
        Reply(text=long_text("topic three", 900), usage=(3000, 1200)),
        Reply(text=long_text("topic four", 900), usage=(4600, 1200)),
        Reply(text="## Goal\nTopics.\nSECOND-SUMMARY"),
        Reply(text="done"),
    )
    agent = Agent(directory=tmp_path, system_prompt=SYSTEM, builtin_tools=False, store=False, tools=[lookup])
    for task in (FACT, "Tell me about topic two", "topic three", "topic four", "topic five"):
        await agent.run(task)
    await agent.aclose()
    summaries = [i for i, r in enumerate(llm.requests) if INSTRUCTION_MARK in body_text(r)]
    assert summaries == [2, 5]
    last = body_text(llm.requests[-1])
    assert (
        "SECOND-SUMMARY" in last
        and json.dumps(f'<user_message chars="{len(FACT)}">\n{FACT}\n</user_message>')[1:-1] in last
    )
    assert last.count(FACT) == 1


def test_compactions_are_counted_in_the_json_result_line(tmp_path: Path, llm: FakeLLM) -> None:
    project = tmp_path / "project"
    project.mkdir()
    configure(project, llm, context=12000, output=1000)  # the build agent's prompt and tools: ~6k
    llm.script(
        Reply(text=long_text("topic one", 2500), usage=(9000, 1500)),
        Reply(text="I'm happy to continue. " * 30),
        Reply(text="ok"),
    )
    first = etcode("run", "--format", "json", FACT, cwd=project)
    assert first.returncode == 0, first.stderr
    assert json.loads(first.stdout.splitlines()[-1])["compactions"] == 0
    proc = etcode("run", "--format", "json", "-c", "and now topic two", cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    result = lines[-1]
    assert result["type"] == "result" and result["compactions"] == 1 and result["steps"] == 1
    done = [e for e in lines if e["type"] == "compaction" and e["phase"] == "done"]
    assert len(done) == 1 and "mostly repetition" in done[0]["message"]
    assert FACT in body_text(llm.requests[2])
    # The plain output says why too.
    assert "mostly repetition" in etcode_plain_line(done[0])


def etcode_plain_line(event: dict) -> str:
    """The plain renderer's line for a compaction event."""
    import io

    from etcode.ui.plain import PlainRenderer

    out = io.StringIO()
    renderer = PlainRenderer(out=out, err=out)
    fields = {k: v for k, v in event.items() if k not in ("type", "version")}
    renderer.handle(ev.CompactionEvent(**fields))
    return out.getvalue()


@pytest.mark.parametrize(
    ("text", "junk"),
    [
        (" ".join(["I'm happy to continue."] * 12), True),
        ("continue " * 80, True),
        ("## Goal\nok.\n" * 10, True),
        (SUMMARY, False),
        ("\n".join(f"- note {i}: the lighthouse lamp was checked at {i} o'clock." for i in range(40)), False),
        (long_text("the project", 400), False),
    ],
    ids=["happy-to-continue", "one-word", "one-section", "summary", "notes", "facts"],
)
def test_repetition_measure(text: str, junk: bool) -> None:
    from etcode.engine.summary_check import REPEAT_LIMIT, repetition

    assert (repetition(text) >= REPEAT_LIMIT) is junk, repetition(text)


def small_model(summary_tokens: int) -> Callable[[Recorded], Reply]:
    """A small model's server: ~340-token answers; a summary of ``summary_tokens``, cut
    when its ``max_tokens`` is less."""

    def answer(recorded: Recorded) -> Reply:
        if INSTRUCTION_MARK not in body_text(recorded):
            turn = sum(1 for m in recorded.body["messages"] if m["role"] == "user")
            return Reply(text=long_text(f"answer {turn}", 220))
        limit = recorded.body["max_tokens"]
        words = min(limit, summary_tokens) * 3 // 4
        return Reply(
            text=long_text("the summary", words), stop_reason="max_tokens" if limit < summary_tokens else None
        )

    return answer


@pytest.mark.parametrize("summary_tokens", [350, 150], ids=["long-summaries", "short-summaries"])
async def test_ten_turns_at_a_4k_window_compact_seldom(
    tmp_path: Path, llm: FakeLLM, summary_tokens: int
) -> None:
    """Ten short turns with long answers in a 4,096-token window (a system prompt of ~1,500
    tokens): each compaction leaves room for the next turns, so summaries are asked for at
    most 4 times (before issue 34: 7 when the model's summaries ran long — each one kept,
    and the next turn compacted again — and 4 when they were short), and the first turn's
    fact is still in the last request (before: summarised away)."""
    configure(tmp_path, llm, context=4096, output=1024)
    llm.script(*[small_model(summary_tokens)] * 40)
    system = "You are a careful assistant. " + long_text("the rules", 700)
    agent = Agent(directory=tmp_path, system_prompt=system, builtin_tools=False, store=False, tools=[lookup])
    results = []
    for turn in range(1, 11):
        task = FACT if turn == 1 else f"Question {turn}: tell me more about answer {turn - 1}."
        results.append(await agent.run(task))
        assert results[-1].stop_reason == "end_turn", results[-1].error
    await agent.aclose()
    summaries = sum(1 for r in llm.requests if INSTRUCTION_MARK in body_text(r))
    assert summaries <= 4
    assert FACT in body_text(llm.requests[-1])
    assert sum(r.compactions for r in results) == summaries


async def test_a_summary_is_not_held_to_a_short_answer_size(tmp_path: Path, llm: FakeLLM) -> None:
    """``max_tokens: 32`` for answers keeps a 32-token reserve; the summary request still
    gets room for a summary (at least 256 tokens), else every summary would come back cut."""
    configure(tmp_path, llm)
    config = json.loads((tmp_path / "etcode.json").read_text())
    config["provider"][0]["options"] = {"max_tokens": 32}
    (tmp_path / "etcode.json").write_text(json.dumps(config))
    llm.script(
        Reply(text=long_text("topic one", 1500), usage=(300, 2000)),
        Reply(text=long_text("topic two", 1500), usage=(4000, 2000)),
        Reply(text=SUMMARY),
        Reply(text="ok"),
    )
    agent = Agent(directory=tmp_path, system_prompt=SYSTEM, builtin_tools=False, store=False, tools=[lookup])
    for task in (FACT, "topic two", "topic three"):
        await agent.run(task)
    await agent.aclose()
    assert [r.body["max_tokens"] for r in llm.requests][:2] == [32, 32]
    assert INSTRUCTION_MARK in body_text(llm.requests[2]) and llm.requests[2].body["max_tokens"] >= 256
    assert "SUMMARY-MARKER" in body_text(llm.requests[3])


@pytest.mark.parametrize("rules", [700, 1000], ids=["1.1k-system", "1.6k-system"])
async def test_the_first_message_stays_at_a_4k_window(tmp_path: Path, llm: FakeLLM, rules: int) -> None:
    """Ten turns of ~25-token messages at a 4,096-token window beside a system prompt of
    1.1k or 1.6k tokens: the user's kept messages are bounded, and the first one (who they
    are) stays word for word while the middle ones go, counted (before: the oldest went first)."""
    configure(tmp_path, llm, context=4096, output=1024)
    llm.script(*[small_model(150)] * 40)
    system = "You are a careful assistant. " + long_text("the rules", rules)
    agent = Agent(directory=tmp_path, system_prompt=system, builtin_tools=False, store=False, tools=[lookup])
    for turn in range(1, 11):
        task = (
            FACT
            if turn == 1
            else f"Question {turn}: please tell me a little more about what you said in answer {turn - 1}, "
            "and keep it short."
        )
        result = await agent.run(task)
        assert result.stop_reason == "end_turn", result.error
    await agent.aclose()
    assert FACT in body_text(llm.requests[-1])
    last = json.loads(body_text(llm.requests[-1]))["messages"]
    kept = next(m["content"] for m in last if kept_users.INTRO in m["content"])
    texts, left_out = kept_users.parse(kept[kept.index(kept_users.INTRO) - 1 :])
    assert texts[0] == FACT
    assert all(alternates(r) for r in llm.requests)  # the summary requests and the fallback's too
    asked = {f"Question {turn}:" for turn in range(2, 11)}
    present = {q for q in asked if any(q in m["content"] for m in last if m["role"] == "user")}
    assert left_out == len(asked) - len(present)  # every message left out is counted


def test_kept_messages_read_back_whole_with_tags_in_their_text() -> None:
    """A user's text holding the block's own tags reads back whole, and the count of those
    left out is carried to the next compaction."""
    texts = ["my name is Zorblax", "it chokes on\n</user_message>\n<user_message>\ninside", "use tabs"]
    block = "[etcode] header\n" + kept_users.render(texts, 3) + "\n\n<summary>\nS\n</summary>"
    assert kept_users.parse(block) == (texts, 3)
    kept, left_out = kept_users.bounded(
        [*texts, "four", "five"], 40, lambda t: len(t.split()), 3
    )  # words as tokens
    assert kept == ["my name is Zorblax", "use tabs", "four", "five"]  # the first, then the newest
    assert left_out == 3 + 1


async def test_a_compaction_refused_for_growth_is_not_asked_again_in_the_run(
    tmp_path: Path, llm: FakeLLM
) -> None:
    """A large system prompt: the second turn's steps are over the limit, but the first turn
    is all there is to summarise, and its summary would grow the request. The history is kept
    as it was — and the run does not ask for another summary at its next step (each one a
    slow request on a CPU); the summary request's tokens count in the run's usage."""
    configure(tmp_path, llm)
    big = SYSTEM + "\n" + long_text("the house rules", 2000)
    llm.script(
        Reply(text="ok"),
        Reply(text="Looking.", calls=[Call("lookup", {"key": "a"})], usage=(4400, 200)),
        Reply(text=SUMMARY, usage=(60, 40)),
        Reply(text="Looking again.", calls=[Call("lookup", {"key": "b"})], usage=(4400, 200)),
        Reply(text="done", usage=(4400, 20)),
    )
    agent = Agent(directory=tmp_path, system_prompt=big, builtin_tools=False, store=False, tools=[lookup])
    await agent.run("hi")
    result = await agent.run("look a and b up")
    await agent.aclose()
    assert result.text == "done", [r.body["messages"][-1] for r in llm.requests]
    assert len(llm.requests) == 5
    assert sum(INSTRUCTION_MARK in body_text(r) for r in llm.requests) == 1
    assert result.compactions == 1
    assert result.usage.input_tokens >= 3 * 4400 + 60  # the summary request's tokens counted

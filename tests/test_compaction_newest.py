"""Compaction never paraphrases the user's newest message (issue 13, item 1).

The newest user message is always sent word for word, with the most recent whole turns that
fit a share of the window; only older turns are summarised, and the summary request does not
carry the kept messages. A newest message that cannot fit the window at all ends the run with
one clear line and exit 1 before anything doomed is sent. Through the real CLI (and the
library ``Agent``) against the fake LLM server.
"""

from __future__ import annotations

import json
from pathlib import Path

from etcode import Agent, tool
from etcode.contract import events as ev
from etcode.engine.compaction import SUMMARY_HEADER, split_history
from etcode.engine.context import TokenEstimator
from etcode.provider.types import Message, TextPart, ToolCallPart, ToolResultPart
from tests.cli_helpers import etcode, result_line, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Reply, without_environment

INSTRUCTION_MARK = "is about to be replaced by a summary"  # from prompts/compaction/summary.txt
SUMMARY = "## Goal\nLearn about topics.\n## Next steps\nRead the pasted log. SUMMARY-MARKER"
TOO_LONG = (
    "This model's maximum context length is 16000 tokens. However, your messages resulted in 17000 tokens."
)


def long_text(topic: str, words: int) -> str:
    return " ".join(f"fact{i} about {topic} number {i * 7 % 13}" for i in range(words // 5))


def pasted_log(lines: int) -> str:
    """A log whose every line is distinct, so a verbatim copy is easy to check. About 19
    tokens a line, whether tiktoken counts or the bytes / 4 estimate does."""
    return "\n".join(
        f"LOGLINE-{i:05d} the worker retried the nightly import job after a database timeout"
        for i in range(lines)
    )


def body_text(request) -> str:
    return json.dumps(request.body)


def alternates(request) -> bool:
    """No two user messages in a row in a request (tool results answer the assistant)."""
    seen = [m["role"] for m in request.body["messages"] if m["role"] != "system"]
    return all(not (x == "user" and y == "user") for x, y in zip(seen, seen[1:], strict=False))


def user_contents(request) -> list[str]:
    return [without_environment(m["content"]) for m in request.body["messages"] if m["role"] == "user"]


def configure(project: Path, llm: FakeLLM, context: int | None = 16000, output: int = 1000) -> None:
    models = {"test-model": {"limit": {"context": context, "output": output}}} if context else None
    write_config(project, llm, provider={"models": models} if models else None)


def run(project: Path, *args: str, stdin: str | None = None):
    return etcode("run", "--format", "json", *args, cwd=project, stdin=stdin)


def events_of(proc) -> list[dict]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def two_turns(project: Path, llm: FakeLLM) -> None:
    """Two finished turns; the second reports a context of 10,300 tokens (of 13,500 allowed)."""
    llm.script(
        Reply(text=long_text("topic one", 900), usage=(5800, 1300)),
        Reply(text=long_text("topic two", 900), usage=(9000, 1300)),
    )
    assert run(project, "tell me about topic one").returncode == 0
    assert run(project, "-c", "now topic two").returncode == 0


def test_resumed_run_keeps_a_large_piped_message_verbatim(project: Path, llm: FakeLLM) -> None:
    configure(project, llm)  # usable 15,000; compaction above 13,500 (system and tools: ~5,600)
    two_turns(project, llm)
    log = pasted_log(265)  # ~5k tokens
    llm.script(Reply(text=SUMMARY), Reply(text="The log shows retries."))
    proc = run(project, "-c", "why does this fail?", stdin=log)
    assert proc.returncode == 0, proc.stdout[-700:]
    phases = [(e["reason"], e["phase"]) for e in events_of(proc) if e["type"] == "compaction"]
    assert phases == [("auto", "start"), ("auto", "done")]
    summarize, after = llm.requests[2], llm.requests[3]
    assert INSTRUCTION_MARK in body_text(summarize) and "fact1 about topic one" in body_text(summarize)
    assert "LOGLINE-00000" not in body_text(summarize)  # not something to summarise
    assert "why does this fail?" not in body_text(summarize)
    users = user_contents(after)
    assert alternates(summarize) and alternates(after)
    # word for word, last (joined to the summary before it: user and assistant alternate)
    assert users[-1].endswith(
        f"</summary>\n\nThe most recent messages follow word for word.\n\nwhy does this fail?\n\n{log}"
    )
    assert users[0].startswith(SUMMARY_HEADER) and "SUMMARY-MARKER" in users[0]
    assert "fact1 about topic one" not in body_text(after)
    assert body_text(after).count("LOGLINE-00264") == 1

    # The stored batch is summary + the verbatim message + the answer: -c resumes from it.
    llm.script(Reply(text="fine"))
    assert run(project, "-c", "and the worker?").returncode == 0
    resumed = llm.requests[4]
    assert without_environment(resumed.body["messages"][1]["content"]).startswith(SUMMARY_HEADER)
    kept, newest = user_contents(resumed)[-2:]
    assert kept.endswith(f"word for word.\n\nwhy does this fail?\n\n{log}") and newest == "and the worker?"
    assert resumed.body["messages"][-2] == {"role": "assistant", "content": "The log shows retries."}
    assert "fact1 about topic one" not in body_text(resumed)


def test_a_newest_message_too_big_for_the_window_ends_the_run(project: Path, llm: FakeLLM) -> None:
    configure(project, llm)
    two_turns(project, llm)
    proc = run(project, "-c", "why?", stdin=pasted_log(1200))  # ~23k tokens
    assert proc.returncode == 1
    assert len(llm.requests) == 2  # no summary request, no doomed step
    errors = [e for e in events_of(proc) if e["type"] == "error"]
    assert len(errors) == 1
    message = errors[0]["message"]
    assert "newest message" in message and "16,000-token" in message and "15,000" in message
    assert "Traceback" not in proc.stderr
    assert result_line(proc)["stop_reason"] == "error"


def test_a_first_message_too_big_is_refused_before_any_request(project: Path, llm: FakeLLM) -> None:
    configure(project, llm)
    proc = etcode("run", "summarise", cwd=project, stdin=pasted_log(1200))  # plain output
    assert proc.returncode == 1
    assert llm.requests == []
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert len([line for line in lines if line.startswith("error:")]) == 1, proc.stderr
    assert "newest message" in proc.stderr and "tokens" in proc.stderr and "Traceback" not in proc.stderr


def test_overflow_from_the_server_keeps_the_newest_message(project: Path, llm: FakeLLM) -> None:
    configure(project, llm)  # our estimate says it fits; the server disagrees
    llm.script(Reply(text=long_text("topic one", 900), usage=(5800, 1300)))
    assert run(project, "tell me about topic one").returncode == 0
    log = pasted_log(265)
    llm.script(Fault(status=400, body=TOO_LONG), Reply(text=SUMMARY), Reply(text="retried answer"))
    proc = run(project, "-c", "read this", stdin=log)
    assert proc.returncode == 0, proc.stderr
    assert result_line(proc)["result"] == "retried answer"
    summarize, retried = llm.requests[2], llm.requests[3]
    assert INSTRUCTION_MARK in body_text(summarize) and "LOGLINE-00000" not in body_text(summarize)
    assert alternates(summarize) and alternates(retried)  # an overflow's compaction too
    assert user_contents(retried)[-1].endswith(f"word for word.\n\nread this\n\n{log}")
    assert "SUMMARY-MARKER" in body_text(retried) and "fact1 about topic one" not in body_text(retried)


def test_overflow_with_only_the_newest_message_is_not_paraphrased(project: Path, llm: FakeLLM) -> None:
    configure(project, llm, context=None)  # the window is unknown: only the server can tell
    # A window above the lean prompt's 16k: knowing it does not change the request (no re-plan).
    too_long = TOO_LONG.replace("16000", "32000").replace("17000", "33000")
    llm.script(Fault(status=400, body=too_long), Reply(text=SUMMARY), Reply(text="paraphrased"))
    proc = run(project, "what is wrong?", stdin=pasted_log(300))
    assert proc.returncode == 1
    assert len(llm.requests) == 1  # no summary of the message, no retry
    errors = [e for e in events_of(proc) if e["type"] == "error"]
    assert len(errors) == 1 and "newest message" in errors[0]["message"]
    assert "maximum context length" in errors[0]["message"]


# ---- the library Agent: recent turns within the budget, a compaction inside a turn --------


@tool(read_only=True)
def dump(part: int) -> str:
    """Dump one part of the big log."""
    return "\n".join(f"part {part} line {i}: all fine" for i in range(60))


def make_agent(project: Path, llm: FakeLLM, context: int, output: int = 1000) -> Agent:
    configure(project, llm, context=context, output=output)
    return Agent(
        directory=project, system_prompt="You are terse.", builtin_tools=False, tools=[dump], store=False
    )


async def test_the_recent_turn_that_fits_is_kept_and_not_summarised(project: Path, llm: FakeLLM) -> None:
    agent = make_agent(project, llm, context=8000)  # usable 7,000, limit 6,300, tail budget 2,100
    llm.script(
        Reply(text=long_text("topic one", 1500), usage=(100, 2200)),
        Reply(text="RECENT-ANSWER two", usage=(5800, 20)),
        Reply(text=SUMMARY),
        Reply(text="three"),
    )
    await agent.run("question one")
    await agent.run("RECENT-QUESTION two")
    newest = "question three " + pasted_log(60)  # ~1,100 tokens
    await agent.run(newest)
    await agent.aclose()
    summarize, after = llm.requests[2], llm.requests[3]
    assert INSTRUCTION_MARK in body_text(summarize) and "fact1 about topic one" in body_text(summarize)
    for kept in ("RECENT-QUESTION", "RECENT-ANSWER", "LOGLINE-00000"):
        assert kept not in body_text(summarize)
        assert body_text(after).count(kept) == 1
    assert user_contents(after)[-1] == newest
    assert "fact1 about topic one" not in body_text(after)


async def test_compaction_inside_a_turn_keeps_the_task_and_whole_steps(project: Path, llm: FakeLLM) -> None:
    agent = make_agent(project, llm, context=6000)  # usable 5,000, limit 4,500, tail budget 1,500
    task = "TASK-MARKER check every part of the log " + long_text("the task", 250)  # ~400 tokens
    llm.script(
        Reply(calls=[Call("dump", {"part": 1})]),
        Reply(calls=[Call("dump", {"part": 2})]),
        Reply(calls=[Call("dump", {"part": 3})], usage=(4400, 20)),
        Reply(text=SUMMARY),
        Reply(text="all parts are fine"),
    )
    events = [e async for e in agent.stream(task)]
    await agent.aclose()
    assert [e.phase for e in events if isinstance(e, ev.CompactionEvent)] == ["start", "done"]
    summarize, after = llm.requests[3], llm.requests[4]
    assert INSTRUCTION_MARK in body_text(summarize) and "part 1 line 0" in body_text(summarize)
    assert "TASK-MARKER" not in body_text(summarize)
    assert alternates(summarize) and alternates(after)  # the newest turn split: newest, summary
    # the task, word for word, then the summary of its first steps (one user message)
    assert user_contents(after)[0].startswith(f"{task}\n\n{SUMMARY_HEADER}")
    messages = after.body["messages"]
    assert messages[-1]["role"] == "tool" and "part 3 line 59" in messages[-1]["content"]
    assert messages[-2]["role"] == "assistant" and messages[-2]["tool_calls"]  # call and result together
    assert "part 1 line 0" not in body_text(after)
    assert agent.last_result.text == "all parts are fine"


def test_split_history_never_cuts_the_newest_user_message() -> None:
    est = TokenEstimator("gpt-4o")
    newest = Message.user("NEWEST " + "word " * 800)
    history = [
        Message.user("one"),
        Message("assistant", [TextPart("done one")]),
        newest,
        Message("assistant", [ToolCallPart("c1", "dump", '{"part":1}')]),
        Message("tool", [ToolResultPart("c1", "dump", "x " * 600)]),
        Message("assistant", [ToolCallPart("c2", "dump", '{"part":2}')]),
        Message("tool", [ToolResultPart("c2", "dump", "y")]),
    ]
    budget = est.message(newest) + est.messages(history[5:]) + 5
    older, tail = split_history(history, 2, budget, est)
    assert tail[0] is newest and tail[1:] == history[5:]  # the latest whole step still fits
    assert older == [*history[:2], *history[3:5]]
    older, tail = split_history(history, 2, None, est)
    assert tail == history[2:] and older == history[:2]
    older, tail = split_history(history[:3], 2, 10, est)  # the newest alone is over the budget
    assert tail == [newest] and older == history[:2]

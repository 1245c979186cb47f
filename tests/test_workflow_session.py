"""The workflow agent and Task subagents in the session: finished role steps survive a
kill -9, round limits come from ``etcode.json``, and every model call (roles, subagents)
counts in the session's tokens and cost. The real ``etcode`` process against the fake server."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from etcode.config.loader import load_config
from etcode.provider.types import Message, TextPart
from etcode.session.store import SessionStore
from etcode.util.errors import ConfigError
from etcode.workflow import requests
from tests.cli_helpers import etcode, result_line, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Recorded, Reply, without_environment
from tests.test_workflow import plan, report, role_of, verdict

PRICE = {"input": 1.0, "output": 2.0}  # USD per million tokens


def db_path() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "etcode" / "etcode.db"


def spawn(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "etcode", *args],
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )


def wait_requests(llm: FakeLLM, count: int, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while len(llm.requests) < count and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(llm.requests) == count, [role_of(r) for r in llm.requests]


def task_call(prompt: str) -> Call:
    return Call("Task", {"description": "look around", "prompt": prompt, "subagent_type": "explore"})


def json_lines(proc: subprocess.CompletedProcess) -> list[dict[str, Any]]:
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()]


def sessions(project: Path) -> list[dict[str, Any]]:
    listed = etcode("sessions", "list", "--json", cwd=project)
    assert listed.returncode == 0, listed.stderr
    return json.loads(listed.stdout)


def usage_rows(project: Path, session_id: str) -> list[dict[str, Any]]:
    exported = etcode("sessions", "export", session_id, cwd=project)
    assert exported.returncode == 0, exported.stderr
    return json.loads(exported.stdout)["usage"]


def cost(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * PRICE["input"] + output_tokens * PRICE["output"]) / 1e6


# ---- finished role steps survive a kill -9 ----------------------------------------------------


def test_sigkill_mid_workflow_keeps_the_finished_role_steps(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "notes.txt").write_text("the number is 7\n", encoding="utf-8")
    llm.script(
        plan(("1", "Read notes.txt", "high"), ("2", "Write answer.txt", "low"), summary="Read, then write"),
        Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        report("notes.txt says 7", action="complete"),
        Fault(hang=True),  # todo 2's first request: never answered
    )
    proc = spawn(
        "run", "--agent", "workflow", "--format", "json", "put the number in answer.txt", cwd=project
    )
    try:
        wait_requests(llm, 4)  # planner, todo 1 (two calls), todo 2 hanging
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=10)
    assert proc.returncode == -signal.SIGKILL

    store = SessionStore.open(db_path())
    try:
        [info] = store.list_sessions(None)
        stored = [m.message for m in store.transcript(info.id)]
    finally:
        store.close()
    assert [m.role for m in stored] == ["user", "assistant", "assistant"]
    assert stored[0].text == "put the number in answer.txt"
    planner, executor = stored[1].text, stored[2].text
    assert planner == (
        "[workflow planner] Plan (cycle 1, round 1): Read, then write\n"
        "- [1] (high) Read notes.txt\n- [2] (low) Write answer.txt"
    )
    assert executor == (
        "[workflow executor] Todo [1] Read notes.txt (cycle 1, round 1 of 10): completed\n"
        "Tools: ReadFile notes.txt\nReport: notes.txt says 7"
    )

    shown = etcode("sessions", "show", info.id, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "[workflow planner] Plan (cycle 1, round 1): Read, then write" in shown.stdout
    assert "[workflow executor] Todo [1] Read notes.txt (cycle 1, round 1 of 10): completed" in shown.stdout

    # -c continues the killed session: the model reads the finished steps.
    llm.script(Reply(text="Todo 2 is still open."))
    again = etcode("run", "-c", "--format", "json", "where were we?", cwd=project)
    assert again.returncode == 0, again.stderr
    assert result_line(again)["session_id"] == info.id
    sent = llm.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "assistant", "user"]
    assert sent[2]["content"] == planner and sent[3]["content"] == executor


def test_digest_of_an_unfinished_turn_shows_its_steps() -> None:
    step = Message("assistant", [TextPart("[workflow planner] Plan (cycle 1, round 1): x")])
    finished = [Message.user("a"), step, Message("assistant", [TextPart("A done.")])]
    assert requests.conversation_digest(finished) == "user: a\n\nassistant: A done."
    killed = [*finished, Message.user("b"), step]
    assert requests.conversation_digest(killed).endswith(
        "user: b\n\nassistant: [workflow planner] Plan (cycle 1, round 1): x"
    )


# ---- round limits in etcode.json --------------------------------------------------------------


def test_round_limits_come_from_the_config(project: Path, llm: FakeLLM) -> None:
    limits = {"max_cycles": 1, "planner_rounds": 1, "executor_rounds": 2}
    write_config(project, llm, workflow=limits)
    llm.script(
        plan(("1", "Endless", "high"), more=True),  # no second planning round: the limit is 1
        report("still working", completed=False, action="continue"),
        report("still working", completed=False, action="continue"),
        verdict(False, feedback="Not done."),  # no second cycle: the limit is 1
        Reply(text="unused"),
    )
    proc = etcode("run", "--agent", "workflow", "--format", "json", "loop", cwd=project)
    result = result_line(proc)
    assert proc.returncode == 0, proc.stderr
    assert [role_of(r) for r in llm.requests] == ["planner", "executor", "executor", "verifier"]
    assert "round 2 of 2" in llm.requests[2].body["messages"][-1]["content"]
    assert "(stopped: no completion after 2 rounds)" in llm.requests[3].body["messages"][-1]["content"]
    assert "after 1 plan → execute → verify cycles" in result["result"]


@pytest.mark.parametrize(
    ("workflow", "expected"),
    [
        ({"executor_rounds": 0}, "workflow.executor_rounds: Input should be greater than or equal to 1"),
        ({"max_cycles": "many"}, "workflow.max_cycles: Input should be a valid integer"),
        ({"planner_round": 2}, 'unknown key "workflow.planner_round" (did you mean "planner_rounds"?)'),
    ],
)
def test_bad_round_limits_name_the_key(project: Path, workflow: dict[str, Any], expected: str) -> None:
    path = project / "etcode.json"
    path.write_text(json.dumps({"workflow": workflow}), encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(project, project)
    assert str(info.value).startswith(f"{path}: {expected}")


def test_bad_round_limit_is_one_line_from_the_cli(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, workflow={"planner_rounds": -1})
    proc = etcode("run", "--agent", "workflow", "x", cwd=project)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"error: {project / 'etcode.json'}: workflow.planner_rounds: Input should be greater than or equal to 1"
    ]
    assert llm.requests == []


# ---- usage: subagents and roles count in the session ------------------------------------------


def test_task_subagent_usage_counts_in_the_session(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, provider={"models": {"test-model": {"cost": PRICE}}})
    llm.script(
        Reply(calls=[task_call("Find the config loader.")], usage=(100, 10)),
        Reply(text="In loader.py.", usage=(200, 20)),  # the subagent
        Reply(text="It is in loader.py.", usage=(300, 30)),
    )
    lines = json_lines(etcode("run", "--format", "json", "where is the config loaded?", cwd=project))
    result = lines[-1]
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (600, 60)
    last_usage = [line for line in lines if line["type"] == "usage"][-1]
    assert last_usage["cost"] == pytest.approx(cost(600, 60))

    by_id = {s["id"]: s for s in sessions(project)}
    parent = by_id[result["session_id"]]
    assert (parent["input_tokens"], parent["output_tokens"]) == (600, 60)
    assert parent["cost"] == pytest.approx(cost(600, 60))
    [child] = [s for s in by_id.values() if s["parent_id"] == parent["id"]]
    assert (child["input_tokens"], child["output_tokens"]) == (200, 20)  # its own session keeps its own

    rows = usage_rows(project, parent["id"])
    assert [(r["step"], r["input_tokens"], r["output_tokens"]) for r in rows] == [
        (1, 100, 10),
        (0, 200, 20),
        (2, 300, 30),
    ]
    assert rows[1]["model"] == "fake/test-model" and rows[1]["cost"] == pytest.approx(cost(200, 20))


def test_workflow_role_and_subagent_usage_count_in_the_session(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, provider={"models": {"test-model": {"cost": PRICE}}})

    def child(request: Recorded) -> Reply:
        assert without_environment(request.body["messages"][-1]["content"]) == "List the files."
        return Reply(text="Two files.", usage=(40, 4))

    llm.script(
        Reply(text=plan(("1", "Look around", "high")).text, usage=(10, 1)),
        Reply(calls=[task_call("List the files.")], usage=(20, 2)),
        child,
        Reply(text=report("two files").text, usage=(80, 8)),
        Reply(text=verdict(True, summary="There are two files.").text, usage=(160, 16)),
    )
    lines = json_lines(etcode("run", "--agent", "workflow", "--format", "json", "look", cwd=project))
    result = lines[-1]
    assert result["result"] == "There are two files."
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (310, 31)
    last_usage = [line for line in lines if line["type"] == "usage"][-1]
    assert last_usage["cost"] == pytest.approx(cost(310, 31))

    parent = next(s for s in sessions(project) if s["id"] == result["session_id"])
    assert (parent["input_tokens"], parent["output_tokens"]) == (310, 31)
    assert parent["cost"] == pytest.approx(cost(310, 31))
    rows = usage_rows(project, parent["id"])
    assert [(r["step"], r["input_tokens"]) for r in rows] == [(1, 10), (2, 20), (0, 40), (3, 80), (4, 160)]
    assert sum(r["cost"] for r in rows) == pytest.approx(cost(310, 31))

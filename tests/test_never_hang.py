"""A run always ends: odd bytes, odd text, odd nesting and odd failures through the real CLI.

Each test runs the real ``etcode`` process against the fake LLM server with a subprocess
timeout as the guard: before the fixes these runs hung (the loop's producer died on an
exception it did not expect and the consumer waited for it forever).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Reply, without_environment
from tests.test_fault_matrix import error_line, ok, roles, stored, tool_outputs

GUARD = 60  # seconds: only a hang reaches it


def run_bytes(*args: bytes | str, cwd: Path, stdin: bytes = b"") -> subprocess.CompletedProcess:
    """``etcode ARGS`` with raw bytes on the command line and stdin (as a shell passes them)."""
    argv = [os.fsencode(sys.executable), b"-m", b"etcode", *(os.fsencode(a) for a in args)]
    return subprocess.run(
        argv, cwd=cwd, input=stdin, capture_output=True, timeout=GUARD, env=os.environ.copy()
    )


def user_text(body: dict[str, Any]) -> str:
    """The first user message's text in a recorded OpenAI request."""
    for message in body["messages"]:
        if message["role"] == "user":
            content = without_environment(message["content"])
            return content if isinstance(content, str) else "".join(p.get("text", "") for p in content)
    raise AssertionError("no user message")


# ---- undecodable input bytes ---------------------------------------------------------------


def test_undecodable_byte_on_stdin_is_kept_as_replacement(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text="Reviewed."))
    proc = run_bytes("run", "review", cwd=project, stdin=b"diff \xff\n+ok\n")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.decode() == "Reviewed.\n"
    assert user_text(llm.requests[0].body) == "review\n\ndiff \ufffd\n+ok"
    assert stored()[0]["parts"][0]["text"] == "review\n\ndiff \ufffd\n+ok"


def test_undecodable_byte_in_the_message_argument(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text="Fixed."))
    proc = run_bytes("run", b"fix \xff", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert user_text(llm.requests[0].body) == "fix \ufffd"
    assert roles(stored()) == ["user", "assistant"]


# ---- surrogates in the model's stream ------------------------------------------------------


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_emoji_split_across_two_stream_chunks(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    # chunk_size=1 sends "\ud83d" and "\ude00" (JSON escapes) in two separate events
    llm.script(Reply(text="ok \ud83d\ude00 done", chunk_size=1))
    proc = etcode("run", "smile", cwd=project, timeout=GUARD)
    ok(proc)
    assert proc.stdout == "ok \U0001f600 done\n"
    assert stored()[-1]["parts"][-1]["text"] == "ok \U0001f600 done"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_lone_surrogate_in_the_stream_is_kept_as_replacement(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    llm.script(Reply(text="half \ud83d here", chunk_size=3), Reply(text="Again."))
    proc = etcode("run", "odd", cwd=project, timeout=GUARD)
    ok(proc)
    assert proc.stdout == "half \ufffd here\n"
    assert stored()[-1]["parts"][-1]["text"] == "half \ufffd here"
    # the answer is sent back intact on the next turn
    proc = etcode("run", "-c", "more", cwd=project, timeout=GUARD)
    ok(proc)
    assert "half \ufffd here" in json.dumps(llm.requests[-1].body, ensure_ascii=False)


# ---- deeply nested tool arguments ------------------------------------------------------------


def nested(depth: int) -> str:
    return '{"file_path": ' + "[" * depth + "]" * depth + "}"


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_deeply_nested_tool_arguments(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    llm.script(Reply(calls=[Call("ReadFile", nested(5000))]), Reply(text="Sorry."))
    proc = etcode("run", "read", cwd=project, timeout=GUARD)
    ok(proc)
    assert "Traceback" not in proc.stderr
    assert proc.stdout == "Sorry.\n"
    outputs = tool_outputs(stored())
    assert len(outputs) == 1
    assert "nested too deeply" in outputs[0]
    assert "interrupted" not in outputs[0]
    # the session stays readable
    sessions = etcode("sessions", "list", "--json", cwd=project, timeout=GUARD)
    ok(sessions)
    session_id = json.loads(sessions.stdout)[0]["id"]
    shown = etcode("sessions", "show", session_id, cwd=project, timeout=GUARD)
    ok(shown)
    assert "ReadFile" in shown.stdout


# ---- any exception ends the run ----------------------------------------------------------------

FAULTS = Path(__file__).with_name("inject_fault.py")


def run_with_fault(stage: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``etcode ARGS`` with a RuntimeError injected at ``stage`` (see tests/inject_fault.py)."""
    return subprocess.run(
        [sys.executable, str(FAULTS), stage, *args],
        cwd=cwd,
        input="",
        capture_output=True,
        text=True,
        timeout=GUARD,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS.parent.parent), *sys.path])},
    )


@pytest.mark.parametrize("stage", ["provider", "tool", "store", "renderer", "window"])
def test_unexpected_exception_ends_the_run_and_keeps_finished_steps(
    project: Path, llm: FakeLLM, stage: str
) -> None:
    write_config(project, llm)
    llm.script(
        Reply(text="Writing.", calls=[Call("WriteFile", {"file_path": "keep.txt", "content": "kept\n"})]),
        Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "keep.txt"})]),
        Reply(text="Done."),
    )
    proc = run_with_fault(stage, "run", "work", cwd=project)
    line = error_line(proc)
    assert "injected fault" in line
    assert (project / "keep.txt").read_text(encoding="utf-8") == "kept\n"
    # the first step (call + result) is saved whatever failed in the second
    transcript = stored()
    assert roles(transcript)[:3] == ["user", "assistant", "tool"]
    assert transcript[1]["parts"][-1]["name"] == "WriteFile"
    assert tool_outputs(transcript)[0].startswith("Created keep.txt")


# ---- too many calls in one answer ------------------------------------------------------------


def test_an_answer_with_2000_tool_calls_runs_only_the_cap(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, max_tool_calls=5)
    calls = [Call("WriteFile", {"file_path": f"f{i}.txt", "content": "x\n"}) for i in range(2000)]
    llm.script(Reply(calls=calls), Reply(text="Fewer then."))
    proc = etcode("run", "make files", cwd=project, timeout=GUARD * 2)
    ok(proc)
    assert "2000 tool calls" in proc.stderr and "running the first 5" in proc.stderr
    assert sorted(p.name for p in project.glob("f*.txt")) == [f"f{i}.txt" for i in range(5)]
    sent = llm.requests[1].body["messages"]
    answers = [m for m in sent if m["role"] == "tool"]
    assert len(answers) == 2000  # every call is answered
    assert all("Not run" in m["content"] and "at most 5" in m["content"] for m in answers[5:])
    assert not any("Not run" in m["content"] for m in answers[:5])


# ---- streams that only keep the connection alive -------------------------------------------


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
@pytest.mark.parametrize("started", [0, 6], ids=["silent", "after-some-text"])
def test_stream_of_only_keepalive_comments_times_out(
    project: Path, llm: FakeLLM, wire: str, started: int
) -> None:
    # the read timeout (0.8 s) never fires: a comment arrives every 0.1 s
    write_config(project, llm, wire, provider={"timeout": 800}, retry={"max_retries": 1})
    stuck = Fault(keepalive=0.1, cut_after=started, reply=Reply(text="Some words first.", chunk_size=4))
    llm.script(stuck, stuck)
    proc = etcode("run", "think", cwd=project, timeout=GUARD)
    line = error_line(proc)
    assert "no content from the model" in line
    assert len(llm.requests) == (2 if not started else 1)  # retried only before any output
    if started:
        assert proc.stdout.startswith("Some")  # the text that came is shown and kept
        assert stored()[-1]["parts"][0]["text"].startswith("Some")


# ---- one process per session ------------------------------------------------------------------


def test_second_process_on_the_same_session_is_refused(project: Path, llm: FakeLLM) -> None:
    from tests.test_fault_matrix import _events_until, spawn

    write_config(project, llm)
    llm.script(Reply(text="First."))
    ok(etcode("run", "start", cwd=project, timeout=GUARD))
    (session,) = [m for m in json.loads(etcode("sessions", "list", "--json", cwd=project).stdout)]
    llm.script(
        Reply(text="Working.", calls=[Call("ReadFile", {"file_path": "etcode.json"})]), Fault(hang=True)
    )
    first = spawn("run", "--format", "json", "--session", session["id"], "go on", cwd=project)
    try:
        _events_until(first, lambda e: e["type"] == "tool_result")
        second = etcode("run", "--session", session["id"], "me too", cwd=project, timeout=GUARD)
        line = error_line(second)
        assert "in use by another etcode process" in line and f"pid {first.pid}" in line
        continued = etcode("run", "-c", "me too", cwd=project, timeout=GUARD)  # the same session
        assert "in use" in error_line(continued)
        for command in (["undo", "--session", session["id"]], ["sessions", "delete", session["id"]]):
            refused = etcode(*command, cwd=project, timeout=GUARD)  # nothing changed under it
            assert "in use by another etcode process" in error_line(refused), command
    finally:
        first.kill()
        first.communicate(timeout=GUARD)
    before = roles(stored())
    llm.script(Reply(text="Now me."))
    ok(etcode("run", "--session", session["id"], "me now", cwd=project, timeout=GUARD))
    assert roles(stored()) == [*before, "user", "assistant"]  # nothing interleaved
    # the refused runs sent nothing and wrote nothing
    assert sum("me too" in json.dumps(r.body) for r in llm.requests) == 0


def test_a_thread_stuck_for_ever_does_not_keep_etcode_alive(project: Path, llm: FakeLLM) -> None:
    """A run that ends (here: its time limit) while a tool's thread is blocked in a system
    call exits all the same: asyncio.run, and the interpreter, would wait for that thread."""
    write_config(project, llm, timeout=1)
    llm.script(Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "etcode.json"})]))
    proc = run_with_fault("stuck-thread", "run", "read", cwd=project)
    assert proc.returncode == 1, proc.stderr
    assert "time limit" in proc.stderr
    assert "still stuck at exit" in proc.stderr
    transcript = stored()
    assert roles(transcript) == ["user", "assistant", "tool"]  # the call is answered and saved


def test_a_run_that_cannot_stop_still_ends_after_the_grace_period(project: Path, llm: FakeLLM) -> None:
    """SIGTERM while a tool ignores cancellation: the turn cannot wind down, so the process
    leaves on its own after the grace period (exit 130) instead of waiting for ever."""
    from tests.test_fault_matrix import _events_until

    write_config(project, llm)
    llm.script(Reply(text="Reading.", calls=[Call("ReadFile", {"file_path": "etcode.json"})]))
    proc = subprocess.Popen(
        [sys.executable, str(FAULTS), "deaf-tool", "run", "--format", "json", "read"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(FAULTS.parent.parent), *sys.path])},
    )
    try:
        _events_until(proc, lambda e: e["type"] == "tool_call_start")
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=GUARD)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, err
    assert "interrupted" in err

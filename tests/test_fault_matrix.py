"""The fault matrix: the real ``etcode run`` process against the fake LLM server, one fault per row.

Every row checks both the outcome (exit code, one clear ``error:`` line, no traceback) and that
nothing is lost: the session store holds every finished step, and files are either fully
written or untouched.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from etcode.session.store import SessionStore
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Reply
from tests.fs_support import small_tmpfs
from tests.require import missing

ORIGINAL = "original content\n"


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


def db_path() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "etcode" / "etcode.db"


def stored() -> list[dict[str, Any]]:
    """The only session's transcript, each message as ``{"role", "parts"}`` dicts."""
    store = SessionStore.open(db_path())
    try:
        sessions = store.list_sessions(None)
        assert len(sessions) == 1, sessions
        return [m.message.to_dict() for m in store.transcript(sessions[0].id)]
    finally:
        store.close()


def roles(transcript: list[dict[str, Any]]) -> list[str]:
    return [m["role"] for m in transcript]


def tool_outputs(transcript: list[dict[str, Any]]) -> list[str]:
    return [p["output"] for m in transcript for p in m["parts"] if p["type"] == "tool_result"]


def error_line(proc: subprocess.CompletedProcess, code: int = 1) -> str:
    """The run failed with ``code``, one ``error:`` line and no traceback; returns the line."""
    assert proc.returncode == code, (proc.returncode, proc.stderr)
    assert "Traceback" not in proc.stderr and "Traceback" not in proc.stdout
    lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(lines) == 1, proc.stderr
    assert "sk-test-secret" not in proc.stderr + proc.stdout
    return lines[0]


def ok(proc: subprocess.CompletedProcess) -> None:
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr


def first_step(project: Path) -> Reply:
    """A finished step that writes a file: it must survive whatever fails later."""
    (project / "keep.txt").unlink(missing_ok=True)
    return Reply(text="Writing.", calls=[Call("WriteFile", {"file_path": "keep.txt", "content": "kept\n"})])


def assert_first_step_kept(transcript: list[dict[str, Any]], project: Path) -> None:
    assert roles(transcript)[:3] == ["user", "assistant", "tool"]
    assert transcript[1]["parts"][-1]["name"] == "WriteFile"
    assert (project / "keep.txt").read_text(encoding="utf-8") == "kept\n"


# ---- provider faults ---------------------------------------------------------------------

HTTP_FAULTS = [
    pytest.param("openai", 429, {"retry-after-ms": "30"}, id="429-retry-after-ms"),
    pytest.param("anthropic", 429, {"retry-after": "1"}, id="429-retry-after"),
    pytest.param("openai", 429, {}, id="429-no-retry-after"),
    pytest.param("openai", 500, {}, id="500"),
    pytest.param("openai", 503, {}, id="503"),
    pytest.param("anthropic", 529, {}, id="529"),
]


@pytest.mark.parametrize(("wire", "status", "headers"), HTTP_FAULTS)
def test_http_error_is_retried_then_succeeds(
    project: Path, llm: FakeLLM, wire: str, status: int, headers: dict[str, str]
) -> None:
    write_config(project, llm, wire)
    llm.script(first_step(project), Fault(status=status, headers=headers), Reply(text="Recovered."))
    started = time.monotonic()
    proc = etcode("run", "write keep.txt", cwd=project)
    elapsed = time.monotonic() - started
    ok(proc)
    assert proc.stdout.endswith("Recovered.\n")
    assert "retrying" in proc.stderr
    assert len(llm.requests) == 3
    if headers.get("retry-after") == "1":
        assert elapsed >= 1.0  # the server's wait was honoured
    transcript = stored()
    assert roles(transcript) == ["user", "assistant", "tool", "assistant"]
    assert_first_step_kept(transcript, project)


@pytest.mark.parametrize(("wire", "status"), [("openai", 429), ("openai", 503), ("anthropic", 529)])
def test_http_error_that_persists_fails_cleanly(project: Path, llm: FakeLLM, wire: str, status: int) -> None:
    write_config(project, llm, wire, retry={"max_retries": 1})
    llm.script(first_step(project), *[Fault(status=status, headers={"retry-after-ms": "10"})] * 2)
    line = error_line(etcode("run", "write keep.txt", cwd=project))
    assert str(status) in line
    assert len(llm.requests) == 3  # one step, then the first try and one retry
    transcript = stored()
    assert roles(transcript) == ["user", "assistant", "tool"]
    assert_first_step_kept(transcript, project)


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_stream_cut_after_some_text(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    full = "This answer is going to be cut off half way."
    llm.script(first_step(project), Fault(cut_after=5, reply=Reply(text=full, chunk_size=4)))
    proc = etcode("run", "write keep.txt", cwd=project)
    line = error_line(proc)
    assert "cut" in line or "ended" in line
    assert len(llm.requests) == 2  # output had started: not retried (it would duplicate text)
    transcript = stored()
    assert_first_step_kept(transcript, project)
    assert roles(transcript) == ["user", "assistant", "tool", "assistant"]
    partial = transcript[-1]["parts"][0]["text"]  # what was shown is kept
    assert partial and full.startswith(partial) and partial != full


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_stream_cut_inside_tool_call_arguments(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire, retry={"max_retries": 0})
    (project / "target.txt").write_text(ORIGINAL, encoding="utf-8")
    content = "new content " * 40
    reply = Reply(calls=[Call("WriteFile", {"file_path": "target.txt", "content": content})])
    # openai: head, call, args, args, args; anthropic: head, start, ping, args(""), args, args, args
    llm.script(first_step(project), Fault(cut_after=3 if wire == "openai" else 5, reply=reply))
    line = error_line(etcode("run", "write keep.txt then target.txt", cwd=project))
    assert "cut" in line or "ended" in line
    assert (project / "target.txt").read_text(encoding="utf-8") == ORIGINAL  # untouched
    transcript = stored()
    assert_first_step_kept(transcript, project)
    assert roles(transcript) == ["user", "assistant", "tool"]  # no half call left dangling


def _parts(transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for m in transcript for p in m["parts"]]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
def test_error_event_mid_stream(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    llm.script(
        first_step(project),
        Fault(error_event={"type": "overloaded_error", "message": "Overloaded right now"}),
    )
    line = error_line(etcode("run", "write keep.txt", cwd=project))
    assert "Overloaded right now" in line
    assert len(llm.requests) == 2
    transcript = stored()
    assert_first_step_kept(transcript, project)
    assert roles(transcript) == ["user", "assistant", "tool", "assistant"]
    assert transcript[-1]["parts"][0]["text"].startswith("This answer is going to be cut")


def test_response_that_never_starts_times_out(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, provider={"timeout": 700}, retry={"max_retries": 1})
    llm.script(first_step(project), Fault(hang=True), Fault(hang=True))
    started = time.monotonic()
    line = error_line(etcode("run", "write keep.txt", cwd=project, timeout=30))
    assert time.monotonic() - started < 15
    assert "timed out" in line or "timeout" in line
    assert len(llm.requests) == 3  # the first try and one retry
    transcript = stored()
    assert roles(transcript) == ["user", "assistant", "tool"]
    assert_first_step_kept(transcript, project)


# ---- tool faults (the run goes on: the model is told) ---------------------------------------


def _tool_row(project: Path, llm: FakeLLM, call: Call) -> tuple[subprocess.CompletedProcess, str]:
    write_config(project, llm)
    llm.script(Reply(text="Trying.", calls=[call]), Reply(text="Handled it."))
    proc = etcode("run", "--yes", "do it", cwd=project)
    ok(proc)
    assert proc.stdout.endswith("Handled it.\n")
    assert len(llm.requests) == 2
    transcript = stored()
    assert roles(transcript) == ["user", "assistant", "tool", "assistant"]
    (output,) = tool_outputs(transcript)
    sent = [m["content"] for m in llm.requests[1].body["messages"] if m["role"] == "tool"]
    assert sent == [output]  # the model was told exactly what the store holds
    result = next(p for p in _parts(transcript) if p["type"] == "tool_result")
    return proc, "ERROR: " + output if result["is_error"] else output


def test_tool_call_with_invalid_json_arguments(project: Path, llm: FakeLLM) -> None:
    call = Call("WriteFile", '{"file_path": "x.txt", "content": "half')
    _, output = _tool_row(project, llm, call)
    assert output.startswith("ERROR: ") and "JSON" in output
    assert not (project / "x.txt").exists()


def test_call_to_an_unknown_tool(project: Path, llm: FakeLLM) -> None:
    _, output = _tool_row(project, llm, Call("LaunchRockets", {"target": "moon"}))
    assert output.startswith("ERROR: ") and "LaunchRockets" in output


def test_tool_that_hangs_is_killed(project: Path, llm: FakeLLM) -> None:
    started = time.monotonic()
    _, output = _tool_row(project, llm, Call("Bash", {"command": "sleep 60", "timeout": 500}))
    # Whole runs of etcode, on a loaded box: the bound only has to tell a kill at 0.5 s from
    # the sleep's own 60 s (17 s was seen at nice 19 with two suites beside it).
    assert time.monotonic() - started < 50
    assert "timed out" in output and "killed" in output


@pytest.mark.parametrize(
    ("call", "expect"),
    [
        pytest.param(Call("ReadFile", {"file_path": "."}), "directory", id="read-a-directory"),
        pytest.param(Call("ReadFile", {"file_path": "missing.txt"}), "missing.txt", id="read-missing"),
        pytest.param(
            Call("ReadFile", {"file_path": "a\x00b"}), "ReadFile failed: ValueError", id="nul-in-path-read"
        ),
        pytest.param(
            Call("WriteFile", {"file_path": "a\x00b", "content": "x"}),
            "WriteFile failed: ValueError",
            id="nul-in-path-write",
        ),
        pytest.param(Call("Glob", {"pattern": "a\x00b"}), "Glob failed: ValueError", id="nul-in-glob"),
        pytest.param(Call("Grep", {"pattern": "(unclosed"}), "unclosed group", id="grep-bad-regex"),
        pytest.param(
            Call("ReadFile", {"file_path": 42, "offset": "x"}),
            "Invalid arguments for ReadFile",
            id="wrong-types",
        ),
        pytest.param(
            Call("Edit", {"file_path": "nope.py", "old_string": "a", "new_string": "b"}),
            "File not found: nope.py",
            id="edit-missing",
        ),
    ],
)
def test_tool_that_fails(project: Path, llm: FakeLLM, call: Call, expect: str) -> None:
    """Bad input and tools that raise (a NUL byte in a path): an error result, the run goes on."""
    _, output = _tool_row(project, llm, call)
    assert output.startswith("ERROR: ")
    assert expect in output
    assert "Traceback" not in output
    assert sorted(p.name for p in project.iterdir()) == ["etcode.json"]  # nothing was written


@pytest.mark.parametrize("case", ["parent-is-a-file", "target-is-a-directory", "symlink-to-dev-full"])
def test_write_file_that_cannot_be_written(project: Path, llm: FakeLLM, case: str) -> None:
    blocker = project / "blocker"
    if case == "parent-is-a-file":
        blocker.write_text(ORIGINAL, encoding="utf-8")
        path = "blocker/sub/out.txt"
    elif case == "target-is-a-directory":
        blocker.mkdir()
        (blocker / "inside.txt").write_text(ORIGINAL, encoding="utf-8")
        path = "blocker"
    else:
        if not Path("/dev/full").exists():
            missing("devfull", "no /dev/full")
        blocker.symlink_to("/dev/full")
        path = "blocker"
    _, output = _tool_row(project, llm, Call("WriteFile", {"file_path": path, "content": "new\n" * 1000}))
    assert output.startswith("ERROR: "), output
    if case == "parent-is-a-file":
        assert blocker.read_text(encoding="utf-8") == ORIGINAL
    elif case == "target-is-a-directory":
        assert [p.name for p in blocker.iterdir()] == ["inside.txt"]
        assert (blocker / "inside.txt").read_text(encoding="utf-8") == ORIGINAL
    else:
        assert blocker.is_symlink() and os.readlink(blocker) == "/dev/full"
    leftovers = sorted(p.name for p in project.iterdir())
    assert leftovers == ["blocker", "etcode.json"]  # no temp files left behind


@pytest.fixture
def full_disk(project: Path):
    """A 64 KB tmpfs mounted inside the project: a real ENOSPC (needs root and mount)."""
    with small_tmpfs(project / "small") as mount_point:
        yield mount_point


def test_write_file_on_a_full_disk_leaves_the_original_untouched(
    project: Path, llm: FakeLLM, full_disk: Path
) -> None:
    target = full_disk / "data.txt"
    target.write_text(ORIGINAL, encoding="utf-8")
    (full_disk / "filler").write_bytes(b"x" * 40_000)  # leave less room than the new content needs
    call = Call("WriteFile", {"file_path": "small/data.txt", "content": "new line\n" * 5_000})
    _, output = _tool_row(project, llm, call)
    assert output.startswith("ERROR: ") and "space" in output.lower(), output
    assert target.read_text(encoding="utf-8") == ORIGINAL  # fully written or untouched: untouched
    assert sorted(p.name for p in full_disk.iterdir()) == ["data.txt", "filler"]  # no temp file left


# ---- signals -----------------------------------------------------------------------------


def _events_until(proc: subprocess.Popen, predicate) -> tuple[str | None, list[dict[str, Any]]]:
    assert proc.stdout is not None
    sid, seen = None, []
    for line in proc.stdout:
        event = json.loads(line)
        seen.append(event)
        sid = sid or event.get("session_id")
        if predicate(event):
            break
    return sid, seen


def _finish(proc: subprocess.Popen, timeout: float = 15) -> tuple[str, str]:
    out, err = proc.communicate(timeout=timeout)
    return out, err


def _kill_pidfile(pid_file: Path) -> bool:
    """Kill the process in ``pid_file`` if it still runs; True when it was already gone."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    with contextlib.suppress(OSError):
        os.kill(pid, signal.SIGKILL)
    return False


def _wait_for(path: Path, seconds: float = 10) -> None:
    deadline = time.monotonic() + seconds
    while not path.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    assert path.exists()


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP], ids=["int", "term", "hup"])
def test_ctrl_c_during_a_tool(project: Path, llm: FakeLLM, sig: signal.Signals) -> None:
    """Ctrl-C, SIGTERM and SIGHUP (the terminal was closed) all stop the running command."""
    write_config(project, llm)
    pid_file = project / "sleep.pid"
    llm.script(
        first_step(project),
        Reply(text="Waiting.", calls=[Call("Bash", {"command": f"echo $$ > {pid_file}; exec sleep 30"})]),
    )
    proc = spawn("run", "--format", "json", "write then wait", cwd=project)
    sid, _ = _events_until(proc, lambda e: e["type"] == "tool_call_start" and e["name"] == "Bash")
    _wait_for(pid_file)
    time.sleep(0.1)
    proc.send_signal(sig)
    out, err = _finish(proc)
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    assert _kill_pidfile(pid_file), "the interrupted command was left running"
    transcript = stored()
    assert roles(transcript) == ["user", "assistant", "tool", "assistant", "tool"]
    assert_first_step_kept(transcript, project)
    assert "interrupted" in tool_outputs(transcript)[-1].lower()
    assert json.loads(out.strip().splitlines()[-1])["type"] == "result"


def test_ctrl_c_during_streaming(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    slow = Reply(text="word " * 200, chunk_size=5, delay=0.05)
    llm.script(first_step(project), slow)
    proc = spawn("run", "--format", "json", "write then talk", cwd=project)
    _events_until(proc, lambda e: e["type"] == "text_delta" and "word" in e.get("text", ""))
    proc.send_signal(signal.SIGINT)
    started = time.monotonic()
    out, err = _finish(proc)
    assert time.monotonic() - started < 5
    assert proc.returncode == 130, err
    assert "Traceback" not in err
    transcript = stored()
    assert_first_step_kept(transcript, project)
    assert roles(transcript) == ["user", "assistant", "tool", "assistant"]
    partial = transcript[-1]["parts"][0]["text"]  # the words streamed before Ctrl-C are kept
    assert partial.startswith("word") and len(partial) < len(slow.text)
    assert json.loads(out.strip().splitlines()[-1])["type"] == "result"


def test_sigkill_between_steps_then_continue(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(first_step(project), Fault(hang=True))
    proc = spawn("run", "--format", "json", "write keep.txt", cwd=project)
    sid, _ = _events_until(proc, lambda e: e["type"] == "tool_result")
    deadline = time.monotonic() + 10
    while len(llm.requests) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    assert len(llm.requests) == 2  # step 1 is done, step 2's request is out
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=10)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    proc.stderr.close()
    transcript = stored()
    assert roles(transcript) == ["user", "assistant", "tool"]
    assert_first_step_kept(transcript, project)

    llm.script(Reply(text="Back again."))
    again = etcode("run", "-c", "--format", "json", "go on", cwd=project)
    ok(again)
    assert json.loads(again.stdout.strip().splitlines()[-1])["session_id"] == sid
    sent = llm.requests[-1].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    transcript = stored()
    assert roles(transcript) == ["user", "assistant", "tool", "user", "assistant"]


# ---- broken files --------------------------------------------------------------------------


def test_corrupt_config_file(project: Path, llm: FakeLLM) -> None:
    text = '{\n  "model": "fake/test-model",\n  "provider": [\n    {"id": "fake",, }\n  ]\n}\n'
    (project / "etcode.json").write_text(text, encoding="utf-8")
    line = error_line(etcode("run", "hi", cwd=project))
    assert "etcode.json" in line
    assert "line 4" in line or ":4" in line
    assert llm.requests == []


def test_corrupt_session_database(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    db = db_path()
    db.parent.mkdir(parents=True, exist_ok=True)
    garbage = b"this is not a database " + os.urandom(4096)
    db.write_bytes(garbage)
    line = error_line(etcode("run", "hi", cwd=project))
    assert str(db) in line and "mv" in line
    listing = etcode("sessions", "list", cwd=project)
    assert error_line(listing) == line
    assert db.read_bytes() == garbage  # never deleted, never "repaired"
    assert llm.requests == []

    aside = db.with_name(db.name + ".broken")
    db.rename(aside)  # what the message says to do
    llm.script(Reply(text="Fresh start."))
    proc = etcode("run", "hi", cwd=project)
    ok(proc)
    assert proc.stdout == "Fresh start.\n"
    assert roles(stored()) == ["user", "assistant"]
    assert aside.read_bytes() == garbage

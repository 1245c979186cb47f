"""End to end: the real `etcode run` process against the fake LLM server over real HTTP."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Reply

WIRES = ["openai", "anthropic"]


@pytest.mark.parametrize("wire", WIRES)
def test_plain_answer(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    llm.script(Reply(text="Hello from the fake model."))
    proc = etcode("run", "say hello", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Hello from the fake model.\n"
    assert "Traceback" not in proc.stderr
    request = llm.requests[0]
    assert request.path.endswith("/chat/completions" if wire == "openai" else "/v1/messages")
    assert request.body["stream"] is True
    assert request.body["model"] == "test-model"


@pytest.mark.parametrize("wire", WIRES)
def test_two_step_tool_loop(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    (project / "notes.txt").write_text("the secret number is 42\n", encoding="utf-8")
    llm.script(
        Reply(text="Reading it.", calls=[Call("ReadFile", {"file_path": "notes.txt"})]),
        Reply(text="The number is 42."),
    )
    proc = etcode("run", "what number is in notes.txt?", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.endswith("The number is 42.\n")
    assert "● ReadFile (notes.txt)" in proc.stderr
    assert "  └ " in proc.stderr
    assert len(llm.requests) == 2
    assert "the secret number is 42" in json.dumps(llm.requests[1].body)


def test_parallel_tool_calls_in_one_answer(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, "anthropic")
    for name in ("a", "b", "c"):
        (project / f"{name}.txt").write_text(f"file {name}\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": f"{n}.txt"}) for n in ("a", "b", "c")]),
        Reply(text="Read all three."),
    )
    proc = etcode("run", "read a, b and c", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("● ReadFile") == 3
    results = [
        b
        for m in llm.requests[1].body["messages"]
        for b in (m["content"] if isinstance(m["content"], list) else [])
        if b.get("type") == "tool_result"
    ]
    assert len(results) == 3
    texts = [json.dumps(r["content"]) for r in results]
    assert "file a" in texts[0] and "file b" in texts[1] and "file c" in texts[2]


def test_write_file_tool_changes_the_project(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "hello.py", "content": "print('hi')\n"})]),
        Reply(text="Created hello.py."),
    )
    proc = etcode("run", "create hello.py", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "hello.py").read_text(encoding="utf-8") == "print('hi')\n"
    assert "● WriteFile (hello.py)" in proc.stderr


@pytest.mark.parametrize("wire", WIRES)
def test_retry_then_success(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    llm.script(Fault(status=429, headers={"retry-after-ms": "20"}), Reply(text="Worked on the second try."))
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Worked on the second try.\n"
    assert len(llm.requests) == 2
    assert "retrying" in proc.stderr


def test_server_error_then_success(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, "anthropic")
    llm.script(Fault(status=529, headers={"retry-after-ms": "10"}), Reply(text="ok"))
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 2


@pytest.mark.parametrize("wire", WIRES)
def test_401_fails_fast_with_one_request(project: Path, llm: FakeLLM, wire: str) -> None:
    write_config(project, llm, wire)
    llm.script(Fault(status=401))
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode == 1
    assert len(llm.requests) == 1
    assert "Traceback" not in proc.stderr
    error_lines = [line for line in proc.stderr.splitlines() if line.startswith("error:")]
    assert len(error_lines) == 1 and "401" in error_lines[0]
    assert "sk-test-secret" not in proc.stderr


def test_stdin_is_appended_to_the_message(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text="It is a null pointer."))
    proc = etcode("run", "why did this crash?", cwd=project, stdin="NullPointerException at line 3\n")
    assert proc.returncode == 0, proc.stderr
    user = [m for m in llm.requests[0].body["messages"] if m["role"] == "user"][-1]
    content = user["content"] if isinstance(user["content"], str) else json.dumps(user["content"])
    assert "why did this crash?" in content and "NullPointerException at line 3" in content


def test_stdin_alone_is_the_message(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text="Looks fine."))
    proc = etcode("run", cwd=project, stdin="review this diff please")
    assert proc.returncode == 0, proc.stderr
    assert "review this diff please" in json.dumps(llm.requests[0].body["messages"])


def test_format_json_lines(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "a.txt"})], usage=(100, 10)),
        Reply(text="alpha it is", usage=(150, 5)),
    )
    proc = etcode("run", "--format", "json", "read a.txt", cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [line["type"] for line in lines]
    assert types[-1] == "result"
    assert "tool_call_start" in types and "tool_result" in types and "text_delta" in types
    result = lines[-1]
    assert result["is_error"] is False
    assert result["result"] == "alpha it is"
    assert result["session_id"].startswith("ses_")
    assert result["usage"]["input_tokens"] == 250 and result["usage"]["output_tokens"] == 15
    assert result["steps"] == 2
    assert result["stop_reason"] == "end_turn"
    assert result["todos"] == []
    tool_result = next(line for line in lines if line["type"] == "tool_result")
    assert tool_result["name"] == "ReadFile" and not tool_result["is_error"]


def test_max_steps_flag_stops_the_loop(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "a.txt").write_text("x\n", encoding="utf-8")
    llm.script(*[Reply(calls=[Call("ReadFile", {"file_path": "a.txt"})]) for _ in range(3)])
    proc = etcode("run", "--max-steps", "2", "--format", "json", "loop", cwd=project)
    assert proc.returncode == 1
    result = json.loads(proc.stdout.splitlines()[-1])
    # two steps with tools, then one answer without them (its call is not run)
    assert result["stop_reason"] == "max_steps" and result["is_error"] is True and result["steps"] == 3
    assert len(llm.requests) == 3 and "tools" not in llm.requests[2].body


def test_malformed_config_names_file_and_line(project: Path) -> None:
    (project / "etcode.json").write_text('{\n  "model": "x/y",\n  "provider": [\n}\n', encoding="utf-8")
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "etcode.json:4" in lines[0]


def test_unknown_provider_in_config(project: Path) -> None:
    (project / "etcode.json").write_text('{"model": "nosuch/model"}', encoding="utf-8")
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode == 1
    assert "nosuch" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_no_provider_configured_says_how(project: Path) -> None:
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and "ANTHROPIC_API_KEY" in lines[0]


def test_unknown_agent_is_a_usage_error(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    proc = etcode("run", "--agent", "nope", "hi", cwd=project)
    assert proc.returncode == 2
    assert "build" in proc.stderr and "Traceback" not in proc.stderr


def test_no_message_is_a_usage_error(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    proc = etcode("run", cwd=project)
    assert proc.returncode == 2
    assert "no task" in proc.stderr


def test_bad_flag_is_a_usage_error(project: Path) -> None:
    proc = etcode("run", "--format", "xml", "hi", cwd=project)
    assert proc.returncode == 2
    proc = etcode("run", "--no-such-flag", "hi", cwd=project)
    assert proc.returncode == 2


def test_version(project: Path) -> None:
    from etcode import __version__

    proc = etcode("--version", cwd=project)
    assert proc.returncode == 0 and proc.stdout.strip() == f"etcode {__version__}"


def test_ctrl_c_stops_cleanly_with_130(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(text=" ".join(["word"] * 400), chunk_size=5, delay=0.02))
    proc = subprocess.Popen(
        [sys.executable, "-m", "etcode", "run", "--format", "json", "talk a lot"],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    for line in proc.stdout:  # wait until text is streaming
        if '"text_delta"' in line:
            break
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    rest, err = proc.communicate(timeout=20)
    assert proc.returncode == 130, err
    result = json.loads(rest.strip().splitlines()[-1])
    assert result["stop_reason"] == "interrupted"
    assert result["result"].startswith("word")
    assert "Traceback" not in err


def test_ask_is_denied_headless_and_allowed_with_yes(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": {"*": "ask"}})
    marker = project / "ran.txt"
    command = f"echo ran > {marker.name}"
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="could not run it"))
    proc = etcode("run", "run the command", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists()
    tool_output = json.dumps(llm.requests[1].body["messages"][-1])
    assert "--yes" in tool_output  # the model is told why it was refused
    assert "● Bash" in proc.stderr and "⚠" in proc.stderr

    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="ran it"))
    proc = etcode("run", "--yes", "run the command", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert marker.read_text().strip() == "ran"


def test_deny_rule_wins_even_with_yes(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": {"*": "allow", "rm *": "deny"}})
    (project / "keep.txt").write_text("precious\n", encoding="utf-8")
    llm.script(Reply(calls=[Call("Bash", {"command": "rm keep.txt"})]), Reply(text="refused"))
    proc = etcode("run", "--yes", "delete it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "keep.txt").exists()


def test_plan_agent_cannot_write(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(Reply(calls=[Call("WriteFile", {"file_path": "x.txt", "content": "x"})]), Reply(text="no"))
    proc = etcode("run", "--agent", "plan", "write x", cwd=project)
    assert proc.returncode == 0, proc.stderr
    offered = {t["function"]["name"] for t in llm.requests[0].body["tools"]}
    assert "WriteFile" not in offered and "Edit" not in offered and "ReadFile" in offered
    assert not (project / "x.txt").exists()
    assert "Unknown tool 'WriteFile'" in json.dumps(llm.requests[1].body["messages"][-1])


def test_a_run_closes_the_session_database(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    """The store is closed when the run ends, not left to the interpreter: the last close
    folds the write-ahead log into the database and removes it."""
    data = tmp_path / "data"
    write_config(project, llm)
    llm.script(Reply(text="saved"))
    proc = etcode("run", "hello", cwd=project, env={"XDG_DATA_HOME": str(data)})
    assert proc.returncode == 0, proc.stderr
    assert sorted(p.name for p in (data / "etcode").iterdir() if p.is_file()) == ["etcode.db"]

"""Every program in examples/ runs as a real subprocess against the fake LLM server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.fake_llm import Call, FakeLLM, Reply

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def run_example(name: str, llm: FakeLLM | None, cwd: Path, *args: str, tmpdir: Path | None = None) -> str:
    """Run ``examples/NAME ARGS`` (with ``tmpdir`` as its TMPDIR when given): its stdout."""
    env = {**os.environ, "ETCODE_EXAMPLE_MODEL": "test-model", "API_KEY": "k"}
    if tmpdir is not None:
        env["TMPDIR"] = str(tmpdir)
    if llm is not None:
        env["BASE_URL"] = llm.openai_base_url
    proc = subprocess.run(
        [sys.executable, str(EXAMPLES / name), *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return proc.stdout


def leftovers(folder: Path) -> list[str]:
    """What a run left in its private TMPDIR (etcode's own folders and files)."""
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("etcode"))


def offered(llm: FakeLLM, index: int = 0) -> list[str]:
    return [t["function"]["name"] for t in llm.requests[index].body.get("tools", [])]


def tool_messages(llm: FakeLLM, index: int) -> list[str]:
    return [m["content"] for m in llm.requests[index].body["messages"] if m["role"] == "tool"]


def test_basic(llm: FakeLLM, project: Path) -> None:
    llm.script(
        Reply(calls=[Call("search", {"query": "Python release"})]),
        Reply(calls=[Call("calculate", {"expression": "2026 - 1991"})]),
        Reply(text="Python came out in 1991, 35 years ago."),
    )
    out = run_example("basic.py", llm, project)
    assert "answer: Python came out in 1991, 35 years ago." in out
    assert "steps: 3, stop reason: end_turn" in out
    assert offered(llm) == ["search", "calculate", "TodoWrite"]
    assert tool_messages(llm, 2)[-1] == "35"
    assert llm.requests[0].body["model"] == "test-model"
    assert "You are Research Helper" in llm.requests[0].body["messages"][0]["content"]


def test_streaming(llm: FakeLLM, project: Path) -> None:
    llm.script(
        Reply(text="Let me look.", calls=[Call("search", {"query": "newest Python"})]),
        Reply(text="Python 3.13."),
        Reply(calls=[Call("search", {"query": "Python before 3.13"})]),
        Reply(text="Python 3.12."),
    )
    out = run_example("streaming.py", llm, project)
    assert "Let me look." in out and "● search (" in out and "Python 3.13." in out
    assert "[done: end_turn]" in out
    lines = out.splitlines()
    assert any(line.startswith("● search") and "Python before 3.13" in line for line in lines)
    assert "Python 3.12." in out


def test_custom_tools(llm: FakeLLM, project: Path) -> None:
    llm.script(
        Reply(
            calls=[
                Call("weather", {"city": "Lisbon"}),
                Call("book_hotel", {"booking": {"city": "Lisbon", "nights": 2}}),
                Call("convert_currency", {"amount": 100, "rate": 1.08}),
                Call("packing_list", {"nights": 2}),
            ]
        ),
        Reply(text="All planned."),
    )
    out = run_example("custom_tools.py", llm, project)
    assert out.strip() == "All planned."
    assert offered(llm) == ["weather", "book_hotel", "convert_currency", "packing_list", "TodoWrite"]
    assert tool_messages(llm, 1) == [
        "Lisbon: 21°C, sunny",
        "booked 2 nights in Lisbon",
        "108.00",
        "passport, charger, shirt 1, shirt 2",
    ]


def test_todo_tracking(llm: FakeLLM, project: Path) -> None:
    plan = [
        {"content": "Introduction", "status": "in_progress"},
        {"content": "Conclusion", "status": "pending"},
    ]
    done = [
        {"content": "Introduction", "status": "completed"},
        {"content": "Conclusion", "status": "completed"},
    ]
    llm.script(
        Reply(calls=[Call("TodoWrite", {"todos": plan}), Call("draft", {"section": "introduction"})]),
        Reply(calls=[Call("draft", {"section": "conclusion"}), Call("TodoWrite", {"todos": done})]),
        Reply(text="Report written."),
    )
    out = run_example("todo_tracking.py", llm, project)
    assert out.count("todo list:") == 2
    assert "  [~] Introduction" in out and "  [x] Conclusion" in out
    assert "final: Report written." in out and "2/2 completed" in out
    assert offered(llm) == ["draft", "TodoWrite"]


def _workflow_replies() -> list[Reply]:
    """The Planner's plan, the Executor's calls and report, the Verifier's verdict."""
    plan = {
        "summary": "Copy the number",
        "needsMorePlanning": False,
        "todos": [
            {
                "id": "1",
                "description": "Write the number to answer.txt",
                "priority": "high",
                "status": "pending",
            }
        ],
    }
    verdict = {
        "allCompleted": True,
        "userNeedsSatisfied": True,
        "overallFeedback": "Looks good.",
        "summary": "answer.txt holds 7.",
        "improvements": [],
        "tasks": [{"id": "1", "completed": True, "feedback": "checked"}],
    }
    return [
        Reply(text=json.dumps(plan)),
        Reply(
            calls=[
                Call("ReadFile", {"file_path": "notes.txt"}),
                Call("WriteFile", {"file_path": "answer.txt", "content": "7\n"}),
            ]
        ),
        Reply(text=json.dumps({"summary": "wrote answer.txt", "taskCompleted": True})),
        Reply(text=json.dumps(verdict)),
    ]


def test_workflow(llm: FakeLLM, project: Path) -> None:
    llm.script(*_workflow_replies())
    out = run_example("workflow.py", llm, project, str(project))
    assert "plan: Write the number to answer.txt" in out
    assert "● WriteFile" in out
    assert "verifier: answer.txt holds 7. [end_turn]" in out
    assert "answer.txt: 7" in out
    assert (project / "answer.txt").read_text(encoding="utf-8") == "7\n"


def test_workflow_in_a_temporary_folder_leaves_none_behind(
    llm: FakeLLM, project: Path, tmp_path: Path
) -> None:
    """Without a directory argument the example works in a temporary folder, removed at the end."""
    llm.script(*_workflow_replies())
    private_tmp = tmp_path / "tmp"
    private_tmp.mkdir()
    out = run_example("workflow.py", llm, project, tmpdir=private_tmp)
    assert "answer.txt: 7" in out
    assert leftovers(private_tmp) == []


def test_mcp_tools(llm: FakeLLM, project: Path) -> None:
    llm.script(
        Reply(calls=[Call("time_get_current_time", {"timezone": "Asia/Tokyo"})]),
        Reply(text="It is evening in Tokyo."),
    )
    private_tmp = project.parent / "tmp"  # the example's TMPDIR: what it leaves there is its own
    private_tmp.mkdir()
    out = run_example("mcp_tools.py", llm, project, tmpdir=private_tmp)
    assert leftovers(private_tmp) == []  # its etcode-mcp-* folder is gone
    assert "● time_get_current_time {'timezone': 'Asia/Tokyo'}" in out
    assert "Asia/Tokyo" in out.splitlines()[1]
    assert out.strip().endswith("It is evening in Tokyo.")
    assert "time_get_current_time" in offered(llm) and "time_convert_time" in offered(llm)
    assert '"timezone": "Asia/Tokyo"' in tool_messages(llm, 1)[-1]


def test_custom_llm(project: Path) -> None:
    out = run_example("custom_llm.py", None, project)
    lines = out.splitlines()
    assert lines[0] == "That text has 5 words."
    assert lines[1].startswith("steps: 2, tokens: ")

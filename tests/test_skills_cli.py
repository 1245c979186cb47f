"""Skills through the real CLI (``etcode run``, ``etcode debug prompt``) against the scripted
model server: a published skill listed in the system prompt, loaded by the ``Skill`` tool and
its bundled file read; a broken skill warns and the run goes on; with no skill nothing
changes."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.cli_helpers import etcode, etcode_imports, result_line, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.project_support import git_init

FIXTURES = Path(__file__).parent / "fixtures" / "skills"
WEBAPP_DESCRIPTION = (
    "Toolkit for interacting with and testing local web applications using Playwright. Supports "
    "verifying frontend functionality, debugging UI behavior, capturing browser screenshots, and "
    "viewing browser logs."
)


def system_text(body: dict[str, Any]) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def tool_names(body: dict[str, Any]) -> list[str]:
    return [t["function"]["name"] for t in body.get("tools", [])]


def tool_message(body: dict[str, Any]) -> str:
    return next(m["content"] for m in reversed(body["messages"]) if m["role"] == "tool")


def test_a_skill_is_listed_loaded_and_its_file_read(llm: FakeLLM, tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    folder = project / ".claude" / "skills" / "webapp-testing"
    shutil.copytree(FIXTURES / "webapp-testing", folder)
    write_config(project, llm)
    llm.script(
        Reply(calls=[Call("Skill", {"name": "webapp-testing"})]),
        Reply(calls=[Call("ReadFile", {"file_path": str(folder / "scripts" / "with_server.py")})]),
        Reply(text="Started the server with the helper."),
    )
    proc = etcode("run", "check the login page in the browser", cwd=project)
    assert proc.returncode == 0, proc.stderr
    first = llm.requests[0].body
    assert f"- webapp-testing: {WEBAPP_DESCRIPTION}" in system_text(first)
    assert "Decision Tree" not in system_text(first)  # the body waits for the Skill tool
    assert "Skill" in tool_names(first)
    loaded = tool_message(llm.requests[1].body)
    assert f"Its folder is {folder}:" in loaded
    assert "## Decision Tree: Choosing Your Approach" in loaded  # the SKILL.md body
    assert "- scripts/with_server.py" in loaded and "- examples/element_discovery.py" in loaded
    read = tool_message(llm.requests[2].body)
    assert "def main()" in read  # the bundled script, read by the model
    assert "● Skill (webapp-testing)" in proc.stderr and "└ Loaded skill webapp-testing" in proc.stderr
    assert "warning" not in proc.stderr


def test_a_broken_skill_warns_once_and_the_run_goes_on(llm: FakeLLM, tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    shutil.copytree(FIXTURES / "internal-comms", project / ".etcode" / "skills" / "internal-comms")
    broken = project / ".etcode" / "skills" / "release" / "SKILL.md"
    broken.parent.mkdir()
    broken.write_text("---\nname: release\ndescription: Use when: releasing\n---\nSteps.\n", encoding="utf-8")
    write_config(project, llm)
    llm.script(Reply(text="done"))
    proc = etcode("run", "--format", "json", "write the newsletter", cwd=project)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    assert warnings == [f"skipped skill {broken}: line 3 invalid YAML front matter"]
    assert result_line(proc)["result"] == "done"
    system = system_text(llm.requests[0].body)
    assert "- internal-comms: " in system and "release" not in system


def test_with_no_skill_nothing_changes(llm: FakeLLM, tmp_path: Path) -> None:
    """No skill folder, an empty one, or every skill disabled: the same prompt and tools as
    ever, no Skill tool, and (with no folder) nothing of skills imported."""
    project = git_init(tmp_path / "project")
    write_config(project, llm)
    llm.script(Reply(text="one"), Reply(text="two"), Reply(text="three"))
    proc, imported = etcode_imports("run", "hello", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not [name for name in imported if name.startswith("etcode.extensions.skill")]
    (project / ".claude" / "skills").mkdir(parents=True)
    assert etcode("run", "hello", cwd=project).returncode == 0
    shutil.copytree(FIXTURES / "webapp-testing", project / ".claude" / "skills" / "webapp-testing")
    write_config(project, llm, skills={"disabled": ["webapp-testing"]})
    assert etcode("run", "hello", cwd=project).returncode == 0
    bodies = [request.body for request in llm.requests]
    assert "Skill" not in tool_names(bodies[0]) and "Skills" not in system_text(bodies[0])
    assert bodies[1]["messages"] == bodies[0]["messages"] and bodies[2]["messages"] == bodies[0]["messages"]
    assert bodies[1]["tools"] == bodies[0]["tools"] == bodies[2]["tools"]


def test_an_agent_without_the_skill_tool_gets_no_list(llm: FakeLLM, tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    shutil.copytree(FIXTURES / "brand-guidelines", project / ".agents" / "skills" / "brand-guidelines")
    write_config(project, llm, agent={"build": {"tools": {"Skill": False}}})
    llm.script(Reply(text="ok"))
    assert etcode("run", "hello", cwd=project).returncode == 0
    body = llm.requests[0].body
    assert "Skill" not in tool_names(body) and "brand-guidelines" not in system_text(body)


def test_debug_prompt_shows_the_list_and_the_lean_one_is_bounded(tmp_path: Path) -> None:
    project = git_init(tmp_path / "project")
    skills = project / ".claude" / "skills"
    for index in range(30):
        folder = skills / f"skill-{index:02d}"
        folder.mkdir(parents=True)
        description = f"Skill number {index} does one thing well. " + "More words about it. " * 60
        (folder / "SKILL.md").write_text(
            f"---\nname: skill-{index:02d}\ndescription: {description}\n---\nBody {index}.\n"
        )
    (project / "etcode.json").write_text(json.dumps({"prompt": "full"}))
    full = etcode("debug", "prompt", "--json", cwd=project)
    assert full.returncode == 0, full.stderr
    [part] = [p for p in json.loads(full.stdout)["parts"] if p["layer"] == "skills"]
    # 30 descriptions of 1024 characters: the full list's 12k budget holds 11 of them.
    assert part["text"].count("\n- skill-") == 11
    assert part["text"].endswith('- … and 19 more: call Skill with name "?" for the full list.')
    assert "Body 0." not in part["text"]
    (project / "etcode.json").write_text(json.dumps({"prompt": "lean"}))
    lean = etcode("debug", "prompt", "--json", cwd=project)
    [small] = [p for p in json.loads(lean.stdout)["parts"] if p["layer"] == "skills"]
    lines = small["text"].splitlines()
    assert [line.split(":")[0] for line in lines[1:13]] == [f"- skill-{i:02d}" for i in range(12)]
    assert lines[1] == "- skill-00: Skill number 0 does one thing well."
    assert lines[-1] == '- … and 18 more: call Skill with name "?" for the full list.'
    assert len(small["text"]) < 1200 < len(part["text"])

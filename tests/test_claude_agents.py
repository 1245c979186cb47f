"""Claude Code's subagents (``.claude/agents/*.md``) as etcode agents (issue 28.1): the
front matter mapped, precedence under ``.etcode/agent/``, broken files warned about, and
through the real ``etcode run --agent`` and the ``Task`` tool."""

from __future__ import annotations

import json
import os
from pathlib import Path

from etcode.agent import load_agents
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.project_support import git_init

REVIEWER = """---
name: code-reviewer
description: Reviews code for bugs
tools: Read, Grep, Glob, NotebookEdit
model: sonnet
color: blue
permissionMode: bypassPermissions
---
You are a careful reviewer. Say REVIEWED.
"""


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def test_front_matter_is_mapped(tmp_path: Path) -> None:
    repo = git_init(tmp_path / "repo")
    write(repo / ".claude" / "agents" / "reviewer.md", REVIEWER)
    write(
        repo / ".claude" / "agents" / "writer.md",
        "---\ntools: [Write, LS, Bash]\nmodel: fake/big\n---\nWrite.",
    )
    write(repo / ".claude" / "agents" / "plain.md", "Do everything.")
    agents = load_agents({}, repo, repo)
    reviewer = agents["code-reviewer"]  # the name in the front matter, not the file's
    assert (reviewer.description, reviewer.mode, reviewer.model) == (
        "Reviews code for bugs",
        "subagent",
        None,
    )
    assert reviewer.prompt == "You are a careful reviewer. Say REVIEWED."
    on = [
        t
        for t in ("ReadFile", "ReadManyFiles", "Grep", "Glob", "WriteFile", "Edit", "Bash", "Task")
        if reviewer.tool_enabled(t)
    ]
    assert on == ["ReadFile", "ReadManyFiles", "Grep", "Glob"]  # listed only; NotebookEdit ignored
    assert reviewer.permission is None and reviewer.sandbox is None  # permissionMode is never read
    writer = agents["writer"]
    assert writer.model == "fake/big"
    assert [t for t in ("WriteFile", "ListFiles", "Bash", "ReadFile") if writer.tool_enabled(t)] == [
        "WriteFile",
        "ListFiles",
        "Bash",
    ]
    assert agents["plain"].tool_enabled("Bash") and agents["plain"].mode == "subagent"


def test_etcode_agents_win_and_user_agents_come_too(tmp_path: Path) -> None:
    repo = git_init(tmp_path / "repo")
    write(
        repo / ".claude" / "agents" / "helper.md",
        "---\ndescription: claude's\ntools: Read\n---\nclaude prompt",
    )
    write(repo / ".etcode" / "agent" / "helper.md", "---\ndescription: etcode's\n---\netcode prompt")
    write(
        Path(os.environ["HOME"]) / ".claude" / "agents" / "mine.md", "---\ndescription: the user's\n---\nmine"
    )
    agents = load_agents({}, repo, repo)
    helper = agents["helper"]
    assert (helper.description, helper.prompt) == ("etcode's", "etcode prompt")
    assert not helper.tool_enabled("Bash")  # claude's tools stay where etcode's file sets none
    assert agents["mine"].description == "the user's"


def test_run_with_a_claude_agent_and_task_offers_it(tmp_path: Path, llm: FakeLLM) -> None:
    repo = git_init(tmp_path / "repo")
    write_config(repo, llm)
    write(repo / ".claude" / "agents" / "reviewer.md", REVIEWER)
    broken = write(repo / ".claude" / "agents" / "broken.md", "---\ntools: [Read\n---\nx")
    clash = write(repo / ".claude" / "agents" / "plan.md", "---\nname: plan\n---\nmy plan")
    llm.script(Reply(text="REVIEWED"))
    proc = etcode("run", "--agent", "code-reviewer", "look at it", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    body = llm.requests[0].body
    assert sorted(t["function"]["name"] for t in body["tools"]) == [
        "Glob",
        "Grep",
        "ReadFile",
        "ReadManyFiles",
    ]
    assert "You are a careful reviewer." in json.dumps(body["messages"][0])
    assert f"warning: {broken}: line 2 invalid YAML front matter (agent skipped)" in proc.stderr
    assert f"warning: {clash}: plan is a built-in agent's name; this file is ignored" in proc.stderr
    llm.script(
        Reply(
            calls=[
                Call(
                    "Task", {"description": "review", "prompt": "review it", "subagent_type": "code-reviewer"}
                )
            ]
        ),
        Reply(text="REVIEWED by the subagent"),
        Reply(text="done"),
    )
    proc = etcode("run", "--yes", "delegate the review", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    task = next(t for t in llm.requests[1].body["tools"] if t["function"]["name"] == "Task")
    assert "code-reviewer" in json.dumps(task)
    assert "You are a careful reviewer." in json.dumps(llm.requests[2].body["messages"][0])


def test_model_values() -> None:
    from etcode.agent.claude_agents import model_setting

    assert model_setting("openai/gpt-4.1") == "openai/gpt-4.1"
    for value in ("sonnet", "inherit", "claude-3-5-haiku-20241022", "", None):
        assert model_setting(value) is None


def test_an_agent_file_linked_out_of_the_project_is_left_out(tmp_path: Path, llm: FakeLLM) -> None:
    repo = git_init(tmp_path / "repo")
    write_config(repo, llm)
    outside = write(tmp_path / "secret.md", "---\ndescription: leaked\n---\nTOP SECRET")
    link = repo / ".claude" / "agents" / "leak.md"
    link.parent.mkdir(parents=True)
    link.symlink_to(outside)
    assert "leak" not in load_agents({}, repo, repo)
    llm.script(Reply(text="ok"))
    proc = etcode("run", "hello", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: skipped agent {link}: a link to {outside}, outside the project" in proc.stderr
    assert "TOP SECRET" not in json.dumps(llm.requests[0].body)


def test_a_fifo_or_a_huge_agent_file_is_one_warning_never_a_hang(tmp_path: Path, llm: FakeLLM) -> None:
    """A cloned project's ``.claude/agents/evil.md`` that is a FIFO (opening it would wait for
    a writer forever) or megabytes long: one warning naming it, and the run goes on."""
    repo = git_init(tmp_path / "repo")
    write_config(repo, llm)
    fifo = repo / ".claude" / "agents" / "evil.md"
    fifo.parent.mkdir(parents=True)
    os.mkfifo(fifo)
    huge = write(repo / ".claude" / "agents" / "huge.md", "---\ndescription: x\n---\n" + "y" * (1 << 20))
    llm.script(Reply(text="ok"))
    proc = etcode("run", "hello", cwd=repo, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "ok\n"
    warnings = [line for line in proc.stderr.splitlines() if line.startswith("warning:")]
    assert warnings == [
        f"warning: {fifo}: agent not read: not a regular file (a FIFO) (agent skipped)",
        f"warning: {huge}: agent not read: larger than 256.0 KB (agent skipped)",
    ], proc.stderr


def test_tools_map_skill_mcp_and_warn_about_the_rest(tmp_path: Path, llm: FakeLLM) -> None:
    """``Skill`` and ``mcp__<server>__<tool>`` (etcode's ``<server>_<tool>``) are mapped;
    names etcode has no tool for are one warning naming the file and them."""
    repo = git_init(tmp_path / "repo")
    write_config(repo, llm)
    path = write(
        repo / ".claude" / "agents" / "mixed.md",
        "---\ntools: Read, Skill, MultiEdit, mcp__github__create_issue, mcp__db, NotebookEdit, WebSearch\n---\nGo.",
    )
    mixed = load_agents({}, repo, repo)["mixed"]
    names = (
        "ReadFile",
        "Skill",
        "Edit",
        "github_create_issue",
        "github_list",
        "db_query",
        "Bash",
        "WriteFile",
    )
    assert [t for t in names if mixed.tool_enabled(t)] == [
        "ReadFile",
        "Skill",
        "Edit",
        "github_create_issue",
        "db_query",
    ]
    llm.script(Reply(text="ok"))
    proc = etcode("run", "hello", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    warnings = [line for line in proc.stderr.splitlines() if "mixed.md" in line]
    assert warnings == [
        f"warning: {path}: tools: etcode has no tool for NotebookEdit, WebSearch; the agent runs without them"
    ]

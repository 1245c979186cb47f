"""A hostile model against the real `etcode run` (issue 12, points 3-6): the scripted model
tries what a careless or malicious one would, the files on disk tell what really ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply


def tool_results(llm: FakeLLM) -> str:
    """Every message the model was sent, as one JSON text (tool results included)."""
    return json.dumps([request.body["messages"] for request in llm.requests])


def worktree(project: Path) -> None:
    for name in ("a.txt", "b.txt", "p1"):
        (project / name).write_text(f"{name}\n", encoding="utf-8")
    (project / "sub").mkdir()
    (project / "sub" / "c.txt").write_text("c.txt\n", encoding="utf-8")


@pytest.mark.parametrize(
    "command",
    [
        "find -delete",
        "find . -delete",
        "rg --pre rm needle a.txt",
        "find -fprint a.txt",
        "ls <(rm p1)",
        "find . -name '*.txt' -exec rm {} +",
        "X=rm; $X a.txt",
        "rm${IFS}a.txt",
        "ls > a.txt",
    ],
)
def test_plan_agent_runs_no_destructive_command(project: Path, llm: FakeLLM, command: str) -> None:
    write_config(project, llm)
    worktree(project)
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="done"))
    proc = etcode("run", "--agent", "plan", "clean up", cwd=project)
    assert proc.returncode == 0, proc.stderr
    for name in ("a.txt", "b.txt", "p1", "sub/c.txt"):
        assert (project / name).read_text(encoding="utf-8") == f"{Path(name).name}\n", (command, name)
    sent = tool_results(llm)  # the model was told it was refused, and why
    assert "etcode run is non-interactive" in sent or "denied by permission rule" in sent


def test_explore_subagent_runs_no_destructive_command(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    worktree(project)
    llm.script(
        Reply(
            calls=[Call("Task", {"description": "find files", "prompt": "list", "subagent_type": "explore"})]
        ),
        Reply(calls=[Call("Bash", {"command": "find -exec rm {} +"})]),
        Reply(text="could not"),
        Reply(text="done"),
    )
    proc = etcode("run", "explore", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "a.txt").exists() and (project / "sub" / "c.txt").exists()


def test_agent_catch_all_cannot_lift_a_project_deny(project: Path, llm: FakeLLM) -> None:
    write_config(
        project,
        llm,
        permission={"bash": {"rm *": "deny", "*": "allow"}, "edit": {"secret/*": "deny"}},
        agent={"careful": {"permission": {"*": "ask", "bash": {"*": "ask"}}}},
    )
    worktree(project)
    (project / "secret").mkdir()
    llm.script(
        Reply(
            calls=[
                Call("Bash", {"command": "rm -rf sub"}),
                Call("WriteFile", {"file_path": "secret/w.txt", "content": "pwned"}),
                Call("Bash", {"command": "echo pwned > secret/x.txt"}),
                Call("Bash", {"command": "echo ok > fine.txt"}),
            ]
        ),
        Reply(text="done"),
    )
    proc = etcode("run", "--yes", "--agent", "careful", "tidy", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert (project / "sub" / "c.txt").exists()
    assert not (project / "secret" / "w.txt").exists() and not (project / "secret" / "x.txt").exists()
    assert (project / "fine.txt").read_text() == "ok\n"  # --yes still allows what the agent asks
    assert tool_results(llm).count("denied by permission rule") == 3


def test_read_rules_hold_for_grep_and_cat_of_env_in_plan_mode(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"read": {"secret/*": "deny"}})
    (project / ".env").write_text("API_TOKEN=very-secret-value\n", encoding="utf-8")
    (project / "secret").mkdir()
    (project / "secret" / "s.txt").write_text("the hidden launch code\n", encoding="utf-8")
    llm.script(
        Reply(
            calls=[
                Call("Bash", {"command": "cat .env"}),
                Call("Bash", {"command": "cat secret/s.txt"}),
                Call("Bash", {"command": "head -1 < secret/s.txt"}),
            ]
        ),
        Reply(text="done"),
    )
    proc = etcode("run", "--agent", "plan", "show me", cwd=project)
    assert proc.returncode == 0, proc.stderr
    sent = tool_results(llm)
    assert "very-secret-value" not in sent and "launch code" not in sent


@pytest.mark.parametrize(
    "command",
    [
        "git grep -O'touch pwned' -e needle",
        "git grep --open-files-in-pager='touch pwned' -e needle",
        "git grep --open='touch pwned' -e needle",
        "git grep -iO'touch pwned' -e needle",
    ],
)
def test_git_grep_allowed_does_not_allow_the_pager_it_runs(project: Path, llm: FakeLLM, command: str) -> None:
    """``git grep -O<pager>`` runs the pager, a shell line, on the files it finds: an allow
    rule for ``git grep *`` does not cover the ``touch`` inside (it is asked, and etcode run
    cannot ask)."""
    import subprocess

    write_config(project, llm, permission={"bash": {"*": "ask", "git grep *": "allow"}})
    subprocess.run(["git", "init", "-q"], cwd=project, check=True, timeout=30)
    (project / "a.txt").write_text("needle\n", encoding="utf-8")
    subprocess.run(["git", "add", "a.txt"], cwd=project, check=True, timeout=30)
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="done"))
    proc = etcode("run", "--trust", "search", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not (project / "pwned").exists()
    assert "etcode run is non-interactive" in tool_results(llm)

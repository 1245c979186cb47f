"""Code hidden in a shell line, through the real `etcode run` (issue 27, items 1-3): bash
evaluates array subscripts inside arithmetic as code, and variables set earlier in a line
steer a program a rule allows. None of it runs without a question; the files on disk tell."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply

RULES = {"bash": {"*": "ask", "ls *": "allow", "git status*": "allow", "rm *": "deny"}}
HIDE = "a[$(rm -rf victim)]"


def sent(llm: FakeLLM) -> str:
    """Every message the model was sent, as one JSON text (tool results included)."""
    return json.dumps([request.body["messages"] for request in llm.requests])


def run_one(project: Path, llm: FakeLLM, command: str, *args: str, env: dict[str, str] | None = None) -> str:
    """Let the model send ``command`` once in `etcode run` (no --yes); the tool result."""
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="done"))
    proc = etcode("run", *args, "go", cwd=project, env=env)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return sent(llm)


def refused(text: str) -> bool:
    """The tool result says the command was asked (refused headless) or denied by a rule."""
    return "etcode run is non-interactive" in text or "denied by permission rule" in text


@pytest.mark.parametrize(
    "command",
    [
        f"x='{HIDE}'; ls $((x))",
        f"x='{HIDE}'; ls $[x]",
        f"x='{HIDE}'; ls ${{PWD:x:0}}",
        f"declare -i y='{HIDE}'; ls",
        "readonly -a r='([$(rm -rf victim)]=1)'; ls",
        f"z='{HIDE}'; [[ $z -eq 0 ]]; ls",
        f"v='{HIDE}'; ((v)); ls",
        f"v='{HIDE}'; a[v]=1; ls",
        f"v='{HIDE}'; for ((i=0;i<v;i++)); do ls; done",
        "ls ${PWD#$(rm -rf victim)}",
        'ls "${PWD%%`rm -rf victim`}"',
        "ls ${nope:-`rm -rf victim`}",
    ],
)
def test_code_in_arithmetic_does_not_run(project: Path, llm: FakeLLM, command: str) -> None:
    write_config(project, llm, permission=RULES)
    (project / "victim").mkdir()
    (project / "victim" / "keep.txt").write_text("x", encoding="utf-8")
    text = run_one(project, llm, command)
    assert (project / "victim" / "keep.txt").exists(), command
    assert refused(text), command


def _git_repo(project: Path) -> None:
    subprocess.run(["git", "init", "-q", str(project)], check=True, timeout=30)
    (project / "tracked.txt").write_text("x\n", encoding="utf-8")
    for args in (["add", "tracked.txt"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(project), *args], check=True, timeout=30, capture_output=True)


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_exported_git_config_does_not_steer_an_allowed_git_status(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission=RULES)
    _git_repo(project)
    (project / "v").mkdir()
    command = (
        "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor "
        "GIT_CONFIG_VALUE_0='rm -rf v; touch fsmonitor-ran; false'; git status"
    )
    text = run_one(project, llm, command)
    assert (project / "v").is_dir() and not (project / "fsmonitor-ran").exists()
    assert "etcode run is non-interactive" in text  # asked (and refused headless), not run


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_exported_git_alias_does_not_run(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": {**RULES["bash"], "git *": "allow"}})
    _git_repo(project)
    command = (
        "export GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=alias.x GIT_CONFIG_VALUE_0='!touch alias-ran'; git x"
    )
    text = run_one(project, llm, command)
    assert not (project / "alias-ran").exists()
    assert "etcode run is non-interactive" in text


def _own_ls(project: Path) -> None:
    """The repository's own ``bin/ls``, which leaves a mark when it runs."""
    (project / "bin").mkdir()
    script = project / "bin" / "ls"
    script.write_text('#!/bin/sh\ntouch "$(dirname "$0")/../own-ls-ran"\n', encoding="utf-8")
    script.chmod(0o755)


@pytest.mark.parametrize(
    "command",
    ["PATH=./bin:$PATH; ls", "export PATH=./bin:$PATH; ls", "PATH=./bin:$PATH ls", "read PATH <<< ./bin; ls"],
)
def test_path_set_earlier_does_not_pick_the_repositorys_ls(project: Path, llm: FakeLLM, command: str) -> None:
    write_config(project, llm, permission=RULES)
    _own_ls(project)
    text = run_one(project, llm, command)
    assert not (project / "own-ls-ran").exists(), command
    assert "etcode run is non-interactive" in text


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_glob_does_not_smuggle_an_option_into_an_allowed_command(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, permission={"bash": {**RULES["bash"], "git diff*": "allow"}})
    _git_repo(project)
    (project / "--output=globbed.txt").write_text("x", encoding="utf-8")
    text = run_one(project, llm, "git diff *")
    assert not (project / "globbed.txt").exists()
    assert "etcode run is non-interactive" in text


def test_plain_lines_still_run_unasked(project: Path, llm: FakeLLM) -> None:
    """The rule costs nothing to plain lines: quotes, `set -e`, a literal arithmetic."""
    write_config(project, llm, permission={"bash": {**RULES["bash"], "echo *": "allow", "set *": "allow"}})
    (project / "a b.txt").write_text("x", encoding="utf-8")
    text = run_one(project, llm, "set -euo pipefail; ls 'a b.txt' && echo $((6*7))")
    assert "a b.txt" in text and "42" in text and not refused(text)


# ---- plan and explore where bubblewrap is missing ------------------------------------


@pytest.fixture
def no_bwrap(tmp_path: Path) -> dict[str, str]:
    """A PATH with bash, git and a few tools, but without bubblewrap."""
    folder = tmp_path / "nobwrap-bin"
    folder.mkdir()
    for tool in ("bash", "sh", "git", "ls", "cat", "touch", "dirname", "find"):
        found = shutil.which(tool)
        if found:
            (folder / tool).symlink_to(found)
    return {"PATH": str(folder)}


PLAN_ESCAPES = [
    # The output of an allowed command becomes options of another: git writes a file.
    "git diff $(cat args.txt)",
    # A file named like an option, picked up by a glob.
    "git diff *",
    "PATH=./bin:$PATH; ls",
]


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
@pytest.mark.parametrize("command", PLAN_ESCAPES)
def test_plan_without_bubblewrap_asks_for_what_is_not_plain(
    project: Path, llm: FakeLLM, no_bwrap: dict[str, str], command: str
) -> None:
    write_config(project, llm)
    _git_repo(project)
    _own_ls(project)
    (project / "args.txt").write_text("--output=written.txt\n", encoding="utf-8")
    (project / "--output=globbed.txt").write_text("x", encoding="utf-8")
    text = run_one(project, llm, command, "--agent", "plan", env=no_bwrap)
    assert not (project / "written.txt").exists() and not (project / "globbed.txt").exists()
    assert not (project / "own-ls-ran").exists()
    assert "etcode run is non-interactive" in text, command


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_plan_without_bubblewrap_still_runs_plain_commands(
    project: Path, llm: FakeLLM, no_bwrap: dict[str, str]
) -> None:
    write_config(project, llm)
    _git_repo(project)
    llm.script(
        Reply(calls=[Call("Bash", {"command": "git status --short && ls -a 'tracked.txt'"})]),
        Reply(text="ok"),
    )
    proc = etcode("run", "--agent", "plan", "go", cwd=project, env=no_bwrap)
    assert proc.returncode == 0, proc.stderr
    assert "without its read-only sandbox" in proc.stderr
    assert "tracked.txt" in sent(llm) and not refused(sent(llm))


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_explore_without_bubblewrap_asks_for_what_is_not_plain(
    project: Path, llm: FakeLLM, no_bwrap: dict[str, str]
) -> None:
    write_config(project, llm)
    _git_repo(project)
    (project / "args.txt").write_text("--output=written.txt\n", encoding="utf-8")
    task = {"description": "look", "prompt": "diff it", "subagent_type": "explore"}
    llm.script(
        Reply(calls=[Call("Task", task)]),
        Reply(calls=[Call("Bash", {"command": "git diff $(cat args.txt)"})]),
        Reply(text="explored"),
        Reply(text="done"),
    )
    proc = etcode("run", "go", cwd=project, env=no_bwrap)
    assert proc.returncode == 0, proc.stderr
    assert not (project / "written.txt").exists()
    assert "etcode run is non-interactive" in sent(llm)

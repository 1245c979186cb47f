"""Custom slash commands (issue 28.2) through the real ``etcode run`` against the fake model
server: discovery, namespaces, arguments, ``@file``, built-in names, broken files, /init."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.project_support import git_init


def user_text(llm: FakeLLM, index: int = 0) -> str:
    """The last user message of request ``index`` as text."""
    messages = llm.requests[index].body["messages"]
    content = [m for m in messages if m["role"] == "user"][-1]["content"]
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content)
    return str(content)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


REVIEW = """---
description: Review a file
argument-hint: FILE [FOCUS]
---
Review $1 with a focus on $2. Everything: $ARGUMENTS
Style guide: @docs/style.md
"""


@pytest.fixture
def repo(project: Path, llm: FakeLLM) -> Path:
    git_init(project)
    write_config(project, llm)
    write(project / ".claude" / "commands" / "review.md", REVIEW)
    write(project / "docs" / "style.md", "Use four spaces.\n")
    return project


def test_command_with_arguments_and_file(repo: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="Reviewed."))
    proc = etcode("run", "/review", "src/a.py", '"error handling"', cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "Reviewed.\n"
    sent = user_text(llm)
    assert "Review src/a.py with a focus on error handling." in sent
    assert 'Everything: src/a.py "error handling"' in sent
    assert '<file path="docs/style.md">\nUse four spaces.\n</file>' in sent
    assert "$1" not in sent and "/review" not in sent


def test_namespace_from_subfolder_and_etcode_folder_wins(repo: Path, llm: FakeLLM) -> None:
    write(repo / ".claude" / "commands" / "git" / "commit.md", "claude's commit: $ARGUMENTS")
    write(repo / ".etcode" / "commands" / "git" / "commit.md", "etcode's commit: $ARGUMENTS")
    llm.script(Reply(text="ok"))
    proc = etcode("run", "/git:commit fix the typo", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert user_text(llm) == "etcode's commit: fix the typo"


def test_nearest_folder_wins_and_user_commands(repo: Path, llm: FakeLLM, tmp_path: Path) -> None:
    sub = repo / "pkg"
    write(repo / ".etcode" / "commands" / "hello.md", "root hello")
    write(sub / ".etcode" / "commands" / "hello.md", "pkg hello")
    home = Path(os.environ["HOME"])
    write(home / ".claude" / "commands" / "mine.md", "claude user command $ARGUMENTS")
    write(Path(os.environ["XDG_CONFIG_HOME"]) / "etcode" / "commands" / "theirs.md", "etcode user command")
    llm.script(Reply(text="1"), Reply(text="2"), Reply(text="3"))
    assert etcode("run", "/hello", cwd=sub).returncode == 0
    assert etcode("run", "/mine", "x", cwd=sub).returncode == 0
    assert etcode("run", "/theirs", "y z", cwd=sub).returncode == 0
    assert user_text(llm, 0) == "pkg hello"
    assert user_text(llm, 1) == "claude user command x"
    assert user_text(llm, 2) == "etcode user command\n\nARGUMENTS: y z"


@pytest.mark.parametrize("text", ["/tmp/x why", "/nonexistent please", "/review/x"])
def test_a_slash_that_is_no_command_stays_a_message(repo: Path, llm: FakeLLM, text: str) -> None:
    llm.script(Reply(text="fine"))
    proc = etcode("run", text, cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert user_text(llm) == text


def test_builtin_name_wins_with_a_warning(repo: Path, llm: FakeLLM) -> None:
    help_file = write(repo / ".etcode" / "commands" / "help.md", "my help")
    init_file = write(repo / ".claude" / "commands" / "init.md", "my init")
    llm.script(Reply(text="ok"), Reply(text="ok"))
    proc = etcode("run", "/help", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: {help_file}: /help is a built-in command; this file is ignored" in proc.stderr
    assert user_text(llm) == "/help"  # no command of that name in `etcode run`: a message
    proc = etcode("run", "/init", cwd=repo)
    assert f"warning: {init_file}: /init is a built-in command" in proc.stderr
    assert "my init" not in user_text(llm, 1) and "AGENTS.md" in user_text(llm, 1)


def test_broken_file_warns_and_the_run_goes_on(repo: Path, llm: FakeLLM) -> None:
    broken = write(repo / ".etcode" / "commands" / "broken.md", "---\ndescription: [unclosed\n---\nbody\n")
    llm.script(Reply(text="still here"))
    proc = etcode("run", "/review", "a.py", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.count("warning:") == 1
    assert f"warning: {broken}: line 2 invalid YAML front matter (command /broken skipped)" in proc.stderr
    assert "Review a.py" in user_text(llm)


def test_missing_included_file_is_one_clear_error(repo: Path, llm: FakeLLM) -> None:
    (repo / "docs" / "style.md").unlink()
    proc = etcode("run", "/review a.py", cwd=repo)
    assert proc.returncode == 2
    command_file = repo / ".claude" / "commands" / "review.md"
    assert (
        proc.stderr.strip()
        .splitlines()[-1]
        .endswith(f"/review: @docs/style.md: no such file (command file {command_file})")
    )
    assert "Traceback" not in proc.stderr
    assert llm.requests == []


def test_command_file_linked_out_of_the_project_is_skipped(repo: Path, llm: FakeLLM, tmp_path: Path) -> None:
    outside = write(tmp_path / "elsewhere" / "leak.md", "secret prompt")
    link = repo / ".etcode" / "commands" / "leak.md"
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    llm.script(Reply(text="ok"))
    proc = etcode("run", "/leak", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: skipped command {link}: a link to {outside}, outside the project" in proc.stderr
    assert user_text(llm) == "/leak"


def test_command_agent_and_model_unless_flags_override(repo: Path, llm: FakeLLM) -> None:
    write(repo / ".etcode" / "commands" / "look.md", "---\nagent: plan\nmodel: fake/other-model\n---\nlook")
    llm.script(Reply(text="a"), Reply(text="b"))
    proc = etcode("run", "--format", "json", "/look", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    start = json.loads(proc.stdout.splitlines()[0])
    assert (start["agent"], llm.requests[0].body["model"]) == ("plan", "other-model")
    proc = etcode("run", "--format", "json", "--agent", "build", "-m", "fake/test-model", "/look", cwd=repo)
    start = json.loads(proc.stdout.splitlines()[0])
    assert (start["agent"], llm.requests[1].body["model"]) == ("build", "test-model")


def test_init_writes_agents_md(repo: Path, llm: FakeLLM) -> None:
    write(repo / "pyproject.toml", '[project]\nname = "demo"\n')
    agents_md = "# demo\n\nRun the tests with `pytest -q`.\n"
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "AGENTS.md", "content": agents_md})]),
        Reply(text="Wrote AGENTS.md."),
    )
    proc = etcode("run", "--yes", "/init", "mention the tests", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert (repo / "AGENTS.md").read_text(encoding="utf-8") == agents_md
    sent = user_text(llm)
    assert "write an `AGENTS.md` file" in sent and sent.rstrip().endswith("mention the tests")


def test_substitution_is_one_pass_and_shell_like() -> None:
    from etcode.extensions.command_expansion import substitute

    body = "a=$1 b=$2 c=$3 all=$ARGUMENTS"
    assert (
        substitute(body, "'x y' $2 \"$ARGUMENTS\"") == "a=x y b=$2 c=$ARGUMENTS all='x y' $2 \"$ARGUMENTS\""
    )
    assert substitute(body, "it's") == "a=it's b= c= all=it's"  # an unclosed quote: split at spaces
    assert substitute("no placeholder", "") == "no placeholder"


def test_command_head_only_reads_names() -> None:
    from etcode.extensions.commands import command_head

    assert command_head("/git:commit fix it") == ("git:commit", "fix it")
    assert command_head("  /init\n\npiped text") == ("init", "piped text")
    assert command_head("/tmp/x why") is None and command_head("//x") is None and command_head("/") is None

"""Issue 27.5: a repository's AGENTS.md/CLAUDE.md committed as a link to ``~/.ssh/id_rsa``
(or to a secret or git-ignored file inside it) must not put that file in the system prompt.
Every file etcode sends because the project holds it goes through one check
(``etcode/prompt/project_files.py``): skipped with a warning naming it, unless trusted."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from etcode.prompt.instruction import InstructionPrompt
from etcode.prompt.project_files import refusal
from etcode.ui.tui.mentions import resolve_mentions
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply

KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA-fake-users-key\n"
KEY_MARK = "fake-users-key"


@pytest.fixture
def key() -> Path:
    """The user's private key in the test's own HOME."""
    path = Path.home() / ".ssh" / "id_rsa"
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text(KEY, encoding="utf-8")
    return path


@pytest.fixture
def repo(tmp_path: Path, key: Path) -> Path:
    """A cloned repository whose AGENTS.md and sub/CLAUDE.md are links to the user's key."""
    folder = tmp_path / "cloned"
    (folder / "sub").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=30)
    (folder / "AGENTS.md").symlink_to(key)
    (folder / "sub" / "CLAUDE.md").symlink_to(os.path.relpath(key, folder / "sub"))
    (folder / "sub" / "code.py").write_text("print('hi')\n", encoding="utf-8")
    return folder


def system_text(body: dict) -> str:
    return "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")


def test_linked_instruction_files_are_skipped_with_a_warning(repo: Path, llm: FakeLLM) -> None:
    write_config(repo, llm)
    llm.script(Reply(text="hello"))
    proc = etcode("run", "hi", cwd=repo / "sub")
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps(llm.requests[0].body)
    assert KEY_MARK not in sent
    key = Path.home() / ".ssh" / "id_rsa"
    for link in (repo / "AGENTS.md", repo / "sub" / "CLAUDE.md"):
        assert f"skipped instructions {link}: a link to {key}, outside the project" in proc.stderr, (
            proc.stderr
        )
    assert "Traceback" not in proc.stderr


def test_trusted_the_linked_files_are_sent(repo: Path, llm: FakeLLM) -> None:
    write_config(repo, llm)
    llm.script(Reply(text="hello"))
    proc = etcode("run", "--trust", "hi", cwd=repo / "sub")
    assert proc.returncode == 0, proc.stderr
    assert KEY_MARK in system_text(llm.requests[0].body)


def test_a_linked_sub_folder_file_is_not_attached_to_a_read(repo: Path, llm: FakeLLM) -> None:
    """The nested CLAUDE.md a read of sub/code.py would bring along is a link: left out."""
    write_config(repo, llm)
    (repo / "AGENTS.md").unlink()
    (repo / "AGENTS.md").write_text("be brief\n", encoding="utf-8")
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "sub/code.py"})]), Reply(text="read it"))
    proc = etcode("run", "read sub/code.py", cwd=repo)
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 2
    sent = json.dumps(llm.requests[1].body["messages"])
    assert "print(" in sent and KEY_MARK not in sent, sent


# ---- the one check ----------------------------------------------------------------------


def test_the_check(repo: Path, tmp_path: Path) -> None:
    (repo / ".gitignore").write_text("local/\n", encoding="utf-8")
    (repo / "local").mkdir()
    (repo / "local" / "notes.md").write_text("mine", encoding="utf-8")
    (repo / ".env").write_text("TOKEN=abcdefgh12345", encoding="utf-8")
    (repo / "docs").mkdir()
    (repo / "docs" / "rules.md").write_text("rules", encoding="utf-8")
    (repo / "to-env.md").symlink_to(".env")
    (repo / "to-local.md").symlink_to("local/notes.md")
    (repo / "to-docs.md").symlink_to("docs/rules.md")
    (repo / "linked-dir").symlink_to(Path.home() / ".ssh")
    (repo / "dangling.md").symlink_to("nowhere.md")
    assert refusal(repo / "to-env.md", repo) == f"a link to {repo / '.env'}, a secret file"
    assert (
        refusal(repo / "to-local.md", repo) == f"a link to {repo / 'local' / 'notes.md'}, a git-ignored file"
    )
    assert refusal(repo / "linked-dir" / "id_rsa", repo) == (
        f"a link to {Path.home() / '.ssh' / 'id_rsa'}, outside the project"
    )
    assert refusal(repo / "dangling.md", repo) == "a link that leads nowhere or loops"
    assert refusal(repo / "to-docs.md", repo) is None  # a link inside the repository: its own
    assert refusal(repo / "docs" / "rules.md", repo) is None
    assert refusal(repo / "local" / "notes.md", repo) is None  # no link: the user put it there
    assert refusal(Path.home() / ".ssh" / "id_rsa", repo) is None  # not the project's


async def test_instructions_globs_and_mentions_use_it(repo: Path, tmp_path: Path) -> None:
    (repo / "docs").mkdir()
    (repo / "docs" / "a.md").write_text("doc rules", encoding="utf-8")
    (repo / "docs" / "b.md").symlink_to(Path.home() / ".ssh" / "id_rsa")
    prompt = InstructionPrompt(repo, repo, instructions=["docs/*.md"], global_dir=tmp_path / "g")
    parts = await prompt.system()
    text = "\n".join(p.text for p in parts)
    assert "doc rules" in text and KEY_MARK not in text
    assert any(w.startswith(f"skipped instructions {repo / 'docs' / 'b.md'}") for w in prompt.warnings)
    trusted = InstructionPrompt(
        repo, repo, instructions=["docs/*.md"], global_dir=tmp_path / "g", trusted=True
    )
    assert KEY_MARK in "\n".join(p.text for p in await trusted.system())

    (attached,) = resolve_mentions("look at @docs/b.md", repo)
    assert attached.text is None and "outside the project" in attached.note
    (attached,) = resolve_mentions("look at @docs/b.md", repo, trusted=True)
    assert attached.text is not None and KEY_MARK in attached.text

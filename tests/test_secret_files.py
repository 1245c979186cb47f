"""Secret files read by ordinary commands (issue 27, item 6), through the real ``etcode
run`` against the fake LLM server, with the default rules (``bash`` allowed, reading
``.env`` asks):

- layer 1, the ``read`` rules: ``cat "$PWD/.env"``, ``grep -r``, ``git grep --untracked``,
  ``find … -exec cat``, ``tar c`` read ``.env`` as surely as ``cat .env`` does, so they ask
  (refused: ``etcode run`` is non-interactive). The ``.env`` here holds a value under a
  key that does not look secret, which layer 2 leaves alone: only the rules protect it;
- layer 2, the redactor: the secret-looking values of the project's ``.env`` files and of
  the files ``"secret_files"`` lists are ``[REDACTED]`` in every tool result, whatever
  command printed them, while ``PORT=3000`` stays visible.

What the model was sent is read from the fake server's recorded requests."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from etcode.permission.service import NON_INTERACTIVE_REASON
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.require import needs

#: In ``.env`` under a name that does not look secret: only the read rules keep it back.
PLAIN_VALUE = "sk-layer-one-4Hq8Wd2Lm7Rb9Xc3"
#: Under secret-looking names: the redactor knows them from the start of the run.
API_KEY = "sk-proj-Zq9XwV7bN3mK8pL2rT6y"
DB_PASSWORD = "hunter2-Wq4ZpL9x"
LISTED_TOKEN = "tok-8Fj3Kd9Qm2Xv7Lp4"
NESTED_SECRET = "nested-9Kq2Wm7Xv4Lp"


def sent(llm: FakeLLM) -> str:
    """The tool results the model was sent (not its own calls, which name the command)."""
    return json.dumps(
        [m for request in llm.requests[1:] for m in request.body["messages"] if m.get("role") == "tool"]
    )


def _run_command(project: Path, llm: FakeLLM, command: str, **config: object) -> str:
    write_config(project, llm, **config)
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="done"))
    proc = etcode("run", "look around", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 2
    return sent(llm)


@pytest.mark.parametrize(
    "command",
    [
        'cat "$PWD/.env"',
        "cat ${PWD}/.env",
        "grep -r sk- .",
        "grep -rn --recur sk- .",
        "rgrep sk- .",
        "find . -type f -exec cat {} +",
        "find . -type f -print0 | xargs -0 cat",
        "tar cf - . | tar xOf -",
        "cp -r . ../copy && cat ../copy/.env",
    ],
)
def test_a_command_that_reads_the_env_file_asks(project: Path, llm: FakeLLM, command: str) -> None:
    (project / ".env").write_text(f"NOTE={PLAIN_VALUE}\n", encoding="utf-8")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('hi')\n", encoding="utf-8")
    text = _run_command(project, llm, command)
    assert PLAIN_VALUE not in text, command
    assert NON_INTERACTIVE_REASON.split(";")[0] in text and ".env" in text, text


@needs("git", shutil.which("git") is None, "git is not installed")
@pytest.mark.parametrize(
    "command", ["git grep --untracked sk-", "git grep --untr sk-", "git grep --no-index sk-"]
)
def test_git_grep_over_untracked_files_asks(project: Path, llm: FakeLLM, command: str) -> None:
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".env").write_text(f"NOTE={PLAIN_VALUE}\n", encoding="utf-8")
    text = _run_command(project, llm, command)
    assert PLAIN_VALUE not in text
    assert NON_INTERACTIVE_REASON.split(";")[0] in text


def test_searching_a_folder_without_secret_files_is_not_asked(project: Path, llm: FakeLLM) -> None:
    """The other side: ``grep -r`` where no guarded file lies, ``rg`` (which skips hidden
    files), ``find -name '*.py' -exec`` and ``grep --include`` run as before."""
    (project / ".env").write_text(f"NOTE={PLAIN_VALUE}\n", encoding="utf-8")
    (project / "src").mkdir()
    (project / "src" / "app.py").write_text("print('needle-in-src')\n", encoding="utf-8")
    command = "grep -r needle src; grep -r --include='*.py' needle .; find . -name '*.py' -exec cat {} +"
    text = _run_command(project, llm, command)
    assert NON_INTERACTIVE_REASON.split(";")[0] not in text
    assert text.count("needle-in-src") >= 3 and PLAIN_VALUE not in text


def test_values_of_env_files_are_redacted_whatever_prints_them(project: Path, llm: FakeLLM) -> None:
    """``python3 -c`` reads ``.env`` without naming it to the shell: the rules cannot see
    it, the redactor replaces the values (a nested ``.env.local`` too)."""
    (project / ".env").write_text(
        f"OPENAI_API_KEY={API_KEY}\n"
        f"DATABASE_URL=postgres://app:{DB_PASSWORD}@db:5432/app\n"
        "PORT=3000\nDEBUG=true\n",
        encoding="utf-8",
    )
    (project / "backend").mkdir()
    (project / "backend" / ".env.local").write_text(
        f"export SESSION_SECRET='{NESTED_SECRET}'\n", encoding="utf-8"
    )
    script = (
        "import pathlib; "
        "print(open('.env').read()); "
        "print(pathlib.Path('backend/.env.local').read_text()); "
        f"print('password alone:', {DB_PASSWORD!r})"
    )
    text = _run_command(project, llm, f'python3 -c "{script}"', permission={"bash": {"*": "allow"}})
    for value in (API_KEY, DB_PASSWORD, NESTED_SECRET):
        assert value not in text, value
    assert "OPENAI_API_KEY=[REDACTED]" in text and "SESSION_SECRET='[REDACTED]'" in text
    assert "password alone: [REDACTED]" in text
    assert "PORT=3000" in text and "DEBUG=true" in text


def test_values_of_listed_secret_files_are_redacted(project: Path, llm: FakeLLM) -> None:
    """``"secret_files"``: a file of any name, ``KEY: value`` lines too."""
    (project / "deploy").mkdir()
    (project / "deploy" / "prod.vars").write_text(
        f"API_TOKEN: {LISTED_TOKEN}\nREGION: eu-west-1\n", encoding="utf-8"
    )
    text = _run_command(project, llm, "cat deploy/prod.vars", secret_files=["deploy/prod.vars"])
    assert LISTED_TOKEN not in text
    assert "API_TOKEN: [REDACTED]" in text and "REGION: eu-west-1" in text


def test_a_secret_files_entry_is_checked_by_the_schema(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, secret_files="deploy/prod.vars")
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode == 1 and "Traceback" not in proc.stderr
    assert "etcode.json: secret_files: Input should be a valid list" in proc.stderr

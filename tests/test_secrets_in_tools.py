"""Keys a tool comes across never reach the model, the session or a half-cut summary, and
what holds transcripts is private (issue 12, points 2 and 8)."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.cli_helpers import etcode, result_line, write_config
from tests.fake_llm import Call, FakeLLM, Reply

#: A configured provider key with no well-known shape: only knowing it can hide it.
CONFIG_KEY = "etc0de-distinctive-KEY-7f3a9b2c51"
#: A key with a well-known shape, long enough that an 80-column summary cuts it.
SHAPED = "sk-proj-" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789" * 3


def key_at(column: int) -> str:
    """A command whose key starts at ``column``: a summary cut a little later keeps only
    ``sk-proj-Ab``, which no longer looks like a key."""
    tail = " && export K="
    return "echo " + "a" * (column - len("echo ") - len(tail)) + tail + SHAPED


def everything_stored(home: Path) -> bytes:
    """The bytes of the session database and its WAL (what a reader of the disk sees)."""
    folder = home / ".local" / "share" / "etcode"
    return b"".join(p.read_bytes() for p in folder.glob("etcode.db*"))


def saved_outputs(home: Path) -> str:
    folder = home / ".local" / "share" / "etcode" / "tool-output"
    return "".join(p.read_text(encoding="utf-8") for p in folder.glob("*.txt"))


def test_a_configured_key_in_tool_output_is_not_sent_or_stored(
    project: Path, llm: FakeLLM, isolated_env: Path
) -> None:
    write_config(project, llm, api_key=CONFIG_KEY)
    (project / "notes.txt").write_text(f"deploy with key {CONFIG_KEY} please\n", encoding="utf-8")
    (project / "big.txt").write_text(("filler line\n" * 5000) + f"KEY={CONFIG_KEY}\n", encoding="utf-8")
    llm.script(
        Reply(
            calls=[
                Call("ReadFile", {"file_path": "notes.txt"}),
                Call("Bash", {"command": "cat big.txt"}),
                Call("Grep", {"pattern": "deploy"}),
            ]
        ),
        Reply(text="done"),
    )
    proc = etcode("run", "read the notes", cwd=project)
    assert proc.returncode == 0, proc.stderr
    sent = json.dumps(llm.requests[1].body["messages"])
    assert "deploy with key [REDACTED] please" in sent  # the rest of the output is intact
    assert CONFIG_KEY not in sent
    assert CONFIG_KEY.encode() not in everything_stored(isolated_env)
    saved = saved_outputs(isolated_env)
    assert "filler line" in saved and CONFIG_KEY not in saved  # the full output, saved without it


@pytest.mark.parametrize("output_format", ["text", "json"])
def test_summaries_are_redacted_before_they_are_cut(project: Path, llm: FakeLLM, output_format: str) -> None:
    write_config(project, llm)
    command = key_at(69)  # the summary keeps 79 characters: 10 of the key
    assert command.index("sk-proj") == 69
    llm.script(Reply(calls=[Call("Bash", {"command": command})]), Reply(text="done"))
    proc = etcode("run", "--format", output_format, "set it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    shown = proc.stdout + proc.stderr
    assert "sk-proj-" not in shown, shown  # not even the first characters of the key
    if output_format == "json":
        assert result_line(proc)["type"] == "result"


def test_sessions_show_cuts_after_redacting(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    llm.script(
        Reply(
            calls=[
                Call("Bash", {"command": key_at(50)}),  # the call line keeps 59 characters
                Call("Bash", {"command": f"echo {'b' * 89} {SHAPED}"}),  # the result line keeps 99
            ]
        ),
        Reply(text="done"),
    )
    assert etcode("run", "go", cwd=project).returncode == 0
    listing = etcode("sessions", "list", "--json", cwd=project)
    session_id = json.loads(listing.stdout)[0]["id"]
    shown = etcode("sessions", "show", session_id, cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "● Bash" in shown.stdout and "sk-proj-" not in shown.stdout


def test_transcripts_are_private(project: Path, llm: FakeLLM, isolated_env: Path) -> None:
    os.umask(0o022)
    write_config(project, llm)
    (project / "big.txt").write_text("line\n" * 5000, encoding="utf-8")
    llm.script(Reply(calls=[Call("Bash", {"command": "cat big.txt"})]), Reply(text="done"))
    proc = etcode("run", "read it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    data = isolated_env / ".local" / "share" / "etcode"
    assert stat.S_IMODE(data.stat().st_mode) == 0o700
    files = list(data.glob("etcode.db*"))
    assert {p.name for p in files} >= {"etcode.db"}
    for path in files:
        assert stat.S_IMODE(path.stat().st_mode) == 0o600, path
    outputs = data / "tool-output"
    assert stat.S_IMODE(outputs.stat().st_mode) == 0o700
    saved = list(outputs.glob("*.txt"))
    assert saved and all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in saved)


def test_existing_loose_modes_are_tightened(isolated_env: Path) -> None:
    from etcode.session.store import SessionStore, default_path

    path = default_path()
    path.parent.mkdir(parents=True)
    os.chmod(path.parent, 0o755)
    sqlite3.connect(path).close()
    os.chmod(path, 0o644)
    SessionStore.open().close()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_a_user_chosen_folder_is_not_chmodded(tmp_path: Path) -> None:
    from etcode.session.store import SessionStore

    folder = tmp_path / "shared"
    folder.mkdir()
    os.chmod(folder, 0o755)
    SessionStore.open(folder / "mine.db").close()
    assert stat.S_IMODE(folder.stat().st_mode) == 0o755  # the user's folder stays as it was
    assert stat.S_IMODE((folder / "mine.db").stat().st_mode) == 0o600

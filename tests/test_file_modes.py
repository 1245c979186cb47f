"""Files that hold transcripts are the user's alone (issue 12, point 8): the session database
(and SQLite's -wal/-shm), ``tool-output/`` and the TUI's prompt history are created ``0600`` in
``0700`` folders under a normal umask (022), and tightened when an older etcode left them
readable by others."""

from __future__ import annotations

import os
import sqlite3
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from etcode.session.store import SessionStore
from etcode.tools import truncate
from etcode.ui.tui.history import PromptHistory, default_history
from etcode.util.paths import data_dir, state_dir
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply


@pytest.fixture(autouse=True)
def normal_umask() -> Iterator[None]:
    old = os.umask(0o022)
    yield
    os.umask(old)


@pytest.fixture(autouse=True)
def fresh_cleanup(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(truncate, "_cleaned", False)  # the once-per-process pass runs again


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _write_session(store: SessionStore) -> None:
    store.create_session("s1", project_id="p", directory="/tmp", title="t")


def test_session_database_is_created_private() -> None:
    store = SessionStore.open()
    _write_session(store)
    db = store.path
    assert db == data_dir() / "etcode.db"
    assert Path(f"{db}-wal").exists() and Path(f"{db}-shm").exists()  # WAL mode: both made
    modes = {p.name: mode(p) for p in (db.parent, db, Path(f"{db}-wal"), Path(f"{db}-shm"))}
    store.close()
    assert modes == {"etcode": 0o700, "etcode.db": 0o600, "etcode.db-wal": 0o600, "etcode.db-shm": 0o600}


def test_a_readable_session_database_is_tightened_on_open() -> None:
    folder = data_dir()
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    db = folder / "etcode.db"
    conn = sqlite3.connect(db)  # an older etcode's files: 0644 under umask 022
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("CREATE TABLE t (x)")
    for name in ("etcode.db-wal", "etcode.db-shm"):
        (folder / name).touch()
        (folder / name).chmod(0o644)
    assert mode(db) == 0o644
    conn.close()
    for name in ("etcode.db-wal", "etcode.db-shm"):  # closing may have removed them
        (folder / name).touch()
        (folder / name).chmod(0o644)
    store = SessionStore.open()
    _write_session(store)
    store.close()
    assert mode(folder) == 0o700 and mode(db) == 0o600
    assert all(mode(p) == 0o600 for p in folder.glob("etcode.db-*"))


def test_a_store_in_a_folder_the_user_chose_leaves_the_folder_alone(tmp_path: Path) -> None:
    chosen = tmp_path / "mine"
    chosen.mkdir(mode=0o755)
    store = SessionStore.open(chosen / "sessions.db")
    _write_session(store)
    store.close()
    assert mode(chosen) == 0o755 and mode(chosen / "sessions.db") == 0o600
    store = SessionStore.open(tmp_path / "new" / "sessions.db")
    store.close()
    assert mode(tmp_path / "new") == 0o700


def test_saved_tool_output_is_private() -> None:
    path = truncate.save_output("x\n" * 10)
    assert mode(path) == 0o600 and mode(path.parent) == 0o700 and mode(path.parent.parent) == 0o700
    assert path.parent.parent == data_dir()


def test_readable_saved_outputs_are_tightened() -> None:
    folder = truncate.output_dir()
    folder.mkdir(parents=True)
    for each in (folder, folder.parent):
        each.chmod(0o755)
    old = folder / "tool_old.txt"
    old.write_text("an earlier transcript piece\n")
    old.chmod(0o644)
    truncate.save_output("new\n")
    assert mode(folder) == 0o700 and mode(folder.parent) == 0o700 and mode(old) == 0o600


def test_prompt_history_is_private() -> None:
    history = default_history()
    history.add("deploy with the staging key")
    path = state_dir() / "prompt-history.jsonl"
    assert mode(path) == 0o600 and mode(state_dir()) == 0o700
    path.chmod(0o644)
    state_dir().chmod(0o755)
    assert default_history().entries == ["deploy with the staging key"]
    assert mode(path) == 0o600 and mode(state_dir()) == 0o700


def test_a_history_file_elsewhere_leaves_its_folder_alone(tmp_path: Path) -> None:
    tmp_path.chmod(0o755)
    PromptHistory(tmp_path / "h.jsonl").add("x")
    assert mode(tmp_path) == 0o755 and mode(tmp_path / "h.jsonl") == 0o600


def test_etcode_run_creates_only_private_files(project: Path, llm: FakeLLM) -> None:
    """A real run that stores a session and saves a long tool output: every folder etcode
    made under its data folder is 0700 and every file 0600."""
    write_config(project, llm)
    llm.script(Reply(calls=[Call("Bash", {"command": "seq 1 5000"})]), Reply(text="done"))
    proc = etcode("run", "count", cwd=project)
    assert proc.returncode == 0, proc.stderr
    root = data_dir()
    made = [root, *root.rglob("*")]
    assert any(p.name.startswith("tool_") for p in made) and (root / "etcode.db").exists()
    loose = {str(p.relative_to(root.parent)): oct(mode(p)) for p in made if mode(p) & 0o077}
    assert loose == {}

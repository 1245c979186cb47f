"""``etcode undo`` never eats later work (issue 13, item 6) and keeps large copies out of
the database (item 7): the real CLI, the fake LLM server, real files and a real SQLite file.

- files changed after etcode wrote them stop undo (every one listed, nothing touched);
- ``--force`` restores edited files but never deletes a changed file the turn created;
- files between the inline limit and ``snapshot.maxFileBytes`` are copied beside the
  database (streamed), files over it get no copy and a warning;
- a full disk while copying or storing is reported as a full disk, naming the path.
"""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from tests.cli_helpers import etcode, result_line, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.fs_support import small_tmpfs

ORIGINAL = "line one\nline two\n"


def data_dir() -> Path:
    return Path(os.environ["XDG_DATA_HOME"]) / "etcode"


def agent_turn(project: Path, llm: FakeLLM, *calls: Call, config: dict | None = None) -> str:
    """One `etcode run` whose model makes ``calls`` (in one step); returns the session id."""
    write_config(project, llm, **(config or {}))
    llm.script(Reply(calls=list(calls)), Reply(text="Done."))
    proc = etcode("run", "--yes", "--format", "json", "change things", cwd=project)
    assert proc.returncode == 0, proc.stderr
    return result_line(proc)["session_id"]


def test_undo_refuses_when_files_changed_since_etcode_wrote_them(project: Path, llm: FakeLLM) -> None:
    (project / "f.txt").write_text(ORIGINAL, encoding="utf-8")
    (project / "g.txt").write_text("gamma\n", encoding="utf-8")
    agent_turn(
        project,
        llm,
        Call("Edit", {"file_path": "f.txt", "old_string": "line two", "new_string": "line 2"}),
        Call("WriteFile", {"file_path": "new.txt", "content": "made by the agent\n"}),
        Call("Edit", {"file_path": "g.txt", "old_string": "gamma", "new_string": "GAMMA"}),
    )
    with (project / "f.txt").open("a", encoding="utf-8") as handle:
        handle.write("my own note\n")
    with (project / "new.txt").open("a", encoding="utf-8") as handle:
        handle.write("my notes, do not lose\n")

    undo = etcode("undo", cwd=project)
    assert undo.returncode == 1, (undo.stdout, undo.stderr)
    lines = undo.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in undo.stderr, undo.stderr
    assert str(project / "f.txt") in lines[0] and str(project / "new.txt") in lines[0]
    assert "g.txt" not in lines[0]  # unchanged since etcode wrote it: not listed
    assert "--force" in lines[0] and "nothing undone" in lines[0]
    # Nothing touched: not the changed files, and not the unchanged one either.
    assert (project / "f.txt").read_text(encoding="utf-8") == "line one\nline 2\nmy own note\n"
    assert (project / "new.txt").read_text(encoding="utf-8") == "made by the agent\nmy notes, do not lose\n"
    assert (project / "g.txt").read_text(encoding="utf-8") == "GAMMA\n"

    forced = etcode("undo", "--force", cwd=project)
    assert forced.returncode == 0, forced.stderr
    assert (project / "f.txt").read_text(encoding="utf-8") == ORIGINAL  # --force: the old content
    assert (project / "g.txt").read_text(encoding="utf-8") == "gamma\n"
    # A file the turn created and the user changed is never deleted, even with --force.
    assert (project / "new.txt").read_text(encoding="utf-8") == "made by the agent\nmy notes, do not lose\n"
    out = forced.stdout
    assert f"{project / 'new.txt'}: kept, not deleted" in out
    assert f"{project / 'f.txt'}: restored (--force" in out and "overwritten" in out
    assert f"{project / 'g.txt'}: restored\n" in out

    again = etcode("undo", cwd=project)
    assert again.returncode == 0 and "Nothing to undo" in again.stderr


def test_undo_checks_against_what_the_last_write_left(project: Path, llm: FakeLLM) -> None:
    """Two writes in a turn, and a file the user deleted that the turn created: undo goes
    ahead (etcode's own second write is not "a later change"; a created file already gone is
    already as before)."""
    (project / "f.txt").write_text(ORIGINAL, encoding="utf-8")
    write_config(project, llm)
    llm.script(
        Reply(calls=[Call("Edit", {"file_path": "f.txt", "old_string": "one", "new_string": "1"})]),
        Reply(
            calls=[
                Call("Edit", {"file_path": "f.txt", "old_string": "two", "new_string": "2"}),
                Call("WriteFile", {"file_path": "tmp.txt", "content": "scratch\n"}),
            ]
        ),
        Reply(text="Done."),
    )
    assert etcode("run", "--yes", "two steps", cwd=project).returncode == 0
    assert (project / "f.txt").read_text(encoding="utf-8") == "line 1\nline 2\n"
    (project / "tmp.txt").unlink()
    undo = etcode("undo", cwd=project)
    assert undo.returncode == 0, undo.stderr
    assert (project / "f.txt").read_text(encoding="utf-8") == ORIGINAL
    assert f"{project / 'tmp.txt'}: already as before the turn" in undo.stdout


def test_an_earlier_turn_is_checked_against_its_own_writes(project: Path, llm: FakeLLM) -> None:
    """Undo turn 2, then turn 1: the file holds turn 1's result again, so turn 1 undoes; a
    change the user made between the turns is caught."""
    (project / "f.txt").write_text(ORIGINAL, encoding="utf-8")
    agent_turn(project, llm, Call("Edit", {"file_path": "f.txt", "old_string": "one", "new_string": "1"}))
    (project / "f.txt").write_text("line 1\nline two\nuser between turns\n", encoding="utf-8")
    write_config(project, llm)
    llm.script(
        Reply(calls=[Call("Edit", {"file_path": "f.txt", "old_string": "two", "new_string": "2"})]),
        Reply(text="Done."),
    )
    assert etcode("run", "-c", "--yes", "more", cwd=project).returncode == 0
    first = etcode("undo", cwd=project)
    assert first.returncode == 0, first.stderr
    assert (project / "f.txt").read_text(encoding="utf-8") == "line 1\nline two\nuser between turns\n"
    second = etcode("undo", cwd=project)
    assert second.returncode == 1 and str(project / "f.txt") in second.stderr
    assert (project / "f.txt").read_text(encoding="utf-8") == "line 1\nline two\nuser between turns\n"


# ---- large files: outside the database, capped ----------------------------------------------


def snapshot_rows() -> list[tuple]:
    conn = sqlite3.connect(data_dir() / "etcode.db")
    try:
        return conn.execute("SELECT path, copy, length(content), size FROM snapshots").fetchall()
    finally:
        conn.close()


def test_large_copies_live_beside_the_database_and_come_back(project: Path, llm: FakeLLM) -> None:
    big = "".join(f"row {i:07d} of the data file\n" for i in range(40_000))  # ~1.1 MB
    (project / "data.txt").write_text(big, encoding="utf-8")
    sid = agent_turn(
        project,
        llm,
        Call("Edit", {"file_path": "data.txt", "old_string": "row 0000007 ", "new_string": "ROW 7 "}),
    )
    ((path, copy, inline, size),) = snapshot_rows()
    assert (path, copy, inline, size) == (str(project / "data.txt"), "file", None, len(big))
    copies = list((data_dir() / "snapshots" / sid).iterdir())
    assert len(copies) == 1 and copies[0].read_text(encoding="utf-8") == big
    assert copies[0].stat().st_mode & 0o077 == 0  # private, like the database

    undo = etcode("undo", cwd=project)
    assert undo.returncode == 0, undo.stderr
    assert (project / "data.txt").read_text(encoding="utf-8") == big
    assert list((data_dir() / "snapshots" / sid).iterdir()) == []  # no longer needed
    etcode("sessions", "delete", sid, cwd=project)
    assert not (data_dir() / "snapshots" / sid).exists()


def test_files_over_the_cap_get_no_copy_and_a_warning(project: Path, llm: FakeLLM) -> None:
    (project / "huge.txt").write_text("x" * 5000 + "\n", encoding="utf-8")
    (project / "small.txt").write_text("small\n", encoding="utf-8")
    write_config(project, llm, snapshot={"maxFileBytes": 4096})
    llm.script(
        Reply(
            calls=[
                Call("WriteFile", {"file_path": "huge.txt", "content": "replaced\n"}),
                Call("WriteFile", {"file_path": "small.txt", "content": "SMALL\n"}),
            ]
        ),
        Reply(text="Done."),
    )
    proc = etcode("run", "--yes", "replace them", cwd=project)
    assert proc.returncode == 0, proc.stderr
    warning = [line for line in proc.stderr.splitlines() if "no undo copy" in line]
    assert len(warning) == 1 and str(project / "huge.txt") in warning[0], proc.stderr
    assert "etcode undo" in warning[0] and "snapshot.maxFileBytes" in warning[0]
    assert (project / "huge.txt").read_text(encoding="utf-8") == "replaced\n"  # still written

    undo = etcode("undo", cwd=project)
    assert undo.returncode == 1  # incomplete: says so
    assert f"{project / 'huge.txt'}: NOT restored: no undo copy" in undo.stdout
    assert f"{project / 'small.txt'}: restored" in undo.stdout
    assert (project / "small.txt").read_text(encoding="utf-8") == "small\n"
    assert (project / "huge.txt").read_text(encoding="utf-8") == "replaced\n"
    assert "incomplete" in undo.stderr


def test_bad_snapshot_config_is_one_line(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm, snapshot={"maxFileBytes": -1})
    proc = etcode("run", "hi", cwd=project)
    assert proc.returncode in (1, 2) and "maxFileBytes" in proc.stderr and "Traceback" not in proc.stderr


# ---- a full disk is a full disk ---------------------------------------------------------------


def test_full_disk_while_copying_names_the_folder(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    with small_tmpfs(tmp_path / "data", size="1m") as data:
        env = {"XDG_DATA_HOME": str(data)}
        big = "y" * 1_500_000 + "\n"
        (project / "big.txt").write_text(big, encoding="utf-8")
        write_config(project, llm)
        llm.script(
            Reply(calls=[Call("WriteFile", {"file_path": "big.txt", "content": "short\n"})]),
            Reply(text="Could not."),
        )
        proc = etcode("run", "--yes", "--format", "json", "shrink it", cwd=project, env=env)
        assert proc.returncode == 0, proc.stderr
        results = [json.loads(line) for line in proc.stdout.splitlines()]
        (tool,) = [e for e in results if e.get("type") == "tool_result"]
        assert tool["is_error"] and "no space left on device" in tool["output"].lower(), tool
        assert str(data / "etcode" / "snapshots") in tool["output"]
        assert "unreadable" not in proc.stdout + proc.stderr
        assert (project / "big.txt").read_text(encoding="utf-8") == big  # not changed without a copy
        leftovers = [p for p in (data / "etcode" / "snapshots").rglob("*") if p.is_file()]
        assert leftovers == []


def test_full_disk_under_the_database_is_not_called_corrupt(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    with small_tmpfs(tmp_path / "data", size="512k") as data:
        env = {"XDG_DATA_HOME": str(data)}
        write_config(project, llm)
        llm.script(Reply(text="first"))
        assert etcode("run", "hello", cwd=project, env=env).returncode == 0
        filler = data / "filler"
        with pytest.raises(OSError), filler.open("wb") as handle:  # fill the disk up
            while True:
                handle.write(b"\0" * 4096)
                handle.flush()
        (project / "notes.txt").write_text("n" * 200_000 + "\n", encoding="utf-8")  # an inline copy
        llm.script(
            Reply(
                calls=[
                    Call("Edit", {"file_path": "notes.txt", "old_string": "nnnn\n", "new_string": "end\n"})
                ]
            ),
            Reply(text="Done."),
        )
        proc = etcode("run", "-c", "--yes", "--format", "json", "edit it", cwd=project, env=env)
        said = proc.stdout + proc.stderr
        assert "no space left on device" in said.lower(), said
        assert str(data / "etcode" / "etcode.db") in said
        assert "unreadable" not in said and "Traceback" not in said
        assert (project / "notes.txt").read_text(encoding="utf-8") == "n" * 200_000 + "\n"


def test_store_full_disk_on_a_snapshot_says_so(tmp_path: Path) -> None:
    from etcode.session.database import StoreError
    from etcode.session.store import SessionStore

    with small_tmpfs(tmp_path / "data", size="512k") as data:
        store = SessionStore.open(data / "etcode.db")
        try:
            store.create_session("ses_a", project_id="p", directory=str(tmp_path))
            with pytest.raises(OSError), (data / "filler").open("wb") as handle:
                while True:
                    handle.write(b"\0" * 4096)
                    handle.flush()
            with pytest.raises(StoreError) as info:
                store.save_snapshot("ses_a", 1, "/x/a.txt", b"a" * 200_000)
            assert str(info.value).startswith(f"no space left on device for the session database {data}")
        finally:
            store.close()


def test_snapshots_from_before_the_migration_still_undo(tmp_path: Path) -> None:
    """A schema-1 database (no record of what etcode wrote): undo cannot tell later changes
    from etcode's, so it refuses unless forced; a file already as before is fine."""
    from etcode.session.schema import MIGRATIONS
    from etcode.session.snapshots import UndoRefused, undo_last_turn
    from etcode.session.store import SessionStore

    path = tmp_path / "etcode.db"
    conn = sqlite3.connect(path)
    conn.executescript(MIGRATIONS[0][2] + "; PRAGMA user_version = 1;")
    edited, same = tmp_path / "edited.txt", tmp_path / "same.txt"
    edited.write_text("agent wrote this\n")
    same.write_text("as before\n")
    for name, content in ((edited, b"before\n"), (same, b"as before\n")):
        conn.execute(
            "INSERT INTO snapshots (session_id, turn, path, existed, content, created) VALUES (?, 1, ?, 1, ?, 0)",
            ("ses_old", str(name), content),
        )
    conn.commit()
    conn.close()
    store = SessionStore.open(path)
    try:
        with pytest.raises(UndoRefused) as info:
            undo_last_turn(store, "ses_old")
        assert [p for p, _ in info.value.changed] == [str(edited)]
        report = undo_last_turn(store, "ses_old", force=True)
        assert report is not None and report.paths == [str(edited), str(same)]
        assert edited.read_text() == "before\n" and same.read_text() == "as before\n"
    finally:
        store.close()


def test_a_full_disk_does_not_stop_the_session_lock(tmp_path: Path) -> None:
    """The lock file's pid is for messages only: on a full disk the lock is still taken."""
    from etcode.session.lock import SessionLock

    with small_tmpfs(tmp_path / "data", size="512k") as data:
        locks = data / "locks"
        SessionLock.acquire(locks, "ses_a").release()  # the (empty) lock file exists now
        with pytest.raises(OSError), (data / "filler").open("wb") as handle:
            while True:
                handle.write(b"\0" * 4096)
                handle.flush()
        lock = SessionLock.acquire(locks, "ses_a")
        lock.release()

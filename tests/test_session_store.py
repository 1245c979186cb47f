"""The SQLite session store: round trips, batches, fork, snapshots, corruption, migrations."""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from etcode.engine.history import INTERRUPTED_RESULT, repair_dangling
from etcode.provider.types import Message, ReasoningPart, TextPart, ToolCallPart, ToolResultPart, Usage
from etcode.session.database import StoreError
from etcode.session.schema import SCHEMA_VERSION
from etcode.session.session_rows import AmbiguousSessionError
from etcode.session.store import SessionNotFoundError, SessionStore
from etcode.util.paths import data_dir


@pytest.fixture
def store(tmp_path: Path):
    s = SessionStore.open(tmp_path / "etcode.db")
    yield s
    s.close()


def conversation() -> list[Message]:
    return [
        Message.user("read a.txt"),
        Message(
            "assistant",
            [
                ReasoningPart("thinking", signature="sig-1"),
                TextPart("Reading."),
                ToolCallPart("call_1", "ReadFile", '{"file_path":"a.txt"}'),
            ],
        ),
        Message("tool", [ToolResultPart("call_1", "ReadFile", "1\tüñí ✓", is_error=False)]),
        Message("assistant", [TextPart("It says üñí ✓.")]),
    ]


def new_session(store: SessionStore, sid: str = "ses_a", project: str = "p1", title: str = "t") -> None:
    store.create_session(sid, project_id=project, directory="/tmp/x", title=title, agent="build", model="m/x")


def test_default_location_is_xdg_data_home() -> None:
    store = SessionStore.open()
    try:
        assert store.path == data_dir() / "etcode.db"
        assert store.path.is_file()
        assert os.environ["XDG_DATA_HOME"] in str(store.path)
    finally:
        store.close()


def test_round_trip_keeps_every_part(store: SessionStore) -> None:
    new_session(store)
    messages = conversation()
    store.append_messages("ses_a", messages[:2], turn=1)
    store.append_messages("ses_a", messages[2:], turn=1)
    loaded = store.load_messages("ses_a")
    assert loaded == messages
    info = store.get_session("ses_a")
    assert info is not None and info.message_count == 4 and info.turn == 1
    assert [m.seq for m in store.transcript("ses_a")] == [1, 2, 3, 4]


def test_tool_results_keep_what_the_chat_showed_and_old_rows_still_load(store: SessionStore) -> None:
    """The ``└`` line and the small data (an Edit's diff) are stored with the result, file
    contents are not; a row without them (an older etcode) loads with None."""
    from etcode.tools.shown import kept_data

    new_session(store)
    data = kept_data(
        {"diff": "--- a\n+++ b\n-x\n+y\n", "additions": 1, "files": [{"content": "big"}], "long": "z" * 600}
    )
    assert data == {"diff": "--- a\n+++ b\n-x\n+y\n", "additions": 1}
    shown = ToolResultPart("call_1", "Edit", "Edited a.py.", summary="Updated a.py (+1 -1)", data=data)
    store.append_messages("ses_a", [Message("tool", [shown])], turn=1)
    conn = sqlite3.connect(store.path)
    conn.execute(
        "INSERT INTO messages (session_id, seq, batch, turn, role, kind, parts, created) VALUES "
        "('ses_a', 2, 0, 1, 'tool', 'message', ?, 0)",
        ('[{"call_id":"c0","name":"Bash","output":"ok","is_error":false,"type":"tool_result"}]',),
    )
    conn.commit()
    conn.close()
    loaded = store.load_messages("ses_a")
    assert loaded[0].parts == [shown]
    old = loaded[1].parts[0]
    assert isinstance(old, ToolResultPart) and old.summary is None and old.data is None


def test_wal_mode_schema_version_and_migrations_table(store: SessionStore) -> None:
    conn = sqlite3.connect(store.path)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        rows = conn.execute("SELECT version, name FROM migrations").fetchall()
        assert [version for version, _ in rows] == list(range(1, SCHEMA_VERSION + 1))
    finally:
        conn.close()
    SessionStore.open(store.path).close()  # re-opening does not migrate again


def test_batches_load_only_the_current_one(store: SessionStore) -> None:
    new_session(store)
    old = conversation()
    store.append_messages("ses_a", old, turn=1)
    summary = Message.user("[etcode] Summary of the earlier conversation ...")
    batch = store.start_batch("ses_a", [summary, old[-1]], turn=1, kinds=["summary", "copy"])
    assert batch == 1
    assert store.load_messages("ses_a") == [summary, old[-1]]
    assert store.load_messages("ses_a", batch=0) == old
    store.start_batch("ses_a", [], turn=1)
    assert store.load_messages("ses_a") == []
    info = store.get_session("ses_a")
    assert info.batch == 2 and info.message_count == 5  # copies are not counted twice
    kinds = [m.kind for m in store.transcript("ses_a")]
    assert kinds == ["message"] * 4 + ["summary", "copy"]


def test_list_latest_find_and_delete(store: SessionStore) -> None:
    new_session(store, "ses_001", "p1", "first")
    new_session(store, "ses_002", "p2", "other project")
    new_session(store, "ses_003", "p1", "second")
    store.append_messages("ses_001", [Message.user("later")], turn=1)  # now the newest of p1
    assert [s.id for s in store.list_sessions("p1")] == ["ses_001", "ses_003"]
    assert {s.id for s in store.list_sessions()} == {"ses_001", "ses_002", "ses_003"}
    assert store.latest_session("p1").id == "ses_001"
    assert store.latest_session("nope") is None
    assert store.find_session("ses_002").title == "other project"
    assert store.find_session("ses_9") is None
    with pytest.raises(
        AmbiguousSessionError, match=r"^session ses_00 matches 3 sessions: ses_001, ses_002, ses_003 — "
    ):
        store.find_session("ses_00")
    assert store.delete_session("ses_002") is True
    assert store.delete_session("ses_002") is False
    assert store.get_session("ses_002") is None


def test_fork_copies_messages_and_todos_not_cost(store: SessionStore) -> None:
    new_session(store)
    store.append_messages("ses_a", conversation(), turn=1)
    store.save_todos("ses_a", [{"content": "x", "status": "pending"}])
    store.record_usage("ses_a", turn=1, step=1, model="m", usage=Usage(100, 10), cost=0.5)
    fork = store.fork_session("ses_a", "ses_b")
    assert fork.parent_id == "ses_a" and fork.cost == 0 and fork.message_count == 4
    assert store.load_messages("ses_b") == store.load_messages("ses_a")
    assert store.load_todos("ses_b") == [{"content": "x", "status": "pending"}]
    store.append_messages("ses_b", [Message.user("only in the fork")], turn=2)
    assert len(store.load_messages("ses_a")) == 4
    with pytest.raises(SessionNotFoundError):
        store.fork_session("ses_missing", "ses_c")


def test_usage_rows_and_session_totals(store: SessionStore) -> None:
    new_session(store)
    store.record_usage("ses_a", turn=1, step=1, model="m", usage=Usage(1000, 100, 50, 20), cost=0.01)
    store.record_usage("ses_a", turn=1, step=2, model="m", usage=Usage(2000, 200), cost=None)
    info = store.get_session("ses_a")
    assert (info.input_tokens, info.output_tokens) == (3000, 300)
    assert info.cost == pytest.approx(0.01)
    rows = store.usage_rows("ses_a")
    assert (
        [r["step"] for r in rows] == [1, 2] and rows[0]["cache_read_tokens"] == 50 and rows[1]["cost"] is None
    )


def test_snapshots_keep_the_first_before_image_per_turn(store: SessionStore) -> None:
    new_session(store)
    assert store.save_snapshot("ses_a", 1, "/x/a.txt", b"v1") is True
    assert store.save_snapshot("ses_a", 1, "/x/a.txt", b"v2") is False
    store.save_snapshot("ses_a", 1, "/x/new.txt", None)
    store.save_snapshot("ses_a", 2, "/x/a.txt", b"v3")
    last = store.last_snapshots("ses_a")
    assert [(s.turn, s.path, s.content) for s in last] == [(2, "/x/a.txt", b"v3")]
    store.mark_undone("ses_a", 2)
    last = {s.path: s.content for s in store.last_snapshots("ses_a")}
    assert last == {"/x/a.txt": b"v1", "/x/new.txt": None}


def test_async_calls_run_in_order_on_the_writer_thread(store: SessionStore) -> None:
    new_session(store)

    async def main() -> None:
        for i in range(20):
            await store.call(store.append_messages, "ses_a", [Message.user(f"m{i}")], turn=1)

    asyncio.run(main())
    assert [m.text for m in store.load_messages("ses_a")] == [f"m{i}" for i in range(20)]


def test_repair_gives_dangling_calls_an_interrupted_result() -> None:
    history = conversation()[:2]  # the assistant's call has no result (killed while it ran)
    repaired, how = repair_dangling(history)
    assert how == "tail"
    assert repaired[:2] == history
    result = repaired[2].tool_results[0]
    assert result.call_id == "call_1" and result.is_error and result.output == INTERRUPTED_RESULT
    assert repair_dangling(conversation()) == (conversation(), "none")


def test_corrupt_database_is_one_clear_error_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "etcode.db"
    path.write_bytes(b"this is not a database, just text " * 200)
    before = path.read_bytes()
    with pytest.raises(StoreError) as info:
        SessionStore.open(path)
    message = str(info.value)
    assert str(path) in message and "move it aside" in message
    assert "\n" not in message
    assert path.read_bytes() == before


def test_newer_schema_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "etcode.db"
    conn = sqlite3.connect(path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="newer etcode"):
        SessionStore.open(path)


def test_cli_reports_a_corrupt_database_in_one_line(tmp_path: Path) -> None:
    path = data_dir() / "etcode.db"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"garbage" * 1000)
    proc = subprocess.run(
        [sys.executable, "-m", "etcode", "sessions", "list"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )
    assert proc.returncode == 1
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    assert str(path) in lines[0] and "move it aside" in lines[0]
    assert path.read_bytes() == b"garbage" * 1000
    (tmp_path / "etcode.json").write_text(
        '{"provider": [{"id": "x", "type": "openai", "baseURL": "http://127.0.0.1:9/v1"}], "model": "x/y"}'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "etcode", "run", "hi"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
        env=os.environ.copy(),
    )
    assert proc.returncode == 1 and len(proc.stderr.strip().splitlines()) == 1
    assert "move it aside" in proc.stderr and "Traceback" not in proc.stderr
    assert path.read_bytes() == b"garbage" * 1000


def test_the_writer_thread_stays_while_any_user_holds_it(store: SessionStore) -> None:
    """Users sharing one store (an agent's conversations do) each acquire it; a release by
    one leaves the writer thread to the others, and only the last release ends it."""

    async def writer() -> threading.Thread:
        return await store.call(threading.current_thread)

    store.acquire()
    store.acquire()
    first = asyncio.run(writer())
    store.release()  # one user is done: the other's writes go on on the same thread
    assert asyncio.run(writer()) is first
    store.release()  # the last one: the thread ends once its queue is empty
    first.join(30)
    assert not first.is_alive()
    again = asyncio.run(writer())  # a later call starts a new one
    assert again is not first and again.is_alive()
    store.release()  # a release without an acquire (an older caller) still ends it
    again.join(30)
    assert not again.is_alive()


def test_calls_from_threads_go_on_while_others_release(store: SessionStore) -> None:
    """A release on one thread never strands a call made on another."""
    new_session(store)
    failures: list[BaseException] = []

    def work(tag: str) -> None:
        async def one(i: int) -> None:
            store.acquire()
            try:
                await store.call(store.append_messages, "ses_a", [Message.user(f"{tag}{i}")], turn=1)
            finally:
                store.release()

        for i in range(50):
            try:
                asyncio.run(one(i))
            except BaseException as err:  # noqa: BLE001 - the test counts them
                failures.append(err)

    threads = [threading.Thread(target=work, args=(tag,)) for tag in "abc"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert failures == []
    assert len(store.load_messages("ses_a")) == 150

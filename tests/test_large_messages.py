"""Messages too large for a database row: kept in files beside the database, loaded back whole."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

import pytest

from etcode.provider.types import Message, TextPart
from etcode.session import message_files
from etcode.session.database import StoreError
from etcode.session.store import SessionStore
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.test_fault_matrix import db_path, ok


def big_content() -> str:
    line = "print('a line of generated code that is fairly long')  # ünïcode\n"
    return line * (message_files.FILE_LIMIT // len(line) * 3)  # ~3 MB


def session_ids(project: Path) -> list[str]:
    listed = etcode("sessions", "list", "--json", cwd=project)
    ok(listed)
    return [s["id"] for s in json.loads(listed.stdout)]


def test_a_huge_tool_call_is_kept_beside_the_database(project: Path, llm: FakeLLM) -> None:
    content = big_content()
    write_config(project, llm)
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "gen.py", "content": content})], chunk_size=1 << 16),
        Reply(text="Written."),
    )
    ok(etcode("run", "generate", cwd=project, timeout=120))
    assert (project / "gen.py").read_text(encoding="utf-8") == content
    files = list(message_files.folder_of(db_path()).glob("*.json"))
    assert len(files) == 1  # the assistant message with the call
    assert db_path().stat().st_size < len(content) // 2  # not in the database

    (sid,) = session_ids(project)
    shown = etcode("sessions", "show", sid, cwd=project)
    ok(shown)
    assert "WriteFile" in shown.stdout

    # a resumed run sends the call back exactly as the model made it
    llm.script(Reply(text="Still here."))
    ok(etcode("run", "-c", "and now?", cwd=project, timeout=120))
    calls = [c for m in llm.requests[-1].body["messages"] for c in m.get("tool_calls") or []]
    assert json.loads(calls[0]["function"]["arguments"]) == {"file_path": "gen.py", "content": content}

    # a fork shares the file; deleting the original keeps it for the fork
    llm.script(Reply(text="Forked."))
    ok(etcode("run", "-c", "--fork", "branch", cwd=project, timeout=120))
    fork = next(s for s in session_ids(project) if s != sid)
    ok(etcode("sessions", "delete", sid, cwd=project))
    assert len(list(message_files.folder_of(db_path()).glob("*.json"))) == 1
    ok(etcode("sessions", "show", fork, cwd=project))
    ok(etcode("sessions", "delete", fork, cwd=project))
    assert list(message_files.folder_of(db_path()).glob("*.json")) == []


@pytest.fixture
def store(tmp_path: Path):  # type: ignore[no-untyped-def]
    opened = SessionStore.open(tmp_path / "etcode.db")
    opened.create_session("ses_1", project_id="p", directory=str(tmp_path))
    yield opened
    opened.close()


def test_a_message_file_that_went_missing_is_named(store: SessionStore) -> None:
    store.append_messages(
        "ses_1", [Message("user", [TextPart("x" * (message_files.FILE_LIMIT + 10))])], turn=1
    )
    (path,) = message_files.folder_of(store.path).glob("*.json")
    assert store.load_messages("ses_1")[0].text == "x" * (message_files.FILE_LIMIT + 10)
    os.unlink(path)
    with pytest.raises(StoreError, match=f"cannot read the stored message {path}"):
        store.load_messages("ses_1")


def test_a_message_too_big_for_sqlite_is_not_called_a_damaged_database(store: SessionStore) -> None:
    store._conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, 1000)
    with pytest.raises(StoreError) as raised:
        store.append_messages("ses_1", [Message("user", [TextPart("y" * 2000)])], turn=1)
    assert "too big" in str(raised.value)
    assert "unreadable" not in str(raised.value) and "move it" not in str(raised.value)

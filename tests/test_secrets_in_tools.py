"""Tool output that holds a configured key is redacted before the model, the session store or
``tool-output/`` get it (issue 12, point 2, second half): a real ``etcode run`` against the
fake LLM server, then the next request body, the session database and the saved outputs are
searched for the key."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from etcode.security.redact import REDACTED, register_secrets, reset_redactor
from etcode.tools.base import ToolContext, ToolError
from etcode.tools.edit import EditTool
from etcode.tools.truncate import MAX_BYTES, save_full_output, truncate_output, wait_saved
from etcode.tools.write_file import WriteFileTool
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tool_support import make_ctx

KEY = "sk-proj-Zq9XwV7bN3mK8pL2rT6yH4jD1fG5sA0c"
ENV_VALUE = "tok-4Hq8Wd2Lm7Rb9Xc3Vn6"  # no known key shape: found by value only


@pytest.fixture(autouse=True)
def _fresh() -> None:
    reset_redactor()


def _data_files() -> list[Path]:
    root = Path(os.environ["XDG_DATA_HOME"]) / "etcode"
    return [p for p in root.rglob("*") if p.is_file()]


def _stored_bytes() -> bytes:
    """Every byte etcode keeps under its data folder: the session DB (and its -wal/-shm)
    and the saved tool outputs."""
    return b"".join(p.read_bytes() for p in _data_files())


def test_tool_output_with_a_configured_key_never_reaches_the_model_or_the_store(
    project: Path, llm: FakeLLM
) -> None:
    write_config(project, llm, api_key=KEY)
    (project / "notes.txt").write_text(f"deploy key: {KEY}\nservice token: {ENV_VALUE}\n", encoding="utf-8")
    # More than 2,000 lines of Bash output: cut for the model, the full text saved.
    command = "seq 1 3000; cat notes.txt"
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"}), Call("Bash", {"command": command})]),
        Reply(calls=[Call("Grep", {"pattern": "key|token"})]),
        Reply(text="done"),
    )
    proc = etcode("run", "look at the notes", cwd=project, env={"MY_SERVICE_TOKEN": ENV_VALUE})
    assert proc.returncode == 0, proc.stderr
    assert len(llm.requests) == 3
    for request in llm.requests[1:]:
        body = json.dumps(request.body)
        assert KEY not in body and ENV_VALUE not in body
    second = json.dumps(llm.requests[1].body)
    assert "deploy key: [REDACTED]" in second and "service token: [REDACTED]" in second
    assert "[REDACTED]" in json.dumps(llm.requests[2].body)  # Grep's matching lines
    saved = [p for p in _data_files() if p.parent.name == "tool-output"]
    assert saved, "the long Bash output was saved"
    assert b"deploy key: [REDACTED]" in b"".join(p.read_bytes() for p in saved)
    stored = _stored_bytes()
    assert b"look at the notes" in stored  # the session was stored
    assert KEY.encode() not in stored and ENV_VALUE.encode() not in stored
    assert KEY not in proc.stdout + proc.stderr


async def test_the_python_api_gets_the_redacted_output(tmp_path: Path, llm: FakeLLM) -> None:
    """An ``Agent`` learns its own key: a tool result event and the next request hold
    ``[REDACTED]`` (the API prints nothing, so nothing else would redact it)."""
    from etcode import Agent
    from etcode.contract import events as ev

    (tmp_path / "notes.txt").write_text(f"key={KEY}\n", encoding="utf-8")
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "notes.txt"})]), Reply(text="done"))
    agent = Agent("p/m", base_url=llm.openai_base_url, api_key=KEY, directory=tmp_path)
    events = [e async for e in agent.stream("read")]
    await agent.aclose()
    results = [e for e in events if isinstance(e, ev.ToolResultEvent)]
    assert results and "key=[REDACTED]" in results[0].output and KEY not in results[0].output
    assert KEY not in json.dumps(llm.requests[1].body)


def test_shapes_are_not_redacted_from_tool_output(project: Path, llm: FakeLLM) -> None:
    """Only known values: a key-shaped string nobody configured (a test fixture) stays."""
    write_config(project, llm, api_key=KEY)
    fake = "sk-fixture-000000000000000000000000"
    (project / "fixture.py").write_text(f"FAKE = '{fake}'\n", encoding="utf-8")
    llm.script(Reply(calls=[Call("ReadFile", {"file_path": "fixture.py"})]), Reply(text="done"))
    proc = etcode("run", "read", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert fake in json.dumps(llm.requests[1].body)


def test_a_key_cut_by_truncation_leaves_no_prefix() -> None:
    """The cut falls inside the key: redacted first, so not even its start is kept."""
    register_secrets(KEY)
    text = "a" * (MAX_BYTES - 620) + KEY + "b" * 30_000  # one long line: cut by bytes
    cut = truncate_output(text)
    assert cut.truncated and cut.path is not None
    assert "sk-proj-Zq" not in cut.text and KEY[8:14] not in cut.text
    saved = Path(cut.path).read_text(encoding="utf-8")
    assert KEY not in saved and REDACTED in saved


def test_a_large_output_saved_in_the_background_is_redacted() -> None:
    """ReadManyFiles' pieces: the head is redacted at once, the rest as it is written."""
    register_secrets(KEY)
    parts = [f"=== File: f{i}.txt ===\n" + ("line\n" * 30_000) + f"token {KEY}\n" for i in range(10)]
    path, _ = save_full_output(parts)
    assert path is not None
    wait_saved(path)
    saved = Path(path).read_text(encoding="utf-8")
    assert saved.count(f"token {REDACTED}") == 10 and KEY not in saved


def test_short_or_path_like_values_are_never_redacted() -> None:
    """The minimum-length rule: a short secret-named value would blank ordinary words."""
    from etcode.security.redact import Redactor

    redactor = Redactor(["abc", "/usr/local/bin"])
    assert redactor.redact_known("abc /usr/local/bin") == "abc /usr/local/bin"


def _ctx(root: Path) -> ToolContext:
    return make_ctx(root)


async def test_writing_redacted_text_back_over_a_key_is_refused(tmp_path: Path) -> None:
    """The model saw ``[REDACTED]``; copying it back would destroy the real key."""
    register_secrets(KEY)
    target = tmp_path / "settings.env.py"
    original = f"API_KEY = '{KEY}'\nDEBUG = True\n"
    target.write_text(original, encoding="utf-8")
    write = WriteFileTool()
    with pytest.raises(ToolError, match=r"\[REDACTED\]"):
        content = f"API_KEY = '{REDACTED}'\nDEBUG = False\n"
        await write.run(write.parse({"file_path": str(target), "content": content}), _ctx(tmp_path))
    edit = EditTool()
    with pytest.raises(ToolError, match=r"\[REDACTED\]"):
        args = {
            "file_path": str(target),
            "old_string": f"API_KEY = '{KEY}'\nDEBUG = True",
            "new_string": f"API_KEY = '{REDACTED}'\nDEBUG = False",
        }
        await edit.run(edit.parse(args), _ctx(tmp_path))
    assert target.read_text(encoding="utf-8") == original
    # Editing around the key is fine.
    args = {"file_path": str(target), "old_string": "DEBUG = True", "new_string": "DEBUG = False"}
    await edit.run(edit.parse(args), _ctx(tmp_path))
    assert target.read_text(encoding="utf-8") == f"API_KEY = '{KEY}'\nDEBUG = False\n"

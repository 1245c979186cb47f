"""Issue 27, item 8: an MCP tool that may write (no ``readOnlyHint``) is not offered to the
read-only agents (``plan``, a Task's ``explore``) and asks everywhere else unless a rule
allows it by name. The server is the user's own (the global config), a real stdio server
(tests/mcp_servers/files_server.py) whose ``write_file`` really writes."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

from tests.cli_helpers import etcode
from tests.fake_llm import Call, FakeLLM, Reply

SERVER = str(Path(__file__).resolve().parent / "mcp_servers" / "files_server.py")
WRITE, READ = "files_write_file", "files_read_thing"


def user_config(llm: FakeLLM, **extra: Any) -> None:
    """The user's own ``etcode.json`` (not a project's: no trust involved): the fake model
    and the ``files`` MCP server."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "etcode"
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "model": "fake/test-model",
        "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}],
        "mcp": {"files": {"command": [sys.executable, SERVER], "timeout": 30_000}},
        **extra,
    }
    (folder / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


def offered(llm: FakeLLM, index: int) -> list[str]:
    """The tool names the model was offered in request ``index``."""
    return [tool["function"]["name"] for tool in llm.requests[index].body.get("tools") or []]


def last_result(llm: FakeLLM, index: int) -> str:
    message = llm.requests[index].body["messages"][-1]
    assert message["role"] == "tool", message
    return str(message["content"])


def write(target: Path) -> Call:
    return Call(WRITE, {"path": str(target), "text": "pwned"})


def test_plan_is_offered_only_read_only_mcp_tools(project: Path, llm: FakeLLM, tmp_path: Path) -> None:
    user_config(llm)
    inside, outside = project / "inside.txt", tmp_path / "outside.txt"
    llm.script(Reply(calls=[write(inside), write(outside), Call(READ, {})]), Reply(text="done"))
    proc = etcode("run", "--agent", "plan", "change things", cwd=project)
    assert proc.returncode == 0, proc.stderr
    names = offered(llm, 0)
    assert READ in names and WRITE not in names
    assert not inside.exists() and not outside.exists()
    sent = json.dumps(llm.requests[1].body["messages"])
    assert "the thing" in sent  # the read-only tool ran, without a question


def test_a_task_to_explore_is_offered_only_read_only_mcp_tools(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    user_config(llm)
    outside = tmp_path / "outside.txt"
    llm.script(
        Reply(calls=[Call("Task", {"description": "look", "prompt": "look", "subagent_type": "explore"})]),
        Reply(calls=[write(outside)]),
        Reply(text="could not"),
        Reply(text="done"),
    )
    proc = etcode("run", "--yes", "look around", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert WRITE in offered(llm, 0)  # build has it (it asks, below) ...
    assert READ in offered(llm, 1) and WRITE not in offered(llm, 1)  # ... explore does not
    assert not outside.exists()


def test_a_writing_mcp_tool_asks_and_a_rule_naming_it_allows_it(project: Path, llm: FakeLLM) -> None:
    """``build`` without a rule: the tool asks, ``etcode run`` refuses (no file); a rule
    that names the tool lets it run."""
    target = project / "written.txt"
    user_config(llm)
    llm.script(Reply(calls=[write(target), Call(READ, {})]), Reply(text="done"))
    proc = etcode("run", "write it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not target.exists()
    sent = json.dumps(llm.requests[1].body["messages"])
    assert "etcode run is non-interactive" in sent and WRITE in sent and "the thing" in sent

    user_config(llm, permission={WRITE: "allow"})
    llm.requests.clear()
    llm.script(Reply(calls=[write(target)]), Reply(text="done"))
    proc = etcode("run", "write it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert target.read_text(encoding="utf-8") == "pwned", last_result(llm, 1)

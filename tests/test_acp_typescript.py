"""``etcode acp`` driven by the protocol's TypeScript SDK — the ``ClientSideConnection``
editors embed — in node: ``@zed-industries/agent-client-protocol`` (the package Zed's
integrations were written against) and its successor ``@agentclientprotocol/sdk``. The
client is ``tests/acp_ts/client.mjs``; it prints one JSON transcript per scenario."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.acp_support import agent_env
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Reply
from tests.require import missing

CLIENT_DIR = Path(__file__).resolve().parent / "acp_ts"
SDKS = ["zed", "current"]
#: The oldest node the SDKs run on (`.ci/run` checks it too).
NODE_MAJOR = 18


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    with open(path, "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


@pytest.fixture(scope="session")
def node_client() -> Path:
    """``tests/acp_ts`` with its pinned packages installed (``npm ci``, once per checkout)."""
    if shutil.which("node") is None or shutil.which("npm") is None:
        missing("node", "node and npm are needed for the TypeScript SDK's client")
    version = subprocess.run(["node", "--version"], capture_output=True, text=True, timeout=60).stdout.strip()
    if int(version.lstrip("v").split(".")[0] or 0) < NODE_MAJOR:
        missing("node", f"node {version} is too old: the TypeScript SDK's client needs node >= {NODE_MAJOR}")
    stamp = CLIENT_DIR / "node_modules" / ".etcode-installed"
    lock = CLIENT_DIR / "package-lock.json"
    with _locked(CLIENT_DIR / ".npm-ci.lock"):
        if not stamp.exists() or stamp.read_text() != lock.read_text():
            done = subprocess.run(
                ["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                cwd=CLIENT_DIR, capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            assert done.returncode == 0, f"npm ci failed in {CLIENT_DIR}:\n{done.stderr[-2000:]}"
            stamp.write_text(lock.read_text())
    return CLIENT_DIR / "client.mjs"


def run_client(
    client: Path, project: Path, sdk: str, steps: list[dict[str, Any]], **options: Any
) -> dict[str, Any]:
    """Run one scenario in node; the transcript it printed."""
    scenario = {
        "sdk": sdk, "python": sys.executable, "cwd": str(project), "env": agent_env(),
        "steps": steps, **options,
    }  # fmt: skip
    path = project.parent / f"scenario-{sdk}.json"
    path.write_text(json.dumps(scenario), encoding="utf-8")
    done = subprocess.run(["node", str(client), str(path)], capture_output=True, text=True, timeout=300)
    assert done.stdout.strip(), f"the client printed nothing (exit {done.returncode}):\n{done.stderr[-3000:]}"
    transcript: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    failed = [s for s in transcript["steps"] if not s["ok"]]
    assert done.returncode == 0, (failed, done.stderr[-3000:])
    assert transcript["exit"] == {"code": 0, "signal": None}, transcript["exit"]
    # every message the agent sent passed the zod schemas, nothing dropped (client.mjs)
    assert transcript["violations"] == [], json.dumps(transcript["violations"], indent=1)[:4000]
    return transcript


def result(transcript: dict[str, Any], op: str) -> Any:
    return next(step["result"] for step in transcript["steps"] if step["op"] == op)


def updates(transcript: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [u["update"] for u in transcript["updates"] if u["update"]["sessionUpdate"] == kind]


def said(transcript: dict[str, Any], kind: str = "agent_message_chunk") -> str:
    return "".join(u["content"]["text"] for u in updates(transcript, kind))


START = [{"op": "initialize"}, {"op": "new"}]


@pytest.mark.parametrize("sdk", SDKS)
def test_tool_turn_with_a_diff(node_client: Path, llm: FakeLLM, project: Path, sdk: str) -> None:
    write_config(project, llm)
    target = project / "app.py"
    target.write_text("x = 1\nprint(x)\n", encoding="utf-8")
    llm.script(
        Reply(text="Editing.", calls=[Call("Edit", {"file_path": "app.py", "old_string": "x = 1", "new_string": "x = 2"}, id="call_e1")]),
        Reply(text="Done."),
    )  # fmt: skip
    transcript = run_client(node_client, project, sdk, [*START, {"op": "prompt", "text": "set x to 2"}])
    assert result(transcript, "initialize")["agentCapabilities"]["loadSession"] is True
    assert result(transcript, "prompt")["stopReason"] == "end_turn"
    assert target.read_text(encoding="utf-8") == "x = 2\nprint(x)\n"
    assert said(transcript) == "Editing.Done."
    [start] = updates(transcript, "tool_call")
    assert start["toolCallId"] == "call_e1" and start["kind"] == "edit" and start["status"] == "in_progress"
    assert start["locations"][0]["path"] == str(target.resolve())
    end = [u for u in updates(transcript, "tool_call_update") if u["toolCallId"] == "call_e1"][-1]
    assert end["status"] == "completed"
    [diff] = end["content"]
    assert diff["type"] == "diff" and diff["path"] == str(target.resolve())
    assert diff["oldText"] == "x = 1\nprint(x)\n" and diff["newText"] == "x = 2\nprint(x)\n"
    session_id = result(transcript, "new")["sessionId"]
    listed = etcode("sessions", "list", "--json", cwd=project)
    assert session_id in listed.stdout, listed.stderr


@pytest.mark.parametrize("sdk", SDKS)
def test_permission_answered_both_ways(node_client: Path, llm: FakeLLM, project: Path, sdk: str) -> None:
    write_config(project, llm, permission={"edit": "ask"})
    a, b = project / "a.txt", project / "b.txt"
    a.write_text("old a\n", encoding="utf-8")
    b.write_text("old b\n", encoding="utf-8")
    llm.script(
        Reply(calls=[Call("Edit", {"file_path": "a.txt", "old_string": "old a", "new_string": "new a"}, id="call_a")]),
        Reply(text="a done"),
        Reply(calls=[Call("Edit", {"file_path": "b.txt", "old_string": "old b", "new_string": "new b"}, id="call_b")]),
        Reply(text="b refused"),
    )  # fmt: skip
    steps = [*START, {"op": "prompt", "text": "edit a"}, {"op": "prompt", "text": "edit b"}]
    transcript = run_client(node_client, project, sdk, steps, answers=["allow_once", "reject_once"])
    assert a.read_text(encoding="utf-8") == "new a\n" and b.read_text(encoding="utf-8") == "old b\n"
    asked = transcript["permissions"]
    assert [p["toolCall"]["toolCallId"] for p in asked] == ["call_a", "call_b"]
    assert {o["kind"] for o in asked[0]["options"]} == {"allow_once", "allow_always", "reject_once"}
    ends = {u["toolCallId"]: u["status"] for u in updates(transcript, "tool_call_update") if "status" in u}
    assert ends == {"call_a": "completed", "call_b": "failed"}


@pytest.mark.parametrize("sdk", SDKS)
def test_cancel_mid_stream(node_client: Path, llm: FakeLLM, project: Path, sdk: str) -> None:
    write_config(project, llm)
    llm.script(
        Fault(keepalive=0.05, cut_after=2, reply=Reply(text="partial answer that never ends", chunk_size=4)),
        Reply(text="next"),
    )  # fmt: skip
    steps = [
        *START,
        {"op": "prompt", "text": "talk", "cancelAfterFirstChunk": True},
        {"op": "prompt", "text": "again"},
    ]
    transcript = run_client(node_client, project, sdk, steps)
    stops = [s["result"]["stopReason"] for s in transcript["steps"] if s["op"] == "prompt"]
    assert stops == ["cancelled", "end_turn"]
    assert said(transcript).startswith("part") and said(transcript).endswith("next")
    history = json.dumps(llm.requests[-1].body["messages"])
    assert "talk" in history and "part" in history  # what was said before the cancel is kept


@pytest.mark.parametrize("sdk", SDKS)
def test_load_replays_a_stored_session(node_client: Path, llm: FakeLLM, project: Path, sdk: str) -> None:
    write_config(project, llm)
    (project / "notes.md").write_text("# Notes\n", encoding="utf-8")
    llm.script(
        Reply(reasoning="let me look", calls=[Call("ReadFile", {"file_path": "notes.md"}, id="call_r")]),
        Reply(text="The notes have a title."),
        Reply(text="still here"),
    )  # fmt: skip
    first = run_client(node_client, project, sdk, [*START, {"op": "prompt", "text": "what is in notes.md?"}])
    session_id = result(first, "new")["sessionId"]
    steps = [
        {"op": "initialize"},
        {"op": "load", "sessionId": session_id},
        {"op": "prompt", "text": "and now?"},
    ]
    second = run_client(node_client, project, sdk, steps)
    load = next(s for s in second["steps"] if s["op"] == "load")
    replayed = [u["update"]["sessionUpdate"] for u in second["updates"][: load["updatesSoFar"]]]
    assert replayed[0] == "user_message_chunk" and "tool_call" in replayed  # before the load answer
    assert load["result"]["modes"]["currentModeId"] == "build"
    assert said(second, "user_message_chunk").startswith("what is in notes.md?")
    assert "let me look" in said(second, "agent_thought_chunk")
    assert said(second).startswith("The notes have a title.") and said(second).endswith("still here")
    history = json.dumps(llm.requests[-1].body["messages"])
    assert "what is in notes.md?" in history and "The notes have a title." in history


@pytest.mark.parametrize("sdk", SDKS)
def test_unsaved_buffers_are_read_and_edits_written_through_the_editor(
    node_client: Path, llm: FakeLLM, project: Path, sdk: str
) -> None:
    write_config(project, llm)
    target = project / "app.py"
    target.write_text("x = 1\n", encoding="utf-8")
    path = str(target.resolve())
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "app.py"}, id="call_r")]),
        Reply(calls=[Call("Edit", {"file_path": "app.py", "old_string": "unsaved", "new_string": "saved"}, id="call_e")]),
        Reply(text="ok"),
    )  # fmt: skip
    steps = [{"op": "initialize", "fs": True}, {"op": "new"}, {"op": "prompt", "text": "go"}]
    transcript = run_client(node_client, project, sdk, steps, buffers={path: "x = 'unsaved'\n"})
    assert "x = 'unsaved'" in json.dumps(llm.requests[1].body["messages"])
    assert ["read", path] in transcript["fs"] and ["write", path] in transcript["fs"]
    assert target.read_text(encoding="utf-8") == "x = 'saved'\n"  # the client saved what etcode sent


@pytest.mark.parametrize("sdk", SDKS)
def test_bad_requests_get_json_rpc_errors_and_the_agent_keeps_serving(
    node_client: Path, llm: FakeLLM, project: Path, sdk: str
) -> None:
    write_config(project, llm)
    llm.script(Reply(text="still serving"))
    steps = [
        *START,
        {"op": "unknown_method", "method": "_etcode/no_such_method", "expectError": True},
        {"op": "wrong_params", "expectError": True},
        {"op": "prompt", "text": "hello"},
    ]
    transcript = run_client(node_client, project, sdk, steps)
    unknown, wrong = (s for s in transcript["steps"] if s["op"] in ("unknown_method", "wrong_params"))
    assert not unknown["ok"] and unknown["error"]["code"] == -32601
    assert not wrong["ok"] and wrong["error"]["code"] == -32602
    assert result(transcript, "prompt")["stopReason"] == "end_turn" and said(transcript) == "still serving"


def test_lockfile_pins_the_sdks() -> None:
    lock = json.loads((CLIENT_DIR / "package-lock.json").read_text(encoding="utf-8"))
    packages = lock["packages"]
    assert packages["node_modules/@zed-industries/agent-client-protocol"]["version"] == "0.4.5"
    assert packages["node_modules/@agentclientprotocol/sdk"]["version"] == "1.9.0"
    assert os.path.exists(CLIENT_DIR / "client.mjs")


@pytest.mark.parametrize("sdk", SDKS)
def test_trust_question_refused_then_trusted(
    node_client: Path, llm: FakeLLM, project: Path, sdk: str
) -> None:
    """Issue 27.10: a folder's risky project settings are asked about in the editor; the
    question passes both SDKs' schema checks, a refusal is the prompt's error."""
    canary = project.parent / "canary"
    command = [sys.executable, "-c", f"open({str(canary)!r}, 'w')"]
    write_config(project, llm, mcp={"helper": {"type": "local", "command": command}})
    llm.script(Reply(text="trusted now"))
    steps = [*START, {"op": "prompt", "text": "hi", "expectError": True}, {"op": "prompt", "text": "again"}]
    transcript = run_client(node_client, project, sdk, steps, answers=["reject_once", "allow_always"])
    refused, accepted = [s for s in transcript["steps"] if s["op"] == "prompt"]
    assert not refused["ok"] and "untrusted project config" in refused["error"]["message"]
    assert "mcp.helper runs" in refused["error"]["message"]
    assert accepted["ok"] and accepted["result"]["stopReason"] == "end_turn"
    assert said(transcript) == "trusted now" and len(llm.requests) == 1
    first, second = transcript["permissions"]
    path = str(project / "etcode.json")
    assert path in first["toolCall"]["title"] and first["toolCall"]["locations"] == [{"path": path}]
    assert "mcp.helper runs" in first["toolCall"]["content"][0]["content"]["text"]
    assert {o["kind"] for o in first["options"]} == {"allow_once", "allow_always", "reject_once"}
    assert second["toolCall"]["title"] == first["toolCall"]["title"]


@pytest.mark.parametrize("sdk", SDKS)
def test_what_issue_30_added_passes_both_sdks_schemas(
    node_client: Path, llm: FakeLLM, project: Path, sdk: str
) -> None:
    """Every message of a session using what issue 30 added validates against the zod
    schemas (``client.mjs`` checks each one the agent sends; a lenient schema that drops a
    part is a violation too): the mode and model config options (and the Zed-era
    ``models``) of session/new, session/set_config_option, the retry thought, the plan-only
    TodoWrite (and a failed one's card), the permission question about the real call with
    its named scope, and live output updates."""
    write_config(
        project, llm, provider={"models": {"test-model": {}, "other-model": {}}}, permission={"bash": "ask"}
    )
    todos = [{"content": "Count", "status": "in_progress"}]
    command = "for i in 1 2 3; do echo line-$i; sleep 0.1; done"
    llm.script(
        Fault(status=429, headers={"retry-after": "0"}),
        Reply(calls=[Call("TodoWrite", {"todos": todos}, id="call_plan"), Call("TodoWrite", {"todos": "no"}, id="call_bad")]),
        Reply(calls=[Call("Bash", {"command": command, "description": "count"}, id="call_sh")]),
        Reply(text="counted"),
        Reply(text="again"),
    )  # fmt: skip
    chosen = (
        [{"op": "set_config_option", "configId": "model", "value": "fake/other-model"}]
        if sdk == "current"
        else []
    )
    steps = [*START, {"op": "prompt", "text": "count"}, *chosen, {"op": "prompt", "text": "more"}]
    transcript = run_client(node_client, project, sdk, steps, answers=["allow_once"])  # no violations
    assert transcript["checked"] >= 10, transcript["checked"]
    new = result(transcript, "new")
    assert [o["id"] for o in new["configOptions"]] == ["mode", "model"]
    assert new["models"]["currentModelId"] == "fake/test-model"
    assert "Rate limited (429)" in said(transcript, "agent_thought_chunk")
    assert [u["entries"][0]["content"] for u in updates(transcript, "plan")] == ["Count"]
    cards = [u["toolCallId"] for u in updates(transcript, "tool_call")]
    assert "call_plan" not in cards and "call_bad" in cards and "call_sh" in cards
    [asked] = transcript["permissions"]
    assert asked["toolCall"]["toolCallId"] == "call_sh"
    assert asked["toolCall"]["rawInput"]["command"] == command
    assert any(o["name"].startswith("Always allow") for o in asked["options"])
    live = [
        u
        for u in updates(transcript, "tool_call_update")
        if u["toolCallId"] == "call_sh" and "status" not in u
    ]
    assert live and "line-1" in live[-1]["content"][0]["content"]["text"]
    ended = [
        u for u in updates(transcript, "tool_call_update") if u["toolCallId"] == "call_sh" and "status" in u
    ]
    assert "line-3" in json.dumps(ended[-1])
    assert said(transcript) == "countedagain"
    if sdk == "current":
        assert [o["currentValue"] for o in result(transcript, "set_config_option")["configOptions"]] == [
            "build",
            "fake/other-model",
        ]
        assert llm.requests[-1].body["model"] == "other-model"

"""``etcode acp``'s start (etcode/acp/startup.py): ``initialize`` is answered before the ACP
SDK's schema models are imported, the answer is the server's own, and the connection takes
over what was read (``session/new`` sent in the same write works)."""

from __future__ import annotations

import asyncio
import json
import select
import subprocess
import sys
from pathlib import Path

import acp
import pytest

from etcode.acp import startup
from etcode.acp.server import EtcodeAcpAgent
from etcode.cli.acp import ACP_OPTIONS, AcpFlags, parse_acp_args
from tests.acp_support import agent_env
from tests.cli_helpers import write_config
from tests.fake_llm import FakeLLM

#: A ``sitecustomize`` for the agent: its import of ``acp.schema`` waits for the gate file
#: (bounded: a broken start fails the test on the missing answer, it does not hang it) or,
#: with the gate ``fail``, raises.
GATE_HOOK = """
import os, sys, time

GATE = os.environ["ETCODE_TEST_SCHEMA_GATE"]


class Gate:
    def find_spec(self, name, path=None, target=None):
        if name != "acp.schema":
            return None
        if os.path.basename(GATE) == "fail":
            raise ImportError("acp.schema is broken (test)")
        deadline = time.monotonic() + 60
        while not os.path.exists(GATE) and time.monotonic() < deadline:
            time.sleep(0.01)
        return None


sys.meta_path.insert(0, Gate())
"""

INIT = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": acp.PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
        "clientInfo": {"name": "test", "version": "1"},
    },
}


def _line(message: dict[str, object]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def _read_reply(proc: subprocess.Popen[bytes], timeout: float = 30.0) -> dict[str, object]:
    assert proc.stdout is not None
    ready, _, _ = select.select([proc.stdout], [], [], timeout)
    assert ready, "etcode acp did not answer"
    line = proc.stdout.readline()
    assert line, "etcode acp closed stdout"
    reply: dict[str, object] = json.loads(line)
    return reply


def _gated_agent(project: Path, gate: Path) -> subprocess.Popen[bytes]:
    hook = project.parent / "hook"
    hook.mkdir(exist_ok=True)
    (hook / "sitecustomize.py").write_text(GATE_HOOK, encoding="utf-8")
    env = agent_env()
    env["PYTHONPATH"] = f"{env['PYTHONPATH']}:{hook}"
    env["ETCODE_TEST_SCHEMA_GATE"] = str(gate)
    return subprocess.Popen(
        [sys.executable, "-m", "etcode", "acp"], cwd=project, env=env, bufsize=0,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip


def _server_result(protocol_version: int) -> dict[str, object]:
    """The server's ``InitializeResponse`` as the SDK's connection writes a result."""
    response = asyncio.run(EtcodeAcpAgent().initialize(protocol_version=protocol_version))
    result: dict[str, object] = response.model_dump(
        mode="json", by_alias=True, exclude_none=True, exclude_unset=True
    )
    return result


def test_initialize_is_answered_before_the_schema_loads_then_the_sdk_takes_over(
    llm: FakeLLM, project: Path
) -> None:
    write_config(project, llm)
    gate = project.parent / "schema-gate"
    proc = _gated_agent(project, gate)
    try:
        assert proc.stdin is not None
        new = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": str(project), "mcpServers": []},
        }
        proc.stdin.write(_line(INIT) + _line(new))  # back to back, in one write
        proc.stdin.flush()
        ready = _read_reply(proc)  # acp.schema is held at the gate: its import has not ended
        assert ready == {"jsonrpc": "2.0", "id": 0, "result": _server_result(acp.PROTOCOL_VERSION)}
        gate.touch()
        session = _read_reply(proc)
        while "method" in session:  # notifications (the commands offered) may come first
            session = _read_reply(proc)
        assert session["id"] == 1 and "sessionId" in session["result"], session  # type: ignore[operator]
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()


def test_a_failed_sdk_import_is_one_line_and_exit_1(project: Path) -> None:
    proc = _gated_agent(project, project.parent / "fail")
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(_line(INIT))
        proc.stdin.flush()
        assert _read_reply(proc)["id"] == 0
        assert proc.wait(timeout=60) == 1
        stderr = proc.stderr.read().decode()
        assert stderr == "error: etcode acp: the ACP library did not load: acp.schema is broken (test)\n"
    finally:
        proc.kill()
        proc.wait()


def test_sigterm_while_the_sdk_loads_is_exit_130(project: Path) -> None:
    proc = _gated_agent(project, project.parent / "schema-gate")  # the gate stays closed
    try:
        assert proc.stdin is not None and proc.stderr is not None
        proc.stdin.write(_line(INIT))
        proc.stdin.flush()
        assert _read_reply(proc)["id"] == 0
        proc.terminate()
        assert proc.wait(timeout=60) == 130
        assert proc.stderr.read().decode().strip() == "interrupted"
    finally:
        proc.kill()
        proc.wait()


def test_the_answer_is_the_servers_initialize_response() -> None:
    assert startup.PROTOCOL_VERSION == acp.PROTOCOL_VERSION
    for version in (0, acp.PROTOCOL_VERSION, acp.PROTOCOL_VERSION + 5):
        assert startup.initialize_result(version) == _server_result(version)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 1, "method": "session/new", "params": {}},
        {"jsonrpc": "2.0", "method": "initialize", "params": {"protocolVersion": 1}},  # a notification
        {"jsonrpc": "2.0", "id": True, "method": "initialize", "params": {"protocolVersion": 1}},
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "1"}},
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": 70000}},
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": 1, "clientInfo": 3},
        },
        {"jsonrpc": "2.0", "id": 1, "method": "initialize"},
        [INIT],
    ],
)
def test_anything_but_a_plain_initialize_is_left_to_the_sdk(message: object) -> None:
    assert startup.plain_initialize(message) is None  # type: ignore[arg-type]


def test_stdin_at_its_end_from_the_start_exits_0(project: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "etcode", "acp"], cwd=project, env=agent_env(), stdin=subprocess.DEVNULL,
        capture_output=True, timeout=60,
    )  # fmt: skip
    assert (done.returncode, done.stdout, done.stderr) == (0, b"", b"")


def test_the_quick_reading_of_the_flags_is_typers() -> None:
    import typer.main

    from etcode.cli.app import build_app

    command = typer.main.get_command(build_app())
    acp_command = command.commands["acp"]  # type: ignore[attr-defined]
    typer_names = {opt: param.name for param in acp_command.params for opt in param.opts}
    for option in ACP_OPTIONS:
        for name in option.names:
            assert typer_names[name] == option.field
    assert parse_acp_args([]) == AcpFlags()
    assert parse_acp_args(
        ["-m", "a/b", "--agent=plan", "--sandbox", "off", "--trust", "--debug"]
    ) == AcpFlags(model="a/b", agent="plan", sandbox="off", trust=True, debug=True)
    for odd in (["--help"], ["--model"], ["-m", "--trust"], ["--modle", "x"], ["extra"], ["--trust=1"]):
        assert parse_acp_args(odd) is None, odd


def test_the_lean_schema_import_leaves_pydantic_as_it_was() -> None:
    import pydantic
    from pydantic._internal import _fields

    def state() -> tuple[dict[str, object], object]:
        return dict(pydantic.BaseModel.model_config), _fields.extract_docstrings_from_cls  # type: ignore[attr-defined]

    before = state()
    with startup._lean_model_classes():

        class Made(pydantic.BaseModel):
            model_config = pydantic.ConfigDict(use_attribute_docstrings=True)
            x: int
            """An x."""

    assert state() == before

    class After(pydantic.BaseModel):
        model_config = pydantic.ConfigDict(use_attribute_docstrings=True)
        y: int
        """A y."""

    assert Made.model_validate({"x": "1"}).x == 1  # built on first use, validates as ever
    with pytest.raises(pydantic.ValidationError):
        Made.model_validate({"x": "one"})
    assert Made.model_fields["x"].description is None and After.model_fields["y"].description == "A y."


#: In a fresh interpreter: the SDK thread, then its warm-up, as ``etcode acp`` starts them.
WARM_UP = """
import json, sys
from etcode.acp import startup
if sys.argv[1:] == ["session-opened"]:
    startup.stop_warming()
sdk = startup.SdkImport()
sdk.wait()
assert sdk.warmed(timeout=120), "the warm-up did not end"
schema = sys.modules["acp.schema"]
print(json.dumps({
    "missing": [name for name in startup.SESSION_MODULES if name not in sys.modules],
    "unbuilt": [name for name in startup.SESSION_MODELS if not getattr(schema, name).__pydantic_complete__],
}))
"""


def test_after_the_sdk_the_thread_loads_what_session_new_needs(tmp_path: Path) -> None:
    """An editor that sends ``session/new`` a moment after ``initialize`` finds the session's
    modules imported and its schema classes built (a renamed module would fail here, not
    silently slow the start)."""
    done = subprocess.run(
        [sys.executable, "-c", WARM_UP], capture_output=True, text=True, timeout=180, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == {"missing": [], "unbuilt": []}
    for name in startup.SESSION_MODULES:  # each is a real module here too
        __import__(name)


def test_a_session_being_opened_stops_the_warm_up(tmp_path: Path) -> None:
    """Once ``session/new`` runs, the thread stops warming (the session imports what it
    needs itself, without a thread competing for the interpreter)."""
    done = subprocess.run(
        [sys.executable, "-c", WARM_UP, "session-opened"],
        capture_output=True, text=True, timeout=180, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    left = json.loads(done.stdout.strip().splitlines()[-1])
    assert "etcode.api" in left["missing"] and left["unbuilt"] == list(startup.SESSION_MODELS)

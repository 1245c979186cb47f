"""MCP servers as tools: the real `mcp-server-time` and a small test server for failures."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from etcode.config.schema import validate
from etcode.mcp.client import McpServer, import_sdk
from etcode.mcp.config import McpServerSpec, server_specs
from etcode.mcp.manager import McpManager, start_mcp
from etcode.mcp.naming import MAX_LENGTH, tool_name
from etcode.mcp.results import to_tool_result
from etcode.util.errors import ConfigError
from tests.fake_llm import Call, FakeLLM, Reply
from tests.process_support import hold_pipe_connect, live_with, survivors, token, wait_for_file

SERVER = str(Path(__file__).resolve().parent / "mcp_servers" / "error_server.py")
TIME = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]
#: The time server as config: 30 s to start, not the default 5 (a loaded CI box needs more).
TIME_ENTRY = {"command": TIME, "timeout": 30_000}


def local(name: str, *args: str, timeout: float = 20.0) -> McpServerSpec:
    return McpServerSpec(name, "local", (sys.executable, SERVER, *args), timeout=timeout)


# ---- units ---------------------------------------------------------------------------------


def test_tool_names_are_sanitised_unique_and_short() -> None:
    taken: set[str] = set()
    assert tool_name("time", "get_current_time", taken) == "time_get_current_time"
    assert tool_name("my server", "weird.name/tool", taken) == "my_server_weird_name_tool"
    assert tool_name("my server", "weird name tool", taken) == "my_server_weird_name_tool_2"
    long = tool_name("s" * 40, "t" * 40)
    assert len(long) == MAX_LENGTH and long != tool_name("s" * 40, "t" * 41)


def test_results_become_tool_results() -> None:
    text = to_tool_result({"content": [{"type": "text", "text": "hi"}]}, "s", "t")
    assert (text.output, text.is_error) == ("hi", False)
    structured = to_tool_result({"content": [], "structuredContent": {"sum": 3}}, "s", "t")
    assert json.loads(structured.output) == {"sum": 3} and structured.data["structured"] == {"sum": 3}
    error = to_tool_result({"content": [{"type": "text", "text": "boom"}], "isError": True}, "s", "t")
    assert error.is_error and error.output == "boom"
    image = to_tool_result(
        {"content": [{"type": "image", "data": "AAAA", "mimeType": "image/png"}]}, "s", "t"
    )
    assert image.output == "[image image/png, 3 bytes]"
    assert to_tool_result({"content": [], "isError": True}, "s", "t").output == "t failed on the MCP server"


def test_config_shapes_and_precise_errors() -> None:
    config = validate(
        {
            "mcp": {
                "time": {"type": "local", "command": ["uvx", "mcp-server-time"], "timeout": 2500},
                "docs": {"url": "https://example.com/mcp", "headers": {"A": "b"}},
                "off": {"enabled": False},
            }
        },
        "etcode.json",
    )
    specs = {s.name: s for s in server_specs(config.mcp)}
    assert specs["time"].command == ("uvx", "mcp-server-time") and specs["time"].timeout == 2.5
    assert (
        specs["docs"].type == "remote"
        and specs["docs"].headers == {"A": "b"}
        and specs["docs"].timeout == 5.0
    )
    assert not specs["off"].enabled
    cases = {
        '"command"': {"time": {"type": "local"}},
        'unknown key "mcp.t.comand" (did you mean "command"?)': {"t": {"comand": ["x"]}},
        "mcp.t.command: Input should be a valid list": {"t": {"command": "uvx x"}},
        '"url" must start with http://': {"t": {"type": "remote", "url": "ftp://x"}},
        'are for "type": "remote" servers': {"t": {"url": "https://x", "command": ["a"]}},
        "mcp.t.timeout": {"t": {"command": ["a"], "timeout": 0}},
        'needs "type": "local" with "command"': {"t": {}},
        "whose first item is the program": {"t": {"command": [" "]}},
        '"command" and "environment" are for "type": "local"': {
            "t": {"type": "remote", "url": "https://x", "environment": {"A": "b"}}
        },
        'a remote server needs "url"': {"t": {"type": "remote"}},
    }
    for expected, servers in cases.items():
        with pytest.raises(ConfigError) as err:
            validate({"mcp": servers}, "etcode.json")
        assert expected in str(err.value) and str(err.value).startswith("etcode.json: ")


async def test_nothing_configured_starts_nothing() -> None:
    assert await start_mcp({}) is None
    assert await start_mcp({"x": {"enabled": False, "command": ["nope"]}}) is None


# ---- a real server nobody here wrote --------------------------------------------------------


async def test_time_server_lists_and_calls() -> None:
    manager = McpManager([McpServerSpec("time", "local", tuple(TIME), timeout=30)])
    await manager.start()
    try:
        tools = {t.name: t for t in manager.tools()}
        assert set(tools) == {"time_get_current_time", "time_convert_time"}
        current = tools["time_get_current_time"]
        assert current.is_read_only  # the server marks it readOnlyHint
        schema = current.schema()
        assert schema.parameters["type"] == "object" and "timezone" in schema.parameters["properties"]
        result = await current.run({"timezone": "Asia/Tokyo"}, None)  # type: ignore[arg-type]
        assert not result.is_error and json.loads(result.output)["timezone"] == "Asia/Tokyo"
        bad = await current.run({"timezone": "Not/AZone"}, None)  # type: ignore[arg-type]
        assert bad.is_error
        assert manager.warnings() == []
    finally:
        await manager.aclose()
    assert manager.servers[0].status == "closed"


# ---- the test server: failures ---------------------------------------------------------------


async def test_test_server_tools_failures_and_death() -> None:
    server = McpServer(local("test"))
    assert await server.start(), server.error
    manager = McpManager([])
    manager.servers = [server]
    tools = {t.name: t for t in manager.tools()}
    try:
        assert (
            "test_weird_name_tool" in tools and tools["test_weird_name_tool"].remote_name == "weird.name/tool"
        )
        assert tools["test_echo"].is_read_only and not tools["test_add"].is_read_only
        echo = await tools["test_echo"].run({"text": "hi"}, None)  # type: ignore[arg-type]
        assert echo.output == "echo: hi"
        added = await tools["test_add"].run({"a": 2, "b": 3}, None)  # type: ignore[arg-type]
        assert json.loads(added.output) == {"sum": 5}
        failed = await tools["test_fail"].run({}, None)  # type: ignore[arg-type]
        assert failed.is_error
        from etcode.tools.base import ToolError

        with pytest.raises(ToolError, match="stopped during the call to die"):
            await asyncio.wait_for(tools["test_die"].run({}, None), 20)  # type: ignore[arg-type]
        assert server.status == "failed" and "dying mid-call" in (server.error or "")
        with pytest.raises(ToolError, match="is not connected"):
            await tools["test_echo"].run({"text": "again"}, None)  # type: ignore[arg-type]
    finally:
        await server.aclose()


async def test_hanging_server_times_out_and_others_still_start() -> None:
    await import_sdk()  # the 1 s limit is for the hanging server, not for loading the SDK
    manager = McpManager(
        [local("hang", "hang", timeout=1.0), McpServerSpec("time", "local", tuple(TIME), timeout=30)]
    )
    started = time.monotonic()
    await manager.start()
    try:
        hang, time_server = manager.servers
        assert hang.status == "failed" and "did not answer within 1s" in (hang.error or "")
        assert time_server.status == "connected"
        assert manager.warnings() == ["MCP server 'hang' skipped: did not answer within 1s"]
        assert [t.name for t in manager.tools()] == ["time_get_current_time", "time_convert_time"]
    finally:
        await manager.aclose()
    assert time.monotonic() - started < 30


async def test_hang_alone_is_bounded_by_its_timeout() -> None:
    server = McpServer(local("hang", "hang", timeout=1.0))
    started = time.monotonic()
    assert not await server.start()
    # Bounded by its 1 s timeout, not by the hanging server (which never answers): 5x margin.
    assert time.monotonic() - started < 5.0
    await server.aclose()


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        (local("crash", "crash"), "missing API token"),
        (McpServerSpec("nope", "local", ("etcode-no-such-mcp-binary",)), "command not found"),
    ],
)
async def test_servers_that_cannot_start_are_reported(spec: McpServerSpec, expected: str) -> None:
    server = McpServer(spec)
    assert not await server.start()
    assert server.status == "failed" and expected in (server.error or "")
    await server.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


async def test_remote_server_over_streamable_http() -> None:
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, SERVER, "http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.1)
        spec = McpServerSpec("web", "remote", url=f"http://127.0.0.1:{port}/mcp", headers={"X-Test": "1"})
        manager = McpManager([spec])
        await manager.start()
        try:
            assert manager.warnings() == []
            tools = {t.name: t for t in manager.tools()}
            result = await tools["web_echo"].run({"text": "over http"}, None)  # type: ignore[arg-type]
            assert result.output == "echo: over http"
        finally:
            await manager.aclose()
    finally:
        proc.terminate()
        proc.wait(timeout=10)


# ---- end to end: `etcode run` and `etcode mcp list` ------------------------------------------


def _etcode(*args: str, cwd: Path, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "etcode", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env=os.environ.copy(),
        stdin=subprocess.DEVNULL,
    )


def _config(project: Path, llm: FakeLLM | None, **extra: object) -> None:
    config: dict[str, object] = dict(extra)
    if llm is not None:
        config["model"] = "fake/test-model"
        config["provider"] = [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}]
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


def test_run_offers_mcp_tools_routes_calls_and_reports_a_failed_server(tmp_path: Path) -> None:
    with FakeLLM() as llm:
        _config(
            tmp_path,
            llm,
            mcp={
                "time": {"type": "local", **TIME_ENTRY},
                "broken": {"command": [sys.executable, SERVER, "crash"]},
                "off": {"command": ["etcode-no-such-binary"], "enabled": False},
            },
            permission={"time_*": "allow"},
        )
        llm.script(
            Reply(calls=[Call("time_get_current_time", {"timezone": "Asia/Tokyo"})]),
            Reply(text="It is morning in Tokyo."),
        )
        proc = _etcode("run", "--trust", "what time is it in Tokyo?", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout == "It is morning in Tokyo.\n"
        assert "warning: MCP server 'broken' skipped:" in proc.stderr and "missing API token" in proc.stderr
        assert "● time_get_current_time (Asia/Tokyo)" in proc.stderr
        names = [t["function"]["name"] for t in llm.requests[0].body["tools"]]
        assert "time_get_current_time" in names and "time_convert_time" in names
        assert not any(n.startswith(("broken_", "off_")) for n in names)
        tool_message = llm.requests[1].body["messages"][-1]
        assert tool_message["role"] == "tool" and '"timezone": "Asia/Tokyo"' in tool_message["content"]


def test_mcp_tools_obey_permission_rules(tmp_path: Path) -> None:
    with FakeLLM() as llm:
        _config(tmp_path, llm, mcp={"time": TIME_ENTRY}, permission={"time_*": "deny"})
        llm.script(Reply(calls=[Call("time_get_current_time", {"timezone": "UTC"})]), Reply(text="ok"))
        proc = _etcode("run", "--trust", "time?", cwd=tmp_path)
        assert proc.returncode == 0, proc.stderr
        result = llm.requests[1].body["messages"][-1]["content"]
        assert "denied by permission rule" in result and '"time_*": "deny"' in result


def test_mcp_list_shows_status_and_tools(tmp_path: Path) -> None:
    _config(
        tmp_path,
        None,
        mcp={
            "time": TIME_ENTRY,
            "hang": {"command": [sys.executable, SERVER, "hang"], "timeout": 1000},
            "docs": {"type": "remote", "url": "https://example.com/mcp", "enabled": False},
        },
    )
    proc = _etcode("mcp", "list", "--trust", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("time (local: ") and lines[0].endswith("connected, 2 tools")
    assert "  ● time_get_current_time [read-only] - Get current time in a specific timezone" in lines
    assert any(
        line.startswith("hang (local:") and "failed: did not answer within 1s" in line for line in lines
    )
    assert "docs (remote: https://example.com/mcp) disabled" in lines
    as_json = json.loads(_etcode("mcp", "list", "--json", cwd=tmp_path).stdout)
    status = {s["name"]: s["status"] for s in as_json["servers"]}
    assert status == {"time": "connected", "hang": "failed", "docs": "disabled"}


def test_run_without_mcp_config_never_imports_the_sdk(tmp_path: Path) -> None:
    with FakeLLM() as llm:
        _config(tmp_path, llm)
        llm.script(Reply(text="hi"))
        proc = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "etcode", "run", "hello"],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
        assert "etcode.engine.loop" in imported
        assert not [name for name in imported if name.split(".")[0] == "mcp"]


# ---- no server process outlives a cancelled start or a close --------------------------------


def _grouped(tmp_path: Path, mark: str, leader: str, timeout: float = 30.0) -> McpServerSpec:
    """A local server started by ``sh``: a background child first (its pid in bg.pid),
    then ``leader`` in the shell's place; both carry ``mark``."""
    script = f"sleep {mark} & echo $! > {tmp_path}/bg.pid; exec {leader}"
    return McpServerSpec("grouped", "local", ("sh", "-c", script), timeout=timeout)


def _mute(mark: str) -> str:
    """A leader that reads its stdin to the end, never answers, and exits on EOF."""
    return f"{sys.executable} -c 'import sys; sys.stdin.read()' {mark}"


@pytest.mark.parametrize("how", ["caller", "timeout"])
async def test_a_cancel_while_a_local_server_spawns_leaves_no_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """The spawn is held in asyncio's pipe connection until the server's shell has started
    its child; then the start is cancelled (``caller``) or times out (``timeout``: the
    owner's cancel scope). asyncio alone would SIGKILL the leader only."""
    await import_sdk()  # the 1 s start limit is for the spawn, not for loading the SDK
    entered, release = hold_pipe_connect(monkeypatch)
    mark = token()
    server = McpServer(_grouped(tmp_path, mark, _mute(mark), timeout=30.0 if how == "caller" else 1.0))
    start = asyncio.create_task(server.start())
    await asyncio.wait_for(entered.wait(), 60)
    await wait_for_file(tmp_path / "bg.pid")
    if how == "caller":
        start.cancel()
    else:
        await asyncio.wait({start}, timeout=60)  # ends at the 1 s start limit
    release.set()
    await asyncio.wait({start}, timeout=30)
    await server.aclose()
    assert await survivors(mark) == []
    assert start.cancelled() if how == "caller" else start.result() is False


async def test_a_cancel_at_any_turn_of_a_server_start_leaves_no_process(tmp_path: Path) -> None:
    """``start()`` is cancelled 0, 1, 2, ... event-loop turns after its owner task exists
    (the spawn, the pipes, the handshake): no process of the server is left."""
    left: dict[int, list[int]] = {}
    for turns in range(12):
        mark = token()
        server = McpServer(_grouped(tmp_path, mark, _mute(mark)))
        start = asyncio.create_task(server.start())
        while server._owner is None and not start.done():
            await asyncio.sleep(0)
        for _ in range(turns):
            await asyncio.sleep(0)
        start.cancel()
        await asyncio.wait({start}, timeout=30)
        if found := await survivors(mark):
            left[turns] = found
        await server.aclose()
    assert left == {}, f"server processes left after a cancel at these turns: {left}"


async def test_closing_a_server_also_ends_the_children_it_left() -> None:
    """A server that exits when its stdin closes leaves its background child to the SDK,
    which only kills the group of a server that outlives its stdin."""
    mark = token()
    script = f"sleep {mark} & exec {sys.executable} {SERVER} stdio"
    server = McpServer(McpServerSpec("kids", "local", ("sh", "-c", script), timeout=30.0))
    assert await server.start(), server.error
    assert live_with(mark), "the background child runs while the server does"
    await server.aclose()
    assert await survivors(mark) == []

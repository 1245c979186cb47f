"""``etcode acp`` as an editor sees it: ``python benchmarks/bench_acp.py [--runs N]``.

Spawns ``python -m etcode acp`` with the ACP SDK's client side (as in tests/test_acp.py) and
times, against the fake LLM server on 127.0.0.1: spawn → ``initialize`` answered,
``session/new``, a prompt → its first ``agent_message_chunk``, the whole one-answer prompt, and
a 20-step tool loop (ReadFile calls) with every ``tool_call``/``tool_call_update`` delivered.

The start (spawn → ``initialize`` answered, then ``session/new`` sent at once → answered) is
also timed with a plain JSON-RPC client on pipes, for etcode and, beside it, for Claude
Code's ACP adapter (``@zed-industries/claude-code-acp``) on the same machine when it is
installed in ``ADAPTER_DIR`` (see :data:`ADAPTER_INSTALL`); it runs with a dummy
``ANTHROPIC_API_KEY`` (``initialize`` and ``session/new`` need no login) and a fresh HOME.
Prints the medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from acp import PROTOCOL_VERSION, text_block  # noqa: E402

from tests.acp_support import RecordingClient, acp_agent, capabilities  # noqa: E402
from tests.fake_llm import Call, FakeLLM, Reply  # noqa: E402

STEPS = 20
ADAPTER_PACKAGE = "@zed-industries/claude-code-acp"
ADAPTER_DIR = Path.home() / ".cache" / "etcode-bench" / "claude-code-acp"
ADAPTER_INSTALL = f"npm install --prefix {ADAPTER_DIR} {ADAPTER_PACKAGE}"
START_PHASES = ("initialize", "session/new", "first session")
#: How long one start may take before the bench gives up on it.
START_TIMEOUT = 60.0


async def _reply(proc: asyncio.subprocess.Process, request_id: int) -> dict[str, object]:
    """The response to ``request_id`` (notifications before it are skipped)."""
    assert proc.stdout is not None
    while True:
        line = await proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the agent closed stdout before answering request {request_id}")
        message = json.loads(line)
        if message.get("id") == request_id:
            if "result" not in message:
                raise RuntimeError(f"request {request_id} failed: {message.get('error')}")
            return dict(message)


async def one_start(command: list[str], cwd: Path, env: dict[str, str]) -> dict[str, float]:
    """Spawn ``command``; seconds to the ``initialize`` answer, from it to the ``session/new``
    answer (sent as soon as initialize is answered), and from the spawn to that answer."""
    initialize = {
        "protocolVersion": PROTOCOL_VERSION,
        "clientCapabilities": {"fs": {"readTextFile": True, "writeTextFile": True}, "terminal": True},
    }
    started = time.perf_counter()
    proc = await asyncio.create_subprocess_exec(
        *command, cwd=cwd, env=env, limit=50 * 1024 * 1024,
        stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
    )  # fmt: skip
    assert proc.stdin is not None
    try:
        proc.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": initialize}).encode()
            + b"\n"
        )
        await asyncio.wait_for(_reply(proc, 0), START_TIMEOUT)
        ready = time.perf_counter()
        new = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "session/new",
            "params": {"cwd": str(cwd), "mcpServers": []},
        }
        proc.stdin.write(json.dumps(new).encode() + b"\n")
        await asyncio.wait_for(_reply(proc, 1), START_TIMEOUT)
        done = time.perf_counter()
    finally:
        proc.stdin.close()
        try:
            await asyncio.wait_for(proc.wait(), 10)
        except TimeoutError:
            proc.kill()
            await proc.wait()
    return {"initialize": ready - started, "session/new": done - ready, "first session": done - started}


def adapter_command() -> list[str] | None:
    """Claude Code's ACP adapter as installed by :data:`ADAPTER_INSTALL`; None when it is not."""
    program = ADAPTER_DIR / "node_modules" / ".bin" / "claude-code-acp"
    return [str(program)] if program.exists() else None


def adapter_version() -> str:
    package = ADAPTER_DIR / "node_modules" / ADAPTER_PACKAGE / "package.json"
    try:
        return str(json.loads(package.read_text(encoding="utf-8"))["version"])
    except (OSError, ValueError, KeyError):
        return "?"


async def measure_starts(runs: int, project: Path) -> dict[str, dict[str, float] | None]:
    """Median start figures of etcode and of the adapter (None: not installed). The runs
    alternate, so both see the same load."""
    etcode_env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
        # Bytecode cached, as an installed etcode has it (pip compiles at install, a first run
        # writes it): else a PYTHONDONTWRITEBYTECODE=1 in the environment compiles etcode's
        # modules at every spawn (~0.3 s). The warm-up run below writes this cache.
        "PYTHONPYCACHEPREFIX": str(project.parent / "pycache"),
    }
    etcode_env.pop("PYTHONDONTWRITEBYTECODE", None)
    etcode = [sys.executable, "-m", "etcode", "acp"]
    adapter = adapter_command()
    home = project.parent / "adapter-home"
    home.mkdir(exist_ok=True)
    adapter_env = {**os.environ, "HOME": str(home), "ANTHROPIC_API_KEY": "sk-ant-dummy-for-the-bench"}
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        adapter_env["IS_SANDBOX"] = "1"  # Claude Code refuses to run as root otherwise
    ours: list[dict[str, float]] = []
    theirs: list[dict[str, float]] = []
    for run in range(runs + 1):  # the first run of each warms the disk (and bytecode) cache
        figures = await one_start(etcode, project, etcode_env)
        if run:
            ours.append(figures)
        if adapter is not None:
            figures = await one_start(adapter, project, adapter_env)
            if run:
                theirs.append(figures)

    def medians(results: list[dict[str, float]]) -> dict[str, float] | None:
        return {key: statistics.median(r[key] for r in results) for key in START_PHASES} if results else None

    return {"etcode": medians(ours), "claude-code-acp": medians(theirs)}


async def one_run(llm: FakeLLM, project: Path) -> dict[str, float]:
    client = RecordingClient()
    figures: dict[str, float] = {}
    started = time.perf_counter()
    async with acp_agent(client, project) as (conn, _proc):
        await conn.initialize(protocol_version=PROTOCOL_VERSION, client_capabilities=capabilities())
        figures["initialize"] = time.perf_counter() - started
        mark = time.perf_counter()
        session = await conn.new_session(cwd=str(project), mcp_servers=[])
        figures["session/new"] = time.perf_counter() - mark
        llm.script(Reply(text="ok " * 50))
        client.update_seen.clear()
        mark = time.perf_counter()
        prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id, prompt=[text_block("hi")]))
        await client.update_seen.wait()
        figures["first chunk"] = time.perf_counter() - mark
        await prompt
        figures["one answer"] = time.perf_counter() - mark
        calls = [Reply(calls=[Call("ReadFile", {"file_path": "a.txt"})]) for _ in range(STEPS)]
        llm.script(*calls, Reply(text="done"))
        mark = time.perf_counter()
        await conn.prompt(session_id=session.session_id, prompt=[text_block("loop")])
        figures[f"{STEPS}-step loop"] = time.perf_counter() - mark
        assert len(client.of_kind("tool_call")) == STEPS
    return figures


async def main_async(runs: int) -> tuple[dict[str, float], dict[str, dict[str, float] | None]]:
    with FakeLLM() as llm, tempfile.TemporaryDirectory(prefix="etcode-bench-acp-") as tmp:
        project = Path(tmp) / "project"
        project.mkdir()
        (project / "a.txt").write_text("hello\n" * 100, encoding="utf-8")
        config = {
            "model": "fake/test-model",
            "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}],
        }
        (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
        for var, sub in (("HOME", ""), ("XDG_DATA_HOME", "data"), ("XDG_CONFIG_HOME", "config")):
            os.environ[var] = str(Path(tmp) / sub)
        results = [await one_run(llm, project) for _ in range(runs + 1)][1:]  # the first creates the db
        starts = await measure_starts(runs, project)
    return {key: statistics.median(r[key] for r in results) for key in results[0]}, starts


def measure(runs: int) -> dict[str, float]:
    """Median seconds of each phase over ``runs`` sessions."""
    return asyncio.run(main_async(runs))[0]


def measure_all(runs: int) -> tuple[dict[str, float], dict[str, dict[str, float] | None]]:
    """:func:`measure` and the start figures of etcode and of Claude Code's adapter."""
    return asyncio.run(main_async(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    runs = parser.parse_args().runs
    figures, starts = measure_all(runs)
    print(f"SDK client, median of {runs} runs:")
    for name, seconds in figures.items():
        print(f"{name:>16}: {seconds * 1000:7.1f} ms")
    print(f"start (plain JSON-RPC client, median of {runs} runs): etcode | Claude Code's ACP adapter")
    ours, theirs = starts["etcode"], starts["claude-code-acp"]
    for phase in START_PHASES:
        mine = f"{ours[phase] * 1000:7.1f} ms" if ours else "failed"
        if theirs is not None:
            other = f"{theirs[phase] * 1000:7.1f} ms ({ADAPTER_PACKAGE} {adapter_version()})"
        else:
            other = f"not measured (install with: {ADAPTER_INSTALL})"
        print(f"{phase:>16}: {mine} | {other}")


if __name__ == "__main__":
    main()

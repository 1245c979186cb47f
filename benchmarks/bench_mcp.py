"""MCP start-up never blocks a run for longer than its timeout.

A session with three configured MCP servers — the real ``mcp-server-time``, the test
suite's server, and one that never answers ``initialize`` — must send its first model
request within the configured timeout + 0.5 s (target). Prints the figure for a few
runs, plus the time the two healthy servers took to connect.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from etcode.api import Agent  # noqa: E402
from etcode.config.schema import validate  # noqa: E402
from tests.fake_llm import FakeLLM, Recorded, Reply  # noqa: E402

TIMEOUT_MS = 5000
RUNS = 3
SERVER = str(ROOT / "tests" / "mcp_servers" / "error_server.py")


async def one_run(llm: FakeLLM, directory: Path) -> tuple[float, dict[str, float | None], list[str]]:
    first: list[float] = []

    def answer(recorded: Recorded) -> Reply:
        first.append(time.monotonic())
        return Reply(text="ok")

    llm.script(answer)
    config = validate(
        {
            "model": "fake/m",
            "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "k"}],
            "mcp": {
                "time": {"command": [sys.executable, "-m", "mcp_server_time"], "timeout": TIMEOUT_MS},
                "test": {"command": [sys.executable, SERVER], "timeout": TIMEOUT_MS},
                "hang": {"command": [sys.executable, SERVER, "hang"], "timeout": TIMEOUT_MS},
            },
        },
        "bench",
    )
    agent = Agent(config=config, directory=directory)
    started = time.monotonic()
    warnings: list[str] = []
    async for event in agent.stream("hello"):
        if event.type == "warning":
            warnings.append(event.message)  # type: ignore[attr-defined]
    runtime = agent._runtime
    connect = {s.name: s.started_in for s in runtime.mcp.servers} if runtime and runtime.mcp else {}
    await agent.aclose()
    return first[0] - started, connect, warnings


async def main() -> None:
    limit = TIMEOUT_MS / 1000 + 0.5
    figures: list[float] = []
    with FakeLLM() as llm, tempfile.TemporaryDirectory() as tmp:
        for run in range(1, RUNS + 1):
            elapsed, connect, warnings = await one_run(llm, Path(tmp))
            figures.append(elapsed)
            healthy = ", ".join(f"{k} {v:.2f}s" for k, v in connect.items() if v is not None)
            print(
                f"run {run}: first model request after {elapsed:.2f}s (connected: {healthy}; {len(warnings)} warning)"
            )
            for message in warnings:
                print(f"  warning: {message}")
    worst = max(figures)
    print(
        f"first request with 3 MCP servers (1 hanging), timeout {TIMEOUT_MS / 1000:g}s: "
        f"median {statistics.median(figures):.2f}s, worst {worst:.2f}s (target < {limit:.1f}s) "
        + ("OK" if worst < limit else "TOO SLOW")
    )


if __name__ == "__main__":
    asyncio.run(main())

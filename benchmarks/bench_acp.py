"""``etcode acp`` as an editor sees it: ``python benchmarks/bench_acp.py [--runs N]``.

Spawns ``python -m etcode acp`` with the ACP SDK's client side (as in tests/test_acp.py) and
times, against the fake LLM server on 127.0.0.1: spawn → ``initialize`` answered,
``session/new``, a prompt → its first ``agent_message_chunk``, the whole one-answer prompt, and
a 20-step tool loop (ReadFile calls) with every ``tool_call``/``tool_call_update`` delivered.
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


async def main_async(runs: int) -> dict[str, float]:
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
    return {key: statistics.median(r[key] for r in results) for key in results[0]}


def measure(runs: int) -> dict[str, float]:
    """Median seconds of each phase over ``runs`` sessions."""
    return asyncio.run(main_async(runs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    figures = measure(parser.parse_args().runs)
    for name, seconds in figures.items():
        print(f"{name:>16}: {seconds * 1000:7.1f} ms")


if __name__ == "__main__":
    main()

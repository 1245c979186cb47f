"""Loop overhead per step (target: under 5 ms against a zero-latency fake server).

Three figures, each a median over repeated runs of a 100-step tool loop:
- in-process: a scripted provider with no HTTP (the loop, scheduler and tool alone);
- HTTP step: the real OpenAI adapter against the fake server on 127.0.0.1;
- raw request: the same adapter streaming the same answer outside the loop.
The loop's own overhead is the HTTP step minus the raw request.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from etcode.engine.limits import LoopLimits  # noqa: E402
from etcode.engine.loop import AgentLoop  # noqa: E402
from etcode.engine.settings import LoopSettings  # noqa: E402
from etcode.provider.factory import make_provider  # noqa: E402
from etcode.provider.spec import RetryConfig  # noqa: E402
from etcode.provider.types import Message, ModelRequest  # noqa: E402
from etcode.tools.base import tool  # noqa: E402
from etcode.tools.registry import ToolRegistry  # noqa: E402
from tests.fake_llm import Call, FakeLLM, Reply  # noqa: E402
from tests.scripted import Answer, ScriptedProvider  # noqa: E402

STEPS = 100
RUNS = 5


@tool(read_only=True)
def ping(n: int) -> str:
    """Answer pong."""
    return f"pong {n}"


async def run_loop(provider, directory: Path) -> float:
    settings = LoopSettings(
        provider=provider,
        model="fake-model",
        system=["bench"],
        tools=ToolRegistry([ping]),
        directory=directory,
        worktree=directory,
        session_id="bench",
        limits=LoopLimits(max_steps=STEPS + 1),
    )
    loop = AgentLoop(settings, [], Message.user("go"))
    started = time.perf_counter()
    async for _ in loop.events():
        pass
    elapsed = time.perf_counter() - started
    assert loop.result is not None and loop.result.steps == STEPS, loop.result
    return elapsed / STEPS


def scripted_answers() -> list[Answer]:
    return [Answer("step", [("ping", {"n": i})]) for i in range(STEPS - 1)] + [Answer("done")]


def fake_replies() -> list[Reply]:
    return [Reply(text="step", calls=[Call("ping", {"n": i})]) for i in range(STEPS - 1)] + [
        Reply(text="done")
    ]


async def raw_requests(llm: FakeLLM) -> float:
    provider = make_provider(llm.spec("openai"), RetryConfig(max_retries=0))
    llm.script(*fake_replies())
    request = ModelRequest(model="fake-model", system=["bench"], messages=[Message.user("go")])
    started = time.perf_counter()
    for _ in range(STEPS):
        async for _chunk in provider.stream(request):
            pass
    elapsed = time.perf_counter() - started
    await provider.aclose()
    return elapsed / STEPS


async def http_loop(llm: FakeLLM, directory: Path) -> float:
    provider = make_provider(llm.spec("openai"), RetryConfig(max_retries=0))
    llm.script(*fake_replies())
    try:
        return await run_loop(provider, directory)
    finally:
        await provider.aclose()


async def main() -> None:
    with tempfile.TemporaryDirectory(prefix="etcode-bench-") as tmp:  # removed at the end
        await measure(Path(tmp))


async def measure(directory: Path) -> None:
    in_process = [await run_loop(ScriptedProvider(*scripted_answers()), directory) for _ in range(RUNS)]
    with FakeLLM() as llm:
        await raw_requests(llm)  # warm up connection and imports
        raw = [await raw_requests(llm) for _ in range(RUNS)]
        http = [await http_loop(llm, directory) for _ in range(RUNS)]
    ms = 1000
    loop_own = statistics.median(http) - statistics.median(raw)
    print(f"in-process loop step     {statistics.median(in_process) * ms:6.2f} ms/step")
    print(f"raw request (fake HTTP)  {statistics.median(raw) * ms:6.2f} ms/request")
    print(f"loop step (fake HTTP)    {statistics.median(http) * ms:6.2f} ms/step")
    print(f"loop's own overhead      {loop_own * ms:6.2f} ms/step   (target < 5 ms)")


if __name__ == "__main__":
    asyncio.run(main())

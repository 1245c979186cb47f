"""Background processes (issue 29): what 8 of them printing cost the event loop they are
read on (the chat's): the lateness of a 5 ms ticker while they print, p95 and max, and
etcode's CPU time. ``python benchmarks/bench_background.py``."""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from etcode.tools.background import BackgroundProcesses  # noqa: E402

#: What each of the 8 prints: a log line every millisecond, or as fast as it can.
LOADS = {
    "lines (1 per ms each)": f"{sys.executable} -u -c 'import time\nwhile True: print(\"GET /index.html 200\", time.time()); time.sleep(0.001)'",
    "flood (yes)": "yes 'a long line of output from a chatty watcher process'",
}


async def lateness(seconds: float, tick: float = 0.005) -> list[float]:
    """How late a ``tick``-second timer wakes, for ``seconds``, in ms."""
    loop = asyncio.get_running_loop()
    late: list[float] = []
    end = loop.time() + seconds
    while loop.time() < end:
        planned = loop.time() + tick
        await asyncio.sleep(tick)
        late.append((loop.time() - planned) * 1000)
    return late


async def measure(command: str | None, seconds: float) -> tuple[float, float, float]:
    registry = BackgroundProcesses()
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(8 if command else 0):
            await registry.start(
                ["bash", "-c", command or ""], command=command or "", cwd=folder, env=dict(os.environ)
            )
        cpu = time.process_time()
        late = await lateness(seconds)
        cpu = time.process_time() - cpu
        for info in registry.list():  # a poll each, as BashOutput would
            await registry.read_new(info.id)
        await registry.close()
    late.sort()
    return late[int(len(late) * 0.95)], late[-1], cpu / seconds * 100


async def main() -> None:
    seconds = float(os.environ.get("BENCH_SECONDS", "3"))
    rows = [("none running", *await measure(None, seconds))]
    for name, command in LOADS.items():
        rows.append((name, *await measure(command, seconds)))
    print(f"{'8 background processes':<26} {'tick late p95':>14} {'max':>9} {'CPU':>7}")
    for name, p95, worst, cpu in rows:
        print(f"{name:<26} {p95:>11.2f} ms {worst:>6.2f} ms {cpu:>6.0f}%")


if __name__ == "__main__":
    asyncio.run(main())

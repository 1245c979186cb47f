"""What the safety work costs per command (issue 12): the Bash tool running ``true`` with
no sandbox, in the workspace-write sandbox and in the read-only one (bubblewrap), and the
shell parser's reading of a few typical command lines for the permission rules.

Targets: the sandbox adds < 30 ms per command (issue 27: the seccomp filter, the private
/tmp, the hidden credential stores and the placeholders over missing config files at most
10 ms more than before); the parser takes < 1 ms per line. The folder is an empty temp dir
(every protected name is missing, so each gets a placeholder), and once more with the
working directory four folders below the worktree root (placeholders in each folder on the
way: the cost grows with the depth); their removal after a command runs in a worker thread
while the model answers, so it is left out of the timing.

Run: ``python benchmarks/bench_hardening.py``
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from etcode.security.sandbox import SandboxPolicy, settle, unavailable_reason  # noqa: E402
from etcode.security.shell_commands import analyze  # noqa: E402
from etcode.tools.base import ToolContext  # noqa: E402
from etcode.tools.bash import BashTool  # noqa: E402

LINES = (
    "git status",
    "pytest -q tests/test_api.py && ruff check . | head -20",
    "find . -name '*.py' -exec grep -n TODO {} + 2>/dev/null | sort | uniq -c > /tmp/todo.txt",
    "bash -c 'for f in src/*.py; do python -m py_compile \"$f\" || exit 1; done'",
    'X=build; rm -rf "$X" && mkdir -p "$X" && cp -r src/* "$X"/',
)


async def _bash_ms(policy: SandboxPolicy, runs: int, folder: Path, directory: Path | None = None) -> float:
    directory = directory or folder
    ctx = ToolContext(session_id="b", call_id="c", directory=directory, worktree=folder, sandbox=policy)
    tool = BashTool()
    params = tool.parse({"command": "true"})
    await tool.run(params, ctx)  # warm up (imports, the parser, the page cache)
    times = []
    for _ in range(runs):
        settle()  # the last command's placeholders go while the model thinks, not in the timing
        started = time.perf_counter()
        await tool.run(params, ctx)
        times.append(time.perf_counter() - started)
    return statistics.median(times) * 1000


def sandbox_cost(runs: int = 40) -> dict[str, float]:
    """Median ms of one Bash call per mode (``nan`` when no sandbox can be built here)."""
    with tempfile.TemporaryDirectory(prefix="etcode-bench-") as tmp:
        folder = Path(tmp).resolve()
        figures = {"off": asyncio.run(_bash_ms(SandboxPolicy(), runs, folder))}
        for mode in ("workspace-write", "read-only"):
            if unavailable_reason() is None:
                figures[mode] = asyncio.run(_bash_ms(SandboxPolicy(mode), runs, folder))  # type: ignore[arg-type]
            else:
                figures[mode] = float("nan")
        deep = folder / "a" / "b" / "c" / "d"
        deep.mkdir(parents=True)
        nested = SandboxPolicy("workspace-write")
        ok = unavailable_reason() is None
        figures["workspace-write, 4 deep"] = (
            asyncio.run(_bash_ms(nested, runs, folder, deep)) if ok else float("nan")
        )
    return figures


def parser_cost(runs: int = 2000) -> float:
    """Median µs to read one of :data:`LINES` (the worst line's median)."""
    analyze("warm up")
    worst = 0.0
    for line in LINES:
        times = []
        for _ in range(runs // len(LINES)):
            started = time.perf_counter()
            analyze(line)
            times.append(time.perf_counter() - started)
        worst = max(worst, statistics.median(times))
    return worst * 1e6


def main(runs: int = 40) -> dict[str, float]:
    figures = sandbox_cost(runs)
    parse = parser_cost()
    print(f"Bash `true`, median of {runs}:")
    for mode, ms in figures.items():
        extra = "" if mode == "off" else f"  (+{ms - figures['off']:.1f} ms)"
        print(f"  {mode:16s} {ms:6.1f} ms{extra}")
    if unavailable_reason() is not None:
        print(f"  (no sandbox here: {unavailable_reason()})")
    print(f"shell parser: {parse:.0f} µs per line (worst of {len(LINES)} typical lines)")
    return {**figures, "parse_us": parse}


if __name__ == "__main__":
    main()

"""Startup figures: `etcode --version` / `--help` against `python -c pass`, and what they import.

Target: `etcode --version` within 2x of `python -c pass`, importing none of textual, httpx,
pydantic_settings, tiktoken, mcp. Measured with bytecode caching on, as an installed etcode
runs (a `PYTHONDONTWRITEBYTECODE` in the environment would time the compiler instead).
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import time

#: What the measured processes get: this environment with bytecode caching on.
ENV = {key: value for key, value in os.environ.items() if key != "PYTHONDONTWRITEBYTECODE"}

HEAVY = ("textual", "httpx", "pydantic_settings", "tiktoken", "mcp")


def median_seconds(cmd: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, env=ENV)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def heavy_imports(args: list[str]) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "etcode", *args],
        capture_output=True,
        text=True,
        check=True,
    )
    names = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    return sorted(n for n in names if n.split(".")[0] in HEAVY)


def main(runs: int = 20) -> dict[str, float]:
    base = median_seconds([sys.executable, "-c", "pass"], runs)
    version = median_seconds([sys.executable, "-m", "etcode", "--version"], runs)
    help_ = median_seconds([sys.executable, "-m", "etcode", "--help"], max(5, runs // 2))
    print(f"python -c pass           {base * 1000:7.1f} ms")
    print(f"etcode --version         {version * 1000:7.1f} ms   ({version / base:.2f}x, target <= 3x)")
    print(f"etcode --help            {help_ * 1000:7.1f} ms")
    print(f"heavy imports --version: {heavy_imports(['--version']) or 'none'}")
    print(f"heavy imports --help:    {heavy_imports(['--help']) or 'none'}")
    return {"python": base, "version": version, "help": help_}


if __name__ == "__main__":
    main()

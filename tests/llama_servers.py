"""The real llama.cpp ``llama-server`` for the tests that need it (``test_llama_*.py``).

The server comes from ``../shared/tools/llama-server`` (built once per machine; ``.ci/run``
builds it when missing and sets ``ETCODE_REQUIRE=all``, so in CI these tests fail rather
than skip when it cannot start: ``tests/require.py``). One server per window and chat
template, started on first use and shared by every test of the session (its prompt cache
too), stopped at the end. SmolLM2-135M on a CPU reads a few hundred tokens a second on a
loaded machine: :data:`LLAMA_TIMEOUT` is what a llama test and each ``etcode`` it runs may take.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.require import missing

TOOL = Path(__file__).resolve().parents[2] / "shared" / "tools" / "llama-server"
#: The build cache, fixed at import: each test gets its own XDG_CACHE_HOME (conftest).
CACHE = os.environ.get("ETCODE_LLAMA_CACHE") or str(
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "etcode-dev" / "llama"
)
#: Seconds an ``etcode`` run against the server may take (a few requests of ~2.6k tokens).
LLAMA_TIMEOUT = 600
#: The per-test limit of a llama test module (``pytestmark = LLAMA_TEST``): several runs.
LLAMA_TEST = pytest.mark.timeout(1500)


def tool(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(TOOL), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "ETCODE_LLAMA_CACHE": CACHE, **env},
    )


def unavailable(what: str) -> None:
    missing("llama", what)


@pytest.fixture(scope="session")
def llama_servers() -> Iterator[Callable[..., int]]:
    """``llama_servers(ctx=8192, tools=False)`` → the port of a running llama-server with
    that window (``tools``: the tool-capable chat template, ``LLAMA_TOOLS=1``)."""
    if not TOOL.is_file():
        unavailable(f"{TOOL} is missing")
    if tool("path").returncode != 0:
        unavailable("llama-server is not built (../shared/tools/llama-server build)")
    ports: dict[tuple[int, bool], int] = {}

    def start(ctx: int = 8192, tools: bool = False) -> int:
        if (ctx, tools) not in ports:
            proc = tool("start", LLAMA_CTX=str(ctx), **({"LLAMA_TOOLS": "1"} if tools else {}))
            if proc.returncode != 0:
                unavailable(f"llama-server did not start: {proc.stderr.strip()[-300:]}")
            ports[ctx, tools] = int(proc.stdout.strip().splitlines()[-1])
        return ports[ctx, tools]

    yield start
    for port in ports.values():
        tool("stop", str(port))


@pytest.fixture
def llama(llama_servers: Callable[..., int]) -> Callable[..., int]:
    """``llama(ctx=8192)`` → the port of a running llama-server with that window (the
    model's own chat template: no tools)."""
    return lambda ctx=8192: llama_servers(ctx)


@pytest.fixture
def llama_tools(llama_servers: Callable[..., int]) -> Callable[[int], int]:
    """``llama_tools(ctx)`` → the port of a running llama-server with that window and the
    tool-capable chat template."""
    return lambda ctx: llama_servers(ctx, tools=True)


def assert_answered(proc: subprocess.CompletedProcess[str], result: dict[str, Any]) -> None:
    """``etcode run --format json``'s result line says the model answered: text, and the end
    of a turn (exit 0) or an answer cut at the few tokens a test allows (exit 1: a small
    model rambles, and whether it stops in time changes with every word of the prompt);
    never an error."""
    assert result.get("type") == "result", proc.stderr[-2000:] + proc.stdout[-2000:]
    assert result["stop_reason"] in ("end_turn", "max_tokens"), result
    assert proc.returncode == (0 if result["stop_reason"] == "end_turn" else 1), proc.stderr[-2000:]
    assert result["result"].strip(), result

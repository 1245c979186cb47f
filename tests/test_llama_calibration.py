"""Token counts calibrated against the real llama.cpp ``llama-server`` (SmolLM2-135M with the
tool-capable template, CPU): tiktoken counts the first request ~15% low; the first run learns
the server's ratio from its usage and keeps it, and the next run's estimate is within a few
percent of what the server counts (``--debug`` logs both for every request)."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_helpers import etcode
from tests.llama_servers import LLAMA_TEST, LLAMA_TIMEOUT
from tests.test_llama_server import configure

pytestmark = LLAMA_TEST

#: ``[etcode.window] tokens: the server counted N, etcode M (xR = E, off by P%)``
LOGGED = re.compile(
    r"tokens: the server counted (\d+), etcode (\d+) \(x([\d.]+) = (\d+), off by ([+-][\d.]+)%\)"
)


@pytest.fixture(autouse=True)
def patient_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "60")


@pytest.fixture
def tools_server(llama_tools: Callable[[int], int]) -> int:
    """A llama-server with the tool-capable template and an 8k window."""
    return llama_tools(8192)


def logged(stderr: str) -> list[tuple[int, int, float]]:
    """(server's count, calibrated estimate, error %) of each request."""
    return [(int(m[1]), int(m[4]), float(m[5])) for m in LOGGED.finditer(stderr)]


def test_the_first_run_learns_the_ratio_and_the_next_is_within_a_few_percent(
    project: Path, tools_server: int
) -> None:
    configure(project, tools_server, max_tokens=8)
    first = etcode("run", "--debug", "Say hi.", cwd=project, timeout=LLAMA_TIMEOUT)
    assert "Traceback" not in first.stderr
    ((real, estimate, error),) = logged(first.stderr)
    assert error < -8, (real, estimate)  # tiktoken's count, uncalibrated: well short
    cache = json.loads((Path(os.environ["XDG_CACHE_HOME"]) / "etcode" / "servers.json").read_text())
    (entry,) = cache.values()
    assert entry["facts"]["token_ratio"] == pytest.approx(real / (estimate / 1.0), rel=0.02)

    second = etcode("run", "--debug", "What is two plus two?", cwd=project, timeout=LLAMA_TIMEOUT)
    ((real, estimate, error),) = logged(second.stderr)
    assert abs(error) <= 3, (real, estimate, error)

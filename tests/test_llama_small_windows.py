"""The real ``etcode run`` against the real llama.cpp ``llama-server`` with a tool-capable
chat template (``LLAMA_TOOLS=1``) and a small window: the tools are fitted to it, so a 2k
window answers with tools offered and a 1k window answers without them (issue 34, item 1).

One request per test, a few tokens each (SmolLM2-135M on CPU); each window is a server of
its own (``tests/llama_servers.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.cli_helpers import etcode
from tests.llama_servers import LLAMA_TEST, LLAMA_TIMEOUT, assert_answered
from tests.test_llama_server import configure, events_of, result_of

pytestmark = LLAMA_TEST

QUESTION = "Reply with just the number: what is 2+2?"


@pytest.fixture(autouse=True)
def patient_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's answer must count on a loaded CI machine too (the grace is 0.3 s)."""
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "60")


def prompt_tokens(result: dict) -> int:
    """The request's real size as the server counted it (its cached part included)."""
    usage = result["usage"]
    return int(usage["input_tokens"]) + int(usage.get("cache_read_tokens") or 0)


def test_a_2k_window_answers_with_the_tools_that_fit(
    project: Path, llama_tools: Callable[[int], int]
) -> None:
    """Lean prompt and 11 tools do not fit 2,048 tokens: the tools left out are named once,
    the core set is offered, and the question is answered."""
    configure(project, llama_tools(2048), max_tokens=48)
    proc = etcode("run", "--format", "json", QUESTION, cwd=project, timeout=LLAMA_TIMEOUT)
    events = events_of(proc)
    result = events[-1]
    assert_answered(proc, result)
    assert "4" in result["result"]
    fitted = [e["message"] for e in events if e["type"] == "warning" and "too small" in e["message"]]
    assert len(fitted) == 1, fitted
    assert "left out Task" in fitted[0]
    assert "kept ReadFile" in fitted[0] and "Bash" in fitted[0]  # tools were offered
    assert 1000 < prompt_tokens(result) < 2048 - 48


def test_a_1k_window_answers_without_tools(project: Path, llama_tools: Callable[[int], int]) -> None:
    """Not even the core tools fit 1,024 tokens: the run says so once and answers in text."""
    configure(project, llama_tools(1024), max_tokens=48)
    proc = etcode("run", "--format", "json", QUESTION, cwd=project, timeout=LLAMA_TIMEOUT)
    events = events_of(proc)
    result = result_of(proc)
    assert_answered(proc, result)
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    assert len([w for w in warnings if "runs without tools" in w]) == 1, warnings
    assert prompt_tokens(result) < 1024 - 48

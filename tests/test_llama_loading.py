"""A run started while the real ``llama-server`` loads its model (issue 34, item 2): a proxy
in front of the server (``tests/llama_proxy.py``) answers ``GET /props`` with llama.cpp's
503 "Loading model", so discovery learns nothing at first, and the window (2,048 tokens,
tool-capable template: ``LLAMA_TOOLS=1``) cannot hold the full prompt (~5.5k tokens).

- ``/props`` held at 503 all run: the first request goes out full, the server's 400 states
  its window, and the same run retries lean with the tools fitted — and answers.
- ``/props`` held for its first ask only: discovery asks again (0.5 s later) and its answer
  comes within the first request's grace, so the one request sent is already lean.

Each test is one or two requests of a few tokens (the proxy caps ``max_tokens``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import etcode
from tests.llama_proxy import llama_proxy
from tests.llama_servers import LLAMA_TEST, LLAMA_TIMEOUT, assert_answered
from tests.test_llama_server import configure, events_of
from tests.test_llama_small_windows import QUESTION

pytestmark = LLAMA_TEST

CORE = {"ReadFile", "Edit", "WriteFile", "Bash", "Grep"}


def tool_names(body: dict[str, Any]) -> set[str]:
    return {t["function"]["name"] for t in body.get("tools") or []}


def chat_bodies(bodies: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [b for b in bodies if "messages" in b]


def test_a_run_started_while_the_model_loads_answers_after_the_overflow(
    project: Path,
    llama_tools: Callable[[int], int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/props`` answers 503 the whole run: the full first request overflows 2,048 tokens,
    the server's error teaches the window, and the retry (lean, tools fitted) answers.
    The first request waits only a short grace (a 503 is asked again all run long)."""
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "1")
    with llama_proxy(llama_tools(2048)) as (port, bodies, controls):
        controls.props_status = 503
        controls.max_tokens_cap = 16
        configure(project, port, max_tokens=48)
        proc = etcode("run", "--format", "json", QUESTION, cwd=project, timeout=LLAMA_TIMEOUT)
        events = events_of(proc)
        result = events[-1]
        assert_answered(proc, result)
        assert controls.props_refused >= 1  # discovery was asked and told "Loading model"
        full, lean = chat_bodies(bodies)  # two requests: the full one, the re-planned one
        assert "Task" in tool_names(full) and len(tool_names(full)) >= 11
        assert tool_names(lean) >= CORE and "Task" not in tool_names(lean)  # fitted to 2,048
        assert len(json.dumps(lean)) < len(json.dumps(full)) / 2
        assert not [e for e in events if e["type"] == "compaction"]  # re-planned, not compacted
        assert 2048 in {e.get("context_window") for e in events if e["type"] == "usage"}
        fitted = [e["message"] for e in events if e["type"] == "warning" and "too small" in e["message"]]
        assert len(fitted) == 1, fitted
        real = int(result["usage"]["input_tokens"]) + int(result["usage"].get("cache_read_tokens") or 0)
        assert real < 2048 - 16


def test_a_props_answer_after_one_503_comes_before_the_first_request(
    project: Path,
    llama_tools: Callable[[int], int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/props`` answers 503 once, then the server's own answer: discovery's retry brings
    the window within the first request's grace, so the only request is lean with the
    tools fitted (no overflow, nothing sent in vain)."""
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "60")  # the retry comes ~0.5 s after the 503
    with llama_proxy(llama_tools(2048)) as (port, bodies, controls):
        controls.props_status, controls.props_left = 503, 1
        controls.max_tokens_cap = 16
        configure(project, port, max_tokens=48)
        proc = etcode("run", "--format", "json", QUESTION, cwd=project, timeout=LLAMA_TIMEOUT)
        events = events_of(proc)
        result = events[-1]
        assert_answered(proc, result)
        assert controls.props_refused == 1
        assert controls.paths.count("GET /props") >= 2  # asked again after the 503
        (only,) = chat_bodies(bodies)
        assert tool_names(only) >= CORE and "Task" not in tool_names(only)
        fitted = [e["message"] for e in events if e["type"] == "warning" and "too small" in e["message"]]
        assert len(fitted) == 1, fitted


def test_a_props_answer_after_the_grace_still_fits_the_same_run(
    project: Path,
    llama_tools: Callable[[int], int],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """``/props`` answers 503 once and the first request waits only the default grace
    (0.3 s, less than discovery's 0.5 s pause): it goes out full, and whichever comes first —
    the server's overflow or discovery's answer — fits the retry to 2,048 tokens: the run
    answers with at most one request refused and no compaction."""
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "0.3")
    with llama_proxy(llama_tools(2048)) as (port, bodies, controls):
        controls.props_status, controls.props_left = 503, 1
        controls.max_tokens_cap = 16
        configure(project, port, max_tokens=48)
        proc = etcode("run", "--format", "json", QUESTION, cwd=project, timeout=LLAMA_TIMEOUT)
        events = events_of(proc)
        assert_answered(proc, events[-1])
        sent = chat_bodies(bodies)
        assert 1 <= len(sent) <= 2, [len(json.dumps(b)) for b in sent]
        assert "Task" not in tool_names(sent[-1]) and tool_names(sent[-1]) >= CORE
        assert not [e for e in events if e["type"] == "compaction"]

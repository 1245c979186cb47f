"""The real ``etcode run`` against the real llama.cpp ``llama-server`` (SmolLM2-135M, CPU).

The server comes from ``../shared/tools/llama-server`` (built once per machine; ``.ci/run``
builds it when missing and sets ``ETCODE_REQUIRE=all``, so in CI these tests fail rather
than skip when it cannot start: ``tests/require.py``). The servers are shared by the session,
one per window and template (``tests/llama_servers.py``).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.cli_helpers import etcode
from tests.llama_servers import CACHE, LLAMA_TEST, LLAMA_TIMEOUT
from tests.test_fault_matrix import error_line

pytestmark = LLAMA_TEST


@pytest.fixture(autouse=True)
def patient_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    """The server's answer must count on a loaded CI machine too (the grace is 0.3 s)."""
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "60")


def configure(
    project: Path,
    port: int,
    *,
    models: dict[str, Any] | None = None,
    settings: dict[str, Any] | None = None,
    **options: Any,
) -> None:
    """A project whose model is served by llama-server on ``port`` (the README's local setup)."""
    provider: dict[str, Any] = {
        "id": "local",
        "type": "openai",
        "baseURL": f"http://127.0.0.1:{port}/v1",
        "apiKey": "x",
        "options": {"temperature": 0, "seed": 1, **options},
    }
    if models:
        provider["models"] = models
    config = {"model": "local/smollm2", "provider": [provider], **(settings or {})}
    (project / "etcode.json").write_text(json.dumps(config))


def events_of(proc: subprocess.CompletedProcess) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def result_of(proc: subprocess.CompletedProcess) -> dict[str, Any]:
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_short_answer_with_usage(project: Path, llama: Callable[..., int]) -> None:
    configure(project, llama(), max_tokens=48)
    proc = etcode(
        "run", "--format", "json", "Say hello in one short sentence.", cwd=project, timeout=LLAMA_TIMEOUT
    )
    result = result_of(proc)
    assert result["type"] == "result"
    assert result["stop_reason"] in ("end_turn", "max_tokens")
    assert result["result"].strip()
    usage = result["usage"]
    # the system prompt and tools were read (their start may come from the server's prompt cache)
    assert usage["input_tokens"] + usage["cache_read_tokens"] > 100
    assert 0 < result["usage"]["output_tokens"] <= 48
    assert proc.returncode == (0 if result["stop_reason"] == "end_turn" else 1)


def test_a_cut_answer_says_so_and_exits_1(project: Path, llama: Callable[..., int]) -> None:
    configure(project, llama(), max_tokens=4)
    proc = etcode("run", "Write a long story about a lighthouse keeper.", cwd=project, timeout=LLAMA_TIMEOUT)
    assert proc.returncode == 1, proc.stderr
    assert "The answer was cut off" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_overflow_names_the_servers_window(project: Path, llama: Callable[..., int]) -> None:
    """The config claims 8,192 tokens, the server runs with 512 and the full prompt (~1,600
    tokens) cannot fit: the server's 400 is read as an overflow stating its window, and the
    run ends with one line naming that window — not a garbled "bad request"."""
    configure(
        project,
        llama(512),
        models={"smollm2": {"limit": {"context": 8192}}},
        settings={"prompt": "full"},
        max_tokens=16,
    )
    line = error_line(etcode("run", "hello", cwd=project, timeout=LLAMA_TIMEOUT))
    assert "512-token window" in line
    assert "***" not in line


def test_a_small_discovered_window_gets_the_lean_prompt(project: Path, llama: Callable[..., int]) -> None:
    """Discovered, the 512-token window is known before the first request: the lean prompt
    fits it and the run answers."""
    configure(project, llama(512), max_tokens=16)
    proc = etcode("run", "--format", "json", "hello", cwd=project, timeout=LLAMA_TIMEOUT)
    result = result_of(proc)
    assert result["stop_reason"] in ("end_turn", "max_tokens"), proc.stdout[-2000:]
    assert result["result"].strip()


def test_server_killed_mid_stream(project: Path, llama: Callable[..., int]) -> None:
    port = llama(4096 + 8)  # a server of its own, to kill
    configure(project, port, max_tokens=2000)
    run = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "etcode",
            "run",
            "--format",
            "json",
            "Count from 1 to 500, one number per line.",
        ],
        cwd=project,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=os.environ.copy(),
    )
    try:
        assert run.stdout is not None
        for line in run.stdout:  # wait for the stream to start
            if json.loads(line).get("type") == "text_delta":
                break
        os.kill(int((Path(CACHE) / f"server-{port}.pid").read_text().strip()), signal.SIGKILL)
        out, err = run.communicate(timeout=120)
    finally:
        if run.poll() is None:
            run.kill()
            run.communicate()
    assert run.returncode == 1, err
    assert "Traceback" not in err
    events = [json.loads(line) for line in out.splitlines()]
    assert [e for e in events if e["type"] == "error"]  # one clear error event
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] == "error"


def test_window_discovery(project: Path, llama: Callable[..., int]) -> None:
    """The catalog does not know "smollm2": the server's /props says its 2,048-token window,
    shown by ``debug prompt --json`` and ``etcode models``, used by the run (the status
    bar's %), with the lean prompt for so small a window, and one warning that this chat
    template cannot use tools."""
    configure(project, llama(2048), max_tokens=16)
    shown = etcode("debug", "prompt", "--json", cwd=project, timeout=120)
    assert shown.returncode == 0, shown.stderr
    prompt = json.loads(shown.stdout)
    assert prompt["window"]["context"] == 2048
    assert "llama.cpp" in prompt["window"]["source"]
    assert prompt["prompt"] == "lean"
    assert prompt["parts"][0]["source"] == "provider/lean.txt"

    listed = etcode("models", "--json", cwd=project, timeout=120)
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(listed.stdout)
    entry = next(e for e in rows if e["id"] == "local/smollm2")
    assert entry["limit"]["context"] == 2048
    served = [e["id"] for e in rows if e["served"]]  # what the server offers (its /v1/models)
    assert served and all(i.startswith("local/") and i.endswith(".gguf") for i in served), served

    proc = etcode("run", "--format", "json", "Say hi.", cwd=project, timeout=LLAMA_TIMEOUT)
    events = events_of(proc)
    windows = {e["context_window"] for e in events if e["type"] == "usage"}
    assert windows == {2048}, windows
    assert events[-1]["type"] == "result" and events[-1]["stop_reason"] in ("end_turn", "max_tokens")
    warnings = [e["message"] for e in events if e["type"] == "warning"]
    assert len([w for w in warnings if "cannot use tools" in w]) == 1, warnings
    assert any("--chat-template-file" in w for w in warnings)
    assert not [w for w in warnings if "does not list" in w]  # "smollm2" names its .gguf file


def test_overflow_then_compaction_then_success(project: Path, llama: Callable[..., int]) -> None:
    """The config says 8,192 tokens but the server runs with 2,048 (restarted with a smaller
    -c): the second turn overflows, the server's 400 states its window, etcode compacts the
    first turn into a summary and the retried request succeeds."""
    port = llama(2048)
    configure(project, port, models={"smollm2": {"limit": {"context": 8192}}}, max_tokens=24)
    notes = "\n".join(f"- note {i}: the lighthouse lamp was checked at {i} o'clock." for i in range(60))
    first = etcode(
        "run",
        "--format",
        "json",
        f"Remember these notes.\n{notes}\nReply OK.",
        cwd=project,
        timeout=LLAMA_TIMEOUT,
    )
    assert result_of(first)["stop_reason"] in ("end_turn", "max_tokens"), first.stdout[-2000:]
    more = "\n".join(f"- note {i}: the lighthouse lamp was checked at {i} o'clock." for i in range(60, 100))
    second = etcode(
        "run",
        "--format",
        "json",
        "--continue",
        f"More notes.\n{more}\nReply OK.",
        cwd=project,
        timeout=LLAMA_TIMEOUT,
    )
    events = events_of(second)
    compactions = [e for e in events if e["type"] == "compaction"]
    assert [(e["reason"], e["phase"]) for e in compactions][-1] == ("overflow", "done"), events
    assert {e["context_window"] for e in events if e["type"] == "usage"} >= {2048}
    result = events[-1]
    assert result["type"] == "result" and result["stop_reason"] in ("end_turn", "max_tokens"), result
    assert "Traceback" not in second.stderr

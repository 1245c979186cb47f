"""Helpers for tests that run the real `etcode` process against the fake LLM server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from tests.fake_llm import FakeLLM

TEST_KEY = "sk-test-secret"


def write_config(
    project: Path,
    llm: FakeLLM,
    wire: str = "openai",
    provider: dict[str, Any] | None = None,
    *,
    api_key: str = TEST_KEY,
    **extra: Any,
) -> None:
    """An ``etcode.json`` whose model ``fake/test-model`` is served by ``llm`` in ``wire``
    format; ``provider`` adds keys to the provider entry, ``extra`` top-level keys."""
    base = llm.openai_base_url if wire == "openai" else llm.anthropic_base_url
    entry = {"id": "fake", "type": wire, "baseURL": base, "apiKey": api_key, **(provider or {})}
    config = {"model": "fake/test-model", "provider": [entry], **extra}
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


def etcode(
    *args: str,
    cwd: Path,
    stdin: str | None = None,
    timeout: float = 60,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run ``python -m etcode ARGS`` in ``cwd`` and wait for it."""
    return subprocess.run(
        [sys.executable, "-m", "etcode", *args],
        cwd=cwd,
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def etcode_imports(*args: str, cwd: Path) -> tuple[subprocess.CompletedProcess, set[str]]:
    """Run ``python -X importtime -m etcode ARGS`` in ``cwd``: the process and the modules its
    import statements loaded (``importlib.import_module`` calls are not listed)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "etcode", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=60,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    return proc, imported


def result_line(proc: subprocess.CompletedProcess) -> dict[str, Any]:
    """The final ``{"type": "result", ...}`` line of a ``--format json`` run."""
    return json.loads(proc.stdout.strip().splitlines()[-1])

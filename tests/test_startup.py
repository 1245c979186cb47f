"""`etcode --version` and `--help` stay light: no heavy import on the start-up path."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("textual", "httpx", "pydantic_settings", "tiktoken", "mcp")


@pytest.mark.parametrize("args", [["--version"], ["--help"], ["run", "--help"]])
def test_start_up_path_imports_nothing_heavy(args: list[str]) -> None:
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "etcode", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.splitlines() if "|" in line}
    assert "etcode" in imported  # the measurement itself works
    heavy = sorted(name for name in imported if name.split(".")[0] in HEAVY)
    assert heavy == [], f"etcode {' '.join(args)} imports {heavy}"


#: What ``import etcode`` must not load (issue 33): a library user's import stays light.
IMPORT_HEAVY = (*HEAVY, "rich", "pydantic", "openai", "anthropic")


@pytest.mark.parametrize("touch", ["", "etcode.__version__", "etcode.Conversation", "etcode.EventType"])
def test_import_etcode_is_lazy(touch: str) -> None:
    """``import etcode`` and its light names load no HTTP client, UI or validation library;
    the heavy ones come with the first use of ``Agent``."""
    code = (
        f"import sys, etcode; {touch or 'pass'}\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({IMPORT_HEAVY!r})))"
    )
    proc = in_a_fresh_process(code)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_the_import_check_sees_a_heavy_import() -> None:
    """The check above can fail: using ``Agent`` loads what ``import etcode`` left out."""
    code = (
        "import sys, etcode; etcode.Agent\n"
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({IMPORT_HEAVY!r})))"
    )
    proc = in_a_fresh_process(code)
    assert "pydantic" in proc.stdout, proc.stderr


def in_a_fresh_process(code: str) -> subprocess.CompletedProcess[str]:
    """``python -c CODE`` importing this checkout's etcode."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=ROOT, env=env
    )

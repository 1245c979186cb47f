"""The CLI keeps out what httpx would import for nothing (``etcode.util.lean_imports``):
importing httpx no longer drags in click, rich.progress and Pygments (``httpx.main`` still
works), nor trio, and the CLI's requests still work."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import etcode_imports, write_config
from tests.fake_llm import FakeLLM, Reply
from tests.require import reason

DEFERRED = """
import sys
from etcode.util.lean_imports import defer_httpx_cli
assert defer_httpx_cli() is True
import httpx
print(sorted(m for m in ("pygments", "rich.progress", "rich.syntax") if m in sys.modules))
assert defer_httpx_cli() is False  # httpx is imported now: nothing to do
"""


def python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, timeout=60)


def test_importing_httpx_loads_none_of_its_cli() -> None:
    plain = python(
        "import sys, httpx; print(sorted(m for m in ('pygments', 'rich.progress') if m in sys.modules))"
    )
    assert (
        plain.stdout.strip() == "['pygments', 'rich.progress']"
    )  # what is deferred (httpx with rich installed)
    deferred = python(DEFERRED)
    assert deferred.returncode == 0, deferred.stderr
    assert deferred.stdout.strip() == "[]"


def test_httpx_main_still_runs_the_real_cli() -> None:
    code = (
        "from etcode.util.lean_imports import defer_httpx_cli; defer_httpx_cli(); import httpx; httpx.main()"
    )
    proc = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Usage:" in proc.stdout and "A next generation HTTP client." in proc.stdout


SKIPPED_TRIO = """
import sys
from etcode.util.lean_imports import skip_trio
assert skip_trio() is True
import httpx, httpcore
print("trio" in sys.modules and sys.modules["trio"] is not None)
try:
    import trio
except ImportError:
    print("import trio: ImportError")
"""


def test_trio_is_kept_out_of_httpcore() -> None:
    pytest.importorskip("trio", reason=reason("package", "trio (test extras) is not installed"))
    plain = python("import sys, httpcore; print('trio' in sys.modules)")
    assert plain.stdout.strip() == "True"  # what is kept out (httpcore with trio installed)
    skipped = python(SKIPPED_TRIO)
    assert skipped.returncode == 0, skipped.stderr
    assert skipped.stdout.split("\n")[:2] == ["False", "import trio: ImportError"]


def test_a_run_with_trio_kept_out_talks_to_the_server(project: Path, llm: FakeLLM) -> None:
    """httpcore's asyncio path serves the whole run: the answer arrives, and no trio module
    was imported on the way."""
    write_config(project, llm)
    llm.script(Reply(text="over asyncio"))
    proc, imported = etcode_imports("run", "say it", cwd=project)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout == "over asyncio\n"
    assert "httpcore" in imported
    # ("trio" itself is listed: the refused import attempt; its package would load these)
    assert (
        sorted(name for name in imported if name.startswith(("trio.", "outcome", "sortedcontainers"))) == []
    )

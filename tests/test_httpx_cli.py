"""The CLI defers httpx's own command-line client (``etcode.util.httpx_cli``): importing
httpx no longer drags in click, rich.progress and Pygments, and ``httpx.main`` still works."""

from __future__ import annotations

import subprocess
import sys

DEFERRED = """
import sys
from etcode.util.httpx_cli import defer_httpx_cli
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
    code = "from etcode.util.httpx_cli import defer_httpx_cli; defer_httpx_cli(); import httpx; httpx.main()"
    proc = subprocess.run([sys.executable, "-c", code, "--help"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "Usage:" in proc.stdout and "A next generation HTTP client." in proc.stdout

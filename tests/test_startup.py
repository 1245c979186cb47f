"""`etcode --version` and `--help` stay light: no heavy import on the start-up path."""

from __future__ import annotations

import subprocess
import sys

import pytest

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


def test_import_etcode_is_lazy() -> None:
    code = f"import sys, etcode; print(sorted(m for m in sys.modules if m.split('.')[0] in {HEAVY!r}))"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "[]"

"""Every benchmark script still imports: they reach into etcode's modules, which move (a
moved class broke ``bench_loop.py`` without any test noticing)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parent.parent / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=lambda path: path.name)
def test_a_benchmark_imports(script: Path) -> None:
    load = (
        "import importlib.util, sys; "
        f"spec = importlib.util.spec_from_file_location('bench', {str(script)!r}); "
        "module = sys.modules['bench'] = importlib.util.module_from_spec(spec); "
        "spec.loader.exec_module(module)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", load], cwd=script.parent.parent, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr[-2000:]

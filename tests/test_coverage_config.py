"""Coverage measures the CLI where the tests run it: in subprocesses (pyproject's
``[tool.coverage.run] patch = ["subprocess"]``)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_a_cli_run_in_a_subprocess_is_measured(tmp_path: Path) -> None:
    script = tmp_path / "spawn.py"
    script.write_text(
        "import subprocess, sys\nsubprocess.run([sys.executable, '-m', 'etcode', '--version'], check=True)\n",
        encoding="utf-8",
    )
    env = {"COVERAGE_FILE": str(tmp_path / ".coverage"), "PATH": "/usr/bin:/bin"}
    coverage = [sys.executable, "-m", "coverage"]
    run = subprocess.run(
        [*coverage, "run", str(script)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert run.returncode == 0, run.stderr
    subprocess.run([*coverage, "combine", "-q"], cwd=ROOT, env=env, check=True, timeout=120)
    report = tmp_path / "report.json"
    subprocess.run(
        [*coverage, "json", "-q", "-o", str(report), "--include=etcode/cli/main.py"],
        cwd=ROOT,
        env=env,
        check=True,
        timeout=120,
    )
    files = json.loads(report.read_text(encoding="utf-8"))["files"]
    measured = next(data for name, data in files.items() if name.endswith("etcode/cli/main.py"))
    assert measured["summary"]["covered_lines"] > 0

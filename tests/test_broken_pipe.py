"""A reader that goes away (``etcode … | head -1``) ends etcode quietly: exit 1, no
``internal error`` line, no traceback, and a run stops as a killed one would, its session intact."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli_helpers import write_config
from tests.fake_llm import FakeLLM, Reply


def run_with_closed_stdout(*args: str, cwd: Path) -> tuple[int, str]:
    """Start ``etcode ARGS`` and close the read end of its stdout before it writes anything."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # no reader: the first write fails with EPIPE
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "etcode", *args],
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
        )
    finally:
        os.close(write_end)
    return proc.returncode, proc.stderr


@pytest.mark.parametrize(
    "args",
    [("--version",), ("--help",), ("doctor", "--offline"), ("models",)],
    ids=lambda a: " ".join(a),
)
def test_a_closed_stdout_is_not_an_internal_error(args: tuple[str, ...], project: Path) -> None:
    code, stderr = run_with_closed_stdout(*args, cwd=project)
    assert code == 1
    assert "Traceback" not in stderr
    assert "internal error" not in stderr
    assert "BrokenPipe" not in stderr


def test_a_run_whose_reader_left_saves_the_session(llm: FakeLLM, project: Path) -> None:
    write_config(project, llm)
    llm.script(Reply(text="An answer nobody reads."))
    code, stderr = run_with_closed_stdout("run", "say something", cwd=project)
    assert code == 1
    assert "Traceback" not in stderr and "internal error" not in stderr
    export = subprocess.run(
        [sys.executable, "-m", "etcode", "sessions", "export", "ses_"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert export.returncode == 0, export.stderr
    # The run stops like a writer killed by SIGPIPE: the step in flight is lost, what was
    # finished (the task) is saved and the session opens.
    assert '"say something"' in export.stdout

"""The suite's own guards, run on small test files in a child pytest: a skip for a missing
tool fails where it is required (``tests/require.py``), every run counts its skips, and a
hung test ends with a traceback within the per-test timeout (pyproject's pytest settings)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.require import GROUPS, group_of, reason

REPO = Path(__file__).resolve().parent.parent
SETTINGS = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"][
    "ini_options"
]

SKIPS = """
import pytest
from tests.require import missing, needs

def test_runs():
    pass

@needs("tmux", True, "tmux is not installed")
def test_in_a_terminal():
    pass

def test_in_the_sandbox():
    missing("bwrap", "no user namespaces")

@pytest.fixture(scope="module")
def server():
    missing("llama", "llama-server is not built")

def test_one_answer(server):
    pass

def test_another_answer(server):
    pass

def test_for_no_said_reason():
    pytest.skip("just because")
"""


def child_pytest(folder: Path, *args: str, timeout: float = 120, **env: str) -> subprocess.CompletedProcess:
    """``python -m pytest`` in ``folder`` with only this suite's skip plugin, no inherited switch."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("ETCODE_REQUIRE")}
    environ.update(PYTHONPATH=str(REPO), **env)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "tests.require",
            "-p",
            "tests.hangs",
            "-p",
            "no:cacheprovider",
            "-q",
            *args,
        ],
        cwd=folder,
        env=environ,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture
def skips(tmp_path: Path) -> Path:
    (tmp_path / "test_skips.py").write_text(SKIPS, encoding="utf-8")
    return tmp_path


def test_without_the_switch_skips_skip_and_are_counted_per_reason(skips: Path) -> None:
    proc = child_pytest(skips)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    summary = proc.stdout[proc.stdout.index("skips: 5") :]
    assert "   2  needs llama: llama-server is not built" in summary
    assert "   1  needs tmux: tmux is not installed" in summary
    assert "   1  needs bwrap: no user namespaces" in summary
    assert "   1  just because" in summary


def test_require_all_fails_every_skip_naming_what_is_missing(skips: Path) -> None:
    proc = child_pytest(skips, ETCODE_REQUIRE="all")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    out = proc.stdout
    assert "required here (ETCODE_REQUIRE=all), but skipped: needs tmux: tmux is not installed" in out
    assert "but skipped: needs bwrap: no user namespaces" in out
    assert out.count("but skipped: needs llama: llama-server is not built") >= 2
    assert "but skipped: just because" in out  # a skip naming no group fails too
    assert "skips: none (ETCODE_REQUIRE=all)" in out
    assert "1 passed" in out


def test_an_exempt_group_skips_again_and_says_so(skips: Path) -> None:
    proc = child_pytest(skips, ETCODE_REQUIRE="all", ETCODE_REQUIRE_EXCEPT="bwrap")
    assert proc.returncode == 1
    assert "but skipped: needs tmux" in proc.stdout and "but skipped: needs bwrap" not in proc.stdout
    assert "skips: 1 (ETCODE_REQUIRE=all, except bwrap)" in proc.stdout
    assert "   1  needs bwrap: no user namespaces" in proc.stdout


def test_naming_groups_requires_only_those(skips: Path) -> None:
    proc = child_pytest(skips, ETCODE_REQUIRE="llama,git")
    assert proc.returncode == 1
    assert "but skipped: needs llama" in proc.stdout and "but skipped: needs tmux" not in proc.stdout
    assert "skips: 3 (ETCODE_REQUIRE=llama,git)" in proc.stdout


def test_a_module_level_skip_fails_at_collection_where_required(tmp_path: Path) -> None:
    (tmp_path / "test_module.py").write_text(
        "import pytest\nfrom tests.require import reason\n"
        "pytest.importorskip('no_such_package_here', reason=reason('package', 'no_such_package_here'))\n"
        "def test_x():\n    pass\n",
        encoding="utf-8",
    )
    alone = child_pytest(tmp_path)
    assert (
        alone.returncode == 5 and "   1  needs package: no_such_package_here" in alone.stdout
    )  # 5: none ran
    proc = child_pytest(tmp_path, ETCODE_REQUIRE="all")
    assert proc.returncode != 0
    assert "but skipped: needs package: no_such_package_here" in proc.stdout


def test_every_group_is_known_and_tags_read_back() -> None:
    for group in GROUPS:
        assert group_of(reason(group, "x")) == group
    assert group_of("Skipped: needs tmux: gone") == "tmux"
    assert group_of("tmux is not installed") == "untagged"


HUNG = """
import asyncio
import threading

def test_blocked_thread():
    threading.Event().wait()

async def test_blocked_event_loop():
    await asyncio.Event().wait()

def test_after_them():
    pass
"""


def test_the_settings_bound_every_test_and_dump_stacks_before() -> None:
    assert int(SETTINGS["timeout"]) >= 120  # generous: the slowest legitimate test takes ~30 s
    assert 0 < int(SETTINGS["faulthandler_timeout"]) < int(SETTINGS["timeout"])
    assert SETTINGS["timeout_method"] == "signal"  # fails the test with its traceback; the run goes on


def test_a_hung_test_ends_with_a_traceback_within_its_timeout(tmp_path: Path) -> None:
    (tmp_path / "test_hung.py").write_text(HUNG, encoding="utf-8")
    proc = child_pytest(
        tmp_path,
        "-o", "timeout=3",
        "-o", "faulthandler_timeout=2",
        "-o", f"timeout_method={SETTINGS['timeout_method']}",
        "-o", "asyncio_mode=auto",
        "-o", "asyncio_default_fixture_loop_scope=function",
        timeout=120,
    )  # fmt: skip
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out
    assert out.count("Timeout (0:00:02)!") == 2, out  # faulthandler: every thread's stack, first
    for name in ("test_blocked_thread", "test_blocked_event_loop"):  # 2.3 says "Timeout >3.0s"
        assert re.search(rf"FAILED test_hung.py::{name} - Failed: Timeout \(?>3.0s", out), out
    # where each test hung: the test's own line (for the async one, in its task's stack)
    assert "test_hung.py:6: " in out, out
    assert 'test_hung.py", line 9, in test_blocked_event_loop' in out, out
    assert "2 failed, 1 passed" in out

"""Skips for a missing tool or environment, and the switch that makes them failures.

A test that cannot run here skips with a reason naming its group: ``needs GROUP: what is
missing`` (``missing()``/``needs()`` below write it). ``ETCODE_REQUIRE=all`` (``.ci/run`` sets
it) turns every skip into a failure with that line; ``ETCODE_REQUIRE=tmux,llama`` requires
only the groups named, and ``ETCODE_REQUIRE_EXCEPT=bwrap`` lets those groups skip again (CI
sets it only when its probe finds no user namespaces). A skip that names no group counts as
group ``untagged``: under ``all`` it fails too, so no new skip goes unnoticed in CI.

Every run ends with a count of its skips per reason (``pytest_terminal_summary``).
``tests/conftest.py`` imports the hooks; ``python -m pytest -p tests.require`` loads them alone.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any, NoReturn

import pytest

#: The groups a test may need, and what each stands for (``.ci/run`` installs or probes them).
GROUPS = {
    "tmux": "tmux, for the tests that drive the chat in a real terminal",
    "bwrap": "bubblewrap able to create a sandbox (user namespaces)",
    "node": "node >= 18 and npm, for the TypeScript SDK's ACP client",
    "llama": "a built ../shared/tools/llama-server",
    "tiktoken": "the tokenizer files in ../shared/tiktoken",
    "rg": "ripgrep (the ripgrep wheel)",
    "git": "git",
    "tmpfs": "mounting a small tmpfs (root), for the full-disk tests",
    "loopback": "binding 127.0.0.2",
    "devfull": "/dev/full",
    "socket": "a temporary path short enough for a unix socket",
    "package": "a Python package of the test extras",
    "glibc": "glibc's malloc (Linux, glibc >= 2.33 for mallinfo2)",
    "setpriv": "running a process as another user (Linux; as root: util-linux's setpriv)",
}
_TAG = re.compile(r"^(?:Skipped: )?needs ([\w-]+): ")


def reason(group: str, what: str) -> str:
    """The skip reason of ``group``: ``needs GROUP: what``."""
    assert group in GROUPS, f"unknown requirement group {group!r}: add it to tests/require.py"
    return f"needs {group}: {what}"


def missing(group: str, what: str) -> NoReturn:
    """Skip (or, where ``group`` is required, fail) the running test: ``what`` is missing."""
    pytest.skip(reason(group, what))


def needs(group: str, absent: bool, what: str) -> pytest.MarkDecorator:
    """A ``skipif`` mark for a test that needs ``group``."""
    return pytest.mark.skipif(absent, reason=reason(group, what))


def _names(variable: str) -> set[str]:
    return {name.strip() for name in os.environ.get(variable, "").split(",") if name.strip()}


def required(group: str) -> bool:
    """Whether a skip of ``group`` must fail this run (``ETCODE_REQUIRE``, ``_EXCEPT``)."""
    wanted = _names("ETCODE_REQUIRE")
    if group in _names("ETCODE_REQUIRE_EXCEPT"):
        return False
    return "all" in wanted or group in wanted


def group_of(text: str) -> str:
    match = _TAG.match(text)
    return match.group(1) if match else "untagged"


def _skip_text(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr: Any = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return str(text).removeprefix("Skipped: ")


def _require(report: pytest.TestReport | pytest.CollectReport) -> None:
    if not report.skipped or hasattr(report, "wasxfail"):
        return
    text = _skip_text(report)
    group = group_of(text)
    if required(group):
        report.outcome = "failed"
        report.longrepr = (
            f"required here (ETCODE_REQUIRE={os.environ.get('ETCODE_REQUIRE', '')}), but skipped: {text}"
        )


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome: Any = yield
    _require(outcome.get_result())


@pytest.hookimpl(hookwrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Iterator[None]:
    outcome: Any = yield
    _require(outcome.get_result())


def pytest_terminal_summary(terminalreporter: Any) -> None:
    """Every run says what it skipped and why: one line per reason, with a count."""
    counts = Counter(_skip_text(report) for report in terminalreporter.stats.get("skipped", []))
    mode = os.environ.get("ETCODE_REQUIRE", "")
    if mode:
        mode = f" (ETCODE_REQUIRE={mode}"
        mode += f", except {os.environ['ETCODE_REQUIRE_EXCEPT']})" if _names("ETCODE_REQUIRE_EXCEPT") else ")"
    if not counts:
        terminalreporter.write_line(f"skips: none{mode}")
        return
    terminalreporter.write_line(f"skips: {sum(counts.values())}{mode}", yellow=True)
    for text, count in counts.most_common():
        terminalreporter.write_line(f"  {count:4d}  {text}")

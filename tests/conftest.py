"""Test-wide isolation: no real user config, no real API keys, no network."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

# A hung async test prints its tasks' stacks before pytest-timeout fails it.
from tests.hangs import pytest_timeout_set_timer  # noqa: F401  (hook)
from tests.llama_servers import llama, llama_servers, llama_tools  # noqa: F401  (fixtures)

# Skips name what is missing; ETCODE_REQUIRE makes them failures; every run counts them.
from tests.require import (  # noqa: F401  (hooks)
    pytest_make_collect_report,
    pytest_runtest_makereport,
    pytest_terminal_summary,
)

REPO = Path(__file__).resolve().parent.parent
SHARED_TIKTOKEN = REPO.parent / "shared" / "tiktoken"

_KEY_VARS = [name for name in os.environ if name.endswith("_API_KEY")] + [
    "ETCODE_MODEL",
    "ETCODE_CONFIG",
    "ETCODE_SMALL_MODEL",
    "ETCODE_MAX_STEPS",
    "ETCODE_AGENT",
    "ETCODE_DEBUG",
]


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Every test gets its own HOME and XDG folders and no provider keys."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    for var, sub in (
        ("XDG_CONFIG_HOME", ".config"),
        ("XDG_DATA_HOME", ".local/share"),
        ("XDG_CACHE_HOME", ".cache"),
        ("XDG_STATE_HOME", ".local/state"),
    ):
        monkeypatch.setenv(var, str(home / sub))
    for var in _KEY_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)  # the user's ~/.claude/settings.json: HOME's
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("ETCODE_TOKENIZER_DOWNLOAD", "0")  # no network in tests
    if SHARED_TIKTOKEN.is_dir():
        monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(SHARED_TIKTOKEN))
    return home


@pytest.fixture
def llm():
    """A fake LLM server on 127.0.0.1 (both wire formats), stopped after the test."""
    from tests.fake_llm import FakeLLM

    with FakeLLM() as server:
        yield server


@pytest.fixture
def project(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """A project folder (not a git repository): empty, or filled as the module's ``PROJECT``
    says (tests/project_support.py)."""
    from tests.project_support import fill_project

    folder = tmp_path / "project"
    folder.mkdir()
    fill_project(folder, request)
    return folder


@pytest.fixture(autouse=True)
def fresh_redactor():
    """Secrets a test teaches the process-wide redactor (an Agent registers its config's
    keys) are forgotten after it: tool output of the next test is not redacted by them."""
    yield
    from etcode.security.redact import reset_redactor

    reset_redactor()

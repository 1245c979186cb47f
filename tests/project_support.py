"""The ``project`` fixture's folder, as a test module asks for it.

A module sets ``PROJECT = ProjectSpec(...)`` (or a test parametrizes ``project`` indirectly
with one) and the shared ``project`` fixture (conftest.py) fills the folder: the chat's
``etcode.json`` for the fake LLM server and the module's files. Without one the folder stays
empty.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.fake_llm import FakeLLM

#: The user's own API key in the trust tests: a project must never get it sent elsewhere.
USER_KEY = "sk-users-own-key-0123456789"


def write_user_provider(home: Path, llm: FakeLLM) -> Path:
    """The user's own config (``~/.config/etcode/etcode.json`` under ``home``): model
    ``fake/test-model`` on ``llm`` with :data:`USER_KEY`."""
    folder = home / ".config" / "etcode"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "etcode.json"
    provider = {"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": USER_KEY}
    path.write_text(json.dumps({"model": "fake/test-model", "provider": [provider]}), encoding="utf-8")
    return path


def git_init(folder: Path) -> Path:
    """``folder`` made a git work tree (a cloned repository, as trust sees it)."""
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "init", "-q", str(folder)], check=True, timeout=30)
    return folder


def write_config(project: Path, llm: FakeLLM, provider: dict[str, Any] | None = None, **extra: Any) -> None:
    """``etcode.json`` with the model ``fake/test-model`` served by ``llm`` (OpenAI wire);
    ``provider`` adds keys to the provider entry, ``extra`` top-level keys."""
    entry = {
        "id": "fake",
        "type": "openai",
        "baseURL": llm.openai_base_url,
        "apiKey": "sk-test",
        **(provider or {}),
    }
    config = {"model": "fake/test-model", "provider": [entry], **extra}
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


@dataclass(frozen=True)
class ProjectSpec:
    """What goes in the folder: ``etcode.json`` for the fake LLM server unless ``config`` is
    False (``settings``: its top-level keys, ``provider``: keys of its provider entry), then
    ``files`` (name → text; a name ending in ``/`` is an empty folder)."""

    config: bool = True
    settings: dict[str, Any] = field(default_factory=dict)
    provider: dict[str, Any] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)

    def fill(self, folder: Path, request: pytest.FixtureRequest) -> None:
        if self.config:
            write_config(folder, request.getfixturevalue("llm"), self.provider or None, **self.settings)
        for name, text in self.files.items():
            target = folder / name
            if name.endswith("/"):
                target.mkdir(parents=True, exist_ok=True)
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_text(text, encoding="utf-8")


def fill_project(folder: Path, request: pytest.FixtureRequest) -> None:
    """Fill ``folder`` as the test's parameter or its module's ``PROJECT`` says (if either does)."""
    spec = getattr(request, "param", None) or getattr(request.module, "PROJECT", None)
    if spec is not None:
        spec.fill(folder, request)

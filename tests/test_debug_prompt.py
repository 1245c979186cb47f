"""``etcode debug prompt``: the assembled prompt without a model call or an API key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from etcode.cli.debug import debug_app

ROOT = Path(__file__).resolve().parents[1]


def clean_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETCODE_") and not k.endswith("_API_KEY")}
    env.update(HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "xdg"), PYTHONPATH=str(ROOT))
    env.update(extra)
    return env


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    (root / "AGENTS.md").write_text("Run pytest -q before finishing.\n")
    (root / "pkg").mkdir()
    (root / "pkg" / "AGENTS.md").write_text("Package rules.\n")
    return root


def run_cli(args: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "etcode", "debug", "prompt", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_json_parts_subprocess(project: Path, tmp_path: Path) -> None:
    out = run_cli(["--json", "--model", "anthropic/claude-sonnet-4"], project / "pkg", clean_env(tmp_path))
    assert out.returncode == 0, out.stderr
    parts = json.loads(out.stdout)["parts"]
    assert [p["layer"] for p in parts] == ["provider", "instructions", "instructions", "environment"]
    assert parts[0]["source"] == "provider/anthropic.txt"
    assert parts[3]["source"] is None
    assert "The exact model ID is anthropic/claude-sonnet-4." in parts[3]["text"]
    assert f"Working directory: {(project / 'pkg').resolve()}" in parts[3]["text"]
    assert "Is directory a git repo: yes" in parts[3]["text"]
    assert [p["source"] for p in parts[1:3]] == [
        str(project / "AGENTS.md"),
        str(project / "pkg" / "AGENTS.md"),
    ]


def test_model_from_env_then_default(project: Path, tmp_path: Path) -> None:
    out = run_cli(["--json"], project, clean_env(tmp_path, ETCODE_MODEL="openai/gpt-4.1"))
    assert out.returncode == 0, out.stderr
    parts = json.loads(out.stdout)["parts"]
    assert parts[0]["source"] == "provider/openai.txt"
    out = run_cli(["--json"], project, clean_env(tmp_path))
    assert out.returncode == 0, out.stderr
    parts = json.loads(out.stdout)["parts"]
    assert parts[0]["source"] == "provider/default.txt"
    assert "You are powered by the model named default." in parts[-1]["text"]


def test_model_from_config_and_agent(project: Path, tmp_path: Path) -> None:
    (project / "etcode.json").write_text(
        '{\n  // JSONC\n  "model": "google/gemini-2.5-pro",\n'
        '  "agent": {"reviewer": {"prompt": "Review only.", "model": "openai/o3"}}\n}\n'
    )
    env = clean_env(tmp_path)
    parts = json.loads(run_cli(["--json"], project, env).stdout)["parts"]
    assert parts[0]["source"] == "provider/gemini.txt"
    parts = json.loads(run_cli(["--json", "--agent", "reviewer"], project, env).stdout)["parts"]
    assert parts[0]["layer"] == "agent" and "Review only." not in parts[0]["text"]
    assert (parts[-2]["layer"], parts[-2]["text"]) == ("user", "Your instructions:\nReview only.\n")  # last
    assert "The exact model ID is openai/o3." in parts[-1]["text"]


def test_unknown_agent_is_usage_error(project: Path, tmp_path: Path) -> None:
    out = run_cli(["--agent", "nope"], project, clean_env(tmp_path))
    assert out.returncode == 2
    assert 'unknown agent "nope"; known agents: build, plan, general, explore, workflow' in out.stderr
    assert "Traceback" not in out.stderr


def test_text_output_with_rules(project: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    for key in [k for k in os.environ if k.startswith("ETCODE_")]:
        monkeypatch.delenv(key)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "xdg"))
    monkeypatch.chdir(project)
    result = CliRunner().invoke(debug_app, ["prompt", "--agent", "plan", "--model", "openai/gpt-4o"])
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("── agent · agent/plan.txt ──")
    assert any(line.startswith("── environment · sent in the first user message ──") for line in lines)
    assert any(line.startswith(f"── instructions · {project / 'AGENTS.md'} ──") for line in lines)
    assert "Instructions from: " + str(project / "AGENTS.md") in result.output
    assert lines[-1] == "─" * 72

"""The environment layer and the order of parts in SystemPrompt.build."""

from __future__ import annotations

import sys
from datetime import datetime
from pathlib import Path

import pytest

from etcode.agent import AgentInfo, get_agent
from etcode.prompt import hooks
from etcode.prompt.instruction import InstructionPrompt
from etcode.prompt.parts import PromptPart
from etcode.prompt.system import SystemPrompt, format_date, split_environment, split_model_id

NOW = datetime(2026, 11, 21, 23, 59)


def test_environment_exact_text(tmp_path: Path) -> None:
    part = SystemPrompt.environment("anthropic/claude-sonnet-4-20250514", tmp_path, True, now=NOW)
    assert part.layer == "environment" and part.source is None
    assert part.text == (
        "You are powered by the model named claude-sonnet-4-20250514. "
        "The exact model ID is anthropic/claude-sonnet-4-20250514.\n"
        "Here is useful information about the environment you are running in:\n"
        "<env>\n"
        f"  Working directory: {tmp_path.resolve()}\n"
        "  Is directory a git repo: yes\n"
        f"  Platform: {sys.platform}\n"
        "  Today's date: Sat Nov 21 2026\n"
        "</env>"
    )


def test_environment_not_git_and_nested_provider(tmp_path: Path) -> None:
    text = SystemPrompt.environment("openrouter/anthropic/claude-sonnet-4", tmp_path, False, now=NOW).text
    assert text.startswith(
        "You are powered by the model named anthropic/claude-sonnet-4. "
        "The exact model ID is openrouter/anthropic/claude-sonnet-4.\n"
    )
    assert "  Is directory a git repo: no\n" in text


def test_environment_has_no_secrets(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-secret-value")
    text = SystemPrompt.environment("anthropic/claude-opus-4", tmp_path, True, now=NOW).text
    assert "sk-ant-secret-value" not in text and "API_KEY" not in text


def test_split_model_id_and_date() -> None:
    assert split_model_id("openai/gpt-4.1") == ("openai", "gpt-4.1")
    assert split_model_id("gpt-4.1") == (None, "gpt-4.1")
    assert format_date(datetime(2026, 1, 5)) == "Mon Jan 05 2026"


async def test_build_order_provider_instructions_environment(tmp_path: Path) -> None:
    """What changes per folder and day comes last, and is split off the system text."""
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    instructions = InstructionPrompt(tmp_path, tmp_path, global_dir=tmp_path / "no-global")
    parts = await SystemPrompt.build(get_agent("build"), "openai/gpt-4.1", instructions, now=NOW)
    assert [p.layer for p in parts] == ["provider", "instructions", "environment"]
    assert parts[0].source == "provider/openai.txt"
    assert "Is directory a git repo: yes" in parts[2].text
    assert parts[1].text == f"Instructions from: {tmp_path / 'AGENTS.md'}\nUse tabs."
    system, environment = split_environment(parts)
    assert system == [parts[0].text, parts[1].text] and environment == parts[2].text


async def test_build_builtin_agent_prompt_replaces_provider(tmp_path: Path) -> None:
    instructions = InstructionPrompt(tmp_path, tmp_path, global_dir=tmp_path / "g")
    parts = await SystemPrompt.build(get_agent("plan"), "anthropic/claude-opus-4", instructions, now=NOW)
    assert [p.layer for p in parts] == ["agent", "environment"]
    assert parts[0].source == "agent/plan.txt"
    assert "plan mode" in parts[0].text and "{{" not in parts[0].text


async def test_build_custom_agent_prompt_is_wrapped_and_last(tmp_path: Path) -> None:
    """A custom agent's prompt is the user's section, after the project's instruction files
    (issue 33: the user's instructions are the system text's last section)."""
    (tmp_path / "AGENTS.md").write_text("Use tabs.\n")
    agent = AgentInfo("reviewer", prompt="Review the diff for bugs.", source="config agent.reviewer")
    instructions = InstructionPrompt(tmp_path, tmp_path, global_dir=tmp_path / "g")
    parts = await SystemPrompt.build(agent, "default", instructions, now=NOW)
    assert [p.layer for p in parts] == ["agent", "instructions", "user", "environment"]
    first, user = parts[0], parts[2]
    assert first.source == "system/custom_agent.txt"
    assert first.text.startswith("You are etcode, an agent")
    assert "Think in prose" in first.text and "TodoWrite" in first.text
    assert "Review the diff" not in first.text
    assert user == PromptPart(
        "user", "config agent.reviewer", "Your instructions:\nReview the diff for bugs.\n"
    )
    named = await SystemPrompt.build(agent, "default", instructions, name="Ada", now=NOW)
    assert named[0].text.startswith("You are Ada, an agent")


async def test_build_system_prompt_wins_and_directory_override(tmp_path: Path) -> None:
    instructions = InstructionPrompt(tmp_path, tmp_path, global_dir=tmp_path / "g")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    parts = await SystemPrompt.build(
        get_agent("plan"),
        "anthropic/claude-opus-4",
        instructions,
        system_prompt="Only answer questions.",
        name="helper",
        directory=elsewhere,
        is_git=False,
        now=NOW,
    )
    assert [p.layer for p in parts] == ["agent", "user", "environment"]
    assert parts[0].text.startswith("You are helper,") and "plan mode" not in parts[0].text
    assert parts[1] == PromptPart("user", None, "Your instructions:\nOnly answer questions.\n")
    assert f"Working directory: {elsewhere.resolve()}" in parts[-1].text
    assert "Is directory a git repo: no" in parts[-1].text
    blank = await SystemPrompt.build(None, "gpt-4o", instructions, system_prompt="  ", now=NOW)
    assert blank[0].layer == "provider"


def test_custom_base_and_user_part() -> None:
    part = SystemPrompt.custom(name="bot")
    assert part.layer == "agent" and part.source == "system/custom_agent.txt"
    assert part.text.startswith("You are bot,") and "Your instructions" not in part.text
    user = SystemPrompt.user("  Answer in French.\n")
    assert user == PromptPart("user", None, "Your instructions:\nAnswer in French.\n")


async def test_build_runs_transform_hooks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    module = tmp_path / "my_prompt_hooks.py"
    module.write_text(
        "from etcode.prompt.parts import PromptPart\n"
        "def add(parts):\n"
        "    return [*parts, PromptPart('instructions', 'hook', 'extra rule')]\n"
        "async def upper(parts):\n"
        "    return [PromptPart(p.layer, p.source, p.text.upper()) if p.layer == 'environment' else p for p in parts]\n"
        "def broken(parts):\n"
        "    raise RuntimeError('boom')\n"
        "def wrong(parts):\n"
        "    return 'nope'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    instructions = InstructionPrompt(tmp_path, tmp_path, global_dir=tmp_path / "g")
    warnings: list[str] = []
    parts = await SystemPrompt.build(
        None,
        "gpt-4o",
        instructions,
        now=NOW,
        transforms=[
            "my_prompt_hooks:add",
            "my_prompt_hooks:broken",
            "my_prompt_hooks:upper",
            "my_prompt_hooks:wrong",
            "missing_module_xyz:fn",
        ],
        on_warning=warnings.append,
    )
    assert parts[-1] == PromptPart("instructions", "hook", "extra rule")
    assert "YOU ARE POWERED BY" in parts[1].text
    assert len(parts) == 3
    assert any("my_prompt_hooks:broken failed: RuntimeError: boom" in w for w in warnings)
    assert any("my_prompt_hooks:wrong did not return" in w for w in warnings)
    assert any("missing_module_xyz:fn could not be loaded" in w for w in warnings)
    assert instructions.warnings == warnings  # also kept on the instructions for the session


async def test_entry_point_transform(monkeypatch: pytest.MonkeyPatch) -> None:
    class FakePoint:
        value = "pkg:fn"

        def load(self):  # type: ignore[no-untyped-def]
            return lambda parts: parts[:1]

    def fake_entry_points(group: str, name: str) -> list[FakePoint]:
        assert (group, name) == ("etcode.plugins", "system.prompt.transform")
        return [FakePoint()]

    monkeypatch.setattr(hooks, "entry_points", fake_entry_points)
    hooks.clear_cache()
    try:
        parts = [PromptPart("provider", None, "a"), PromptPart("environment", None, "b")]
        out, warnings = await hooks.apply_transforms(parts)
        assert out == parts[:1] and warnings == []
    finally:
        hooks.clear_cache()


def test_part_to_dict() -> None:
    assert PromptPart("agent", None, "t").to_dict() == {"layer": "agent", "source": None, "text": "t"}

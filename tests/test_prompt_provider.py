"""The provider layer: model id → base prompt routing, and the prompt files themselves."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.prompt import templates
from etcode.prompt.system import SystemPrompt, model_family

ROUTES = [
    # Anthropic
    ("claude-3.5-sonnet", "anthropic"),
    ("claude-3-5-haiku-20241022", "anthropic"),
    ("claude-sonnet-4-20250514", "anthropic"),
    ("anthropic/claude-opus-4", "anthropic"),
    ("openrouter/anthropic/claude-sonnet-4", "anthropic"),
    ("bedrock/us.anthropic.claude-3-7-sonnet-20250219-v1:0", "anthropic"),
    ("Claude-Opus-4.1", "anthropic"),
    # OpenAI
    ("gpt-4o-mini", "openai"),
    ("gpt-4.1", "openai"),
    ("gpt-4o", "openai"),
    ("chatgpt-4o-latest", "openai"),
    ("o1", "openai"),
    ("o1-mini", "openai"),
    ("o3", "openai"),
    ("o3-mini", "openai"),
    ("o4-mini", "openai"),
    ("ollama/o1:latest", "openai"),
    ("openai/gpt-5", "openai"),
    ("openai/o3-mini", "openai"),
    ("openrouter/openai/o4-mini", "openai"),
    ("azure/gpt-4.1-nano", "openai"),
    # Gemini
    ("gemini-2.5-pro", "gemini"),
    ("google/gemini-2.0-flash", "gemini"),
    ("gemini/gemini-1.5-flash-8b", "gemini"),
    ("openrouter/google/gemini-2.5-flash", "gemini"),
    # everything else
    ("deepseek-chat", "default"),
    ("deepseek/deepseek-reasoner", "default"),
    ("qwen2.5-coder", "default"),
    ("ollama/qwen2.5-coder:32b", "default"),
    ("llama-3.3-70b", "default"),
    ("groq/llama-3.3-70b-versatile", "default"),
    ("mistral-large", "default"),
    ("default", "default"),
    ("", "default"),
    # near misses that must not match by accident
    ("foo-o1x", "default"),
    ("pro1-model", "default"),
    ("o1x", "default"),
    ("proto3-mini", "default"),
    ("models/o10", "default"),
    ("mygpt4all", "default"),
    ("geminiish", "gemini"),  # a gemini- prefix is tolerated: "gemini" starts the token
    ("notclaude-2", "default"),
]


@pytest.mark.parametrize(("model_id", "family"), ROUTES)
def test_model_family(model_id: str, family: str) -> None:
    assert model_family(model_id) == family


@pytest.mark.parametrize(("model_id", "family"), ROUTES[:35])
def test_provider_part_uses_family_file(model_id: str, family: str) -> None:
    part = SystemPrompt.provider(model_id)
    assert part.layer == "provider"
    assert part.source == f"provider/{family}.txt"
    assert part.text == templates.load(f"provider/{family}.txt").replace("{{name}}", "etcode")


def test_the_assistant_name_shapes_every_provider_prompt() -> None:
    for model_id in ("anthropic/claude-sonnet-4", "openai/gpt-4o", "gemini/gemini-2.5-pro", "x/llama"):
        named = SystemPrompt.provider(model_id, "Research Helper").text
        assert "You are Research Helper, a coding agent" in named
        assert "You are etcode" not in named and "{{name}}" not in named
    assert SystemPrompt.lean_provider("智能助理").text.startswith("You are 智能助理,")


@pytest.mark.parametrize("family", ["anthropic", "openai", "gemini", "default"])
def test_provider_prompts_are_real_and_expanded(family: str) -> None:
    text = templates.load(f"provider/{family}.txt")
    assert "{{" not in text.replace("{{name}}", "")  # every module include was expanded
    text = templates.render(text, {"name": "etcode"})
    assert len(text.split()) > 600
    for needle in (
        "You are etcode",
        "ReadManyFiles",
        "in parallel",
        "Edit",
        "TodoWrite",
        "`path:line`",
        "★ Insight",
    ):
        assert needle in text, (family, needle)


def test_provider_prompts_are_tuned_per_family() -> None:
    assert "<tool_usage>" in templates.load("provider/anthropic.txt")
    assert "keep going until" in templates.load("provider/openai.txt")
    assert "# Core rules" in templates.load("provider/gemini.txt")
    assert (
        len({templates.load(f"provider/{f}.txt") for f in ("anthropic", "openai", "gemini", "default")}) == 4
    )


def test_templates_are_read_once(monkeypatch: pytest.MonkeyPatch) -> None:
    from pathlib import Path

    templates.clear_cache()
    reads: list[str] = []
    original = Path.read_text

    def counting(self: Path, *args: object, **kwargs: object) -> str:
        reads.append(self.name)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Path, "read_text", counting)
    for _ in range(3):
        SystemPrompt.provider("claude-sonnet-4")
    assert reads.count("anthropic.txt") == 1
    assert reads.count("role.md") == 1


def test_render_fills_slots_once() -> None:
    out = templates.render("Hi {{name}}: {{prompt}} {{other}}", {"name": "x", "prompt": "{{name}}"})
    assert out == "Hi x: {{name}} {{other}}"


def test_prompts_dir_is_the_checkout_folder() -> None:
    folder = templates.prompts_dir()
    assert (folder / "provider" / "default.txt").is_file()
    assert (folder / "modules" / "role.md").is_file()


@pytest.mark.parametrize("agent_name", ["build", "plan", "general", "explore", "workflow"])
async def test_no_builtin_agent_prompt_leaves_the_name_slot_empty(agent_name: str, tmp_path: Path) -> None:
    from etcode.agent.registry import get_agent
    from etcode.prompt.instruction import InstructionPrompt

    instructions = InstructionPrompt(tmp_path, tmp_path, global_dir=tmp_path / "g")
    parts = await SystemPrompt.build(get_agent(agent_name), "openai/gpt-4o", instructions, name="Helper")
    assert "{{name}}" not in parts[0].text
    if "You are" in parts[0].text.split("\n", 1)[0] and parts[0].layer == "provider":
        assert "You are Helper," in parts[0].text

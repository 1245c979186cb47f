"""Issue 33, item 2: ``build_system_prompt(name, user_prompt)`` exported, and the user's
instructions the system text's last section in every run — after the project's ``AGENTS.md``
and the list of skills — from the Python API (``system_prompt=``) and from the CLI (a custom
agent's prompt). Real HTTP against the fake LLM server; the CLI as a subprocess."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import etcode
from etcode import Agent, build_system_prompt
from tests.cli_helpers import etcode as run_etcode
from tests.cli_helpers import write_config
from tests.fake_llm import FakeLLM, Reply

SKILL = "---\nname: release-notes\ndescription: Write the release notes.\n---\nSteps.\n"
AGENTS = "Use tabs, never spaces.\n"


def system_texts(body: dict[str, Any]) -> list[str]:
    """The request's system text, as its blocks (Anthropic) or its one message (OpenAI)."""
    if "system" in body:
        return [block["text"] for block in body["system"]]
    return [m["content"] for m in body["messages"] if m["role"] == "system"]


def fill(project: Path) -> None:
    (project / "AGENTS.md").write_text(AGENTS, encoding="utf-8")
    (project / ".etcode" / "skills" / "release-notes").mkdir(parents=True)
    (project / ".etcode" / "skills" / "release-notes" / "SKILL.md").write_text(SKILL, encoding="utf-8")


def test_build_system_prompt_is_the_template_with_the_users_section_last() -> None:
    text = build_system_prompt("Ada", "Answer in French.")
    assert text.startswith("You are Ada, an agent")
    assert text.endswith("\n\nYour instructions:\nAnswer in French.\n")
    assert "<env>" not in text and "Working directory" not in text and "AGENTS.md" not in text
    assert build_system_prompt("Ada", "Answer in French.") == build_system_prompt(
        name="Ada", user_prompt="Answer in French."
    )
    plain = build_system_prompt("Ada")  # no instructions: the base prompt, named
    assert plain.startswith("You are Ada, a coding agent") and "Your instructions" not in plain
    assert build_system_prompt().startswith("You are etcode,")
    claude = build_system_prompt("Ada", model="anthropic/claude-sonnet-4")
    assert claude != plain and "Ada" in claude
    assert "build_system_prompt" in etcode.__all__


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_the_users_instructions_come_after_agents_md_and_skills(
    llm: FakeLLM, project: Path, wire: str
) -> None:
    fill(project)
    write_config(project, llm, wire)
    llm.script(Reply(text="ok"))
    agent = Agent(system_prompt="Always answer in French.", name="Ada", directory=project, store=False)
    try:
        await agent.arun("hi")
    finally:
        await agent.aclose()
    texts = system_texts(llm.requests[0].body)
    joined = "\n\n".join(texts)
    assert joined.rstrip().endswith("Your instructions:\nAlways answer in French.")
    assert joined.index("Use tabs") < joined.index("release-notes") < joined.index("Always answer in French.")
    assert texts[0].startswith("You are Ada, an agent")
    if wire == "anthropic":  # one block per part: the user's is the last
        assert texts[-1] == "Your instructions:\nAlways answer in French.\n" and "French" not in texts[0]


async def test_without_project_files_the_system_text_is_build_system_prompt(
    llm: FakeLLM, project: Path
) -> None:
    llm.script(Reply(text="ok"), Reply(text="ok"))
    for prompt in ("Be brief.", ""):
        agent = Agent(
            "openai/m",
            "k",
            llm.openai_base_url,
            system_prompt=prompt,
            name="Ada",
            directory=project,
            store=False,
        )
        try:
            await agent.arun("hi")
        finally:
            await agent.aclose()
    with_prompt, without = (system_texts(request.body) for request in llm.requests)
    assert with_prompt == [build_system_prompt("Ada", "Be brief.")]
    assert without == [build_system_prompt("Ada", model="openai/m")]


def test_the_cli_puts_a_custom_agents_prompt_last(llm: FakeLLM, project: Path) -> None:
    fill(project)
    write_config(project, llm, agent={"reviewer": {"prompt": "Review the diff for bugs."}})
    llm.script(Reply(text="reviewed"))
    proc = run_etcode("run", "--agent", "reviewer", "look", cwd=project)
    assert proc.returncode == 0, proc.stderr
    joined = "\n\n".join(system_texts(llm.requests[0].body))
    assert joined.rstrip().endswith("Your instructions:\nReview the diff for bugs.")
    assert joined.index("Use tabs") < joined.index("release-notes") < joined.index("Review the diff")

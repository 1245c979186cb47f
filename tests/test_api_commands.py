"""Custom commands through the Python ``Agent``: a task ``/name args`` naming a command runs
its prompt, as ``etcode run /name args`` does; any other text starting with ``/`` is a
message; ``commands=False`` (the front ends, which expand commands themselves) sends the text
as it is — against the fake LLM server."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from etcode import Agent
from etcode.contract.events import WarningEvent
from tests.fake_llm import FakeLLM, Reply, without_environment
from tests.project_support import git_init


def last_user_text(body: dict[str, Any]) -> str:
    content = without_environment([m for m in body["messages"] if m["role"] == "user"][-1]["content"])
    return content if isinstance(content, str) else "".join(part.get("text", "") for part in content)


def project_with_command(tmp_path: Path) -> Path:
    project = git_init(tmp_path / "project")
    folder = project / ".claude" / "commands" / "git"
    folder.mkdir(parents=True)
    (folder / "review.md").write_text(
        "---\ndescription: Review a file\nagent: plan\n---\nReview $1 for $2. Style: @STYLE.md\n"
    )
    (project / "STYLE.md").write_text("tabs are banned\n")
    return project


async def test_a_task_naming_a_command_runs_its_prompt(llm: FakeLLM, tmp_path: Path) -> None:
    project = project_with_command(tmp_path)
    llm.script(Reply(text="reviewed"), Reply(text="plain"))
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", directory=project)
    events = [event async for event in agent.stream('/git:review cli.py "error handling"')]
    result = await agent.arun("/tmp/x why is this slow")
    await agent.aclose()
    sent = last_user_text(llm.requests[0].body)
    assert sent.startswith("Review cli.py for error handling. Style: @STYLE.md")
    assert "tabs are banned" in sent
    warnings = [event.message for event in events if isinstance(event, WarningEvent)]
    assert any("runs with this Agent's agent build, not plan" in w for w in warnings), warnings
    assert result.text == "plain"
    assert last_user_text(llm.requests[1].body) == "/tmp/x why is this slow"


async def test_commands_false_sends_the_text_as_it_is(llm: FakeLLM, tmp_path: Path) -> None:
    project = project_with_command(tmp_path)
    llm.script(Reply(text="ok"))
    agent = Agent("fake/m", base_url=llm.openai_base_url, api_key="k", directory=project, commands=False)
    await agent.arun("/git:review cli.py")
    await agent.aclose()
    assert last_user_text(llm.requests[0].body) == "/git:review cli.py"

"""Custom commands in the chat (Pilot, against the fake model server): completion with the
description and hint, /help, arguments and @file sent, the command's agent for its turn,
a broken file warned about, /init writing AGENTS.md."""

from __future__ import annotations

import json
import os
from pathlib import Path

from etcode.ui.tui.commands import COMMANDS
from etcode.ui.tui.widgets.messages import HelpMessage, Notice, UserMessage
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import SIZE, make_app, ready, run_turn, submit, wait_for

COMMIT = """---
description: Commit the staged changes
argument-hint: MESSAGE [SCOPE]
agent: plan
---
Commit with message "$1" in scope $2 ($ARGUMENTS). Conventions: @CONTRIBUTING.md
"""


def user_config(llm: FakeLLM, **extra: object) -> None:
    """The user's own config (no trust question): the fake model, ``extra`` keys."""
    folder = Path(os.environ["XDG_CONFIG_HOME"]) / "etcode"
    folder.mkdir(parents=True, exist_ok=True)
    provider = {"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "sk-test"}
    config = {"model": "fake/test-model", "provider": [provider], **extra}
    (folder / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


def setup(project: Path, llm: FakeLLM, **extra: object) -> None:
    user_config(llm, **extra)
    commands = project / ".etcode" / "commands" / "git"
    commands.mkdir(parents=True)
    (commands / "commit.md").write_text(COMMIT, encoding="utf-8")
    (project / "CONTRIBUTING.md").write_text("Write short subjects.\n", encoding="utf-8")


def last_user_text(llm: FakeLLM) -> str:
    messages = llm.requests[-1].body["messages"]
    return str([m for m in messages if m["role"] == "user"][-1]["content"])


def texts(app, kind) -> list[str]:
    return [str(widget.render()) for widget in app.conversation.query(kind)]


async def test_completion_help_and_a_command_with_arguments_and_a_file(project: Path, llm: FakeLLM) -> None:
    setup(project, llm)
    llm.script(Reply(text="Committed."), Reply(text="plain"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.prompt.input.set_text("/git")
        await wait_for(pilot, lambda: app.prompt.menu_open, what="the completion")
        assert app.prompt.completion is not None and app.prompt.completion.values == ["/git:commit"]
        (label,) = [str(option.prompt) for option in app.prompt.menu._options]
        assert label.startswith("/git:commit MESSAGE [SCOPE]") and label.endswith("Commit the staged changes")
        app.prompt.close_menu()
        await submit(pilot, app, "/help")
        (shown_help,) = app.conversation.query(HelpMessage)
        assert "| `/git:commit MESSAGE [SCOPE]` | Commit the staged changes |" in shown_help.source
        assert "| `/init [what to focus on]` |" in shown_help.source
        await run_turn(pilot, app, "/git:commit 'fix the typo' docs")
        sent = last_user_text(llm)
        assert "Commit with message \"fix the typo\" in scope docs ('fix the typo' docs)." in sent
        assert "Write short subjects." in sent and "CONTRIBUTING.md" in sent
        assert texts(app, UserMessage)[-1] == "/git:commit 'fix the typo' docs\n@CONTRIBUTING.md"
        assert app.status_bar.info.agent == "build"  # the command's agent was for its turn only
        await run_turn(pilot, app, "and then?")
    tools = [{tool["function"]["name"] for tool in r.body["tools"]} for r in llm.requests]
    assert "WriteFile" not in tools[0] and "WriteFile" in tools[1]  # plan, then build again
    assert "fix the typo" in json.dumps(llm.requests[1].body)  # the same session goes on


async def test_a_missing_file_and_a_broken_command_are_reported(project: Path, llm: FakeLLM) -> None:
    setup(project, llm)
    (project / "CONTRIBUTING.md").unlink()
    broken = project / ".etcode" / "commands" / "broken.md"
    broken.write_text("---\nagent: [plan\n---\nx\n", encoding="utf-8")
    llm.script(Reply(text="fine"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: any(str(broken) in n for n in texts(app, Notice)), what="the warning")
        await submit(pilot, app, "/git:commit x")
        await wait_for(pilot, lambda: any("no such file" in n for n in texts(app, Notice)), what="the error")
        assert any("/git:commit: @CONTRIBUTING.md: no such file" in n for n in texts(app, Notice))
        assert not llm.requests
        await run_turn(pilot, app, "/tmp/x why")  # no command: a message
        assert last_user_text(llm) == "/tmp/x why"
        assert sum(str(broken) in n for n in texts(app, Notice)) == 1  # once, not per reading


async def test_init_writes_agents_md(project: Path, llm: FakeLLM) -> None:
    user_config(llm, permission={"WriteFile": "allow"})
    llm.script(
        Reply(calls=[Call("WriteFile", {"file_path": "AGENTS.md", "content": "# Agents\n"})]),
        Reply(text="Wrote it."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "/init")
        assert texts(app, UserMessage)[-1] == "/init"
    assert (project / "AGENTS.md").read_text(encoding="utf-8") == "# Agents\n"
    assert "write an `AGENTS.md` file" in str(llm.requests[0].body["messages"])
    assert len(COMMANDS) >= 10

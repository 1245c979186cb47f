"""Custom commands in the chat (Pilot, against the fake model server): completion with the
description and hint, /help, arguments and @file sent, the command's agent for its turn,
a broken file warned about, /init writing AGENTS.md."""

from __future__ import annotations

import json
import os
from pathlib import Path

from etcode.ui.tui.widgets.messages import HelpMessage, Notice, UserMessage
from tests.fake_llm import Call, FakeLLM, Reply, without_environment
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
    return str(without_environment([m for m in messages if m["role"] == "user"][-1]["content"]))


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
        assert "/git:commit runs with agent plan" in texts(app, Notice)
        assert app.status_bar.info.agent == "build"  # the command's agent was for its turn only
        await run_turn(pilot, app, "and then?")
    tools = [{tool["function"]["name"] for tool in r.body["tools"]} for r in llm.requests]
    assert "WriteFile" not in tools[0] and "WriteFile" in tools[1]  # plan, then build again
    assert "fix the typo" in json.dumps(llm.requests[1].body)  # the same session goes on


async def test_a_broken_command_is_reported_once_and_a_missing_file_stays_text(
    project: Path, llm: FakeLLM
) -> None:
    setup(project, llm)
    (project / "CONTRIBUTING.md").unlink()
    broken = project / ".etcode" / "commands" / "broken.md"
    broken.write_text("---\ndescription: {a: 1}\n---\nx\n", encoding="utf-8")
    llm.script(Reply(text="fine"), Reply(text="fine"))
    app = make_app(project)
    app.custom.max_age = 0  # every slash message reads the folders again
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: any(str(broken) in n for n in texts(app, Notice)), what="the warning")
        reads = app.custom._loaded_at
        await run_turn(pilot, app, "/git:commit x")
        assert app.custom._loaded_at > reads  # read again
        assert last_user_text(llm).endswith("Conventions: @CONTRIBUTING.md")  # no file: text, no error
        await run_turn(pilot, app, "/tmp/x why")  # no command: a message
        assert last_user_text(llm) == "/tmp/x why"
        assert sum(str(broken) in n for n in texts(app, Notice)) == 1  # once, not per reading


async def test_arguments_on_the_next_line_leading_spaces_and_the_users_agent(
    project: Path, llm: FakeLLM
) -> None:
    """``/git:commit`` + newline + arguments and ``  /git:commit`` are the command (as in
    ``etcode run``); the agent the user chose with /agent beats the command's; a command
    file named like one of the chat's commands is ignored with a warning."""
    setup(project, llm)
    help_file = project / ".etcode" / "commands" / "help.md"
    help_file.write_text("my help", encoding="utf-8")
    (project / ".etcode" / "commands" / "edit.md").write_text(
        "---\nagent: build\n---\nEdit $1.", encoding="utf-8"
    )
    llm.script(Reply(text="a"), Reply(text="b"), Reply(text="c"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(
            pilot, lambda: any(str(help_file) in n for n in texts(app, Notice)), what="the warning"
        )
        await run_turn(pilot, app, "/git:commit\nfix docs")
        assert 'Commit with message "fix" in scope docs' in last_user_text(llm)
        await run_turn(pilot, app, "  /git:commit x y")
        assert 'Commit with message "x" in scope y' in last_user_text(llm)
        await submit(pilot, app, "/agent plan")
        await run_turn(pilot, app, "/edit a.py")
        assert last_user_text(llm) == "Edit a.py."
    tools = [{tool["function"]["name"] for tool in r.body["tools"]} for r in llm.requests]
    assert "WriteFile" not in tools[2]  # /agent plan, not the command's build


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

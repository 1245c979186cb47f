"""``/skills`` in the running chat (Pilot), against the fake LLM server: the list (name,
description, where), a skill sent by hand with a request, an unknown name."""

from __future__ import annotations

import shutil
from pathlib import Path

from etcode.ui.tui.widgets.messages import HelpMessage, Notice, UserMessage
from tests.fake_llm import FakeLLM, Reply, without_environment
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, run_turn, submit, wait_for

PROJECT = ProjectSpec()  # etcode.json for the fake LLM server
FIXTURES = Path(__file__).parent / "fixtures" / "skills"


def notices(app) -> list[str]:
    return [str(n.render()) for n in app.conversation.query(Notice)]


def users(app) -> list[str]:
    return [str(u.render()) for u in app.conversation.query(UserMessage)]


def with_skills(project: Path) -> Path:
    folder = project / ".claude" / "skills"
    shutil.copytree(FIXTURES / "internal-comms", folder / "internal-comms")
    shutil.copytree(FIXTURES / "webapp-testing", folder / "webapp-testing")
    return folder


async def test_skills_lists_them_and_sends_one_by_hand(project: Path, llm: FakeLLM) -> None:
    folder = with_skills(project)
    llm.script(Reply(text="Here is the 3P update."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/skills")
        (listing,) = await wait_for(
            pilot, lambda: list(app.conversation.query(HelpMessage)), what="the table"
        )
        assert (
            "| `internal-comms` | A set of resources to help me write all kinds of internal" in listing.source
        )
        assert "| project: `.claude/skills/webapp-testing` |" in listing.source
        assert not llm.requests  # listing sends nothing
        await run_turn(pilot, app, "/skills internal-comms a 3P update for the platform team")
        [live] = users(app)
        await app.action_quit()
    assert (
        live
        == "/skills internal-comms a 3P update for the platform team\n@.claude/skills/internal-comms/SKILL.md"
    )
    sent = llm.requests[0].body["messages"][-1]
    assert sent["role"] == "user"
    head, _, attached = without_environment(sent["content"]).partition("\n\n")
    assert head == "/skills internal-comms a 3P update for the platform team"
    assert attached.startswith('<file path=".claude/skills/internal-comms/SKILL.md">\n')
    assert 'The user chose the skill "internal-comms" with /skills: follow it' in attached
    assert "## When to use this skill" in attached  # the body
    assert f"Its folder is {folder / 'internal-comms'}:" in attached
    assert "- examples/3p-updates.md" in attached
    # A resumed session shows the message as the chat did, not the skill's text.
    app = make_app(project, continue_last=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: users(app), what="the replayed history")
        assert users(app) == [live]


async def test_an_unknown_skill_is_an_error_naming_the_skills(project: Path, llm: FakeLLM) -> None:
    with_skills(project)
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/skills pdf")
        found = await wait_for(pilot, lambda: [n for n in notices(app) if "no skill" in n], what="the error")
        assert found == ["error: no skill named 'pdf' (skills: internal-comms, webapp-testing)"]
        assert not llm.requests


async def test_skills_without_any(project: Path, llm: FakeLLM) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/skills")
        found = await wait_for(
            pilot, lambda: [n for n in notices(app) if "No skills" in n], what="the notice"
        )
        assert "No skills: put SKILL.md folders in .etcode/skills/ or .claude/skills/" in found[0]


async def test_a_skill_the_model_may_not_load_is_sent_by_hand(project: Path, llm: FakeLLM) -> None:
    deploy = project / ".claude" / "skills" / "deploy"
    deploy.mkdir(parents=True)
    (deploy / "SKILL.md").write_text(
        "---\nname: deploy\ndescription: Deploys.\ndisable-model-invocation: true\n---\nRun make deploy.\n"
    )
    llm.script(Reply(text="Deploying."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/skills")
        (listing,) = await wait_for(
            pilot, lambda: list(app.conversation.query(HelpMessage)), what="the table"
        )
        assert "| `deploy` | Deploys. |" in listing.source
        await run_turn(pilot, app, "/skills deploy to staging")
    body = llm.requests[0].body
    assert "Run make deploy." in body["messages"][-1]["content"]
    assert "Skill" not in [t["function"]["name"] for t in body.get("tools", [])]

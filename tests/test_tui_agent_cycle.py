"""Ctrl+N says what the agent it switched to does: its name and the first line of its own
description (a built-in's, or the config's for the user's own agents); ``/agent`` lists them."""

from __future__ import annotations

from pathlib import Path

from tests.tui_support import SIZE, ProjectSpec, make_app, ready, submit, wait_for

REVIEWER = "Reviews the diff and names what is wrong.\nSecond line, not shown."
PROJECT = ProjectSpec(settings={"agent": {"reviewer": {"description": REVIEWER, "mode": "primary"}}})


def toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_ctrl_n_says_what_each_agent_does(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        names = app.host.agent_names()
        assert names[-1] == "reviewer" and "workflow" in names
        for name in names[1:]:
            await pilot.press("ctrl+n")
            await wait_for(pilot, lambda n=name: app.status_bar.info.agent == n, what=name)
        said = [t for t in toasts(app) if t.startswith("Agent: ")]
        workflow = next(t for t in said if t.startswith("Agent: workflow"))
        assert workflow.startswith("Agent: workflow — Planner → Executor → Verifier: plans todos"), workflow
        assert "Agent: plan — Read-only planning" in said[0], said
        assert said[-1] == "Agent: reviewer — Reviews the diff and names what is wrong.", said
        await submit(pilot, app, "/agent")
        listing = await wait_for(
            pilot, lambda: [n for n in app.conversation.query("Notice") if "available:" in str(n.render())]
        )
        text = str(listing[-1].render())
        assert "  workflow — Planner → Executor → Verifier" in text, text
        assert "  reviewer — Reviews the diff and names what is wrong." in text, text
        assert "Second line" not in text

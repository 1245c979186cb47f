"""The model picker (``/model`` with completion) and agent cycling (Ctrl+N), in the running TUI."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fake_llm import FakeLLM, Reply
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, run_turn, wait_for

PROJECT = ProjectSpec(provider={"models": {"other-model": {}, "big-model": {"limit": {"context": 64000}}}})


def menu(app: Any) -> list[str]:
    box = app.prompt
    return list(box.completion.values) if box.menu_open and box.completion else []


def system_text(request: Any) -> str:
    messages = request.body["messages"]
    return "\n".join(str(m["content"]) for m in messages if m["role"] == "system")


def tool_names(request: Any) -> set[str]:
    return {t["function"]["name"] for t in request.body.get("tools", [])}


async def test_model_command_completes_configured_models_and_switches(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="from the other model"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await pilot.press("/", "m", "o")
        assert menu(app) == ["/model"]
        await pilot.press("tab")  # accepts /model: the models are offered at once
        assert app.prompt.input.text == "/model "
        choices = await wait_for(pilot, lambda: menu(app), what="the model list")
        assert set(choices) == {"fake/test-model", "fake/other-model", "fake/big-model"}
        assert choices[0] == "fake/test-model"  # the current model first
        await pilot.press("o", "t", "h")
        assert menu(app) == ["fake/other-model"]
        await pilot.press("enter")  # chooses it and runs the command
        await wait_for(pilot, lambda: app.status_bar.info.model == "fake/other-model", what="the switch")
        assert app.prompt.input.text == ""
        assert app.status_bar.info.context_limit is None  # other-model states no window
        await run_turn(pilot, app, "hello")
        assert llm.requests[-1].body["model"] == "other-model"


async def test_model_completion_matches_inside_the_name(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.prompt.input.set_text("/model big")
        await wait_for(pilot, lambda: menu(app), what="the model list")
        assert menu(app) == ["fake/big-model"]
        await pilot.press("tab")
        assert app.prompt.input.text == "/model fake/big-model "
        assert app.status_bar.info.model == "fake/test-model"  # Tab completes, does not send


async def test_ctrl_n_cycles_agents_for_the_next_turn(project: Path, llm: FakeLLM) -> None:
    llm.script(Reply(text="planned"), Reply(text="built"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        assert app.status_bar.info.agent == "build"
        await pilot.press("ctrl+n")
        await wait_for(pilot, lambda: app.status_bar.info.agent == "plan", what="the plan agent")
        assert "plan · fake/test-model" in str(app.status_bar.render())
        await run_turn(pilot, app, "make a plan")
        plan_request = llm.requests[-1]
        assert "<plan_mode>" in system_text(plan_request)
        assert "WriteFile" not in tool_names(plan_request) and "ReadFile" in tool_names(plan_request)
        names = app.host.agent_names()
        assert names[:2] == ["build", "plan"]
        for following in [*names[2:], "build"]:  # ... and round to build again
            await pilot.press("ctrl+n")
            await wait_for(pilot, lambda n=following: app.status_bar.info.agent == n, what=following)
        await run_turn(pilot, app, "now build it")
        build_request = llm.requests[-1]
        assert "<plan_mode>" not in system_text(build_request)
        assert "WriteFile" in tool_names(build_request)
        # the same session goes on: the plan turn is in the build turn's history
        assert "make a plan" in str(build_request.body["messages"])

"""Background processes in the chat (issue 29): the status bar counts the running ones,
``/bashes`` lists them and kills one (``k`` in the list, or ``/bashes kill ID``), a model
or agent switch keeps them, and ``/exit``, Ctrl+C twice and ``/new`` end them: no process
group is left. Real processes started by the real Bash tool, asked for by the scripted model."""

from __future__ import annotations

import contextlib
import os
import signal
from pathlib import Path

import pytest

from etcode.ui.tui.widgets.bashes import BashesScreen
from etcode.ui.tui.widgets.messages import Notice
from tests.fake_llm import Call, FakeLLM, Reply
from tests.process_support import group_alive, kill_all, live_with, survivors, token
from tests.tui_support import SIZE, ProjectSpec, make_app, ready, run_turn, submit, wait_for

PROJECT = ProjectSpec(settings={"permission": {"bash": "allow"}})


def background(command: str, call_id: str, description: str = "") -> Call:
    params: dict[str, object] = {"command": command, "run_in_background": True}
    if description:
        params["description"] = description
    return Call("Bash", params, id=call_id)


def group_command(pid_file: Path, mark: str) -> str:
    """A shell that writes its pid (its group's id) and waits on two children of its group."""
    return f"echo $$ > {pid_file}; sleep {mark} & sleep {mark} & wait"


def notices(app) -> list[str]:
    return [str(n.render()) for n in app.conversation.query(Notice)]


def status_text(app) -> str:
    return str(app.status_bar.render())


async def test_the_status_bar_counts_them_and_bashes_kills_one(project: Path, llm: FakeLLM) -> None:
    first, second = token(), token()
    llm.script(
        Reply(
            text="Starting two.",
            calls=[
                background(f"sleep {first}", "call_1", "first sleeper"),
                background(f"sleep {second}", "call_2"),
            ],
        ),
        Reply(text="Both run."),
    )
    app = make_app(project)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            assert "background" not in status_text(app)
            await run_turn(pilot, app, "start two sleepers")
            await wait_for(pilot, lambda: "⏵ 2 background" in status_text(app), what="the count of 2")
            await submit(pilot, app, "/bashes")
            screen = await wait_for(pilot, lambda: isinstance(app.screen, BashesScreen) and app.screen)
            rows = [str(option.prompt) for option in screen.query_one("#bashes-list").options]
            assert rows[0].split()[:2] == ["bash_1", "running"] and f"sleep {first}" in rows[0]
            assert rows[1].split()[:2] == ["bash_2", "running"] and f"sleep {second}" in rows[1]
            await pilot.press("k")  # the highlighted one: the first
            await wait_for(pilot, lambda: "⏵ 1 background" in status_text(app), what="the count of 1")
            assert await survivors(first, 10) == []
            await wait_for(
                pilot,
                lambda: "killed" in str(screen.query_one("#bashes-list").options[0].prompt),
                what="the row to show the kill",
            )
            await pilot.press("escape")
            await wait_for(pilot, lambda: not isinstance(app.screen, BashesScreen), what="the list to close")
            await submit(pilot, app, "/bashes kill bash_9")
            await wait_for(pilot, lambda: any("no background process 'bash_9'" in n for n in notices(app)))
            assert "running: bash_2" in notices(app)[-1]
            await submit(pilot, app, "/bashes kill bash_2")
            await wait_for(pilot, lambda: any(n.startswith("Killed bash_2") for n in notices(app)))
            await wait_for(pilot, lambda: "background" not in status_text(app), what="the count to go")
            assert live_with(second) == []
            await submit(pilot, app, "/bashes kill bash_2")
            await wait_for(pilot, lambda: any("bash_2 is not running (killed)" in n for n in notices(app)))
    finally:
        kill_all(live_with(first) + live_with(second))


async def test_bashes_with_none_says_so(project: Path) -> None:
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "/bashes")
        await wait_for(pilot, lambda: any(n.startswith("No background processes") for n in notices(app)))
        assert not isinstance(app.screen, BashesScreen)
        await submit(pilot, app, "/bashes stop all")
        await wait_for(pilot, lambda: any("/bashes takes nothing or kill ID" in n for n in notices(app)))


@pytest.mark.parametrize("how", ["/exit", "ctrl+c twice"])
async def test_quitting_ends_every_background_group(project: Path, llm: FakeLLM, how: str) -> None:
    mark, pid_file = token(), project / "group.pid"
    llm.script(Reply(calls=[background(group_command(pid_file, mark), "call_g")]), Reply(text="Running."))
    app = make_app(project)
    pgid = 0
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            await run_turn(pilot, app, "start it")
            await wait_for(
                pilot,
                lambda: pid_file.exists() and len(live_with(mark)) >= 3,
                what="the shell and two sleeps",
            )
            pgid = int(pid_file.read_text().strip())
            assert group_alive(pgid)
            if how == "/exit":
                await submit(pilot, app, "/exit")
            else:
                await pilot.press("ctrl+c")
                await pilot.press("ctrl+c")
            await wait_for(pilot, lambda: app._quit_done, what="the app to quit")
        # Said after the chat (launch prints them on stderr), not in a conversation being torn down.
        assert [w.split(":")[0] for w in app.quit_warnings] == [
            "stopped 1 background process with the session"
        ]
        assert await survivors(mark, 10) == []
        assert not group_alive(pgid), "the background process group outlived the chat"
    finally:
        kill_all(live_with(mark))
        if pgid:
            with contextlib.suppress(OSError):
                os.killpg(pgid, signal.SIGKILL)


async def test_a_model_switch_keeps_them_and_a_new_session_ends_them(project: Path, llm: FakeLLM) -> None:
    mark = token()
    llm.script(Reply(calls=[background(f"sleep {mark}", "call_s")]), Reply(text="Running."))
    app = make_app(project)
    try:
        async with app.run_test(size=SIZE) as pilot:
            await ready(pilot, app)
            await run_turn(pilot, app, "start it")
            await wait_for(pilot, lambda: "⏵ 1 background" in status_text(app), what="the count")
            old_agent = app.host.agent
            await submit(pilot, app, "/model fake/test-model")
            await wait_for(pilot, lambda: app.host.agent is not old_agent, what="the new agent")
            await wait_for(pilot, lambda: any(n.startswith("Model:") for n in notices(app)))
            assert len(live_with(mark)) == 1, "a model switch ended the background process"
            assert [i.status for i in app.host.agent.background.list()] == ["running"]
            assert "⏵ 1 background" in status_text(app)
            await submit(pilot, app, "/new")
            await wait_for(pilot, lambda: any(n == "New session." for n in notices(app)))
            assert await survivors(mark, 10) == []
            await wait_for(pilot, lambda: "background" not in status_text(app), what="the count to go")
            await wait_for(
                pilot, lambda: any("stopped 1 background process with the session" in n for n in notices(app))
            )
    finally:
        kill_all(live_with(mark))


def test_a_row_shows_status_run_time_and_the_commands_first_line() -> None:
    from dataclasses import replace

    from etcode.tools.background import BackgroundInfo
    from etcode.ui.tui.background import process_row, runtime_text

    info = BackgroundInfo("bash_12", "npm run dev\n  --port 3000", "dev server", "running", None, 1, 1000.0)
    assert process_row(info, None, now=1125.0) == "bash_12   running     2m05s  npm run dev …"
    exited = replace(info, status="exited", exit_code=1)
    assert process_row(exited, 1007.9, now=5000.0).split()[:4] == ["bash_12", "exit", "1", "7s"]
    killed = replace(info, status="killed", exit_code=-15)
    assert process_row(killed, None).split()[:3] == ["bash_12", "killed", "-"]  # its end unseen
    assert [runtime_text(s) for s in (0, 59.9, 60, 3599, 7325)] == ["0s", "59s", "1m00s", "59m59s", "2h02m"]
    long = replace(info, command="x" * 200)
    assert len(process_row(long, None, now=1000.0).split("  ")[-1]) == 80


def test_the_count_comes_before_the_figures_a_narrow_bar_cuts_first() -> None:
    from etcode.ui.tui.widgets.status import StatusInfo

    info = StatusInfo(agent="build", model="fake/m", context_tokens=1200, cost=0.5, background=2)
    assert info.left().plain == "build · fake/m · ⏵ 2 background · 1.2k tokens · $0.5000"
    assert "background" not in StatusInfo(agent="build", model="fake/m").left().plain

"""The permission dialog cannot be answered by accident (issue 12.1), driven with Pilot.

Keys typed before the dialog was visible, or until the typing stops, go to the chat input;
"Allow always" needs a deliberate choice. The guard is driven by its delay (a long one where
a key must land inside it) and by waiting for the armed state, never by sleeping.
"""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from textual import events
from textual.widgets import Button

from etcode.ui.tui.widgets.permission import PermissionScreen
from tests.fake_llm import Call, FakeLLM, Recorded, Reply
from tests.tui_support import SIZE, ProjectSpec, make_app, permission_dialog, ready, submit, wait_for

PROJECT = ProjectSpec(settings={"permission": {"bash": "ask"}}, files={"build/": "", "dist/": ""})


@pytest.fixture
def slow_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 3 s guard, so keys pressed right after the dialog appears land inside it even on a
    loaded machine (they take milliseconds); the tests then wait for the armed state."""
    monkeypatch.setattr(PermissionScreen, "ARM_DELAY", 3.0, raising=False)


def rm(target: str) -> Reply:
    return Reply(calls=[Call("Bash", {"command": f"rm -rf {target}", "description": f"remove {target}"})])


def buttons_disabled(screen: PermissionScreen) -> bool:
    return all(b.disabled for b in screen.query(Button))


def hint(screen: PermissionScreen) -> str:
    return str(screen.query_one("#permission-keys").render())


async def test_keys_pressed_as_the_dialog_opens_do_nothing_and_go_to_the_chat_input(
    project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(
        PermissionScreen, "ARM_DELAY", 600.0, raising=False
    )  # every key below lands in the guard
    llm.script(rm("build"), Reply(text="Stopped."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        screen = await permission_dialog(pilot, app, armed=False)
        await pilot.press("y", "1", "a", "2", "enter", "n", "3", "escape", "space", "o", "k")
        assert app.screen is screen and not screen.armed
        assert buttons_disabled(screen) and screen.focused is None
        assert "waiting for the typing to stop" in hint(screen)
        assert app.prompt.input.text == "y1a2n3 ok"  # typed on, not lost; Enter/Esc dropped
        assert (project / "build").is_dir()
        assert len(app.asker.asked) == 1
        app.host.agent.interrupt()
        await wait_for(pilot, lambda: not app.busy, what="the interrupt")
    assert (project / "build").is_dir()


async def test_keys_typed_before_the_dialog_stay_in_the_input(
    project: Path, llm: FakeLLM, slow_guard: None
) -> None:
    """Typing while the model thinks; the dialog appears; nothing typed answers it."""
    release = threading.Event()

    def held(recorded: Recorded) -> Reply:
        release.wait(30)
        return rm("build")

    llm.script(held, Reply(text="Done."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        await wait_for(pilot, lambda: llm.requests, what="the request")
        await pilot.press("t", "h", "e", "n", "space", "r", "u")
        release.set()
        screen = await permission_dialog(pilot, app, armed=False)
        await pilot.press("n", "space", "a", "n", "y")
        assert app.screen is screen and not screen.armed
        assert app.prompt.input.text == "then run any"
        screen = await permission_dialog(pilot, app)  # the typing stopped: armed
        assert screen.focused is not None and screen.focused.id == "allow-once"
        assert (project / "build").is_dir()
        await pilot.press("y")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert not (project / "build").exists()
        assert app.prompt.input.text == "then run any"


async def test_a_buffered_key_older_than_the_dialog_is_ignored_after_arming(
    project: Path, llm: FakeLLM
) -> None:
    """A key read from the terminal before the dialog was painted but handled after (the app
    was busy) is type-ahead, whenever it is handled."""
    llm.script(rm("build"), Reply(text="Done."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        screen = await permission_dialog(pilot, app)
        assert screen.shown_at is not None
        stale = events.Key("y", "y")
        stale.time = screen.shown_at - 0.01
        app.post_message(stale)
        await pilot.pause()
        await pilot.pause()
        assert app.screen is screen and screen.armed
        assert app.prompt.input.text == "y"
        assert (project / "build").is_dir()
        await pilot.press("y")  # a fresh key after the guard: allow once
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert not (project / "build").exists()


async def test_any_other_key_after_arming_means_still_typing(
    project: Path, llm: FakeLLM, slow_guard: None
) -> None:
    llm.script(rm("build"), Reply(text="Done."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        screen = await permission_dialog(pilot, app)
        await pilot.press("a")  # selects "Allow always" ...
        await pilot.press("o", "k")  # ... but the user was typing: guarded again
        assert not screen.armed and buttons_disabled(screen)
        await pilot.press("enter")  # not a confirmation while guarded
        assert app.screen is screen and app.prompt.input.text == "ok"
        await permission_dialog(pilot, app)
        assert screen.focused is not None and screen.focused.id == "allow-once"  # not "always"
        await pilot.press("3")
        await pilot.press("enter")  # reject, no reason
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
    assert (project / "build").is_dir()
    assert "denied by the user" in str(llm.requests[1].body)


async def test_a_alone_only_selects_allow_always_and_enter_confirms(project: Path, llm: FakeLLM) -> None:
    llm.script(rm("build"), rm("dist"), Reply(text="Both gone."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        screen = await permission_dialog(pilot, app)
        await pilot.press("a")
        assert app.screen is screen and screen.armed
        assert screen.focused is not None and screen.focused.id == "allow-always"
        assert "Enter: allow rm * for this session" in hint(screen)
        assert (project / "build").is_dir()
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert len(app.asker.asked) == 1  # `rm -rf dist` matched the new session rule
    assert not (project / "build").exists() and not (project / "dist").exists()


async def test_arrows_and_enter_choose_allow_always(project: Path, llm: FakeLLM) -> None:
    llm.script(rm("build"), rm("dist"), Reply(text="Both gone."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        screen = await permission_dialog(pilot, app)
        await pilot.press("right", "right", "left")  # once → always → reject → always
        assert screen.focused is not None and screen.focused.id == "allow-always"
        await pilot.press("enter")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert len(app.asker.asked) == 1
    assert not (project / "dist").exists()


async def test_y_allows_once_so_the_next_command_asks_again_and_n_rejects(
    project: Path, llm: FakeLLM
) -> None:
    llm.script(rm("build"), rm("dist"), Reply(text="Kept dist."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        first = await permission_dialog(pilot, app)
        await pilot.press("a", "y")  # "a" only selected; "y" allows once
        second = await permission_dialog(pilot, app)
        assert second is not first and second.request.metadata["command"] == "rm -rf dist"
        await pilot.press("n")
        assert second.typing_reason
        await pilot.press("k", "e", "e", "p", "enter")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        assert len(app.asker.asked) == 2
    assert not (project / "build").exists() and (project / "dist").is_dir()
    assert "keep" in str(llm.requests[2].body)


async def test_escape_rejects_once_armed(project: Path, llm: FakeLLM) -> None:
    llm.script(rm("build"), Reply(text="Fine."))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await submit(pilot, app, "clean up")
        await permission_dialog(pilot, app)
        await pilot.press("escape")
        await wait_for(pilot, lambda: not app.busy, what="the end of the turn")
        (widget,) = app.conversation.tools.values()
        assert widget.is_error
    assert (project / "build").is_dir()


def test_dialog_text_says_what_a_command_reads_and_why_it_asks() -> None:
    from etcode.permission import PermissionRequest
    from etcode.ui.tui.widgets.permission import request_details, request_title

    read = PermissionRequest("read", [".env"], {"via": "Bash", "command": "cat .env"})
    assert request_title(read) == "Bash wants permission: read .env"
    assert "reads .env" in str(request_details(read))
    dynamic = PermissionRequest(
        "bash",
        ['eval "$C"'],
        {"command": 'eval "$C"', "problems": ["eval of text known only at run time"]},
        "Bash",
    )
    assert "eval of text known only at run time" in str(request_details(dynamic))
    local = PermissionRequest(
        "private_network",
        ["http://localhost:8000/"],
        {"url": "http://localhost:8000/", "reason": "on this machine"},
    )
    assert "on this machine" in str(request_details(local))

"""Images in the chat: an image file's path pasted into the input (a file dropped on the
terminal: quoted, a ``file://`` URL, escaped spaces) shows as ``[image: NAME W×H]`` and the
image goes with the message; ``@shot.png`` (completed or typed) attaches the image. Real
turns against the scripted server; the images checked in the agent's user message."""

from __future__ import annotations

import base64
import shutil
import sys
import time
from pathlib import Path

import pytest
from textual import events

from etcode.provider.types import Message
from etcode.ui.tui.widgets.messages import UserMessage
from tests.cli_helpers import write_config as write_wire_config
from tests.fake_llm import Call, FakeLLM, Reply, user_images
from tests.require import needs
from tests.test_image_inputs import jpeg, png
from tests.test_tui_cli import Tmux, _quote, tmux_env
from tests.tui_support import SIZE, make_app, ready, run_turn, wait_for, write_config


def _users(app) -> list[Message]:
    assert app.host is not None
    return [m for m in app.host.agent.history if m.role == "user"]


def _shown(app) -> list[str]:
    return [str(widget.render()) for widget in app.conversation.query(UserMessage)]


async def _paste(pilot, app, text: str, expect: str) -> None:
    app.post_message(events.Paste(text))  # as a terminal's paste (or a dropped file) arrives
    await wait_for(pilot, lambda: app.prompt.input.text.endswith(expect), what=f"the paste of {text!r}")


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_pasted_image_paths_become_labels_and_images(
    project: Path, llm: FakeLLM, tmp_path: Path, wire: str
) -> None:
    write_wire_config(project, llm, wire)
    shots = tmp_path / "my shots"
    shots.mkdir()
    (shots / "page one.png").write_bytes(png(320, 200))
    (shots / "b.jpg").write_bytes(jpeg(50, 40))
    (project / "local.png").write_bytes(png(12, 10))
    llm.script(Reply(text="three images seen"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.prompt.input.set_text("compare ")
        await _paste(pilot, app, f"'{shots / 'page one.png'}'", "[image: page one.png 320×200]")
        app.prompt.input.insert(" with ")
        await _paste(pilot, app, f"file://{shots / 'b.jpg'}".replace(" ", "%20"), "[image: b.jpg 50×40]")
        app.prompt.input.insert(" and ")
        await _paste(pilot, app, "local.png\n", "[image: local.png 12×10]")  # relative: the project's
        text = app.prompt.input.text
        assert text == (
            "compare [image: page one.png 320×200] with [image: b.jpg 50×40] and [image: local.png 12×10]"
        )
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.turn is not None and not app.busy, what="the turn")
        await pilot.pause()
        (user,) = _users(app)
        assert user.text.startswith(text)
        assert [(i.name, i.width, i.height) for i in user.images] == [
            ("page one.png", 320, 200),
            ("b.jpg", 50, 40),
            ("local.png", 12, 10),
        ]
        assert base64.b64decode(user.images[2].data) == (project / "local.png").read_bytes()
        assert text in str(llm.requests[0].body)
        assert user_images(llm.requests[0].body) == [  # the request carries the files' bytes
            ("image/png", (shots / "page one.png").read_bytes()),
            ("image/jpeg", (shots / "b.jpg").read_bytes()),
            ("image/png", (project / "local.png").read_bytes()),
        ]
        assert _shown(app) == [text]
        assert app.prompt.input.images == {}  # the next message starts without them


async def test_escaped_path_a_deleted_label_and_what_is_no_image(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    write_config(project, llm)
    (tmp_path / "a b.png").write_bytes(png(8, 8))
    (tmp_path / "gone.png").write_bytes(png(9, 9))
    (tmp_path / "fake.png").write_text("not an image", encoding="utf-8")
    llm.script(Reply(text="ok"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await _paste(pilot, app, str(tmp_path / "a\\ b.png"), "[image: a b.png 8×8]")
        await _paste(pilot, app, str(tmp_path / "gone.png"), "[image: gone.png 9×9]")
        app.prompt.input.set_text(app.prompt.input.text.replace("[image: gone.png 9×9]", " "))
        fake = str(tmp_path / "fake.png")
        await _paste(pilot, app, fake, fake)  # no image: the path as pasted, and a warning
        assert any("image not attached" in n.message and "fake.png" in n.message for n in app._notifications)
        missing = str(tmp_path / "missing.png")
        await _paste(pilot, app, missing, missing)  # names no file: text
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.turn is not None and not app.busy, what="the turn")
        (user,) = _users(app)
        assert [i.name for i in user.images] == ["a b.png"]  # the deleted label's image stays home


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_at_mention_of_an_image_attaches_it(project: Path, llm: FakeLLM, wire: str) -> None:
    write_wire_config(project, llm, wire)
    (project / "screens").mkdir()
    (project / "screens" / "shot.png").write_bytes(png(64, 48))
    (project / "notes.txt").write_text("NOTES\n", encoding="utf-8")
    llm.script(Reply(text="a red square"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        for key in ("at", "s", "h", "o"):
            await pilot.press(key)
        await wait_for(pilot, lambda: app.prompt.menu_open, what="the completion menu")
        assert app.prompt.completion is not None and "@screens/shot.png" in app.prompt.completion.values
        await pilot.press("tab")
        app.prompt.input.insert("and @notes.txt: what is wrong?")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.turn is not None and not app.busy, what="the turn")
        await pilot.pause()
        (user,) = _users(app)
        assert [(i.name, i.width, i.height) for i in user.images] == [("screens/shot.png", 64, 48)]
        sent = str(llm.requests[0].body)
        assert "@screens/shot.png and @notes.txt: what is wrong?" in sent
        assert '<file path="screens/shot.png" note="image, attached: 64×48" />' in sent
        assert "NOTES" in sent  # a text file is still attached as text
        assert user_images(llm.requests[0].body) == [
            ("image/png", (project / "screens" / "shot.png").read_bytes())
        ]
        (shown,) = _shown(app)
        assert "[image: screens/shot.png 64×48]" in shown and "@notes.txt" in shown


@needs("tmux", shutil.which("tmux") is None, "tmux is not installed")
def test_a_file_dropped_on_a_real_terminal_is_sent_as_an_image(
    project: Path, llm: FakeLLM, tmp_path: Path
) -> None:
    """tmux pastes the quoted path as a terminal does for a dropped file (bracketed paste)."""
    import json

    from etcode.session.store import SessionStore

    write_config(project, llm)
    shot = tmp_path / "my shots" / "login page.png"
    shot.parent.mkdir()
    shot.write_bytes(png(64, 48))
    llm.script(Reply(text="The button is off."))
    tmux = Tmux("drop")
    try:
        tmux.start(f"env {tmux_env()} TERM=xterm-256color {_quote(sys.executable)} -m etcode", project)
        tmux.wait_for("Ask anything")
        tmux.run("send-keys", "-t", "drop", "-l", "why? ")
        tmux.run("set-buffer", "-b", "dropped", f"'{shot}'")
        tmux.run("paste-buffer", "-p", "-d", "-b", "dropped", "-t", "drop")  # -p: bracketed
        tmux.wait_for("why? [image: login page.png 64×48]")
        tmux.run("send-keys", "-t", "drop", "Enter")
        tmux.wait_for("The button is off.")
        tmux.run("send-keys", "-t", "drop", "C-c")
        tmux.run("send-keys", "-t", "drop", "C-c")
        deadline = time.monotonic() + 15
        while tmux.alive() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        tmux.kill()
    assert "why? [image: login page.png 64×48]" in json.dumps(llm.requests[0].body, ensure_ascii=False)
    store = SessionStore.open()
    try:
        [info] = store.list_sessions()
        [user] = [m for m in store.load_messages(info.id) if m.role == "user"]
    finally:
        store.close()
    assert [(i.name, i.width, i.height) for i in user.images] == [("login page.png", 64, 48)]


async def test_a_message_queued_behind_a_turn_keeps_its_images(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "later.png").write_bytes(png(7, 5))
    import threading

    release = threading.Event()

    def held(_request) -> Reply:  # the first answer waits until the second message is queued
        release.wait(60)
        return Reply(text="first")

    llm.script(held, Reply(text="second"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.prompt.input.set_text("first")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.busy, what="the first turn")
        await _paste(pilot, app, str(project / "later.png"), "[image: later.png 7×5]")
        await pilot.press("enter")
        assert app.busy and len(app.queued) == 1  # sent while the first turn runs
        release.set()
        await wait_for(pilot, lambda: len(_users(app)) == 2 and not app.busy, timeout=30, what="both turns")
        first, second = _users(app)
        assert first.images == [] and [i.name for i in second.images] == ["later.png"]


async def test_a_custom_command_takes_its_own_and_the_pasted_images(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    commands = project / ".etcode" / "commands"
    commands.mkdir(parents=True)
    (commands / "review-ui.md").write_text("Review @design.png against $ARGUMENTS", encoding="utf-8")
    (project / "design.png").write_bytes(png(40, 30))
    (project / "now.png").write_bytes(png(20, 15))
    llm.script(Reply(text="reviewed"))
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.prompt.input.set_text("/review-ui ")
        app.prompt.close_menu()
        await _paste(pilot, app, str(project / "now.png"), "[image: now.png 20×15]")
        app.prompt.close_menu()
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.turn is not None and not app.busy, what="the turn")
        (user,) = _users(app)
        assert [(i.name, i.width) for i in user.images] == [("design.png", 40), ("now.png", 20)]
        assert "Review @design.png against [image: now.png 20×15]" in user.text


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_png_read_by_read_file_in_the_chat_reaches_the_model(
    project: Path, llm: FakeLLM, wire: str
) -> None:
    from tests.image_making import decode, gradient, write_image
    from tests.test_image_reads import _tool_images

    write_wire_config(project, llm, wire)
    shot = write_image(project / "screenshot.png", gradient(1280, 720))
    write_image(project / "photo.png", gradient(6000, 4000))
    llm.script(
        Reply(
            calls=[
                Call("ReadFile", {"file_path": "screenshot.png"}, id="call_small"),
                Call("ReadFile", {"file_path": "photo.png"}, id="call_big"),
            ]
        ),
        Reply(text="Two gradients."),
    )
    app = make_app(project)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "what is in screenshot.png and photo.png?")
    assert len(llm.requests) == 2
    images = _tool_images(llm.requests[1].body, wire)
    assert [base64.b64decode(i["data"]) for i in images["call_small"]] == [shot]
    [big] = images["call_big"]
    assert decode(big["data"]).size == (1568, 1045)


async def test_a_text_only_model_in_the_chat_gets_the_notices(project: Path, llm: FakeLLM) -> None:
    import json

    from etcode.contract import events as ev
    from tests.fake_llm import image_parts, refusing_images
    from tests.tui_support import record_events

    (project / "models.json").write_text(
        json.dumps({"fake": {"models": {"test-model": {"modalities": {"input": ["text"]}}}}})
    )
    write_wire_config(project, llm, model_catalog="models.json")
    (project / "diagram.png").write_bytes(png(30, 20))
    (project / "pasted.png").write_bytes(png(12, 10))
    llm.script(
        refusing_images(Reply(calls=[Call("ReadFile", {"file_path": "diagram.png"}, id="call_d")])),
        refusing_images(Reply(text="I read about them only.")),
    )
    app = make_app(project)
    seen = record_events(app)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        app.prompt.input.set_text("look at ")
        await _paste(pilot, app, "pasted.png", "[image: pasted.png 12×10]")
        await pilot.press("enter")
        await wait_for(pilot, lambda: app.turn is not None and not app.busy, timeout=30, what="the turn")
    assert len(llm.requests) == 2 and [image_parts(r.body) for r in llm.requests] == [0, 0]
    last = llm.requests[1].text
    assert "image not sent: model test-model does not take images [image: pasted.png 12×10]" in last
    assert "image not sent: model test-model does not take images [image: diagram.png 30×20]" in last
    warnings = [e.message for e in seen if isinstance(e, ev.WarningEvent)]
    assert warnings == ["images not sent: model test-model does not take images"]

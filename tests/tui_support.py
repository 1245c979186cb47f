"""Helpers for the TUI tests: a project pointed at the fake LLM server, and Pilot waits."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from etcode.contract import events as ev
from etcode.ui.tui.app import EtcodeApp
from etcode.ui.tui.history import PromptHistory
from etcode.ui.tui.options import TuiOptions
from tests.fake_llm import FakeLLM
from tests.project_support import ProjectSpec as ProjectSpec
from tests.project_support import write_config as write_config

SIZE = (120, 40)


def write_priced_config(project: Path, llm: FakeLLM) -> None:
    """Like :func:`write_config`, with a 100k window and prices ($3 / $15 per million)."""
    provider = {
        "id": "fake",
        "type": "openai",
        "baseURL": llm.openai_base_url,
        "apiKey": "sk-test",
        "models": {
            "test-model": {
                "limit": {"context": 100000, "output": 4000},
                "cost": {"input": 3.0, "output": 15.0},
            }
        },
    }
    config = {"model": "fake/test-model", "provider": [provider]}
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")


def make_app(project: Path, **options: Any) -> EtcodeApp:
    max_widgets = options.pop("max_widgets", None)
    return EtcodeApp(
        TuiOptions(directory=project, **options), history=PromptHistory(), max_widgets=max_widgets
    )


def record_events(app: EtcodeApp) -> list[ev.Event]:
    """Every event the app's feed handles, in order."""
    seen: list[ev.Event] = []
    handle = app.feed.handle

    async def recording(event: ev.Event) -> None:
        seen.append(event)
        await handle(event)

    app.feed.handle = recording  # type: ignore[method-assign]
    return seen


async def wait_for(pilot: Any, predicate: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    """Let the app run until ``predicate()`` is truthy; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what or predicate}")
        await pilot.pause(0.02)


async def ready(pilot: Any, app: EtcodeApp) -> None:
    """Wait for the agent to exist and its runtime to be built."""
    await wait_for(pilot, lambda: app.host is not None, what="the agent")
    await wait_for(pilot, lambda: not _running(app, "warm-up"), what="warm-up")


def _running(app: EtcodeApp, group: str) -> bool:
    return any(w.group == group and not w.is_finished for w in app.workers)


async def submit(pilot: Any, app: EtcodeApp, text: str) -> None:
    """Type ``text`` into the input and press Enter."""
    app.prompt.input.set_text(text)  # as if typed: the cursor ends up at the end
    await pilot.pause()
    app.prompt.close_menu()
    await pilot.press("enter")  # (Pilot waits for an idle loop after a key: up to ~1 s mid-stream)


async def run_turn(pilot: Any, app: EtcodeApp, text: str, timeout: float = 20.0) -> None:
    """Send ``text`` and wait until the turn is over."""
    await submit(pilot, app, text)
    await wait_for(pilot, lambda: app.turn is not None, timeout, "the turn to start")
    await wait_for(pilot, lambda: not app.busy, timeout, "the turn to end")
    await pilot.pause()


async def permission_dialog(pilot: Any, app: EtcodeApp, *, armed: bool = True, timeout: float = 20.0) -> Any:
    """Wait for the permission dialog (armed by default: it takes keys only after the
    type-ahead guard) and return it."""
    from etcode.ui.tui.widgets.permission import PermissionScreen

    def shown() -> Any:
        screen = app.screen
        return (
            isinstance(screen, PermissionScreen) and (not armed or getattr(screen, "armed", True)) and screen
        )

    try:
        return await wait_for(pilot, shown, timeout, "the permission dialog" + (" to arm" if armed else ""))
    except AssertionError as timed_out:
        raise AssertionError(f"{timed_out}; {_dialog_state(app)}") from None


def _dialog_state(app: EtcodeApp) -> str:
    """What the app shows, for a failed wait on the permission dialog."""
    screen = app.screen
    state = {
        "screen": type(screen).__name__,
        "stack": [type(s).__name__ for s in app.screen_stack],
        "armed": getattr(screen, "armed", None),
        "shown_at": getattr(screen, "shown_at", None),
        "busy": app.busy,
        "turn": app.turn is not None,
        "asked": [request.permission for request in app.asker.asked],
    }
    return ", ".join(f"{key}={value!r}" for key, value in state.items())


async def settle(seconds: float = 0.05) -> None:
    await asyncio.sleep(seconds)

"""Tool-call summaries are redacted before they are cut (issue 12, point 8): a command holding
a key, cut to 80 (or 60) characters mid-key, used to show the key's start
(``● Bash (export K=sk-proj-AB…)``) because half a key is neither a known value nor a key
shape. Checked in every front end that prints summaries: ``etcode run`` (plain and JSON),
``etcode sessions show``, and the TUI (live and replayed)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from etcode.ui.tui.widgets.tool import ToolMessage
from tests.cli_helpers import etcode, result_line, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.tui_support import SIZE, make_app, ready, run_turn, wait_for

KEY = "sk-proj-Zq9XwV7bN3mK8pL2rT6yH4jD1fG5sA0c"  # configured as the provider's apiKey
TOKEN = "tok-4Hq8Wd2Lm7Rb9Xc3Vn6"  # a secret-named environment variable: no key shape
ENV = {"MY_SERVICE_TOKEN": TOKEN}
#: The starts a cut would leave: for the 80-column summary ("echo " + 62 + " " → 11 chars
#: of the key) and for the 60-column one of ``sessions show`` (45 → 9 chars).
LEAKS = ("sk-proj-Z", "Zq9X", "tok-4H", "4Hq8")


def _calls() -> list[Call]:
    return [
        Call("Bash", {"command": f"echo {'x' * 62} {KEY}"}),
        Call("Bash", {"command": f"echo {'y' * 45} {KEY}"}),
        Call("Bash", {"command": f"echo {'z' * 62} {TOKEN}"}),
        Call("Bash", {"command": f"echo {'w' * 45} {TOKEN}"}),
    ]


def _assert_no_leak(text: str) -> None:
    for start in LEAKS:
        assert start not in text, f"{start!r} shown:\n{text}"


@pytest.fixture
def configured(project: Path, llm: FakeLLM) -> Path:
    write_config(project, llm, api_key=KEY)
    return project


def test_plain_progress_lines(configured: Path, llm: FakeLLM) -> None:
    llm.script(Reply(calls=_calls()), Reply(text="done"))
    proc = etcode("run", "echo them", cwd=configured, env=ENV)
    assert proc.returncode == 0, proc.stderr
    assert "● Bash (echo xxxx" in proc.stderr and "[REDAC" in proc.stderr
    _assert_no_leak(proc.stdout + proc.stderr)


def test_json_events_and_sessions_show(configured: Path, llm: FakeLLM) -> None:
    llm.script(Reply(calls=_calls()), Reply(text="done"))
    proc = etcode("run", "--format", "json", "echo them", cwd=configured, env=ENV)
    assert proc.returncode == 0, proc.stderr
    calls = [e for e in map(json.loads, proc.stdout.splitlines()) if e["type"] == "tool_call_start"]
    assert len(calls) == 4 and all(c["summary"].startswith("echo ") for c in calls)
    _assert_no_leak(proc.stdout + proc.stderr)
    shown = etcode("sessions", "show", result_line(proc)["session_id"], cwd=configured, env=ENV)
    assert shown.returncode == 0, shown.stderr
    assert "● Bash (echo yyyy" in shown.stdout
    _assert_no_leak(shown.stdout)


async def test_tui_live_and_replayed(configured: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_TOKEN", TOKEN)
    llm.script(Reply(calls=_calls()), Reply(text="done"))
    app = make_app(configured)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "echo them")
        live = list(app.conversation.tools.values())
        assert len(live) == 4
        for tool in live:
            tool.action_toggle_detail()  # the expanded output shows the command too
        await pilot.pause()
        _assert_no_leak("\n".join(_shown(tool) for tool in live))
        await app.action_quit()
    app = make_app(configured, continue_last=True)
    async with app.run_test(size=SIZE) as pilot:
        await ready(pilot, app)
        await wait_for(pilot, lambda: len(app.conversation.tools) == 4, what="the replayed history")
        replayed = list(app.conversation.tools.values())
        assert all(tool.title.startswith("Bash (echo ") for tool in replayed)
        _assert_no_leak("\n".join(_shown(tool) for tool in replayed))


def _shown(tool: ToolMessage) -> str:
    """What the widget shows: its head, its └ line and its expanded detail."""
    return "\n".join([tool.title, tool.line_text, str(tool.detail_renderable())])


def test_session_titles(configured: Path, llm: FakeLLM) -> None:
    """A title is the first line of the prompt cut to 60 characters: redacted first."""
    llm.script(Reply(text="ok"))
    proc = etcode("run", f"deploy {'p' * 40}={KEY} now", cwd=configured)  # one long word
    assert proc.returncode == 0, proc.stderr
    listed = etcode("sessions", "list", cwd=configured, env={"COLUMNS": "200"})
    assert listed.returncode == 0, listed.stderr
    assert "deploy ppp" in listed.stdout
    _assert_no_leak(listed.stdout)

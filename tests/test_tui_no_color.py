"""``NO_COLOR=1``: the chat paints no colour and no background of its own (the terminal's
default shows through), and what colour used to mark (the input's cursor) stays visible."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.fake_llm import Call, FakeLLM, Reply
from tests.test_tui_render import screen_segments
from tests.tui_support import ProjectSpec, make_app, ready, run_turn

PROJECT = ProjectSpec(files={"app.py": "".join(f"line{i} = {i}\n" for i in range(20))})


@pytest.mark.parametrize("theme", ["", "light"])
async def test_no_color_uses_the_terminals_own_background(
    project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch, theme: str
) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    monkeypatch.setenv("ETCODE_THEME", theme) if theme else monkeypatch.delenv("ETCODE_THEME", raising=False)
    llm.script(
        Reply(
            calls=[
                Call("Edit", {"file_path": "app.py", "old_string": "line1 = 1", "new_string": "line1 = 2"})
            ]
        ),
        Reply(text="Done:\n\n```python\nline1 = 2\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"),
    )
    app = make_app(project)
    async with app.run_test(size=(100, 40)) as pilot:
        await ready(pilot, app)
        await run_turn(pilot, app, "change it")
        await pilot.pause()
        segments = screen_segments(app)
        painted = {
            (segment.text, str(segment.style.bgcolor))
            for segment in segments
            if segment.style is not None
            and segment.style.bgcolor is not None
            and not segment.style.bgcolor.is_default
        }
        assert not painted, sorted(painted)[:10]
        coloured = {
            str(segment.style.color)
            for segment in segments
            if segment.style is not None
            and segment.style.color is not None
            and not segment.style.color.is_default
        }
        assert not coloured, coloured
        assert app.screen.styles.background.ansi == -1  # Textual's ansi_default: the terminal's own
        assert any(s.style is not None and s.style.reverse for s in segments), (
            "the input's cursor is invisible"
        )

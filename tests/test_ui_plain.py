"""The plain renderer: stdout gets the answer, stderr the tool blocks."""

from __future__ import annotations

import io

from etcode.contract import events as ev
from etcode.ui.jsonl import JsonLinesRenderer
from etcode.ui.plain import PlainRenderer


def render(events: list[ev.Event], *, live: bool) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, err, live=live, color=False)
    for event in events:
        renderer.handle(event)
    return out.getvalue(), err.getvalue()


PARALLEL = [
    ev.TextDeltaEvent("Reading"),
    ev.ToolCallStart("c1", "ReadFile", {"file_path": "a.py"}, "a.py"),
    ev.ToolCallStart("c2", "ReadFile", {"file_path": "b.py"}, "b.py"),
    ev.ToolResultEvent("c2", "ReadFile", False, "Read 3 lines", "..."),
    ev.ToolResultEvent("c1", "ReadFile", True, "File not found: a.py", "..."),
    ev.TextDeltaEvent("Done."),
    ev.DoneEvent({"type": "result"}),
]


def test_pipe_mode_writes_finished_pairs_that_never_interleave() -> None:
    out, err = render(PARALLEL, live=False)
    assert out == "Reading\nDone.\n"
    assert err.splitlines() == [
        "● ReadFile (b.py)",
        "  └ Read 3 lines",
        "● ReadFile (a.py)",
        "  └ ⚠ File not found: a.py",
    ]


def test_live_mode_shows_executing_then_rewrites_the_line_in_place() -> None:
    _, err = render(PARALLEL[:4], live=True)
    assert err.startswith("● ReadFile (a.py)\n  └ executing...\n● ReadFile (b.py)\n  └ executing...\n")
    # c2's line is 1 line up: cursor up 1, clear, write, back down.
    assert err.endswith("\x1b[1A\r\x1b[2K  └ Read 3 lines\x1b[1B\r")
    _, err = render(PARALLEL[:5], live=True)
    assert err.endswith("\x1b[3A\r\x1b[2K  └ ⚠ File not found: a.py\x1b[3B\r")


def test_notices_go_to_stderr_on_their_own_line() -> None:
    out, err = render(
        [
            ev.TextDeltaEvent("partial"),
            ev.RetryEvent(1, 0.5, "429 rate limited"),
            ev.WarningEvent("instruction URL timed out"),
            ev.ErrorEvent("anthropic: 500 server error"),
        ],
        live=False,
    )
    assert out == "partial\n"
    assert err.splitlines() == [
        "⟳ retrying in 0.5s (attempt 1): 429 rate limited",
        "warning: instruction URL timed out",
        "error: anthropic: 500 server error",
    ]


def test_json_lines_end_with_the_result() -> None:
    out = io.StringIO()
    renderer = JsonLinesRenderer(out)
    renderer.handle(ev.TextDeltaEvent("hi"))
    renderer.handle(ev.DoneEvent({"type": "result", "result": "hi"}))
    lines = out.getvalue().splitlines()
    assert lines == [
        '{"type": "text_delta", "version": 1, "text": "hi"}',
        '{"type": "result", "version": 1, "result": "hi"}',
    ]


def test_partial_failure_summary_is_yellow_not_an_error() -> None:
    events = [
        ev.ToolCallStart("c1", "ReadManyFiles", {"paths": ["a", "b", "c"]}, "3 files"),
        ev.ToolResultEvent(
            "c1", "ReadManyFiles", False, "Read 1 file (6 B), 2 errors ⚠", "...", {"errorCount": 2}
        ),
    ]
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, err, live=False, color=True)
    for event in events:
        renderer.handle(event)
    assert "  └ \x1b[33mRead 1 file (6 B), 2 errors ⚠\x1b[0m" in err.getvalue()
    _, plain = render(events, live=False)
    assert plain.splitlines()[-1] == "  └ Read 1 file (6 B), 2 errors ⚠"

"""Live output of running commands (issue 15): the core's ``tool_progress`` events (rate
limited, coalesced, cleaned), their renderings (plain, JSON Lines) and a real Bash run."""

from __future__ import annotations

import asyncio
import io
import json
from pathlib import Path

from etcode.contract import events as ev
from etcode.tools.base import ToolContext
from etcode.tools.bash import BashParams, BashTool
from etcode.tools.progress import OutputProgress, clean_output
from etcode.ui.live_tail import LiveTail, cut_to_cells, elapsed_text
from etcode.ui.plain import PlainRenderer
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


async def test_a_flood_of_output_is_coalesced_into_at_most_ten_events_a_second() -> None:
    clock, events = Clock(), []
    progress = OutputProgress(events.append, "c1", "Bash", clock=clock)
    lines = [f"line {i}\n" for i in range(1000)]
    for i, line in enumerate(lines):  # 1,000 lines over one second
        clock.now = i / 1000
        progress.feed(line.encode())
    progress.close()
    assert 2 <= len(events) <= 11
    assert "".join(e.text for e in events) == "".join(lines)  # nothing lost, in order
    assert all(isinstance(e, ev.ToolProgress) and e.call_id == "c1" for e in events)
    assert [e.elapsed for e in events] == sorted(e.elapsed for e in events)


async def test_output_held_back_by_the_rate_limit_is_sent_without_more_output() -> None:
    sent = asyncio.Event()
    events: list[ev.ToolProgress] = []

    def emit(event: ev.ToolProgress) -> None:
        events.append(event)
        if "second" in event.text:
            sent.set()

    progress = OutputProgress(emit, "c1", "Bash", interval=0.05)
    progress.feed(b"first\n")
    progress.feed(b"second\n")  # within the interval: pending, flushed by a timer
    assert [e.text for e in events] == ["first\n"]
    await asyncio.wait_for(sent.wait(), 10)
    assert [e.text for e in events] == ["first\n", "second\n"]
    progress.close()
    assert len(events) == 2


async def test_a_long_burst_keeps_its_tail_and_counts_what_it_skipped() -> None:
    events: list[ev.ToolProgress] = []
    progress = OutputProgress(events.append, "c1", "Bash", max_chars=100, clock=Clock())
    progress.feed(b"x")  # the first event goes out at once
    progress.feed(b"".join(b"%05d\n" % i for i in range(1000)))
    progress.close()
    last = events[-1]
    assert len(last.text) == 100 and last.text.endswith("00999\n")
    assert last.skipped == 6000 - 100


async def test_escapes_and_line_ends_split_between_reads_are_joined() -> None:
    events: list[ev.ToolProgress] = []
    clock = Clock()
    progress = OutputProgress(events.append, "c1", "Bash", clock=clock)
    for piece in [b"\x1b[3", b"1mred\x1b[0m\r", b"\nnext \xe2\x9c", b"\x94 ok\n"]:
        clock.now += 1  # every read may be sent
        progress.feed(piece)
    progress.close()
    assert "".join(e.text for e in events) == "red\nnext ✔ ok\n"


def test_clean_output_collapses_progress_bar_redraws() -> None:
    assert clean_output("10%\r20%\r30%\ndone\x07\n") == "\r30%\ndone\n"
    tail = LiveTail(keep=2)
    for text in ["a\nb\n", "dl 10%", "\rdl 20%", clean_output("\rdl 30%\rdl 40%")]:
        tail.feed(text)
    assert tail.tail() == ["b", "dl 40%"]
    assert tail.last_line() == "dl 40%"
    assert elapsed_text(12.7) == "12s" and elapsed_text(185) == "3m 05s"
    assert cut_to_cells("abcdef", 4) == "abc…"


async def test_bash_reports_output_while_the_command_still_runs(tmp_path: Path) -> None:
    """The first line arrives while the command waits for a file only the test creates."""
    seen: list[ev.ToolProgress] = []
    first = asyncio.Event()

    def emit(event: object) -> None:
        if isinstance(event, ev.ToolProgress):
            seen.append(event)
            if "line1" in event.text:
                first.set()

    command = "echo line1; for i in $(seq 400); do [ -f go ] && break; sleep 0.05; done; echo line2"
    ctx = ToolContext("ses", "call_1", tmp_path, tmp_path, emit=emit)
    run = asyncio.create_task(BashTool().run(BashParams(command=command), ctx))
    await asyncio.wait_for(first.wait(), 20)
    assert not run.done()  # the line came before the end
    (tmp_path / "go").write_text("", encoding="utf-8")
    result = await asyncio.wait_for(run, 30)
    assert result.output == "line1\nline2"
    assert "".join(e.text for e in seen) == "line1\nline2\n"
    assert {e.call_id for e in seen} == {"call_1"} and {e.name for e in seen} == {"Bash"}


def render_plain(events: list[ev.Event], *, live: bool) -> str:
    err = io.StringIO()
    renderer = PlainRenderer(io.StringIO(), err, live=live, color=False)
    for event in events:
        renderer.handle(event)
    return err.getvalue()


RUN = [
    ev.ToolCallStart("c1", "Bash", {"command": "make"}, "make"),
    ev.ToolProgress("c1", "Bash", "compiling a.c\ncompiling b.c\n", 3.2),
    ev.ToolResultEvent("c1", "Bash", False, "2 lines of output", "compiling a.c\ncompiling b.c"),
]


def test_plain_rewrites_the_running_line_on_a_terminal_only() -> None:
    live = render_plain(RUN, live=True)
    assert "  └ running 3s · compiling b.c" in live
    assert live.count("\n") == 2  # rewritten in place: no new lines
    piped = render_plain(RUN, live=False)
    assert piped.splitlines() == ["● Bash (make)", "  └ 2 lines of output"]


def test_json_mode_streams_progress_events_of_a_slow_command(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    command = "for i in 1 2 3; do echo line$i; sleep 0.3; done"
    llm.script(Reply(calls=[Call("Bash", {"command": command}, id="call_slow")]), Reply(text="ran it"))
    proc = etcode("run", "--format", "json", "run it", cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [line["type"] for line in lines]
    progress = [line for line in lines if line["type"] == "tool_progress"]
    assert len(progress) >= 2, types  # the lines came 0.3 s apart: not one batch at the end
    assert {p["call_id"] for p in progress} == {"call_slow"}
    assert "".join(p["text"] for p in progress) == "line1\nline2\nline3\n"
    assert types.index("tool_call_start") < types.index("tool_progress")
    assert max(i for i, t in enumerate(types) if t == "tool_progress") < types.index("tool_result")

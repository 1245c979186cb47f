"""Every number the user documentation (README.md, docs/) states as a behaviour, tested on
both sides of it.

Each test uses the figure as the documentation writes it (not the constant), so changing the
constant without the docs fails here; each names where the figure lives in the code.
"""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.http_support import serving
from tests.require import missing
from tests.tool_support import make_ctx

KIB = 1024
MIB = 1024 * 1024


# ---- etcode run: at most max_tool_calls (64) calls of one answer run ----------------------------


def test_64_calls_of_one_answer_run_and_the_65th_is_answered_not_run(project: Path, llm: FakeLLM) -> None:
    """config/schema.py max_tool_calls (default 64) through the real run."""
    write_config(project, llm)

    def writes(prefix: str, count: int) -> list[Call]:
        return [Call("WriteFile", {"file_path": f"{prefix}{i}.txt", "content": "x\n"}) for i in range(count)]

    llm.script(Reply(calls=writes("a", 64)), Reply(calls=writes("b", 65)), Reply(text="Done."))
    proc = etcode("run", "make files", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert len(list(project.glob("a*.txt"))) == 64  # 64: every call ran
    assert "64 tool calls" not in proc.stderr
    assert sorted(p.name for p in project.glob("b*.txt")) == sorted(f"b{i}.txt" for i in range(64))
    assert "the model made 65 tool calls in one answer; running the first 64" in proc.stderr
    after_64 = [m for m in llm.requests[1].body["messages"] if m["role"] == "tool"]
    assert len(after_64) == 64 and not any("Not run" in m["content"] for m in after_64)
    after_65 = [m for m in llm.requests[2].body["messages"] if m["role"] == "tool"][64:]
    assert len(after_65) == 65
    assert not any("Not run" in m["content"] for m in after_65[:64])
    assert after_65[64]["content"].startswith("Not run: this answer made 65 tool calls and at most 64 run")


async def test_the_library_s_loop_runs_64_calls_of_one_answer_and_not_65(tmp_path: Path) -> None:
    """contract/results.py LoopLimits.max_tool_calls (the Python API's default)."""
    from etcode.engine.limits import LoopLimits
    from etcode.engine.loop import AgentLoop
    from etcode.engine.settings import LoopSettings
    from etcode.provider.types import Message
    from etcode.tools.base import tool
    from etcode.tools.registry import ToolRegistry
    from tests.scripted import Answer, ScriptedProvider

    ran: list[int] = []

    @tool
    def note(n: int) -> str:
        """Note a number.

        Args:
            n: the number
        """
        ran.append(n)
        return "noted"

    provider = ScriptedProvider(
        Answer(calls=[("note", {"n": i}) for i in range(64)]),
        Answer(calls=[("note", {"n": 100 + i}) for i in range(65)]),
        Answer("Done."),
    )
    settings = LoopSettings(
        provider=provider,
        model="m",
        system=["You are a test."],
        tools=ToolRegistry([note]),
        directory=tmp_path,
        worktree=tmp_path,
        session_id="ses_test",
        limits=LoopLimits(),
    )
    loop = AgentLoop(settings, [], Message.user("go"))
    async for _ in loop.events():
        pass
    assert sorted(ran) == [*range(64), *range(100, 164)]
    results = [r for m in provider.requests[2].messages if m.role == "tool" for r in m.tool_results]
    assert [r.output.startswith("Not run") for r in results] == [False] * 128 + [True]


# ---- the chat: a paste over 10 lines or 1,000 characters is collapsed -----------------------------


async def test_a_paste_of_10_lines_or_1000_characters_stays_and_one_more_collapses() -> None:
    """ui/tui/widgets/prompt.py PASTE_LINES, PASTE_CHARS."""
    from textual import events
    from textual.app import App, ComposeResult

    from etcode.ui.tui.widgets.prompt import PromptInput

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield PromptInput()

    app = Host()
    async with app.run_test() as pilot:
        box = app.query_one(PromptInput)

        async def paste(text: str) -> str:
            box.clear()
            box.focus()
            app.post_message(events.Paste(text))  # as a terminal's paste arrives
            for _ in range(200):
                await pilot.pause()
                if box.text:
                    return box.text
            raise AssertionError(f"the paste of {len(text)} characters never showed")

        ten_lines = "".join(f"line {i}\n" for i in range(10))
        assert await paste(ten_lines) == ten_lines
        eleven_lines = ten_lines + "line 10\n"
        assert await paste(eleven_lines) == "[Pasted text #1 +11 lines]"
        assert box.pastes["[Pasted text #1 +11 lines]"] == eleven_lines
        assert await paste("x" * 1000) == "x" * 1000
        assert await paste("y" * 1001) == "[Pasted text #2 1001 chars]"


# ---- the chat: a running command's block shows its last 5 output lines ----------------------------


async def test_a_running_block_shows_5_output_lines_not_6() -> None:
    """ui/tui/widgets/tool.py LIVE_LINES."""
    from textual.app import App, ComposeResult

    from etcode.ui.tui.widgets.tool import ToolMessage

    class Host(App[None]):
        def compose(self) -> ComposeResult:
            yield ToolMessage("c1", "Bash", "sleep")

    app = Host()
    async with app.run_test():
        block = app.query_one(ToolMessage)
        block.add_output("".join(f"out {i}\n" for i in range(1, 6)))
        assert block.live_text.splitlines() == [f"out {i}" for i in range(1, 6)]
        block.add_output("out 6\n")
        assert block.live_text.splitlines() == [f"out {i}" for i in range(2, 7)]


# ---- the chat: below 100 columns the todo panel sits under the conversation ----------------------


async def test_below_100_columns_the_layout_is_narrow(project: Path, llm: FakeLLM) -> None:
    """ui/tui/app.py NARROW (the screen's ``-narrow`` class moves the todo panel)."""
    from tests.tui_support import make_app, ready, wait_for

    write_config(project, llm)
    app = make_app(project)
    async with app.run_test(size=(99, 30)) as pilot:
        await ready(pilot, app)
        assert app.screen.has_class("-narrow") and not app.screen.has_class("-wide")
        await pilot.resize_terminal(100, 30)
        await wait_for(pilot, lambda: app.screen.has_class("-wide"), timeout=30, what="the wide layout")
        assert not app.screen.has_class("-narrow")


# ---- the chat: the permission dialog takes keys after half a second without typing ---------------


@pytest.mark.parametrize("dialog", ["permission", "trust"])
def test_a_dialog_accepts_keys_half_a_second_after_it_shows(dialog: str) -> None:
    """ui/tui/widgets/guard.py ARM_DELAY (and the dialogs' own)."""
    if dialog == "permission":
        from etcode.permission import PermissionRequest
        from etcode.ui.tui.widgets.permission import PermissionScreen

        screen: Any = PermissionScreen(PermissionRequest("bash", ["ls"]))
    else:
        from etcode.ui.tui.widgets.trust import TrustScreen

        screen = TrustScreen([])
    screen.shown_at = 100.0
    screen.armed = True
    assert not screen.accepts(SimpleNamespace(time=100.49))
    assert screen.accepts(SimpleNamespace(time=100.5))


# ---- the chat: @ completion lists the files again when the list is over 5 s old ------------------


async def test_the_file_list_is_reused_for_5_seconds_and_listed_again_after(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ui/tui/mentions.py MAX_INDEX_AGE."""
    from etcode.ui.tui import mentions

    clock = SimpleNamespace(now=1000.0)
    monkeypatch.setattr(mentions, "time", SimpleNamespace(monotonic=lambda: clock.now))
    (tmp_path / "old.py").write_text("", encoding="utf-8")
    index = mentions.FileIndex(tmp_path)
    assert await index.load() == ["old.py"]
    (tmp_path / "new.py").write_text("", encoding="utf-8")
    clock.now += 5.0
    assert await index.load() == ["old.py"]  # 5 s old: not over 5 s
    clock.now += 0.01
    assert sorted(await index.load()) == ["new.py", "old.py"]


# ---- etcode run --format json: at most about 10 tool_progress events a second per call -----------


async def test_progress_events_are_a_tenth_of_a_second_apart() -> None:
    """tools/progress.py INTERVAL."""
    from etcode.tools.progress import OutputProgress

    clock = SimpleNamespace(now=0.0)
    events: list[Any] = []
    progress = OutputProgress(events.append, "c1", "Bash", clock=lambda: clock.now)
    progress.feed(b"one\n")
    assert [e.text for e in events] == ["one\n"]
    clock.now = 0.099
    progress.feed(b"two\n")
    assert len(events) == 1  # held back
    clock.now = 0.1
    progress.feed(b"three\n")
    assert [e.text for e in events] == ["one\n", "two\nthree\n"]
    progress.close()


# ---- etcode run: a turn that has not stopped 15 s after the first signal quits --------------------


async def test_a_turn_gets_15_seconds_to_stop_after_the_first_signal(monkeypatch: pytest.MonkeyPatch) -> None:
    """cli/run.py STOP_GRACE_SECONDS: the first signal interrupts the agent and sets the
    quit 15 s later (the second one quits at once)."""
    from etcode.cli import run

    loop = asyncio.get_running_loop()
    handlers: dict[int, Any] = {}
    later: list[float] = []
    agent = SimpleNamespace(interrupted=0)
    agent.interrupt = lambda: setattr(agent, "interrupted", agent.interrupted + 1)
    with monkeypatch.context() as patch:  # the loop's own methods are back before anything awaits
        patch.setattr(loop, "add_signal_handler", lambda sig, fn: handlers.__setitem__(sig, fn))
        patch.setattr(loop, "remove_signal_handler", lambda sig: handlers.pop(sig, None))
        patch.setattr(loop, "call_later", lambda delay, fn, *args: later.append(delay))
        restore = run._install_interrupt(agent)  # type: ignore[arg-type]
        try:
            next(iter(handlers.values()))()  # the first Ctrl-C / SIGTERM / SIGHUP
        finally:
            restore()
    assert agent.interrupted == 1 and later == [15.0]


# ---- local models: the first request waits at most 0.3 s for the server's window; the answer is
# cached for an hour ----------------------------------------------------------------------------


def test_the_window_question_waits_0_3_seconds_by_default(monkeypatch: pytest.MonkeyPatch) -> None:
    """provider/discovery.py GRACE."""
    from etcode.provider import discovery

    monkeypatch.delenv("ETCODE_DISCOVERY_WAIT", raising=False)
    assert discovery.configured_grace() == 0.3


@pytest.mark.parametrize("where", ["memory", "disk"])
def test_a_server_s_answer_is_kept_for_an_hour(where: str) -> None:
    """provider/discovery.py CACHE_TTL."""
    from etcode.provider import discovery
    from etcode.provider.discovery import ServerFacts
    from etcode.provider.spec import ProviderSpec

    spec = ProviderSpec("local", "openai", "http://127.0.0.1:9/v1", "qwen", api_key="x")
    discovery.forget_all()
    try:
        discovery.remember(spec, ServerFacts(4096), now=1_000_000.0)
        if where == "disk":
            discovery.forget_all()
        found, facts = discovery.cached(spec, now=1_000_000.0 + 3600 - 0.01)
        assert found and facts is not None and facts.context == 4096
        assert discovery.cached(spec, now=1_000_000.0 + 3600) == (False, None)
    finally:
        discovery.forget_all()


# ---- local models: a window of 16k tokens or less gets the lean prompt ----------------------------


def test_a_window_of_16k_tokens_gets_the_lean_prompt_and_one_more_token_does_not() -> None:
    """wiring/server_window.py LEAN_WINDOW."""
    from etcode.wiring.server_window import wants_lean

    assert wants_lean(None, 16 * 1024)
    assert not wants_lean(None, 16 * 1024 + 1)


# ---- local models: max_tokens is the output limit (at most 32,000), a quarter of the window
# (256 to 8,192), else 4,096 ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("context", "model_output", "expected"),
    [
        (None, 32_000, 32_000),  # the model's output limit, up to 32,000
        (None, 32_001, 32_000),
        (4 * 8_192, None, 8_192),  # a quarter of the window, up to 8,192
        (4 * 8_192 + 4, None, 8_192),
        (4 * 8_192 - 4, None, 8_191),
        (4 * 256, None, 256),  # ... and at least 256
        (4 * 256 - 4, None, 256),
        (4 * 256 + 4, None, 257),
        (None, None, 4_096),  # nothing known
    ],
)
def test_max_tokens_bounds(context: int | None, model_output: int | None, expected: int) -> None:
    """engine/context.py MAX_RESERVE, MAX_DERIVED_ANSWER, MIN_ANSWER, DEFAULT_RESERVE."""
    from etcode.engine.context import answer_size

    assert answer_size(context, model_output, None) == expected


# ---- error messages: keys of 8 characters or more are hidden -----------------------------------


def test_a_key_of_8_characters_is_hidden_and_one_of_7_is_not() -> None:
    """security/redact.py MIN_SECRET_LENGTH."""
    from etcode.security.redact import Redactor

    redactor = Redactor()
    redactor.add("k7seven", "k8eights")
    assert redactor.redact("sent k7seven and k8eights") == "sent k7seven and [REDACTED]"


# ---- sessions: a message over 1 MB is kept in messages/<sha256>.json -------------------------------


def test_a_message_of_1_mib_stays_in_its_row_and_one_byte_more_goes_to_a_file(tmp_path: Path) -> None:
    """session/message_files.py FILE_LIMIT (the encoded message)."""
    from etcode.provider.types import Message, TextPart
    from etcode.session import message_files
    from etcode.session.message_rows import encode
    from etcode.session.store import SessionStore

    store = SessionStore.open(tmp_path / "etcode.db")
    try:
        store.create_session("ses_1", project_id="p", directory=str(tmp_path))
        framing = len(encode(Message("user", [TextPart("")])))
        folder = message_files.folder_of(store.path)
        store.append_messages("ses_1", [Message("user", [TextPart("a" * (MIB - framing))])], turn=1)
        assert not folder.exists() or list(folder.glob("*.json")) == []
        store.append_messages("ses_1", [Message("user", [TextPart("b" * (MIB - framing + 1))])], turn=2)
        assert len(list(folder.glob("*.json"))) == 1
        assert [len(m.text) for m in store.load_messages("ses_1")] == [MIB - framing, MIB - framing + 1]
    finally:
        store.close()


# ---- undo: copies over 256 KB beside the database; over maxFileBytes (50 MB) none ----------------


def test_undo_copies_of_256_kib_stay_in_the_database_and_larger_ones_go_beside_it(tmp_path: Path) -> None:
    """session/snapshot_copies.py INLINE_LIMIT."""
    from etcode.config.schema import Config
    from etcode.session.snapshot_copies import capture

    limit = Config().snapshot.max_file_bytes
    folder = tmp_path / "copies"
    at, over = tmp_path / "at.bin", tmp_path / "over.bin"
    at.write_bytes(b"a" * (256 * KIB))
    over.write_bytes(b"o" * (256 * KIB + 1))
    assert capture(at, folder, limit).copy == "db"
    assert capture(over, folder, limit).copy == "file"


def test_files_of_50_mib_get_an_undo_copy_and_larger_ones_none(tmp_path: Path) -> None:
    """config/schema.py snapshot.maxFileBytes default (the value etcode passes to capture)."""
    from etcode.config.schema import Config
    from etcode.session.snapshot_copies import capture

    limit = Config().snapshot.max_file_bytes
    big = tmp_path / "big.bin"
    with open(big, "wb") as out:
        out.truncate(50 * MIB + 1)
    assert capture(big, tmp_path / "copies", limit).copy == "none"
    with open(big, "r+b") as out:
        out.truncate(50 * MIB)
    assert capture(big, tmp_path / "copies", limit).copy == "file"


# ---- security: a {file:} reference reads a regular file of at most 1 MiB --------------------------


def test_a_file_reference_of_1_mib_is_read_and_one_byte_more_is_refused(tmp_path: Path) -> None:
    """config/loader.py MAX_REFERENCE_BYTES."""
    from etcode.config.loader import read_reference

    reference = tmp_path / "prompt.txt"
    reference.write_text("p" * MIB, encoding="utf-8")
    assert len(read_reference(reference)) == MIB
    reference.write_text("p" * (MIB + 1), encoding="utf-8")
    with pytest.raises(ValueError, match="larger than 1 MiB"):
        read_reference(reference)


# ---- security: WebFetch bodies are capped at 5 MB after gzip/deflate -------------------------------


class _Sized(BaseHTTPRequestHandler):
    """``/plain/N``: N bytes with a Content-Length; ``/stream/N``: without one (the end of
    the connection ends it); ``/gzip/N``: N bytes gzipped."""

    def log_message(self, *args: Any) -> None:
        pass

    def do_GET(self) -> None:  # noqa: N802
        kind, size = self.path.strip("/").split("/")
        body = b"z" * int(size)
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        if kind == "gzip":
            body = gzip.compress(body)
            self.send_header("Content-Encoding", "gzip")
        if kind != "stream":
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


@pytest.fixture(scope="module")
def sized_server() -> Iterator[str]:
    with serving(_Sized) as url:  # a refused body: the client closes while the server writes
        yield url


@pytest.mark.parametrize("kind", ["plain", "stream", "gzip"])
async def test_a_body_of_5_mib_is_fetched_and_one_byte_more_is_refused(
    sized_server: str, tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """tools/web_fetch.py MAX_RESPONSE_BYTES (declared, streamed, inflated)."""
    from etcode.permission import PermissionService, rules_from_config
    from etcode.tools.base import ToolError
    from etcode.tools.web_fetch import WebFetchTool
    from tests.permission_support import Answer

    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    service = PermissionService(rules_from_config({"private_network": "allow"}), Answer(), tmp_path)
    ctx = make_ctx(tmp_path, check_permission=service.check, decide_permission=service.decide)
    tool = WebFetchTool()
    fetched = await tool.run(tool.parse({"url": f"{sized_server}/{kind}/{5 * MIB}", "format": "text"}), ctx)
    assert fetched.data is not None and fetched.data["bytes"] == 5 * MIB
    with pytest.raises(ToolError, match="too large"):
        await tool.run(tool.parse({"url": f"{sized_server}/{kind}/{5 * MIB + 1}", "format": "text"}), ctx)


# ---- the workflow agent: up to three cycles, 3 planner rounds, 10 executor rounds -----------------


def test_the_workflow_defaults_are_the_readme_s() -> None:
    """workflow/engine.py WorkflowLimits (with an empty "workflow" section)."""
    from etcode.config.schema import Config
    from etcode.workflow.engine import WorkflowLimits

    limits = WorkflowLimits.from_config(Config())
    assert (limits.max_cycles, limits.planner_rounds, limits.executor_rounds) == (3, 3, 10)


# ---- performance: glibc's malloc keeps up to 64 MB of freed heap -----------------------------------

_MALLOC_PROBE = """
import ctypes, sys
from etcode.util.memory import keep_freed_memory

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
        "keepcost")]

libc = ctypes.CDLL(None)
if not hasattr(libc, "mallinfo2"):
    print("no mallinfo2")
    sys.exit(0)
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
assert keep_freed_memory()
half = 1 << 19
count = int(float(sys.argv[1]) * 2)
# Nothing of Python's may land between the blocks: the list is made first (a growing list's
# buffer comes from malloc) and ctypes' first-call caches are made by a call before them.
blocks = [0] * count
libc.free(libc.malloc(16))
for index in range(count):
    blocks[index] = libc.malloc(half)  # heap, not mmap: under 4 MB
for block in reversed(blocks):
    libc.free(block)
print(libc.mallinfo2().keepcost)  # the free heap left at its top
"""


def test_freed_heap_up_to_64_mib_is_kept_and_more_is_returned() -> None:
    """util/memory.py KEEP_FREED_BYTES: freeing 63.5 MiB keeps it; freeing 64.5 MiB gives the
    heap's top back to the kernel (glibc trims when the free top reaches the threshold)."""
    import os
    import subprocess
    import sys

    if not sys.platform.startswith("linux"):
        missing("glibc", "glibc's malloc tuning is Linux only")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MALLOC_")}

    def kept_after_freeing(mib: float) -> int:
        proc = subprocess.run(
            [sys.executable, "-c", _MALLOC_PROBE, str(mib)],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
        assert proc.returncode == 0, proc.stderr
        if proc.stdout.strip() == "no mallinfo2":
            missing("glibc", "this C library has no mallinfo2 (glibc < 2.33 or not glibc)")
        return int(proc.stdout)

    assert kept_after_freeing(63.5) >= 63 * MIB
    assert kept_after_freeing(64.5) < 2 * MIB

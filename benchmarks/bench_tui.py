"""TUI figures (issue 5). Prints, does not assert.

- streaming: the fake server streams ~2,000 tokens/s of Markdown; a key is posted to the
  input every 50 ms and the time until the input has it is measured (target: < 50 ms);
  the final Markdown must equal the streamed text.
- idle CPU: the real ``etcode`` in tmux, idle for 5 s (target: ~0 %), plus the app in-process.
- memory: a 500-message session shown in the conversation (target: < 200 MB RSS), and the
  time to scroll it a page at a time.
- startup: launching ``etcode`` in tmux until the prompt is on screen (target: < 1 s).
- background: key latency while 8 background processes print continuously, idle and while
  the model polls them with BashOutput (issue 29; target: p95 < 16 ms).
  ``python benchmarks/bench_tui.py background`` runs this one alone.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from textual import events  # noqa: E402
from textual.widgets import TextArea  # noqa: E402

from etcode.provider.types import Message, TextPart, ToolCallPart, ToolResultPart  # noqa: E402
from etcode.ui.tui.app import EtcodeApp  # noqa: E402
from etcode.ui.tui.history import PromptHistory  # noqa: E402
from etcode.ui.tui.options import TuiOptions  # noqa: E402
from etcode.ui.tui.replay import replay_history  # noqa: E402
from etcode.ui.tui.widgets.messages import AssistantMessage, FrozenMarkdown  # noqa: E402
from tests.fake_llm import FakeLLM  # noqa: E402

SIZE = (120, 40)
TOKENS_PER_SECOND = 2000
CHARS_PER_TOKEN = 4
CHUNK_CHARS = 16  # ~4 tokens per SSE chunk


def markdown_text(tokens: int) -> str:
    """Roughly ``tokens`` tokens of varied Markdown: headings, lists, code, tables."""
    parts: list[str] = []
    i = 0
    while sum(len(p) for p in parts) < tokens * CHARS_PER_TOKEN:
        i += 1
        parts.append(
            f"## Section {i}\n\nSome **bold** text, `code`, and a [link](https://example.com/{i}).\n\n"
        )
        parts.append("".join(f"- item {i}.{j} with a few words in it\n" for j in range(5)) + "\n")
        parts.append(f"```python\ndef f{i}(x):\n    return x * {i}\n```\n\n")
        parts.append("| a | b |\n|---|---|\n" + "".join(f"| {j} | {j * i} |\n" for j in range(3)) + "\n")
    return "".join(parts)


class ServerProcess:
    """The fake LLM server in its own process, so it streams at its own pace (in-process,
    it would share the GIL with the app being measured)."""

    def __init__(self, replies: list[dict[str, Any]]) -> None:
        self.replies = replies
        self.proc: subprocess.Popen[str] | None = None
        self.openai_base_url = ""

    def __enter__(self) -> ServerProcess:
        code = (
            "import json, sys, time\n"
            f"sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})\n"
            "from tests.fake_llm import Call, FakeLLM, Reply\n"
            "replies = json.loads(sys.stdin.readline())\n"
            "with FakeLLM() as llm:\n"
            "    llm.script(*[Reply(**{**r, 'calls': [Call(**c) for c in r.get('calls', [])]}) for r in replies])\n"
            "    print(llm.openai_base_url, flush=True)\n"
            "    sys.stdin.readline()\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(self.replies) + "\n")
        self.proc.stdin.flush()
        self.openai_base_url = self.proc.stdout.readline().strip()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            assert self.proc.stdin is not None
            self.proc.stdin.write("\n")
            self.proc.stdin.flush()
            self.proc.wait(timeout=10)


def make_project(root: Path, llm: Any, **extra: Any) -> Path:
    project = root / "project"
    project.mkdir(exist_ok=True)
    config = {
        "model": "fake/bench-model",
        "provider": [{"id": "fake", "type": "openai", "baseURL": llm.openai_base_url, "apiKey": "sk-bench"}],
        **extra,
    }
    (project / "etcode.json").write_text(json.dumps(config), encoding="utf-8")
    return project


def rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def wait_until(predicate: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met")
        await asyncio.sleep(0.01)


# ---- streaming and key latency ----------------------------------------------------------


async def bench_streaming(root: Path, seconds: float = 6.0) -> dict[str, float]:
    text = markdown_text(int(TOKENS_PER_SECOND * seconds))
    chunks = len(text) / CHUNK_CHARS
    delay = seconds / chunks
    changed: list[float] = []

    def hook(message: Any) -> None:
        if isinstance(message, TextArea.Changed):
            changed.append(time.perf_counter())

    with ServerProcess([{"text": text, "chunk_size": CHUNK_CHARS, "delay": delay}]) as llm:
        project = make_project(root, llm)
        app = EtcodeApp(TuiOptions(directory=project), history=PromptHistory())
        async with app.run_test(size=SIZE, message_hook=hook) as pilot:
            await wait_until(lambda: app.host is not None)
            await pilot.pause(0.5)
            started = time.perf_counter()
            await app.start_turn("stream", "stream")
            await wait_until(lambda: list(app.conversation.query(AssistantMessage)))
            latencies: list[float] = []
            while app.busy:
                before = len(changed)
                sent = time.perf_counter()
                app.prompt.input.post_message(events.Key("x", "x"))
                try:
                    await wait_until(lambda b=before: len(changed) > b, timeout=5)
                except TimeoutError:
                    break
                latencies.append((changed[before] - sent) * 1000)
                await asyncio.sleep(0.05)
            await wait_until(lambda: not app.busy)
            elapsed = time.perf_counter() - started
            await pilot.pause(0.3)
            shown = "".join(
                w.text for w in app.conversation.entries if isinstance(w, AssistantMessage | FrozenMarkdown)
            )
            complete = shown == text
            typed = app.prompt.input.text.count("x")
    tokens = len(text) / CHARS_PER_TOKEN
    latencies.sort()
    figures = {
        "tokens": tokens,
        "tokens_per_s": tokens / elapsed,
        "keys": len(latencies),
        "p50_ms": statistics.median(latencies),
        "p95_ms": latencies[int(len(latencies) * 0.95) - 1],
        "max_ms": latencies[-1],
        "complete": float(complete),
        "typed": typed,
    }
    print(
        f"streaming  {tokens:,.0f} tokens at {figures['tokens_per_s']:,.0f} tokens/s; "
        f"{len(latencies)} keys: p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms, "
        f"max {figures['max_ms']:.1f} ms (target < 50 ms); final text complete: {complete}; "
        f"all keys reached the input: {typed == len(latencies)}"
    )
    return figures


# ---- a big table streamed in small chunks -------------------------------------------


async def bench_big_table(root: Path, rows: int = 400) -> dict[str, float]:
    """A ``rows``-row Markdown table streamed in 3-character chunks 1 ms apart: seconds
    until the turn ends (all rows drawn) and the key latency meanwhile."""
    body = "".join(f"| {i} | item {i} | {i * 7} |\n" for i in range(rows))
    text = "Table:\n\n| # | name | value |\n|---|------|-------|\n" + body + "\nDone.\n"
    changed: list[float] = []

    def hook(message: Any) -> None:
        if isinstance(message, TextArea.Changed):
            changed.append(time.perf_counter())

    with ServerProcess([{"text": text, "chunk_size": 3, "delay": 0.001}]) as llm:
        project = make_project(root, llm)
        app = EtcodeApp(TuiOptions(directory=project), history=PromptHistory())
        async with app.run_test(size=SIZE, message_hook=hook) as pilot:
            await wait_until(lambda: app.host is not None)
            await pilot.pause(0.5)
            started = time.perf_counter()
            await app.start_turn("table", "table")
            await wait_until(lambda: list(app.conversation.query(AssistantMessage)))
            latencies = await _key_latencies(app, changed, lambda: app.busy, 600)
            await wait_until(lambda: not app.busy, timeout=600)
            elapsed = time.perf_counter() - started
    figures = {
        "rows": float(rows),
        "seconds": elapsed,
        "keys": float(len(latencies)),
        "p50_ms": statistics.median(latencies),
        "p95_ms": _percentile(latencies, 0.95),
        "max_ms": max(latencies),
    }
    print(
        f"big table  {rows} rows in 3-character chunks: turn ended after {elapsed:.1f} s; "
        f"{len(latencies)} keys: p50 {figures['p50_ms']:.1f} ms, p95 {figures['p95_ms']:.1f} ms, "
        f"max {figures['max_ms']:.1f} ms"
    )
    return figures


# ---- background processes (issue 29) ----------------------------------------------------

BACKGROUND = 8
#: Each process prints 20 lines of ~70 characters every 10 ms: ~2,000 lines/s, 8 of them.
PRINTER = (
    'python3 -u -c "import time\nfor i in range(10**9):\n'
    "    print('\\n'.join(f'line {i}.{j} ' + 'x' * 60 for j in range(20)))\n    time.sleep(0.01)\""
)
POLL_ROUNDS = 20


def _percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, int(len(ordered) * share + 0.5) - 1))]


async def _key_latencies(
    app: EtcodeApp, changed: list[float], keep_going: Any, seconds: float
) -> list[float]:
    """Post a key to the input every 50 ms while ``keep_going()`` (at most ``seconds``);
    the milliseconds until the input had each."""
    latencies: list[float] = []
    deadline = time.perf_counter() + seconds
    while keep_going() and time.perf_counter() < deadline:
        before = len(changed)
        sent = time.perf_counter()
        app.prompt.input.post_message(events.Key("x", "x"))
        try:
            await wait_until(lambda b=before: len(changed) > b, timeout=5)
        except TimeoutError:
            break
        latencies.append((changed[before] - sent) * 1000)
        await asyncio.sleep(0.05)
    return latencies


def _figures(label: str, latencies: list[float]) -> dict[str, float]:
    figures = {
        "keys": float(len(latencies)),
        "p50_ms": statistics.median(latencies),
        "p95_ms": _percentile(latencies, 0.95),
        "max_ms": max(latencies),
    }
    print(
        f"background {label}: {len(latencies)} keys: p50 {figures['p50_ms']:.1f} ms, "
        f"p95 {figures['p95_ms']:.1f} ms, max {figures['max_ms']:.1f} ms (target p95 < 16 ms)"
    )
    return figures


async def bench_background_keys(root: Path, seconds: float = 5.0) -> dict[str, dict[str, float]]:
    """Key latency with no background process, with 8 printing, and while the model polls
    them (8 BashOutput calls a step, ``POLL_ROUNDS`` steps)."""
    starts = [
        {
            "name": "Bash",
            "arguments": {"command": PRINTER, "run_in_background": True},
            "id": f"call_start_{n}",
        }
        for n in range(BACKGROUND)
    ]

    def rounds(name: str, arguments: Any) -> list[dict[str, Any]]:
        return [
            {
                "text": f"{name}, round {r}.",
                "delay": 0.01,
                "calls": [
                    {"name": name, "arguments": arguments(n), "id": f"call_{name}_{r}_{n}"}
                    for n in range(BACKGROUND)
                ],
            }
            for r in range(POLL_ROUNDS)
        ]

    polls = rounds("BashOutput", lambda n: {"bash_id": f"bash_{n + 1}"})
    reads = rounds("ReadFile", lambda n: {"file_path": "etcode.json"})  # the same turn without them
    replies = [
        {"calls": starts},
        {"text": "Started eight."},
        *polls,
        {"text": "Done polling."},
        *reads,
        {"text": "Done reading."},
    ]
    changed: list[float] = []

    def hook(message: Any) -> None:
        if isinstance(message, TextArea.Changed):
            changed.append(time.perf_counter())

    results: dict[str, dict[str, float]] = {}
    with ServerProcess(replies) as llm:
        project = make_project(root, llm, permission={"bash": "allow"})
        app = EtcodeApp(TuiOptions(directory=project), history=PromptHistory())
        async with app.run_test(size=SIZE, message_hook=hook) as pilot:
            await wait_until(lambda: app.host is not None)
            await pilot.pause(0.5)
            try:
                results["none"] = _figures(
                    "none running, idle", await _key_latencies(app, changed, lambda: True, seconds)
                )
                await app.start_turn("start eight printers", "start eight printers")
                await wait_until(lambda: not app.busy)
                await wait_until(lambda: app.background.count == BACKGROUND)
                assert app.host is not None
                processes = app.host.agent.background
                for info in processes.list():  # what came so far: read
                    await processes.read_new(info.id)
                await asyncio.sleep(1.0)
                printed = 0
                for info in processes.list():
                    printed += len((await processes.read_new(info.id)).text)
                print(f"background 8 printers: {printed / 1e6:.2f} MB/s of output into the buffers")
                results["printing"] = _figures(
                    "8 printing, idle", await _key_latencies(app, changed, lambda: True, seconds)
                )
                await app.start_turn("poll them", "poll them")
                await wait_until(lambda: app.busy)
                results["polling"] = _figures(
                    f"8 printing, the model polling ({POLL_ROUNDS} x 8 BashOutput)",
                    await _key_latencies(app, changed, lambda: app.busy, 120),
                )
                await wait_until(lambda: not app.busy, timeout=120)
                await app.start_turn("the same turn with ReadFile", "read")
                await wait_until(lambda: app.busy)
                results["control"] = _figures(
                    f"8 printing, the same turn with ReadFile instead ({POLL_ROUNDS} x 8)",
                    await _key_latencies(app, changed, lambda: app.busy, 120),
                )
                await wait_until(lambda: not app.busy, timeout=120)
                print(f"background status bar: {str(app.status_bar.render()).split('·')[2].strip()}")
            finally:
                if app.host is not None:
                    await app.host.agent.background.close()
    return results


# ---- idle CPU ---------------------------------------------------------------------------


async def bench_idle_in_process(root: Path, seconds: float = 5.0) -> float:
    with FakeLLM() as llm:
        project = make_project(root, llm)
        app = EtcodeApp(TuiOptions(directory=project), history=PromptHistory())
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(lambda: app.host is not None)
            await pilot.pause(1.0)
            cpu, wall = time.process_time(), time.perf_counter()
            await asyncio.sleep(seconds)
            used = (time.process_time() - cpu) / (time.perf_counter() - wall) * 100
    print(f"idle CPU   in-process (headless): {used:.2f} % over {seconds:.0f} s (target ~0 %)")
    return used


def _tmux(socket: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["tmux", "-L", socket, *args], capture_output=True, text=True, timeout=30)


def _proc_cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench_real_terminal(root: Path, idle_seconds: float = 5.0, runs: int = 5) -> dict[str, float]:
    """Startup to prompt and idle CPU of the real ``etcode`` in tmux."""
    if shutil.which("tmux") is None:
        print("real terminal: skipped (tmux is not installed)")
        return {}
    socket = f"etcode-bench-{os.getpid()}"
    starts: list[float] = []
    idle = float("nan")
    with FakeLLM() as llm:
        project = make_project(root, llm)
        env = {**os.environ, "HOME": str(root / "home"), "XDG_STATE_HOME": str(root / "state")}
        env_args = " ".join(f"{k}='{v}'" for k, v in env.items() if k in ("HOME", "XDG_STATE_HOME", "PATH"))
        command = f"env {env_args} TERM=xterm-256color {sys.executable} -m etcode"
        try:
            for run in range(runs):
                name = f"s{run}"
                started = time.perf_counter()
                _tmux(
                    socket,
                    "new-session",
                    "-d",
                    "-s",
                    name,
                    "-x",
                    "120",
                    "-y",
                    "40",
                    "-c",
                    str(project),
                    command,
                )
                while "Ask anything" not in _tmux(socket, "capture-pane", "-p", "-t", name).stdout:
                    if time.perf_counter() - started > 20:
                        screen = _tmux(socket, "capture-pane", "-p", "-t", name).stdout
                        raise TimeoutError(f"etcode did not show its prompt:\n{screen}")
                    time.sleep(0.005)
                starts.append(time.perf_counter() - started)
                if run == runs - 1:
                    pid = int(_tmux(socket, "display", "-p", "-t", name, "#{pane_pid}").stdout.strip())
                    time.sleep(1.0)
                    cpu, wall = _proc_cpu_seconds(pid), time.perf_counter()
                    time.sleep(idle_seconds)
                    idle = (_proc_cpu_seconds(pid) - cpu) / (time.perf_counter() - wall) * 100
                _tmux(socket, "kill-session", "-t", name)
        finally:
            _tmux(socket, "kill-server")
    median = statistics.median(starts)
    print(
        f"startup    etcode to interactive prompt in tmux: median {median * 1000:.0f} ms, "
        f"min {min(starts) * 1000:.0f} ms over {runs} runs (target < 1 s)"
    )
    print(f"idle CPU   real etcode in tmux: {idle:.2f} % over {idle_seconds:.0f} s (target ~0 %)")
    return {"startup_s": median, "idle_pct": idle}


# ---- a 500-message session ----------------------------------------------------------


def long_history(messages: int) -> list[Message]:
    """``messages`` messages: user, assistant with a tool call, tool result, assistant answer."""
    history: list[Message] = []
    i = 0
    while len(history) < messages:
        i += 1
        history.append(Message.user(f"Question {i}: what does module {i} do?"))
        call = ToolCallPart(f"call_{i}", "ReadFile", json.dumps({"file_path": f"src/module_{i}.py"}))
        history.append(Message("assistant", [TextPart("Let me read it."), call]))
        output = "\n".join(f"{n}\tline {n} of module {i}" for n in range(1, 80))
        history.append(Message("tool", [ToolResultPart(call.id, "ReadFile", output)]))
        history.append(Message("assistant", [TextPart(markdown_text(150))]))
    return history[:messages]


async def bench_long_session(messages: int = 500, max_widgets: int | None = None) -> dict[str, float]:
    before = rss_mb()
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as llm:
        project = make_project(Path(tmp), llm)
        options = {"max_widgets": max_widgets} if max_widgets else {}
        app = EtcodeApp(TuiOptions(directory=project), history=PromptHistory(), **options)
        async with app.run_test(size=SIZE) as pilot:
            await wait_until(lambda: app.host is not None)
            started = time.perf_counter()
            await replay_history(app.conversation, long_history(messages))
            await pilot.pause()
            shown = time.perf_counter() - started
            after = rss_mb()
            mounted = len(app.conversation.entries)
            scroll = app.conversation
            scroll.release_anchor()
            lines: list[float] = []
            for _ in range(100):  # a mouse wheel: 3 lines a notch
                t = time.perf_counter()
                scroll.scroll_relative(y=-3, animate=False, immediate=True)
                app.screen._refresh_layout(scroll=True)
                app.screen._compositor_refresh()  # and paint it
                lines.append((time.perf_counter() - t) * 1000)
            pages: list[float] = []
            for _ in range(20):
                t = time.perf_counter()
                scroll.scroll_relative(y=-scroll.size.height, animate=False, immediate=True)
                app.screen._refresh_layout(scroll=True)
                app.screen._compositor_refresh()  # and paint it
                pages.append((time.perf_counter() - t) * 1000)
    label = f"max {max_widgets} widgets" if max_widgets else "default pruning"
    print(
        f"memory     {messages}-message session ({label}): RSS {after:.0f} MB "
        f"(+{after - before:.0f} MB; target < 200 MB), {mounted} entries mounted, "
        f"shown in {shown:.1f} s; scrolling 3 lines: median {statistics.median(lines):.1f} ms, "
        f"max {max(lines):.1f} ms; a page: median {statistics.median(pages):.1f} ms, max {max(pages):.1f} ms"
    )
    return {"rss_mb": after, "line_ms": statistics.median(lines), "page_ms": statistics.median(pages)}


async def main_async(root: Path) -> None:
    await bench_streaming(root)
    await bench_idle_in_process(root)
    await bench_big_table(root / "table")
    await bench_long_session()


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        os.environ.setdefault("HOME", str(root / "home"))
        if sys.argv[1:] == ["background"]:
            asyncio.run(bench_background_keys(root))
            return
        if sys.argv[1:2] == ["table"]:  # table [ROWS]
            asyncio.run(bench_big_table(root, *(int(n) for n in sys.argv[2:3])))
            return
        asyncio.run(main_async(root))
        asyncio.run(bench_background_keys(root / "background"))
        bench_real_terminal(root)


if __name__ == "__main__":
    main()

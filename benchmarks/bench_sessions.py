"""Session store and token figures (targets: load 2,000 messages < 300 ms; append a step
< 5 ms; token estimate of 1 MB of text < 100 ms).

- load: ``SessionStore.load_messages`` + the crash repair for a 2,000-message batch
  (a realistic mix: prompts, answers with tool calls, tool results of 1-4 KB);
- append: one finished step through the recorder (assistant message, tool results and
  the usage row: three small transactions on the writer thread, as the loop does it);
- tokens: ``count_tokens`` of 1 MB of source text with tiktoken's o200k_base (warm; a text
  that large is counted from samples), the same with ``exact=True``, the one-off encoding
  load, and the offline estimate.

Run: ``python benchmarks/bench_sessions.py`` (uses a temporary database).
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
SHARED_TIKTOKEN = Path(__file__).resolve().parents[2] / "shared" / "tiktoken"
if SHARED_TIKTOKEN.is_dir():
    os.environ.setdefault("TIKTOKEN_CACHE_DIR", str(SHARED_TIKTOKEN))

from etcode.engine.history import repair_dangling  # noqa: E402
from etcode.provider.types import Message, TextPart, ToolCallPart, ToolResultPart, Usage  # noqa: E402
from etcode.session.recorder import SessionRecorder  # noqa: E402
from etcode.session.store import SessionStore  # noqa: E402
from etcode.util import tokens  # noqa: E402

MESSAGES = 2_000
RUNS = 7


def sample_turn(i: int) -> list[Message]:
    body = f"line {i}: " + "the quick brown fox jumps over the lazy dog " * 40
    return [
        Message.user(f"Please look at module_{i}.py and fix the failing test number {i}."),
        Message(
            "assistant",
            [
                TextPart(f"Reading module_{i}.py."),
                ToolCallPart(f"call_{i}", "ReadFile", f'{{"file_path":"m{i}.py"}}'),
            ],
        ),
        Message("tool", [ToolResultPart(f"call_{i}", "ReadFile", body * (1 + i % 3))]),
        Message("assistant", [TextPart(f"Fixed test {i}: the loop was off by one. " * 5)]),
    ]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def bench_load(store: SessionStore) -> float:
    store.create_session("ses_load", project_id="bench", directory="/bench")
    messages = [m for i in range(MESSAGES // 4) for m in sample_turn(i)]
    for start in range(0, len(messages), 100):
        store.append_messages("ses_load", messages[start : start + 100], turn=1)
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        loaded = store.load_messages("ses_load")
        repair_dangling(loaded)
        samples.append(time.perf_counter() - started)
    assert len(loaded) == MESSAGES
    return median_ms(samples)


async def bench_append(store: SessionStore) -> float:
    store.create_session("ses_append", project_id="bench", directory="/bench")
    recorder = SessionRecorder(store, "ses_append", turn=1)
    history: list[Message] = [Message.user("start")]
    await recorder.checkpoint(history)
    samples = []
    for i in range(200):
        turn = sample_turn(i)
        started = time.perf_counter()
        history.append(turn[1])
        await recorder.step_finished(i + 1, Usage(1000, 100), 0.001)
        await recorder.checkpoint(history)  # the model's answer, before its tools run
        history.append(turn[2])
        await recorder.checkpoint(history)  # the tool results
        samples.append(time.perf_counter() - started)
    return median_ms(samples)


def bench_tokens() -> tuple[float | None, float | None, float | None, float]:
    source = (Path(__file__).resolve().parent.parent / "etcode" / "engine" / "loop.py").read_text()
    text = (source * (1_048_576 // len(source) + 1))[:1_048_576]
    warm = load = exact = None
    if tokens.encoding_file("o200k_base") is not None:
        started = time.perf_counter()
        tokens.count_tokens("warm up", "gpt-4o")
        load = (time.perf_counter() - started) * 1000
        samples = []
        for _ in range(RUNS):
            started = time.perf_counter()
            tokens.count_tokens(text, "gpt-4o")
            samples.append(time.perf_counter() - started)
        warm = median_ms(samples)
        samples = []
        for _ in range(3):
            started = time.perf_counter()
            tokens.count_tokens(text, "gpt-4o", exact=True)
            samples.append(time.perf_counter() - started)
        exact = median_ms(samples)
    samples = []
    for _ in range(RUNS):
        started = time.perf_counter()
        tokens.estimate_tokens(text)
        samples.append(time.perf_counter() - started)
    return warm, load, exact, median_ms(samples)


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore.open(Path(folder) / "etcode.db")
        try:
            load = bench_load(store)
            append = asyncio.run(bench_append(store))
        finally:
            store.close()
    warm, enc_load, exact, estimate = bench_tokens()
    print(f"load a {MESSAGES:,}-message session:        {load:7.1f} ms  (target < 300 ms)")
    print(f"append one step (answer+results+usage): {append:7.2f} ms  (target < 5 ms)")
    if warm is not None:
        print(f"token count of 1 MB (o200k_base, warm): {warm:7.1f} ms  (target < 100 ms)")
        print(f"  every byte encoded (exact=True):      {exact:7.1f} ms")
        print(f"  one-off encoding load:                {enc_load:7.1f} ms")
    else:
        print("token count of 1 MB: tiktoken files not cached; estimate only")
    print(f"offline estimate of 1 MB (bytes / 4):   {estimate:7.2f} ms")


if __name__ == "__main__":
    main()

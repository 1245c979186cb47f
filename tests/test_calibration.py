"""Token counts calibrated to the server's own (issue 34, item 4): a local server whose
``usage.prompt_tokens`` is 18% above etcode's tiktoken count teaches a ratio; it scales the
next estimates (the compaction decision), is kept with the server's facts and used by the
next run. Also: a cut that came from the window says so, not "raise max_tokens"."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from etcode.engine.context import TokenEstimator
from etcode.provider.types import Message, TextPart, ToolSchema
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import FakeLLM, Recorded, Reply
from tests.test_server_window import props

RATIO = 1.18
WINDOW = 16384
MODEL = "test-model"


@pytest.fixture(autouse=True)
def patient_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ETCODE_DISCOVERY_WAIT", "60")


def counted(body: dict[str, Any]) -> int:
    """etcode's own (uncalibrated) count of a text-only request, rebuilt from its body."""
    system: list[str] = []
    messages: list[Message] = []
    for item in body["messages"]:
        if item["role"] == "system":
            system.append(item["content"])
        else:
            messages.append(Message(item["role"], [TextPart(item["content"] or "")]))
    tools = [
        ToolSchema(t["function"]["name"], t["function"]["description"], t["function"]["parameters"])
        for t in body.get("tools", [])
    ]
    return TokenEstimator(MODEL).request(system, tools, messages, raw=True)


def larger(text: str, output: int = 5) -> Any:
    """A reply whose usage says the prompt is 18% larger than etcode counts it."""

    def reply(recorded: Recorded) -> Reply:
        return Reply(text=text, usage=(round(RATIO * counted(recorded.body)), output))

    return reply


def events(proc: Any) -> list[dict[str, Any]]:
    return [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]


def stored_facts(home_cache: Path) -> dict[str, Any]:
    data = json.loads((home_cache / "etcode" / "servers.json").read_text())
    (entry,) = data.values()
    return entry["facts"]


def test_the_ratio_is_learned_kept_and_used_by_the_next_run(project: Path, llm: FakeLLM) -> None:
    """Run 1 learns ~1.18 from the server's usage and keeps it with the /props facts. Run 2's
    new message is sized so that its tiktoken count stays under the compaction limit and
    its calibrated count does not: the run compacts before its request, and the estimate it
    reports is the calibrated one. (Run 1's notes make the history an eighth of the limit:
    the system prompt, tools and newest message alone stay in the room the tools are fitted
    to, so run 2 keeps every tool and compacts.)"""
    llm.page("GET /props", props(WINDOW))
    write_config(project, llm, compaction={"threshold": 0.5})
    llm.script(larger("Hello there."))
    line = "The lighthouse keeper wrote the weather into the log at every watch, wind and sea.\n"
    first = etcode("run", "--format", "json", "Keep these notes.\n" + line * 60, cwd=project)
    assert first.returncode == 0, first.stderr
    facts = stored_facts(Path(os.environ["XDG_CACHE_HOME"]))
    assert facts["context"] == WINDOW
    ratio = facts["token_ratio"]
    assert ratio == pytest.approx(RATIO, abs=0.01)
    context = [e["context_tokens"] for e in events(first) if e["type"] == "usage"][-1]

    # the compaction limit: half the usable window (threshold 0.5), the reserve a quarter
    limit = int((WINDOW - WINDOW // 4) * 0.5)
    estimator = TokenEstimator(MODEL)
    text = "Read these notes.\n"
    while context + estimator.message(Message.user(text + line)) < 0.99 * limit:
        text += line
    plain = estimator.message(Message.user(text))
    assert context + plain < limit < context + RATIO * plain * 0.97  # only the calibrated count is over

    llm.script(Reply(text="Summary: the user said hello."), larger("Noted."), larger("Noted."))
    second = etcode("run", "--format", "json", "--continue", text, cwd=project, timeout=120)
    assert second.returncode == 0, second.stderr
    starts = [e for e in events(second) if e["type"] == "compaction" and e["phase"] == "start"]
    assert [e["reason"] for e in starts] == ["auto"], second.stdout[-3000:]
    assert starts[0]["tokens_before"] == pytest.approx(context + ratio * plain, rel=0.01)


def exact(text: str) -> Any:
    def reply(recorded: Recorded) -> Reply:
        return Reply(text=text, usage=(counted(recorded.body), 5))

    return reply


def test_a_server_counting_as_etcode_does_teaches_a_ratio_of_one(project: Path, llm: FakeLLM) -> None:
    """Calibration counts the request as sent, the environment block in its first user
    message too: a server reporting exactly etcode's count of the body teaches 1.0 (the
    block left out taught ~1.04, kept for later runs, where the block was then counted)."""
    llm.page("GET /props", props(WINDOW))
    write_config(project, llm)
    llm.script(exact("Hello there."))
    proc = etcode("run", "--format", "json", "hello", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "<env>" in json.dumps(llm.requests[-1].body)
    facts = stored_facts(Path(os.environ["XDG_CACHE_HOME"]))
    assert facts.get("token_ratio", 1.0) == pytest.approx(1.0, abs=0.01)


async def test_the_ratio_is_kept_off_the_event_loop(
    project: Path, llm: FakeLLM, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ratio learned is written to servers.json in a thread (never on the event loop),
    and the write is finished when the session closes."""
    import threading

    from etcode import Agent
    from etcode.provider import discovery

    writers: list[threading.Thread] = []
    original = discovery.calibrate

    def spy(spec: Any, ratio: float) -> None:
        writers.append(threading.current_thread())
        original(spec, ratio)

    monkeypatch.setattr(discovery, "calibrate", spy)
    llm.page("GET /props", props(WINDOW)).script(larger("Hello there."))
    write_config(project, llm)
    agent = Agent(directory=project, store=False)
    try:
        await agent.arun("hello")
    finally:
        await agent.aclose()
    assert writers and threading.main_thread() not in writers
    facts = stored_facts(Path(os.environ["XDG_CACHE_HOME"]))
    assert facts["token_ratio"] == pytest.approx(RATIO, abs=0.01)


def test_a_hosted_provider_is_not_calibrated(project: Path, llm: FakeLLM) -> None:
    """A server etcode does not ask about itself (the Anthropic wire) keeps tiktoken's counts:
    nothing is learned or stored."""
    write_config(project, llm, "anthropic")
    llm.script(Reply(text="Hi.", usage=(5000, 5)))
    proc = etcode("run", "hello", cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert not (Path(os.environ["XDG_CACHE_HOME"]) / "etcode" / "servers.json").exists()


def test_a_cut_by_the_window_says_the_window_is_full(project: Path, llm: FakeLLM) -> None:
    """llama.cpp stops an answer at n_ctx with finish_reason "length" (prompt + answer =
    the window, the answer short of max_tokens): raising max_tokens cannot help, and the
    notice says what does. An ordinary cut still says to raise max_tokens."""
    llm.page("GET /props", props(2048, tools=False))  # the lean prompt without tools fits 2k
    write_config(project, llm)
    llm.script(Reply(text="The first part", usage=(1922, 126), stop_reason="max_tokens"))
    proc = etcode("run", "explain everything", cwd=project)
    assert proc.returncode == 1
    assert (
        "the context window is full (1,922 tokens of prompt and 126 of answer in a 2,048-token window)"
        in (proc.stderr)
    )
    assert "raising max_tokens cannot help" in proc.stderr and "/compact" in proc.stderr
    assert "Raise it" not in proc.stderr

    llm.script(Reply(text="Cut again", usage=(900, 512), stop_reason="max_tokens"))
    proc = etcode("run", "more", cwd=project)
    assert proc.returncode == 1
    assert "reached its output limit (max_tokens 512)" in proc.stderr
    assert "window is full" not in proc.stderr


def test_a_ratio_learned_corrects_the_next_estimate_in_the_same_run() -> None:
    """The window: after one request counted 18% low, the next estimate of the same request
    (and the compaction decision on it) uses the server's scale; an implausible report (a
    proxy's sum) teaches nothing; a hosted provider's window is not calibrated."""
    from etcode.engine.window import ContextWindow
    from etcode.provider.catalog import ModelCatalog
    from etcode.provider.spec import ProviderSpec
    from etcode.provider.types import Usage

    spec = ProviderSpec(id="local", type="openai", model=MODEL, base_url="http://127.0.0.1:9/v1")
    window = ContextWindow.build(spec, catalog=ModelCatalog.load())
    window.learn_window(8192, "server")
    system = ["You are a careful assistant. " * 80]
    messages = [Message.user("Tell me about lighthouses. " * 40)]
    plain = window.estimate(system, [], messages)
    learned: list[float] = []
    window.calibration.on_learn = learned.append
    window.calibrate(Usage(input_tokens=round(plain * RATIO)), system, [], messages)
    assert window.calibration.ratio == 1.0  # not enabled: the wiring enables local servers only
    window.calibration.enabled = True
    window.calibrate(Usage(input_tokens=round(plain * 5)), system, [], messages)
    assert window.calibration.ratio == 1.0 and learned == []  # implausible: ignored
    window.calibrate(Usage(input_tokens=round(plain * RATIO), cache_read_tokens=0), system, [], messages)
    assert learned == [pytest.approx(RATIO, abs=0.002)]
    assert window.estimate(system, [], messages) == pytest.approx(plain * RATIO, rel=0.005)

"""Issue 33, item 7: ``Agent(asker=...)``, the typed permission callback. It receives the
``PermissionRequest`` of a call the rules say to ask about and answers with a ``Decision``;
an ``Agent`` without one refuses in library terms (``etcode run`` keeps its ``--yes`` hint).
Real HTTP against the fake LLM server; the project's ``.env`` is what the default rules ask
about."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

from etcode import Agent, Asker, Decision, PermissionRequest, RetryConfig
from tests.fake_llm import Call, FakeLLM, Reply
from tests.project_support import ProjectSpec

PROJECT = ProjectSpec(files={".env": "PORT=3000\n", "notes.txt": "plain notes\n"})


class Recording:
    """An asker that answers with ``decision`` and keeps what it was asked."""

    def __init__(self, decision: Decision) -> None:
        self.decision = decision
        self.requests: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Decision:
        self.requests.append(request)
        return self.decision


def run_reads(llm: FakeLLM, project: Path, asker: Asker | None, *files: str) -> list[str]:
    """The agent reads ``files`` (one ReadFile call each, one after the other); what the
    model was sent as each call's result."""
    llm.script(*[Reply(calls=[Call("ReadFile", {"file_path": name})]) for name in files], Reply(text="done"))
    agent = Agent(
        "openai/test-model",
        "k",
        llm.openai_base_url,
        retry=RetryConfig(max_retries=0),
        directory=project,
        store=False,
        asker=asker,
    )
    assert agent.run_sync("read them").text == "done"
    last = llm.requests[-1].body["messages"]
    return [m["content"] for m in last if m["role"] == "tool"]


def test_without_an_asker_a_call_that_asks_is_refused_in_library_terms(llm: FakeLLM, project: Path) -> None:
    (sent,) = run_reads(llm, project, None, ".env")
    assert "not allowed: this Agent has no asker= to ask the user" in sent
    assert "--yes" not in sent and "PORT" not in sent


def test_what_the_rules_allow_runs_unasked(llm: FakeLLM, project: Path) -> None:
    asker = Recording(Decision.reject("no"))
    (sent,) = run_reads(llm, project, asker, "notes.txt")
    assert "plain notes" in sent and asker.requests == []


def test_the_asker_receives_the_request_and_its_allow_runs_the_call(llm: FakeLLM, project: Path) -> None:
    asker = Recording(Decision.allow_once())
    first, second = run_reads(llm, project, asker, ".env", ".env")
    assert "PORT=3000" in first and "PORT=3000" in second
    assert len(asker.requests) == 2  # once: asked again next time
    request = asker.requests[0]
    assert (request.permission, request.tool) == ("read", "ReadFile")
    assert any(pattern.endswith(".env") for pattern in request.patterns)
    assert request.always == request.patterns


def test_allow_always_is_not_asked_again(llm: FakeLLM, project: Path) -> None:
    asker = Recording(Decision.allow_always())
    first, second = run_reads(llm, project, asker, ".env", ".env")
    assert "PORT=3000" in first and "PORT=3000" in second
    assert len(asker.requests) == 1


def test_a_rejection_tells_the_model_the_reason(llm: FakeLLM, project: Path) -> None:
    (sent,) = run_reads(llm, project, Recording(Decision.reject("not the secrets, please")), ".env")
    assert "not the secrets, please" in sent and "PORT" not in sent


class Overlapping:
    """An asker that counts the questions in it at once: the first one waits (a while) for
    a second to come in beside it, as it would if nothing kept them apart."""

    def __init__(self) -> None:
        self.guard = threading.Lock()
        self.active = self.peak = self.asked = 0
        self.second = threading.Event()

    async def ask(self, request: PermissionRequest) -> Decision:
        with self.guard:
            self.active += 1
            self.asked += 1
            self.peak = max(self.peak, self.active)
            if self.active > 1:
                self.second.set()
        try:
            await asyncio.to_thread(self.second.wait, 3)  # the user answering the first
        finally:
            with self.guard:
                self.active -= 1
        return Decision.allow_once()


@pytest.mark.parametrize("how", ["one loop", "two threads"])
async def test_questions_of_an_agents_conversations_come_one_at_a_time(
    llm: FakeLLM, project: Path, how: str
) -> None:
    read = Reply(calls=[Call("ReadFile", {"file_path": ".env"})])
    llm.script(read, read, Reply(text="done"), Reply(text="done"))
    asker = Overlapping()
    agent = Agent("openai/test-model", "k", llm.openai_base_url, directory=project, store=False, asker=asker)
    a, b = agent.conversation(), agent.conversation()
    if how == "one loop":
        results = await asyncio.gather(a.asend("read it"), b.asend("read it"))
    else:
        results = await asyncio.gather(*(asyncio.to_thread(c.send_sync, "read it") for c in (a, b)))
    assert [r.text for r in results] == ["done", "done"]
    assert asker.asked == 2 and asker.peak == 1
    await a.aclose()
    await b.aclose()

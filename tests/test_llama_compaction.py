"""A multi-turn chat against the real ``llama-server`` at a 4,096-token window (issue 34,
item 5): the first turn states a fact, later turns paste enough notes to force a compaction,
and the final request — recorded by a proxy in front of the server — still holds the fact
word for word, whatever the small model's summary was worth.

A ``compaction.reserve`` of 2,048 tokens (half the window kept for answers) makes it compact
at ~1.8k tokens: the same path as at 3.6k, with fewer tokens for a CPU to read; the proxy
holds each answer to 48 tokens (the summary request asks for more: the server cuts it, and
etcode must then keep no summary but the trimmed history, the fact still in it).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.cli_helpers import etcode
from tests.llama_proxy import llama_proxy
from tests.llama_servers import LLAMA_TEST, LLAMA_TIMEOUT
from tests.test_llama_server import configure, events_of, patient_probe  # noqa: F401  (fixture)

pytestmark = LLAMA_TEST

FACT = "My name is Zorblax."


def notes(first: int, count: int) -> str:
    return "\n".join(
        f"- note {i}: the lighthouse lamp was checked at {i % 24} o'clock by keeper {i % 7}."
        for i in range(first, first + count)
    )


def test_a_first_turn_fact_survives_compaction_word_for_word(
    project: Path,
    llama: Callable[..., int],
) -> None:
    with llama_proxy(llama(4096)) as (port, bodies, controls):
        controls.max_tokens_cap = 48  # the summary may ask for ~380: minutes on a busy CPU
        configure(project, port, settings={"compaction": {"reserve": 2048}}, max_tokens=24)
        turns = [
            f"{FACT} Reply OK.",
            f"Notes.\n{notes(0, 36)}\nReply OK.",
            f"More notes.\n{notes(36, 36)}\nReply OK.",
        ]
        runs = []
        for n, task in enumerate(turns):
            args = ["run", "--format", "json", *(["--continue"] if n else []), task]
            proc = etcode(*args, cwd=project, timeout=LLAMA_TIMEOUT)
            events = events_of(proc)
            assert events and events[-1]["type"] == "result", proc.stderr[-2000:]
            assert events[-1]["stop_reason"] in ("end_turn", "max_tokens"), events[-1]
            runs.append(events)
        compacted = [
            e for events in runs for e in events if e["type"] == "compaction" and e["phase"] == "done"
        ]
        assert compacted, [e["type"] for events in runs for e in events]
        final = bodies[-1]
        assert "replaced by a summary" not in json.dumps(final)  # the turn's own request
        contents = json.dumps([m.get("content") for m in final["messages"]])
        assert FACT in contents
        assert "note 0: the lighthouse" not in contents or "note 71" in contents  # older notes went
        assert sum(events[-1]["compactions"] for events in runs) >= 1

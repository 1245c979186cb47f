"""The ``etcode run --format json`` schema: every line of a real run carries the schema's
``version``, and docs/json-format.md lists exactly the events and fields the dataclasses have
(a field added to an event but not to the doc fails here)."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from etcode.contract import events as ev
from etcode.contract.events import EVENT_SCHEMA_VERSION
from etcode.contract.results import AgentResult
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Fault, Reply

DOC = Path(__file__).resolve().parent.parent / "docs" / "json-format.md"
#: Fields every line has, documented once at the top of the page.
COMMON = ["type", "version"]
_HEADING = re.compile(r"(?m)^### `([a-z_]+)`\s*$")
_ROW = re.compile(r"(?m)^\| `([a-z_]+)` \|")


def documented() -> dict[str, list[str]]:
    """Each ``### `type``` section of the page: its table's fields, in order."""
    text = DOC.read_text(encoding="utf-8")
    found: dict[str, list[str]] = {}
    sections = _HEADING.split(text)[1:]
    for name, body in zip(sections[::2], sections[1::2], strict=True):
        assert name not in found, f"{name} is documented twice"
        found[name] = _ROW.findall(body.split("\n## ", 1)[0])
    return found


def line_types() -> dict[str, list[str]]:
    """What the dataclasses say the lines are: each event's fields (``done`` is written as
    the ``result`` line, which is ``AgentResult.to_dict()``)."""
    found: dict[str, list[str]] = {}
    for cls in vars(ev).values():
        if not (isinstance(cls, type) and issubclass(cls, ev.Event) and dataclasses.is_dataclass(cls)):
            continue
        tag = next(f for f in dataclasses.fields(cls) if f.name == "type")
        if tag.init or cls is ev.Event:  # the base, and LoopEvent (step-level, not in this format)
            continue
        found[str(tag.default)] = [f.name for f in dataclasses.fields(cls) if f.name != "type"]
    del found["done"]
    found["result"] = [key for key in AgentResult("x", error="e").to_dict() if key != "type"]
    return found


def test_the_doc_lists_every_event_and_field_of_the_dataclasses() -> None:
    assert documented() == line_types()


def test_the_doc_states_the_version_and_the_common_fields() -> None:
    text = DOC.read_text(encoding="utf-8").split("\n## ", 1)[0]
    assert _ROW.findall(text) == COMMON
    assert f"`{EVENT_SCHEMA_VERSION}` today" in text


def test_every_line_of_a_real_run_has_the_version_and_documented_fields(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    (project / "a.txt").write_text("alpha\n", encoding="utf-8")
    todos = [{"content": "Read a.txt", "status": "in_progress", "activeForm": "Reading a.txt"}]
    llm.script(
        Fault(status=429, headers={"retry-after-ms": "10"}),
        Reply(calls=[Call("TodoWrite", {"todos": todos}), Call("ReadFile", {"file_path": "a.txt"})]),
        Reply(text="alpha it is", reasoning="the file says alpha"),
    )
    proc = etcode("run", "--format", "json", "read a.txt", cwd=project)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    assert all(line["version"] == EVENT_SCHEMA_VERSION for line in lines), lines
    assert all(list(line)[:2] == COMMON for line in lines)
    doc = documented()
    seen = {line["type"] for line in lines}
    assert {"session_start", "retry", "step_start", "tool_call_start", "todo_update", "tool_result"} <= seen
    assert {"text_delta", "reasoning_delta", "usage", "step_finish", "result"} <= seen
    for line in lines:
        assert set(line) - set(COMMON) <= set(doc[line["type"]]), line
    assert lines[-1]["type"] == "result" and lines[-1]["result"] == "alpha it is"

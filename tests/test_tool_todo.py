"""TodoWrite and the loop detector."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etcode.contract.events import TodoUpdate
from etcode.tools.base import ToolContext, ToolError
from etcode.tools.loop_detect import LoopDetector
from etcode.tools.todo import TodoStore, TodoWriteTool
from tests.tool_support import make_ctx


async def todo(ctx: ToolContext, todos: list[dict[str, Any]]):
    tool = TodoWriteTool()
    return await tool.run(tool.parse({"todos": todos}), ctx)


async def test_todo_replaces_list_and_emits(tmp_path: Path) -> None:
    events: list[Any] = []
    ctx = make_ctx(tmp_path, emit=events.append)
    first = [
        {"content": "Write code", "status": "in_progress", "activeForm": "Writing code"},
        {"content": "Run tests", "status": "pending", "activeForm": "Running tests"},
    ]
    result = await todo(ctx, first)
    assert result.output == "Todo list updated:\n[~] Write code (Writing code)\n[ ] Run tests"
    store = ctx.state["todos"]
    assert isinstance(store, TodoStore)
    assert store.items == first
    assert isinstance(events[-1], TodoUpdate) and events[-1].todos == first
    assert events[-1].to_dict()["type"] == "todo_update"
    assert TodoWriteTool().result_summary({}, result) == "0/2 done · Writing code"
    assert TodoWriteTool().params_summary({"todos": first}) == "2 tasks"

    second = [{"content": "Write code", "status": "completed", "activeForm": "Writing code"}]
    result = await todo(ctx, second)
    assert ctx.state["todos"].items == second
    assert result.output.endswith("[x] Write code")
    assert len(events) == 2
    assert TodoWriteTool().result_summary({}, result) == "1/1 done"


async def test_only_one_in_progress(tmp_path: Path) -> None:
    events: list[Any] = []
    ctx = make_ctx(tmp_path, emit=events.append)
    await todo(ctx, [{"content": "A", "status": "pending"}])
    with pytest.raises(ToolError, match="Only one task may be in_progress"):
        await todo(
            ctx, [{"content": "A", "status": "in_progress"}, {"content": "B", "status": "in_progress"}]
        )
    assert ctx.state["todos"].items == [{"content": "A", "status": "pending"}]
    assert len(events) == 1


async def test_invalid_status_rejected(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="status"):
        TodoWriteTool().parse({"todos": [{"content": "A", "status": "doing"}]})


async def test_empty_list(tmp_path: Path) -> None:
    result = await todo(make_ctx(tmp_path), [])
    assert "empty" in result.output


def test_loop_detector_third_identical_call() -> None:
    detector = LoopDetector()
    assert detector.record("ReadFile", {"file_path": "a"}) is None
    assert detector.record("ReadFile", {"file_path": "a"}) is None
    warning = detector.record("ReadFile", {"file_path": "a"})
    assert warning and "3 times" in warning and "ReadFile" in warning
    assert detector.record("ReadFile", {"file_path": "a"}) is not None  # still looping
    assert detector.record("ReadFile", {"file_path": "b"}) is None
    assert detector.record("ReadFile", {"file_path": "a"}) is None


def test_loop_detector_key_order_and_interleaving() -> None:
    detector = LoopDetector()
    detector.record("Grep", {"pattern": "x", "path": "src"})
    detector.record("Grep", {"path": "src", "pattern": "x"})
    assert detector.record("Grep", {"pattern": "x", "path": "src"}) is not None
    other = LoopDetector()
    other.record("A", {})
    other.record("B", {})
    other.record("A", {})
    assert other.record("A", {}) is None


def test_schema_has_no_refs() -> None:
    import json

    schema = TodoWriteTool().schema().parameters
    text = json.dumps(schema)
    assert "$ref" not in text and "$defs" not in text
    item = schema["properties"]["todos"]["items"]
    assert set(item["properties"]) == {"content", "status", "activeForm"}
    assert item["properties"]["status"]["enum"] == ["pending", "in_progress", "completed"]


def test_loop_detector_keeps_a_fingerprint_not_the_arguments() -> None:
    """A 200 MB WriteFile must not stay in memory as the detector's last key."""
    import sys

    from etcode.tools.loop_detect import LoopDetector

    detector = LoopDetector()
    big = {"file_path": "big.txt", "content": "x" * (1 << 20)}
    for _ in range(2):
        assert detector.record("WriteFile", big) is None
    assert sys.getsizeof(detector._last) < 1024
    assert detector.record("WriteFile", big) is not None  # the third identical call is flagged
    assert detector.record("WriteFile", {**big, "content": "y"}) is None

"""FIFOs, sockets and devices: ReadFile and Edit refuse them at once instead of blocking
(a FIFO's open() waits for a writer; /dev/zero never ends), in the tools and through the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
from collections.abc import Awaitable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

from etcode.tools.base import ToolContext, ToolError
from etcode.tools.edit import EditTool
from etcode.tools.read_file import ReadFileTool
from etcode.util.fs import NotRegularFileError, read_regular_bytes, regular_opener, special_kind
from tests.cli_helpers import etcode, write_config
from tests.fake_llm import Call, FakeLLM, Reply
from tests.require import missing
from tests.tool_support import make_ctx

T = TypeVar("T")
GUARD_SECONDS = 20  # a refusal takes milliseconds; a hang is forever


def release(fifo: Path) -> None:
    """Unblock a thread stuck opening (or reading) ``fifo`` so a failing test can end."""
    with contextlib.suppress(OSError):
        fd = os.open(fifo, os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)


async def bounded(awaitable: Awaitable[T], fifo: Path) -> T:
    try:
        return await asyncio.wait_for(awaitable, GUARD_SECONDS)
    except TimeoutError:
        release(fifo)
        pytest.fail(f"the tool blocked on the FIFO {fifo.name}")


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    path = tmp_path / "pipe.txt"
    os.mkfifo(path)
    yield path
    release(path)


async def read(ctx: ToolContext, **args: Any):
    tool = ReadFileTool()
    return await tool.run(tool.parse(args), ctx)


async def edit(ctx: ToolContext, **args: Any):
    tool = EditTool()
    return await tool.run(tool.parse(args), ctx)


async def test_read_file_refuses_fifo(tmp_path: Path, fifo: Path) -> None:
    with pytest.raises(ToolError) as info:
        await bounded(read(make_ctx(tmp_path), file_path="pipe.txt"), fifo)
    assert str(info.value) == "Cannot read pipe.txt: it is a FIFO, not a regular file."


async def test_read_file_refuses_fifo_behind_symlink(tmp_path: Path, fifo: Path) -> None:
    (tmp_path / "link.txt").symlink_to(fifo)
    with pytest.raises(ToolError, match="link.txt: it is a FIFO, not a regular file"):
        await bounded(read(make_ctx(tmp_path), file_path="link.txt"), fifo)


@pytest.mark.parametrize("old_string", ["", "anything"], ids=["create", "replace"])
async def test_edit_refuses_fifo(tmp_path: Path, fifo: Path, old_string: str) -> None:
    with pytest.raises(ToolError) as info:
        await bounded(
            edit(make_ctx(tmp_path), file_path="pipe.txt", old_string=old_string, new_string="x"), fifo
        )
    assert str(info.value) == "Cannot edit pipe.txt: it is a FIFO, not a regular file."
    assert special_kind(fifo) == "a FIFO"  # still a FIFO: nothing was written over it


async def test_device_and_socket_refused(tmp_path: Path) -> None:
    (tmp_path / "zero.txt").symlink_to("/dev/zero")
    ctx = make_ctx(tmp_path)
    with pytest.raises(ToolError, match="zero.txt: it is a character device, not a regular file"):
        await asyncio.wait_for(read(ctx, file_path="zero.txt"), GUARD_SECONDS)
    with pytest.raises(ToolError, match="zero.txt: it is a character device"):
        await asyncio.wait_for(edit(ctx, file_path="zero.txt", old_string="", new_string="x"), GUARD_SECONDS)
    sock_path = tmp_path / "s.sock"
    if len(str(sock_path)) >= 100:
        missing("socket", f"temp path too long for a unix socket: {sock_path}")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(sock_path))
        with pytest.raises(ToolError, match="s.sock: it is a socket, not a regular file"):
            await asyncio.wait_for(read(ctx, file_path="s.sock"), GUARD_SECONDS)


def test_regular_opener_guards_the_open_itself(tmp_path: Path, fifo: Path) -> None:
    """The check before reading can race with a swap; the open itself never blocks either."""
    with pytest.raises(NotRegularFileError, match="a FIFO"):
        open(fifo, "rb", opener=regular_opener)  # noqa: SIM115 - it must not open
    with pytest.raises(NotRegularFileError, match="a character device"):
        read_regular_bytes(Path("/dev/zero"))
    (tmp_path / "a.txt").write_bytes(b"text\n")
    assert read_regular_bytes(tmp_path / "a.txt") == b"text\n"
    with open(tmp_path / "a.txt", encoding="utf-8", opener=regular_opener) as handle:
        assert handle.read() == "text\n"  # and back to blocking: reads as usual
    assert special_kind(tmp_path / "a.txt") is None and special_kind(tmp_path) is None
    assert special_kind(tmp_path / "missing") is None


# ---- through the real CLI ---------------------------------------------------------------


def tool_messages(llm: FakeLLM, index: int) -> list[str]:
    """The tool results the model got in request ``index`` (OpenAI format)."""
    messages = llm.requests[index].body["messages"]
    return [m["content"] for m in messages if m["role"] == "tool"]


def test_cli_read_and_edit_of_a_fifo_end(project: Path, llm: FakeLLM) -> None:
    write_config(project, llm)
    fifo = project / "pipe"
    os.mkfifo(fifo)
    llm.script(
        Reply(calls=[Call("ReadFile", {"file_path": "pipe"})]),
        Reply(calls=[Call("Edit", {"file_path": "pipe", "old_string": "a", "new_string": "b"})]),
        Reply(calls=[Call("Edit", {"file_path": "pipe", "old_string": "", "new_string": "b"})]),
        Reply(text="All three refused."),
    )
    try:
        proc = etcode("run", "--format", "json", "read the pipe", cwd=project, timeout=60)
    finally:
        release(fifo)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert len(llm.requests) == 4
    results = tool_messages(llm, 3)
    assert results == [
        "Cannot read pipe: it is a FIFO, not a regular file.",
        "Cannot edit pipe: it is a FIFO, not a regular file.",
        "Cannot edit pipe: it is a FIFO, not a regular file.",
    ]
    events = [json.loads(line) for line in proc.stdout.splitlines()]
    finished = [e for e in events if e["type"] == "tool_result"]
    assert [e["is_error"] for e in finished] == [True, True, True]
    assert events[-1]["type"] == "result"
    assert special_kind(fifo) == "a FIFO"

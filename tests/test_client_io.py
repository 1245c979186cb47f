"""Files and commands through the front end (``etcode/tools/client_io.py``): ReadFile,
Edit, WriteFile and Bash use an editor's files and terminal when it offers them, and the
disk or a local process when it does not or cannot."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from etcode.contract.events import WarningEvent
from etcode.tools.base import ToolContext, ToolError
from etcode.tools.bash import BashTool
from etcode.tools.client_io import (
    FILES_KEY,
    TERMINAL_KEY,
    ClientFileError,
    ClientTerminalError,
    TerminalRun,
)
from etcode.tools.edit import EditTool
from etcode.tools.read_file import ReadFileTool
from etcode.tools.write_file import WriteFileTool
from tests.process_support import survivors, token
from tests.tool_support import make_ctx


class Buffers:
    """An editor's open buffers: reads see them first, writes land in them (not on disk)."""

    def __init__(self, buffers: dict[Path, str] | None = None, *, fail: str = "", write: bool = True) -> None:
        self.buffers = dict(buffers or {})
        self.fail = fail
        self.can_read = True
        self.can_write = write
        self.calls: list[tuple[str, Path]] = []

    async def read_text(self, path: Path) -> str:
        self.calls.append(("read", path))
        if "read" in self.fail:
            raise ClientFileError("the buffer is gone")
        if path in self.buffers:
            return self.buffers[path]
        return path.read_text(encoding="utf-8")

    async def write_text(self, path: Path, text: str) -> None:
        self.calls.append(("write", path))
        if "write" in self.fail:
            raise ClientFileError("the editor refused it (read-only buffer)")
        self.buffers[path] = text


class Terminal:
    """An editor terminal that records what it was asked to run."""

    def __init__(self, run: TerminalRun | None = None, *, fail: bool = False) -> None:
        self.result = run or TerminalRun(
            output="\x1b[32mok\x1b[0m\r\ndone\n", exit_code=3, terminal_id="term-7"
        )
        self.fail = fail
        self.runs: list[dict[str, Any]] = []

    async def run(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: Path,
        timeout_s: float,
        abort: asyncio.Event,
        call_id: str,
    ) -> TerminalRun:
        self.runs.append({"argv": argv, "env": env, "cwd": cwd, "timeout_s": timeout_s, "call_id": call_id})
        if self.fail:
            raise ClientTerminalError("terminals are disabled")
        return self.result


def client_ctx(tmp_path: Path, files: Any = None, terminal: Any = None, **kw: Any) -> ToolContext:
    """A context whose tools use the editor's ``files`` and ``terminal`` (when given)."""
    state: dict[str, Any] = {}
    if files is not None:
        state[FILES_KEY] = files
    if terminal is not None:
        state[TERMINAL_KEY] = terminal
    return make_ctx(tmp_path, call_id="call_1", state=state, **kw)


async def run_tool(tool: Any, ctx: ToolContext, **args: Any) -> Any:
    return await tool.run(tool.parse(args), ctx)


async def test_read_sees_the_unsaved_buffer_with_the_same_numbering(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("saved = 1\n", encoding="utf-8")
    files = Buffers({target: "\ufeffunsaved = 2\r\nsecond\r\n" + "x" * 3000 + "\n"})
    result = await run_tool(ReadFileTool(), client_ctx(tmp_path, files), file_path="a.py")
    lines = result.output.splitlines()
    assert lines[:2] == ["     1\tunsaved = 2", "     2\tsecond"]
    assert "line truncated: 3000 chars" in lines[2]
    assert result.data["source"] == "client" and result.data["totalLines"] == 3
    assert "saved = 1" not in result.output
    window = await run_tool(ReadFileTool(), client_ctx(tmp_path, files), file_path="a.py", offset=2, limit=1)
    assert window.output.splitlines()[0] == "     2\tsecond" and "use offset=3" in window.output


async def test_read_falls_back_to_disk_when_the_editor_cannot_read(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("from disk\n", encoding="utf-8")
    files = Buffers(fail="read")
    result = await run_tool(ReadFileTool(), client_ctx(tmp_path, files), file_path="a.txt")
    assert result.output == "     1\tfrom disk" and "source" not in result.data
    assert files.calls == [("read", tmp_path / "a.txt")]


async def test_edit_changes_the_buffer_not_the_disk_behind_it(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("x = 1\n", encoding="utf-8")
    files = Buffers({target: "x = 1\ny = 5  # unsaved\n"})
    result = await run_tool(
        EditTool(), client_ctx(tmp_path, files), file_path="app.py", old_string="y = 5", new_string="y = 6"
    )
    assert files.buffers[target] == "x = 1\ny = 6  # unsaved\n"
    assert target.read_text(encoding="utf-8") == "x = 1\n"  # the editor saves it, not etcode
    assert "-y = 5" in result.data["diff"] and "+y = 6" in result.data["diff"]
    assert ("write", target) in files.calls


async def test_a_refused_write_is_a_tool_error_and_leaves_the_disk_alone(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("x = 1\n", encoding="utf-8")
    files = Buffers(fail="write")
    with pytest.raises(ToolError, match=r"Cannot write app\.py: the editor refused it"):
        await run_tool(
            EditTool(),
            client_ctx(tmp_path, files),
            file_path="app.py",
            old_string="x = 1",
            new_string="x = 2",
        )
    with pytest.raises(ToolError, match="Cannot write new.txt"):
        await run_tool(WriteFileTool(), client_ctx(tmp_path, files), file_path="new.txt", content="hi\n")
    assert target.read_text(encoding="utf-8") == "x = 1\n" and not (tmp_path / "new.txt").exists()


async def test_write_and_create_go_through_the_editor_and_diff_against_its_buffer(tmp_path: Path) -> None:
    target = tmp_path / "notes.md"
    target.write_text("on disk\n", encoding="utf-8")
    files = Buffers({target: "in the buffer\n"})
    result = await run_tool(
        WriteFileTool(), client_ctx(tmp_path, files), file_path="notes.md", content="new\n"
    )
    assert files.buffers[target] == "new\n" and "-in the buffer" in result.data["diff"]
    created = await run_tool(
        EditTool(), client_ctx(tmp_path, files), file_path="fresh.py", old_string="", new_string="a = 1\n"
    )
    assert files.buffers[tmp_path / "fresh.py"] == "a = 1\n" and created.data["created"] is True
    await run_tool(WriteFileTool(), client_ctx(tmp_path, files), file_path="new/dir/x.txt", content="x\n")
    assert (tmp_path / "new" / "dir").is_dir()  # folders made as for a disk write; the editor writes the file
    assert files.buffers[tmp_path / "new" / "dir" / "x.txt"] == "x\n"


async def test_without_write_capability_edits_go_to_disk(tmp_path: Path) -> None:
    target = tmp_path / "app.py"
    target.write_text("x = 1\n", encoding="utf-8")
    files = Buffers(write=False)
    await run_tool(
        EditTool(), client_ctx(tmp_path, files), file_path="app.py", old_string="x = 1", new_string="x = 2"
    )
    assert target.read_text(encoding="utf-8") == "x = 2\n"
    assert [kind for kind, _ in files.calls] == ["read"]


async def test_bash_runs_in_the_editor_terminal(tmp_path: Path) -> None:
    terminal = Terminal()
    result = await run_tool(
        BashTool(), client_ctx(tmp_path, terminal=terminal), command="echo ok; exit 3", timeout=5000
    )
    [run] = terminal.runs
    assert run["argv"][-1] == "echo ok; exit 3" and run["cwd"] == tmp_path and run["timeout_s"] == 5
    assert run["call_id"] == "call_1" and "PATH" in run["env"]
    assert result.output.startswith("ok\ndone") and "Exit code: 3" in result.output
    assert result.data["terminalId"] == "term-7" and result.data["exitCode"] == 3


async def test_bash_reports_a_timeout_from_the_editor_terminal(tmp_path: Path) -> None:
    terminal = Terminal(
        TerminalRun(output="partial", exit_code=-1, timed_out=True, truncated=True, terminal_id="t")
    )
    result = await run_tool(
        BashTool(), client_ctx(tmp_path, terminal=terminal), command="sleep 100", timeout=1000
    )
    assert result.is_error and "timed out after 1 s" in result.output
    assert "earlier output dropped by the editor" in result.output


async def test_bash_runs_here_when_the_editor_cannot_start_it(tmp_path: Path) -> None:
    events: list[Any] = []
    terminal = Terminal(fail=True)
    ctx = client_ctx(tmp_path, terminal=terminal, emit=events.append)
    result = await run_tool(BashTool(), ctx, command="echo local")
    assert result.output == "local" and "terminalId" not in result.data
    assert any(isinstance(e, WarningEvent) and "terminals are disabled" in e.message for e in events)


class Editor:
    """An editor's side of ``terminal/*`` for :class:`EditorTerminal`: the terminal's
    command is a real process (its own group), and a request goes on in the editor
    whatever happens to the agent's wait for the answer. ``hold`` keeps the answer to
    ``terminal/create`` back (the process already runs) until it is set."""

    def __init__(self, hold: bool = False) -> None:
        self.hold = asyncio.Event()
        if not hold:
            self.hold.set()
        self.procs: dict[str, asyncio.subprocess.Process] = {}
        self.started = asyncio.Event()
        self.killed: list[str] = []
        self.released: list[str] = []

    def create_terminal(self, command: str, args: list[str], **kwargs: Any) -> Any:
        return asyncio.shield(asyncio.ensure_future(self._create(command, args)))

    async def _create(self, command: str, args: list[str]) -> Any:
        proc = await asyncio.create_subprocess_exec(
            command, *args, stdout=asyncio.subprocess.DEVNULL, start_new_session=True
        )
        terminal_id = f"term-{len(self.procs) + 1}"
        self.procs[terminal_id] = proc
        self.started.set()
        await self.hold.wait()
        return SimpleNamespace(terminal_id=terminal_id)

    async def session_update(self, *args: Any) -> None:
        pass

    async def wait_for_terminal_exit(self, terminal_id: str, **kwargs: Any) -> Any:
        return SimpleNamespace(exit_code=await self.procs[terminal_id].wait())

    async def kill_terminal(self, terminal_id: str, **kwargs: Any) -> None:
        self.killed.append(terminal_id)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.procs[terminal_id].pid, signal.SIGKILL)

    async def release_terminal(self, terminal_id: str, **kwargs: Any) -> None:
        self.released.append(terminal_id)  # this editor does not kill on release


async def test_a_cancel_while_the_editor_creates_the_terminal_kills_and_releases_it(tmp_path: Path) -> None:
    from etcode.acp.editor_requests import EditorTerminal

    editor = Editor(hold=True)
    mark = token()
    run = asyncio.create_task(
        EditorTerminal(editor, "s").run(
            ["sh", "-c", f"sleep {mark} & sleep {mark}"], {}, tmp_path, 60, asyncio.Event(), "c"
        )
    )
    await editor.started.wait()
    run.cancel()  # the editor has started the command and not yet answered
    editor.hold.set()
    await asyncio.wait({run}, timeout=30)
    assert run.cancelled()
    assert editor.killed == ["term-1"] and editor.released == ["term-1"]
    assert await survivors(mark) == []


async def test_a_cancel_at_any_turn_of_an_editor_terminal_leaves_no_process(tmp_path: Path) -> None:
    from etcode.acp.editor_requests import EditorTerminal

    left: dict[int, list[int]] = {}
    for turns in range(30):
        editor, mark = Editor(), token()
        run = asyncio.create_task(
            EditorTerminal(editor, "s").run(
                ["sh", "-c", f"sleep {mark} & sleep {mark}"], {}, tmp_path, 60, asyncio.Event(), "c"
            )
        )
        for _ in range(turns):
            await asyncio.sleep(0)
        run.cancel()
        await asyncio.wait({run}, timeout=30)
        if found := await survivors(mark):
            left[turns] = found
        assert editor.released == list(editor.procs)  # every terminal made was given back
    assert left == {}, f"processes left after a cancel at these turns: {left}"

"""ReadFile and WriteFile."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etcode.tools.base import PermissionDenied, ToolContext, ToolError
from etcode.tools.read_file import ReadFileTool
from etcode.tools.registry import builtin_tools
from etcode.tools.write_file import WriteFileTool
from tests.tool_support import make_ctx


async def read(ctx: ToolContext, **args: Any):
    tool = ReadFileTool()
    return await tool.run(tool.parse(args), ctx)


async def write(ctx: ToolContext, **args: Any):
    tool = WriteFileTool()
    return await tool.run(tool.parse(args), ctx)


async def test_read_numbers_lines(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    result = await read(make_ctx(tmp_path), file_path="a.py")
    assert result.output.splitlines() == ["     1\tone", "     2\ttwo", "     3\tthree"]
    assert ReadFileTool().result_summary({"file_path": "a.py"}, result) == "Read 3 lines"
    assert ReadFileTool().params_summary({"file_path": "a.py"}) == "a.py"


async def test_read_offset_limit_and_continue_note(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 3001)))
    result = await read(make_ctx(tmp_path), file_path="big.txt")
    lines = result.output.splitlines()
    assert lines[0] == "     1\tline 1"
    assert "  2000\tline 2000" in lines
    assert "use offset=2001 to continue" in result.output
    assert result.data and result.data["isTruncated"]
    assert ReadFileTool().result_summary({}, result) == "Read 2000 lines (of 3000)"
    part = await read(make_ctx(tmp_path), file_path="big.txt", offset=2999, limit=5)
    assert part.output.splitlines() == ["  2999\tline 2999", "  3000\tline 3000"]


async def test_read_long_line_cut(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text("x" * 5000 + "\nshort\n")
    result = await read(make_ctx(tmp_path), file_path="wide.txt")
    first = result.output.splitlines()[0]
    assert len(first) < 2100 and "line truncated" in first
    assert "short" in result.output


async def test_read_offset_past_end(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("a\n")
    with pytest.raises(ToolError, match="past the end"):
        await read(make_ctx(tmp_path), file_path="a.txt", offset=10)


async def test_read_empty_file(tmp_path: Path) -> None:
    (tmp_path / "e.txt").write_text("")
    result = await read(make_ctx(tmp_path), file_path="e.txt")
    assert "empty" in result.output


async def test_read_binary_refused(tmp_path: Path) -> None:
    (tmp_path / "blob.dat2").write_bytes(b"\x00\x01\x02binary\x00")
    with pytest.raises(ToolError, match="binary"):
        await read(make_ctx(tmp_path), file_path="blob.dat2")


async def test_read_missing_suggests(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("x")
    with pytest.raises(ToolError, match=r"File not found: config\.yml.*config\.yaml"):
        await read(make_ctx(tmp_path), file_path="config.yml")


async def test_read_directory_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="directory"):
        await read(make_ctx(tmp_path), file_path="d")


async def test_read_bom_stripped_and_crlf(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes("\ufeffa\r\nb\r\n".encode())
    result = await read(make_ctx(tmp_path), file_path="w.txt")
    assert result.output.splitlines() == ["     1\ta", "     2\tb"]


async def test_read_attaches_instructions(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("hi\n")
    seen: list[Path] = []

    async def instructions_for(path: Path) -> str | None:
        seen.append(path)
        return "<system-reminder>nested rules</system-reminder>"

    result = await read(make_ctx(tmp_path, instructions_for=instructions_for), file_path="a.txt")
    assert result.output.endswith("<system-reminder>nested rules</system-reminder>")
    assert seen == [tmp_path / "a.txt"]


async def test_read_outside_worktree_asks_external(tmp_path: Path) -> None:
    inside = tmp_path / "repo"
    inside.mkdir()
    (tmp_path / "secret.txt").write_text("x")
    calls: list[tuple[str, list[str]]] = []

    async def check(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        calls.append((permission, patterns))
        if permission == "external_directory":
            raise PermissionDenied("denied: outside")

    ctx = make_ctx(inside, check_permission=check)
    with pytest.raises(PermissionDenied):
        await read(ctx, file_path="../secret.txt")
    assert calls[0][0] == "external_directory"
    assert calls[0][1] == [(tmp_path / "secret.txt").resolve().as_posix()]


async def test_read_symlink_out_of_worktree_is_external(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    (tmp_path / "outside.txt").write_text("x")
    (repo / "link.txt").symlink_to(tmp_path / "outside.txt")
    calls: list[str] = []

    async def check(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        calls.append(permission)

    ctx = make_ctx(repo, check_permission=check)
    await read(ctx, file_path="link.txt")
    assert "external_directory" in calls


async def test_read_checks_read_permission(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("KEY=1\n")
    calls: list[tuple[str, list[str]]] = []

    async def check(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        calls.append((permission, patterns))

    await read(make_ctx(tmp_path, check_permission=check), file_path=".env")
    assert calls == [("read", [".env"])]


async def test_write_creates_with_parents_and_diff(tmp_path: Path) -> None:
    calls: list[tuple[str, list[str], dict[str, Any]]] = []

    async def check(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        calls.append((permission, patterns, metadata))

    result = await write(make_ctx(tmp_path, check_permission=check), file_path="src/a.py", content="a\nb\n")
    assert (tmp_path / "src/a.py").read_text() == "a\nb\n"
    assert result.data and result.data["created"] is True
    assert "+a" in result.data["diff"] and "+++ b/src/a.py" in result.data["diff"]
    assert WriteFileTool().result_summary({"file_path": "src/a.py"}, result) == "Wrote 2 lines to src/a.py"
    assert calls[0][0] == "edit" and calls[0][1] == ["src/a.py"] and "diff" in calls[0][2]


async def test_write_overwrites_atomically(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("old\n")
    target.chmod(0o640)
    result = await write(make_ctx(tmp_path), file_path="a.txt", content="new\n")
    assert target.read_text() == "new\n"
    assert (target.stat().st_mode & 0o777) == 0o640
    assert result.data and "-old" in result.data["diff"] and "+new" in result.data["diff"]
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]  # no temp files left


async def test_write_denied_never_writes(tmp_path: Path) -> None:
    async def deny(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        raise PermissionDenied("denied by rule")

    with pytest.raises(PermissionDenied):
        await write(make_ctx(tmp_path, check_permission=deny), file_path="a.txt", content="x")
    assert not (tmp_path / "a.txt").exists()


async def test_write_to_directory_refused(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="directory"):
        await write(make_ctx(tmp_path), file_path="d", content="x")


def test_builtin_tools_schemas() -> None:
    tools = builtin_tools()
    names = [t.name for t in tools]
    assert names == [
        "ReadFile", "ReadManyFiles", "ListFiles", "Glob", "Grep",
        "WriteFile", "Edit", "Bash", "BashOutput", "KillBash", "WebFetch", "TodoWrite",
    ]  # fmt: skip
    for item in tools:
        schema = item.schema()
        assert schema.parameters["type"] == "object"
        assert item.description

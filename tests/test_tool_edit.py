"""The Edit tool: file handling around the replacer chain."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etcode.tools.base import PermissionDenied, ToolContext, ToolError
from etcode.tools.edit import EditTool
from tests.tool_support import make_ctx


async def edit(ctx: ToolContext, **args: Any):
    tool = EditTool()
    return await tool.run(tool.parse(args), ctx)


async def test_edit_exact_with_diff_and_summary(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    target = tmp_path / "src/a.py"
    target.write_text("def f():\n    return 1\n")
    result = await edit(
        make_ctx(tmp_path), file_path="src/a.py", old_string="return 1", new_string="x = 1\n    return x"
    )
    assert target.read_text() == "def f():\n    x = 1\n    return x\n"
    assert result.data and "-    return 1" in result.data["diff"] and "+    x = 1" in result.data["diff"]
    assert EditTool().result_summary({}, result) == "Updated src/a.py (+2 -1)"
    assert "     2\t    x = 1" in result.output  # snippet of the changed region


async def test_crlf_preserved(tmp_path: Path) -> None:
    target = tmp_path / "w.txt"
    target.write_bytes(b"one\r\ntwo\r\nthree\r\n")
    await edit(make_ctx(tmp_path), file_path="w.txt", old_string="one\ntwo", new_string="uno\ndos")
    assert target.read_bytes() == b"uno\r\ndos\r\nthree\r\n"


async def test_bom_preserved(tmp_path: Path) -> None:
    target = tmp_path / "b.cs"
    target.write_bytes("\ufeffusing System;\r\nclass A {}\r\n".encode())
    await edit(make_ctx(tmp_path), file_path="b.cs", old_string="class A {}", new_string="class B {}")
    assert target.read_bytes() == "\ufeffusing System;\r\nclass B {}\r\n".encode()


async def test_same_strings_is_error(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(ToolError, match="identical"):
        await edit(make_ctx(tmp_path), file_path="a.txt", old_string="x", new_string="x")


async def test_empty_old_creates_file(tmp_path: Path) -> None:
    result = await edit(make_ctx(tmp_path), file_path="new/f.py", old_string="", new_string="print(1)\n")
    assert (tmp_path / "new/f.py").read_text() == "print(1)\n"
    assert EditTool().result_summary({}, result) == "Created new/f.py (1 line)"
    # an existing empty file may be filled
    (tmp_path / "empty.py").write_text("")
    await edit(make_ctx(tmp_path), file_path="empty.py", old_string="", new_string="x\n")
    assert (tmp_path / "empty.py").read_text() == "x\n"


async def test_empty_old_on_existing_file_is_error(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("keep\n")
    with pytest.raises(ToolError, match="already exists"):
        await edit(make_ctx(tmp_path), file_path="a.py", old_string="", new_string="x")
    assert (tmp_path / "a.py").read_text() == "keep\n"


async def test_no_match_quotes_closest_region(tmp_path: Path) -> None:
    body = (
        "".join(f"filler_{i} = {i}\n" for i in range(30)) + "def handler(request):\n    return ok(request)\n"
    )
    (tmp_path / "h.py").write_text(body)
    with pytest.raises(ToolError) as info:
        await edit(
            make_ctx(tmp_path),
            file_path="h.py",
            old_string="def handler(req):\n    return ok(req)",
            new_string="pass",
        )
    message = str(info.value)
    assert "not found in h.py" in message
    assert "lines 31-32" in message
    assert "    31\tdef handler(request):" in message
    assert (tmp_path / "h.py").read_text() == body


async def test_line_numbered_old_string_hint(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("import os\n")
    with pytest.raises(ToolError, match="line-number prefixes"):
        await edit(
            make_ctx(tmp_path), file_path="a.py", old_string="     1\timport os", new_string="import sys"
        )


async def test_ambiguous_is_error_and_replace_all_works(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("x = 1\ny = x\nx = 1\n")
    with pytest.raises(ToolError, match="matches 2 places"):
        await edit(make_ctx(tmp_path), file_path="a.py", old_string="x = 1", new_string="x = 2")
    result = await edit(
        make_ctx(tmp_path), file_path="a.py", old_string="x = 1", new_string="x = 2", replace_all=True
    )
    assert target.read_text() == "x = 2\ny = x\nx = 2\n"
    assert result.data and result.data["replacements"] == 2


async def test_missing_file_suggests(tmp_path: Path) -> None:
    (tmp_path / "utils.py").write_text("x")
    with pytest.raises(ToolError, match="utils.py"):
        await edit(make_ctx(tmp_path), file_path="util.py", old_string="x", new_string="y")


async def test_permission_denied_leaves_file(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("old\n")
    seen: list[dict[str, Any]] = []

    async def deny(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        seen.append({"permission": permission, "patterns": patterns, **metadata})
        raise PermissionDenied("denied")

    with pytest.raises(PermissionDenied):
        await edit(
            make_ctx(tmp_path, check_permission=deny), file_path="a.txt", old_string="old", new_string="new"
        )
    assert target.read_text() == "old\n"
    assert seen[0]["permission"] == "edit" and seen[0]["patterns"] == ["a.txt"]
    assert "+new" in seen[0]["diff"]


async def test_atomic_write_failure_keeps_original(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import etcode.util.fs as fs

    target = tmp_path / "a.txt"
    target.write_text("original\n")

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fs.os, "replace", boom)
    with pytest.raises(ToolError, match="No space left"):
        await edit(make_ctx(tmp_path), file_path="a.txt", old_string="original", new_string="changed")
    assert target.read_text() == "original\n"
    assert [p.name for p in tmp_path.iterdir()] == ["a.txt"]


async def test_tolerant_match_reported(tmp_path: Path) -> None:
    target = tmp_path / "a.py"
    target.write_text("if a:\n    b()\n")
    result = await edit(
        make_ctx(tmp_path), file_path="a.py", old_string="if a:\n  b()", new_string="if a:\n  c()"
    )
    assert target.read_text() == "if a:\n    c()\n"
    assert "matched line-trimmed" in result.output


async def test_binary_refused(tmp_path: Path) -> None:
    (tmp_path / "x.bin").write_bytes(b"\x00\x01")
    with pytest.raises(ToolError, match="binary"):
        await edit(make_ctx(tmp_path), file_path="x.bin", old_string="a", new_string="b")


async def test_targets_that_are_no_regular_file_and_text_that_is_no_unicode(tmp_path: Path) -> None:
    import os

    ctx = make_ctx(tmp_path)
    (tmp_path / "folder").mkdir()
    os.mkfifo(tmp_path / "pipe")
    os.symlink("loop_b", tmp_path / "loop_a")
    os.symlink("loop_a", tmp_path / "loop_b")
    (tmp_path / "a.txt").write_text("one\n")
    refusals = {
        "folder": "folder is a directory; give a file path.",
        "pipe": "Cannot edit pipe: it is a FIFO, not a regular file.",
        "loop_a": "Cannot write loop_a: Too many levels of symbolic links",
    }
    for name, message in refusals.items():
        with pytest.raises(ToolError) as err:
            await edit(ctx, file_path=name, old_string="one", new_string="two")
        assert str(err.value) == message
    with pytest.raises(ToolError, match="new_string contains invalid Unicode"):
        await edit(ctx, file_path="a.txt", old_string="one", new_string="t\udcffo")
    assert (tmp_path / "a.txt").read_text() == "one\n"


async def test_stray_bytes_are_kept_and_shown_as_replacement_characters(tmp_path: Path) -> None:
    target = tmp_path / "latin.txt"
    target.write_bytes(b"caf\xe9 one\nsecond line\n")
    ctx = make_ctx(tmp_path)
    result = await edit(ctx, file_path="latin.txt", old_string="one", new_string="two")
    assert target.read_bytes() == b"caf\xe9 two\nsecond line\n"
    assert "     1\tcaf\ufffd two" in result.output
    assert "+caf\ufffd two" in result.data["diff"]
    with pytest.raises(ToolError) as err:
        await edit(ctx, file_path="latin.txt", old_string="caf\ufffd three", new_string="x")
    assert "caf\ufffd two" in str(err.value) and "not found" in str(err.value)


async def test_the_first_changed_line_is_carried_for_editors_and_the_dialog(tmp_path: Path) -> None:
    """Edit, WriteFile of an existing file and a new file say where the change is (issue 30.5):
    the permission question and the result carry ``line``, the new file's first changed line."""
    from etcode.tools.write_file import WriteFileTool

    asked: list[dict[str, Any]] = []

    async def allow(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        asked.append(metadata)

    lines = "".join(f"value_{i} = {i}\n" for i in range(1, 51))
    (tmp_path / "v.py").write_text(lines)
    ctx = make_ctx(tmp_path, check_permission=allow)
    result = await edit(ctx, file_path="v.py", old_string="value_31 = 31\n", new_string="value_31 = 0\n")
    assert result.data is not None and result.data["line"] == 31 and asked[-1]["line"] == 31
    assert "@@ -28,7 +28,7 @@" in result.data["diff"]  # the hunk's real numbers, context around it

    write = WriteFileTool()
    content = (tmp_path / "v.py").read_text().replace("value_40 = 40\n", "")
    result = await write.run(write.parse({"file_path": "v.py", "content": content}), ctx)
    assert result.data is not None and result.data["line"] == 40 and asked[-1]["line"] == 40
    result = await write.run(write.parse({"file_path": "new.py", "content": "a\nb\n"}), ctx)
    assert result.data is not None and result.data["line"] == 1


def test_hunk_lines_carry_real_numbers() -> None:
    from etcode.tools.diff import diff_hunks, first_changed_line, unified_diff

    old = "".join(f"{i}\n" for i in range(1, 21))
    diff = unified_diff("n", old, old.replace("10\n", "ten\nten and a half\n"))
    (hunk,) = diff_hunks(diff)
    assert [(d.kind, d.old, d.new) for d in hunk.lines[2:6]] == [
        (" ", 9, 9),
        ("-", 10, None),
        ("+", None, 10),
        ("+", None, 11),
    ]
    assert hunk.lines[-1].number == 14 and first_changed_line(diff) == 10
    assert first_changed_line(unified_diff("n", "x\n", "")) == 1  # all removed
    assert first_changed_line("") is None

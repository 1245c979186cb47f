"""Rules that other tools used to walk around (issue 12, point 6): Grep through a folder
with denied files, `.envrc`, and Edit/WriteFile through symlinks and hard links."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from etcode.session.snapshots import FileSnapshots
from etcode.tools.base import PermissionDenied, ToolContext
from etcode.tools.edit import EditTool
from etcode.tools.grep import GrepTool
from etcode.tools.read_file import ReadFileTool
from etcode.tools.read_many_files import ReadManyFilesTool
from etcode.tools.snapshot import STATE_KEY
from etcode.tools.write_file import WriteFileTool
from tests.permission_support import ruled_context


def ctx_for(root: Path, permission: Any = None, **fields: Any) -> ToolContext:
    return ruled_context(root, permission, **fields)


async def run(tool: Any, ctx: ToolContext, **args: Any) -> Any:
    return await tool.run(tool.parse(args), ctx)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    root = tmp_path / "p"
    (root / "secret").mkdir(parents=True)
    (root / "secret" / "s.txt").write_text("token = launch-code-1234\n")
    (root / "src").mkdir()
    (root / "src" / "a.py").write_text("token = os.environ['T']\n")
    (root / ".envrc").write_text("export TOKEN=direnv-secret-5678\n")
    return root.resolve()


@pytest.mark.parametrize("action", ["deny", "ask"])
async def test_grep_leaves_out_files_the_read_rules_do_not_allow(project: Path, action: str) -> None:
    ctx = ctx_for(project, {"read": {"secret/*": action}})
    for mode in ("content", "files", "count"):
        result = await run(GrepTool(), ctx, pattern="token", output_mode=mode)
        assert "launch-code" not in result.output and "secret/s.txt" not in result.output, mode
        assert "src/a.py" in result.output
        assert "1 more file matched but is not shown" in result.output
        assert result.data["hidden"] == 1
    with pytest.raises(PermissionDenied):  # naming the file reads it: refused (or asked) like ReadFile
        await run(GrepTool(), ctx, pattern="token", path="secret/s.txt")


async def test_envrc_is_a_secret_file(project: Path) -> None:
    ctx = ctx_for(project)
    with pytest.raises(PermissionDenied, match="non-interactive"):
        await run(ReadFileTool(), ctx, file_path=".envrc")
    grep = await run(GrepTool(), ctx, pattern="TOKEN")
    assert "direnv-secret" not in grep.output
    many = await run(ReadManyFilesTool(), ctx, paths=["**"])
    assert "direnv-secret" not in many.output
    with pytest.raises(PermissionDenied):
        await run(GrepTool(), ctx, pattern="TOKEN", path=".envrc")


@pytest.fixture
def linked(project: Path) -> Path:
    (project / "AGENTS.md").write_text("# rules\n")
    (project / "CLAUDE.md").symlink_to("AGENTS.md")
    return project


@pytest.mark.parametrize("denied", ["CLAUDE.md", "AGENTS.md"])
async def test_a_rule_on_either_name_of_a_symlink_holds(linked: Path, denied: str) -> None:
    ctx = ctx_for(linked, {"edit": {denied: "deny"}})
    with pytest.raises(PermissionDenied, match="denied by permission rule"):
        await run(WriteFileTool(), ctx, file_path="CLAUDE.md", content="pwned\n")
    with pytest.raises(PermissionDenied, match="denied by permission rule"):
        await run(EditTool(), ctx, file_path="CLAUDE.md", old_string="# rules", new_string="pwned")
    assert (linked / "AGENTS.md").read_text() == "# rules\n"
    assert (linked / "CLAUDE.md").is_symlink()


async def test_writes_go_through_a_symlink_and_undo_restores_it(linked: Path) -> None:
    snapshots = FileSnapshots(None, "s")
    ctx = ctx_for(linked, state={STATE_KEY: snapshots})
    await run(EditTool(), ctx, file_path="CLAUDE.md", old_string="# rules", new_string="# better rules")
    assert (linked / "CLAUDE.md").is_symlink()  # still a link...
    assert (linked / "AGENTS.md").read_text() == "# better rules\n"  # ...to the changed file
    snapshots.turn = 1
    await run(WriteFileTool(), ctx, file_path="CLAUDE.md", content="all new\n")
    assert (linked / "CLAUDE.md").is_symlink() and (linked / "AGENTS.md").read_text() == "all new\n"
    await snapshots.undo()
    assert (linked / "AGENTS.md").read_text() == "# better rules\n" and (linked / "CLAUDE.md").is_symlink()
    await snapshots.undo()
    assert (linked / "AGENTS.md").read_text() == "# rules\n" and (linked / "CLAUDE.md").is_symlink()


async def test_hard_links_stay_linked(project: Path) -> None:
    first = project / "src" / "shared.txt"
    first.write_text("one\n")
    second = project / "other.txt"
    os.link(first, second)
    ctx = ctx_for(project)
    await run(WriteFileTool(), ctx, file_path="other.txt", content="two\n")
    assert first.read_text() == "two\n" and os.path.samefile(first, second)
    await run(EditTool(), ctx, file_path="src/shared.txt", old_string="two", new_string="three")
    assert second.read_text() == "three\n" and second.stat().st_nlink == 2


async def test_hard_linked_write_that_fails_leaves_the_old_content(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from etcode.util import fs

    first = project / "src" / "shared.txt"
    first.write_text("precious\n")
    os.link(first, project / "other.txt")
    real_fsync = os.fsync
    calls = {"n": 0}

    def failing_fsync(fd: int) -> None:
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(28, "No space left on device")
        real_fsync(fd)

    monkeypatch.setattr(fs.os, "fsync", failing_fsync)
    with pytest.raises(OSError):
        fs.atomic_write_bytes(project / "other.txt", b"a much longer replacement text\n")
    assert first.read_text() == "precious\n" and (project / "other.txt").read_text() == "precious\n"

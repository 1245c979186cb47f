"""Edit and WriteFile on symlinks and hard links (issue 12, point 6): a write goes through a
symlink to its target and keeps the link; the ``edit`` rule (and ``external_directory``)
holds on the link's name and on the target; a hard-linked file stays one file; undo
restores through links."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from etcode.permission import Decision, PermissionRequest
from etcode.session.snapshots import FileSnapshots
from etcode.session.store import SessionStore
from etcode.tools.base import PermissionDenied, Tool, ToolContext, ToolError, ToolResult
from etcode.tools.edit import EditTool
from etcode.tools.snapshot import STATE_KEY
from etcode.tools.write_file import WriteFileTool
from tests.fs_support import small_tmpfs
from tests.permission_support import ruled_context


class Recorder:
    def __init__(self, answer: str = "reject") -> None:
        self.answer = answer
        self.questions: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Decision:
        self.questions.append(request)
        return Decision.allow_once() if self.answer == "allow" else Decision.reject("refused in the test")


def rules_ctx(
    root: Path, permission: dict[str, Any] | None = None, asker: Any = None, snapshots: Any = None
) -> ToolContext:
    ctx = ruled_context(root, permission, asker or Recorder())
    if snapshots is not None:
        ctx.state[STATE_KEY] = snapshots
    return ctx


async def change(tool_name: str, ctx: ToolContext, path: str, old: str, new: str) -> ToolResult:
    """Edit ``old`` → ``new`` in ``path``, or (WriteFile) write the whole file with it replaced."""
    tool: Tool
    if tool_name == "Edit":
        tool = EditTool()
        args: dict[str, Any] = {"file_path": path, "old_string": old, "new_string": new}
    else:
        tool = WriteFileTool()
        current = (ctx.directory / path).read_text(encoding="utf-8")
        args = {"file_path": path, "content": current.replace(old, new)}
    return await tool.run(tool.parse(args), ctx)


@pytest.fixture
def linked(tmp_path: Path) -> Path:
    """``CLAUDE.md -> AGENTS.md``, as many repositories have it."""
    (tmp_path / "AGENTS.md").write_text("# Rules\nbe nice\n", encoding="utf-8")
    (tmp_path / "CLAUDE.md").symlink_to("AGENTS.md")
    return tmp_path


TOOLS = ["Edit", "WriteFile"]


@pytest.mark.parametrize("tool", TOOLS)
async def test_write_through_a_symlink_keeps_the_link(linked: Path, tool: str) -> None:
    (linked / "AGENTS.md").chmod(0o640)
    await change(tool, rules_ctx(linked), "CLAUDE.md", "be nice", "be kind")
    assert (linked / "CLAUDE.md").is_symlink() and os.readlink(linked / "CLAUDE.md") == "AGENTS.md"
    assert (linked / "AGENTS.md").read_text() == "# Rules\nbe kind\n"
    assert (linked / "AGENTS.md").stat().st_mode & 0o777 == 0o640
    assert sorted(p.name for p in linked.iterdir()) == ["AGENTS.md", "CLAUDE.md"]  # no temp file left


@pytest.mark.parametrize("tool", TOOLS)
@pytest.mark.parametrize("denied", ["CLAUDE.md", "AGENTS.md"])
async def test_edit_rule_holds_on_the_link_and_on_its_target(linked: Path, tool: str, denied: str) -> None:
    ctx = rules_ctx(linked, {"edit": {denied: "deny"}})
    with pytest.raises(PermissionDenied, match=denied):
        await change(tool, ctx, "CLAUDE.md", "be nice", "be kind")
    assert (linked / "CLAUDE.md").is_symlink()
    assert (linked / "AGENTS.md").read_text() == "# Rules\nbe nice\n"


@pytest.mark.parametrize("tool", TOOLS)
async def test_an_ask_names_both_the_link_and_its_target(linked: Path, tool: str) -> None:
    asker = Recorder("allow")
    await change(tool, rules_ctx(linked, {"edit": "ask"}, asker), "CLAUDE.md", "be nice", "be kind")
    assert [q.patterns for q in asker.questions] == [["CLAUDE.md", "AGENTS.md"]]


@pytest.mark.parametrize("tool", TOOLS)
async def test_hard_links_stay_one_file(tmp_path: Path, tool: str) -> None:
    first = tmp_path / "a.txt"
    first.write_text("one\ntwo\n", encoding="utf-8")
    first.chmod(0o600)
    os.link(first, tmp_path / "b.txt")
    inode = first.stat().st_ino
    await change(tool, rules_ctx(tmp_path), "a.txt", "two", "2")
    second = tmp_path / "b.txt"
    assert second.read_text() == "one\n2\n"
    assert first.stat().st_ino == second.stat().st_ino == inode and first.stat().st_nlink == 2
    assert first.stat().st_mode & 0o777 == 0o600
    await change(tool, rules_ctx(tmp_path), "b.txt", "one\n2\n", "short\n")  # shrinks in place too
    assert first.read_bytes() == b"short\n" and first.stat().st_ino == inode
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.txt", "b.txt"]


async def test_write_through_a_dangling_symlink_creates_its_target(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "NOTES.md").symlink_to("docs/notes.md")
    tool = WriteFileTool()
    result = await tool.run(tool.parse({"file_path": "NOTES.md", "content": "hi\n"}), rules_ctx(tmp_path))
    assert result.data is not None and result.data["created"]
    assert (tmp_path / "NOTES.md").is_symlink() and (tmp_path / "docs/notes.md").read_text() == "hi\n"


async def test_a_symlink_loop_is_an_error_not_a_new_file(tmp_path: Path) -> None:
    (tmp_path / "loop").symlink_to("loop")
    tool = WriteFileTool()
    with pytest.raises(ToolError, match="(?i)symbolic links"):
        await tool.run(tool.parse({"file_path": "loop", "content": "x"}), rules_ctx(tmp_path))
    assert (tmp_path / "loop").is_symlink() and os.readlink(tmp_path / "loop") == "loop"


@pytest.mark.parametrize("tool", TOOLS)
async def test_a_link_inside_to_a_file_outside_asks_external_directory(tmp_path: Path, tool: str) -> None:
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (outside / "shared.md").write_text("be nice\n", encoding="utf-8")
    (project / "shared.md").symlink_to(outside / "shared.md")
    asker = Recorder()
    with pytest.raises(PermissionDenied):
        await change(tool, rules_ctx(project, asker=asker), "shared.md", "be nice", "be kind")
    assert asker.questions[0].permission == "external_directory"
    assert (outside / "shared.md").read_text() == "be nice\n"


@pytest.mark.parametrize("tool", TOOLS)
async def test_a_link_outside_to_a_file_inside_asks_external_directory(tmp_path: Path, tool: str) -> None:
    """Written by its outside name, the link's place is checked too."""
    project, outside = tmp_path / "project", tmp_path / "outside"
    project.mkdir()
    outside.mkdir()
    (project / "a.md").write_text("be nice\n", encoding="utf-8")
    (outside / "a.md").symlink_to(project / "a.md")
    asker = Recorder()
    with pytest.raises(PermissionDenied):
        await change(tool, rules_ctx(project, asker=asker), str(outside / "a.md"), "be nice", "be kind")
    assert asker.questions[0].permission == "external_directory"
    assert asker.questions[0].patterns == [str(outside / "a.md")]
    assert (project / "a.md").read_text() == "be nice\n"


# ---- undo ----------------------------------------------------------------------------------


@pytest.fixture(params=["memory", "store"])
def snapshots(request: pytest.FixtureRequest, tmp_path: Path):
    store = SessionStore.open(tmp_path / "db" / "etcode.db") if request.param == "store" else None
    if store is not None:
        store.create_session("s", project_id="p", directory=str(tmp_path), model="m", agent="build")
    yield FileSnapshots(store, "s", turn=1)
    if store is not None:
        store.close()


async def test_undo_restores_through_the_link(linked: Path, snapshots: FileSnapshots) -> None:
    """Changed by both names in one turn: undo brings back the content before the turn
    (not the in-between one) and the link stays a link."""
    ctx = rules_ctx(linked, snapshots=snapshots)
    await change("Edit", ctx, "AGENTS.md", "be nice", "be kind")
    await change("WriteFile", ctx, "CLAUDE.md", "be kind", "be very kind")
    assert (linked / "AGENTS.md").read_text() == "# Rules\nbe very kind\n"
    report = await snapshots.undo()
    assert report is not None and report.paths == [str(linked / "AGENTS.md")]
    assert (linked / "AGENTS.md").read_text() == "# Rules\nbe nice\n"
    assert (linked / "CLAUDE.md").is_symlink() and os.readlink(linked / "CLAUDE.md") == "AGENTS.md"


async def test_undo_of_a_hard_linked_file_keeps_the_link(tmp_path: Path, snapshots: FileSnapshots) -> None:
    (tmp_path / "a.txt").write_text("one\n", encoding="utf-8")
    os.link(tmp_path / "a.txt", tmp_path / "b.txt")
    await change("Edit", rules_ctx(tmp_path, snapshots=snapshots), "a.txt", "one", "uno")
    await snapshots.undo()
    assert (tmp_path / "b.txt").read_text() == "one\n"
    assert (tmp_path / "a.txt").stat().st_ino == (tmp_path / "b.txt").stat().st_ino


async def test_undo_of_a_file_created_through_a_link_keeps_the_link(
    tmp_path: Path, snapshots: FileSnapshots
) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "NOTES.md").symlink_to("docs/notes.md")
    tool = WriteFileTool()
    ctx = rules_ctx(tmp_path, snapshots=snapshots)
    await tool.run(tool.parse({"file_path": "NOTES.md", "content": "hi\n"}), ctx)
    await snapshots.undo()
    assert not (tmp_path / "docs/notes.md").exists()
    assert (tmp_path / "NOTES.md").is_symlink() and os.readlink(tmp_path / "NOTES.md") == "docs/notes.md"


# ---- a failed in-place write ---------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path: Path):
    """A 64 KB tmpfs: a real ENOSPC (needs root and mount)."""
    with small_tmpfs(tmp_path / "small") as mount_point:
        yield mount_point


@pytest.mark.parametrize("reserve", [True, False], ids=["fallocate", "rollback"])
async def test_hard_linked_file_on_a_full_disk_keeps_its_old_content(
    small_disk: Path, reserve: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The write fails up front (space reserved first) or, without ``posix_fallocate``,
    half-way — and then the old bytes are written back."""
    if not reserve:
        monkeypatch.delattr(os, "posix_fallocate", raising=False)
    original = "line\n" * 100
    (small_disk / "a.txt").write_text(original, encoding="utf-8")
    os.link(small_disk / "a.txt", small_disk / "b.txt")
    (small_disk / "filler").write_bytes(b"x" * 40_000)
    tool = WriteFileTool()
    with pytest.raises(ToolError, match="(?i)space"):
        await tool.run(tool.parse({"file_path": "a.txt", "content": "new\n" * 10_000}), rules_ctx(small_disk))
    assert (small_disk / "b.txt").read_text() == original
    assert (small_disk / "a.txt").stat().st_nlink == 2
    assert sorted(p.name for p in small_disk.iterdir()) == ["a.txt", "b.txt", "filler"]

"""Read rules that other tools must not walk around (issue 12, point 6): Grep leaves out
files the ``read`` rules do not allow, ``.envrc`` is a secret file, a symlink named like a
protected file is as protected as the file, and Edit does not show a file it may not read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from etcode.permission import Decision, PermissionRequest
from etcode.tools import ripgrep
from etcode.tools.base import PermissionDenied, Tool, ToolContext, ToolResult
from etcode.tools.edit import EditTool
from etcode.tools.glob_tool import GlobTool
from etcode.tools.grep import GrepTool
from etcode.tools.read_file import ReadFileTool
from etcode.tools.read_many_files import ReadManyFilesTool
from tests.permission_support import ruled_context
from tests.require import missing

SECRET = "hunter2-do-not-show"


class Recorder:
    """An asker that refuses and remembers what it was asked."""

    def __init__(self) -> None:
        self.questions: list[PermissionRequest] = []

    async def ask(self, request: PermissionRequest) -> Decision:
        self.questions.append(request)
        return Decision.reject("refused in the test")


def rules_ctx(root: Path, permission: dict[str, Any] | None = None, asker: Any = None) -> ToolContext:
    return ruled_context(root, permission, asker or Recorder())


async def call(tool: Tool, ctx: ToolContext, **args: Any) -> ToolResult:
    return await tool.run(tool.parse(args), ctx)


def write(root: Path, rel: str, text: str) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(params=["rg", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rg":
        if ripgrep.rg_path() is None:
            missing("rg", "rg is not installed")
    else:
        monkeypatch.setattr(ripgrep, "rg_path", lambda: None)
    return request.param


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(tmp_path, "public.txt", "needle in public\n")
    write(tmp_path, "secret/s.txt", f"needle {SECRET}\n")
    write(tmp_path, "secret/deeper/t.txt", f"needle {SECRET} again\n")
    write(tmp_path, "asked/a.txt", f"needle {SECRET} asked\n")
    return tmp_path


# ---- Grep --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["content", "files", "count"])
async def test_grep_leaves_out_denied_and_asked_files(tree: Path, engine: str, mode: str) -> None:
    asker = Recorder()
    ctx = rules_ctx(tree, {"read": {"secret/*": "deny", "asked/*": "ask"}}, asker)
    result = await call(GrepTool(), ctx, pattern="needle", output_mode=mode)
    assert SECRET not in result.output
    assert "public.txt" in result.output
    assert "secret/" not in result.output.replace("\\", "/")
    assert "asked/a.txt" not in result.output
    assert "3 files" in result.output and "2 denied" in result.output and "1 needs approval" in result.output
    assert result.data is not None and result.data["hidden"] == 3
    assert asker.questions == []  # a search never asks: it leaves the file out


async def test_grep_on_a_denied_or_asked_file_is_refused(tree: Path, engine: str) -> None:
    asker = Recorder()
    ctx = rules_ctx(tree, {"read": {"secret/*": "deny", "asked/*": "ask"}}, asker)
    with pytest.raises(PermissionDenied, match="denied by permission rule"):
        await call(GrepTool(), ctx, pattern="needle", path="secret/s.txt")
    with pytest.raises(PermissionDenied, match="refused in the test"):
        await call(GrepTool(), ctx, pattern="needle", path="asked/a.txt")
    assert [q.permission for q in asker.questions] == ["read"]


async def test_grep_does_not_search_through_a_symlink_to_a_denied_file(tree: Path, engine: str) -> None:
    (tree / "asked/a.txt").unlink()
    (tree / "alias.txt").symlink_to("secret/s.txt")
    ctx = rules_ctx(tree, {"read": {"secret/*": "deny"}})
    result = await call(GrepTool(), ctx, pattern="needle")
    assert SECRET not in result.output
    with pytest.raises(PermissionDenied):
        await call(GrepTool(), ctx, pattern="needle", path="alias.txt")


async def test_grep_without_read_rules_is_unchanged(tree: Path, engine: str) -> None:
    result = await call(GrepTool(), rules_ctx(tree), pattern="needle", output_mode="files")
    assert sorted(result.output.splitlines()) == [
        "asked/a.txt",
        "public.txt",
        "secret/deeper/t.txt",
        "secret/s.txt",
    ]
    assert "left out" not in result.output


# ---- .envrc --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", [".envrc", ".envrc.local", "sub/.envrc"])
async def test_envrc_is_a_secret_file(tmp_path: Path, engine: str, name: str) -> None:
    write(tmp_path, name, f"export TOKEN={SECRET}\n")
    write(tmp_path, "code.py", "TOKEN = 1\n")
    asker = Recorder()
    ctx = rules_ctx(tmp_path, asker=asker)
    grep = await call(GrepTool(), ctx, pattern="TOKEN")
    assert SECRET not in grep.output and "code.py" in grep.output
    many = await call(ReadManyFilesTool(), ctx, paths=["**"])
    assert SECRET not in many.output and ".envrc" not in many.output
    listed = await call(GlobTool(), ctx, pattern="**/*")
    assert ".envrc" not in listed.output
    named = await call(GlobTool(), ctx, pattern="**/.envrc*")
    assert name in named.output.splitlines()  # listed when the pattern names it
    with pytest.raises(PermissionDenied, match="refused in the test"):
        await call(ReadFileTool(), ctx, file_path=name)
    with pytest.raises(PermissionDenied):
        await call(GrepTool(), ctx, pattern="TOKEN", path=name)
    assert asker.questions and all(q.permission == "read" for q in asker.questions)


# ---- a link named like a protected file ---------------------------------------------------


async def test_env_symlink_to_an_unprotected_name_still_asks(tmp_path: Path) -> None:
    """``.env -> config/production``: reading ``.env`` asks, though the target's name does not."""
    write(tmp_path, "config/production", f"KEY={SECRET}\n")
    (tmp_path / ".env").symlink_to("config/production")
    asker = Recorder()
    ctx = rules_ctx(tmp_path, asker=asker)
    with pytest.raises(PermissionDenied, match="refused in the test"):
        await call(ReadFileTool(), ctx, file_path=".env")
    many = await call(ReadManyFilesTool(), ctx, paths=[".env"])
    assert SECRET not in many.output
    assert many.data is not None and many.data["errors"][0]["path"] == ".env"
    assert {p for q in asker.questions for p in q.patterns} == {".env"}


async def test_read_rule_on_a_link_name_holds(tmp_path: Path) -> None:
    write(tmp_path, "notes.txt", f"{SECRET}\n")
    (tmp_path / "private").mkdir()
    (tmp_path / "private/notes.txt").symlink_to("../notes.txt")
    ctx = rules_ctx(tmp_path, {"read": {"private/*": "deny"}})
    with pytest.raises(PermissionDenied):
        await call(ReadFileTool(), ctx, file_path="private/notes.txt")
    many = await call(ReadManyFilesTool(), ctx, paths=["private/notes.txt"])
    assert SECRET not in many.output


# ---- Edit shows file content: it needs the read permission ---------------------------------


async def test_edit_does_not_show_a_file_it_may_not_read(tmp_path: Path) -> None:
    write(tmp_path, ".env", f"API_KEY={SECRET}\nDEBUG=1\n")
    asker = Recorder()
    ctx = rules_ctx(tmp_path, asker=asker)
    with pytest.raises(PermissionDenied) as caught:
        await call(EditTool(), ctx, file_path=".env", old_string="API_KEY=wrong", new_string="API_KEY=x")
    assert SECRET not in str(caught.value)
    assert [q.permission for q in asker.questions] == ["read"]
    assert (tmp_path / ".env").read_text() == f"API_KEY={SECRET}\nDEBUG=1\n"


async def test_edit_of_a_readable_file_does_not_ask_to_read(tmp_path: Path) -> None:
    write(tmp_path, "a.txt", "one\ntwo\n")
    asker = Recorder()
    result = await call(
        EditTool(), rules_ctx(tmp_path, asker=asker), file_path="a.txt", old_string="two", new_string="2"
    )
    assert "Edited a.txt" in result.output and asker.questions == []

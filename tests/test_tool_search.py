"""Glob, Grep and ListFiles — with ripgrep and with the pure-Python fallback."""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from pathlib import Path
from typing import Any

import pytest

from etcode.tools import glob_tool, grep, list_files, ripgrep
from etcode.tools.base import ToolError
from etcode.tools.glob_tool import GlobTool
from etcode.tools.grep import GrepTool
from etcode.tools.list_files import ListFilesTool
from tests.process_support import survivors, token
from tests.require import missing
from tests.tool_support import make_ctx


@pytest.fixture(params=["rg", "python"])
def engine(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "rg":
        if ripgrep.rg_path() is None:
            missing("rg", "rg is not installed")
    else:
        monkeypatch.setattr(ripgrep, "rg_path", lambda: None)
    return request.param


def write(root: Path, rel: str, text: str = "x\n", age: float = 0) -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    if age:
        stamp = time.time() - age
        os.utime(path, (stamp, stamp))
    return path


async def call(tool: Any, root: Path, **args: Any):
    return await tool.run(tool.parse(args), make_ctx(root))


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    write(tmp_path, "old.py", "def old():\n    return 'needle'\n", age=300)
    write(tmp_path, "new.py", "needle = 1\n", age=10)
    write(tmp_path, "src/mid.py", "x = 'Needle'\nneedle()\n", age=100)
    write(tmp_path, "src/app.ts", "const needle = 2;\n", age=50)
    write(tmp_path, ".gitignore", "ignored/\n*.tmp\n")
    write(tmp_path, "ignored/hidden.py", "needle\n")
    write(tmp_path, "scratch.tmp", "needle\n")
    write(tmp_path, "node_modules/pkg/index.py", "needle\n")
    write(tmp_path, ".config/settings.py", "needle\n", age=400)
    (tmp_path / "image.bin").write_bytes(b"\x00needle\x00")
    return tmp_path


async def test_glob_star_not_recursive_and_newest_first(tree: Path, engine: str) -> None:
    result = await call(GlobTool(), tree, pattern="*.py")
    assert result.output.splitlines() == ["new.py", "old.py"]
    result = await call(GlobTool(), tree, pattern="**/*.py")
    assert result.output.splitlines() == ["new.py", "src/mid.py", "old.py", ".config/settings.py"]
    assert GlobTool().result_summary({}, result) == "Found 4 files"


async def test_glob_with_path_and_braces(tree: Path, engine: str) -> None:
    result = await call(GlobTool(), tree, pattern="*.{py,ts}", path="src")
    assert result.output.splitlines() == ["src/app.ts", "src/mid.py"]


async def test_glob_no_match_and_cap(tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result = await call(GlobTool(), tmp_path, pattern="*.rs")
    assert result.output.startswith("No files found")
    for i in range(5):
        write(tmp_path, f"f{i}.txt")
    monkeypatch.setattr(glob_tool, "MAX_RESULTS", 3)
    result = await call(GlobTool(), tmp_path, pattern="*.txt")
    assert len(result.output.split("\n\n")[0].splitlines()) == 3
    assert "Showing 3 of 5 matches" in result.output


async def test_glob_bad_path(tmp_path: Path, engine: str) -> None:
    with pytest.raises(ToolError, match="Not a directory"):
        await call(GlobTool(), tmp_path, pattern="*", path="nope")


async def test_grep_content_newest_first_gitignore_aware(tree: Path, engine: str) -> None:
    result = await call(GrepTool(), tree, pattern="needle")
    assert result.output.splitlines() == [
        "Found 5 matches in 5 files",
        "",
        "new.py",
        "  1: needle = 1",
        "",
        "src/app.ts",
        "  1: const needle = 2;",
        "",
        "src/mid.py",
        "  2: needle()",
        "",
        "old.py",
        "  2:     return 'needle'",
        "",
        ".config/settings.py",
        "  1: needle",
    ]
    assert GrepTool().result_summary({}, result) == "Found 5 matches in 5 files"


async def test_grep_modes_and_include(tree: Path, engine: str) -> None:
    result = await call(GrepTool(), tree, pattern="[Nn]eedle", include="*.py", output_mode="files")
    assert result.output.splitlines() == ["new.py", "src/mid.py", "old.py", ".config/settings.py"]
    assert GrepTool().result_summary({}, result) == "Found 4 files"
    result = await call(GrepTool(), tree, pattern="[Nn]eedle", path="src", output_mode="count")
    assert result.output.splitlines() == ["src/app.ts: 1", "src/mid.py: 2"]
    result = await call(GrepTool(), tree, pattern="needle", include="src/*.ts")
    assert "src/app.ts" in result.output and "mid.py" not in result.output


async def test_grep_single_file(tree: Path, engine: str) -> None:
    result = await call(GrepTool(), tree, pattern="needle", path="src/mid.py")
    assert result.output.splitlines()[-1] == "  2: needle()"


async def test_grep_no_match_and_bad_regex(tree: Path, engine: str) -> None:
    result = await call(GrepTool(), tree, pattern="nothing_here_zz")
    assert result.output.startswith("No matches found")
    with pytest.raises(ToolError):
        await call(GrepTool(), tree, pattern="(unclosed")


async def test_grep_cap(tmp_path: Path, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    write(tmp_path, "many.txt", "hit\n" * 20)
    monkeypatch.setattr(grep, "MAX_MATCHES", 5)
    result = await call(GrepTool(), tmp_path, pattern="hit")
    assert result.output.count("  ") == 5
    assert "Showing the first 5 of 20 matching lines" in result.output


async def test_list_files_tree(tree: Path, engine: str) -> None:
    result = await call(ListFilesTool(), tree)
    lines = result.output.splitlines()
    assert lines[0] == tree.resolve().as_posix() + "/"
    assert lines[1:] == [
        "  .config/",
        "    settings.py",
        "  src/",
        "    app.ts",
        "    mid.py",
        "  .gitignore",
        "  image.bin",
        "  new.py",
        "  old.py",
    ]
    assert ListFilesTool().result_summary({}, result) == "Listed 7 files"


async def test_list_files_ignore_and_cap(tree: Path, engine: str, monkeypatch: pytest.MonkeyPatch) -> None:
    result = await call(ListFilesTool(), tree, ignore=["*.py", ".*"])
    assert result.output.splitlines()[1:] == ["  src/", "    app.ts", "  image.bin"]
    monkeypatch.setattr(list_files, "MAX_ENTRIES", 2)
    result = await call(ListFilesTool(), tree)
    assert "Showing 2 of 7 files" in result.output
    assert "src/" not in result.output  # shallowest first
    with pytest.raises(ToolError, match="is a file"):
        await call(ListFilesTool(), tree, path="new.py")


async def test_a_cancel_at_any_turn_of_a_search_leaves_no_ripgrep(tmp_path: Path) -> None:
    """ripgrep blocks reading a FIFO nobody writes; the search is cancelled after 0, 1, 2,
    ... event-loop turns (in the start and after it) and no rg is left running."""
    assert ripgrep.rg_path() is not None, "rg is a dependency of etcode"
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    left: dict[int, list[int]] = {}
    for turns in range(40):
        mark = token()
        search = asyncio.create_task(ripgrep.run_rg(["--no-messages", mark, str(fifo)], tmp_path))
        for _ in range(turns):
            await asyncio.sleep(0)
        search.cancel()
        await asyncio.wait({search}, timeout=10)
        if found := await survivors(mark):
            left[turns] = found
        with contextlib.suppress(asyncio.CancelledError):
            await search
    assert left == {}, f"rg left running after a cancel at these turns: {left}"

"""Property test: no generated path lets a file tool reach outside the worktree without
an ``external_directory`` permission check — ``..``, absolute paths, ``~``, symlinks
inside the worktree pointing outside (to files, folders, missing targets), symlink
loops. The context records every permission check and denies ``external_directory``,
so nothing outside may be read, listed, created or changed at all.

Layout (all under one temporary folder ``top``)::

    top/l1/l2/l3/                  OUT_l3.txt (OUTSIDE-SECRET-CONTENT)
                outside/           zq_hidden_name.txt (OUTSIDE-SECRET-CONTENT), sub/deep.txt
                wt/                the worktree and working directory (HOME is outside/)
                  inside.txt, sub/inner.txt, .env
                  link_out  -> ../outside            link_file -> ../outside/zq_hidden_name.txt
                  abs_link  -> <top>/l1/l2/l3/outside  dangling -> ../outside/missing.txt
                  loop1 -> loop2, loop2 -> loop1      self -> .      sub/up -> ../..
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from etcode.tools.base import PermissionDenied, ToolError
from etcode.tools.edit import EditTool
from etcode.tools.glob_tool import GlobTool
from etcode.tools.list_files import ListFilesTool
from etcode.tools.read_file import ReadFileTool
from etcode.tools.read_many_files import ReadManyFilesTool
from etcode.tools.write_file import WriteFileTool
from tests.tool_support import make_ctx

SECRET = "OUTSIDE-SECRET-CONTENT"
HIDDEN_NAME = "zq_hidden"


def build(top: Path) -> Path:
    base = top / "l1" / "l2" / "l3"
    outside, wt = base / "outside", base / "wt"
    (outside / "sub").mkdir(parents=True)
    (wt / "sub").mkdir(parents=True)
    (base / "OUT_l3.txt").write_text(SECRET + "\n")
    (outside / "zq_hidden_name.txt").write_text(SECRET + "\n")
    (outside / "sub" / "deep.txt").write_text(SECRET + "\n")
    (wt / "inside.txt").write_text("INSIDE\n")
    (wt / "sub" / "inner.txt").write_text("INNER\n")
    (wt / ".env").write_text("KEY=inside-env\n")
    os.symlink("../outside", wt / "link_out")
    os.symlink("../outside/zq_hidden_name.txt", wt / "link_file")
    os.symlink(str(outside), wt / "abs_link")
    os.symlink("../outside/missing.txt", wt / "dangling")
    os.symlink("loop2", wt / "loop1")
    os.symlink("loop1", wt / "loop2")
    os.symlink(".", wt / "self")
    os.symlink("../..", wt / "sub" / "up")
    return wt


def snapshot(top: Path, wt: Path) -> dict[str, Any]:
    """Everything outside the worktree: names, link targets, file bytes and mtimes."""
    state: dict[str, Any] = {}
    for folder, dirs, files in os.walk(top):
        if Path(folder) == wt:
            dirs[:] = []
            continue
        for name in dirs + files:
            path = Path(folder) / name
            if path == wt:
                continue
            if path.is_symlink():
                state[str(path)] = ("link", os.readlink(path))
            elif path.is_file():
                st_ = path.stat()
                state[str(path)] = ("file", path.read_bytes(), st_.st_mtime_ns)
            else:
                state[str(path)] = ("dir",)
    return state


@contextlib.contextmanager
def home(path: Path) -> Iterator[None]:
    old = os.environ.get("HOME")
    os.environ["HOME"] = str(path)
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("HOME", None)
        else:
            os.environ["HOME"] = old


class Recorder:
    def __init__(self) -> None:
        self.calls: list[tuple[str, list[str]]] = []

    async def __call__(self, permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        self.calls.append((permission, list(patterns)))
        if permission == "external_directory":
            raise PermissionDenied("denied external_directory")  # no path: outputs stay comparable


# ---- generated paths ------------------------------------------------------------------------

PARTS = [
    "..", ".", "", "link_out", "link_file", "abs_link", "dangling", "loop1", "loop2", "self", "sub",
    "up", "inside.txt", "inner.txt", "new.txt", ".env", "outside", "wt", "*", "**", "*.txt", "OUT_l3.txt",
]  # fmt: skip


@st.composite
def raw_path(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.sampled_from(PARTS), min_size=1, max_size=5))
    while parts.count("..") > 3:  # stay inside the temporary folder even if a check is missing
        parts.remove("..")
    body = "/".join(parts)
    start = draw(st.sampled_from(["", "", "", "./", "~/", "~", "ABS/", "ABSWT/"]))
    return start + body


def concrete(path: str, wt: Path) -> str:
    if path.startswith("ABSWT/"):
        return str(wt) + "/" + path[len("ABSWT/") :]
    if path.startswith("ABS/"):
        return str(wt.parent) + "/" + path[len("ABS/") :]
    return path


@st.composite
def tool_call(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    p = draw(raw_path())
    tool = draw(st.sampled_from(["ReadFile", "ReadManyFiles", "Glob", "ListFiles", "WriteFile", "Edit"]))
    if tool == "ReadFile":
        return tool, {"file_path": p}
    if tool == "ReadManyFiles":
        extra = draw(st.lists(raw_path(), max_size=2))
        args: dict[str, Any] = {"paths": [p, *extra]}
        if draw(st.booleans()):
            args["use_default_excludes"] = False
        return tool, args
    if tool == "Glob":
        if draw(st.booleans()):
            return tool, {"pattern": p}
        return tool, {"pattern": draw(st.sampled_from(["*", "**", "**/*", "*.txt", "**/*.txt"])), "path": p}
    if tool == "ListFiles":
        return tool, {"path": p}
    if tool == "WriteFile":
        return tool, {"file_path": p, "content": "WRITTEN\n"}
    if draw(st.booleans()):
        return tool, {"file_path": p, "old_string": "", "new_string": "CREATED\n"}
    return tool, {"file_path": p, "old_string": "SECRET-CONTENT", "new_string": "CHANGED"}


TOOLS = {
    "ReadFile": ReadFileTool(),
    "ReadManyFiles": ReadManyFilesTool(),
    "Glob": GlobTool(),
    "ListFiles": ListFilesTool(),
    "WriteFile": WriteFileTool(),
    "Edit": EditTool(),
}


def concretize(args: dict[str, Any], wt: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in args.items():
        if key in ("file_path", "path", "pattern"):
            out[key] = concrete(value, wt)
        elif key == "paths":
            out[key] = [concrete(v, wt) for v in value]
        else:
            out[key] = value
    return out


async def run_tool(name: str, args: dict[str, Any], wt: Path, recorder: Recorder) -> tuple[str, str | None]:
    tool = TOOLS[name]
    ctx = make_ctx(wt, check_permission=recorder)
    try:
        result = await tool.run(tool.parse(args), ctx)
    except ToolError as err:  # PermissionDenied included; anything else is a bug
        return str(err), None
    data = result.data or {}
    return result.output + "\n" + repr(data), None


@pytest.fixture(scope="module")
def data_home(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    old = os.environ.get("XDG_DATA_HOME")
    os.environ["XDG_DATA_HOME"] = str(tmp_path_factory.mktemp("data"))
    yield
    if old is None:
        os.environ.pop("XDG_DATA_HOME", None)
    else:
        os.environ["XDG_DATA_HOME"] = old


@settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(call=tool_call())
def test_no_path_escapes_the_worktree_without_an_external_directory_check(
    call: tuple[str, dict[str, Any]], data_home: None
) -> None:
    name, raw_args = call
    with tempfile.TemporaryDirectory() as folder:
        top = Path(folder).resolve()
        wt = build(top)
        before = snapshot(top, wt)
        args = concretize(raw_args, wt)
        recorder = Recorder()
        with home(wt.parent / "outside"):
            output, _ = asyncio.run(run_tool(name, args, wt, recorder))
        after = snapshot(top, wt)
    assert after == before, f"{name}{args} changed something outside the worktree"
    assert SECRET not in output, f"{name}{args} read outside the worktree: {output[:300]}"
    assert HIDDEN_NAME not in output, f"{name}{args} listed outside the worktree: {output[:300]}"


# ---- explicit cases (each one a shape the property must cover) -----------------------------


CASES = [
    ("ReadFile", {"file_path": "link_file"}),
    ("ReadFile", {"file_path": "link_out/zq_hidden_name.txt"}),
    ("ReadFile", {"file_path": "sub/up/OUT_l3.txt"}),
    ("ReadFile", {"file_path": "~/zq_hidden_name.txt"}),
    ("ReadFile", {"file_path": "loop1"}),
    ("ReadFile", {"file_path": "loop1/x"}),
    ("ReadManyFiles", {"paths": ["link_out/*.txt"]}),
    ("ReadManyFiles", {"paths": ["**"], "use_default_excludes": False}),
    ("ReadManyFiles", {"paths": ["link_file", "abs_link", "../outside/**"]}),
    ("ReadManyFiles", {"paths": ["loop1/**", "loop1", "self/link_file"]}),
    ("Glob", {"pattern": "*", "path": "abs_link"}),
    ("Glob", {"pattern": "../outside/*"}),
    ("Glob", {"pattern": "**/*", "path": "loop1"}),
    ("ListFiles", {"path": "sub/up"}),
    ("ListFiles", {"path": "loop2"}),
    ("WriteFile", {"file_path": "dangling", "content": "x"}),
    ("WriteFile", {"file_path": "link_out/new.txt", "content": "x"}),
    ("WriteFile", {"file_path": "loop1", "content": "x"}),
    ("Edit", {"file_path": "link_file", "old_string": "SECRET-CONTENT", "new_string": "x"}),
    ("Edit", {"file_path": "dangling", "old_string": "", "new_string": "x"}),
    ("Edit", {"file_path": "~/new.txt", "old_string": "", "new_string": "x"}),
]


@pytest.mark.parametrize(("name", "args"), CASES, ids=[f"{n}-{i}" for i, (n, _) in enumerate(CASES)])
def test_escape_attempts(name: str, args: dict[str, Any], tmp_path: Path, data_home: None) -> None:
    top = tmp_path.resolve()
    wt = build(top)
    before = snapshot(top, wt)
    recorder = Recorder()
    with home(wt.parent / "outside"):
        output, _ = asyncio.run(run_tool(name, args, wt, recorder))
    assert snapshot(top, wt) == before
    assert SECRET not in output and HIDDEN_NAME not in output, output
    # loops resolve to nowhere; a glob pattern with ".." only matches under its base folder
    reaches_out = "loop" not in str(args) and not str(args.get("pattern", "")).startswith("..")
    if reaches_out:
        assert any(p == "external_directory" for p, _ in recorder.calls), recorder.calls


def test_inside_paths_need_no_external_check(tmp_path: Path, data_home: None) -> None:
    wt = build(tmp_path.resolve())
    recorder = Recorder()
    for name, args in [
        ("ReadFile", {"file_path": "self/inside.txt"}),
        ("ReadFile", {"file_path": str(wt / "sub" / ".." / "inside.txt")}),
        ("ReadManyFiles", {"paths": ["*.txt", "sub/*.txt"]}),
        ("ListFiles", {"path": "sub"}),
        ("WriteFile", {"file_path": "sub/new.txt", "content": "x\n"}),
        ("Edit", {"file_path": "inside.txt", "old_string": "INSIDE", "new_string": "CHANGED"}),
    ]:
        output, _ = asyncio.run(run_tool(name, args, wt, recorder))
        assert "denied" not in output, (name, output)
    assert all(p != "external_directory" for p, _ in recorder.calls), recorder.calls
    assert (wt / "inside.txt").read_text() == "CHANGED\n"


_SEGMENT = st.text(alphabet="ab.*-_!", min_size=1, max_size=5)


@settings(max_examples=300, deadline=None)
@given(
    patterns=st.lists(
        st.builds(lambda seg, slash: seg + ("/" if slash else ""), _SEGMENT, st.booleans()), max_size=6
    ),
    parts=st.lists(
        st.text(alphabet="ab.-_", min_size=1, max_size=5).filter(lambda part: part not in (".", "..")),
        min_size=1,
        max_size=3,
    ),
    is_dir=st.booleans(),
)
def test_pattern_set_agrees_with_gitignore(patterns: list[str], parts: list[str], is_dir: bool) -> None:
    """The fast name/extension/prefix/suffix sets decide like git (pathspec) would."""
    from etcode.util.ignore import PatternSet, gitignore_spec

    path = "/".join(parts)
    spec = gitignore_spec(patterns)  # pathspec, minus the lines git would not use
    # git: a path is ignored when it or a folder above it is (and a folder cannot be re-included)
    expected = any(
        spec.match_file("/".join(parts[: i + 1]) + ("/" if i < len(parts) - 1 or is_dir else ""))
        for i in range(len(parts))
    )
    assert PatternSet(patterns).match_path(path, is_dir) == expected, (patterns, path)


@settings(max_examples=300, deadline=None)
@given(
    ending=st.text(alphabet="ab.+-_", min_size=1, max_size=5).map(lambda text: "." + text),
    parts=st.lists(st.text(alphabet="ab.+-_/", min_size=1, max_size=6), min_size=1, max_size=3),
)
def test_fast_suffix_glob_agrees_with_the_regex(ending: str, parts: list[str]) -> None:
    """ReadManyFiles' endswith shortcut for ``**/*.ext`` decides like the glob's regex."""
    from etcode.tools.read_many_files import _matcher_of
    from etcode.util.ignore import glob_match

    pattern = f"**/*{ending}"
    rel = "/".join(parts)
    assert bool(_matcher_of(pattern)(rel)) == glob_match(pattern, rel), (pattern, rel)

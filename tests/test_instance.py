"""Instance: worktree detection, stable project ids, contextvars isolation."""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from etcode.instance import Instance, describe
from tests.require import needs

needs_git = needs("git", shutil.which("git") is None, "git is not installed")

_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
    "GIT_CONFIG_NOSYSTEM": "1",
}


@pytest.fixture(autouse=True)
def isolated_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No user git config (signing, hooks) and no GIT_DIR from the outside."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for name in ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(name, raising=False)


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, **_GIT_ENV}
    out = subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def make_repo(path: Path, content: str = "hello", commit: bool = True) -> Path:
    path.mkdir(parents=True)
    git(path, "init", "-q")
    if commit:
        (path / "README.md").write_text(content)
        git(path, "add", "README.md")
        git(path, "commit", "-q", "-m", f"first: {content}")
    return path


@needs_git
def test_git_root_is_the_worktree(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    nested = repo / "src" / "pkg"
    nested.mkdir(parents=True)
    with Instance.provide(nested) as info:
        assert Instance.directory() == nested.resolve()
        assert Instance.worktree() == repo.resolve()
        assert Instance.vcs() == "git"
        assert info.is_git
        assert Instance.current() is info


def test_non_git_directory_is_its_own_worktree(tmp_path: Path) -> None:
    plain = tmp_path / "plain" / "dir"
    plain.mkdir(parents=True)
    info = describe(plain)
    assert info.directory == info.worktree == plain.resolve()
    assert info.vcs is None
    assert not info.is_git
    assert describe(plain).project_id == info.project_id
    assert describe(tmp_path / "plain").project_id != info.project_id


@needs_git
def test_project_id_is_stable_and_distinct(tmp_path: Path) -> None:
    one = make_repo(tmp_path / "one", "first repo")
    two = make_repo(tmp_path / "two", "second repo")
    id_one = describe(one).project_id
    assert describe(one / ".").project_id == id_one
    (one / "deep").mkdir()
    assert describe(one / "deep").project_id == id_one
    assert describe(two).project_id != id_one
    root_commit = git(one, "rev-list", "--max-parents=0", "HEAD")
    assert id_one == root_commit[:16]


@needs_git
def test_project_id_survives_a_move(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "before")
    before = describe(repo).project_id
    (repo / ".git" / "etcode").unlink(missing_ok=True)  # force recomputation, not the cache
    moved = repo.rename(tmp_path / "after")
    assert describe(moved).project_id == before


@needs_git
def test_project_id_of_a_repo_without_commits(tmp_path: Path) -> None:
    one = make_repo(tmp_path / "empty1", commit=False)
    two = make_repo(tmp_path / "empty2", commit=False)
    assert describe(one).vcs == "git"
    assert describe(one).project_id == describe(one).project_id
    assert describe(one).project_id != describe(two).project_id


@needs_git
def test_project_id_ignores_git_dir_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    one = make_repo(tmp_path / "one", "one")
    two = make_repo(tmp_path / "two", "two")
    monkeypatch.setenv("GIT_DIR", str(two / ".git"))
    assert (
        describe(one).project_id
        == git(one, "--git-dir", str(one / ".git"), "rev-list", "--max-parents=0", "HEAD")[:16]
    )


def test_no_instance_outside_provide(tmp_path: Path) -> None:
    assert Instance.maybe() is None
    with pytest.raises(RuntimeError, match="Instance.provide"):
        Instance.current()


def test_nested_provide_restores_the_outer(tmp_path: Path) -> None:
    outer, inner = tmp_path / "outer", tmp_path / "inner"
    outer.mkdir()
    inner.mkdir()
    with Instance.provide(outer):
        with Instance.provide(inner):
            assert Instance.directory() == inner.resolve()
        assert Instance.directory() == outer.resolve()
    assert Instance.maybe() is None


async def test_concurrent_tasks_are_isolated(tmp_path: Path) -> None:
    dirs = [tmp_path / "a", tmp_path / "b"]
    for folder in dirs:
        folder.mkdir()
    both_inside = asyncio.Barrier(2)
    seen: dict[str, list[Path]] = {"a": [], "b": []}

    async def session(folder: Path) -> None:
        with Instance.provide(folder):
            await both_inside.wait()  # the other task has entered its own provide
            for _ in range(5):
                seen[folder.name].append(Instance.directory())
                await asyncio.sleep(0)
            inner = asyncio.create_task(_child_directory())
            seen[folder.name].append(await inner)  # child tasks inherit the instance
        assert Instance.maybe() is None

    await asyncio.gather(session(dirs[0]), session(dirs[1]))
    assert seen["a"] == [dirs[0].resolve()] * 6
    assert seen["b"] == [dirs[1].resolve()] * 6
    assert Instance.maybe() is None


async def _child_directory() -> Path:
    await asyncio.sleep(0)
    return Instance.directory()

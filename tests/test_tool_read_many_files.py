"""ReadManyFiles: literal paths, globs, excludes, ignore rules, errors, concurrency, format."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from etcode.tools import read_many_files as rmf
from etcode.tools.base import PermissionDenied, ToolContext
from etcode.tools.read_many_files import ReadManyFilesTool
from etcode.util.fs import format_size
from tests.tool_support import make_ctx


@pytest.fixture(autouse=True)
def _data_home(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path_factory.mktemp("data")))


def write(root: Path, rel: str, text: str = "x\n") -> Path:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


async def run(root: Path, ctx: ToolContext | None = None, **args: Any):
    tool = ReadManyFilesTool()
    return await tool.run(tool.parse(args), ctx or make_ctx(root))


def paths_of(result) -> list[str]:
    return [f["path"] for f in result.data["files"]]


async def test_literal_paths_with_brackets(tmp_path: Path) -> None:
    write(tmp_path, "app/[id]/page.tsx", "export default 1\n")
    write(tmp_path, "file[1].txt", "bracket\n")
    write(tmp_path, "file1.txt", "plain\n")  # what the glob reading would match instead
    result = await run(tmp_path, paths=["app/[id]/page.tsx", "file[1].txt"])
    assert paths_of(result) == ["app/[id]/page.tsx", "file[1].txt"]
    assert "bracket" in result.output and "plain" not in result.output
    assert result.data["errors"] == []


async def test_star_is_not_recursive(tmp_path: Path) -> None:
    write(tmp_path, "a.txt")
    write(tmp_path, "sub/b.txt")
    assert paths_of(await run(tmp_path, paths=["*.txt"])) == ["a.txt"]
    assert paths_of(await run(tmp_path, paths=["**/*.txt"])) == ["a.txt", "sub/b.txt"]


async def test_directory_entry_reads_recursively(tmp_path: Path) -> None:
    write(tmp_path, "src/a.py")
    write(tmp_path, "src/pkg/b.py")
    write(tmp_path, "other.py")
    assert paths_of(await run(tmp_path, paths=["src"])) == ["src/a.py", "src/pkg/b.py"]


async def test_include_adds_and_exclude_wins(tmp_path: Path) -> None:
    write(tmp_path, "a.py")
    write(tmp_path, "b.md")
    write(tmp_path, "c.test.py")
    result = await run(tmp_path, paths=["*.py"], include=["*.md"], exclude=["*.test.py"])
    assert paths_of(result) == ["a.py", "b.md"]
    # exclude also beats a literal path
    result = await run(tmp_path, paths=["a.py", "c.test.py"], exclude=["*.test.py"])
    assert paths_of(result) == ["a.py"]


async def test_exclude_pattern_matches_at_any_depth(tmp_path: Path) -> None:
    write(tmp_path, "src/keep.py")
    write(tmp_path, "src/deep/skip_me.py")
    result = await run(tmp_path, paths=["**/*.py"], exclude=["skip_me.py"])
    assert paths_of(result) == ["src/keep.py"]


async def test_default_excludes_and_switch(tmp_path: Path) -> None:
    write(tmp_path, "index.js")
    write(tmp_path, "node_modules/lib/index.js")
    write(tmp_path, "dist/bundle.js")
    write(tmp_path, ".git/hooks/x.js")
    assert paths_of(await run(tmp_path, paths=["**/*.js"])) == ["index.js"]
    result = await run(tmp_path, paths=["**/*.js"], use_default_excludes=False)
    assert paths_of(result) == [".git/hooks/x.js", "dist/bundle.js", "index.js", "node_modules/lib/index.js"]


async def test_env_and_lock_files_excluded_by_default(tmp_path: Path) -> None:
    write(tmp_path, ".env", "SECRET=1\n")
    write(tmp_path, "poetry.lock")
    write(tmp_path, "main.py")
    result = await run(tmp_path, paths=["*"])
    assert paths_of(result) == ["main.py"]
    assert "SECRET" not in result.output


async def test_gitignore_respected(tmp_path: Path) -> None:
    write(tmp_path, ".gitignore", "*.log\ngenerated/\n!keep.log\n")
    write(tmp_path, "a.py")
    write(tmp_path, "debug.log")
    write(tmp_path, "keep.log")
    write(tmp_path, "generated/out.py")
    write(tmp_path, "pkg/.gitignore", "local.py\n")
    write(tmp_path, "pkg/local.py")
    write(tmp_path, "pkg/mod.py")
    result = await run(tmp_path, paths=["**/*"])
    assert paths_of(result) == [".gitignore", "a.py", "keep.log", "pkg/.gitignore", "pkg/mod.py"]


async def test_binary_skipped_with_reason(tmp_path: Path) -> None:
    write(tmp_path, "a.txt", "text\n")
    (tmp_path / "blob.dat2").write_bytes(b"\x00\x01\x02\x03" * 10)
    result = await run(tmp_path, paths=["*"])
    assert paths_of(result) == ["a.txt"]
    assert result.data["skipped"] == [{"path": "blob.dat2", "reason": "binary file"}]
    assert "Skipped: 1 (binary)" in result.output
    # named explicitly, the skip is reported as an error entry
    result = await run(tmp_path, paths=["blob.dat2", "a.txt"])
    assert result.data["errors"] == [{"path": "blob.dat2", "error": "Skipped: binary file"}]


async def test_truncation_marker(tmp_path: Path) -> None:
    write(tmp_path, "long.txt", "".join(f"{i}\n" for i in range(2500)))
    write(tmp_path, "wide.txt", "y" * 3000 + "\n")
    result = await run(tmp_path, paths=["long.txt", "wide.txt"])
    files = {f["path"]: f for f in result.data["files"]}
    assert files["long.txt"]["isTruncated"] and files["long.txt"]["lineCount"] == 2500
    assert "truncated: showing the first 2000 of 2500 lines" in files["long.txt"]["content"]
    assert files["wide.txt"]["isTruncated"]
    assert "[line truncated]" in files["wide.txt"]["content"]


async def test_nonexistent_file_is_error_entry_others_read(tmp_path: Path) -> None:
    write(tmp_path, "a.txt", "alpha\n")
    write(tmp_path, "b.txt", "beta\n")
    result = await run(tmp_path, paths=["a.txt", "missing.txt", "b.txt"])
    assert not result.is_error
    assert paths_of(result) == ["a.txt", "b.txt"]
    assert result.data["errors"] == [{"path": "missing.txt", "error": "File not found"}]
    assert "=== Errors ===\n- missing.txt: File not found" in result.output
    tool = ReadManyFilesTool()
    assert tool.result_summary({}, result) == "Read 2 files (11 B), 1 error ⚠"
    assert result.data["errorCount"] == 1


async def test_unmatched_glob_reported(tmp_path: Path) -> None:
    write(tmp_path, "a.txt")
    result = await run(tmp_path, paths=["*.rs", "a.txt"])
    assert result.data["errors"] == [{"path": "*.rs", "error": "No files matched"}]


async def test_output_format_exact(tmp_path: Path) -> None:
    write(tmp_path, "src/a.ts", "one\ntwo\n")
    write(tmp_path, "src/b.ts", "three")
    result = await run(tmp_path, paths=["src/*.ts", "src/missing.ts"])
    assert result.output == (
        "=== File: src/a.ts (8 B, 2 lines) ===\none\ntwo\n\n"
        "=== File: src/b.ts (5 B, 1 line) ===\nthree\n\n"
        "=== Errors ===\n- src/missing.ts: File not found\n\n"
        "--- Summary ---\nTotal: 2 files, 13 B\nErrors: 1"
    )
    data = result.data
    assert data["totalFiles"] == 2 and data["totalSize"] == 13
    assert data["files"][0] == {
        "path": "src/a.ts",
        "content": "one\ntwo\n",
        "size": 8,
        "lineCount": 2,
        "isTruncated": False,
    }


async def test_sorted_and_deduplicated(tmp_path: Path) -> None:
    write(tmp_path, "b.py")
    write(tmp_path, "a.py")
    result = await run(tmp_path, paths=["b.py", "*.py", "a.py", "./a.py"])
    assert paths_of(result) == ["a.py", "b.py"]


async def test_file_over_size_limit_is_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rmf, "MAX_FILE_BYTES", 100)
    write(tmp_path, "big.txt", "z" * 200)
    write(tmp_path, "small.txt", "ok\n")
    result = await run(tmp_path, paths=["*.txt"])
    assert paths_of(result) == ["small.txt"]
    assert result.data["errors"][0]["path"] == "big.txt"
    assert "too large" in result.data["errors"][0]["error"]


async def test_outside_worktree_refused(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    write(repo, "in.txt", "in\n")
    write(tmp_path, "out.txt", "out\n")

    async def check(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        if permission == "external_directory":
            raise PermissionDenied("denied: outside the worktree")

    result = await run(
        repo, make_ctx(repo, check_permission=check), paths=["in.txt", "../out.txt", "../*.txt"]
    )
    assert paths_of(result) == ["in.txt"]
    assert {e["path"] for e in result.data["errors"]} == {"../out.txt", "../*.txt"}


async def test_read_permission_denied_per_file(tmp_path: Path) -> None:
    write(tmp_path, "a.txt")
    write(tmp_path, "b.secret")

    async def check(permission: str, patterns: list[str], metadata: dict[str, Any]) -> None:
        if permission == "read" and any(pattern.endswith(".secret") for pattern in patterns):
            raise PermissionDenied("denied by rule")

    result = await run(tmp_path, make_ctx(tmp_path, check_permission=check), paths=["a.txt", "b.secret"])
    assert paths_of(result) == ["a.txt"]
    assert result.data["errors"] == [{"path": "b.secret", "error": "denied by rule"}]


async def test_read_permission_real_service_rules_and_one_question(tmp_path: Path) -> None:
    """With the real service: a deny rule refuses its file only; files that ask are put
    to the user in one question, and a rejection refuses just those."""
    from etcode.permission import Decision, PermissionRequest, PermissionService, Rule, rules_from_config

    for name in ("a.txt", "b.txt", "c.env", "d.env", "secret/key.txt"):
        write(tmp_path, name)
    questions: list[PermissionRequest] = []

    class Rejecter:
        async def ask(self, request: PermissionRequest) -> Decision:
            questions.append(request)
            return Decision.reject("not the env files")

    rules = [*rules_from_config(None), Rule("read", "*.env", "ask")]
    service = PermissionService(rules, Rejecter(), worktree=tmp_path)
    ctx = make_ctx(tmp_path, check_permission=service.check)
    result = await run(tmp_path, ctx, paths=["a.txt", "b.txt", "c.env", "d.env"])
    assert paths_of(result) == ["a.txt", "b.txt"]
    assert [e["path"] for e in result.data["errors"]] == ["c.env", "d.env"]
    assert "not the env files" in result.data["errors"][0]["error"]
    assert len(questions) == 1 and questions[0].patterns == ["c.env", "d.env"]

    service = PermissionService([*rules, Rule("read", "secret/*", "deny")], Rejecter(), worktree=tmp_path)
    questions.clear()
    ctx = make_ctx(tmp_path, check_permission=service.check)
    result = await run(tmp_path, ctx, paths=["a.txt", "secret/key.txt"])
    assert paths_of(result) == ["a.txt"]
    assert result.data["errors"][0]["path"] == "secret/key.txt"
    assert "denied by permission rule" in result.data["errors"][0]["error"]
    assert questions == []


async def test_slow_storage_is_read_concurrently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Files that come slowly (a cold cache, a network filesystem) are read in threads at once."""
    for i in range(24):
        write(tmp_path, f"f{i:02}.txt")
    active = 0
    peak = 0
    lock = threading.Lock()
    original = rmf._read_one

    def slow(item, *args):  # type: ignore[no-untyped-def]
        nonlocal active, peak
        with lock:
            active += 1
            peak = max(peak, active)
        time.sleep(0.05)
        with lock:
            active -= 1
        return original(item, *args)

    monkeypatch.setattr(rmf, "_read_one", slow)
    monkeypatch.setattr(rmf, "PROBE_SIZE", 2)
    monkeypatch.setattr(rmf, "BATCH_SIZE", 1)
    result = await run(tmp_path, paths=["*.txt"])
    assert result.data["totalFiles"] == 24
    assert [f["path"] for f in result.data["files"]] == [f"f{i:02}.txt" for i in range(24)]
    assert peak > 1  # several reads were in flight at once (a wall-clock bound would flake)


async def test_fast_storage_keeps_the_event_loop_responsive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Page-cached files are read on the event loop in short slices: a ticker running
    alongside keeps getting turns, and a big file is read in a thread, not on the loop."""
    import asyncio

    for i in range(400):
        write(tmp_path, f"d{i % 10}/f{i:03}.txt", "some text\n" * 2)
    write(tmp_path, "zz/big.txt", ("x" * 99 + "\n") * 1000)  # 100 KB: over the first read
    monkeypatch.setattr(rmf, "INLINE_MAX_BYTES", 80 * 1024)
    monkeypatch.setattr(rmf, "SLICE_SECONDS", 0.0005)
    # a loaded machine makes even page-cached reads look slow and switches them to threads;
    # this test is about the fast path, so the storage is declared fast
    monkeypatch.setattr(rmf, "_slow", lambda items, elapsed: False)
    main_thread = threading.get_ident()
    readers: dict[str, set[int]] = {}
    ticks_seen_on_loop: set[int] = set()
    original = rmf._read_one

    def read_one(item, *args):  # type: ignore[no-untyped-def]
        done = original(item, *args)
        if not done.deferred:
            readers.setdefault(os.path.basename(item.path), set()).add(threading.get_ident())
        if threading.get_ident() == main_thread:
            ticks_seen_on_loop.add(ticks)
        return done

    ticks = 0
    monkeypatch.setattr(rmf, "_read_one", read_one)
    stop = False

    async def ticker() -> None:
        nonlocal ticks
        while not stop:
            ticks += 1
            await asyncio.sleep(0)

    task = asyncio.create_task(ticker())
    result = await run(tmp_path, paths=["**/*.txt"])
    stop = True
    await task
    assert result.data["totalFiles"] == 401
    assert {f["path"]: f["lineCount"] for f in result.data["files"]}["zz/big.txt"] == 1000
    assert main_thread not in readers["big.txt"]  # deferred to a worker thread
    on_loop = [name for name, threads in readers.items() if threads == {main_thread}]
    assert len(on_loop) >= 390  # all but the probe
    assert len(ticks_seen_on_loop) > 3  # the loop ran other tasks between slices


async def test_instructions_attached_once(tmp_path: Path) -> None:
    write(tmp_path, "pkg/a.py")
    write(tmp_path, "pkg/b.py")

    async def instructions_for(path: Path) -> str | None:
        return "<system-reminder>pkg rules</system-reminder>"

    result = await run(tmp_path, make_ctx(tmp_path, instructions_for=instructions_for), paths=["pkg"])
    assert result.output.count("pkg rules") == 1


async def test_huge_combined_output_saved(tmp_path: Path) -> None:
    for i in range(30):
        write(tmp_path, f"f{i:02}.txt", "line of text\n" * 300)
    result = await run(tmp_path, paths=["*.txt"])
    assert "30 files cut short to fit the output limit" in result.output
    assert result.output.count("=== File: ") == 30  # every file has its share
    saved = Path(result.data["outputPath"])
    assert saved.is_file() and "=== File: f29.txt" in saved.read_text()
    assert result.data["totalFiles"] == 30


def test_summaries() -> None:
    tool = ReadManyFilesTool()
    assert tool.params_summary({"paths": ["a.py", "b.py", "c.py"]}) == "3 files"
    assert tool.params_summary({"paths": ["src/**/*.ts"]}) == "src/**/*.ts"


async def test_fifo_and_device_are_refused_not_waited_on(tmp_path: Path) -> None:
    """A FIFO in the tree would block a plain open() until a writer comes: it is reported."""
    import asyncio

    write(tmp_path, "a.txt", "text\n")
    write(tmp_path, "empty.txt", "")
    os.mkfifo(tmp_path / "pipe.txt")
    os.symlink("/dev/zero", tmp_path / "zero.txt")
    for paths in (["a.txt", "empty.txt", "pipe.txt", "zero.txt"], ["*.txt"]):
        result = await asyncio.wait_for(run(tmp_path, paths=paths), 10)
        assert paths_of(result) == ["a.txt", "empty.txt"]
        errors = {e["path"]: e["error"] for e in result.data["errors"]}
        assert errors == {"pipe.txt": "Not a regular file", "zero.txt": "Not a regular file"}


# ---- the output budget: one big file must not crowd out the others ---------------------


def model_text(result) -> str:
    """What the model gets: the scheduler's generic cut applied to the output."""
    from etcode.tools.truncate import needs_truncation, truncate_for_model

    assert not needs_truncation(result.output)  # within the limits: the generic cut never applies
    seen = truncate_for_model("ReadManyFiles", result.output)
    assert seen == result.output
    return seen


def numbered(count: int, word: str = "line") -> str:
    return "".join(f"{word} {i}\n" for i in range(1, count + 1))


async def test_big_file_leaves_room_for_the_rest_errors_and_summary(tmp_path: Path) -> None:
    write(tmp_path, "big.txt", numbered(3000))
    write(tmp_path, "file[1].txt", "bracket file\n")
    write(tmp_path, "file1.txt", "decoy the glob would match\n")
    result = await run(tmp_path, paths=["big.txt", "file[1].txt", "nope.txt"])
    text = model_text(result)
    assert "=== File: file[1].txt (13 B, 1 line) ===\nbracket file\n" in text
    assert "decoy" not in text  # a literal existing path is that file, not a glob
    assert text.index("=== File: big.txt") < text.index("=== File: file[1].txt")
    errors_at = text.index("=== Errors ===\n- nope.txt: File not found\n")
    summary_at = text.index("--- Summary ---\nTotal: 2 files, ")
    assert text.index("=== File: file[1].txt") < errors_at < summary_at
    assert "\nErrors: 1\n" in text[summary_at:]
    # big.txt is cut with its own marker, which names the next line to read
    big = text[text.index("=== File: big.txt") : text.index("=== File: file[1].txt")]
    shown = [line for line in big.splitlines() if line.startswith("line ")]
    last = len(shown)
    assert 1000 < last < 2000 and shown == [f"line {i}" for i in range(1, last + 1)]
    assert (
        f"[... cut to fit the output limit: showing lines 1-{last} of 3000; "
        f'use ReadFile with file_path "big.txt" and offset={last + 1} to read the rest ...]'
    ) in big
    # the full text is saved, and the summary says where
    saved = Path(result.data["outputPath"])
    assert str(saved) in text[summary_at:]
    assert "1 file cut short" in text[summary_at:]
    assert "line 2000\n" in saved.read_text() and "- nope.txt: File not found" in saved.read_text()
    tool = ReadManyFilesTool()
    size = (tmp_path / "big.txt").stat().st_size + 13
    assert tool.result_summary({}, result) == f"Read 2 files ({format_size(size)}), 1 error ⚠"
    assert result.data["errorCount"] == 1
    assert result.data["files"][0]["lineCount"] == 3000


async def test_big_files_share_the_budget_small_ones_whole(tmp_path: Path) -> None:
    for name in ("a_big.txt", "b_big.txt", "c_big.txt"):
        write(tmp_path, name, numbered(3000, name))
    for i in range(5):
        write(tmp_path, f"small{i}.txt", f"small file {i}\n")
    text = model_text(await run(tmp_path, paths=["*.txt"]))
    for i in range(5):
        assert f"=== File: small{i}.txt (13 B, 1 line) ===\nsmall file {i}\n" in text
    shares = []
    for name in ("a_big.txt", "b_big.txt", "c_big.txt"):
        shown = text.count(f"\n{name} ")
        assert f'file_path "{name}" and offset={shown + 1} to read the rest' in text
        shares.append(shown)
    assert max(shares) - min(shares) <= 2 and min(shares) > 300  # a fair split
    assert text.rstrip().endswith("or search it with Grep.")


async def test_long_lines_count_by_bytes(tmp_path: Path) -> None:
    write(tmp_path, "a_wide.txt", ("w" * 2500 + "\n") * 40)  # 100 KB, lines cut at 2000 chars
    write(tmp_path, "b.txt", "after the wide file\n")
    result = await run(tmp_path, paths=["a_wide.txt", "b.txt"])
    text = model_text(result)
    assert "=== File: b.txt" in text and "after the wide file" in text
    assert 'use ReadFile with file_path "a_wide.txt" and offset=' in text
    assert "--- Summary ---" in text


async def test_many_errors_are_counted_not_crowding_the_summary(tmp_path: Path) -> None:
    write(tmp_path, "real.txt", "real content\n")
    missing = [f"missing/no_such_file_{i:04}.txt" for i in range(3000)]
    result = await run(tmp_path, paths=["real.txt", *missing])
    text = model_text(result)
    assert "=== File: real.txt" in text and "real content" in text
    listed = text.count(": File not found\n")
    assert 0 < listed < 3000
    assert f"- ... and {3000 - listed} more (every error is in the saved full output)" in text
    assert "\nErrors: 3000\n" in text and f"{3000 - listed} errors not listed" in text
    assert result.data["errorCount"] == 3000 and len(result.data["errors"]) == 3000
    saved = Path(result.data["outputPath"]).read_text()
    assert saved.count(": File not found\n") == 3000


async def test_too_many_files_for_a_header_each(tmp_path: Path) -> None:
    for i in range(1500):
        write(tmp_path, f"gen/f{i:04}.txt", f"generated {i}\nsecond line\n")
    write(tmp_path, "zz_named.txt", "named explicitly\n")
    result = await run(tmp_path, paths=["gen/*.txt", "zz_named.txt"])
    text = model_text(result)
    assert "=== File: zz_named.txt" in text and "named explicitly" in text  # asked for by name: shown
    shown = text.count("=== File: gen/")
    assert 100 < shown < 1500
    assert f"[... {1500 - shown} more files not shown to fit the output limit: " in text
    assert text.index("more files not shown") < text.index("--- Summary ---\nTotal: 1501 files")
    assert f"{1500 - shown} files not shown" in text
    assert "=== File: gen/f1499.txt" in Path(result.data["outputPath"]).read_text()


async def test_reminders_come_after_the_summary_within_the_limit(tmp_path: Path) -> None:
    write(tmp_path, "pkg/big.txt", numbered(5000))
    write(tmp_path, "pkg/small.txt", "small\n")
    rules = "<system-reminder>" + "pkg rule line\n" * 200 + "</system-reminder>"

    async def instructions_for(path: Path) -> str | None:
        return rules

    ctx = make_ctx(tmp_path, instructions_for=instructions_for)
    text = model_text(await run(tmp_path, ctx, paths=["pkg/big.txt", "pkg/small.txt"]))
    assert text.endswith(rules)
    assert "=== File: pkg/small.txt" in text and "--- Summary ---" in text


async def test_output_always_within_limits(tmp_path: Path) -> None:
    """Random mixes of sizes, line widths and errors: every named file, the errors and the
    summary appear, and the scheduler never has to cut."""
    import random

    rng = random.Random(13)
    for round_ in range(12):
        folder = tmp_path / f"r{round_}"
        names = []
        for i in range(rng.randint(1, 12)):
            width = rng.choice([5, 80, 900, 2500])
            lines = rng.choice([0, 1, 50, 800, 2600])
            char = "é" if i % 3 == 0 else "x"
            write(folder, f"f{i}.txt", (char * width + "\n") * lines)
            names.append(f"r{round_}/f{i}.txt")
        result = await run(tmp_path, paths=[*names, f"r{round_}/missing.txt"])
        text = model_text(result)
        for name in names:
            assert f"=== File: {name} (" in text
        assert f"- r{round_}/missing.txt: File not found" in text
        assert text.index("=== Errors ===") < text.index("--- Summary ---")


async def test_literal_folder_with_brackets_is_not_a_glob(tmp_path: Path) -> None:
    write(tmp_path, "app/[id]/page.tsx", "the bracket folder\n")
    write(tmp_path, "app/i/page.tsx", "a folder the glob would match\n")
    result = await run(tmp_path, paths=["app/[id]"])
    assert paths_of(result) == ["app/[id]/page.tsx"]
    (tmp_path / "empty[1]").mkdir()
    result = await run(tmp_path, paths=["empty[1]"])
    assert result.data["errors"] == [{"path": "empty[1]", "error": "No files matched"}]


def test_least_bytes_never_exceeds_a_files_real_floor() -> None:
    """The cheap bound that lets the budget skip measuring files must stay a lower bound."""
    from etcode.tools import read_many_output as out

    class Item:
        def __init__(self, shown: str, content: str) -> None:
            self.shown, self.content = shown, content
            self.size = len(content.encode())
            self.lines = content.count("\n") + (0 if not content or content.endswith("\n") else 1)
            self.truncated, self.explicit = False, False
            self.image_note = ""

    for shown in ("a", "dir/é.txt", "x" * 300):
        for content in ("", "1", "one line\n", "ü" * 50, "line\n" * 400, "y" * 5000):
            item = Item(shown, content)
            assert out._least_bytes(item) <= out._slot(item).floor[1], (shown, content[:10])


async def test_named_files_binary_extension_bom_and_bytes_not_utf8(tmp_path: Path) -> None:
    """A binary extension is skipped unread, a BOM is dropped, a stray Latin-1 byte becomes
    U+FFFD, bytes mostly not UTF-8 are binary; a blank entry is ignored."""
    write(tmp_path, "logo.png", "not really an image\n")
    (tmp_path / "bom.txt").write_bytes(b"\xef\xbb\xbfhello\n")
    (tmp_path / "latin.txt").write_bytes("café au lait\n".encode("latin-1"))
    (tmp_path / "noise.raw2").write_bytes(bytes(range(0x80, 0x100)) * 4)
    result = await run(tmp_path, paths=["logo.png", "bom.txt", "latin.txt", "noise.raw2", "  "])
    assert {f["path"]: f["content"] for f in result.data["files"]} == {
        "bom.txt": "hello\n",
        "latin.txt": "caf\ufffd au lait\n",
    }
    assert {e["path"]: e["error"] for e in result.data["errors"]} == {
        "logo.png": "Skipped: binary file",
        "noise.raw2": "Skipped: binary file",
    }


async def test_absolute_glob_and_size_known_before_reading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An absolute glob reads like a relative one; a file bigger than the first read is
    refused by its size before the rest of it is read."""
    monkeypatch.setattr(rmf, "MAX_FILE_BYTES", 100)
    write(tmp_path, "big.txt", "z" * (rmf.FIRST_READ_BYTES + 10))
    write(tmp_path, "small.txt", "ok\n")
    result = await run(tmp_path, paths=[str(tmp_path / "*.txt")])
    assert paths_of(result) == ["small.txt"]
    assert result.data["errors"] == [
        {"path": "big.txt", "error": f"File too large ({format_size(rmf.FIRST_READ_BYTES + 10)} > 100 B)"}
    ]


def test_read_error_is_the_systems_message(tmp_path: Path) -> None:
    """A read the system refuses (here /proc/self/mem at offset 0) is an error entry."""
    item = rmf._read_one(rmf._Read("/proc/self/mem", "mem", True))
    assert item.error == "Input/output error"

"""Helpers behind the file tools: globs, ignore rules, binary sniffing, sizes, names."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.tools.diff import diff_stats, unified_diff
from etcode.tools.read_many_files import has_long_line
from etcode.tools.summary import count_lines
from etcode.util.fs import format_size, looks_binary, suggest_names
from etcode.util.ignore import IgnoreMatcher, PatternSet, glob_match, glob_static_prefix


@pytest.mark.parametrize(
    ("pattern", "path", "expected"),
    [
        ("*.txt", "a.txt", True),
        ("*.txt", "d/a.txt", False),
        ("**/*.txt", "a.txt", True),
        ("**/*.txt", "d/e/a.txt", True),
        ("src/**", "src/a/b.c", True),
        ("src/**/*.ts", "src/a.ts", True),
        ("src/**/*.ts", "lib/a.ts", False),
        ("*.{js,ts}", "x.ts", True),
        ("*.{js,ts}", "x.py", False),
        ("file[12].txt", "file2.txt", True),
        ("[!a]*", "a", False),
        ("?.md", "a.md", True),
        ("a+b(1).txt", "a+b(1).txt", True),
    ],
)
def test_glob_match(pattern: str, path: str, expected: bool) -> None:
    assert glob_match(pattern, path) is expected


def test_static_prefix() -> None:
    assert glob_static_prefix("src/**/*.ts") == ("src", "**/*.ts")
    assert glob_static_prefix("*.md") == ("", "*.md")


def test_pattern_set() -> None:
    patterns = PatternSet(["node_modules/", "*.log", ".env", "docs/*.tmp", "!keep.log"])
    assert patterns.match("node_modules", "a/node_modules", True)
    assert not patterns.match("node_modules", "a/node_modules", False)
    assert patterns.match("x.log", "x.log", False)
    assert patterns.match(".env", "sub/.env", False)
    assert patterns.match("a.tmp", "docs/a.tmp", False)
    assert not patterns.match("a.tmp", "other/a.tmp", False)
    assert patterns.match_path("pkg/node_modules/x/index.js", False)


def test_pattern_set_fast_shapes_and_comments() -> None:
    """Without a negation every common shape is answered by a set, a tuple or one regex
    (pathspec is not needed), and a comment is no pattern."""
    patterns = PatternSet(
        ["# *.py", "", "*.log", "build/", "*.min.js", ".env.*", "[ab].txt", "tmp*/", "README"]
    )
    assert not patterns.needs_rel
    entries = [
        ("x.py", False, False),
        ("x.log", False, True),
        ("build", True, True),
        ("build", False, False),
        ("app.min.js", False, True),
        ("app.js", False, False),
        (".env.local", False, True),
        ("a.txt", False, True),
        ("c.txt", False, False),
        ("tmp1", True, True),
        ("tmp1", False, False),
        ("README", True, True),
    ]
    for name, is_dir, ignored in entries:
        assert patterns.match(name, name, is_dir) == ignored, name


def test_ignore_matcher_nested_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".gitignore").write_text("*.log\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / ".gitignore").write_text("!important.log\nlocal/\n")
    matcher = IgnoreMatcher(tmp_path)
    assert matcher.is_ignored(tmp_path / "a.log", False)
    assert not matcher.is_ignored(tmp_path / "sub" / "important.log", False)
    assert matcher.is_ignored(tmp_path / "sub" / "local" / "x.py", False)
    assert matcher.is_ignored(tmp_path / "node_modules" / "x.js", False)
    assert not IgnoreMatcher(tmp_path, default_excludes=False).is_ignored(
        tmp_path / "node_modules/x.js", False
    )


def test_has_long_line() -> None:
    assert not has_long_line("a\n" * 5000, 2000)
    assert has_long_line("short\n" + "x" * 2001 + "\nend", 2000)
    assert not has_long_line("x" * 2000, 2000)
    assert has_long_line("x" * 2001, 2000)


def test_fs_helpers(tmp_path: Path) -> None:
    assert format_size(512) == "512 B"
    assert format_size(2150) == "2.1 KB"
    assert format_size(12.5 * 1024 * 1024) == "12.5 MB"
    assert looks_binary(b"\x00abc")
    assert not looks_binary("héllo wörld".encode())
    assert looks_binary(bytes(range(1, 32)) * 10)
    (tmp_path / "settings.py").write_text("")
    assert suggest_names(tmp_path / "setings.py") == [tmp_path / "settings.py"]


def test_diff_helpers() -> None:
    diff = unified_diff("a.txt", "one\ntwo\n", "one\nthree\nfour")
    assert diff.startswith("--- a/a.txt\n+++ b/a.txt\n")
    assert diff_stats(diff) == (2, 1)
    assert "\\ No newline at end of file" in diff
    assert count_lines("a\nb") == 2 and count_lines("a\nb\n") == 2 and count_lines("") == 0


def test_bad_gitignore_line_is_skipped_not_fatal(tmp_path: Path) -> None:
    """git skips a pattern it cannot use (a lone "!"); so do we, and keep the rest."""
    (tmp_path / ".gitignore").write_text("!\n*.log\n")
    (tmp_path / "a.log").write_text("x")
    (tmp_path / "a.txt").write_text("x")
    matcher = IgnoreMatcher(tmp_path)
    assert matcher.is_ignored(tmp_path / "a.log")
    assert sorted(p.name for p in matcher.walk(tmp_path)) == [".gitignore", "a.txt"]

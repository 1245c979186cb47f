"""Diffs of large texts: only the changed region is diffed (the same hunks as a full diff),
and a region too large gets a header instead of a line diff (issue 13, item 7: a 200 MB
WriteFile spent gigabytes in difflib)."""

from __future__ import annotations

import random

import pytest

from etcode.tools import diff as diffs
from etcode.tools.diff import diff_stats, unified_diff


def lines(rng: random.Random, count: int) -> list[str]:
    return [f"line {i} {rng.random():.6f}\n" for i in range(count)]


@pytest.mark.parametrize("seed", range(40))
def test_region_diff_equals_the_full_diff(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    old_lines = lines(rng, rng.randint(1, 120))
    new_lines = list(old_lines)
    for _ in range(rng.randint(1, 3)):  # a few nearby edits: replace, insert, delete
        at = rng.randrange(len(new_lines) + 1)
        kind = rng.choice(["replace", "insert", "delete"])
        if kind == "insert" or not new_lines or at == len(new_lines):
            new_lines.insert(at, f"inserted {rng.random():.6f}\n")
        elif kind == "replace":
            new_lines[at] = f"replaced {rng.random():.6f}\n"
        else:
            del new_lines[at]
    old, new = "".join(old_lines), "".join(new_lines)
    if rng.random() < 0.3:
        new = new.rstrip("\n")  # no newline at the end
    if rng.random() < 0.3:
        old, new = old.replace("\n", "\r\n"), new.replace("\n", "\r\n")
    full = unified_diff("f.txt", old, new)
    monkeypatch.setattr(diffs, "DIFF_LIMIT", 0)  # always diff the changed region only
    assert unified_diff("f.txt", old, new) == full
    assert diffs.changed_region(old, new, 3, step=7) == diffs.changed_region(old, new, 3)


def test_large_texts_differ_only_around_the_change(monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(1)
    old_lines = lines(rng, 5_000)
    new_lines = list(old_lines)
    new_lines[2_500] = "changed\n"
    old, new = "".join(old_lines), "".join(new_lines)
    full = unified_diff("f.txt", old, new)
    monkeypatch.setattr(diffs, "DIFF_LIMIT", 10_000)
    monkeypatch.setattr(diffs, "REGION_LIMIT", 10_000)
    assert unified_diff("f.txt", old, new) == full
    assert "@@ -2498,7 +2498,7 @@" in full and diff_stats(full) == (1, 1)


def test_a_huge_rewrite_gets_a_header_not_a_line_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diffs, "DIFF_LIMIT", 1_000)
    monkeypatch.setattr(diffs, "REGION_LIMIT", 1_000)
    old, new = "a\n" * 2_000, "b\n" * 3_000
    diff = unified_diff("f.txt", old, new)
    assert diff.splitlines() == [
        "--- a/f.txt",
        "+++ b/f.txt",
        "@@ -1,2000 +1,3000 @@ too large to show line by line (3.9 KB -> 5.9 KB)",
    ]


def test_edit_snippet_of_a_large_file_shows_the_changed_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    from etcode.tools.edit import EditTool

    before = "".join(f"row {i}\n" for i in range(3_000))
    after = before.replace("row 1500\n", "ROW 1500\n")
    small = EditTool._snippet(before, after)
    monkeypatch.setattr("etcode.tools.edit.DIFF_LIMIT", 1_000)
    large = EditTool._snippet(before, after)
    assert "ROW 1500" in large and "row 1497" in large and "row 1503" in large
    assert large == small

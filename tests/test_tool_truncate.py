"""Output truncation: the model gets a head/tail, the full text is saved."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.tools import truncate
from etcode.tools.truncate import output_dir, truncate_output


@pytest.fixture(autouse=True)
def _data_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    return tmp_path / "data"


def test_short_output_untouched() -> None:
    cut = truncate_output("hello\nworld")
    assert cut.text == "hello\nworld" and not cut.truncated and cut.path is None


def test_too_many_lines_head(tmp_path: Path) -> None:
    text = "\n".join(f"line {i}" for i in range(5000))
    cut = truncate_output(text)
    assert cut.truncated and cut.path
    assert Path(cut.path).parent == tmp_path / "data" / "etcode" / "tool-output"
    assert Path(cut.path).read_text() == text
    assert cut.text.startswith("line 0\nline 1\n")
    assert cut.text.count("\n") <= 2000
    assert cut.path in cut.text and "output truncated" in cut.text


def test_too_many_bytes_tail() -> None:
    text = "x" * 100 + "\n" + "\n".join("y" * 100 for _ in range(1000)) + "\nLAST"
    cut = truncate_output(text, direction="tail")
    assert cut.truncated
    assert cut.text.endswith("LAST")
    assert len(cut.text.encode()) <= truncate.MAX_BYTES
    assert cut.text.startswith("[... output truncated")


def test_single_huge_line() -> None:
    cut = truncate_output("z" * 200_000)
    assert cut.truncated and len(cut.text.encode()) <= truncate.MAX_BYTES


def test_idempotent() -> None:
    once = truncate_output("\n".join(str(i) for i in range(10_000)))
    twice = truncate_output(once.text)
    assert not twice.truncated and twice.text == once.text


def test_output_dir_fallback(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("XDG_DATA_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert output_dir() == tmp_path / ".local" / "share" / "etcode" / "tool-output"


def test_truncate_for_model_filter() -> None:
    from etcode.tools.truncate import truncate_for_model

    assert truncate_for_model("ReadFile", "small") == "small"
    head = truncate_for_model("MyMcpTool", "\n".join(f"l{i}" for i in range(5000)))
    assert head.startswith("l0\n") and "output truncated" in head
    tail = truncate_for_model("Bash", "\n".join(f"l{i}" for i in range(5000)))
    assert tail.endswith("l4999")
    assert truncate_for_model("Bash", tail) == tail  # idempotent on already-cut output

"""Output truncation: the model gets a head/tail, the full text is saved."""

from __future__ import annotations

from pathlib import Path

import pytest

from etcode.tools import truncate
from etcode.tools.base import ToolResult
from etcode.tools.truncate import output_dir, truncate_output, truncate_result


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


def test_truncate_result_sets_output_path() -> None:
    result = truncate_result(ToolResult("a\n" * 3000, data={"k": 1}))
    assert result.data and result.data["k"] == 1 and Path(result.data["outputPath"]).is_file()
    small = ToolResult("ok")
    assert truncate_result(small) is small


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


@pytest.mark.parametrize(
    "line", ["plain ascii line of text", "ünïcödé line — with 3-byte chars ✓", "x" * 3000]
)
@pytest.mark.parametrize("pieces", [1, 7, 400])
def test_truncate_parts_is_truncate_output_of_the_joined_text(line: str, pieces: int) -> None:
    """The model sees the same text whether the output came as one string or as pieces,
    and the saved file holds the whole text."""
    text = "".join(f"{i}: {line}\n" for i in range(3000))
    size = -(-len(text) // pieces)
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    lines = text.count("\n") + 1
    whole = truncate_output(text, line_count=lines)
    cut = truncate.truncate_parts(parts, line_count=lines)
    assert cut.truncated and whole.truncated and cut.path and whole.path
    assert cut.text.replace(cut.path, "<path>") == whole.text.replace(whole.path, "<path>")
    truncate.wait_saved(cut.path)
    assert Path(cut.path).read_text(encoding="utf-8") == text

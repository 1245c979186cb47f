"""The TUI's Textual-free parts: commands, mentions, history, export, replay text, options."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from etcode.provider.types import Message, TextPart, ToolCallPart, ToolResultPart
from etcode.ui.tui.commands import COMMANDS, complete_command, help_text, parse_command
from etcode.ui.tui.export import transcript_markdown
from etcode.ui.tui.history import PromptHistory
from etcode.ui.tui.launch import check_options, is_interactive
from etcode.ui.tui.mentions import FileIndex, attach, find_mentions, mention_at, resolve_mentions
from etcode.ui.tui.options import TuiOptions
from etcode.ui.tui.replay import user_text
from etcode.util.errors import UsageError


def test_command_table_matches_the_issue() -> None:
    names = [c.name for c in COMMANDS]
    assert names == [
        "help",
        "new",
        "sessions",
        "agent",
        "model",
        "clear",
        "compact",
        "undo",
        "export",
        "skills",
        "bashes",
        "exit",
    ]


@pytest.mark.parametrize(
    ("text", "name", "args", "known"),
    [
        ("/help", "help", "", True),
        ("  /model openai/gpt-4o ", "model", "openai/gpt-4o", True),
        ("/AGENT plan", "agent", "plan", True),
        ("/quit", "exit", "", True),
        ("/nope x", "nope", "x", False),
    ],
)
def test_parse_command(text: str, name: str, args: str, known: bool) -> None:
    parsed = parse_command(text)
    assert parsed is not None
    assert (parsed.name, parsed.args, parsed.command is not None) == (name, args, known)


@pytest.mark.parametrize("text", ["hello", "//not a command", "/", "path/to/file"])
def test_messages_are_not_commands(text: str) -> None:
    assert parse_command(text) is None


def test_complete_command() -> None:
    assert [c.name for c in complete_command("/c")] == ["clear", "compact"]
    assert len(complete_command("")) == len(COMMANDS)
    assert complete_command("zzz") == []
    assert "/model PROVIDER/MODEL" in help_text()


def test_find_mentions() -> None:
    text = "see @src/a.py and @b.txt, not a@mail.com; again @src/a.py"
    assert find_mentions(text) == ["src/a.py", "b.txt"]


def test_mention_at_cursor() -> None:
    assert mention_at("look at @sr", 11) == (8, "sr")
    assert mention_at("look at @sr x", 13) is None
    assert mention_at("mail a@b", 8) is None


def test_resolve_and_attach(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    found = resolve_mentions("check @a.py @blob.bin @missing.txt", tmp_path)
    assert [a.path for a in found] == ["a.py", "blob.bin"]
    assert found[0].text == "x = 1\n"
    assert found[1].text is None and "binary" in found[1].note
    message = attach("check @a.py", found[:1])
    assert message == 'check @a.py\n\n<file path="a.py">\nx = 1\n</file>'
    assert user_text(message) == ("check @a.py", ["a.py"])


async def test_file_index_matches(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("", encoding="utf-8")
    (tmp_path / "main_test.py").write_text("", encoding="utf-8")
    (tmp_path / "docs.md").write_text("", encoding="utf-8")
    index = FileIndex(tmp_path)
    await index.load()
    assert index.match("main") == ["main_test.py", "src/main.py"]
    assert index.match("src") == ["src/", "src/main.py"]
    assert index.match("zzz") == []


def test_history_browsing(tmp_path: Path) -> None:
    history = PromptHistory(tmp_path / "h.jsonl")
    for text in ("one", "two", "two", "  "):
        history.add(text)
    assert history.entries == ["one", "two"]
    assert history.previous("draft") == "two"
    assert history.previous("two") == "one"
    assert history.previous("one") is None
    assert history.next() == "two"
    assert history.next() == "draft"
    assert history.next() is None
    assert PromptHistory(tmp_path / "h.jsonl").entries == ["one", "two"]


def test_history_survives_a_corrupt_file(tmp_path: Path) -> None:
    path = tmp_path / "h.jsonl"
    path.write_text('"ok"\nnot json\n42\n', encoding="utf-8")
    assert PromptHistory(path).entries == ["ok"]


def test_transcript_markdown() -> None:
    messages = [
        Message.user("read a.txt"),
        Message("assistant", [TextPart("Reading."), ToolCallPart("c1", "ReadFile", '{"file_path":"a.txt"}')]),
        Message("tool", [ToolResultPart("c1", "ReadFile", "1\thello", False)]),
        Message("assistant", [TextPart("It says hello.")]),
    ]
    text = transcript_markdown(messages, title="t")
    assert text.startswith("# t\n")
    assert "## User\n\nread a.txt" in text
    assert "**● ReadFile**" in text and '"file_path": "a.txt"' in text
    assert "1\thello" in text and "It says hello." in text


def test_check_options() -> None:
    check_options(TuiOptions(continue_last=True, fork=True))
    with pytest.raises(UsageError):
        check_options(TuiOptions(fork=True))
    with pytest.raises(UsageError):
        check_options(TuiOptions(continue_last=True, session_id="ses_1"))


def test_is_interactive_needs_two_terminals() -> None:
    class Tty:
        def isatty(self) -> bool:
            return True

    class Pipe:
        def isatty(self) -> bool:
            return False

    assert is_interactive(Tty(), Tty())
    assert not is_interactive(Pipe(), Tty())
    assert not is_interactive(Tty(), Pipe())


def test_importing_the_tui_package_is_light() -> None:
    code = "import sys, etcode.ui.tui, etcode.ui.tui.commands; print('textual' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert proc.stdout.strip() == "False", proc.stderr

"""Slash commands of the chat input: the table, parsing and completion (no Textual here)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class SlashCommand:
    """One ``/name ARGS`` command; ``usage`` is the argument hint shown in completion."""

    name: str
    help: str
    usage: str = ""
    #: A custom command (a Markdown file or etcode's own, like /init): sent to the model.
    custom: bool = False

    @property
    def label(self) -> str:
        return f"/{self.name} {self.usage}".rstrip()


COMMANDS: tuple[SlashCommand, ...] = (
    SlashCommand("help", "Show commands and keys"),
    SlashCommand("new", "Start a new session"),
    SlashCommand("sessions", "Pick a stored session to resume"),
    SlashCommand("agent", "Switch agent (build, plan, ...)", "NAME"),
    SlashCommand("model", "Switch model (Tab completes)", "PROVIDER/MODEL"),
    SlashCommand("clear", "Clear the conversation (new context batch)"),
    SlashCommand("compact", "Summarise older history to free context"),
    SlashCommand("undo", "Restore files changed by the last turn", "[--force]"),
    SlashCommand("export", "Write the transcript to a Markdown file", "[PATH]"),
    SlashCommand(
        "skills", "List the skills; with a name, send that skill (and a request)", "[NAME [REQUEST]]"
    ),
    SlashCommand("bashes", "Background processes: list (k kills one), or kill ID", "[kill ID]"),
    SlashCommand("exit", "Quit etcode"),
)
_BY_NAME = {command.name: command for command in COMMANDS}
ALIASES = {"quit": "exit", "q": "exit", "?": "help", "reset": "clear"}


@dataclass(frozen=True)
class ParsedCommand:
    """``/name args`` split; ``command`` is None for an unknown name."""

    name: str
    args: str
    command: SlashCommand | None


def is_command(text: str, custom: Sequence[SlashCommand] = ()) -> bool:
    """True when ``text`` is a slash command rather than a message.

    ``//x`` is a message, and so is a message that starts with a path: ``/tmp/a.py why?``
    (a slash after the name) or ``/etc`` when that exists and is no command name
    (built-in or ``custom``).
    """
    from etcode.extensions.commands import command_head

    found = command_head(text)
    if found is None:
        return False
    head = found[0]
    name = ALIASES.get(head.lower(), head.lower())
    return name in _BY_NAME or any(c.name == head for c in custom) or not _exists(f"/{head}")


def _exists(path: str) -> bool:
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def parse_command(text: str, custom: Sequence[SlashCommand] = ()) -> ParsedCommand | None:
    """The command in ``text``, or None when ``text`` is an ordinary message. A ``custom``
    command's name is matched as written (``/git:commit``)."""
    from etcode.extensions.commands import command_head

    found = command_head(text)
    if found is None or not is_command(text, custom):
        return None
    head, args = found  # the same reading as ``etcode run`` and ACP (arguments may start on the next line)
    mine = next((c for c in custom if c.name == head), None)
    if mine is not None and head.lower() not in _BY_NAME:
        return ParsedCommand(head, args, mine)
    name = ALIASES.get(head.lower(), head.lower())
    return ParsedCommand(name, args, _BY_NAME.get(name))


def complete_command(prefix: str, custom: Sequence[SlashCommand] = ()) -> list[SlashCommand]:
    """Commands whose name starts with ``prefix`` (without the slash): the table's in its
    order, then the ``custom`` ones."""
    prefix = prefix.lstrip("/").lower()
    return [command for command in (*COMMANDS, *custom) if command.name.lower().startswith(prefix)]


def _cell(text: str) -> str:
    """``text`` in a Markdown table cell (a custom command's description may hold ``|``)."""
    return text.replace("|", "\\|")


def help_text(custom: Sequence[SlashCommand] = ()) -> str:
    """The ``/help`` text (Markdown), the ``custom`` commands after the built-in ones."""
    rows = "\n".join(f"| `{c.label}` | {_cell(c.help)} |" for c in (*COMMANDS, *custom))
    keys = (
        "| `Enter` | send |\n| `Shift+Enter`, `Ctrl+J` | new line |\n| `Up`, `Down` | input history |\n"
        "| `Shift+Tab`, `Tab` | select a tool block (`Enter` expands it) |\n"
        "| `Ctrl+O` | expand or collapse every tool block |\n"
        "| `@path` | attach a file (Tab completes) |\n| `Esc` | interrupt the running turn |\n"
        "| `Ctrl+C`, `Ctrl+C` | quit |\n| `Ctrl+T` | show/hide the todo panel |\n"
        "| `Ctrl+N` | next agent (build → plan → …) |"
    )
    return f"| command | what it does |\n|---|---|\n{rows}\n\n| key | action |\n|---|---|\n{keys}"

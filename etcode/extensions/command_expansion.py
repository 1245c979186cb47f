"""A custom command's prompt for one use: ``$ARGUMENTS`` (everything after the name), ``$1``…
``$9`` (the arguments split as a shell would, quotes respected; a missing one is empty) and
``@path`` files attached as the chat attaches them (``prompt/mentions.py``, through the one
check of project files). A command without any placeholder gets its arguments appended as
``ARGUMENTS: …`` (as Claude Code does)."""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

from etcode.extensions.commands import CustomCommand
from etcode.util.errors import UsageError

_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")


@dataclass(frozen=True)
class Expansion:
    """A command ready to send: the prompt the model receives and the files attached."""

    command: CustomCommand
    args: str
    prompt: str
    files: list[str] = field(default_factory=list)

    @property
    def shown(self) -> str:
        """What the user typed: ``/name args``."""
        return f"/{self.command.name} {self.args}".rstrip()


def split_args(args: str) -> list[str]:
    """The arguments as a shell splits them; on an unclosed quote, at whitespace."""
    try:
        return shlex.split(args)
    except ValueError:
        return args.split()


def substitute(body: str, args: str) -> str:
    """``body`` with its placeholders filled (in one pass: an argument is never expanded)."""
    args = args.strip()
    if not _PLACEHOLDER.search(body):
        return f"{body}\n\nARGUMENTS: {args}" if args else body
    words = split_args(args)

    def value(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return args
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    return _PLACEHOLDER.sub(value, body)


def expand(
    command: CustomCommand, args: str, directory: Path, root: Path, *, trusted: bool = False
) -> Expansion:
    """The prompt of ``/name args``. A mentioned file that does not exist is a
    :class:`UsageError` naming it. Blocking (reads files): a worker thread from async code."""
    from etcode.prompt.mentions import attach, find_mentions, resolve_mentions

    text = substitute(command.body, args)
    for mention in find_mentions(text):
        if _looks_like_path(mention):
            path = Path(mention).expanduser()
            path = path if path.is_absolute() else directory / path
            if not path.is_file():
                where = "" if command.builtin else f" (command file {command.source})"
                raise UsageError(f"/{command.name}: @{mention}: no such file{where}")
    attachments = resolve_mentions(text, directory, trusted, root)
    prompt = attach(text, attachments) if attachments else text
    return Expansion(command, args.strip(), prompt, [item.path for item in attachments])


def _looks_like_path(mention: str) -> bool:
    """``@src/a.py``, ``@README.md``: a file; ``@dataclass`` or ``@user``: words."""
    return "/" in mention or "." in mention.strip(".")
